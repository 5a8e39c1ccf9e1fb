//! A sparse line index: where some lines of a big file start, learned by the passes reads make over it, so that later
//! reads of the same file begin near their window instead of at the top.
//!
//! Contract:
//! - An index describes one file's text in one newline layout ([`FileIdentity`]: device, inode, where the text
//!   starts, the line feed code unit) at one moment ([`FileVersion`]: size, modification and change times).
//! - It is used as is only while the live file's identity and version match it exactly, and the fingerprints of the
//!   text's first and last bytes still match (timestamps can be as coarse as a clock tick). When the file only grew and
//!   the fingerprints of its old first and last bytes still match, it is extended over the new bytes instead of
//!   rebuilt. Anything else is a different file: a full pass builds a new index.
//! - A checkpoint is the start of a line, about every `spacing` bytes. A read begins at the last checkpoint before its
//!   window after checking that the byte before it is a line feed, so a wrong checkpoint is caught, never trusted.
//! - An index may be *partial*: a pass that stopped before the end (its window was complete and the rest was too far
//!   to count, or its time budget ran out) leaves what it learned up to where it stopped ([`LineIndex::reach`]). A
//!   partial index places windows that start before its reach and lets a later pass go on counting from there; only
//!   a complete one knows the total.
//! - Memory is bounded: at most [`MAX_CHECKPOINTS`] per index; the spacing doubles rather than exceed it.

pub mod disk;
// Streams are parked only by the `compressed` feature's reads.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub mod parked;
pub mod store;
// Streamed texts are made only by the `compressed` feature's reads.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub mod streamed;

use super::scan::{self, Checkpoint, Flow, Pass, PassObserver, ScanSummary, Start};
use super::{EndingCounter, Source, count_newlines, newlines};
use crate::classify::codec::NewlineLayout;
use serde::{Deserialize, Serialize};
use std::fs::{File, Metadata};
use std::io;

/// Files smaller than this are not indexed: a full pass over them costs less than keeping an index.
pub const MIN_INDEXED_BYTES: u64 = 1 << 20;
/// Bytes between checkpoints while an index is small.
const INITIAL_SPACING: u64 = 256 * 1024;
/// Widest spacing an index can reach by doubling (a file of 2^63 bytes); a stored index claiming more is corrupt.
const MAX_SPACING: u64 = INITIAL_SPACING << 45;
/// Most checkpoints one index keeps (16 bytes each): 128 KiB at most, a 2 GiB file at the initial spacing.
pub const MAX_CHECKPOINTS: usize = 8192;
/// Bytes at the start and at the end of the indexed text that are fingerprinted to recognise an append.
const SAMPLE_LEN: u64 = 64;

/// Which file's text an index describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    /// The device holding the file.
    pub device: u64,
    /// The file's inode on that device.
    pub inode: u64,
    /// Where the text starts (after a byte order mark).
    pub data_start: u64,
    /// How line feeds look in the text's encoding.
    pub layout: NewlineLayout,
}

impl FileIdentity {
    /// The identity of the text of the open `file` (whose metadata is `metadata`), starting at `data_start`, laid
    /// out as `layout`.
    pub fn of(file: &File, metadata: &Metadata, data_start: u64, layout: NewlineLayout) -> Self {
        let (device, inode) = crate::platform::identity(file, metadata);
        FileIdentity { device, inode, data_start, layout }
    }
}

/// The state of a file when it was indexed; any write changes at least one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileVersion {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, in nanoseconds since the epoch.
    pub modified_ns: i128,
    /// Status change time, in nanoseconds since the epoch (changes even when a write restores the old mtime).
    pub changed_ns: i128,
}

impl FileVersion {
    /// The version of the file with `metadata`.
    pub fn of(metadata: &Metadata) -> Self {
        let (modified_ns, changed_ns) = crate::platform::times_ns(metadata);
        FileVersion { size: metadata.len(), modified_ns, changed_ns }
    }
}

