//! Caps on what HTTP clients hold: MCP sessions, and calls under way in one session.
//!
//! rmcp's session manager keeps every session until it has been idle five minutes, however many there are: 20,000
//! `initialize` requests in a few seconds held 20,000 servers. [`CappedSessions`] wraps it and keeps, for each
//! session, when it was last used and how many of its calls are under way. A new session is created while there are
//! fewer than the cap; at the cap, the longest-idle session without a call under way is ended to make room, and when
//! every session has one, the new session is refused. A session's calls beyond its cap are refused rather than wait
//! in an unbounded line. Both are decided here, where rmcp asks for a session or a call's stream — after it has
//! checked the request's `Host` and `Origin`, so a refused page can neither end a session nor learn of one — and the
//! refusal is noted for the HTTP wrapper (see [`noting_refusals`]), which answers `503` or `429` with `Retry-After`.

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{EventStore, RestoreOutcome};
use std::cell::Cell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

/// Why a request was refused here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The session cap is reached and every session has a call under way.
    NoRoomForASession,
    /// The session has its most calls under way.
    TooManyCalls,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::NoRoomForASession => "no room for another session",
            Refused::TooManyCalls => "too many calls under way in this session",
        })
    }
}

tokio::task_local! {
    /// The refusal made while serving the request this task serves (rmcp asks for sessions and streams from within
    /// the request's own future).
    static REFUSAL: Cell<Option<Refused>>;
}

/// Runs `serve` (rmcp's handling of one request), and says whether a cap refused it.
pub(super) async fn noting_refusals<T>(serve: impl Future<Output = T>) -> (T, Option<Refused>) {
    REFUSAL
        .scope(Cell::new(None), async move {
            let output = serve.await;
            (output, REFUSAL.with(Cell::get))
        })
        .await
}

/// Notes a refusal for [`noting_refusals`], and returns it as the error rmcp passes on.
fn refuse<E>(refused: Refused) -> CappedError<E> {
    let _ = REFUSAL.try_with(|cell| cell.set(Some(refused)));
    CappedError::Refused(refused)
}

/// rmcp's manager's errors, and the refusals of the caps.
#[derive(Debug)]
pub(super) enum CappedError<E> {
    Inner(E),
    Refused(Refused),
}

impl<E: std::fmt::Display> std::fmt::Display for CappedError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CappedError::Inner(e) => e.fmt(f),
            CappedError::Refused(refused) => refused.fmt(f),
        }
    }
}

impl<E: std::error::Error> std::error::Error for CappedError<E> {}

/// rmcp's in-memory sessions, capped. Generic so that rmcp's own manager is called through the trait, whose
/// streams are `Sync` (its inherent methods do not say so).
pub(super) struct CappedSessions<M = LocalSessionManager> {
    inner: M,
    max_sessions: usize,
    max_calls: usize,
    usage: Arc<Mutex<Usage>>,
}

/// What the sessions are doing.
#[derive(Default)]
struct Usage {
    sessions: HashMap<SessionId, SessionUse>,
    /// Sessions being created, counted against the cap before they exist.
    creating: usize,
}

/// One session's use.
struct SessionUse {
    last_used: Instant,
    calls: usize,
}

/// Locks what the sessions are doing (its critical sections cannot leave it inconsistent).
fn lock(usage: &Mutex<Usage>) -> std::sync::MutexGuard<'_, Usage> {
    usage.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl CappedSessions {
    pub(super) fn new(max_sessions: usize, max_calls: usize) -> Self {
        CappedSessions { inner: LocalSessionManager::default(), max_sessions, max_calls, usage: Arc::default() }
    }
}

impl<M: SessionManager> CappedSessions<M> {
    /// Room for one more session: counts it as being created, after ending the longest-idle session without a call
    /// under way when the cap is reached; the session that was ended, if any.
    fn make_room(&self) -> Result<Option<SessionId>, Refused> {
        let mut usage = lock(&self.usage);
        let ended = if usage.sessions.len() + usage.creating < self.max_sessions {
            None
        } else {
            let idle = usage.sessions.iter().filter(|(_, session)| session.calls == 0);
            let longest_idle = idle.min_by_key(|(_, session)| session.last_used).map(|(id, _)| id.clone());
            let id = longest_idle.ok_or(Refused::NoRoomForASession)?;
            usage.sessions.remove(&id);
            Some(id)
        };
        usage.creating += 1;
        Ok(ended)
    }

    /// A call starting in session `id`, or its refusal when the session has its most calls under way (an unknown
    /// session is rmcp's to answer).
    fn start_call(&self, id: &SessionId) -> Result<Option<CallUnderWay>, Refused> {
        let mut usage = lock(&self.usage);
        let Some(session) = usage.sessions.get_mut(id) else { return Ok(None) };
        if session.calls >= self.max_calls {
            return Err(Refused::TooManyCalls);
        }
        session.calls += 1;
        session.last_used = Instant::now();
        Ok(Some(CallUnderWay { usage: self.usage.clone(), id: id.clone() }))
    }

