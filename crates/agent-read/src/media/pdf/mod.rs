//! PDFs: the text of chosen pages, extracted in isolation from the caller.
//!
//! Text comes from `pdf-extract` over `lopdf`, a page at a time: only the chosen pages are extracted, in order, and
//! extraction stops after the page that brings the gathered text to `max_chars` characters. The work follows the pages
//! read, not the document's length: the document is loaded an object at a time (`xref`, `lazy`) — its
//! cross-reference data, its page tree's nodes (the page count), then for each page read what that page reaches —
//! and pdf-extract is shown one page at a time (`text`: it would list every page of the document at each call). A
//! document whose cross-reference data or page tree is out of the ordinary is loaded whole by lopdf instead.
//! A page that makes pdf-extract panic or fail does not sink the others: its text is a bracketed note saying so.
//!
//! A page's content reaches pdf-extract in bounded batches (`batch`, over the in-place lexer `lex`), never parsed
//! whole, and a page keeps at most [`MAX_PAGE_CHARS`] characters ([`PageText::capped`] says when it stops there).
//!
//! # Isolation, and why
//!
//! A PDF parser is a large body of code meeting hostile input: `pdf-extract` panics on many unexpected structures (it
//! unwraps freely), recurses without a bound, can be kept busy for minutes, and a few megabytes of FlateDecode inflate
//! to gigabytes. None of that may crash, hang or starve the caller — typically an MCP server answering other requests.
//!
//! - [`Isolation::Process`] (what the binary uses, through [`Reader::with_worker`](crate::Reader::with_worker)): the
//!   work runs in a child process — the worker program (`agent-read-worker`) in its `pdf` mode, which calls
//!   [`worker_main`]. The child gets the already-open file as its standard input (never a path: the file was opened
//!   under the roots' confinement, and the child opens nothing). It lowers its own limits before it parses a byte — CPU time (the time left plus a few seconds), no core dumps, no file writes,
//!   no new processes, few descriptors, death with its parent, then an address space of 1 GiB plus twice the PDF —
//!   and answers with one JSON document on its standard output. The parent (`media::child`) reads the answer (and the
//!   start of standard error) on helper threads with byte caps, polls the child every few milliseconds against the
//!   deadline and the cancel signal, kills it (SIGKILL) when either comes, and always reaps it. A panic, a stack overflow, an
//!   allocation failure or an endless loop costs the child only; the parent turns it into a short error.
//! - [`Isolation::Thread`] (the library default, since a library cannot assume a worker program is there): the work
//!   runs on a thread of this process (64 MiB of stack) under `catch_unwind`; the caller waits on a channel until the
//!   deadline, checking the cancel signal, then abandons the thread, which sees a shared stop flag at its next check —
//!   between pages, every few thousand characters of text, every megabyte a decoder yields (not inside lopdf's loading
//!   or a page's parsing, which run to their end). A thread has no memory limit of its own, so what would balloon is
//!   refused before it runs (below).
//!
//! In both modes, the structures that overflow pdf-extract's stack — a page tree that loops, a form XObject that draws
//! itself, forms nested more than 32 deep — are refused before extraction (in a thread, a stack overflow would abort
//! the whole process).
//!
//! # Bounded memory
//!
//! lopdf inflates streams into memory without a bound: object and cross-reference streams while it loads, content,
//! form, font, function and colour-space streams while pdf-extract reads a page. Streams are therefore measured first
//! by bounded decoding (`decode`: FlateDecode by flate2, LZWDecode by weezl, ASCII85Decode; the filters lopdf decodes), which
//! give up as soon as a stream would pass 64 MiB, holding at most that much:
//!
//! - before loading (thread mode): the data after every `stream` keyword of the file is probed without reading its
//!   dictionary — so no escaped name or odd `/Length` can hide it — through up to four nested decodings;
//! - before each page (both modes): every stream the page reaches through its contents and resources is decoded
//!   exactly as lopdf will (its filter chain, PNG predictors and their row size included);
//! - before each page (both modes): the forms the page draws are scanned for what parsing them will cost (lopdf makes
//!   each operator a ~500-byte operation, and a form's content is parsed whole, with the forms it draws), and refused
//!   past 128 MiB for the costliest chain of forms drawn inside one another;
//! - while loading an object at a time: a cross-reference stream or object stream is measured before it is decoded.
//!
//! The page's own content needs no such bound: whatever its length, it is parsed a batch of at most 65,536 tokens at a
//! time. Image and embedded-file streams, which hold no text, are emptied after loading, so they are never inflated (nor
//! parsed as page content, as pdf-extract would do with an image it draws). What only the process mode's memory limit
//! bounds: lopdf's own decoding, at load time, of object and cross-reference streams whose decode parameters hide a
//! further stage behind a PNG predictor or ask for enormous predictor rows; the object streams of an encrypted PDF
//! that opens with the empty password (lopdf decrypts and unpacks them while loading, before any probe sees them in
//! the clear); and structures other than content that pdf-extract builds large (a huge ToUnicode map, say). The
//! price of the filter-blind probe: in the thread mode, a PDF holding any stream that inflates past 64 MiB — a very
//! large FlateDecode image included — is refused as `TooLarge`; the process mode reads it.
//!
//! # At once
//!
//! At most [`MAX_EXTRACTIONS`] extractions run at once in a process, whatever their isolation: each may take up to its
//! worker's memory limit (or, in a thread, what the bounds above let it), more would only compete for the same cores,
//! and a server runs many reads at once. A further one waits its turn as a read waits for memory
//! ([`crate::media::memory`]): at most half of its remaining time, then it is refused as busy.
//!
//! # Encryption
//!
//! A PDF that opens with the empty user password (the common "owner password only" restriction) is decrypted by lopdf
//! while loading and read like any other; any other encrypted PDF is [`PdfError::Encrypted`].
//!
//! # Layout
//!
//! [`PageSelection`] is parsed in `crate::media::pages`. `thread`, `process` and `worker` keep the extraction apart from the caller
//! (`process` is the caller's side of a worker process, `worker` the worker's own). `extract` loads the document (an
//! object at a time through `xref` and `lazy`, or whole) and walks the chosen pages, `text` gathers one page's text,
//! feeding its content to pdf-extract through `batch`. `guard` refuses, page by page, the structures that would
//! exhaust the stack or memory, with `scan` reading content streams for it and `measure` sizing streams through the
//! bounded decoders of `decode`. `stop` is the signal that ends work which ran out of time.

