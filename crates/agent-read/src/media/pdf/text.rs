//! One page's text: the page's content streams decoded one at a time and handed to pdf-extract in bounded batches
//! (`batch`), its output gathered into a sink capped at the characters still wanted and at [`MAX_PAGE_CHARS`] (so a
//! huge page costs no more than the text kept), then lightly normalized. A page the extractor panics or fails on does
//! not sink the others: its text ends with a bracketed note saying why.
//!
//! pdf-extract reaches a page only through `output_doc_page`, which lists every page of the document each time it is
//! called, and reads the page's content from the document. So a [`PageView`] is installed once per document: the
//! catalog's page tree is replaced by a node whose only kid is the page being read, and that page's contents by one
//! stream that holds the current batch. Each call then costs what its page costs, whatever the document's size.

use super::batch::Batcher;
use super::stop::Stop;
use super::{MAX_PAGE_CHARS, PdfError, panic_reason, shorten};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};
use pdf_extract::{ConvertToFmt, PlainTextOutput};
use std::cell::Cell;
use std::fmt;
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};

/// What a page gave.
#[derive(Debug, Default)]
pub(super) struct Page {
    /// The text, normalized (with a note at its end when the extractor failed).
    pub(super) text: String,
    /// The text stops at the characters still wanted: more text is on the page.
    pub(super) cut: bool,
    /// The text stops at [`MAX_PAGE_CHARS`]: the rest of the page is not read.
    pub(super) capped: bool,
    /// Content operations skipped for their size.
    pub(super) skipped: usize,
}

/// The document's page tree as pdf-extract sees it: one page at a time. See the module's documentation.
pub(super) struct PageView {
    /// The page tree node that holds the page being read.
    node: ObjectId,
    /// The stream that holds the current batch.
    batch: ObjectId,
}

impl PageView {
    /// Points the catalog at a page tree node of its own, through which pages are then shown one at a time. Objects
    /// are added to the document here only: later changes are made in place, so nothing the guards hold moves.
    pub(super) fn install(doc: &mut Document) -> Result<PageView, PdfError> {
        let node = doc.new_object_id();
        let batch = doc.new_object_id();
        let kids = vec![Object::Null];
        doc.objects.insert(node, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 1 }));
        doc.objects.insert(batch, Object::Stream(Stream::new(Dictionary::new(), Vec::new())));
        let catalog = doc.catalog_mut().map_err(|_| PdfError::Malformed("it has no catalog".to_string()))?;
        catalog.set("Pages", node);
        Ok(PageView { node, batch })
    }

    /// Shows `page_id` alone, its contents the batch stream; returns its own contents, to put back (`None` when it
    /// has none: then it shows nothing).
    fn show(&self, doc: &mut Document, page_id: ObjectId) -> Option<Object> {
        let kids = doc.get_object_mut(self.node).and_then(Object::as_dict_mut).and_then(|node| node.get_mut(b"Kids"));
        if let Ok(Object::Array(kids)) = kids
            && let Some(kid) = kids.first_mut()
        {
            *kid = Object::Reference(page_id);
        }
        let page = doc.get_object_mut(page_id).and_then(Object::as_dict_mut).ok()?;
        let contents = page.get_mut(b"Contents").ok()?;
        Some(std::mem::replace(contents, Object::Reference(self.batch)))
    }

    /// Puts the current batch in the batch stream.
    fn load(&self, doc: &mut Document, batch: Vec<u8>) {
        if let Ok(stream) = doc.get_object_mut(self.batch).and_then(Object::as_stream_mut) {
            stream.set_content(batch);
        }
    }

    /// Puts back the page's own contents.
    fn restore(&self, doc: &mut Document, page_id: ObjectId, contents: Object) {
        self.load(doc, Vec::new());
        if let Ok(slot) =
            doc.get_object_mut(page_id).and_then(Object::as_dict_mut).and_then(|page| page.get_mut(b"Contents"))
        {
            *slot = contents;
        }
    }
}

