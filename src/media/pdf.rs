//! PDFs: the text of chosen pages, extracted in isolation from the caller.
//!
//! Text comes from `pdf-extract` over `lopdf`, a page at a time (`output_doc_page` into a capped sink): only the chosen
//! pages are extracted, in order, and extraction stops after the page that brings the gathered text to `max_chars`
//! characters — the first pages of a 2,000-page PDF cost what those pages cost. The page count is lopdf's page tree.
//! A page that makes pdf-extract panic or fail does not sink the others: its text is a bracketed note saying so.
//!
//! # Isolation, and why
//!
//! A PDF parser is a large body of code meeting hostile input: `pdf-extract` panics on many unexpected structures (it
//! unwraps freely), recurses without a bound, can be kept busy for minutes, and a few megabytes of FlateDecode inflate
//! to gigabytes. None of that may crash, hang or starve the caller — typically an MCP server answering other requests.
//!
//! - [`Isolation::Process`] (what the binary uses): the work runs in a child process — the program itself, started
//!   with a hidden worker argument that calls [`worker_main`]. The child gets the already-open file as its standard
//!   input (never a path: the file was opened under the roots' confinement, and the child opens nothing). It lowers its
//!   own limits before it parses a byte — CPU time (the time left plus a few seconds), no core dumps, no file writes,
//!   no new processes, few descriptors, death with its parent, then an address space of 1 GiB plus twice the PDF —
//!   and answers with one JSON document on its standard output. The parent reads the answer (and the start of
//!   standard error) on helper threads with byte caps, polls the child every few milliseconds against the deadline
//!   and the cancel signal, kills it (SIGKILL) when either comes, and always reaps it. A panic, a stack overflow, an
//!   allocation failure or an endless loop costs the child only; the parent turns it into a short error.
//! - [`Isolation::Thread`] (the library default, since a library cannot assume it may re-execute its host): the work
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
//! by bounded decoders kept in this file (FlateDecode, LZWDecode, ASCII85Decode: the filters lopdf decodes), which give
//! up as soon as a stream would pass 64 MiB, holding at most that much:
//!
//! - before loading (thread mode): the data after every `stream` keyword of the file is probed without reading its
//!   dictionary — so no escaped name or odd `/Length` can hide it — through up to four nested decodings;
//! - before each page (both modes): every stream the page reaches through its contents and resources is decoded
//!   exactly as lopdf will (its filter chain, PNG predictors and their row size included);
//! - before each page (thread mode): the page's content, and each form's, is scanned for what parsing it will cost
//!   (lopdf makes each operator a ~500-byte operation), and refused past 128 MiB of it.
//!
//! Image and embedded-file streams, which hold no text, are emptied after loading, so they are never inflated (nor
//! parsed as page content, as pdf-extract would do with an image it draws). What only the process mode's memory limit
//! bounds: lopdf's own decoding, at load time, of object and cross-reference streams whose decode parameters hide a
//! further stage behind a PNG predictor or ask for enormous predictor rows; the object streams of an encrypted PDF
//! that opens with the empty password (lopdf decrypts and unpacks them while loading, before any probe sees them in
//! the clear); and structures other than content that pdf-extract builds large (a huge ToUnicode map, say). The
//! price of the filter-blind probe: in the thread mode, a PDF holding any stream that inflates past 64 MiB — a very
//! large FlateDecode image included — is refused as `TooLarge`; the process mode reads it.
//!
//! # Encryption
//!
//! A PDF that opens with the empty user password (the common "owner password only" restriction) is decrypted by lopdf
//! while loading and read like any other; any other encrypted PDF is [`PdfError::Encrypted`].

use crate::budget::{Budget, Cancel, Cancelled};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use pdf_extract::{ConvertToFmt, PlainTextOutput};
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Largest PDF read, in bytes.
pub const MAX_PDF_BYTES: u64 = 256 * 1024 * 1024;

/// Largest decoded stream: past it a stream is a decompression bomb (`TooLarge`).
const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// How many decodings deep the pre-load probe follows a stream (FlateDecode inside FlateDecode …).
const PROBE_DEPTH: usize = 4;
/// What the deepest probed decoding may still yield: more means yet another stage is hidden inside.
const PROBE_DEEPEST_BYTES: usize = 1024 * 1024;
/// How often, in decoded bytes, the decoders look at the stop signal.
const STOP_CHECK_BYTES: usize = 1024 * 1024;
/// Most memory the parsed content of a page, or of a form, may take in the thread mode (an estimate, see
/// [`Scanned::parsed_bytes`]).
const MAX_PARSED_BYTES: usize = 128 * 1024 * 1024;
/// Deepest chain of form XObjects drawn inside one another.
const MAX_FORM_DEPTH: usize = 32;
/// Longest chain of `/Parent` links from a page to the root of the page tree.
const MAX_TREE_DEPTH: usize = 256;
/// Stack of the extraction thread: pdf-extract recurses into forms, nom into nested objects.
const EXTRACT_STACK_BYTES: usize = 64 * 1024 * 1024;
/// The worker's address space: this much, plus twice the PDF's size.
const WORKER_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
/// The worker's CPU time beyond the time left before the deadline (the parent kills it at the deadline anyway).
const WORKER_CPU_SLACK_SECONDS: u64 = 3;
/// Descriptors the worker may hold (it needs its three standard streams).
const WORKER_MAX_FILES: u64 = 16;
/// Longest pause between two looks at a running extraction.
const POLL_MAX: Duration = Duration::from_millis(10);
/// Standard error kept from the worker, to explain a crash.
const STDERR_CAP: usize = 4096;
/// Characters of a crash or failure reason passed on.
const REASON_CHARS: usize = 200;
/// Reading the PDF: bytes per read, with a stop check between reads.
const READ_CHUNK: usize = 1024 * 1024;

/// Pages chosen by a request's `pages` field: sorted, merged 1-based inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSelection {
    /// Sorted, disjoint and non-adjacent ranges; an end of `None` runs to the last page.
    ranges: Vec<(u32, Option<u32>)>,
}

/// How a valid `pages` field looks, for error messages.
const VALID_FORMS: &str = r#"valid forms: "3", "1-5", "2,4-6", "7-" (page 7 to the end); pages are numbered from 1"#;

impl PageSelection {
    /// Parses "3", "1-5", "2,4-6" (spaces around commas/dashes allowed; "7-" means 7 to the end). Errors name the
    /// problem and show the valid forms.
    pub fn parse(spec: &str) -> Result<PageSelection, String> {
        let invalid = |problem: String| format!("pages {spec:?}: {problem}; {VALID_FORMS}");
        if spec.trim().is_empty() {
            return Err(invalid("no page given".to_string()));
        }
        let mut ranges = Vec::new();
        for item in spec.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(invalid("an empty item between commas".to_string()));
            }
            let range = match item.split_once('-') {
                None => {
                    let page = page_number(item).map_err(invalid)?;
                    (page, Some(page))
                }
                Some((first, last)) => {
                    let (first, last) = (first.trim(), last.trim());
                    if first.is_empty() {
                        return Err(invalid(format!("{item:?} has no first page")));
                    }
                    if last.contains('-') {
                        return Err(invalid(format!("{item:?} has more than one dash")));
                    }
                    let start = page_number(first).map_err(invalid)?;
                    if last.is_empty() {
                        (start, None)
                    } else {
                        let end = page_number(last).map_err(invalid)?;
                        if end < start {
                            return Err(invalid(format!("the range {item:?} runs backwards")));
                        }
                        (start, Some(end))
                    }
                }
            };
            ranges.push(range);
        }
        Ok(PageSelection { ranges: merge(ranges) })
    }

    /// Every page.
    pub fn all() -> PageSelection {
        PageSelection { ranges: vec![(1, None)] }
    }

    /// The chosen pages that exist in a document of `page_count` pages, in order.
    pub fn pages(&self, page_count: u32) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(move |&(start, end)| start..=end.unwrap_or(page_count).min(page_count))
    }

    /// The chosen page numbers past `page_count` (for an INVALID_RANGE error), if any.
    pub fn first_missing(&self, page_count: u32) -> Option<u32> {
        self.ranges.iter().find_map(|&(start, end)| match end {
            None => (start > page_count).then_some(start),
            Some(end) => (end > page_count).then_some(start.max(page_count.saturating_add(1))),
        })
    }

    /// The selection in the form [`PageSelection::parse`] reads back (how the worker receives it).
    fn spec(&self) -> String {
        let items: Vec<String> = self
            .ranges
            .iter()
            .map(|&(start, end)| match end {
                None => format!("{start}-"),
                Some(end) if end == start => start.to_string(),
                Some(end) => format!("{start}-{end}"),
            })
            .collect();
        items.join(",")
    }
}

/// One page number of a `pages` field: digits only, at least 1.
fn page_number(text: &str) -> Result<u32, String> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a page number"));
    }
    match text.parse::<u32>() {
        Ok(0) => Err("there is no page 0".to_string()),
        Ok(page) => Ok(page),
        Err(_) => Err(format!("{text} is past the largest page number")),
    }
}

/// Sorts ranges and merges those that overlap or touch.
fn merge(mut ranges: Vec<(u32, Option<u32>)>) -> Vec<(u32, Option<u32>)> {
    ranges.sort_unstable_by_key(|&(start, _)| start);
    let mut merged: Vec<(u32, Option<u32>)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        if let Some(last) = merged.last_mut() {
            match last.1 {
                None => continue,
                Some(last_end) if start <= last_end.saturating_add(1) => {
                    last.1 = end.map(|end| end.max(last_end));
                    continue;
                }
                Some(_) => {}
            }
        }
        merged.push((start, end));
    }
    merged
}

/// One page's extracted text: trailing spaces cut from every line, at most two blank lines in a row, no blank lines
/// at the start or end. A page longer than `max_chars` alone is cut there; a page the extractor fails on holds a
/// bracketed note saying why (after any text gathered before the failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// The page's 1-based number.
    pub number: u32,
    /// The page's text.
    pub text: String,
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
        /// The program to run (the binary itself, e.g. `std::env::current_exe()`).
        program: PathBuf,
        /// Arguments that make `program` call [`worker_main`] with the ones that follow.
        args: Vec<String>,
    },
    /// In a thread of this process, panics caught, abandoned at the deadline; bombs are stopped by bounded
    /// decompression. The library default (a library cannot re-execute itself).
    Thread,
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
    Budget::new(deadline, cancel.clone()).check().map_err(budget_error)?;
    let size = file.metadata().map_err(PdfError::Io)?.len();
    if size > MAX_PDF_BYTES {
        return Err(file_too_large(size));
    }
    match isolation {
        Isolation::Process { program, args } => {
            in_child(file, selection, max_chars, deadline, cancel, &Worker { program, args })
        }
        Isolation::Thread => in_thread(file, selection, max_chars, deadline, cancel),
    }
}

/// The error of a budget check: `Timeout`, or the cancelled `Io` error as it is.
fn budget_error(err: io::Error) -> PdfError {
    if err.kind() == io::ErrorKind::TimedOut { PdfError::Timeout } else { PdfError::Io(err) }
}

fn cancelled() -> PdfError {
    PdfError::Io(io::Error::other(Cancelled))
}

fn file_too_large(size: u64) -> PdfError {
    PdfError::TooLarge(format!(
        "the PDF is {size} bytes, over the {} MiB limit of text extraction",
        MAX_PDF_BYTES / (1024 * 1024)
    ))
}

fn stream_too_large() -> PdfError {
    PdfError::TooLarge(format!(
        "a stream in the PDF inflates past {} MiB (a decompression bomb?); its text was not extracted",
        MAX_STREAM_BYTES / (1024 * 1024)
    ))
}

/// When work inside an extraction must end: a deadline, or a flag raised by whoever gave up waiting for it.
#[derive(Clone, Debug)]
struct Stop {
    deadline: Option<Instant>,
    flag: Arc<AtomicBool>,
}

