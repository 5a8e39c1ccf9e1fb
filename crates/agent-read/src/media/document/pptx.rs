//! PPTX → text, one unit per slide in the presentation's order: the title as a `#` line, then the text of every other
//! shape (a paragraph a line, indented by its outline level), tables as pipe tables, pictures by their alternative
//! text, and the speaker notes after a `Notes:` line.

use super::markdown::{cell, pipe_table};
use super::package::{Package, rels_of, resolve_target};
use super::xml::{self, attr};
use super::{Check, DocumentError, Out, Outline};
use crate::media::pages::PageSelection;
use quick_xml::events::Event;

const PRESENTATION: &str = "ppt/presentation.xml";

/// The slides of a PPTX (titled as each slide is, when it is converted).
pub fn outline(bytes: &[u8]) -> Result<Outline, DocumentError> {
    let slides = slides(&mut Package::open(bytes)?)?;
    Ok(Outline::unnamed(u32::try_from(slides.len()).unwrap_or(u32::MAX)))
}

/// Converts the chosen slides of a PPTX into `out`.
pub fn convert(
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
) -> Result<(), DocumentError> {
    let mut package = Package::open(bytes)?;
    let slides = slides(&mut package)?;
    let unit_count = u32::try_from(slides.len()).unwrap_or(u32::MAX);
    for number in selection.pages(unit_count) {
        check()?;
        let Some(part) = slides.get(number as usize - 1) else { break };
        if out.stopped() {
            break;
        }
        write_slide(&mut package, number, part, out)?;
    }
    Ok(())
}

/// The parts of the presentation's slides, in its order.
fn slides(package: &mut Package<'_>) -> Result<Vec<String>, DocumentError> {
    let Some(presentation) = package.part(PRESENTATION)? else {
        return Err(DocumentError::Damaged(format!("no {PRESENTATION}: this zip is not a PowerPoint presentation")));
    };
    let rels = package.part(&rels_of(PRESENTATION))?.map(|x| xml::relationships(&x)).transpose()?.unwrap_or_default();
    slide_parts(&presentation, &rels)
}

/// The slides' parts, in the order the presentation lists them.
fn slide_parts(
    presentation: &[u8],
    rels: &std::collections::HashMap<String, String>,
) -> Result<Vec<String>, DocumentError> {
    let mut reader = xml::reader(presentation);
    let mut parts = Vec::new();
    loop {
        match reader.read_event().map_err(|e| xml::damaged(PRESENTATION, &e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "sldId" => {
                if let Some(target) = xml::relationship_id(&e).and_then(|id| rels.get(&id)) {
                    parts.push(resolve_target(PRESENTATION, target));
                }
            }
            Event::Eof => return Ok(parts),
            _ => {}
        }
    }
}

/// Writes slide `number` (its part `part`) and its notes, under its title.
fn write_slide(package: &mut Package<'_>, number: u32, part: &str, out: &mut Out<'_>) -> Result<(), DocumentError> {
    let Some(xml) = package.part(part)? else {
        out.begin(number, None, false);
        out.line("(the slide's part is missing)");
        return Ok(());
    };
    let shapes = blocks(&xml, part)?;
    let title = shapes.iter().find_map(|b| match b {
        Block::Text { title: true, text, .. } => Some(text.replace('\n', " ")),
        _ => None,
    });
    out.begin(number, title.as_deref(), false);
    write_blocks(&shapes, out, true);
    let rels = package.part(&rels_of(part))?.map(|x| xml::relationships(&x)).transpose()?.unwrap_or_default();
    let notes = rels.values().find(|target| target.contains("notesSlide")).map(|t| resolve_target(part, t));
    if let Some(notes) = notes
        && let Some(xml) = package.part(&notes)?
    {
        let said: Vec<Block> =
            blocks(&xml, &notes)?.into_iter().filter(|b| matches!(b, Block::Text { notes_body: true, .. })).collect();
        if !said.is_empty() {
            out.blank();
            out.line("Notes:");
            write_blocks(&said, out, false);
        }
    }
    if out.unit_is_empty() {
        out.line("(no text on this slide)");
    }
    Ok(())
}

fn write_blocks(blocks: &[Block], out: &mut Out<'_>, with_title: bool) {
    for block in blocks {
        match block {
            Block::Text { title: true, text, .. } if with_title => {
                out.line(&format!("# {}", text.replace('\n', " ")));
                out.blank();
            }
            Block::Text { level, text, .. } => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    out.line(&format!("{}{}", "  ".repeat(*level), line.trim_end()));
                }
            }
            Block::Table(rows) => {
                out.blank();
                for line in pipe_table(rows).lines() {
                    out.line(line);
                }
                out.blank();
            }
            Block::Picture(description) => out.line(&format!("![{}]", cell(description))),
        }
    }
}

