//! Parsing in a worker process, the parent's side shared by PDFs and documents: a worker is started with the
//! already-open file as its standard input (never a path: the file was opened under the roots' confinement, and the
//! worker opens nothing), held as `confine` says, watched against the read's deadline and cancellation, killed when
//! either comes, and always reaped. Its output and standard error are read on helper threads with byte caps.
//!
//! The worker is a separate program (`agent-read-worker`, beside `agent-read`), so the parsers of hostile formats
//! are never mapped into the process that serves reads: a crash, an endless loop or a bomb costs the worker only.

pub(crate) mod confine;

use crate::error::WorkerMissing;
use confine::Confinement;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Longest pause between two looks at a running worker.
const POLL_MAX: Duration = Duration::from_millis(10);
/// First pause between two looks at a worker whose output has ended (it is exiting).
const OUTPUT_ENDED_PAUSE: Duration = Duration::from_micros(20);
/// Most characters of a reason taken from a worker or a parser (past them it is cut, and says so).
const REASON_CHARS: usize = 200;
/// Standard error kept from a worker, to explain how it ended.
pub(crate) const STDERR_CAP: usize = 4096;
/// Exit code of a worker that wrote its answer.
pub(crate) const EXIT_ANSWERED: i32 = 0;
/// Exit code of a worker whose answer could not be written (the parent hung up).
pub(crate) const EXIT_UNWRITTEN: i32 = 1;
/// Exit code of a worker given arguments it does not know.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code of a worker that could not set its limits (it read nothing).
pub(crate) const EXIT_UNCONFINED: i32 = 3;

/// A worker about to be started: its program and every argument but the confinement's, which comes last.
pub(crate) struct Start<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: Vec<String>,
    /// The worker's memory bound, in bytes, and its CPU time, in seconds.
    pub(crate) memory: u64,
    pub(crate) cpu_seconds: u64,
}

/// How waiting for a worker ended.
pub(crate) enum Waited {
    /// It exited by itself.
    Exited(ExitStatus),
    /// The deadline came first: it was killed.
    Deadline,
    /// The caller gave up first (cancelled, or nobody reads its output any more): it was killed.
    GaveUp,
}

/// A running worker, killed and reaped however the parent leaves it.
pub(crate) struct Running {
    child: Child,
    reaped: bool,
    /// What holds it (on Windows its job, which ends it when dropped); kept as long as the worker runs.
    confinement: Confinement,
    /// Disconnected once the worker's output has ended, which it does as the worker exits: waiting sleeps on it, so
    /// that the exit is seen at once, not at the next of the polls that watch the deadline.
    output_open: Option<Receiver<()>>,
}

/// A worker's output, which tells [`Running::wait`] when it has ended (by dropping its sender, at its end or when
/// the reader is dropped).
pub(crate) struct Output {
    stdout: ChildStdout,
    open: Option<mpsc::Sender<()>>,
}

impl Read for Output {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.stdout.read(buf);
        if matches!(read, Ok(0)) {
            self.open = None;
        }
        read
    }
}

impl Running {
    /// Starts the worker with `input` as its standard input and its output and standard error piped, inside its
    /// confinement. `what` names it in the error when it cannot start ("the PDF worker").
    pub(crate) fn start(start: Start<'_>, input: &File, what: &str) -> io::Result<Running> {
        let stdin = input.try_clone()?;
        let confinement = Confinement::new(start.memory, start.cpu_seconds)?;
        let mut command = Command::new(start.program);
        command
            .args(&start.args)
            .arg(confinement.argument())
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().map_err(|err| not_started(start.program, what, err))?;
        let mut running = Running { child, reaped: false, confinement, output_open: None };
        if let Err(err) = running.confinement.hold(&running.child) {
            running.stop();
            return Err(err);
        }
        Ok(running)
    }

    /// The worker's output and standard error, taken once.
    pub(crate) fn outputs(&mut self) -> io::Result<(Output, ChildStderr)> {
        match (self.child.stdout.take(), self.child.stderr.take()) {
            (Some(stdout), Some(stderr)) => {
                let (open, output_open) = mpsc::channel();
                self.output_open = Some(output_open);
                Ok((Output { stdout, open: Some(open) }, stderr))
            }
            _ => {
                self.stop();
                Err(io::Error::other("the worker's output could not be captured"))
            }
        }
    }

