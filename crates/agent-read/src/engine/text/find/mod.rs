//! `find`: the lines of a text that match a pattern, each with its number and `context` lines around it, in one
//! forward pass from the line the search starts at.
//!
//! The pass goes through the same line scan as any window (the line index places a start, also one counted from the
//! end), and every kind of content read as text takes it: files in any encoding (other encodings are decoded before
//! the pattern runs), notebooks and PDFs (their renderings). Memory is one chunk, one line, and the `context` lines
//! before the current one.
//!
//! In UTF-8 text the pass searches whole chunks at once: the pattern's line form ([`FindWindow::line_pattern`])
//! points at the lines that may match, the scan jumps over the others counting their line feeds, and each line
//! pointed at is judged by the pattern itself, so the answer is the one a line-by-line search gives.
//!
//! Once `limit` matches and their context are shown, the search counts on to give the total only when the rest of
//! the content is within [`COUNT_AHEAD`] bytes; past that it stops there, as `grep -m` does, and the footer gives a
//! lower bound and the call for the next matches. A time budget that runs out after a match was shown also leaves a
//! lower bound, not an error.

use super::{Rendering, Scanned, empty_file};
use crate::classify::TextFormat;
use crate::classify::codec::DecodeLimit;
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::LineRenderer;
use crate::render::text::{FIND_GROUP_SEPARATOR, FindFacts, Searched, find_footer, page_marker, shown_from_marker};
use crate::request::{FindWindow, LinePattern};
use crate::result::{TextMeta, TextResult};
use crate::window::lines::{self, Indexing, Walk};
use crate::window::scan::{Candidates, CapturedLine, Flow};
use crate::window::{COUNT_AHEAD, Source};
use std::cell::Cell;
use std::collections::VecDeque;

/// Bytes of each line the pattern runs on: a longer line is searched in its first this many bytes.
const SEARCHED_LINE_BYTES: usize = 1 << 20;

/// Searches `source` as `request` asks and renders the matches with their context.
pub fn read(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: &FindWindow,
    mut meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let renderer = LineRenderer::new(format.codec, limits.max_line_chars, limits.max_output_bytes)
        .with_call_prefix(&rendering.call_prefix);
    let keep_max = renderer.keep_max().max(SEARCHED_LINE_BYTES);
    let mut search = Search::new(request, format, renderer, limits);
    search.page_header = rendering.page_header;
    // A search that shows its matches may stop there when the rest is far; a stream's rest is unknown until read.
    search.stop_after_shown = source.stream().is_none().then_some(source.end);
    // Jumping over lines is for UTF-8 text whose lines carry no page header to keep track of.
    let filter = request.line_pattern.as_ref().filter(|_| format.codec.is_utf8() && rendering.page_header.is_none());
    let filter =
        filter.map(|pattern| LineFilter { pattern, choice: Cell::new(Choice::new()), jumped: Cell::new(None) });
    let candidates = filter.as_ref().map(|filter| filter as &dyn Candidates);
    let walk = Walk { count_ahead: 0, candidates, ..Walk::counting_all(request.offset, u64::MAX, keep_max) };
    let stream = source.stream();
    let outcome = lines::scan_lines(source, indexing, &walk, |line| {
        let (start, shown) = (line.start, search.shown);
        let flow = search.take(line);
        // A stream holds the text around the first match for the read that is likely to follow: the lines around it.
        if shown == 0
            && search.shown > 0
            && let Some(stream) = stream
        {
            stream.hold_text_around(start);
        }
        flow
    });
    if let Some([first, last]) = filter.and_then(|filter| filter.jumped.get()) {
        search.from_line = Some(search.from_line.map_or(first, |from| from.min(first)));
        search.last_seen = search.last_seen.max(last);
    }
    let summary = match outcome {
        Ok(summary) => Some(summary),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut && search.shown > 0 => None,
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(timed_out(&search, limits)),
        Err(e) => return Err(ReadError::from_io(&e, &meta.path)),
    };
    let Some(from_line) = search.from_line else {
        if summary.as_ref().is_some_and(|s| s.total_lines == 0) {
            let size = meta.size_bytes;
            return Ok(empty_file(meta, size));
        }
        return Err(past_end(&meta.path, request.offset, summary.map_or(0, |s| s.total_lines)));
    };
    let searched = match (&summary, search.stopped) {
        (None, _) => Searched::UntilTheBudget,
        (Some(_), true) => Searched::UntilShown { left: source.end.saturating_sub(search.stopped_at) },
        (Some(_), false) => Searched::ToTheEnd,
    };
    let complete = searched == Searched::ToTheEnd;
    let facts = FindFacts {
        quoted_pattern: request.quoted(),
        from_line,
        shown: search.shown,
        found: search.found,
        searched_to: search.last_seen,
        searched,
        lines: search.renderer.first.zip(search.renderer.last).map(|(first, last)| [first, last]),
    };
    // More to show: the limit or the output cap was reached, and the search did not end having found no more than it
    // showed.
    let stopped_showing = search.shown == request.limit || search.full;
    let more = stopped_showing && !(complete && search.found == search.shown);
    let next_offset = search.next_offset.filter(|_| more);
    let next_call =
        next_offset.map(|n| format!("{}{}{}", rendering.call_prefix, request.call_fields(), request.next_window(n)));
    let summary = summary.unwrap_or_else(|| search.partial_summary());
    let first = search.renderer.first.unwrap_or(from_line);
    let last = search.renderer.last.unwrap_or(first);
    let scanned = Scanned { renderer: search.renderer, summary, first, last };
    let window_facts = scanned.facts(&meta, format, rendering, request.clamped_from.map(|_| limits.max_lines), limits);
    let footer = find_footer(&facts, &window_facts, next_call);
    meta.find_matches = Some(facts.shown);
    meta.find_total = complete.then_some(facts.found);
    let clamped_to = request.clamped_from.map(|_| request.limit);
    let mut output = scanned.finish(&mut meta, next_offset, clamped_to, &footer);
    if facts.shown == 0 {
        // No line is shown: the window fields would name lines that are not there.
        (meta.start_line, meta.end_line, meta.returned_lines) = (None, None, Some(0));
        output = footer;
    }
    Ok(TextResult { output, meta })
}

