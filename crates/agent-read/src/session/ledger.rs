//! The session's record of what it returned: for each file (by real path), what the file was at the last read, and
//! for each window read from it, a hash of the answer. Bounded: the least recently read files are forgotten first.

use crate::engine::Seen;
use crate::engine::observe::ContentHash;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Files remembered at most; past it the least recently read ones are forgotten (a forgotten file reads as unread).
pub const MAX_FILES: usize = 4096;

/// Windows remembered per file at most (the most recent ones).
pub const MAX_WINDOWS_PER_FILE: usize = 32;

/// Other paths a file was read through (symbolic links) remembered at most.
const MAX_ALIASES: usize = 8;

/// One answered read of a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowRecord {
    /// Hash of the window's request (path aside).
    pub key: ContentHash,
    /// Hash of the answer's text.
    pub output: ContentHash,
    /// When the content was last delivered (not when a stub was).
    pub read_at: SystemTime,
}

/// What the session knows of one file.
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// The file as the last read found it.
    pub seen: Seen,
    /// When it was last read.
    pub read_at: SystemTime,
    /// Other paths (as resolved lexically, symbolic links not followed) the file was read through.
    pub aliases: Vec<PathBuf>,
    windows: Vec<WindowRecord>,
    last_used: u64,
}

/// Every file a session read, bounded by [`MAX_FILES`].
#[derive(Debug, Default)]
pub struct Ledger {
    files: HashMap<PathBuf, FileRecord>,
    tick: u64,
}

impl Ledger {
    /// The record of the file at `real_path`.
    pub fn file(&self, real_path: &Path) -> Option<&FileRecord> {
        self.files.get(real_path)
    }

    /// The record of a file once read through `lexical_path` (for a file that no longer resolves).
    pub fn file_by_alias(&self, lexical_path: &Path) -> Option<&FileRecord> {
        self.files.values().find(|record| record.aliases.iter().any(|alias| alias == lexical_path))
    }

    /// The earlier answer to the same window of the same, unchanged file, when this read repeats one exactly.
    pub fn repeat_of(&self, seen: &Seen, key: ContentHash, output: ContentHash) -> Option<&WindowRecord> {
        let record = self.files.get(&seen.real_path)?;
        if !record.seen.same_content_as(seen) {
            return None;
        }
        record.windows.iter().rev().find(|window| window.key == key && window.output == output)
    }

    /// Records a read of `seen` through `lexical_path`: the window `key` answered with `output` at `now`.
    /// `delivered` is false when the answer was a stub, which keeps the window's original delivery time.
    pub fn record(&mut self, seen: Seen, lexical_path: Option<PathBuf>, window: WindowRecord, delivered: bool) {
        self.tick += 1;
        let tick = self.tick;
        if !self.files.contains_key(&seen.real_path) && self.files.len() >= MAX_FILES {
            self.forget_least_recent();
        }
        let now = window.read_at;
        let record = self.files.entry(seen.real_path.clone()).or_insert_with(|| FileRecord {
            seen: seen.clone(),
            read_at: now,
            aliases: Vec::new(),
            windows: Vec::new(),
            last_used: tick,
        });
        if !record.seen.same_content_as(&seen) {
            // What was answered before no longer matches the file: no stub may refer to it.
            record.windows.clear();
        }
        record.seen = seen;
        record.read_at = now;
        record.last_used = tick;
        if let Some(alias) = lexical_path.filter(|alias| *alias != record.seen.real_path)
            && !record.aliases.contains(&alias)
        {
            record.aliases.truncate(MAX_ALIASES - 1);
            record.aliases.push(alias);
        }
        let earlier = record.windows.iter().position(|w| w.key == window.key && w.output == window.output);
        let window = match earlier {
            Some(i) if !delivered => WindowRecord { read_at: record.windows.remove(i).read_at, ..window },
            Some(i) => {
                record.windows.remove(i);
                window
            }
            None => window,
        };
        if record.windows.len() >= MAX_WINDOWS_PER_FILE {
            record.windows.remove(0);
        }
        record.windows.push(window);
    }

    /// Forgets one file (an edit tool that rewrote it, or a harness that dropped it from the context).
    pub fn forget(&mut self, real_path: &Path) {
        self.files.remove(real_path);
    }

    /// Forgets everything (a harness that compacted or cleared the model's context).
    pub fn clear(&mut self) {
        self.files.clear();
    }

