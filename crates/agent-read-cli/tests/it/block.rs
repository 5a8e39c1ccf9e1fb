//! Block mode through the `agent-read` binary: `mode: "block"` with `anchor_line` returns the indentation block
//! around a line in the ordinary text envelope, and the `widen` call it gives, fed back, returns the enclosing block.
//!
//! Every test writes its files into a fresh workspace (see `tests/common`) and runs the real binary on them.

use crate::common::{Bin, Ws, output, parse_one_json};
use serde_json::{Map, Value, json};
use std::time::Duration;

const PYTHON: &str = include_str!("../../../agent-read/tests/fixtures/block_server.py");

const RUST: &str = include_str!("../../../agent-read/tests/fixtures/block_parse.rs");

/// Sends one JSON request on standard input; returns the JSON result.
fn request(ws: &Ws, request: &Value) -> Value {
    let out = ws.cmd().write_stdin(request.to_string()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{request}: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

/// The block around `anchor` in `path`, with extra request fields.
fn block(ws: &Ws, path: &str, anchor: u64, extra: Value) -> Value {
    let mut fields = json!({"path": path, "mode": "block", "anchor_line": anchor});
    if let (Some(fields), Value::Object(extra)) = (fields.as_object_mut(), extra) {
        fields.extend(extra);
    }
    request(ws, &fields)
}

/// A call as the footer and `meta.widen` spell it (`mode=block anchor_line=4 limit=3`), as a JSON request.
fn call(path: &str, text: &str) -> Value {
    let mut fields = Map::new();
    fields.insert("path".into(), json!(path));
    for pair in text.split(' ') {
        let (key, value) = pair.split_once('=').unwrap_or_else(|| panic!("not key=value: {pair} in {text}"));
        let value = value.parse::<i64>().map_or_else(|_| json!(value), |n| json!(n));
        fields.insert(key.into(), value);
    }
    Value::Object(fields)
}

fn footer(v: &Value) -> &str {
    output(v).rsplit('\n').next().expect("a footer")
}

/// The `(start, end)` of a block result, from its meta.
fn span(v: &Value) -> (u64, u64) {
    let meta = &v["meta"];
    (meta["block_start_line"].as_u64().expect("block_start_line"), meta["block_end_line"].as_u64().expect("end"))
}

#[test]
fn a_python_method_comes_whole_with_its_decorator_and_the_envelope_names_it() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let v = block(&ws, "app.py", 12, json!({}));
    assert_eq!(v["kind"], "text");
    let lines: Vec<&str> = output(&v).lines().collect();
    assert_eq!(lines[0], "10:     @property");
    assert_eq!(lines[5], "15:         return host");
    assert_eq!(lines.len(), 7, "six lines and the footer");
    assert_eq!(footer(&v), "(block: lines 10-15 of 19 around line 12 · 289 B · widen: mode=block anchor_line=4)");
    let meta = &v["meta"];
    assert_eq!(meta["block_kind"], "block");
    assert_eq!(span(&v), (10, 15));
    assert_eq!((meta["block_header_line"].as_u64(), meta["anchor_line"].as_u64()), (Some(11), Some(12)));
    assert_eq!(meta["widen"], "mode=block anchor_line=4");
    assert_eq!((meta["start_line"].as_u64(), meta["end_line"].as_u64()), (Some(10), Some(15)));
    assert_eq!((meta["returned_lines"].as_u64(), meta["total_lines"].as_u64()), (Some(6), Some(19)));
    assert_eq!((meta["more_before"].as_bool(), meta["more_after"].as_bool()), (Some(true), Some(true)));
    assert!(meta.get("next_offset").is_none(), "the whole block is shown: {meta}");
}

#[test]
fn line_windows_carry_no_block_fields() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let v = request(&ws, &json!({"path": "app.py", "offset": 10, "limit": 2}));
    for field in ["block_kind", "block_start_line", "block_end_line", "block_header_line", "anchor_line", "widen"] {
        assert!(v["meta"].get(field).is_none(), "{field} in {}", v["meta"]);
    }
}

