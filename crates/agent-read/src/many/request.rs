//! The `read_many` request: several paths or globs in one call.
//!
//! Like [`ReadRequest`], [`ReadManyRequest`] is the single source of its tool's parameter schema and of its JSON, and
//! untrusted JSON goes through [`ReadManyRequest::from_json`] (or [`ReadManyRequest::from_value`]), whose every error
//! names the field (down to the entry: `paths[2]`) and the valid form.

use crate::error::ReadError;
use crate::limits::Limits;
use crate::request::json;
use crate::request::{MAX_PATH_BYTES, ReadRequest, truncate_for_message};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Entries `paths` may hold at most.
pub const MAX_PATHS: usize = 200;

/// Files read when a request gives no `max_files`.
pub const DEFAULT_MAX_FILES: usize = 50;

/// Largest `max_files` honoured; larger values are clamped to it and the clamp is reported.
pub const MAX_FILES: usize = 200;

const EXAMPLE: &str = r#"send e.g. {"paths": ["src/main.rs", "docs/*.md"]}"#;

/// Several files in one call. Field docs are what the model sees in the tool schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadManyRequest {
    /// Files, directories or globs to read (1 to 200 entries), each relative to the workspace root or absolute
    /// inside it. A glob (`*`, `?`, `[abc]`, `{a,b}`; `**` crosses directories), e.g. "src/**/*.rs", reads every
    /// matching file, sorted by path.
    #[serde(deserialize_with = "paths")]
    #[schemars(length(min = 1, max = 200))]
    pub paths: Vec<String>,
    /// Lines (or directory entries) per file, at least 1. Default 2000; larger values are clamped.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "limit")]
    #[schemars(range(min = 1))]
    pub limit: Option<i64>,
    /// A regular expression to search every file for (as `read`'s `find`): each file's section shows only its
    /// matching lines with their numbers and context, files without a match are counted in the summary, and `limit`
    /// is the matches shown per file (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "find")]
    pub find: Option<String>,
    /// With `find`: lines shown before and after each match, 0 to 20. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "context")]
    #[schemars(range(min = 0, max = 20))]
    pub context: Option<i64>,
    /// Files read at most, glob matches included. Default 50 (200 with `find`); at most 200 (larger values are
    /// clamped).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "max_files")]
    #[schemars(range(min = 1))]
    pub max_files: Option<i64>,
}

impl json::JsonRequest for ReadManyRequest {
    const SYNTAX_HINT: &'static str = EXAMPLE;
    const EXAMPLE: &'static str = EXAMPLE;
    const REQUIRED_FOR: &'static str = "it lists the files, directories or globs to read";

    fn unknown_field(key: &str, valid: &[&str]) -> ReadError {
        let hint = if key == "path" || key == "file_path" {
            r#"read_many takes `paths`, a list: {"paths": ["src/main.rs"]}; for one file the `read` tool is enough"#
        } else {
            "remove the field or correct its name"
        };
        ReadError::invalid_param(format!("unknown field `{key}`; valid fields: {}", valid.join(", "))).with_hint(hint)
    }
}

/// `paths`: an array of strings, each refused by its index when it is not one.
fn paths<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    json::field(d, |value| {
        let Value::Array(items) = value else {
            let got = json::type_name(value);
            return Err(
                ReadError::invalid_param(format!("`paths` must be an array of strings, not {got}")).with_hint(EXAMPLE)
            );
        };
        let entry = |(index, item): (usize, &Value)| {
            json::string(&format!("paths[{index}]"), item).map_err(|e| e.with_hint(EXAMPLE))
        };
        items.iter().enumerate().map(entry).collect()
    })
}

fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    json::field(d, |value| json::integer("limit", value).map(Some))
}

fn find<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    crate::request::fields::find(d)
}

fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    crate::request::fields::context(d)
}

fn max_files<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    json::field(d, |value| json::integer("max_files", value).map(Some))
}

/// A request found valid: how many files it may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Files read at most.
    pub max_files: usize,
    /// The `max_files` asked for, when it was clamped to [`MAX_FILES`].
    pub clamped_from: Option<u64>,
}

impl ReadManyRequest {
    /// A request for `paths` with every other field at its default.
    pub fn new(paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ReadManyRequest { paths: paths.into_iter().map(Into::into).collect(), ..Default::default() }
    }

