//! Isolation in a child process ([`Isolation::Process`](super::Isolation::Process)), the caller's side: what a crash,
//! an endless loop or a decompression bomb may cost is the worker, never the caller. It starts the worker, reads its
//! answer and standard error with byte caps, kills it at the deadline or on the cancel signal, always reaps it, and
//! turns however it ended into a result. The worker's side is in `worker`.

use super::confine::{Confinement, ended_by_system};
use super::worker::{Answer, WORKER_MEMORY_BYTES, worker_memory};
use super::{Extracted, POLL_MAX, PageSelection, PdfError, cancelled, shorten};
use crate::budget::Cancel;
use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

/// The worker's CPU time beyond the time left before the deadline (the parent kills it at the deadline anyway).
const WORKER_CPU_SLACK_SECONDS: u64 = 3;
/// Standard error kept from the worker, to explain a crash.
const STDERR_CAP: usize = 4096;

/// How to start the worker.
pub(super) struct Worker<'a> {
    /// The program to run.
    pub(super) program: &'a PathBuf,
    /// The arguments that make it the worker, before the worker's own.
    pub(super) args: &'a [String],
}

/// A running worker, killed and reaped however the parent leaves it.
struct Running {
    child: Child,
    reaped: bool,
    /// What holds it (on Windows its job, which ends it when dropped); kept as long as the worker runs.
    confinement: Confinement,
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
    let left = deadline.saturating_duration_since(Instant::now());
    let cpu_seconds = left.as_secs() + 1 + WORKER_CPU_SLACK_SECONDS;
    let stdin = file.try_clone().map_err(PdfError::Io)?;
    let size = file.metadata().map_err(PdfError::Io)?.len();
    let confinement = Confinement::new(worker_memory(size), cpu_seconds).map_err(PdfError::Io)?;
    let mut command = Command::new(worker.program);
    command
        .args(worker.args)
        .arg(selection.spec())
        .arg(max_chars.to_string())
        .arg(cpu_seconds.to_string())
        .arg(confinement.argument())
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().map_err(|err| {
        let program = worker.program.display();
        PdfError::Io(io::Error::new(err.kind(), format!("could not start the PDF worker {program}: {err}")))
    })?;
    let mut running = Running { child, reaped: false, confinement };
    if let Err(err) = running.confinement.hold(&running.child) {
        running.stop();
        return Err(PdfError::Io(err));
    }
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
    if let Some(ended) = ended_by_system(&status, &because) {
        return Err(ended);
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
