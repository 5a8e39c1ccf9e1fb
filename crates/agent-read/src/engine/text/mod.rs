//! Text through window → render: a file's lines or bytes, or text rendered in memory (notebooks, PDF pages).

mod block;
mod find;

use super::target::Target;
use crate::budget::Budget;
use crate::classify::{Codec, EncodingSource, TextFormat};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::text::{BytesFacts, LineTotal, WindowFacts, bytes_footer, lines_footer, tail_by_bytes_notice};
use crate::render::{self, FOOTER_RESERVE, LineRenderer, human_size};
use crate::request::{LineWindow, Window};
use crate::result::{TextMeta, TextResult};
use crate::window::index::{FileIdentity, FileVersion, MIN_INDEXED_BYTES};
use crate::window::lines::{self, Indexing, Walk};
use crate::window::scan::{CapturedLine, ScanSummary};
use crate::window::{COUNT_AHEAD, Source, bytes, tail};

/// What a rendering adds to a window: notices for the footer, and what the next call must repeat (`pages="3" `).
#[derive(Debug, Default, Clone)]
pub struct Rendering {
    /// Footer notices, after the size.
    pub notices: Vec<String>,
    /// Prepended to the footer's next call.
    pub call_prefix: String,
    /// The text is decompressed as it is read: no byte range reaches into it (ranges address the raw file).
    pub streamed: bool,
    /// The header line that starts each page of the rendering (a PDF's `── page 3 of 40 ──`), which `find` names
    /// beside each match.
    pub page_header: Option<&'static str>,
}

impl Rendering {
    /// The rendering of a text file in `format`: a forced encoding is repeated in every call it suggests (the next
    /// page, a cut line's bytes, a wider block), since the next call would otherwise classify the file afresh.
    pub fn for_text(format: &TextFormat) -> Rendering {
        let call_prefix = match format.source {
            EncodingSource::Forced => format!("encoding={} ", format.codec.name().to_ascii_lowercase()),
            _ => String::new(),
        };
        Rendering { call_prefix, ..Rendering::default() }
    }
}

/// Reads the window of text in `format` from `target`, whose head is already classified.
pub fn read(
    target: &Target<'_>,
    format: &TextFormat,
    window: Window,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let size = target.metadata.len();
    let meta = base_meta(target, format);
    if target.head.len() <= format.bom_len {
        return Ok(empty_file(meta, size));
    }
    let layout = format.codec.newline_layout();
    let source = Source::new(target.file, format.bom_len as u64, target.read_end(), layout)
        .with_head(target.head)
        .with_budget(target.budget.clone());
    let indexing = (size >= MIN_INDEXED_BYTES).then(|| Indexing {
        indexes: target.indexes,
        identity: FileIdentity::of(target.file, target.metadata, source.data_start, layout),
        version: FileVersion::of(target.metadata),
        ends: None,
    });
    read_source(&source, indexing, format, window, meta, limits, rendering)
}

/// Counts every line of the text file `target` (see `Reader::count_lines`): the total.
pub fn count_lines(target: &Target<'_>, format: &TextFormat) -> Result<u64, ReadError> {
    let layout = format.codec.newline_layout();
    let source = Source::new(target.file, format.bom_len as u64, target.read_end(), layout)
        .with_head(target.head)
        .with_budget(target.budget.clone());
    let indexing = Indexing {
        indexes: target.indexes,
        identity: FileIdentity::of(target.file, target.metadata, source.data_start, layout),
        version: FileVersion::of(target.metadata),
        ends: None,
    };
    lines::count_to_end(&source, indexing).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => ReadError::new(
            ErrorCode::Timeout,
            format!("counting the lines of {} stopped at the time budget; what it counted is kept", target.shown),
        ),
        _ => ReadError::from_io(&e, &target.shown),
    })
}

/// Reads the window of text rendered in memory (a notebook's cells, a PDF's pages) exactly as a file's, with the
/// rendering's notices and next-call prefix in the footer.
pub fn read_rendered(
    text: &str,
    window: Window,
    meta: TextMeta,
    limits: &Limits,
    budget: &Budget,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let format = TextFormat { codec: Codec::Whatwg(encoding_rs::UTF_8), source: EncodingSource::Detected, bom_len: 0 };
    let source = Source::in_memory(text.as_bytes(), format.codec.newline_layout()).with_budget(budget.clone());
    read_source(&source, None, &format, window, meta, limits, rendering)
}