mod batch;
mod decode;
mod extract;
#[cfg(test)]
pub(crate) mod fixtures;
mod guard;
mod lazy;
mod lex;
mod measure;
mod process;
mod scan;
mod stop;
mod text;
mod thread;
mod worker;
#[cfg(test)]
mod worker_tests;
mod xref;

pub use crate::media::pages::PageSelection;
pub use worker::worker_main;

use crate::budget::{Budget, Cancel, Cancelled};
use crate::media::child::shorten;
use crate::media::memory::{Pool, Refusal, Reservation};
use process::{Worker, in_child};
use std::fmt;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use thread::in_thread;

/// The worker program's first argument for a PDF's text ([`worker_main`]'s mode).
pub const WORKER_MODE: &str = "pdf";
/// Largest PDF read, in bytes.
pub const MAX_PDF_BYTES: u64 = 256 * 1024 * 1024;
/// Most characters of text kept from one page: past them the page's text stops (and says so), in every mode.
pub const MAX_PAGE_CHARS: usize = 1_000_000;
/// Longest pause between two looks at a running extraction.
const POLL_MAX: Duration = Duration::from_millis(10);
/// PDF extractions that may run at once in a process (see the module's documentation).
pub const MAX_EXTRACTIONS: u64 = 4;
/// The turns of the extractions running, shared by every reader in the process.
static EXTRACTIONS: Pool = Pool::new(MAX_EXTRACTIONS);

