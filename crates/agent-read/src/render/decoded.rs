//! Decoded text as shown: bytes of a file decoded in its encoding and [escaped](crate::escape), within a limit,
//! with exactly the source bytes the shown text came from, so that whatever is cut continues at the first byte not
//! shown.

use crate::classify::Codec;
use crate::classify::codec::DecodeLimit;
use crate::escape::{Counts, fitting_prefix, push_shown, shown_len};

/// Decoded text as shown, with the count of source bytes it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shown {
    /// The text as shown.
    pub text: String,
    /// The text before showing (decoded, not yet escaped).
    pub decoded_len: usize,
    /// Source bytes the text came from.
    pub consumed: usize,
    /// Source bytes that were invalid in the encoding.
    pub invalid: u64,
    /// Whether the text stopped before the end of the input because of a limit.
    pub cut: bool,
    /// What it met (indices into the decoded text).
    pub counts: Counts,
}

/// Decodes `src` with `codec` and shows it, within `limit`: at most `max_chars` characters of the file, and at most
/// `max_bytes` bytes shown. As with [`Codec::decode`], `consumed` is exactly the source the shown text came from, so
/// whatever is cut continues at the first byte not shown.
pub fn decode_shown(codec: Codec, src: &[u8], limit: DecodeLimit, last: bool) -> Shown {
    let mut decoded = codec.decode(src, DecodeLimit { max_bytes: usize::MAX, ..limit }, last);
    if shown_len(&decoded.text) > limit.max_bytes {
        // The longest prefix that fits shown is a prefix of the decoded text; decoding again within its length finds
        // the source it came from.
        let fits = fitting_prefix(&decoded.text, limit.max_bytes);
        decoded = codec.decode(src, DecodeLimit { max_chars: usize::MAX, max_bytes: fits }, last);
        decoded.cut = true;
    }
    let mut text = String::with_capacity(decoded.text.len());
    let counts = push_shown(&mut text, &decoded.text);
    Shown {
        text,
        decoded_len: decoded.text.len(),
        consumed: decoded.consumed,
        invalid: decoded.invalid,
        cut: decoded.cut,
        counts,
    }
}

/// Source bytes before byte `at` of the text `src` decodes to (`at` on a character boundary of it): where the
/// character found there starts in the file.
pub fn source_offset(codec: Codec, src: &[u8], at: usize, last: bool) -> usize {
    codec.decode(src, DecodeLimit { max_chars: usize::MAX, max_bytes: at }, last).consumed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::shown;

    #[test]
    fn decoding_within_a_shown_limit_consumes_exactly_what_is_shown() {
        let codec = Codec::for_label("utf-8").unwrap();
        let src = "ab\u{1b}[31mcd\u{202E}ef".as_bytes();
        let whole = shown(std::str::from_utf8(src).unwrap());
        for max_bytes in 0..=whole.len() {
            let limit = DecodeLimit { max_chars: usize::MAX, max_bytes };
            let part = decode_shown(codec, src, limit, true);
            assert!(part.text.len() <= max_bytes);
            let rest = decode_shown(codec, &src[part.consumed..], DecodeLimit::NONE, true);
            assert_eq!(format!("{}{}", part.text, rest.text), whole, "{max_bytes}");
            assert_eq!(part.cut, part.consumed < src.len());
        }
        let chars = decode_shown(codec, src, DecodeLimit { max_chars: 3, max_bytes: usize::MAX }, true);
        assert_eq!((chars.text.as_str(), chars.consumed), ("ab␛", 3));
    }

    #[test]
    fn source_offsets_count_file_bytes() {
        let codec = Codec::for_label("utf-16le").unwrap();
        let src: Vec<u8> = "é\u{1b}x".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(source_offset(codec, &src, "é".len(), true), 2);
    }
}