impl Stop {
    fn until(deadline: Instant) -> Stop {
        Stop { deadline: Some(deadline), flag: Arc::default() }
    }

    /// No deadline: the worker process, which its parent kills.
    fn never() -> Stop {
        Stop { deadline: None, flag: Arc::default() }
    }

    fn raise(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    fn is_raised(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.deadline.is_some_and(|deadline| Instant::now() >= deadline)
    }

    fn check(&self) -> Result<(), PdfError> {
        if self.is_raised() { Err(PdfError::Timeout) } else { Ok(()) }
    }
}

fn in_thread(
    file: &File,
    selection: &PageSelection,
    max_chars: usize,
    deadline: Instant,
    cancel: &Cancel,
) -> Result<Extracted, PdfError> {
    let file = file.try_clone().map_err(PdfError::Io)?;
    let selection = selection.clone();
    let stop = Stop::until(deadline);
    let worker_stop = stop.clone();
    let (sender, receiver) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("pdf-extract".to_string())
        .stack_size(EXTRACT_STACK_BYTES)
        .spawn(move || {
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                let data = read_pdf(&file, &worker_stop)?;
                extract_bytes(&data, &selection, max_chars, &worker_stop, Host::Thread)
            }))
            .unwrap_or_else(|payload| Err(PdfError::Crashed(panic_reason(payload.as_ref()))));
            // The caller may have stopped waiting: then nobody hears this, which is fine.
            let _ = sender.send(outcome);
        })
        .map_err(PdfError::Io)?;
    loop {
        let wait = deadline.saturating_duration_since(Instant::now()).min(POLL_MAX);
        match receiver.recv_timeout(wait) {
            Ok(outcome) => return outcome,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PdfError::Crashed("the extraction thread ended without an answer".to_string()));
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if cancel.is_cancelled() {
            stop.raise();
            return Err(cancelled());
        }
        if Instant::now() >= deadline {
            stop.raise();
            return Err(PdfError::Timeout);
        }
    }
}

/// Reads the whole PDF from the start of `file` without moving its offset (or, for a pipe, from where it is).
fn read_pdf(file: &File, stop: &Stop) -> Result<Vec<u8>, PdfError> {
    let expected = file.metadata().map_err(PdfError::Io)?.len();
    if expected > MAX_PDF_BYTES {
        return Err(file_too_large(expected));
    }
    let limit = MAX_PDF_BYTES as usize;
    let mut data = Vec::with_capacity(expected as usize + READ_CHUNK);
    loop {
        stop.check()?;
        let filled = data.len();
        data.resize(filled + READ_CHUNK, 0);
        match file.read_at(&mut data[filled..], filled as u64) {
            Ok(0) => {
                data.truncate(filled);
                return Ok(data);
            }
            Ok(read) => data.truncate(filled + read),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => data.truncate(filled),
            Err(err) if err.raw_os_error() == Some(libc::ESPIPE) && filled == 0 => {
                data.clear();
                let mut reader = file.take(MAX_PDF_BYTES + 1);
                reader.read_to_end(&mut data).map_err(PdfError::Io)?;
                if data.len() > limit {
                    return Err(file_too_large(data.len() as u64));
                }
                return Ok(data);
            }
            Err(err) => return Err(PdfError::Io(err)),
        }
        if data.len() > limit {
            return Err(file_too_large(data.len() as u64));
        }
    }
}

/// The message of a caught panic, shortened.
fn panic_reason(payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    shorten(&format!("the extractor panicked: {message}"))
}

/// `text` on one line, at most REASON_CHARS characters.
fn shorten(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// How to start the worker.
struct Worker<'a> {
    program: &'a PathBuf,
    args: &'a [String],
}

/// A running worker, killed and reaped however the parent leaves it.
struct Running {
    child: Child,
    reaped: bool,
}

impl Running {
    /// Kills the worker (SIGKILL) and reaps it.
    fn stop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }

    /// Waits for the worker to end, polling; kills it at the deadline or when `cancel` is given.
    fn wait(&mut self, deadline: Instant, cancel: &Cancel) -> Result<ExitStatus, PdfError> {
        let mut pause = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return Ok(status);
                }
                Ok(None) => {}
                Err(err) => {
                    self.stop();
                    return Err(PdfError::Io(err));
                }
            }
            if cancel.is_cancelled() {
                self.stop();
                return Err(cancelled());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.stop();
                return Err(PdfError::Timeout);
            }
            thread::sleep(pause.min(left));
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The most standard output the parent takes from the worker: the text (at most twice `max_chars` characters, JSON
/// escaping included) and room for many pages' framing.
fn answer_cap(max_chars: usize) -> usize {
    max_chars.saturating_mul(12).saturating_add(32 * 1024 * 1024)
}

fn in_child(
    file: &File,
    selection: &PageSelection,
    max_chars: usize,
    deadline: Instant,
    cancel: &Cancel,
    worker: &Worker<'_>,
) -> Result<Extracted, PdfError> {
    let left = deadline.saturating_duration_since(Instant::now());
    let cpu_seconds = left.as_secs() + 1 + WORKER_CPU_SLACK_SECONDS;
    let stdin = file.try_clone().map_err(PdfError::Io)?;
    let mut command = Command::new(worker.program);
    command
        .args(worker.args)
        .arg(selection.spec())
        .arg(max_chars.to_string())
        .arg(cpu_seconds.to_string())
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().map_err(|err| {
        let program = worker.program.display();
        PdfError::Io(io::Error::new(err.kind(), format!("could not start the PDF worker {program}: {err}")))
    })?;
    let mut running = Running { child, reaped: false };
    let cap = answer_cap(max_chars);
    let readers = match (running.child.stdout.take(), running.child.stderr.take()) {
        (Some(stdout), Some(stderr)) => capped_reader(stdout, cap)
            .and_then(|out| capped_reader(stderr, STDERR_CAP).map(|err| (out, err)))
            .map_err(PdfError::Io),
        _ => Err(PdfError::Io(io::Error::other("the PDF worker's output could not be captured"))),
    };
    let (out_reader, err_reader) = match readers {
        Ok(readers) => readers,
        Err(err) => {
            running.stop();
            return Err(err);
        }
    };
    let status = running.wait(deadline, cancel)?;
    // The worker is reaped and its pipes closed, so the readers are about to end (unless something it left behind
    // holds a pipe open: then they are abandoned at the deadline, and end when that goes).
    let grace = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
    let (Ok((answer, overflow)), Ok((errors, _))) = (out_reader.recv_timeout(grace), err_reader.recv_timeout(grace))
    else {
        return Err(PdfError::Timeout);
    };
    interpret(status, &answer, overflow, &errors, cap)
}

/// Reads `source` to its end on a thread, keeping the first `cap` bytes; sends them, and whether there was more.
fn capped_reader<R: Read + Send + 'static>(mut source: R, cap: usize) -> io::Result<Receiver<(Vec<u8>, bool)>> {
    let (sender, receiver) = mpsc::sync_channel(1);
    thread::Builder::new().name("pdf-worker-output".to_string()).spawn(move || {
        let mut kept = Vec::new();
        let mut overflow = false;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match source.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => {
                    let room = cap - kept.len();
                    kept.extend_from_slice(&buffer[..read.min(room)]);
                    overflow |= read > room;
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = sender.send((kept, overflow));
    })?;
    Ok(receiver)
}

/// What the worker's exit and answer mean.
fn interpret(
    status: ExitStatus,
    answer: &[u8],
    overflow: bool,
    errors: &[u8],
    cap: usize,
) -> Result<Extracted, PdfError> {
    let errors = String::from_utf8_lossy(errors);
    let detail = errors.lines().map(str::trim).find(|line| !line.is_empty()).map(shorten);
    let because = detail.as_deref().map(|line| format!(": {line}")).unwrap_or_default();
    if errors.contains("memory allocation of") {
        return Err(PdfError::TooLarge(format!(
            "extracting the text needs more memory than the worker may use ({} MiB plus twice the file){because}",
            WORKER_MEMORY_BYTES / (1024 * 1024)
        )));
    }
    if errors.contains("overflowed its stack") || errors.contains("stack overflow") {
        return Err(PdfError::Crashed("the extractor overflowed its stack (too deeply nested content)".to_string()));
    }
    if let Some(signal) = status.signal() {
        return Err(match signal {
            libc::SIGXCPU => PdfError::Timeout,
            libc::SIGKILL => PdfError::Crashed(format!(
                "the worker was killed (SIGKILL: its CPU limit, or the system's out-of-memory killer){because}"
            )),
            _ => PdfError::Crashed(format!("the worker was killed by signal {signal}{because}")),
        });
    }
    if !status.success() {
        let code = status.code().unwrap_or(-1);
        return Err(PdfError::Crashed(format!("the worker exited with status {code}{because}")));
    }
    if overflow {
        return Err(PdfError::Crashed(format!("the worker's answer passed {cap} bytes")));
    }
    match serde_json::from_slice::<Answer>(answer) {
        Ok(answer) => answer.into_result(),
        Err(err) if answer.is_empty() => Err(PdfError::Crashed(format!("the worker gave no answer ({err})"))),
        Err(err) => Err(PdfError::Crashed(shorten(&format!("the worker's answer is not valid: {err}")))),
    }
}

/// The worker's one answer, as JSON on its standard output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Answer {
    Extracted { page_count: u32, complete: bool, pages: Vec<WirePage> },
    Encrypted,
    Malformed { reason: String },
    TooLarge { reason: String },
    Timeout,
    Crashed { reason: String },
    Io { reason: String },
}

#[derive(Debug, Serialize, Deserialize)]
struct WirePage {
    number: u32,
    text: String,
}

impl Answer {
    fn from_result(result: Result<Extracted, PdfError>) -> Answer {
        match result {
            Ok(extracted) => Answer::Extracted {
                page_count: extracted.page_count,
                complete: extracted.complete,
                pages: extracted
                    .pages
                    .into_iter()
                    .map(|page| WirePage { number: page.number, text: page.text })
                    .collect(),
            },
            Err(PdfError::Encrypted) => Answer::Encrypted,
            Err(PdfError::Malformed(reason)) => Answer::Malformed { reason },
            Err(PdfError::TooLarge(reason)) => Answer::TooLarge { reason },
            Err(PdfError::Timeout) => Answer::Timeout,
            Err(PdfError::Crashed(reason)) => Answer::Crashed { reason },
            Err(PdfError::Io(err)) => Answer::Io { reason: err.to_string() },
        }
    }

    fn into_result(self) -> Result<Extracted, PdfError> {
        match self {
            Answer::Extracted { page_count, complete, pages } => Ok(Extracted {
                page_count,
                complete,
                pages: pages.into_iter().map(|page| PageText { number: page.number, text: page.text }).collect(),
            }),
            Answer::Encrypted => Err(PdfError::Encrypted),
            Answer::Malformed { reason } => Err(PdfError::Malformed(reason)),
            Answer::TooLarge { reason } => Err(PdfError::TooLarge(reason)),
            Answer::Timeout => Err(PdfError::Timeout),
            Answer::Crashed { reason } => Err(PdfError::Crashed(reason)),
            Answer::Io { reason } => Err(PdfError::Io(io::Error::other(reason))),
        }
    }
}

