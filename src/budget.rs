//! When a read must stop: its time budget runs out, or its caller cancels it.
//!
//! Both are checked at the same points — before every chunk a scan reads, and every few thousand directory
//! entries — so a stopped read ends within one chunk's work, whatever the file's size.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A caller's signal that a read is no longer wanted. Clones share one flag; setting it stops every read that
/// holds a clone at its next check.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A signal not yet given.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Gives the signal: reads holding this flag stop with `CANCELLED` at their next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the signal has been given.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The bounds in time one read runs under: a deadline, and a cancel signal checked beside it.
#[derive(Clone, Debug)]
pub struct Budget {
    deadline: Instant,
    cancel: Cancel,
}

impl Budget {
    /// A budget ending at `deadline`, or earlier when `cancel` is given.
    pub fn new(deadline: Instant, cancel: Cancel) -> Budget {
        Budget { deadline, cancel }
    }

    /// When the time budget runs out.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The caller's cancel signal.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// Fails with a [`Cancelled`] error once the caller cancelled, or with `TimedOut` once the deadline passed.
    pub fn check(&self) -> io::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other(Cancelled));
        }
        if Instant::now() >= self.deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the read's time budget ran out"));
        }
        Ok(())
    }
}

/// The error inside the `io::Error` a cancelled read stops with (kind `Other`: `Interrupted` would be retried).
#[derive(Debug)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the read was cancelled by its caller")
    }
}

impl std::error::Error for Cancelled {}

/// Whether `err` is the error of a cancelled read.
pub fn is_cancelled(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_fresh_budget_passes() {
        let budget = Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new());
        assert!(budget.check().is_ok());
    }

    #[test]
    fn a_past_deadline_times_out() {
        let err = Budget::new(Instant::now(), Cancel::new()).check().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(!is_cancelled(&err));
    }

    #[test]
    fn cancelling_a_clone_stops_the_budget_and_wins_over_the_deadline() {
        let cancel = Cancel::new();
        let budget = Budget::new(Instant::now(), cancel.clone());
        cancel.cancel();
        let err = budget.check().unwrap_err();
        assert!(is_cancelled(&err), "{err}");
        assert_ne!(err.kind(), io::ErrorKind::Interrupted);
    }
}
