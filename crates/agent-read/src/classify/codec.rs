//! The text codec chosen for a file: how its bytes become characters, where its newlines are, and where it is safe
//! to cut it.
//!
//! Every window of a text file is decoded through a [`Codec`]. The codec guarantees that decoding a prefix reports
//! exactly how many source bytes the shown characters came from, so a cut line or a byte range always continues at
//! the first byte that was not shown: no gap, no overlap.

use encoding_rs::{DecoderResult, Encoding, UTF_8, UTF_16BE, UTF_16LE};

/// A text encoding: any WHATWG encoding (through `encoding_rs`), or UTF-32, which WHATWG leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// An encoding known to `encoding_rs`.
    Whatwg(&'static Encoding),
    /// UTF-32, little-endian.
    Utf32Le,
    /// UTF-32, big-endian.
    Utf32Be,
}

/// How newlines look in a codec's byte stream: a code unit of `unit` bytes holding U+000A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NewlineLayout {
    /// Bytes per code unit that can hold a newline (1, 2 or 4).
    pub unit: usize,
    /// The line feed code unit (first `unit` bytes used).
    pub lf: [u8; 4],
    /// The carriage return code unit (first `unit` bytes used).
    pub cr: [u8; 4],
}

impl NewlineLayout {
    /// Index of the `0x0A` byte inside a line feed unit.
    pub fn lf_byte_index(&self) -> usize {
        self.lf[..self.unit].iter().position(|b| *b == b'\n').unwrap_or(0)
    }

    /// The line feed unit as a slice.
    pub fn lf_unit(&self) -> &[u8] {
        &self.lf[..self.unit]
    }

    /// The carriage return unit as a slice.
    pub fn cr_unit(&self) -> &[u8] {
        &self.cr[..self.unit]
    }
}

/// Characters decoded from a byte slice, with the count of source bytes they used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decoded {
    /// The decoded text; invalid sequences appear as U+FFFD.
    pub text: String,
    /// Source bytes the text came from.
    pub consumed: usize,
    /// Source bytes that were invalid in this encoding.
    pub invalid: u64,
    /// Whether the text stopped before the end of the input because of a limit.
    pub cut: bool,
}

/// Bounds on one decode: characters, and bytes of UTF-8 output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimit {
    /// Maximum characters to produce.
    pub max_chars: usize,
    /// Maximum bytes of UTF-8 to produce.
    pub max_bytes: usize,
}

impl DecodeLimit {
    /// No limit at all.
    pub const NONE: DecodeLimit = DecodeLimit { max_chars: usize::MAX, max_bytes: usize::MAX };
}

const UTF8_REPLACEMENT_LEN: usize = '\u{FFFD}'.len_utf8();

impl Codec {
    /// Looks up a WHATWG label (`utf-8`, `latin1`, `shift_jis`, …) or `utf-32le`/`utf-32be`.
    pub fn for_label(label: &str) -> Option<Codec> {
        match label.trim().to_ascii_lowercase().as_str() {
            "utf-32le" | "utf32le" | "utf-32" | "utf32" => Some(Codec::Utf32Le),
            "utf-32be" | "utf32be" => Some(Codec::Utf32Be),
            other => Encoding::for_label(other.as_bytes())
                // "replacement" decodes everything to one U+FFFD: useless for reading, so it is not offered.
                .filter(|e| *e != encoding_rs::REPLACEMENT)
                .map(Codec::Whatwg),
        }
    }

