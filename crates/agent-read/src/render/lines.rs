//! Renders captured lines into the model's text as the scan hands them over, within the per-line limit and the
//! output byte cap. Every line is `N: ` and its content [shown](crate::escape) so that nothing in it starts a line
//! of its own; a cut line ends with the tool's `⟨line truncated: …⟩` marker, which content cannot imitate (a file's
//! own `⟨` is shown escaped).

use super::FOOTER_RESERVE;
use super::decoded::{Shown, decode_shown};
use super::flags::{Flags, Place};
use crate::classify::Codec;
use crate::classify::codec::DecodeLimit;
use crate::escape;
use crate::window::scan::{CapturedLine, Flow};

/// Room kept for a truncation marker when a line must be cut to fit the cap (markers are far shorter).
const MARKER_RESERVE: usize = 160;

/// Builds the line part of a text window, one line at a time.
#[derive(Debug)]
pub struct LineRenderer {
    codec: Codec,
    /// What a cut line's marker puts before its byte range (the fields that select a rendering).
    call_prefix: String,
    /// Whether a cut line's marker may name a byte range (not in decompressed text: ranges address the raw file).
    byte_ranges: bool,
    max_line_chars: usize,
    budget: usize,
    out: String,
    /// First line rendered.
    pub first: Option<u64>,
    /// Last line rendered.
    pub last: Option<u64>,
    /// Lines rendered.
    pub returned: u64,
    /// Lines cut at the per-line limit or by the cap.
    pub truncated: u64,
    /// Invalid bytes met in the rendered lines.
    pub invalid: u64,
    /// NUL, control and invisible characters met in the rendered lines.
    pub flags: Flags,
    /// Whether the byte cap ended the window.
    pub cap_hit: bool,
}

impl LineRenderer {
    /// A renderer for `codec` text whose whole output (footer included) must fit `max_output_bytes`.
    pub fn new(codec: Codec, max_line_chars: usize, max_output_bytes: usize) -> Self {
        LineRenderer {
            codec,
            call_prefix: String::new(),
            byte_ranges: true,
            max_line_chars,
            budget: max_output_bytes.saturating_sub(FOOTER_RESERVE),
            out: String::new(),
            first: None,
            last: None,
            returned: 0,
            truncated: 0,
            invalid: 0,
            flags: Flags::new(Place::Line),
            cap_hit: false,
        }
    }

    /// The same renderer, whose cut-line markers start their call with `prefix` (`pages="3" `): the byte range
    /// they name is in the rendering those fields select.
    pub fn with_call_prefix(self, prefix: &str) -> Self {
        LineRenderer { call_prefix: prefix.to_string(), ..self }
    }

    /// The same renderer, whose cut-line markers say how much is left but name no byte range: the text is
    /// decompressed or converted, and byte ranges address the file's own bytes.
    #[cfg_attr(not(any(feature = "compressed", feature = "documents")), allow(dead_code))]
    pub fn without_byte_ranges(self) -> Self {
        LineRenderer { byte_ranges: false, ..self }
    }

    /// Bytes of each line the scan must keep: enough for `max_line_chars` characters in any encoding.
    pub fn keep_max(&self) -> usize {
        self.max_line_chars.saturating_mul(4).saturating_add(4)
    }

    /// Renders one line, or refuses it when the cap is reached (then the window ends before it).
    pub fn push(&mut self, line: CapturedLine<'_>) -> Flow {
        self.push_marked(line, ": ", "")
    }

