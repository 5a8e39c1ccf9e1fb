//! Watching standard input for a moment after an answer, so that a client reading one request at a time finds the
//! server awake when its next request arrives.
//!
//! A client that reads files one after another without a model's turn in between (a harness paging through a file, a
//! script) sends its next request within tens of microseconds of our answer. If the protocol thread has gone to sleep
//! in the meantime, the request first has to wake it: on a virtual machine with two cores that wake-up cost a third of
//! each sequential read's round trip. So after it answers the last request its client is waiting on, the stdio server
//! keeps polling its input, yielding to its other tasks, for [`WATCH_FOR`] before it sleeps. Measured side by side
//! (3,000 sequential reads, medians of five repetitions, two runs): read p50 0.25–0.27× the Node server's without the
//! watch, 0.24× with 25 µs (too short for the client's turn-around), 0.17× with 50 µs, 0.15–0.16× with 100 µs; 13–17 µs
//! more CPU per read (BENCHMARKS.md).
//!
//! It does not watch while the client still waits on an answer (that answer will wake the thread, and the blocking
//! pool's threads need the cores), nor on a single core, where polling would only keep the client from running.

use super::pending::Pending;
use std::time::{Duration, Instant};

/// How long the server watches its input after answering before it sleeps: a fast client's turn-around, and at most
/// this much CPU spent per answer on a client that takes longer.
pub(super) const WATCH_FOR: Duration = Duration::from_micros(100);

/// Decides whether, and until when, the stdio server watches its input instead of sleeping.
#[derive(Debug, Clone)]
pub(super) struct Lookout {
    /// The requests the client is waiting on.
    awaited: Pending,
    /// Whether the process may run on more than one core.
    cores_to_spare: bool,
}

impl Lookout {
    /// A lookout for a client whose awaited requests are in `awaited`, on the cores this process may use.
    pub fn new(awaited: Pending) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Lookout { awaited, cores_to_spare: cores > 1 }
    }

    /// A lookout that never watches.
    pub fn off() -> Self {
        Lookout { awaited: Pending::default(), cores_to_spare: false }
    }

    /// A lookout that watches after every answer, whatever the cores and the awaited requests.
    #[cfg(test)]
    pub fn always() -> Self {
        Lookout { awaited: Pending::default(), cores_to_spare: true }
    }

    /// Until when to watch, given when the last answer went out: `None` when there is nothing to watch for (no answer
    /// yet, a request still awaited, a single core) or the moment has passed.
    pub fn watch_until(&self, last_answer: Option<Instant>, now: Instant) -> Option<Instant> {
        let until = last_answer? + WATCH_FOR;
        (self.cores_to_spare && now < until && self.awaited.count() == 0).then_some(until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::RequestId;

    #[test]
    fn watches_for_a_moment_after_an_answer() {
        let answered = Instant::now();
        let lookout = Lookout::always();
        assert_eq!(lookout.watch_until(Some(answered), answered), Some(answered + WATCH_FOR));
        assert_eq!(lookout.watch_until(Some(answered), answered + WATCH_FOR / 2), Some(answered + WATCH_FOR));
        assert_eq!(lookout.watch_until(Some(answered), answered + WATCH_FOR), None, "the moment has passed");
        assert_eq!(lookout.watch_until(None, answered), None, "nothing answered yet");
    }

    #[test]
    fn does_not_watch_while_a_request_is_awaited() {
        let lookout = Lookout::always();
        lookout.awaited.insert_for_test([RequestId::Number(1)]);
        let answered = Instant::now();
        assert_eq!(lookout.watch_until(Some(answered), answered), None);
    }

    #[test]
    fn does_not_watch_on_a_single_core_or_when_off() {
        let answered = Instant::now();
        let single = Lookout { cores_to_spare: false, ..Lookout::always() };
        assert_eq!(single.watch_until(Some(answered), answered), None);
        assert_eq!(Lookout::off().watch_until(Some(answered), answered), None);
    }
}
