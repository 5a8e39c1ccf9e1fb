//! Property tests for paging: following the envelope's next call must visit every line (or byte) of a file exactly
//! once, in order, reproduce its content exactly, stay within the output cap, and always end.
//!
//! Files are built from pieces that stress the windowing: printable ASCII runs, multibyte UTF-8, LF, CRLF, lone CR,
//! blank lines, lines longer than the per-line limit and than the output cap, no final newline, and (in about a third
//! of the files) invalid UTF-8 sequences. Limits are small so that cuts, caps and truncation happen often.
//!
//! Content is compared with `String::from_utf8_lossy` when the result says the file was decoded as UTF-8, and with
//! `encoding_rs` (a dependency of the crate) decoding in the reported encoding when a legacy encoding was guessed.

use agent_read::TextResult;
use agent_read::{Config, ErrorCode, Limits, ReadOptions, ReadRequest, ReadResult, Reader};
use proptest::prelude::*;
use std::fmt;

use crate::common::envelope;

/// The name of the generated file inside its root.
const FILE: &str = "f.txt";
/// How a cut line's marker starts and ends (docs/contract.md, What the model sees).
const MARKER_OPEN: &str = "⟨line truncated: ";
const MARKER_CLOSE: &str = " to read it⟩";
/// What an empty file answers.
const EMPTY_NOTICE: &str = "(empty file: 0 bytes)";

// ---------------------------------------------------------------------------------------------------------------
// Generated files
// ---------------------------------------------------------------------------------------------------------------

/// One stretch of a generated file. Kept symbolic so that a shrunk failure reads well.
#[derive(Clone)]
enum Piece {
    Ascii(String),
    Multi(&'static str),
    Lf,
    CrLf,
    Cr,
    /// Several line feeds in a row: empty lines.
    Blank(usize),
    /// A unit repeated many times: a line longer than the per-line limit, often longer than the output cap.
    Long(&'static str, usize),
    /// Bytes that are not valid UTF-8.
    Invalid(&'static [u8]),
}

impl fmt::Debug for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Piece::Ascii(s) => write!(f, "Ascii({s:?})"),
            Piece::Multi(s) => write!(f, "Multi({s:?})"),
            Piece::Lf => write!(f, "Lf"),
            Piece::CrLf => write!(f, "CrLf"),
            Piece::Cr => write!(f, "Cr"),
            Piece::Blank(n) => write!(f, "Blank({n})"),
            Piece::Long(unit, n) => write!(f, "Long({unit:?}, {n})"),
            Piece::Invalid(b) => write!(f, "Invalid(b\"{}\")", b.escape_ascii()),
        }
    }
}

impl Piece {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Piece::Ascii(s) => out.extend_from_slice(s.as_bytes()),
            Piece::Multi(s) => out.extend_from_slice(s.as_bytes()),
            Piece::Lf => out.push(b'\n'),
            Piece::CrLf => out.extend_from_slice(b"\r\n"),
            Piece::Cr => out.push(b'\r'),
            Piece::Blank(n) => out.extend(std::iter::repeat_n(b'\n', *n)),
            Piece::Long(unit, n) => out.extend_from_slice(unit.repeat(*n).as_bytes()),
            Piece::Invalid(b) => out.extend_from_slice(b),
        }
    }
}

/// Multibyte UTF-8: 2, 3 and 4 byte characters, CJK. None starts with a BOM byte.
const MULTI: &[&str] = &["é", "€", "😀", "日本語", "Ш", "中文", "aé€😀"];
/// Units of long lines.
const LONG_UNITS: &[&str] = &["a", "é", "€", "😀", "ab€", "x😀y", "日本"];
/// Invalid UTF-8: stray continuation, lone lead bytes, truncated sequences, overlong, surrogate, 0xFF. No NUL, no
/// 0xFE/0xEF (so no byte order mark can appear), no control bytes.
const INVALID: &[&[u8]] = &[
    b"\x80",
    b"\xbf\xbf",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf8\x88\x80\x80",
];