fn read_source(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    window: Window,
    meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    match window {
        Window::Lines(lines) => read_lines(source, indexing, format, lines, meta, limits, rendering),
        Window::Bytes { start, end: end_byte } => {
            read_bytes(source, format, [start, end_byte], meta, limits, rendering)
        }
        Window::Block(block) => block::read(source, indexing, format, block, meta, limits, rendering),
        Window::Find(find) => find::read(source, indexing, format, &find, meta, limits, rendering),
        // Refused before any text is read (`file::classify`); a text road never gets one.
        Window::Region(_) => Err(super::target::region_needs_an_image(&meta.path, "text")),
    }
}

fn read_lines(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: LineWindow,
    meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let scanned = match scan_window(source, indexing, format, request, &meta.path, limits, rendering, COUNT_AHEAD) {
        Err(error) if error.code == ErrorCode::Timeout && request.offset < 0 && indexing.is_some() => {
            return tail_by_bytes(source, indexing, format, request, meta, limits, rendering).ok_or(error)?;
        }
        scanned => scanned?,
    };
    let Some(scanned) = scanned else {
        let size = meta.size_bytes;
        return Ok(empty_file(meta, size));
    };
    Ok(with_footer(scanned, request, meta, format, limits, rendering))
}

/// The answer to a tail of a big file whose lines could not all be counted within the time budget (their numbers
/// depend on that count): the last lines by byte offset, as a byte range from where they start, saying so and how
/// far the count went (what it counted stays in the reader's line index). Runs on a short grace beyond the
/// budget, enough to find the start again and read one output's worth of bytes; `None` when even that does not end
/// in time (the caller then answers the `TIMEOUT`).
fn tail_by_bytes(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: LineWindow,
    meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Option<Result<TextResult, ReadError>> {
    let mut source = source.ending_at(source.end);
    source.budget = source.budget.as_ref().map(|budget| budget.grace());
    let lines = request.offset.unsigned_abs();
    let start = tail::start_of_last_lines(&source, lines).ok()?;
    let known = indexing.and_then(|indexing| indexing.known(&source).ok().flatten());
    let at_least = known.map(|index| index.total_lines());
    let seconds = limits.timeout_ms as f64 / 1000.0;
    let mut notices = vec![tail_by_bytes_notice(lines, seconds, at_least)];
    notices.extend(rendering.notices.iter().cloned());
    let rendering = Rendering { notices, ..rendering.clone() };
    let mut result = read_bytes(&source, format, [Some(start), None], meta, limits, &rendering);
    if let Ok(result) = &mut result {
        result.meta.total_lines_at_least = at_least;
    }
    Some(result)
}

/// A scanned line window with its footer, and its meta filled.
fn with_footer(
    scanned: Scanned,
    request: LineWindow,
    mut meta: TextMeta,
    format: &TextFormat,
    limits: &Limits,
    rendering: &Rendering,
) -> TextResult {
    let (first, last, total) = (scanned.first, scanned.last, scanned.line_total());
    let next_offset = scanned.more_after().then_some(last + 1);
    let next_call = next_offset.map(|n| format!("{}{}", rendering.call_prefix, request.next_call(n)));
    let facts = scanned.facts(&meta, format, rendering, request.clamped_from.map(|_| limits.max_lines), limits);
    let footer = lines_footer(first, last, &total, &facts, next_call);
    let output = scanned.finish(&mut meta, next_offset, request.clamped_to(), &footer);
    TextResult { output, meta }
}

/// Reads a line window of text `source` streams (decompressed as it goes): like a file's (`indexing` keeps the
/// totals a full pass learns, see [`lines::scan_lines`]), with `notices` computed from what the pass learned (the decompressed size, known once it reached the end) put after the size.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub fn read_streamed_lines(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: LineWindow,
    meta: TextMeta,
    limits: &Limits,
    notices: impl FnOnce(Option<u64>, &mut TextMeta) -> Vec<String>,
) -> Result<TextResult, ReadError> {
    let mut meta = meta;
    let rendering = Rendering { streamed: true, ..Rendering::for_text(format) };
    let Some(scanned) = scan_window(source, indexing, format, request, &meta.path, limits, &rendering, u64::MAX)?
    else {
        let notices = notices(Some(0), &mut meta);
        let size = meta.size_bytes;
        let mut result = empty_file(meta, size);
        result.output = format!("(empty file: {} · {})", human_size(size), notices.join(" · "));
        return Ok(result);
    };
    let decoded = scanned.summary.reached_end.then_some(scanned.summary.end);
    let rendering = Rendering { notices: notices(decoded, &mut meta), ..rendering };
    Ok(with_footer(scanned, request, meta, format, limits, &rendering))
}