/// What the passes over a file learned about its lines, kept for later reads of the same file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineIndex {
    /// The file and text it describes.
    pub identity: FileIdentity,
    /// The file's state when indexed.
    pub version: FileVersion,
    checkpoints: Vec<Checkpoint>,
    spacing: u64,
    /// Where counting stopped: the end of the text (`version.size`) when the index is complete.
    reach: u64,
    /// Line feeds before `reach`.
    newlines: u64,
    /// Line endings before `reach`.
    endings: EndingCounter,
    trailing_newline: bool,
    /// CRC-32 of the text's first `SAMPLE_LEN` bytes and of its last, to recognise an append.
    head: u32,
    tail: u32,
}

impl LineIndex {
    /// Whether the index counted the whole text: then it knows the total.
    pub fn is_complete(&self) -> bool {
        self.reach == self.version.size
    }

    /// Where counting stopped (the end of the text when complete).
    pub fn reach(&self) -> u64 {
        self.reach
    }

    /// Line feeds before [`LineIndex::reach`]: the lines known to end before it.
    pub fn newlines(&self) -> u64 {
        self.newlines
    }

    /// The line endings counted before [`LineIndex::reach`], for a pass that goes on from there.
    pub fn endings(&self) -> &EndingCounter {
        &self.endings
    }

    /// Lines in the indexed text: the total when complete, else a lower bound (the lines counted, and the one that
    /// goes on past the reach).
    pub fn total_lines(&self) -> u64 {
        let partial_line = self.version.size > self.identity.data_start && !self.trailing_newline;
        self.newlines + u64::from(partial_line)
    }

    /// What a full pass over the indexed text would report; for a partial index, what is known (`reached_end` false,
    /// `total_lines` a lower bound).
    pub fn summary(&self) -> ScanSummary {
        ScanSummary {
            total_lines: self.total_lines(),
            endings: self.endings.finish(),
            trailing_newline: self.trailing_newline,
            end: self.reach,
            reached_end: self.is_complete(),
        }
    }

    /// The last checkpoint at or before `line` (the text's start when none is).
    pub fn checkpoint_before(&self, line: u64) -> Checkpoint {
        checkpoint_before(&self.checkpoints, line, self.identity.data_start)
    }

    /// Number of checkpoints (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.checkpoints.len()
    }

    /// Whether the index has no checkpoint (a file of few, long lines).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.checkpoints.is_empty()
    }

    /// Whether the first and last bytes of the text in `source` are still those indexed.
    pub fn ends_match(&self, source: &Source<'_>) -> io::Result<bool> {
        Ok(fingerprints(source, self.version.size)? == (self.head, self.tail))
    }

    /// This index carried over the bytes `source` has beyond it, when the file only grew by appending: its old
    /// first and last bytes unchanged. `None` when it did not, or the pass stopped short. A partial index stays
    /// partial: it only takes the new version (what it counted is still there).
    pub fn extended(&self, source: &Source<'_>, version: FileVersion) -> io::Result<Option<LineIndex>> {
        let old_end = self.version.size;
        // The pass over the new bytes must start on a code unit boundary, as every pass does.
        let aligned = (old_end - self.identity.data_start).is_multiple_of(self.identity.layout.unit as u64);
        if version.size <= old_end || !aligned || !self.ends_match(source)? {
            return Ok(None);
        }
        if !self.is_complete() {
            let (head, tail) = fingerprints(source, version.size)?;
            return Ok(Some(LineIndex { version, head, tail, ..self.clone() }));
        }
        let mut builder = IndexBuilder::continuing(self);
        let pass = Pass {
            // Any point will do for a pass that captures nothing: only the line feeds before it matter.
            from: Checkpoint { line: self.newlines + 1, byte: old_end },
            endings: self.endings.clone(),
            observer: Some(&mut builder),
            ..Pass::whole(source)
        };
        scan::scan_pass(source, pass, Start::Byte(u64::MAX), 0, 0, |_| Flow::Done)?;
        builder.build(self.identity, version, source)
    }

    /// Whether the index is well formed for its own identity and version (checked before trusting one from disk).
    pub fn is_consistent(&self) -> bool {
        let data_start = self.identity.data_start;
        let increasing = self.checkpoints.windows(2).all(|w| w[0].line < w[1].line && w[0].byte < w[1].byte);
        let within = self
            .checkpoints
            .iter()
            .all(|c| c.line >= 2 && c.line <= self.newlines + 1 && c.byte > data_start && c.byte <= self.reach);
        let layout = self.identity.layout;
        let layout_ok = matches!(layout.unit, 1 | 2 | 4) && self.endings.layout() == layout;
        increasing
            && within
            && layout_ok
            && self.checkpoints.len() <= MAX_CHECKPOINTS
            && (INITIAL_SPACING..=MAX_SPACING).contains(&self.spacing)
            && (data_start..=self.version.size).contains(&self.reach)
            && (self.is_complete() || !self.trailing_newline)
            && self.newlines <= self.reach - data_start
    }

    /// Whether this index knows more of the same file than `other` does: a later version, or the same one counted
    /// further (a partial index must not replace the complete one a concurrent pass just made).
    pub fn knows_more_than(&self, other: &LineIndex) -> bool {
        self.identity != other.identity || self.version != other.version || self.reach > other.reach
    }
}

