//! Decoders parked between reads: for the last compressed files read, the decoders where their reads stopped, each
//! with the last text it decoded ([`Stream::park`](crate::window::stream::Stream::park)), so that a later read of
//! the same file goes on with the one nearest before its window instead of decoding the text before it again.
//!
//! Contract:
//! - Parked decoders are handed back only for the file they were parked from, as that file was then: the same device
//!   and inode, the same [`FileVersion`] (size, modification and status-change times) and the same first and last
//!   bytes ([`FileEnds`]). They are taken, not shared: two reads of the same file at once never share a decoder.
//! - Bounded: at most [`MAX_PARKED`] decoders, holding at most [`MAX_PARKED_MEMORY`] together (the text they keep,
//!   and their memory, which stays reserved from the budget every read shares while they are parked). The least
//!   recently parked go first; what would hold more alone is not parked. Decoders parked for longer than
//!   [`MAX_IDLE`] are dropped at the next park or take, closing their handles to the file.

use super::FileVersion;
use super::streamed::FileEnds;
use crate::window::stream::Parked;
use std::fs::{File, Metadata};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most decoders parked at once.
pub const MAX_PARKED: usize = 4;
/// Most bytes the parked decoders hold together.
pub const MAX_PARKED_MEMORY: u64 = 64 << 20;
/// How long decoders stay parked without a read taking them.
pub const MAX_IDLE: Duration = Duration::from_secs(600);

/// The file a stream was parked from, as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamKey {
    device: u64,
    inode: u64,
    version: FileVersion,
    ends: FileEnds,
}

impl StreamKey {
    /// The key of the open `file`, with `metadata`, whose first and last bytes are `ends`.
    pub fn of(file: &File, metadata: &Metadata, ends: FileEnds) -> Self {
        let (device, inode) = crate::platform::identity(file, metadata);
        StreamKey { device, inode, version: FileVersion::of(metadata), ends }
    }

    /// Whether both name the same file, changed since or not.
    fn same_file(&self, other: &StreamKey) -> bool {
        (self.device, self.inode) == (other.device, other.inode)
    }
}

/// The decoders parked from one file, the most recently used last, and the first bytes of its text (what
/// classifying the text needs, so a read that takes them does not decode those again).
#[derive(Debug)]
pub struct ParkedText {
    pub head: Vec<u8>,
    pub streams: Vec<Parked>,
}

impl ParkedText {
    fn memory(&self) -> u64 {
        self.streams.iter().map(Parked::memory).sum()
    }
}

struct Entry {
    key: StreamKey,
    text: ParkedText,
    parked_at: Instant,
}

/// The streams parked by one reader's reads (see the module's contract).
#[derive(Default)]
pub struct ParkedStreams {
    /// Most recently parked last.
    entries: Mutex<Vec<Entry>>,
}

impl std::fmt::Debug for ParkedStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParkedStreams").field("count", &self.with_entries(|entries| entries.len())).finish()
    }
}

impl ParkedStreams {
    /// The decoders parked from the file `key` names, as it is now; they are no longer parked.
    pub fn take(&self, key: &StreamKey) -> Option<ParkedText> {
        self.with_entries(|entries| {
            let at = entries.iter().position(|entry| entry.key.same_file(key))?;
            let entry = entries.remove(at);
            // Parked from the file as it was before a change: of no use any more.
            (entry.key == *key).then_some(entry.text)
        })
    }

    /// Parks `text`, the decoders of the file `key` names, within the bounds (those parked earlier from the same file
    /// are replaced).
    pub fn park(&self, key: StreamKey, mut text: ParkedText) {
        text.streams.retain(|stream| stream.memory() <= MAX_PARKED_MEMORY);
        if text.streams.is_empty() {
            return;
        }
        self.with_entries(|entries| {
            entries.retain(|entry| !entry.key.same_file(&key));
            entries.push(Entry { key, text, parked_at: Instant::now() });
            let count = |entries: &Vec<Entry>| entries.iter().map(|entry| entry.text.streams.len()).sum::<usize>();
            let memory = |entries: &Vec<Entry>| entries.iter().map(|entry| entry.text.memory()).sum::<u64>();
            while count(entries) > MAX_PARKED || memory(entries) > MAX_PARKED_MEMORY {
                // The least recently used decoder of the least recently parked file goes first.
                let Some(oldest) = entries.first_mut() else { break };
                oldest.text.streams.remove(0);
                if oldest.text.streams.is_empty() {
                    entries.remove(0);
                }
            }
        });
    }

    /// Runs `f` on the entries, once those idle too long are dropped.
    fn with_entries<T>(&self, f: impl FnOnce(&mut Vec<Entry>) -> T) -> T {
        // A thread that panicked while holding the lock left a list that is still well formed: keep using it.
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.retain(|entry| entry.parked_at.elapsed() <= MAX_IDLE);
        f(&mut entries)
    }

    /// Number of decoders parked (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.with_entries(|entries| entries.iter().map(|entry| entry.text.streams.len()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, Cancel};
    use crate::window::stream::{Decoder, Keepable, MAX_KEPT_DECODER_MEMORY, Opener, Stream};
    use std::io::{self, Read, Write};

