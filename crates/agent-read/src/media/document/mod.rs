//! Documents converted to text, the way a model reads them: DOCX (headings as `#` lines, lists, tables as pipe tables,
//! footnotes and comments marked), XLSX (one unit per sheet: a pipe table with its header row, formulas as their
//! cached values, dates as dates), PPTX (one unit per slide: title, text, tables, speaker notes) and HTML (readable
//! text: headings, lists, `[text](url)` links, tables; no script, style or hidden content).
//!
//! # Bounds
//!
//! A document is converted in this process, so everything it may cost is bounded before it is spent: the file is read
//! whole only up to [`MAX_FILE_BYTES`]; a zip's entries are counted ([`package`]); every part read whole is inflated
//! through a cap, so a part that lies about its size (a zip bomb) stops at the cap; the parts calamine reads whole for
//! a workbook (shared strings, styles) are measured the same way before calamine sees them, and a sheet is streamed
//! row by row ([`sheets`]); XML is read as a stream of events (no tree, no recursion, no entity a document declares
//! is expanded); converted text stops at the caller's character budget; and the time budget is checked as work goes.
//!
//! # Layout
//!
//! `package` opens the zip and reads parts; `xml` holds what the OOXML walkers share; `docx`, `pptx`, `sheets` and
//! `html` convert one format each, into [`Converted`] units; `markdown` writes pipe tables.

mod docx;
mod html;
mod markdown;
mod package;
mod pptx;
mod sheets;
mod xml;

use crate::classify::document::DocumentKind;
use crate::media::pages::PageSelection;
use std::fmt;
use std::io;

/// Documents larger than this are not converted (the whole file is held in memory while it is).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// One unit of a document (a sheet, a slide; the whole text of a document without units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its number, from 1.
    pub number: u32,
    /// Its name (a sheet's name, a slide's title), when it has one.
    pub title: Option<String>,
    /// Its text, as Markdown-like lines.
    pub text: String,
}

/// What a conversion gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// The chosen units, in order (one unit, numbered 1, for a document without units).
    pub units: Vec<Unit>,
    /// Units in the whole document.
    pub unit_count: u32,
    /// The names of every unit, in order (sheet names; empty when units have none).
    pub names: Vec<String>,
    /// False when the text stopped at the character budget before the chosen units ended.
    pub complete: bool,
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

/// Converts the document `bytes` of `kind` (HTML: already decoded to `text`) into the units `selection` chooses, with
/// at most about `max_chars` characters of text.
pub fn convert(
    kind: DocumentKind,
    bytes: &[u8],
    selection: &PageSelection,
    max_chars: usize,
    check: Check<'_>,
) -> Result<Converted, DocumentError> {
    match kind {
        DocumentKind::Docx => docx::convert(bytes, max_chars, check).map(single),
        DocumentKind::Xlsx => sheets::convert(bytes, selection, max_chars, check),
        DocumentKind::Pptx => pptx::convert(bytes, selection, max_chars, check),
        DocumentKind::Html => {
            let text = String::from_utf8_lossy(bytes);
            html::convert(&text, max_chars, check).map(single)
        }
    }
}

/// A document without units: its text as unit 1 of 1.
fn single((text, complete): (String, bool)) -> Converted {
    Converted { units: vec![Unit { number: 1, title: None, text }], unit_count: 1, names: Vec::new(), complete }
}

/// A text being converted, which stops growing at its character budget.
#[derive(Debug)]
pub(crate) struct Budgeted {
    text: String,
    max_chars: usize,
}

impl Budgeted {
    fn new(max_chars: usize) -> Budgeted {
        Budgeted { text: String::new(), max_chars }
    }

    /// Whether the budget is spent.
    fn full(&self) -> bool {
        self.text.len() >= self.max_chars
    }

    /// Whether nothing was written.
    fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Appends a line (a newline is added).
    fn line(&mut self, line: &str) {
        if !self.full() {
            self.text.push_str(line);
            self.text.push('\n');
        }
    }

    /// Appends a blank line unless the text is empty or already ends with one.
    fn blank(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with("\n\n") && !self.full() {
            self.text.push('\n');
        }
    }

    fn finish(self) -> (String, bool) {
        let complete = !self.full();
        let mut text = self.text;
        text.truncate(text.trim_end().len());
        (text, complete)
    }
}
