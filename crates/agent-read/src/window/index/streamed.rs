//! The index of a streamed text (the text a compressed file holds): what a full pass over it learned — its totals,
//! where some of its lines start, and where its decoder can resume — so that a later read of the same file decodes
//! only from the restart point before its window, and a tail needs no pass to count lines.
//!
//! Contract:
//! - It describes one file ([`FileIdentity`]) at one moment ([`FileVersion`]), and is used only while both match and
//!   the fingerprints of the compressed file's first and last bytes ([`FileEnds`]) still match: timestamps can be as
//!   coarse as a clock tick, and a compressed file's last bytes hold the checksum of its text.
//! - Line checkpoints are line starts in the text, spaced as a file's are ([`super`]); a read checks that the byte
//!   before one is a line feed before it starts there. Restart points are checked by the decoder before it resumes
//!   ([`restarts`](crate::window::restarts)).
//! - Kept in memory only, never in the disk cache: a gzip restart point holds the 32 KiB of text before it, and the
//!   disk cache holds positions and counts only, never content.

use super::{FileIdentity, FileVersion, SAMPLE_LEN, checkpoint_before};
use crate::window::restarts::Restarts;
use crate::window::scan::{Checkpoint, ScanSummary};
use std::fs::File;
use std::io;
use std::sync::Arc;

/// CRC-32 of a compressed file's first and last bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileEnds {
    head: u32,
    tail: u32,
}

impl FileEnds {
    /// The fingerprints of the first and last bytes of `file`, `size` bytes long.
    pub fn of(file: &File, size: u64) -> io::Result<FileEnds> {
        let mut sample = [0u8; SAMPLE_LEN as usize];
        let head_len = SAMPLE_LEN.min(size) as usize;
        let n = crate::platform::read_at(file, &mut sample[..head_len], 0)?;
        let head = crc32fast::hash(&sample[..n]);
        let tail_start = size.saturating_sub(SAMPLE_LEN);
        let n = crate::platform::read_at(file, &mut sample[..(size - tail_start) as usize], tail_start)?;
        Ok(FileEnds { head, tail: crc32fast::hash(&sample[..n]) })
    }
}

/// What a full pass over a streamed text learned, kept for later reads of the same file.
#[derive(Debug)]
pub struct StreamIndex {
    /// The compressed file it describes.
    pub identity: FileIdentity,
    /// The file's state when indexed.
    pub version: FileVersion,
    /// The file's ends when indexed.
    pub ends: FileEnds,
    summary: ScanSummary,
    checkpoints: Vec<Checkpoint>,
    restarts: Arc<Restarts>,
}

impl StreamIndex {
    /// The index of the file `identity` names, as `version` and `ends` describe it, from a pass that reached the
    /// end of its text (`summary`) and gathered `checkpoints` and `restarts` on the way.
    pub fn new(
        (identity, version, ends): (FileIdentity, FileVersion, FileEnds),
        summary: ScanSummary,
        checkpoints: Vec<Checkpoint>,
        restarts: Restarts,
    ) -> Self {
        StreamIndex { identity, version, ends, summary, checkpoints, restarts: Arc::new(restarts) }
    }

    /// What a full pass over the text would report.
    pub fn summary(&self) -> ScanSummary {
        self.summary
    }

    /// The last line checkpoint at or before `line` (the text's start when none is).
    pub fn checkpoint_before(&self, line: u64) -> Checkpoint {
        checkpoint_before(&self.checkpoints, line, self.identity.data_start)
    }

    /// Where the text's decoder can resume.
    pub fn restarts(&self) -> Arc<Restarts> {
        self.restarts.clone()
    }

    /// Bytes this index keeps in memory, about.
    pub fn memory(&self) -> usize {
        let points = self.restarts.count() * size_of::<crate::window::restarts::Restart>();
        self.checkpoints.len() * size_of::<Checkpoint>() + points + self.restarts.state_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    #[test]
    fn the_ends_of_a_file_tell_a_rewrite_of_the_same_size() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7u8; 1000]).unwrap();
        let before = FileEnds::of(&file, 1000).unwrap();
        assert_eq!(FileEnds::of(&file, 1000).unwrap(), before);
        file.seek(SeekFrom::Start(990)).unwrap();
        file.write_all(b"x").unwrap();
        assert_ne!(FileEnds::of(&file, 1000).unwrap(), before);
        let small = tempfile::tempfile().unwrap();
        assert_eq!(FileEnds::of(&small, 0).unwrap(), FileEnds { head: 0, tail: 0 }, "an empty file has ends too");
    }
}
