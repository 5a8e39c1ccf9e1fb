//! The result of a `read_many` call: the model text, then an envelope per file and per skipped entry.
//!
//! A separate type from [`ReadResult`] because its shape differs (many files, no single `meta`), but it keeps the
//! contract every result has: `ok`, `kind` (`"many"`) and `output`; a rejected request serializes exactly like a
//! failed `read` (`kind: "error"`, `error`, `error_code`, `hint`).

use crate::error::{ErrorCode, ReadError};
use crate::result::ReadResult;
use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The outcome of one `read_many` call.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadManyResult {
    /// The call ran: every file read, failed or skipped has its entry.
    Many(ManyResult),
    /// The request itself was invalid (or the caller cancelled the call): nothing was read.
    Error(ReadError),
}

impl ReadManyResult {
    /// Whether the call ran (a file that failed does not make the call fail: its section says why).
    pub fn is_ok(&self) -> bool {
        matches!(self, ReadManyResult::Many(_))
    }

    /// The text the model should see. Borrowed, except an error's, which is rendered on each call.
    pub fn output(&self) -> Cow<'_, str> {
        match self {
            ReadManyResult::Many(many) => Cow::Borrowed(&many.output),
            ReadManyResult::Error(e) => Cow::Owned(crate::error::render_error(e)),
        }
    }

    /// The error, when the request was rejected.
    pub fn error(&self) -> Option<&ReadError> {
        match self {
            ReadManyResult::Error(e) => Some(e),
            ReadManyResult::Many(_) => None,
        }
    }
}

/// What a `read_many` call read and left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManyResult {
    /// Every file's section (`==> path <==` and its output), the skipped list, and the summary line.
    pub output: String,
    /// The files shown, in output order.
    pub files: Vec<ManyFile>,
    /// What was not shown, and why, in request order.
    pub skipped: Vec<Skipped>,
    /// Counts and sizes of the whole call.
    pub meta: ManyMeta,
}

/// One file shown: the path of its header and its own `read` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ManyFile {
    /// The path as its header shows it (as asked, or as a glob matched it): what a follow-up `read` takes.
    pub path: String,
    /// The file's result. Serialized without its `output` (that text is the section) and without directory
    /// `entries` (the listing is in the text).
    pub result: ReadResult,
    /// What was read (for a session's ledger); not serialized. `None` outside a session.
    pub seen: Option<crate::engine::Seen>,
}

/// Something not shown: a file, or a glob's matches, with the reason and the call that gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The file, when the entry is one file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The glob (or the request entry), when the entry stands for several files or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Why it was not shown.
    pub reason: String,
    /// The error class, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<ErrorCode>,
    /// Files this entry stands for (0 for a glob that matched nothing).
    pub count: u64,
    /// The exact call that gets it: a tool name and its JSON arguments, e.g. `read {"path":"logo.png"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl Skipped {
    /// What its line in the skipped list states.
    pub fn as_skip(&self) -> crate::render::many::Skip<'_> {
        let what = self.path.as_deref().or(self.pattern.as_deref()).unwrap_or_default();
        crate::render::many::Skip { what, reason: &self.reason, next: self.next.as_deref() }
    }
}

/// Counts and sizes of a `read_many` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ManyMeta {
    /// Files shown (each with its section), failures included.
    pub files_read: usize,
    /// Of those, the ones whose section is an error.
    pub files_failed: usize,
    /// Files not shown (the `count`s of `skipped`, withheld matches excluded).
    pub files_skipped: u64,
    /// Glob matches withheld unnamed: denied by the read policy, or leading outside the roots.
    pub withheld: u64,
    /// Length of `output` in bytes.
    pub bytes: usize,
    /// The output cap the whole `output` stays within.
    pub cap: usize,
    /// Files read at most.
    pub max_files: usize,
    /// The `max_files` asked for, when it was clamped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_files_clamped_from: Option<u64>,
    /// Whether a glob walk stopped early (at its entry or time bound) or could not enter part of the tree (a path
    /// beyond `PATH_MAX`, a folder it may not list), so that matches may be missing; the skipped list says why.
    pub walk_stopped_early: bool,
    /// With `find`: files searched; their sections show only when they match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_searched: Option<u64>,
    /// With `find`: files searched without a match (not shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_without_match: Option<u64>,
    /// With `find`: glob matches that are not text (binary data, images), not searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_not_text: Option<u64>,
}

impl Serialize for ManyFile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(mut fields) = serde_json::to_value(&self.result).map_err(S::Error::custom)? else {
            return Err(S::Error::custom("a read result serializes to an object"));
        };
        fields.remove("output");
        fields.remove("entries");
        let mut envelope = Map::new();
        envelope.insert("path".to_string(), Value::String(self.path.clone()));
        envelope.extend(fields);
        envelope.serialize(serializer)
    }
}

#[derive(Serialize)]
struct Tagged<'a> {
    ok: bool,
    kind: &'static str,
    #[serde(flatten)]
    many: &'a ManyResult,
}

impl Serialize for ReadManyResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ReadManyResult::Many(many) => Tagged { ok: true, kind: "many", many }.serialize(serializer),
            ReadManyResult::Error(e) => ReadResult::Error(e.clone()).serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{TextMeta, TextResult};

    #[test]
    fn a_call_serializes_with_ok_kind_and_envelopes_without_duplicated_text() {
        let text =
            TextResult { output: "1: a\n(…)".into(), meta: TextMeta { path: "a".into(), ..Default::default() } };
        let many = ManyResult {
            output: "==> a <==\n1: a\n(…)".into(),
            files: vec![ManyFile { path: "./a".into(), result: ReadResult::Text(text), seen: None }],
            skipped: vec![Skipped {
                path: Some("logo.png".into()),
                pattern: None,
                reason: "PNG image".into(),
                error_code: None,
                count: 1,
                next: Some(r#"read {"path":"logo.png"}"#.into()),
            }],
            meta: ManyMeta { files_read: 1, files_skipped: 1, cap: 51200, ..Default::default() },
        };
        let v = serde_json::to_value(ReadManyResult::Many(many)).unwrap();
        assert_eq!((v["ok"].as_bool(), v["kind"].as_str()), (Some(true), Some("many")));
        assert_eq!(v["files"][0]["path"], "./a");
        assert_eq!(v["files"][0]["kind"], "text");
        assert_eq!(v["files"][0]["meta"]["path"], "a");
        assert!(v["files"][0].get("output").is_none(), "{v}");
        assert_eq!(v["skipped"][0]["next"], r#"read {"path":"logo.png"}"#);
        assert!(v["skipped"][0].get("pattern").is_none());
        assert_eq!(v["meta"]["cap"], 51200);
    }

    #[test]
    fn a_rejected_request_serializes_like_a_failed_read() {
        let result = ReadManyResult::Error(ReadError::invalid_param("`paths` is empty"));
        let v = serde_json::to_value(&result).unwrap();
        assert_eq!((v["ok"].as_bool(), v["kind"].as_str()), (Some(false), Some("error")));
        assert_eq!(v["error_code"], "INVALID_PARAM");
        assert_eq!(v["output"], "INVALID_PARAM: `paths` is empty");
        assert!(!result.is_ok() && result.error().is_some());
    }
}
