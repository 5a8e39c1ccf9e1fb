//! The footers of text windows (lines, a byte range, a block) and the answer for content without a line. The engine
//! hands over what the window holds and met; the words are chosen here.

use super::bytes::RangeText;
use super::{Footer, LineRenderer, human_size};
use crate::classify::{EncodingSource, TextFormat};
use crate::window::block::Block;
use crate::window::scan::ScanSummary;

/// What every line window's footer reports after its headline.
pub struct WindowFacts<'a> {
    /// The content's size in bytes.
    pub size_bytes: u64,
    /// Notices of the rendering the lines come from (a PDF's page count), in order.
    pub rendering_notices: &'a [String],
    /// The request's limit, when it was clamped to this.
    pub clamped_to: Option<u64>,
    /// The output cap in bytes.
    pub max_output_bytes: usize,
    /// How the content was decoded.
    pub format: &'a TextFormat,
    /// The rendered lines: cap reached, lines cut, invalid bytes, flagged characters.
    pub renderer: &'a LineRenderer,
    /// The pass over the content: line endings, final newline.
    pub summary: &'a ScanSummary,
    /// Whether the window reaches the content's last line.
    pub at_end: bool,
}

/// What a search found, as facts; [`find_footer`] chooses the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindFacts {
    /// The pattern, quoted as calls quote it.
    pub quoted_pattern: String,
    /// The line the search started at.
    pub from_line: u64,
    /// Matching lines shown.
    pub shown: u64,
    /// Matching lines found in all, as far as the search went.
    pub found: u64,
    /// The last line searched: the end of the content, or where the search stopped.
    pub searched_to: u64,
    /// How far the search went (short of the end, `found` is a lower bound).
    pub searched: Searched,
    /// The first and last lines shown, matches and context.
    pub lines: Option<[u64; 2]>,
}

/// How far a search went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Searched {
    /// To the end of the content: the count is exact.
    ToTheEnd,
    /// Until the matches shown, with `left` bytes of the content after that: too far to count them.
    UntilShown {
        /// Bytes not searched.
        left: u64,
    },
    /// Until the time budget ran out.
    UntilTheBudget,
}

/// `(find "fn main" from line 1: 3 of 3 matches, lines 12-80 · notices · end of file)`; with no match, where it looked.
pub fn find_footer(find: &FindFacts, facts: &WindowFacts<'_>, next_call: Option<String>) -> String {
    let quoted = &find.quoted_pattern;
    let from = find.from_line;
    let headline = match (find.shown, find.searched == Searched::ToTheEnd) {
        (0, true) => format!("find {quoted} from line {from}: no match in lines {from}-{}", find.searched_to),
        (0, false) => format!("find {quoted} from line {from}: no match in lines {from}-{} so far", find.searched_to),
        (shown, true) => format!("find {quoted} from line {from}: {shown} of {} match(es)", find.found),
        (shown, false) => format!(
            "find {quoted} from line {from}: {shown} of at least {} match(es) in lines {from}-{} so far",
            find.found, find.searched_to
        ),
    };
    let mut footer = Footer::new(headline);
    if let Some([first, last]) = find.lines {
        footer.notice(format!("lines {first}-{last} shown"));
    }
    window_notices(&mut footer, facts);
    match find.searched {
        Searched::ToTheEnd => &mut footer,
        Searched::UntilShown { left } => {
            footer.notice(format!("the search stopped after the matches shown, {} before the end", human_size(left)))
        }
        Searched::UntilTheBudget => footer.notice("the time budget stopped the search"),
    };
    footer.finish(next_call, "end of file")
}

/// The line between two groups of a search's lines that are not adjacent: unnumbered, so never a file's own.
pub const FIND_GROUP_SEPARATOR: &str = "--\n";

/// The marker before a match in a rendering with pages: the unit it is on, named as its header names it (`page 3`,
/// `sheet 2`).
pub fn page_marker(unit: &str) -> String {
    format!("⟨{unit}⟩ ")
}

/// The marker before a long line shown from a later byte so that its match is in view: where the part left out is.
pub fn shown_from_marker(line_start: u64, from: u64, call_prefix: &str) -> String {
    format!(
        "⟨from byte {} of the line; before it: {call_prefix}start_byte={line_start} end_byte={from}⟩ ",
        from - line_start
    )
}

/// How many lines the content has, as far as a read counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTotal {
    /// The total, or a lower bound when not `exact`.
    pub lines: u64,
    /// Whether the read counted to the end.
    pub exact: bool,
    /// Where counting stopped, in bytes (the end when `exact`).
    pub counted_to: u64,
}