fn piece(allow_invalid: bool) -> BoxedStrategy<Piece> {
    let valid = prop_oneof![
        6 => "[ -~]{1,12}".prop_map(Piece::Ascii),
        3 => prop::sample::select(MULTI).prop_map(Piece::Multi),
        4 => Just(Piece::Lf),
        2 => Just(Piece::CrLf),
        1 => Just(Piece::Cr),
        1 => (2usize..5).prop_map(Piece::Blank),
        1 => (prop::sample::select(LONG_UNITS), 20usize..1500).prop_map(|(unit, n)| Piece::Long(unit, n)),
    ];
    if allow_invalid {
        prop_oneof![9 => valid, 2 => prop::sample::select(INVALID).prop_map(Piece::Invalid)].boxed()
    } else {
        valid.boxed()
    }
}

/// A file: about a third of them hold invalid UTF-8.
fn pieces() -> impl Strategy<Value = Vec<Piece>> {
    prop::bool::weighted(0.35).prop_flat_map(|invalid| prop::collection::vec(piece(invalid), 0..40))
}

fn file_bytes(pieces: &[Piece]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        p.write(&mut out);
    }
    out
}

/// Small limits, so that cuts, caps and truncation are common.
fn limits() -> impl Strategy<Value = Limits> {
    (1u64..50, 1u64..50, 16usize..64, 1024usize..4096).prop_map(
        |(default_lines, max_lines, max_line_chars, max_output_bytes)| Limits {
            default_lines,
            max_lines,
            max_line_chars,
            max_output_bytes,
            ..Limits::default()
        },
    )
}

// ---------------------------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------------------------

/// One line of the file as the contract defines it: split at LF, a CR just before the LF belongs to the terminator,
/// any other CR (including one that ends an unterminated last line) is content.
#[derive(Debug)]
struct RefLine {
    /// Byte offset of the line's first byte.
    start: usize,
    /// Byte offset just past its content.
    content_end: usize,
}

fn reference_lines(bytes: &[u8]) -> Vec<RefLine> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            let content_end = if i > start && bytes[i - 1] == b'\r' { i - 1 } else { i };
            lines.push(RefLine { start, content_end });
            start = i + 1;
        }
    }
    if start < bytes.len() {
        lines.push(RefLine { start, content_end: bytes.len() });
    }
    lines
}

