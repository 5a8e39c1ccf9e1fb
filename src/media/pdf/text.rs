//! One page's text, from pdf-extract's page output into a sink capped at the characters still wanted (so a huge page
//! costs no more than the text kept) and lightly normalized. A page the extractor panics or fails on does not sink
//! the others: its text ends with a bracketed note saying why.

use super::stop::Stop;
use super::{PdfError, panic_reason, shorten};
use lopdf::Document;
use pdf_extract::{ConvertToFmt, PlainTextOutput};
use std::cell::Cell;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};

/// The text of page `number` (normalized), and whether it was cut at `limit` characters. A panic or an error of the
/// extractor becomes a note in the text; only the stop signal is an error.
pub(super) fn page_text(doc: &Document, number: u32, limit: usize, stop: &Stop) -> Result<(String, bool), PdfError> {
    let mut raw = String::new();
    let cut = Cell::new(false);
    let halted = Cell::new(false);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let writer = CappedWriter { text: &mut raw, room: limit, cut: &cut, halted: &halted, stop, writes: 0 };
        let mut output = PlainTextOutput::new(writer);
        pdf_extract::output_doc_page(doc, &mut output, number)
    }));
    if halted.get() {
        return Err(PdfError::Timeout);
    }
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(_)) if cut.get() => None,
        Ok(Err(err)) => Some(shorten(&err.to_string())),
        Err(payload) => Some(panic_reason(payload.as_ref())),
    };
    let mut text = normalize(&raw);
    if let Some(reason) = failure {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[text extraction failed on this page: {reason}]"));
    }
    Ok((text, cut.get()))
}

/// The text sink of pdf-extract: keeps at most `room` characters, then fails (which ends the page's extraction);
/// also fails, now and then, once the stop signal is raised.
struct CappedWriter<'a> {
    text: &'a mut String,
    room: usize,
    cut: &'a Cell<bool>,
    halted: &'a Cell<bool>,
    stop: &'a Stop,
    writes: u32,
}

impl fmt::Write for CappedWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.writes = self.writes.wrapping_add(1);
        if self.writes.is_multiple_of(1024) && self.stop.is_raised() {
            self.halted.set(true);
            return Err(fmt::Error);
        }
        if self.text.trim().is_empty() && s.trim().is_empty() {
            // Leading line breaks and spaces, which normalization drops, do not count.
            self.text.push_str(s);
            return Ok(());
        }
        let chars = s.chars().count();
        if chars <= self.room {
            self.text.push_str(s);
            self.room -= chars;
            return Ok(());
        }
        let end = s.char_indices().nth(self.room).map_or(s.len(), |(at, _)| at);
        self.text.push_str(&s[..end]);
        self.room = 0;
        self.cut.set(true);
        Err(fmt::Error)
    }
}

impl ConvertToFmt for CappedWriter<'_> {
    type Writer = Self;

    fn convert(self) -> Self {
        self
    }
}

/// Light normalization: trailing spaces cut from each line, runs of blank lines kept to two, no blank lines at the
/// start or end.
fn normalize(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut blanks = 0usize;
    for line in raw.split('\n') {
        let line = line.trim_end_matches([' ', '\t', '\r']);
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
            for _ in 0..blanks.min(2) {
                text.push('\n');
            }
        }
        blanks = 0;
        text.push_str(line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::pdf::fixtures::{Fixture, pdf_of, run_bytes, texts};
    use lopdf::Dictionary;

    #[test]
    fn lines_stay_lines_and_whitespace_is_normalized_lightly() {
        let extracted = run_bytes(&pdf_of(&["first line\nsecond   line\n\n\n\n\nafter gap"]), "1", 1000).unwrap();
        assert_eq!(texts(&extracted)[0].1.lines().next(), Some("first line"));
        assert_eq!(normalize("  a  \t\n\n\n\n\nb \r\n\n\nc\n\n"), "  a\n\n\nb\n\n\nc");
        assert_eq!(normalize("\n\n x\ny\n"), " x\ny");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn a_page_longer_than_max_chars_alone_is_cut_and_ends_the_extraction() {
        let long = "x".repeat(500);
        let extracted = run_bytes(&pdf_of(&[&long, "next"]), "1-", 100).unwrap();
        assert!(!extracted.complete);
        assert_eq!(texts(&extracted), [(1, &long[..100])]);
    }

    #[test]
    fn a_page_the_extractor_panics_on_gets_a_note_and_the_others_are_read() {
        let mut fixture = Fixture::new();
        fixture.text_page("fine before");
        fixture.page_with(b"BT /F1 12 Tf 72 720 Td 5 Tj ET".to_vec(), Dictionary::new());
        fixture.text_page("fine after");
        let extracted = run_bytes(&fixture.bytes(), "1-", 10_000).unwrap();
        assert_eq!(extracted.pages[0].text, "fine before");
        assert!(extracted.pages[1].text.starts_with("[text extraction failed on this page: "), "{:?}", extracted.pages);
        assert_eq!(extracted.pages[2].text, "fine after");
    }
}