/// The text of the page `page_id`: at most `limit` characters, and [`MAX_PAGE_CHARS`]. A panic or an error of the
/// extractor becomes a note in the text; only the stop signal is an error.
pub(super) fn page_text(
    doc: &mut Document,
    view: &PageView,
    page_id: ObjectId,
    limit: usize,
    stop: &Stop,
) -> Result<Page, PdfError> {
    let streams = doc.get_page_contents(page_id);
    let Some(contents) = view.show(doc, page_id) else { return Ok(Page::default()) };
    let room = limit.min(MAX_PAGE_CHARS);
    let mut raw = String::new();
    let (cut, halted) = (Cell::new(false), Cell::new(false));
    let mut failure = None;
    let skipped = {
        let writer = CappedWriter { text: &mut raw, room, cut: &cut, halted: &halted, stop, writes: 0 };
        let mut run =
            Run { view, output: PlainTextOutput::new(writer), cut: &cut, halted: &halted, stop, failure: &mut failure };
        let mut batcher = Batcher::new();
        let mut flow = ControlFlow::Continue(());
        for id in streams {
            let Some(content) = doc.get_object(id).and_then(Object::as_stream).ok().map(plain_content) else {
                continue;
            };
            flow = batcher.feed(&content, &mut |batch| run.extract(doc, batch));
            if flow.is_break() {
                break;
            }
        }
        if flow.is_continue() {
            let _ = batcher.finish(&mut |batch| run.extract(doc, batch));
        }
        batcher.skipped()
    };
    view.restore(doc, page_id, contents);
    if halted.get() {
        return Err(PdfError::Timeout);
    }
    let mut text = normalize(&raw);
    if let Some(reason) = failure {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[text extraction failed on this page: {reason}]"));
    }
    // The page's own limit is the one that stopped it when no more is wanted in any mode.
    let capped = cut.get() && MAX_PAGE_CHARS <= limit;
    Ok(Page { text, cut: cut.get() && !capped, capped, skipped })
}

/// A stream's bytes as lopdf gives them to pdf-extract: decoded, or as stored when lopdf cannot decode them. The
/// guards measured the stream first, so decoding it is bounded.
pub(super) fn plain_content(stream: &Stream) -> Vec<u8> {
    match stream.filters() {
        Ok(_) => stream.decompressed_content().unwrap_or_else(|_| stream.content.clone()),
        Err(_) => stream.content.clone(),
    }
}

/// One page's extraction, a batch at a time, into one output device (whose spacing decisions carry over).
struct Run<'a, 'w> {
    view: &'a PageView,
    output: PlainTextOutput<CappedWriter<'w>>,
    cut: &'a Cell<bool>,
    halted: &'a Cell<bool>,
    stop: &'a Stop,
    failure: &'a mut Option<String>,
}

impl Run<'_, '_> {
    /// Extracts one batch; breaks when the text is full, the stop signal is raised, or the extractor failed.
    fn extract(&mut self, doc: &mut Document, batch: Vec<u8>) -> ControlFlow<()> {
        if self.stop.is_raised() {
            self.halted.set(true);
            return ControlFlow::Break(());
        }
        self.view.load(doc, batch);
        let document: &Document = doc;
        let outcome =
            panic::catch_unwind(AssertUnwindSafe(|| pdf_extract::output_doc_page(document, &mut self.output, 1)));
        match outcome {
            Ok(Ok(())) => ControlFlow::Continue(()),
            Ok(Err(_)) if self.cut.get() || self.halted.get() => ControlFlow::Break(()),
            Ok(Err(err)) => {
                *self.failure = Some(shorten(&err.to_string()));
                ControlFlow::Break(())
            }
            Err(payload) => {
                *self.failure = Some(panic_reason(payload.as_ref()));
                ControlFlow::Break(())
            }
        }
    }
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