    /// The canonical name (`UTF-8`, `windows-1252`, `UTF-32LE`, …).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Whatwg(e) => e.name(),
            Codec::Utf32Le => "UTF-32LE",
            Codec::Utf32Be => "UTF-32BE",
        }
    }

    /// Whether this is UTF-8.
    pub fn is_utf8(self) -> bool {
        self == Codec::Whatwg(UTF_8)
    }

    /// Where newlines are in this codec's bytes.
    pub fn newline_layout(self) -> NewlineLayout {
        match self {
            Codec::Whatwg(e) if e == UTF_16LE => layout(2, [b'\n', 0, 0, 0], [b'\r', 0, 0, 0]),
            Codec::Whatwg(e) if e == UTF_16BE => layout(2, [0, b'\n', 0, 0], [0, b'\r', 0, 0]),
            Codec::Whatwg(_) => layout(1, [b'\n', 0, 0, 0], [b'\r', 0, 0, 0]),
            Codec::Utf32Le => layout(4, [b'\n', 0, 0, 0], [b'\r', 0, 0, 0]),
            Codec::Utf32Be => layout(4, [0, 0, 0, b'\n'], [0, 0, 0, b'\r']),
        }
    }

    /// Decodes `src` within `limit`. `last` says `src` ends where the content ends (a trailing partial character is
    /// then invalid); otherwise a trailing partial character is left unconsumed.
    pub fn decode(self, src: &[u8], limit: DecodeLimit, last: bool) -> Decoded {
        let src = if last {
            src
        } else {
            &src[..super::boundary::last_boundary(self, src, src.len(), src.len() as u64, false)]
        };
        let first = self.decode_bytes(src, limit.max_bytes);
        match char_boundary_after(&first.text, limit.max_chars) {
            Some(byte_len) => {
                let mut second = self.decode_bytes(src, byte_len);
                second.cut = true;
                second
            }
            None => first,
        }
    }

    /// Decodes all of `src` as complete content (a trailing partial character is invalid), within `max_bytes`.
    fn decode_bytes(self, src: &[u8], max_bytes: usize) -> Decoded {
        match self {
            Codec::Whatwg(e) => decode_whatwg(e, src, max_bytes),
            Codec::Utf32Le => decode_utf32(src, max_bytes, u32::from_le_bytes),
            Codec::Utf32Be => decode_utf32(src, max_bytes, u32::from_be_bytes),
        }
    }
}

fn layout(unit: usize, lf: [u8; 4], cr: [u8; 4]) -> NewlineLayout {
    NewlineLayout { unit, lf, cr }
}

/// The byte length of the first `max_chars` characters of `text`, when `text` has more than that.
fn char_boundary_after(text: &str, max_chars: usize) -> Option<usize> {
    if text.len() <= max_chars {
        return None;
    }
    text.char_indices().nth(max_chars).map(|(i, _)| i)
}

