//! XLS (Excel 97-2003: BIFF records in an OLE compound file) → text, one unit per sheet, as an XLSX is shown.
//!
//! calamine reads the workbook, and it reads it whole: every sheet's cells into dense ranges, before one is asked
//! for. The format caps a sheet at 65,536 rows × 256 columns, but a crafted file can still ask for much more than
//! it holds (a sheet's stated dimensions are reserved as they are given; two cells at opposite corners make a range
//! of 16 million cells; a shared string is copied into every cell that names it), and the container and record
//! readers trust offsets a crafted file can set. So before calamine sees anything:
//! - the compound file is opened with the `cfb` crate, which validates its sector chains, and only the workbook
//!   stream is taken from it;
//! - that stream is rewritten with only the records the cells need — the globals (code page, date system, number
//!   formats, sheets, shared strings), then each sheet's cell records — with every sheet's position recomputed, its
//!   stated dimensions dropped, formulas without their token text (the value cached beside each formula is what is
//!   shown), and nothing of embedded charts or other substreams; a sheet position outside the stream or sheets that
//!   overlap are refused as damage;
//! - what calamine will then hold is computed from those records (cells, dense ranges, strings, the copy of the
//!   sheet being read) and reserved from the budget every read in the process shares ([`crate::media::memory`]): a
//!   workbook needing more than all of it is refused as too large;
//! - the rewritten stream goes to calamine in a fresh compound file written by the `cfb` crate.
//!
//! calamine's own checks remain; a panic in it is caught and refused as damage.

use super::grid::{Grid, shown};
use super::{Check, DocumentError, Out, Outline};
use crate::media::memory::{Growing, Refusal, busy_error};
use crate::media::pages::PageSelection;
use crate::render::human_size;
use calamine::{Data, Reader, SheetVisible, Xls, XlsError};
use std::io::{Cursor, Read, Write};
use std::mem::size_of;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Rows between two checks of the time budget.
const CHECK_EVERY: usize = 4096;

const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const CONTINUE: u16 = 0x003C;
const SST: u16 = 0x00FC;
const BOUND_SHEET: u16 = 0x0085;
const FILE_PASS: u16 = 0x002F;
const FORMULA: u16 = 0x0006;
const FORMULA_STRING: u16 = 0x0207;
const LABEL_SST: u16 = 0x00FD;
const MUL_RK: u16 = 0x00BD;
/// Records of the globals calamine needs: code page, date system, number formats, cell formats.
const GLOBALS_KEPT: [u16; 4] = [0x0042, 0x0022, 0x041E, 0x00E0];
/// Records of one cell each: Number, Label, RString, BoolErr, RK.
const CELLS: [u16; 5] = [0x0203, 0x0204, 0x00D6, 0x0205, 0x027E];

/// The sheets of an XLS, by name (calamine reads the rewritten globals alone).
pub fn outline(bytes: &[u8], check: Check<'_>) -> Result<Outline, DocumentError> {
    let workbook = open(bytes, None, check)?;
    let names: Vec<String> = workbook.sheets_metadata().iter().map(|sheet| sheet.name.clone()).collect();
    Ok(Outline::named(names))
}

/// Converts the chosen sheets of an XLS into `out`, what calamine holds of them reserved in `memory`.
pub fn convert(
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
    memory: &mut Growing,
) -> Result<(), DocumentError> {
    let mut workbook = open(bytes, Some(memory), check)?;
    let sheets = workbook.sheets_metadata().to_vec();
    let unit_count = u32::try_from(sheets.len()).unwrap_or(u32::MAX);
    for number in selection.pages(unit_count) {
        let Some(sheet) = sheets.get(number as usize - 1) else { break };
        if out.stopped() {
            break;
        }
        check()?;
        out.begin(number, Some(&sheet.name), sheet.visible != SheetVisible::Visible);
        let range = unpanicked(|| workbook.worksheet_range(&sheet.name))?.map_err(workbook_error)?;
        // Rows and columns count from the range's first used cell, as an XLSX's from its dimensions.
        let mut grid = Grid::new(None);
        let (mut last_row, mut rows) = (None, 0usize);
        for (row, column, value) in range.used_cells() {
            if last_row != Some(row) {
                grid.end_row(out, 1);
                if out.stopped() {
                    return Ok(());
                }
                rows += 1;
                if rows.is_multiple_of(CHECK_EVERY) {
                    check()?;
                }
                last_row = Some(row);
            }
            grid.set(column, &shown(value))?;
        }
        grid.finish(out);
    }
    Ok(())
}

