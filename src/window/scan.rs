//! One forward pass over a file: count every line, and hand the lines of the window to a sink on the way.
//!
//! The pass has three phases. *Skip* counts line feeds chunk by chunk (vectorised) until the chunk that holds the
//! window's start; *capture* walks line by line, keeping at most `keep_max` bytes of each line, and hands each to the
//! sink; *count* goes back to counting whole chunks once the sink has had enough. Memory is one chunk plus one kept
//! line prefix, whatever the file's size or the length of its lines.

use super::{CHUNK_LEN, EndingCounter, LineEndings, Source, count_newlines, newlines};
use std::io;

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

/// What one full pass learned about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSummary {
    /// Lines in the whole file.
    pub total_lines: u64,
    /// Line-terminator statistics over the whole file.
    pub endings: LineEndings,
    /// Whether the content ends with a line feed.
    pub trailing_newline: bool,
    /// Where the content really ended (earlier than expected if the file shrank).
    pub end: u64,
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
    mut sink: impl FnMut(CapturedLine<'_>) -> Flow,
) -> io::Result<ScanSummary> {
    let layout = source.layout;
    let unit = layout.unit;
    let mut buf = vec![0u8; CHUNK_LEN];
    let mut endings = EndingCounter::new(layout);
    let mut pos = source.data_start;
    let mut newlines_before_chunk = 0u64;
    let mut line = LineState { start: source.data_start, kept: Vec::new(), prev_unit_cr: false };
    let mut phase =
        if start == Start::Line(1) || start == Start::Byte(source.data_start) { Phase::Capture } else { Phase::Skip };
    let mut captured = 0u64;
    while pos < source.end {
        let want = CHUNK_LEN.min(usize::try_from(source.end - pos).unwrap_or(CHUNK_LEN));
        let n = source.read_at(pos, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let chunk_lf = count_newlines(layout, chunk);
        endings.feed(chunk, chunk_lf);
        let mut i = 0;
        if let Phase::Skip = phase
            && let Some(at) = skip_target(source, start, chunk, pos, newlines_before_chunk, chunk_lf)
        {
            i = at;
            line.start = pos + at as u64;
            phase = Phase::Capture;
        }
        if let Phase::Capture = phase {
            let base = i;
            let first_number = newlines_before_chunk + 1 + count_newlines(layout, &chunk[..base]);
            for (k, nl) in newlines(layout, &chunk[base..]).map(|nl| nl + base).enumerate() {
                line.extend(&chunk[i..nl], keep_max);
                let is_cr = line.cr_before(chunk, nl, layout.cr_unit(), pos);
                let content_end = pos + nl as u64 - if is_cr { unit as u64 } else { 0 };
                let kept_len = line.kept.len().min((content_end - line.start) as usize);
                let captured_line = CapturedLine {
                    number: first_number + k as u64,
                    start: line.start,
                    content_end,
                    kept: &line.kept[..kept_len],
                };
                let flow = sink(captured_line);
                captured += 1;
                line.start = pos + (nl + unit) as u64;
                line.kept.clear();
                i = nl + unit;
                if flow == Flow::Done || captured == limit {
                    phase = Phase::Count;
                    break;
                }
            }
            if let Phase::Capture = phase {
                line.extend(&chunk[i..], keep_max);
            }
        }
        line.prev_unit_cr = n >= unit && chunk[n - n % unit - unit..n - n % unit] == *layout.cr_unit();
        newlines_before_chunk += chunk_lf;
        pos += n as u64;
    }
    let trailing_newline = Source { end: pos, ..*source }.ends_with_newline()?;
    let has_partial_line = pos > source.data_start && !trailing_newline;
    if let Phase::Capture = phase
        && has_partial_line
        && line.start < pos
    {
        let kept = &line.kept[..line.kept.len().min((pos - line.start) as usize)];
        sink(CapturedLine { number: newlines_before_chunk + 1, start: line.start, content_end: pos, kept });
    }
    Ok(ScanSummary {
        total_lines: newlines_before_chunk + u64::from(has_partial_line),
        endings: endings.finish(),
        trailing_newline,
        end: pos,
    })
}

/// The line being captured: where it started and the prefix kept so far.
struct LineState {
    start: u64,
    kept: Vec<u8>,
    /// Whether the previous chunk ended with a carriage return unit.
    prev_unit_cr: bool,
}

impl LineState {
    fn extend(&mut self, bytes: &[u8], keep_max: usize) {
        let room = keep_max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Whether the unit before the line feed at `nl` is a carriage return of this line.
    fn cr_before(&self, chunk: &[u8], nl: usize, cr_unit: &[u8], chunk_pos: u64) -> bool {
        let line_len = chunk_pos + nl as u64 - self.start;
        if line_len < cr_unit.len() as u64 {
            return false;
        }
        match nl.checked_sub(cr_unit.len()) {
            Some(at) => chunk[at..nl] == *cr_unit,
            None => self.prev_unit_cr,
        }
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
