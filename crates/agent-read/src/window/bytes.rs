//! Byte-range windows: the bytes `[start, end)` of a file, with both ends moved to character boundaries.
//!
//! A range never splits a character: its start moves back to the character's first byte, its end back to the last
//! boundary before it. Output is bounded by the byte cap: a range too big for it ends early, at a boundary, and the
//! next range starts exactly there. What the model sees of it is rendered line by line by a [`RangeRendering`] the
//! caller passes (`crate::render::bytes`), so that this stage knows how far the text went, never how it is shown.

use super::Source;
use crate::classify::Codec;
use crate::classify::boundary::{CONTEXT_AFTER, CONTEXT_BEFORE, last_boundary, may_miss_boundaries};
use std::io;

/// What a range's rendering tells the window: how far it went and whether the output cap stopped it.
pub trait RangeRendering {
    /// Source bytes rendered, from the start of the range: where the next range starts.
    fn consumed(&self) -> usize;
    /// Whether the output cap stopped the rendering before the end of the range.
    fn cut(&self) -> bool;
}

/// A decoded byte range and how it differs from what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteWindow<R> {
    /// The range asked for, `[start, end)` (open ends filled in).
    pub requested: [u64; 2],
    /// The range returned, `[start, end)`.
    pub actual: [u64; 2],
    /// The returned range as rendered.
    pub rendered: R,
    /// Whether the output cap ended the range before its (adjusted) end.
    pub cap_hit: bool,
}

/// Reads `requested` (`[start, end)`, with `start` inside the file) of `source`, for at most `max_out` bytes of text:
/// `render(bytes, start, last)` renders the bytes read from file offset `start` (a character boundary), `last`
/// saying they end where the content ends or on a certain character boundary.
pub fn read_range<R: RangeRendering>(
    source: &Source<'_>,
    codec: Codec,
    requested: [u64; 2],
    max_out: usize,
    render: impl Fn(&[u8], u64, bool) -> R,
) -> io::Result<ByteWindow<R>> {
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
    let mut rendered = render(&buf, start, last);
    if rendered.consumed() == 0 && reaches_end {
        // Not one whole character in the range: it is shown cut, so that paging always moves on.
        rendered = render(&buf, start, true);
    }
    let actual_end = start + rendered.consumed() as u64;
    // Short of `end` because of the output cap (the read or the rendering stopped at it), not because of a character
    // the range cut.
    let cap_hit = actual_end < end && (rendered.cut() || !reaches_end);
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
