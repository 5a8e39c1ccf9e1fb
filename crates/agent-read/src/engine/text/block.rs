//! Block mode: the indentation block around a line (found by [`crate::window::block`]), shown through the ordinary
//! line window — same numbered lines, caps and notices — with a footer that names the block and the call that
//! widens it.

use super::{self as text, Rendering};
use crate::classify::TextFormat;
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::text::{Shown, block_footer, elision_line};
use crate::request::BlockWindow;
use crate::result::{TextMeta, TextResult};
use crate::window::Source;
use crate::window::block::{self, Block, Found};
use crate::window::lines::Indexing;

/// Lines of context on each side of a top-level block in the plain line window that widens it.
pub const WIDEN_CONTEXT_LINES: u64 = 20;

/// Reads the block around `request.anchor_line` of `source`: one pass to find it, then its line window.
pub fn read(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    request: BlockWindow,
    mut meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let anchor = request.anchor_line;
    // A rendering (a notebook) puts its document's lines behind the gutter: their indentation is measured after it.
    let gutter = source.is_in_memory().then_some(crate::render::GUTTER);
    let block = match block::find_in(source, format.codec, anchor, request.levels, gutter) {
        Ok(Found::Block(block)) => block,
        Ok(Found::PastEnd(0)) => return Ok(empty(meta)),
        Ok(Found::PastEnd(total)) => return Err(past_end(&meta.path, anchor, total)),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(timed_out(anchor, limits)),
        Err(e) => return Err(ReadError::from_io(&e, &meta.path)),
    };
    if let Some(split) = Split::of(&block, request.limit) {
        return read_split(source, indexing, format, (&block, &request, split), meta, limits, rendering);
    }
    let window = request.lines_of(block.start, block.end - block.start + 1);
    let Some(scanned) = text::scan_window(source, indexing, format, window, &meta.path, limits, rendering, u64::MAX)?
    else {
        return Ok(empty(meta));
    };
    let (first, last, total) = (scanned.first, scanned.last, scanned.total());
    // Continuing within the block: the next call ends where the block ends.
    let next_offset = (last < block.end).then_some(last + 1);
    let next_call = next_offset
        .map(|n| format!("{}offset={n} limit={}", rendering.call_prefix, (block.end - last).min(request.limit)));
    let widen = widen_call(&block, total, &request, rendering);
    let facts = scanned.facts(&meta, format, rendering, request.clamped_from.map(|_| limits.max_lines), limits);
    let shown = next_offset.map(|_| Shown { head: None, window: [first, last] });
    let footer = block_footer(&block, total, shown, &facts, next_call, widen.as_deref());
    fill_block_meta(&mut meta, &block, widen);
    let output = scanned.finish(&mut meta, next_offset, request.clamped_to(), &footer);
    Ok(TextResult { output, meta })
}

fn fill_block_meta(meta: &mut TextMeta, block: &Block, widen: Option<String>) {
    meta.block_kind = Some(if block.header.is_some() { "block" } else { "paragraph" });
    meta.block_start_line = Some(block.start);
    meta.block_end_line = Some(block.end);
    meta.block_header_line = block.header;
    meta.anchor_line = Some(block.anchor);
    meta.widen = widen;
}

/// How a block longer than the window is shown so that its anchor is in view: its head (the header, with the
/// annotations above it when they leave room), then, after the lines left out, a window of the rest of the limit
/// around the anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    /// The head's first and last lines; `None` for a paragraph, which has no header.
    head: Option<[u64; 2]>,
    /// The window around the anchor.
    window: [u64; 2],
}

impl Split {
    /// The split of `block` for a window of `limit` lines; `None` when the block fits, or when the window from the
    /// block's first line already holds the anchor.
    fn of(block: &Block, limit: u64) -> Option<Split> {
        let anchor = block.resolved;
        if block.end - block.start < limit || anchor < block.start + limit {
            return None;
        }
        // A window of one or two lines is all anchor.
        let head = block.header.filter(|_| limit > 2).map(|header| {
            let with_annotations = header - block.start + 1;
            if with_annotations <= limit / 3 { [block.start, header] } else { [header, header] }
        });
        let head_lines = head.map_or(0, |[first, last]| last - first + 1);
        let room = limit.saturating_sub(head_lines).max(1);
        let after_head = head.map_or(block.start, |[_, last]| last + 1);
        let end = (anchor + room / 2).min(block.end);
        let start = end.saturating_sub(room - 1).max(after_head);
        Some(Split { head, window: [start, (start + room - 1).min(block.end)] })
    }
}