/// Reads a line window, or runs a search, over text `source` streams as it is rendered (a document converted as it
/// is read), with `rendering`'s notices and next-call prefix. `None` when the text has no line at all. Byte ranges
/// and blocks do not reach into such text: the caller answers them.
#[cfg_attr(not(feature = "documents"), allow(dead_code))]
pub fn read_rendered_stream(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    window: Window,
    meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<Option<TextResult>, ReadError> {
    let format = TextFormat { codec: Codec::Whatwg(encoding_rs::UTF_8), source: EncodingSource::Detected, bom_len: 0 };
    match window {
        Window::Lines(request) => {
            let scanned = scan_window(source, indexing, &format, request, &meta.path, limits, rendering, u64::MAX)?;
            Ok(scanned.map(|scanned| with_footer(scanned, request, meta, &format, limits, rendering)))
        }
        Window::Find(find) => find::read(source, None, &format, &find, meta, limits, rendering).map(Some),
        Window::Bytes { .. } | Window::Block(_) => Err(ReadError::invalid_param(format!(
            "{}: byte ranges and block mode do not reach into converted text",
            meta.path
        ))
        .with_hint("read its lines with offset and limit")),
        Window::Region(_) => Err(super::target::region_needs_an_image(&meta.path, "converted text")),
    }
}

/// Searches text `source` streams (decompressed as it goes) as `request` asks; `notices` go in the footer. Through
/// `indexing` the search starts where the text's index places its offset, and a search that reads the text to its
/// end leaves the index (and the text around its first match) for the reads that follow it.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub fn find_streamed(
    source: &Source<'_>,
    indexing: Indexing<'_>,
    format: &TextFormat,
    request: &crate::request::FindWindow,
    meta: TextMeta,
    limits: &Limits,
    notices: Vec<String>,
) -> Result<TextResult, ReadError> {
    let rendering = Rendering { streamed: true, notices, ..Rendering::for_text(format) };
    find::read(source, Some(indexing), format, request, meta, limits, &rendering)
}

/// Reads the window of text a stream yields whose end is known (an archive's member: `source` ends at its size), as
/// a file's: lines (tails read it twice), byte ranges over its own bytes, and `find`. Block mode is the caller's to
/// refuse (it reads backward).
#[cfg_attr(not(feature = "archives"), allow(dead_code))]
pub fn read_member(
    source: &Source<'_>,
    format: &TextFormat,
    window: Window,
    meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    read_source(source, None, format, window, meta, limits, rendering)
}

/// A line window scanned and rendered, waiting for its footer.
pub(super) struct Scanned {
    renderer: LineRenderer,
    summary: ScanSummary,
    /// First line rendered.
    pub first: u64,
    /// Last line rendered.
    pub last: u64,
}

impl Scanned {
    /// What the footer reports of this window beside its headline; `clamped_to` the limit it was clamped to.
    pub fn facts<'a>(
        &'a self,
        meta: &TextMeta,
        format: &'a TextFormat,
        rendering: &'a Rendering,
        clamped_to: Option<u64>,
        limits: &Limits,
    ) -> WindowFacts<'a> {
        WindowFacts {
            size_bytes: meta.size_bytes,
            rendering_notices: &rendering.notices,
            clamped_to,
            max_output_bytes: limits.max_output_bytes,
            format,
            renderer: &self.renderer,
            summary: &self.summary,
            at_end: self.summary.reached_end && self.last >= self.total(),
        }
    }

    /// Lines in the whole content; a lower bound when the pass stopped counting ([`Scanned::exact`]).
    pub fn total(&self) -> u64 {
        self.summary.total_lines
    }

    /// Whether [`Scanned::total`] is the exact total: the pass counted to the end.
    pub fn exact(&self) -> bool {
        self.summary.reached_end
    }

    /// The total as the footer gives it.
    pub fn line_total(&self) -> LineTotal {
        LineTotal { lines: self.total(), exact: self.exact(), counted_to: self.summary.end }
    }

    /// Whether the content goes on after the window's last line.
    pub fn more_after(&self) -> bool {
        !self.exact() || self.last < self.total()
    }

    /// Fills the line fields of `meta` and returns the rendered lines followed by `footer`.
    pub fn finish(
        self,
        meta: &mut TextMeta,
        next_offset: Option<u64>,
        clamped_to: Option<u64>,
        footer: &str,
    ) -> String {
        let renderer = &self.renderer;
        meta.invalid_bytes = (renderer.invalid > 0).then_some(renderer.invalid);
        renderer.flags.fill(meta);
        meta.more_before = self.first > 1;
        meta.more_after = self.more_after();
        meta.byte_cap_hit = renderer.cap_hit;
        if self.exact() {
            meta.total_lines = Some(self.total());
        } else {
            meta.total_lines_at_least = Some(self.total());
        }
        meta.start_line = Some(self.first);
        meta.end_line = Some(self.last);
        meta.returned_lines = Some(renderer.returned);
        meta.next_offset = next_offset;
        meta.truncated_lines = Some(renderer.truncated);
        meta.limit_clamped_to = clamped_to;
        meta.line_ending = Some(self.summary.endings.describe());
        // Unknown when the pass stopped before the end.
        meta.trailing_newline = self.exact().then_some(self.summary.trailing_newline);
        let mut output = self.renderer.into_output();
        render::append_footer(&mut output, footer);
        output
    }
}

