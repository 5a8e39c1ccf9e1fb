//! CSV and TSV files: text windows like any other, which also name the delimiter and the column count, and which
//! repeat the header row above a window that starts below it.
//!
//! Contract:
//! - A file is a table when its name ends in `.csv`, `.tsv` or `.tab` and its first record parses as one (the `csv`
//!   crate, quoted fields included) with at least two columns. `.tsv` and `.tab` are split on tabs; a `.csv` on
//!   whichever of `,`, `;`, `|` and tab its first line holds most of.
//! - The header row is the file's first record. Line numbers stay the file's physical lines: a header whose quoted
//!   field holds a line break spans lines 1-2 (or more), and a window starting after its last line repeats it.
//! - The header is repeated only when it is plausible (no empty column name, not every name a number) and fits in
//!   [`MAX_HEADER_BYTES`]; meta names the delimiter and the column count either way. The repeated header is the
//!   tool's words (render::text::header_row), counted within the output cap.

use crate::error::ReadError;
use crate::limits::{Limits, MIN_OUTPUT_BYTES};
use crate::render::text::header_row;
use crate::result::{TableMeta, TextResult};

/// Most bytes of a header row repeated above a window; a longer header is not repeated (meta still counts columns).
pub const MAX_HEADER_BYTES: usize = 1024;

/// What a table's first record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The field delimiter.
    pub delimiter: u8,
    /// Fields in the first record.
    pub columns: usize,
    /// The header row, ready to show above a window, with the last physical line it ends on; `None` when it is not
    /// repeated.
    pub header: Option<(String, u64)>,
}

/// The table `head` (the file's first bytes, after any byte order mark; `whole` when that is the whole file) starts,
/// when `name` and content say it is one. UTF-8 (and ASCII) text only.
pub fn sniff(name: &str, head: &[u8], whole: bool) -> Option<Table> {
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    let first_line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let delimiter = match extension.as_str() {
        "tsv" | "tab" => b'\t',
        "csv" => [b',', b';', b'|', b'\t'].into_iter().max_by_key(|d| memchr::memchr_iter(*d, first_line).count())?,
        _ => return None,
    };
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).delimiter(delimiter).from_reader(head);
    let mut record = csv::ByteRecord::new();
    if !reader.read_byte_record(&mut record).ok()? || record.len() < 2 {
        return None;
    }
    let end = usize::try_from(reader.position().byte()).ok()?;
    // A first record that runs to the end of the head may be cut: its end is unknown.
    if end >= head.len() && !whole && head.last() != Some(&b'\n') {
        return None;
    }
    let raw = head[..end].strip_suffix(b"\n").unwrap_or(&head[..end]);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let last_line = 1 + memchr::memchr_iter(b'\n', raw).count() as u64;
    let plausible = record.iter().all(|field| !field.is_empty())
        && !record.iter().all(|field| std::str::from_utf8(field).is_ok_and(|f| f.trim().parse::<f64>().is_ok()));
    let header = std::str::from_utf8(raw)
        .ok()
        .filter(|_| plausible && raw.len() <= MAX_HEADER_BYTES)
        .map(|text| (header_row(last_line, text), last_line));
    Some(Table { delimiter, columns: record.len(), header })
}

/// The window `read` makes within `limits`, as a table's when `table` is one: the header row's bytes are kept out of
/// the lines' share of the output cap (under a cap too small to spare them, the row is not repeated).
pub fn read_with(
    table: Option<Table>,
    limits: &Limits,
    read: impl FnOnce(&Limits) -> Result<TextResult, ReadError>,
) -> Result<TextResult, ReadError> {
    let Some(mut table) = table else { return read(limits) };
    if limits.max_output_bytes.saturating_sub(table.reserve()) < MIN_OUTPUT_BYTES {
        table.header = None;
    }
    let limits = Limits { max_output_bytes: limits.max_output_bytes - table.reserve(), ..limits.clone() };
    let mut result = read(&limits)?;
    table.apply(&mut result);
    Ok(result)
}

impl Table {
    /// Bytes the repeated header may take from the output cap.
    pub fn reserve(&self) -> usize {
        self.header.as_ref().map_or(0, |(row, _)| row.len())
    }

    /// Puts the table's facts in `result`'s meta, and the header row above its lines when the window starts below it.
    pub fn apply(&self, result: &mut TextResult) {
        let starts_below = |last: u64| result.meta.start_line.is_some_and(|start| start > last);
        let shown = match &self.header {
            Some((row, last)) if starts_below(*last) => {
                result.output.insert_str(0, row);
                true
            }
            _ => false,
        };
        result.meta.table = Some(TableMeta {
            delimiter: char::from(self.delimiter).to_string(),
            columns: self.columns,
            header_lines: self.header.as_ref().map(|(_, last)| [1, *last]),
            header_shown: shown,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_columns_and_header_lines_come_from_the_first_record() {
        let table = sniff("a.csv", b"id,name,note\n1,x,y\n", true).unwrap();
        assert_eq!((table.delimiter, table.columns), (b',', 3));
        assert_eq!(table.header.as_ref().unwrap().1, 1);
        let table = sniff("a.CSV", b"id;name\n1;x\n", true).unwrap();
        assert_eq!((table.delimiter, table.columns), (b';', 2));
        let table = sniff("a.tsv", b"id\tname, with comma\n1\tx\n", true).unwrap();
        assert_eq!((table.delimiter, table.columns), (b'\t', 2));
        let spanning = sniff("a.csv", b"id,\"long\nname\"\r\n1,x\r\n", true).unwrap();
        assert_eq!(spanning.header.as_ref().unwrap().1, 2, "a quoted line break: the header spans lines 1-2");
    }

    #[test]
    fn implausible_headers_are_not_repeated_but_still_counted() {
        let numbers = sniff("a.csv", b"1,2,3\n4,5,6\n", true).unwrap();
        assert_eq!((numbers.columns, numbers.header), (3, None));
        let empty_name = sniff("a.csv", b"id,,x\n", true).unwrap();
        assert_eq!(empty_name.header, None);
        assert_eq!(sniff("a.csv", b"just one column\nmore\n", true), None);
        assert_eq!(sniff("a.txt", b"id,name\n", true), None);
        assert_eq!(sniff("a.csv", b"id,\"never closed", false), None, "a record cut by the end of the head");
    }
}
