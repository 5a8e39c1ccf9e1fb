//! DOCX → text: the body's paragraphs in order, headings as `#` lines (by the paragraph's style: `heading N`, or
//! `Title`), list items as `-` or `1.` lines indented by level (from the numbering the paragraph or its style names),
//! tables as pipe tables, hyperlinks as `[text](url)`, footnotes and endnotes as `[^N]` with their text after the
//! body, comments as `[comment N]` with author and text after the body. Deleted revisions are left out (their text is
//! `w:delText`, never read); of a drawing's alternate contents only the first is read, so a text box is not doubled.

use super::markdown::{cell, pipe_table};
use super::package::{Package, rels_of};
use super::xml::{self, attr};
use super::{Check, DocumentError, Out};
use quick_xml::events::Event;
use std::collections::HashMap;

const DOCUMENT: &str = "word/document.xml";

/// Events between two checks of the time budget.
const CHECK_EVERY: u32 = 4096;

/// Converts a DOCX's body, then its notes and comments, into `out`.
pub fn convert(bytes: &[u8], out: &mut Out<'_>, check: Check<'_>) -> Result<(), DocumentError> {
    let mut package = Package::open(bytes)?;
    let Some(body) = package.part(DOCUMENT)? else {
        return Err(DocumentError::Damaged(format!("no {DOCUMENT}: this zip is not a Word document")));
    };
    let styles = package.part("word/styles.xml")?.map(|xml| styles(&xml)).transpose()?.unwrap_or_default();
    let numbering = package.part("word/numbering.xml")?.map(|xml| numbering(&xml)).transpose()?.unwrap_or_default();
    let links = package.part(&rels_of(DOCUMENT))?.map(|xml| xml::relationships(&xml)).transpose()?.unwrap_or_default();
    let mut writer = Writer { out, styles, numbering, links, counters: HashMap::new() };
    walk_body(&body, &mut writer, check)?;
    for (part, kind) in [("word/footnotes.xml", "footnote"), ("word/endnotes.xml", "endnote")] {
        if let Some(xml) = package.part(part)? {
            for (id, _, text) in notes(&xml, kind)? {
                writer.out.blank();
                writer.out.line(&format!("[^{id}]: {text}"));
            }
        }
    }
    if let Some(xml) = package.part("word/comments.xml")? {
        for (id, author, text) in notes(&xml, "comment")? {
            writer.out.blank();
            writer.out.line(&format!("[comment {id}] {}: {text}", author.unwrap_or_else(|| "(no author)".into())));
        }
    }
    Ok(())
}

/// What a style says of its paragraphs.
#[derive(Debug, Default, Clone)]
struct Style {
    heading: Option<usize>,
    num_id: Option<String>,
    /// From the style's name when it has no numbering: `List Number` (true) or `List Bullet` (false).
    list_by_name: Option<bool>,
}

/// A paragraph being read.
#[derive(Debug, Default)]
struct Paragraph {
    style: Option<String>,
    num: Option<(String, usize)>,
    text: String,
    /// Where each open hyperlink's text starts, and its URL.
    links: Vec<(usize, Option<String>)>,
}

/// A table being read: its rows, the row and the cell under way.
#[derive(Debug, Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

struct Writer<'o, 'w> {
    out: &'o mut Out<'w>,
    styles: HashMap<String, Style>,
    /// (numId, level) → numbered (true) or bulleted.
    numbering: HashMap<(String, usize), bool>,
    links: HashMap<String, String>,
    counters: HashMap<(String, usize), u32>,
}