/// A line kept as context before a match: its place and its first bytes.
struct Kept {
    number: u64,
    start: u64,
    content_end: u64,
    bytes: Vec<u8>,
}

/// The search as the pass feeds it lines.
struct Search<'r> {
    request: &'r FindWindow,
    format: &'r TextFormat,
    renderer: LineRenderer,
    max_line_chars: usize,
    /// The last `context` lines before the current one that were not shown.
    before: VecDeque<Kept>,
    /// Lines of context still to show after the last match.
    after_left: u64,
    /// The last line shown, to tell when the next group needs a separator.
    last_shown: Option<u64>,
    /// The first line searched.
    from_line: Option<u64>,
    /// The last line searched.
    last_seen: u64,
    shown: u64,
    found: u64,
    /// Where the next search starts: the line after the last match shown.
    next_offset: Option<u64>,
    /// Whether the output cap stopped the showing (the count goes on).
    full: bool,
    /// How a page's header line starts, in a rendering with pages; and the page the current line is on.
    page_header: Option<&'static str>,
    page: Option<String>,
    /// Where the content ends, when the search may stop once its matches are shown and the rest is further than
    /// [`COUNT_AHEAD`] bytes.
    stop_after_shown: Option<u64>,
    /// Whether it stopped so, and where (the end of the last line it saw).
    stopped: bool,
    stopped_at: u64,
}

impl<'r> Search<'r> {
    fn new(request: &'r FindWindow, format: &'r TextFormat, renderer: LineRenderer, limits: &Limits) -> Self {
        Search {
            request,
            format,
            renderer,
            max_line_chars: limits.max_line_chars,
            before: VecDeque::new(),
            after_left: 0,
            last_shown: None,
            from_line: None,
            last_seen: 0,
            shown: 0,
            found: 0,
            next_offset: None,
            full: false,
            page_header: None,
            page: None,
            stop_after_shown: None,
            stopped: false,
            stopped_at: 0,
        }
    }

    /// Takes one line of the pass; says which lines it needs next.
    fn take(&mut self, line: CapturedLine<'_>) -> Flow {
        self.from_line.get_or_insert(line.number);
        self.last_seen = line.number;
        if let Some(header) = self.page_header
            && let Some(rest) = line.kept.strip_prefix(header.as_bytes())
        {
            // The header's word for its unit (`── sheet ` → `sheet`) and the number after it.
            let noun = header.trim_start_matches(|c: char| !c.is_alphanumeric()).trim_end();
            let number = std::str::from_utf8(rest).ok().and_then(|rest| rest.split(' ').next());
            self.page = number.map(|number| format!("{noun} {number}"));
        }
        let found = self.find_in(&line);
        if found.is_some() {
            self.found += 1;
        }
        if found.is_some() && self.shown == self.request.limit {
            // A match past the limit is the next call's to show, as a match: it ends the context after the last.
            self.after_left = 0;
        }
        let content_end = line.content_end;
        if !self.done_showing() {
            match found {
                Some(at) if self.shown < self.request.limit => self.show_match(line, at),
                _ if self.after_left > 0 => {
                    self.after_left -= 1;
                    self.show(line, "- ", "");
                }
                _ => self.keep_before(&line),
            }
        }
        self.next_flow(content_end)
    }