    /// Files remembered.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Drops the least recently read eighth of the files at once, so that a full ledger does not pay a scan on every
    /// new file.
    fn forget_least_recent(&mut self) {
        let mut ticks: Vec<u64> = self.files.values().map(|record| record.last_used).collect();
        let cut = (ticks.len() / 8).max(1);
        let (_, threshold, _) = ticks.select_nth_unstable(cut - 1);
        let threshold = *threshold;
        self.files.retain(|_, record| record.last_used > threshold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::index::FileVersion;

    fn seen(path: &str, content: &[u8]) -> Seen {
        Seen {
            real_path: PathBuf::from(path),
            is_dir: false,
            device: 1,
            inode: 2,
            version: FileVersion { size: content.len() as u64, modified_ns: 0, changed_ns: 0 },
            content: Some(ContentHash::of(content)),
        }
    }

    fn window(key: &str, output: &str, at: u64) -> WindowRecord {
        WindowRecord {
            key: ContentHash::of(key.as_bytes()),
            output: ContentHash::of(output.as_bytes()),
            read_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(at),
        }
    }

    #[test]
    fn a_repeat_needs_the_same_window_the_same_answer_and_the_same_file() {
        let mut ledger = Ledger::default();
        ledger.record(seen("/r/a", b"v1"), None, window("w", "out", 1), true);
        let same = window("w", "out", 2);
        assert!(ledger.repeat_of(&seen("/r/a", b"v1"), same.key, same.output).is_some());
        let other_window = window("w2", "out", 2);
        assert!(ledger.repeat_of(&seen("/r/a", b"v1"), other_window.key, other_window.output).is_none());
        assert!(ledger.repeat_of(&seen("/r/a", b"v2"), same.key, same.output).is_none(), "file changed");
        assert!(ledger.repeat_of(&seen("/r/b", b"v1"), same.key, same.output).is_none(), "other file");
    }

    #[test]
    fn a_stub_keeps_the_time_the_content_was_delivered() {
        let mut ledger = Ledger::default();
        ledger.record(seen("/r/a", b"v1"), None, window("w", "out", 1), true);
        ledger.record(seen("/r/a", b"v1"), None, window("w", "out", 9), false);
        let repeat = window("w", "out", 10);
        let earlier = ledger.repeat_of(&seen("/r/a", b"v1"), repeat.key, repeat.output).unwrap();
        assert_eq!(earlier.read_at, SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1));
        assert_eq!(ledger.file(Path::new("/r/a")).unwrap().windows.len(), 1);
    }

    #[test]
    fn a_changed_file_forgets_its_windows() {
        let mut ledger = Ledger::default();
        ledger.record(seen("/r/a", b"v1"), None, window("w", "out", 1), true);
        ledger.record(seen("/r/a", b"v2"), None, window("w2", "other", 2), true);
        let old = window("w", "out", 3);
        assert!(ledger.repeat_of(&seen("/r/a", b"v2"), old.key, old.output).is_none());
        assert_eq!(ledger.file(Path::new("/r/a")).unwrap().windows.len(), 1);
    }

    #[test]
    fn windows_and_files_are_bounded() {
        let mut ledger = Ledger::default();
        for i in 0..(MAX_WINDOWS_PER_FILE + 5) {
            ledger.record(seen("/r/a", b"v1"), None, window(&i.to_string(), "out", 1), true);
        }
        assert_eq!(ledger.file(Path::new("/r/a")).unwrap().windows.len(), MAX_WINDOWS_PER_FILE);
        for i in 0..(MAX_FILES + 1) {
            ledger.record(seen(&format!("/r/{i}"), b"v"), None, window("w", "out", 1), true);
        }
        assert!(ledger.len() <= MAX_FILES);
        assert!(ledger.file(Path::new(&format!("/r/{MAX_FILES}"))).is_some(), "the newest file is kept");
        assert!(ledger.file(Path::new("/r/a")).is_none(), "the least recent file is forgotten");
    }

    #[test]
    fn aliases_find_a_file_read_through_a_link() {
        let mut ledger = Ledger::default();
        ledger.record(seen("/r/real", b"v"), Some(PathBuf::from("/r/link")), window("w", "o", 1), true);
        assert!(ledger.file_by_alias(Path::new("/r/link")).is_some());
        assert!(ledger.file_by_alias(Path::new("/r/other")).is_none());
    }
}
