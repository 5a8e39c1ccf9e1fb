//! Documents converted to text, the way a model reads them: DOCX and ODT (headings as `#` lines, lists, tables as
//! pipe tables, footnotes and comments marked), XLSX, XLS and ODS (one unit per sheet: a pipe table with its header
//! row, formulas as their cached values, dates as dates), PPTX (one unit per slide: title, text, tables, speaker
//! notes), EPUB (one unit per chapter, each converted as HTML) and HTML (readable text: headings, lists, `[text](url)`
//! links, tables; no script, style or hidden content).
//!
//! # Streaming
//!
//! A conversion writes its text into an [`Out`] as it goes, a line at a time, and `Out` hands it on to any
//! [`Write`](std::io::Write): the engine's is the far end of a bounded channel that the line window reads forward, so
//! no read holds the converted text whole, and a window deep in a sheet of a million rows costs the rows before it,
//! not memory. When the reader has what it needs it hangs up; the writes fail, [`Out::stopped`] turns true, and the
//! conversion returns early. [`outline`] tells the units (their count and names) before any text is written.
//!
//! # Bounds
//!
//! A document may be converted in the caller's process ([`Converter::InProcess`]), so everything it may cost is
//! bounded before it is spent, in a worker too ([`Converter::Worker`], whose process `media::child::confine` also
//! holds): the file is read whole only up to [`MAX_FILE_BYTES`]; a zip's entries are counted ([`package`]); every part read whole is inflated
//! through a cap, so a part that lies about its size (a zip bomb) stops at the cap; the parts calamine reads whole for
//! an XLSX (shared strings, styles) are measured the same way before calamine sees them, and its sheets are streamed
//! row by row ([`sheets`]); an ODS's content is streamed with every single text or tag bounded ([`ods`]); an XLS,
//! which calamine reads whole, is measured record by record first ([`xls`]); XML is read as a stream of events (no
//! tree, no recursion, no entity a document declares is expanded); and the time budget is checked as work goes.
//!
//! # Layout
//!
//! `package` opens a zip and reads parts; `xml` holds what the XML walkers share; `grid` writes a sheet's rows;
//! `docx`, `odt`, `pptx`, `sheets` (XLSX), `ods`, `xls`, `epub` and `html` convert one format each; `markdown`
//! writes pipe tables; `worker` is a worker process's side of an outline or a conversion, `process` the caller's.

mod docx;
mod epub;
mod grid;
mod html;
mod markdown;
mod ods;
mod odt;
mod package;
mod pptx;
pub(crate) mod process;
#[cfg(test)]
mod process_tests;
mod sheets;
mod worker;
mod xls;
mod xml;

pub(crate) use worker::{CONVERT_MODE, OUTLINE_MODE, convert_main, outline_main};

use crate::classify::document::DocumentKind;
use crate::classify::{self, Content, codec::DecodeLimit};
use crate::media::memory::Growing;
use crate::media::pages::PageSelection;
use crate::render::document as words;
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

/// Documents larger than this are not converted (the whole file is held in memory while it is).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Memory an HTML page's bytes are taken to need, per byte: the page, and its texts at most twice (a page's tree
/// reserves this much and its nodes).
pub const HTML_HELD_PER_BYTE: u64 = html::FED_BYTE_BYTES;

/// The units of a document, known before its text is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    /// Units in the whole document (1 for a document without units).
    pub unit_count: u32,
    /// The names of every unit, in order (sheet names, chapter titles; empty when units have none).
    pub names: Vec<String>,
    /// What the document says about itself, labelled (an EPUB's title, authors, language…; empty for most kinds).
    pub about: Vec<(&'static str, Vec<String>)>,
}

impl Outline {
    /// A document whose units are named, one per name.
    pub fn named(names: Vec<String>) -> Outline {
        Outline { unit_count: u32::try_from(names.len()).unwrap_or(u32::MAX), names, about: Vec::new() }
    }

    /// A document of `unit_count` units without names (1: a document without units).
    pub fn unnamed(unit_count: u32) -> Outline {
        Outline { unit_count, names: Vec::new(), about: Vec::new() }
    }
}

/// Why a document could not be converted.
#[derive(Debug)]
pub enum DocumentError {
    /// Not a readable document of its kind: damaged, truncated, or not what its name says.
    Damaged(String),
    /// Encrypted with a password.
    Encrypted,
    /// Larger than a bound (a zip bomb, too many entries, a part over its cap).
    TooLarge(String),
    /// Reading stopped: the time budget ran out, the read was cancelled, or the file could not be read.
    Stopped(io::Error),
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentError::Damaged(reason) => write!(f, "damaged or not a valid document: {reason}"),
            DocumentError::Encrypted => write!(f, "the document is encrypted with a password"),
            DocumentError::TooLarge(reason) => write!(f, "{reason}"),
            DocumentError::Stopped(error) => write!(f, "{error}"),
        }
    }
}

impl From<io::Error> for DocumentError {
    fn from(error: io::Error) -> DocumentError {
        DocumentError::Stopped(error)
    }
}

/// Checks the time budget and cancellation; called as conversion goes.
pub type Check<'a> = &'a mut dyn FnMut() -> io::Result<()>;

