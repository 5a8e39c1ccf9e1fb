//! ODS (OpenDocument spreadsheet) → text, one unit per sheet, as an XLSX is shown: the sheet's rows as a pipe table
//! whose first row with a value is its header; formulas as the values cached beside them (`office:value`,
//! `office:date-value`, …); dates and times as ISO dates (`2024-03-01`, `2024-03-01 14:30:00`), times of day and
//! durations as `h:mm:ss`, booleans as `TRUE`/`FALSE`, other cells as their text. Sheets hidden by their style are
//! marked `(hidden)`.
//!
//! calamine reads ODS too, but it parses every sheet of `content.xml` into memory when it opens the file, so a sheet
//! of a million rows would be held whole. Instead `content.xml` is streamed here, inflated as it is read, every single
//! text or tag bounded ([`RunLimited`](super::package::RunLimited)), and each row goes out as soon as it ends. Repeats
//! (`table:number-columns-repeated`, `table:number-rows-repeated`) are never expanded into memory: empty cells only
//! move the column on (a row ends at its last value), empty rows are left out, and a row with values repeats its one
//! line, at most up to the last row a sheet can have.

use super::grid::{Grid, MAX_COLUMNS, number};
use super::package::{Package, stream_error};
use super::xml::{self, attr};
use super::{Check, DocumentError, Out, Outline};
use crate::media::pages::PageSelection;
use quick_xml::events::{BytesStart, Event};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};

const MEDIA_TYPE: &str = "application/vnd.oasis.opendocument.spreadsheet";
const TABLE_NAMESPACE: &str = "urn:oasis:names:tc:opendocument:xmlns:table:1.0";
const CONTENT: &str = "content.xml";

/// Bytes of one text or tag in `content.xml` at most (one event is held whole while it is read).
const MAX_RUN: usize = 4 * 1024 * 1024;
/// Rows a sheet can have (LibreOffice's limit, and Excel's): repeats stop there.
const MAX_ROWS: u64 = 1_048_576;
/// Bytes of content read between two checks of the time budget, at most (beside [`CHECK_EVERY`] events).
const CHECK_EVERY_BYTES: u64 = 16 * 1024 * 1024;
/// Events between two checks of the time budget.
const CHECK_EVERY: u32 = 8192;

/// The sheets of an ODS, by name. `content.xml` is scanned rather than parsed: its root element is parsed for the
/// prefix the table namespace has, then only the table element's own tags are looked for in its bytes, so listing
/// the sheets costs little more than inflating the part (a sheet of a million rows is millions of elements). A tag
/// inside a comment would count too; no producer writes one in `content.xml`.
pub fn outline(bytes: &[u8], check: Check<'_>) -> Result<Outline, DocumentError> {
    let mut package = Package::open_odf(bytes, MEDIA_TYPE, CONTENT)?;
    let mut reader = content(&mut package)?;
    let names = match table_prefix(&mut reader)? {
        Some(prefix) => table_names(reader.into_inner(), &prefix, check)?,
        None => Vec::new(),
    };
    Ok(Outline::named(names))
}

/// The prefix (with its colon; empty for the default namespace) the root element binds to the table namespace, or
/// `None` when it binds none (a content without tables).
fn table_prefix(reader: &mut quick_xml::Reader<impl BufRead>) -> Result<Option<String>, DocumentError> {
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).map_err(|e| stream_error(CONTENT, e))? {
            Event::Start(root) | Event::Empty(root) => {
                let prefix = root.attributes().with_checks(false).flatten().find_map(|a| {
                    let value = a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok()?;
                    let key = a.key.as_ref();
                    let prefix = if key == "xmlns" { Some("") } else { key.strip_prefix("xmlns:") }?;
                    (value == TABLE_NAMESPACE)
                        .then(|| if prefix.is_empty() { String::new() } else { format!("{prefix}:") })
                });
                return Ok(prefix);
            }
            Event::Eof => return Ok(None),
            _ => buf.clear(),
        }
    }
}

