//! `find`'s part of a request: the pattern, compiled once and bounded, and the validated window of a search.

use super::{ReadRequest, Window, line_window, truncate_for_message};
use crate::error::ReadError;
use crate::limits::Limits;
use regex::bytes::{Regex, RegexBuilder};

/// Matches shown when the request names no `limit`.
pub const DEFAULT_MATCHES: u64 = 50;
/// Lines of context around each match when the request names none.
pub const DEFAULT_CONTEXT: u64 = 2;
/// The most context lines a request may ask for on each side.
pub const MAX_CONTEXT: i64 = 20;
/// The longest pattern taken, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// The most memory a compiled pattern may take: a counted repetition (`a{1000}{1000}`) that would need more is
/// refused rather than built.
const MAX_COMPILED_BYTES: usize = 4 << 20;

/// A search, after validation: the pattern, where it starts, how many matches to show, and the context around them.
#[derive(Debug, Clone)]
pub struct FindWindow {
    /// The pattern as the request gave it (the next call repeats it).
    pub pattern: String,
    /// The pattern compiled; it runs on each line's text (decoded to UTF-8 first for other encodings).
    pub regex: Regex,
    /// The same pattern unable to match across a line feed, to find among many lines of UTF-8 text those that may
    /// match; absent for a pattern anchored to the text's start or end (see `line_pattern`).
    pub line_pattern: Option<super::line_pattern::LinePattern>,
    /// The line the search starts at, from 1, or negative from the end (never 0).
    pub offset: i64,
    /// Matching lines shown at most.
    pub limit: u64,
    /// The limit the request asked for, when it was clamped.
    pub clamped_from: Option<u64>,
    /// Whether the request named a limit (then the next call repeats it).
    pub explicit_limit: bool,
    /// Lines shown before and after each match.
    pub context: u64,
}

impl PartialEq for FindWindow {
    fn eq(&self, other: &Self) -> bool {
        (&self.pattern, self.offset, self.limit, self.clamped_from, self.explicit_limit, self.context)
            == (&other.pattern, other.offset, other.limit, other.clamped_from, other.explicit_limit, other.context)
    }
}

impl Eq for FindWindow {}

impl FindWindow {
    /// The pattern as calls and footers quote it: between double quotes as the request's value holds it, so what is
    /// shown is what to send again; JSON-escaped only when it holds a double quote or a control character.
    pub fn quoted(&self) -> String {
        if self.pattern.contains(|c: char| c == '"' || c.is_control()) {
            serde_json::Value::String(self.pattern.clone()).to_string()
        } else {
            format!("\"{}\"", self.pattern)
        }
    }

    /// The fields that repeat the search in a next call, before its `offset`: `find="…"` ([`FindWindow::quoted`]),
    /// and the context when it is not the default.
    pub fn call_fields(&self) -> String {
        let quoted = self.quoted();
        match self.context {
            DEFAULT_CONTEXT => format!("find={quoted} "),
            context => format!("find={quoted} context={context} "),
        }
    }

    /// The next call's `offset` and `limit` after the matches shown, the limit repeated when one was asked.
    pub fn next_window(&self, next_offset: u64) -> String {
        if self.explicit_limit {
            format!("offset={next_offset} limit={}", self.limit)
        } else {
            format!("offset={next_offset}")
        }
    }
}

