//! A PDF's pages as the model sees them: each under a `── page N of T ──` header, its text behind the
//! [gutter](super::GUTTER); the marks where a page stops short; and the footers and notices of a page window.
//!
//! The engine hands over what extraction gave as [`Document`] and [`Page`] views.

/// One page's extracted text, as rendering needs it.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// Its number, from 1.
    pub number: u32,
    /// Its text, whole or as far as extraction went.
    pub text: &'a str,
    /// The per-page limit in characters, when the text stops at it.
    pub capped_at: Option<usize>,
    /// Content operations skipped as too large to read.
    pub skipped: usize,
}

/// The pages extraction gave, in order.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    /// The pages extracted.
    pub pages: Vec<Page<'a>>,
    /// Pages in the whole document.
    pub page_count: u32,
    /// Whether extraction reached every chosen page (false: it stopped at a limit).
    pub complete: bool,
}

use super::flags::Flags;
use super::{Footer, human_size, push_gutter_block};
use crate::escape::{self, Counts};

/// The whole text of a PDF without pages.
pub const NO_PAGES: &str = "(PDF with no pages)";

/// How a page's header line starts; no line of a page's text can (it stands behind the gutter).
pub const PAGE_HEADER_START: &str = "── page ";

/// One page as rendered (before its text is shown escaped): its header, then its text behind the gutter; one whose
/// text stops at the per-page limit says so where it stops, outside the gutter (the tool's words, not the page's).
pub fn render_page(page: &Page<'_>, total: u32) -> String {
    let number = page.number;
    let mut piece = format!("{PAGE_HEADER_START}{number} of {total} ──\n");
    if page.text.trim().is_empty() {
        piece.push_str("(no text on this page)\n");
    } else {
        push_gutter_block(&mut piece, page.text.trim_end());
    }
    if let Some(max_chars) = page.capped_at {
        piece.push_str(&capped_marker(number, max_chars));
    }
    piece.push('\n');
    piece
}

/// The line that ends a page whose text passes the per-page limit of `max_chars` characters.
fn capped_marker(number: u32, max_chars: usize) -> String {
    format!("… [page {number} holds more text than the {max_chars} characters read of a page; the rest is not shown]\n")
}

/// The footer notices of pages cut short by a limit of extraction: text past the per-page limit, operations skipped.
fn limit_notices<'a>(pages: impl Iterator<Item = &'a Page<'a>>) -> Vec<String> {
    let mut notices = Vec::new();
    for page in pages {
        if let Some(max_chars) = page.capped_at {
            notices.push(format!("page {}: text stops at the per-page limit of {max_chars} characters", page.number));
        }
        if page.skipped > 0 {
            notices.push(format!(
                "page {}: {} content operation(s) too large to read skipped (past 16384 tokens or 1 MiB)",
                page.number, page.skipped
            ));
        }
    }
    notices
}

pub fn render_pages(extracted: &Document<'_>) -> String {
    extracted.pages.iter().map(|page| render_page(page, extracted.page_count)).collect()
}

/// The start of an oversized page (`piece`, as rendered), shown and cut on a character boundary within `room`, with
/// the call that reads all of it by lines; and what its shown part met.
pub fn cut_page(piece: &str, number: u32, room: usize) -> (String, Counts) {
    let marker = format!(
        "\n… [page {number} is longer than the output cap; read it by lines: pages={number} offset=1 limit=200]\n"
    );
    let end = escape::fitting_prefix_lines(piece, room.saturating_sub(marker.len()));
    // Cut after a line when one ends near the cap; otherwise mid-line.
    let kept = match piece[..end].rfind('\n') {
        Some(newline) if newline + 1 >= end * 4 / 5 => newline + 1,
        _ => end,
    };
    let mut out = String::with_capacity(room);
    let counts = escape::push_shown_lines(&mut out, piece[..kept].trim_end_matches('\n'));
    out.push_str(&marker);
    (out, counts)
}

/// The notices of the pages' text read as lines: how many pages, which were cut short, and where extraction stopped;
/// `by_bytes` when the window is a byte range, whose offsets count the text rather than the file; `goes_on`, the
/// pages after the chosen ones (as `pages` reads them), when the document has more.
pub fn line_mode_notices(extracted: &Document<'_>, by_bytes: bool, goes_on: Option<&str>) -> Vec<String> {
    let mut notices = vec![format!("PDF: {} page(s)", extracted.page_count)];
    notices.extend(limit_notices(extracted.pages.iter()));
    if !extracted.complete {
        let last = extracted.pages.last().map_or(0, |p| p.number);
        notices.push(format!("text stops at page {last} (extraction limit); choose later pages with pages="));
    } else if let Some(later) = goes_on {
        notices.push(format!("later pages: pages={later}"));
    }
    if by_bytes {
        notices.push("byte offsets count the extracted text".to_string());
    }
    notices
}

/// The footer of whole pages: which were shown of how many, the file's size, a page cut at the output cap, pages
/// without text, pages cut short by extraction limits, what the shown text met (`flags`), and the next call.
pub fn pages_footer(
    extracted: &Document<'_>,
    shown: &[u32],
    size_bytes: u64,
    cut_page: Option<u32>,
    flags: &Flags,
    next: Option<String>,
) -> String {
    let total = extracted.page_count;
    let mut footer = Footer::new(format!("pages {} of {total}", super::spec_of(shown)));
    footer.notice(human_size(size_bytes));
    if let Some(page) = cut_page {
        footer.notice(format!("page {page} cut at the output cap"));
    }
    footer.notice_if(extracted.pages.iter().any(|p| p.text.trim().is_empty()), || {
        "pages without text may be scanned images".to_string()
    });
    for notice in limit_notices(extracted.pages.iter().filter(|page| shown.contains(&page.number))) {
        footer.notice(notice);
    }
    flags.notices(&mut footer);
    footer.finish(next, "end of document")
}
