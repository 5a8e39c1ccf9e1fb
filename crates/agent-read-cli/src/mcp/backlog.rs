//! Backpressure over stdio: what the server owes a client that does not read its answers stays bounded.
//!
//! A client may write requests without ever reading an answer. rmcp takes every request the transport hands it and
//! holds every answer until it is written, so such a client once grew the server without bound (4,000 unread reads:
//! 472 MB). The [`Backlog`] counts what is owed, and the server stops where it is too much:
//!
//! - the transport reads no further request while [`MAX_UNANSWERED`] requests await their answer (received, neither
//!   answered in full nor cancelled) or those requests hold [`MAX_UNANSWERED_BYTES`] (a waiting request keeps its
//!   arguments, and a line may hold 16 MiB), or while answers of [`MAX_UNWRITTEN_BYTES`] or more wait to be written;
//! - a read does not start while those answers wait (checked once it has its slot, so at most the slots' worth of
//!   reads run past the bound), so that requests already taken do not pile up answers too.
//!
//! Standard input then fills, and the client's writes block until it reads; as answers drain, reading resumes. Nothing
//! is dropped: every request taken is answered. The time the server spends stalled so is kept ([`Backlog::stalled`])
//! and not spent from the time budgets of the reads that waited through it: their wait was the client's doing. The bounds leave a client that reads as it writes untouched: 1,024
//! requests in flight is far more than the 16 reads it may run at once.

use super::ReadServer;
use rmcp::model::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Requests that may await their answer before the server stops reading.
pub(super) const MAX_UNANSWERED: usize = 256;

/// Bytes (as received) of the requests awaiting their answer before the server stops reading.
pub(super) const MAX_UNANSWERED_BYTES: usize = 32 << 20;

/// Bytes of answers that may wait to be written (or be in the making) before the server stops reading and starts
/// no read.
pub(super) const MAX_UNWRITTEN_BYTES: usize = 8 << 20;

/// What a stdio client is owed. Cloned handles share it.
#[derive(Debug, Clone, Default)]
pub(super) struct Backlog(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Told whenever something owed is settled.
    settled: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Requests received whose answers are not yet written in full (nor the requests cancelled), with their sizes.
    unanswered: HashMap<RequestId, usize>,
    /// The sum of those sizes.
    unanswered_bytes: usize,
    /// Bytes of encoded answers not yet written.
    unwritten_bytes: usize,
    /// Room held for answers in the making, by request, until the answer is encoded (or the request cancelled).
    reserved: HashMap<RequestId, usize>,
    /// The sum of `reserved`.
    reserved_bytes: usize,
    /// Reads waiting for room.
    waiting: usize,
    /// How long reads waited for room, up to `stalled_since`.
    stalled: Duration,
    /// Since when reads wait for room, while they do.
    stalled_since: Option<Instant>,
}

impl State {
    fn room_for_requests(&self) -> bool {
        self.unanswered.len() < MAX_UNANSWERED
            && self.unanswered_bytes < MAX_UNANSWERED_BYTES
            && self.unwritten_bytes < MAX_UNWRITTEN_BYTES
    }

    fn answered(&mut self, id: &RequestId) {
        if let Some(bytes) = self.unanswered.remove(id) {
            self.unanswered_bytes -= bytes;
        }
    }

    /// Whether an answer of `bytes` for `id` fits beside what is owed (always, when nothing else is).
    fn fits(&self, id: &RequestId, bytes: usize) -> bool {
        let others = self.unwritten_bytes + self.reserved_bytes - self.reserved.get(id).copied().unwrap_or(0);
        others == 0 || others + bytes <= MAX_UNWRITTEN_BYTES
    }

    fn hold(&mut self, id: &RequestId, bytes: usize) {
        self.release(id);
        self.reserved.insert(id.clone(), bytes);
        self.reserved_bytes += bytes;
    }

    fn release(&mut self, id: &RequestId) {
        if let Some(bytes) = self.reserved.remove(id) {
            self.reserved_bytes -= bytes;
        }
    }

