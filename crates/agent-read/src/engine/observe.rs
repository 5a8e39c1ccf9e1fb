//! What a session learns about the file behind a read: where it really is, which file it is, its size and times,
//! and, for files up to [`CONTENT_HASH_LIMIT`], a hash of the whole content. With the hash, a later check can tell a
//! file that was only touched from one that changed, even within the same clock tick.
//!
//! The hash is taken through the handle the read used, after the read. The file's size and times are compared
//! before and after hashing, and a file written in between gets no hash. A check then falls back to comparing
//! metadata, which counts the write as a change.

use crate::render::session::Change;
use crate::window::index::FileVersion;
use std::fs::{File, Metadata};
use std::io;
use std::path::PathBuf;
use xxhash_rust::xxh3::Xxh3;

/// Files up to this size get a content hash; bigger ones are compared by metadata only.
// Hashing runs at about 4 GB/s from the page cache: 8 MiB costs about 2 ms on every session read of such a file,
// which is as much as a read that only costs its window should carry. Source files are far smaller.
pub const CONTENT_HASH_LIMIT: u64 = 8 * 1024 * 1024;

/// A 128-bit hash of some bytes (XXH3): equal content gives equal hashes, and different content almost never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHash(pub u128);

impl ContentHash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(xxhash_rust::xxh3::xxh3_128(bytes))
    }
}

/// A file or directory as a read found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its real path (symbolic links resolved), absolute.
    pub real_path: PathBuf,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// The device holding it.
    pub device: u64,
    /// Its inode on that device.
    pub inode: u64,
    /// Size and times.
    pub version: FileVersion,
    /// Hash of the whole content, for regular files up to [`CONTENT_HASH_LIMIT`] that did not change while hashed.
    pub content: Option<ContentHash>,
}

impl Seen {
    /// What the open `file` (whose metadata is `metadata`) is: the file or directory at `real_path`, without a
    /// content hash.
    pub fn of(real_path: PathBuf, file: &File, metadata: &Metadata) -> Self {
        let (device, inode) = crate::platform::identity(file, metadata);
        Seen { real_path, is_dir: metadata.is_dir(), device, inode, version: FileVersion::of(metadata), content: None }
    }

    /// Whether `later` shows the same content as `self`. Hashes decide when both sides have one, so a file that was
    /// touched or rewritten with the same bytes is unchanged. Otherwise any difference in identity, size or times
    /// counts as a change.
    pub fn same_content_as(&self, later: &Seen) -> bool {
        match (self.content, later.content) {
            (Some(before), Some(after)) => before == after,
            _ => self.device == later.device && self.inode == later.inode && self.version == later.version,
        }
    }

    /// How `later` differs from `self`: the facts a session's reason for calling it changed is made of.
    pub fn change_to(&self, later: &Seen) -> Change {
        Change {
            now_a_directory: (self.is_dir != later.is_dir).then_some(later.is_dir),
            sizes: (self.version.size != later.version.size).then_some((self.version.size, later.version.size)),
            replaced: self.device != later.device || self.inode != later.inode,
            by_content: self.content.is_some() && later.content.is_some(),
        }
    }
}

/// Hashes the whole of an open regular file, or returns `None` when it is too big, holds more than its reported size
/// (a `/proc`-style file reporting 0), or changed while it was being hashed. `opened` is the metadata taken when the
/// file was opened; `head` is the file's first bytes when they were already read (else empty), which are not read
/// again: a small file's head is all of it.
pub fn hash_file(file: &File, opened: &Metadata, head: &[u8]) -> io::Result<Option<ContentHash>> {
    let size = opened.len();
    if !opened.is_file() || size > CONTENT_HASH_LIMIT {
        return Ok(None);
    }
    let mut hasher = Xxh3::new();
    hasher.update(head);
    let mut position = head.len() as u64;
    // With no head, read to the end even when the size says there is nothing: a `/proc` file reports 0.
    if head.is_empty() || position < size {
        position = hash_rest(file, &mut hasher, position, size)?;
    }
    // A file that grew or was written meanwhile shows it in its size or times: then the bytes hashed are not the
    // bytes the read showed.
    let after = file.metadata()?;
    let stable = position == size && FileVersion::of(&after) == FileVersion::of(opened);
    Ok(stable.then(|| ContentHash(hasher.digest128())))
}

