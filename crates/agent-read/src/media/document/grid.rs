//! A sheet's rows written as a pipe table, whatever format they come from (XLSX, XLS, ODS): the first row with a
//! value is the header, the `---` rule follows it, empty rows are left out, and every row is as wide as the header
//! (or the sheet's stated width), wider when it holds more. Values are shown in the forms a model reads without a
//! locale: ISO dates and times, numbers in their shortest form, `TRUE`/`FALSE`.

use super::markdown::push_row;
use super::{DocumentError, Out};
use calamine::{Data, DataRef};
use std::borrow::Cow;

/// Columns a sheet may have (Excel's and LibreOffice's limit): a cell further right is a crafted file, and holding a
/// row that wide would cost memory for nothing.
pub const MAX_COLUMNS: usize = 16_384;
/// Text one row may hold, its cells' repeats counted: a row past it is a crafted file (a few kilobytes repeating one
/// long cell across every column), and writing it would take memory for nothing a model could read.
pub const MAX_ROW_BYTES: usize = 16 * 1024 * 1024;

/// The rows of one sheet on their way into a pipe table.
#[derive(Debug, Default)]
pub struct Grid {
    /// The table's width, once known (from the sheet's stated dimensions, or its header row).
    width: Option<usize>,
    /// Rows written.
    rows: u64,
    /// The row under way: its first `len` cells (the cells past them keep their room for the next rows).
    row: Vec<String>,
    len: usize,
    /// Bytes set in the row under way.
    bytes: usize,
    /// The line being written (kept between rows to reuse its room).
    line: String,
}

impl Grid {
    /// A sheet whose table is `width` columns wide when its dimensions say so, else as wide as its header row.
    pub fn new(width: Option<usize>) -> Grid {
        Grid { width, ..Grid::default() }
    }

    /// Sets cell `column` (counted from the sheet's first column, from 0) of the row under way; an empty (or blank)
    /// value is left out, so a row ends at its last value.
    pub fn set(&mut self, column: usize, value: &str) -> Result<(), DocumentError> {
        if value.trim().is_empty() {
            return Ok(());
        }
        if column >= MAX_COLUMNS {
            return Err(DocumentError::TooLarge(format!(
                "a cell lies in column {}, beyond the {MAX_COLUMNS} columns a sheet can have",
                column + 1
            )));
        }
        self.bytes = self.bytes.saturating_add(value.len());
        if self.bytes > MAX_ROW_BYTES {
            return Err(DocumentError::TooLarge(format!(
                "a row holds over {} MiB of text, its repeated cells counted",
                MAX_ROW_BYTES >> 20
            )));
        }
        if column >= self.row.len() {
            self.row.resize(column + 1, String::new());
        }
        for skipped in self.row.iter_mut().take(column).skip(self.len) {
            skipped.clear();
        }
        value.clone_into(&mut self.row[column]);
        self.len = self.len.max(column + 1);
        Ok(())
    }

    /// Whether the row under way has a value.
    pub fn row_has_values(&self) -> bool {
        self.len > 0
    }

    /// Ends the row under way: written (`times` times) when it has a value, the first such row followed by the
    /// header's rule. Stops early when `out` has stopped.
    pub fn end_row(&mut self, out: &mut Out<'_>, times: u64) {
        if !self.row_has_values() {
            return;
        }
        let row = &self.row[..self.len];
        let columns = (*self.width.get_or_insert(row.len())).max(row.len());
        self.line.clear();
        push_row(&mut self.line, row, columns);
        let trimmed = self.line.trim_end().len();
        self.line.truncate(trimmed);
        for _ in 0..times {
            if out.stopped() {
                break;
            }
            out.line(&self.line);
            if self.rows == 0 {
                out.line(&format!("|{}", " --- |".repeat(columns)));
            }
            self.rows += 1;
        }
        (self.len, self.bytes) = (0, 0);
    }

