//! Isolation in a child process ([`Isolation::Process`](super::Isolation::Process)), the caller's side: what a crash,
//! an endless loop or a decompression bomb may cost is the worker, never the caller. It starts the worker (as
//! `media::child` does every worker), reads its
//! answer and standard error with byte caps, kills it at the deadline or on the cancel signal, always reaps it, and
//! turns however it ended into a result. The worker's side is in `worker`.

use super::worker::{Answer, WORKER_MEMORY_BYTES, worker_memory};
use super::{Extracted, PageSelection, PdfError, cancelled};
use crate::budget::Cancel;
use crate::media::child::confine::{Ended, ended_by_system};
use crate::media::child::{self, Running, STDERR_CAP, Start, Waited, capped_reader, shorten};
use std::fs::File;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// How to start the worker.
pub(super) struct Worker<'a> {
    /// The program to run.
    pub(super) program: &'a PathBuf,
    /// The arguments that make it the PDF worker, before the worker's own.
    pub(super) args: &'a [String],
}

/// The most standard output the parent takes from the worker: the text (at most twice `max_chars` characters, JSON
/// escaping included) and room for many pages' framing.
fn answer_cap(max_chars: usize) -> usize {
    max_chars.saturating_mul(12).saturating_add(32 * 1024 * 1024)
}

/// Extracts in a worker process started as `worker` says, with the file as its standard input; kills it at the
/// deadline or on `cancel`, and makes its answer, or how it ended, the result.
pub(super) fn in_child(
    file: &File,
    selection: &PageSelection,
    max_chars: usize,
    deadline: Instant,
    cancel: &Cancel,
    worker: &Worker<'_>,
) -> Result<Extracted, PdfError> {
    let cpu_seconds = child::cpu_seconds(deadline);
    let size = file.metadata().map_err(PdfError::Io)?.len();
    let mut args = worker.args.to_vec();
    args.extend([selection.spec(), max_chars.to_string(), cpu_seconds.to_string()]);
    let start = Start { program: worker.program, args, memory: worker_memory(size), cpu_seconds };
    let mut running = Running::start(start, file, "the PDF worker").map_err(PdfError::Io)?;
    let cap = answer_cap(max_chars);
    let (stdout, stderr) = running.outputs().map_err(PdfError::Io)?;
    let readers = capped_reader(stdout, cap).and_then(|out| capped_reader(stderr, STDERR_CAP).map(|err| (out, err)));
    let (out_reader, err_reader) = match readers {
        Ok(readers) => readers,
        Err(err) => {
            running.stop();
            return Err(PdfError::Io(err));
        }
    };
    let status = match running.wait(deadline, &|| cancel.is_cancelled()).map_err(PdfError::Io)? {
        Waited::Exited(status) => status,
        Waited::Deadline => return Err(PdfError::Timeout),
        Waited::GaveUp => return Err(cancelled()),
    };
    // The worker is reaped and its pipes closed, so the readers are about to end (unless something it left behind
    // holds a pipe open: then they are abandoned at the deadline, and end when that goes).
    let grace = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
    let (Ok((answer, overflow)), Ok((errors, _))) = (out_reader.recv_timeout(grace), err_reader.recv_timeout(grace))
    else {
        return Err(PdfError::Timeout);
    };
    interpret(status, &answer, overflow, &errors, cap)
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
    let because = child::because(&errors);
    if child::ran_out_of_memory(&errors) {
        return Err(PdfError::TooLarge(format!(
            "extracting the text needs more memory than the worker may use ({} MiB plus twice the file){because}",
            WORKER_MEMORY_BYTES / (1024 * 1024)
        )));
    }
    if child::overflowed_its_stack(&errors) {
        return Err(PdfError::Crashed("the extractor overflowed its stack (too deeply nested content)".to_string()));
    }
    match ended_by_system(&status, &because) {
        Some(Ended::OutOfTime) => return Err(PdfError::Timeout),
        Some(Ended::Killed(how)) => return Err(PdfError::Crashed(how)),
        None => {}
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