/// The units of the document `bytes` of `kind`: how many, and their names. It opens the document as converting it
/// would, so a damaged, encrypted or oversized document is refused here, before any text.
pub fn outline(kind: DocumentKind, bytes: &[u8], check: Check<'_>) -> Result<Outline, DocumentError> {
    match kind {
        DocumentKind::Docx | DocumentKind::Html => Ok(Outline::unnamed(1)),
        DocumentKind::Odt => odt::outline(bytes),
        DocumentKind::Xlsx => sheets::outline(bytes),
        DocumentKind::Pptx => pptx::outline(bytes),
        DocumentKind::Ods => ods::outline(bytes, check),
        DocumentKind::Xls => xls::outline(bytes, check),
        DocumentKind::Epub => epub::outline(bytes, check),
    }
}

/// Converts the units `selection` chooses of the document `bytes` of `kind` (HTML: already decoded to UTF-8) into
/// `out`, whose frame has `outline`'s units. Returns early, without an error, once `out` is [stopped](Out::stopped).
/// What a conversion holds beyond its bounded parts (an HTML page's tree, a workbook's cells) is reserved in `memory`,
/// on top of the file the read reserved there (an HTML page's reservation is its tree's own, [`HTML_HELD_PER_BYTE`]).
pub fn convert(
    kind: DocumentKind,
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
    memory: &mut Growing,
) -> Result<(), DocumentError> {
    match kind {
        DocumentKind::Docx => docx::convert(bytes, out, check),
        DocumentKind::Odt => odt::convert(bytes, out, check),
        DocumentKind::Xlsx => sheets::convert(bytes, selection, out, check),
        DocumentKind::Ods => ods::convert(bytes, selection, out, check),
        DocumentKind::Xls => xls::convert(bytes, selection, out, check, memory),
        DocumentKind::Pptx => pptx::convert(bytes, selection, out, check),
        DocumentKind::Epub => epub::convert(bytes, selection, out, check, memory),
        DocumentKind::Html => html::convert(&String::from_utf8_lossy(bytes), out, check, memory, 0),
    }
}

/// Where documents are converted: in this process, or in a worker program.
#[derive(Debug)]
pub enum Converter {
    /// In this process (the library's default). Made by [`Converter::in_process`] only.
    InProcess(InProcess),
    /// In a worker process of this program (`agent-read-worker`), started for each outline and each conversion.
    Worker(PathBuf),
}

/// [`outline`]'s signature.
type OutlineFn = fn(DocumentKind, &[u8], Check<'_>) -> Result<Outline, DocumentError>;
/// [`convert`]'s signature.
type ConvertFn =
    fn(DocumentKind, &[u8], &PageSelection, &mut Out<'_>, Check<'_>, &mut Growing) -> Result<(), DocumentError>;

/// The converters of this process. Only [`Converter::in_process`] names them, so a program that converts in a worker
/// (the binary) links none of their code and tables.
#[derive(Clone, Copy)]
pub struct InProcess {
    /// [`outline`].
    pub(crate) outline: OutlineFn,
    /// [`convert`].
    pub(crate) convert: ConvertFn,
}

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InProcess")
    }
}

impl Converter {
    /// Conversion in this process.
    pub fn in_process() -> Converter {
        Converter::InProcess(InProcess { outline, convert })
    }
}

/// An HTML page's bytes as UTF-8, decoded from the encoding its first block is found in.
pub fn page_as_utf8(bytes: Vec<u8>) -> Vec<u8> {
    let head = &bytes[..bytes.len().min(classify::SNIFF_LEN)];
    let Content::Text(format) = classify::classify(head, None) else { return bytes };
    let text = bytes.get(format.bom_len..).unwrap_or_default();
    format.codec.decode(text, DecodeLimit::NONE, true).text.into_bytes()
}

/// Where converted text goes, a line at a time. A document with units is framed as the model reads it: each unit
/// under its header line, its text behind the gutter (so no cell can print a header of its own), a blank line
/// between units, and a unit without text said to be so. Blank lines are written only between two lines of text, so
/// a unit or a document never starts or ends with one. Once a write fails (the reader hung up) nothing more is
/// written and [`Out::stopped`] is true.
pub struct Out<'w> {
    sink: &'w mut dyn Write,
    /// What a unit is called, and how many the document has; `None` for one flow of text.
    frame: Option<(&'static str, u32)>,
    /// Units begun so far.
    begun: u32,
    /// Lines written in the current unit (in the whole text, without units).
    lines: u64,
    /// A blank line is due before the next line of text.
    blank_due: bool,
    /// The last line written was blank.
    last_blank: bool,
    failed: Option<io::Error>,
    line: String,
}

impl<'w> Out<'w> {
    /// Text of one flow (a document without units).
    pub fn flow(sink: &'w mut dyn Write) -> Out<'w> {
        Out::with_frame(sink, None)
    }

    /// Text in units called `unit` (`sheet`), `count` of them in the document.
    pub fn framed(sink: &'w mut dyn Write, unit: &'static str, count: u32) -> Out<'w> {
        Out::with_frame(sink, Some((unit, count)))
    }

