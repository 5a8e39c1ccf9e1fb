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
//! pool's threads need the cores), nor on a single core, where polling would only keep the client from running, nor
//! for a client whose last [`SLOW_REPLIES_TO_STOP`] requests each came later than [`QUICK_REPLY`] after our answer:
//! a watch would not have caught them, and would only have spent CPU (measured by a bug hunt before this rule: a
//! threaded Python client, which takes longer than 100 µs to reply, used twice the CPU per request and got no faster).
//! One slow reply is not enough, since a quick client is now and then held up by the machine. A slow client is
//! watched for again as soon as one of its requests comes quickly.

use super::pending::Pending;
use std::time::{Duration, Instant};

/// How long the server watches its input after answering before it sleeps: a fast client's turn-around, and at most
/// this much CPU spent per answer on a client that takes longer.
pub(super) const WATCH_FOR: Duration = Duration::from_micros(100);

/// The longest gap between an answer and the client's next request for the client to count as quick: the watch's
/// window, and room for the wake-up that the request met when the server was asleep instead of watching.
pub(super) const QUICK_REPLY: Duration = Duration::from_micros(150);

/// Slow replies in a row after which the server stops watching for a client.
pub(super) const SLOW_REPLIES_TO_STOP: u8 = 2;

/// Decides whether, and until when, the stdio server watches its input instead of sleeping.
#[derive(Debug, Clone)]
pub(super) struct Lookout {
    /// The requests the client is waiting on.
    awaited: Pending,
    /// Whether the process may run on more than one core.
    cores_to_spare: bool,
    /// The client's requests in a row, up to now, that came later than [`QUICK_REPLY`] after the answer before them.
    slow_replies: u8,
}

impl Lookout {
    /// A lookout for a client whose awaited requests are in `awaited`, on the cores this process may use.
    pub fn new(awaited: Pending) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Lookout { awaited, cores_to_spare: cores > 1, slow_replies: 0 }
    }

    /// A lookout that never watches.
    pub fn off() -> Self {
        Lookout { awaited: Pending::default(), cores_to_spare: false, slow_replies: 0 }
    }

    /// A lookout that watches after answers to a quick client, whatever the cores and the awaited requests.
    #[cfg(test)]
    pub fn always() -> Self {
        Lookout { awaited: Pending::default(), cores_to_spare: true, slow_replies: 0 }
    }

    /// Notes that a request arrived at `now`, after the last answer went out at `last_answer`: a request the client
    /// sent while waiting on nothing tells how quickly it replies.
    pub fn request_arrived(&mut self, last_answer: Option<Instant>, now: Instant) {
        if let Some(answered) = last_answer
            && self.awaited.count() == 0
        {
            let quick = now.saturating_duration_since(answered) <= QUICK_REPLY;
            self.slow_replies = if quick { 0 } else { self.slow_replies.saturating_add(1) };
        }
    }

    /// Until when to watch, given when the last answer went out: `None` when there is nothing to watch for (no answer
    /// yet, a request still awaited, a single core, a client that replies slowly) or the moment has passed.
    pub fn watch_until(&self, last_answer: Option<Instant>, now: Instant) -> Option<Instant> {
        let until = last_answer? + WATCH_FOR;
        let client_is_quick = self.slow_replies < SLOW_REPLIES_TO_STOP;
        let worth_it = self.cores_to_spare && client_is_quick && self.awaited.count() == 0;
        (worth_it && now < until).then_some(until)
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
    fn stops_watching_for_a_client_that_replies_slowly_until_it_replies_quickly_again() {
        let mut lookout = Lookout::always();
        let answered = Instant::now();
        let late = QUICK_REPLY + Duration::from_micros(1);
        lookout.request_arrived(Some(answered), answered + late);
        assert!(lookout.watch_until(Some(answered), answered).is_some(), "one slow reply may be the machine's");
        lookout.request_arrived(Some(answered), answered + late);
        let next = answered + Duration::from_millis(1);
        assert_eq!(lookout.watch_until(Some(next), next), None, "the last requests came too late to be caught");
        lookout.request_arrived(Some(next), next + QUICK_REPLY);
        let after = next + Duration::from_millis(1);
        assert_eq!(lookout.watch_until(Some(after), after), Some(after + WATCH_FOR), "quick again");
        // A request sent while another is awaited says nothing of the client's pace (a burst).
        lookout.awaited.insert_for_test([RequestId::Number(1)]);
        lookout.request_arrived(Some(after), after + Duration::from_secs(1));
        lookout.request_arrived(Some(after), after + Duration::from_secs(1));
        assert_eq!(lookout.slow_replies, 0);
    }

    #[test]
    fn does_not_watch_on_a_single_core_or_when_off() {
        let answered = Instant::now();
        let single = Lookout { cores_to_spare: false, ..Lookout::always() };
        assert_eq!(single.watch_until(Some(answered), answered), None);
        assert_eq!(Lookout::off().watch_until(Some(answered), answered), None);
    }
}
