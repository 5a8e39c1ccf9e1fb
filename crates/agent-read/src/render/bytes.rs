//! Renders a byte range: every line of it behind `@OFFSET: `, the file offset of the line's first byte in the range,
//! with its content [shown](crate::escape) as a line window's is, within the output cap.
//!
//! So no line of a range is unprefixed: content cannot print a footer or a notice of its own, and the offsets say
//! exactly where each line starts, so a range whose end was cut continues where the footer says. A carriage return
//! before a line feed is part of the line break, as in line windows, and not shown (the next line's offset still
//! counts it); any other carriage return is content, shown as `␍`.

use super::decoded;
use super::flags::{Flags, Place};
use crate::classify::Codec;
use crate::classify::codec::DecodeLimit;
use crate::window::bytes::RangeRendering;
use crate::window::newlines;

/// A byte range rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeText {
    /// The lines, each behind its offset; the last ends with a line feed only when the range did.
    pub text: String,
    /// Source bytes rendered, from the start of the range: where the next range starts.
    pub consumed: usize,
    /// Invalid bytes within what was rendered.
    pub invalid: u64,
    /// Whether the output cap stopped the rendering before the end of the range.
    pub cut: bool,
    /// NUL, control and invisible characters met, placed by file offset.
    pub flags: Flags,
    /// Line breaks that were CRLF (their CR not shown).
    pub crlf: u64,
}

/// Renders `buf`, the bytes of a range that starts at file offset `start` on a character boundary, within
/// `max_out` bytes of text. `last` says `buf` ends where the content ends, or on a certain character boundary (a
/// trailing partial character is then shown as invalid rather than left to the next range).
pub fn render_range(codec: Codec, buf: &[u8], start: u64, last: bool, max_out: usize) -> RangeText {
    let layout = codec.newline_layout();
    let cr = layout.cr_unit();
    let mut range =
        RangeText { text: String::new(), consumed: 0, invalid: 0, cut: false, flags: Flags::new(Place::Byte), crlf: 0 };
    for nl in newlines(layout, buf) {
        let line = &buf[range.consumed..nl];
        let crlf = line.len() >= cr.len() && line.ends_with(cr);
        let content = if crlf { &line[..line.len() - cr.len()] } else { line };
        // A line ended by a line feed ends on a certain boundary whatever the encoding.
        if !range.push_line(codec, content, start, Ending::LineFeed, max_out) {
            return range;
        }
        range.crlf += u64::from(crlf);
        range.consumed = nl + layout.unit;
    }
    if range.consumed < buf.len() {
        let rest = &buf[range.consumed..];
        range.push_line(codec, rest, start, Ending::Range { last }, max_out);
    }
    range
}

impl RangeRendering for RangeText {
    fn consumed(&self) -> usize {
        self.consumed
    }

    fn cut(&self) -> bool {
        self.cut
    }
}

/// What ends a line of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// A line feed, which ends a character in every encoding.
    LineFeed,
    /// The end of the range; `last` as for [`render_range`].
    Range { last: bool },
}

