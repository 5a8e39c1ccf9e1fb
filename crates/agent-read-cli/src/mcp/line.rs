//! Whether a client's line of reads is moving: tells a read that cannot wait whether to take its turn or to run at
//! once, where its request arrived.
//!
//! A read the kernel can serve from its caches takes microseconds, so it should never wait behind slow reads (a huge
//! file, a cold disk) that hold every slot. But when every slot is busy with quick reads (a client sending a thousand
//! at once), the line moves every few microseconds, and reads that jumped it would be answered before the ones that
//! came first: measured on a burst of 1,000 reads over stdio, the median answer took 44.5 ms with every read that
//! could jumping the line, and 32.8 ms with the line kept, at the same throughput. So a read jumps the line only
//! while it is stalled: every slot busy and none freed for [`STALLED_AFTER`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How long a line may go without a read finishing before it counts as stalled. Far longer than the gap between two
/// quick reads finishing (tens of microseconds), far shorter than a slow read.
pub(super) const STALLED_AFTER: Duration = Duration::from_millis(10);

/// When one client's reads last finished on the blocking pool.
#[derive(Debug, Clone)]
pub(super) struct Line {
    shared: Arc<Stamp>,
}

#[derive(Debug)]
struct Stamp {
    origin: Instant,
    /// Microseconds from `origin` to the latest finish, plus one; 0 while no read has finished.
    last_finish: AtomicU64,
}

impl Default for Line {
    fn default() -> Self {
        Line { shared: Arc::new(Stamp { origin: Instant::now(), last_finish: AtomicU64::new(0) }) }
    }
}

impl Line {
    /// Records that one of this client's reads finished, freeing its slot.
    pub fn finished(&self) {
        self.shared.last_finish.store(self.micros_since_origin().saturating_add(1), Ordering::Relaxed);
    }

    /// Whether no read has finished within the last [`STALLED_AFTER`] (or none ever has).
    pub fn stalled(&self) -> bool {
        match self.shared.last_finish.load(Ordering::Relaxed) {
            0 => true,
            stamp => self.micros_since_origin().saturating_sub(stamp - 1) >= micros(STALLED_AFTER),
        }
    }

    fn micros_since_origin(&self) -> u64 {
        micros(self.shared.origin.elapsed())
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_line_is_stalled_until_a_read_finishes_and_again_once_none_has_for_a_while() {
        let line = Line::default();
        assert!(line.stalled(), "no read has finished yet");
        line.finished();
        assert!(!line.stalled());
        tokio::time::advance(STALLED_AFTER - Duration::from_millis(1)).await;
        assert!(!line.stalled(), "a read finished within the window");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(line.stalled());
    }
}