/// Scans and renders the line window `request`; `None` when the content has no lines at all. The pass counts on past
/// the window to the end when that is at most `count_ahead` bytes further (else the total is a lower bound).
#[allow(clippy::too_many_arguments)]
pub(super) fn scan_window(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: LineWindow,
    path: &str,
    limits: &Limits,
    rendering: &Rendering,
    count_ahead: u64,
) -> Result<Option<Scanned>, ReadError> {
    let mut renderer = LineRenderer::new(format.codec, limits.max_line_chars, limits.max_output_bytes)
        .with_call_prefix(&rendering.call_prefix);
    if rendering.streamed {
        renderer = renderer.without_byte_ranges();
    }
    let keep_max = renderer.keep_max();
    let sink = |line: CapturedLine<'_>| renderer.push(line);
    let walk = Walk { count_ahead, ..Walk::counting_all(request.offset, request.limit, keep_max) };
    let summary = match lines::scan_lines(source, indexing, &walk, sink) {
        Ok(summary) => summary,
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(timed_out(renderer, limits)),
        Err(e) if let Some(damage) = crate::window::stream::damage(&e).map(str::to_string) => {
            return Err(damaged(renderer, &damage, path));
        }
        Err(e) => return Err(ReadError::from_io(&e, path)),
    };
    let total = summary.total_lines;
    if total == 0 {
        return Ok(None);
    }
    if request.offset > 0 && request.offset.unsigned_abs() > total && summary.reached_end {
        return Err(past_end(path, request.offset, total));
    }
    match (renderer.first, renderer.last) {
        (Some(first), Some(last)) => Ok(Some(Scanned { renderer, summary, first, last })),
        _ => Err(past_end(path, request.offset, total)),
    }
}

/// A line read stopped by its time budget: the lines gathered so far, then the error (no path in the message, so
/// the whole stays within the output cap: the lines use at most the cap less the footer reserve).
fn timed_out(renderer: LineRenderer, limits: &Limits) -> ReadError {
    let seconds = limits.timeout_ms as f64 / 1000.0;
    let gathered = if renderer.first.is_some() {
        "the lines above were read before it ran out"
    } else {
        "no line of the window was reached before it ran out"
    };
    ReadError::new(
        ErrorCode::Timeout,
        format!("stopped at the {seconds} s time budget; {gathered}, and the total line count is unknown"),
    )
    .with_hint("read a byte range (start_byte/end_byte), which does not scan the whole file")
    .with_partial(renderer.into_output())
}

/// A line read stopped by a damaged stream (compressed text corrupt or cut short): the lines decoded before the
/// damage, then the error saying so.
fn damaged(renderer: LineRenderer, damage: &str, path: &str) -> ReadError {
    let gathered = match renderer.last {
        Some(_) => "the lines above were decoded before it, and the total line count is unknown",
        None => "no line of the window was reached before it",
    };
    ReadError::new(ErrorCode::IoError, format!("{path}: the compressed stream is damaged ({damage}); {gathered}"))
        .with_hint("the file is corrupt or cut short (an unfinished download or copy?); the text before the damage is all it holds")
        .with_partial(renderer.into_output())
}

fn past_end(path: &str, offset: i64, total: u64) -> ReadError {
    ReadError::invalid_range(format!(
        "offset {offset} is past the end: {path} has {total} line(s), so the last valid offset is {total} (or -1 for the last line)"
    ))
    .with_hint(format!("read the end with offset=-{}", total.min(100)))
}