/// Decodes `bytes` in the encoding a result reports, replacing invalid sequences with U+FFFD.
fn decode(encoding: &str, bytes: &[u8]) -> String {
    if encoding == "UTF-8" {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let codec = encoding_rs::Encoding::for_label(encoding.as_bytes())
        .unwrap_or_else(|| panic!("result names an encoding encoding_rs does not know: {encoding}"));
    codec.decode_without_bom_handling(bytes).0.into_owned()
}

/// The smallest position at or after `pos` that is a character boundary of valid UTF-8 `text`.
fn ceil_boundary(text: &str, mut pos: usize) -> usize {
    while !text.is_char_boundary(pos) {
        pos += 1;
    }
    pos
}

/// The largest position at or before `pos` that is a character boundary of valid UTF-8 `text`.
fn floor_boundary(text: &str, mut pos: usize) -> usize {
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

// ---------------------------------------------------------------------------------------------------------------
// Reading and parsing
// ---------------------------------------------------------------------------------------------------------------

/// A generated file in its own root, and a reader confined to it.
struct Fixture {
    _dir: tempfile::TempDir,
    reader: Reader,
    bytes: Vec<u8>,
    limits: Limits,
}

impl Fixture {
    /// Writes the file. `None` when the file was (legitimately) classified as binary: only content that is not valid
    /// UTF-8 may be, since the generator never writes NUL or control bytes.
    fn new(bytes: Vec<u8>, limits: Limits) -> Option<Fixture> {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(FILE), &bytes).expect("write file");
        let config = Config { roots: vec![dir.path().to_path_buf()], limits: limits.clone(), ..Config::default() };
        let reader = Reader::new(config).expect("valid config");
        let fixture = Fixture { _dir: dir, reader, bytes, limits };
        if let ReadResult::Error(e) = fixture.reader.read(&ReadRequest::new(FILE), &ReadOptions::default())
            && e.code == ErrorCode::Binary
        {
            assert!(
                std::str::from_utf8(&fixture.bytes).is_err(),
                "valid UTF-8 text without control bytes was called binary: {}",
                e.message
            );
            return None;
        }
        Some(fixture)
    }

    fn read(&self, request: &ReadRequest) -> ReadResult {
        let result = self.reader.read(request, &ReadOptions::default());
        let output = result.output();
        assert!(
            output.len() <= self.limits.max_output_bytes,
            "output of {} bytes exceeds the cap of {} for {request:?}:\n{output}",
            output.len(),
            self.limits.max_output_bytes
        );
        // Results are plain serializable values whatever happened.
        let json = serde_json::to_value(&result).expect("result serializes");
        assert_eq!(json["ok"], result.is_ok(), "{json}");
        assert_eq!(json["output"], output.as_ref());
        result
    }

    /// A read that must succeed with a text window.
    fn text(&self, request: &ReadRequest) -> TextResult {
        match self.read(request) {
            ReadResult::Text(t) => t,
            other => panic!("{request:?} did not return text: {}", other.output()),
        }
    }

    fn lines(&self, offset: i64, limit: i64) -> TextResult {
        self.text(&ReadRequest { offset: Some(offset), limit: Some(limit), ..ReadRequest::new(FILE) })
    }

    fn range(&self, start: u64, end: u64) -> TextResult {
        let request = ReadRequest {
            start_byte: Some(i64::try_from(start).unwrap()),
            end_byte: Some(i64::try_from(end).unwrap()),
            ..ReadRequest::new(FILE)
        };
        self.text(&request)
    }

    /// The text of a byte-range result, with its actual range: every line behind its offset, each line's text
    /// shown as the file's decoded bytes are, with a CR before a line feed left out (its offset still counts it).
    /// Returns the decoded text the range stands for (shown characters turned back, line breaks as in the file).
    fn range_text(&self, t: &TextResult) -> (String, [u64; 2]) {
        let range = t.meta.actual_range.expect("byte-range result has actual_range");
        let (lines, footer) = envelope::ranged(&t.output);
        assert_footer(footer);
        let [a, b] = range;
        let mut text = String::new();
        let mut at = a as usize;
        for (i, (offset, shown)) in lines.iter().enumerate() {
            assert_eq!(*offset, at as u64, "line {i} of range [{a}, {b}) is not where the file's line starts");
            let line_end = self.bytes[at..b as usize].iter().position(|&x| x == b'\n').map(|p| at + p);
            let content_end = match line_end {
                Some(lf) if lf > at && self.bytes[lf - 1] == b'\r' => lf - 1,
                Some(lf) => lf,
                None => b as usize,
            };
            let content = decode(t.meta.encoding, &self.bytes[at..content_end]);
            assert_eq!(envelope::unshow(shown), content, "line at {at} of range [{a}, {b}):\n{}", t.output);
            text.push_str(&content);
            match line_end {
                Some(lf) => {
                    text.push_str(if content_end < lf { "\r\n" } else { "\n" });
                    at = lf + 1;
                }
                None => at = b as usize,
            }
        }
        assert_eq!(at as u64, b, "the lines of range [{a}, {b}) stop at {at}:\n{}", t.output);
        (text, range)
    }

    /// Follows a truncation marker: reads `[start, end)` and its continuations until `end`, and returns the text.
    fn follow_range(&self, start: u64, end: u64) -> String {
        let mut text = String::new();
        let mut at = start;
        let mut reads = 0;
        while at < end {
            reads += 1;
            assert!(reads <= end - start + 1, "reading [{start}, {end}) does not end: stuck at {at}");
            let t = self.range(at, end);
            let (chunk, [a, b]) = self.range_text(&t);
            assert_eq!(a, at, "continuation read of [{at}, {end}) moved its start: {:?}", t.meta.actual_range);
            assert!(b > a, "continuation read of [{at}, {end}) made no progress: {:?}", t.meta.actual_range);
            assert!(
                b <= end,
                "continuation read of [{at}, {end}) (from a truncation marker) returned bytes past its end: \
                 actual_range {:?}, text {chunk:?}",
                t.meta.actual_range
            );
            assert_eq!(t.meta.next_start_byte, (b < self.bytes.len() as u64).then_some(b));
            text.push_str(&chunk);
            at = b;
        }
        text
    }
}

/// Splits an output into the text before the footer and the footer (its last line).
fn split_footer(output: &str) -> (&str, &str) {
    match output.rfind('\n') {
        Some(i) => (&output[..=i], &output[i + 1..]),
        None => ("", output),
    }
}

fn assert_footer(footer: &str) {
    assert!(footer.starts_with('(') && footer.ends_with(')'), "the last line is not a footer: {footer:?}");
}

/// A cut line's marker: how many bytes are left and the byte range that holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marker {
    more: u64,
    start: u64,
    end: u64,
}