/// A block longer than its window: the head, the line that says which lines were left out and how to read them, and
/// the window around the anchor (see [`Split`]); the footer continues within the block after that window.
fn read_split(
    source: &Source<'_>,
    indexing: Option<Indexing<'_>>,
    format: &TextFormat,
    (block, request, split): (&Block, &BlockWindow, Split),
    mut meta: TextMeta,
    limits: &Limits,
    rendering: &Rendering,
) -> Result<TextResult, ReadError> {
    let mut output = String::new();
    let mut head_lines = 0;
    if let Some([first, last]) = split.head {
        let window = request.lines_of(first, last - first + 1);
        if let Some(head) = text::scan_window(source, None, format, window, &meta.path, limits, rendering, u64::MAX)? {
            head_lines = head.renderer.returned;
            output = head.renderer.into_output();
        }
    }
    let after_head = split.head.map_or(block.start, |[_, last]| last + 1);
    let [first, last] = split.window;
    if first > after_head {
        output.push_str(&elision_line(after_head, first - 1, &rendering.call_prefix));
    }
    let room = Limits { max_output_bytes: limits.max_output_bytes.saturating_sub(output.len()), ..limits.clone() };
    let window = request.lines_of(first, last - first + 1);
    let Some(scanned) = text::scan_window(source, indexing, format, window, &meta.path, &room, rendering, u64::MAX)?
    else {
        return Ok(empty(meta));
    };
    let (shown_last, total) = (scanned.last, scanned.total());
    let next_offset = (shown_last < block.end).then_some(shown_last + 1);
    let next_call = next_offset
        .map(|n| format!("{}offset={n} limit={}", rendering.call_prefix, (block.end - shown_last).min(request.limit)));
    let widen = widen_call(block, total, request, rendering);
    let facts = scanned.facts(&meta, format, rendering, request.clamped_from.map(|_| limits.max_lines), limits);
    let shown = Some(Shown { head: split.head.filter(|_| head_lines > 0), window: [scanned.first, shown_last] });
    let footer = block_footer(block, total, shown, &facts, next_call, widen.as_deref());
    fill_block_meta(&mut meta, block, widen);
    let lines = scanned.finish(&mut meta, next_offset, request.clamped_to(), &footer);
    meta.returned_lines = meta.returned_lines.map(|n| n + head_lines);
    output.push_str(&lines);
    Ok(TextResult { output, meta })
}

/// The call that shows more around the block: the enclosing block, or at top level a line window with
/// [`WIDEN_CONTEXT_LINES`] more on each side; `None` when the block is the whole content.
fn widen_call(block: &Block, total: u64, request: &BlockWindow, rendering: &Rendering) -> Option<String> {
    let prefix = &rendering.call_prefix;
    if let Some(parent) = block.parent {
        let limit = if request.explicit_limit { format!(" limit={}", request.limit) } else { String::new() };
        return Some(format!("{prefix}mode=block anchor_line={parent}{limit}"));
    }
    let from = block.start.saturating_sub(WIDEN_CONTEXT_LINES).max(1);
    let to = block.end.saturating_add(WIDEN_CONTEXT_LINES).min(total.max(block.end));
    (from < block.start || to > block.end).then(|| format!("{prefix}offset={from} limit={}", to - from + 1))
}

fn empty(meta: TextMeta) -> TextResult {
    let size = meta.size_bytes;
    text::empty_file(meta, size)
}

fn past_end(path: &str, anchor: u64, total: u64) -> ReadError {
    ReadError::invalid_range(format!(
        "anchor_line {anchor} is past the end: {path} has {total} line(s), so the last valid anchor_line is {total}"
    ))
    .with_hint(format!("send an anchor_line from 1 to {total}"))
}

/// Finding the block stopped at the time budget: no lines to show yet, and a cheaper call that needs no full pass.
fn timed_out(anchor: u64, limits: &Limits) -> ReadError {
    let seconds = limits.timeout_ms as f64 / 1000.0;
    ReadError::new(
        ErrorCode::Timeout,
        format!(
            "stopped at the {seconds} s time budget while looking for the block around line {anchor} (block mode reads from the first line)"
        ),
    )
    .with_hint(format!(
        "read the lines around it instead: offset={} limit=100 (without mode and anchor_line)",
        anchor.saturating_sub(50).max(1)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(start: u64, end: u64, parent: Option<u64>) -> Block {
        Block { start, end, anchor: start, resolved: start, header: Some(start), parent }
    }

    fn request(limit: Option<u64>) -> BlockWindow {
        BlockWindow {
            anchor_line: 1,
            limit: limit.unwrap_or(2000),
            clamped_from: None,
            explicit_limit: limit.is_some(),
            levels: 1,
        }
    }

    #[test]
    fn widen_names_the_parent_and_repeats_an_explicit_limit() {
        let rendering = Rendering::default();
        assert_eq!(
            widen_call(&block(5, 9, Some(2)), 50, &request(None), &rendering).unwrap(),
            "mode=block anchor_line=2"
        );
        let limited = widen_call(&block(5, 9, Some(2)), 50, &request(Some(30)), &rendering).unwrap();
        assert_eq!(limited, "mode=block anchor_line=2 limit=30");
    }

    #[test]
    fn widen_at_top_level_is_a_line_window_with_context_clipped_to_the_file() {
        let rendering = Rendering::default();
        assert_eq!(widen_call(&block(30, 40, None), 100, &request(None), &rendering).unwrap(), "offset=10 limit=51");
        assert_eq!(widen_call(&block(3, 40, None), 45, &request(None), &rendering).unwrap(), "offset=1 limit=45");
        assert_eq!(widen_call(&block(1, 45, None), 45, &request(None), &rendering), None, "nothing is wider");
    }

    #[test]
    fn a_cancelled_block_search_stops_mid_scan() {
        use crate::{Cancel, Config, ReadRequest, ReadResult, Reader};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.log");
        // Text up front (so it classifies as text), then a 64 GiB hole the search for line 30,000 would read through.
        std::fs::write(&path, "line\n".repeat(20_000)).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_len(64 << 30).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let request = ReadRequest {
            mode: Some(crate::request::ReadMode::Block),
            anchor_line: Some(30_000),
            ..ReadRequest::new("huge.log")
        };
        let cancel = Cancel::new();
        let started = std::time::Instant::now();
        let result = std::thread::scope(|scope| {
            let read = scope.spawn(|| reader.read(&request, &crate::ReadOptions::cancellable(&cancel)));
            std::thread::sleep(std::time::Duration::from_millis(100));
            cancel.cancel();
            read.join().unwrap()
        });
        let ReadResult::Error(error) = result else { panic!("the search was not stopped: {}", result.output()) };
        assert_eq!(error.code, ErrorCode::Cancelled, "{}", error.message);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "stopped after {:?}", started.elapsed());
    }
}
