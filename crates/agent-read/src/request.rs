//! Stage 1 of a read: the request, its JSON schema, and its validation into a [`Window`] plan.
//!
//! [`ReadRequest`] is the single source of the tool's parameter schema (through `schemars`) and of its JSON (through
//! its serde derive). Untrusted JSON goes through [`ReadRequest::from_json`] (text) or [`ReadRequest::from_value`],
//! whose every error names the field, what was wrong with it and the valid form (see [`json`]).

use crate::error::ReadError;
use crate::limits::Limits;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod block;
pub mod duplicates;
mod find;
pub(crate) mod json;
mod line_pattern;
mod region;

pub use block::{BlockWindow, ReadMode};
pub use find::FindWindow;
pub(crate) use json::truncate_for_message;
pub(crate) use line_pattern::LinePattern;
pub use region::PixelRegion;

/// One read request (docs/contract.md, Requests). Its field docs are what the model sees in the tool schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRequest {
    /// File or directory to read: absolute, or relative to the workspace root. A path through a zip or tar archive
    /// reads its member (`logs.zip/dir/b.log`).
    #[serde(alias = "file_path", deserialize_with = "fields::path")]
    pub path: String,
    /// 1-based line (or directory entry) to start from. Negative counts from the end: -1 is the last line,
    /// -100 starts 100 lines before the end. Default 1. 0 is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::offset")]
    pub offset: Option<i64>,
    /// Number of lines (or entries) to return, at least 1. Default 2000; larger values are clamped.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::limit")]
    #[schemars(range(min = 1))]
    pub limit: Option<i64>,
    /// Byte-range mode: first byte to return (0-based). Cannot be combined with offset/limit.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::start_byte")]
    #[schemars(range(min = 0))]
    pub start_byte: Option<i64>,
    /// Byte-range mode: end of the range, exclusive. Cannot be combined with offset/limit.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::end_byte")]
    #[schemars(range(min = 0))]
    pub end_byte: Option<i64>,
    /// The units to read: pages of a PDF, sheets of a workbook (XLSX, XLS, ODS), slides of a presentation (PPTX),
    /// chapters of a book (EPUB); e.g. "3", "1-5", "2,4-6", "8-" (to the end). Default: from the first.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::pages")]
    pub pages: Option<String>,
    /// A regular expression to search for (Rust regex syntax, as ripgrep; `(?i)` ignores case). The answer is the
    /// matching lines with their line numbers and `context` lines around them; `limit` is then the matches shown
    /// (default 50) and `offset` the line the search starts at (negative counts from the end).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::find")]
    pub find: Option<String>,
    /// With `find`: lines shown before and after each match, 0 to 20. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::context")]
    #[schemars(range(min = 0, max = 20))]
    pub context: Option<i64>,
    /// Force a text encoding instead of detecting it (WHATWG labels: utf-8, utf-16le, windows-1252, shift_jis, …).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::encoding")]
    pub encoding: Option<String>,
    /// "lines" (default): a window of lines. "block": the definition (function, method, class…) around
    /// `anchor_line`, found from indentation alone (the innermost indented block where no definition encloses the
    /// line); the footer gives the call that widens it to the enclosing one.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::mode")]
    pub mode: Option<ReadMode>,
    /// Block mode only: the 1-based line whose enclosing block to return. `limit` still caps the lines shown.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::anchor_line")]
    #[schemars(range(min = 1))]
    pub anchor_line: Option<i64>,
    /// Block mode only: how far out to go. 1 (default): the nearest definition around `anchor_line`; 2: the one
    /// around that (a method's class or impl); and so on.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::levels")]
    #[schemars(range(min = 1))]
    pub levels: Option<i64>,
    /// Images only: the part of the image to return, `[x0, y0, x1, y1]` in the original image's pixels — the left,
    /// top, right and bottom edges, right and bottom excluded (`[0, 0, 800, 600]` is the top-left 800 × 600 pixels).
    /// It comes back at full resolution, downscaled only if the region itself is over the size limit. In a
    /// downscaled image, a point (x, y) is at (x ÷ scale, y ÷ scale) in the original; its footer gives such a call.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "fields::region")]
    #[schemars(length(min = 4, max = 4))]
    pub region: Option<[i64; 4]>,
    /// Only in a session (the MCP server): true returns the content again even when this same read of an unchanged
    /// file was already answered in this session, instead of a one-line "unchanged since your read" notice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "fields::reread")]
    pub reread: bool,
}