/// The workbook, read by calamine from its rewritten stream: with the sheets' cells when what calamine will hold of
/// them is reserved in `memory`, else without.
fn open(bytes: &[u8], memory: Option<&mut Growing>, check: Check<'_>) -> Result<Xls<Cursor<Vec<u8>>>, DocumentError> {
    let stream = workbook_stream(bytes)?;
    check()?;
    let rewritten = rewrite(&stream, memory.is_some())?;
    drop(stream);
    if let Some(memory) = memory {
        // On top of the file the read holds there.
        let base = memory.held();
        memory.cover(base + rewritten.memory).map_err(|refusal| cells_refused(refusal, base))?;
    }
    let compound = compound_file(&rewritten.stream)?;
    drop(rewritten);
    check()?;
    unpanicked(|| Xls::new(Cursor::new(compound)))?.map_err(workbook_error)
}

/// The workbook stream of the compound file in `bytes`.
fn workbook_stream(bytes: &[u8]) -> Result<Vec<u8>, DocumentError> {
    let damaged = |error: std::io::Error| DocumentError::Damaged(format!("the OLE container: {error}"));
    let mut compound = cfb::CompoundFile::open(Cursor::new(bytes)).map_err(damaged)?;
    let names: Vec<String> = compound.read_root_storage().map(|entry| entry.name().to_string()).collect();
    if names.iter().any(|name| name == "EncryptedPackage" || name == "EncryptionInfo") {
        return Err(DocumentError::Encrypted);
    }
    let Some(name) =
        names.iter().find(|name| name.eq_ignore_ascii_case("Workbook") || name.eq_ignore_ascii_case("Book"))
    else {
        return Err(DocumentError::Damaged(
            "the OLE container has no Workbook stream: not an Excel workbook (a Word or PowerPoint 97-2003 file?)"
                .to_string(),
        ));
    };
    let mut stream = Vec::new();
    let opened = compound.open_stream(format!("/{name}")).map_err(damaged)?;
    opened.take(super::MAX_FILE_BYTES).read_to_end(&mut stream).map_err(damaged)?;
    Ok(stream)
}

/// A fresh compound file holding `stream` as its workbook.
fn compound_file(stream: &[u8]) -> Result<Vec<u8>, DocumentError> {
    let write = || -> std::io::Result<Vec<u8>> {
        // Version 3 (512-byte sectors), as Excel writes: calamine refuses a version 4 file without a mini stream.
        let file = Cursor::new(Vec::with_capacity(stream.len() + stream.len() / 64 + 8192));
        let mut compound = cfb::CompoundFile::create_with_version(cfb::Version::V3, file)?;
        compound.create_stream("/Workbook")?.write_all(stream)?;
        compound.flush()?;
        Ok(compound.into_inner().into_inner())
    };
    write().map_err(|error| DocumentError::Damaged(format!("the workbook stream could not be rewritten: {error}")))
}

/// One BIFF record: where it starts in its stream, its type and its body.
#[derive(Debug, Clone, Copy)]
struct Record<'a> {
    at: usize,
    kind: u16,
    body: &'a [u8],
}

