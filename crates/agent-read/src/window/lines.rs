//! A line window over a source: where it starts (a line number, or a count from the end) and the pass that hands
//! its lines to a sink — through the file's [line index](super::index) when it has one, so a repeated read costs the
//! window, and teaching that index what the pass learns when it has none (or only part of one). A streamed text (a
//! compressed file's) has an index of its own ([`streamed`](super::index::streamed)), whose restart points let the
//! decoder start near the window.

use super::index::store::LineIndexes;
use super::index::streamed::{FileEnds, StreamIndex};
use super::index::{FileIdentity, FileVersion, IndexBuilder, LineIndex, checkpoint_before, starts_a_line};
use super::scan::{self, Candidates, CapturedLine, Checkpoint, Flow, Pass, ScanSummary, Start};
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

impl Indexing<'_> {
    /// The index known for the file as it is now, complete or partial (see [`LineIndexes::find`]).
    pub fn known(&self, source: &Source<'_>) -> io::Result<Option<Arc<LineIndex>>> {
        self.indexes.find(self.identity, self.version, source)
    }
}

/// What a line pass is asked for, beside its sink.
#[derive(Clone, Copy)]
pub struct Walk<'c> {
    /// The first line, from 1, or negative from the end (`-1` the last line).
    pub offset: i64,
    /// Lines handed to the sink at most.
    pub limit: u64,
    /// Bytes of each line kept for the sink.
    pub keep_max: usize,
    /// Once the window is complete, count on to the end only when it is at most this many bytes further (see
    /// [`Pass::count_ahead`]); `u64::MAX` always counts to the end.
    pub count_ahead: u64,
    /// Where a search may match, for a sink that asks only for those lines ([`Flow::Candidates`]).
    pub candidates: Option<&'c dyn Candidates>,
}

impl<'c> Walk<'c> {
    /// A window of `limit` lines from `offset`, keeping `keep_max` bytes of each, counted to the end.
    pub fn counting_all(offset: i64, limit: u64, keep_max: usize) -> Walk<'static> {
        Walk { offset, limit, keep_max, count_ahead: u64::MAX, candidates: None }
    }

    fn pass(&self, source: &Source<'_>) -> Pass<'c> {
        Pass { count_ahead: self.count_ahead, candidates: self.candidates, ..Pass::whole(source) }
    }
}

/// Hands at most `walk.limit` lines from `walk.offset` to `sink`, and returns what a full pass would: the total line
/// count and line-ending statistics, or, where the pass stopped counting after the window (`walk.count_ahead`), a
/// lower bound (`reached_end` false). With `indexing`, a complete index answers the totals and the pass starts at its
/// nearest checkpoint and stops after the window; a partial one places a window that starts within what it counted,
/// and a pass beyond it goes on from where it stopped; whatever a pass learns is kept, also when its time budget
/// runs out.
pub fn scan_lines(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    walk: &Walk<'_>,
    mut sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    if let Some(stream) = source.stream() {
        return scan_stream(source, stream, indexing, walk, sink);
    }
    let Some(indexing) = indexing else {
        return scan::scan_pass(
            source,
            walk.pass(source),
            window_start(source, walk.offset)?,
            walk.limit,
            walk.keep_max,
            sink,
        );
    };
    let mut known = indexing.known(source)?;
    if let Some(index) = &known {
        let placed = if index.is_complete() {
            scan_from_index(source, index, walk, &mut sink)?
        } else if walk.offset > 0 && walk.offset.unsigned_abs() <= index.newlines() + 1 {
            scan_within(source, index, walk, &mut sink)?
        } else {
            Placed::Beyond
        };
        match placed {
            Placed::Scanned(summary) => return Ok(summary),
            Placed::Beyond => {}
            Placed::Untrusted => {
                indexing.indexes.forget(indexing.identity);
                known = None;
            }
        }
    }
    let start = window_start(source, walk.offset)?;
    learning_pass(source, indexing, known.as_deref(), start, walk, sink)
}

