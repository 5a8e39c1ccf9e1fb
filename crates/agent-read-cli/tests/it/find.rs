//! `find` through the `agent-read` binary: the matching lines of a file with their numbers and context, the exact
//! call for the next matches, every kind of text (encodings, notebooks, PDFs), and the errors that name the fix.

use crate::common::{Bin, Ws, output, parse_one_json, pdf};
use serde_json::{Map, Value, json};

/// Sends one JSON request on standard input; returns the JSON result.
fn request(ws: &Ws, request: &Value) -> Value {
    let out = ws.cmd().write_stdin(request.to_string()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{request}: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

/// A search of `path` for `pattern`, with extra request fields.
fn find(ws: &Ws, path: &str, pattern: &str, extra: Value) -> Value {
    let mut fields = json!({"path": path, "find": pattern});
    if let (Some(fields), Value::Object(extra)) = (fields.as_object_mut(), extra) {
        fields.extend(extra);
    }
    request(ws, &fields)
}

fn footer(v: &Value) -> &str {
    output(v).lines().last().unwrap_or_default()
}

/// The numbers of the matching lines shown (`N: `), in order.
fn matches(v: &Value) -> Vec<u64> {
    output(v).lines().filter_map(|l| l.split_once(": ")?.0.parse().ok()).collect()
}

/// The next call a footer gives (`find="x" offset=9 limit=3`), as a JSON request for `path`.
fn next_call(path: &str, footer: &str) -> Option<Value> {
    let call = footer.split(" · next: ").nth(1)?.strip_suffix(')')?;
    let mut fields = Map::new();
    fields.insert("path".into(), json!(path));
    let (find, rest) = call.strip_prefix("find=")?.split_at(call.find("\" ")? + 1 - "find=".len());
    fields.insert("find".into(), serde_json::from_str(find).ok()?);
    for pair in rest.split_whitespace() {
        let (key, value) = pair.split_once('=')?;
        fields.insert(key.into(), value.parse::<i64>().map_or_else(|_| json!(value), |n| json!(n)));
    }
    Some(Value::Object(fields))
}

fn log(lines: u64) -> String {
    (1..=lines).map(|n| if n % 100 == 0 { format!("{n} ERROR disk full\n") } else { format!("{n} ok\n") }).collect()
}

#[test]
fn matching_lines_come_with_their_numbers_and_context_and_groups_are_separated() {
    let ws = Ws::new();
    ws.file("app.log", log(1000));
    let v = find(&ws, "app.log", "ERROR", json!({"limit": 2}));
    assert_eq!(
        output(&v),
        "98- 98 ok\n99- 99 ok\n100: 100 ERROR disk full\n101- 101 ok\n102- 102 ok\n--\n198- 198 ok\n199- 199 ok\n\
         200: 200 ERROR disk full\n201- 201 ok\n202- 202 ok\n(find \"ERROR\" from line 1: 2 of 10 match(es) · lines \
         98-202 shown · 6.9 KiB · next: find=\"ERROR\" offset=201 limit=2)"
    );
    assert_eq!((v["meta"]["find_matches"].as_u64(), v["meta"]["find_total"].as_u64()), (Some(2), Some(10)));
    let bare = find(&ws, "app.log", "(?i)error", json!({"context": 0, "limit": 1}));
    assert_eq!(output(&bare).lines().next(), Some("100: 100 ERROR disk full"), "`(?i)` ignores case");
    assert!(footer(&bare).ends_with("next: find=\"(?i)error\" context=0 offset=101 limit=1)"), "{}", footer(&bare));
}

/// A match right after the last one shown is not shown as its context (it is the next call's first match).
#[test]
fn a_match_past_the_limit_is_never_shown_as_context() {
    let ws = Ws::new();
    ws.file("close.log", "a\nERROR 1\nERROR 2\nb\nc\n");
    let v = find(&ws, "close.log", "ERROR", json!({"limit": 1}));
    assert_eq!(
        output(&v),
        "1- a\n2: ERROR 1\n(find \"ERROR\" from line 1: 1 of 2 match(es) · lines 1-2 shown · 22 B · next: \
         find=\"ERROR\" offset=3 limit=1)"
    );
    let next = find(&ws, "close.log", "ERROR", json!({"limit": 1, "offset": 3}));
    assert!(output(&next).starts_with("3: ERROR 2\n4- b\n5- c\n"), "{}", output(&next));
}

/// Matches that fill the output cap before the limit end with the call that shows the next ones.
#[test]
fn matches_past_the_output_cap_are_reached_by_the_next_call() {
    let ws = Ws::new();
    let lines: String = (1..=100).map(|n| format!("match {n} {}\n", "x".repeat(1500))).collect();
    ws.file("wide.log", lines);
    let v = find(&ws, "wide.log", "match", json!({"limit": 100, "context": 0}));
    let shown = matches(&v);
    assert!(shown.len() > 5 && shown.len() < 100, "the cap stops the showing: {}", shown.len());
    assert!(output(&v).len() <= 50 * 1024);
    let last = *shown.last().unwrap();
    assert!(
        footer(&v).ends_with(&format!("next: find=\"match\" context=0 offset={} limit=100)", last + 1)),
        "{}",
        footer(&v)
    );
}

#[test]
fn following_the_next_call_shows_every_match_once_in_order() {
    let ws = Ws::new();
    ws.file("app.log", log(1000));
    let mut v = find(&ws, "app.log", "ERROR", json!({"limit": 3, "context": 1}));
    let mut seen = matches(&v);
    let mut calls = 1;
    while let Some(call) = next_call("app.log", footer(&v)) {
        calls += 1;
        assert!(calls < 10, "the walk does not end");
        v = request(&ws, &call);
        seen.extend(matches(&v));
    }
    assert_eq!(seen, (1..=10).map(|k| k * 100).collect::<Vec<_>>());
    assert!(footer(&v).ends_with("end of file)"), "{}", footer(&v));
}

#[test]
fn a_negative_offset_searches_the_end_and_a_positive_one_starts_there() {
    let ws = Ws::new();
    ws.file("app.log", log(1000));
    let tail = find(&ws, "app.log", "ERROR", json!({"offset": -250, "context": 0}));
    assert_eq!(matches(&tail), [800, 900, 1000]);
    assert!(footer(&tail).starts_with("(find \"ERROR\" from line 751: 3 of 3 match(es)"), "{}", footer(&tail));
    let from = find(&ws, "app.log", "ERROR", json!({"offset": 901, "context": 0}));
    assert_eq!(matches(&from), [1000]);
}

#[test]
fn no_match_is_said_plainly_and_bad_requests_name_the_fix() {
    let ws = Ws::new();
    ws.file("app.log", log(300)).file("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").dir("src");
    let none = find(&ws, "app.log", "panic", json!({}));
    assert_eq!(none["ok"], true);
    assert_eq!(output(&none), "(find \"panic\" from line 1: no match in lines 1-300 · 2.0 KiB · end of file)");
    assert_eq!(none["meta"]["find_total"], 0);
    let cases = [
        (json!({"path": "app.log", "find": "a("}), "`find` \"a(\" is not a valid pattern: unclosed group"),
        (json!({"path": "app.log", "find": ""}), "`find` is empty"),
        (json!({"path": "app.log", "find": "x", "context": 21}), "`context` must be from 0 to 20, not 21"),
        (json!({"path": "app.log", "context": 2}), "`context` applies only with `find`"),
        (json!({"path": "app.log", "find": "x", "mode": "block", "anchor_line": 3}), "cannot be combined with `find`"),
        (json!({"path": "app.log", "find": "x", "start_byte": 3}), "cannot be combined with `find`"),
        (json!({"path": "app.log", "find": "a{1000}{1000}"}), "more than 4 MiB"),
        (json!({"path": "src", "find": "x"}), "is a directory; `find` searches one file's text"),
        (json!({"path": "img.png", "find": "x"}), "`find` searches text, and this is not text"),
    ];
    for (req, problem) in cases {
        let v = request(&ws, &req);
        assert_eq!(v["error_code"], "INVALID_PARAM", "{req}: {v}");
        assert!(output(&v).contains(problem), "{req}: {}", output(&v));
        assert!(output(&v).contains("\nNext: "), "a fix is given: {}", output(&v));
    }
}

#[test]
fn other_encodings_are_searched_as_their_text() {
    let ws = Ws::new();
    let latin1: Vec<u8> = b"caf\xe9 ouvert\nferm\xe9\nd\xe9j\xe0 vu\n".to_vec();
    ws.file("menu.txt", latin1);
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend("alpha\nbéta\ngamma\n".encode_utf16().flat_map(u16::to_le_bytes));
    ws.file("wide.txt", utf16);
    let v = find(&ws, "menu.txt", "é$", json!({"context": 0, "encoding": "windows-1252"}));
    assert_eq!(matches(&v), [2], "{}", output(&v));
    assert!(output(&v).starts_with("2: fermé\n"), "{}", output(&v));
    let v = find(&ws, "wide.txt", "béta", json!({"context": 0}));
    assert_eq!(output(&v).lines().next(), Some("2: béta"), "{}", output(&v));
}

#[test]
fn a_match_far_along_a_long_line_is_shown_in_view_with_the_bytes_before_it() {
    let ws = Ws::new();
    let line = format!("{}NEEDLE{}", "a".repeat(30_000), "b".repeat(30_000));
    ws.file("min.js", format!("start\n{line}\nend\n"));
    let v = find(&ws, "min.js", "NEEDLE", json!({"context": 0}));
    let shown = output(&v).lines().next().unwrap();
    assert!(shown.starts_with("2: ⟨from byte "), "{shown}");
    assert!(shown.contains("NEEDLE"), "the match is in view: {}", &shown[..200.min(shown.len())]);
    assert!(shown.contains("; before it: start_byte=6 end_byte="), "{}", &shown[..200.min(shown.len())]);
}

#[test]
fn pdfs_and_notebooks_are_searched_in_their_text() {
    let ws = Ws::new();
    ws.file("guide.pdf", pdf::pdf_of(&["Install the tool.", "Configure the roots.", "Read the roots again."]));
    let v = find(&ws, "guide.pdf", "roots", json!({"context": 0}));
    let lines: Vec<&str> = output(&v).lines().collect();
    assert!(lines[0].ends_with(": ⟨page 2⟩ │ Configure the roots."), "{}", output(&v));
    assert!(lines.iter().any(|l| l.ends_with(": ⟨page 3⟩ │ Read the roots again.")), "{}", output(&v));
    assert!(footer(&v).contains("2 of 2 match(es)") && footer(&v).contains("PDF: 3 page(s)"), "{}", footer(&v));
    let cell = json!({"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
                      "source": "import os\nprint(os.getcwd())"});
    ws.file("nb.ipynb", json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}).to_string());
    let v = find(&ws, "nb.ipynb", "getcwd", json!({"context": 0}));
    assert_eq!(v["meta"]["rendered_from"], "notebook");
    assert!(output(&v).lines().next().unwrap().ends_with("│ print(os.getcwd())"), "{}", output(&v));
}