impl ReadRequest {
    /// `find`'s own checks: a pattern that compiles within bounds, a context in range, and no other window.
    pub(super) fn find_window(&self, limits: &Limits) -> Result<Window, ReadError> {
        let Some(pattern) = &self.find else {
            return Err(ReadError::invalid_param("`context` applies only with `find`")
                .with_hint("add \"find\" with the pattern to search for, or remove `context`"));
        };
        let conflict = if self.mode == Some(super::ReadMode::Block) || self.anchor_line.is_some() {
            Some("`mode` \"block\" and `anchor_line`")
        } else if self.start_byte.is_some() || self.end_byte.is_some() {
            Some("`start_byte`/`end_byte`")
        } else {
            None
        };
        if let Some(field) = conflict {
            return Err(ReadError::invalid_param(format!("{field} cannot be combined with `find`")).with_hint(
                format!(
                    "remove {field}: `offset` and `limit` choose where the search starts and how many matches show"
                ),
            ));
        }
        let regex = compile(pattern)?;
        let line_pattern = super::line_pattern::compile(pattern, MAX_COMPILED_BYTES);
        let context = match self.context {
            None => DEFAULT_CONTEXT,
            Some(n @ 0..=MAX_CONTEXT) => n.unsigned_abs(),
            Some(n) => {
                return Err(ReadError::invalid_param(format!("`context` must be from 0 to {MAX_CONTEXT}, not {n}"))
                    .with_hint(format!("send \"context\": {DEFAULT_CONTEXT}, or 0 for the matching lines alone")));
            }
        };
        let lines = line_window(self.offset, self.limit, limits)?;
        let limit = if lines.explicit_limit { lines.limit } else { DEFAULT_MATCHES.min(lines.limit) };
        Ok(Window::Find(FindWindow {
            pattern: pattern.clone(),
            regex,
            line_pattern,
            offset: lines.offset,
            limit,
            clamped_from: lines.clamped_from,
            explicit_limit: lines.explicit_limit,
            context,
        }))
    }
}

/// Compiles a pattern, or says what is wrong with it.
fn compile(pattern: &str) -> Result<Regex, ReadError> {
    if pattern.is_empty() {
        return Err(ReadError::invalid_param("`find` is empty: there is nothing to search for")
            .with_hint("send a pattern, e.g. \"find\": \"fn main\""));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(ReadError::invalid_param(format!(
            "`find` is {} bytes long; patterns of at most {MAX_PATTERN_BYTES} bytes are taken",
            pattern.len()
        ))
        .with_hint("search for a shorter, distinctive part"));
    }
    RegexBuilder::new(pattern).size_limit(MAX_COMPILED_BYTES).build().map_err(|error| {
        let why = match &error {
            regex::Error::CompiledTooBig(_) => "it would compile to more than 4 MiB (a large counted repetition?)".to_string(),
            // A syntax error's text draws the pattern with a caret under the fault; its last line names the fault.
            other => other.to_string().lines().last().unwrap_or_default().trim_start_matches("error: ").to_string(),
        };
        let quoted = serde_json::Value::String(truncate_for_message(pattern)).to_string();
        ReadError::invalid_param(format!("`find` {quoted} is not a valid pattern: {why}"))
            .with_hint("write it in Rust regex syntax (as ripgrep); to match a character such as ( [ . * + ? literally, put a backslash before it")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn window(request: serde_json::Value) -> FindWindow {
        match ReadRequest::from_value(&request).unwrap().window(&Limits::default()).unwrap() {
            Window::Find(find) => find,
            other => panic!("not a search: {other:?}"),
        }
    }

    #[test]
    fn calls_repeat_the_pattern_as_sent_and_escape_it_only_when_it_holds_a_quote() {
        let plain = window(json!({"path": "a", "find": r"a\.b (x)"}));
        assert_eq!(plain.call_fields(), r#"find="a\.b (x)" "#);
        let quote = window(json!({"path": "a", "find": r#"say "hi""#, "context": 0}));
        assert_eq!(quote.call_fields(), r#"find="say \"hi\"" context=0 "#);
        assert_eq!((plain.limit, plain.context, plain.offset), (DEFAULT_MATCHES, DEFAULT_CONTEXT, 1));
        let limited = window(json!({"path": "a", "find": "x", "limit": 7, "offset": -20}));
        assert_eq!((limited.limit, limited.offset, limited.next_window(9)), (7, -20, "offset=9 limit=7".to_string()));
    }
}