/// The names of the top-level `table` elements in the rest of `source` (their prefix `prefix`).
fn table_names(mut source: impl BufRead, prefix: &str, check: Check<'_>) -> Result<Vec<String>, DocumentError> {
    let (opening, closing) = (format!("<{prefix}table"), format!("</{prefix}table>"));
    let (opens, closes) = (memchr::memmem::Finder::new(&opening), memchr::memmem::Finder::new(&closing));
    let (mut pending, mut names, mut depth, mut chunks) = (Vec::new(), Vec::new(), 0usize, 0u32);
    loop {
        let chunk = source.fill_buf().map_err(|e| stream_error(CONTENT, quick_xml::Error::Io(e.into())))?;
        if chunk.is_empty() {
            return Ok(names);
        }
        let read = chunk.len();
        pending.extend_from_slice(chunk);
        source.consume(read);
        chunks += 1;
        if chunks.is_multiple_of(64) {
            check()?;
        }
        let mut at = 0;
        // The next closing tag is looked for again only once it is passed: it is often a whole sheet away.
        let mut close = closes.find(&pending).map(|i| at + i);
        // Where the bytes still needed start: a tag not yet whole, else the tail a tag may start in.
        let keep = loop {
            if close.is_some_and(|close| close < at) {
                close = closes.find(&pending[at..]).map(|i| at + i);
            }
            let open = opens.find(&pending[at..]).map(|i| at + i);
            match (open, close) {
                (_, Some(closed)) if open.is_none_or(|open| closed < open) => {
                    depth = depth.saturating_sub(1);
                    at = closed + closing.len();
                    close = closes.find(&pending[at..]).map(|i| at + i);
                }
                (Some(open), _) => {
                    let after = open + opening.len();
                    match pending.get(after) {
                        None => break open,
                        Some(b' ' | b'\t' | b'\n' | b'\r' | b'>' | b'/') => {}
                        Some(_) => {
                            // Another element of the namespace (`table-row`, `table-cell`, …).
                            at = after;
                            continue;
                        }
                    }
                    let Some(end) = tag_end(&pending[after..]).map(|end| after + end) else {
                        // A tag not yet whole is read again with the next chunk: a tag bounded as any run is.
                        if pending.len() - open > MAX_RUN {
                            return Err(DocumentError::TooLarge(format!(
                                "a table's start tag runs over {} MiB",
                                MAX_RUN >> 20
                            )));
                        }
                        break open;
                    };
                    let tag = &pending[open..=end];
                    if depth == 0 {
                        names.push(table_name(tag));
                    }
                    if !tag.ends_with(b"/>") {
                        depth += 1;
                    }
                    at = end + 1;
                }
                _ => break pending.len().saturating_sub(closing.len()).max(at),
            }
        };
        pending.drain(..keep);
    }
}

/// Where a tag ends: its `>`, outside quoted attribute values.
fn tag_end(bytes: &[u8]) -> Option<usize> {
    let mut quote = None;
    bytes.iter().position(|&byte| match (quote, byte) {
        (None, b'"' | b'\'') => {
            quote = Some(byte);
            false
        }
        (Some(open), _) if byte == open => {
            quote = None;
            false
        }
        (None, b'>') => true,
        _ => false,
    })
}

/// The `name` of a table's start tag (empty when it has none).
fn table_name(tag: &[u8]) -> String {
    match xml::reader(tag).read_event() {
        Ok(Event::Start(e) | Event::Empty(e)) => attr(&e, "name").unwrap_or_default(),
        _ => String::new(),
    }
}