fn walk_body(xml: &[u8], writer: &mut Writer<'_, '_>, check: Check<'_>) -> Result<(), DocumentError> {
    let mut reader = xml::reader(xml);
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut tables: Vec<Table> = Vec::new();
    let (mut in_text, mut skipping, mut events) = (false, xml::Skipping::default(), 0u32);
    loop {
        events += 1;
        if events.is_multiple_of(CHECK_EVERY) {
            check()?;
            if writer.out.stopped() {
                return Ok(());
            }
        }
        let event = reader.read_event().map_err(|e| xml::damaged(DOCUMENT, &e))?;
        if skipping.takes(&event) {
            continue;
        }
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                "p" => paragraphs.push(Paragraph::default()),
                "t" => in_text = true,
                "tbl" => tables.push(Table::default()),
                "Fallback" => skipping.begin(),
                "hyperlink" => {
                    if let Some(p) = paragraphs.last_mut() {
                        let url = xml::relationship_id(&e).and_then(|id| writer.links.get(&id).cloned());
                        p.links.push((p.text.len(), url.or_else(|| attr(&e, "anchor").map(|a| format!("#{a}")))));
                    }
                }
                _ => on_empty(&e, paragraphs.last_mut()),
            },
            Event::Empty(e) => on_empty(&e, paragraphs.last_mut()),
            Event::Text(t) if in_text => push_text(&mut paragraphs, &xml::text(&t)),
            Event::GeneralRef(r) if in_text => push_text(&mut paragraphs, &xml::reference(&r)),
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "hyperlink" => close_link(paragraphs.last_mut()),
                "p" => {
                    if let Some(p) = paragraphs.pop() {
                        writer.paragraph(p, tables.last_mut());
                    }
                }
                "tc" => {
                    if let Some(t) = tables.last_mut() {
                        let text = std::mem::take(&mut t.cell);
                        t.row.push(text.trim().to_string());
                    }
                }
                "tr" => {
                    if let Some(t) = tables.last_mut() {
                        let row = std::mem::take(&mut t.row);
                        t.rows.push(row);
                    }
                }
                "tbl" => {
                    if let Some(table) = tables.pop() {
                        writer.table(table, tables.last_mut());
                    }
                }
                _ => {}
            },
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// An element without content that means something inside a paragraph: its style, numbering, breaks, note marks.
fn on_empty(e: &quick_xml::events::BytesStart<'_>, paragraph: Option<&mut Paragraph>) {
    let Some(p) = paragraph else { return };
    match e.local_name().as_ref() {
        "pStyle" => p.style = attr(e, "val"),
        "numId" => p.num = attr(e, "val").map(|id| (id, p.num.as_ref().map_or(0, |n| n.1))),
        "ilvl" => {
            let level = attr(e, "val").and_then(|v| v.parse().ok()).unwrap_or(0).min(8);
            p.num = Some((p.num.take().map(|n| n.0).unwrap_or_default(), level));
        }
        "tab" => p.text.push('\t'),
        "br" | "cr" => p.text.push('\n'),
        "footnoteReference" | "endnoteReference" => {
            p.text.push_str(&format!("[^{}]", attr(e, "id").unwrap_or_default()));
        }
        "commentReference" => p.text.push_str(&format!("[comment {}]", attr(e, "id").unwrap_or_default())),
        _ => {}
    }
}

fn push_text(paragraphs: &mut [Paragraph], text: &str) {
    if let Some(p) = paragraphs.last_mut() {
        p.text.push_str(text);
    }
}

/// Ends the innermost hyperlink: its text becomes `[text](url)` (kept as text when it has no URL or no text).
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

