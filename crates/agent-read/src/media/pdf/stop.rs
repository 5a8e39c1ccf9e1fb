//! The stop signal of work inside an extraction. The caller of a thread cannot kill it, only stop waiting for it: the
//! work must see for itself that it is over — between pages, every few thousand characters of text, every megabyte a
//! decoder yields — and end, so that an abandoned thread does not run on.

use super::PdfError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// When work inside an extraction must end: a deadline, or a flag raised by whoever gave up waiting for it.
#[derive(Clone, Debug)]
pub(super) struct Stop {
    deadline: Option<Instant>,
    flag: Arc<AtomicBool>,
}

impl Stop {
    /// Until `deadline`, or until the flag is raised.
    pub(super) fn until(deadline: Instant) -> Stop {
        Stop { deadline: Some(deadline), flag: Arc::default() }
    }

    /// No deadline: the worker process, which its parent kills.
    pub(super) fn never() -> Stop {
        Stop { deadline: None, flag: Arc::default() }
    }

    /// Raises the flag: the work ends at its next check.
    pub(super) fn raise(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the work must end (the flag is raised, or the deadline passed).
    pub(super) fn is_raised(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.deadline.is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// `Timeout` when the work must end.
    pub(super) fn check(&self) -> Result<(), PdfError> {
        if self.is_raised() { Err(PdfError::Timeout) } else { Ok(()) }
    }
}
