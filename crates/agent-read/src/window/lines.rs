//! A line window over a source: where it starts (a line number, or a count from the end) and the pass that hands
//! its lines to a sink — through the file's [line index](super::index) when it has one, so a repeated read costs the
//! window, and building that index during the full pass when it has none. A streamed text (a compressed file's) has
//! an index of its own ([`streamed`](super::index::streamed)), whose restart points let the decoder start near the
//! window.

use super::index::store::LineIndexes;
use super::index::streamed::{FileEnds, StreamIndex};
use super::index::{FileIdentity, FileVersion, IndexBuilder, LineIndex, starts_a_line};
use super::scan::{self, CapturedLine, Flow, Pass, ScanSummary, Start};
use super::stream::ReadAt;
use super::{Source, tail};
use std::io;
use std::sync::Arc;

/// The line index a file read may use and keep: where indexes are kept, and which file and moment it must describe.
#[derive(Debug, Clone, Copy)]
pub struct Indexing<'a> {
    /// The reader's indexes.
    pub indexes: &'a LineIndexes,
    /// The file being read.
    pub identity: FileIdentity,
    /// Its state when opened.
    pub version: FileVersion,
    /// For a compressed file (whose text is streamed), the fingerprints of its compressed bytes' ends.
    pub ends: Option<FileEnds>,
}

/// Hands at most `limit` lines from `offset` (1-based; negative counts from the end) to `sink`, and returns what a
/// full pass would: the total line count and line-ending statistics. With `indexing`, a known index answers the
/// totals and the pass starts at its nearest checkpoint and stops after the window; otherwise one full pass counts
/// everything and leaves an index behind.
pub fn scan_lines(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    offset: i64,
    limit: u64,
    keep_max: usize,
    mut sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    if let Some(stream) = source.stream() {
        return scan_stream(source, stream, indexing, offset, limit, keep_max, sink);
    }
    let Some(indexing) = indexing else {
        return scan::scan(source, window_start(source, offset)?, limit, keep_max, sink);
    };
    if let Some(index) = indexing.indexes.find(indexing.identity, indexing.version, source)? {
        if let Some(summary) = scan_from_index(source, &index, offset, limit, keep_max, &mut sink)? {
            return Ok(summary);
        }
        indexing.indexes.forget(indexing.identity);
    }
    let mut builder = IndexBuilder::new(source.data_start);
    let pass = Pass { observer: Some(&mut builder), ..Pass::whole(source) };
    let summary = scan::scan_pass(source, pass, window_start(source, offset)?, limit, keep_max, sink)?;
    if let Some(index) = builder.build(indexing.identity, indexing.version, source)? {
        indexing.indexes.keep(Arc::new(index));
    }
    Ok(summary)
}

