//! Gives freed heap memory back to the system once the server goes quiet.
//!
//! Both transports use the trim and the short-lived blocking threads; only HTTP pins the trim threshold (below). Over
//! stdio the trim took the idle resident size from 26–30 MiB to 14 MiB and kept it flat over five bursts, where it had
//! grown by 2–5.5 MiB, with no change in the burst's latency (BENCHMARKS.md, "stdio memory").
//!
//! A burst of a thousand connections makes glibc's allocator spread buffers over several per-thread arenas. When the
//! burst is over the memory is free, but glibc keeps most of it mapped, so the resident size climbs from burst to
//! burst before it levels off (measured: +20 MiB over five bursts in session mode, +40 MiB stateless). Three things
//! together keep it flat (BENCHMARKS.md, "HTTP memory: flat after the first burst"):
//!
//! - After [`QUIET`] with no request arriving and no read finishing, `malloc_trim` hands the free pages back. It runs
//!   off the async workers, and only after a quiet period, so a busy server never pays for it.
//! - The blocking threads that run the reads exit after [`BLOCKING_KEEP_ALIVE`] idle, shorter than [`QUIET`]. Each
//!   thread keeps a cache of freed small blocks (glibc's tcache, up to 7 per size class) that `malloc_trim` cannot
//!   reach, and every cached block pins its page. The caches of 19 threads filled up a little more with every burst:
//!   1.8 MiB after the warm-up, 4.0 MiB after six bursts, most of the growth that was left. A thread that exits hands
//!   its cache back, so the trim that follows can release those pages.
//! - [`pin_trim_threshold`] stops glibc from raising its trim threshold. `malloc_trim` never shrinks the free top of an
//!   arena other than the main one; only a `free` that leaves the top above the threshold does, and glibc raises the
//!   threshold (up to 64 MiB) after freeing one large block. In session mode it rose to 376 KiB and the arenas' tops
//!   kept 0.6–1.3 MiB more after five bursts.
//!
//! On other allocators the trim does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
// Tokio's clock (the system's, unless a test pauses it), so that tests can let the quiet period pass at once.
use tokio::time::Instant;

/// How long the server must see no new request and no finished read before it trims. Memory given back is taken
/// again, a page fault at a time, by the next burst: after a trim a burst of 1,000 HTTP reads took 11–46% longer
/// (BENCHMARKS.md, "Memory given back after ten quiet seconds"). Ten seconds spans the pauses between an agent's
/// turns and a busy server's lulls, and still gives memory back soon after the work is over.
const QUIET: Duration = Duration::from_secs(10);

/// How long an idle blocking thread lives: shorter than [`QUIET`], so that the threads that ran the last reads have
/// exited, and handed back their caches, by the time the trim runs.
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_millis(750);

/// Records when the server was last busy, so that a background task can tell when it has gone quiet.
#[derive(Debug, Clone)]
pub struct Activity {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    origin: Instant,
    /// Milliseconds from `origin` to the latest activity.
    last_ms: AtomicU64,
    /// Wakes the trim task, which sleeps without a timer while nothing happens.
    woken: Notify,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            shared: Arc::new(Shared { origin: Instant::now(), last_ms: AtomicU64::new(0), woken: Notify::new() }),
        }
    }
}