    /// [`LineRenderer::push`] with `separator` after the number (`: ` for a line of a window or a match, `- ` for a
    /// line of context around a match), and `lead`, a marker of the tool's own, before the text (where a long line
    /// is shown from a later byte).
    pub fn push_marked(&mut self, line: CapturedLine<'_>, separator: &str, lead: &str) -> Flow {
        let content_len = line.content_end - line.start;
        let whole = line.kept.len() as u64 == content_len;
        if whole
            && separator == ": "
            && lead.is_empty()
            && let Some(flow) = self.push_plain_utf8(&line)
        {
            return flow;
        }
        let prefix = format!("{}{separator}{lead}", line.number);
        let limit = DecodeLimit { max_chars: self.max_line_chars, max_bytes: usize::MAX };
        let mut shown = decode_shown(self.codec, line.kept, limit, whole);
        let mut marker = self.marker(&line, shown.consumed);
        let needed = prefix.len() + shown.text.len() + marker.len() + 1;
        if self.out.len() + needed > self.budget {
            self.cap_hit = true;
            if self.returned > 0 {
                return Flow::Done;
            }
            // The first line alone is over the cap: cut it further, so that paging still makes progress.
            let room = self.budget.saturating_sub(prefix.len() + MARKER_RESERVE + 1);
            shown = decode_shown(self.codec, line.kept, DecodeLimit { max_bytes: room, ..limit }, whole);
            marker = self.marker(&line, shown.consumed);
        }
        if !marker.is_empty() {
            self.truncated += 1;
        }
        self.note(line.number, &shown);
        self.out.push_str(&prefix);
        self.out.push_str(&shown.text);
        self.out.push_str(&marker);
        self.out.push('\n');
        self.first.get_or_insert(line.number);
        self.last = Some(line.number);
        self.returned += 1;
        if self.cap_hit { Flow::Done } else { Flow::More }
    }

    fn marker(&self, line: &CapturedLine<'_>, consumed: usize) -> String {
        let marker = truncation_marker(line, consumed, &self.call_prefix);
        if self.byte_ranges || marker.is_empty() {
            return marker;
        }
        let left = line.content_end - (line.start + consumed as u64);
        format!("{}line truncated: {left} more bytes, beyond the line limit{}", escape::OPEN, escape::CLOSE)
    }

    /// Adds a line of the tool's own (unnumbered) between rendered lines, when it fits the cap.
    pub fn push_separator(&mut self, line: &str) {
        if self.out.len() + line.len() <= self.budget {
            self.out.push_str(line);
        }
    }

    /// Counts what a shown line met.
    fn note(&mut self, number: u64, shown: &Shown) {
        self.invalid += shown.invalid;
        self.flags.add(&shown.counts, |_| number);
    }

    /// The common case without decoding or allocating: a whole UTF-8 line, valid, within the character limit (it has
    /// no more characters than bytes) and within the cap. `None` when the line needs the general path.
    fn push_plain_utf8(&mut self, line: &CapturedLine<'_>) -> Option<Flow> {
        if !self.codec.is_utf8() || line.kept.len() > self.max_line_chars {
            return None;
        }
        let text = std::str::from_utf8(line.kept).ok().filter(|text| escape::is_plain(text))?;
        let mut digits = itoa::Buffer::new();
        let number = digits.format(line.number);
        if self.out.len() + number.len() + 2 + text.len() + 1 > self.budget {
            return None;
        }
        self.out.push_str(number);
        self.out.push_str(": ");
        self.out.push_str(text);
        self.out.push('\n');
        self.first.get_or_insert(line.number);
        self.last = Some(line.number);
        self.returned += 1;
        Some(Flow::More)
    }

    /// The rendered lines, each ending with a newline.
    pub fn into_output(self) -> String {
        self.out
    }
}

