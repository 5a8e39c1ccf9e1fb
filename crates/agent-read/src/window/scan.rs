//! One forward pass over a file: count every line, and hand the lines of the window to a sink on the way.
//!
//! The pass has three phases. *Skip* counts line feeds chunk by chunk (vectorised) until the chunk that holds the
//! window's start; *capture* walks line by line, keeping at most `keep_max` bytes of each line, and hands each to the
//! sink; *count* goes back to counting whole chunks once the sink has had enough. Memory is one chunk plus one kept
//! line prefix, whatever the file's size or the length of its lines.
//!
//! A pass may also begin at a checkpoint of a [line index](super::index) and stop once the window is complete, so a
//! repeated deep read costs the window rather than the file; and a pass can build that index on the way. Counting
//! past the window is bounded ([`Pass::count_ahead`]): a pass whose rest is further than that stops after its window,
//! and its total is a lower bound.
//!
//! A sink that only needs the lines a search may match ([`Flow::Candidates`]) lets the pass hand over nothing else:
//! with [`Candidates`] for the pattern, it jumps over the lines no match can be on, counting their line feeds with
//! `memchr`, and hands over each line that may match after the lines of context just before it.

use super::{CHUNK_LEN, EndingCounter, LineEndings, Source, count_newlines, newlines};
use crate::classify::codec::NewlineLayout;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::io;

/// The start of a line: its 1-based number and its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The line's number, from 1.
    pub line: u64,
    /// The offset of its first byte in the file.
    pub byte: u64,
}

/// Watches a pass chunk by chunk: a line index is built this way on the way through a file.
pub trait PassObserver: Debug {
    /// Sees one chunk of the pass, starting at `pos`, after `newlines_before` line feeds, holding `chunk_lf` of them.
    fn observe(&mut self, layout: NewlineLayout, chunk: &[u8], pos: u64, newlines_before: u64, chunk_lf: u64);
    /// Learns the counts at the end of the pass (`end`), after `newlines` line feeds, when it reached the end.
    fn finish(&mut self, newlines: u64, endings: EndingCounter, trailing_newline: bool, end: u64);
    /// Learns where a pass that stopped before the end stopped (`at`, a chunk boundary), after `newlines` line feeds
    /// and `endings`: its window was complete and the rest too far to count, or a read failed (the time budget).
    fn stopped(&mut self, newlines: u64, endings: &EndingCounter, at: u64);
}

/// Where a pattern may match, for a pass that hands over only those lines ([`Flow::Candidates`]).
pub trait Candidates: Debug {
    /// In `region` — whole lines of UTF-8 text, from a line start to just past a line feed, no lone carriage return
    /// in it — a byte within the first line that may hold a match, or `None` when no line of it can. Every line that
    /// matches must be found (a line found may still not match: the sink decides).
    fn first(&self, region: &[u8]) -> Option<usize>;
    /// Learns that lines `first` to `last` were jumped over: searched, and none of them can match.
    fn jumped(&self, first: u64, last: u64);
}

/// Where the window starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this 1-based line number.
    Line(u64),
    /// At this byte offset, which must be the start of a line.
    Byte(u64),
}

/// One line of the window, as handed to the sink.
#[derive(Debug, Clone, Copy)]
pub struct CapturedLine<'a> {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub start: u64,
    /// Byte offset just past the line's content (before its CR/LF terminator).
    pub content_end: u64,
    /// The first bytes of the content: all of it, or `keep_max` bytes when it is longer.
    pub kept: &'a [u8],
}

/// What the sink tells the scan after each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Send the next line too.
    More,
    /// Send only the lines that may match (as the pass's [`Candidates`] find them), each after the `before` lines
    /// just ahead of it; without candidates (or where a chunk holds a lone carriage return), every line.
    Candidates {
        /// Lines handed over before each line that may match (a search's context).
        before: u64,
    },
    /// The window is complete: count the rest (see [`Pass::count_ahead`]).
    Done,
}

/// What one pass learned about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSummary {
    /// Lines in the whole file when the pass reached the end; else a lower bound: the lines it counted, and the one
    /// going on past them.
    pub total_lines: u64,
    /// Line-terminator statistics over the whole file (when the pass reached the end).
    pub endings: LineEndings,
    /// Whether the content ends with a line feed (false when the pass stopped early).
    pub trailing_newline: bool,
    /// Where the pass stopped: the content's real end (earlier than expected if the file shrank), or the end of the
    /// window's last line when it stopped early.
    pub end: u64,
    /// Whether the pass read to the end of the content.
    pub reached_end: bool,
}

