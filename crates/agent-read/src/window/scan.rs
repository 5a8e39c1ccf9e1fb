//! One forward pass over a file: count every line, and hand the lines of the window to a sink on the way.
//!
//! The pass has three phases. *Skip* counts line feeds chunk by chunk (vectorised) until the chunk that holds the
//! window's start; *capture* walks line by line, keeping at most `keep_max` bytes of each line, and hands each to the
//! sink; *count* goes back to counting whole chunks once the sink has had enough. Memory is one chunk plus one kept
//! line prefix, whatever the file's size or the length of its lines.
//!
//! A pass may also begin at a checkpoint of a [line index](super::index) and stop once the window is complete, so a
//! repeated deep read costs the window rather than the file; and a pass to the end can build that index on the way.

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
    /// The window is complete: count the rest.
    Done,
}

/// What one pass learned about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSummary {
    /// Lines in the whole file (when the pass reached the end; else only the line feeds before the chunk it stopped in).
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
    /// Sees every chunk on the way, and the counts at the end (a line index being built).
    pub observer: Option<&'b mut dyn PassObserver>,
}

impl Pass<'_> {
    /// A whole pass: from the content start to its end.
    pub fn whole(source: &Source<'_>) -> Pass<'static> {
        Pass {
            from: Checkpoint { line: 1, byte: source.data_start },
            endings: EndingCounter::new(source.layout),
            stop_when_done: false,
            observer: None,
        }
    }
}

enum Phase {
    Skip,
    Capture,
    Count,
}

/// Scans the whole content once, handing at most `limit` lines from `start` on to `sink`.
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
    let mut capture = Capture::new(pos, limit, keep_max, layout, sink);
    let mut phase =
        if start == Start::Line(pass.from.line) || start == Start::Byte(pos) { Phase::Capture } else { Phase::Skip };
    while pos < source.end {
        let want = buf.len().min(usize::try_from(source.end - pos).unwrap_or(CHUNK_LEN));
        let n = source.read_at(pos, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let chunk_lf = count_newlines(layout, chunk);
        pass.endings.feed(chunk, chunk_lf);
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
                if capture.take(chunk, from, pos, first_number) == Flow::Done {
                    phase = Phase::Count;
                    if pass.stop_when_done {
                        return Ok(stopped_early(newlines_before_chunk, capture.line_start));
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

/// The summary of a pass that stopped once its window was complete, at `end`.
fn stopped_early(newlines_before_chunk: u64, end: u64) -> ScanSummary {
    ScanSummary {
        total_lines: newlines_before_chunk,
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
}

impl<F: FnMut(CapturedLine<'_>) -> Flow> Capture<F> {
    fn new(line_start: u64, limit: u64, keep_max: usize, layout: NewlineLayout, sink: F) -> Self {
        Capture { line_start, kept: Vec::new(), prev_unit_cr: false, remaining: limit, keep_max, layout, sink }
    }

    /// Hands over every line that ends in `chunk` after index `from`; `Done` once the window is complete.
    fn take(&mut self, chunk: &[u8], mut from: usize, chunk_pos: u64, first_number: u64) -> Flow {
        let unit = self.layout.unit;
        let base = from;
        for (k, nl) in newlines(self.layout, &chunk[base..]).map(|nl| nl + base).enumerate() {
            self.keep(&chunk[from..nl]);
            let cr = if self.cr_before(chunk, nl, chunk_pos) { unit as u64 } else { 0 };
            let flow = self.deliver(first_number + k as u64, chunk_pos + nl as u64 - cr);
            self.line_start = chunk_pos + (nl + unit) as u64;
            from = nl + unit;
            self.remaining = self.remaining.saturating_sub(1);
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
