//! The document worker, its own side: a document's outline or its converted text, made in a process of its own and
//! held before it reads a byte (as `child::confine` says), so that whatever a hostile document does to a converter
//! ends there. The parent's side is in `process`.
//!
//! Both modes read the document from standard input, by position from its start, and reserve its memory in this
//! process's own pool as a conversion in the caller's process would. The outline mode writes the outline as one JSON
//! document on standard output; the convert mode writes the converted text itself, a line at a time, framed as
//! [`Out`] frames it. A failure to read the document is one JSON [`Failure`] on standard error, with the exit code
//! [`EXIT_FAILED`], after whatever text came before it.

use super::{DocumentError, HTML_HELD_PER_BYTE, MAX_FILE_BYTES, Out, Outline, convert, epub, outline, page_as_utf8};
use crate::budget::{Budget, Cancel};
use crate::classify::document::DocumentKind;
use crate::media::child;
use crate::media::child::confine::{limit_memory, limit_worker, standard_input};
use crate::media::child::{EXIT_ANSWERED, EXIT_UNCONFINED, EXIT_UNWRITTEN, EXIT_USAGE};
use crate::media::memory::{Growing, Pool, Refusal};
use crate::media::pages::PageSelection;
use serde::{Deserialize, Serialize};
use std::io::{self, BufWriter, Write};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// The worker's first argument for an outline.
pub(crate) const OUTLINE_MODE: &str = "document-outline";
/// The worker's first argument for a conversion.
pub(crate) const CONVERT_MODE: &str = "document-convert";
/// Exit code of a worker that found the document unreadable, its [`Failure`] on standard error.
pub(crate) const EXIT_FAILED: i32 = 4;
/// The worker's address space: this much, plus twice the document's size.
pub(super) const WORKER_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;

/// Why the worker could not read the document, as it tells the parent.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "failure", rename_all = "snake_case")]
pub(super) enum Failure {
    Damaged { reason: String },
    Encrypted,
    TooLarge { reason: String },
    Stopped { reason: String, timed_out: bool },
}

impl From<DocumentError> for Failure {
    fn from(error: DocumentError) -> Failure {
        match error {
            DocumentError::Damaged(reason) => Failure::Damaged { reason },
            DocumentError::Encrypted => Failure::Encrypted,
            DocumentError::TooLarge(reason) => Failure::TooLarge { reason },
            DocumentError::Stopped(error) => {
                Failure::Stopped { timed_out: error.kind() == io::ErrorKind::TimedOut, reason: error.to_string() }
            }
        }
    }
}

impl Failure {
    pub(super) fn into_error(self) -> DocumentError {
        match self {
            Failure::Damaged { reason } => DocumentError::Damaged(reason),
            Failure::Encrypted => DocumentError::Encrypted,
            Failure::TooLarge { reason } => DocumentError::TooLarge(reason),
            Failure::Stopped { reason, timed_out: true } => {
                DocumentError::Stopped(io::Error::new(io::ErrorKind::TimedOut, reason))
            }
            Failure::Stopped { reason, timed_out: false } => DocumentError::Stopped(io::Error::other(reason)),
        }
    }
}

/// An outline as the worker sends it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WireOutline {
    unit_count: u32,
    names: Vec<String>,
    about: Vec<(String, Vec<String>)>,
}

impl WireOutline {
    fn of(outline: Outline) -> WireOutline {
        let about = outline.about.into_iter().map(|(label, values)| (label.to_string(), values)).collect();
        WireOutline { unit_count: outline.unit_count, names: outline.names, about }
    }

    /// The outline sent; a label this build does not show is left out.
    pub(super) fn into_outline(self) -> Outline {
        let about =
            self.about.into_iter().filter_map(|(label, values)| Some((epub::known_label(&label)?, values))).collect();
        Outline { unit_count: self.unit_count, names: self.names, about }
    }
}

/// The document read by a worker, and the memory it holds.
struct Document {
    kind: DocumentKind,
    bytes: Vec<u8>,
    memory: Growing,
    budget: Budget,
}

/// The outline mode's main: `KIND CPU_SECONDS CONFINEMENT`, the document on standard input; returns the exit code.
pub(crate) fn outline_main(args: &[String]) -> i32 {
    let [kind, cpu_seconds, confinement] = args else { return usage("KIND CPU_SECONDS CONFINEMENT") };
    let (Some(kind), Ok(cpu_seconds)) = (DocumentKind::from_name(kind), cpu_seconds.parse::<u64>()) else {
        return usage("KIND CPU_SECONDS CONFINEMENT");
    };
    run(kind, cpu_seconds, confinement, |document| {
        let check = &mut || document.budget.check();
        let outline = outline(document.kind, &document.bytes, check)?;
        let mut stdout = io::stdout().lock();
        serde_json::to_writer(&mut stdout, &WireOutline::of(outline)).map_err(io::Error::from)?;
        stdout.flush()?;
        Ok(())
    })
}