    /// Session `id` was used.
    fn used(&self, id: &SessionId) {
        if let Some(session) = lock(&self.usage).sessions.get_mut(id) {
            session.last_used = Instant::now();
        }
    }
}

/// A session being created, counted against the cap until dropped (created, failed, or abandoned).
struct Creating<'a>(&'a Mutex<Usage>);

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        let mut usage = lock(self.0);
        usage.creating = usage.creating.saturating_sub(1);
    }
}

/// A call under way in a session; ends when dropped (with its answer's stream).
struct CallUnderWay {
    usage: Arc<Mutex<Usage>>,
    id: SessionId,
}

impl Drop for CallUnderWay {
    fn drop(&mut self) {
        if let Some(session) = lock(&self.usage).sessions.get_mut(&self.id) {
            session.calls = session.calls.saturating_sub(1);
            session.last_used = Instant::now();
        }
    }
}

/// A call's answer stream, holding the call's place until the stream is dropped (answered, or abandoned).
struct Counted<S> {
    stream: Pin<Box<S>>,
    _call: Option<CallUnderWay>,
}

impl<S: Stream> Stream for Counted<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl<M: SessionManager> SessionManager for CappedSessions<M> {
    type Error = CappedError<M::Error>;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let ended = self.make_room().map_err(refuse)?;
        if let Some(id) = ended {
            // Its server and event streams end with it; a client that comes back with its id is told it is gone.
            let _ = self.inner.close_session(&id).await;
        }
        let _creating = Creating(&self.usage);
        let (id, transport) = self.inner.create_session().await.map_err(CappedError::Inner)?;
        lock(&self.usage).sessions.insert(id.clone(), SessionUse { last_used: Instant::now(), calls: 0 });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await.map_err(CappedError::Inner)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await.map_err(CappedError::Inner)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.usage).sessions.remove(id);
        self.inner.close_session(id).await.map_err(CappedError::Inner)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let call = self.start_call(id).map_err(refuse)?;
        let stream = self.inner.create_stream(id, message).await.map_err(CappedError::Inner)?;
        Ok(Counted { stream: Box::pin(stream), _call: call })
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.used(id);
        self.inner.accept_message(id, message).await.map_err(CappedError::Inner)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.used(id);
        self.inner.create_standalone_stream(id).await.map_err(CappedError::Inner)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.used(id);
        self.inner.resume(id, last_event_id).await.map_err(CappedError::Inner)
    }

    async fn restore_session(&self, _id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Sessions live in this process only: one that is gone stays gone.
        Ok(RestoreOutcome::NotSupported)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn create(sessions: &CappedSessions, count: usize) -> Vec<SessionId> {
        let mut ids = Vec::new();
        for _ in 0..count {
            ids.push(sessions.create_session().await.expect("room").0);
        }
        ids
    }

    fn holds(sessions: &CappedSessions, id: &SessionId) -> bool {
        lock(&sessions.usage).sessions.contains_key(id)
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_session_makes_room_and_busy_ones_never_do() {
        let sessions = CappedSessions::new(3, 2);
        let ids = create(&sessions, 3).await;
        let _call = sessions.start_call(&ids[0]).unwrap().expect("held");
        sessions.used(&ids[1]);
        let fourth = create(&sessions, 1).await;
        assert!(holds(&sessions, &ids[0]) && holds(&sessions, &ids[1]) && !holds(&sessions, &ids[2]));
        assert!(!sessions.inner.has_session(&ids[2]).await.unwrap(), "rmcp's session ended too");
        let _second = sessions.start_call(&ids[1]).unwrap().expect("held");
        let _third = sessions.start_call(&fourth[0]).unwrap().expect("held");
        let ((), refused) = noting_refusals(async {
            assert!(matches!(sessions.create_session().await, Err(CappedError::Refused(Refused::NoRoomForASession))));
        })
        .await;
        assert_eq!(refused, Some(Refused::NoRoomForASession), "noted for the HTTP answer");
        assert_eq!(lock(&sessions.usage).sessions.len(), 3);
    }

    #[tokio::test]
    async fn a_session_runs_at_most_its_cap_of_calls_and_a_finished_call_frees_its_place() {
        let sessions = CappedSessions::new(3, 2);
        let ids = create(&sessions, 1).await;
        let first = sessions.start_call(&ids[0]).unwrap().expect("held");
        let _second = sessions.start_call(&ids[0]).unwrap().expect("held");
        assert_eq!(sessions.start_call(&ids[0]).err(), Some(Refused::TooManyCalls));
        drop(first);
        assert!(sessions.start_call(&ids[0]).unwrap().is_some());
        assert!(sessions.start_call(&"unknown".into()).unwrap().is_none());
    }

    #[tokio::test]
    async fn a_closed_session_is_forgotten_and_its_room_reused() {
        let sessions = CappedSessions::new(1, 1);
        let ids = create(&sessions, 1).await;
        let _busy = sessions.start_call(&ids[0]).unwrap().expect("held");
        sessions.close_session(&ids[0]).await.unwrap();
        assert!(lock(&sessions.usage).sessions.is_empty());
        assert_eq!(create(&sessions, 1).await.len(), 1);
    }
}
