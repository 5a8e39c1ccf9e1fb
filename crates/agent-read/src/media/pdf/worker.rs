//! The worker process of [`Isolation::Process`](super::Isolation::Process), its own side: [`worker_main`] is held
//! before it parses a byte (CPU time, no core dumps, no file writes, no new processes, few descriptors, death with its
//! parent, then memory sized to the PDF: how, on each system, is in `confine`), so that whatever the PDF does to the
//! extractor ends in this process, and answers with one JSON document the parent reads.

use super::extract::{Host, extract_bytes, read_pdf};
use super::stop::Stop;
use super::{Extracted, PageSelection, PageText, PdfError, panic_reason};
use crate::media::child::confine::{MEMORY_BOUNDED, limit_memory, limit_worker, standard_input};
use crate::media::child::{EXIT_ANSWERED, EXIT_UNCONFINED, EXIT_UNWRITTEN, EXIT_USAGE};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};

/// How extraction runs inside the worker: where the system bounds the worker's memory, with only the checks a
/// bounded process needs; on macOS, whose kernel does not, with every check a thread gets.
const WORKER_HOST: Host = if MEMORY_BOUNDED { Host::Worker } else { Host::Thread };

/// The worker's address space: this much, plus twice the PDF's size.
pub(super) const WORKER_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;

/// The worker's memory bound for a PDF of `size` bytes.
pub(super) fn worker_memory(size: u64) -> u64 {
    WORKER_MEMORY_BYTES.saturating_add(size.saturating_mul(2))
}

/// The worker's one answer, as JSON on its standard output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum Answer {
    Extracted { page_count: u32, complete: bool, pages: Vec<WirePage> },
    Encrypted,
    Malformed { reason: String },
    TooLarge { reason: String },
    Timeout,
    Crashed { reason: String },
    Io { reason: String },
}

/// One page of an answer.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WirePage {
    number: u32,
    text: String,
    #[serde(default)]
    cut: bool,
    #[serde(default)]
    capped: bool,
    #[serde(default)]
    skipped: usize,
}

impl Answer {
    /// The answer that carries `result`.
    fn from_result(result: Result<Extracted, PdfError>) -> Answer {
        match result {
            Ok(extracted) => Answer::Extracted {
                page_count: extracted.page_count,
                complete: extracted.complete,
                pages: extracted
                    .pages
                    .into_iter()
                    .map(|page| WirePage {
                        number: page.number,
                        text: page.text,
                        cut: page.cut,
                        capped: page.capped,
                        skipped: page.skipped,
                    })
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

    /// The result the answer carries.
    pub(super) fn into_result(self) -> Result<Extracted, PdfError> {
        match self {
            Answer::Extracted { page_count, complete, pages } => Ok(Extracted {
                page_count,
                complete,
                pages: pages
                    .into_iter()
                    .map(|page| PageText {
                        number: page.number,
                        text: page.text,
                        cut: page.cut,
                        capped: page.capped,
                        skipped: page.skipped,
                    })
                    .collect(),
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
/// `args` are `PAGES MAX_CHARS CPU_SECONDS CONFINEMENT` (pages in the `pages` parameter's form; the confinement
/// is what the parent made to hold the worker, see `confine`). Exit codes: 0 with an answer
/// (failures to read the PDF included), 1 when the answer could not be written, 2 for bad arguments, 3 when the
/// limits could not be set. It is meant to run as its own process only: it installs a silent panic hook, dies with its
/// parent, and may not write files — its standard output and error must be pipes (or devices such as `/dev/null`).
pub fn worker_main(args: &[String]) -> i32 {
    let usage = "usage: PAGES MAX_CHARS CPU_SECONDS CONFINEMENT, with the PDF on standard input";
    let [pages, max_chars, cpu_seconds, confinement] = args else {
        let _ = writeln!(io::stderr(), "{usage}");
        return EXIT_USAGE;
    };
    let (selection, max_chars, cpu_seconds) =
        match (PageSelection::parse(pages), max_chars.parse::<usize>(), cpu_seconds.parse::<u64>()) {
            (Ok(selection), Ok(max_chars), Ok(cpu_seconds)) => (selection, max_chars, cpu_seconds),
            _ => {
                let _ = writeln!(io::stderr(), "{usage}");
                return EXIT_USAGE;
            }
        };
    if let Err(err) = limit_worker(cpu_seconds, confinement) {
        let _ = writeln!(io::stderr(), "the PDF worker could not set its limits: {err}");
        return EXIT_UNCONFINED;
    }
    // This process exists to run the extractor: a panic is reported in the answer, not on standard error.
    panic::set_hook(Box::new(|_| {}));
    let stop = Stop::never();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let data = read_pdf(&standard_input().map_err(PdfError::Io)?, &stop)?;
        limit_memory(worker_memory(data.len() as u64)).map_err(PdfError::Io)?;
        extract_bytes(&data, &selection, max_chars, &stop, WORKER_HOST)
    }))
    .unwrap_or_else(|payload| Err(PdfError::Crashed(panic_reason(payload.as_ref()))));
    let answer = Answer::from_result(result);
    let mut stdout = io::stdout().lock();
    let written = serde_json::to_writer(&mut stdout, &answer).map_err(io::Error::from).and_then(|()| stdout.flush());
    if written.is_ok() { EXIT_ANSWERED } else { EXIT_UNWRITTEN }
}
