//! Process-level tests of the `agent-read` command line against the contract (docs/contract.md).
//!
//! Every test builds its own workspace in a temporary directory — `<tmp>/work` is the root, `<tmp>` itself is
//! "outside" — and runs the real binary with `--root <tmp>/work` (and that directory as its working directory), so
//! nothing depends on the repository's files. Paths shown by the tool are relative to the root, which keeps the
//! snapshots (`tests/snapshots/cli__*.snap`) free of temporary paths.

mod human;

use crate::common::{Bin, Ws, envelope, output, parse_one_json};
use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The default output cap: 50 KiB, line prefixes and footer included.
const CAP: usize = 50 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// Helpers: a workspace on disk, and ways to run the binary against it.
// ---------------------------------------------------------------------------------------------------------------

impl Ws {
    /// Writes a TOML configuration file outside the root; returns its path.
    fn config(&self, toml: &str) -> PathBuf {
        self.outside_file("agent-read.toml", toml)
    }

    /// Runs a plain-mode read (`agent-read PATH [flags]`) that must succeed; returns standard output without the
    /// final newline the program adds.
    fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "args {args:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "unexpected stderr: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        text.strip_suffix('\n').expect("output ends with a newline").to_string()
    }

    /// Runs `agent-read PATH [flags] --json`; must exit 0 and print one JSON result.
    fn run_json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).arg("--json").output().expect("run");
        assert_eq!(out.status.code(), Some(0), "args {args:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        parse_one_json(&out.stdout)
    }

    /// Sends one JSON request on standard input; must exit 0 and print one JSON result.
    fn request(&self, request: Value) -> Value {
        self.request_text(&request.to_string())
    }

    /// Sends raw text on standard input; must exit 0 and print one JSON result.
    fn request_text(&self, text: &str) -> Value {
        let out = self.cmd().write_stdin(text).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "request {text}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        parse_one_json(&out.stdout)
    }

    /// Reads `path` with extra request fields through standard input.
    fn read(&self, path: &str, fields: Value) -> Value {
        let mut request = json!({ "path": path });
        if let (Some(obj), Value::Object(extra)) = (request.as_object_mut(), fields) {
            obj.extend(extra);
        }
        self.request(request)
    }
}

/// The last line of an output: the footer.
fn footer(out: &str) -> &str {
    out.rsplit('\n').next().expect("a footer line")
}

/// Every line of an output except the footer.
fn body(out: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = out.split('\n').collect();
    lines.pop();
    lines
}

/// Asserts a successful text result and returns its meta.
fn text_meta(v: &Value) -> &Value {
    assert_eq!(v["ok"], true, "expected success: {v}");
    assert_eq!(v["kind"], "text", "expected a text result: {v}");
    &v["meta"]
}

/// Asserts an error result with `code` and the envelope every error has; returns the error message.
fn assert_error<'a>(v: &'a Value, code: &str) -> &'a str {
    assert_eq!(v["ok"], false, "expected an error: {v}");
    assert_eq!(v["kind"], "error", "{v}");
    assert_eq!(v["error_code"], code, "{v}");
    let message = v["error"].as_str().expect("error message");
    assert!(!message.is_empty());
    assert!(output(v).starts_with(&format!("{code}: {message}")), "output starts with the code and message: {v}");
    message
}

fn hint(v: &Value) -> &str {
    v["hint"].as_str().unwrap_or_else(|| panic!("no hint in {v}"))
}

fn suggestions(v: &Value) -> Vec<&str> {
    v["suggestions"].as_array().map_or_else(Vec::new, |a| a.iter().map(|s| s.as_str().unwrap()).collect())
}

/// `n` lines `line 1` … `line n`, each ending with LF.
fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// Parses the marker of a cut line: `⟨line truncated: N more bytes; use start_byte=X end_byte=Y to read it⟩`.
fn truncation_marker(line: &str) -> Option<(u64, u64, u64)> {
    let at = line.find("⟨line truncated: ")?;
    let rest = &line[at + "⟨line truncated: ".len()..];
    let (more, rest) = rest.split_once(" more bytes; use start_byte=")?;
    let (start, rest) = rest.split_once(" end_byte=")?;
    let end = rest.strip_suffix(" to read it⟩")?;
    Some((more.parse().ok()?, start.parse().ok()?, end.parse().ok()?))
}

/// The text a byte range's output stands for: its lines (each behind `@OFFSET: `), escapes turned back, joined by
/// line feeds.
fn range_text(out: &str) -> String {
    let (lines, _) = envelope::ranged(out);
    lines.iter().map(|(_, text)| envelope::unshow(text)).collect::<Vec<_>>().join("\n")
}

/// The byte range of a footer's next call (`next: start_byte=X end_byte=Y)`), when there is one.
fn next_byte_call(footer: &str) -> Option<(u64, u64)> {
    let at = footer.find("next: start_byte=")?;
    let rest = &footer[at + "next: start_byte=".len()..];
    let (start, rest) = rest.split_once(" end_byte=")?;
    let end = rest.strip_suffix(')')?;
    Some((start.parse().ok()?, end.parse().ok()?))
}

/// Removes the volatile `meta.mtime` (after checking it is RFC 3339 UTC) so a result can be snapshotted.
fn without_mtime(mut v: Value) -> Value {
    let mtime = v["meta"]["mtime"].as_str().expect("meta.mtime").to_string();
    assert_rfc3339_utc(&mtime);
    v["meta"].as_object_mut().unwrap().remove("mtime");
    v
}

fn assert_rfc3339_utc(s: &str) {
    let b = s.as_bytes();
    let shape_ok = b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(shape_ok, "not an RFC 3339 UTC timestamp: {s}");
}

/// A small ELF header (x86-64, little-endian) followed by some machine-code-like bytes.
fn elf_bytes() -> Vec<u8> {
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.resize(16, 0);
    elf.extend_from_slice(&[2, 0, 0x3e, 0, 1, 0, 0, 0]);
    elf.resize(64, 0);
    elf.extend((0..300u32).map(|i| (i * 7 % 251) as u8));
    elf
}

fn utf16le_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    bytes
}

fn utf16be_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFE, 0xFF];
    bytes.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    bytes
}

/// Windows-1252 bytes for text made only of ASCII and Latin-1 letters (which map to the same byte).
fn latin1_bytes(text: &str) -> Vec<u8> {
    text.chars().map(|c| u8::try_from(u32::from(c)).expect("Latin-1 character")).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// §1 Request: path and its alias.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn path_field_reads_the_file() {
    let ws = Ws::new();
    ws.file("notes.txt", "alpha\nbeta\n");
    let v = ws.request(json!({"path": "notes.txt"}));
    let meta = text_meta(&v);
    assert_eq!(output(&v), "1: alpha\n2: beta\n(lines 1-2 of 2 · 11 B · end of file)");
    assert_eq!(meta["path"], "notes.txt");
}

#[test]
fn file_path_alias_reads_the_same_file() {
    let ws = Ws::new();
    ws.file("notes.txt", "alpha\nbeta\n");
    let by_path = ws.request(json!({"path": "notes.txt"}));
    let by_alias = ws.request(json!({"file_path": "notes.txt"}));
    text_meta(&by_alias);
    assert_eq!(output(&by_alias), output(&by_path));
    assert_eq!(by_alias["meta"]["path"], "notes.txt");
}

#[test]
fn path_and_file_path_together_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.request(json!({"path": "a.txt", "file_path": "a.txt"}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("path") && message.contains("file_path"), "{message}");
}

#[test]
fn absolute_path_inside_the_root_is_shown_relative() {
    let ws = Ws::new();
    ws.file("src/lib.rs", "pub fn f() {}\n");
    let absolute = ws.root.join("src/lib.rs");
    let v = ws.read(absolute.to_str().unwrap(), json!({}));
    assert_eq!(text_meta(&v)["path"], "src/lib.rs");
    assert_eq!(output(&v), "1: pub fn f() {}\n(lines 1-1 of 1 · 14 B · end of file)");
}

#[test]
fn missing_or_null_path_is_invalid_param() {
    let ws = Ws::new();
    for request in [json!({}), json!({"path": null}), json!({"offset": 3})] {
        let v = ws.request(request);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains("path"), "{message}");
    }
}