/// The last of `checkpoints` at or before `line` (the text's start, `data_start`, when none is).
pub fn checkpoint_before(checkpoints: &[Checkpoint], line: u64, data_start: u64) -> Checkpoint {
    let after = checkpoints.partition_point(|c| c.line <= line);
    match after.checked_sub(1) {
        Some(at) => checkpoints[at],
        None => Checkpoint { line: 1, byte: data_start },
    }
}

/// Whether `checkpoint` really starts a line in `source`: the text's start, or just after a line feed.
pub fn starts_a_line(source: &Source<'_>, checkpoint: Checkpoint) -> io::Result<bool> {
    let unit = source.layout.unit as u64;
    if checkpoint.byte == source.data_start {
        return Ok(true);
    }
    if checkpoint.byte < source.data_start + unit || checkpoint.byte > source.end {
        return Ok(false);
    }
    let mut before = [0u8; 4];
    let n = source.read_at(checkpoint.byte - unit, &mut before[..source.layout.unit])?;
    Ok(before[..n] == *source.layout.lf_unit())
}

/// CRC-32 of the first `SAMPLE_LEN` bytes of the text and of the last before `end`.
fn fingerprints(source: &Source<'_>, end: u64) -> io::Result<(u32, u32)> {
    let mut sample = [0u8; SAMPLE_LEN as usize];
    let head_len = SAMPLE_LEN.min(end.saturating_sub(source.data_start)) as usize;
    let n = source.read_at(source.data_start, &mut sample[..head_len])?;
    let head = crc32fast::hash(&sample[..n]);
    let tail_start = end.saturating_sub(SAMPLE_LEN).max(source.data_start);
    let n = source.read_at(tail_start, &mut sample[..(end - tail_start) as usize])?;
    Ok((head, crc32fast::hash(&sample[..n])))
}

/// Gathers checkpoints during a pass, and the counts at its end.
#[derive(Debug)]
pub struct IndexBuilder {
    checkpoints: Vec<Checkpoint>,
    spacing: u64,
    /// The next checkpoint is the first line start at or after this byte.
    next_at: u64,
    end: Option<PassEnd>,
}

/// Where the pass ended: at the end of the text (`complete`), or where it stopped before it.
#[derive(Debug)]
struct PassEnd {
    newlines: u64,
    endings: EndingCounter,
    trailing_newline: bool,
    end: u64,
    complete: bool,
}

impl IndexBuilder {
    /// A builder for a pass from the text's start.
    pub fn new(data_start: u64) -> Self {
        IndexBuilder {
            checkpoints: Vec::new(),
            spacing: INITIAL_SPACING,
            next_at: data_start + INITIAL_SPACING,
            end: None,
        }
    }

    /// A builder that goes on from `index`'s reach (its end, for an append).
    pub fn continuing(index: &LineIndex) -> Self {
        let last = index.checkpoints.last().map_or(index.identity.data_start, |c| c.byte);
        IndexBuilder {
            checkpoints: index.checkpoints.clone(),
            spacing: index.spacing,
            next_at: last.saturating_add(index.spacing),
            end: None,
        }
    }