#[cfg(unix)]
#[test]
fn a_search_stopped_by_the_time_budget_keeps_its_matches_and_says_how_far_it_went() {
    let ws = Ws::new();
    // Text first (so it reads as text), then a 64 GiB hole the search would go on through.
    let text = format!("{}{}", "needle at the start\n".repeat(3), "plain line\n".repeat(20_000));
    let path = ws.file("huge.log", text).root.join("huge.log");
    std::fs::File::options().write(true).open(&path).unwrap().set_len(64 << 30).unwrap();
    let out = ws
        .cmd()
        .args(["--timeout-ms", "300", "--json"])
        .write_stdin(json!({"path": "huge.log", "find": "needle", "context": 0}).to_string())
        .output()
        .unwrap();
    let v = parse_one_json(&out.stdout);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(matches(&v), [1, 2, 3]);
    assert!(footer(&v).contains("3 of at least 3 match(es) in lines 1-"), "{}", footer(&v));
    assert!(footer(&v).contains("the time budget stopped the search"), "{}", footer(&v));
    assert!(v["meta"].get("find_total").is_none(), "{v}");
}

#[test]
fn the_command_line_takes_find_and_context_flags() {
    let ws = Ws::new();
    ws.file("app.log", log(300));
    let out = ws.cmd().args(["app.log", "--find", "ERROR", "--context", "0", "--limit", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("100: 100 ERROR disk full\n(find \"ERROR\" from line 1: 1 of 3 match(es)"), "{text}");
    let bad = ws.cmd().args(["app.log", "--find", "("]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`--find` \"(\" is not a valid pattern"));
}