    /// A decoder of endless spaces that says it holds its `0` bytes of the shared memory.
    struct Holding(u64);

    impl Read for Holding {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(b' ');
            Ok(buf.len())
        }
    }

    impl Decoder for Holding {
        fn into_kept(self: Box<Self>) -> Option<Box<dyn Keepable>> {
            Some(self)
        }
    }

    impl Keepable for Holding {
        fn rebudget(&mut self, _: &Budget) {}

        fn memory(&self) -> u64 {
            self.0
        }
    }

    /// A stream that has decoded a little, parked, its decoder holding `memory` bytes.
    fn parked(memory: u64) -> ParkedText {
        let open: &Opener<'_> = &|_| Ok(Box::new(Holding(memory)));
        let budget = Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new());
        let stream = Stream::new(open, budget);
        assert_eq!(stream.read_at(0, &mut [0u8; 10]).unwrap(), 10);
        ParkedText { head: b"head".to_vec(), streams: stream.park() }
    }

    fn key_of(file: &File) -> StreamKey {
        let metadata = file.metadata().unwrap();
        StreamKey::of(file, &metadata, FileEnds::of(file, metadata.len()).unwrap())
    }

    #[test]
    fn a_parked_stream_is_taken_once_and_only_for_its_file_as_it_was() {
        let parked_streams = ParkedStreams::default();
        let (mut one, other) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        one.write_all(b"compressed bytes").unwrap();
        parked_streams.park(key_of(&one), parked(0));
        assert!(parked_streams.take(&key_of(&other)).is_none(), "another file");
        let taken = parked_streams.take(&key_of(&one)).expect("its own file");
        assert_eq!(taken.head, b"head");
        assert!(parked_streams.take(&key_of(&one)).is_none(), "taken, not shared");
        parked_streams.park(key_of(&one), parked(0));
        one.write_all(b" and more").unwrap();
        assert!(parked_streams.take(&key_of(&one)).is_none(), "the file changed since");
        assert_eq!(parked_streams.len(), 0, "and what was parked from it is dropped");
    }

    #[test]
    fn at_most_a_few_streams_and_their_memory_stay_parked_the_oldest_going_first() {
        let parked_streams = ParkedStreams::default();
        let files: Vec<File> = (0..MAX_PARKED + 1).map(|_| tempfile::tempfile().unwrap()).collect();
        for file in &files {
            parked_streams.park(key_of(file), parked(1 << 20));
        }
        assert_eq!(parked_streams.len(), MAX_PARKED);
        assert!(parked_streams.take(&key_of(&files[0])).is_none(), "the oldest went first");
        assert!(parked_streams.take(&key_of(&files[MAX_PARKED])).is_some());
        let third = MAX_PARKED_MEMORY / 3 + 1;
        for file in &files[..3] {
            parked_streams.park(key_of(file), parked(third));
        }
        assert!(parked_streams.take(&key_of(&files[0])).is_none(), "three thirds and more exceed the bound");
        assert!(parked_streams.take(&key_of(&files[2])).is_some());
        parked_streams.park(key_of(&files[3]), parked(MAX_PARKED_MEMORY + 1));
        assert!(parked_streams.take(&key_of(&files[3])).is_none(), "more than the bound alone is not parked");
        assert!(parked_streams.take(&key_of(&files[1])).is_some(), "and makes no room for itself");
    }

    #[test]
    fn decoders_left_unread_too_long_are_dropped_at_the_next_park_or_take() {
        let parked_streams = ParkedStreams::default();
        let (stale, fresh) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        parked_streams.park(key_of(&stale), parked(0));
        let long_ago = Instant::now().checked_sub(MAX_IDLE + Duration::from_secs(1));
        let Some(long_ago) = long_ago else { return }; // a clock too young to go back that far
        parked_streams.entries.lock().unwrap()[0].parked_at = long_ago;
        parked_streams.park(key_of(&fresh), parked(0));
        assert_eq!(parked_streams.len(), 1, "the stale one was dropped, closing its handle");
        assert!(parked_streams.take(&key_of(&stale)).is_none());
        assert!(parked_streams.take(&key_of(&fresh)).is_some());
    }

    #[test]
    fn a_decoder_holding_more_than_a_kept_one_may_is_not_parked() {
        let open: &Opener<'_> = &|_| Ok(Box::new(Holding(MAX_KEPT_DECODER_MEMORY + 1)));
        let stream = Stream::new(open, Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new()));
        assert_eq!(stream.read_at(0, &mut [0u8; 10]).unwrap(), 10);
        assert!(stream.park().is_empty());
        let open: &Opener<'_> = &|_| Ok(Box::new(Holding(MAX_KEPT_DECODER_MEMORY)));
        let stream = Stream::new(open, Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new()));
        assert_eq!(stream.read_at(0, &mut [0u8; 10]).unwrap(), 10);
        assert_eq!(stream.park().len(), 1, "at the bound, it is");
    }
}