fn read_bytes(
    source: &Source<'_>,
    format: &TextFormat,
    range: [Option<u64>; 2],
    mut meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    // Byte offsets into rendered text count the rendering's bytes; into a file, the bytes it holds (a `/proc` file
    // states size 0).
    let size = source.real_end().map_err(io_error(&meta.path))?;
    let max_out = limits.max_output_bytes - FOOTER_RESERVE;
    let requested_start = range[0].unwrap_or(0);
    if requested_start >= size {
        return Err(ReadError::invalid_range(format!(
            "start_byte {requested_start} is past the end: {} has {size} bytes, so the last valid start_byte is {}",
            meta.path,
            size.saturating_sub(1)
        ))
        .with_hint("use a smaller start_byte, or a negative line offset such as offset=-100 to read the end"));
    }
    let default_len = (max_out * source.layout.unit) as u64;
    let requested = [requested_start, range[1].unwrap_or(requested_start.saturating_add(default_len))];
    let codec = format.codec;
    let render = |buf: &[u8], at: u64, last: bool| render::bytes::render_range(codec, buf, at, last, max_out);
    let window = bytes::read_range(source, codec, requested, max_out, render).map_err(io_error(&meta.path))?;
    let [start, end] = window.actual;
    let adjusted = window.actual != requested;
    let next_start = (end < size).then_some(end);
    let next_call = next_start.map(|s| {
        let next_end = if window.cap_hit { requested[1] } else { s + (requested[1] - requested[0]) };
        format!("{}start_byte={s} end_byte={}", rendering.call_prefix, next_end.clamp(s + 1, size))
    });
    let percent = if size == 0 { 0.0 } else { ((end - start) as f64 * 1000.0 / size as f64).round() / 10.0 };
    let rendered = &window.rendered;
    let footer = bytes_footer(&BytesFacts {
        requested,
        actual: window.actual,
        size,
        percent,
        cap_reached: window.cap_hit.then_some(limits.max_output_bytes),
        rendering_notices: &rendering.notices,
        format,
        rendered,
        next_call,
    });
    rendered.flags.fill(&mut meta);
    meta.invalid_bytes = (rendered.invalid > 0).then_some(rendered.invalid);
    let mut output = window.rendered.text;
    render::append_footer(&mut output, &footer);
    meta.more_before = start > source.data_start;
    meta.more_after = end < size;
    meta.byte_cap_hit = window.cap_hit;
    meta.requested_range = Some(requested);
    meta.actual_range = Some(window.actual);
    meta.boundary_adjusted = Some(adjusted);
    meta.percent_of_file = Some(percent);
    meta.next_start_byte = next_start;
    Ok(TextResult { output, meta })
}

/// The envelope every text result starts from.
pub fn base_meta(target: &Target<'_>, format: &TextFormat) -> TextMeta {
    TextMeta {
        path: target.shown.clone(),
        size_bytes: target.metadata.len(),
        mtime: target.metadata.modified().ok().and_then(crate::render::rfc3339_seconds),
        encoding: format.codec.name(),
        encoding_source: format.source,
        bom_removed: format.bom_len > 0,
        ..TextMeta::default()
    }
}

/// The answer for content without a single line: its empty notice, and line fields saying so.
pub(super) fn empty_file(mut meta: TextMeta, size: u64) -> TextResult {
    let output = render::text::empty_file(size);
    meta.total_lines = Some(0);
    meta.total_lines_at_least = None;
    meta.returned_lines = Some(0);
    meta.truncated_lines = Some(0);
    meta.trailing_newline = Some(false);
    meta.line_ending = Some("none");
    TextResult { output, meta }
}

/// Names an I/O error met while reading `path`.
pub fn io_error(path: &str) -> impl Fn(std::io::Error) -> ReadError + '_ {
    move |e| ReadError::from_io(&e, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::render_error;
    use crate::window::scan::CapturedLine;

    #[test]
    fn timeout_returns_the_lines_gathered_before_the_error() {
        let limits = Limits::default();
        let mut renderer = LineRenderer::new(Codec::Whatwg(encoding_rs::UTF_8), 100, limits.max_output_bytes);
        renderer.push(CapturedLine { number: 1, start: 0, content_end: 5, kept: b"first" });
        let error = timed_out(renderer, &limits);
        assert_eq!(error.code, ErrorCode::Timeout);
        let output = render_error(&error);
        assert!(
            output.starts_with("1: first\nTIMEOUT: stopped at the 30 s time budget; the lines above were read"),
            "{output}"
        );
        assert!(output.ends_with("Next: read a byte range (start_byte/end_byte), which does not scan the whole file"));
    }

    #[test]
    fn timeout_before_any_line_has_no_partial() {
        let limits = Limits::default();
        let renderer = LineRenderer::new(Codec::Whatwg(encoding_rs::UTF_8), 100, limits.max_output_bytes);
        let error = timed_out(renderer, &limits);
        assert_eq!(error.partial, None);
        assert!(error.message.contains("no line of the window was reached"), "{}", error.message);
    }
}
