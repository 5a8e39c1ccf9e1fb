//! Documents as text (DOCX, ODT, XLSX, XLS, ODS, PPTX, EPUB, HTML), windowed by lines like any text, so the footer's
//! next call, the output cap and the time budget work as for a file. A workbook's sheets, a presentation's slides and
//! a book's chapters are units, chosen with `pages` and rendered each under a `── sheet N of T: name ──` header with
//! its text behind the [gutter](crate::render::GUTTER) (a cell cannot print a header of its own); a document without
//! units is its converted text alone. Byte ranges address the raw file: an HTML page's markup, while a zip or OLE
//! container has no text to show by bytes.
//!
//! Contract (how the converted text is read):
//! - Where it is converted is the reader's [`Converter`]: in this process (the library's default), or in a worker
//!   process for each outline and each conversion (the binary's: [`Reader::with_worker`](crate::Reader::with_worker)),
//!   which reads the open file, converts as this process would, and writes its text to a pipe. Either way what
//!   follows holds, and the memory a document holds (at most [`MAX_FILE_BYTES`] of file) is reserved here while it
//!   is converted. Each worker reads the file anew: a document rewritten while one read runs may show its new text
//!   under the units its outline found (in this process the bytes are read once per read).
//! - The document's units are listed first, so a damaged, encrypted or oversized document is refused before any
//!   text, and `pages` past the last unit is an error.
//! - The text is never held whole: a conversion runs on a thread of this read (in a worker: the thread copies the
//!   worker's text) and writes its text, a chunk at a time, into a channel of [`QUEUED_CHUNKS`] chunks, which the
//!   line window reads forward ([`Stream`](crate::window::stream::Stream)): memory stays that of the document plus a
//!   few chunks, however long its text. When the window has what it needs the channel is dropped and the conversion
//!   stops at its next line (a worker is killed); a window before what was last read starts a fresh conversion.
//!   Every thread ends, and every worker is reaped, before the read returns.
//! - As for compressed text, a first window counts the lines to the end of the chosen units (the footer's total is
//!   exact, never estimated), and the reader keeps that total for the file as it is and the units chosen, so a later
//!   window converts only up to its last line and a later tail converts once.
//! - A document found damaged or too large partway (a later sheet's part) ends the read with that error, after the
//!   window's lines converted before it; the time budget and cancellation stop the conversion between lines.

use super::file::FileRequest;
use super::target::Target;
use super::text::{self, Rendering};
use crate::budget::Budget;
use crate::classify::document::DocumentKind;
use crate::classify::{self, Content, EncodingSource, TextFormat};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::media::document::{
    self, Converter, DocumentError, HTML_HELD_PER_BYTE, InProcess, MAX_FILE_BYTES, Out, Outline,
};
use crate::media::memory::{Growing, Pool, Refusal, busy_error};
use crate::media::pages::PageSelection;
use crate::render::document::Conversion;
use crate::render::{self, human_size};
use crate::request::Window;
use crate::result::{ReadResult, TextMeta};
use crate::window::index::streamed::FileEnds;
use crate::window::index::{FileIdentity, FileVersion};
use crate::window::lines::Indexing;
use crate::window::stream::{Decoder, Opener, Stream};
use crate::window::{CHUNK_LEN, Source};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

/// Chunks of converted text waiting for the window at most (each [`CHUNK_LEN`] bytes).
const QUEUED_CHUNKS: usize = 2;