/// Where a pass begins and how far it goes.
#[derive(Debug)]
pub struct Pass<'b> {
    /// A line start: the content start (line 1), or a checkpoint of a line index. A pass that captures nothing may
    /// begin anywhere on a code unit boundary: only the line feeds counted before it matter then.
    pub from: Checkpoint,
    /// Line endings counted before `from` (fresh at the content start).
    pub endings: EndingCounter,
    /// Stop once the window is complete (the line index knows the rest) instead of counting to the end.
    pub stop_when_done: bool,
    /// Once the window is complete, count on to the end only when at most this many bytes are left after the chunk
    /// it ended in; otherwise stop there (the summary's total is then a lower bound).
    pub count_ahead: u64,
    /// Sees every chunk on the way, and the counts at the end (a line index being built).
    pub observer: Option<&'b mut (dyn PassObserver + 'static)>,
    /// Where a search's pattern may match, for a sink that asks only for those lines (UTF-8 text only).
    pub candidates: Option<&'b dyn Candidates>,
}

impl Pass<'_> {
    /// A whole pass: from the content start to its end.
    pub fn whole(source: &Source<'_>) -> Pass<'static> {
        Pass {
            from: Checkpoint { line: 1, byte: source.data_start },
            endings: EndingCounter::new(source.layout),
            stop_when_done: false,
            count_ahead: u64::MAX,
            observer: None,
            candidates: None,
        }
    }
}

enum Phase {
    Skip,
    Capture,
    Count,
}

/// Scans the whole content once, handing at most `limit` lines from `start` on to `sink`.
#[cfg(test)]
pub fn scan(
    source: &Source<'_>,
    start: Start,
    limit: u64,
    keep_max: usize,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    scan_pass(source, Pass::whole(source), start, limit, keep_max, sink)
}

/// Scans from `pass.from`, handing at most `limit` lines from `start` (at or after `pass.from`) on to `sink`; counts to
/// the end unless `pass.stop_when_done`.
pub fn scan_pass(
    source: &Source<'_>,
    mut pass: Pass<'_>,
    start: Start,
    limit: u64,
    keep_max: usize,
    sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    let layout = source.layout;
    // No bigger than what there is to read: a small file's read should not zero a whole chunk.
    let span = usize::try_from(source.end.saturating_sub(pass.from.byte)).unwrap_or(CHUNK_LEN);
    let mut buf = vec![0u8; CHUNK_LEN.min(span)];
    let mut pos = pass.from.byte;
    let mut newlines_before_chunk = pass.from.line - 1;
    let candidates = pass.candidates.filter(|_| layout.unit == 1);
    let mut capture = Capture::new(pos, limit, keep_max, layout, sink);
    let mut phase =
        if start == Start::Line(pass.from.line) || start == Start::Byte(pos) { Phase::Capture } else { Phase::Skip };
    while pos < source.end {
        let want = buf.len().min(usize::try_from(source.end - pos).unwrap_or(CHUNK_LEN));
        let n = match source.read_at(pos, &mut buf[..want]) {
            Ok(n) => n,
            Err(e) => {
                // What was counted before the failure (the time budget ran out) is still true: an index keeps it.
                if let Some(observer) = pass.observer.as_deref_mut() {
                    observer.stopped(newlines_before_chunk, &pass.endings, pos);
                }
                return Err(e);
            }
        };
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let chunk_lf = count_newlines(layout, chunk);
        let lone_cr = pass.endings.feed(chunk, chunk_lf);
        if let Some(observer) = pass.observer.as_deref_mut() {
            observer.observe(layout, chunk, pos, newlines_before_chunk, chunk_lf);
        }
        let mut from = 0;
        if let Phase::Skip = phase
            && let Some(at) = skip_target(source, start, chunk, pos, newlines_before_chunk, chunk_lf)
        {
            from = at;
            capture.line_start = pos + at as u64;
            phase = Phase::Capture;
        }
        if let Phase::Capture = phase {
            if chunk_lf == 0 {
                // The current line goes on through the whole chunk (a very long line): no line ends to look for.
                capture.keep(chunk);
            } else {
                let first_number = newlines_before_chunk + 1 + count_newlines(layout, &chunk[..from]);
                // A lone carriage return ends a line for the pattern but not for the pass: such a chunk goes line
                // by line.
                let candidates = candidates.filter(|_| !lone_cr);
                let lines = ChunkLines { chunk, pos, first_number: newlines_before_chunk + 1, lf: chunk_lf };
                if capture.take(&lines, from, first_number, candidates) == Flow::Done {
                    phase = Phase::Count;
                    if pass.stop_when_done {
                        let more = capture.line_start < source.end;
                        return Ok(stopped_early(capture.last_number + u64::from(more), capture.line_start));
                    }
                    let reach = pos + n as u64;
                    if source.end.saturating_sub(reach) > pass.count_ahead {
                        let newlines = newlines_before_chunk + chunk_lf;
                        if let Some(observer) = pass.observer.as_deref_mut() {
                            observer.stopped(newlines, &pass.endings, reach);
                        }
                        return Ok(counted_to(newlines, pass.endings.finish(), reach));
                    }
                }
            }
        }
        capture.remember_chunk_end(chunk);
        newlines_before_chunk += chunk_lf;
        pos += n as u64;
    }
    let trailing_newline = source.ending_at(pos).ends_with_newline()?;
    let has_partial_line = pos > source.data_start && !trailing_newline;
    if let Phase::Capture = phase
        && has_partial_line
    {
        capture.finish_partial_line(newlines_before_chunk + 1, pos);
    }
    if let Some(observer) = pass.observer {
        observer.finish(newlines_before_chunk, pass.endings.clone(), trailing_newline, pos);
    }
    Ok(ScanSummary {
        total_lines: newlines_before_chunk + u64::from(has_partial_line),
        endings: pass.endings.finish(),
        trailing_newline,
        end: pos,
        reached_end: true,
    })
}

