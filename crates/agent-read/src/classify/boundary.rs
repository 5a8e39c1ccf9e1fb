//! Character boundaries: where a window may start or end without splitting what the decoder treats as one unit.
//!
//! "Boundary" means exactly what the lossy decoder does, not what valid text would do: a damaged UTF-8 sequence
//! is one unit (one U+FFFD), and cutting inside it would show two replacement characters where the whole file shows
//! one. [`last_boundary`] is a fixed property of the bytes, so it is idempotent: an end it reports is a start that
//! will not move. That is what makes paging by byte ranges gap-free, overlap-free and always progressing.

use super::Codec;
use encoding_rs::{Encoding, ISO_2022_JP, UTF_8, UTF_16BE, UTF_16LE};

/// Bytes of context needed after a cut: the rest of a unit that may straddle it.
pub const CONTEXT_AFTER: usize = 4;
/// Bytes of context looked at before a cut: enough to find a certain boundary in legacy multi-byte text.
pub const CONTEXT_BEFORE: usize = 1024;

/// The last boundary at or before `cut` in `bytes`. `bytes` holds context around the cut; `text_offset` is the cut's
/// offset from the start of the text (after any BOM), for code unit alignment; `at_end` says `bytes` ends where the
/// content ends (otherwise a unit running off the end of `bytes` counts as unfinished).
pub fn last_boundary(codec: Codec, bytes: &[u8], cut: usize, text_offset: u64, at_end: bool) -> usize {
    let cut = cut.min(bytes.len());
    match codec {
        Codec::Whatwg(e) if e == UTF_8 => utf8_boundary(bytes, cut, at_end),
        Codec::Whatwg(e) if e == UTF_16LE => utf16_boundary(bytes, aligned(cut, text_offset, 2), |u| u[1]),
        Codec::Whatwg(e) if e == UTF_16BE => utf16_boundary(bytes, aligned(cut, text_offset, 2), |u| u[0]),
        Codec::Utf32Le | Codec::Utf32Be => aligned(cut, text_offset, 4),
        // Single-byte encodings have no multi-byte units; ISO-2022-JP is stateful and has no local answer.
        Codec::Whatwg(e) if e.is_single_byte() || e == ISO_2022_JP => cut,
        Codec::Whatwg(e) => legacy_boundary(e, bytes, cut, text_offset == cut as u64),
    }
}

/// Whether [`last_boundary`] may leave a cut where it is without knowing it to be a boundary: in Shift_JIS, EUC-*,
/// GBK, gb18030 and Big5 text with no byte below 0x30 in the context. A decode that starts on a boundary then tells
/// where the last whole character ends; in every other encoding the answer is exact from the context alone.
pub fn may_miss_boundaries(codec: Codec) -> bool {
    match codec {
        Codec::Whatwg(e) => !(e == UTF_8 || e == UTF_16LE || e == UTF_16BE || e.is_single_byte() || e == ISO_2022_JP),
        Codec::Utf32Le | Codec::Utf32Be => false,
    }
}

fn aligned(cut: usize, text_offset: u64, unit: u64) -> usize {
    cut.saturating_sub((text_offset % unit) as usize)
}

/// A non-continuation byte always starts a unit. Look back at most three bytes for one, then measure the unit it
/// starts by the decoder's rule (the maximal well-formed prefix of a sequence).
fn utf8_boundary(bytes: &[u8], cut: usize, at_end: bool) -> usize {
    if cut == bytes.len() && at_end {
        return cut;
    }
    let is_continuation = |b: u8| b & 0xC0 == 0x80;
    if bytes.get(cut).is_some_and(|b| !is_continuation(*b)) {
        return cut;
    }
    let Some(start) = (1..=3).filter_map(|k| cut.checked_sub(k)).find(|&i| !is_continuation(bytes[i])) else {
        // Four continuation bytes in a row (or the start of the context): the byte at the cut is a stray.
        return cut;
    };
    let (len, complete) = utf8_unit_len(&bytes[start..]);
    let runs_off = !complete && start + len == bytes.len() && !at_end;
    if start + len > cut || runs_off { start } else { cut }
}

/// Length of the unit the decoder makes of `bytes[0..]`, and whether it ends before `bytes` does (or is complete).
fn utf8_unit_len(bytes: &[u8]) -> (usize, bool) {
    let Some(&lead) = bytes.first() else {
        return (0, true);
    };
    let (second, need) = match lead {
        0xC2..=0xDF => (0x80..=0xBF, 1),
        0xE0 => (0xA0..=0xBF, 2),
        0xE1..=0xEC | 0xEE..=0xEF => (0x80..=0xBF, 2),
        0xED => (0x80..=0x9F, 2),
        0xF0 => (0x90..=0xBF, 3),
        0xF1..=0xF3 => (0x80..=0xBF, 3),
        0xF4 => (0x80..=0x8F, 3),
        _ => return (1, true),
    };
    let mut len = 1;
    while len <= need {
        let range = if len == 1 { second.clone() } else { 0x80..=0xBF };
        match bytes.get(len) {
            Some(b) if range.contains(b) => len += 1,
            // A byte that cannot continue the sequence ends the unit: the unit is decided.
            Some(_) => return (len, true),
            None => return (len, false),
        }
    }
    (len, true)
}