/// One rendered line: its number, the text it shows (escapes turned back), and the marker when it was cut.
#[derive(Debug)]
struct Rendered {
    number: u64,
    shown: String,
    marker: Option<Marker>,
}

/// Parses a line window's output into its lines and its footer.
fn parse_lines(output: &str) -> (Vec<Rendered>, &str) {
    let (body, footer) = split_footer(output);
    assert_footer(footer);
    let lines = body
        .split_terminator('\n')
        .map(|line| {
            let (number, rest) = line.split_once(": ").unwrap_or_else(|| panic!("line without `N: ` prefix: {line:?}"));
            let number = number.parse().unwrap_or_else(|_| panic!("bad line number in {line:?}"));
            envelope::assert_nothing_raw(rest);
            match rest.strip_suffix(MARKER_CLOSE).and_then(|r| r.rfind(MARKER_OPEN).map(|i| (r, i))) {
                Some((r, i)) => {
                    let marker = parse_marker(&r[i + MARKER_OPEN.len()..]);
                    Rendered { number, shown: envelope::unshow(&r[..i]), marker: Some(marker) }
                }
                None => Rendered { number, shown: envelope::unshow(rest), marker: None },
            }
        })
        .collect();
    (lines, footer)
}

/// Parses `K more bytes; use start_byte=X end_byte=Y`.
fn parse_marker(text: &str) -> Marker {
    let bad = || -> ! { panic!("malformed truncation marker: {text:?}") };
    let (more, rest) = text.split_once(" more bytes; use start_byte=").unwrap_or_else(|| bad());
    let (start, end) = rest.split_once(" end_byte=").unwrap_or_else(|| bad());
    Marker {
        more: more.parse().unwrap_or_else(|_| bad()),
        start: start.parse().unwrap_or_else(|_| bad()),
        end: end.parse().unwrap_or_else(|_| bad()),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------------

/// Property 1: paging by lines from offset 1, following `next_offset`, shows every line exactly once and in order,
/// and each shown line (with its truncation marker followed) is exactly the line's content.
fn check_line_paging(pieces: &[Piece], limits: Limits, limit: i64) {
    let Some(fx) = Fixture::new(file_bytes(pieces), limits) else { return };
    let lines = reference_lines(&fx.bytes);
    let total = lines.len() as u64;
    let page_max = u64::try_from(limit).unwrap().min(fx.limits.max_lines);
    let mut offset = 1i64;
    let mut expected_next = 1u64;
    let mut pages = 0u64;
    loop {
        pages += 1;
        assert!(pages <= total + 1, "paging does not end: page {pages} of a {total}-line file asks offset={offset}");
        let t = fx.lines(offset, limit);
        if total == 0 {
            assert_eq!(t.output, EMPTY_NOTICE);
            assert_eq!(t.meta.total_lines, Some(0));
            return;
        }
        let meta = &t.meta;
        assert_eq!(meta.total_lines, Some(total), "total_lines");
        let (rendered, footer) = parse_lines(&t.output);
        assert!(!rendered.is_empty(), "a page at offset={offset} shows no line:\n{}", t.output);
        assert!(rendered.len() as u64 <= page_max, "{} lines shown, limit {page_max}", rendered.len());
        assert_eq!(meta.returned_lines, Some(rendered.len() as u64), "returned_lines");
        assert_eq!(meta.start_line, Some(rendered[0].number), "start_line");
        assert_eq!(meta.end_line, Some(rendered[rendered.len() - 1].number), "end_line");
        let mut cut = 0;
        for r in &rendered {
            assert_eq!(r.number, expected_next, "line numbers must run on without gap or overlap:\n{}", t.output);
            expected_next += 1;
            let line = &lines[usize::try_from(r.number - 1).unwrap()];
            let mut whole = r.shown.clone();
            if let Some(m) = r.marker {
                cut += 1;
                assert_eq!(m.end, line.content_end as u64, "marker of line {} must end at its content end", r.number);
                assert!(
                    (line.start as u64..m.end).contains(&m.start),
                    "marker of line {} starts outside the line: {m:?}, line {line:?}",
                    r.number
                );
                assert_eq!(m.more, m.end - m.start, "marker's byte count disagrees with its range: {m:?}");
                whole.push_str(&fx.follow_range(m.start, m.end));
            }
            let expected = decode(meta.encoding, &fx.bytes[line.start..line.content_end]);
            assert_eq!(whole, expected, "line {} (shown + continuation) differs from the file's line", r.number);
        }
        assert_eq!(meta.truncated_lines, Some(cut), "truncated_lines");
        match meta.next_offset {
            Some(n) => {
                assert_eq!(n, expected_next, "next_offset");
                assert!(footer.contains(&format!("next: offset={n}")), "footer lacks the next call: {footer}");
                offset = i64::try_from(n).unwrap();
            }
            None => {
                assert_eq!(expected_next - 1, total, "no next_offset before the last line:\n{}", t.output);
                assert!(footer.ends_with("end of file)"), "last page's footer: {footer}");
                return;
            }
        }
    }
}

/// Property 2: paging by byte ranges from 0, following `next_start_byte`, tiles the file exactly and the texts put
/// together are the whole file decoded.
fn check_byte_paging(pieces: &[Piece], limits: Limits, span: u64, probe: prop::sample::Index) {
    let Some(fx) = Fixture::new(file_bytes(pieces), limits) else { return };
    let size = fx.bytes.len() as u64;
    if size == 0 {
        assert_eq!(fx.range(0, span).output, EMPTY_NOTICE);
        return;
    }
    let valid = std::str::from_utf8(&fx.bytes).ok();
    let max_text = fx.limits.max_output_bytes;
    // Keep the number of reads per case bounded (debug builds, two cores): at most about 256 pages.
    let span = span.max(size / 256);
    let mut all = String::new();
    let mut encodings = Vec::new();
    let mut at = 0u64;
    let mut reads = 0u64;
    loop {
        reads += 1;
        assert!(reads <= size + 1, "byte paging does not end: read {reads} of a {size}-byte file at {at}");
        let requested = [at, at + span];
        let t = fx.range(requested[0], requested[1]);
        encodings.push(t.meta.encoding);
        let (text, [a, b]) = fx.range_text(&t);
        assert_eq!(t.meta.requested_range, Some(requested), "requested_range");
        assert_eq!(a, at, "range read at {at} (the previous end) moved its start: [{a}, {b})");
        assert!(b > a, "range read at {at} made no progress");
        assert!(b <= size, "range [{a}, {b}) ends past the file's {size} bytes");
        assert!(text.len() <= max_text);
        assert_eq!(t.meta.next_start_byte, (b < size).then_some(b), "next_start_byte");
        assert_eq!(t.meta.more_after, b < size, "more_after");
        assert_eq!(t.meta.more_before, a > 0, "more_before");
        if let Some(s) = valid {
            assert!(s.is_char_boundary(b as usize), "range [{a}, {b}) splits a character");
            if !t.meta.byte_cap_hit {
                // Not cut by the cap: the end is the requested end moved back to a boundary (or, when that would
                // leave nothing, the end of the character at the start).
                let back = floor_boundary(s, requested[1].min(size) as usize) as u64;
                let expected = if back > a { back } else { ceil_boundary(s, a as usize + 1) as u64 };
                assert_eq!(b, expected, "range [{}, {}) without cap hit ended at {b}", requested[0], requested[1]);
            }
        }
        assert_eq!(text, decode(t.meta.encoding, &fx.bytes[a as usize..b as usize]), "text of [{a}, {b})");
        all.push_str(&text);
        if b == size {
            break;
        }
        at = b;
    }
    assert!(encodings.iter().all(|e| *e == encodings[0]), "the encoding changed between reads: {encodings:?}");
    assert_eq!(all, decode(encodings[0], &fx.bytes), "the ranges put together differ from the whole file");

    // A range that starts anywhere starts at or before the asked byte, on a boundary, less than a character back.
    let p = probe.index(size as usize) as u64;
    let t = fx.range(p, p + span);
    let [a, b] = t.meta.actual_range.expect("actual_range");
    assert!(a <= p && p - a < 4, "range asked at {p} starts at {a}");
    assert!(b > a && b <= size, "range asked at {p}: [{a}, {b}) of {size}");
    assert_eq!(t.meta.boundary_adjusted, Some([a, b] != [p, p + span]), "boundary_adjusted");
    if let Some(s) = valid {
        assert!(s.is_char_boundary(a as usize), "range asked at {p} starts inside a character: {a}");
        assert_eq!(a, floor_boundary(s, p as usize) as u64, "range asked at {p} must start at the boundary before it");
    }
}

/// Property 3: `offset=-k` starts at line max(1, total-k+1) and shows what the same positive offset shows.
fn check_negative_offset(pieces: &[Piece], limits: Limits, k: i64, limit: i64) {
    let Some(fx) = Fixture::new(file_bytes(pieces), limits) else { return };
    let total = reference_lines(&fx.bytes).len() as u64;
    let tail = fx.lines(-k, limit);
    if total == 0 {
        assert_eq!(tail.output, EMPTY_NOTICE);
        return;
    }
    let expected_start = total.saturating_sub(k.unsigned_abs()) + 1;
    assert_eq!(tail.meta.total_lines, Some(total));
    assert_eq!(tail.meta.start_line, Some(expected_start), "offset=-{k} of {total} lines:\n{}", tail.output);
    let head = fx.lines(i64::try_from(expected_start).unwrap(), limit);
    let (tail_lines, _) = parse_lines(&tail.output);
    assert_eq!(tail_lines.first().map(|l| l.number), Some(expected_start));
    assert_eq!(tail.output, head.output, "offset=-{k} and offset={expected_start} disagree");
    assert_eq!(
        (tail.meta.end_line, tail.meta.returned_lines, tail.meta.next_offset, tail.meta.more_before),
        (head.meta.end_line, head.meta.returned_lines, head.meta.next_offset, head.meta.more_before),
    );
}

/// What a request must produce on a file of `size` bytes and `total` lines.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    Text,
    Empty,
    Error(ErrorCode),
}

fn expected_outcome(r: &ReadRequest, size: u64, total: u64) -> Expect {
    use ErrorCode::{InvalidParam, InvalidRange};
    if r.start_byte.is_some() || r.end_byte.is_some() {
        if r.offset.is_some() || r.limit.is_some() {
            return Expect::Error(InvalidParam);
        }
        if r.start_byte.is_some_and(|s| s < 0) || r.end_byte.is_some_and(|e| e < 0) {
            return Expect::Error(InvalidParam);
        }
        // An omitted start_byte is 0, so `end_byte: 0` alone is an empty range too.
        if let Some(e) = r.end_byte
            && e <= r.start_byte.unwrap_or(0)
        {
            return Expect::Error(InvalidRange);
        }
        if size == 0 {
            return Expect::Empty;
        }
        if r.start_byte.unwrap_or(0).unsigned_abs() >= size {
            return Expect::Error(InvalidRange);
        }
        return Expect::Text;
    }
    if r.offset == Some(0) || r.limit.is_some_and(|l| l < 1) {
        return Expect::Error(InvalidParam);
    }
    if size == 0 {
        return Expect::Empty;
    }
    if r.offset.is_some_and(|o| o > 0 && o.unsigned_abs() > total) {
        return Expect::Error(InvalidRange);
    }
    Expect::Text
}

/// Property 4: any request on any file gives text within the cap, or an error with the right code — never a panic.
fn check_any_request(pieces: &[Piece], limits: Limits, request: ReadRequest) {
    let Some(fx) = Fixture::new(file_bytes(pieces), limits) else { return };
    let size = fx.bytes.len() as u64;
    let total = reference_lines(&fx.bytes).len() as u64;
    let expect = expected_outcome(&request, size, total);
    let result = fx.read(&request);
    let t = match (&expect, result) {
        (Expect::Error(code), ReadResult::Error(e)) => {
            assert_eq!(e.code, *code, "{request:?}: {}", e.message);
            assert!(!e.message.is_empty() && e.hint.is_some(), "{request:?}: an error must say what to do next");
            if *code == ErrorCode::InvalidRange && request.offset.is_some() {
                assert!(e.message.contains(&format!("has {total} line")), "{}", e.message);
            }
            let start_past_end = request.start_byte.is_some_and(|s| s.unsigned_abs() >= size)
                && request.end_byte.is_none_or(|e| Some(e) > request.start_byte);
            if *code == ErrorCode::InvalidRange && start_past_end {
                assert!(e.message.contains(&format!("has {size} bytes")), "{}", e.message);
            }
            return;
        }
        (Expect::Empty, ReadResult::Text(t)) => {
            assert_eq!(t.output, EMPTY_NOTICE, "{request:?}");
            return;
        }
        (Expect::Text, ReadResult::Text(t)) => t,
        (expect, other) => panic!("{request:?}: expected {expect:?}, got {}", other.output()),
    };
    if request.start_byte.is_some() || request.end_byte.is_some() {
        let (_, footer) = split_footer(&t.output);
        assert_footer(footer);
        let asked = request.start_byte.unwrap_or(0).unsigned_abs();
        let [a, b] = t.meta.actual_range.expect("actual_range");
        assert!(a <= asked && asked - a < 4, "{request:?}: starts at {a}");
        assert!(a < b && b <= size, "{request:?}: actual range [{a}, {b}) of {size}");
        assert_eq!(t.meta.next_start_byte, (b < size).then_some(b));
        return;
    }
    let (rendered, footer) = parse_lines(&t.output);
    let first = match request.offset.unwrap_or(1) {
        o if o > 0 => o.unsigned_abs(),
        o => total.saturating_sub(o.unsigned_abs()) + 1,
    };
    let limit = request.limit.map_or(fx.limits.default_lines, i64::unsigned_abs).min(fx.limits.max_lines);
    assert_eq!(t.meta.total_lines, Some(total));
    assert_eq!(t.meta.start_line, Some(first), "{request:?}");
    assert!(!rendered.is_empty() && rendered.len() as u64 <= limit, "{request:?}: {} lines", rendered.len());
    for (i, r) in rendered.iter().enumerate() {
        assert_eq!(r.number, first + i as u64, "{request:?}:\n{}", t.output);
    }
    let last = first + rendered.len() as u64 - 1;
    assert_eq!(t.meta.end_line, Some(last));
    assert_eq!(t.meta.next_offset, (last < total).then_some(last + 1));
    assert_eq!(footer.ends_with("end of file)"), last == total, "{footer}");
    if request.limit.is_some_and(|l| l.unsigned_abs() > fx.limits.max_lines) {
        assert_eq!(t.meta.limit_clamped_to, Some(fx.limits.max_lines), "{request:?}");
    }
}

/// Integers that matter for requests: absent, small (around the generated files' sizes), extreme, arbitrary.
fn request_int(small: std::ops::Range<i64>) -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        3 => Just(None),
        4 => small.prop_map(Some),
        1 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::from(u32::MAX), i64::MAX]).prop_map(Some),
        1 => any::<i64>().prop_map(Some),
    ]
}