/// The convert mode's main: `KIND PAGES UNIT_COUNT CPU_SECONDS CONFINEMENT`, the document on standard input; returns
/// the exit code.
pub(crate) fn convert_main(args: &[String]) -> i32 {
    const USAGE: &str = "KIND PAGES UNIT_COUNT CPU_SECONDS CONFINEMENT";
    let [kind, pages, unit_count, cpu_seconds, confinement] = args else { return usage(USAGE) };
    let parsed = (
        DocumentKind::from_name(kind),
        PageSelection::parse(pages),
        unit_count.parse::<u32>(),
        cpu_seconds.parse::<u64>(),
    );
    let (Some(kind), Ok(selection), Ok(unit_count), Ok(cpu_seconds)) = parsed else { return usage(USAGE) };
    run(kind, cpu_seconds, confinement, |document| {
        let mut sink = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        let mut out = match kind.unit() {
            Some(unit) => Out::framed(&mut sink, unit, unit_count),
            None => Out::flow(&mut sink),
        };
        let check = &mut || document.budget.check();
        let converted = convert(kind, &document.bytes, &selection, &mut out, check, &mut document.memory);
        // The text before a failure goes out first; a failed write means the parent hung up.
        let written = out.finish();
        converted?;
        written.map_err(DocumentError::Stopped)
    })
}

/// Holds the worker, reads the document and runs `work` on it; a failure (a panic included) goes to standard error.
fn run(
    kind: DocumentKind,
    cpu_seconds: u64,
    confinement: &str,
    work: impl FnOnce(&mut Document) -> Result<(), DocumentError>,
) -> i32 {
    if let Err(err) = limit_worker(cpu_seconds, confinement) {
        let _ = writeln!(io::stderr(), "the document worker could not set its limits: {err}");
        return EXIT_UNCONFINED;
    }
    // This process exists to run a converter: a panic is reported as a failure, not on standard error.
    panic::set_hook(Box::new(|_| {}));
    let deadline = Instant::now() + Duration::from_secs(cpu_seconds);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut document = read(kind, Budget::new(deadline, Cancel::new()))?;
        work(&mut document)
    }))
    .unwrap_or_else(|payload| {
        let reason = child::shorten(&format!("the converter panicked: {}", child::panic_message(payload.as_ref())));
        Err(DocumentError::Damaged(reason))
    });
    match result {
        Ok(()) => EXIT_ANSWERED,
        // The parent hung up: nobody is left to tell.
        Err(DocumentError::Stopped(error)) if error.kind() == io::ErrorKind::BrokenPipe => EXIT_UNWRITTEN,
        Err(error) => {
            let mut stderr = io::stderr().lock();
            match serde_json::to_writer(&mut stderr, &Failure::from(error)) {
                Ok(()) => EXIT_FAILED,
                Err(_) => EXIT_UNWRITTEN,
            }
        }
    }
}

/// Reads the document from standard input, bounds this process's memory by its size, and reserves what it holds.
fn read(kind: DocumentKind, budget: Budget) -> Result<Document, DocumentError> {
    let bytes = child::read_whole(&standard_input()?, MAX_FILE_BYTES, || budget.check())?;
    let size = bytes.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(DocumentError::TooLarge(format!("the file is over {MAX_FILE_BYTES} bytes")));
    }
    limit_memory(WORKER_MEMORY_BYTES.saturating_add(size.saturating_mul(2)))?;
    let mut memory = Growing::new(Pool::shared(), budget.clone());
    let held = if kind == DocumentKind::Html { size * HTML_HELD_PER_BYTE } else { size };
    memory.cover(held).map_err(|refusal| match refusal {
        Refusal::Stopped(error) => DocumentError::Stopped(error),
        _ => DocumentError::TooLarge(format!("its {size} bytes are more than a conversion may hold")),
    })?;
    let bytes = if kind == DocumentKind::Html { page_as_utf8(bytes) } else { bytes };
    Ok(Document { kind, bytes, memory, budget })
}

fn usage(form: &str) -> i32 {
    let _ = writeln!(io::stderr(), "usage: {form}, with the document on standard input");
    EXIT_USAGE
}