    /// One more read waits for room (`more`), or one fewer, keeping the stopwatch of stalls.
    fn wait(&mut self, more: bool) {
        if more {
            self.waiting += 1;
            self.stalled_since.get_or_insert_with(Instant::now);
            return;
        }
        self.waiting -= 1;
        if self.waiting == 0
            && let Some(since) = self.stalled_since.take()
        {
            self.stalled += since.elapsed();
        }
    }
}

impl Backlog {
    /// Notes a request of `bytes` received.
    pub fn taken(&self, id: RequestId, bytes: usize) {
        let mut state = self.state();
        state.answered(&id);
        state.unanswered.insert(id, bytes);
        state.unanswered_bytes += bytes;
    }

    /// Notes that the request `id` is owed nothing more: its answer is written, or it was cancelled.
    pub fn settled(&self, id: &RequestId) {
        let mut state = self.state();
        state.release(id);
        state.answered(id);
        drop(state);
        self.0.settled.notify_waiters();
    }

    /// Notes an answer of `bytes` waiting to be written, and whose request it answers (whose room held is given
    /// back: the answer's own bytes count from now on); both are settled when the returned guard is dropped (once
    /// written, or when the write is abandoned).
    pub fn queued(&self, bytes: usize, answers: Option<RequestId>) -> Queued {
        let mut state = self.state();
        state.unwritten_bytes += bytes;
        if let Some(id) = &answers {
            state.release(id);
        }
        drop(state);
        self.0.settled.notify_waiters();
        Queued { backlog: self.clone(), bytes, answers }
    }

    /// Holds room for an answer of `bytes` to `id`, waiting until it fits.
    pub async fn reserve(&self, id: &RequestId, bytes: usize) {
        let mut waiting = None;
        loop {
            let settled = self.0.settled.notified();
            tokio::pin!(settled);
            // Registered before the check, so that a settlement between the two is not missed.
            settled.as_mut().enable();
            {
                let mut state = self.state();
                if state.fits(id, bytes) {
                    state.hold(id, bytes);
                    drop(state);
                    drop(waiting);
                    return;
                }
                if waiting.is_none() {
                    state.wait(true);
                    waiting = Some(Waiting(self.clone()));
                }
            }
            settled.await;
        }
    }

    /// Waits until another request may be read.
    pub async fn room_for_requests(&self) {
        loop {
            let settled = self.0.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if self.state().room_for_requests() {
                return;
            }
            settled.await;
        }
    }

    /// How long, in all, reads have waited for room; a clock that runs only then.
    pub fn stalled(&self) -> Duration {
        let state = self.state();
        state.stalled + state.stalled_since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Each update is a few sums and one insert or removal: a panic elsewhere cannot leave it half-done.
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A read waiting for room: counted for the stopwatch of stalls until dropped (it got room, or was cancelled).
struct Waiting(Backlog);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.state().wait(false);
    }
}

/// An answer waiting to be written (see [`Backlog::queued`]).
#[derive(Debug)]
pub(super) struct Queued {
    backlog: Backlog,
    bytes: usize,
    answers: Option<RequestId>,
}

impl Drop for Queued {
    fn drop(&mut self) {
        let mut state = self.backlog.state();
        state.unwritten_bytes -= self.bytes;
        if let Some(id) = &self.answers {
            state.answered(id);
        }
        drop(state);
        self.backlog.0.settled.notify_waiters();
    }
}

/// A call as its read needs it: when it arrived (see [`ReadServer::arrival`]), and its id, under which room is held
/// for its answer.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub arrived: Instant,
    pub id: Option<RequestId>,
}

impl ReadServer {
    /// When a call arrives, as its time budget counts: over stdio, on a clock that stands still while reads wait for
    /// room (the client leaves its answers unread: its own doing, not the server's); the instant the budget then
    /// starts from is [`ReadServer::budget_start`].
    pub(super) fn arrival(&self) -> Instant {
        let now = Instant::now();
        now.checked_sub(self.stalled()).unwrap_or(now)
    }

    /// The instant a read's time budget counts from, for a call that arrived at `arrived` (see
    /// [`ReadServer::arrival`]).
    pub(super) fn budget_start(&self, arrived: Instant) -> Instant {
        arrived + self.stalled()
    }