/// `(lines 1-20 of 300 · notices · next: offset=21)`; `of at least 2460` when the read stopped counting, with how far
/// it counted and the call that counts every line.
pub fn lines_footer(
    first: u64,
    last: u64,
    total: &LineTotal,
    facts: &WindowFacts<'_>,
    next_call: Option<String>,
) -> String {
    let lines = total.lines;
    let mut footer = if total.exact {
        Footer::new(format!("lines {first}-{last} of {lines}"))
    } else {
        Footer::new(format!("lines {first}-{last} of at least {lines}"))
    };
    window_notices(&mut footer, facts);
    if !total.exact {
        let share = share_of(total.counted_to, facts.size_bytes);
        footer.notice(format!(
            "lines counted to {share} of the file only (offset=-100 reads the end and counts them all)"
        ));
    }
    footer.finish(next_call, "end of file")
}

/// `12.5%`, or `<0.1%` for a share that would round to nothing.
fn share_of(part: u64, whole: u64) -> String {
    let percent = if whole == 0 { 100.0 } else { part as f64 * 100.0 / whole as f64 };
    if percent < 0.1 { "<0.1%".to_string() } else { format!("{:.1}%", (percent * 10.0).floor() / 10.0) }
}

/// The notice of a tail shown by byte offset because counting the `lines` before it ran out of `seconds`; `at_least`
/// is what the count reached.
pub fn tail_by_bytes_notice(lines: u64, seconds: f64, at_least: Option<u64>) -> String {
    let counted = match at_least {
        Some(n) => format!(" (at least {n} counted)"),
        None => String::new(),
    };
    format!(
        "the last {lines} line(s) by byte offset: counting the lines before them took longer than the {seconds} s time budget{counted}"
    )
}

/// The footer of a block window: the block and its place, the part shown when the block is longer than the window,
/// the window's notices, the call that continues within the block, and the call that widens it (or `whole file`).
pub fn block_footer(
    block: &Block,
    total: u64,
    shown: Option<Shown>,
    facts: &WindowFacts<'_>,
    next_call: Option<String>,
    widen: Option<&str>,
) -> String {
    let mut footer = Footer::new(describe_block(block, total));
    match shown {
        Some(Shown { head: Some(head), window: [first, last] }) => {
            footer.notice(format!("showing lines {} and {first}-{last}", span(head)))
        }
        Some(Shown { head: None, window: [first, last] }) => footer.notice(format!("showing lines {first}-{last}")),
        None => &mut footer,
    };
    window_notices(&mut footer, facts);
    if let Some(call) = next_call {
        footer.notice(format!("next: {call}"));
    }
    footer.finish(None, &widen.map_or("whole file".to_string(), |call| format!("widen: {call}")))
}

/// Which lines of a block longer than its window are shown: its head (header and annotations) when the window
/// around the anchor does not start with it, and that window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// The head's first and last lines, shown apart from the window.
    pub head: Option<[u64; 2]>,
    /// The window's first and last lines.
    pub window: [u64; 2],
}

/// `12` or `10-12`.
fn span([first, last]: [u64; 2]) -> String {
    if first == last { first.to_string() } else { format!("{first}-{last}") }
}

/// The line standing for lines `first` to `last` of a block, left out between its head and the window around the
/// anchor: unnumbered, so never taken for the file's own, with the call that reads them.
pub fn elision_line(first: u64, last: u64, call_prefix: &str) -> String {
    let count = last - first + 1;
    format!("⋮ (lines {} left out: {call_prefix}offset={first} limit={count})\n", span([first, last]))
}

/// `block: lines 120-168 of 2300 around line 131`.
fn describe_block(block: &Block, total: u64) -> String {
    let kind = if block.header.is_some() { "block" } else { "paragraph" };
    let (start, end, anchor) = (block.start, block.end, block.anchor);
    let read_as =
        if block.resolved == anchor { String::new() } else { format!(" (blank; read as line {})", block.resolved) };
    format!("{kind}: lines {start}-{end} of {total} around line {anchor}{read_as}")
}

/// The notices of a line window's footer, in their order: size, the rendering's own, clamped limit, output cap, cut
/// lines, encoding, line endings, and a missing final newline when the window reaches the end.
fn window_notices(footer: &mut Footer, facts: &WindowFacts<'_>) {
    let renderer = facts.renderer;
    footer.notice(human_size(facts.size_bytes));
    facts.rendering_notices.iter().for_each(|notice| _ = footer.notice(notice.clone()));
    if let Some(limit) = facts.clamped_to {
        footer.notice(format!("limit clamped to {limit}"));
    }
    footer.notice_if(renderer.cap_hit, || output_cap(facts.max_output_bytes));
    footer.notice_if(renderer.truncated > 0, || format!("{} long line(s) cut", renderer.truncated));
    encoding_notices(footer, facts.format, renderer.invalid);
    renderer.flags.notices(footer);
    line_ending_notice(footer, facts.summary);
    footer.notice_if(facts.at_end && !facts.summary.trailing_newline, || "no final newline".to_string());
}