#[test]
fn empty_path_is_invalid_param() {
    let ws = Ws::new();
    let v = ws.request(json!({"path": ""}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`path` is empty"), "{message}");
    assert!(hint(&v).contains("\".\""), "hint names the root: {v}");
}

#[test]
fn nul_in_path_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.request(json!({"path": "a.txt\u{0}b"}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("NUL"), "{message}");
}

#[test]
fn path_of_wrong_type_is_invalid_param() {
    let ws = Ws::new();
    let v = ws.request(json!({"path": 42}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`path` must be a string"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// §1 Request: offset.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn default_offset_starts_at_line_one() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let v = ws.read("ten.txt", json!({"limit": 2}));
    let meta = text_meta(&v);
    assert_eq!(body(output(&v)), ["1: line 1", "2: line 2"]);
    assert_eq!(meta["start_line"], 1);
    assert_eq!(meta["more_before"], false);
}

#[test]
fn positive_offset_starts_at_that_line() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let v = ws.read("ten.txt", json!({"offset": 7}));
    let meta = text_meta(&v);
    assert_eq!(body(output(&v)), ["7: line 7", "8: line 8", "9: line 9", "10: line 10"]);
    assert_eq!(meta["start_line"], 7);
    assert_eq!(meta["end_line"], 10);
    assert_eq!(meta["more_before"], true);
    assert_eq!(meta["more_after"], false);
}

#[test]
fn offset_minus_one_is_the_last_line() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    ws.file("nofinal.txt", "a\nb\nlast without newline");
    let v = ws.read("ten.txt", json!({"offset": -1}));
    assert_eq!(output(&v), "10: line 10\n(lines 10-10 of 10 · 71 B · end of file)");
    let v = ws.read("nofinal.txt", json!({"offset": -1}));
    assert_eq!(body(output(&v)), ["3: last without newline"]);
    assert_eq!(text_meta(&v)["start_line"], 3);
}

#[test]
fn offset_minus_100_starts_100_lines_before_the_end() {
    let ws = Ws::new();
    ws.file("many.txt", numbered_lines(250));
    let v = ws.read("many.txt", json!({"offset": -100}));
    let meta = text_meta(&v);
    assert_eq!(meta["start_line"], 151);
    assert_eq!(meta["end_line"], 250);
    assert_eq!(meta["returned_lines"], 100);
    let out = output(&v);
    assert_eq!(body(out).first(), Some(&"151: line 151"));
    assert_eq!(body(out).last(), Some(&"250: line 250"));
    // A negative offset combines with a limit: the window starts 100 lines before the end.
    let v = ws.read("many.txt", json!({"offset": -100, "limit": 10}));
    assert_eq!(text_meta(&v)["end_line"], 160);
    assert!(footer(output(&v)).ends_with("next: offset=161 limit=10)"), "{}", output(&v));
}

#[test]
fn negative_offset_beyond_the_file_starts_at_line_one() {
    let ws = Ws::new();
    ws.file("abc.txt", "a\nb\nc\n");
    let v = ws.read("abc.txt", json!({"offset": -100}));
    let meta = text_meta(&v);
    assert_eq!(output(&v), "1: a\n2: b\n3: c\n(lines 1-3 of 3 · 6 B · end of file)");
    assert_eq!(meta["start_line"], 1);
    assert_eq!(meta["more_before"], false);
}

#[test]
fn offset_zero_is_invalid_param_explaining_both_forms() {
    let ws = Ws::new();
    ws.file("abc.txt", "a\nb\nc\n");
    let v = ws.read("abc.txt", json!({"offset": 0}));
    assert_error(&v, "INVALID_PARAM");
    let out = output(&v);
    assert!(out.contains("offset=1"), "explains the 1-based form: {out}");
    assert!(out.contains("-1 is the last line"), "explains the negative form: {out}");
}

#[test]
fn offset_past_the_end_is_invalid_range_with_length_and_last_valid_offset() {
    let ws = Ws::new();
    ws.file("abc.txt", "a\nb\nc\n");
    let v = ws.read("abc.txt", json!({"offset": 5}));
    let message = assert_error(&v, "INVALID_RANGE");
    assert!(message.contains("has 3 line(s)"), "{message}");
    assert!(message.contains("last valid offset is 3"), "{message}");
    assert!(hint(&v).contains("offset=-3"), "{v}");
    // Just past the end is past the end too.
    assert_error(&ws.read("abc.txt", json!({"offset": 4})), "INVALID_RANGE");
}

#[test]
fn empty_file_answers_its_notice_for_any_offset_or_range() {
    let ws = Ws::new();
    ws.file("empty.txt", "");
    for fields in [
        json!({}),
        json!({"offset": 1}),
        json!({"offset": 50}),
        json!({"offset": -5}),
        json!({"limit": 1}),
        json!({"start_byte": 10}),
    ] {
        let v = ws.read("empty.txt", fields.clone());
        let meta = text_meta(&v);
        assert_eq!(output(&v), "(empty file: 0 bytes)", "fields {fields}");
        assert_eq!(meta["size_bytes"], 0);
        assert_eq!(meta["total_lines"], 0);
        assert_eq!(meta["returned_lines"], 0);
    }
}

#[test]
fn float_offset_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.request_text(r#"{"path": "a.txt", "offset": 1.5}"#);
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`offset` must be an integer"), "{message}");
    assert!(message.contains("1.5"), "{message}");
}

#[test]
fn integer_too_large_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.request_text(r#"{"path": "a.txt", "offset": 10000000000000000000}"#);
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`offset` must be an integer"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// §1 Request: limit.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn default_limit_is_2000_lines() {
    let ws = Ws::new();
    ws.file("big.txt", numbered_lines(2500));
    let v = ws.read("big.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["returned_lines"], 2000);
    assert_eq!(meta["end_line"], 2000);
    assert_eq!(meta["next_offset"], 2001);
    let out = output(&v);
    assert_eq!(body(out).last(), Some(&"2000: line 2000"));
    // Without an explicit limit, the next call does not name one.
    assert!(footer(out).ends_with("· next: offset=2001)"), "{}", footer(out));
}

#[test]
fn explicit_limit_returns_that_many_lines_and_the_next_call_repeats_it() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let v = ws.read("ten.txt", json!({"offset": 2, "limit": 3}));
    let meta = text_meta(&v);
    assert_eq!(body(output(&v)), ["2: line 2", "3: line 3", "4: line 4"]);
    assert_eq!(meta["returned_lines"], 3);
    assert_eq!(meta["next_offset"], 5);
    assert_eq!(footer(output(&v)), "(lines 2-4 of 10 · 71 B · next: offset=5 limit=3)");
}

#[test]
fn limit_above_the_maximum_is_clamped_and_reported() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let config = ws.config("[limits]\nmax_lines = 3\n");
    let out = ws.cmd().arg("--config").arg(&config).args(["ten.txt", "--limit", "50", "--json"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let v = parse_one_json(&out.stdout);
    let meta = text_meta(&v);
    assert_eq!(meta["limit_clamped_to"], 3);
    assert_eq!(meta["returned_lines"], 3);
    assert_eq!(
        output(&v),
        "1: line 1\n2: line 2\n3: line 3\n(lines 1-3 of 10 · 71 B · limit clamped to 3 · next: offset=4 limit=3)"
    );
    // A limit within the maximum is not reported as clamped.
    let out = ws.cmd().arg("--config").arg(&config).args(["ten.txt", "--limit", "2", "--json"]).output().unwrap();
    let v = parse_one_json(&out.stdout);
    assert!(text_meta(&v).get("limit_clamped_to").is_none(), "{v}");
    assert!(!output(&v).contains("clamped"), "{v}");
}

#[test]
fn zero_and_negative_limits_are_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    for limit in [0, -3] {
        let v = ws.read("a.txt", json!({"limit": limit}));
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains(&format!("`limit` must be at least 1, not {limit}")), "{message}");
    }
}

#[test]
fn string_limit_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.read("a.txt", json!({"limit": "5"}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`limit` must be an integer"), "{message}");
    assert!(message.contains("string"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// §1 Request: the object as a whole.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn unknown_field_is_named_with_the_valid_fields() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.read("a.txt", json!({"lines": 10}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("`lines`"), "{message}");
    for field in ["path", "offset", "limit", "start_byte", "end_byte", "encoding"] {
        assert!(message.contains(field), "lists {field}: {message}");
    }
}

#[test]
fn offset_mixed_with_start_byte_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "abc\n");
    for fields in [json!({"offset": 1, "start_byte": 0}), json!({"limit": 5, "end_byte": 3})] {
        let v = ws.read("a.txt", fields);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains("start_byte") && message.contains("offset"), "{message}");
    }
}

#[test]
fn non_object_json_is_invalid_param() {
    let ws = Ws::new();
    for text in ["[1]", "\"a.txt\"", "42", "null"] {
        let v = ws.request_text(text);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains("must be a JSON object"), "{text}: {message}");
    }
}

#[test]
fn malformed_json_is_invalid_param() {
    let ws = Ws::new();
    for text in ["{bad", "", "{\"path\": \"a.txt\""] {
        let v = ws.request_text(text);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains("not valid JSON"), "{text:?}: {message}");
    }
}

#[test]
fn negative_byte_offsets_are_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "abc\n");
    for fields in [json!({"start_byte": -1}), json!({"end_byte": -5})] {
        let v = ws.read("a.txt", fields);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(message.contains("must be 0 or more"), "{message}");
    }
}

#[test]
fn end_byte_not_after_start_byte_is_an_error() {
    let ws = Ws::new();
    ws.file("a.txt", "abcdef\n");
    let v = ws.read("a.txt", json!({"start_byte": 4, "end_byte": 4}));
    let message = assert_error(&v, "INVALID_RANGE");
    assert!(message.contains("end_byte 4 must be greater than start_byte 4"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// §6 Command line: exit codes and faces.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn stdin_json_errors_exit_zero_with_one_json_result() {
    let ws = Ws::new();
    let out = ws.cmd().write_stdin("{\"path\": \"missing.txt\"}").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = parse_one_json(&out.stdout);
    assert_error(&v, "NOT_FOUND");
}

#[test]
fn request_flags_without_a_path_are_a_usage_error() {
    let ws = Ws::new();
    let out = ws.cmd().args(["--offset", "5"]).write_stdin("{\"path\": \"a\"}").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("need a PATH"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bad_config_is_a_usage_error() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let unknown_key = ws.outside_file("bad.toml", "bogus = 1\n");
    let out = ws.cmd().arg("--config").arg(&unknown_key).arg("a.txt").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"), "{}", String::from_utf8_lossy(&out.stderr));

    let missing = ws.outer.join("no-such-config.toml");
    let out = ws.cmd().arg("--config").arg(&missing).arg("a.txt").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-config.toml"));

    let bad_limits = ws.outside_file("limits.toml", "[limits]\nmax_output_bytes = 10\n");
    let out = ws.cmd().arg("--config").arg(&bad_limits).arg("a.txt").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_output_bytes"));
}

#[test]
fn missing_root_directory_is_a_usage_error() {
    let ws = Ws::new();
    let missing = ws.outer.join("not-a-dir");
    let mut cmd = Command::cargo_bin("agent-read").unwrap();
    let out = cmd.arg("--root").arg(&missing).arg("a.txt").current_dir(&ws.root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-a-dir"));
}

#[test]
fn plain_mode_read_error_exits_1_with_the_error_on_stderr() {
    let ws = Ws::new();
    ws.file("README.md", "hi\n");
    let out = ws.cmd().arg("readme.md").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "NOT_FOUND: readme.md: no such file or directory\nDid you mean: README.md?\n\
         Next: list the directory to see what exists: agent-read .\n"
    );
}

#[test]
fn json_flag_prints_errors_as_json_with_exit_zero() {
    let ws = Ws::new();
    let v = ws.run_json(&["missing.txt"]);
    assert_error(&v, "NOT_FOUND");
}

#[test]
fn plain_output_equals_the_json_output_field() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let plain = ws.run(&["ten.txt", "--offset", "3", "--limit", "4"]);
    let flags = ws.run_json(&["ten.txt", "--offset", "3", "--limit", "4"]);
    let stdin = ws.read("ten.txt", json!({"offset": 3, "limit": 4}));
    assert_eq!(plain, output(&flags));
    assert_eq!(flags, stdin);
    assert_eq!(footer(&plain), "(lines 3-6 of 10 · 71 B · next: offset=7 limit=4)");
}

#[test]
fn negative_offset_flag_is_accepted_on_the_command_line() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    assert_eq!(
        ws.run(&["ten.txt", "--offset", "-2"]),
        "9: line 9\n10: line 10\n(lines 9-10 of 10 · 71 B · end of file)"
    );
}

#[test]
fn unknown_schema_format_is_a_usage_error() {
    let ws = Ws::new();
    let out = ws.cmd().args(["--schema-format", "xml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

// ---------------------------------------------------------------------------------------------------------------
// §2/§3 Text window: prefixes, footer, meta.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn small_file_snapshot() {
    let ws = Ws::new();
    ws.file("hello.py", "def hello():\n    return \"world\"\n\nprint(hello())\n");
    insta::assert_snapshot!("small_file", ws.run(&["hello.py"]));
    insta::assert_json_snapshot!("small_file_json", without_mtime(ws.read("hello.py", json!({}))));
}

#[test]
fn window_with_next_offset_snapshot() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    insta::assert_snapshot!("window_with_next_offset", ws.run(&["ten.txt", "--offset", "4", "--limit", "3"]));
}

#[test]
fn lines_are_prefixed_and_the_footer_is_the_last_line() {
    let ws = Ws::new();
    ws.file("t.txt", "first\n  indented\n\ttab\n\nlast\n");
    let out = ws.run(&["t.txt"]);
    assert_eq!(body(&out), ["1: first", "2:   indented", "3: \ttab", "4: ", "5: last"]);
    assert_eq!(footer(&out), "(lines 1-5 of 5 · 28 B · end of file)");
}

#[test]
fn meta_describes_a_middle_window() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let v = ws.read("ten.txt", json!({"offset": 4, "limit": 3}));
    let meta = text_meta(&v);
    assert_eq!(meta["path"], "ten.txt");
    assert_eq!(meta["total_lines"], 10);
    assert_eq!(meta["start_line"], 4);
    assert_eq!(meta["end_line"], 6);
    assert_eq!(meta["returned_lines"], 3);
    assert_eq!(meta["more_before"], true);
    assert_eq!(meta["more_after"], true);
    assert_eq!(meta["next_offset"], 7);
    assert_eq!(meta["truncated_lines"], 0);
    assert_eq!(meta["byte_cap_hit"], false);
    assert_eq!(meta["size_bytes"], 71);
    assert_eq!(meta["encoding"], "UTF-8");
    assert_eq!(meta["encoding_source"], "detected");
    assert_eq!(meta["bom_removed"], false);
    assert_eq!(meta["line_ending"], "lf");
    assert_eq!(meta["trailing_newline"], true);
    assert!(meta.get("invalid_bytes").is_none());
    assert!(meta.get("requested_range").is_none(), "no byte-mode fields in line mode");
    assert_rfc3339_utc(meta["mtime"].as_str().unwrap());
}

#[test]
fn last_window_has_no_next_offset_and_says_end_of_file() {
    let ws = Ws::new();
    ws.file("ten.txt", numbered_lines(10));
    let v = ws.read("ten.txt", json!({"offset": 8, "limit": 3}));
    let meta = text_meta(&v);
    assert!(meta.get("next_offset").is_none(), "{meta}");
    assert_eq!(meta["more_after"], false);
    assert_eq!(footer(output(&v)), "(lines 8-10 of 10 · 71 B · end of file)");
}

#[test]
fn mtime_matches_the_file() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let file = std::fs::File::options().write(true).open(ws.root.join("a.txt")).unwrap();
    // 2001-09-09T01:46:40Z
    file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000)).unwrap();
    drop(file);
    let v = ws.read("a.txt", json!({}));
    assert_eq!(text_meta(&v)["mtime"], "2001-09-09T01:46:40Z");
}