    fn with_frame(sink: &'w mut dyn Write, frame: Option<(&'static str, u32)>) -> Out<'w> {
        Out { sink, frame, begun: 0, lines: 0, blank_due: false, last_blank: false, failed: None, line: String::new() }
    }

    /// Whether the reader hung up: nothing more will be written.
    pub fn stopped(&self) -> bool {
        self.failed.is_some()
    }

    /// Begins unit `number`, named `title` when it has a name, marked when it is hidden (a document without units
    /// ignores it).
    pub fn begin(&mut self, number: u32, title: Option<&str>, hidden: bool) {
        let Some((unit, count)) = self.frame else { return };
        self.end_unit();
        if self.begun > 0 {
            self.put("");
        }
        self.begun += 1;
        let header = words::unit_header(unit, number, count, title, hidden);
        self.put(&header);
        (self.lines, self.blank_due, self.last_blank) = (0, false, false);
    }

    /// Whether the current unit (the whole text, without units) has no line yet.
    pub fn unit_is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Writes a line of text; a line feed in it starts another line.
    pub fn line(&mut self, text: &str) {
        let mut rest = text;
        loop {
            let (piece, more) = match memchr::memchr(b'\n', rest.as_bytes()) {
                Some(at) => (&rest[..at], Some(&rest[at + 1..])),
                None => (rest, None),
            };
            if self.blank_due {
                self.blank_due = false;
                self.text_line("");
            }
            self.text_line(piece);
            match more {
                Some(more) => rest = more,
                None => return,
            }
        }
    }

    /// Asks for a blank line before the next line of text (one, however often asked).
    pub fn blank(&mut self) {
        if self.lines > 0 && !self.last_blank {
            self.blank_due = true;
        }
    }

    /// Ends the text: the last unit's notice when it had no text, and everything written handed on. The error the
    /// writes failed with, if they did.
    pub fn finish(&mut self) -> io::Result<()> {
        self.end_unit();
        if self.failed.is_none()
            && let Err(error) = self.sink.flush()
        {
            self.failed = Some(error);
        }
        match self.failed.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn end_unit(&mut self) {
        if let Some((unit, _)) = self.frame
            && self.begun > 0
            && self.lines == 0
        {
            self.put(&words::empty_unit(unit));
            self.lines = 1;
        }
    }

    /// A line of the document's own text: behind the gutter in a unit.
    fn text_line(&mut self, text: &str) {
        self.lines += 1;
        self.last_blank = text.is_empty();
        if self.frame.is_some() {
            let mut framed = std::mem::take(&mut self.line);
            framed.clear();
            words::push_gutter_line(&mut framed, text);
            self.put(&framed);
            self.line = framed;
        } else {
            self.put(text);
        }
    }

    /// Writes `line` and its line feed, unless an earlier write failed.
    fn put(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        let written = self.sink.write_all(line.as_bytes()).and_then(|()| self.sink.write_all(b"\n"));
        if let Err(error) = written {
            self.failed = Some(error);
        }
    }
}

/// Converts into a string, for the unit tests of each format.
#[cfg(test)]
pub(crate) fn text_of(
    kind: DocumentKind,
    bytes: &[u8],
    selection: &PageSelection,
) -> Result<(Outline, String), DocumentError> {
    let outline = outline(kind, bytes, &mut || Ok(()))?;
    let mut sink = Vec::new();
    let mut out = match kind.unit() {
        Some(unit) => Out::framed(&mut sink, unit, outline.unit_count),
        None => Out::flow(&mut sink),
    };
    let budget = crate::budget::Budget::new(
        std::time::Instant::now() + std::time::Duration::from_secs(3600),
        crate::budget::Cancel::new(),
    );
    let mut memory = Growing::new(crate::media::memory::Pool::shared(), budget);
    convert(kind, bytes, selection, &mut out, &mut || Ok(()), &mut memory)?;
    out.finish()?;
    Ok((outline, String::from_utf8_lossy(&sink).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_stand_under_headers_with_blank_lines_only_between_text() {
        let mut sink = Vec::new();
        let mut out = Out::framed(&mut sink, "sheet", 3);
        out.begin(1, Some("Sales\nQ3"), false);
        out.blank();
        out.line("| a |\n── sheet 9 of 9 ──");
        out.blank();
        out.blank();
        out.line("after");
        out.blank();
        out.begin(3, None, true);
        out.finish().unwrap();
        assert_eq!(
            String::from_utf8(sink).unwrap(),
            "── sheet 1 of 3: Sales Q3 ──\n│ | a |\n│ ── sheet 9 of 9 ──\n│\n│ after\n\n── sheet 3 of 3 (hidden) ──\n(no text in this sheet)\n"
        );
    }

    #[test]
    fn a_failed_write_stops_the_text() {
        struct HungUp;
        impl Write for HungUp {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = HungUp;
        let mut out = Out::flow(&mut sink);
        assert!(!out.stopped());
        out.line("x");
        assert!(out.stopped());
        assert_eq!(out.finish().map_err(|e| e.kind()), Err(io::ErrorKind::BrokenPipe));
    }
}