    /// Ends the sheet: a sheet without a value says so.
    pub fn finish(&mut self, out: &mut Out<'_>) {
        self.end_row(out, 1);
        if self.rows == 0 {
            out.line("(empty sheet)");
        }
    }
}

/// A number as a spreadsheet shows it by default: whole numbers without a fraction, others in their shortest form.
pub fn number(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// A cell's value as calamine read it, in the forms a model reads without a locale: ISO dates and times (a time of
/// day alone when there is no date), durations as `h:mm:ss`, errors as Excel shows them (`#DIV/0!`).
pub fn shown(value: &Data) -> Cow<'_, str> {
    match value {
        Data::Empty => Cow::Borrowed(""),
        Data::String(text) | Data::DateTimeIso(text) | Data::DurationIso(text) => Cow::Borrowed(text),
        Data::Int(n) => Cow::Owned(n.to_string()),
        Data::Float(f) => Cow::Owned(number(*f)),
        Data::Bool(b) => Cow::Borrowed(if *b { "TRUE" } else { "FALSE" }),
        Data::Error(error) => Cow::Owned(error.to_string()),
        Data::DateTime(date) => {
            if date.is_duration() {
                let seconds = (date.as_f64() * 86_400.0).round() as i64;
                return Cow::Owned(format!("{}:{:02}:{:02}", seconds / 3600, seconds % 3600 / 60, seconds % 60));
            }
            // Displayed as `2024-03-01 14:30:00` (fractions of a second after a dot).
            Cow::Owned(match date.as_datetime().map(|moment| moment.to_string()) {
                Some(moment) if date.as_f64() < 1.0 => moment.split_once(' ').map_or(moment.clone(), |(_, t)| t.into()),
                Some(moment) => moment.strip_suffix(" 00:00:00").map_or(moment.clone(), str::to_string),
                None => number(date.as_f64()),
            })
        }
    }
}

/// [`shown`] for a value calamine streams from an XLSX (its strings borrowed, not copied).
pub fn shown_ref<'a>(value: &'a DataRef<'_>) -> Cow<'a, str> {
    match value {
        DataRef::SharedString(text) => Cow::Borrowed(text),
        DataRef::String(text) | DataRef::DateTimeIso(text) | DataRef::DurationIso(text) => Cow::Borrowed(text),
        DataRef::Empty => Cow::Borrowed(""),
        DataRef::Int(n) => Cow::Owned(n.to_string()),
        DataRef::Float(f) => Cow::Owned(number(*f)),
        DataRef::Bool(b) => Cow::Borrowed(if *b { "TRUE" } else { "FALSE" }),
        DataRef::Error(error) => Cow::Owned(error.to_string()),
        DataRef::DateTime(date) => Cow::Owned(shown(&Data::DateTime(*date)).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_show_as_a_spreadsheet_shows_them() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(-2.5), "-2.5");
        assert_eq!(number(1e20), "100000000000000000000");
        assert_eq!(shown(&Data::Bool(true)), "TRUE");
    }

    #[test]
    fn rows_are_as_wide_as_the_header_and_empty_ones_are_left_out() {
        let mut sink = Vec::new();
        let mut out = Out::flow(&mut sink);
        let mut grid = Grid::new(None);
        grid.set(0, "a").unwrap();
        grid.set(1, "b|c").unwrap();
        grid.end_row(&mut out, 1);
        grid.end_row(&mut out, 5);
        grid.set(1, "x").unwrap();
        grid.end_row(&mut out, 2);
        grid.set(2, "wide").unwrap();
        grid.finish(&mut out);
        out.finish().unwrap();
        let text = String::from_utf8(sink).unwrap();
        assert_eq!(text, "| a | b\\|c |\n| --- | --- |\n|  | x |\n|  | x |\n|  |  | wide |\n");
        let mut refused = Grid::new(None);
        assert!(matches!(refused.set(MAX_COLUMNS, "far"), Err(DocumentError::TooLarge(_))));
    }
}