#[test]
fn a_file_dated_before_1970_reads_with_no_mtime() {
    let ws = Ws::new();
    ws.file("old.txt", "a\n");
    let file = std::fs::File::options().write(true).open(ws.root.join("old.txt")).unwrap();
    // 1960-01-01: RFC 3339 as the tool writes it has no form for a time before 1970.
    file.set_modified(std::time::UNIX_EPOCH - Duration::from_secs(315_619_200)).unwrap();
    drop(file);
    let v = ws.read("old.txt", json!({}));
    assert_eq!(output(&v), "1: a\n(lines 1-1 of 1 · 2 B · end of file)", "{v}");
    assert!(text_meta(&v).get("mtime").is_none(), "{v}");
}

#[test]
fn crlf_file_snapshot() {
    let ws = Ws::new();
    ws.file("win.txt", "first\r\nsecond\r\nthird\r\n");
    let out = ws.run(&["win.txt"]);
    assert!(!out.contains('\r'), "CR is part of the terminator, not content: {out:?}");
    insta::assert_snapshot!("crlf_file", out);
}

#[test]
fn line_endings_are_reported() {
    let ws = Ws::new();
    ws.file("lf.txt", "a\nb\n")
        .file("crlf.txt", "a\r\nb\r\n")
        .file("cr.txt", "a\rb\r")
        .file("mixed.txt", "a\r\nb\nc\n")
        .file("none.txt", "no line break");
    let cases = [
        ("lf.txt", "lf", None),
        ("crlf.txt", "crlf", Some("CRLF line endings")),
        ("cr.txt", "cr", Some("CR line endings")),
        ("mixed.txt", "mixed", Some("mixed line endings")),
        ("none.txt", "none", None),
    ];
    for (file, ending, notice) in cases {
        let v = ws.read(file, json!({}));
        assert_eq!(text_meta(&v)["line_ending"], ending, "{file}");
        let foot = footer(output(&v));
        if let Some(notice) = notice {
            assert!(foot.contains(notice), "{file}: {foot}");
        }
    }
    let v = ws.read("crlf.txt", json!({}));
    assert_eq!(body(output(&v)), ["1: a", "2: b"]);
    assert_eq!(text_meta(&v)["total_lines"], 2);
}

#[test]
fn missing_final_newline_is_reported() {
    let ws = Ws::new();
    ws.file("nf.txt", "one\ntwo");
    let v = ws.read("nf.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["trailing_newline"], false);
    assert_eq!(meta["total_lines"], 2);
    assert_eq!(output(&v), "1: one\n2: two\n(lines 1-2 of 2 · 7 B · no final newline · end of file)");
    ws.file("yes.txt", "one\ntwo\n");
    let v = ws.read("yes.txt", json!({}));
    assert_eq!(text_meta(&v)["trailing_newline"], true);
    assert!(!output(&v).contains("no final newline"));
}

#[test]
fn empty_file_snapshot() {
    let ws = Ws::new();
    ws.file("empty.txt", "");
    let out = ws.run(&["empty.txt"]);
    assert_eq!(out, "(empty file: 0 bytes)");
    insta::assert_snapshot!("empty_file", out);
}

// ---------------------------------------------------------------------------------------------------------------
// §3 Long lines.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn long_line_snapshot() {
    let ws = Ws::new();
    let long: String = "0123456789".repeat(210); // 2100 characters
    ws.file("wide.csv", format!("id,value\n{long}\nend\n"));
    insta::assert_snapshot!("truncated_long_line", ws.run(&["wide.csv"]));
}