#[test]
fn following_widen_climbs_to_the_enclosing_blocks_then_to_lines_around_the_top() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let mut v = block(&ws, "app.py", 14, json!({}));
    let mut spans = vec![span(&v)];
    while let Some(widen) = v["meta"]["widen"].as_str().filter(|w| w.starts_with("mode=block")) {
        let next = request(&ws, &call("app.py", widen));
        assert_eq!(next["meta"]["block_header_line"], call("app.py", widen)["anchor_line"], "{widen}");
        v = next;
        spans.push(span(&v));
    }
    assert_eq!(spans, [(10, 15), (4, 15)], "the method around the `if` (with its decorator), the class");
    // At top level, widening is a plain line window around the block.
    let widen = v["meta"]["widen"].as_str().expect("a widen call at top level");
    assert_eq!(widen, "offset=1 limit=19");
    let around = request(&ws, &call("app.py", widen));
    assert_eq!(footer(&around), "(lines 1-19 of 19 · 289 B · end of file)");
}

#[test]
fn a_rust_block_ends_with_its_brace_and_a_closing_anchor_gives_what_it_closes() {
    let ws = Ws::new();
    ws.file("lib.rs", RUST);
    let v = block(&ws, "lib.rs", 16, json!({}));
    assert_eq!(span(&v), (11, 16));
    assert!(output(&v).starts_with("11:     fn fmt("), "{}", output(&v));
    assert!(output(&v).contains("\n16:     }\n"), "{}", output(&v));
    let widened = request(&ws, &call("lib.rs", v["meta"]["widen"].as_str().unwrap()));
    assert_eq!(span(&widened), (10, 17), "the impl");
    let doc = block(&ws, "lib.rs", 6, json!({}));
    assert_eq!(span(&doc), (3, 8), "doc comment and attribute belong to the struct");
}

#[test]
fn a_limit_shorter_than_the_block_pages_through_it() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let first = block(&ws, "app.py", 12, json!({"limit": 4}));
    assert_eq!(
        footer(&first),
        "(block: lines 10-15 of 19 around line 12 · showing lines 10-13 · 289 B · next: offset=14 limit=2 · widen: mode=block anchor_line=4 limit=4)"
    );
    assert_eq!(first["meta"]["next_offset"], 14);
    assert_eq!(first["meta"]["returned_lines"], 4);
    let rest = request(&ws, &call("app.py", "offset=14 limit=2"));
    let shown: Vec<&str> =
        output(&first).lines().chain(output(&rest).lines()).filter(|l| !l.starts_with('(')).collect();
    let whole = block(&ws, "app.py", 12, json!({}));
    let expected: Vec<&str> = output(&whole).lines().filter(|l| !l.starts_with('(')).collect();
    assert_eq!(shown, expected, "the pages put together are the block");
}

#[test]
fn the_output_cap_cuts_a_long_block_like_any_window() {
    let ws = Ws::new();
    let body: String = (0..2000).map(|i| format!("    value_{i:04} = {}\n", "x".repeat(60))).collect();
    ws.file("long.py", format!("def build():\n{body}\nafter = 1\n"));
    let v = block(&ws, "long.py", 900, json!({}));
    let out = output(&v);
    assert!(out.len() <= 50 * 1024, "{} bytes", out.len());
    assert_eq!(span(&v), (1, 2001));
    let last = v["meta"]["end_line"].as_u64().unwrap();
    assert!(last < 2001 && v["meta"]["byte_cap_hit"] == true, "{}", v["meta"]);
    let f = footer(&v);
    assert!(f.contains(&format!("showing lines 1-{last}")), "{f}");
    assert!(f.contains("output cap 50.0 KiB reached"), "{f}");
    assert!(f.contains(&format!("next: offset={} limit={}", last + 1, 2001 - last)), "{f}");
    assert!(f.ends_with("widen: offset=1 limit=2003)"), "{f}");
}