/// The summary of a pass that stopped counting at `reach`, before the end, after `newlines` line feeds: the content
/// goes on, so it has at least one line more.
fn counted_to(newlines: u64, endings: LineEndings, reach: u64) -> ScanSummary {
    ScanSummary { total_lines: newlines + 1, endings, trailing_newline: false, end: reach, reached_end: false }
}

/// A chunk in the capture phase: its bytes, where it starts, the number of the line it starts in, and its line feeds.
struct ChunkLines<'c> {
    chunk: &'c [u8],
    pos: u64,
    first_number: u64,
    lf: u64,
}

/// The summary of a pass that stopped once its window was complete, at `end`, knowing of `lines` lines (those up to
/// the window's last, and one more when the content goes on).
fn stopped_early(lines: u64, end: u64) -> ScanSummary {
    ScanSummary {
        total_lines: lines,
        endings: LineEndings::default(),
        trailing_newline: false,
        end,
        reached_end: false,
    }
}

/// The capture phase: the line being gathered (its start and kept prefix) and the sink that receives lines.
struct Capture<F> {
    line_start: u64,
    kept: Vec<u8>,
    /// Whether the previous chunk ended with a carriage return unit (a CRLF may straddle two chunks).
    prev_unit_cr: bool,
    remaining: u64,
    keep_max: usize,
    layout: NewlineLayout,
    sink: F,
    /// What the sink asked for after its last line: `Some(before)` when only candidate lines (and `before` lines
    /// ahead of each) are wanted.
    sparse: Option<u64>,
    /// The number of the last line handed over (0 before the first).
    last_number: u64,
}

