//! A document's outline and conversion in a worker process, the caller's side: the worker gets the open file as its
//! standard input, is killed at the read's deadline, on cancellation, or as soon as nobody reads its text any more,
//! and however it ended becomes a [`DocumentError`] as a conversion in this process would give (a crash, a stack
//! overflow or memory run out included). The worker's side is in `worker`.

use super::worker::{CONVERT_MODE, EXIT_FAILED, Failure, OUTLINE_MODE, WORKER_MEMORY_BYTES, WireOutline};
use super::{DocumentError, Outline};
use crate::budget::Budget;
use crate::classify::document::DocumentKind;
use crate::media::child::confine::{Ended, ended_by_system};
use crate::media::child::{self, Running, STDERR_CAP, Start, Waited, capped_reader};
use crate::media::pages::PageSelection;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The most an outline may take as JSON (a workbook's sheet names, a book's chapter titles).
const OUTLINE_CAP: usize = 16 * 1024 * 1024;
/// How the worker is named in errors.
const WHAT: &str = "the document worker";

/// The outline of the document open as `file`, made by the worker `program`.
pub(crate) fn outline(
    program: &Path,
    file: &File,
    kind: DocumentKind,
    budget: &Budget,
) -> Result<Outline, DocumentError> {
    let mut running = start(program, file, vec![OUTLINE_MODE.to_string(), kind.name().to_string()], budget)?;
    let (stdout, stderr) = running.outputs()?;
    let out_reader = capped_reader(stdout, OUTLINE_CAP)?;
    let err_reader = capped_reader(stderr, STDERR_CAP)?;
    let waited = running.wait(budget.deadline(), &|| budget.cancel().is_cancelled())?;
    let grace = Duration::from_millis(100).max(budget.deadline().saturating_duration_since(Instant::now()));
    let (Ok((answer, overflow)), Ok((errors, _))) = (out_reader.recv_timeout(grace), err_reader.recv_timeout(grace))
    else {
        return Err(stopped(budget));
    };
    ended(waited, &errors, budget)?;
    if overflow {
        return Err(DocumentError::TooLarge(format!("its outline passed {OUTLINE_CAP} bytes")));
    }
    serde_json::from_slice::<WireOutline>(&answer)
        .map(WireOutline::into_outline)
        .map_err(|err| DocumentError::Damaged(child::shorten(&format!("the worker's outline is not valid: {err}"))))
}

/// Converts the units `selection` chooses of the document open as `file`, framed for `unit_count` units, in the
/// worker `program`, writing its text into `sink` as it comes. Returns early, without an error, once `sink` fails
/// (its reader hung up).
pub(crate) fn convert(
    program: &Path,
    file: &File,
    kind: DocumentKind,
    selection: &PageSelection,
    unit_count: u32,
    budget: &Budget,
    sink: &mut (dyn Write + Send),
) -> Result<(), DocumentError> {
    let args = vec![CONVERT_MODE.to_string(), kind.name().to_string(), selection.spec(), unit_count.to_string()];
    let mut running = start(program, file, args, budget)?;
    let (stdout, stderr) = running.outputs()?;
    let err_reader = capped_reader(stderr, STDERR_CAP)?;
    let hung_up = AtomicBool::new(false);
    let waited = std::thread::scope(|scope| {
        scope.spawn(|| {
            // Owned here, so that its end tells the wait below at once: the worker ended, or nobody reads its text.
            let mut stdout = stdout;
            if io::copy(&mut stdout, sink).is_err() {
                hung_up.store(true, Ordering::Relaxed);
            }
        });
        running.wait(budget.deadline(), &|| budget.cancel().is_cancelled() || hung_up.load(Ordering::Relaxed))
    })?;
    if hung_up.load(Ordering::Relaxed) {
        return Ok(());
    }
    let grace = Duration::from_millis(100).max(budget.deadline().saturating_duration_since(Instant::now()));
    let Ok((errors, _)) = err_reader.recv_timeout(grace) else { return Err(stopped(budget)) };
    ended(waited, &errors, budget)?;
    sink.flush().or_else(|error| if error.kind() == io::ErrorKind::BrokenPipe { Ok(()) } else { Err(error) })?;
    Ok(())
}

/// Starts the worker in `args`'s mode, with the CPU time left to `budget`.
fn start(program: &Path, file: &File, mut args: Vec<String>, budget: &Budget) -> Result<Running, DocumentError> {
    let cpu_seconds = child::cpu_seconds(budget.deadline());
    args.push(cpu_seconds.to_string());
    let size = file.metadata()?.len();
    let memory = WORKER_MEMORY_BYTES.saturating_add(size.saturating_mul(2));
    Ok(Running::start(Start { program, args, memory, cpu_seconds }, file, WHAT)?)
}

/// What the worker's end means: nothing when it answered, else the error it gave or how it ended.
fn ended(waited: Waited, errors: &[u8], budget: &Budget) -> Result<(), DocumentError> {
    let status = match waited {
        Waited::Exited(status) => status,
        Waited::Deadline | Waited::GaveUp => return Err(stopped(budget)),
    };
    if status.success() {
        return Ok(());
    }
    Err(failure(status, errors, budget))
}

/// The error of a worker that did not answer.
fn failure(status: ExitStatus, errors: &[u8], budget: &Budget) -> DocumentError {
    if status.code() == Some(EXIT_FAILED)
        && let Ok(failure) = serde_json::from_slice::<Failure>(errors)
    {
        return failure.into_error();
    }
    let errors = String::from_utf8_lossy(errors);
    let because = child::because(&errors);
    if child::ran_out_of_memory(&errors) {
        return DocumentError::TooLarge(format!(
            "converting it needs more memory than the worker may use ({} MiB plus twice the file){because}",
            WORKER_MEMORY_BYTES / (1024 * 1024)
        ));
    }
    if child::overflowed_its_stack(&errors) {
        return DocumentError::Damaged("the converter overflowed its stack (too deeply nested content)".to_string());
    }
    match ended_by_system(&status, &because) {
        Some(Ended::OutOfTime) => stopped(budget),
        Some(Ended::Killed(how)) => DocumentError::Damaged(how),
        None => {
            let code = status.code().unwrap_or(-1);
            DocumentError::Damaged(format!("the converter's worker exited with status {code}{because}"))
        }
    }
}

/// The error of a worker stopped by the read's budget: its own, else a time-out.
fn stopped(budget: &Budget) -> DocumentError {
    let error = budget.check().err();
    DocumentError::Stopped(
        error.unwrap_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "the read's time budget ran out")),
    )
}