/// The window read from `index`'s nearest checkpoint; `None` (nothing handed to the sink) when that checkpoint is not
/// a line start in the file, so the index cannot be trusted.
fn scan_from_index(
    source: &Source<'_>,
    index: &LineIndex,
    offset: i64,
    limit: u64,
    keep_max: usize,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<Option<ScanSummary>> {
    let total = index.total_lines();
    let first = match offset {
        1.. => offset.unsigned_abs(),
        _ => total.saturating_sub(offset.unsigned_abs()) + 1,
    };
    if first > total {
        // Past the end: nothing to hand over, and the totals say why.
        return Ok(Some(index.summary()));
    }
    let from = index.checkpoint_before(first);
    if !starts_a_line(source, from)? {
        return Ok(None);
    }
    let pass = Pass { from, stop_when_done: true, ..Pass::whole(source) };
    scan::scan_pass(source, pass, Start::Line(first), limit, keep_max, sink)?;
    Ok(Some(index.summary()))
}

/// A window of a text read forward only. With the text's index (learned by an earlier full pass over the same
/// file), the totals are known and the pass starts at the line checkpoint before the window, the decoder resuming at
/// the restart point before that, and stops after the window. Without one, a full pass from the top counts every
/// line (handing over the window's lines on the way when it starts at a line number) and learns the index; a tail
/// is then read through the index just learned, so it decodes the text once and then only the end again.
fn scan_stream(
    source: &Source<'_>,
    stream: &dyn ReadAt,
    indexing: Option<Indexing<'_>>,
    offset: i64,
    limit: u64,
    keep_max: usize,
    mut sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    let known = indexing.and_then(|known| Some((known, known.ends?)));
    if let Some((known, ends)) = known
        && let Some(index) = known.indexes.find_stream(known.identity, known.version, ends)
    {
        let read = scan_from_stream_index(source, stream, &index, offset, limit, keep_max, &mut sink)?;
        if read.is_none() || stream.restart_failed() {
            index_forgotten(indexing);
        }
        if let Some(summary) = read {
            return Ok(summary);
        }
    }
    stream.record_restarts();
    let mut builder = IndexBuilder::new(source.data_start);
    let pass = Pass { observer: Some(&mut builder), ..Pass::whole(source) };
    let summary = if offset > 0 {
        scan::scan_pass(source, pass, Start::Line(offset.unsigned_abs()), limit, keep_max, &mut sink)?
    } else {
        scan::scan_pass(source, pass, Start::Line(u64::MAX), 0, 0, |_| Flow::Done)?
    };
    let learned = match (known, builder.into_checkpoints()) {
        (Some((known, ends)), Some(checkpoints)) => {
            let identity = (known.identity, known.version, ends);
            let index = Arc::new(StreamIndex::new(identity, summary, checkpoints, stream.recorded()));
            known.indexes.keep_stream(index.clone());
            Some(index)
        }
        _ => None,
    };
    if offset > 0 {
        return Ok(summary);
    }
    if let Some(index) = learned
        && let Some(summary) = scan_from_stream_index(source, stream, &index, offset, limit, keep_max, &mut sink)?
    {
        if stream.restart_failed() {
            index_forgotten(indexing);
        }
        return Ok(summary);
    }
    let first = summary.total_lines.saturating_sub(offset.unsigned_abs()) + 1;
    if summary.total_lines > 0 {
        let pass = Pass { stop_when_done: true, ..Pass::whole(source) };
        scan::scan_pass(source, pass, Start::Line(first), limit, keep_max, sink)?;
    }
    Ok(summary)
}

/// Forgets the index of the streamed text `indexing` names: one of its restart points or checkpoints proved wrong.
fn index_forgotten(indexing: Option<Indexing<'_>>) {
    if let Some(known) = indexing {
        known.indexes.forget_stream(known.identity);
    }
}

/// The window read through a streamed text's `index`: from the line checkpoint before it, the stream resuming at the
/// restart point before that. `None` (nothing handed to the sink) when that checkpoint is not a line start in the
/// text, so the index cannot be trusted.
fn scan_from_stream_index(
    source: &Source<'_>,
    stream: &dyn ReadAt,
    index: &StreamIndex,
    offset: i64,
    limit: u64,
    keep_max: usize,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<Option<ScanSummary>> {
    let summary = index.summary();
    let total = summary.total_lines;
    let first = match offset {
        1.. => offset.unsigned_abs(),
        _ => total.saturating_sub(offset.unsigned_abs()) + 1,
    };
    if total == 0 || first > total {
        return Ok(Some(summary));
    }
    stream.resume_from(index.restarts());
    let from = index.checkpoint_before(first);
    if !starts_a_line(source, from)? {
        return Ok(None);
    }
    let pass = Pass { from, stop_when_done: true, ..Pass::whole(source) };
    scan::scan_pass(source, pass, Start::Line(first), limit, keep_max, sink)?;
    Ok(Some(summary))
}

/// Where a line window starts without an index: a line number, or for a negative offset the byte where the last
/// lines begin (found by reading backward from the end).
fn window_start(source: &Source<'_>, offset: i64) -> io::Result<Start> {
    if offset > 0 {
        return Ok(Start::Line(offset.unsigned_abs()));
    }
    Ok(Start::Byte(tail::start_of_last_lines(source, offset.unsigned_abs())?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Codec;
    use crate::classify::codec::NewlineLayout;
    use crate::window::index::tests::numbered_lines;
    use std::io::{Seek, Write};

    fn utf8() -> NewlineLayout {
        Codec::for_label("utf-8").unwrap().newline_layout()
    }

    /// Reads a window; returns its lines' numbers and texts, and the totals.
    fn window(
        file: &std::fs::File,
        indexing: Option<Indexing<'_>>,
        offset: i64,
        limit: u64,
    ) -> (Vec<(u64, String)>, ScanSummary) {
        let size = file.metadata().unwrap().len();
        let source = Source::new(file, 0, size, utf8());
        let mut lines = Vec::new();
        let summary = scan_lines(&source, indexing, offset, limit, 200, |line| {
            lines.push((line.number, String::from_utf8_lossy(line.kept).into_owned()));
            Flow::More
        })
        .unwrap();
        (lines, summary)
    }

    fn indexing<'a>(indexes: &'a LineIndexes, file: &std::fs::File) -> Indexing<'a> {
        let metadata = file.metadata().unwrap();
        Indexing {
            indexes,
            identity: FileIdentity::of(file, &metadata, 0, utf8()),
            version: FileVersion::of(&metadata),
            ends: None,
        }
    }

    fn big_file() -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&numbered_lines(1, 60_000)).unwrap();
        file
    }

    #[test]
    fn indexed_windows_match_a_full_pass_from_the_top_and_from_the_end() {
        let file = big_file();
        let indexes = LineIndexes::in_memory();
        for (offset, limit) in [(1, 3), (45_000, 5), (-7, 10), (-60_000, 2), (59_999, 100)] {
            let plain = window(&file, None, offset, limit);
            let first = window(&file, Some(indexing(&indexes, &file)), offset, limit);
            let again = window(&file, Some(indexing(&indexes, &file)), offset, limit);
            assert_eq!(first, plain, "offset {offset}: the pass that builds the index");
            assert_eq!(again, plain, "offset {offset}: read through the index");
        }
        assert_eq!(indexes.len(), 1);
    }

    #[test]
    fn a_read_through_the_index_does_not_scan_before_its_checkpoint() {
        let mut file = big_file();
        let indexes = LineIndexes::in_memory();
        let known = indexing(&indexes, &file);
        window(&file, Some(known), 1, 1);
        // Erase every line break between 1 KiB and 64 KiB (the fingerprinted ends stay). Told the file is unchanged
        // (its old version), the reader must still number line 50,000 right: it starts at a checkpoint far below.
        let mut part = vec![0u8; 63 * 1024];
        crate::platform::read_at(&file, &mut part, 1024).unwrap();
        part.iter_mut().filter(|b| **b == b'\n').for_each(|b| *b = b'.');
        file.seek(std::io::SeekFrom::Start(1024)).unwrap();
        file.write_all(&part).unwrap();
        let (lines, summary) = window(&file, Some(known), 50_000, 1);
        assert_eq!(lines[0].0, 50_000);
        assert!(lines[0].1.starts_with("line 50000 "), "{lines:?}");
        assert_eq!(summary.total_lines, 60_000);
        // A full pass sees the damage: the same line is numbered differently.
        let (lines, _) = window(&file, None, 50_000, 1);
        assert!(!lines[0].1.starts_with("line 50000 "), "{lines:?}");
    }

    #[test]
    fn a_changed_file_is_indexed_afresh() {
        let mut file = big_file();
        let indexes = LineIndexes::in_memory();
        window(&file, Some(indexing(&indexes, &file)), -1, 1);
        file.write_all(b"one more line\n").unwrap();
        let (lines, summary) = window(&file, Some(indexing(&indexes, &file)), -1, 1);
        assert_eq!(lines, vec![(60_001, "one more line".to_string())]);
        assert_eq!(summary.total_lines, 60_001);
        // Rewritten in place, same size: the times differ, the old index is not used.
        file.rewind().unwrap();
        file.write_all(b"LINE").unwrap();
        let (lines, _) = window(&file, Some(indexing(&indexes, &file)), 1, 1);
        assert!(lines[0].1.starts_with("LINE 1 "), "{lines:?}");
    }

    #[test]
    fn a_stream_whose_totals_are_known_decodes_only_up_to_its_window() {
        use crate::window::stream::Stream;
        use std::sync::atomic::{AtomicU64, Ordering};
        struct Counted<'a>(&'a [u8], &'a AtomicU64);
        impl std::io::Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = std::io::Read::read(&mut self.0, buf)?;
                self.1.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
        }
        impl crate::window::stream::Decoder for Counted<'_> {}
        let text = numbered_lines(1, 60_000);
        let decoded = AtomicU64::new(0);
        let open =
            |_: Option<&crate::window::restarts::Restart>| -> io::Result<Box<dyn crate::window::stream::Decoder + '_>> {
                Ok(Box::new(Counted(&text, &decoded)))
            };
        let budget = crate::budget::Budget::new(
            std::time::Instant::now() + std::time::Duration::from_secs(3600),
            crate::budget::Cancel::new(),
        );
        let file = big_file();
        let indexes = LineIndexes::in_memory();
        let ends = FileEnds::of(&file, file.metadata().unwrap().len()).unwrap();
        let known = Indexing { ends: Some(ends), ..indexing(&indexes, &file) };
        let read = |offset: i64| {
            let stream = Stream::new(&open, budget.clone());
            let source = Source::streamed(&stream, 0, utf8());
            let mut lines = Vec::new();
            decoded.store(0, Ordering::Relaxed);
            let summary = scan_lines(&source, Some(known), offset, 2, 200, |line| {
                lines.push(line.number);
                Flow::More
            })
            .unwrap();
            (lines, summary.total_lines, decoded.load(Ordering::Relaxed))
        };
        let whole = text.len() as u64;
        assert_eq!(read(-2), (vec![59_999, 60_000], 60_000, 2 * whole), "a first tail counts, then reads");
        assert_eq!(read(-2), (vec![59_999, 60_000], 60_000, whole), "a later tail needs one pass");
        let (lines, total, bytes) = read(100);
        assert_eq!((lines, total), (vec![100, 101], 60_000));
        assert!(bytes < whole / 10, "a later window stops after it: {bytes} of {whole} bytes decoded");
        assert_eq!(read(60_001).0, Vec::<u64>::new(), "past the end: nothing, and the totals");
    }

    #[test]
    fn past_the_end_hands_over_nothing_and_gives_the_totals() {
        let file = big_file();
        let indexes = LineIndexes::in_memory();
        window(&file, Some(indexing(&indexes, &file)), 1, 1);
        let (lines, summary) = window(&file, Some(indexing(&indexes, &file)), 60_001, 1);
        assert!(lines.is_empty());
        assert_eq!(summary.total_lines, 60_000);
    }
}