    fn push(&mut self, checkpoint: Checkpoint) {
        self.checkpoints.push(checkpoint);
        if self.checkpoints.len() > MAX_CHECKPOINTS {
            // Keep every other checkpoint: half the memory, twice the spacing, and still bounded work per read.
            let mut keep = false;
            self.checkpoints.retain(|_| {
                keep = !keep;
                !keep
            });
            self.spacing = self.spacing.saturating_mul(2);
        }
        let last = self.checkpoints.last().map_or(checkpoint.byte, |c| c.byte);
        self.next_at = last.saturating_add(self.spacing);
    }

    /// The checkpoints gathered, if the pass reached the end of the text (a streamed text's, whose end only the pass
    /// learns).
    pub fn into_checkpoints(self) -> Option<Vec<Checkpoint>> {
        self.end.filter(|end| end.complete).map(|_| self.checkpoints)
    }

    /// The index of the text the pass went through: complete if it reached the end of the file as `version`
    /// describes it, partial if it stopped before; `None` if it ended elsewhere (the file holds less than its size
    /// says) or never saw a chunk.
    pub fn build(
        self,
        identity: FileIdentity,
        version: FileVersion,
        source: &Source<'_>,
    ) -> io::Result<Option<LineIndex>> {
        let Some(end) = self.end else { return Ok(None) };
        // A partial index must have counted something (a pass stopped at its very start knows nothing).
        let fits = if end.complete {
            end.end == version.size
        } else {
            (identity.data_start + 1..version.size).contains(&end.end)
        };
        if !fits {
            return Ok(None);
        }
        // Two reads of a few bytes, done also when the pass stopped because its budget ran out.
        let (head, tail) = fingerprints(&source.without_budget(), version.size)?;
        Ok(Some(LineIndex {
            identity,
            version,
            checkpoints: self.checkpoints,
            spacing: self.spacing,
            reach: end.end,
            newlines: end.newlines,
            endings: end.endings,
            trailing_newline: end.complete && end.trailing_newline,
            head,
            tail,
        }))
    }
}

/// Looks at each chunk of the pass for a checkpoint, and records the counts at its end.
impl PassObserver for IndexBuilder {
    fn observe(&mut self, layout: NewlineLayout, chunk: &[u8], pos: u64, newlines_before: u64, chunk_lf: u64) {
        let chunk_end = pos + chunk.len() as u64;
        // A chunk without a line feed (inside a very long line) cannot hold a line start: no second look at it.
        if chunk_end <= self.next_at || chunk_lf == 0 {
            return;
        }
        // Chunks start on code unit boundaries; so must the search.
        let from = usize::try_from(self.next_at.saturating_sub(pos)).unwrap_or(0);
        let from = from - from % layout.unit;
        let Some(nl) = newlines(layout, &chunk[from..]).next().map(|nl| nl + from) else { return };
        let line = newlines_before + count_newlines(layout, &chunk[..nl]) + 2;
        self.push(Checkpoint { line, byte: pos + (nl + layout.unit) as u64 });
    }

    fn finish(&mut self, newlines: u64, endings: EndingCounter, trailing_newline: bool, end: u64) {
        self.end = Some(PassEnd { newlines, endings, trailing_newline, end, complete: true });
    }