/// Reads a document as its converted text.
pub fn read(
    target: &Target<'_>,
    kind: DocumentKind,
    request: FileRequest<'_>,
    limits: &Limits,
    converter: &Converter,
) -> Result<ReadResult, ReadError> {
    if matches!(request.window, Window::Bytes { .. }) {
        return read_raw_bytes(target, kind, request, limits);
    }
    let selection = selection(target, kind, request.pages)?;
    let mut memory = Growing::new(Pool::shared(), target.budget.clone());
    reserve(target, kind, &mut memory)?;
    let input = match converter {
        Converter::InProcess(converters) => Input::Bytes(*converters, document_bytes(target, kind)?),
        Converter::Worker(program) => Input::Worker(program),
    };
    let outline = match &input {
        Input::Bytes(converters, bytes) => (converters.outline)(kind, bytes, &mut || target.budget.check()),
        Input::Worker(program) => document::process::outline(program, target.file, kind, &target.budget),
    }
    .map_err(|error| document_error(target, kind, error, limits))?;
    if request.pages.is_some()
        && let Some(missing) = selection.first_missing(outline.unit_count)
    {
        return Err(past_end(target, kind, missing, outline.unit_count));
    }
    let chosen: Vec<u32> = selection.pages(outline.unit_count).collect();
    let spec = crate::render::spec_of(&chosen);
    let meta = TextMeta {
        rendered_from: Some(kind.name()),
        page_count: kind.unit().map(|_| outline.unit_count),
        pages_shown: kind.unit().map(|_| spec.clone()),
        ..text::base_meta(target, &utf8())
    };
    let conversion = Conversion {
        description: kind.description(),
        unit: kind.unit(),
        unit_count: outline.unit_count,
        names: &outline.names,
        about: &outline.about,
    };
    let rendering = Rendering {
        notices: render::document::notices(&conversion),
        call_prefix: request.pages.map(|_| format!("pages={spec} ")).unwrap_or_default(),
        page_header: kind.unit().map(render::document::unit_header_start),
        streamed: true,
    };
    let converting = Converting {
        kind,
        input: &input,
        file: target.file,
        selection: &selection,
        outline: &outline,
        memory: Mutex::new(memory),
        failure: Mutex::default(),
    };
    match converting.window(target, request.window, meta.clone(), limits, &rendering) {
        Ok(Some(result)) => Ok(ReadResult::Text(result)),
        Ok(None) => {
            let size = meta.size_bytes;
            let mut result = text::empty_file(meta, size);
            result.output = render::document::no_text(size, &rendering.notices);
            Ok(ReadResult::Text(result))
        }
        Err(error) => Err(converting.error_of(target, error, limits)),
    }
}

/// The document as its converter takes it: its bytes, in this process; its open file, for a worker.
enum Input<'a> {
    Bytes(InProcess, Vec<u8>),
    Worker(&'a Path),
}

/// Reserves in `memory` what converting the file holds (refused over [`MAX_FILE_BYTES`]): its bytes, and for an HTML
/// page its text (see [`HTML_HELD_PER_BYTE`]). A worker holds them in its own process, but the reservation stays
/// here while it runs, so that conversions across processes share the one budget. As the first reservation of the
/// read, it may wait for reads of other big documents to end.
fn reserve(target: &Target<'_>, kind: DocumentKind, memory: &mut Growing) -> Result<(), ReadError> {
    let size = target.metadata.len();
    if size > MAX_FILE_BYTES {
        return Err(ReadError::new(
            ErrorCode::TooLarge,
            format!(
                "{}: {} is over the {} a document may have to be converted",
                target.shown,
                human_size(size),
                human_size(MAX_FILE_BYTES)
            ),
        )
        .with_hint("ask the user for a smaller export (e.g. one sheet as CSV), or skip this file"));
    }
    let held = if kind == DocumentKind::Html { size * HTML_HELD_PER_BYTE } else { size };
    memory.cover(held).map_err(|refusal| file_refused(target, size, refusal))
}

/// The file's bytes, whole (at most [`MAX_FILE_BYTES`]; [`reserve`] holds their memory); an HTML page's decoded to
/// UTF-8.
fn document_bytes(target: &Target<'_>, kind: DocumentKind) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    target.file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).map_err(|e| ReadError::from_io(&e, &target.shown))?;
    Ok(if kind == DocumentKind::Html { document::page_as_utf8(bytes) } else { bytes })
}

/// The error for a document's file whose memory could not be reserved: other reads held it for as long as this one
/// could wait (a file within [`MAX_FILE_BYTES`] never needs more than the whole budget).
fn file_refused(target: &Target<'_>, size: u64, refusal: Refusal) -> ReadError {
    let (held, capacity, waited) = match refusal {
        Refusal::Stopped(error) => return ReadError::from_io(&error, &target.shown),
        Refusal::Busy { held, capacity, waited, .. } => (held, capacity, waited),
        Refusal::TooLargeAlone { capacity, .. } => (0, capacity, Duration::ZERO),
    };
    let need = format!("its {} are held while it is converted", human_size(size));
    let busy = busy_error("converted", &need, held, capacity, waited);
    ReadError::from_io(&busy, &target.shown)
}

/// A document being converted for one read: what to convert, and what a conversion failed with.
struct Converting<'a> {
    kind: DocumentKind,
    input: &'a Input<'a>,
    /// The document's file (what a worker reads).
    file: &'a File,
    selection: &'a PageSelection,
    outline: &'a Outline,
    /// What the read holds of the memory all reads share (its file, then what a conversion grows): one reservation,
    /// so that a read waits only while it holds nothing. A conversion takes it for as long as it runs.
    memory: Mutex<Growing>,
    /// Why the last conversion stopped short, when it was the document's fault (not the budget's).
    failure: Mutex<Option<DocumentError>>,
}