/// Converts the chosen sheets of an ODS into `out`, a row at a time.
pub fn convert(
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
) -> Result<(), DocumentError> {
    let mut package = Package::open_odf(bytes, MEDIA_TYPE, CONTENT)?;
    let mut reader = content(&mut package)?;
    let last_chosen = selection.last();
    let mut walk = Walk::default();
    let (mut buf, mut events, mut checked_at) = (Vec::new(), 0u32, 0u64);
    loop {
        events += 1;
        // Every so many events, and every so many bytes: one event may be a run of megabytes.
        if events.is_multiple_of(CHECK_EVERY) || reader.buffer_position() - checked_at > CHECK_EVERY_BYTES {
            check()?;
            checked_at = reader.buffer_position();
        }
        let past_chosen =
            walk.depth == 0 && !walk.skipping.active() && last_chosen.is_some_and(|last| walk.sheet >= last);
        if out.stopped() || past_chosen {
            return Ok(());
        }
        buf.clear();
        let event = reader.read_event_into(&mut buf).map_err(|e| stream_error(CONTENT, e))?;
        if walk.skipping.takes(&event) {
            continue;
        }
        match event {
            Event::Start(e) => walk.open(&e, false, selection, out)?,
            Event::Empty(e) => walk.open(&e, true, selection, out)?,
            Event::Text(t) if walk.in_paragraph => walk.push_text(&xml::text(&t))?,
            Event::GeneralRef(r) if walk.in_paragraph => walk.push_text(&xml::reference(&r))?,
            Event::End(e) => walk.close(e.local_name().as_ref(), out)?,
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// `content.xml` as a stream of events.
fn content<'p>(package: &'p mut Package<'_>) -> Result<quick_xml::Reader<impl BufRead + 'p>, DocumentError> {
    let Some(stream) = package.stream(CONTENT, MAX_RUN)? else {
        return Err(DocumentError::Damaged(format!("no {CONTENT}: this zip is not an OpenDocument spreadsheet")));
    };
    Ok(quick_xml::Reader::from_reader(BufReader::with_capacity(64 * 1024, stream)))
}

/// A cell's value as its attributes give it (none for a text cell: its text is read).
#[derive(Debug, Default)]
struct Cell {
    value: Option<String>,
    repeats: u64,
}

/// Where the walk is in `content.xml`.
#[derive(Default)]
struct Walk {
    /// An element skipped whole: a sheet not chosen, an annotation, a drawing.
    skipping: xml::Skipping,
    /// Tables open (1 inside a sheet).
    depth: usize,
    /// The number of the sheet met last, from 1.
    sheet: u32,
    /// Table styles that hide their sheet.
    hidden: HashSet<String>,
    /// The table style being read, in the automatic styles.
    style: Option<String>,
    grid: Grid,
    /// The row's column under way (counted from 0), and how often the row repeats.
    column: u64,
    row_repeats: u64,
    /// Rows of the sheet so far, repeats counted.
    rows: u64,
    cell: Option<Cell>,
    in_paragraph: bool,
    text: String,
}

impl Walk {
    fn open(
        &mut self,
        e: &BytesStart<'_>,
        empty: bool,
        selection: &PageSelection,
        out: &mut Out<'_>,
    ) -> Result<(), DocumentError> {
        match e.local_name().as_ref() {
            "style" => self.style = (attr(e, "family").as_deref() == Some("table")).then(|| attr(e, "name")).flatten(),
            "table-properties" if attr(e, "display").as_deref() == Some("false") => {
                if let Some(style) = self.style.clone() {
                    self.hidden.insert(style);
                }
            }
            "table" if self.depth == 0 => {
                self.sheet += 1;
                if !selection.contains(self.sheet) {
                    if !empty {
                        self.skipping.begin();
                    }
                    return Ok(());
                }
                let hidden = attr(e, "style-name").is_some_and(|style| self.hidden.contains(&style));
                out.begin(self.sheet, attr(e, "name").as_deref(), hidden);
                (self.grid, self.rows) = (Grid::new(None), 0);
                if empty {
                    self.grid.finish(out);
                } else {
                    self.depth = 1;
                }
            }
            "table" | "shapes" | "annotation" | "forms" if !empty => self.skipping.begin(),
            "table-row" if self.depth == 1 => {
                self.column = 0;
                self.row_repeats = repeats(e, "number-rows-repeated");
                if empty {
                    self.end_row(out);
                }
            }
            "table-cell" | "covered-table-cell" if self.depth == 1 => {
                self.cell = Some(cell_of(e));
                self.text.clear();
                if empty {
                    self.end_cell()?;
                }
            }
            "p" | "h" if self.cell.is_some() => {
                if !self.text.is_empty() {
                    self.push_text("\n")?;
                }
                self.in_paragraph = !empty;
            }
            "s" if self.in_paragraph => {
                let count = attr(e, "c").and_then(|c| c.parse().ok()).unwrap_or(1usize).min(256);
                self.push_text(&" ".repeat(count))?;
            }
            "tab" | "line-break" if self.in_paragraph => self.push_text(" ")?,
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, name: &str, out: &mut Out<'_>) -> Result<(), DocumentError> {
        match name {
            "style" => self.style = None,
            "p" | "h" => self.in_paragraph = false,
            "table-cell" | "covered-table-cell" if self.cell.is_some() => self.end_cell()?,
            "table-row" if self.depth == 1 => self.end_row(out),
            "table" if self.depth == 1 => {
                self.depth = 0;
                self.grid.finish(out);
            }
            _ => {}
        }
        Ok(())
    }

    /// Adds `text` to the cell under way, which may hold [`MAX_RUN`] bytes: the cap on one run of text applies to a
    /// cell made of many runs (spans, spaces) too.
    fn push_text(&mut self, text: &str) -> Result<(), DocumentError> {
        if self.text.len() + text.len() > MAX_RUN {
            return Err(DocumentError::TooLarge(format!("a cell holds over {} MiB of text", MAX_RUN >> 20)));
        }
        self.text.push_str(text);
        Ok(())
    }

    /// Ends a cell: its value set as often as it repeats, or, empty, the column moved on.
    fn end_cell(&mut self) -> Result<(), DocumentError> {
        let Some(cell) = self.cell.take() else { return Ok(()) };
        let value = cell.value.unwrap_or_else(|| std::mem::take(&mut self.text));
        if !value.trim().is_empty() {
            let last = self.column.saturating_add(cell.repeats).min(MAX_COLUMNS as u64 + 1);
            for column in self.column..last {
                self.grid.set(column as usize, &value)?;
            }
        }
        self.column = self.column.saturating_add(cell.repeats);
        Ok(())
    }

    /// Ends a row: written as often as it repeats (up to the sheet's last row) when it holds a value.
    fn end_row(&mut self, out: &mut Out<'_>) {
        let times = self.row_repeats.min(MAX_ROWS.saturating_sub(self.rows));
        self.rows = self.rows.saturating_add(self.row_repeats);
        self.grid.end_row(out, times);
    }
}

/// How often a row or a cell repeats (its `number-…-repeated` attribute; at least once).
fn repeats(e: &BytesStart<'_>, name: &str) -> u64 {
    attr(e, name).and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(1).max(1)
}

/// The attributes of a cell that say its value.
#[derive(Debug, Default)]
struct Typed {
    kind: Option<String>,
    value: Option<String>,
    date: Option<String>,
    time: Option<String>,
    boolean: Option<String>,
    string: Option<String>,
}

/// A cell as its attributes give it (read in one pass: a sheet has millions of cells): how often it repeats, and its
/// value shown as a model reads it, `None` for text (its paragraphs are read).
fn cell_of(e: &BytesStart<'_>) -> Cell {
    let (mut typed, mut repeats) = (Typed::default(), 1u64);
    for attribute in e.attributes().with_checks(false).flatten() {
        let slot = match attribute.key.local_name().as_ref() {
            // The first type counts: LibreOffice adds its own `calcext:value-type` after the standard one.
            "value-type" if typed.kind.is_none() => &mut typed.kind,
            "value" => &mut typed.value,
            "date-value" => &mut typed.date,
            "time-value" => &mut typed.time,
            "boolean-value" => &mut typed.boolean,
            "string-value" => &mut typed.string,
            "number-columns-repeated" => {
                let count = attribute.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok();
                repeats = count.and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(1).max(1);
                continue;
            }
            _ => continue,
        };
        *slot = attribute.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned());
    }
    Cell { value: typed_value(typed), repeats }
}

/// A cell's value by its type (`office:value-type`) and the attribute that holds it; `None` when the type names none
/// (its text is then shown: an error's, say).
fn typed_value(typed: Typed) -> Option<String> {
    match typed.kind?.as_str() {
        "float" | "percentage" | "currency" => {
            typed.value.map(|value| value.trim().parse::<f64>().map_or(value, number))
        }
        "date" => typed.date.map(|date| iso_date(&date)),
        "time" => typed.time.map(|time| duration(&time)),
        "boolean" => typed.boolean.map(|b| if b == "true" { "TRUE" } else { "FALSE" }.to_string()),
        "string" => typed.string.filter(|string| !string.is_empty()),
        _ => None,
    }
}

/// `2024-03-01T14:30:00` as `2024-03-01 14:30:00`; midnight as the date alone.
fn iso_date(date: &str) -> String {
    let date = date.trim().replacen('T', " ", 1);
    match date.strip_suffix(" 00:00:00") {
        Some(day) => day.to_string(),
        None => date,
    }
}

/// An ISO 8601 duration (`PT14H30M00S`, what ODS stores for times) as `14:30:00`; anything else as written.
fn duration(value: &str) -> String {
    let parse = || -> Option<String> {
        let rest = value.trim().strip_prefix("PT")?;
        let (hours, rest) = rest.split_once('H')?;
        let (minutes, rest) = rest.split_once('M')?;
        let seconds = rest.strip_suffix('S')?;
        let seconds = seconds.parse::<f64>().ok()?;
        let whole = seconds.trunc() as u64;
        let fraction = seconds - seconds.trunc();
        let mut shown = format!("{}:{:02}:{:02}", hours.parse::<u64>().ok()?, minutes.parse::<u64>().ok()?, whole);
        if fraction > 0.0 {
            shown.push_str(format!("{fraction:.3}").trim_start_matches('0').trim_end_matches('0'));
        }
        Some(shown)
    };
    parse().unwrap_or_else(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::document::DocumentKind;

    /// An ODS whose `content.xml` holds `sheets` (the `table:table` elements), as LibreOffice lays one out.
    fn ods(sheets: &str) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        zip.start_file("mimetype", stored).unwrap();
        std::io::Write::write_all(&mut zip, MEDIA_TYPE.as_bytes()).unwrap();
        zip.start_file(CONTENT, zip::write::SimpleFileOptions::default()).unwrap();
        let content = format!(
            r#"<office:document-content xmlns:office="o" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
            xmlns:text="x" xmlns:style="s"><office:automatic-styles>
            <style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/></style:style>
            </office:automatic-styles><office:body><office:spreadsheet>{sheets}</office:spreadsheet></office:body></office:document-content>"#
        );
        std::io::Write::write_all(&mut zip, content.as_bytes()).unwrap();
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn repeats_are_expanded_only_where_they_hold_values_and_hidden_sheets_are_marked() {
        let book = ods(r#"<table:table table:name="A"><table:table-row><table:table-cell office:value-type="string">
            <text:p>k</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16383"/></table:table-row>
            <table:table-row table:number-rows-repeated="3"><table:table-cell office:value-type="float" office:value="2"
            table:number-columns-repeated="2"/><table:table-cell table:number-columns-repeated="16382"/></table:table-row>
            <table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="16384"/>
            </table:table-row></table:table><table:table table:name="B" table:style-name="ta2"/>"#);
        let (outline, text) = crate::media::document::text_of(DocumentKind::Ods, &book, &PageSelection::all()).unwrap();
        assert_eq!(outline.names, ["A", "B"]);
        assert_eq!(
            text,
            "── sheet 1 of 2: A ──\n│ | k |\n│ | --- |\n│ | 2 | 2 |\n│ | 2 | 2 |\n│ | 2 | 2 |\n\n\
             ── sheet 2 of 2: B (hidden) ──\n│ (empty sheet)\n"
        );
        let second = PageSelection::parse("2").unwrap();
        let (_, text) = crate::media::document::text_of(DocumentKind::Ods, &book, &second).unwrap();
        assert_eq!(text, "── sheet 2 of 2: B (hidden) ──\n│ (empty sheet)\n");
    }

    #[test]
    fn a_row_repeated_past_the_last_row_a_sheet_has_stops_there() {
        let book = ods(r#"<table:table table:name="A"><table:table-row table:number-rows-repeated="99999999999">
            <table:table-cell><text:p>x</text:p></table:table-cell></table:table-row></table:table>"#);
        let (_, text) = crate::media::document::text_of(DocumentKind::Ods, &book, &PageSelection::all()).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + MAX_ROWS + 1, "a header line, the rule, the rows after the first");
    }

    #[test]
    fn a_long_cell_repeated_across_a_row_or_made_of_many_runs_is_refused_not_held() {
        let long = "x".repeat(3 << 20);
        let repeated = ods(&format!(
            r#"<table:table table:name="A"><table:table-row><table:table-cell table:number-columns-repeated="16384">
            <text:p>{long}</text:p></table:table-cell></table:table-row></table:table>"#
        ));
        let spans = format!("<text:span>{long}</text:span>").repeat(2);
        let runs = ods(&format!(
            r#"<table:table table:name="A"><table:table-row><table:table-cell><text:p>{spans}</text:p>
            </table:table-cell></table:table-row></table:table>"#
        ));
        for (book, why) in [(repeated, "a row holds over 16 MiB"), (runs, "a cell holds over 4 MiB")] {
            match crate::media::document::text_of(DocumentKind::Ods, &book, &PageSelection::all()) {
                Err(DocumentError::TooLarge(reason)) => assert!(reason.contains(why), "{reason}"),
                other => panic!("{why}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_table_tag_that_never_ends_is_refused_once_past_the_run_cap() {
        let content = format!(r#"<table:table table:name="{}"#, "x".repeat(MAX_RUN + 1024));
        let source = std::io::BufReader::with_capacity(64 * 1024, content.as_bytes());
        assert!(matches!(table_names(source, "table:", &mut || Ok(())), Err(DocumentError::TooLarge(_))));
    }

    #[test]
    fn sheets_are_listed_from_their_tags_across_chunks_and_quotes() {
        let content = r#"<table:table table:name="One"><table:table-row><table:table-cell><text:p>x</text:p>
            </table:table-cell></table:table-row></table:table><table:table table:name="a &gt; b &quot;c&quot;"
            table:style-name=">"/><table:table-template/><table:table
            table:name="Three"><table:table table:name="nested"/></table:table>"#;
        for chunk in [1, 3, 7, 64] {
            let source = std::io::BufReader::with_capacity(chunk, content.as_bytes());
            let names = table_names(source, "table:", &mut || Ok(())).unwrap();
            assert_eq!(names, ["One", "a > b \"c\"", "Three"], "chunks of {chunk}");
        }
        assert_eq!(tag_end(br#" a="x>y" b='>'>rest"#), Some(14));
    }

    #[test]
    fn dates_times_and_durations_show_as_iso() {
        assert_eq!(iso_date("2024-03-01"), "2024-03-01");
        assert_eq!(iso_date("2024-03-01T00:00:00"), "2024-03-01");
        assert_eq!(iso_date("2024-03-05T14:30:00"), "2024-03-05 14:30:00");
        assert_eq!(duration("PT14H30M00S"), "14:30:00");
        assert_eq!(duration("PT36H00M05.5S"), "36:00:05.5");
        assert_eq!(duration("P1D"), "P1D");
    }
}