/// What a slide (or a notes page) holds, in its order.
#[derive(Debug)]
enum Block {
    /// A paragraph of a shape: whether the shape is the title placeholder, or the notes' body; its outline level.
    Text { title: bool, notes_body: bool, level: usize, text: String },
    /// A table's rows.
    Table(Vec<Vec<String>>),
    /// A picture's alternative text.
    Picture(String),
}

/// The shape under way: its placeholder type, the paragraph being read and its level.
#[derive(Default)]
struct Shape {
    placeholder: Option<String>,
    paragraph: String,
    level: usize,
}

fn blocks(xml: &[u8], part: &str) -> Result<Vec<Block>, DocumentError> {
    let mut reader = xml::reader(xml);
    let mut blocks = Vec::new();
    let mut shape = Shape::default();
    let mut table: Option<(Vec<Vec<String>>, Vec<String>, String)> = None;
    let mut in_text = false;
    loop {
        match reader.read_event().map_err(|e| xml::damaged(part, &e))? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                "sp" => shape = Shape::default(),
                "ph" => shape.placeholder = Some(attr(&e, "type").unwrap_or_else(|| "body".to_string())),
                "pPr" => shape.level = attr(&e, "lvl").and_then(|l| l.parse().ok()).unwrap_or(0).min(8),
                "t" => in_text = true,
                "br" => shape.paragraph.push('\n'),
                "tbl" => table = Some(Default::default()),
                "cNvPr" => {
                    if let Some(description) = attr(&e, "descr").filter(|d| !d.trim().is_empty()) {
                        blocks.push(Block::Picture(description));
                    }
                }
                _ => {}
            },
            Event::Text(t) if in_text => shape.paragraph.push_str(&xml::text(&t)),
            Event::GeneralRef(r) if in_text => shape.paragraph.push_str(&xml::reference(&r)),
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => {
                    let text = std::mem::take(&mut shape.paragraph);
                    if let Some((_, _, cell_text)) = table.as_mut() {
                        if !cell_text.is_empty() && !text.trim().is_empty() {
                            cell_text.push(' ');
                        }
                        cell_text.push_str(text.trim());
                    } else if !text.trim().is_empty() {
                        let kind = shape.placeholder.as_deref();
                        let title = matches!(kind, Some("title" | "ctrTitle"));
                        let notes_body = kind == Some("body");
                        blocks.push(Block::Text { title, notes_body, level: shape.level, text });
                    }
                    shape.level = 0;
                }
                "tc" => {
                    if let Some((_, row, cell_text)) = table.as_mut() {
                        row.push(std::mem::take(cell_text));
                    }
                }
                "tr" => {
                    if let Some((rows, row, _)) = table.as_mut() {
                        rows.push(std::mem::take(row));
                    }
                }
                "tbl" => {
                    if let Some((rows, _, _)) = table.take()
                        && !rows.is_empty()
                    {
                        blocks.push(Block::Table(rows));
                    }
                }
                _ => {}
            },
            Event::Eof => return Ok(blocks),
            _ => {}
        }
    }
}