#[test]
fn long_line_is_cut_and_its_byte_range_returns_exactly_the_rest() {
    let ws = Ws::new();
    let long: String = (0..2500).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let content = format!("short\n{long}\ntail\n");
    ws.file("long.txt", &content);
    let v = ws.read("long.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["truncated_lines"], 1);
    assert_eq!(meta["returned_lines"], 3);
    let out = output(&v);
    let lines = body(out);
    assert_eq!(lines[0], "1: short");
    assert_eq!(lines[2], "3: tail");
    // Exactly 2000 characters are shown, then the marker.
    let shown = lines[1].strip_prefix("2: ").unwrap();
    let (text, _) = shown.split_once("⟨line truncated").unwrap();
    assert_eq!(text, &long[..2000]);
    assert_eq!(truncation_marker(lines[1]), Some((500, 2006, 2506)), "{}", lines[1]);
    assert!(footer(out).contains("1 long line(s) cut"), "{}", footer(out));
    // Following the marker returns exactly the rest of the line.
    let rest = ws.read("long.txt", json!({"start_byte": 2006, "end_byte": 2506}));
    let rest_meta = text_meta(&rest);
    assert_eq!(range_text(output(&rest)), &long[2000..]);
    assert_eq!(rest_meta["actual_range"], json!([2006, 2506]));
    assert_eq!(rest_meta["boundary_adjusted"], false);
    assert_eq!(content.as_bytes()[2006..2506], long.as_bytes()[2000..]);
}

#[test]
fn long_multibyte_line_is_cut_on_a_character_boundary_and_continues_exactly() {
    let ws = Ws::new();
    let long = "é".repeat(2500); // 5000 bytes
    ws.file("accents.txt", format!("{long}\n"));
    let v = ws.read("accents.txt", json!({}));
    let line = body(output(&v))[0];
    let (text, _) = line.strip_prefix("1: ").unwrap().split_once("⟨line truncated").unwrap();
    assert_eq!(text, "é".repeat(2000));
    assert_eq!(truncation_marker(line), Some((1000, 4000, 5000)));
    let rest = ws.read("accents.txt", json!({"start_byte": 4000, "end_byte": 5000}));
    assert_eq!(range_text(output(&rest)), "é".repeat(500));
    assert!(!output(&rest).contains('\u{FFFD}'));
}

#[test]
fn long_line_in_utf16_continues_exactly() {
    let ws = Ws::new();
    let long = format!("{}{}{}", "A".repeat(1990), "ü".repeat(20), "B".repeat(30));
    ws.file("wide16.txt", utf16le_with_bom(&format!("{long}\n")));
    let v = ws.read("wide16.txt", json!({}));
    let line = body(output(&v))[0];
    let (text, _) = line.strip_prefix("1: ").unwrap().split_once("⟨line truncated").unwrap();
    assert_eq!(text, format!("{}{}", "A".repeat(1990), "ü".repeat(10)));
    let (more, start, end) = truncation_marker(line).expect("marker");
    assert_eq!((more, start, end), (80, 4002, 4082));
    let rest = ws.read("wide16.txt", json!({"start_byte": start, "end_byte": end}));
    assert_eq!(range_text(output(&rest)), format!("{}{}", "ü".repeat(10), "B".repeat(30)));
}

#[test]
fn long_line_marker_points_past_a_crlf_terminator() {
    let ws = Ws::new();
    let long = "q".repeat(2100);
    ws.file("crlong.txt", format!("a\r\n{long}\r\nend\r\n"));
    let v = ws.read("crlong.txt", json!({}));
    let line = body(output(&v))[1];
    assert_eq!(truncation_marker(line), Some((100, 2003, 2103)), "{line}");
    let rest = ws.read("crlong.txt", json!({"start_byte": 2003, "end_byte": 2103}));
    assert_eq!(range_text(output(&rest)), "q".repeat(100));
}

// ---------------------------------------------------------------------------------------------------------------
// §3 Byte cap.
// ---------------------------------------------------------------------------------------------------------------

/// 5000 lines of exactly 100 characters (plus LF): about 490 KiB.
fn hundred_char_lines() -> String {
    (0..5000).map(|i| format!("{i:05}:{}\n", "y".repeat(94))).collect()
}

#[test]
fn output_respects_the_byte_cap_and_says_so() {
    let ws = Ws::new();
    ws.file("big.txt", hundred_char_lines());
    let out = ws.run(&["big.txt"]);
    assert!(out.len() <= CAP, "output is {} bytes", out.len());
    let v = ws.read("big.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(output(&v), out);
    assert_eq!(meta["byte_cap_hit"], true);
    assert_eq!(meta["more_after"], true);
    let end = meta["end_line"].as_u64().unwrap();
    assert!(end > 400 && end < 2000, "cap, not limit, ended the window at {end}");
    assert_eq!(meta["next_offset"], end + 1);
    let foot = footer(&out);
    assert!(foot.contains("output cap 50.0 KiB reached"), "{foot}");
    assert!(foot.ends_with(&format!("next: offset={})", end + 1)), "{foot}");
    // Whole lines only: the last line shown is complete.
    assert_eq!(body(&out).last().unwrap(), &format!("{end}: {:05}:{}", end - 1, "y".repeat(94)));
}

#[test]
fn paging_a_capped_file_visits_every_line_exactly_once() {
    let ws = Ws::new();
    let content = hundred_char_lines();
    ws.file("big.txt", &content);
    let expected: Vec<&str> = content.lines().collect();
    let mut offset = 1u64;
    let mut seen = 0usize;
    for call in 0.. {
        assert!(call < 30, "paging does not converge");
        let v = ws.read("big.txt", json!({"offset": offset}));
        let meta = text_meta(&v);
        let out = output(&v);
        assert!(out.len() <= CAP, "window at {offset} is {} bytes", out.len());
        assert_eq!(meta["start_line"], offset, "the next call continues exactly");
        for line in body(out) {
            seen += 1;
            assert_eq!(line, format!("{seen}: {}", expected[seen - 1]));
        }
        match meta.get("next_offset") {
            Some(next) => offset = next.as_u64().unwrap(),
            None => break,
        }
    }
    assert_eq!(seen, 5000);
}

#[test]
fn single_huge_line_makes_progress_through_byte_ranges() {
    let ws = Ws::new();
    // About 1 MB on one line without a newline, mixing 1-, 2- and 3-byte characters.
    let alphabet: Vec<char> = "abcdefghijklmnopqrstuvwxyz0123456789é€".chars().collect();
    let mut seed = 12345u64;
    let mut content = String::new();
    while content.len() < 1_000_000 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        content.push(alphabet[(seed >> 33) as usize % alphabet.len()]);
    }
    ws.file("huge.txt", &content);
    let size = content.len() as u64;

    let v = ws.read("huge.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["total_lines"], 1);
    assert_eq!(meta["truncated_lines"], 1);
    let out = output(&v);
    assert!(out.len() <= CAP);
    let line = body(out)[0];
    let (shown, _) = line.strip_prefix("1: ").unwrap().split_once("⟨line truncated").unwrap();
    let (_, mut start, mut end) = truncation_marker(line).expect("marker");
    assert_eq!(start, shown.len() as u64);
    assert_eq!(end, size);
    let mut rebuilt = shown.to_string();
    for call in 0.. {
        assert!(call < 40, "byte ranges do not converge");
        let v = ws.read("huge.txt", json!({"start_byte": start, "end_byte": end}));
        let meta = text_meta(&v);
        let out = output(&v);
        assert!(out.len() <= CAP, "range at {start} is {} bytes", out.len());
        assert_eq!(meta["actual_range"][0], start, "continues exactly where the last range ended");
        let foot = footer(out);
        rebuilt.push_str(&range_text(out));
        assert_eq!(meta["actual_range"][1].as_u64().unwrap(), rebuilt.len() as u64);
        match next_byte_call(foot) {
            Some((next_start, next_end)) => {
                assert!(next_start > start, "progress");
                assert_eq!(meta["next_start_byte"], next_start);
                (start, end) = (next_start, next_end);
            }
            None => {
                assert!(foot.ends_with("end of file)"), "{foot}");
                break;
            }
        }
    }
    assert!(rebuilt == content, "the pieces reassemble the line exactly");
}

#[test]
fn line_longer_than_the_cap_is_cut_to_fit_and_points_to_the_rest() {
    let ws = Ws::new();
    // With a per-line limit above the cap, the cap itself must cut the line and still make progress.
    let config = ws.config("[limits]\nmax_line_chars = 1000000\n");
    ws.file("two.txt", format!("first\n{}\nlast\n", "w".repeat(200_000)));
    let run = |args: &[&str]| {
        let out = ws.cmd().arg("--config").arg(&config).args(args).arg("--json").output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        parse_one_json(&out.stdout)
    };
    // The first window stops before the huge line.
    let v = run(&["two.txt"]);
    assert_eq!(body(output(&v)), ["1: first"]);
    assert_eq!(text_meta(&v)["next_offset"], 2);
    // Asking for the huge line returns a cut prefix of it, never an endless "next: offset=2".
    let v = run(&["two.txt", "--offset", "2"]);
    let meta = text_meta(&v);
    let out = output(&v);
    assert!(out.len() <= CAP, "{} bytes", out.len());
    assert_eq!(meta["start_line"], 2);
    assert_eq!(meta["next_offset"], 3);
    assert_eq!(meta["byte_cap_hit"], true);
    let line = body(out)[0];
    let (_, start, end) = truncation_marker(line).expect("marker");
    let shown = line.strip_prefix("2: ").unwrap().split_once('⟨').unwrap().0.len() as u64;
    assert_eq!(start, 6 + shown);
    assert_eq!(end, 6 + 200_000);
}

// ---------------------------------------------------------------------------------------------------------------
// §1/§2 Byte-range mode.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn byte_range_snapshot() {
    let ws = Ws::new();
    ws.file("config.ini", "[server]\nhost = example.org\nport = 8080\n[client]\nretries = 3\n");
    insta::assert_snapshot!("byte_range", ws.run(&["config.ini", "--start-byte", "9", "--end-byte", "39"]));
}

#[test]
fn byte_range_reports_requested_and_actual_range_and_share() {
    let ws = Ws::new();
    ws.file("digits.txt", "0123456789\n0123456789\n"); // 22 bytes
    let v = ws.read("digits.txt", json!({"start_byte": 5, "end_byte": 16}));
    let meta = text_meta(&v);
    assert_eq!(meta["requested_range"], json!([5, 16]));
    assert_eq!(meta["actual_range"], json!([5, 16]));
    assert_eq!(meta["boundary_adjusted"], false);
    assert_eq!(meta["percent_of_file"], 50.0);
    assert_eq!(meta["more_before"], true);
    assert_eq!(meta["more_after"], true);
    assert_eq!(meta["next_start_byte"], 16);
    assert!(meta.get("total_lines").is_none(), "no line-mode fields in byte mode");
    assert_eq!(
        output(&v),
        "@5: 56789\n@11: 01234\n(bytes 5-16 of 22 · 50% of the file · ends mid-line: the line break above is not in \
         the file · next: start_byte=16 end_byte=22)"
    );
}

#[test]
fn byte_range_start_inside_a_multibyte_character_moves_back() {
    let ws = Ws::new();
    ws.file("euro.txt", "ab€cd"); // € is bytes 2..5
    let v = ws.read("euro.txt", json!({"start_byte": 3, "end_byte": 6}));
    let meta = text_meta(&v);
    assert_eq!(meta["requested_range"], json!([3, 6]));
    assert_eq!(meta["actual_range"], json!([2, 6]));
    assert_eq!(meta["boundary_adjusted"], true);
    let out = output(&v);
    assert_eq!(body(out), ["@2: €c"]);
    assert!(footer(out).contains("start moved to 2"), "{out}");
    // An end inside a character moves back to the boundary before it.
    let v = ws.read("euro.txt", json!({"start_byte": 0, "end_byte": 4}));
    assert_eq!(text_meta(&v)["actual_range"], json!([0, 2]));
    assert_eq!(text_meta(&v)["boundary_adjusted"], true);
    assert_eq!(body(output(&v)), ["@0: ab"]);
    assert!(footer(output(&v)).contains("end moved to 2 (character boundary)"), "{}", output(&v));
    // An end past the file is the file's end, not a move.
    let v = ws.read("euro.txt", json!({"start_byte": 0, "end_byte": 100}));
    assert!(!footer(output(&v)).contains("moved"), "{}", output(&v));
}

#[test]
fn a_byte_range_over_crlf_line_breaks_leaves_their_cr_out_and_says_so() {
    let ws = Ws::new();
    ws.file("dos.txt", "a\r\nb\rc\r\n");
    let v = ws.read("dos.txt", json!({"start_byte": 0, "end_byte": 8}));
    assert_eq!(
        output(&v),
        "@0: a\n@3: b␍c\n(bytes 0-8 of 8 · 100% of the file · 2 CRLF line break(s), CR not shown · 1 control \
         character(s) escaped, first at byte 4 · end of file)"
    );
    assert_eq!(text_meta(&v)["control_chars"], json!({"count": 1, "first_byte": 4}));
}

#[test]
fn byte_range_end_past_the_file_is_clamped() {
    let ws = Ws::new();
    ws.file("hello.txt", "hello");
    let v = ws.read("hello.txt", json!({"start_byte": 1, "end_byte": 500}));
    let meta = text_meta(&v);
    assert_eq!(meta["requested_range"], json!([1, 500]));
    assert_eq!(meta["actual_range"], json!([1, 5]));
    assert_eq!(meta["boundary_adjusted"], true);
    assert_eq!(meta["more_after"], false);
    assert!(meta.get("next_start_byte").is_none());
    assert_eq!(output(&v), "@1: ello\n(bytes 1-5 of 5 · 80% of the file · no final newline · end of file)");
}

#[test]
fn byte_range_start_past_the_file_is_invalid_range() {
    let ws = Ws::new();
    ws.file("hello.txt", "hello");
    for start in [5, 6, 1_000_000] {
        let v = ws.read("hello.txt", json!({"start_byte": start}));
        let message = assert_error(&v, "INVALID_RANGE");
        assert!(message.contains("has 5 bytes"), "{message}");
        assert!(message.contains("last valid start_byte is 4"), "{message}");
    }
}

#[test]
fn byte_range_on_a_directory_is_invalid_param() {
    let ws = Ws::new();
    ws.dir("sub");
    let v = ws.read("sub", json!({"start_byte": 0}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("directory"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// §4 Binary detection.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn elf_binary_snapshot() {
    let ws = Ws::new();
    ws.file("bin/tool", elf_bytes());
    let v = ws.read("bin/tool", json!({}));
    let message = assert_error(&v, "BINARY");
    assert!(message.contains("ELF executable"), "{message}");
    insta::assert_snapshot!("binary_elf", output(&v));
}

/// A format the magic number names holds no text in any encoding: its hint says not to retry with one (the hint for
/// unnamed binary data suggests `encoding=`), and fits what the format is.
#[test]
fn a_named_binary_format_is_not_sent_to_retry_with_an_encoding() {
    let ws = Ws::new();
    // A 7-Zip archive (zip and tar are listed as directories of members; 7-Zip is not read).
    let mut archive = b"7z\xbc\xaf\x27\x1c\x00\x04".to_vec();
    archive.extend((0..200u8).map(|i| i.wrapping_mul(37)));
    ws.file("bundle.7z", archive);
    ws.file("bin/tool", elf_bytes());
    for (path, what) in [("bundle.7z", "an archive"), ("bin/tool", "a program")] {
        let v = ws.read(path, json!({}));
        assert_error(&v, "BINARY");
        assert!(hint(&v).starts_with(&format!("this is {what}")), "{v}");
        assert!(hint(&v).contains("will not help, so do not retry it"), "{v}");
    }
}

#[test]
fn nul_bytes_make_a_file_binary() {
    let ws = Ws::new();
    ws.file("data.txt", b"hello\x00world\nmore text\n");
    let v = ws.read("data.txt", json!({}));
    let message = assert_error(&v, "BINARY");
    assert!(message.contains("binary data"), "{message}");
    assert!(!output(&v).contains("hello"), "binary content is never shown");
}

#[test]
fn png_extension_holding_text_is_text() {
    let ws = Ws::new();
    ws.file("fake.png", "just text in a png\n");
    let v = ws.read("fake.png", json!({}));
    text_meta(&v);
    assert_eq!(output(&v), "1: just text in a png\n(lines 1-1 of 1 · 19 B · end of file)");
}

#[test]
fn utf16le_with_bom_is_decoded() {
    let ws = Ws::new();
    ws.file("u16le.txt", utf16le_with_bom("héllo\nwörld\n"));
    let v = ws.read("u16le.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding"], "UTF-16LE");
    assert_eq!(meta["encoding_source"], "bom");
    assert_eq!(meta["bom_removed"], true);
    assert_eq!(meta["total_lines"], 2);
    assert_eq!(output(&v), "1: héllo\n2: wörld\n(lines 1-2 of 2 · 26 B · UTF-16LE (from its BOM) · end of file)");
}

#[test]
fn utf16be_with_bom_is_decoded() {
    let ws = Ws::new();
    ws.file("u16be.txt", utf16be_with_bom("héllo\nwörld\n"));
    let v = ws.read("u16be.txt", json!({"offset": -1}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding"], "UTF-16BE");
    assert_eq!(meta["encoding_source"], "bom");
    assert_eq!(body(output(&v)), ["2: wörld"]);
}

#[test]
fn utf32_with_bom_is_decoded() {
    let ws = Ws::new();
    let mut le = vec![0xFF, 0xFE, 0, 0];
    let mut be = vec![0, 0, 0xFE, 0xFF];
    for c in "héllo\nwörld\n".chars() {
        le.extend(u32::from(c).to_le_bytes());
        be.extend(u32::from(c).to_be_bytes());
    }
    ws.file("u32le.txt", le).file("u32be.txt", be);
    for (file, name) in [("u32le.txt", "UTF-32LE"), ("u32be.txt", "UTF-32BE")] {
        let v = ws.read(file, json!({}));
        let meta = text_meta(&v);
        assert_eq!(meta["encoding"], name);
        assert_eq!(meta["encoding_source"], "bom");
        assert_eq!(body(output(&v)), ["1: héllo", "2: wörld"], "{file}");
    }
}

#[test]
fn utf8_bom_is_removed_and_reported() {
    let ws = Ws::new();
    ws.file("bom.txt", b"\xEF\xBB\xBFh\xC3\xA9llo\nsecond\n");
    let v = ws.read("bom.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["bom_removed"], true);
    assert_eq!(meta["encoding"], "UTF-8");
    assert_eq!(meta["encoding_source"], "bom");
    let out = output(&v);
    assert_eq!(body(out), ["1: héllo", "2: second"], "no U+FEFF in the text");
    assert!(footer(out).contains("UTF-8 BOM removed"), "{out}");
}

#[test]
fn file_holding_only_a_bom_is_empty() {
    let ws = Ws::new();
    ws.file("bomonly.txt", b"\xEF\xBB\xBF");
    let v = ws.read("bomonly.txt", json!({"offset": 5}));
    assert_eq!(text_meta(&v)["total_lines"], 0);
    assert_eq!(output(&v), "(empty file: 3 bytes, only a byte order mark)");
}

#[test]
fn utf16_without_bom_is_binary_with_a_hint_to_force_it() {
    let ws = Ws::new();
    let bytes: Vec<u8> = "hello world, this is utf-16\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
    ws.file("nobom16.txt", bytes);
    let v = ws.read("nobom16.txt", json!({}));
    assert_error(&v, "BINARY");
    assert!(hint(&v).contains("encoding=\"utf-16le\""), "{v}");
    // Following the hint works.
    let v = ws.read("nobom16.txt", json!({"encoding": "utf-16le"}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding"], "UTF-16LE");
    assert_eq!(meta["encoding_source"], "forced");
    assert_eq!(body(output(&v)), ["1: hello world, this is utf-16"]);
}

/// The fields of a footer's `next:` call (`encoding=utf-16le offset=3 limit=2`), as a request's extra fields.
fn next_call_fields(footer: &str) -> Value {
    let call = footer.split("next: ").nth(1).expect("a next call").trim_end_matches(')');
    let fields = call.split(' ').map(|pair| {
        let (key, value) = pair.split_once('=').expect("key=value");
        (key.to_string(), value.parse::<i64>().map_or_else(|_| json!(value), |n| json!(n)))
    });
    Value::Object(fields.collect())
}

#[test]
fn a_forced_encoding_is_repeated_in_the_next_call_and_following_it_pages_on() {
    let ws = Ws::new();
    let text: String = (1..=5).map(|n| format!("ligne {n} ü\n")).collect();
    ws.file("nobom16.txt", text.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>());
    let first = ws.read("nobom16.txt", json!({"encoding": "utf-16le", "limit": 2}));
    let next = next_call_fields(footer(output(&first)));
    assert_eq!(next, json!({"encoding": "utf-16le", "offset": 3, "limit": 2}));
    let second = ws.read("nobom16.txt", next);
    assert_eq!(body(output(&second)), ["3: ligne 3 ü", "4: ligne 4 ü"]);
    // A cut line's byte range carries it too.
    let long = format!("{}\n", "é".repeat(30_000));
    ws.file("long16.txt", long.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>());
    let cut = ws.read("long16.txt", json!({"encoding": "utf-16le"}));
    assert!(output(&cut).contains("use encoding=utf-16le start_byte="), "{}", output(&cut));
    // So does a wider block.
    let code = "fn outer() {\n    fn inner() {\n        body();\n    }\n}\n";
    ws.file("code16.rs", code.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>());
    let block = ws.read("code16.rs", json!({"encoding": "utf-16le", "mode": "block", "anchor_line": 3}));
    assert!(footer(output(&block)).contains("widen: encoding=utf-16le mode=block"), "{}", output(&block));
}

#[test]
fn windows_1252_snapshot() {
    let ws = Ws::new();
    ws.file("menu.txt", latin1_bytes(&"café crème brûlée\n".repeat(4)));
    let v = ws.read("menu.txt", json!({}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding"], "windows-1252");
    assert_eq!(meta["encoding_source"], "guessed");
    assert!(meta.get("invalid_bytes").is_none());
    assert!(footer(output(&v)).contains("encoding guessed: windows-1252"));
    insta::assert_snapshot!("windows_1252_guess", output(&v));
}

/// The contract (docs/contract.md, Files): invalid UTF-8 that no legacy encoding explains confidently is shown as
/// UTF-8 with U+FFFD and the count
/// of invalid bytes — here, UTF-8 text with accents and one stray byte, which must not turn into mojibake.
#[test]
fn invalid_utf8_without_a_confident_guess_shows_replacement_characters() {
    let ws = Ws::new();
    let mut bytes = "héllo wörld café\n".repeat(5).into_bytes();
    bytes.extend_from_slice(b"one bad byte: \xFF here\n");
    ws.file("mostly.txt", bytes);
    let v = ws.read("mostly.txt", json!({}));
    let meta = text_meta(&v);
    let out = output(&v);
    assert_eq!(body(out)[0], "1: héllo wörld café", "valid UTF-8 lines are not mojibake: {out}");
    assert_eq!(body(out)[5], "6: one bad byte: \u{FFFD} here");
    assert_eq!(meta["encoding"], "UTF-8");
    assert_eq!(meta["encoding_source"], "fallback");
    assert_eq!(meta["invalid_bytes"], 1);
    assert!(footer(out).contains("1 invalid byte(s)"), "{out}");
}

#[test]
fn nul_bytes_past_the_classified_start_are_shown_and_counted_in_the_footer() {
    let ws = Ws::new();
    // Text for the first 64 KiB that classification looks at, then a line with binary bytes in it.
    let mut bytes = b"plain text line\n".repeat(5000);
    bytes.extend_from_slice(b"record \x00\x01\x00 end\nlast\n");
    ws.file("mixed.log", &bytes);
    let v = ws.read("mixed.log", json!({"offset": 5000}));
    let out = output(&v);
    assert_eq!(body(out), ["5000: plain text line", "5001: record ␀␁␀ end", "5002: last"]);
    assert!(footer(out).contains("2 NUL byte(s) in this window, shown as ␀"), "{out}");
    assert!(footer(out).contains("1 control character(s) escaped, first on line 5001"), "{out}");
    assert_eq!(text_meta(&v)["nul_chars"], json!({"count": 2, "first_line": 5001}));
    let ranged = ws.read("mixed.log", json!({"start_byte": 80_000, "end_byte": bytes.len()}));
    assert!(footer(output(&ranged)).contains("2 NUL byte(s) in this window"), "{}", output(&ranged));
    // A window without one says nothing of it.
    let clean = ws.read("mixed.log", json!({"offset": 1, "limit": 3}));
    assert!(!output(&clean).contains("NUL"), "{}", output(&clean));
}

#[test]
fn forced_utf8_shows_replacement_characters_and_counts_them() {
    let ws = Ws::new();
    ws.file("bad.txt", b"abc\xFF\xFEdef\nok\n");
    let v = ws.read("bad.txt", json!({"encoding": "utf-8"}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding_source"], "forced");
    assert_eq!(meta["invalid_bytes"], 2);
    let out = output(&v);
    assert_eq!(body(out), ["1: abc\u{FFFD}\u{FFFD}def", "2: ok"]);
    assert!(footer(out).contains("2 invalid byte(s) shown as \u{FFFD}"), "{out}");
    assert!(footer(out).contains("decoded as UTF-8 (forced)"), "{out}");
}

#[test]
fn encoding_field_forces_windows_1252() {
    let ws = Ws::new();
    // Valid UTF-8 ("Ã©" in windows-1252 is the UTF-8 encoding of "é"): detection says UTF-8, the field overrides.
    ws.file("forced.txt", "café\n");
    let detected = ws.read("forced.txt", json!({}));
    assert_eq!(body(output(&detected)), ["1: café"]);
    let v = ws.read("forced.txt", json!({"encoding": "windows-1252"}));
    let meta = text_meta(&v);
    assert_eq!(meta["encoding"], "windows-1252");
    assert_eq!(meta["encoding_source"], "forced");
    assert_eq!(body(output(&v)), ["1: cafÃ©"]);
    // Labels are WHATWG labels: "latin1" names windows-1252 too.
    let v = ws.run_json(&["forced.txt", "--encoding", "latin1"]);
    assert_eq!(text_meta(&v)["encoding"], "windows-1252");
}

#[test]
fn unknown_encoding_label_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.read("a.txt", json!({"encoding": "klingon-8"}));
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.contains("klingon-8"), "{message}");
    assert!(hint(&v).contains("windows-1252"), "hint lists valid labels: {v}");
}

#[test]
fn cjk_svg_and_assembly_are_text() {
    let ws = Ws::new();
    ws.file("cjk.txt", "日本語のテキスト\n中文内容\n한국어\n")
        .file("icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\"><rect width=\"10\"/></svg>\n")
        .file("boot.s", "\t.globl _start\n_start:\n\tmov $60, %rax\n\tsyscall\n");
    let v = ws.read("cjk.txt", json!({}));
    assert_eq!(text_meta(&v)["encoding"], "UTF-8");
    assert_eq!(body(output(&v)), ["1: 日本語のテキスト", "2: 中文内容", "3: 한국어"]);
    let v = ws.read("icon.svg", json!({}));
    text_meta(&v);
    assert!(body(output(&v))[0].starts_with("1: <svg xmlns="), "{v}");
    let v = ws.read("boot.s", json!({}));
    text_meta(&v);
    assert_eq!(body(output(&v)), ["1: \t.globl _start", "2: _start:", "3: \tmov $60, %rax", "4: \tsyscall"]);
}

// ---------------------------------------------------------------------------------------------------------------
// §2/§4 Directories.
// ---------------------------------------------------------------------------------------------------------------

/// A directory with files, subdirectories and a symlink, in no particular creation order.
#[cfg(unix)]
fn populated_dir(ws: &Ws) {
    ws.file("proj/zeta.rs", "fn z() {}\n")
        .file("proj/Makefile", "all:\n")
        .file("proj/alpha.txt", "12345")
        .dir("proj/src")
        .dir("proj/docs")
        .file("proj/big.bin", vec![b'x'; 3000]);
    std::os::unix::fs::symlink("alpha.txt", ws.root.join("proj/link.txt")).unwrap();
}

#[cfg(unix)]
#[test]
fn directory_page_snapshot() {
    let ws = Ws::new();
    populated_dir(&ws);
    insta::assert_snapshot!("directory_page", ws.run(&["proj", "--limit", "4"]));
}

#[cfg(unix)]
#[test]
fn directory_lists_sorted_entries_with_kinds_and_sizes() {
    let ws = Ws::new();
    populated_dir(&ws);
    let v = ws.read("proj", json!({}));
    assert_eq!(v["ok"], true);
    assert_eq!(v["kind"], "directory");
    assert_eq!(
        output(&v),
        "Makefile  (5 B)\nalpha.txt  (5 B)\nbig.bin  (2.9 KiB)\ndocs/\nlink.txt  (symlink)\nsrc/\nzeta.rs  (10 B)\n\
         (entries 1-7 of 7 · end of directory)"
    );
    let meta = &v["meta"];
    assert_eq!(meta["path"], "proj");
    assert_eq!(meta["total_entries"], 7);
    assert_eq!(meta["returned_entries"], 7);
    assert_eq!(meta["offset"], 1);
    assert!(meta.get("next_offset").is_none());
    assert_eq!(
        v["entries"],
        json!([
            {"name": "Makefile", "kind": "file", "size": 5},
            {"name": "alpha.txt", "kind": "file", "size": 5},
            {"name": "big.bin", "kind": "file", "size": 3000},
            {"name": "docs", "kind": "dir"},
            {"name": "link.txt", "kind": "symlink", "size": 9},
            {"name": "src", "kind": "dir"},
            {"name": "zeta.rs", "kind": "file", "size": 10},
        ])
    );
}

#[cfg(unix)]
#[test]
fn directory_pages_with_offset_and_limit() {
    let ws = Ws::new();
    populated_dir(&ws);
    let v = ws.read("proj", json!({"offset": 3, "limit": 2}));
    assert_eq!(output(&v), "big.bin  (2.9 KiB)\ndocs/\n(entries 3-4 of 7 · next: offset=5 limit=2)");
    assert_eq!(v["meta"]["offset"], 3);
    assert_eq!(v["meta"]["returned_entries"], 2);
    assert_eq!(v["meta"]["next_offset"], 5);
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    // Following the next call ends the listing.
    let v = ws.read("proj", json!({"offset": 5, "limit": 5}));
    assert_eq!(output(&v), "link.txt  (symlink)\nsrc/\nzeta.rs  (10 B)\n(entries 5-7 of 7 · end of directory)");
}

#[cfg(unix)]
#[test]
fn directory_negative_offset_lists_the_last_entries() {
    let ws = Ws::new();
    populated_dir(&ws);
    let v = ws.read("proj", json!({"offset": -2}));
    assert_eq!(output(&v), "src/\nzeta.rs  (10 B)\n(entries 6-7 of 7 · end of directory)");
    assert_eq!(v["meta"]["offset"], 6);
    let v = ws.read("proj", json!({"offset": -50}));
    assert_eq!(v["meta"]["offset"], 1);
    assert_eq!(v["meta"]["returned_entries"], 7);
}

#[cfg(unix)]
#[test]
fn directory_offset_past_the_end_is_invalid_range() {
    let ws = Ws::new();
    populated_dir(&ws);
    let v = ws.read("proj", json!({"offset": 8}));
    let message = assert_error(&v, "INVALID_RANGE");
    assert!(message.contains("7 entries") && message.contains("last valid offset is 7"), "{message}");
}

#[test]
fn empty_directory_has_a_notice() {
    let ws = Ws::new();
    ws.dir("nothing");
    let v = ws.read("nothing", json!({}));
    assert_eq!(v["ok"], true);
    assert_eq!(v["kind"], "directory");
    assert_eq!(output(&v), "(empty directory)");
    assert_eq!(v["meta"]["total_entries"], 0);
    assert_eq!(v["entries"], json!([]));
}

#[test]
fn root_is_listed_as_dot() {
    let ws = Ws::new();
    ws.file("b.txt", "b").dir("a");
    let v = ws.read(".", json!({}));
    assert_eq!(v["meta"]["path"], ".");
    assert_eq!(output(&v), "a/\nb.txt  (1 B)\n(entries 1-2 of 2 · end of directory)");
}

/// A workspace with a second root, `<tmp>/second`, holding `only_second.txt` and `src/second.rs`; returns its path.
fn with_second_root(ws: &Ws) -> PathBuf {
    ws.outside_file("second/only_second.txt", "from the second root\n");
    ws.outside_file("second/src/second.rs", "fn second() {}\n");
    ws.outer.join("second")
}

/// Runs one JSON request against the workspace's root and `second`, as two `--root`s.
fn read_in_two_roots(ws: &Ws, second: &std::path::Path, request: Value) -> Value {
    let out = ws.cmd().arg("--root").arg(second).write_stdin(request.to_string()).output().unwrap();
    parse_one_json(&out.stdout)
}

#[test]
fn a_relative_path_beneath_the_second_root_only_is_read_there_and_named_by_its_absolute_path() {
    let ws = Ws::new();
    ws.file("src/first.rs", "fn first() {}\n");
    let second = with_second_root(&ws);
    let v = read_in_two_roots(&ws, &second, json!({"path": "only_second.txt"}));
    assert_eq!(v["ok"], true, "{v}");
    let shown = second.join("only_second.txt").display().to_string();
    assert_eq!(v["meta"]["path"], shown.as_str(), "{v}");
    assert!(output(&v).starts_with("1: from the second root"), "{v}");
    // A directory that exists beneath both: the first root's wins, and its file beneath the second is still found.
    let v = read_in_two_roots(&ws, &second, json!({"path": "src/second.rs"}));
    assert_eq!(v["meta"]["path"], second.join("src/second.rs").display().to_string().as_str(), "{v}");
    let v = read_in_two_roots(&ws, &second, json!({"path": "src"}));
    assert_eq!(v["meta"]["path"], "src", "{v}");
}

#[test]
fn not_found_with_several_roots_suggests_from_each_and_names_the_roots() {
    let ws = Ws::new();
    ws.file("readme.md", "first\n");
    let second = with_second_root(&ws);
    let v = read_in_two_roots(&ws, &second, json!({"path": "only_secnd.txt"}));
    assert_error(&v, "NOT_FOUND");
    let near = second.join("only_second.txt").display().to_string();
    assert_eq!(suggestions(&v), vec![near.as_str()], "{v}");
    let roots = format!("{}, {}", ws.root.display(), second.display());
    assert!(hint(&v).contains(&format!("looked for beneath each root: {roots}")), "{v}");
    // A path that climbs out of the first root is not looked for elsewhere.
    let v = read_in_two_roots(&ws, &second, json!({"path": "../second/only_second.txt"}));
    assert_eq!(v["meta"]["path"], near.as_str(), "resolved as its absolute spelling: {v}");
    let v = read_in_two_roots(&ws, &second, json!({"path": "../elsewhere.txt"}));
    assert_error(&v, "OUTSIDE_ROOT");
    assert!(hint(&v).contains(&roots), "OUTSIDE_ROOT names the roots: {v}");
}

#[test]
fn a_path_denied_beneath_the_second_root_is_not_read_there() {
    let ws = Ws::new();
    let second = with_second_root(&ws);
    ws.outside_file("second/.env", "SECRET=1\n");
    ws.outside_file("second/keys/id_rsa", "-----BEGIN\n");
    for path in [".env", "keys/id_rsa"] {
        let v = read_in_two_roots(&ws, &second, json!({"path": path}));
        assert_eq!(v["ok"], false, "{v}");
        assert!(!v.to_string().contains("SECRET") && !v.to_string().contains("BEGIN"), "{v}");
    }
}

#[test]
fn the_first_roots_listing_names_the_other_roots() {
    let ws = Ws::new();
    ws.file("a.txt", "a");
    let second = with_second_root(&ws);
    let v = read_in_two_roots(&ws, &second, json!({"path": "."}));
    assert_eq!(
        footer(output(&v)),
        format!("(entries 1-1 of 1 · other roots: {} · end of directory)", second.display())
    );
    let v = read_in_two_roots(&ws, &second, json!({"path": second.display().to_string()}));
    assert!(!output(&v).contains("other roots"), "{v}");
}

#[cfg(unix)]
#[test]
fn directory_limit_is_clamped_and_reported() {
    let ws = Ws::new();
    populated_dir(&ws);
    let config = ws.config("[limits]\nmax_lines = 3\n");
    let out = ws.cmd().arg("--config").arg(&config).args(["proj", "--limit", "10", "--json"]).output().unwrap();
    let v = parse_one_json(&out.stdout);
    assert_eq!(v["meta"]["limit_clamped_to"], 3);
    assert_eq!(v["meta"]["returned_entries"], 3);
    assert!(footer(output(&v)).contains("limit clamped to 3"), "{v}");
}

// ---------------------------------------------------------------------------------------------------------------
// §3 NOT_FOUND and near misses.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn not_found_snapshot() {
    let ws = Ws::new();
    ws.file("src/main.rs", "fn main() {}\n")
        .file("src/main.py", "print()\n")
        .file("src/lib.rs", "\n")
        .file("README.md", "# r\n");
    let v = ws.read("src/mian.rs", json!({}));
    assert_error(&v, "NOT_FOUND");
    insta::assert_snapshot!("not_found_suggestions", output(&v));
}

#[test]
fn not_found_suggests_a_case_insensitive_match() {
    let ws = Ws::new();
    ws.file("README.md", "# r\n").file("other.txt", "x");
    let v = ws.read("readme.md", json!({}));
    let message = assert_error(&v, "NOT_FOUND");
    assert!(message.contains("readme.md"), "{message}");
    assert_eq!(suggestions(&v), ["README.md"]);
    assert!(hint(&v).contains("path=."), "{v}");
}

#[test]
fn not_found_suggests_typos_in_subdirectories_same_extension_first() {
    let ws = Ws::new();
    ws.file("src/main.rs", "").file("src/main.py", "").file("src/lib.rs", "");
    let v = ws.read("src/mian.rs", json!({}));
    assert_error(&v, "NOT_FOUND");
    let found = suggestions(&v);
    assert_eq!(found.first(), Some(&"src/main.rs"), "{v}");
    let rs = found.iter().position(|s| *s == "src/main.rs").unwrap();
    if let Some(py) = found.iter().position(|s| *s == "src/main.py") {
        assert!(rs < py, "same extension preferred: {found:?}");
    }
    assert_eq!(hint(&v), "list the directory to see what exists: path=src");
}

#[test]
fn not_found_offers_at_most_three_suggestions() {
    let ws = Ws::new();
    for name in ["data1.csv", "data2.csv", "data3.csv", "data4.csv", "data5.csv"] {
        ws.file(name, "");
    }
    let v = ws.read("data.csv", json!({}));
    assert_error(&v, "NOT_FOUND");
    let found = suggestions(&v);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|s| s.starts_with("data") && s.ends_with(".csv")), "{found:?}");
}

#[test]
fn not_found_in_a_missing_directory_names_the_directory_to_list() {
    let ws = Ws::new();
    ws.file("utils/mod.rs", "");
    let v = ws.read("utls/mod.rs", json!({}));
    assert_error(&v, "NOT_FOUND");
    assert_eq!(suggestions(&v), ["utils/mod.rs"]);
    assert_eq!(hint(&v), "list the directory to see what exists: path=.");
}

#[test]
fn not_found_without_a_near_miss_has_no_suggestions_but_a_hint() {
    let ws = Ws::new();
    ws.file("alpha.txt", "");
    let v = ws.read("zzzzqqqq.bin", json!({}));
    assert_error(&v, "NOT_FOUND");
    assert!(v.get("suggestions").is_none(), "{v}");
    assert!(!output(&v).contains("Did you mean"));
    assert!(hint(&v).contains("path=."), "{v}");
}

#[test]
fn not_found_never_suggests_names_outside_the_root() {
    let ws = Ws::new();
    // Near misses exist only outside the root.
    ws.outside_file("notes.txt", "secret\n");
    ws.outside_file("work2/notes.txt", "secret\n");
    ws.file("unrelated.bin", "");
    let v = ws.read("notes.tx", json!({}));
    assert_error(&v, "NOT_FOUND");
    assert!(suggestions(&v).is_empty(), "{v}");
    assert!(!output(&v).contains("notes.txt"), "{v}");
}

/// The contract (docs/contract.md, What the model sees): a near miss is "never one outside the roots". A symlinked
/// directory inside the root that leads
/// outside must not let NOT_FOUND list the outside directory's names.
#[test]
#[cfg(unix)]
fn not_found_never_suggests_names_behind_a_symlink_leading_outside() {
    let ws = Ws::new();
    ws.outside_file("private/secret_plan.txt", "do not read\n");
    std::os::unix::fs::symlink(ws.outer.join("private"), ws.root.join("linkdir")).unwrap();
    let v = ws.read("linkdir/secret_plan.tx", json!({}));
    assert_eq!(v["ok"], false, "{v}");
    assert!(suggestions(&v).is_empty(), "suggests a name outside the root: {v}");
    assert!(!output(&v).contains("secret_plan.txt"), "leaks a name outside the root: {v}");
}

// ---------------------------------------------------------------------------------------------------------------
// §5 (as it shows in §2's error codes) OUTSIDE_ROOT.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn dot_dot_is_outside_the_root() {
    let ws = Ws::new();
    ws.outside_file("x", "outside\n");
    for path in ["../x", "../work/../x", "sub/../../x"] {
        let v = ws.read(path, json!({}));
        let message = assert_error(&v, "OUTSIDE_ROOT");
        assert!(message.contains(path), "{message}");
        assert!(!output(&v).contains("outside\n"));
    }
}

#[test]
fn absolute_path_outside_the_root_is_outside_root() {
    let ws = Ws::new();
    let outside = ws.outside_file("elsewhere.txt", "outside\n");
    let v = ws.read(outside.to_str().unwrap(), json!({}));
    assert_error(&v, "OUTSIDE_ROOT");
    assert!(v.get("suggestions").is_none());
}

#[test]
fn sibling_directory_sharing_the_root_prefix_is_outside_root() {
    let ws = Ws::new();
    // Root is <tmp>/work; <tmp>/work_secrets starts with the same characters but is not beneath it.
    let secret = ws.outside_file("work_secrets/f", "secret\n");
    let v = ws.read(secret.to_str().unwrap(), json!({}));
    assert_error(&v, "OUTSIDE_ROOT");
    let v = ws.read("../work_secrets/f", json!({}));
    assert_error(&v, "OUTSIDE_ROOT");
}

#[test]
#[cfg(unix)]
fn symlink_leading_outside_is_outside_root() {
    let ws = Ws::new();
    let outside = ws.outside_file("outside.txt", "secret\n");
    std::os::unix::fs::symlink(&outside, ws.root.join("escape.txt")).unwrap();
    let v = ws.read("escape.txt", json!({}));
    assert_error(&v, "OUTSIDE_ROOT");
    assert!(!output(&v).contains("secret"));
    assert!(hint(&v).contains("symbolic link"), "{v}");
}

/// The contract (docs/contract.md, Safety): "anything leading outside is `OUTSIDE_ROOT`" — also a missing name beneath
/// a symlinked directory that
/// leads outside (otherwise NOT_FOUND vs OUTSIDE_ROOT tells the model which outside names exist).
#[test]
#[cfg(unix)]
fn missing_path_under_a_symlinked_directory_leading_outside_is_outside_root() {
    let ws = Ws::new();
    ws.outside_file("private/present.txt", "x\n");
    std::os::unix::fs::symlink(ws.outer.join("private"), ws.root.join("linkdir")).unwrap();
    assert_error(&ws.read("linkdir/present.txt", json!({})), "OUTSIDE_ROOT");
    assert_error(&ws.read("linkdir", json!({})), "OUTSIDE_ROOT");
    assert_error(&ws.read("linkdir/absent.txt", json!({})), "OUTSIDE_ROOT");
}

#[test]
#[cfg(unix)]
fn symlink_inside_the_root_is_followed() {
    let ws = Ws::new();
    ws.file("real/target.txt", "inside\n");
    std::os::unix::fs::symlink("real/target.txt", ws.root.join("alias.txt")).unwrap();
    let v = ws.read("alias.txt", json!({}));
    text_meta(&v);
    assert_eq!(body(output(&v)), ["1: inside"]);
}

// ---------------------------------------------------------------------------------------------------------------
// §2/§5 NOT_REGULAR.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn fifo_is_not_regular_at_once() {
    let ws = Ws::new();
    let fifo = ws.root.join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(status.success());
    // No writer ever opens the FIFO: a blocking open or read would hang until the timeout.
    let out =
        ws.cmd().timeout(Duration::from_secs(10)).write_stdin(json!({"path": "pipe"}).to_string()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "finished without hanging");
    let v = parse_one_json(&out.stdout);
    let message = assert_error(&v, "NOT_REGULAR");
    assert!(message.contains("FIFO"), "{message}");
    // The plain face too: exit 1, error on stderr.
    let out = ws.cmd().timeout(Duration::from_secs(10)).arg("pipe").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("NOT_REGULAR: pipe: is a FIFO"));
    // A listing shows it without opening it.
    let v = ws.read(".", json!({}));
    assert_eq!(output(&v), "pipe  (fifo)\n(entries 1-1 of 1 · end of directory)");
    assert_eq!(v["entries"], json!([{"name": "pipe", "kind": "other"}]));
}

#[test]
#[cfg(unix)]
fn a_broken_link_is_named_as_such_without_its_destination() {
    let ws = Ws::new();
    std::os::unix::fs::symlink("gone/target-name.txt", ws.root.join("dangling")).unwrap();
    let v = ws.read("dangling", json!({}));
    let message = assert_error(&v, "NOT_FOUND");
    assert_eq!(message, "dangling: a symbolic link whose destination does not exist (a broken link)");
    assert!(!v.to_string().contains("target-name"), "the link's text is not shown: {v}");
    // A path through it is an ordinary miss.
    assert!(assert_error(&ws.read("dangling/x", json!({})), "NOT_FOUND").contains("no such file or directory"));
}

#[test]
fn a_proc_file_stating_size_zero_reads_its_end_and_byte_ranges_from_its_real_content() {
    // /proc files state size 0: counting back from the read cap, or taking 0 as the size, would miss their content.
    let run = |args: &[&str]| -> String {
        let out = Command::cargo_bin("agent-read").unwrap().args(["--root", "/proc/self"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let whole = run(&["status", "--limit", "1000"]);
    let lines = body(whole.trim_end());
    let last_two: Vec<String> =
        lines[lines.len() - 2..].iter().map(|l| l.split_once(": ").unwrap().1.to_string()).collect();
    let tail = run(&["status", "--offset", "-2"]);
    let tail_lines: Vec<&str> = body(tail.trim_end()).iter().map(|l| l.split_once(": ").unwrap().1).collect();
    // The last lines' names; their counters (context switches) move between two runs.
    let name = |l: &str| l.split(':').next().unwrap().to_string();
    assert_eq!(
        tail_lines.iter().map(|l| name(l)).collect::<Vec<_>>(),
        last_two.iter().map(|l| name(l)).collect::<Vec<_>>()
    );
    let bytes = run(&["status", "--start-byte", "0", "--end-byte", "5"]);
    assert!(bytes.starts_with("@0: Name:\n(bytes 0-5 of "), "{bytes}");
}

// ---------------------------------------------------------------------------------------------------------------
// §6 --schema.
// ---------------------------------------------------------------------------------------------------------------

fn schema(format: Option<&str>) -> Value {
    let ws = Ws::new();
    let mut cmd = ws.cmd();
    cmd.arg("--schema");
    if let Some(format) = format {
        cmd.args(["--schema-format", format]);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).expect("schema is JSON")
}

fn sorted_keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn schema_prints_name_description_and_parameters() {
    let plain = schema(None);
    assert_eq!(sorted_keys(&plain), ["description", "name", "parameters"]);
    assert_eq!(plain["name"], "read");
    let description = plain["description"].as_str().unwrap();
    assert!(description.contains("read-only"), "side effects are stated: {description}");
    let params = &plain["parameters"];
    assert_eq!(params["type"], "object");
    assert_eq!(
        sorted_keys(&params["properties"]),
        [
            "anchor_line",
            "context",
            "encoding",
            "end_byte",
            "find",
            "levels",
            "limit",
            "mode",
            "offset",
            "pages",
            "path",
            "region",
            "start_byte"
        ]
    );
    assert_eq!(params["required"], json!(["path"]));
    assert_eq!(params["additionalProperties"], false);
    assert_eq!(params["properties"]["limit"]["minimum"], 1);
    assert_eq!(params["properties"]["start_byte"]["minimum"], 0);
    assert_eq!(schema(Some("plain")), plain);
}

#[test]
fn schema_formats_wrap_the_same_parameters() {
    let plain = schema(None);
    let params = &plain["parameters"];

    let openai = schema(Some("openai"));
    assert_eq!(openai["type"], "function");
    assert_eq!(openai["function"]["name"], "read");
    assert_eq!(openai["function"]["description"], plain["description"]);
    assert_eq!(&openai["function"]["parameters"], params);

    let anthropic = schema(Some("anthropic"));
    assert_eq!(sorted_keys(&anthropic), ["description", "input_schema", "name"]);
    assert_eq!(&anthropic["input_schema"], params);

    let mcp = schema(Some("mcp"));
    assert_eq!(mcp["name"], "read");
    assert_eq!(&mcp["inputSchema"], params);
    assert_eq!(mcp["annotations"]["readOnlyHint"], true);
    assert_eq!(mcp["annotations"]["destructiveHint"], false);
}

/// Every tool definition `--schema` prints, for both tools in every format, stays inside the subset every
/// function-calling API and MCP client accepts: no `["integer", "null"]`, no null in an enum, no `$ref`, no `format`.
#[test]
fn every_printed_schema_is_portable() {
    crate::common::portable::self_check();
    let ws = Ws::new();
    for tool in [&[][..], &["many"][..]] {
        for format in ["plain", "openai", "anthropic", "mcp"] {
            let out = ws.cmd().args(tool).args(["--schema", "--schema-format", format]).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{tool:?} {format}");
            let definition: Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
            let parameters = match format {
                "plain" => &definition["parameters"],
                "openai" => &definition["function"]["parameters"],
                "anthropic" => &definition["input_schema"],
                _ => &definition["inputSchema"],
            };
            let problems = crate::common::portable::problems(parameters, crate::common::portable::Kind::Input);
            assert!(problems.is_empty(), "{tool:?} --schema-format {format}: {problems:#?}");
            assert!(parameters.get("description").is_none(), "no developer note at the root: {parameters}");
        }
    }
}

#[test]
fn mcp_http_with_a_malformed_address_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("agent-read")
        .unwrap()
        .args(["mcp", "--http", "example.com:80", "--root"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--http expects IP:PORT"));
}

#[test]
fn mcp_http_on_a_busy_port_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = busy.local_addr().unwrap().to_string();
    Command::cargo_bin("agent-read")
        .unwrap()
        .args(["mcp", "--http", &address, "--root"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!("cannot listen on {address}")));
}

#[test]
fn http_only_flags_need_http() {
    for flag in [&["--stateless"][..], &["--allow-host", "example.com"][..]] {
        Command::cargo_bin("agent-read")
            .unwrap()
            .arg("mcp")
            .args(flag)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--http"));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Requests (issue 24): a key named twice is refused, a byte-order mark is skipped.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn a_key_named_twice_on_standard_input_is_refused_naming_it_and_nothing_is_read() {
    let ws = Ws::new();
    ws.file("a.txt", "harmless\n").file("notes.txt", "notes\n");
    for (text, key) in [
        (r#"{"path": "notes.txt", "path": "a.txt"}"#, "path"),
        (r#"{"path": "a.txt", "limit": 1, "limit": 2}"#, "limit"),
        (r#"{"path": "notes.txt", "p\u0061th": "a.txt"}"#, "path"),
        ("\u{feff}{\"path\": \"notes.txt\", \"path\": \"a.txt\"}", "path"),
    ] {
        let v = ws.request_text(text);
        let message = assert_error(&v, "INVALID_PARAM");
        assert!(!output(&v).contains("harmless") && !output(&v).contains("notes\n"), "{text}: {v}");
        assert!(message.starts_with(&format!("the key `{key}` appears more than once")), "{text}: {message}");
    }
    let many = ws.cmd().arg("many").write_stdin(r#"{"paths": ["notes.txt"], "paths": ["a.txt"]}"#).output().unwrap();
    let v = parse_one_json(&many.stdout);
    let message = assert_error(&v, "INVALID_PARAM");
    assert!(message.starts_with("the key `paths` appears more than once in the request"), "{message}");
}

#[test]
fn a_byte_order_mark_before_a_stdin_request_is_skipped() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha\n");
    let v = ws.request_text("\u{feff}{\"path\": \"a.txt\"}");
    assert_eq!(output(&v), "1: alpha\n(lines 1-1 of 1 · 6 B · end of file)");
    let many = ws.cmd().arg("many").write_stdin("\u{feff}{\"paths\": [\"a.txt\"]}").output().unwrap();
    let v = parse_one_json(&many.stdout);
    assert_eq!(v["ok"], true, "{v}");
    assert!(output(&v).starts_with("==> a.txt <==\n1: alpha\n"), "{v}");
}

// ---------------------------------------------------------------------------------------------------------------
// A bug (a panic, made on purpose by a debug build's test switch) ends the read it hits as INTERNAL, nothing more.
// ---------------------------------------------------------------------------------------------------------------

/// The operator's one line on standard error: where, never the panic's message.
fn assert_one_quiet_line(stderr: &[u8]) {
    let stderr = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = stderr.lines().filter(|line| line.starts_with("agent-read: internal error")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(!stderr.contains("test panic") && !stderr.contains("TOKEN"), "{stderr}");
}

#[test]
fn a_panic_in_a_read_is_one_json_internal_error_that_names_nothing_of_it() {
    let ws = Ws::new();
    ws.file("boom.txt", "TOKEN=secret\n").file("a.txt", "alpha\n");
    for (point, args, stdin) in [
        ("read:boom.txt", &[][..], r#"{"path": "boom.txt"}"#),
        ("read:boom.txt", &["boom.txt", "--json"][..], ""),
        ("cli:boom.txt", &["boom.txt", "--json"][..], ""),
        ("many:boom.txt", &["many"][..], r#"{"paths": ["boom.txt"]}"#),
        ("cli:boom.txt", &["many", "boom.txt", "--json"][..], ""),
    ] {
        let out = ws.cmd().env("AGENT_READ_TEST_PANIC", point).args(args).write_stdin(stdin).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{point} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v = parse_one_json(&out.stdout);
        let message = assert_error(&v, "INTERNAL");
        assert!(message.starts_with("an internal error (a bug in agent-read) ended this request"), "{message}");
        assert!(!v.to_string().contains("TOKEN") && !v.to_string().contains("panic"), "{v}");
        assert_one_quiet_line(&out.stderr);
    }
    // In plain text, the error goes to standard error and the exit status is a failed read's.
    let out = ws.cmd().env("AGENT_READ_TEST_PANIC", "cli:boom.txt").arg("boom.txt").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("INTERNAL: an internal error"), "{out:?}");
    assert_one_quiet_line(&out.stderr);
    // Other files read as ever under the same switch; the operator may ask for Rust's own report.
    let fine = ws.cmd().env("AGENT_READ_TEST_PANIC", "read:boom.txt").write_stdin(r#"{"path": "a.txt"}"#).output();
    assert_eq!(output(&parse_one_json(&fine.unwrap().stdout)), "1: alpha\n(lines 1-1 of 1 · 6 B · end of file)");
    let mut report = ws.cmd();
    let report = report.env("AGENT_READ_TEST_PANIC", "read:boom.txt").env("AGENT_READ_PANIC_REPORT", "1");
    let report = report.arg("boom.txt");
    let report = report.output().unwrap();
    assert!(String::from_utf8_lossy(&report.stderr).contains("test panic at read"), "{report:?}");
}