/// The worker process's main: sets its own resource limits, reads the PDF from standard input, the request from
/// `args`, writes one JSON answer to standard output; returns the exit code.
///
/// `args` are `PAGES MAX_CHARS CPU_SECONDS` (pages in [`PageSelection::parse`]'s form). Exit codes: 0 with an answer
/// (failures to read the PDF included), 1 when the answer could not be written, 2 for bad arguments, 3 when the
/// limits could not be set. It is meant to run as its own process only: it installs a silent panic hook, dies with its
/// parent, and may not write files — its standard output and error must be pipes (or devices such as `/dev/null`).
pub fn worker_main(args: &[String]) -> i32 {
    let usage = "usage: PAGES MAX_CHARS CPU_SECONDS, with the PDF on standard input";
    let [pages, max_chars, cpu_seconds] = args else {
        let _ = writeln!(io::stderr(), "{usage}");
        return 2;
    };
    let (selection, max_chars, cpu_seconds) =
        match (PageSelection::parse(pages), max_chars.parse::<usize>(), cpu_seconds.parse::<u64>()) {
            (Ok(selection), Ok(max_chars), Ok(cpu_seconds)) => (selection, max_chars, cpu_seconds),
            _ => {
                let _ = writeln!(io::stderr(), "{usage}");
                return 2;
            }
        };
    if let Err(err) = limit_worker(cpu_seconds) {
        let _ = writeln!(io::stderr(), "the PDF worker could not set its limits: {err}");
        return 3;
    }
    // This process exists to run the extractor: a panic is reported in the answer, not on standard error.
    panic::set_hook(Box::new(|_| {}));
    let stop = Stop::never();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let stdin = io::stdin().as_fd().try_clone_to_owned().map_err(PdfError::Io)?;
        let data = read_pdf(&File::from(stdin), &stop)?;
        let memory = WORKER_MEMORY_BYTES.saturating_add(2 * data.len() as u64);
        lower_limit(libc::RLIMIT_AS, memory, memory).map_err(PdfError::Io)?;
        extract_bytes(&data, &selection, max_chars, &stop, Host::Worker)
    }))
    .unwrap_or_else(|payload| Err(PdfError::Crashed(panic_reason(payload.as_ref()))));
    let answer = Answer::from_result(result);
    let mut stdout = io::stdout().lock();
    let written = serde_json::to_writer(&mut stdout, &answer).map_err(io::Error::from).and_then(|()| stdout.flush());
    if written.is_ok() { 0 } else { 1 }
}

/// The type of a resource of `getrlimit`/`setrlimit` on this platform.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// The worker's limits, set before it reads anything (the address space follows once the PDF's size is known).
fn limit_worker(cpu_seconds: u64) -> io::Result<()> {
    // Killed with the parent, whatever ends it, rather than left to run out its CPU time.
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_PDEATHSIG takes one integer argument (the signal); the others are ignored.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    lower_limit(libc::RLIMIT_CPU, cpu_seconds, cpu_seconds.saturating_add(1))?;
    lower_limit(libc::RLIMIT_CORE, 0, 0)?;
    lower_limit(libc::RLIMIT_FSIZE, 0, 0)?;
    lower_limit(libc::RLIMIT_NOFILE, WORKER_MAX_FILES, WORKER_MAX_FILES)?;
    // One process, one thread: it never forks nor spawns (the kernel does not hold root to this one).
    lower_limit(libc::RLIMIT_NPROC, 0, 0)
}