/// Each field's JSON, checked (see [`json::field`]): its refusal names the field, what came and the valid form.
pub(crate) mod fields {
    use super::{ReadMode, json};
    use serde::Deserializer;

    pub fn path<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let hint = r#"send the path as a JSON string, e.g. "path": "src/main.rs""#;
        json::field(d, |v| json::string("path", v).map_err(|e| e.with_hint(hint)))
    }

    pub fn offset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("offset", v).map(Some))
    }

    pub fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("limit", v).map(Some))
    }

    pub fn start_byte<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("start_byte", v).map(Some))
    }

    pub fn end_byte<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("end_byte", v).map(Some))
    }

    pub fn anchor_line<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("anchor_line", v).map(Some))
    }

    pub fn find<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let hint = r#"send the pattern as a string, e.g. "find": "fn main" or "find": "(?i)error""#;
        json::field(d, |v| json::string("find", v).map(Some).map_err(|e| e.with_hint(hint)))
    }

    pub fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("context", v).map(Some))
    }

    pub fn levels<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        json::field(d, |v| json::integer("levels", v).map(Some))
    }

    /// `pages` as a string ("2,4-6"), or a single page number.
    pub fn pages<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let hint = r#"send the pages as a string: "3", "1-5", "2,4-6" or "8-""#;
        json::field(d, |v| match v {
            serde_json::Value::Number(n) if n.is_u64() => Ok(Some(n.to_string())),
            other => json::string("pages", other).map(Some).map_err(|e| e.with_hint(hint)),
        })
    }

    pub fn encoding<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let hint = r#"send the encoding's name as a string, e.g. "encoding": "windows-1252", or omit it"#;
        json::field(d, |v| json::string("encoding", v).map(Some).map_err(|e| e.with_hint(hint)))
    }

    /// `mode` as one of [`ReadMode::NAMES`].
    pub fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ReadMode>, D::Error> {
        let hint = r#"send "mode": "block" (with "anchor_line"), or omit `mode` for a line window"#;
        json::field(d, |v| ReadMode::parse(&json::string("mode", v).map_err(|e| e.with_hint(hint))?).map(Some))
    }

    /// `region` as four integers (see [`super::region::parse`]).
    pub fn region<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[i64; 4]>, D::Error> {
        json::field(d, |v| super::region::parse(v).map(Some))
    }

    pub fn reread<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        json::field(d, |v| json::flag("reread", v))
    }
}

impl json::JsonRequest for ReadRequest {
    const SYNTAX_HINT: &'static str =
        r#"send one JSON object, e.g. {"path": "src/main.rs", "offset": 1, "limit": 200}"#;
    const EXAMPLE: &'static str = r#"send e.g. {"path": "src/main.rs"}"#;
    const REQUIRED_FOR: &'static str = "it names the file or directory to read";

    fn unknown_field(key: &str, valid: &[&str]) -> ReadError {
        // `reread` only means something in a session, whose schema alone lists it.
        let everywhere: Vec<&str> = valid.iter().copied().filter(|field| *field != "reread").collect();
        ReadError::invalid_param(format!(
            "unknown field `{key}`; valid fields: {} (and reread, in a session)",
            everywhere.join(", ")
        ))
        .with_hint("remove the field or correct its name")
    }
}

/// A window of lines (or directory entries), after validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineWindow {
    /// 1-based start, or negative from the end (never 0).
    pub offset: i64,
    /// Lines to return, already clamped to the configured maximum.
    pub limit: u64,
    /// The limit the request asked for, when it was clamped.
    pub clamped_from: Option<u64>,
    /// Whether the request named a limit (then the next call repeats it).
    pub explicit_limit: bool,
}

impl LineWindow {
    /// The limit applied, when the requested one was clamped to it.
    pub fn clamped_to(&self) -> Option<u64> {
        self.clamped_from.map(|_| self.limit)
    }

    /// The exact next call for a window continuing at `next_offset` (repeating the limit when one was asked).
    pub fn next_call(&self, next_offset: u64) -> String {
        if self.explicit_limit {
            format!("offset={next_offset} limit={}", self.limit)
        } else {
            format!("offset={next_offset}")
        }
    }
}