/// The records of `stream` from `at` on, in order.
fn records(stream: &[u8], at: usize) -> impl Iterator<Item = Result<Record<'_>, DocumentError>> + '_ {
    let mut pos = at;
    std::iter::from_fn(move || {
        if pos >= stream.len() {
            return None;
        }
        let Some(header) = stream.get(pos..pos + 4) else {
            pos = stream.len();
            return Some(Err(damaged_stream("a record header is cut short")));
        };
        let (kind, len) = (u16::from_le_bytes([header[0], header[1]]), u16::from_le_bytes([header[2], header[3]]));
        let Some(body) = stream.get(pos + 4..pos + 4 + usize::from(len)) else {
            pos = stream.len();
            return Some(Err(damaged_stream("a record is cut short")));
        };
        let record = Record { at: pos, kind, body };
        pos += 4 + usize::from(len);
        Some(Ok(record))
    })
}

/// The workbook stream as calamine will read it, and what reading it will cost.
struct Rewritten {
    stream: Vec<u8>,
    /// What calamine will hold reading it.
    memory: u64,
}

/// What calamine will hold, counted as the rewritten records are written.
#[derive(Debug, Default)]
struct Cost {
    bytes: u64,
    /// The largest dense range of one sheet (its copy is made when the sheet is read).
    largest_range: u64,
}

/// Rewrites the workbook stream (see the module's contract), measuring what calamine will need for it.
fn rewrite(stream: &[u8], with_cells: bool) -> Result<Rewritten, DocumentError> {
    let mut out = Vec::with_capacity(stream.len().min(1 << 20));
    let mut sheets = Vec::new();
    let mut strings: Vec<u64> = Vec::new();
    let mut cost = Cost { bytes: 3 * stream.len() as u64, largest_range: 0 };
    let mut globals = records(stream, 0).peekable();
    match globals.peek() {
        Some(Ok(first)) if first.kind == BOF => {}
        _ => return Err(damaged_stream("it does not start with a BOF record")),
    }
    while let Some(record) = globals.next() {
        let record = record?;
        match record.kind {
            FILE_PASS => return Err(DocumentError::Encrypted),
            BOF if record.at == 0 => put(&mut out, record.kind, record.body),
            kind if GLOBALS_KEPT.contains(&kind) => put(&mut out, kind, record.body),
            BOUND_SHEET if record.body.len() >= 8 => {
                let position = u32::from_le_bytes([record.body[0], record.body[1], record.body[2], record.body[3]]);
                sheets.push((position as usize, out.len() + 4));
                put(&mut out, BOUND_SHEET, record.body);
            }
            BOUND_SHEET => return Err(damaged_stream("a sheet's record is cut short")),
            SST => {
                let mut pieces = vec![record.body.get(8..).unwrap_or_default()];
                put(&mut out, SST, record.body);
                while let Some(Ok(next)) = globals.peek().filter(|next| matches!(next, Ok(r) if r.kind == CONTINUE)) {
                    pieces.push(next.body);
                    put(&mut out, CONTINUE, next.body);
                    globals.next();
                }
                strings = string_lengths(&pieces);
                cost.bytes += strings.iter().map(|chars| string_cost(*chars)).sum::<u64>();
            }
            EOF => break,
            _ => {}
        }
    }
    put(&mut out, EOF, &[]);
    let mut copied = 0usize;
    for (position, patch) in sheets {
        let start = out.len();
        out[patch..patch + 4].copy_from_slice(&u32::try_from(start).unwrap_or(u32::MAX).to_le_bytes());
        copied += copy_sheet(stream, position, with_cells, &strings, &mut out, &mut cost)?;
        if copied > stream.len() {
            return Err(damaged_stream("its sheets overlap"));
        }
    }
    let memory = cost.bytes + cost.largest_range + 2 * out.len() as u64;
    Ok(Rewritten { stream: out, memory })
}

/// Why what calamine would hold cannot be reserved, in the model's terms.
fn cells_refused(refusal: Refusal, base: u64) -> DocumentError {
    match refusal {
        Refusal::TooLargeAlone { needed, capacity } => DocumentError::TooLarge(format!(
            "its cells would take about {} of memory to read, more than the {} all reads share",
            human_size(needed - base),
            human_size(capacity)
        )),
        Refusal::Busy { needed, held, capacity, waited } => {
            let need = format!("its cells would take about {} of memory to read", human_size(needed - base));
            DocumentError::Stopped(busy_error("converted", &need, held, capacity, waited))
        }
        Refusal::Stopped(error) => DocumentError::Stopped(error),
    }
}

