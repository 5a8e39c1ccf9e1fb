//! When a read must stop: its time budget runs out, or its caller cancels it.
//!
//! Both are checked at the same points — before every chunk a scan reads, and every few thousand directory
//! entries — so a stopped read ends within one chunk's work, whatever the file's size.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A caller's hold on a read: a signal that the read is no longer wanted, and when the read's time budget starts.
/// Clones share one flag; setting it stops every read that holds a clone at its next check.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    /// When the request arrived, for a caller that queues requests before reading them; `None` starts the budget when
    /// the read starts.
    arrived: Option<Instant>,
}

impl Cancel {
    /// A signal not yet given; the read's time budget starts when the read does.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A signal not yet given, for a request that arrived at `arrived` and may have waited since: its time budget
    /// counts from `arrived`, so a wait for a free reader is spent from it rather than added to it.
    pub fn arrived_at(arrived: Instant) -> Cancel {
        Cancel { arrived: Some(arrived), ..Cancel::default() }
    }

    /// The same signal, with the time budget of each read it is given to starting when that read does (for a caller
    /// that hands out the rest of its own budget read by read).
    pub fn budget_from_start(&self) -> Cancel {
        Cancel { flag: self.flag.clone(), arrived: None }
    }

    /// When a read's time budget starts: when its request arrived, if the caller said so, else now.
    pub fn budget_start(&self) -> Instant {
        self.arrived.unwrap_or_else(Instant::now)
    }

    /// Whether the request waited for a reader past `timeout`, its whole time budget: `None` when it did not (or the
    /// caller did not say when it arrived), else how long it waited.
    pub fn waited_past(&self, timeout: Duration) -> Option<Duration> {
        let waited = self.arrived?.elapsed();
        (waited >= timeout).then_some(waited)
    }

    /// Gives the signal: reads holding this flag stop with `CANCELLED` at their next check.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the signal has been given.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// How long the answer after a spent time budget may take (see [`Budget::grace`]).
const GRACE: Duration = Duration::from_millis(500);

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
    #[cfg(any(feature = "pdf", feature = "images", feature = "compressed", feature = "documents"))]
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The caller's cancel signal.
    #[cfg(any(feature = "pdf", feature = "documents"))]
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// The same cancel signal with a short grace from now: for the bounded work that answers after the budget ran
    /// out (reading one output's worth of a file), never for a pass over it.
    pub fn grace(&self) -> Budget {
        Budget { deadline: Instant::now() + GRACE, cancel: self.cancel.clone() }
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

    #[test]
    fn a_request_that_arrived_earlier_spends_its_wait_from_the_budget() {
        let arrived = Instant::now() - Duration::from_secs(5);
        let cancel = Cancel::arrived_at(arrived);
        assert_eq!(cancel.budget_start(), arrived);
        assert!(cancel.waited_past(Duration::from_secs(60)).is_none());
        assert!(cancel.waited_past(Duration::from_secs(5)).is_some_and(|waited| waited >= Duration::from_secs(5)));
        let per_read = cancel.budget_from_start();
        assert!(per_read.budget_start() > arrived);
        assert!(per_read.waited_past(Duration::ZERO).is_none());
        cancel.cancel();
        assert!(per_read.is_cancelled(), "the per-read clone shares the signal");
        assert!(Cancel::new().waited_past(Duration::ZERO).is_none());
    }
}