/// Requests: line mode, byte mode, or any mix of fields (including invalid combinations).
fn any_request() -> impl Strategy<Value = ReadRequest> {
    (0u8..3, request_int(-80..80), request_int(-5..80), request_int(-5..20_000), request_int(-5..20_000)).prop_map(
        |(mode, offset, limit, start_byte, end_byte)| {
            let (offset, limit, start_byte, end_byte) = match mode {
                0 => (offset, limit, None, None),
                1 => (None, None, start_byte, end_byte),
                _ => (offset, limit, start_byte, end_byte),
            };
            ReadRequest { offset, limit, start_byte, end_byte, ..ReadRequest::new(FILE) }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn line_paging_visits_every_line_once_and_reproduces_it(
        pieces in pieces(),
        limits in limits(),
        limit in 1i64..60,
    ) {
        check_line_paging(&pieces, limits, limit);
    }

    #[test]
    fn byte_paging_tiles_the_file_and_reproduces_it(
        pieces in pieces(),
        limits in limits(),
        span in prop_oneof![1u64..8, 1u64..5000],
        probe in any::<prop::sample::Index>(),
    ) {
        check_byte_paging(&pieces, limits, span, probe);
    }

    #[test]
    fn negative_offset_matches_the_positive_one(
        pieces in pieces(),
        limits in limits(),
        k in prop_oneof![4 => 1i64..100, 1 => 1i64..=i64::MAX],
        limit in 1i64..60,
    ) {
        check_negative_offset(&pieces, limits, k, limit);
    }

    #[test]
    fn any_request_is_text_within_the_cap_or_a_sensible_error(
        pieces in pieces(),
        limits in limits(),
        request in any_request(),
    ) {
        check_any_request(&pieces, limits, request);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Minimal reproductions of what the properties found, as plain examples (they fail until the engine is fixed)
// ---------------------------------------------------------------------------------------------------------------

fn example(bytes: &[u8], limits: Limits) -> Fixture {
    Fixture::new(bytes.to_vec(), limits).expect("text file")
}

fn forced_range(fx: &Fixture, start: i64, end: i64, encoding: &str) -> TextResult {
    fx.text(&ReadRequest {
        start_byte: Some(start),
        end_byte: Some(end),
        encoding: Some(encoding.to_string()),
        ..ReadRequest::new(FILE)
    })
}

/// Damaged UTF-8: byte 9 is a lone lead byte (0xC3 followed by 0xF0), so 10 is a character boundary. The range at
/// 10 must start there and make progress; it must not return [9, 10) with `next: start_byte=10` (the same call).
#[test]
fn example_range_after_a_lone_lead_byte_makes_progress() {
    let fx = example(b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9a\xc3\xf0\x9f\x98b", Limits::default());
    let t = fx.range(10, 12);
    assert_eq!(t.meta.encoding, "UTF-8");
    assert_eq!(t.meta.actual_range.map(|r| r[0]), Some(10), "{}", t.output);
    assert_ne!(t.meta.next_start_byte, Some(10), "the next call repeats this one:\n{}", t.output);
}

/// Damaged UTF-8: `\xe2\x82` is one invalid unit; the range after it starts at 2, not back at 0 (overlap).
#[test]
fn example_byte_paging_over_a_truncated_sequence_does_not_overlap() {
    let fx = example(b"\xe2\x82\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", Limits::default());
    let first = fx.range(0, 3);
    assert_eq!(first.meta.actual_range, Some([0, 2]), "{}", first.output);
    let second = fx.range(2, 5);
    assert_eq!(second.meta.actual_range, Some([2, 5]), "{}", second.output);
}

/// A line ending in a lone lead byte: following its truncation marker must return exactly the rest of the line,
/// not the rest plus the line feed.
#[test]
fn example_marker_of_a_line_ending_in_a_lone_lead_byte() {
    let mut bytes = "é".repeat(32).into_bytes();
    bytes.extend_from_slice(b"\xc3\nnext\n");
    let limits =
        Limits { default_lines: 10, max_lines: 10, max_line_chars: 16, max_output_bytes: 1024, ..Limits::default() };
    let fx = example(&bytes, limits);
    let (lines, _) = parse_lines(&fx.lines(1, 1).output);
    let marker = lines[0].marker.expect("line 1 is cut");
    assert_eq!((marker.start, marker.end), (32, 65));
    assert_eq!(fx.follow_range(marker.start, marker.end), format!("{}\u{FFFD}", "é".repeat(16)));
}

/// GBK: in ASCII every byte is a boundary, so a range asked at 16 starts at 16, not back at 1 (after the space).
#[test]
fn example_gbk_range_starts_where_asked() {
    let fx = example(format!(" {}\n", "a".repeat(35)).as_bytes(), Limits::default());
    let t = forced_range(&fx, 16, 30, "gbk");
    assert_eq!(t.meta.actual_range, Some([16, 30]), "{}", t.output);
}

/// Shift_JIS: two-byte characters with no byte below 0x30 nearby; a range must not split them.
#[test]
fn example_shift_jis_range_never_splits_a_character() {
    let text = "日本語のテキスト".repeat(3);
    let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&text);
    let fx = example(&bytes, Limits::default());
    let t = forced_range(&fx, 1, 7, "shift_jis");
    assert_eq!(t.meta.actual_range, Some([0, 6]), "{}", t.output);
    assert_eq!(t.meta.invalid_bytes, None, "{}", t.output);
}

/// Cases per property: 256, or `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}