/// What part of the target to return, after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// Lines (or directory entries).
    Lines(LineWindow),
    /// The bytes `[start, end)` of the file; either end may be open.
    Bytes {
        /// First byte, when given.
        start: Option<u64>,
        /// End (exclusive), when given.
        end: Option<u64>,
    },
    /// The indentation block around a line (text files only).
    Block(BlockWindow),
    /// The lines matching a pattern, with context (anything read as text).
    Find(FindWindow),
    /// A rectangle of an image, at native resolution (images only).
    Region(PixelRegion),
}

impl ReadRequest {
    /// A request for `path` with every other field at its default.
    pub fn new(path: impl Into<String>) -> Self {
        ReadRequest { path: path.into(), ..Default::default() }
    }

    /// Parses untrusted JSON text; malformed JSON, a key named twice and every field problem are `INVALID_PARAM`
    /// naming the field and the valid form. A UTF-8 byte-order mark before the JSON is skipped; `null` counts as absent.
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        json::from_text(text)
    }

    /// Reads an untrusted JSON value like [`ReadRequest::from_json`]. A parsed [`Value`] has already lost a key named
    /// twice in one object (serde_json keeps the last): a caller holding the text should pass it to
    /// [`ReadRequest::from_json`], or check it with [`duplicate_keys`](crate::duplicate_keys).
    pub fn from_value(value: &Value) -> Result<Self, ReadError> {
        json::from_value(value)
    }

    /// Validates the fields against each other and the limits, yielding the window to read.
    pub fn window(&self, limits: &Limits) -> Result<Window, ReadError> {
        validate_path(&self.path)?;
        if self.pages.is_some() && self.encoding.is_some() {
            return Err(ReadError::invalid_param(
                "`pages` reads a PDF's or a document's text and `encoding` reads a file as raw text; they cannot be combined",
            )
            .with_hint("send `pages` alone for a PDF, workbook or presentation, or `encoding` alone for text"));
        }
        if let Some(edges) = self.region {
            return self.region_window(edges);
        }
        if self.find.is_some() || self.context.is_some() {
            return self.find_window(limits);
        }
        if self.mode == Some(ReadMode::Block) {
            return self.block_window(limits);
        }
        if let Some(levels) = self.levels {
            return Err(ReadError::invalid_param(format!(
                "`levels` {levels} applies only to block mode, and `mode` is not \"block\""
            ))
            .with_hint(
                "add \"mode\": \"block\" and \"anchor_line\" to read the definition around a line, or remove `levels`",
            ));
        }
        if let Some(anchor) = self.anchor_line {
            return Err(ReadError::invalid_param(format!(
                "`anchor_line` {anchor} applies only to block mode, and `mode` is not \"block\""
            ))
            .with_hint(format!(
                "add \"mode\": \"block\" to read the block around line {anchor}, or send \"offset\": {anchor} (without anchor_line) for lines from there"
            )));
        }
        let byte_mode = self.start_byte.is_some() || self.end_byte.is_some();
        if byte_mode {
            if self.offset.is_some() || self.limit.is_some() {
                return Err(ReadError::invalid_param(
                    "offset/limit (line mode) cannot be combined with start_byte/end_byte (byte mode)",
                )
                .with_hint("send either offset and limit, or start_byte and end_byte"));
            }
            return byte_window(self.start_byte, self.end_byte);
        }
        line_window(self.offset, self.limit, limits).map(Window::Lines)
    }
}

/// Longest path accepted, in bytes: Linux's `PATH_MAX`. Longer ones cannot name a file.
pub const MAX_PATH_BYTES: usize = 4096;

fn validate_path(path: &str) -> Result<(), ReadError> {
    if path.len() > MAX_PATH_BYTES {
        return Err(ReadError::invalid_param(format!(
            "`path` is {} bytes long; no path can be longer than {MAX_PATH_BYTES} bytes",
            path.len()
        ))
        .with_hint("give a shorter path, relative to the workspace root"));
    }
    if path.is_empty() {
        return Err(ReadError::invalid_param("`path` is empty")
            .with_hint("name a file or directory, e.g. \"path\": \"README.md\", or \".\" for the root"));
    }
    if path.contains('\0') {
        return Err(ReadError::invalid_param("`path` contains a NUL character, which no file name can hold")
            .with_hint("remove the NUL character from the path"));
    }
    Ok(())
}

