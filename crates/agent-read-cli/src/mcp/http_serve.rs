//! The HTTP face's accept loop: each connection served by hyper's HTTP/1 connection, under three timeouts and one cap
//! that axum's own `serve` does not have.
//!
//! - A connection's state is watched (see [`Watch`]): waiting for a request (fresh, or idle after an answer), reading
//!   a request's head (from its first byte), or busy (a request is being answered, which has no time limit here:
//!   reads have their own). A fresh connection, or a head being read, is closed after `head_timeout`; an idle one
//!   after `idle_timeout`. So slow-header connections (slowloris) are closed within the head timeout. A request's
//!   body has its own timeout, applied where it is read (see `http.rs`).
//! - At most `max_connections` connections are served. One more is accepted and then waits for room; to make room,
//!   the connection waiting longest for a request is closed (nothing is lost: it is between requests). Further
//!   connections wait in the system's queue. So connections never take more file descriptors than the cap and a
//!   few, and the limit on descriptors is raised to fit the cap when it can be (see [`fit_descriptor_limit`]).
//! - TCP_NODELAY is set on every connection: without it a streamed answer waits on the client's delayed ACK (40 ms).
//! - On shutdown, no connection is accepted any more and every connection closes once its answer in progress is
//!   sent, waiting at most [`SHUTDOWN_GRACE`].

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::time::Instant;

/// How long shutdown waits for answers in progress before the server exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// File descriptors kept beyond the connections' for files being read, PDF workers and the audit log.
#[cfg(unix)]
const DESCRIPTOR_RESERVE: u64 = 256;

/// The timeouts and the cap of the accept loop.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConnectionLimits {
    pub head_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the connections finish (see the module's
/// documentation).
pub(super) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let room = Arc::new(Semaphore::new(limits.max_connections));
    let open = Arc::new(OpenConnections::default());
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let permit = match room.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                open.close_longest_waiting();
                tokio::select! {
                    permit = room.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection { open: open.clone(), router: router.clone(), limits, stopping: stopping.clone() };
        tokio::spawn(async move {
            connection.serve(stream).await;
            drop(permit);
        });
    }
    let _ = stop.send(true);
    let everyone = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, room.acquire_many(everyone)).await;
}

