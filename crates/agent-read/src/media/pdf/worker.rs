//! The worker process of [`Isolation::Process`](super::Isolation::Process), its own side: [`worker_main`] lowers its
//! limits before it parses a byte (CPU time, no core dumps, no file writes, no new processes, few descriptors, death
//! with its parent, then an address space sized to the PDF), so that whatever the PDF does to the extractor ends in
//! this process, and answers with one JSON document the parent reads.

use super::extract::{Host, extract_bytes, read_pdf};
use super::stop::Stop;
use super::{Extracted, PageSelection, PageText, PdfError, panic_reason};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::panic::{self, AssertUnwindSafe};

/// The worker's address space: this much, plus twice the PDF's size.
pub(super) const WORKER_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
/// Descriptors the worker may hold (it needs its three standard streams).
const WORKER_MAX_FILES: u64 = 16;

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
