//! Where a reader keeps its line indexes: a bounded, least-recently-used set in memory, and optionally a folder on
//! disk ([`disk`](super::disk)) so one-shot command-line reads of the same big file are fast too.

use super::disk::Folder;
use super::parked::ParkedStreams;
use super::streamed::{FileEnds, StreamIndex};
use super::{FileIdentity, FileVersion, LineIndex};
use crate::window::Source;
use std::io;
use std::sync::{Arc, Mutex};

/// Indexes kept in memory; the least recently used goes first. With at most `MAX_CHECKPOINTS` each, the set stays
/// under 4 MiB whatever is read.
const MAX_KEPT: usize = 32;
/// Most memory the indexes of streamed texts keep together (their restart points hold dictionaries); the least
/// recently used go first. One text's restart points keep at most 2 MiB of state.
const MAX_STREAM_BYTES: usize = 16 << 20;

/// The line indexes of one reader. Shared by its threads; every method is safe to call concurrently.
#[derive(Debug, Default)]
pub struct LineIndexes {
    /// Most recently used last.
    recent: Mutex<Vec<Arc<LineIndex>>>,
    disk: Option<Folder>,
    /// What full passes over streamed texts (decompressed files) learned, most recently used last.
    streams: Mutex<Vec<Arc<StreamIndex>>>,
    /// Decoders of streamed texts parked where their last read stopped.
    #[cfg_attr(not(feature = "compressed"), allow(dead_code))]
    parked: ParkedStreams,
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

    /// The index of the streamed text of the file `identity` names, if one was learned from the file as it is now
    /// (`version`, its compressed bytes' `ends`); an index of the file as it was is dropped.
    pub fn find_stream(
        &self,
        identity: FileIdentity,
        version: FileVersion,
        ends: FileEnds,
    ) -> Option<Arc<StreamIndex>> {
        let mut streams = self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let at = streams.iter().position(|kept| kept.identity == identity)?;
        let known = streams.remove(at);
        if (known.version, known.ends) != (version, ends) {
            return None;
        }
        streams.push(known.clone());
        Some(known)
    }

    /// Keeps `index` for later reads (in memory: its restart points hold text), within the bounds on count and
    /// memory.
    pub fn keep_stream(&self, index: Arc<StreamIndex>) {
        let mut streams = self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        streams.retain(|kept| kept.identity != index.identity);
        streams.push(index);
        while streams.len() > MAX_KEPT
            || (streams.len() > 1 && streams.iter().map(|kept| kept.memory()).sum::<usize>() > MAX_STREAM_BYTES)
        {
            streams.remove(0);
        }
    }

    /// The decoders of streamed texts parked where their last read stopped, for the next read of the same file.
    #[cfg_attr(not(feature = "compressed"), allow(dead_code))]
    pub fn parked(&self) -> &ParkedStreams {
        &self.parked
    }

    /// Forgets the index of the streamed text of `identity`, e.g. after one of its restart points proved wrong.
    pub fn forget_stream(&self, identity: FileIdentity) {
        let mut streams = self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        streams.retain(|kept| kept.identity != identity);
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