/// `read_many` with `find` is grep across files: sections of the files that match, the rest counted in one line,
/// and the deny policy and ignore files holding as for any read.
#[test]
fn read_many_with_find_shows_the_files_that_match_and_counts_the_rest() {
    let ws = Ws::new();
    ws.file("src/main.rs", "fn helper() {}\nfn main() {\n    helper();\n}\n")
        .file("src/lib.rs", "pub fn lib() {}\n")
        .file("src/notes.txt", "main ideas\n")
        .file("src/blob.bin", b"\0\x01\x02 main \x03\x04")
        .file("src/.env", "MAIN_SECRET=fn main\n")
        .file("src/generated.rs", "fn main() { generated(); }\n")
        .file(".gitignore", "src/generated.rs\n");
    let out = ws
        .cmd()
        .args(["--respect-ignore", "many", "src/*", "src/.e*", "--find", "fn main", "--context", "0", "--json"])
        .output()
        .unwrap();
    let v = parse_one_json(&out.stdout);
    let text = output(&v);
    assert!(text.starts_with("==> src/main.rs <==\n2: fn main() {\n(find \"fn main\""), "{text}");
    assert!(!text.contains("lib.rs") && !text.contains("notes.txt"), "files without a match are not shown: {text}");
    assert!(!text.contains("SECRET") && !text.contains("generated"), "denied and ignored files are never read: {text}");
    let summary = text.lines().last().unwrap();
    assert!(
        summary.starts_with("(read_many: 3 searched, 2 without a match, 1 not text · 1 shown · 0 skipped · 1 withheld"),
        "{summary}"
    );
    assert_eq!(v["meta"]["files_searched"], 3, "{}", v["meta"]);
    assert_eq!(v["meta"]["files_without_match"], 2);
    assert_eq!(v["meta"]["files_not_text"], 1);
    let bad = ws.cmd().arg("many").write_stdin(json!({"paths": ["src/*.rs"], "find": "("}).to_string()).output();
    let bad = parse_one_json(&bad.unwrap().stdout);
    assert_eq!(bad["error_code"], "INVALID_PARAM", "{bad}");
    assert!(bad["error"].as_str().unwrap().contains("`find` \"(\" is not a valid pattern"), "{bad}");
}