/// Inside a surrogate pair only: a high surrogate pairs with the unit right after it when that is a low surrogate.
fn utf16_boundary(bytes: &[u8], cut: usize, high_byte: fn(&[u8]) -> u8) -> usize {
    let unit_at = |i: usize| bytes.get(i..i + 2).map(high_byte);
    let before_is_high = cut.checked_sub(2).and_then(unit_at).is_some_and(|h| (0xD8..=0xDB).contains(&h));
    let at_is_low = unit_at(cut).is_some_and(|h| (0xDC..=0xDF).contains(&h));
    // A high surrogate followed by a lone trailing byte decodes as one unit too.
    let at_is_partial = bytes.len() == cut + 1;
    if before_is_high && (at_is_low || at_is_partial) { cut - 2 } else { cut }
}

/// Shift_JIS, EUC-*, GBK, gb18030, Big5: no byte below 0x30 is ever part of a multi-byte character, so the position
/// after one is certainly a boundary. Decode forward from there one byte at a time; each byte that completes output
/// leaves the decoder clean, so the position after it is a boundary.
/// The start of the text is a certain boundary too (`starts_at_text`: `bytes` begins there).
fn legacy_boundary(encoding: &'static Encoding, bytes: &[u8], cut: usize, starts_at_text: bool) -> usize {
    let low_byte = bytes[..cut].iter().rposition(|b| *b < 0x30).map(|i| i + 1);
    let Some(anchor) = low_byte.or(starts_at_text.then_some(0)) else {
        // No certain boundary within the context: leave the cut where it is.
        return cut;
    };
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut boundary = anchor;
    let mut scratch = [0u8; 32];
    for i in anchor..cut {
        let Ok(dst) = std::str::from_utf8_mut(&mut scratch) else {
            return boundary;
        };
        let (_, _, written, replaced) = decoder.decode_to_str(&bytes[i..=i], dst, false);
        if written > 0 || replaced {
            boundary = i + 1;
        }
    }
    boundary
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{GBK, SHIFT_JIS};

    fn utf8(bytes: &[u8], cut: usize) -> usize {
        last_boundary(Codec::Whatwg(UTF_8), bytes, cut, cut as u64, true)
    }

    #[test]
    fn utf8_valid_text() {
        let bytes = "a€b".as_bytes(); // 61 e2 82 ac 62
        assert_eq!([0, 1, 2, 3, 4, 5].map(|c| utf8(bytes, c)), [0, 1, 1, 1, 4, 5]);
    }

    #[test]
    fn utf8_damaged_sequences_are_one_unit() {
        // C3 cannot be continued by F0: the unit [C3] is complete, so a cut after it stands.
        let bytes = b"a\xc3\xf0\x9f\x98b";
        assert_eq!(utf8(bytes, 2), 2);
        assert_eq!(utf8(bytes, 4), 2);
        assert_eq!(utf8(bytes, 5), 5);
        // E2 82 followed by a non-continuation: one unit of two bytes.
        assert_eq!(utf8(b"\xe2\x82A", 1), 0);
        assert_eq!(utf8(b"\xe2\x82A", 2), 2);
        // Strays after a complete character and runs of continuation bytes.
        assert_eq!(utf8(b"\xc3\xa9\x80", 2), 2);
        assert_eq!(utf8(b"\xc3\xa9\x80\x80", 3), 3);
        assert_eq!(utf8(b"a\x80\x80\x80\x80", 4), 4);
        // E0 needs A0..BF next: E0 80 is a one-byte unit and a stray.
        assert_eq!(utf8(b"\xe0\x80", 1), 1);
    }

    #[test]
    fn utf8_is_idempotent() {
        let bytes = b"\xe2\x82\xe6\x97\xa5\xf0\x9f\x98a\xff\x80\xc3";
        for cut in 0..=bytes.len() {
            let b = utf8(bytes, cut);
            assert!(b <= cut);
            assert_eq!(utf8(bytes, b), b, "cut {cut}");
        }
    }

    #[test]
    fn utf8_unit_running_off_the_context_is_unfinished() {
        assert_eq!(last_boundary(Codec::Whatwg(UTF_8), b"ab\xe2\x82", 4, 4, false), 2);
        assert_eq!(last_boundary(Codec::Whatwg(UTF_8), b"ab\xe2\x82", 4, 4, true), 4);
    }

    #[test]
    fn utf16_pairs_and_alignment() {
        let codec = Codec::Whatwg(UTF_16LE);
        let bytes: Vec<u8> = "a😀b".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(last_boundary(codec, &bytes, 3, 3, true), 2);
        assert_eq!(last_boundary(codec, &bytes, 4, 4, true), 2);
        assert_eq!(last_boundary(codec, &bytes, 6, 6, true), 6);
        // An unpaired high surrogate is its own unit.
        let lone: Vec<u8> = [0xD800u16, 0x41].iter().flat_map(|u| u.to_le_bytes()).collect();
        assert_eq!(last_boundary(codec, &lone, 2, 2, true), 2);
        // A high surrogate and a lone trailing byte are one unit.
        assert_eq!(last_boundary(codec, b"\x00\xD8\x00", 2, 2, true), 0);
    }

    #[test]
    fn shift_jis_never_splits_and_never_moves_too_far() {
        let (bytes, _, _) = SHIFT_JIS.encode("a 日本語テキスト");
        let codec = Codec::Whatwg(SHIFT_JIS);
        assert_eq!(last_boundary(codec, &bytes, 3, 3, true), 2);
        assert_eq!(last_boundary(codec, &bytes, 5, 5, true), 4);
        assert_eq!(last_boundary(codec, &bytes, 6, 6, true), 6);
        // Plain ASCII in a double-byte encoding: every position is a boundary.
        let ascii = b" abcdefghijklmnopqrstuvwxyz";
        assert_eq!(last_boundary(Codec::Whatwg(GBK), ascii, 16, 16, true), 16);
    }
}