/// Lowers a resource limit of this process to `soft`/`hard` (never raises it above the current hard limit).
fn lower_limit(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` into the struct it is given, which lives for the call.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let hard = (hard as libc::rlim_t).min(current.rlim_max);
    let wanted = libc::rlimit { rlim_cur: (soft as libc::rlim_t).min(hard), rlim_max: hard };
    // SAFETY: setrlimit reads one `rlimit` from the struct it is given, which lives for the call.
    if unsafe { libc::setrlimit(resource, &wanted) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Where extraction runs: what bounds its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    /// A thread of the caller's process: nothing but these checks bounds it, so the raw file is probed for bombs
    /// before loading, and content too large to parse is refused.
    Thread,
    /// The worker process, under its own memory limit.
    Worker,
}

/// Extracts the chosen pages of the PDF in `data`.
fn extract_bytes(
    data: &[u8],
    selection: &PageSelection,
    max_chars: usize,
    stop: &Stop,
    host: Host,
) -> Result<Extracted, PdfError> {
    if memchr::memmem::find(data, b"%PDF-").is_none() {
        return Err(PdfError::Malformed("it has no %PDF- header, so it is not a PDF".to_string()));
    }
    if host == Host::Thread {
        probe_raw_streams(data, stop)?;
    }
    let mut doc = Document::load_mem(data).map_err(load_error)?;
    if doc.trailer.get(b"Encrypt").is_ok() {
        return Err(PdfError::Encrypted);
    }
    stop.check()?;
    empty_textless_streams(&mut doc);
    let page_ids = doc.get_pages();
    let page_count = u32::try_from(page_ids.len()).unwrap_or(u32::MAX);
    if page_count == 0 {
        return Err(PdfError::Malformed("it has no pages (its page tree is missing or broken)".to_string()));
    }
    let mut guard = Guard { bounded: host == Host::Thread, ..Guard::default() };
    let mut pages = Vec::new();
    let mut gathered = 0usize;
    let mut complete = true;
    for number in selection.pages(page_count) {
        if !pages.is_empty() && gathered >= max_chars {
            complete = false;
            break;
        }
        stop.check()?;
        let Some(&page_id) = page_ids.get(&number) else { continue };
        guard.check_page(&doc, number, page_id, stop)?;
        let (text, cut) = page_text(&doc, number, max_chars, stop)?;
        gathered = gathered.saturating_add(text.chars().count());
        pages.push(PageText { number, text });
        if cut {
            complete = false;
            break;
        }
    }
    Ok(Extracted { page_count, pages, complete })
}

/// What a lopdf loading error means.
fn load_error(err: lopdf::Error) -> PdfError {
    match err {
        lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword | lopdf::Error::UnsupportedSecurityHandler(_) => {
            PdfError::Encrypted
        }
        other => PdfError::Malformed(shorten(&other.to_string())),
    }
}

/// Empties the streams that hold no text — images, embedded files, metadata, the already unpacked object and
/// cross-reference streams — so nothing inflates them (pdf-extract reads an image it meets as page content).
fn empty_textless_streams(doc: &mut Document) {
    for object in doc.objects.values_mut() {
        if let Object::Stream(stream) = object {
            let textless = name_is(&stream.dict, b"Subtype", b"Image")
                || [&b"EmbeddedFile"[..], b"Metadata", b"ObjStm", b"XRef"]
                    .iter()
                    .any(|kind| name_is(&stream.dict, b"Type", kind));
            if textless {
                stream.set_plain_content(Vec::new());
            }
        }
    }
}

fn name_is(dict: &Dictionary, key: &[u8], name: &[u8]) -> bool {
    dict.get(key).and_then(Object::as_name).is_ok_and(|found| found == name)
}

/// The text of page `number` (normalized), and whether it was cut at `limit` characters. A panic or an error of the
/// extractor becomes a note in the text; only the stop signal is an error.
fn page_text(doc: &Document, number: u32, limit: usize, stop: &Stop) -> Result<(String, bool), PdfError> {
    let mut raw = String::new();
    let cut = Cell::new(false);
    let halted = Cell::new(false);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let writer = CappedWriter { text: &mut raw, room: limit, cut: &cut, halted: &halted, stop, writes: 0 };
        let mut output = PlainTextOutput::new(writer);
        pdf_extract::output_doc_page(doc, &mut output, number)
    }));
    if halted.get() {
        return Err(PdfError::Timeout);
    }
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(_)) if cut.get() => None,
        Ok(Err(err)) => Some(shorten(&err.to_string())),
        Err(payload) => Some(panic_reason(payload.as_ref())),
    };
    let mut text = normalize(&raw);
    if let Some(reason) = failure {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[text extraction failed on this page: {reason}]"));
    }
    Ok((text, cut.get()))
}

/// The text sink of pdf-extract: keeps at most `room` characters, then fails (which ends the page's extraction);
/// also fails, now and then, once the stop signal is raised.
struct CappedWriter<'a> {
    text: &'a mut String,
    room: usize,
    cut: &'a Cell<bool>,
    halted: &'a Cell<bool>,
    stop: &'a Stop,
    writes: u32,
}

impl fmt::Write for CappedWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.writes = self.writes.wrapping_add(1);
        if self.writes % 1024 == 0 && self.stop.is_raised() {
            self.halted.set(true);
            return Err(fmt::Error);
        }
        if self.text.trim().is_empty() && s.trim().is_empty() {
            // Leading line breaks and spaces, which normalization drops, do not count.
            self.text.push_str(s);
            return Ok(());
        }
        let chars = s.chars().count();
        if chars <= self.room {
            self.text.push_str(s);
            self.room -= chars;
            return Ok(());
        }
        let end = s.char_indices().nth(self.room).map_or(s.len(), |(at, _)| at);
        self.text.push_str(&s[..end]);
        self.room = 0;
        self.cut.set(true);
        Err(fmt::Error)
    }
}

impl ConvertToFmt for CappedWriter<'_> {
    type Writer = Self;

    fn convert(self) -> Self {
        self
    }
}

/// Light normalization: trailing spaces cut from each line, runs of blank lines kept to two, no blank lines at the
/// start or end.
fn normalize(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut blanks = 0usize;
    for line in raw.split('\n') {
        let line = line.trim_end_matches([' ', '\t', '\r']);
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
            for _ in 0..blanks.min(2) {
                text.push('\n');
            }
        }
        blanks = 0;
        text.push_str(line);
    }
    text
}

/// What was already checked in this document.
#[derive(Default)]
struct Guard {
    /// Whether parsing must be bounded too (the thread mode, which has no memory limit to fall back on).
    bounded: bool,
    /// Objects reached (and their streams measured) from the pages checked so far.
    reached: HashSet<ObjectId>,
    /// What each form's content holds (read once per form).
    scanned: HashMap<ObjectId, Rc<Scanned>>,
    /// Forms checked under given resources (by address), with the height of the forms nested inside them.
    forms: HashMap<(ObjectId, usize), usize>,
}

impl Guard {
    /// Fails when extracting page `number` could exhaust memory (a stream that inflates too far; in the thread mode,
    /// content too large to parse) or the stack (a looping page tree, a form that draws itself, forms nested too
    /// deeply).
    fn check_page(&mut self, doc: &Document, number: u32, page_id: ObjectId, stop: &Stop) -> Result<(), PdfError> {
        let Ok(page) = doc.get_dictionary(page_id) else { return Ok(()) };
        // The chain pdf-extract climbs for inherited keys (Resources, MediaBox).
        let mut chain = vec![page];
        let mut seen = HashSet::from([page_id]);
        let mut node = page;
        while let Ok(parent_id) = node.get(b"Parent").and_then(Object::as_reference) {
            let Ok(parent) = doc.get_dictionary(parent_id) else { break };
            if !seen.insert(parent_id) {
                return Err(PdfError::Malformed("its page tree loops back on itself".to_string()));
            }
            if chain.len() >= MAX_TREE_DEPTH {
                return Err(PdfError::Malformed("its page tree is nested too deeply".to_string()));
            }
            chain.push(parent);
            node = parent;
        }
        let mut roots: Vec<&Object> = page.get(b"Contents").into_iter().collect();
        roots.extend(chain.iter().filter_map(|dict| dict.get(b"Resources").ok()));
        self.measure_reachable(doc, roots, stop)?;
        if self.bounded {
            // pdf-extract joins the page's content streams, then parses the whole into operations.
            let (mut bytes, mut parsed) = (0usize, 0usize);
            for id in doc.get_page_contents(page_id) {
                let Ok(stream) = doc.get_object(id).and_then(Object::as_stream) else { continue };
                let content = plain_content(stream);
                bytes = bytes.saturating_add(content.len() + 1);
                parsed = parsed.saturating_add(scan_content(&content).parsed_bytes());
                if bytes > MAX_STREAM_BYTES || parsed > MAX_PARSED_BYTES {
                    return Err(content_too_large(&format!("page {number}")));
                }
            }
        }
        let resources = chain.iter().find_map(|dict| dict_of(doc, dict.get(b"Resources").ok()));
        if let Some(resources) = resources {
            self.check_forms(doc, resources, None, 0, stop)?;
        }
        Ok(())
    }

    /// Measures every stream reachable from `roots` (not through `/Parent` or `/P` links), once per document.
    fn measure_reachable<'a>(
        &mut self,
        doc: &'a Document,
        roots: Vec<&'a Object>,
        stop: &Stop,
    ) -> Result<(), PdfError> {
        let mut pending = roots;
        let mut steps = 0u32;
        while let Some(object) = pending.pop() {
            steps = steps.wrapping_add(1);
            if steps % 4096 == 0 {
                stop.check()?;
            }
            match object {
                Object::Reference(id) if self.reached.insert(*id) => pending.extend(doc.objects.get(id)),
                Object::Array(items) => pending.extend(items),
                Object::Dictionary(dict) => pending.extend(children(dict)),
                Object::Stream(stream) => {
                    measure_stream(stream, stop)?;
                    pending.extend(children(&stream.dict));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Walks the form XObjects reachable from `resources` — all of them, or only those named in `names` (what a
    /// form's content invokes) — as pdf-extract will draw them, failing on a cycle or too deep a nesting. Returns the
    /// height of the deepest nesting below.
    fn check_forms(
        &mut self,
        doc: &Document,
        resources: &Dictionary,
        names: Option<&HashSet<Vec<u8>>>,
        depth: usize,
        stop: &Stop,
    ) -> Result<usize, PdfError> {
        stop.check()?;
        let Some(xobjects) = dict_of(doc, resources.get(b"XObject").ok()) else { return Ok(0) };
        let too_deep = || PdfError::Malformed(format!("its form XObjects are nested more than {MAX_FORM_DEPTH} deep"));
        let mut height = 0;
        for (name, value) in xobjects.iter() {
            if names.is_some_and(|names| !names.contains(name)) {
                continue;
            }
            let Ok((Some(id), Object::Stream(form))) = doc.dereference(value) else { continue };
            let inner = dict_of(doc, form.dict.get(b"Resources").ok()).unwrap_or(resources);
            let key = (id, inner as *const Dictionary as usize);
            let below = match self.forms.get(&key) {
                Some(&below) => below,
                None => {
                    // Marked as on the path while its own forms are walked: meeting it again below is a cycle.
                    self.forms.insert(key, usize::MAX);
                    let scanned = self.scan_form(id, form);
                    if self.bounded && scanned.parsed_bytes() > MAX_PARSED_BYTES {
                        return Err(content_too_large("a form XObject"));
                    }
                    let below = if scanned.invoked.is_empty() {
                        0
                    } else if depth + 1 >= MAX_FORM_DEPTH {
                        return Err(too_deep());
                    } else {
                        self.check_forms(doc, inner, Some(&scanned.invoked), depth + 1, stop)?
                    };
                    self.forms.insert(key, below);
                    below
                }
            };
            if below == usize::MAX {
                return Err(PdfError::Malformed("a form XObject in it draws itself".to_string()));
            }
            if depth + 1 + below > MAX_FORM_DEPTH {
                return Err(too_deep());
            }
            height = height.max(below + 1);
        }
        Ok(height)
    }

    /// What a form's content holds (read once per form; the stream was measured already, so this is bounded).
    fn scan_form(&mut self, id: ObjectId, form: &Stream) -> Rc<Scanned> {
        Rc::clone(self.scanned.entry(id).or_insert_with(|| Rc::new(scan_content(&plain_content(form)))))
    }
}

fn content_too_large(what: &str) -> PdfError {
    PdfError::TooLarge(format!(
        "the content of {what} is too large to parse in this process (its operations would take over {} MiB)",
        MAX_PARSED_BYTES / (1024 * 1024)
    ))
}

/// A stream's bytes as pdf-extract reads them: decoded, or as stored when lopdf cannot decode them.
fn plain_content(stream: &Stream) -> Vec<u8> {
    match stream.filters() {
        Ok(_) => stream.decompressed_content().unwrap_or_else(|_| stream.content.clone()),
        Err(_) => stream.content.clone(),
    }
}

/// The values of a dictionary the walk follows: all but the links back up (`/Parent`, an annotation's `/P`).
fn children(dict: &Dictionary) -> impl Iterator<Item = &Object> {
    dict.iter().filter(|(key, _)| key.as_slice() != b"Parent" && key.as_slice() != b"P").map(|(_, value)| value)
}

/// The dictionary `value` is or refers to, as pdf-extract looks it up.
fn dict_of<'a>(doc: &'a Document, value: Option<&'a Object>) -> Option<&'a Dictionary> {
    let (_, object) = doc.dereference(value?).ok()?;
    object.as_dict().ok()
}

/// What a content stream holds, as far as the guards care.
struct Scanned {
    /// Operators: each becomes an operation of lopdf's, about 500 bytes (its operand list starts with room for 4).
    operators: usize,
    /// Operands (numbers, names, strings, arrays, dictionaries): each becomes an object of about 120 bytes.
    operands: usize,
    /// The names before each `Do` operator: the XObjects it draws (over-approximated: a `Do` inside an inline
    /// image's data counts too).
    invoked: HashSet<Vec<u8>>,
}

impl Scanned {
    /// About what parsing the content takes in memory: measured at 500 to 600 bytes an operator (`q Q`, `m l S`,
    /// text), and 126 bytes an operand of a long `TJ` array.
    fn parsed_bytes(&self) -> usize {
        self.operators.saturating_mul(512).saturating_add(self.operands.saturating_mul(128))
    }
}

/// Reads a content stream's tokens, without building anything from them.
fn scan_content(content: &[u8]) -> Scanned {
    fn is_space(byte: u8) -> bool {
        matches!(byte, b'\0' | b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
    }
    fn is_delimiter(byte: u8) -> bool {
        matches!(byte, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
    }
    let mut scanned = Scanned { operators: 0, operands: 0, invoked: HashSet::new() };
    let mut last_name: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(&byte) = content.get(at) {
        if is_space(byte) {
            at += 1;
            continue;
        }
        if byte == b'%' {
            while content.get(at).is_some_and(|&b| b != b'\n' && b != b'\r') {
                at += 1;
            }
            continue;
        }
        match byte {
            b'(' => {
                scanned.operands += 1;
                let mut nesting = 0usize;
                while let Some(&b) = content.get(at) {
                    at += 1;
                    match b {
                        b'\\' => at += 1,
                        b'(' => nesting += 1,
                        b')' => {
                            nesting -= 1;
                            if nesting == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                last_name = None;
            }
            b'<' | b'>' if content.get(at + 1) == Some(&byte) => {
                scanned.operands += usize::from(byte == b'<');
                at += 2;
                last_name = None;
            }
            b'<' => {
                scanned.operands += 1;
                while content.get(at).is_some_and(|&b| b != b'>') {
                    at += 1;
                }
                at += 1;
                last_name = None;
            }
            b'/' => {
                scanned.operands += 1;
                at += 1;
                let mut name = Vec::new();
                while let Some(&b) = content.get(at).filter(|&&b| !is_space(b) && !is_delimiter(b)) {
                    let escaped = (b == b'#')
                        .then(|| content.get(at + 1..at + 3))
                        .flatten()
                        .and_then(|hex| std::str::from_utf8(hex).ok())
                        .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                    match escaped {
                        Some(decoded) => {
                            name.push(decoded);
                            at += 3;
                        }
                        None => {
                            name.push(b);
                            at += 1;
                        }
                    }
                }
                last_name = Some(name);
            }
            _ if is_delimiter(byte) => {
                scanned.operands += usize::from(byte == b'[');
                at += 1;
                last_name = None;
            }
            _ => {
                let start = at;
                while content.get(at).is_some_and(|&b| !is_space(b) && !is_delimiter(b)) {
                    at += 1;
                }
                let token = &content[start..at];
                if token == b"Do" {
                    scanned.invoked.extend(last_name.take());
                }
                if matches!(token[0], b'0'..=b'9' | b'+' | b'-' | b'.') || matches!(token, b"true" | b"false" | b"null")
                {
                    scanned.operands += 1;
                } else {
                    scanned.operators += 1;
                }
                last_name = None;
            }
        }
    }
    scanned
}

/// Decodes `stream` as lopdf will (its filter chain and predictors), within MAX_STREAM_BYTES a stage; a filter lopdf
/// cannot decode ends the chain (pdf-extract then reads the raw bytes, which are in memory already).
fn measure_stream(stream: &Stream, stop: &Stop) -> Result<(), PdfError> {
    let Ok(filters) = stream.filters() else { return Ok(()) };
    let params = stream.dict.get(b"DecodeParms").and_then(Object::as_dict).ok();
    let mut data = std::borrow::Cow::Borrowed(stream.content.as_slice());
    for filter in filters {
        let decoded = match filter {
            b"FlateDecode" => decode::flate(&data, MAX_STREAM_BYTES, stop),
            b"LZWDecode" => decode::lzw(&data, early_change(params), MAX_STREAM_BYTES, stop),
            b"ASCII85Decode" => decode::ascii85(&data, MAX_STREAM_BYTES),
            _ => return Ok(()),
        };
        let decoded = match decoded {
            Ok(Some(decoded)) => decoded,
            Ok(None) => return Ok(()),
            Err(decode::Limit::Over) => return Err(stream_too_large()),
            Err(decode::Limit::Stopped) => return Err(PdfError::Timeout),
        };
        let decoded = if filter == b"ASCII85Decode" { Some(decoded) } else { unpredict(decoded, params)? };
        match decoded {
            Some(decoded) => data = std::borrow::Cow::Owned(decoded),
            None => return Ok(()),
        }
    }
    Ok(())
}

/// lopdf's `EarlyChange` reading: on unless the parameters say 0.
fn early_change(params: Option<&Dictionary>) -> bool {
    params.and_then(|p| p.get(b"EarlyChange").and_then(Object::as_i64).ok()).is_none_or(|value| value != 0)
}

/// Undoes a PNG predictor as lopdf does (none when `params` ask for none); `None` where lopdf fails. Rows past
/// MAX_STREAM_BYTES are refused: lopdf would allocate two of them before reading a byte.
fn unpredict(data: Vec<u8>, params: Option<&Dictionary>) -> Result<Option<Vec<u8>>, PdfError> {
    let Some(params) = params else { return Ok(Some(data)) };
    let number =
        |key: &[u8], default: i64, least: i64| params.get(key).and_then(Object::as_i64).unwrap_or(default).max(least);
    if !(10..=15).contains(&number(b"Predictor", 1, i64::MIN)) {
        return Ok(Some(data));
    }
    let as_size = |value: i64| usize::try_from(value).unwrap_or(usize::MAX);
    let (columns, colors, bits) = (
        as_size(number(b"Columns", 1, 1)),
        as_size(number(b"Colors", 1, 1)),
        as_size(number(b"BitsPerComponent", 8, 8)),
    );
    let bytes_per_pixel = colors.checked_mul(bits).map(|bits| bits / 8);
    let row = bytes_per_pixel.and_then(|bytes| bytes.checked_mul(columns));
    match (bytes_per_pixel, row) {
        (Some(bytes_per_pixel), Some(row)) if row <= MAX_STREAM_BYTES => {
            Ok(lopdf::filters::png::decode_frame(&data, bytes_per_pixel, columns).ok())
        }
        _ => Err(PdfError::TooLarge(format!(
            "a stream in the PDF asks for predictor rows over {} MiB; its text was not extracted",
            MAX_STREAM_BYTES / (1024 * 1024)
        ))),
    }
}

/// Probes the data after every `stream` keyword in the raw file, whatever its dictionary says, for a stream that
/// inflates past MAX_STREAM_BYTES — at any of PROBE_DEPTH nested decodings.
fn probe_raw_streams(data: &[u8], stop: &Stop) -> Result<(), PdfError> {
    for found in memchr::memmem::find_iter(data, b"stream") {
        if found >= 3 && &data[found - 3..found] == b"end" {
            continue;
        }
        let mut at = found + b"stream".len();
        while matches!(data.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        match (data.get(at), data.get(at + 1)) {
            (Some(b'\r'), Some(b'\n')) => at += 2,
            (Some(b'\r' | b'\n'), _) => at += 1,
            _ => continue,
        }
        probe(&data[at..], 1, stop)?;
    }
    Ok(())
}

/// Decodes `data` every way lopdf could, and what that gives again, down to PROBE_DEPTH decodings.
fn probe(data: &[u8], depth: usize, stop: &Stop) -> Result<(), PdfError> {
    let decoders: [fn(&[u8], &Stop) -> decode::Decoded; 4] = [
        |data, stop| decode::flate(data, MAX_STREAM_BYTES, stop),
        |data, stop| decode::lzw(data, true, MAX_STREAM_BYTES, stop),
        |data, stop| decode::lzw(data, false, MAX_STREAM_BYTES, stop),
        |data, _| decode::ascii85(data, MAX_STREAM_BYTES),
    ];
    for decoder in decoders {
        let decoded = match decoder(data, stop) {
            Ok(Some(decoded)) => decoded,
            Ok(None) => continue,
            Err(decode::Limit::Over) => return Err(stream_too_large()),
            Err(decode::Limit::Stopped) => return Err(PdfError::Timeout),
        };
        if decoded.is_empty() {
            continue;
        }
        if depth < PROBE_DEPTH {
            probe(&decoded, depth + 1, stop)?;
        } else if decoded.len() > PROBE_DEEPEST_BYTES {
            return Err(PdfError::TooLarge(format!(
                "a stream in the PDF is compressed more than {PROBE_DEPTH} times over (a decompression bomb?)"
            )));
        }
    }
    Ok(())
}

/// Bounded decoders of the filters lopdf decodes, written to measure streams before lopdf inflates them. Each keeps
/// at most `cap` bytes and fails with `Limit::Over` the moment more would come; where lopdf's decoder would stop at
/// an error, these stop too and return what was decoded, so they never yield less than lopdf would.
mod decode {
    use super::{STOP_CHECK_BYTES, Stop};

    /// What a bounded decoder gives: the bytes, `None` where lopdf's decoder fails outright (pdf-extract then reads
    /// the raw bytes), or why it gave up.
    pub(super) type Decoded = Result<Option<Vec<u8>>, Limit>;

    /// Why a bounded decoder gave up.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Limit {
        /// The output would pass the cap.
        Over,
        /// The stop signal was raised.
        Stopped,
    }

    /// FlateDecode as lopdf runs it: zlib, or raw DEFLATE after two bytes when that fails at once — which comes to
    /// raw DEFLATE from the third byte either way (a zlib stream is a 2-byte header and raw DEFLATE; its checksum
    /// only decides an error after all the data is out).
    pub(super) fn flate(data: &[u8], cap: usize, stop: &Stop) -> Decoded {
        inflate(data.get(2..).unwrap_or_default(), cap, stop).map(Some)
    }

    /// Raw DEFLATE (RFC 1951), up to the end of the final block or the first error.
    pub(super) fn inflate(data: &[u8], cap: usize, stop: &Stop) -> Result<Vec<u8>, Limit> {
        let mut out = Vec::new();
        let mut bits = Bits { data, at: 0, buffer: 0, count: 0 };
        let fixed = fixed_tables();
        let mut blocks = 0u32;
        loop {
            blocks = blocks.wrapping_add(1);
            if blocks % 256 == 0 && stop.is_raised() {
                return Err(Limit::Stopped);
            }
            let (Some(last), Some(kind)) = (bits.take(1), bits.take(2)) else { break };
            let went_on = match kind {
                0 => stored(&mut bits, &mut out, cap)?,
                1 => match &fixed {
                    Some((literals, distances)) => codes(&mut bits, &mut out, literals, distances, cap, stop)?,
                    None => false,
                },
                2 => match dynamic_tables(&mut bits) {
                    Some((literals, distances)) => codes(&mut bits, &mut out, &literals, &distances, cap, stop)?,
                    None => false,
                },
                _ => false,
            };
            if !went_on || last == 1 {
                break;
            }
        }
        Ok(out)
    }

    /// Bits of a DEFLATE stream, least significant first.
    struct Bits<'a> {
        data: &'a [u8],
        at: usize,
        buffer: u64,
        count: u32,
    }

    impl Bits<'_> {
        fn take(&mut self, n: u32) -> Option<u32> {
            while self.count < n {
                let byte = *self.data.get(self.at)?;
                self.at += 1;
                self.buffer |= u64::from(byte) << self.count;
                self.count += 8;
            }
            let value = (self.buffer & ((1u64 << n) - 1)) as u32;
            self.buffer >>= n;
            self.count -= n;
            Some(value)
        }

        fn align(&mut self) {
            let drop = self.count % 8;
            self.buffer >>= drop;
            self.count -= drop;
        }
    }

    /// A canonical Huffman code, decoded a bit at a time.
    struct Huffman {
        counts: [u16; 16],
        symbols: Vec<u16>,
    }

    impl Huffman {
        /// The code of these code lengths (0: unused); `None` when over-subscribed. Incomplete codes are accepted.
        fn new(lengths: &[u8]) -> Option<Huffman> {
            let mut counts = [0u16; 16];
            for &length in lengths {
                counts[usize::from(length & 15)] += 1;
            }
            counts[0] = 0;
            let mut left = 1i32;
            for &count in &counts[1..] {
                left = (left << 1) - i32::from(count);
                if left < 0 {
                    return None;
                }
            }
            let mut offsets = [0u16; 16];
            for length in 1..15 {
                offsets[length + 1] = offsets[length] + counts[length];
            }
            let mut symbols = vec![0u16; lengths.len()];
            for (symbol, &length) in lengths.iter().enumerate() {
                if length != 0 {
                    let slot = &mut offsets[usize::from(length & 15)];
                    symbols[usize::from(*slot)] = symbol as u16;
                    *slot += 1;
                }
            }
            Some(Huffman { counts, symbols })
        }

        fn decode(&self, bits: &mut Bits<'_>) -> Option<u16> {
            let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
            for &count in &self.counts[1..] {
                code |= bits.take(1)? as i32;
                let count = i32::from(count);
                if code - count < first {
                    return self.symbols.get(usize::try_from(index + code - first).ok()?).copied();
                }
                index += count;
                first = (first + count) << 1;
                code <<= 1;
            }
            None
        }
    }

    const LENGTH_BASE: [u16; 29] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
        258,
    ];
    const LENGTH_EXTRA: [u32; 29] =
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
    const DISTANCE_BASE: [u16; 30] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
        6145, 8193, 12289, 16385, 24577,
    ];
    const DISTANCE_EXTRA: [u32; 30] =
        [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
    /// The order code length code lengths come in.
    const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

    fn fixed_tables() -> Option<(Huffman, Huffman)> {
        let mut lengths = [8u8; 288];
        lengths[144..256].fill(9);
        lengths[256..280].fill(7);
        Some((Huffman::new(&lengths)?, Huffman::new(&[5u8; 30])?))
    }

    fn dynamic_tables(bits: &mut Bits<'_>) -> Option<(Huffman, Huffman)> {
        let literals = bits.take(5)? as usize + 257;
        let distances = bits.take(5)? as usize + 1;
        let code_lengths = bits.take(4)? as usize + 4;
        if literals > 286 || distances > 30 {
            return None;
        }
        let mut lengths = [0u8; 19];
        for &symbol in &CODE_LENGTH_ORDER[..code_lengths] {
            lengths[symbol] = bits.take(3)? as u8;
        }
        let code = Huffman::new(&lengths)?;
        let mut all = vec![0u8; literals + distances];
        let mut filled = 0;
        while filled < all.len() {
            let symbol = code.decode(bits)?;
            let (value, repeat) = match symbol {
                0..=15 => (symbol as u8, 1),
                16 => (*all.get(filled.checked_sub(1)?)?, 3 + bits.take(2)? as usize),
                17 => (0, 3 + bits.take(3)? as usize),
                _ => (0, 11 + bits.take(7)? as usize),
            };
            all.get_mut(filled..filled + repeat)?.fill(value);
            filled += repeat;
        }
        if all[256] == 0 {
            return None;
        }
        Some((Huffman::new(&all[..literals])?, Huffman::new(&all[literals..])?))
    }

    /// A stored block; `Ok(false)` when the stream ends or breaks inside it.
    fn stored(bits: &mut Bits<'_>, out: &mut Vec<u8>, cap: usize) -> Result<bool, Limit> {
        bits.align();
        let (Some(length), Some(complement)) = (bits.take(16), bits.take(16)) else { return Ok(false) };
        if length != !complement & 0xFFFF {
            return Ok(false);
        }
        if out.len() + length as usize > cap {
            return Err(Limit::Over);
        }
        for _ in 0..length {
            match bits.take(8) {
                Some(byte) => out.push(byte as u8),
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The codes of a compressed block; `Ok(false)` when the stream ends or breaks inside it.
    fn codes(
        bits: &mut Bits<'_>,
        out: &mut Vec<u8>,
        literals: &Huffman,
        distances: &Huffman,
        cap: usize,
        stop: &Stop,
    ) -> Result<bool, Limit> {
        let mut next_check = out.len() + STOP_CHECK_BYTES;
        loop {
            let Some(symbol) = literals.decode(bits) else { return Ok(false) };
            match symbol {
                0..=255 => {
                    if out.len() >= cap {
                        return Err(Limit::Over);
                    }
                    out.push(symbol as u8);
                }
                256 => return Ok(true),
                257..=285 => {
                    let index = usize::from(symbol - 257);
                    let Some(extra) = bits.take(LENGTH_EXTRA[index]) else { return Ok(false) };
                    let length = usize::from(LENGTH_BASE[index]) + extra as usize;
                    let Some(code) = distances.decode(bits).map(usize::from).filter(|&code| code < 30) else {
                        return Ok(false);
                    };
                    let Some(extra) = bits.take(DISTANCE_EXTRA[code]) else { return Ok(false) };
                    let distance = usize::from(DISTANCE_BASE[code]) + extra as usize;
                    if distance > out.len() {
                        return Ok(false);
                    }
                    if out.len() + length > cap {
                        return Err(Limit::Over);
                    }
                    copy_back(out, distance, length);
                }
                _ => return Ok(false),
            }
            if out.len() >= next_check {
                if stop.is_raised() {
                    return Err(Limit::Stopped);
                }
                next_check = out.len() + STOP_CHECK_BYTES;
            }
        }
    }

    /// Appends `length` bytes copied from `distance` back (the source may overlap what is appended).
    fn copy_back(out: &mut Vec<u8>, distance: usize, length: usize) {
        let start = out.len() - distance;
        let mut left = length;
        while left > 0 {
            // out[start..] repeats with period `distance`, so its whole length so far can be copied at once.
            let chunk = left.min(out.len() - start);
            out.extend_from_within(start..start + chunk);
            left -= chunk;
        }
    }

    /// LZWDecode (8-bit, most significant bit first, codes 256 clear and 257 end), with or without early change.
    pub(super) fn lzw(data: &[u8], early_change: bool, cap: usize, stop: &Stop) -> Decoded {
        const CLEAR: usize = 256;
        const END: usize = 257;
        const FIRST: usize = 258;
        const SIZE: usize = 4096;
        let mut prefix = vec![0u16; SIZE];
        let mut last = vec![0u8; SIZE];
        let mut first = vec![0u8; SIZE];
        let mut length = vec![0u16; SIZE];
        for byte in 0..256 {
            last[byte] = byte as u8;
            first[byte] = byte as u8;
            length[byte] = 1;
        }
        let early = usize::from(early_change);
        let mut out = Vec::new();
        let mut next = FIRST;
        let mut width = 9u32;
        let mut previous: Option<usize> = None;
        let (mut at, mut buffer, mut count) = (0usize, 0u64, 0u32);
        let mut next_check = STOP_CHECK_BYTES;
        loop {
            while count < width {
                let Some(&byte) = data.get(at) else { return Ok(Some(out)) };
                at += 1;
                buffer = (buffer << 8) | u64::from(byte);
                count += 8;
            }
            let code = ((buffer >> (count - width)) & ((1 << width) - 1)) as usize;
            count -= width;
            buffer &= (1u64 << count) - 1;
            if code == CLEAR {
                next = FIRST;
                width = 9;
                previous = None;
                continue;
            }
            if code == END {
                break;
            }
            let (string, extra) = if code < next {
                (code, None)
            } else if let Some(previous) = previous.filter(|_| code == next) {
                (previous, Some(first[previous]))
            } else {
                break;
            };
            let size = usize::from(length[string]) + usize::from(extra.is_some());
            if out.len() + size > cap {
                return Err(Limit::Over);
            }
            let end = out.len() + usize::from(length[string]);
            out.resize(end, 0);
            let mut node = string;
            for slot in out[end - usize::from(length[string])..end].iter_mut().rev() {
                *slot = last[node];
                node = usize::from(prefix[node]);
            }
            out.extend(extra);
            let head = first[string];
            if let Some(previous) = previous {
                if next < SIZE {
                    prefix[next] = previous as u16;
                    last[next] = head;
                    first[next] = first[previous];
                    length[next] = length[previous] + 1;
                    next += 1;
                }
            }
            previous = Some(code);
            if next + early >= (1 << width) && width < 12 {
                width += 1;
            }
            if out.len() >= next_check {
                if stop.is_raised() {
                    return Err(Limit::Stopped);
                }
                next_check = out.len() + STOP_CHECK_BYTES;
            }
        }
        Ok(Some(out))
    }

    /// ASCII85Decode as lopdf runs it; `None` where lopdf fails (a `z` inside a group, a group past 2^32).
    pub(super) fn ascii85(data: &[u8], cap: usize) -> Decoded {
        let mut out = Vec::new();
        let (mut group, mut count) = (0u32, 0usize);
        for &byte in data {
            if byte == b'z' {
                if count != 0 {
                    return Ok(None);
                }
                if out.len() + 4 > cap {
                    return Err(Limit::Over);
                }
                out.extend_from_slice(&[0; 4]);
                continue;
            }
            if byte.is_ascii_whitespace() {
                continue;
            }
            if !(b'!'..=b'u').contains(&byte) {
                break;
            }
            let Some(next) = group.checked_mul(85).and_then(|group| group.checked_add(u32::from(byte - b'!'))) else {
                return Ok(None);
            };
            group = next;
            count += 1;
            if count == 5 {
                if out.len() + 4 > cap {
                    return Err(Limit::Over);
                }
                out.extend_from_slice(&group.to_be_bytes());
                group = 0;
                count = 0;
            }
        }
        if count > 0 {
            for _ in count..5 {
                let Some(next) = group.checked_mul(85).and_then(|group| group.checked_add(84)) else { return Ok(None) };
                group = next;
            }
            out.extend_from_slice(&group.to_be_bytes()[..count - 1]);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{StringFormat, dictionary};

    /// Builds test PDFs: pages share a Helvetica font (`/F1`) through the page tree's resources.
    struct Fixture {
        doc: Document,
        pages_id: ObjectId,
        font: ObjectId,
        kids: Vec<ObjectId>,
    }

    impl Fixture {
        fn new() -> Fixture {
            let mut doc = Document::with_version("1.5");
            let pages_id = doc.new_object_id();
            let font =
                doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
            Fixture { doc, pages_id, font, kids: Vec::new() }
        }

        /// A page of these content bytes, with extra resources beside the font.
        fn page_with(&mut self, content: Vec<u8>, mut resources: Dictionary) -> ObjectId {
            resources.set("Font", dictionary! { "F1" => self.font });
            let content = self.doc.add_object(Stream::new(dictionary! {}, content));
            let page = self.doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => self.pages_id,
                "Contents" => content,
                "Resources" => resources,
            });
            self.kids.push(page);
            page
        }

        /// A page showing `text`, one line per line.
        fn text_page(&mut self, text: &str) -> ObjectId {
            self.page_with(show(text), Dictionary::new())
        }

        fn bytes(mut self) -> Vec<u8> {
            let kids: Vec<Object> = self.kids.iter().map(|&id| id.into()).collect();
            let count = kids.len() as i64;
            self.doc.objects.insert(
                self.pages_id,
                Object::Dictionary(dictionary! {
                    "Type" => "Pages",
                    "Kids" => kids,
                    "Count" => count,
                    "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
                }),
            );
            let catalog = self.doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => self.pages_id });
            self.doc.trailer.set("Root", catalog);
            let mut bytes = Vec::new();
            self.doc.save_to(&mut bytes).expect("the fixture saves");
            bytes
        }
    }

    /// Content that shows `text` in `/F1`, a line per line.
    fn show(text: &str) -> Vec<u8> {
        let mut ops = String::from("BT /F1 12 Tf 14 TL 72 720 Td");
        for line in text.lines() {
            let escaped = line.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
            ops.push_str(&format!(" ({escaped}) Tj T*"));
        }
        ops.push_str(" ET");
        ops.into_bytes()
    }

    /// A PDF of one page per entry.
    fn pdf_of(pages: &[&str]) -> Vec<u8> {
        let mut fixture = Fixture::new();
        for text in pages {
            fixture.text_page(text);
        }
        fixture.bytes()
    }

    fn numbered(count: u32) -> Vec<u8> {
        let texts: Vec<String> = (1..=count).map(|n| format!("Page {n} text")).collect();
        pdf_of(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn run_bytes(bytes: &[u8], pages: &str, max_chars: usize) -> Result<Extracted, PdfError> {
        let selection = PageSelection::parse(pages).expect("a valid selection");
        extract_bytes(
            bytes,
            &selection,
            max_chars,
            &Stop::until(Instant::now() + Duration::from_secs(60)),
            Host::Thread,
        )
    }

    fn as_file(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().expect("a temporary file");
        file.write_all(bytes).expect("the fixture is written");
        file
    }

    fn run_thread(bytes: &[u8], pages: &str, max_chars: usize, budget: Duration) -> Result<Extracted, PdfError> {
        let selection = PageSelection::parse(pages).expect("a valid selection");
        let file = as_file(bytes);
        extract(&file, &selection, max_chars, Instant::now() + budget, &Cancel::new(), &Isolation::Thread)
    }

    fn texts(extracted: &Extracted) -> Vec<(u32, &str)> {
        extracted.pages.iter().map(|page| (page.number, page.text.as_str())).collect()
    }

    /// A zlib stream of `1 + 258 * copies` zero bytes, about `copies / 4` bytes long: one dynamic Huffman block in
    /// which a literal 0 is followed by `copies` length-258, distance-1 copies of two bits each.
    fn zeros_zlib(copies: u64) -> Vec<u8> {
        #[derive(Default)]
        struct BitWriter {
            bytes: Vec<u8>,
            pending: u64,
            count: u32,
        }
        impl BitWriter {
            fn bits(&mut self, value: u64, count: u32) {
                self.pending |= value << self.count;
                self.count += count;
                while self.count >= 8 {
                    self.bytes.push(self.pending as u8);
                    self.pending >>= 8;
                    self.count -= 8;
                }
            }
            /// A Huffman code, most significant bit first.
            fn code(&mut self, code: u64, length: u32) {
                for bit in (0..length).rev() {
                    self.bits((code >> bit) & 1, 1);
                }
            }
            fn zeros(&mut self, mut count: u64) {
                while count > 0 && self.count != 0 {
                    self.bits(0, 1);
                    count -= 1;
                }
                self.bytes.resize(self.bytes.len() + (count / 8) as usize, 0);
                self.bits(0, (count % 8) as u32);
            }
        }
        let mut w = BitWriter::default();
        w.bits(1, 1); // final block
        w.bits(2, 2); // dynamic Huffman codes
        w.bits(29, 5); // 286 literal/length codes
        w.bits(1, 5); // 2 distance codes
        w.bits(14, 4); // 18 code length codes
        for symbol in [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1] {
            w.bits(
                match symbol {
                    18 => 1,
                    1 | 2 => 2,
                    _ => 0,
                },
                3,
            );
        }
        // Code length codes: 18 -> 0, 1 -> 10, 2 -> 11.
        w.code(0b11, 2); // literal 0: length 2
        w.code(0, 1);
        w.bits(127, 7); // literals 1..=138: 0
        w.code(0, 1);
        w.bits(106, 7); // literals 139..=255: 0
        w.code(0b11, 2); // 256 (end of block): length 2
        w.code(0, 1);
        w.bits(17, 7); // 257..=284: 0
        w.code(0b10, 2); // 285 (length 258): length 1
        w.code(0b10, 2); // distance 0: length 1
        w.code(0b10, 2); // distance 1: length 1
        // Literal/length codes: 285 -> 0, 0 -> 10, 256 -> 11; distance codes: 0 -> 0, 1 -> 1.
        w.code(0b10, 2);
        w.zeros(2 * copies);
        w.code(0b11, 2);
        w.bits(0, (8 - w.count % 8) % 8);
        let total = 1 + 258 * copies;
        let adler = ((total % 65521) << 16) | 1;
        let mut zlib = vec![0x78, 0x01];
        zlib.extend_from_slice(&w.bytes);
        zlib.extend_from_slice(&(adler as u32).to_be_bytes());
        zlib
    }

    /// A PDF whose only page draws text, then (content stream) `bomb` zero bytes compressed with FlateDecode.
    fn bomb_pdf(copies: u64) -> Vec<u8> {
        let mut fixture = Fixture::new();
        let page = fixture.text_page("Before the bomb");
        let bomb = fixture.doc.add_object(Stream::new(dictionary! { "Filter" => "FlateDecode" }, zeros_zlib(copies)));
        let first = fixture.doc.get_dictionary(page).and_then(|page| page.get(b"Contents")).cloned().expect("contents");
        let page = fixture.doc.get_object_mut(page).and_then(Object::as_dict_mut).expect("the page");
        page.set("Contents", vec![first, bomb.into()]);
        fixture.bytes()
    }

    fn peak_rss_bytes() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
        line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).unwrap_or(0) * 1024
    }

    // -- page selection

    #[test]
    fn page_selection_reads_the_documented_forms() {
        let pages = |spec: &str, count| PageSelection::parse(spec).unwrap().pages(count).collect::<Vec<_>>();
        assert_eq!(pages("3", 10), [3]);
        assert_eq!(pages("1-5", 10), [1, 2, 3, 4, 5]);
        assert_eq!(pages("2,4-6", 10), [2, 4, 5, 6]);
        assert_eq!(pages(" 2 , 4 - 6 ", 10), [2, 4, 5, 6]);
        assert_eq!(pages("7-", 10), [7, 8, 9, 10]);
        assert_eq!(pages("7 -", 10), [7, 8, 9, 10]);
        assert_eq!(pages("5,1,3-4,2", 10), [1, 2, 3, 4, 5]);
        assert_eq!(pages("1-3,2-6,9", 10), [1, 2, 3, 4, 5, 6, 9]);
        assert_eq!(pages("4-,2", 6), [2, 4, 5, 6]);
        assert_eq!(PageSelection::parse("1-3,4,5-").unwrap(), PageSelection::all());
        assert_eq!(PageSelection::all().pages(3).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(PageSelection::parse("4294967295").unwrap().pages(u32::MAX).count(), 1);
    }

    #[test]
    fn page_selection_errors_name_the_problem_and_show_the_valid_forms() {
        for (spec, problem) in [
            ("0", "there is no page 0"),
            ("5-3", "runs backwards"),
            ("abc", r#""abc" is not a page number"#),
            ("", "no page given"),
            ("  ", "no page given"),
            ("1,,2", "empty item"),
            ("1,", "empty item"),
            ("-3", "has no first page"),
            ("1-2-3", "more than one dash"),
            ("0-4", "there is no page 0"),
            ("+3", "is not a page number"),
            ("1.5", "is not a page number"),
            ("99999999999", "past the largest page number"),
        ] {
            let err = PageSelection::parse(spec).expect_err(spec);
            assert!(err.contains(problem), "{spec:?}: {err}");
            assert!(err.contains(r#""2,4-6""#) && err.contains(r#""7-""#), "{spec:?}: {err}");
        }
    }

    #[test]
    fn page_selection_knows_the_missing_pages_and_round_trips() {
        let first_missing = |spec: &str, count| PageSelection::parse(spec).unwrap().first_missing(count);
        assert_eq!(first_missing("1-5", 5), None);
        assert_eq!(first_missing("4-9", 5), Some(6));
        assert_eq!(first_missing("2,8", 5), Some(8));
        assert_eq!(first_missing("3-", 5), None);
        assert_eq!(first_missing("7-", 5), Some(7));
        assert_eq!(PageSelection::parse("9").unwrap().pages(5).count(), 0);
        for spec in ["3", "1-5", "2,4-6", "7-", "1,3,5-9,12-"] {
            let selection = PageSelection::parse(spec).unwrap();
            assert_eq!(selection.spec(), spec);
            assert_eq!(PageSelection::parse(&selection.spec()).unwrap(), selection);
        }
    }

    // -- extraction

    #[test]
    fn extracts_only_the_chosen_pages_with_their_exact_text() {
        let extracted = run_bytes(&numbered(6), "2,4-5", 100_000).unwrap();
        assert_eq!(extracted.page_count, 6);
        assert!(extracted.complete);
        assert_eq!(texts(&extracted), [(2, "Page 2 text"), (4, "Page 4 text"), (5, "Page 5 text")]);
    }

    #[test]
    fn lines_stay_lines_and_whitespace_is_normalized_lightly() {
        let extracted = run_bytes(&pdf_of(&["first line\nsecond   line\n\n\n\n\nafter gap"]), "1", 1000).unwrap();
        assert_eq!(texts(&extracted)[0].1.lines().next(), Some("first line"));
        assert_eq!(normalize("  a  \t\n\n\n\n\nb \r\n\n\nc\n\n"), "  a\n\n\nb\n\n\nc");
        assert_eq!(normalize("\n\n x\ny\n"), " x\ny");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn stops_after_the_page_that_crosses_max_chars() {
        let extracted = run_bytes(&numbered(10), "1-", 30).unwrap();
        assert_eq!(extracted.page_count, 10);
        assert!(!extracted.complete);
        // "Page N text" is 11 characters: 11, 22, then 33 crosses 30.
        assert_eq!(texts(&extracted), [(1, "Page 1 text"), (2, "Page 2 text"), (3, "Page 3 text")]);
        let all = run_bytes(&numbered(10), "1-", 10_000).unwrap();
        assert!(all.complete);
        assert_eq!(all.pages.len(), 10);
    }

    #[test]
    fn a_page_longer_than_max_chars_alone_is_cut_and_ends_the_extraction() {
        let long = "x".repeat(500);
        let extracted = run_bytes(&pdf_of(&[&long, "next"]), "1-", 100).unwrap();
        assert!(!extracted.complete);
        assert_eq!(texts(&extracted), [(1, &long[..100])]);
    }

    #[test]
    fn a_page_the_extractor_panics_on_gets_a_note_and_the_others_are_read() {
        let mut fixture = Fixture::new();
        fixture.text_page("fine before");
        fixture.page_with(b"BT /F1 12 Tf 72 720 Td 5 Tj ET".to_vec(), Dictionary::new());
        fixture.text_page("fine after");
        let extracted = run_bytes(&fixture.bytes(), "1-", 10_000).unwrap();
        assert_eq!(extracted.pages[0].text, "fine before");
        assert!(extracted.pages[1].text.starts_with("[text extraction failed on this page: "), "{:?}", extracted.pages);
        assert_eq!(extracted.pages[2].text, "fine after");
    }

    #[test]
    fn not_a_pdf_garbage_and_truncation_are_malformed() {
        let not_pdf = run_bytes(b"hello, world\n", "1-", 100).unwrap_err();
        assert!(matches!(&not_pdf, PdfError::Malformed(reason) if reason.contains("%PDF-")), "{not_pdf:?}");
        let mut garbage = b"%PDF-1.7\n".to_vec();
        garbage.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        assert!(matches!(run_bytes(&garbage, "1-", 100), Err(PdfError::Malformed(_))));
        let whole = numbered(20);
        for cut in [whole.len() / 2, whole.len() - 40, 200] {
            let err = run_bytes(&whole[..cut], "1-", 100).unwrap_err();
            assert!(matches!(err, PdfError::Malformed(_)), "cut at {cut}: {err:?}");
        }
        let empty = run_bytes(b"", "1", 100).unwrap_err();
        assert!(matches!(empty, PdfError::Malformed(_)), "{empty:?}");
    }

    fn encrypted_pdf(user_password: &str) -> Vec<u8> {
        let mut fixture = Fixture::new();
        fixture.text_page("Secret page");
        let id = Object::String(b"0123456789abcdef".to_vec(), StringFormat::Hexadecimal);
        fixture.doc.trailer.set("ID", vec![id.clone(), id]);
        let bytes = fixture.bytes();
        let mut doc = Document::load_mem(&bytes).unwrap();
        let version = lopdf::EncryptionVersion::V2 {
            document: &doc,
            owner_password: "owner",
            user_password,
            key_length: 128,
            permissions: lopdf::Permissions::all(),
        };
        let state = lopdf::EncryptionState::try_from(version).unwrap();
        doc.encrypt(&state).unwrap();
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    #[test]
    fn an_encrypted_pdf_is_refused_unless_the_empty_password_opens_it() {
        let locked = run_bytes(&encrypted_pdf("secret"), "1", 100).unwrap_err();
        assert!(matches!(locked, PdfError::Encrypted), "{locked:?}");
        let open = run_bytes(&encrypted_pdf(""), "1", 100).unwrap();
        assert_eq!(texts(&open), [(1, "Secret page")]);
    }

    #[test]
    fn images_hold_no_text_and_are_never_inflated() {
        let mut fixture = Fixture::new();
        // 33 MiB of zeros behind 32 KiB of FlateDecode, as an image: skipped, whatever its size.
        let image = fixture.doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1, "Filter" => "FlateDecode" },
            zeros_zlib(130_000),
        ));
        let mut content = b"q /Im1 Do Q ".to_vec();
        content.extend(show("Caption"));
        fixture.page_with(content, dictionary! { "XObject" => dictionary! { "Im1" => image } });
        let bytes = fixture.bytes();
        let selection = PageSelection::all();
        let extracted = extract_bytes(&bytes, &selection, 1000, &Stop::never(), Host::Worker).unwrap();
        assert_eq!(texts(&extracted), [(1, "Caption")]);
    }

    #[test]
    fn a_form_that_draws_itself_is_refused_instead_of_overflowing_the_stack() {
        let mut fixture = Fixture::new();
        let form_id = fixture.doc.new_object_id();
        let form = Stream::new(
            dictionary! {
                "Type" => "XObject",
                "Subtype" => "Form",
                "BBox" => vec![0.into(), 0.into(), 10.into(), 10.into()],
                "Resources" => dictionary! { "XObject" => dictionary! { "Fm1" => form_id } },
            },
            b"/F#6d1 Do".to_vec(),
        );
        fixture.doc.objects.insert(form_id, Object::Stream(form));
        fixture.page_with(b"/Fm1 Do".to_vec(), dictionary! { "XObject" => dictionary! { "Fm1" => form_id } });
        let err = run_thread(&fixture.bytes(), "1", 1000, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("draws itself")), "{err:?}");
    }

    #[test]
    fn forms_shared_and_nested_within_bounds_are_read() {
        let mut fixture = Fixture::new();
        let font = fixture.font;
        let leaf = fixture.doc.add_object(Stream::new(
            dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } } },
            show("in the form"),
        ));
        let mut inner = leaf;
        // A chain of 10 forms, each drawing the next twice: a DAG with 2^10 paths, walked once per form.
        for _ in 0..10 {
            inner = fixture.doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do /X Do".to_vec(),
            ));
        }
        fixture.page_with(b"/Top Do".to_vec(), dictionary! { "XObject" => dictionary! { "Top" => inner } });
        let started = Instant::now();
        let extracted = run_bytes(&fixture.bytes(), "1", 100).unwrap();
        assert!(extracted.pages[0].text.starts_with("in the formin the form"), "{:?}", extracted.pages);
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn forms_nested_too_deeply_are_refused() {
        let mut fixture = Fixture::new();
        let mut inner = fixture.doc.add_object(Stream::new(dictionary! { "Subtype" => "Form" }, show("deep")));
        for _ in 0..MAX_FORM_DEPTH + 2 {
            inner = fixture.doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do".to_vec(),
            ));
        }
        fixture.page_with(b"/Top Do".to_vec(), dictionary! { "XObject" => dictionary! { "Top" => inner } });
        let err = run_bytes(&fixture.bytes(), "1", 10).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("nested")), "{err:?}");
    }

    #[test]
    fn a_page_tree_that_loops_is_refused() {
        let mut fixture = Fixture::new();
        let page = fixture.text_page("looping");
        // The page's parent is a node whose parent is the page: pdf-extract would climb forever for a MediaBox.
        let node = fixture.doc.add_object(dictionary! { "Type" => "Pages", "Parent" => page });
        let dict = fixture.doc.get_object_mut(page).and_then(Object::as_dict_mut).unwrap();
        dict.set("Parent", node);
        let err = run_thread(&fixture.bytes(), "1", 1000, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("loops")), "{err:?}");
    }

    // -- bombs, deadlines, cancellation (thread isolation)

    #[test]
    fn a_decompression_bomb_fails_cleanly_with_bounded_memory_in_a_thread() {
        // 2 GiB of zeros in 2 MiB of FlateDecode, as the page's second content stream.
        let bytes = bomb_pdf((2u64 << 30) / 258);
        assert!(bytes.len() < 3 << 20, "{}", bytes.len());
        let started = Instant::now();
        let err = run_thread(&bytes, "1", 10_000, Duration::from_secs(30)).unwrap_err();
        let took = started.elapsed();
        eprintln!("thread mode: the 2 GiB bomb failed in {took:?}: {err}");
        assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("64 MiB")), "{err:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
        assert!(peak_rss_bytes() < 1 << 30, "peak RSS {} bytes", peak_rss_bytes());
    }

    #[test]
    fn the_per_page_check_stops_a_bomb_the_raw_probe_missed() {
        // The worker skips the raw probe (its memory limit backs it up); the page check still measures the streams.
        let bytes = bomb_pdf(1_000_000); // 258 MB of zeros
        let err = extract_bytes(&bytes, &PageSelection::all(), 1000, &Stop::never(), Host::Worker).unwrap_err();
        assert!(matches!(err, PdfError::TooLarge(_)), "{err:?}");
    }

    /// A PDF written by hand, with a classic cross-reference table, from the bodies of objects 1, 2, ….
    fn handmade(objects: &[Vec<u8>]) -> Vec<u8> {
        let mut pdf = b"%PDF-1.5\n".to_vec();
        let mut offsets = Vec::new();
        for (index, body) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n", index + 1).as_bytes());
            pdf.extend_from_slice(body);
            pdf.extend_from_slice(b"\nendobj\n");
        }
        let xref = pdf.len();
        pdf.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
        for offset in offsets {
            pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        let trailer = format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1);
        pdf.extend_from_slice(trailer.as_bytes());
        pdf
    }

    fn stream_object(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
        body.extend_from_slice(data);
        body.extend_from_slice(b"\nendstream");
        body
    }

    /// One page of text, and an object stream that lopdf unpacks while loading: 2 GiB of zeros.
    fn object_stream_bomb() -> Vec<u8> {
        handmade(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
            stream_object("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
            stream_object("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &zeros_zlib((2u64 << 30) / 258)),
        ])
    }

    #[test]
    fn the_raw_probe_stops_an_object_stream_bomb_before_lopdf_loads_it() {
        let plain = handmade(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
            stream_object("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        ]);
        assert_eq!(texts(&run_thread(&plain, "1", 100, Duration::from_secs(30)).unwrap()), [(1, "Hello")]);
        let started = Instant::now();
        let err = run_thread(&object_stream_bomb(), "1", 100, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(err, PdfError::TooLarge(_)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
        assert!(peak_rss_bytes() < 1 << 30, "peak RSS {} bytes", peak_rss_bytes());
    }

    #[test]
    fn content_too_large_to_parse_is_refused_in_a_thread_only() {
        let mut fixture = Fixture::new();
        // 300,000 operators: about 150 MiB once parsed.
        fixture.page_with("q Q ".repeat(150_000).into_bytes(), Dictionary::new());
        let bytes = fixture.bytes();
        let err = run_bytes(&bytes, "1", 100).unwrap_err();
        assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("page 1")), "{err:?}");
        let extracted = extract_bytes(&bytes, &PageSelection::all(), 100, &Stop::never(), Host::Worker).unwrap();
        assert_eq!(texts(&extracted), [(1, "")]);
    }

    #[test]
    fn a_deadline_in_the_past_times_out_at_once() {
        let file = as_file(&numbered(3));
        let started = Instant::now();
        let err =
            extract(&file, &PageSelection::all(), 100, Instant::now(), &Cancel::new(), &Isolation::Thread).unwrap_err();
        assert!(matches!(err, PdfError::Timeout), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_deadline_reached_during_extraction_times_out_promptly() {
        let bytes = numbered(3000);
        let file = as_file(&bytes);
        let started = Instant::now();
        let deadline = started + Duration::from_millis(30);
        let err = extract(&file, &PageSelection::all(), usize::MAX, deadline, &Cancel::new(), &Isolation::Thread)
            .unwrap_err();
        let late = started.elapsed().saturating_sub(Duration::from_millis(30));
        assert!(matches!(err, PdfError::Timeout), "{err:?}");
        assert!(late < Duration::from_secs(1), "{late:?} late");
    }

    #[test]
    fn cancelling_stops_the_extraction() {
        let file = as_file(&numbered(3));
        let cancel = Cancel::new();
        cancel.cancel();
        let deadline = Instant::now() + Duration::from_secs(30);
        let err = extract(&file, &PageSelection::all(), 100, deadline, &cancel, &Isolation::Thread).unwrap_err();
        assert!(matches!(&err, PdfError::Io(io) if crate::budget::is_cancelled(io)), "{err:?}");

        let file = as_file(&numbered(3000));
        let cancel = Cancel::new();
        let canceller = cancel.clone();
        let started = Instant::now();
        let timer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(30));
            canceller.cancel();
        });
        let err = extract(&file, &PageSelection::all(), usize::MAX, deadline, &cancel, &Isolation::Thread).unwrap_err();
        timer.join().unwrap();
        assert!(matches!(&err, PdfError::Io(io) if crate::budget::is_cancelled(io)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    }

    #[test]
    fn a_file_over_the_size_limit_is_too_large_before_anything_is_read() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(MAX_PDF_BYTES + 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let err = extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &Isolation::Thread).unwrap_err();
        assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("256 MiB")), "{err:?}");
    }

    #[test]
    fn extraction_reads_the_file_from_its_start_and_leaves_its_offset_alone() {
        use std::io::{Seek, SeekFrom};
        let mut file = as_file(&numbered(2));
        file.seek(SeekFrom::Start(100)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let extracted = extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &Isolation::Thread);
        assert_eq!(texts(&extracted.unwrap()), [(1, "Page 1 text"), (2, "Page 2 text")]);
        assert_eq!(file.stream_position().unwrap(), 100);
    }

    // -- the bounded decoders

    fn lopdf_decoded(filter: &str, content: Vec<u8>) -> Vec<u8> {
        Stream::new(dictionary! { "Filter" => filter }, content).decompressed_content().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut stream = Stream::new(dictionary! {}, data.to_vec());
        stream.compress().unwrap();
        stream.content
    }

    fn sample(len: usize) -> Vec<u8> {
        // Text-like with repeats, plus bytes of every value.
        let words = ["stream ", "the ", "quick ", "brown ", "fox ", "BT ", "(x) Tj ", "\n", "\u{e9}t\u{e9} "];
        let mut out = Vec::new();
        let mut seed = 12345u32;
        while out.len() < len {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            if seed % 7 == 0 {
                out.push((seed >> 16) as u8);
            } else {
                out.extend_from_slice(words[(seed >> 16) as usize % words.len()].as_bytes());
            }
        }
        out.truncate(len);
        out
    }

    #[test]
    fn inflate_decodes_what_flate2_encodes() {
        let stop = Stop::never();
        for data in [sample(100), sample(300_000), vec![0u8; 1_000_000], vec![7u8; 70_000], b"ab".repeat(40)] {
            let compressed = zlib(&data);
            assert_ne!(compressed, data, "flate2 compressed it");
            assert_eq!(decode::flate(&compressed, usize::MAX, &stop).unwrap().unwrap(), data, "{} bytes", data.len());
        }
        // The empty zlib stream (a fixed block holding only its end), and a stored block.
        assert_eq!(decode::flate(&[0x78, 0x9c, 0x03, 0x00, 0, 0, 0, 1], usize::MAX, &stop), Ok(Some(Vec::new())));
        let stored = [0x78, 0x01, 0x01, 0x03, 0x00, 0xfc, 0xff, b'a', b'b', b'c'];
        assert_eq!(decode::flate(&stored, usize::MAX, &stop), Ok(Some(b"abc".to_vec())));
        let bomb = zeros_zlib(5000);
        let decoded = decode::flate(&bomb, usize::MAX, &stop).unwrap().unwrap();
        assert_eq!(decoded, lopdf_decoded("FlateDecode", bomb));
        assert_eq!(decoded.len(), 1 + 258 * 5000);
        assert!(decoded.iter().all(|&b| b == 0));
    }

    #[test]
    fn inflate_stops_at_its_cap_and_at_broken_data() {
        let stop = Stop::never();
        assert_eq!(decode::flate(&zeros_zlib(100_000), 1_000_000, &stop), Err(decode::Limit::Over));
        assert_eq!(decode::flate(&zeros_zlib(100), 1_000_000, &stop).unwrap().unwrap().len(), 25_801);
        let whole = zlib(&sample(50_000));
        let part = decode::flate(&whole[..whole.len() / 2], usize::MAX, &stop).unwrap().unwrap();
        assert!(!part.is_empty() && sample(50_000).starts_with(&part));
        assert_eq!(decode::flate(b"\xff\xff\xff\xff", usize::MAX, &stop), Ok(Some(Vec::new())));
        let raised = Stop::never();
        raised.raise();
        assert_eq!(decode::flate(&zeros_zlib(100_000), usize::MAX, &raised), Err(decode::Limit::Stopped));
    }

    /// LZW as PDF writers encode it (early change), to check the decoder against lopdf's.
    fn lzw_encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut buffer, mut count) = (0u64, 0u32);
        let mut put = |code: u64, width: u32| {
            buffer = (buffer << width) | code;
            count += width;
            while count >= 8 {
                out.push((buffer >> (count - 8)) as u8);
                count -= 8;
            }
        };
        let mut table: HashMap<Vec<u8>, u64> = (0..256u64).map(|b| (vec![b as u8], b)).collect();
        let (mut next, mut width) = (258u64, 9u32);
        put(256, width);
        let mut current: Vec<u8> = Vec::new();
        for &byte in data {
            let mut longer = current.clone();
            longer.push(byte);
            if table.contains_key(&longer) {
                current = longer;
                continue;
            }
            put(table[&current], width);
            table.insert(longer, next);
            next += 1;
            if next >= 1 << width {
                if width == 12 {
                    put(256, width);
                    table.retain(|_, code| *code < 256);
                    next = 258;
                    width = 9;
                } else {
                    width += 1;
                }
            }
            current = vec![byte];
        }
        if !current.is_empty() {
            put(table[&current], width);
        }
        put(257, width);
        put(0, 7);
        out
    }

    #[test]
    fn lzw_decodes_what_lopdf_decodes() {
        let stop = Stop::never();
        for data in [b"TOBEORNOTTOBEORTOBEORNOT".to_vec(), sample(20_000), vec![0u8; 100_000], sample(200_000)] {
            let encoded = lzw_encode(&data);
            assert_eq!(lopdf_decoded("LZWDecode", encoded.clone()), data, "lopdf, {} bytes", data.len());
            assert_eq!(decode::lzw(&encoded, true, usize::MAX, &stop).unwrap().unwrap(), data);
        }
        let encoded = lzw_encode(&vec![0u8; 100_000]);
        assert_eq!(decode::lzw(&encoded, true, 50_000, &stop), Err(decode::Limit::Over));
    }

    #[test]
    fn ascii85_decodes_what_lopdf_decodes() {
        for text in [&b"87cURD]i,\"Ebo80~>"[..], b"z!!!!!~>", b"9jqo^BlbD-BleB1DJ+*+F(f,q", b"", b"!!"] {
            let ours = decode::ascii85(text, usize::MAX).unwrap();
            let theirs = Stream::new(dictionary! { "Filter" => "ASCII85Decode" }, text.to_vec()).decompressed_content();
            assert_eq!(ours, theirs.ok(), "{:?}", String::from_utf8_lossy(text));
        }
        assert_eq!(decode::ascii85(b"87cURD]i,\"Ebo80~>", usize::MAX).unwrap().unwrap(), b"Hello World!");
        assert_eq!(decode::ascii85(b"!!z", usize::MAX), Ok(None));
        assert_eq!(decode::ascii85(&[b'z'; 100], 10), Err(decode::Limit::Over));
    }

    #[test]
    fn the_raw_probe_finds_bombs_nested_and_behind_any_dictionary() {
        let stop = Stop::never();
        let nested = zlib(&zeros_zlib(300_000)); // 77 MB, compressed twice
        let mut file = b"%PDF-1.7\n1 0 obj\n<< /Type /Obj#53tm /Length 99999 >>\nstream\r\n".to_vec();
        file.extend_from_slice(&nested);
        file.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(matches!(probe_raw_streams(&file, &stop), Err(PdfError::TooLarge(_))));
        let mut harmless = b"%PDF-1.7\n1 0 obj\n<< /Length 9 >>\nstream\n".to_vec();
        harmless.extend_from_slice(&zlib(&sample(100_000)));
        harmless.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(probe_raw_streams(&harmless, &stop).is_ok());
    }

    #[test]
    fn predictor_rows_are_bounded_and_undone_as_lopdf_does() {
        let huge = dictionary! { "Predictor" => 12, "Columns" => 1_000_000_000i64, "Colors" => 3 };
        assert!(matches!(unpredict(vec![0; 10], Some(&huge)), Err(PdfError::TooLarge(_))));
        let rows = dictionary! { "Predictor" => 12, "Columns" => 3 };
        // Two rows with the "Up" filter (2): the second adds the first.
        let data = vec![2, 1, 2, 3, 2, 1, 1, 1];
        assert_eq!(unpredict(data, Some(&rows)).unwrap(), Some(vec![1, 2, 3, 2, 3, 4]));
        assert_eq!(unpredict(vec![9, 9], None).unwrap(), Some(vec![9, 9]));
    }

    #[test]
    fn content_scans_count_tokens_and_find_the_drawn_xobjects() {
        let content =
            b"q /Fm1 Do Q (a /Str Do) Tj /F#6fo Do % /Commented Do\n/Fm1 Do /X1 12 Do <</A 1>> BI /W 1 ID x EI";
        let scanned = scan_content(content);
        assert_eq!(scanned.invoked, HashSet::from([b"Fm1".to_vec(), b"Foo".to_vec()]));
        // Operators: q Do Q Tj Do Do Do BI ID x EI; operands: /Fm1 (…) /F#6fo /Fm1 /X1 12 << /A 1 /W 1.
        assert_eq!((scanned.operators, scanned.operands), (11, 11));
        assert!(scan_content(b"(unbalanced /X Do").invoked.is_empty());
        let array = scan_content(b"[1 -2 .3 (s) <ab>] TJ true");
        assert_eq!((array.operators, array.operands), (1, 7));
    }
}
