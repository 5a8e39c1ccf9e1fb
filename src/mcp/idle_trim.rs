//! Gives freed heap memory back to the system once the HTTP server goes quiet.
//!
//! A burst of a thousand connections makes glibc's allocator spread buffers over several per-thread arenas. When the
//! burst is over the memory is free, but glibc keeps most of it mapped, so the resident size climbs from burst to
//! burst before it levels off (measured: +20 MiB over five bursts in session mode, +40 MiB stateless). After a quiet
//! moment, `malloc_trim` hands the free pages back. It runs off the async workers, and only after a period with no
//! new request, so a busy server never pays for it. On other allocators this module does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the server must see no new request before it trims.
const QUIET: Duration = Duration::from_millis(500);

/// Counts requests so that a background task can tell when the server has gone quiet.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    requests: Arc<AtomicU64>,
}

impl Activity {
    /// Records that a request arrived.
    pub fn record(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Runs forever on the current runtime: after every quiet period that follows some activity, trims once.
    pub async fn trim_when_quiet(self) {
        let mut ticks = tokio::time::interval(QUIET);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut seen = self.count();
        let mut trimmed_at = seen;
        loop {
            ticks.tick().await;
            let now = self.count();
            if should_trim(seen, now, trimmed_at) {
                trimmed_at = now;
                // A trim walks every arena: not on an async worker.
                let _ = tokio::task::spawn_blocking(release_free_memory).await;
            }
            seen = now;
        }
    }
}

/// Trim when nothing arrived during the last period (`seen == now`) but something did since the last trim.
fn should_trim(seen: u64, now: u64, trimmed_at: u64) -> bool {
    seen == now && now != trimmed_at
}

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

    #[test]
    fn trims_once_after_activity_and_only_when_quiet() {
        assert!(!should_trim(0, 0, 0), "no activity yet");
        assert!(!should_trim(0, 5, 0), "requests arrived during the last period");
        assert!(should_trim(5, 5, 0), "quiet after activity");
        assert!(!should_trim(5, 5, 5), "already trimmed since the last request");
    }

    #[test]
    fn clones_count_into_the_same_total() {
        let activity = Activity::default();
        activity.clone().record();
        activity.record();
        assert_eq!(activity.count(), 2);
    }
}