/// Counts every line of the text to its end, going on from where a partial index stopped, and keeps the complete
/// index it makes (what it counted is kept also when the time budget stops it): the total.
pub fn count_to_end(source: &Source<'_>, indexing: Indexing<'_>) -> io::Result<u64> {
    let known = indexing.known(source)?;
    if let Some(index) = known.as_deref().filter(|index| index.is_complete()) {
        return Ok(index.total_lines());
    }
    let walk = Walk::counting_all(1, 0, 0);
    let summary = learning_pass(source, indexing, known.as_deref(), Start::Byte(u64::MAX), &walk, |_| Flow::Done)?;
    Ok(summary.total_lines)
}

/// A pass that keeps what it learns in the file's index: from a partial index's reach when the window starts past
/// it (so nothing before is read again), else from the top.
fn learning_pass(
    source: &Source<'_>,
    indexing: Indexing<'_>,
    known: Option<&LineIndex>,
    start: Start,
    walk: &Walk<'_>,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    let partial = known.filter(|index| !index.is_complete() && starts_past(start, index));
    let (mut builder, pass) = match partial {
        Some(index) => {
            let from = Checkpoint { line: index.newlines() + 1, byte: index.reach() };
            (IndexBuilder::continuing(index), Pass { from, endings: index.endings().clone(), ..walk.pass(source) })
        }
        None => (IndexBuilder::new(source.data_start), walk.pass(source)),
    };
    let pass = Pass { observer: Some(&mut builder), ..pass };
    let outcome = scan::scan_pass(source, pass, start, walk.limit, walk.keep_max, sink);
    if let Some(index) = builder.build(indexing.identity, indexing.version, source)? {
        indexing.indexes.keep(Arc::new(index));
    }
    outcome
}

/// What a known index made of a window.
enum Placed {
    /// The window was handed over; the totals.
    Scanned(ScanSummary),
    /// The window starts past what a partial index counted: a pass must go on from its reach.
    Beyond,
    /// A checkpoint is not a line start in the file: the index cannot be trusted (nothing was handed over).
    Untrusted,
}

/// Whether a window starting at `start` lies wholly past what the partial `index` counted, so that a pass may begin
/// at its reach (not a line start: the pass only counts until the window starts).
fn starts_past(start: Start, index: &LineIndex) -> bool {
    match start {
        Start::Line(first) => first >= index.newlines() + 2,
        Start::Byte(at) => at >= index.reach(),
    }
}

/// The window read from the complete `index`'s nearest checkpoint.
fn scan_from_index(
    source: &Source<'_>,
    index: &LineIndex,
    walk: &Walk<'_>,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<Placed> {
    let total = index.total_lines();
    let first = match walk.offset {
        1.. => walk.offset.unsigned_abs(),
        _ => total.saturating_sub(walk.offset.unsigned_abs()) + 1,
    };
    if first > total {
        // Past the end: nothing to hand over, and the totals say why.
        return Ok(Placed::Scanned(index.summary()));
    }
    let from = index.checkpoint_before(first);
    if !starts_a_line(source, from)? {
        return Ok(Placed::Untrusted);
    }
    let pass = Pass { from, stop_when_done: true, ..walk.pass(source) };
    scan::scan_pass(source, pass, Start::Line(first), walk.limit, walk.keep_max, sink)?;
    Ok(Placed::Scanned(index.summary()))
}