/// One page's extracted text: trailing spaces cut from every line, at most two blank lines in a row, no blank lines
/// at the start or end. A page longer than `max_chars` alone is cut there, and no page holds more than
/// [`MAX_PAGE_CHARS`]; a page the extractor fails on holds a bracketed note saying why (after any text gathered before
/// the failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// The page's 1-based number.
    pub number: u32,
    /// The page's text.
    pub text: String,
    /// Whether the text stops at the extraction cap before the page's end (more text is on the page, readable with
    /// a larger cap).
    pub cut: bool,
    /// Whether the text stops at [`MAX_PAGE_CHARS`]: the rest of the page is not read, whatever the cap.
    pub capped: bool,
    /// Content operations of the page skipped for their size (past 16,384 tokens or 1 MiB: none that shows text).
    pub skipped: usize,
}

/// What extraction gave: the document's page count and the text of the chosen pages, in order. Extraction stops early
/// (after the page that crosses `max_chars`), so `pages` may hold fewer than chosen; `complete` says whether all chosen
/// pages are there (and none was cut).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// Pages in the document.
    pub page_count: u32,
    /// The chosen pages' text, in order: the first ones, when extraction stopped early.
    pub pages: Vec<PageText>,
    /// Whether every chosen page that exists is in `pages`, whole.
    pub complete: bool,
}

/// Why a PDF could not be read.
#[derive(Debug)]
pub enum PdfError {
    /// The PDF is encrypted and does not open with the empty password.
    Encrypted,
    /// The file is not a PDF, or its structure is broken beyond reading; the reason says what was wrong.
    Malformed(String),
    /// The PDF, or a stream inside it, passes a size limit (a decompression bomb, typically); the message says which.
    TooLarge(String),
    /// The deadline passed before extraction finished.
    Timeout,
    /// The extractor failed unexpectedly (a panic, a crashed or killed worker); the reason is short.
    Crashed(String),
    /// Reading the file or starting the worker failed; also the cancel signal ([`crate::budget::is_cancelled`]).
    Io(io::Error),
}

impl fmt::Display for PdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PdfError::Encrypted => f.write_str("the PDF is encrypted with a password; its text cannot be read"),
            PdfError::Malformed(reason) => write!(f, "the PDF cannot be read: {reason}"),
            PdfError::TooLarge(reason) => f.write_str(reason),
            PdfError::Timeout => f.write_str("PDF text extraction ran out of its time budget"),
            PdfError::Crashed(reason) => write!(f, "PDF text extraction failed: {reason}"),
            PdfError::Io(err) => write!(f, "{err}"),
        }
    }
}

impl From<io::Error> for PdfError {
    fn from(err: io::Error) -> PdfError {
        PdfError::Io(err)
    }
}

impl std::error::Error for PdfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PdfError::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// How extraction is kept apart from the caller.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// In a child process (`program` + `args`, then the worker's own arguments), with memory and CPU limits and killed
    /// at the deadline: panics, loops and bombs cannot touch the caller. What the binary uses.
    Process {
        /// The program to run (the binary's `agent-read-worker`).
        program: PathBuf,
        /// Arguments that make `program` call [`worker_main`] with the ones that follow.
        args: Vec<String>,
    },
    /// In a thread of this process, panics caught, abandoned at the deadline; bombs are stopped by bounded
    /// decompression. The library default (a library cannot assume a worker program is there). Made by
    /// [`Isolation::thread`] only.
    Thread(InThread),
}

/// Extraction in a thread of this process. Only [`Isolation::thread`] names the extractor through it, so a program
/// that never asks for a thread (the binary, which has a worker) links none of the extractor's code and tables.
#[derive(Clone, Copy)]
pub struct InThread(fn(&File, &PageSelection, usize, Instant, &Cancel) -> Result<Extracted, PdfError>);

impl fmt::Debug for InThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InThread")
    }
}

impl Isolation {
    /// Extraction in a thread of this process.
    pub fn thread() -> Isolation {
        Isolation::Thread(InThread(in_thread))
    }
}