/// Copies the sheet whose substream starts at `position` (its BOF) into `out`: its cell records (none unless
/// `with_cells`), formulas without their tokens, nothing of nested substreams. Returns the bytes of the original
/// stream it went over.
fn copy_sheet(
    stream: &[u8],
    position: usize,
    with_cells: bool,
    strings: &[u64],
    out: &mut Vec<u8>,
    cost: &mut Cost,
) -> Result<usize, DocumentError> {
    let mut sheet = records(stream, position);
    match sheet.next() {
        Some(Ok(bof)) if bof.kind == BOF => put(out, BOF, bof.body),
        _ => return Err(damaged_stream("a sheet's position does not lead to the start of a sheet")),
    }
    let mut measure = SheetCost::default();
    // calamine sets a formula's string result at the last formula's cell, (0, 0) before any: so is it measured.
    let mut last_formula = (0u16, 0u16);
    let mut nested = 0usize;
    let mut end = stream.len();
    for record in sheet {
        let record = record?;
        match record.kind {
            BOF => nested += 1,
            EOF if nested > 0 => nested -= 1,
            EOF => {
                end = record.at + 4;
                break;
            }
            _ if nested > 0 || !with_cells => {}
            FORMULA if record.body.len() >= 20 => {
                let mut body = record.body[..20].to_vec();
                body.extend_from_slice(&[0, 0]);
                last_formula = cell_position(record.body);
                measure.cell(last_formula, 0);
                measure.formulas += 1;
                put(out, FORMULA, &body);
            }
            FORMULA_STRING => {
                let chars = record.body.get(..2).map_or(0, |n| u64::from(u16::from_le_bytes([n[0], n[1]])));
                measure.cell(last_formula, string_cost(chars));
                put(out, FORMULA_STRING, record.body);
            }
            LABEL_SST if record.body.len() >= 10 => {
                let index = u32::from_le_bytes([record.body[6], record.body[7], record.body[8], record.body[9]]);
                let chars = strings.get(index as usize).copied().unwrap_or(0);
                measure.cell(cell_position(record.body), string_cost(chars));
                put(out, LABEL_SST, record.body);
            }
            MUL_RK if record.body.len() >= 6 => {
                let row = u16::from_le_bytes([record.body[0], record.body[1]]);
                let first = u16::from_le_bytes([record.body[2], record.body[3]]);
                let n = record.body.len();
                let last = u16::from_le_bytes([record.body[n - 2], record.body[n - 1]]);
                if last >= first {
                    measure.cell((row, first), 0);
                    measure.cell((row, last), 0);
                    measure.cells += u64::from(last - first).saturating_sub(1);
                }
                put(out, MUL_RK, record.body);
            }
            kind if CELLS.contains(&kind) && record.body.len() >= 4 => {
                // A label holds its text inline: at most its record's bytes, three UTF-8 bytes a character.
                measure.cell(cell_position(record.body), 3 * record.body.len() as u64);
                put(out, kind, record.body);
            }
            _ => {}
        }
    }
    put(out, EOF, &[]);
    let range = measure.range_bytes();
    cost.bytes += measure.bytes() + range;
    cost.largest_range = cost.largest_range.max(range + measure.strings);
    Ok(end.saturating_sub(position))
}

/// What one sheet's cells will cost calamine.
#[derive(Debug, Default)]
struct SheetCost {
    cells: u64,
    formulas: u64,
    strings: u64,
    /// The bounding box of the cells: first and last row and column.
    rows: Option<(u16, u16)>,
    columns: Option<(u16, u16)>,
}

impl SheetCost {
    fn cell(&mut self, (row, column): (u16, u16), string: u64) {
        self.cells += 1;
        self.strings += string;
        let widen = |span: Option<(u16, u16)>, at: u16| Some(span.map_or((at, at), |(a, b)| (a.min(at), b.max(at))));
        self.rows = widen(self.rows, row);
        self.columns = widen(self.columns, column);
    }