/// Decodes with `encoding_rs` within `max_bytes` of output. When everything does not fit, the cut is the largest
/// character boundary whose prefix fits (found by binary search: the decoded length grows with the prefix). Because a
/// boundary splits the input exactly where the decoder would, the prefix decodes to exactly the text shown, and the
/// next window continues at `consumed` with nothing lost or repeated.
fn decode_whatwg(encoding: &'static Encoding, src: &[u8], max_bytes: usize) -> Decoded {
    let (text, invalid) = decode_all(encoding, src);
    if text.len() <= max_bytes {
        return Decoded { text, consumed: src.len(), invalid, cut: false };
    }
    let codec = Codec::Whatwg(encoding);
    // `src` starts on a character boundary, so a cut's offset in `src` serves for code unit alignment.
    let boundary = |cut: usize| super::boundary::last_boundary(codec, src, cut, cut as u64, true);
    // Invariant: the prefix up to boundary(lo) fits; the one up to boundary(hi) does not.
    let (mut lo, mut hi) = (0, src.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decode_all(encoding, &src[..boundary(mid)]).0.len() <= max_bytes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let consumed = boundary(lo);
    let (text, invalid) = decode_all(encoding, &src[..consumed]);
    Decoded { text, consumed, invalid, cut: true }
}

/// Decodes all of `src` as complete content, counting the bytes that were invalid.
fn decode_all(encoding: &'static Encoding, src: &[u8]) -> (String, u64) {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let capacity = decoder.max_utf8_buffer_length_without_replacement(src.len()).unwrap_or(src.len());
    let mut text = String::with_capacity(capacity);
    let mut invalid = 0;
    let mut read = 0;
    loop {
        let (result, n) = decoder.decode_to_string_without_replacement(&src[read..], &mut text, true);
        read += n;
        match result {
            DecoderResult::InputEmpty => return (text, invalid),
            DecoderResult::OutputFull => text.reserve(src.len() - read + 16),
            DecoderResult::Malformed(bad, _) => {
                text.push('\u{FFFD}');
                invalid += u64::from(bad);
            }
        }
    }
}

fn decode_utf32(src: &[u8], max_bytes: usize, to_u32: fn([u8; 4]) -> u32) -> Decoded {
    let mut out = Decoded::default();
    let mut chunks = src.chunks_exact(4);
    for chunk in &mut chunks {
        let mut unit = [0u8; 4];
        unit.copy_from_slice(chunk);
        let (ch, invalid) = match char::from_u32(to_u32(unit)) {
            Some(c) => (c, 0),
            None => ('\u{FFFD}', 4),
        };
        if out.text.len() + ch.len_utf8() > max_bytes {
            out.cut = true;
            return out;
        }
        out.text.push(ch);
        out.consumed += 4;
        out.invalid += invalid;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        if out.text.len() + UTF8_REPLACEMENT_LEN > max_bytes {
            out.cut = true;
            return out;
        }
        out.text.push('\u{FFFD}');
        out.consumed += rest.len();
        out.invalid += rest.len() as u64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{SHIFT_JIS, WINDOWS_1252};

    fn whole(codec: Codec, src: &[u8]) -> String {
        codec.decode(src, DecodeLimit::NONE, true).text
    }

    #[test]
    fn labels_resolve_including_utf32() {
        assert_eq!(Codec::for_label("UTF-8"), Some(Codec::Whatwg(UTF_8)));
        assert_eq!(Codec::for_label("latin1"), Some(Codec::Whatwg(WINDOWS_1252)));
        assert_eq!(Codec::for_label("utf-32be"), Some(Codec::Utf32Be));
        assert_eq!(Codec::for_label("iso-2022-kr"), None);
        assert_eq!(Codec::for_label("klingon"), None);
    }

    #[test]
    fn utf8_invalid_bytes_are_counted() {
        let d = Codec::Whatwg(UTF_8).decode(b"a\xffb\xe2\x82", DecodeLimit::NONE, true);
        assert_eq!(d.text, "a\u{FFFD}b\u{FFFD}");
        assert_eq!(d.invalid, 3);
        assert_eq!(d.consumed, 5);
    }

    #[test]
    fn partial_trailing_char_is_left_when_not_last() {
        let d = Codec::Whatwg(UTF_8).decode("ab€".as_bytes().get(..4).unwrap(), DecodeLimit::NONE, false);
        assert_eq!(d.text, "ab");
        assert_eq!(d.consumed, 2);
    }

    #[test]
    fn char_limit_reports_exact_consumption_in_every_codec() {
        let text = "aé€😀bШ日本";
        for codec in [Codec::Whatwg(UTF_8), Codec::Whatwg(UTF_16LE), Codec::Whatwg(UTF_16BE), Codec::Utf32Le] {
            let bytes = encode(codec, text);
            for max_chars in 0..text.chars().count() {
                let d = codec.decode(&bytes, DecodeLimit { max_chars, max_bytes: usize::MAX }, true);
                assert_eq!(d.text.chars().count(), max_chars, "{codec:?}");
                assert_eq!(whole(codec, &bytes[..d.consumed]), d.text, "{codec:?} {max_chars}");
                let rest = whole(codec, &bytes[d.consumed..]);
                assert_eq!(format!("{}{rest}", d.text), text, "{codec:?} {max_chars}");
            }
        }
    }

    #[test]
    fn damaged_utf8_prefix_is_exactly_what_was_shown() {
        let codec = Codec::Whatwg(UTF_8);
        let src = b"\xC2\xC2\x00";
        for limit in [DecodeLimit { max_chars: 1, max_bytes: usize::MAX }, DecodeLimit { max_chars: 9, max_bytes: 3 }] {
            let d = codec.decode(src, limit, true);
            assert_eq!(d.text, "\u{FFFD}");
            assert_eq!(d.consumed, 1);
            assert_eq!(whole(codec, &src[..d.consumed]), d.text);
        }
    }

    #[test]
    fn shift_jis_prefix_continues_exactly() {
        let text = "日本語のテキストabc漢字";
        let (bytes, _, _) = SHIFT_JIS.encode(text);
        let codec = Codec::Whatwg(SHIFT_JIS);
        for max_chars in 0..text.chars().count() {
            let d = codec.decode(&bytes, DecodeLimit { max_chars, max_bytes: usize::MAX }, true);
            assert_eq!(format!("{}{}", d.text, whole(codec, &bytes[d.consumed..])), text);
        }
    }

    #[test]
    fn byte_limit_never_splits_and_continues_exactly() {
        let text = "x€€y\u{FFFD}z";
        let bytes = text.as_bytes();
        let codec = Codec::Whatwg(UTF_8);
        for max_bytes in 0..bytes.len() {
            let d = codec.decode(bytes, DecodeLimit { max_chars: usize::MAX, max_bytes }, true);
            assert!(d.text.len() <= max_bytes);
            assert_eq!(format!("{}{}", d.text, whole(codec, &bytes[d.consumed..])), text);
        }
    }

    fn encode(codec: Codec, text: &str) -> Vec<u8> {
        match codec {
            Codec::Whatwg(e) if e == UTF_16LE => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
            Codec::Whatwg(e) if e == UTF_16BE => text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
            Codec::Utf32Le => text.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect(),
            Codec::Utf32Be => text.chars().flat_map(|c| u32::from(c).to_be_bytes()).collect(),
            Codec::Whatwg(e) => e.encode(text).0.into_owned(),
        }
    }
}