/// The marker after a cut line: how much is left and the exact byte range that holds it. Empty when nothing was cut.
fn truncation_marker(line: &CapturedLine<'_>, consumed: usize, call_prefix: &str) -> String {
    let shown_end = line.start + consumed as u64;
    if shown_end >= line.content_end {
        return String::new();
    }
    format!(
        "{}line truncated: {} more bytes; use {call_prefix}start_byte={shown_end} end_byte={} to read it{}",
        escape::OPEN,
        line.content_end - shown_end,
        line.content_end,
        escape::CLOSE
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u64, start: u64, content: &[u8], full_len: u64) -> CapturedLine<'_> {
        CapturedLine { number, start, content_end: start + full_len, kept: content }
    }

    fn utf8() -> Codec {
        Codec::for_label("utf-8").unwrap()
    }

    #[test]
    fn prefixes_lines() {
        let mut r = LineRenderer::new(utf8(), 100, 4096);
        assert_eq!(r.push(line(7, 0, b"hello", 5)), Flow::More);
        assert_eq!(r.push(line(8, 6, b"", 0)), Flow::More);
        assert_eq!((r.first, r.last, r.returned), (Some(7), Some(8), 2));
        assert_eq!(r.into_output(), "7: hello\n8: \n");
    }

    #[test]
    fn long_line_is_cut_with_exact_continuation() {
        let mut r = LineRenderer::new(utf8(), 20, 4096);
        let content = "é".repeat(30);
        r.push(line(1, 100, content.as_bytes(), 60));
        assert_eq!(r.truncated, 1);
        let out = r.into_output();
        assert!(out.starts_with(&format!("1: {}⟨line truncated: ", "é".repeat(20))), "{out}");
        assert!(out.contains("20 more bytes; use start_byte=140 end_byte=160"), "{out}");
    }

    #[test]
    fn line_longer_than_kept_prefix_reports_full_remainder() {
        let mut r = LineRenderer::new(utf8(), 16, 4096);
        let kept = vec![b'x'; r.keep_max()];
        r.push(line(1, 0, &kept, 1_000_000));
        assert!(r.into_output().contains("999984 more bytes; use start_byte=16 end_byte=1000000"));
    }

    #[test]
    fn cap_stops_before_a_line_that_does_not_fit() {
        let mut r = LineRenderer::new(utf8(), 2000, 1024 + FOOTER_RESERVE);
        let content = vec![b'a'; 600];
        assert_eq!(r.push(line(1, 0, &content, 600)), Flow::More);
        assert_eq!(r.push(line(2, 601, &content, 600)), Flow::Done);
        assert!(r.cap_hit);
        assert_eq!(r.returned, 1);
    }

    #[test]
    fn first_line_over_cap_is_cut_to_fit() {
        let mut r = LineRenderer::new(utf8(), 100_000, 1024 + FOOTER_RESERVE);
        let content = vec![b'a'; 5000];
        assert_eq!(r.push(line(1, 0, &content, 5000)), Flow::Done);
        let out = r.into_output();
        assert!(out.len() <= 1024, "{}", out.len());
        assert!(out.contains("use start_byte="), "{out}");
    }

    #[test]
    fn control_characters_are_shown_escaped_and_counted_by_line() {
        let mut r = LineRenderer::new(utf8(), 100, 4096);
        r.push(line(1, 0, b"clean", 5));
        r.push(line(2, 6, b"a\rb\x1b]52;c;eA==\x07", 15));
        r.push(line(3, 22, "x\u{2028}y\u{202E}z".as_bytes(), 9));
        assert_eq!(r.flags.control.map(|s| (s.count, s.first)), Some((4, 2)));
        assert_eq!(r.flags.invisible.map(|s| (s.count, s.first)), Some((1, 3)));
        assert_eq!(r.into_output(), "1: clean\n2: a␍b␛]52;c;eA==␇\n3: x⟨U+2028⟩y⟨U+202E⟩z\n");
    }

    #[test]
    fn escapes_count_against_the_cap_and_the_cut_continues_at_the_first_byte_not_shown() {
        // Each RLO is 3 bytes in the file and 12 shown: the cut falls by what is shown.
        let content = "\u{202E}".repeat(200);
        let mut r = LineRenderer::new(utf8(), 100_000, 1024 + FOOTER_RESERVE);
        r.push(line(1, 0, content.as_bytes(), 600));
        let out = r.into_output();
        assert!(out.len() <= 1024, "{}", out.len());
        let shown = out.matches("⟨U+202E⟩").count();
        assert!(out.contains(&format!("use start_byte={} end_byte=600", shown * 3)), "{out}");
    }

    #[test]
    fn invalid_bytes_are_counted() {
        let mut r = LineRenderer::new(utf8(), 100, 4096);
        r.push(line(1, 0, b"a\xff\xfeb", 4));
        assert_eq!(r.invalid, 2);
    }
}
