//! Where a reader keeps its line indexes: a bounded, least-recently-used set in memory, and optionally a folder on
//! disk ([`disk`](super::disk)) so one-shot command-line reads of the same big file are fast too.

use super::disk::Folder;
use super::{FileIdentity, FileVersion, LineIndex};
use crate::window::Source;
use crate::window::scan::ScanSummary;
use std::io;
use std::sync::{Arc, Mutex};

/// Indexes kept in memory; the least recently used goes first. With at most `MAX_CHECKPOINTS` each, the set stays
/// under 4 MiB whatever is read.
const MAX_KEPT: usize = 32;

/// The line indexes of one reader. Shared by its threads; every method is safe to call concurrently.
#[derive(Debug, Default)]
pub struct LineIndexes {
    /// Most recently used last.
    recent: Mutex<Vec<Arc<LineIndex>>>,
    disk: Option<Folder>,
    /// What full passes over streamed texts (decompressed files) learned: their totals, most recent last. A stream
    /// has no checkpoint to start from, but knowing its totals, a window stops after its last line and a tail needs
    /// one pass instead of two.
    streams: Mutex<Vec<(FileIdentity, FileVersion, ScanSummary)>>,
}

impl LineIndexes {
    /// Indexes kept in memory only.
    pub fn in_memory() -> Self {
        LineIndexes::default()
    }

    /// Indexes kept in memory and in `folder` on disk.
    pub fn with_folder(folder: Folder) -> Self {
        LineIndexes { disk: Some(folder), ..LineIndexes::default() }
    }

    /// The index of the file `identity` names as it is now (`version`, its text in `source`): a kept one (complete
    /// or partial), or a kept one extended over bytes appended since. `None` when none is known or the file changed
    /// otherwise; the caller then makes a pass and [keeps](Self::keep) what it learned.
    pub fn find(
        &self,
        identity: FileIdentity,
        version: FileVersion,
        source: &Source<'_>,
    ) -> io::Result<Option<Arc<LineIndex>>> {
        let Some(known) = self.recall(identity).or_else(|| self.load(identity)) else { return Ok(None) };
        // Timestamps may be as coarse as a clock tick: the ends of the text are compared too, for a rewrite that
        // kept the size within one tick.
        if known.version == version && known.ends_match(source)? {
            self.remember(known.clone());
            return Ok(Some(known));
        }
        match known.extended(source, version)? {
            Some(extended) => {
                let extended = Arc::new(extended);
                self.keep(extended.clone());
                Ok(Some(extended))
            }
            None => {
                self.forget(identity);
                Ok(None)
            }
        }
    }

    /// Keeps `index` for later reads: in memory, and on disk when a folder is set (a failed write only costs speed);
    /// unless the index kept for the same file knows more (a pass that stopped early must not replace what a
    /// concurrent one counted to the end).
    pub fn keep(&self, index: Arc<LineIndex>) {
        let superseded = self.with_recent(|recent| {
            recent.iter().any(|kept| kept.identity == index.identity && !index.knows_more_than(kept))
        });
        if superseded {
            return;
        }
        if let Some(folder) = &self.disk {
            folder.save(&index);
        }
        self.remember(index);
    }

    /// Forgets the index of `identity` everywhere, e.g. after one of its checkpoints proved wrong.
    pub fn forget(&self, identity: FileIdentity) {
        self.with_recent(|recent| recent.retain(|kept| kept.identity != identity));
        if let Some(folder) = &self.disk {
            folder.remove(identity);
        }
    }

    fn recall(&self, identity: FileIdentity) -> Option<Arc<LineIndex>> {
        self.with_recent(|recent| recent.iter().rev().find(|kept| kept.identity == identity).cloned())
    }

    fn load(&self, identity: FileIdentity) -> Option<Arc<LineIndex>> {
        self.disk.as_ref()?.load(identity).map(Arc::new)
    }

    fn remember(&self, index: Arc<LineIndex>) {
        self.with_recent(|recent| {
            recent.retain(|kept| kept.identity != index.identity);
            recent.push(index);
            if recent.len() > MAX_KEPT {
                recent.remove(0);
            }
        });
    }

    /// The totals of the streamed text `identity` names, learned by a full pass over the file as it is now.
    pub fn stream_totals(&self, identity: FileIdentity, version: FileVersion) -> Option<ScanSummary> {
        let streams = self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        streams.iter().rev().find(|(i, v, _)| (*i, *v) == (identity, version)).map(|(_, _, summary)| *summary)
    }

    /// Keeps what a full pass over a streamed text learned (in memory, with the same bound as indexes).
    pub fn keep_stream_totals(&self, identity: FileIdentity, version: FileVersion, summary: ScanSummary) {
        let mut streams = self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        streams.retain(|(i, _, _)| *i != identity);
        streams.push((identity, version, summary));
        if streams.len() > MAX_KEPT {
            streams.remove(0);
        }
    }

    fn with_recent<T>(&self, f: impl FnOnce(&mut Vec<Arc<LineIndex>>) -> T) -> T {
        // A thread that panicked while holding the lock left a list that is still well formed: keep using it.
        let mut recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut recent)
    }

    /// Number of indexes in memory (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.with_recent(|recent| recent.len())
    }

    /// Whether no index is in memory.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_the_store_is_locked_leaves_it_usable() {
        let indexes = LineIndexes::in_memory();
        let panicked = std::thread::scope(|scope| {
            scope.spawn(|| indexes.with_recent(|_| panic!("a bug while the store is locked"))).join().is_err()
        });
        assert!(panicked && indexes.recent.is_poisoned());
        assert!(indexes.is_empty(), "the poisoned lock is used again, not a second panic");
    }
}