    fn stalled(&self) -> Duration {
        self.backlog.as_ref().map_or(Duration::ZERO, Backlog::stalled)
    }

    /// Holds room for `call`'s answer, waiting until it fits (at once over HTTP).
    pub(super) async fn room(&self, call: &Call) {
        if let (Some(backlog), Some(id)) = (&self.backlog, &call.id) {
            backlog.reserve(id, self.answer_estimate()).await;
        }
    }

    /// The room an answer is given before it is made: its text twice (as text and in the structured result) and
    /// some for the rest. An answer that turns out bigger (an image) counts its real size once encoded.
    fn answer_estimate(&self) -> usize {
        2 * self.configured.limits().max_output_bytes + (8 << 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ready(wait: impl Future<Output = ()>) -> bool {
        tokio::time::timeout(Duration::from_millis(50), wait).await.is_ok()
    }

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[tokio::test]
    async fn reading_stops_at_the_bound_of_unanswered_requests_and_resumes_as_they_settle() {
        let backlog = Backlog::default();
        for n in 0..MAX_UNANSWERED as i64 {
            backlog.taken(id(n), 100);
        }
        assert!(!ready(backlog.room_for_requests()).await);
        let waiting = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.room_for_requests().await }
        });
        drop(backlog.queued(100, Some(id(0))));
        tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("woken").unwrap();
        backlog.taken(id(0), 100);
        backlog.settled(&id(1));
        assert!(ready(backlog.room_for_requests()).await, "a cancelled request settles too");
    }

    #[tokio::test]
    async fn reading_stops_while_the_requests_awaiting_answers_are_too_big() {
        let backlog = Backlog::default();
        backlog.taken(id(1), MAX_UNANSWERED_BYTES / 2);
        assert!(ready(backlog.room_for_requests()).await);
        backlog.taken(id(2), MAX_UNANSWERED_BYTES / 2);
        assert!(!ready(backlog.room_for_requests()).await);
        backlog.taken(id(2), 10);
        assert!(ready(backlog.room_for_requests()).await, "an id taken again counts once");
        backlog.taken(id(3), MAX_UNANSWERED_BYTES);
        backlog.settled(&id(3));
        assert!(ready(backlog.room_for_requests()).await);
    }

    #[tokio::test]
    async fn answers_in_the_making_or_unwritten_hold_room_until_written() {
        let backlog = Backlog::default();
        let half = MAX_UNWRITTEN_BYTES / 2;
        assert!(ready(backlog.reserve(&id(1), half)).await && ready(backlog.reserve(&id(2), half)).await);
        assert!(!ready(backlog.reserve(&id(3), 1)).await, "the room is held");
        assert!(ready(backlog.reserve(&id(2), half)).await, "holding again for the same request replaces its room");
        // Encoded, an answer counts its own bytes, and reading stops while they wait to be written.
        let first = backlog.queued(MAX_UNWRITTEN_BYTES, Some(id(1)));
        assert!(!ready(backlog.room_for_requests()).await);
        backlog.settled(&id(2));
        assert!(!ready(backlog.reserve(&id(3), 1)).await);
        drop(first);
        assert!(ready(backlog.reserve(&id(3), 1)).await && ready(backlog.room_for_requests()).await);
        // When nothing else is owed, any answer fits, however big.
        backlog.settled(&id(3));
        assert!(ready(backlog.reserve(&id(4), 4 * MAX_UNWRITTEN_BYTES)).await);
    }

    #[tokio::test]
    async fn the_clock_of_stalls_runs_only_while_a_read_waits_for_room() {
        let backlog = Backlog::default();
        assert_eq!(backlog.stalled(), Duration::ZERO);
        let full = backlog.queued(MAX_UNWRITTEN_BYTES, None);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(backlog.stalled(), Duration::ZERO, "nothing waits yet");
        assert!(!ready(backlog.reserve(&id(1), 1)).await);
        let stalled = backlog.stalled();
        assert!(stalled >= Duration::from_millis(50), "{stalled:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(backlog.stalled(), stalled, "the waiting read was dropped: the clock stands still");
        drop(full);
        assert!(ready(backlog.reserve(&id(1), 1)).await);
    }
}