/// Extracts the chosen pages of the PDF open as `file` (read from its start; at most [`MAX_PDF_BYTES`]), stopping once
/// `max_chars` characters were gathered, by `deadline`, or when `cancel` is given (see [`crate::budget::Cancel`]).
///
/// Pages past the end are skipped (see [`PageSelection::first_missing`]). The file's offset is never used or moved.
/// A cancelled extraction is `PdfError::Io` holding [`Cancelled`].
pub fn extract(
    file: &File,
    selection: &PageSelection,
    max_chars: usize,
    deadline: Instant,
    cancel: &Cancel,
    isolation: &Isolation,
) -> Result<Extracted, PdfError> {
    let budget = Budget::new(deadline, cancel.clone());
    budget.check().map_err(budget_error)?;
    let size = file.metadata().map_err(PdfError::Io)?.len();
    if size > MAX_PDF_BYTES {
        return Err(file_too_large(size));
    }
    let _turn = turn(&EXTRACTIONS, &budget)?;
    match isolation {
        Isolation::Process { program, args } => {
            in_child(file, selection, max_chars, deadline, cancel, &Worker { program, args })
        }
        Isolation::Thread(InThread(extract)) => extract(file, selection, max_chars, deadline, cancel),
    }
}

/// A turn among the extractions `turns` lets run at once, waited for within `budget`.
fn turn<'p>(turns: &'p Pool, budget: &Budget) -> Result<Reservation<'p>, PdfError> {
    turns.reserve(1, budget).map_err(|refusal| {
        let (running, most, waited) = match refusal {
            Refusal::Stopped(error) => return budget_error(error),
            Refusal::Busy { held, capacity, waited, .. } => (held, capacity, waited),
            Refusal::TooLargeAlone { capacity, .. } => (capacity, capacity, Duration::ZERO),
        };
        PdfError::Io(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "not extracted now: the server is busy with other PDFs ({running} extractions running, {most} at \
                 most at once, and this one waited {:.1} s for its turn)",
                waited.as_secs_f64()
            ),
        ))
    })
}

/// The error of a budget check: `Timeout`, or the cancelled `Io` error as it is.
fn budget_error(err: io::Error) -> PdfError {
    if err.kind() == io::ErrorKind::TimedOut { PdfError::Timeout } else { PdfError::Io(err) }
}

/// The error of a cancelled extraction: `Io` holding [`Cancelled`].
fn cancelled() -> PdfError {
    PdfError::Io(io::Error::other(Cancelled))
}

/// The error of a file past [`MAX_PDF_BYTES`].
fn file_too_large(size: u64) -> PdfError {
    PdfError::TooLarge(format!(
        "the PDF is {size} bytes, over the {} MiB limit of text extraction",
        MAX_PDF_BYTES / (1024 * 1024)
    ))
}

/// The message of a caught panic, shortened.
fn panic_reason(payload: &(dyn std::any::Any + Send)) -> String {
    shorten(&format!("the extractor panicked: {}", crate::media::child::panic_message(payload)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_extraction_waits_for_its_turn_then_is_busy_saying_so() {
        let turns = Pool::new(2);
        let within = |seconds: f64| Budget::new(Instant::now() + Duration::from_secs_f64(seconds), Cancel::new());
        let first = turn(&turns, &within(30.0)).unwrap();
        let second = turn(&turns, &within(30.0)).unwrap();
        let started = Instant::now();
        let busy = turn(&turns, &within(0.4)).err().unwrap();
        assert!(started.elapsed() >= Duration::from_millis(150), "it waited for a turn first");
        let PdfError::Io(error) = &busy else { panic!("{busy:?}") };
        assert_eq!(error.kind(), io::ErrorKind::ResourceBusy);
        let says = "not extracted now: the server is busy with other PDFs (2 extractions running, 2 at most at \
                    once, and this one waited";
        assert!(error.to_string().starts_with(says), "{error}");
        let mapped = crate::error::ReadError::from_io(error, "a.pdf");
        assert_eq!(mapped.code, crate::error::ErrorCode::TooLarge);
        assert!(mapped.hint.as_deref().is_some_and(|hint| hint.contains("read it again")), "{mapped:?}");
        drop(first);
        let third = turn(&turns, &within(0.4)).unwrap();
        drop((second, third));
        assert_eq!(turns.held(), 0);
    }

    #[test]
    fn a_file_over_the_size_limit_is_too_large_before_anything_is_read() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(MAX_PDF_BYTES + 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let err =
            extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &Isolation::thread()).unwrap_err();
        assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("256 MiB")), "{err:?}");
    }
}