#[test]
fn a_top_level_line_gives_its_paragraph_and_a_whole_file_block_has_nothing_to_widen() {
    let ws = Ws::new();
    ws.file("notes.txt", "alpha\nbeta\n\ngamma\ndelta\n\nepsilon\n");
    let v = block(&ws, "notes.txt", 5, json!({}));
    assert_eq!(
        output(&v),
        "4: gamma\n5: delta\n(paragraph: lines 4-5 of 7 around line 5 · 33 B · widen: offset=1 limit=7)"
    );
    assert_eq!(v["meta"]["block_kind"], "paragraph");
    assert!(v["meta"].get("block_header_line").is_none());
    ws.file("one.py", "def f():\n    return 1\n");
    let whole = block(&ws, "one.py", 2, json!({}));
    assert_eq!(footer(&whole), "(block: lines 1-2 of 2 around line 2 · 22 B · whole file)");
    assert!(whole["meta"].get("widen").is_none());
}

#[test]
fn a_blank_anchor_says_which_line_it_was_read_as() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let v = block(&ws, "app.py", 16, json!({}));
    assert_eq!(span(&v), (10, 15));
    assert!(
        footer(&v).starts_with("(block: lines 10-15 of 19 around line 16 (blank; read as line 15) · "),
        "{}",
        footer(&v)
    );
}

#[test]
fn utf16_and_crlf_files_give_the_same_blocks_with_their_notices() {
    let ws = Ws::new();
    let crlf = PYTHON.replace('\n', "\r\n");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(crlf.encode_utf16().flat_map(u16::to_le_bytes));
    ws.file("wide.py", utf16).file("dos.py", &crlf).file("app.py", PYTHON);
    let plain = block(&ws, "app.py", 14, json!({}));
    for (path, notice) in [("wide.py", "UTF-16LE (from its BOM) · CRLF line endings"), ("dos.py", "CRLF line endings")]
    {
        let v = block(&ws, path, 14, json!({}));
        assert_eq!(span(&v), (10, 15), "{path}");
        assert!(footer(&v).contains(notice), "{path}: {}", footer(&v));
        let body = |v: &Value| output(v).lines().filter(|l| !l.starts_with('(')).map(String::from).collect::<Vec<_>>();
        assert_eq!(body(&v), body(&plain), "{path}");
    }
}

#[test]
fn a_notebook_code_cell_is_searched_in_its_rendering() {
    let ws = Ws::new();
    let cell = json!({"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
                      "source": "def f(x):\n    if x:\n        return 1\n    return 2"});
    ws.file("nb.ipynb", json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}).to_string());
    let v = block(&ws, "nb.ipynb", 4, json!({}));
    assert_eq!(v["meta"]["rendered_from"], "notebook");
    assert_eq!(output(&v).lines().next(), Some("2: │ def f(x):"), "the function around the `if`");
    assert_eq!(span(&v), (2, 5));
    assert!(footer(&v).contains("notebook: 1 cell(s) · widen: offset=1 limit="), "{}", footer(&v));
}

#[test]
fn the_command_line_takes_mode_and_anchor_line_flags() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let out = ws.cmd().args(["app.py", "--mode", "block", "--anchor-line", "8"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("7:     def __init__(self, port):\n8:         self.port = port\n(block: lines 7-8 "),
        "{text}"
    );
    let unknown = ws.cmd().args(["app.py", "--mode", "blocks", "--anchor-line", "8"]).output().unwrap();
    // A flag value the read refuses is a usage error, told in flags.
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("unknown `--mode` \"blocks\"; valid modes: lines, block"), "{stderr}");
    let no_path = ws.cmd().args(["--anchor-line", "8"]).output().unwrap();
    assert_eq!(no_path.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_path.stderr).contains("--levels, --find, --context and --region need a PATH"));
    let levels = ws.cmd().args(["app.py", "--mode", "block", "--anchor-line", "14", "--levels", "2"]).output().unwrap();
    let text = String::from_utf8(levels.stdout).unwrap();
    assert!(text.starts_with("4: class Server:\n"), "{text}");
}