/// Matches near the start of a big file are shown as soon as they are found: the search does not go on through the
/// rest to count them (as `grep -m` does not), and the footer says how far it went and gives the next call, which
/// goes on from there.
#[cfg(unix)]
#[test]
fn matches_near_the_start_of_a_big_file_end_the_search_with_a_lower_bound_and_the_next_call() {
    let ws = Ws::new();
    // Enough text to fill the 64 KiB that tell text from binary.
    let text = format!("ERROR one\n{}ERROR two\n", "ok, and a line long enough to fill the head\n".repeat(2000));
    let path = ws.file("big.log", text).root.join("big.log");
    // A 96 MiB hole (one line of NUL bytes), then a last match.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len((96 << 20) - 13).unwrap();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).unwrap();
    std::io::Write::write_all(&mut file, b"\nERROR three\n").unwrap();
    let v = find(&ws, "big.log", "ERROR", json!({"limit": 1, "context": 1}));
    assert_eq!(
        output(&v),
        "1: ERROR one\n2- ok, and a line long enough to fill the head\n(find \"ERROR\" from line 1: 1 of at least 1 \
         match(es) in lines 1-2 so far · lines 1-2 shown · 96.0 MiB · the search stopped after the matches shown, \
         96.0 MiB before the end · next: find=\"ERROR\" context=1 offset=2 limit=1)"
    );
    assert_eq!(v["meta"]["find_matches"], 1);
    assert!(v["meta"].get("find_total").is_none(), "{v}");
    assert!(v["meta"].get("total_lines").is_none() && v["meta"]["total_lines_at_least"].as_u64() > Some(2), "{v}");
    // The next call goes on from there, and a search that reaches the end within reach of it counts to the end.
    let next = request(&ws, &next_call("big.log", footer(&v)).unwrap());
    assert!(output(&next).starts_with("2001- ok, and a line long enough to fill the head\n2002: ERROR two\n2003- "));
    let last = find(&ws, "big.log", "ERROR", json!({"offset": 2003, "context": 0}));
    assert_eq!(
        output(&last),
        "2004: ERROR three\n(find \"ERROR\" from line 2003: 1 of 1 match(es) · lines 2004-2004 shown · 96.0 MiB · \
         end of file)"
    );
}