impl<F: FnMut(CapturedLine<'_>) -> Flow> Capture<F> {
    fn new(line_start: u64, limit: u64, keep_max: usize, layout: NewlineLayout, sink: F) -> Self {
        Capture {
            line_start,
            kept: Vec::new(),
            prev_unit_cr: false,
            remaining: limit,
            keep_max,
            layout,
            sink,
            sparse: None,
            last_number: 0,
        }
    }

    /// Hands over every line that ends in `chunk` after index `from` (with `candidates`, when the sink asks for them
    /// alone, only those and the lines just ahead of them); `Done` once the window is complete.
    fn take(
        &mut self,
        lines: &ChunkLines<'_>,
        mut from: usize,
        mut number: u64,
        candidates: Option<&dyn Candidates>,
    ) -> Flow {
        let (chunk, chunk_pos, unit) = (lines.chunk, lines.pos, self.layout.unit);
        loop {
            if let (Some(before), Some(candidates)) = (self.sparse, candidates)
                && self.kept.is_empty()
                && self.line_start == chunk_pos + from as u64
            {
                // The line feeds from here to the chunk's end: those of the chunk less those before this line.
                let lf_after = lines.lf - (number - lines.first_number);
                let (to, skipped) = jump(chunk, from, lf_after, before, candidates);
                if skipped > 0 {
                    candidates.jumped(number, number + skipped - 1);
                    (from, number) = (to, number + skipped);
                    self.line_start = chunk_pos + to as u64;
                }
            }
            let Some(nl) = newlines(self.layout, &chunk[from..]).next().map(|nl| nl + from) else { break };
            self.keep(&chunk[from..nl]);
            let cr = if self.cr_before(chunk, nl, chunk_pos) { unit as u64 } else { 0 };
            let flow = self.deliver(number, chunk_pos + nl as u64 - cr);
            number += 1;
            self.line_start = chunk_pos + (nl + unit) as u64;
            from = nl + unit;
            self.remaining = self.remaining.saturating_sub(1);
            self.sparse = match flow {
                Flow::Candidates { before } => Some(before),
                _ => None,
            };
            if flow == Flow::Done || self.remaining == 0 {
                return Flow::Done;
            }
        }
        self.keep(&chunk[from..]);
        Flow::More
    }

    /// Hands over the last line of a file that does not end with a newline.
    fn finish_partial_line(&mut self, number: u64, end: u64) {
        if self.line_start < end {
            self.deliver(number, end);
        }
    }

    fn deliver(&mut self, number: u64, content_end: u64) -> Flow {
        let kept_len = self.kept.len().min((content_end - self.line_start) as usize);
        let line = CapturedLine { number, start: self.line_start, content_end, kept: &self.kept[..kept_len] };
        self.last_number = number;
        let flow = (self.sink)(line);
        self.kept.clear();
        flow
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.keep_max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Whether the unit before the line feed at `nl` is a carriage return of the current line.
    fn cr_before(&self, chunk: &[u8], nl: usize, chunk_pos: u64) -> bool {
        let cr_unit = self.layout.cr_unit();
        if chunk_pos + (nl as u64) < self.line_start + cr_unit.len() as u64 {
            return false;
        }
        match nl.checked_sub(cr_unit.len()) {
            Some(at) => chunk[at..nl] == *cr_unit,
            None => self.prev_unit_cr,
        }
    }

    fn remember_chunk_end(&mut self, chunk: &[u8]) {
        let whole = chunk.len() - chunk.len() % self.layout.unit;
        self.prev_unit_cr = chunk[..whole].ends_with(self.layout.cr_unit());
    }
}

/// Where to go on from line start `from` in UTF-8 `chunk` (with `lf_after` line feeds from there to its end) when
/// only lines that may match are wanted: the start of the `before` lines ahead of the first candidate line of the
/// chunk's whole lines (or of its last, unfinished line when none is a candidate), and how many lines that jumps over.
fn jump(chunk: &[u8], from: usize, lf_after: u64, before: u64, candidates: &dyn Candidates) -> (usize, u64) {
    let Some(last_lf) = memchr::memrchr(b'\n', &chunk[from..]) else { return (from, 0) };
    let region = &chunk[from..from + last_lf + 1];
    let line_start = |end: usize| memchr::memrchr(b'\n', &region[..end]).map_or(0, |lf| lf + 1);
    let candidate = candidates.first(region).filter(|&at| at < region.len());
    let target = candidate.map_or(region.len(), line_start);
    let mut start = target;
    let mut backed = 0;
    while backed < before && start > 0 {
        start = line_start(start - 1);
        backed += 1;
    }
    let skipped = match candidate {
        // No candidate: every whole line goes but the `before` kept; their line feeds are already counted.
        None => lf_after - backed,
        Some(_) => memchr::memchr_iter(b'\n', &region[..start]).count() as u64,
    };
    (from + start, skipped)
}

/// In the skip phase: the index in `chunk` where the window starts, if it starts in this chunk.
fn skip_target(
    source: &Source<'_>,
    start: Start,
    chunk: &[u8],
    chunk_pos: u64,
    newlines_before_chunk: u64,
    chunk_lf: u64,
) -> Option<usize> {
    match start {
        Start::Line(target) => {
            let needed = target.saturating_sub(1).checked_sub(newlines_before_chunk)?;
            if needed == 0 {
                return Some(0);
            }
            if needed > chunk_lf {
                return None;
            }
            let nl = newlines(source.layout, chunk).nth(usize::try_from(needed - 1).ok()?)?;
            Some(nl + source.layout.unit)
        }
        Start::Byte(at) => {
            let offset = at.checked_sub(chunk_pos)?;
            (offset < chunk.len() as u64).then_some(offset as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Codec;
    use std::io::Write;

    struct Line {
        number: u64,
        start: u64,
        content_end: u64,
        kept: Vec<u8>,
    }

    fn run(
        bytes: &[u8],
        codec: &str,
        data_start: u64,
        start: Start,
        limit: u64,
        keep: usize,
    ) -> (Vec<Line>, ScanSummary) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let layout = Codec::for_label(codec).unwrap().newline_layout();
        let source = Source::new(&file, data_start, bytes.len() as u64, layout);
        let mut lines = Vec::new();
        let summary = scan(&source, start, limit, keep, |l| {
            lines.push(Line { number: l.number, start: l.start, content_end: l.content_end, kept: l.kept.to_vec() });
            Flow::More
        })
        .unwrap();
        (lines, summary)
    }

    #[test]
    fn counts_and_captures_simple_lines() {
        let (lines, s) = run(b"a\nbb\r\nccc", "utf-8", 0, Start::Line(2), 10, 100);
        assert_eq!(s.total_lines, 3);
        assert!(!s.trailing_newline);
        assert_eq!(s.endings.describe(), "mixed");
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[0].number, lines[0].start, lines[0].content_end), (2, 2, 4));
        assert_eq!(lines[0].kept, b"bb");
        assert_eq!((lines[1].number, lines[1].kept.as_slice()), (3, b"ccc".as_slice()));
    }

    #[test]
    fn limit_and_keep_are_honoured() {
        let (lines, s) = run(b"0123456789\nx\ny\n", "utf-8", 0, Start::Line(1), 2, 4);
        assert_eq!(s.total_lines, 3);
        assert!(s.trailing_newline);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].kept, b"0123");
        assert_eq!(lines[0].content_end, 10);
    }

    #[test]
    fn start_past_end_captures_nothing() {
        let (lines, s) = run(b"a\nb\n", "utf-8", 0, Start::Line(3), 10, 100);
        assert!(lines.is_empty());
        assert_eq!(s.total_lines, 2);
    }

    #[test]
    fn byte_start_counts_lines_before_it() {
        let (lines, _) = run(b"a\nb\nc\n", "utf-8", 0, Start::Byte(4), 10, 100);
        assert_eq!(lines[0].number, 3);
        assert_eq!(lines[0].kept, b"c");
    }

    #[test]
    fn crlf_split_across_chunks_is_stripped() {
        let mut bytes = vec![b'x'; CHUNK_LEN - 1];
        bytes.extend_from_slice(b"\r\nnext\n");
        let (lines, s) = run(&bytes, "utf-8", 0, Start::Line(1), 10, 8);
        assert_eq!(lines[0].content_end, (CHUNK_LEN - 1) as u64);
        assert_eq!(lines[1].kept, b"next");
        assert_eq!(s.endings.describe(), "mixed");
    }

    #[test]
    fn window_start_deep_in_a_later_chunk() {
        let bytes: Vec<u8> = (0..100_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let (lines, s) = run(&bytes, "utf-8", 0, Start::Line(90_001), 2, 100);
        assert_eq!(s.total_lines, 100_000);
        assert_eq!(lines[0].kept, b"line 90000");
        assert_eq!(lines[1].number, 90_002);
    }

    #[test]
    fn utf16_lines_after_bom() {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend("ab\r\ncd\n".encode_utf16().flat_map(u16::to_le_bytes));
        let (lines, s) = run(&bytes, "utf-16le", 2, Start::Line(1), 10, 100);
        assert_eq!(s.total_lines, 2);
        assert_eq!(s.endings.describe(), "mixed");
        assert_eq!(lines[0].kept, [b'a', 0, b'b', 0]);
        assert_eq!(lines[1].kept, [b'c', 0, b'd', 0]);
    }
}