/// A table's header row repeated above a window that starts below it, marked as the tool's: `⟨header row, line 1⟩
/// id,name`. The row's own characters are shown escaped as any content is (a line break in a quoted field too).
pub fn header_row(last_line: u64, text: &str) -> String {
    let lines = if last_line == 1 { "line 1".to_string() } else { format!("lines 1-{last_line}") };
    format!("{}header row, {lines}{} {}\n", crate::escape::OPEN, crate::escape::CLOSE, crate::escape::shown(text))
}

/// What a byte window showed, as facts.
pub struct BytesFacts<'a> {
    /// The range asked for.
    pub requested: [u64; 2],
    /// The range shown, on character boundaries.
    pub actual: [u64; 2],
    /// The content's size in bytes.
    pub size: u64,
    /// The share of the content shown, in percent to one decimal.
    pub percent: f64,
    /// The output cap in bytes, when it stopped the range early.
    pub cap_reached: Option<usize>,
    /// Notices of the rendering the bytes come from.
    pub rendering_notices: &'a [String],
    /// How the content was decoded.
    pub format: &'a TextFormat,
    /// The rendered range.
    pub rendered: &'a RangeText,
    /// The call that reads the next range.
    pub next_call: Option<String>,
}

/// `(bytes 0-4096 of 10000 · 41% of the file · notices · next: start_byte=4096 end_byte=8192)`.
pub fn bytes_footer(facts: &BytesFacts<'_>) -> String {
    let ([start, end], size) = (facts.actual, facts.size);
    let mut footer = Footer::new(format!("bytes {start}-{end} of {size}"));
    footer.notice(format!("{}% of the file", facts.percent));
    facts.rendering_notices.iter().for_each(|notice| _ = footer.notice(notice.clone()));
    footer.notice_if(start != facts.requested[0], || format!("start moved to {start} (character boundary)"));
    let end_moved = facts.cap_reached.is_none() && end != facts.requested[1].min(size);
    footer.notice_if(end_moved, || format!("end moved to {end} (character boundary)"));
    if let Some(cap) = facts.cap_reached {
        footer.notice(output_cap(cap));
    }
    let rendered = facts.rendered;
    // The footer goes on a line of its own; say when the line break before it is not the file's, so that ranges
    // joined end to end rebuild the text exactly.
    if !rendered.text.is_empty() && !rendered.text.ends_with('\n') {
        footer.notice(if end >= size {
            "no final newline"
        } else {
            "ends mid-line: the line break above is not in the file"
        });
    }
    footer.notice_if(rendered.crlf > 0, || format!("{} CRLF line break(s), CR not shown", rendered.crlf));
    encoding_notices(&mut footer, facts.format, rendered.invalid);
    rendered.flags.notices(&mut footer);
    footer.finish(facts.next_call.clone(), "end of file")
}

/// The whole answer for content of `size` bytes without a single line.
pub fn empty_file(size: u64) -> String {
    if size == 0 {
        "(empty file: 0 bytes)".to_string()
    } else {
        format!("(empty file: {size} bytes, only a byte order mark)")
    }
}

fn output_cap(max_output_bytes: usize) -> String {
    format!("output cap {} reached", human_size(max_output_bytes as u64))
}

fn encoding_notices(footer: &mut Footer, format: &TextFormat, invalid: u64) {
    let name = format.codec.name();
    match format.source {
        EncodingSource::Bom if format.codec.is_utf8() => footer.notice("UTF-8 BOM removed"),
        EncodingSource::Bom => footer.notice(format!("{name} (from its BOM)")),
        EncodingSource::Guessed => footer.notice(format!("encoding guessed: {name}")),
        EncodingSource::Forced => footer.notice(format!("decoded as {name} (forced)")),
        EncodingSource::Fallback => footer.notice("not valid UTF-8 and no confident encoding guess"),
        EncodingSource::Detected => footer,
    };
    footer.notice_if(invalid > 0, || format!("{invalid} invalid byte(s) shown as \u{FFFD}"));
}

fn line_ending_notice(footer: &mut Footer, summary: &ScanSummary) {
    match summary.endings.describe() {
        "crlf" => footer.notice("CRLF line endings"),
        "cr" => footer.notice("CR line endings (lines are split at LF only)"),
        "mixed" => footer.notice("mixed line endings"),
        _ => footer,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_says_when_a_blank_anchor_was_read_as_another_line() {
        let mut b = Block { start: 3, end: 9, anchor: 3, resolved: 3, header: Some(3), parent: None };
        assert_eq!(describe_block(&b, 20), "block: lines 3-9 of 20 around line 3");
        (b.anchor, b.header) = (10, None);
        assert_eq!(describe_block(&b, 20), "paragraph: lines 3-9 of 20 around line 10 (blank; read as line 3)");
    }
}