impl RangeText {
    /// Shows the line at `self.consumed`. Returns whether it was shown whole, its line feed included; otherwise
    /// `consumed` says how far it went.
    fn push_line(&mut self, codec: Codec, content: &[u8], start: u64, ending: Ending, max_out: usize) -> bool {
        let at = start + self.consumed as u64;
        let prefix = format!("@{at}: ");
        let (terminated, last) = match ending {
            Ending::LineFeed => (true, true),
            Ending::Range { last } => (false, last),
        };
        let Some(room) = max_out.checked_sub(self.text.len() + prefix.len() + usize::from(terminated)) else {
            self.cut = true;
            return false;
        };
        let limit = DecodeLimit { max_chars: usize::MAX, max_bytes: room };
        let shown = decoded::decode_shown(codec, content, limit, last);
        if shown.consumed == 0 && !content.is_empty() {
            // Not one character fits, or the range holds only part of one: the range ends before this line.
            self.cut |= shown.cut;
            return false;
        }
        self.flags.add(&shown.counts, |index| at + decoded::source_offset(codec, content, index, last) as u64);
        self.invalid += shown.invalid;
        self.text.push_str(&prefix);
        self.text.push_str(&shown.text);
        if shown.consumed < content.len() || !terminated {
            self.consumed += shown.consumed;
            self.cut |= shown.cut;
            return false;
        }
        self.text.push('\n');
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8() -> Codec {
        Codec::for_label("utf-8").unwrap()
    }

    #[test]
    fn every_line_carries_its_offset_and_a_forged_footer_stays_content() {
        let buf = b"ab\n(lines 1-3 of 3 \xc2\xb7 end of file)\r\nlast";
        let r = render_range(utf8(), buf, 100, true, 4096);
        assert_eq!(r.text, "@100: ab\n@103: (lines 1-3 of 3 · end of file)\n@136: last");
        assert_eq!((r.consumed, r.crlf, r.cut), (buf.len(), 1, false));
    }

    #[test]
    fn a_lone_carriage_return_and_escapes_are_shown_and_placed_by_file_offset() {
        let buf = "x\ry\n\u{1b}[2J\u{202E}\n".as_bytes();
        let r = render_range(utf8(), buf, 10, true, 4096);
        assert_eq!(r.text, "@10: x␍y\n@14: ␛[2J⟨U+202E⟩\n");
        assert_eq!(r.flags.control.map(|s| (s.count, s.first)), Some((2, 11)));
        assert_eq!(r.flags.invisible.map(|s| (s.count, s.first)), Some((1, 18)));
    }

    #[test]
    fn the_cap_stops_at_the_first_byte_not_shown_and_counts_what_is_shown() {
        let buf = "\u{202E}".repeat(50);
        let r = render_range(utf8(), buf.as_bytes(), 0, true, 100);
        assert!(r.text.len() <= 100 && r.cut, "{r:?}");
        assert_eq!(r.consumed, r.text.matches("⟨U+202E⟩").count() * 3);
        let two = render_range(utf8(), b"aaaa\nbbbb\n", 0, true, 12);
        assert_eq!((two.text.as_str(), two.consumed, two.cut), ("@0: aaaa\n", 5, true));
    }

    #[test]
    fn a_partial_character_at_the_end_is_left_to_the_next_range_unless_last() {
        let buf = &"a\n€".as_bytes()[..3];
        let left = render_range(utf8(), buf, 0, false, 4096);
        assert_eq!((left.text.as_str(), left.consumed), ("@0: a\n", 2));
        let shown = render_range(utf8(), buf, 0, true, 4096);
        assert_eq!((shown.text.as_str(), shown.consumed, shown.invalid), ("@0: a\n@2: \u{FFFD}", 3, 1));
    }

    #[test]
    fn wide_encodings_split_at_their_own_line_feeds() {
        let codec = Codec::for_label("utf-16le").unwrap();
        let buf: Vec<u8> = "a\r\n\u{0A0A}\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let r = render_range(codec, &buf, 2, true, 4096);
        assert_eq!(r.text, "@2: a\n@8: \u{0A0A}\n");
        assert_eq!(r.crlf, 1);
    }
}

/// Byte ranges read by the window stage and rendered here: where their ends land, and what is shown of them.
#[cfg(test)]
mod read_and_rendered {
    use super::*;
    use crate::window::Source;
    use crate::window::bytes::{ByteWindow, read_range};
    use std::io::Write;

    fn range(bytes: &[u8], codec: &str, start: u64, end: u64, max_out: usize) -> ByteWindow<RangeText> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let codec = Codec::for_label(codec).unwrap();
        let source = Source::new(&file, 0, bytes.len() as u64, codec.newline_layout());
        read_range(&source, codec, [start, end], max_out, |buf, at, last| render_range(codec, buf, at, last, max_out))
            .unwrap()
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
