//! Block mode's part of a request: the `mode` field's values, and the validated window of a block read.

use super::{LineWindow, ReadRequest, Window, line_window, truncate_for_message};
use crate::error::ReadError;
use crate::limits::Limits;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What a request reads: a window of lines, or the indentation block around one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReadMode {
    /// A window of lines from `offset` (the default).
    Lines,
    /// The indentation block around `anchor_line`.
    Block,
}

impl ReadMode {
    /// Every mode, as the `mode` field spells it.
    pub const NAMES: &[&str] = &["lines", "block"];

    /// The mode spelled `name`, exactly as the schema gives it; anything else is `INVALID_PARAM` listing the modes.
    pub fn parse(name: &str) -> Result<ReadMode, ReadError> {
        match name {
            "lines" => Ok(ReadMode::Lines),
            "block" => Ok(ReadMode::Block),
            _ => Err(ReadError::invalid_param(format!(
                "unknown `mode` \"{}\"; valid modes: {}",
                truncate_for_message(name),
                ReadMode::NAMES.join(", ")
            ))
            .with_hint(
                r#"send "mode": "block" with "anchor_line" for the block around a line, or omit `mode` for a line window"#,
            )),
        }
    }
}

/// A plain string enum, inline: some model APIs reject `$ref` in tool schemas, and per-variant descriptions would only
/// repeat the field's own.
impl JsonSchema for ReadMode {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ReadMode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": ReadMode::NAMES})
    }
}

/// A block-mode request, after validation: the anchor, and the cap on the lines shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockWindow {
    /// 1-based line whose enclosing block is wanted.
    pub anchor_line: u64,
    /// Lines shown at most (the request's limit, clamped, or the default).
    pub limit: u64,
    /// The limit the request asked for, when it was clamped.
    pub clamped_from: Option<u64>,
    /// Whether the request named a limit (then the calls the result suggests repeat it).
    pub explicit_limit: bool,
    /// Which definition around the anchor: 1 the nearest.
    pub levels: u32,
}

/// The most `levels` a request may ask for: deeper than any real nesting.
pub const MAX_LEVELS: i64 = 64;

impl BlockWindow {
    /// The limit applied, when the requested one was clamped to it.
    pub fn clamped_to(&self) -> Option<u64> {
        self.clamped_from.map(|_| self.limit)
    }

    /// The line window that shows `len` lines of a block starting at line `start`, at most `limit` of them.
    pub fn lines_of(&self, start: u64, len: u64) -> LineWindow {
        LineWindow {
            offset: i64::try_from(start).unwrap_or(i64::MAX),
            limit: self.limit.min(len.max(1)),
            clamped_from: self.clamped_from,
            explicit_limit: true,
        }
    }
}

