//! ODT (OpenDocument text) → text, as DOCX is shown: headings (`text:h`, by outline level; a `Title` paragraph) as
//! `#` lines, paragraphs, list items as `-` or `1.` lines indented by level (numbered or bulleted as the list's style
//! says for that level), tables as pipe tables (a table inside a cell flattened into it), links as `[text](url)`,
//! footnotes and endnotes marked `[^N]` (N their citation) with their text after the body, and annotations (comments)
//! marked `[comment N]` with their author and text after the body. Tracked deletions are left out.
//!
//! `content.xml` is held whole through the part cap, as a DOCX's body is, and read as a stream of events.

use super::markdown::{cell, pipe_table};
use super::package::Package;
use super::xml::{self, attr};
use super::{Check, DocumentError, Out, Outline};
use quick_xml::events::{BytesStart, Event};
use std::collections::HashMap;

const MEDIA_TYPE: &str = "application/vnd.oasis.opendocument.text";
const CONTENT: &str = "content.xml";

/// Events between two checks of the time budget.
const CHECK_EVERY: u32 = 4096;
/// Spaces one `text:s` element stands for at most (it names a count).
const MAX_SPACES: usize = 256;
/// Cells a table may hold, repeated cells counted (a row or a cell names how often it repeats).
const MAX_TABLE_CELLS: usize = 1_000_000;
/// Text a table may hold, repeated cells and rows counted: a few kilobytes repeating one long cell would otherwise
/// fill memory. A table is held whole until it ends (its columns are known only then).
const MAX_TABLE_BYTES: usize = 64 * 1024 * 1024;
/// Spaces all `text:s` elements of a document may stand for together: each names up to [`MAX_SPACES`] in a few
/// bytes, so a part of spaces alone would grow twelvefold.
const MAX_EXPANDED_SPACES: usize = 16 * 1024 * 1024;

/// An ODT has no units: it is opened and checked (its media type, its encryption).
pub fn outline(bytes: &[u8]) -> Result<Outline, DocumentError> {
    Package::open_odf(bytes, MEDIA_TYPE, CONTENT)?;
    Ok(Outline::unnamed(1))
}

/// Converts an ODT's body, then its notes and comments, into `out`.
pub fn convert(bytes: &[u8], out: &mut Out<'_>, check: Check<'_>) -> Result<(), DocumentError> {
    let mut package = Package::open_odf(bytes, MEDIA_TYPE, CONTENT)?;
    let Some(content) = package.part(CONTENT)? else {
        return Err(DocumentError::Damaged(format!("no {CONTENT}: this zip is not an OpenDocument text")));
    };
    let mut lists = package.part("styles.xml")?.map(|xml| list_styles(&xml)).transpose()?.unwrap_or_default();
    lists.extend(list_styles(&content)?);
    let mut walker = Walker { out, state: State { lists, ..State::default() } };
    walker.walk(&content, check)?;
    for (citation, text) in std::mem::take(&mut walker.state.notes) {
        walker.out.blank();
        walker.out.line(&format!("[^{citation}]: {text}"));
    }
    for (number, (author, text)) in std::mem::take(&mut walker.state.comments).into_iter().enumerate() {
        let author = if author.is_empty() { "(no author)".to_string() } else { author };
        walker.out.blank();
        walker.out.line(&format!("[comment {}] {author}: {text}", number + 1));
    }
    Ok(())
}

/// A paragraph or heading being read.
#[derive(Debug, Default)]
struct Paragraph {
    heading: Option<usize>,
    text: String,
    /// Where each open link's text starts, and its URL.
    links: Vec<(usize, Option<String>)>,
}

/// A list being read: its style (its own or its outer list's), and its items so far.
#[derive(Debug, Default)]
struct List {
    style: Option<String>,
    count: u32,
    /// The next paragraph is its item's first (it gets the marker).
    item_starts: bool,
}

/// A table being read: its rows, the row and the cell under way, and how often they repeat.
#[derive(Debug, Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    row_repeats: usize,
    /// Empty cells met since the row's last value (written only if a value follows).
    empty_cells: usize,
    cell: String,
    cell_repeats: usize,
    /// Cells held, repeats counted.
    cells: usize,
    /// Bytes of text held, repeats counted.
    bytes: usize,
}

/// Text that goes aside instead of into the body: a note's body, or an annotation.
#[derive(Debug)]
enum Aside {
    Note { citation: String, text: String, in_citation: bool },
    Comment { name: Option<String>, author: String, text: String, in_author: bool, in_paragraph: bool },
}

