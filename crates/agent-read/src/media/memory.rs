//! What the reads in a process share: one memory budget for every read that may hold much memory (a decoded image, a
//! decompression window (zstd) or dictionary (xz), an HTML page's tree, a workbook's cells, each sized by the file),
//! and [`Pool`]s of other kinds, such as the PDF extractions that may run at once.
//!
//! Each read reserves from the memory budget the bytes it will hold: an image an upper bound of its decode and
//! re-encode, worked out from its header before it allocates any pixels; a decoder the memory it holds, as soon as the
//! file makes it grow and before it fills more than one block of it; a document its file before reading it, then what
//! its conversion grows (a page's tree, a workbook's cells).
//!
//! When the reads in flight already hold too much, a read that holds nothing yet waits until they give some back — for
//! at most half of its remaining time, so that the other half is left to decode — and is then refused as busy. A read
//! that already holds some and needs more is refused as busy at once: were it to wait, reads each holding part of the
//! budget could wait for one another until all of them gave up. So a read reserves up front what it will likely need,
//! and grows past that only when the budget has room. A read that needs more than the whole budget is refused at
//! once: no amount of waiting would help.
//!
//! The budget is process-wide because a server serves many clients, and makes a new reader whenever a client's roots
//! change: a budget per reader would not bound the process.

use crate::budget::Budget;
#[cfg(any(feature = "compressed", feature = "documents"))]
use crate::render::human_size;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bytes all reads in the process may hold at once in decoded images, decompression windows, documents' files and
/// what converting them grows, however many run at the same time (what a read holds besides, a few chunks of text or
/// a document's parts, is bounded per read).
#[cfg(any(feature = "images", feature = "compressed", feature = "documents"))]
pub const SHARED_MEMORY: u64 = 384 * 1024 * 1024;

/// How often a waiting read looks at its cancel signal and deadline, besides being woken when units are given back.
const RECHECK: Duration = Duration::from_millis(50);

/// A budget of units (bytes of memory, or extractions running), handed out to reads and given back when they end.
pub struct Pool {
    capacity: u64,
    held: Mutex<u64>,
    freed: Condvar,
}

/// Units held by one read; given back when dropped.
#[must_use = "the units are given back as soon as the reservation is dropped"]
pub struct Reservation<'a> {
    pool: &'a Pool,
    bytes: u64,
}

/// Why a reservation was not made.
// `allow`, not `expect`: without a feature that words the refusals, only the pool's own tests read their fields.
#[cfg_attr(
    not(any(feature = "images", feature = "compressed", feature = "documents")),
    allow(dead_code, reason = "only the memory budget's refusals name what was asked for")
)]
#[derive(Debug)]
pub enum Refusal {
    /// More than the whole pool.
    TooLargeAlone {
        /// Units asked for.
        needed: u64,
        /// The pool's size.
        capacity: u64,
    },
    /// Other reads held too much for as long as this one could wait.
    Busy {
        /// Units asked for.
        needed: u64,
        /// Units other reads held when it gave up.
        held: u64,
        /// The pool's size.
        capacity: u64,
        /// How long it waited.
        waited: Duration,
    },
    /// The read was cancelled, or its time ran out, while it waited.
    Stopped(std::io::Error),
}

#[cfg(any(feature = "images", feature = "compressed", feature = "documents"))]
static SHARED: Pool = Pool::new(SHARED_MEMORY);

impl Pool {
    /// A pool of `capacity` units.
    pub const fn new(capacity: u64) -> Pool {
        Pool { capacity, held: Mutex::new(0), freed: Condvar::new() }
    }