    /// Parses untrusted JSON text; malformed JSON, a key named twice and every field problem are `INVALID_PARAM`
    /// naming the field and the valid form. A UTF-8 byte-order mark before the JSON is skipped; `null` counts as absent.
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        json::from_text(text)
    }

    /// Reads an untrusted JSON value like [`ReadManyRequest::from_json`]; it has already lost a key named twice (see
    /// [`ReadRequest::from_value`]).
    pub fn from_value(value: &Value) -> Result<Self, ReadError> {
        json::from_value(value)
    }

    /// Validates the request against the limits: the entries, the per-file `limit`, and `max_files`.
    pub fn check(&self, limits: &Limits) -> Result<Checked, ReadError> {
        if self.paths.is_empty() {
            return Err(ReadError::invalid_param("`paths` is empty; it needs at least one file, directory or glob")
                .with_hint(EXAMPLE));
        }
        if self.paths.len() > MAX_PATHS {
            return Err(ReadError::invalid_param(format!(
                "`paths` has {} entries; at most {MAX_PATHS} are accepted",
                self.paths.len()
            ))
            .with_hint("name a directory's files with one glob (e.g. \"src/**/*.rs\"), or split the call"));
        }
        for (index, path) in self.paths.iter().enumerate() {
            check_entry(index, path)?;
        }
        // The per-file fields are checked once here rather than failing every file alike.
        self.file_request(".").window(limits)?;
        let (max_files, clamped_from) = match self.max_files {
            None if self.find.is_some() => (MAX_FILES, None),
            None => (DEFAULT_MAX_FILES, None),
            Some(n) if n < 1 => {
                return Err(ReadError::invalid_param(format!("`max_files` must be at least 1, not {n}"))
                    .with_hint(format!("send a max_files from 1 to {MAX_FILES}, or omit it for {DEFAULT_MAX_FILES}")));
            }
            Some(n) => match usize::try_from(n) {
                Ok(n) if n <= MAX_FILES => (n, None),
                _ => (MAX_FILES, Some(n.unsigned_abs())),
            },
        };
        Ok(Checked { max_files, clamped_from })
    }

    /// The `read` request for one file of this call: its path with this call's per-file `limit`, and its search.
    pub fn file_request(&self, path: &str) -> ReadRequest {
        ReadRequest { limit: self.limit, find: self.find.clone(), context: self.context, ..ReadRequest::new(path) }
    }
}

fn check_entry(index: usize, path: &str) -> Result<(), ReadError> {
    let problem = if path.is_empty() {
        "is empty".to_string()
    } else if path.contains('\0') {
        "contains a NUL character, which no file name can hold".to_string()
    } else if path.len() > MAX_PATH_BYTES {
        format!("is {} bytes long; no path can be longer than {MAX_PATH_BYTES} bytes", path.len())
    } else if let Some(Err(why)) = glob_bounds(path) {
        return Err(ReadError::invalid_param(format!(
            "`paths[{index}]` ({}) is a glob too complex to match: {why}",
            shown_entry(path)
        )));
    } else {
        return Ok(());
    };
    Err(ReadError::invalid_param(format!("`paths[{index}]` ({}) {problem}", shown_entry(path)))
        .with_hint("name a file, a directory or a glob, e.g. \"README.md\", \".\" or \"src/*.rs\""))
}

/// Whether a glob entry keeps within the complexity bounds (`None` for an entry that is no glob).
fn glob_bounds(entry: &str) -> Option<Result<(), String>> {
    let pattern = super::glob::is_glob(entry).then(|| super::glob::pattern_part(entry)).flatten()?;
    Some(crate::policy::bounds::check(&pattern))
}