fn line_window(offset: Option<i64>, limit: Option<i64>, limits: &Limits) -> Result<LineWindow, ReadError> {
    let explicit = limit.is_some();
    let offset = offset.unwrap_or(1);
    if offset == 0 {
        return Err(ReadError::invalid_param("`offset` 0 is invalid: lines are numbered from 1").with_hint(
            "use offset=1 for the first line, or a negative offset to count from the end (-1 is the last line)",
        ));
    }
    let (limit, clamped_from) = match limit {
        None => (limits.default_lines.min(limits.max_lines), None),
        Some(n) if n < 1 => {
            return Err(ReadError::invalid_param(format!("`limit` must be at least 1, not {n}"))
                .with_hint(format!("send a limit from 1 to {}", limits.max_lines)));
        }
        Some(n) => {
            let asked = n.unsigned_abs();
            if asked > limits.max_lines { (limits.max_lines, Some(asked)) } else { (asked, None) }
        }
    };
    Ok(LineWindow { offset, limit, clamped_from, explicit_limit: explicit })
}

fn byte_window(start: Option<i64>, end: Option<i64>) -> Result<Window, ReadError> {
    let start = non_negative("start_byte", start)?;
    let end = non_negative("end_byte", end)?;
    if let Some(e) = end
        && e <= start.unwrap_or(0)
    {
        let s = start.unwrap_or(0);
        return Err(ReadError::invalid_range(format!(
            "end_byte {e} must be greater than start_byte {s} (the range is end-exclusive)"
        ))
        .with_hint(format!("send e.g. start_byte={s} end_byte={}", s.saturating_add(4096))));
    }
    Ok(Window::Bytes { start, end })
}

