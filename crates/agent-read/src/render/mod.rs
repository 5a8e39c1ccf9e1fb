//! Stage 5 of a read: what the model sees.
//!
//! Lines are prefixed `N: `; long lines are cut on a character boundary and marked with the byte range that holds
//! the rest; the whole output, prefixes and footer included, stays within the byte cap. The footer is always the
//! last line: what the window shows, the total, brief notices, and the exact next call — or `end of file`.

#[cfg(feature = "archives")]
pub mod archive;
pub mod attachment;
pub mod bytes;
pub mod decoded;
#[cfg(feature = "documents")]
pub mod document;
pub mod flags;
pub mod lines;
pub mod listing;
pub mod many;
pub mod notebook;
#[cfg(feature = "pdf")]
pub mod pdf;
pub mod session;
pub mod text;

pub use lines::LineRenderer;

/// Bytes of the output cap kept free for the footer. Footers are short; this bounds even the longest one (a block
/// window with a forced encoding, ten-digit numbers and every notice: see the test below).
pub const FOOTER_RESERVE: usize = 768;

/// What stands before every line of a document's own text in a rendering (a notebook's sources and outputs, a
/// PDF's pages), so that the rendering's headers and notes — the tool's words, never behind it — cannot be imitated.
pub const GUTTER: &str = "│ ";

/// Appends `block`, every line of it behind [`GUTTER`] (an empty line behind the bar alone) and ended by a line
/// feed; nothing for an empty block. Taking one gutter off each line gives the block back.
pub fn push_gutter_block(out: &mut String, block: &str) {
    if block.is_empty() {
        return;
    }
    for line in block.strip_suffix('\n').unwrap_or(block).split('\n') {
        out.push_str(if line.is_empty() { GUTTER.trim_end() } else { GUTTER });
        out.push_str(line);
        out.push('\n');
    }
}

/// The first second RFC 3339 cannot write: 10000-01-01T00:00:00Z, in seconds since 1970.
const YEAR_10000: u64 = 253_402_300_800;

/// A time as RFC 3339 in UTC to the second (`2024-05-01T12:00:00Z`), or `None` for a time that form cannot write:
/// before 1970 or from the year 10000 on. A file's or an archive member's time is whatever its bytes say, so every
/// time a result shows goes through here (the formatter it wraps panics on both).
pub fn rfc3339_seconds(time: std::time::SystemTime) -> Option<String> {
    use std::fmt::Write;
    let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    if since.as_secs() >= YEAR_10000 {
        return None;
    }
    let mut out = String::new();
    write!(out, "{}", humantime::format_rfc3339_seconds(time)).ok()?;
    Some(out)
}

/// A size in bytes for people: `812 B`, `4.0 KiB`, `1.0 GiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The footer line: `(what · notices · next call)`.
#[derive(Debug, Clone, Default)]
pub struct Footer {
    parts: Vec<String>,
}

impl Footer {
    /// A footer that starts with the window description (`lines 1-20 of 300`).
    pub fn new(window: impl Into<String>) -> Self {
        Footer { parts: vec![window.into()] }
    }

    /// Adds one brief notice.
    pub fn notice(&mut self, text: impl Into<String>) -> &mut Self {
        self.parts.push(text.into());
        self
    }

    /// Adds a notice when `condition` holds.
    pub fn notice_if(&mut self, condition: bool, text: impl FnOnce() -> String) -> &mut Self {
        if condition {
            self.parts.push(text());
        }
        self
    }

    /// The finished line, ending with the next call (`next: offset=21`) or `end of file`.
    pub fn finish(&self, next: Option<String>, end_word: &str) -> String {
        let last = match next {
            Some(call) => format!("next: {call}"),
            None => end_word.to_string(),
        };
        format!("({} · {last})", self.parts.join(" · "))
    }
}

/// Appends the footer as the last line of `out`.
pub fn append_footer(out: &mut String, footer: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(footer);
}

/// `1-3,5,7-9`: page numbers (ascending) as the ranges `pages` reads back.
#[cfg(any(feature = "pdf", feature = "documents"))]
pub fn spec_of(pages: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &page in pages {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == page => *end = page,
            _ => ranges.push((page, page)),
        }
    }
    let items: Vec<String> =
        ranges.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_1970_or_from_the_year_10000_have_no_rfc3339_form() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |seconds| UNIX_EPOCH + Duration::from_secs(seconds);
        assert_eq!(rfc3339_seconds(at(0)).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(rfc3339_seconds(at(YEAR_10000 - 1)).as_deref(), Some("9999-12-31T23:59:59Z"));
        assert_eq!(rfc3339_seconds(at(YEAR_10000)), None);
        assert_eq!(rfc3339_seconds(at(300_000_000_000)), None);
        assert_eq!(rfc3339_seconds(UNIX_EPOCH - Duration::from_secs(1)), None);
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(1 << 30), "1.0 GiB");
        assert_eq!(human_size(50 * 1024 + 512), "50.5 KiB");
    }

    #[test]
    fn the_longest_footer_fits_its_reserve() {
        // Every notice a window can carry at once, with ten-digit numbers and the longest encoding name in a call.
        let n = 1_000_000_000u64;
        let mut footer = Footer::new(format!("block: lines {n}-{n} of {n} around line {n} (blank; read as line {n})"));
        footer
            .notice(format!("showing lines {n}-{n}"))
            .notice(human_size(u64::MAX))
            .notice("limit clamped to 1000000000")
            .notice("output cap 1023.9 MiB reached")
            .notice(format!("{n} long line(s) cut"))
            .notice("decoded as x-mac-cyrillic (forced)")
            .notice(format!("{n} invalid byte(s) shown as \u{FFFD}"))
            .notice(format!("{n} NUL byte(s) in this window, shown as ␀"))
            .notice(format!("{n} control character(s) escaped, first on line {n}"))
            .notice(format!("{n} bidi/invisible character(s), first on line {n}"))
            .notice("CR line endings (lines are split at LF only)")
            .notice("no final newline")
            .notice(format!("next: encoding=x-mac-cyrillic offset={n} limit={n}"));
        let line = footer.finish(None, &format!("widen: encoding=x-mac-cyrillic mode=block anchor_line={n} limit={n}"));
        assert!(line.len() < FOOTER_RESERVE, "{} bytes: {line}", line.len());
    }

    #[test]
    fn footer_joins_parts_and_ends_with_next_call() {
        let mut f = Footer::new("lines 1-2 of 9");
        f.notice("CRLF line endings").notice_if(false, || "never".into());
        assert_eq!(
            f.finish(Some("offset=3".into()), "end of file"),
            "(lines 1-2 of 9 · CRLF line endings · next: offset=3)"
        );
        assert_eq!(Footer::new("x").finish(None, "end of file"), "(x · end of file)");
    }

    #[test]
    fn a_gutter_block_puts_every_line_behind_the_bar() {
        let mut out = String::new();
        push_gutter_block(&mut out, "a\n\n[cell 2 · code]");
        push_gutter_block(&mut out, "");
        push_gutter_block(&mut out, "b\n");
        assert_eq!(out, "│ a\n│\n│ [cell 2 · code]\n│ b\n");
    }

    #[test]
    fn footer_goes_on_its_own_line() {
        let mut out = "no newline".to_string();
        append_footer(&mut out, "(f)");
        assert_eq!(out, "no newline\n(f)");
        let mut out = "1: a\n".to_string();
        append_footer(&mut out, "(f)");
        assert_eq!(out, "1: a\n(f)");
    }
}