/// A line in an `if` inside a method gives the method; `levels` goes out one definition at a time.
#[test]
fn block_mode_gives_the_definition_around_the_line_and_levels_go_further_out() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON).file("lib.rs", RUST);
    assert_eq!(span(&block(&ws, "app.py", 14, json!({}))), (10, 15), "the method, not the `if`");
    assert_eq!(span(&block(&ws, "app.py", 14, json!({"levels": 1}))), (10, 15));
    assert_eq!(span(&block(&ws, "app.py", 14, json!({"levels": 2}))), (4, 15), "the class");
    assert_eq!(span(&block(&ws, "app.py", 14, json!({"levels": 3}))), (4, 15), "no further than the outermost");
    assert_eq!(span(&block(&ws, "lib.rs", 13, json!({}))), (11, 16), "the method around the `if`");
    assert_eq!(span(&block(&ws, "lib.rs", 13, json!({"levels": 2}))), (10, 17), "its impl");
    for (levels, problem) in [(json!(0), "`levels` must be from 1 to 64, not 0"), (json!(65), "not 65")] {
        let v = block(&ws, "app.py", 14, json!({"levels": levels}));
        assert_rejected(&v, "INVALID_PARAM", problem, "\"levels\": 1");
    }
    let lines = request(&ws, &json!({"path": "app.py", "levels": 2}));
    assert_rejected(&lines, "INVALID_PARAM", "applies only to block mode", "add \"mode\": \"block\"");
}

/// A block longer than the window shows its header, the lines left out with the call that reads them, and a window
/// around the anchor: the anchor is always in view.
#[test]
fn a_block_longer_than_the_limit_keeps_its_header_and_the_anchor_in_view() {
    let ws = Ws::new();
    let body: String = (1..=298).map(|i| format!("    let x{i} = {i};\n")).collect();
    ws.file("big.rs", format!("fn big() {{\n{body}}}\n"));
    let v = block(&ws, "big.rs", 250, json!({"limit": 5}));
    assert_eq!(
        output(&v),
        "1: fn big() {\n⋮ (lines 2-248 left out: offset=2 limit=247)\n249:     let x248 = 248;\n250:     let x249 = 249;\n\
         251:     let x250 = 250;\n252:     let x251 = 251;\n(block: lines 1-300 of 300 around line 250 · showing lines 1 \
         and 249-252 · 5.6 KiB · next: offset=253 limit=5 · whole file)"
    );
    assert_eq!((v["meta"]["start_line"].as_u64(), v["meta"]["end_line"].as_u64()), (Some(249), Some(252)));
    assert_eq!(v["meta"]["returned_lines"], 5);
    assert_eq!(v["meta"]["block_header_line"], 1);
    // The lines left out, read by the call the elision gives.
    let skipped = request(&ws, &call("big.rs", "offset=2 limit=247"));
    assert!(output(&skipped).starts_with("2:     let x1 = 1;\n"), "{}", output(&skipped));
    assert!(footer(&skipped).starts_with("(lines 2-248 of 300 "), "{}", footer(&skipped));
    // Near the end of the block, and with a window too small for the header: the anchor still shows.
    for (anchor, limit) in [(299, 5), (300, 5), (150, 2), (150, 1), (3, 5)] {
        let v = block(&ws, "big.rs", anchor, json!({"limit": limit}));
        let numbered: Vec<u64> = output(&v).lines().filter_map(|l| l.split_once(':')?.0.parse().ok()).collect();
        assert!(numbered.contains(&anchor), "anchor {anchor} limit {limit}: {}", output(&v));
        assert!(numbered.len() as u64 <= limit, "anchor {anchor} limit {limit}: {}", output(&v));
    }
}

#[test]
fn snapshot_of_a_python_block() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let out = ws.cmd().args(["app.py", "--mode", "block", "--anchor-line", "12"]).output().unwrap();
    insta::assert_snapshot!("python_method", String::from_utf8(out.stdout).unwrap());
}

#[test]
fn snapshot_of_a_rust_block() {
    let ws = Ws::new();
    ws.file("lib.rs", RUST);
    let out = ws.cmd().args(["lib.rs", "--mode", "block", "--anchor-line", "13"]).output().unwrap();
    insta::assert_snapshot!("rust_method_around_an_if", String::from_utf8(out.stdout).unwrap());
}

// ---------------------------------------------------------------------------------------------------------------
// Errors: each names the problem and the fix.
// ---------------------------------------------------------------------------------------------------------------

/// A failed result's code, and its message and hint joined.
fn rejection(v: &Value) -> (&str, String) {
    assert_eq!(v["ok"], false, "{v}");
    let text = format!("{} / {}", v["error"].as_str().unwrap_or(""), v["hint"].as_str().unwrap_or(""));
    (v["error_code"].as_str().expect("error_code"), text)
}