/// The window starting at line `walk.offset`, within what the partial `index` counted, read from its nearest
/// checkpoint: the total is the index's lower bound, unless the window runs to the end of the file.
fn scan_within(
    source: &Source<'_>,
    index: &LineIndex,
    walk: &Walk<'_>,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<Placed> {
    let first = walk.offset.unsigned_abs();
    let from = index.checkpoint_before(first);
    if !starts_a_line(source, from)? {
        return Ok(Placed::Untrusted);
    }
    let pass = Pass { from, stop_when_done: true, ..walk.pass(source) };
    let summary = scan::scan_pass(source, pass, Start::Line(first), walk.limit, walk.keep_max, sink)?;
    let known = index.summary();
    if summary.reached_end {
        // Counted from a checkpoint: the total is exact; the endings of the part before it are the index's.
        return Ok(Placed::Scanned(ScanSummary { endings: known.endings.merged(summary.endings), ..summary }));
    }
    Ok(Placed::Scanned(ScanSummary { total_lines: known.total_lines.max(summary.total_lines), ..known }))
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
    walk: &Walk<'_>,
    mut sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    let (offset, limit, keep_max) = (walk.offset, walk.limit, walk.keep_max);
    let known = indexing.and_then(|known| Some((known, known.ends?)));
    if let Some((known, ends)) = known
        && let Some(index) = known.indexes.find_stream(known.identity, known.version, ends)
    {
        let read = scan_from_stream_index(source, stream, &index, walk, &mut sink)?;
        if read.is_none() || stream.restart_failed() {
            index_forgotten(indexing);
        }
        if let Some(summary) = read {
            return Ok(summary);
        }
    }
    stream.record_restarts();
    let mut builder = IndexBuilder::new(source.data_start);
    let pass = Pass { observer: Some(&mut builder), ..walk.pass(source) };
    let summary = if offset > 0 {
        // The pass goes on past the window to count the lines: the text around it is held for the reads near it.
        let mut held = false;
        let sink = |line: CapturedLine<'_>| {
            if !std::mem::replace(&mut held, true) {
                stream.hold_text_around(line.start);
            }
            sink(line)
        };
        scan::scan_pass(source, pass, Start::Line(offset.unsigned_abs()), limit, keep_max, sink)?
    } else {
        scan::scan_pass(source, pass, Start::Line(u64::MAX), 0, 0, |_| Flow::Done)?
    };
    // The pass's checkpoints go into the index kept for the file, or, where none is kept, serve this tail alone.
    let (learned, checkpoints) = match (known, builder.into_checkpoints()) {
        (Some((known, ends)), Some(checkpoints)) => {
            let identity = (known.identity, known.version, ends);
            let index = Arc::new(StreamIndex::new(identity, summary, checkpoints, stream.recorded()));
            known.indexes.keep_stream(index.clone());
            (Some(index), None)
        }
        (_, checkpoints) => (None, checkpoints),
    };
    if offset > 0 {
        return Ok(summary);
    }
    if let Some(index) = learned
        && let Some(summary) = scan_from_stream_index(source, stream, &index, walk, &mut sink)?
    {
        if stream.restart_failed() {
            index_forgotten(indexing);
        }
        return Ok(summary);
    }
    // No index kept (an archive member's text): the pass's own checkpoints still say where to start the tail, in
    // the text the stream keeps when it is near enough to the end.
    let first = summary.total_lines.saturating_sub(offset.unsigned_abs()) + 1;
    if summary.total_lines > 0 {
        let start = Checkpoint { line: 1, byte: source.data_start };
        let near = checkpoints.map(|checkpoints| checkpoint_before(&checkpoints, first, source.data_start));
        let from = match near {
            Some(checkpoint) if starts_a_line(source, checkpoint)? => checkpoint,
            _ => start,
        };
        let pass = Pass { from, stop_when_done: true, ..walk.pass(source) };
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
    walk: &Walk<'_>,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<Option<ScanSummary>> {
    let (offset, limit, keep_max) = (walk.offset, walk.limit, walk.keep_max);
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
    let pass = Pass { from, stop_when_done: true, ..walk.pass(source) };
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
        let summary = scan_lines(&source, indexing, &Walk::counting_all(offset, limit, 200), |line| {
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
        let text = numbered_lines(1, 60_000);
        let decoded = AtomicU64::new(0);
        impl crate::window::stream::Decoder for Counted<'_> {}
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
        let read_with = |offset: i64, indexing: Option<Indexing<'_>>| {
            let stream = Stream::new(&open, budget.clone());
            let source = Source::streamed(&stream, 0, utf8());
            let mut lines = Vec::new();
            decoded.store(0, Ordering::Relaxed);
            let summary = scan_lines(&source, indexing, &Walk::counting_all(offset, 2, 200), |line| {
                lines.push(line.number);
                Flow::More
            })
            .unwrap();
            (lines, summary.total_lines, decoded.load(Ordering::Relaxed))
        };
        let read = |offset: i64| read_with(offset, Some(known));
        let whole = text.len() as u64;
        let unkept = read_with(-2, None);
        assert_eq!(unkept, (vec![59_999, 60_000], 60_000, whole), "a tail of a text no index is kept for");
        assert_eq!(read(-2), (vec![59_999, 60_000], 60_000, whole), "a first tail counts, then reads what is kept");
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

    /// Reads a window counting at most `count_ahead` bytes past it; its lines' numbers and texts, and the totals.
    fn bounded(
        file: &std::fs::File,
        indexing: Option<Indexing<'_>>,
        offset: i64,
        limit: u64,
        count_ahead: u64,
    ) -> (Vec<(u64, String)>, ScanSummary) {
        let size = file.metadata().unwrap().len();
        let source = Source::new(file, 0, size, utf8());
        let mut lines = Vec::new();
        let walk = Walk { count_ahead, ..Walk::counting_all(offset, limit, 200) };
        let summary = scan_lines(&source, indexing, &walk, |line| {
            lines.push((line.number, String::from_utf8_lossy(line.kept).into_owned()));
            Flow::More
        })
        .unwrap();
        (lines, summary)
    }

    #[test]
    fn a_window_far_from_the_end_stops_counting_and_leaves_a_partial_index_later_reads_go_on_from() {
        let file = big_file();
        let indexes = LineIndexes::in_memory();
        let known = || Some(indexing(&indexes, &file));
        let (lines, summary) = bounded(&file, known(), 1, 3, 1000);
        assert_eq!(lines.len(), 3);
        assert!(!summary.reached_end, "{summary:?}");
        assert!(summary.total_lines > 3 && summary.total_lines < 60_000, "a lower bound: {summary:?}");
        let source = Source::new(&file, 0, file.metadata().unwrap().len(), utf8());
        assert!(!indexing(&indexes, &file).known(&source).unwrap().unwrap().is_complete());
        // Deeper windows, inside and past what was counted, number their lines as a full pass does.
        for (offset, limit) in [(2, 2), (45_000, 3), (20_000, 2)] {
            let (lines, summary) = bounded(&file, known(), offset, limit, 1000);
            let (plain, _) = window(&file, None, offset, limit);
            assert_eq!(lines, plain, "offset {offset}");
            assert!(summary.total_lines >= lines.last().unwrap().0, "{summary:?}");
        }
        // A tail counts to the end, going on from the reach; the index is then complete.
        let (lines, summary) = bounded(&file, known(), -2, 2, 1000);
        assert_eq!(lines, window(&file, None, -2, 2).0);
        assert_eq!((summary.total_lines, summary.reached_end), (60_000, true));
        assert!(indexing(&indexes, &file).known(&source).unwrap().unwrap().is_complete());
        assert_eq!(window(&file, known(), 59_999, 5), window(&file, None, 59_999, 5));
    }

    #[test]
    fn counting_to_the_end_goes_on_from_a_partial_index_and_keeps_what_a_stopped_pass_counted() {
        let file = big_file();
        let indexes = LineIndexes::in_memory();
        let size = file.metadata().unwrap().len();
        let cancel = crate::budget::Cancel::new();
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let source = Source::new(&file, 0, size, utf8()).with_budget(crate::budget::Budget::new(far, cancel.clone()));
        // A pass cancelled after its first line keeps what it counted up to the chunk it stopped at.
        let walk = Walk::counting_all(1, u64::MAX, 200);
        let stopped = scan_lines(&source, Some(indexing(&indexes, &file)), &walk, |_| {
            cancel.cancel();
            Flow::More
        });
        assert!(stopped.is_err());
        let known = indexing(&indexes, &file).known(&Source::new(&file, 0, size, utf8())).unwrap();
        let partial = known.expect("the cancelled pass left what it counted");
        assert!(!partial.is_complete() && partial.reach() > 0, "{partial:?}");
        let source = Source::new(&file, 0, size, utf8());
        assert_eq!(count_to_end(&source, indexing(&indexes, &file)).unwrap(), 60_000);
        let complete = indexing(&indexes, &file).known(&source).unwrap().unwrap();
        assert!(complete.is_complete());
        assert_eq!(*complete, *indexing(&indexes, &file).known(&source).unwrap().unwrap());
        assert_eq!(window(&file, Some(indexing(&indexes, &file)), 59_000, 2), window(&file, None, 59_000, 2));
    }
}