impl Activity {
    /// Records that a request arrived or a read finished.
    pub fn record(&self) {
        self.shared.last_ms.store(self.now_ms(), Ordering::Relaxed);
        self.shared.woken.notify_one();
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.shared.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Milliseconds from this activity's creation to the latest record.
    pub(super) fn last_ms(&self) -> u64 {
        self.shared.last_ms.load(Ordering::Relaxed)
    }

    /// Runs forever on the current runtime: once [`QUIET`] has passed after some activity, trims once.
    pub async fn trim_when_quiet(self) {
        self.run_when_quiet(release_free_memory).await;
    }

    /// Runs `trim` on the blocking pool once [`QUIET`] has passed after some activity, and again only after new
    /// activity has gone quiet.
    async fn run_when_quiet(self, trim: impl Fn() + Clone + Send + 'static) {
        let mut trimmed_after = None;
        loop {
            self.shared.woken.notified().await;
            let last = loop {
                let last = self.last_ms();
                match quiet_left(last, self.now_ms()) {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => break last,
                }
            };
            // Activity during the previous wait leaves a wake-up behind; nothing new happened since that trim.
            if trimmed_after == Some(last) {
                continue;
            }
            trimmed_after = Some(last);
            // A trim walks every arena: not on an async worker.
            let _ = tokio::task::spawn_blocking(trim.clone()).await;
        }
    }
}

/// How much longer the server must stay quiet before it trims, or `None` once [`QUIET`] has passed since the last
/// activity (both in milliseconds from the same origin).
fn quiet_left(last_ms: u64, now_ms: u64) -> Option<Duration> {
    let quiet_ms = u64::try_from(QUIET.as_millis()).unwrap_or(u64::MAX);
    let since = now_ms.saturating_sub(last_ms);
    (since < quiet_ms).then(|| Duration::from_millis(quiet_ms - since))
}

/// Keeps glibc's trim threshold at its default (128 KiB) for the life of the HTTP server; call before its threads
/// start. Pinning it also pins the mmap threshold, so blocks of 128 KiB or more are mapped and unmapped each time:
/// reads work in 64 KiB chunks and answers are capped at 50 KiB by default, so only rare large blocks pay for that.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn pin_trim_threshold() {
    // SAFETY: mallopt only sets the allocator's own parameters, under its locks; it takes no pointer from us.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// Other allocators have no such threshold.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn pin_trim_threshold() {}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: malloc_trim only walks the allocator's own arenas, under their locks; it takes no pointer from us.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    #[test]
    fn trims_only_once_the_quiet_period_has_passed() {
        assert_eq!(quiet_left(1_000, 1_000), Some(QUIET), "activity just now");
        assert_eq!(quiet_left(1_000, 1_400), Some(QUIET - Duration::from_millis(400)));
        let quiet_ms = u64::try_from(QUIET.as_millis()).unwrap();
        assert_eq!(quiet_left(1_000, 1_000 + quiet_ms), None, "quiet for the whole period");
        assert_eq!(quiet_left(2_000, 1_000), Some(QUIET), "a clock read before the activity was stored");
    }

    #[tokio::test(start_paused = true)]
    async fn trims_once_the_server_has_been_quiet_ten_seconds_and_again_only_after_new_activity() {
        use std::sync::atomic::AtomicUsize;
        let trims = Arc::new(AtomicUsize::new(0));
        let count = trims.clone();
        let activity = Activity::default();
        tokio::spawn(activity.clone().run_when_quiet(move || _ = count.fetch_add(1, Ordering::SeqCst)));
        let trimmed = || trims.load(Ordering::SeqCst);
        let margin = Duration::from_millis(100);
        assert_eq!(QUIET, Duration::from_secs(10));

        activity.record();
        tokio::time::sleep(QUIET - margin).await;
        assert_eq!(trimmed(), 0, "not before the quiet period has passed");
        // A request in the meantime starts the quiet period over.
        activity.record();
        tokio::time::sleep(QUIET - margin).await;
        assert_eq!(trimmed(), 0, "activity postponed the trim");
        tokio::time::sleep(2 * margin).await;
        assert_eq!(trimmed(), 1, "quiet since the last activity");
        tokio::time::sleep(3 * QUIET).await;
        assert_eq!(trimmed(), 1, "nothing new to give back");

        activity.record();
        tokio::time::sleep(QUIET + margin).await;
        assert_eq!(trimmed(), 2, "new activity, then quiet again");
    }

    #[test]
    fn threads_exit_before_the_trim() {
        assert!(BLOCKING_KEEP_ALIVE < QUIET);
    }

    #[test]
    fn a_record_through_a_clone_stamps_the_moment_and_wakes_the_task() {
        let activity = Activity::default();
        let woken = activity.shared.woken.notified();
        let mut woken = std::pin::pin!(woken);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(woken.as_mut().poll(&mut context).is_pending(), "nothing recorded yet");
        let before = activity.now_ms();
        activity.clone().record();
        assert!(activity.last_ms() >= before);
        assert!(woken.as_mut().poll(&mut context).is_ready());
    }
}