/// An entry as quoted in an error: short, and without control characters.
fn shown_entry(path: &str) -> String {
    let short = truncate_for_message(path);
    format!("\"{}\"", short.replace(|c: char| c.is_control(), "\u{FFFD}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<ReadManyRequest, ReadError> {
        ReadManyRequest::from_value(&value)
    }

    fn message(value: Value) -> String {
        match parse(value).and_then(|r| r.check(&Limits::default()).map(|_| r)) {
            Ok(r) => panic!("expected an error, got {r:?}"),
            Err(e) => e.message,
        }
    }

    #[test]
    fn accepts_every_field_and_treats_null_as_absent() {
        let r = parse(json!({"paths": ["a", "src/*.rs"], "limit": 5, "max_files": 3})).unwrap();
        assert_eq!(
            r,
            ReadManyRequest { limit: Some(5), max_files: Some(3), ..ReadManyRequest::new(["a", "src/*.rs"]) }
        );
        let r = parse(json!({"paths": ["a"], "limit": null})).unwrap();
        assert_eq!(r.limit, None);
        assert_eq!(r.file_request("x"), ReadRequest::new("x"));
    }

    #[test]
    fn errors_name_the_field_or_the_entry() {
        assert_eq!(
            message(json!({"paths": ["a"], "bogus": 1})),
            "unknown field `bogus`; valid fields: paths, limit, find, context, max_files"
        );
        let single = parse(json!({"path": "a"})).unwrap_err();
        assert!(single.hint.unwrap().contains("`paths`, a list"));
        assert_eq!(message(json!({"paths": "a"})), "`paths` must be an array of strings, not a string");
        assert_eq!(message(json!({"paths": ["a", 7]})), "`paths[1]` must be a string, not a number");
        assert!(message(json!({"limit": 1})).starts_with("missing required field `paths`"));
        assert!(message(json!({"paths": []})).starts_with("`paths` is empty"));
        assert_eq!(message(json!({"paths": ["a", ""]})), "`paths[1]` (\"\") is empty");
        assert!(message(json!({"paths": ["a\u{0}b"]})).contains("`paths[0]` (\"a\u{FFFD}b\") contains a NUL"));
        assert!(message(json!({"paths": ["a"], "limit": "3"})).contains("`limit` must be an integer"));
        assert!(message(json!({"paths": ["a"], "limit": 0})).contains("`limit` must be at least 1"));
        assert!(message(json!({"paths": ["a"], "max_files": 0})).contains("`max_files` must be at least 1, not 0"));
        assert!(message(json!([1])).contains("must be a JSON object, not an array"));
        let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("f{i}")).collect();
        assert!(message(json!({ "paths": many })).contains("has 201 entries; at most 200"));
        let long = message(json!({"paths": ["x".repeat(5000)]}));
        assert!(long.contains("5000 bytes") && long.len() < 200, "{long}");
        let nested = format!("src/{}a{}", "{".repeat(250), "}".repeat(250));
        let complex = message(json!({"paths": ["a", nested]}));
        assert!(complex.starts_with("`paths[1]` (\"src/{{{"), "{complex}");
        assert!(
            complex.contains("is a glob too complex to match: the glob nests `{…}` 250 deep; at most 8"),
            "{complex}"
        );
        let long_base = format!("/{}/*.rs", "d".repeat(2000));
        assert!(
            parse(json!({"paths": [long_base]})).unwrap().check(&Limits::default()).is_ok(),
            "only the glob counts"
        );
    }

    #[test]
    fn a_key_named_twice_is_refused_and_a_byte_order_mark_is_skipped() {
        let twice = ReadManyRequest::from_json(r#"{"paths": [".env"], "paths": ["a.txt"]}"#).unwrap_err();
        assert!(twice.message.starts_with("the key `paths` appears more than once in the request;"), "{twice:?}");
        let limit = ReadManyRequest::from_json(r#"{"paths": ["a"], "limit": 1, "limit": 9}"#).unwrap_err();
        assert!(limit.message.starts_with("the key `limit` appears more than once"), "{limit:?}");
        let bom = ReadManyRequest::from_json("\u{feff}{\"paths\": [\"a\"]}").unwrap();
        assert_eq!(bom, ReadManyRequest::new(["a"]));
    }

    #[test]
    fn max_files_defaults_and_clamps() {
        let limits = Limits::default();
        let check = |max_files| ReadManyRequest { max_files, ..ReadManyRequest::new(["a"]) }.check(&limits).unwrap();
        assert_eq!(check(None), Checked { max_files: DEFAULT_MAX_FILES, clamped_from: None });
        assert_eq!(check(Some(7)), Checked { max_files: 7, clamped_from: None });
        assert_eq!(check(Some(5000)), Checked { max_files: MAX_FILES, clamped_from: Some(5000) });
    }
}