    /// The dense range of the sheet's values.
    fn range_bytes(&self) -> u64 {
        let span = |s: Option<(u16, u16)>| s.map_or(0, |(a, b)| u64::from(b - a) + 1);
        span(self.rows) * span(self.columns) * size_of::<Data>() as u64
    }

    /// The cells as calamine collects them (a vector that doubles as it grows), their strings, and the formulas'
    /// range of empty texts (as large as the values' at most).
    fn bytes(&self) -> u64 {
        let cell = size_of::<calamine::Cell<Data>>() as u64;
        let formula = size_of::<calamine::Cell<String>>() as u64;
        let formula_range = if self.formulas > 0 { self.range_bytes() } else { 0 };
        2 * self.cells * cell + 2 * self.formulas * formula + self.strings + formula_range
    }
}

/// A cell record's row and column (its first four bytes).
fn cell_position(body: &[u8]) -> (u16, u16) {
    (u16::from_le_bytes([body[0], body[1]]), u16::from_le_bytes([body[2], body[3]]))
}

/// What one string of `chars` characters costs once decoded: up to three UTF-8 bytes each, and its header.
fn string_cost(chars: u64) -> u64 {
    3 * chars + size_of::<String>() as u64
}

/// The character count of each string of a shared-strings table, whose record body (past its two counts) and
/// continuations are `pieces`. A string's characters may run on into the next piece, which then starts with a
/// byte of flags; its formatting runs and extended data are skipped. A table cut short ends where it is cut.
fn string_lengths(pieces: &[&[u8]]) -> Vec<u64> {
    let mut cursor = Pieces { pieces, piece: 0, at: 0 };
    let mut lengths = Vec::new();
    while let Some(chars) = cursor.u16() {
        let Some(flags) = cursor.u8() else { break };
        let runs = if flags & 0x08 != 0 { cursor.u16().unwrap_or(0) as usize } else { 0 };
        let extended = if flags & 0x04 != 0 { cursor.u32().unwrap_or(0) as usize } else { 0 };
        let (mut left, mut wide) = (usize::from(chars), flags & 0x01 != 0);
        while left > 0 {
            let width = if wide { 2 } else { 1 };
            let here = (cursor.left_in_piece() / width).min(left);
            cursor.skip(here * width);
            left -= here;
            if left > 0 {
                if !cursor.next_piece() {
                    break;
                }
                let Some(flags) = cursor.u8() else { break };
                wide = flags & 0x01 != 0;
            }
        }
        cursor.skip(4 * runs + extended);
        lengths.push(u64::from(chars));
    }
    lengths
}

/// A reading position across a record's body and its continuations.
struct Pieces<'a> {
    pieces: &'a [&'a [u8]],
    piece: usize,
    at: usize,
}

impl Pieces<'_> {
    fn left_in_piece(&self) -> usize {
        self.pieces.get(self.piece).map_or(0, |p| p.len().saturating_sub(self.at))
    }

    fn next_piece(&mut self) -> bool {
        self.piece += 1;
        self.at = 0;
        self.piece < self.pieces.len()
    }

    /// Skips `n` bytes, into the following pieces as needed.
    fn skip(&mut self, mut n: usize) {
        while n > 0 && self.piece < self.pieces.len() {
            let here = self.left_in_piece().min(n);
            self.at += here;
            n -= here;
            if n > 0 && !self.next_piece() {
                return;
            }
        }
    }

    fn byte(&mut self) -> Option<u8> {
        while self.left_in_piece() == 0 {
            if !self.next_piece() {
                return None;
            }
        }
        let byte = self.pieces[self.piece][self.at];
        self.at += 1;
        Some(byte)
    }

    fn u8(&mut self) -> Option<u8> {
        self.byte()
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([self.byte()?, self.byte()?, self.byte()?, self.byte()?]))
    }
}

/// Appends a record.
fn put(out: &mut Vec<u8>, kind: u16, body: &[u8]) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&u16::try_from(body.len()).unwrap_or(u16::MAX).to_le_bytes());
    out.extend_from_slice(body);
}

