//! What a window's footer and `meta` say about the characters [`escape`](crate::escape) met: NUL characters,
//! control characters, and bidirectional or invisible ones, each with a count and where the first one is.

use super::Footer;
use crate::escape::Counts;
use crate::result::{Flagged, TextMeta};

/// How a window names a place: by line number (line and block windows), by byte offset (byte ranges), by page
/// (PDF pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A line number.
    Line,
    /// A byte offset in the file (or in the rendering, for notebooks and PDFs).
    Byte,
    /// A page number.
    #[cfg_attr(not(feature = "pdf"), allow(dead_code))]
    Page,
}

impl Place {
    fn words(self, at: u64) -> String {
        match self {
            Place::Line => format!("first on line {at}"),
            Place::Byte => format!("first at byte {at}"),
            Place::Page => format!("first on page {at}"),
        }
    }
}

/// How many characters of one class a window shows, and where the first is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// How many.
    pub count: u64,
    /// Where the first is.
    pub first: u64,
}

/// The characters worth a notice in one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    place: Place,
    /// NUL characters.
    pub nul: Option<Seen>,
    /// Other control characters and line or paragraph separators.
    pub control: Option<Seen>,
    /// Bidirectional controls and invisible characters.
    pub invisible: Option<Seen>,
}

impl Flags {
    /// Nothing met yet, in a window that names places by `place`.
    pub fn new(place: Place) -> Self {
        Flags { place, nul: None, control: None, invisible: None }
    }

    /// Adds what one piece of shown text met; `at` says where a character found at a byte index of the piece's text
    /// is (asked only for the first of a class).
    pub fn add(&mut self, counts: &Counts, at: impl Fn(usize) -> u64) {
        for (slot, met) in
            [(&mut self.nul, counts.nul), (&mut self.control, counts.control), (&mut self.invisible, counts.invisible)]
        {
            let Some(met) = met else { continue };
            match slot {
                Some(seen) => seen.count += met.count,
                None => *slot = Some(Seen { count: met.count, first: at(met.first) }),
            }
        }
    }

    /// The footer's notices, in order: NUL, control, invisible.
    pub fn notices(&self, footer: &mut Footer) {
        // A NUL in the first 64 KiB makes a file binary; one further on (a log with binary records appended, a disk
        // image that starts with text) is shown, and the model is told, so that it does not take binary data for
        // text unawares.
        if let Some(nul) = self.nul {
            footer.notice(format!("{} NUL byte(s) in this window, shown as ␀", nul.count));
        }
        if let Some(control) = self.control {
            footer.notice(format!(
                "{} control character(s) escaped, {}",
                control.count,
                self.place.words(control.first)
            ));
        }
        if let Some(invisible) = self.invisible {
            footer.notice(format!(
                "{} bidi/invisible character(s), {}",
                invisible.count,
                self.place.words(invisible.first)
            ));
        }
    }

    /// Fills the fields of `meta` that report them.
    pub fn fill(&self, meta: &mut TextMeta) {
        let flagged = |seen: Option<Seen>| {
            seen.map(|seen| {
                let at = Some(seen.first);
                let mut flagged = Flagged { count: seen.count, first_line: None, first_byte: None, first_page: None };
                match self.place {
                    Place::Line => flagged.first_line = at,
                    Place::Byte => flagged.first_byte = at,
                    Place::Page => flagged.first_page = at,
                }
                flagged
            })
        };
        meta.nul_chars = flagged(self.nul);
        meta.control_chars = flagged(self.control);
        meta.invisible_chars = flagged(self.invisible);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::push_shown;

    #[test]
    fn notices_count_and_place_the_first() {
        let mut flags = Flags::new(Place::Line);
        flags.add(&push_shown(&mut String::new(), "a\u{1b}b"), |_| 7);
        flags.add(&push_shown(&mut String::new(), "\u{1b}\u{202E}\u{0}"), |_| 9);
        let mut footer = Footer::new("lines 7-9 of 9");
        flags.notices(&mut footer);
        assert_eq!(
            footer.finish(None, "end of file"),
            "(lines 7-9 of 9 · 1 NUL byte(s) in this window, shown as ␀ · 2 control character(s) escaped, first on \
             line 7 · 1 bidi/invisible character(s), first on line 9 · end of file)"
        );
        let mut meta = TextMeta::default();
        flags.fill(&mut meta);
        assert_eq!(
            meta.control_chars,
            Some(Flagged { count: 2, first_line: Some(7), first_byte: None, first_page: None })
        );
        assert_eq!(meta.invisible_chars.map(|f| f.count), Some(1));
    }

    #[test]
    fn a_clean_window_says_nothing() {
        let flags = Flags::new(Place::Byte);
        let mut footer = Footer::new("bytes 0-4 of 4");
        flags.notices(&mut footer);
        assert_eq!(footer.finish(None, "end of file"), "(bytes 0-4 of 4 · end of file)");
    }
}
