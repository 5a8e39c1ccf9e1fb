//! Sorted listings of big directories, kept between pages so that paging through one costs a page, not a listing and
//! a sort of every name each time.
//!
//! A listing is kept by the directory's identity (device and inode, or volume and file index on Windows) with the
//! version it was listed at: its modification and status-change times (nanoseconds) and size. Every page checks the
//! directory as opened now against them, and lists it anew on any difference: adding, removing or renaming an entry
//! changes the directory's times. Timestamps may be as coarse as a clock tick (two seconds on FAT), so a listing is
//! kept only when the directory's times were already [`SETTLED`] old when the listing began, and were the same once
//! it ended: a change made after the listing then gets a later time than the one kept.
//!
//! Only names and kinds are kept. What can change without touching the directory — an entry's size, what the policy
//! says of it, where a link leads — is looked at again for the entries of each page shown. So one cache serves every
//! reader narrowed from the same one, whatever their roots.
//!
//! Bounded: at most [`MAX_KEPT`] listings and [`MAX_KEPT_BYTES`] in all, the least recently used dropped first;
//! directories under [`MIN_KEPT_ENTRIES`] entries, which are listed in a few milliseconds, are never kept.

use crate::platform;
use crate::window::index::FileVersion;
use cap_std::fs::{Dir, FileType};
use std::ffi::OsString;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Listings kept at most.
pub const MAX_KEPT: usize = 4;

/// Memory the kept listings take at most, names and their bookkeeping counted.
pub const MAX_KEPT_BYTES: usize = 32 << 20;

/// Directories with fewer entries are listed anew for every page.
pub const MIN_KEPT_ENTRIES: usize = 4096;

/// How old a directory's times must be when its listing begins for the listing to be kept: more than the coarsest
/// timestamp a file system keeps (FAT's two seconds).
pub const SETTLED: Duration = Duration::from_secs(3);

/// One entry of a listing: its name and, when the directory stream says, its kind.
pub type Entry = (OsString, Option<FileType>);

/// A directory's entries sorted by name bytes.
#[derive(Debug, Default)]
pub struct Sorted {
    /// The entries.
    pub entries: Vec<Entry>,
    /// Whether the listing stopped at its entry limit (the directory holds more).
    pub cut: bool,
}

impl Sorted {
    /// Memory the listing takes, roughly: the entries and their names.
    fn bytes(&self) -> usize {
        let names: usize = self.entries.iter().map(|(name, _)| name.len()).sum();
        self.entries.len() * std::mem::size_of::<Entry>() + names
    }
}

/// Which directory, at which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    identity: (u64, u64),
    version: FileVersion,
}

impl Stamp {
    /// The stamp of the open directory `dir` as it is now.
    fn of(dir: &Dir) -> io::Result<Stamp> {
        let file = dir.try_clone()?.into_std_file();
        let metadata = file.metadata()?;
        Ok(Stamp { identity: platform::identity(&file, &metadata), version: FileVersion::of(&metadata) })
    }

    /// Whether both times lie at least `settled` before `instant`.
    fn settled_before(&self, instant: SystemTime, settled: Duration) -> bool {
        let Some(since_epoch) = instant.checked_sub(settled).and_then(|t| t.duration_since(UNIX_EPOCH).ok()) else {
            return false;
        };
        let limit = i128::try_from(since_epoch.as_nanos()).unwrap_or(i128::MAX);
        self.version.modified_ns <= limit && self.version.changed_ns <= limit
    }
}

#[derive(Debug)]
struct Kept {
    stamp: Stamp,
    sorted: Arc<Sorted>,
    bytes: usize,
}

/// The listings one reader (and the readers narrowed from it) keep. Every method is safe to call concurrently.
#[derive(Debug)]
pub struct Listings {
    /// Most recently used last.
    kept: Mutex<Vec<Kept>>,
    /// Fewest entries a listing kept has.
    min_entries: usize,
    /// How old the directory's times must be.
    settled: Duration,
}

impl Default for Listings {
    fn default() -> Self {
        Listings { kept: Mutex::default(), min_entries: MIN_KEPT_ENTRIES, settled: SETTLED }
    }
}

impl Listings {
    /// Listings that keep directories of any size, settled after `settled`: for tests, which cannot wait seconds.
    #[cfg(test)]
    pub fn eager(settled: Duration) -> Listings {
        Listings { min_entries: 0, settled, ..Listings::default() }
    }

