//! Byte-range windows: the bytes `[start, end)` of a file, with both ends moved to character boundaries.
//!
//! A range never splits a character: its start moves back to the character's first byte, its end back to the last
//! boundary before it. Output is bounded by the byte cap: a range too big for it ends early, at a boundary, and the
//! next range starts exactly there. What the model sees of it is [rendered](crate::render::bytes) line by line.

use super::Source;
use crate::classify::Codec;
use crate::classify::boundary::{CONTEXT_AFTER, CONTEXT_BEFORE, last_boundary, may_miss_boundaries};
use crate::render::bytes::{RangeText, render_range};
use std::io;

/// A decoded byte range and how it differs from what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteWindow {
    /// The range asked for, `[start, end)` (open ends filled in).
    pub requested: [u64; 2],
    /// The range returned, `[start, end)`.
    pub actual: [u64; 2],
    /// The returned range as rendered.
    pub rendered: RangeText,
    /// Whether the output cap ended the range before its (adjusted) end.
    pub cap_hit: bool,
}

/// Reads `requested` (`[start, end)`, with `start` inside the file) of `source`, rendering at most `max_out` bytes
/// of text.
pub fn read_range(source: &Source<'_>, codec: Codec, requested: [u64; 2], max_out: usize) -> io::Result<ByteWindow> {
    let size = source.end;
    let start = boundary_at_or_before(source, codec, requested[0].max(source.data_start))?;
    // Neither end may fall inside the byte order mark.
    let mut end = requested[1].clamp(source.data_start, size);
    if end < size {
        end = boundary_at_or_before(source, codec, end)?;
    }
    if end <= start {
        // The range lay inside one character: widen it to the whole character.
        end = next_boundary(source, codec, start, requested[1])?;
    }
    // Every source byte yields at least 1/unit bytes of output, so this much input can fill the cap.
    let read_len = (end - start).min((max_out * source.layout.unit) as u64) as usize;
    let mut buf = vec![0u8; read_len];
    let got = source.read_at(start, &mut buf)?;
    buf.truncate(got);
    let reaches_end = start + got as u64 >= end;
    // In a legacy multi-byte encoding, `end` may have been chosen in a context with no certain boundary (a kilobyte of
    // Shift_JIS prose without an ASCII byte). There only the content's end ends the last character: a character the
    // range cuts is left out, measured by decoding from `start` (a boundary), and the next range starts on it.
    let last = reaches_end && (end >= size || !may_miss_boundaries(codec));
    let mut rendered = render_range(codec, &buf, start, last, max_out);
    if rendered.consumed == 0 && reaches_end {
        // Not one whole character in the range: it is shown cut, so that paging always moves on.
        rendered = render_range(codec, &buf, start, true, max_out);
    }
    let actual_end = start + rendered.consumed as u64;
    // Short of `end` because of the output cap (the read or the rendering stopped at it), not because of a character
    // the range cut.
    let cap_hit = actual_end < end && (rendered.cut || !reaches_end);
    Ok(ByteWindow { requested, actual: [start, actual_end], rendered, cap_hit })
}

/// `pos`, moved back so that it does not split a character.
fn boundary_at_or_before(source: &Source<'_>, codec: Codec, pos: u64) -> io::Result<u64> {
    let context_start = pos.saturating_sub(CONTEXT_BEFORE as u64).max(source.data_start);
    let context_end = pos.saturating_add(CONTEXT_AFTER as u64).min(source.end);
    let mut context = [0u8; CONTEXT_BEFORE + CONTEXT_AFTER];
    let len = (context_end - context_start) as usize;
    let got = source.read_at(context_start, &mut context[..len])?;
    let cut = (pos - context_start) as usize;
    let at_end = context_start + got as u64 >= source.end;
    let boundary = last_boundary(codec, &context[..got], cut, pos - source.data_start, at_end);
    Ok(context_start + boundary as u64)
}

/// The first boundary after `start` at or beyond `at_least` (or the end of the content).
fn next_boundary(source: &Source<'_>, codec: Codec, start: u64, at_least: u64) -> io::Result<u64> {
    let mut candidate = at_least.max(start + 1);
    while candidate < source.end {
        if boundary_at_or_before(source, codec, candidate)? == candidate {
            return Ok(candidate);
        }
        candidate += 1;
    }
    Ok(source.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn range(bytes: &[u8], codec: &str, start: u64, end: u64, max_out: usize) -> ByteWindow {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let codec = Codec::for_label(codec).unwrap();
        let source = Source::new(&file, 0, bytes.len() as u64, codec.newline_layout());
        read_range(&source, codec, [start, end], max_out).unwrap()
    }

    #[test]
    fn ends_move_to_character_boundaries() {
        let text = "ab€cd"; // € is bytes 2..5
        let w = range(text.as_bytes(), "utf-8", 3, 6, 1000);
        assert_eq!(w.actual, [2, 6]);
        assert_eq!(w.rendered.text, "@2: €c");
        let w = range(text.as_bytes(), "utf-8", 0, 4, 1000);
        assert_eq!(w.actual, [0, 2]);
    }

    #[test]
    fn range_inside_one_character_widens_to_it() {
        let w = range("a€".as_bytes(), "utf-8", 2, 3, 1000);
        assert_eq!(w.actual, [1, 4]);
        assert_eq!(w.rendered.text, "@1: €");
    }

    #[test]
    fn end_past_file_is_clamped() {
        let w = range(b"hello", "utf-8", 1, 500, 1000);
        assert_eq!(w.actual, [1, 5]);
        assert!(!w.cap_hit);
    }

    #[test]
    fn an_end_inside_a_character_with_no_certain_boundary_before_it_moves_back_to_the_characters_start() {
        // Shift_JIS prose with no ASCII byte for more than the boundary search looks back: the end (byte 2,001, the
        // second byte of a character) cannot be placed by context alone, so the decode leaves the cut character out.
        let prose = "晴天なりました本日は".repeat(200);
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&prose);
        let w = range(&bytes, "shift_jis", 0, 2001, 100_000);
        assert_eq!(w.actual, [0, 2000]);
        assert!(!w.cap_hit && w.rendered.invalid == 0, "{w:?}");
        let next = range(&bytes, "shift_jis", 2000, 4000, 100_000);
        assert_eq!(next.rendered.invalid, 0, "the next range starts on the character the first one left out");
        assert!(next.rendered.text.starts_with("@2000: 晴"), "{}", next.rendered.text);
        // A range inside one character is shown cut rather than empty, so that paging moves on.
        let inside = range(&bytes, "shift_jis", 2000, 2001, 100_000);
        assert!(inside.actual[1] > inside.actual[0], "{inside:?}");
    }

    #[test]
    fn cap_ends_range_early_at_a_boundary() {
        let text = "€".repeat(100);
        let w = range(text.as_bytes(), "utf-8", 0, 1000, 14);
        assert_eq!(w.actual, [0, 9]);
        assert!(w.cap_hit);
        assert_eq!(w.rendered.text, "@0: €€€");
    }
}
