//! Line indexes on disk (`--index-cache DIR`): one small JSON file per indexed file, so that separate command-line
//! runs on the same big log skip the full pass too.
//!
//! A cache file is never trusted: it is used only when it parses, its checksum matches, it describes exactly the
//! file being read (device, inode, text layout) and is well formed; the version is then compared with the live file
//! like any kept index, and every checkpoint is checked against the file before a read starts there. Anything else
//! is ignored, and replaced after the next full pass. Files are written whole under a temporary name and renamed, so
//! a reader never sees half a file. They hold positions and counts only, never the file's content.

use super::{FileIdentity, LineIndex};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Format of the files written; files of another format are ignored.
const FORMAT: u32 = 2;
/// Larger cache files are not read: a well-formed one holds at most `MAX_CHECKPOINTS` pairs of numbers.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A folder holding line indexes.
#[derive(Debug, Clone)]
pub struct Folder {
    dir: PathBuf,
}

/// One cache file: the index and a CRC-32 of its JSON.
#[derive(Serialize, Deserialize)]
struct Stored {
    format: u32,
    checksum: u32,
    index: LineIndex,
}

impl Folder {
    /// The folder `dir`, created if missing; fails when it cannot be created or written to.
    pub fn open(dir: &Path) -> io::Result<Folder> {
        fs::create_dir_all(dir)?;
        let probe = tempfile::NamedTempFile::new_in(dir)?;
        drop(probe);
        Ok(Folder { dir: dir.to_path_buf() })
    }

    /// The cached index of the file `identity` names, if a valid one is there.
    pub fn load(&self, identity: FileIdentity) -> Option<LineIndex> {
        let mut text = Vec::new();
        // Non-blocking, and regular files only: anything else planted under the cache's name (a FIFO) must not hang
        // the read that consults it.
        let file =
            crate::platform::nonblocking_std(fs::OpenOptions::new().read(true)).open(self.path_of(identity)).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut text).ok()?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return None;
        }
        let stored: Stored = serde_json::from_slice(&text).ok()?;
        let json = serde_json::to_vec(&stored.index).ok()?;
        let valid = stored.format == FORMAT
            && stored.checksum == crc32fast::hash(&json)
            && stored.index.identity == identity
            && stored.index.is_consistent();
        valid.then_some(stored.index)
    }

    /// Writes `index` (replacing any older one); a failure leaves the folder as it was and costs only speed.
    pub fn save(&self, index: &LineIndex) {
        let _ignored = self.try_save(index);
    }

    fn try_save(&self, index: &LineIndex) -> io::Result<()> {
        let json = serde_json::to_vec(index)?;
        let stored = Stored { format: FORMAT, checksum: crc32fast::hash(&json), index: index.clone() };
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(&serde_json::to_vec(&stored)?)?;
        file.persist(self.path_of(index.identity)).map_err(|e| e.error)?;
        Ok(())
    }

    /// Removes the cached index of `identity`, if any.
    pub fn remove(&self, identity: FileIdentity) {
        let _ignored = fs::remove_file(self.path_of(identity));
    }

    /// `DEVICE-INODE-START-LF.lineidx`: one file per file and text layout, named without any path.
    fn path_of(&self, identity: FileIdentity) -> PathBuf {
        let lf: String = identity.layout.lf_unit().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{:x}-{:x}-{}-{lf}.lineidx", identity.device, identity.inode, identity.data_start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Codec;
    use crate::window::Source;
    use crate::window::index::tests::numbered_lines;
    use crate::window::index::{FileVersion, IndexBuilder};
    use crate::window::scan::{self, Flow, Pass, Start};

    fn indexed() -> (tempfile::NamedTempFile, LineIndex) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&numbered_lines(1, 40_000)).unwrap();
        let metadata = file.as_file().metadata().unwrap();
        let layout = Codec::for_label("utf-8").unwrap().newline_layout();
        let source = Source::new(file.as_file(), 0, metadata.len(), layout);
        let mut builder = IndexBuilder::new(0);
        let pass = Pass { observer: Some(&mut builder), ..Pass::whole(&source) };
        scan::scan_pass(&source, pass, Start::Line(1), 1, 10, |_| Flow::Done).unwrap();
        let identity = FileIdentity::of(file.as_file(), &metadata, 0, layout);
        let index = builder.build(identity, FileVersion::of(&metadata), &source).unwrap().unwrap();
        (file, index)
    }

    #[test]
    fn an_index_survives_the_round_trip_and_holds_no_content() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(&dir.path().join("made/on/demand")).unwrap();
        let (_file, index) = indexed();
        folder.save(&index);
        assert_eq!(folder.load(index.identity), Some(index.clone()));
        let text = fs::read_to_string(folder.path_of(index.identity)).unwrap();
        assert!(!text.contains("line 1"), "content leaked into the cache: {}", &text[..200]);
        folder.remove(index.identity);
        assert_eq!(folder.load(index.identity), None);
    }

    #[test]
    fn damaged_or_foreign_cache_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        let (_file, index) = indexed();
        let path = folder.path_of(index.identity);
        folder.save(&index);
        let good = fs::read(&path).unwrap();
        let mut stored: serde_json::Value = serde_json::from_slice(&good).unwrap();
        let damaged = [
            b"not json at all".to_vec(),
            good[..good.len() / 2].to_vec(),
            {
                // A checkpoint moved: the checksum no longer matches.
                let mut v = stored.clone();
                v["index"]["checkpoints"][0]["byte"] = serde_json::json!(12345);
                serde_json::to_vec(&v).unwrap()
            },
            {
                // Another format.
                let mut v = stored.clone();
                v["format"] = serde_json::json!(FORMAT + 1);
                serde_json::to_vec(&v).unwrap()
            },
            vec![b' '; MAX_FILE_BYTES as usize + 1],
        ];
        for bytes in damaged {
            fs::write(&path, &bytes).unwrap();
            assert_eq!(folder.load(index.identity), None, "{}", String::from_utf8_lossy(&bytes[..bytes.len().min(80)]));
        }
        // A valid file for another inode is not taken for this one.
        stored["index"]["identity"]["inode"] = serde_json::json!(index.identity.inode + 1);
        let json = serde_json::to_vec(&stored["index"]).unwrap();
        stored["checksum"] = serde_json::json!(crc32fast::hash(&json));
        fs::write(&path, serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(folder.load(index.identity), None);
    }

    #[test]
    fn a_spacing_no_index_can_reach_is_refused_even_with_a_good_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        let (_file, index) = indexed();
        let mut stored = serde_json::to_value(Stored { format: FORMAT, checksum: 0, index: index.clone() }).unwrap();
        stored["index"]["spacing"] = serde_json::json!(u64::MAX);
        stored["checksum"] = serde_json::json!(crc32fast::hash(&serde_json::to_vec(&stored["index"]).unwrap()));
        fs::write(folder.path_of(index.identity), serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(folder.load(index.identity), None);
    }

    #[test]
    fn a_fifo_under_the_cache_name_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        let (_file, index) = indexed();
        let path = folder.path_of(index.identity);
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        // No writer ever opens it: a blocking open would never return.
        assert_eq!(folder.load(index.identity), None);
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, "x").unwrap();
        assert!(Folder::open(&file).is_err());
        assert!(Folder::open(&file.join("below")).is_err());
    }
}