    /// How many listings are kept.
    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.kept.lock().unwrap().len()
    }

    /// The sorted listing of the open directory `dir`: the kept one when the directory is unchanged since, else
    /// `list()`'s, kept for the next page when it may be.
    pub fn sorted(&self, dir: &Dir, list: impl FnOnce() -> io::Result<Sorted>) -> io::Result<Arc<Sorted>> {
        let before = Stamp::of(dir)?;
        if let Some(sorted) = self.recall(&before) {
            return Ok(sorted);
        }
        let began = SystemTime::now();
        let sorted = Arc::new(list()?);
        let settled = before.settled_before(began, self.settled);
        if sorted.entries.len() >= self.min_entries && settled && Stamp::of(dir)? == before {
            self.keep(before, sorted.clone());
        }
        Ok(sorted)
    }

    /// The listing kept for `stamp`'s directory, when it was kept at that very version; a listing of an older
    /// version is dropped.
    fn recall(&self, stamp: &Stamp) -> Option<Arc<Sorted>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let position = kept.iter().position(|k| k.stamp.identity == stamp.identity)?;
        let found = kept.remove(position);
        if found.stamp != *stamp {
            return None;
        }
        let sorted = found.sorted.clone();
        kept.push(found);
        Some(sorted)
    }

    fn keep(&self, stamp: Stamp, sorted: Arc<Sorted>) {
        let bytes = sorted.bytes();
        if bytes > MAX_KEPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| k.stamp.identity != stamp.identity);
        kept.push(Kept { stamp, sorted, bytes });
        while kept.len() > MAX_KEPT || kept.iter().map(|k| k.bytes).sum::<usize>() > MAX_KEPT_BYTES {
            kept.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(inode: u64, modified_ns: i128) -> Stamp {
        Stamp { identity: (1, inode), version: FileVersion { size: 4096, modified_ns, changed_ns: modified_ns } }
    }

    fn names(count: usize, name_bytes: usize) -> Arc<Sorted> {
        let entries = (0..count).map(|i| (OsString::from(format!("{i:0name_bytes$}")), None)).collect();
        Arc::new(Sorted { entries, cut: false })
    }

    #[test]
    fn a_listing_is_recalled_at_its_version_only_and_an_older_one_is_dropped() {
        let listings = Listings::default();
        listings.keep(stamp(7, 100), names(3, 4));
        assert!(listings.recall(&stamp(7, 100)).is_some());
        assert!(listings.recall(&stamp(8, 100)).is_none(), "another directory");
        assert!(listings.recall(&stamp(7, 101)).is_none(), "the directory changed");
        assert_eq!(listings.kept(), 0, "the stale listing is gone");
    }

    #[test]
    fn the_least_recently_used_goes_first_past_the_count_or_the_bytes() {
        let listings = Listings::default();
        for inode in 0..MAX_KEPT as u64 {
            listings.keep(stamp(inode, 1), names(10, 8));
        }
        assert!(listings.recall(&stamp(0, 1)).is_some());
        listings.keep(stamp(99, 1), names(10, 8));
        assert!(listings.recall(&stamp(1, 1)).is_none(), "the least recently used went");
        assert!(listings.recall(&stamp(0, 1)).is_some(), "the recalled one stayed");
        // Big listings: each is over half the bytes, so keeping one drops the other.
        let big = MAX_KEPT_BYTES / 2 / (std::mem::size_of::<Entry>() + 64) + 1;
        listings.keep(stamp(200, 1), names(big, 64));
        listings.keep(stamp(201, 1), names(big, 64));
        assert!(listings.recall(&stamp(200, 1)).is_none() && listings.recall(&stamp(201, 1)).is_some());
        let kept: usize = listings.kept.lock().unwrap().iter().map(|k| k.bytes).sum();
        assert!(kept <= MAX_KEPT_BYTES, "{kept}");
        // One listing past the whole cap is not kept at all.
        listings.keep(stamp(300, 1), names(2 * big, 64));
        assert!(listings.recall(&stamp(300, 1)).is_none());
    }

    #[test]
    fn times_too_close_to_the_listing_are_not_settled() {
        let now = SystemTime::now();
        let ns = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i128;
        let old = stamp(1, ns(now - Duration::from_secs(10)));
        assert!(old.settled_before(now, SETTLED));
        let fresh = stamp(1, ns(now - Duration::from_secs(1)));
        assert!(!fresh.settled_before(now, SETTLED));
        let future = stamp(1, ns(now + Duration::from_secs(1)));
        assert!(!future.settled_before(now, SETTLED), "a time ahead of the clock (FAT rounds up)");
    }
}
