//! XLSX → text, one unit per sheet: the sheet's rows as a pipe table whose first row (the sheet's first non-empty
//! row) is its header, formulas as the values Excel cached for them, dates and times as ISO dates (`2024-03-01`,
//! `2024-03-01 14:30:00`), durations as `h:mm:ss`, errors as Excel shows them (`#DIV/0!`).
//!
//! calamine reads the workbook. What it holds whole in memory (shared strings, styles, the workbook and its
//! relationships) is measured first, by inflating each part through a cap, and a shared-strings part that announces
//! more strings than it could hold is refused before calamine reserves room for them. A sheet is streamed cell by cell
//! into the output, which stops it when the reader has what it needs; its part is scanned first for a text or tag too
//! long to hold (calamine holds one cell's text whole).

use super::grid::{Grid, shown_ref};
use super::package::Package;
use super::xml::{self, attr};
use super::{Check, DocumentError, Out, Outline};
use crate::media::pages::PageSelection;
use crate::render::human_size;
use calamine::{Reader, SheetVisible, Xlsx, XlsxError};
use quick_xml::events::Event;
use std::io::Cursor;

/// Bytes all the parts calamine reads whole may inflate to, together.
const MAX_WHOLE_PARTS_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes of one text or tag in a sheet's part at most (calamine holds one cell's text whole while it reads it).
const MAX_SHEET_RUN: usize = 4 * 1024 * 1024;
/// The fewest bytes one shared string takes in its part (`<si/>`).
const MIN_SHARED_STRING_BYTES: u64 = 5;
/// Columns a sheet's stated dimensions may give the table; wider sheets take the width of their header row.
const MAX_STATED_COLUMNS: u32 = 1024;
/// Cells between two checks of the time budget.
const CHECK_EVERY: u64 = 4096;

/// The sheets of an XLSX, by name; the workbook is opened as converting it would, so what it refuses is refused here.
pub fn outline(bytes: &[u8]) -> Result<Outline, DocumentError> {
    measure_whole_parts(bytes)?;
    let workbook = Xlsx::new(Cursor::new(bytes)).map_err(workbook_error)?;
    let names: Vec<String> = workbook.sheets_metadata().iter().map(|sheet| sheet.name.clone()).collect();
    Ok(Outline::named(names))
}

/// Converts the chosen sheets of an XLSX into `out`.
pub fn convert(
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
) -> Result<(), DocumentError> {
    let sheet_parts = measure_whole_parts(bytes)?;
    check()?;
    let mut workbook = Xlsx::new(Cursor::new(bytes)).map_err(workbook_error)?;
    let sheets = workbook.sheets_metadata().to_vec();
    let unit_count = u32::try_from(sheets.len()).unwrap_or(u32::MAX);
    for number in selection.pages(unit_count) {
        let Some(sheet) = sheets.get(number as usize - 1) else { break };
        if out.stopped() {
            break;
        }
        let part = sheet_parts.iter().find(|(name, _)| *name == sheet.name).map(|(_, part)| part.as_str());
        if let Some(part) = part {
            Package::open(bytes)?.check_runs(part, MAX_SHEET_RUN, check)?;
        }
        out.begin(number, Some(&sheet.name), sheet.visible != SheetVisible::Visible);
        write_sheet(&mut workbook, &sheet.name, out, check)?;
    }
    Ok(())
}

/// Measures every part calamine reads whole; returns each sheet's name and part, which are streamed instead.
fn measure_whole_parts(bytes: &[u8]) -> Result<Vec<(String, String)>, DocumentError> {
    let mut package = Package::open(bytes)?;
    let names = package.names();
    let whole: Vec<&String> = names
        .iter()
        .filter(|name| (name.ends_with(".xml") || name.ends_with(".rels")) && !name.starts_with("xl/worksheets/"))
        .collect();
    let mut left = MAX_WHOLE_PARTS_BYTES;
    for name in whole {
        let Some(data) = package.part_within(name, left)? else { continue };
        left -= data.len() as u64;
        if name.ends_with("sharedStrings.xml") {
            check_shared_strings(&data)?;
        }
    }
    let workbook = package.part("xl/workbook.xml")?.unwrap_or_default();
    let rels = package.part("xl/_rels/workbook.xml.rels")?.map(|x| xml::relationships(&x)).transpose()?;
    Ok(sheet_parts(&workbook, &rels.unwrap_or_default()))
}