impl Converting<'_> {
    /// The window of the converted text; `None` when it has no line.
    fn window(
        &self,
        target: &Target<'_>,
        window: Window,
        meta: TextMeta,
        limits: &Limits,
        rendering: &Rendering,
    ) -> Result<Option<crate::result::TextResult>, ReadError> {
        let layout = utf8().codec.newline_layout();
        let ends =
            FileEnds::of(target.file, target.metadata.len()).map_err(|e| ReadError::from_io(&e, &target.shown))?;
        let indexing = Indexing {
            indexes: target.indexes,
            identity: FileIdentity::of(target.file, target.metadata, self.rendering_key(), layout),
            version: FileVersion::of(target.metadata),
            ends: Some(ends),
        };
        std::thread::scope(|scope| {
            let open: &Opener<'_> = &|restart| {
                if restart.is_some() {
                    // A conversion makes no restart point, so none can be offered to it: start over.
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a conversion resumes nowhere but its start",
                    ));
                }
                let (sender, receiver) = sync_channel::<io::Result<Vec<u8>>>(QUEUED_CHUNKS);
                let budget = target.budget.clone();
                scope.spawn(move || self.convert(ChannelWriter::new(sender), budget));
                Ok(Box::new(ChannelReader { receiver, chunk: Vec::new(), at: 0 }) as Box<dyn Decoder>)
            };
            let stream = Stream::new(open, target.budget.clone());
            let source = Source::streamed(&stream, 0, layout).with_budget(target.budget.clone());
            text::read_rendered_stream(&source, Some(indexing), window, meta, limits, rendering)
        })
    }

    /// Converts the chosen units into `sink`; what stopped it short goes into the channel after the text before it.
    fn convert(&self, mut sink: ChannelWriter, budget: Budget) {
        let converted = match self.input {
            Input::Bytes(converters, bytes) => self.convert_here(converters, bytes, &mut sink, &budget),
            Input::Worker(program) => {
                let unit_count = self.outline.unit_count;
                let (file, kind, selection) = (self.file, self.kind, self.selection);
                document::process::convert(program, file, kind, selection, unit_count, &budget, &mut sink)
            }
        };
        match converted {
            Ok(()) => {}
            Err(DocumentError::Stopped(error)) => sink.fail(error),
            Err(error) => {
                *self.failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
                sink.fail(io::Error::other("the document could not be converted"));
            }
        }
    }

    /// Converts in this process, into `sink`.
    fn convert_here(
        &self,
        converters: &InProcess,
        bytes: &[u8],
        sink: &mut ChannelWriter,
        budget: &Budget,
    ) -> Result<(), DocumentError> {
        let mut out = match self.kind.unit() {
            Some(unit) => Out::framed(sink, unit, self.outline.unit_count),
            None => Out::flow(sink),
        };
        let mut memory = self.memory.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let check = &mut || budget.check();
        let converted = (converters.convert)(self.kind, bytes, self.selection, &mut out, check, &mut memory);
        drop(memory);
        // A failed write means the window hung up: nobody is left to tell.
        let _ = out.finish();
        converted
    }

    /// What a window's error becomes: the document's own failure when a conversion met one (with the lines read
    /// before it), a time-out with the way to a cheaper read, else the error as it came.
    fn error_of(&self, target: &Target<'_>, error: ReadError, limits: &Limits) -> ReadError {
        let failure = self.failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        match failure {
            Some(failure) => {
                let document = document_error(target, self.kind, failure, limits);
                match error.partial {
                    Some(partial) => document.with_partial(partial),
                    None => document,
                }
            }
            None if error.code == ErrorCode::Timeout => {
                error.with_hint(render::document::timeout_hint(self.kind.unit()))
            }
            None => error,
        }
    }

    /// What the converted text depends on beside the file: the units chosen. It stands in the identity's text start
    /// (converted text has no byte-order mark to skip), so that each choice of units keeps its own line total.
    fn rendering_key(&self) -> u64 {
        let key = format!("{}:{}", self.kind.name(), self.selection.spec());
        (1 << 63) | u64::from(crc32fast::hash(key.as_bytes()))
    }
}

/// The writing end of the channel: text gathered into chunks of [`CHUNK_LEN`] bytes, each sent when full.
struct ChannelWriter {
    sender: SyncSender<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
}

impl ChannelWriter {
    fn new(sender: SyncSender<io::Result<Vec<u8>>>) -> ChannelWriter {
        ChannelWriter { sender, chunk: Vec::with_capacity(CHUNK_LEN) }
    }

    fn send(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK_LEN));
        self.sender.send(Ok(chunk)).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    /// Ends the text with `error`, after what was written before it.
    fn fail(mut self, error: io::Error) {
        if self.chunk.is_empty() || self.send().is_ok() {
            // The window may have hung up already: then nobody is left to tell.
            let _ = self.sender.send(Err(error));
        }
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, text: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(text);
        if self.chunk.len() >= CHUNK_LEN {
            self.send()?;
        }
        Ok(text.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() { Ok(()) } else { self.send() }
    }
}