    /// Whether every match to show is shown with its context (or the output cap took the rest).
    fn done_showing(&self) -> bool {
        self.full || self.shown == self.request.limit && self.after_left == 0
    }

    /// What the search needs after the line ending at `content_end`: every line while context is due, else only
    /// those that may match (with the context before them while matches are still shown); nothing more once the
    /// matches are shown and the rest is too far to count.
    fn next_flow(&mut self, content_end: u64) -> Flow {
        if !self.done_showing() {
            return match self.after_left {
                0 => Flow::Candidates { before: self.request.context },
                _ => Flow::More,
            };
        }
        if let Some(end) = self.stop_after_shown
            && end.saturating_sub(content_end) > COUNT_AHEAD
        {
            (self.stopped, self.stopped_at) = (true, content_end);
            return Flow::Done;
        }
        Flow::Candidates { before: 0 }
    }

    /// Where the pattern matches the line (the byte it starts at in the line's text as kept), if it does.
    fn find_in(&self, line: &CapturedLine<'_>) -> Option<usize> {
        let codec = self.format.codec;
        if codec.is_utf8() {
            return self.request.regex.find(line.kept).map(|m| m.start());
        }
        let whole = line.kept.len() as u64 == line.content_end - line.start;
        let decoded = codec.decode(line.kept, DecodeLimit::NONE, whole);
        // The position counts decoded text, not the file's bytes: such lines are shown from their start.
        self.request.regex.is_match(decoded.text.as_bytes()).then_some(0)
    }

    fn show_match(&mut self, line: CapturedLine<'_>, at: usize) {
        let before = std::mem::take(&mut self.before);
        for kept in &before {
            let line = CapturedLine {
                number: kept.number,
                start: kept.start,
                content_end: kept.content_end,
                kept: &kept.bytes,
            };
            self.show(line, "- ", "");
        }
        let number = line.number;
        // A match past what a line shows is brought into view: the line is shown from a little before it.
        let page = self.page.as_deref().map(page_marker).unwrap_or_default();
        let cut = self.max_line_chars / 4;
        if at > self.max_line_chars.saturating_sub(cut) && self.format.codec.is_utf8() {
            let from = char_start(line.kept, at - cut.min(at));
            let marker = shown_from_marker(line.start, line.start + from as u64, "");
            let shifted = CapturedLine { start: line.start + from as u64, kept: &line.kept[from..], ..line };
            self.show(shifted, ": ", &format!("{page}{marker}"));
        } else {
            self.show(line, ": ", &page);
        }
        // A match the output cap kept out is the next call's first.
        if self.renderer.last == Some(number) {
            self.shown += 1;
            self.next_offset = Some(number + 1);
            self.after_left = self.request.context;
        }
    }

    /// Renders a line, after a separator when it does not follow the last one shown.
    fn show(&mut self, line: CapturedLine<'_>, separator: &str, lead: &str) {
        if self.last_shown.is_some_and(|last| line.number > last + 1) {
            self.renderer.push_separator(FIND_GROUP_SEPARATOR);
        }
        let number = line.number;
        if self.renderer.push_marked(line, separator, lead) == Flow::Done && self.renderer.cap_hit {
            self.full = true;
        }
        if self.renderer.last == Some(number) {
            self.last_shown = Some(number);
        }
    }

    fn keep_before(&mut self, line: &CapturedLine<'_>) {
        if self.request.context == 0 {
            return;
        }
        // Every line not shown passes through here: the oldest kept line's buffer takes the new one.
        let full = self.before.len() as u64 == self.request.context;
        let mut bytes = full.then(|| self.before.pop_front()).flatten().map(|oldest| oldest.bytes).unwrap_or_default();
        let keep = line.kept.len().min(self.max_line_chars.saturating_mul(4).saturating_add(4));
        bytes.clear();
        bytes.extend_from_slice(&line.kept[..keep]);
        self.before.push_back(Kept { number: line.number, start: line.start, content_end: line.content_end, bytes });
    }