fn assert_rejected(v: &Value, code: &str, problem: &str, fix: &str) {
    let (got, text) = rejection(v);
    assert_eq!(got, code, "{text}");
    assert!(text.contains(problem), "problem `{problem}` not named: {text}");
    assert!(text.contains(fix), "fix `{fix}` not given: {text}");
}

#[test]
fn request_misuse_is_invalid_param_naming_the_field_and_the_fix() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON);
    let cases = [
        (json!({"mode": "block"}), "needs `anchor_line`", r#""anchor_line": 812"#),
        (json!({"anchor_line": 5}), "applies only to block mode", r#"add "mode": "block""#),
        (json!({"mode": "block", "anchor_line": 0}), "`anchor_line` must be at least 1", "\"anchor_line\": 1"),
        (json!({"mode": "block", "anchor_line": 5, "offset": 3}), "`offset` cannot be combined", "remove `offset`"),
        (
            json!({"mode": "block", "anchor_line": 5, "start_byte": 0, "end_byte": 9}),
            "`start_byte`/`end_byte` cannot be combined",
            "remove `start_byte`/`end_byte`",
        ),
        (json!({"mode": "Block", "anchor_line": 5}), "valid modes: lines, block", r#"send "mode": "block""#),
    ];
    for (fields, problem, fix) in cases {
        let mut fields = fields;
        fields["path"] = json!("app.py");
        assert_rejected(&request(&ws, &fields), "INVALID_PARAM", problem, fix);
    }
}

#[test]
fn an_anchor_past_the_end_states_the_line_count_and_an_empty_file_answers_as_empty() {
    let ws = Ws::new();
    ws.file("app.py", PYTHON).file("empty.py", "");
    let v = block(&ws, "app.py", 20, json!({}));
    assert_rejected(&v, "INVALID_RANGE", "app.py has 19 line(s), so the last valid anchor_line is 19", "from 1 to 19");
    assert_eq!(output(&block(&ws, "empty.py", 3, json!({}))), "(empty file: 0 bytes)");
}

#[test]
fn block_mode_on_what_is_not_text_says_so_and_what_to_do_instead() {
    let ws = Ws::new();
    ws.dir("src");
    ws.file("pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0");
    ws.file("doc.pdf", "%PDF-1.4\n%\u{e2}\u{e3}\n1 0 obj\n<< >>\nendobj\n");
    let mut elf = b"\x7fELF\x02\x01\x01\0".to_vec();
    elf.extend([0u8; 56]);
    ws.file("tool", elf);
    let cases = [
        ("src", "src is a directory", "page the listing with offset and limit"),
        ("pic.png", "pic.png is a PNG image", "to get the image as an attachment"),
        ("doc.pdf", "doc.pdf is a PDF", "pages=\"1-3\""),
        ("tool", "tool is binary (ELF", "encoding=\"<label>\""),
    ];
    for (path, problem, fix) in cases {
        let v = block(&ws, path, 1, json!({}));
        assert_rejected(&v, "INVALID_PARAM", problem, fix);
        assert_rejected(
            &v,
            "INVALID_PARAM",
            "block mode (`mode` \"block\") applies to text files only",
            "remove `mode`",
        );
    }
}

#[test]
fn finding_a_block_stops_at_the_time_budget_with_a_cheaper_call() {
    let ws = Ws::new();
    ws.file("huge.log", "line\n".repeat(20_000));
    // A 64 GiB hole after the text: the search for line 30,000 would have to read all of it.
    let file = std::fs::File::options().write(true).open(ws.root.join("huge.log")).unwrap();
    file.set_len(64 << 30).unwrap();
    let started = std::time::Instant::now();
    let out = ws
        .cmd()
        .args(["--timeout-ms", "300"])
        .write_stdin(json!({"path": "huge.log", "mode": "block", "anchor_line": 30_000}).to_string())
        .output()
        .unwrap();
    let v = parse_one_json(&out.stdout);
    assert_rejected(&v, "TIMEOUT", "while looking for the block around line 30000", "offset=29950 limit=100");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}