impl Writer<'_, '_> {
    fn paragraph(&mut self, p: Paragraph, table: Option<&mut Table>) {
        let text = p.text.trim();
        if let Some(table) = table {
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
        let style = p.style.as_ref().and_then(|id| self.styles.get(id)).cloned().unwrap_or_default();
        if let Some(level) = style.heading {
            self.out.blank();
            self.out.line(&format!("{} {}", "#".repeat(level), text.replace('\n', " ")));
            self.out.blank();
            return;
        }
        let num = p.num.or_else(|| style.num_id.clone().map(|id| (id, 0)));
        let numbered = match &num {
            Some(key) => self.numbering.get(key).copied().or(style.list_by_name),
            None => style.list_by_name,
        };
        match numbered {
            Some(numbered) => {
                let (id, level) = num.unwrap_or_default();
                let marker = if numbered { format!("{}.", self.count(&id, level)) } else { "-".to_string() };
                self.out.line(&format!("{}{marker} {}", "  ".repeat(level), text.replace('\n', " ")));
            }
            None => {
                self.out.blank();
                self.out.line(text);
                self.out.blank();
            }
        }
    }

    /// The next number of list `id` at `level`; deeper levels start again.
    fn count(&mut self, id: &str, level: usize) -> u32 {
        self.counters.retain(|(other, deeper), _| other != id || *deeper <= level);
        let counter = self.counters.entry((id.to_string(), level)).or_insert(0);
        *counter += 1;
        *counter
    }

    /// A finished table: a pipe table, or, inside another table's cell, its rows as text in that cell.
    fn table(&mut self, table: Table, outer: Option<&mut Table>) {
        if let Some(outer) = outer {
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

/// styles.xml: what each paragraph style says (heading level, numbering).
fn styles(xml: &[u8]) -> Result<HashMap<String, Style>, DocumentError> {
    let mut reader = xml::reader(xml);
    let mut styles = HashMap::new();
    let mut current: Option<(String, Style)> = None;
    loop {
        match reader.read_event().map_err(|e| xml::damaged("word/styles.xml", &e))? {
            Event::Start(e) if e.local_name().as_ref() == "style" => {
                current = attr(&e, "styleId").map(|id| (id, Style::default()));
            }
            Event::Start(e) | Event::Empty(e) => {
                let Some((_, style)) = current.as_mut() else { continue };
                match e.local_name().as_ref() {
                    "name" => {
                        let name = attr(&e, "val").unwrap_or_default().to_ascii_lowercase();
                        style.heading = heading_level(&name).or(style.heading);
                        if name.starts_with("list number") {
                            style.list_by_name = Some(true);
                        } else if name.starts_with("list bullet") {
                            style.list_by_name = Some(false);
                        }
                    }
                    "outlineLvl" if style.heading.is_none() => {
                        style.heading = attr(&e, "val").and_then(|v| v.parse::<usize>().ok()).map(|l| (l + 1).min(6));
                    }
                    "numId" => style.num_id = attr(&e, "val"),
                    _ => {}
                }
            }
            Event::End(e) if e.local_name().as_ref() == "style" => {
                if let Some((id, style)) = current.take() {
                    styles.insert(id, style);
                }
            }
            Event::Eof => return Ok(styles),
            _ => {}
        }
    }
}

/// A heading's level from its style name: `heading 2` → 2, `title` → 1.
fn heading_level(name: &str) -> Option<usize> {
    if name == "title" {
        return Some(1);
    }
    let level: usize = name.strip_prefix("heading ")?.trim().parse().ok()?;
    (1..=9).contains(&level).then_some(level.min(6))
}

/// numbering.xml: for each list and level, whether its items are numbered (any format but `bullet` and `none`).
fn numbering(xml: &[u8]) -> Result<HashMap<(String, usize), bool>, DocumentError> {
    let mut reader = xml::reader(xml);
    let mut abstract_levels: HashMap<String, HashMap<usize, bool>> = HashMap::new();
    let mut lists: Vec<(String, String)> = Vec::new();
    let (mut abstract_id, mut level, mut num_id) = (None::<String>, 0usize, None::<String>);
    loop {
        match reader.read_event().map_err(|e| xml::damaged("word/numbering.xml", &e))? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                "abstractNum" => abstract_id = attr(&e, "abstractNumId"),
                "lvl" => level = attr(&e, "ilvl").and_then(|v| v.parse().ok()).unwrap_or(0),
                "numFmt" => {
                    if let Some(id) = &abstract_id {
                        let format = attr(&e, "val").unwrap_or_default();
                        let numbered = format != "bullet" && format != "none";
                        abstract_levels.entry(id.clone()).or_default().insert(level, numbered);
                    }
                }
                "num" => num_id = attr(&e, "numId"),
                "abstractNumId" => {
                    if let (Some(num), Some(target)) = (num_id.clone(), attr(&e, "val")) {
                        lists.push((num, target));
                    }
                }
                _ => {}
            },
            Event::End(e) if e.local_name().as_ref() == "abstractNum" => abstract_id = None,
            Event::Eof => break,
            _ => {}
        }
    }
    let mut map = HashMap::new();
    for (num, target) in lists {
        for (level, numbered) in abstract_levels.get(&target).into_iter().flatten() {
            map.insert((num.clone(), *level), *numbered);
        }
    }
    Ok(map)
}

/// Notes of `kind` (`footnote`, `endnote`, `comment`): id, author, and text on one line; separators left out.
fn notes(xml: &[u8], kind: &str) -> Result<Vec<(String, Option<String>, String)>, DocumentError> {
    let mut reader = xml::reader(xml);
    let mut notes = Vec::new();
    let mut current: Option<(String, Option<String>, String)> = None;
    let mut in_text = false;
    loop {
        match reader.read_event().map_err(|e| xml::damaged(kind, &e))? {
            Event::Start(e) if e.local_name().as_ref() == kind => {
                let separator = attr(&e, "type").is_some_and(|t| t.contains("eparator"));
                current = (!separator).then(|| (attr(&e, "id").unwrap_or_default(), attr(&e, "author"), String::new()));
            }
            Event::Start(e) if e.local_name().as_ref() == "t" => in_text = true,
            Event::End(e) if e.local_name().as_ref() == "t" => in_text = false,
            Event::End(e) if e.local_name().as_ref() == "p" => {
                if let Some((_, _, text)) = current.as_mut() {
                    text.push(' ');
                }
            }
            Event::Text(t) if in_text => {
                if let Some((_, _, text)) = current.as_mut() {
                    text.push_str(&xml::text(&t));
                }
            }
            Event::GeneralRef(r) if in_text => {
                if let Some((_, _, text)) = current.as_mut() {
                    text.push_str(&xml::reference(&r));
                }
            }
            Event::End(e) if e.local_name().as_ref() == kind => {
                if let Some((id, author, text)) = current.take() {
                    notes.push((id, author, cell(&text).replace("\\|", "|")));
                }
            }
            Event::Eof => return Ok(notes),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_text(xml: &str) -> String {
        let mut sink = Vec::new();
        let mut out = Out::flow(&mut sink);
        let mut writer = Writer {
            out: &mut out,
            styles: HashMap::new(),
            numbering: HashMap::new(),
            links: HashMap::new(),
            counters: HashMap::new(),
        };
        let walked = walk_body(xml.as_bytes(), &mut writer, &mut || Ok(()));
        assert!(walked.is_ok() && out.finish().is_ok());
        String::from_utf8_lossy(&sink).trim_end().to_string()
    }

    #[test]
    fn entities_a_document_declares_are_shown_as_written_never_expanded() {
        let xml = r#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "AAAAAAAAAA"><!ENTITY b "&a;&a;&a;&a;&a;">]>
            <w:document xmlns:w="w"><w:body><w:p><w:r><w:t>x &b; &amp; &#65; y</w:t></w:r></w:p></w:body></w:document>"#;
        assert_eq!(body_text(xml), "x &b; & A y");
    }

    #[test]
    fn nested_tables_flatten_into_their_cell_and_deleted_text_is_left_out() {
        let xml = r#"<w:document xmlns:w="w"><w:body><w:tbl><w:tr><w:tc><w:p><w:r><w:t>outer</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>in1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>in2</w:t></w:r></w:p>
            </w:tc></w:tr></w:tbl></w:tc><w:tc><w:p><w:del><w:r><w:delText>gone</w:delText></w:r></w:del></w:p></w:tc>
            </w:tr></w:tbl></w:body></w:document>"#;
        assert_eq!(body_text(xml), "| outer in1 / in2 |  |\n| --- | --- |");
    }
}