fn non_negative(key: &str, value: Option<i64>) -> Result<Option<u64>, ReadError> {
    match value {
        Some(n) if n < 0 => Err(ReadError::invalid_param(format!("`{key}` must be 0 or more, not {n}"))
            .with_hint("byte offsets count from 0 at the start of the file; to read the end of a file, use a negative line offset such as offset=-100")),
        Some(n) => Ok(Some(n.unsigned_abs())),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<ReadRequest, ReadError> {
        ReadRequest::from_value(&value)
    }

    fn message(value: Value) -> String {
        parse(value).unwrap_err().message
    }

    #[test]
    fn accepts_every_field_and_the_alias() {
        let r = parse(json!({"file_path": "a", "offset": -3, "limit": 5, "encoding": "latin1"})).unwrap();
        assert_eq!(
            r,
            ReadRequest { offset: Some(-3), limit: Some(5), encoding: Some("latin1".into()), ..ReadRequest::new("a") }
        );
        let r = parse(json!({"path": "a", "start_byte": 0, "end_byte": 9, "offset": null})).unwrap();
        assert_eq!((r.start_byte, r.end_byte, r.offset), (Some(0), Some(9), None));
    }

    #[test]
    fn field_errors_name_the_field_and_the_valid_form() {
        let null_typo = message(json!({"PATH": null, "path": ".env"}));
        assert!(
            null_typo.starts_with("unknown field `PATH`;"),
            "a key no field has is refused even when null: {null_typo}"
        );
        let unknown = message(json!({"path": "a", "bogus": 1}));
        assert!(unknown.contains("unknown field `bogus`; valid fields: path, offset"), "{unknown}");
        assert!(unknown.contains("anchor_line, levels, region (and reread, in a session)"), "{unknown}");
        assert!(
            message(json!({"path": "a", "offset": 1.5})).contains("`offset` must be an integer, not the fraction 1.5")
        );
        assert!(
            message(json!({"path": "a", "limit": "10"})).contains("`limit` must be an integer, not the string \"10\"")
        );
        assert!(message(json!({"path": 7})).contains("`path` must be a string"));
        for (request, hint) in [
            (json!({"path": 7}), r#""path": "src/main.rs""#),
            (json!({"file_path": 5}), r#""path": "src/main.rs""#),
            (json!({"path": "x", "encoding": 5}), r#""encoding": "windows-1252""#),
        ] {
            let error = ReadRequest::from_value(&request).unwrap_err();
            assert!(error.hint.as_deref().is_some_and(|h| h.contains(hint)), "{request}: {error:?}");
        }
        assert!(message(json!({"offset": 1})).contains("missing required field `path`"));
        assert!(message(json!({"path": "a", "file_path": "b"})).contains("same field"));
        assert!(message(json!([1])).contains("must be a JSON object, not an array"));
        assert!(ReadRequest::from_json("{").unwrap_err().message.contains("not valid JSON"));
    }

    #[test]
    fn a_key_named_twice_is_refused_naming_it_wherever_it_is() {
        for (text, key) in [
            (r#"{"path": ".env", "path": "a.txt"}"#, "path"),
            (r#"{"path": "a.txt", "offset": 1, "offset": 5}"#, "offset"),
            (r#"{"path": "a.txt", "pa\u0074h": ".env"}"#, "path"),
            (r#"{"path": ".env", "path": null}"#, "path"),
        ] {
            let error = ReadRequest::from_json(text).unwrap_err();
            assert_eq!(error.code, crate::error::ErrorCode::InvalidParam, "{text}");
            let expected = format!("the key `{key}` appears more than once in the request;");
            assert!(error.message.starts_with(&expected), "{text}: {}", error.message);
            assert_eq!(error.hint.as_deref(), Some("send each key once"));
        }
        // Malformed JSON is still named as such, whatever it repeats.
        let broken = ReadRequest::from_json(r#"{"path": "a", "path": "#).unwrap_err();
        assert!(broken.message.contains("not valid JSON"), "{}", broken.message);
    }

    #[test]
    fn a_byte_order_mark_before_the_json_is_skipped() {
        let request = ReadRequest::from_json("\u{feff}{\"path\": \"a.txt\"}").unwrap();
        assert_eq!(request, ReadRequest::new("a.txt"));
        // Only one, and only before the JSON.
        assert!(ReadRequest::from_json("\u{feff}\u{feff}{\"path\": \"a\"}").is_err());
        assert!(ReadRequest::from_json("{\"path\": \"a\"}\u{feff}").is_err());
    }

    #[test]
    fn window_validation() {
        let limits = Limits::default();
        let window = |r: ReadRequest| r.window(&limits);
        let err = window(ReadRequest { offset: Some(0), ..ReadRequest::new("a") }).unwrap_err();
        assert!(err.hint.unwrap().contains("negative offset"));
        assert!(window(ReadRequest { limit: Some(0), ..ReadRequest::new("a") }).is_err());
        assert!(window(ReadRequest::new("")).unwrap_err().message.contains("empty"));
        assert!(window(ReadRequest::new("a\0b")).unwrap_err().message.contains("NUL"));
        let both = ReadRequest { pages: Some("2".into()), encoding: Some("utf-8".into()), ..ReadRequest::new("a.pdf") };
        assert!(window(both).unwrap_err().message.contains("cannot be combined"));
        let long = window(ReadRequest::new("x".repeat(5000))).unwrap_err().message;
        assert!(long.contains("5000 bytes") && long.len() < 200, "{long}");
        let mixed = ReadRequest { offset: Some(2), start_byte: Some(0), ..ReadRequest::new("a") };
        assert!(window(mixed).unwrap_err().message.contains("cannot be combined"));
        let backwards = ReadRequest { start_byte: Some(9), end_byte: Some(3), ..ReadRequest::new("a") };
        assert_eq!(window(backwards).unwrap_err().code, crate::error::ErrorCode::InvalidRange);
        assert!(window(ReadRequest { start_byte: Some(-1), ..ReadRequest::new("a") }).is_err());
        let clamped = window(ReadRequest { limit: Some(1_000_000), ..ReadRequest::new("a") }).unwrap();
        assert_eq!(
            clamped,
            Window::Lines(LineWindow {
                offset: 1,
                limit: limits.max_lines,
                clamped_from: Some(1_000_000),
                explicit_limit: true
            })
        );
        let default = window(ReadRequest::new("a")).unwrap();
        assert_eq!(
            default,
            Window::Lines(LineWindow { offset: 1, limit: 2000, clamped_from: None, explicit_limit: false })
        );
    }
}