/// Feeds the file from `position` to its end into `hasher`; returns where it stopped (past `size` when it grew).
fn hash_rest(file: &File, hasher: &mut Xxh3, mut position: u64, size: u64) -> io::Result<u64> {
    // Sized to the file (one byte more, to see growth), up to 64 KiB: zeroing and freeing a 64 KiB buffer for a
    // 7 KB file cost more than hashing it.
    let mut buffer = vec![0u8; usize::try_from(size.saturating_sub(position) + 1).unwrap_or(usize::MAX).min(64 * 1024)];
    loop {
        let n = match crate::platform::read_at(file, &mut buffer, position) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        position += n as u64;
        if position > size {
            break;
        }
    }
    Ok(position)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen_of(path: &std::path::Path) -> Seen {
        let file = File::open(path).unwrap();
        let metadata = file.metadata().unwrap();
        let mut seen = Seen::of(path.to_path_buf(), &file, &metadata);
        seen.content = hash_file(&file, &metadata, &[]).unwrap();
        seen
    }

    #[test]
    fn equal_bytes_hash_equal_and_a_touch_keeps_the_content_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let before = seen_of(&path);
        assert_eq!(before.content, Some(ContentHash::of(b"one\ntwo\n")));
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
        let touched = seen_of(&path);
        assert_ne!(before.version, touched.version);
        assert!(before.same_content_as(&touched));
    }

    #[test]
    fn a_same_size_rewrite_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let before = seen_of(&path);
        std::fs::write(&path, "one\nTWO\n").unwrap();
        assert!(!before.same_content_as(&seen_of(&path)));
    }

    #[test]
    fn without_hashes_metadata_decides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "x").unwrap();
        let mut before = seen_of(&path);
        before.content = None;
        assert!(before.same_content_as(&seen_of(&path)));
        let mut moved = before.clone();
        moved.version.modified_ns += 1;
        assert!(!before.same_content_as(&moved));
    }

    #[test]
    fn empty_files_are_hashed_but_oversized_and_proc_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(seen_of(&empty).content, Some(ContentHash::of(b"")));
        // Reports size 0 but has content.
        assert_eq!(seen_of(std::path::Path::new("/proc/self/status")).content, None);
        let big = dir.path().join("big");
        File::create(&big).unwrap().set_len(CONTENT_HASH_LIMIT + 1).unwrap();
        assert_eq!(seen_of(&big).content, None);
    }

    #[test]
    fn a_head_already_read_gives_the_same_hash_and_still_sees_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let content: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = File::open(&path).unwrap();
        let metadata = file.metadata().unwrap();
        let whole = Some(ContentHash::of(&content));
        assert_eq!(hash_file(&file, &metadata, &content[..65_536]).unwrap(), whole, "head, then the rest");
        assert_eq!(hash_file(&file, &metadata, &content).unwrap(), whole, "the head is the whole file");
        // Written after the open: the times say so, even though the head is all the bytes the size promised.
        std::fs::write(&path, [&content[..], b"more"].concat()).unwrap();
        assert_eq!(hash_file(&file, &metadata, &content).unwrap(), None);
    }

    #[test]
    fn reasons_say_how_the_file_changed() {
        use crate::render::session::change_reason;
        let seen = |size: u64, content: Option<u128>, inode: u64| Seen {
            real_path: "/r/a".into(),
            is_dir: false,
            device: 1,
            inode,
            version: FileVersion { size, modified_ns: 0, changed_ns: 0 },
            content: content.map(ContentHash),
        };
        assert_eq!(
            change_reason(seen(3, Some(1), 1).change_to(&seen(4, Some(2), 1))),
            "content changed (size 3 → 4 bytes)"
        );
        assert_eq!(change_reason(seen(3, Some(1), 1).change_to(&seen(3, Some(2), 1))), "content changed (same size)");
        assert!(change_reason(seen(3, Some(1), 1).change_to(&seen(3, Some(2), 9))).starts_with("replaced"));
        assert!(change_reason(seen(3, None, 1).change_to(&seen(3, None, 1))).contains("too big to compare"));
    }
}