/// Runs calamine, a panic in it (a bug it has on some damaged input) refused as damage.
fn unpanicked<T>(work: impl FnOnce() -> T) -> Result<T, DocumentError> {
    catch_unwind(AssertUnwindSafe(work))
        .map_err(|_| DocumentError::Damaged("the workbook's records could not be read".to_string()))
}

fn damaged_stream(what: &str) -> DocumentError {
    DocumentError::Damaged(format!("the workbook stream: {what}"))
}

fn workbook_error(error: XlsError) -> DocumentError {
    match error {
        XlsError::Password => DocumentError::Encrypted,
        other => DocumentError::Damaged(format!("the workbook: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_string_lengths_are_read_across_continuations() {
        // "ab" (narrow), "xyz" wide with a formatting run, split after "x" into a continuation marked narrow.
        let first: &[u8] = &[2, 0, 0, b'a', b'b', 3, 0, 0x09, 1, 0, b'x', 0];
        let second: &[u8] = &[0, b'y', b'z', 0, 0, 0, 0];
        assert_eq!(string_lengths(&[first, second]), [2, 3]);
        assert_eq!(string_lengths(&[&[5, 0]]), Vec::<u64>::new(), "a table cut short ends there");
    }

    /// A workbook stream of one sheet named `S` holding `cells` (each record's kind and body).
    fn one_sheet(cells: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut stream = Vec::new();
        put(&mut stream, BOF, &[0, 6, 5, 0, 0, 0, 0, 0]);
        let mut sheet = vec![0u8; 8];
        sheet.extend_from_slice(&[1, 0, b'S']);
        put(&mut stream, BOUND_SHEET, &sheet);
        put(&mut stream, EOF, &[]);
        let at = stream.len() as u32;
        stream[4 + 8 + 4..4 + 8 + 8].copy_from_slice(&at.to_le_bytes());
        put(&mut stream, BOF, &[0, 6, 0x10, 0, 0, 0, 0, 0]);
        for (kind, body) in cells {
            put(&mut stream, *kind, body);
        }
        put(&mut stream, EOF, &[]);
        stream
    }

    /// A NUMBER record at `row`, `column`.
    fn number(row: u16, column: u16) -> (u16, Vec<u8>) {
        let mut body = Vec::new();
        body.extend_from_slice(&row.to_le_bytes());
        body.extend_from_slice(&column.to_le_bytes());
        body.extend_from_slice(&[0; 10]);
        (0x0203, body)
    }

    /// Why reading `stream` with its cells is refused by a pool the size of the shared one, as the model is told.
    fn refusal_of(stream: &[u8]) -> String {
        use crate::budget::{Budget, Cancel};
        use crate::media::memory::{Pool, SHARED_MEMORY};
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(SHARED_MEMORY)));
        let budget = Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(60), Cancel::new());
        let needed = rewrite(stream, true).unwrap().memory;
        let refused = Growing::new(pool, budget).cover(needed).map_err(|refusal| cells_refused(refusal, 0));
        refused.err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_sheet_of_two_far_corners_is_refused_before_calamine_reads_it() {
        let stream = one_sheet(&[number(0, 0), number(65_535, 255)]);
        let error = refusal_of(&stream);
        assert!(
            error.starts_with("its cells would take about 1.0 GiB of memory to read, more than the 384.0 MiB"),
            "{error}"
        );
        assert!(rewrite(&stream, false).unwrap().memory < 1 << 20, "without cells the sheets cost nothing");
    }

    #[test]
    fn a_formula_string_before_any_formula_counts_as_a_cell_at_the_origin() {
        // calamine sets the string at (0, 0): with one number at the far corner, that is a dense range of 65,536².
        let stream = one_sheet(&[(FORMULA_STRING, vec![1, 0, 0, b'x']), number(65_535, 255)]);
        let error = refusal_of(&stream);
        assert!(error.starts_with("its cells would take about"), "{error}");
    }
}