/// After a failed `accept`: a connection that failed before it was accepted is nothing to wait for; anything else
/// (out of file descriptors) is said, and accepting pauses a moment rather than spin.
async fn accept_failed(error: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    eprintln!("agent-read: cannot accept a connection: {error}; trying again in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One accepted connection and what it is served with.
struct Connection {
    open: Arc<OpenConnections>,
    router: axum::Router,
    limits: ConnectionLimits,
    stopping: watch::Receiver<bool>,
}

impl Connection {
    /// Serves the connection until it closes, times out, is closed to make room, or the server stops.
    async fn serve(mut self, stream: TcpStream) {
        let watch = self.open.add();
        let io = TokioIo::new(Watched { stream, watch: watch.clone() });
        let service = PerConnection { router: self.router.clone(), watch: watch.clone() };
        let connection = hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(io, service);
        tokio::pin!(connection);
        let mut shutting_down = false;
        loop {
            let deadline = watch.deadline(&self.limits);
            tokio::select! {
                _ = connection.as_mut() => break,
                () = watch.changed.notified() => {}
                () = sleep_until(deadline) => {
                    if watch.deadline(&self.limits).is_some_and(|due| due <= Instant::now()) {
                        break;
                    }
                }
                _ = self.stopping.wait_for(|stop| *stop), if !shutting_down => {
                    shutting_down = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
            if watch.evicted.load(Ordering::Acquire) {
                break;
            }
        }
        self.open.remove(watch.id);
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Where a connection is between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request's first byte: since it opened (`fresh`), or since its last answer was sent.
    Waiting { since: Instant, fresh: bool },
    /// A request's head has begun to arrive.
    Head { since: Instant },
    /// This many requests are being answered (HTTP/1: one, but the count does not rely on it).
    Busy(u32),
}

/// A connection's phase, shared by its reads, its service and its driver.
struct Watch {
    id: u64,
    phase: Mutex<Phase>,
    /// Told of every change of phase, and of eviction.
    changed: Notify,
    /// Set to close the connection to make room for another.
    evicted: AtomicBool,
}

impl Watch {
    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn set(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *phase = change(*phase);
        drop(phase);
        self.changed.notify_one();
    }

    /// When the connection is to be closed unless its phase changes first.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        match self.phase() {
            Phase::Waiting { since, fresh: true } | Phase::Head { since } => since.checked_add(limits.head_timeout),
            Phase::Waiting { since, fresh: false } => since.checked_add(limits.idle_timeout),
            Phase::Busy(_) => None,
        }
    }

    /// Bytes arrived: a request's head begins, unless one was already under way.
    fn bytes_arrived(&self) {
        if matches!(self.phase(), Phase::Waiting { .. }) {
            self.set(|phase| match phase {
                Phase::Waiting { .. } => Phase::Head { since: Instant::now() },
                other => other,
            });
        }
    }

    fn request_began(&self) {
        self.set(|phase| match phase {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        });
    }

    fn request_ended(&self) {
        self.set(|phase| match phase {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Waiting { since: Instant::now(), fresh: false },
        });
    }
}

/// The connections open, to find one to close when room is needed.
#[derive(Default)]
struct OpenConnections {
    next_id: AtomicU64,
    watches: Mutex<HashMap<u64, Arc<Watch>>>,
}

impl OpenConnections {
    fn add(&self) -> Arc<Watch> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let phase = Phase::Waiting { since: Instant::now(), fresh: true };
        let watch =
            Arc::new(Watch { id, phase: Mutex::new(phase), changed: Notify::new(), evicted: AtomicBool::new(false) });
        self.lock().insert(id, watch.clone());
        watch
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Closes the connection that has waited longest for a request, if any is waiting.
    fn close_longest_waiting(&self) {
        let watches = self.lock();
        let waiting = watches.values().filter(|watch| !watch.evicted.load(Ordering::Acquire)).filter_map(|watch| {
            match watch.phase() {
                Phase::Waiting { since, .. } => Some((since, watch)),
                _ => None,
            }
        });
        if let Some((_, watch)) = waiting.min_by_key(|(since, _)| *since) {
            watch.evicted.store(true, Ordering::Release);
            watch.changed.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Watch>>> {
        self.watches.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The router, for one connection: each request marks the connection busy until its answer has been sent.
struct PerConnection {
    router: axum::Router,
    watch: Arc<Watch>,
}

/// Marks its connection's request ended when dropped: with the answer's body once sent, or with the request if it
/// is abandoned first.
struct RequestInProgress(Arc<Watch>);

impl Drop for RequestInProgress {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

impl hyper::service::Service<axum::http::Request<Incoming>> for PerConnection {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: axum::http::Request<Incoming>) -> Self::Future {
        use tower_service::Service;
        self.watch.request_began();
        let in_progress = RequestInProgress(self.watch.clone());
        let mut router = self.router.clone();
        Box::pin(async move {
            // A router is always ready: it needs no `poll_ready` before a call.
            let answer = router.call(request.map(axum::body::Body::new)).await?;
            Ok(answer.map(|body| axum::body::Body::new(UntilSent { body, _in_progress: in_progress })))
        })
    }
}

/// An answer's body, keeping its request in progress until the body is dropped (sent, or abandoned). Its length,
/// when known, stays known (so the answer keeps its `Content-Length`).
struct UntilSent {
    body: axum::body::Body,
    _in_progress: RequestInProgress,
}

impl hyper::body::Body for UntilSent {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket, telling its watch when bytes arrive.
struct Watched {
    stream: TcpStream,
    watch: Arc<Watch>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.watch.bytes_arrived();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The most connections that can be served with the file descriptors this process may open: the soft limit is
/// raised (up to the hard one) to fit `wanted` connections and a reserve for everything else; when it cannot be,
/// fewer connections are served, and that is said.
#[cfg(unix)]
pub(super) fn fit_descriptor_limit(wanted: usize) -> usize {
    let needed = wanted as u64 + DESCRIPTOR_RESERVE;
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through the pointer, which points to one.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return wanted;
    }
    if wide(limit.rlim_cur) < needed {
        let wanted = needed.min(wide(limit.rlim_max));
        // macOS refuses a soft limit above OPEN_MAX (10240, <sys/syslimits.h>), whatever the hard limit says.
        #[cfg(target_os = "macos")]
        let wanted = wanted.min(10_240);
        let raised = libc::rlimit { rlim_cur: libc::rlim_t::try_from(wanted).unwrap_or(limit.rlim_max), ..limit };
        // SAFETY: setrlimit reads one rlimit through the pointer, which points to one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    let room = wide(limit.rlim_cur).saturating_sub(DESCRIPTOR_RESERVE).max(1);
    if room >= wanted as u64 {
        return wanted;
    }
    eprintln!(
        "agent-read: serving at most {room} connections, not {wanted} (http.max_connections): this process may open \
         {} files; raise that limit (ulimit -n) or lower the cap",
        limit.rlim_cur
    );
    usize::try_from(room).unwrap_or(wanted)
}

/// A limit as a `u64`: `rlim_t` is 64 bits wide on the usual systems, and narrower on some.
#[cfg(unix)]
#[allow(clippy::useless_conversion)]
fn wide(limit: libc::rlim_t) -> u64 {
    u64::from(limit)
}

/// Windows sets no per-process limit on sockets or handles that a server of this size could reach.
#[cfg(not(unix))]
pub(super) fn fit_descriptor_limit(wanted: usize) -> usize {
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_connections: 4,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_timed_by_what_it_waits_for() {
        let open = OpenConnections::default();
        let watch = open.add();
        let opened = Instant::now();
        assert_eq!(watch.deadline(&limits()), Some(opened + Duration::from_secs(10)), "fresh: the head timeout");
        tokio::time::advance(Duration::from_secs(3)).await;
        watch.bytes_arrived();
        assert_eq!(watch.deadline(&limits()), Some(opened + Duration::from_secs(13)), "from the first byte");
        watch.bytes_arrived();
        assert_eq!(watch.deadline(&limits()), Some(opened + Duration::from_secs(13)), "later bytes do not extend it");
        watch.request_began();
        assert_eq!(watch.deadline(&limits()), None, "an answer in progress has no deadline here");
        tokio::time::advance(Duration::from_secs(100)).await;
        watch.request_ended();
        assert_eq!(watch.deadline(&limits()), Some(Instant::now() + Duration::from_secs(30)), "idle: idle timeout");
    }

    #[tokio::test(start_paused = true)]
    async fn room_is_made_by_closing_the_connection_waiting_longest_never_a_busy_one() {
        let open = OpenConnections::default();
        let (oldest_busy, older, newer) = (open.add(), open.add(), open.add());
        oldest_busy.request_began();
        tokio::time::advance(Duration::from_secs(1)).await;
        older.request_began();
        older.request_ended();
        tokio::time::advance(Duration::from_secs(1)).await;
        newer.request_began();
        newer.request_ended();
        open.close_longest_waiting();
        let evicted = |watch: &Watch| watch.evicted.load(Ordering::Acquire);
        assert!(!evicted(&oldest_busy) && evicted(&older) && !evicted(&newer));
        open.close_longest_waiting();
        assert!(!evicted(&oldest_busy) && evicted(&newer));
        open.close_longest_waiting();
        assert!(!evicted(&oldest_busy), "a busy connection is never closed to make room");
    }
}