    /// The memory budget every read in this process shares.
    #[cfg(any(feature = "images", feature = "compressed", feature = "documents"))]
    pub fn shared() -> &'static Pool {
        &SHARED
    }

    /// Reserves `bytes`, waiting while other reads hold too much (see the module's documentation).
    #[cfg(any(feature = "images", feature = "pdf", test))]
    pub fn reserve(&self, bytes: u64, budget: &Budget) -> Result<Reservation<'_>, Refusal> {
        let mut reservation = Reservation { pool: self, bytes: 0 };
        reservation.grow_to(bytes, budget)?;
        Ok(reservation)
    }

    /// Units currently reserved.
    #[cfg(test)]
    pub fn held(&self) -> u64 {
        *self.lock()
    }

    fn lock(&self) -> MutexGuard<'_, u64> {
        // The count stays right even if a holder panicked: each change is one statement.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Reservation<'_> {
    /// Holds `bytes` in all: reserves what it does not hold yet, waiting as [`Pool::reserve`] does when it holds
    /// nothing yet, and not at all when it does (see the module's documentation). When refused, it still holds what
    /// it held.
    pub fn grow_to(&mut self, bytes: u64, budget: &Budget) -> Result<(), Refusal> {
        let pool = self.pool;
        if bytes <= self.bytes {
            return Ok(());
        }
        if bytes > pool.capacity {
            return Err(Refusal::TooLargeAlone { needed: bytes, capacity: pool.capacity });
        }
        let extra = bytes - self.bytes;
        let started = Instant::now();
        let give_up = match self.bytes {
            0 => started + budget.deadline().saturating_duration_since(started) / 2,
            _ => started,
        };
        let mut held = pool.lock();
        loop {
            if *held + extra <= pool.capacity {
                *held += extra;
                self.bytes = bytes;
                return Ok(());
            }
            budget.check().map_err(Refusal::Stopped)?;
            let now = Instant::now();
            if now >= give_up {
                let (held, capacity, waited) = (*held - self.bytes, pool.capacity, now - started);
                return Err(Refusal::Busy { needed: bytes, held, capacity, waited });
            }
            let wait = RECHECK.min(give_up - now);
            held = match pool.freed.wait_timeout(held, wait) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// The bytes reserved.
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The error of a read refused as busy (see [`Refusal::Busy`]), in the words every such refusal uses: "not `done` now:
/// the server is busy with other reads (`need`; other reads hold … of the … they share, and it waited … s)", where
/// `need` says what the read needed. Its kind, `ResourceBusy`, is what [`crate::ReadError::from_io`] makes a busy
/// `TOO_LARGE` of.
#[cfg(any(feature = "compressed", feature = "documents"))]
pub fn busy_error(done: &str, need: &str, held: u64, capacity: u64, waited: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ResourceBusy,
        format!(
            "not {done} now: the server is busy with other reads ({need}; other reads hold {} of the {} they share, \
             and it waited {:.1} s)",
            human_size(held),
            human_size(capacity),
            waited.as_secs_f64()
        ),
    )
}

/// Memory a read holds that grows as it goes (a decoder's window; a document's file, then its page's tree or its
/// workbook's cells), reserved from a pool as it grows and given back when dropped.
#[cfg(any(feature = "compressed", feature = "documents"))]
pub struct Growing {
    reservation: Reservation<'static>,
    budget: Budget,
}

#[cfg(any(feature = "compressed", feature = "documents"))]
impl Growing {
    /// Nothing held yet, from `pool`; waits for memory no longer than `budget` allows.
    pub fn new(pool: &'static Pool, budget: Budget) -> Growing {
        Growing { reservation: Reservation { pool, bytes: 0 }, budget }
    }

    /// From now on, waits for memory no longer than `budget` allows (what it holds is kept).
    #[cfg(feature = "compressed")]
    pub fn set_budget(&mut self, budget: &Budget) {
        self.budget = budget.clone();
    }

    /// Holds `bytes` in all: reserves what it lacks (see [`Reservation::grow_to`]).
    pub fn cover(&mut self, bytes: u64) -> Result<(), Refusal> {
        self.reservation.grow_to(bytes, &self.budget)
    }

    /// The bytes reserved so far.
    #[cfg(any(feature = "documents", feature = "compressed", test))]
    pub fn held(&self) -> u64 {
        self.reservation.bytes
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut held = self.pool.lock();
        *held = held.saturating_sub(self.bytes);
        drop(held);
        self.pool.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Cancel, is_cancelled};
    use std::sync::Arc;

    fn budget(seconds: f64) -> Budget {
        Budget::new(Instant::now() + Duration::from_secs_f64(seconds), Cancel::new())
    }

    #[test]
    fn reservations_add_up_and_are_given_back_on_drop() {
        let pool = Pool::new(100);
        let a = pool.reserve(60, &budget(5.0)).unwrap();
        let b = pool.reserve(40, &budget(5.0)).unwrap();
        assert_eq!((pool.held(), a.bytes(), b.bytes()), (100, 60, 40));
        drop(a);
        assert_eq!(pool.held(), 40);
        drop(b);
        assert_eq!(pool.held(), 0);
    }

    #[test]
    fn more_than_the_whole_pool_is_refused_at_once() {
        let pool = Pool::new(100);
        let started = Instant::now();
        let refusal = pool.reserve(101, &budget(60.0)).err();
        assert!(matches!(refusal, Some(Refusal::TooLargeAlone { needed: 101, capacity: 100 })), "{refusal:?}");
        assert!(started.elapsed() < Duration::from_secs(1), "no waiting");
    }

    #[test]
    fn a_busy_pool_refuses_after_half_the_remaining_time() {
        let pool = Pool::new(100);
        let _held = pool.reserve(70, &budget(5.0)).unwrap();
        let started = Instant::now();
        let refusal = pool.reserve(50, &budget(0.4)).err();
        let waited = started.elapsed();
        let Some(Refusal::Busy { needed: 50, held: 70, capacity: 100, .. }) = refusal else { panic!("{refusal:?}") };
        assert!(waited >= Duration::from_millis(190) && waited < Duration::from_millis(390), "waited {waited:?}");
    }

    #[test]
    fn a_reservation_grows_by_what_it_lacks_and_keeps_what_it_held_when_refused() {
        let pool = Pool::new(100);
        let mut grown = pool.reserve(10, &budget(5.0)).unwrap();
        grown.grow_to(60, &budget(5.0)).unwrap();
        grown.grow_to(30, &budget(5.0)).unwrap();
        assert_eq!((pool.held(), grown.bytes()), (60, 60), "never shrinks");
        let other = pool.reserve(30, &budget(5.0)).unwrap();
        let started = Instant::now();
        let refusal = grown.grow_to(80, &budget(60.0)).err();
        assert!(started.elapsed() < Duration::from_secs(1), "holding some, it does not wait for more");
        let Some(Refusal::Busy { needed: 80, held: 30, capacity: 100, .. }) = refusal else { panic!("{refusal:?}") };
        let refusal = grown.grow_to(101, &budget(5.0)).err();
        assert!(matches!(refusal, Some(Refusal::TooLargeAlone { needed: 101, capacity: 100 })), "{refusal:?}");
        assert_eq!((pool.held(), grown.bytes()), (90, 60));
        drop(other);
        grown.grow_to(100, &budget(5.0)).unwrap();
        drop(grown);
        assert_eq!(pool.held(), 0);
    }

    #[test]
    fn a_waiting_read_goes_ahead_when_memory_is_given_back() {
        let pool = Arc::new(Pool::new(100));
        let first = pool.reserve(80, &budget(5.0)).unwrap();
        let waiter = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.reserve(50, &budget(10.0)).map(|r| r.bytes()).ok())
        };
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        assert_eq!(waiter.join().unwrap(), Some(50));
        assert_eq!(pool.held(), 0);
    }

    #[test]
    fn a_cancelled_read_stops_waiting() {
        let pool = Arc::new(Pool::new(100));
        let _held = pool.reserve(80, &budget(5.0)).unwrap();
        let cancel = Cancel::new();
        let waiter = {
            let (pool, cancel) = (Arc::clone(&pool), cancel.clone());
            std::thread::spawn(move || {
                let budget = Budget::new(Instant::now() + Duration::from_secs(60), cancel);
                let started = Instant::now();
                (pool.reserve(50, &budget).err(), started.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        cancel.cancel();
        let (refusal, waited) = waiter.join().unwrap();
        let Some(Refusal::Stopped(err)) = refusal else { panic!("{refusal:?}") };
        assert!(is_cancelled(&err), "{err}");
        assert!(waited < Duration::from_secs(2), "stopped within a recheck: {waited:?}");
    }
}