    fn stopped(&mut self, newlines: u64, endings: &EndingCounter, at: u64) {
        self.end =
            Some(PassEnd { newlines, endings: endings.clone(), trailing_newline: false, end: at, complete: false });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::classify::Codec;
    use crate::window::CHUNK_LEN;
    use std::io::Write;

    fn utf8() -> NewlineLayout {
        Codec::for_label("utf-8").unwrap().newline_layout()
    }

    /// Lines of varied length, `n` of them, numbered so a line's text tells its number.
    pub(crate) fn numbered_lines(first: u64, n: u64) -> Vec<u8> {
        (first..first + n).flat_map(|i| format!("line {i} {}\n", "x".repeat((i % 97) as usize)).into_bytes()).collect()
    }

    fn index_of(file: &std::fs::File) -> LineIndex {
        let metadata = file.metadata().unwrap();
        let source = Source::new(file, 0, metadata.len(), utf8());
        let mut builder = IndexBuilder::new(0);
        let pass = Pass { observer: Some(&mut builder), ..Pass::whole(&source) };
        scan::scan_pass(&source, pass, Start::Line(1), 1, 100, |_| Flow::Done).unwrap();
        let identity = FileIdentity::of(file, &metadata, 0, utf8());
        builder.build(identity, FileVersion::of(&metadata), &source).unwrap().expect("a whole pass builds an index")
    }

    fn file_with(bytes: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn every_checkpoint_is_a_line_start_with_its_true_number() {
        let bytes = numbered_lines(1, 60_000);
        let file = file_with(&bytes);
        let index = index_of(&file);
        assert!(index.len() >= (bytes.len() as u64 / INITIAL_SPACING - 1) as usize, "{} checkpoints", index.len());
        let source = Source::new(&file, 0, bytes.len() as u64, utf8());
        for checkpoint in &index.checkpoints {
            assert!(starts_a_line(&source, *checkpoint).unwrap());
            let at = checkpoint.byte as usize;
            assert!(bytes[at..].starts_with(format!("line {} ", checkpoint.line).as_bytes()), "{checkpoint:?}");
        }
        assert_eq!(index.total_lines(), 60_000);
        assert!(index.summary().trailing_newline);
        assert_eq!(index.summary().endings.describe(), "lf");
    }

    #[test]
    fn the_checkpoint_before_a_line_is_the_nearest_one_at_or_above_it() {
        let file = file_with(&numbered_lines(1, 60_000));
        let index = index_of(&file);
        assert_eq!(index.checkpoint_before(1), Checkpoint { line: 1, byte: 0 });
        let second = index.checkpoints[1];
        assert_eq!(index.checkpoint_before(second.line), second);
        assert_eq!(index.checkpoint_before(second.line - 1), index.checkpoints[0]);
        assert_eq!(index.checkpoint_before(u64::MAX), *index.checkpoints.last().unwrap());
    }

    #[test]
    fn a_lying_checkpoint_is_caught() {
        let file = file_with(&numbered_lines(1, 60_000));
        let index = index_of(&file);
        let source = Source::new(&file, 0, index.version.size, utf8());
        let real = index.checkpoints[0];
        assert!(!starts_a_line(&source, Checkpoint { byte: real.byte + 1, ..real }).unwrap());
        assert!(!starts_a_line(&source, Checkpoint { byte: index.version.size + 1, ..real }).unwrap());
    }

    #[test]
    fn extending_over_an_append_equals_indexing_the_whole_file() {
        let mut bytes = numbered_lines(1, 40_000);
        bytes.extend_from_slice(b"a partial line");
        let mut file = file_with(&bytes);
        let before = index_of(&file);
        file.write_all(b" goes on\r\n").unwrap();
        file.write_all(&numbered_lines(40_001, 30_000)).unwrap();
        let metadata = file.metadata().unwrap();
        let source = Source::new(&file, 0, metadata.len(), utf8());
        let extended = before.extended(&source, FileVersion::of(&metadata)).unwrap().expect("an append extends");
        let rebuilt = index_of(&file);
        assert_eq!(extended, rebuilt);
        assert_eq!(extended.total_lines(), 70_001);
        assert_eq!(extended.summary().endings.describe(), "mixed");
    }

    #[test]
    fn a_file_rewritten_before_its_old_end_is_not_extended() {
        let bytes = numbered_lines(1, 40_000);
        let file = file_with(&bytes);
        let before = index_of(&file);
        let mut changed = bytes.clone();
        let last = changed.len() - 2;
        changed[last] = b'#';
        changed.extend_from_slice(&numbered_lines(40_001, 10));
        let file = file_with(&changed);
        let metadata = file.metadata().unwrap();
        let source = Source::new(&file, 0, metadata.len(), utf8());
        assert_eq!(before.extended(&source, FileVersion::of(&metadata)).unwrap(), None);
        // A file that shrank is not extended either.
        let shorter = file_with(&bytes[..bytes.len() / 2]);
        let metadata = shorter.metadata().unwrap();
        let source = Source::new(&shorter, 0, metadata.len(), utf8());
        assert_eq!(before.extended(&source, FileVersion::of(&metadata)).unwrap(), None);
    }

    #[test]
    fn too_many_checkpoints_halve_and_double_the_spacing() {
        let mut builder = IndexBuilder::new(0);
        for k in 1..=MAX_CHECKPOINTS as u64 + 1 {
            builder.push(Checkpoint { line: 2 * k, byte: k * INITIAL_SPACING });
        }
        assert!(builder.checkpoints.len() <= MAX_CHECKPOINTS / 2 + 1, "{}", builder.checkpoints.len());
        assert_eq!(builder.spacing, 2 * INITIAL_SPACING);
        assert!(builder.checkpoints.windows(2).all(|w| w[1].byte - w[0].byte == 2 * INITIAL_SPACING));
        assert_eq!(builder.next_at, builder.checkpoints.last().unwrap().byte + 2 * INITIAL_SPACING);
    }

    #[test]
    fn utf16_checkpoints_sit_on_code_units() {
        let layout = Codec::for_label("utf-16le").unwrap().newline_layout();
        let mut bytes = vec![0xFF, 0xFE];
        let text: String = (1..=40_000).map(|i| format!("line {i}\u{0A0A}\n")).collect();
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let file = file_with(&bytes);
        let source = Source::new(&file, 2, bytes.len() as u64, layout);
        let mut builder = IndexBuilder::new(2);
        let pass = Pass { observer: Some(&mut builder), ..Pass::whole(&source) };
        scan::scan_pass(&source, pass, Start::Line(1), 1, 100, |_| Flow::Done).unwrap();
        let metadata = file.metadata().unwrap();
        let identity = FileIdentity::of(&file, &metadata, 2, layout);
        let index = builder.build(identity, FileVersion::of(&metadata), &source).unwrap().unwrap();
        assert!(!index.is_empty());
        assert_eq!(index.total_lines(), 40_000);
        for checkpoint in &index.checkpoints {
            assert_eq!((checkpoint.byte - 2) % 2, 0);
            let expected: Vec<u8> =
                format!("line {} ", checkpoint.line).encode_utf16().flat_map(u16::to_le_bytes).collect();
            assert!(bytes[checkpoint.byte as usize..].starts_with(&expected[..expected.len() - 2]), "{checkpoint:?}");
        }
    }

    #[test]
    fn a_utf16_file_cut_mid_code_unit_is_rebuilt_not_extended() {
        let layout = Codec::for_label("utf-16le").unwrap().newline_layout();
        let text: String = (1..=40_000).map(|i| format!("line {i}\n")).collect();
        let mut bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        bytes.push(b'x'); // half a code unit
        let mut file = file_with(&bytes);
        let metadata = file.metadata().unwrap();
        let source = Source::new(&file, 0, metadata.len(), layout);
        let mut builder = IndexBuilder::new(0);
        let pass = Pass { observer: Some(&mut builder), ..Pass::whole(&source) };
        scan::scan_pass(&source, pass, Start::Line(1), 1, 100, |_| Flow::Done).unwrap();
        let identity = FileIdentity::of(&file, &metadata, 0, layout);
        let index = builder.build(identity, FileVersion::of(&metadata), &source).unwrap().unwrap();
        file.write_all(&[0, b'\n', 0]).unwrap();
        let metadata = file.metadata().unwrap();
        let source = Source::new(&file, 0, metadata.len(), layout);
        assert_eq!(index.extended(&source, FileVersion::of(&metadata)).unwrap(), None);
    }

    #[test]
    fn an_index_is_consistent_until_tampered_with() {
        let file = file_with(&numbered_lines(1, 60_000));
        let index = index_of(&file);
        assert!(index.is_consistent());
        let mut swapped = index.clone();
        swapped.checkpoints.swap(0, 1);
        assert!(!swapped.is_consistent());
        let mut beyond = index.clone();
        beyond.checkpoints.last_mut().unwrap().byte = index.version.size + 1;
        assert!(!beyond.is_consistent());
        let mut too_many_lines = index.clone();
        too_many_lines.newlines = index.version.size + 1;
        assert!(!too_many_lines.is_consistent());
        assert!(CHUNK_LEN as u64 <= INITIAL_SPACING, "a checkpoint per chunk at most");
    }
}