    /// What the footer says of the content when the time budget stopped the pass: what is known so far.
    fn partial_summary(&self) -> crate::window::scan::ScanSummary {
        crate::window::scan::ScanSummary {
            total_lines: self.last_seen,
            endings: crate::window::LineEndings::default(),
            trailing_newline: false,
            end: 0,
            reached_end: false,
        }
    }
}

/// The lines of UTF-8 text the pattern may match, found by its line form over whole chunks; remembers the lines
/// the pass jumped over (searched, and found to hold no match).
#[derive(Debug)]
struct LineFilter<'p> {
    pattern: &'p LinePattern,
    /// Which form of the line pattern searches (see `request::line_pattern`).
    choice: Cell<Choice>,
    /// The first and last lines jumped over.
    jumped: Cell<Option<[u64; 2]>>,
}

/// Which form of a line pattern with two searches this text: both are timed on its first large regions, then the
/// faster goes on alone. Either finds the same lines, so the choice changes the time a search takes, never its answer.
#[derive(Debug, Clone, Copy)]
enum Choice {
    /// Both timed so far on `trials` regions: nanoseconds with a literal looked for first, and without.
    Trying {
        trials: u32,
        usual: u128,
        without_literals: u128,
    },
    Usual,
    WithoutLiterals,
}

impl Choice {
    /// Regions both forms are timed on before one is kept.
    const TRIALS: u32 = 4;
    /// The smallest region worth timing: smaller ones are mostly a single line, where either form takes no time.
    const TRIAL_BYTES: usize = 16 << 10;

    fn new() -> Choice {
        Choice::Trying { trials: 0, usual: 0, without_literals: 0 }
    }
}

impl LineFilter<'_> {
    /// The first byte of a possible match in `region`, by the chosen form, timing both while choosing.
    fn search(&self, region: &[u8]) -> Option<usize> {
        let start_of = |regex: &regex_automata::meta::Regex| regex.find(region).map(|m| m.start());
        let Some(plain) = &self.pattern.without_literals else { return start_of(&self.pattern.usual) };
        match self.choice.get() {
            Choice::Usual => start_of(&self.pattern.usual),
            Choice::WithoutLiterals => start_of(plain),
            Choice::Trying { .. } if region.len() < Choice::TRIAL_BYTES => start_of(&self.pattern.usual),
            Choice::Trying { trials, usual, without_literals } => {
                let timer = std::time::Instant::now();
                let found = start_of(&self.pattern.usual);
                let usual = usual + timer.elapsed().as_nanos();
                let timer = std::time::Instant::now();
                let also = start_of(plain);
                let without_literals = without_literals + timer.elapsed().as_nanos();
                debug_assert_eq!(found, also, "both forms of a line pattern find the same line");
                self.choice.set(match trials + 1 {
                    Choice::TRIALS if without_literals < usual => Choice::WithoutLiterals,
                    Choice::TRIALS => Choice::Usual,
                    trials => Choice::Trying { trials, usual, without_literals },
                });
                found
            }
        }
    }
}

impl Candidates for LineFilter<'_> {
    fn first(&self, region: &[u8]) -> Option<usize> {
        self.search(region)
    }

    fn jumped(&self, first: u64, last: u64) {
        let known = self.jumped.get().map_or([first, last], |[from, _]| [from, last]);
        self.jumped.set(Some(known));
    }
}

/// The start of the character at or before byte `at` of UTF-8 text.
fn char_start(text: &[u8], mut at: usize) -> usize {
    while at > 0 && at < text.len() && (text[at] & 0xC0) == 0x80 {
        at -= 1;
    }
    at
}

/// The budget ran out before any match was shown.
fn timed_out(search: &Search<'_>, limits: &Limits) -> ReadError {
    let seconds = limits.timeout_ms as f64 / 1000.0;
    let place = match search.from_line {
        Some(from) => format!("lines {from}-{} held no match", search.last_seen),
        None => "no line was reached".to_string(),
    };
    ReadError::new(ErrorCode::Timeout, format!("the search stopped at the {seconds} s time budget; {place}")).with_hint(
        format!("search on from where it stopped: {}offset={}", search.request.call_fields(), search.last_seen + 1),
    )
}

fn past_end(path: &str, offset: i64, total: u64) -> ReadError {
    ReadError::invalid_range(format!(
        "offset {offset} is past the end: {path} has {total} line(s), so the search can start at line {total} at the latest"
    ))
    .with_hint("search from the start: remove `offset`")
}

#[cfg(test)]
mod tests;