    /// Kills the worker (SIGKILL) and reaps it.
    pub(crate) fn stop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }

    /// Waits for the worker to end, polling; kills it at `deadline` or as soon as `give_up` says so.
    pub(crate) fn wait(&mut self, deadline: Instant, give_up: &dyn Fn() -> bool) -> io::Result<Waited> {
        let mut pause = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return Ok(Waited::Exited(status));
                }
                Ok(None) => {}
                Err(err) => {
                    self.stop();
                    return Err(err);
                }
            }
            if give_up() {
                self.stop();
                return Ok(Waited::GaveUp);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.stop();
                return Ok(Waited::Deadline);
            }
            let step = pause.min(left);
            match &self.output_open {
                Some(open) if open.recv_timeout(step) == Err(RecvTimeoutError::Disconnected) => {
                    // The output ended: the worker is exiting, so look again soon.
                    self.output_open = None;
                    pause = OUTPUT_ENDED_PAUSE;
                    continue;
                }
                Some(_) => {}
                None => thread::sleep(step),
            }
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The error of a worker that could not be started; a missing program says how to get it.
fn not_started(program: &Path, what: &str, err: io::Error) -> io::Error {
    let shown = program.display();
    if err.kind() == io::ErrorKind::NotFound {
        let missing = format!(
            "{what} could not start: its program {shown} is missing (it is installed beside agent-read: reinstall \
             with `cargo install --locked agent-read-cli`, or build it with `cargo build --release --bin \
             agent-read-worker`)"
        );
        return io::Error::new(err.kind(), WorkerMissing(missing));
    }
    io::Error::new(err.kind(), format!("{what} could not start ({shown}): {err}"))
}

/// Reads `source` to its end on a thread, keeping the first `cap` bytes; sends them, and whether there was more.
pub(crate) fn capped_reader<R: Read + Send + 'static>(
    mut source: R,
    cap: usize,
) -> io::Result<Receiver<(Vec<u8>, bool)>> {
    let (sender, receiver) = mpsc::sync_channel(1);
    thread::Builder::new().name("worker-output".to_string()).spawn(move || {
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

/// What a reaped worker's standard error explains, for the end of a message: `": first line"`, or nothing.
pub(crate) fn because(errors: &str) -> String {
    errors
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| format!(": {}", shorten(line)))
        .unwrap_or_default()
}

/// Whether a worker's standard error says it ran out of the memory it may use.
pub(crate) fn ran_out_of_memory(errors: &str) -> bool {
    errors.contains("memory allocation of")
}

/// Whether a worker's standard error says it overflowed its stack.
pub(crate) fn overflowed_its_stack(errors: &str) -> bool {
    errors.contains("overflowed its stack") || errors.contains("stack overflow")
}

/// The CPU time a worker gets: the time left before `deadline`, rounded up, and a few seconds more (the parent kills
/// it at the deadline anyway).
pub(crate) fn cpu_seconds(deadline: Instant) -> u64 {
    const SLACK_SECONDS: u64 = 3;
    deadline.saturating_duration_since(Instant::now()).as_secs() + 1 + SLACK_SECONDS
}

/// Reads the whole of `file` by position from its start, never moving a shared offset (so that each worker started on
/// the same handle reads all of it); a pipe, which has no positions, is read from where it is. `check` runs before
/// each megabyte. Stops once past `max` bytes: a result longer than `max` means the file is.
pub(crate) fn read_whole<E: From<io::Error>>(
    file: &File,
    max: u64,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<Vec<u8>, E> {
    const CHUNK: usize = 1024 * 1024;
    // Room for the size the file states, so that reading it does not copy it as it grows.
    let stated = file.metadata().map_or(0, |metadata| metadata.len()).min(max);
    let mut data = Vec::with_capacity(usize::try_from(stated).unwrap_or(0).saturating_add(CHUNK));
    while data.len() as u64 <= max {
        check()?;
        let filled = data.len();
        data.resize(filled + CHUNK, 0);
        match crate::platform::read_at(file, &mut data[filled..], filled as u64) {
            Ok(0) => {
                data.truncate(filled);
                break;
            }
            Ok(read) => data.truncate(filled + read),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => data.truncate(filled),
            Err(err) if crate::platform::is_unseekable(&err) && filled == 0 => {
                data.clear();
                file.take(max.saturating_add(1)).read_to_end(&mut data)?;
                break;
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok(data)
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// `text` on one line, at most [`REASON_CHARS`] characters.
pub(crate) fn shorten(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// What the tests of workers share.
#[cfg(test)]
pub(crate) mod testing {
    use std::fs::File;
    use std::io::Write as _;
    use std::path::PathBuf;

    /// The `agent-read-worker` program of this build (in `target/<profile>/`; a test binary is in `deps/` below it),
    /// which the workspace's `cargo test` builds before it runs a test.
    pub(crate) fn built_worker() -> PathBuf {
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir =
            exe.parent().and_then(|deps| deps.parent()).expect("the test binary is in target/<profile>/deps");
        let worker = profile_dir.join(format!("agent-read-worker{}", std::env::consts::EXE_SUFFIX));
        assert!(worker.is_file(), "{} is missing: build it first (`cargo build -p agent-read-cli`)", worker.display());
        worker
    }

    /// A temporary file holding `bytes`.
    pub(crate) fn as_file(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().expect("a temporary file");
        file.write_all(bytes).expect("the fixture is written");
        file
    }
}