/// Refuses a shared-strings part that announces more strings than its bytes could hold (calamine reserves room for
/// as many as it announces).
fn check_shared_strings(data: &[u8]) -> Result<(), DocumentError> {
    let mut reader = xml::reader(data);
    loop {
        match reader.read_event().map_err(|e| xml::damaged("xl/sharedStrings.xml", &e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "sst" => {
                let announced = attr(&e, "uniqueCount").and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(0);
                if announced > data.len() as u64 / MIN_SHARED_STRING_BYTES {
                    return Err(DocumentError::Damaged(format!(
                        "xl/sharedStrings.xml announces {announced} strings in {}, more than it can hold",
                        human_size(data.len() as u64)
                    )));
                }
                return Ok(());
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// Each sheet's name and the part that holds its cells.
fn sheet_parts(workbook: &[u8], rels: &std::collections::HashMap<String, String>) -> Vec<(String, String)> {
    let mut reader = xml::reader(workbook);
    let mut parts = Vec::new();
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "sheet" => {
                if let (Some(name), Some(target)) =
                    (attr(&e, "name"), xml::relationship_id(&e).and_then(|id| rels.get(&id)))
                {
                    parts.push((name, super::package::resolve_target("xl/workbook.xml", target)));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    parts
}

/// Streams one sheet's cells into a pipe table.
fn write_sheet(
    workbook: &mut Xlsx<Cursor<&[u8]>>,
    name: &str,
    out: &mut Out<'_>,
    check: Check<'_>,
) -> Result<(), DocumentError> {
    let mut cells = match workbook.worksheet_cells_reader(name) {
        Ok(cells) => cells,
        Err(XlsxError::WorksheetNotFound(_)) => {
            out.line("(not a worksheet: no cells)");
            return Ok(());
        }
        Err(error) => return Err(workbook_error(error)),
    };
    let dimensions = cells.dimensions();
    let first_column = dimensions.start.1;
    let stated = dimensions.end.1.saturating_sub(first_column) + 1;
    let mut grid = Grid::new((stated <= MAX_STATED_COLUMNS).then_some(stated as usize));
    let (mut row_number, mut seen) = (None::<u32>, 0u64);
    while let Some(found) = cells.next_cell().map_err(workbook_error)? {
        seen += 1;
        if seen.is_multiple_of(CHECK_EVERY) {
            check()?;
        }
        let (at_row, at_column) = found.get_position();
        if row_number != Some(at_row) {
            grid.end_row(out, 1);
            if out.stopped() {
                return Ok(());
            }
            row_number = Some(at_row);
        }
        grid.set(at_column.saturating_sub(first_column) as usize, &shown_ref(found.get_value()))?;
    }
    grid.finish(out);
    Ok(())
}

fn workbook_error(error: XlsxError) -> DocumentError {
    match error {
        XlsxError::Password => DocumentError::Encrypted,
        other => DocumentError::Damaged(format!("the workbook: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_strings_part_that_overstates_its_count_is_refused() {
        let lying = br#"<sst xmlns="x" count="1" uniqueCount="999999999999"><si><t>a</t></si></sst>"#;
        let error = check_shared_strings(lying).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("announces 999999999999 strings"), "{error}");
        assert!(check_shared_strings(br#"<sst uniqueCount="1"><si><t>a</t></si></sst>"#).is_ok());
    }
}