impl ReadRequest {
    /// Block mode's own checks: an anchor, and no other way of placing the window.
    pub(super) fn block_window(&self, limits: &Limits) -> Result<Window, ReadError> {
        let example = r#"{"path": "src/app.py", "mode": "block", "anchor_line": 812}"#;
        let Some(anchor) = self.anchor_line else {
            return Err(ReadError::invalid_param(
                "`mode` \"block\" needs `anchor_line`: the line whose enclosing block to return",
            )
            .with_hint(format!("send e.g. {example}")));
        };
        if anchor < 1 {
            return Err(ReadError::invalid_param(format!(
                "`anchor_line` must be at least 1 (lines are numbered from 1), not {anchor}"
            ))
            .with_hint("send the number of a line in the file, e.g. \"anchor_line\": 1 for the first line"));
        }
        let conflict = if self.offset.is_some() {
            Some("`offset`")
        } else if self.start_byte.is_some() || self.end_byte.is_some() {
            Some("`start_byte`/`end_byte`")
        } else if self.pages.is_some() {
            Some("`pages`")
        } else {
            None
        };
        if let Some(field) = conflict {
            return Err(ReadError::invalid_param(format!(
                "{field} cannot be combined with `mode` \"block\": the block decides which lines are shown"
            ))
            .with_hint(format!(
                "remove {field} (`limit` may stay, to cap the lines shown), or remove `mode` and `anchor_line` for a line or byte window"
            )));
        }
        let levels = match self.levels {
            None => 1,
            Some(levels @ 1..=MAX_LEVELS) => levels as u32,
            Some(levels) => {
                return Err(ReadError::invalid_param(format!("`levels` must be from 1 to {MAX_LEVELS}, not {levels}"))
                    .with_hint(
                        "send \"levels\": 1 for the nearest definition around the line, 2 for the one around that",
                    ));
            }
        };
        let lines = line_window(None, self.limit, limits)?;
        Ok(Window::Block(BlockWindow {
            anchor_line: anchor.unsigned_abs(),
            limit: lines.limit,
            clamped_from: lines.clamped_from,
            explicit_limit: lines.explicit_limit,
            levels,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn window(request: serde_json::Value) -> Result<Window, ReadError> {
        ReadRequest::from_value(&request)?.window(&Limits::default())
    }

    /// The message and hint of a rejected request, joined, and its code.
    fn rejection(request: serde_json::Value) -> (crate::error::ErrorCode, String) {
        let error = window(request).unwrap_err();
        (error.code, format!("{} / {}", error.message, error.hint.unwrap_or_default()))
    }

    #[test]
    fn a_block_request_becomes_a_block_window() {
        let plain = window(json!({"path": "a.py", "mode": "block", "anchor_line": 812})).unwrap();
        let expected =
            BlockWindow { anchor_line: 812, limit: 2000, clamped_from: None, explicit_limit: false, levels: 1 };
        assert_eq!(plain, Window::Block(expected));
        let capped = window(json!({"path": "a.py", "mode": "block", "anchor_line": 3, "limit": 50_000})).unwrap();
        let Window::Block(capped) = capped else { panic!("not a block window: {capped:?}") };
        assert_eq!((capped.limit, capped.clamped_to(), capped.explicit_limit), (10_000, Some(10_000), true));
        let lines = window(json!({"path": "a.py", "mode": "lines", "offset": 4})).unwrap();
        assert!(matches!(lines, Window::Lines(LineWindow { offset: 4, .. })), "{lines:?}");
    }

    #[test]
    fn the_window_of_a_block_starts_at_it_and_shows_at_most_the_limit() {
        let block = BlockWindow { anchor_line: 9, limit: 20, clamped_from: None, explicit_limit: false, levels: 1 };
        assert_eq!((block.lines_of(5, 8).offset, block.lines_of(5, 8).limit), (5, 8));
        assert_eq!(block.lines_of(5, 300).limit, 20);
    }

    #[test]
    fn every_misuse_names_the_problem_and_the_fix() {
        let cases = [
            (json!({"path": "a", "mode": "block"}), ["needs `anchor_line`", "\"anchor_line\": 812"]),
            (json!({"path": "a", "anchor_line": 5}), ["applies only to block mode", "add \"mode\": \"block\""]),
            (json!({"path": "a", "mode": "lines", "anchor_line": 5}), ["applies only to block mode", "\"offset\": 5"]),
            (json!({"path": "a", "mode": "block", "anchor_line": 0}), ["at least 1", "not 0"]),
            (
                json!({"path": "a", "mode": "block", "anchor_line": 5, "offset": 2}),
                ["`offset` cannot", "remove `offset`"],
            ),
            (
                json!({"path": "a", "mode": "block", "anchor_line": 5, "start_byte": 0}),
                ["`start_byte`/`end_byte` cannot", "remove `start_byte`/`end_byte`"],
            ),
            (
                json!({"path": "a", "mode": "block", "anchor_line": 5, "pages": "2"}),
                ["`pages` cannot", "remove `pages`"],
            ),
            (
                json!({"path": "a", "mode": "block", "anchor_line": 5, "limit": 0}),
                ["`limit` must be at least 1", "from 1"],
            ),
        ];
        for (request, [problem, fix]) in cases {
            let (code, text) = rejection(request.clone());
            assert_eq!(code, crate::error::ErrorCode::InvalidParam, "{request}");
            assert!(text.contains(problem) && text.contains(fix), "{request}: {text}");
        }
    }

    #[test]
    fn mode_must_be_one_of_the_named_modes() {
        let message = |value: serde_json::Value| ReadRequest::from_value(&value).unwrap_err();
        let unknown = message(json!({"path": "a", "mode": "blocks"}));
        assert!(unknown.message.contains("unknown `mode` \"blocks\"; valid modes: lines, block"), "{unknown}");
        assert!(unknown.hint.unwrap().contains("\"mode\": \"block\" with \"anchor_line\""));
        let typed = message(json!({"path": "a", "mode": 1}));
        assert!(typed.message.contains("`mode` must be a string, not a number"), "{typed}");
        let fraction = message(json!({"path": "a", "mode": "block", "anchor_line": 2.5}));
        assert!(fraction.message.contains("`anchor_line` must be an integer, not the fraction 2.5"), "{fraction}");
    }
}
