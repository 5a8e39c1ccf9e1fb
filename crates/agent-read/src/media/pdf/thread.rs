//! Isolation in a thread ([`Isolation::Thread`](super::Isolation::Thread)), for a library that cannot assume a worker
//! program is there: panics are caught, and the caller waits only until the deadline or the cancel signal. The
//! thread cannot be killed, so it is abandoned with its stop flag raised; it has no memory limit of its own, so
//! extraction runs there with every guard on ([`Host::Thread`]).

use super::extract::{Host, extract_bytes, read_pdf};
use super::stop::Stop;
use super::{Extracted, POLL_MAX, PageSelection, PdfError, cancelled, panic_reason};
use crate::budget::Cancel;
use std::fs::File;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Instant;

/// Stack of the extraction thread: pdf-extract recurses into forms, nom into nested objects.
const EXTRACT_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Extracts on a thread of this process, panics caught; gives up at the deadline or on `cancel`, raising the stop flag
/// the abandoned thread sees at its next check.
pub(super) fn in_thread(
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

#[cfg(test)]
mod tests {
    use crate::budget::Cancel;
    use crate::media::child::testing::as_file;
    use crate::media::pdf::fixtures::numbered;
    use crate::media::pdf::{Isolation, PageSelection, PdfError, extract};
    use std::thread;
    use std::time::{Duration, Instant};

    #[test]
    fn a_deadline_in_the_past_times_out_at_once() {
        let file = as_file(&numbered(3));
        let started = Instant::now();
        let err = extract(&file, &PageSelection::all(), 100, Instant::now(), &Cancel::new(), &Isolation::thread())
            .unwrap_err();
        assert!(matches!(err, PdfError::Timeout), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_deadline_reached_during_extraction_times_out_promptly() {
        let bytes = numbered(3000);
        let file = as_file(&bytes);
        let started = Instant::now();
        let deadline = started + Duration::from_millis(30);
        let err = extract(&file, &PageSelection::all(), usize::MAX, deadline, &Cancel::new(), &Isolation::thread())
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
        let err = extract(&file, &PageSelection::all(), 100, deadline, &cancel, &Isolation::thread()).unwrap_err();
        assert!(matches!(&err, PdfError::Io(io) if crate::budget::is_cancelled(io)), "{err:?}");

        let file = as_file(&numbered(3000));
        let cancel = Cancel::new();
        let canceller = cancel.clone();
        let started = Instant::now();
        let timer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(30));
            canceller.cancel();
        });
        let err =
            extract(&file, &PageSelection::all(), usize::MAX, deadline, &cancel, &Isolation::thread()).unwrap_err();
        timer.join().unwrap();
        assert!(matches!(&err, PdfError::Io(io) if crate::budget::is_cancelled(io)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    }
}
