//! Stage 5 of a read: what the model sees.
//!
//! Lines are prefixed `N: `; long lines are cut on a character boundary and marked with the byte range that holds
//! the rest; the whole output, prefixes and footer included, stays within the byte cap. The footer is always the
//! last line: what the window shows, the total, brief notices, and the exact next call — or `end of file`.

pub mod lines;

pub use lines::LineRenderer;

/// Bytes of the output cap kept free for the footer. Footers are short; this bounds even the longest one.
pub const FOOTER_RESERVE: usize = 512;

/// A name as it can stand in a one-line list: itself, or, when it holds control characters (a line feed would pass
/// for a new entry), JSON-quoted with escapes, which is also how a request spells it.
pub fn one_line_name(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains(char::is_control) {
        return std::borrow::Cow::Borrowed(name);
    }
    // Serialising a string cannot fail; the fallback only keeps this free of `unwrap`.
    std::borrow::Cow::Owned(serde_json::to_string(name).unwrap_or_else(|_| name.replace(char::is_control, "\u{FFFD}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(1 << 30), "1.0 GiB");
        assert_eq!(human_size(50 * 1024 + 512), "50.5 KiB");
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
    fn footer_goes_on_its_own_line() {
        let mut out = "no newline".to_string();
        append_footer(&mut out, "(f)");
        assert_eq!(out, "no newline\n(f)");
        let mut out = "1: a\n".to_string();
        append_footer(&mut out, "(f)");
        assert_eq!(out, "1: a\n(f)");
    }
}