/// What the walk has open, and what it put aside for after the body.
#[derive(Default)]
struct State {
    /// List style → for each level (from 1), whether its items are numbered.
    lists: HashMap<String, HashMap<usize, bool>>,
    paragraphs: Vec<Paragraph>,
    open_lists: Vec<List>,
    tables: Vec<Table>,
    asides: Vec<Aside>,
    /// Notes (citation, text) and comments (author, text), in the order they were met.
    notes: Vec<(String, String)>,
    comments: Vec<(String, String)>,
    /// The marks of named annotations, waiting for the end of the text they remark on (`office:annotation-end`).
    pending_marks: HashMap<String, String>,
    /// Spaces the `text:s` elements met so far stood for.
    spaces: usize,
}

struct Walker<'o, 'w> {
    out: &'o mut Out<'w>,
    state: State,
}

impl Walker<'_, '_> {
    fn walk(&mut self, xml: &[u8], check: Check<'_>) -> Result<(), DocumentError> {
        let mut reader = xml::reader(xml);
        let (mut skipping, mut events) = (xml::Skipping::default(), 0u32);
        loop {
            events += 1;
            if events.is_multiple_of(CHECK_EVERY) {
                check()?;
                if self.out.stopped() {
                    return Ok(());
                }
            }
            let event = reader.read_event().map_err(|e| xml::damaged(CONTENT, &e))?;
            if skipping.takes(&event) {
                continue;
            }
            match event {
                Event::Start(e) if unshown(&e) => skipping.begin(),
                Event::Start(e) => self.open(&e)?,
                Event::Empty(e) if unshown(&e) => {}
                Event::Empty(e) => {
                    self.open(&e)?;
                    self.close(e.local_name().as_ref())?;
                }
                Event::Text(t) => self.text(&xml::text(&t).replace(['\n', '\r', '\t'], " ")),
                Event::GeneralRef(r) => self.text(&xml::reference(&r)),
                Event::End(e) => self.close(e.local_name().as_ref())?,
                Event::Eof => return Ok(()),
                _ => {}
            }
        }
    }