/// The reading end of the channel: the text as it comes, then the error that ended it, if one did. It makes no
/// restart point (a conversion cannot be resumed midway), so a later window converts from the start up to it.
struct ChannelReader {
    receiver: Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Decoder for ChannelReader {}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.receiver.recv() {
                Ok(Ok(chunk)) => (self.chunk, self.at) = (chunk, 0),
                Ok(Err(error)) => return Err(error),
                // The conversion ended (a panic in it is the scope's to answer).
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The units `pages` chooses; `pages` of a document without units is refused.
fn selection(target: &Target<'_>, kind: DocumentKind, pages: Option<&str>) -> Result<PageSelection, ReadError> {
    let Some(spec) = pages else { return Ok(PageSelection::all()) };
    if kind.unit().is_none() {
        return Err(ReadError::invalid_param(format!(
            "{}: `pages` chooses pages of a PDF, sheets of a workbook, slides of a presentation and chapters of a book; a {} is one flow of text",
            target.shown,
            kind.description()
        ))
        .with_hint("remove `pages`; page through its text with offset and limit"));
    }
    PageSelection::parse(spec)
        .map_err(|message| ReadError::invalid_param(message).with_hint(r#"send pages as "3", "1-5", "2,4-6" or "8-""#))
}

fn utf8() -> TextFormat {
    TextFormat { codec: classify::Codec::Whatwg(encoding_rs::UTF_8), source: EncodingSource::Detected, bom_len: 0 }
}

/// A byte range of a document: an HTML page's markup; a container's bytes are refused, with the way to its text.
fn read_raw_bytes(
    target: &Target<'_>,
    kind: DocumentKind,
    request: FileRequest<'_>,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let Content::Text(format) = classify::classify(target.head, None) else {
        return Err(ReadError::new(
            ErrorCode::Binary,
            format!(
                "{}: a {} is a binary container; byte ranges address its raw bytes, which are not text",
                target.shown,
                kind.description()
            ),
        )
        .with_hint("remove start_byte/end_byte to read its converted text (offset/limit page through it)"));
    };
    let rendering = Rendering {
        notices: vec!["byte ranges address the raw markup; remove start_byte/end_byte for the page's text".to_string()],
        ..Rendering::default()
    };
    text::read(target, &format, request.window, limits, &rendering).map(ReadResult::Text)
}

fn past_end(target: &Target<'_>, kind: DocumentKind, missing: u32, count: u32) -> ReadError {
    let unit = kind.unit().unwrap_or("page");
    ReadError::invalid_range(format!("{unit} {missing} is past the end: {} has {count} {unit}(s)", target.shown))
        .with_hint(format!("choose {unit}s between 1 and {count}, e.g. pages=\"1-{count}\""))
}

fn document_error(target: &Target<'_>, kind: DocumentKind, error: DocumentError, limits: &Limits) -> ReadError {
    let shown = &target.shown;
    let what = kind.description();
    match error {
        DocumentError::Damaged(reason) => ReadError::new(
            ErrorCode::Binary,
            format!("{shown}: {what} that cannot be read: {reason}"),
        )
        .with_hint(
            "the file is damaged, truncated or not what its name says; ask the user for a fresh copy; do not retry it",
        ),
        DocumentError::Encrypted => {
            ReadError::new(ErrorCode::Binary, format!("{shown}: {what} encrypted with a password"))
                .with_hint("its text cannot be read without the password; ask the user for an unprotected copy")
        }
        DocumentError::TooLarge(reason) => {
            let error = ReadError::new(ErrorCode::TooLarge, format!("{shown}: {what} too large to convert: {reason}"));
            match kind {
                // A page's markup is text: byte ranges read it as it is.
                DocumentKind::Html => error.with_hint(
                    "read its markup as text by byte ranges instead (start_byte and end_byte), or skip this file",
                ),
                _ => error.with_hint("skip this file, or ask the user for a smaller export"),
            }
        }
        DocumentError::Stopped(error) if error.kind() == std::io::ErrorKind::TimedOut => ReadError::new(
            ErrorCode::Timeout,
            format!("{shown}: converting the {what} ran past the {} s time budget", limits.timeout_ms as f64 / 1000.0),
        )
        .with_hint(match kind.unit() {
            Some(unit) => format!("choose fewer {unit}s at once, e.g. pages=\"1\""),
            None => "skip this file, or ask the user for a smaller export".to_string(),
        }),
        DocumentError::Stopped(error) => ReadError::from_io(&error, shown),
    }
}