    fn open(&mut self, e: &BytesStart<'_>) -> Result<(), DocumentError> {
        let state = &mut self.state;
        match e.local_name().as_ref() {
            "h" | "p" if !state.asides.is_empty() => {
                if let Some(Aside::Comment { in_paragraph, .. }) = state.asides.last_mut() {
                    *in_paragraph = true;
                }
            }
            "h" | "p" => {
                let heading = match e.local_name().as_ref() {
                    "h" => Some(attr(e, "outline-level").and_then(|l| l.parse().ok()).unwrap_or(1usize).clamp(1, 6)),
                    _ => attr(e, "style-name").filter(|style| style == "Title").map(|_| 1),
                };
                state.paragraphs.push(Paragraph { heading, ..Paragraph::default() });
            }
            "list" => {
                let inherited = state.open_lists.last().and_then(|list| list.style.clone());
                state.open_lists.push(List { style: attr(e, "style-name").or(inherited), ..List::default() });
            }
            "list-item" => {
                if let Some(list) = state.open_lists.last_mut() {
                    list.count += 1;
                    list.item_starts = true;
                }
            }
            "table" => state.tables.push(Table::default()),
            "table-row" => {
                if let Some(table) = state.tables.last_mut() {
                    table.row_repeats = repeats(e, "number-rows-repeated");
                }
            }
            "table-cell" | "covered-table-cell" => {
                if let Some(table) = state.tables.last_mut() {
                    table.cell.clear();
                    table.cell_repeats = repeats(e, "number-columns-repeated");
                }
            }
            "note" => {
                state.asides.push(Aside::Note { citation: String::new(), text: String::new(), in_citation: false })
            }
            "note-citation" => {
                if let Some(Aside::Note { in_citation, .. }) = state.asides.last_mut() {
                    *in_citation = true;
                }
            }
            "annotation" => {
                let (author, text) = (String::new(), String::new());
                let name = attr(e, "name");
                state.asides.push(Aside::Comment { name, author, text, in_author: false, in_paragraph: false });
            }
            "annotation-end" if state.asides.is_empty() => {
                let mark = attr(e, "name").and_then(|name| state.pending_marks.remove(&name));
                if let (Some(mark), Some(p)) = (mark, state.paragraphs.last_mut()) {
                    p.text.push_str(&mark);
                }
            }
            "creator" => {
                if let Some(Aside::Comment { in_author, .. }) = state.asides.last_mut() {
                    *in_author = true;
                }
            }
            "s" => {
                let count = attr(e, "c").and_then(|c| c.parse().ok()).unwrap_or(1usize).min(MAX_SPACES);
                state.spaces = state.spaces.saturating_add(count);
                if state.spaces > MAX_EXPANDED_SPACES {
                    return Err(DocumentError::TooLarge(format!(
                        "its space elements stand for over {} MiB of spaces",
                        MAX_EXPANDED_SPACES >> 20
                    )));
                }
                self.text(&" ".repeat(count));
            }
            "tab" => self.text("\t"),
            "line-break" => self.text("\n"),
            "a" if state.asides.is_empty() => {
                if let Some(p) = state.paragraphs.last_mut() {
                    p.links.push((p.text.len(), attr(e, "href")));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, name: &str) -> Result<(), DocumentError> {
        let state = &mut self.state;
        match name {
            "h" | "p" => match state.asides.last_mut() {
                Some(Aside::Note { text, .. }) => text.push(' '),
                Some(Aside::Comment { text, in_paragraph, .. }) => {
                    text.push(' ');
                    *in_paragraph = false;
                }
                None => {
                    if let Some(p) = state.paragraphs.pop() {
                        self.paragraph(p);
                    }
                }
            },
            "list" => {
                state.open_lists.pop();
            }
            "a" if state.asides.is_empty() => close_link(state.paragraphs.last_mut()),
            "note-citation" | "creator" => {
                if let Some(Aside::Note { in_citation: flag, .. } | Aside::Comment { in_author: flag, .. }) =
                    state.asides.last_mut()
                {
                    *flag = false;
                }
            }
            "note" | "annotation" => state.close_aside(),
            "table-cell" | "covered-table-cell" => state.close_cell()?,
            "table-row" => state.close_row()?,
            "table" => {
                if let Some(table) = state.tables.pop() {
                    self.table(table);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Text of the document: into the open note or annotation, else the open paragraph.
    fn text(&mut self, text: &str) {
        let state = &mut self.state;
        match state.asides.last_mut() {
            Some(Aside::Note { citation, text: body, in_citation }) => {
                if *in_citation { citation } else { body }.push_str(text);
            }
            Some(Aside::Comment { author, text: body, in_author, in_paragraph, .. }) => {
                if *in_author {
                    author.push_str(text);
                } else if *in_paragraph {
                    body.push_str(text);
                }
            }
            None => {
                if let Some(p) = state.paragraphs.last_mut() {
                    p.text.push_str(text);
                }
            }
        }
    }

    /// A finished paragraph: into the open table's cell, else a heading, a list item or a paragraph of the body.
    fn paragraph(&mut self, p: Paragraph) {
        let text = p.text.trim();
        let state = &mut self.state;
        if let Some(table) = state.tables.last_mut() {
            if !text.is_empty() {
                if !table.cell.is_empty() {
                    table.cell.push(' ');
                }
                table.cell.push_str(text);
            }
            return;
        }
        if text.is_empty() {
            return;
        }
        let out = &mut *self.out;
        if let Some(level) = p.heading {
            out.blank();
            out.line(&format!("{} {}", "#".repeat(level), text.replace('\n', " ")));
            out.blank();
            return;
        }
        let depth = state.open_lists.len();
        let Some(list) = state.open_lists.last_mut() else {
            out.blank();
            out.line(text);
            out.blank();
            return;
        };
        let numbered = list.style.as_ref().and_then(|style| state.lists.get(style)?.get(&depth).copied());
        let marker = match (list.item_starts, numbered.unwrap_or(false)) {
            (true, true) => format!("{}.", list.count),
            (true, false) => "-".to_string(),
            (false, _) => " ".to_string(),
        };
        list.item_starts = false;
        out.line(&format!("{}{marker} {}", "  ".repeat(depth - 1), text.replace('\n', " ")));
    }

    /// A finished table: a pipe table, or, inside another table's cell, its rows as text in that cell.
    fn table(&mut self, table: Table) {
        if let Some(outer) = self.state.tables.last_mut() {
            let rows: Vec<String> = table.rows.iter().map(|row| row.join(" / ")).collect();
            if !outer.cell.is_empty() {
                outer.cell.push(' ');
            }
            outer.cell.push_str(&rows.join("; "));
            return;
        }
        if table.rows.is_empty() {
            return;
        }
        self.out.blank();
        for line in pipe_table(&table.rows).lines() {
            self.out.line(line);
        }
        self.out.blank();
    }
}

impl State {
    /// Ends a note or an annotation: its mark in the paragraph it sits in (a named annotation's where the text it
    /// remarks on ends), its text kept for after the body.
    fn close_aside(&mut self) {
        let mark = match self.asides.pop() {
            Some(Aside::Note { citation, text, .. }) => {
                let citation = citation.trim().to_string();
                let mark = format!("[^{citation}]");
                self.notes.push((citation, one_line(&text)));
                mark
            }
            Some(Aside::Comment { name, author, text, .. }) => {
                self.comments.push((one_line(&author), one_line(&text)));
                let mark = format!("[comment {}]", self.comments.len());
                if let Some(name) = name {
                    self.pending_marks.insert(name, mark);
                    return;
                }
                mark
            }
            None => return,
        };
        if let Some(p) = self.paragraphs.last_mut() {
            p.text.push_str(&mark);
        }
    }

    /// Ends a cell: its text in the row as often as it repeats (empty cells only when a value follows them).
    fn close_cell(&mut self) -> Result<(), DocumentError> {
        let Some(table) = self.tables.last_mut() else { return Ok(()) };
        let text = std::mem::take(&mut table.cell).trim().to_string();
        if text.is_empty() {
            table.empty_cells = table.empty_cells.saturating_add(table.cell_repeats);
            return Ok(());
        }
        let added = table.empty_cells.saturating_add(table.cell_repeats);
        table.cells = table.cells.saturating_add(added);
        table.bytes = table.bytes.saturating_add(text.len().saturating_mul(table.cell_repeats));
        if table.cells > MAX_TABLE_CELLS || table.row.len() + added > super::grid::MAX_COLUMNS {
            return Err(too_many_cells());
        }
        if table.bytes > MAX_TABLE_BYTES {
            return Err(too_much_text());
        }
        table.row.extend(std::iter::repeat_n(String::new(), table.empty_cells));
        table.row.extend(std::iter::repeat_n(text, table.cell_repeats));
        table.empty_cells = 0;
        Ok(())
    }

    /// Ends a row: kept as often as it repeats when it holds a value, once when it is empty.
    fn close_row(&mut self) -> Result<(), DocumentError> {
        let Some(table) = self.tables.last_mut() else { return Ok(()) };
        table.empty_cells = 0;
        let row = std::mem::take(&mut table.row);
        let times = if row.is_empty() { 1 } else { table.row_repeats };
        table.cells = table.cells.saturating_add(row.len().saturating_mul(times - 1));
        let row_bytes = row.iter().map(String::len).sum::<usize>();
        table.bytes = table.bytes.saturating_add(row_bytes.saturating_mul(times - 1));
        if table.cells > MAX_TABLE_CELLS {
            return Err(too_many_cells());
        }
        if table.bytes > MAX_TABLE_BYTES {
            return Err(too_much_text());
        }
        for _ in 1..times {
            table.rows.push(row.clone());
        }
        table.rows.push(row);
        Ok(())
    }
}

fn too_much_text() -> DocumentError {
    DocumentError::TooLarge(format!("a table holds over {} MiB of text, its repeats counted", MAX_TABLE_BYTES >> 20))
}

fn too_many_cells() -> DocumentError {
    DocumentError::TooLarge(format!("a table holds over {MAX_TABLE_CELLS} cells, its repeats counted"))
}

/// Elements whose text is not the document's: tracked changes (deleted text), a drawing's title and description.
fn unshown(e: &BytesStart<'_>) -> bool {
    e.local_name().as_ref() == "tracked-changes" || matches!(e.name().as_ref(), "svg:title" | "svg:desc")
}

/// How often a row or a cell repeats (its `number-…-repeated` attribute; at least once).
fn repeats(e: &BytesStart<'_>, name: &str) -> usize {
    attr(e, name).and_then(|n| n.trim().parse::<usize>().ok()).unwrap_or(1).max(1)
}

/// Ends the innermost link: its text becomes `[text](url)` (kept as text when it has no URL or no text).
fn close_link(paragraph: Option<&mut Paragraph>) {
    let Some(p) = paragraph else { return };
    let Some((start, Some(url))) = p.links.pop() else { return };
    let start = start.min(p.text.len());
    let label = p.text[start..].trim().to_string();
    if !label.is_empty() {
        p.text.truncate(start);
        p.text.push_str(&format!("[{label}]({url})"));
    }
}

/// Text on one line, runs of whitespace as one space, a `|` kept as it is.
fn one_line(text: &str) -> String {
    cell(text).replace("\\|", "|")
}

/// The list styles of a styles part: for each style, for each level, whether its items are numbered.
fn list_styles(xml: &[u8]) -> Result<HashMap<String, HashMap<usize, bool>>, DocumentError> {
    let mut reader = xml::reader(xml);
    let mut styles: HashMap<String, HashMap<usize, bool>> = HashMap::new();
    let mut current: Option<String> = None;
    loop {
        match reader.read_event().map_err(|e| xml::damaged("the list styles", &e))? {
            Event::Start(e) if e.local_name().as_ref() == "list-style" => current = attr(&e, "name"),
            Event::Start(e) | Event::Empty(e) => {
                let numbered = match e.local_name().as_ref() {
                    "list-level-style-number" => true,
                    "list-level-style-bullet" | "list-level-style-image" => false,
                    _ => continue,
                };
                if let Some(name) = &current {
                    let level = attr(&e, "level").and_then(|l| l.parse().ok()).unwrap_or(1);
                    styles.entry(name.clone()).or_default().insert(level, numbered);
                }
            }
            Event::End(e) if e.local_name().as_ref() == "list-style" => current = None,
            Event::Eof => return Ok(styles),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_text(body: &str) -> Result<String, DocumentError> {
        let xml = format!(
            r#"<office:document-content xmlns:office="o" xmlns:text="t" xmlns:table="b" xmlns:dc="d"><office:automatic-styles>
            <text:list-style style:name="N"><text:list-level-style-number text:level="1"/><text:list-level-style-bullet text:level="2"/></text:list-style>
            </office:automatic-styles><office:body><office:text>{body}</office:text></office:body></office:document-content>"#
        );
        let mut sink = Vec::new();
        let mut out = Out::flow(&mut sink);
        let lists = list_styles(xml.as_bytes()).unwrap();
        let mut walker = Walker { out: &mut out, state: State { lists, ..State::default() } };
        walker.walk(xml.as_bytes(), &mut || Ok(()))?;
        let (notes, comments) = (walker.state.notes, walker.state.comments);
        out.finish()?;
        Ok(format!("{}{notes:?}{comments:?}", String::from_utf8_lossy(&sink)))
    }

    #[test]
    fn lists_follow_their_style_by_level_and_notes_and_comments_go_aside() {
        let text = body_text(
            r#"<text:list text:style-name="N"><text:list-item><text:p>one</text:p><text:list><text:list-item>
            <text:p>deep</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>two</text:p>
            </text:list-item></text:list><text:p>Said<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation>
            <text:note-body><text:p>Source.</text:p></text:note-body></text:note> here<office:annotation><dc:creator>Ana</dc:creator>
            <dc:date>2024</dc:date><text:p>Check</text:p></office:annotation>.</text:p>"#,
        )
        .unwrap();
        assert_eq!(
            text,
            "1. one\n  - deep\n2. two\n\nSaid[^1] here[comment 1].\n[(\"1\", \"Source.\")][(\"Ana\", \"Check\")]"
        );
    }

    #[test]
    fn repeated_cells_and_rows_are_expanded_only_where_they_hold_values() {
        let text = body_text(
            r#"<table:table><table:table-row><table:table-cell table:number-columns-repeated="2"><text:p>a</text:p>
            </table:table-cell><table:table-cell table:number-columns-repeated="1000000"/></table:table-row>
            <table:table-row table:number-rows-repeated="1000000"><table:table-cell table:number-columns-repeated="3"/></table:table-row>
            <table:table-row table:number-rows-repeated="2"><table:table-cell table:number-columns-repeated="2"/>
            <table:table-cell><text:p>b</text:p></table:table-cell></table:table-row></table:table>"#,
        )
        .unwrap();
        assert_eq!(text, "| a | a |  |\n| --- | --- | --- |\n|  |  |  |\n|  |  | b |\n|  |  | b |\n[][]");
        let huge = r#"<table:table><table:table-row table:number-rows-repeated="99999999"><table:table-cell>
            <text:p>x</text:p></table:table-cell></table:table-row></table:table>"#;
        assert!(matches!(body_text(huge), Err(DocumentError::TooLarge(_))), "100 million repeated cells are refused");
        let long = "x".repeat(1 << 20);
        let wide = format!(
            r#"<table:table><table:table-row><table:table-cell table:number-columns-repeated="16000">
            <text:p>{long}</text:p></table:table-cell></table:table-row></table:table>"#
        );
        assert!(matches!(body_text(&wide), Err(DocumentError::TooLarge(_))), "16 GB of one repeated cell is refused");
        let spaces = r#"<text:p><text:s text:c="256"/></text:p>"#.repeat(MAX_EXPANDED_SPACES / 256 + 1);
        assert!(matches!(body_text(&spaces), Err(DocumentError::TooLarge(_))), "spaces past their cap are refused");
    }
}
