//! Process-level tests of `agent-read many` (the `read_many` tool): real files in a temporary workspace, the real
//! binary confined to it (see `tests/common`).

use crate::common::{Bin, Ws, output, parse_one_json};
use serde_json::{Value, json};

/// `n` lines `line 1` … `line n`, each ending with LF.
fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

impl Ws {
    /// `agent-read many ARGS...` in plain mode; must exit 0 with nothing on standard error. Returns standard output
    /// without the final newline the program adds.
    fn many(&self, args: &[&str]) -> String {
        let out = self.cmd().arg("many").args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "args {args:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "unexpected stderr: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        text.strip_suffix('\n').expect("output ends with a newline").to_string()
    }

    /// `agent-read many ARGS... --json`; must exit 0 and print one JSON result.
    fn many_json(&self, args: &[&str]) -> Value {
        let out = self.cmd().arg("many").args(args).arg("--json").output().expect("run");
        assert_eq!(out.status.code(), Some(0), "args {args:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        parse_one_json(&out.stdout)
    }

    /// `agent-read many` with a JSON request on standard input; must exit 0 and print one JSON result.
    fn many_stdin(&self, request: &str) -> Value {
        let out = self.cmd().arg("many").write_stdin(request).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        parse_one_json(&out.stdout)
    }

    /// A configuration file outside the root with the given output cap; returns its path as a string.
    fn cap_config(&self, cap: usize) -> String {
        let path = self.outside_file("agent-read.toml", format!("[limits]\nmax_output_bytes = {cap}\n"));
        path.display().to_string()
    }
}

/// The section of `path` in a plain output: from its header up to the blank line that ends it.
fn section<'a>(out: &'a str, path: &str) -> &'a str {
    let header = format!("==> {path} <==\n");
    let start = out.find(&header).unwrap_or_else(|| panic!("no section for {path} in:\n{out}"));
    let body = &out[start + header.len()..];
    &body[..body.find("\n\n").unwrap_or(body.len())]
}

/// The paths of a JSON result's `files`.
fn file_paths(v: &Value) -> Vec<&str> {
    v["files"].as_array().expect("files").iter().map(|f| f["path"].as_str().expect("path")).collect()
}

#[test]
fn a_mix_of_text_directory_binary_missing_and_denied_files() {
    let ws = Ws::new();
    ws.file("notes.txt", "one\ntwo\n").file("src/main.rs", "fn main() {}\n").file(".env", "TOKEN=secret\n");
    ws.file("tool.bin", b"\x00\x01\x02binary\x00\xff");
    let out = ws.many(&["notes.txt", "src", "tool.bin", "notez.txt", ".env"]);
    assert_eq!(section(&out, "notes.txt"), "1: one\n2: two\n(lines 1-2 of 2 · 8 B · end of file)");
    assert_eq!(section(&out, "src"), "main.rs  (13 B)\n(entries 1-1 of 1 · end of directory)");
    assert!(section(&out, "tool.bin").starts_with("BINARY: tool.bin: "), "{out}");
    let missing = section(&out, "notez.txt");
    assert!(missing.starts_with("NOT_FOUND: notez.txt: no such file or directory\nDid you mean: notes.txt?"), "{out}");
    assert!(section(&out, ".env").starts_with("DENIED: .env: denied by the read policy"), "{out}");
    assert!(!out.contains("secret"), "{out}");
    assert!(out.ends_with("\n\n(read_many: 5 shown (3 errors) · 0 skipped · 625 B of the 50.0 KiB cap)"), "{out}");

    let v = ws.many_json(&["notes.txt", "src", "tool.bin", "notez.txt", ".env"]);
    assert_eq!((v["ok"].as_bool(), v["kind"].as_str()), (Some(true), Some("many")));
    assert_eq!(output(&v), out);
    assert_eq!(file_paths(&v), ["notes.txt", "src", "tool.bin", "notez.txt", ".env"]);
    let kinds: Vec<&str> = v["files"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "directory", "error", "error", "error"]);
    let codes: Vec<&Value> = v["files"].as_array().unwrap().iter().map(|f| &f["error_code"]).collect();
    assert_eq!(codes, [&Value::Null, &Value::Null, &json!("BINARY"), &json!("NOT_FOUND"), &json!("DENIED")]);
    assert_eq!(v["files"][0]["meta"]["total_lines"], 2);
    assert_eq!(v["files"][3]["suggestions"], json!(["notes.txt"]));
    assert!(v["files"][0].get("output").is_none(), "the text is in `output` only: {v}");
    assert_eq!(v["meta"]["files_read"], 5);
    assert_eq!(v["meta"]["files_failed"], 3);
    assert_eq!(v["meta"]["bytes"], out.len());
    assert_eq!(v["meta"]["cap"], 50 * 1024);
}

#[test]
fn globs_expand_sorted_with_ignore_files_honoured_and_protected_matches_withheld() {
    let ws = Ws::new();
    ws.file(".gitignore", "build/\n").file("src/b.rs", "b\n").file("src/a.rs", "a\n").file("src/x/c.rs", "c\n");
    ws.file("build/gen.rs", "generated\n").file("src/.cache.rs", "hidden\n").file("src/api_secret.rs", "key\n");
    let v = ws.many_json(&["**/*.rs", "src/a.rs", "docs/*.md"]);
    assert_eq!(file_paths(&v), ["src/a.rs", "src/b.rs", "src/x/c.rs"], "sorted, once each");
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{v}");
    assert_eq!(skipped[0]["pattern"], "**/*.rs");
    assert_eq!(skipped[0]["error_code"], "DENIED");
    assert_eq!(skipped[0]["count"], 1);
    assert_eq!(skipped[1], json!({"pattern": "docs/*.md", "reason": "the glob matched no file", "count": 0}));
    assert_eq!(v["meta"]["withheld"], 1);
    let text = output(&v);
    assert!(!text.contains("api_secret") && !text.contains("generated") && !text.contains("hidden"), "{text}");
    assert!(text.contains("\n--- skipped ---\n**/*.rs: 1 match(es) withheld unnamed"), "{text}");
    assert!(text.ends_with(" · 0 skipped · 1 withheld · 333 B of the 50.0 KiB cap)"), "{text}");
}

#[test]
fn the_cap_holds_exactly_and_a_big_file_gets_what_small_ones_leave_with_a_working_next_call() {
    let ws = Ws::new();
    let big: String = (1..=5000).map(|i| format!("{i:05} some longer line of a big log file\n")).collect();
    ws.file("big.log", &big).file("small/a.txt", "alpha\n").file("small/b.txt", numbered_lines(30));
    for i in 0..6 {
        ws.file(&format!("small/c{i}.txt"), numbered_lines(i * 10 + 1));
    }
    let cap = 12_000;
    let config = ws.cap_config(cap);
    let out = ws.many(&["--config", &config, "big.log", "small/*.txt"]);
    assert!(out.len() <= cap, "{} bytes, over the {cap} cap", out.len());
    // What stays unused is at most the windowed file's footer reserve (768 B, less its footer) and the summary's
    // (224 B): the rest of the cap is used.
    assert!(out.len() > cap - 1000, "the cap is used, not wasted: {}", out.len());
    for (name, lines) in [("a", 1), ("b", 30), ("c0", 1), ("c5", 51)] {
        let whole = section(&out, &format!("small/{name}.txt"));
        let complete =
            whole.contains(&format!("\n(lines 1-{lines} of {lines} · ")) && whole.ends_with(" · end of file)");
        assert!(complete, "small/{name}.txt is whole: {whole}");
    }
    let windowed = section(&out, "big.log");
    let footer = windowed.rsplit('\n').next().unwrap();
    assert!(footer.contains("output cap") && footer.contains("next: offset="), "{footer}");
    let next: u64 = footer.rsplit("next: offset=").next().unwrap().trim_end_matches(')').parse().unwrap();
    assert!(windowed.ends_with(&format!("{:05} some longer line of a big log file\n{footer}", next - 1)));
    // The footer's next call, made with `read`, continues exactly there.
    let rest = ws.run_read(&["big.log", "--offset", &next.to_string(), "--limit", "2"]);
    assert!(rest.starts_with(&format!("{next}: {next:05} some longer line")), "{rest}");
    // Fairness: the big file got more than an equal share of the cap (small files left it their unused bytes).
    assert!(windowed.len() > cap / 9 * 2, "{} bytes for the big file", windowed.len());
}

impl Ws {
    fn run_read(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    }
}

#[test]
fn too_many_files_for_the_cap_are_listed_with_their_exact_next_call() {
    let ws = Ws::new();
    for i in 0..20 {
        ws.file(&format!("f{i:02}.txt"), numbered_lines(200));
    }
    let config = ws.cap_config(4096);
    let v = ws.many_json(&["--config", &config, "*.txt", "--limit", "100", "--max-files", "15"]);
    let shown = file_paths(&v).len();
    assert!((1..15).contains(&shown), "{shown}");
    assert!(output(&v).len() <= 4096);
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped[0]["path"], format!("f{shown:02}.txt"));
    assert_eq!(skipped[0]["next"], format!(r#"read {{"path":"f{shown:02}.txt","limit":100}}"#));
    let last = skipped.last().unwrap();
    assert_eq!(last["pattern"], "*.txt");
    assert_eq!(last["count"], 5);
    assert_eq!(v["meta"]["files_skipped"], 20 - shown);
    assert_eq!(v["meta"]["max_files"], 15);
}

#[test]
fn images_are_listed_with_the_read_call_that_attaches_them() {
    let ws = Ws::new();
    let picture = image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * 6, y as u8 * 8, 90]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(picture).write_to(&mut png, image::ImageFormat::Png).unwrap();
    ws.file("chart.png", png.get_ref()).file("readme.md", "# title\n");
    let v = ws.many_json(&["*"]);
    assert_eq!(file_paths(&v), ["readme.md"]);
    let image = &v["skipped"][0];
    assert_eq!(image["path"], "chart.png");
    assert!(image["reason"].as_str().unwrap().starts_with("PNG image ("), "{image}");
    assert_eq!(image["next"], r#"read {"path":"chart.png"}"#);
    assert!(!output(&v).contains("iVBOR"), "no base64 in the text");
    let attached = ws.cmd().write_stdin(r#"{"path":"chart.png"}"#).output().unwrap();
    assert_eq!(parse_one_json(&attached.stdout)["kind"], "attachment", "the next call attaches it");
}

#[test]
fn json_on_standard_input_and_request_errors_naming_the_field() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let v = ws.many_stdin(r#"{"paths": ["a.txt"], "limit": 1}"#);
    assert_eq!(file_paths(&v), ["a.txt"]);
    let bad = ws.many_stdin(r#"{"paths": "a.txt"}"#);
    assert_eq!((bad["ok"].as_bool(), bad["error_code"].as_str()), (Some(false), Some("INVALID_PARAM")));
    assert_eq!(bad["error"], "`paths` must be an array of strings, not a string");
    let unknown = ws.many_stdin(r#"{"paths": ["a.txt"], "offset": 3}"#);
    assert_eq!(unknown["error"], "unknown field `offset`; valid fields: paths, limit, find, context, max_files");
    // Plain mode: a request refused for its flags goes to standard error, in flags, as a usage error.
    let out = ws.cmd().args(["many", "a.txt", "--limit", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("INVALID_PARAM: `--limit` must be at least 1"));
    // Options of the one-path read do not apply to `many`.
    let misplaced = ws.cmd().args(["--limit", "3", "many", "a.txt"]).output().unwrap();
    assert_eq!(misplaced.status.code(), Some(2));
}

#[test]
fn schema_prints_the_second_tool_in_every_format() {
    let ws = Ws::new();
    let schema = |args: &[&str]| -> Value {
        let out = ws.cmd().arg("many").arg("--schema").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let plain = schema(&[]);
    assert_eq!(plain["name"], "read_many");
    assert_eq!(plain["description"], agent_read::MANY_DESCRIPTION);
    assert_eq!(plain["parameters"], agent_read::many_parameters_schema());
    assert_eq!(plain["parameters"]["required"], json!(["paths"]));
    assert_eq!(schema(&["--schema-format", "openai"])["function"]["parameters"], plain["parameters"]);
    assert_eq!(schema(&["--schema-format", "anthropic"])["input_schema"], plain["parameters"]);
    let mcp = schema(&["--schema-format", "mcp"]);
    assert_eq!((mcp["name"].as_str(), mcp["annotations"]["readOnlyHint"].as_bool()), (Some("read_many"), Some(true)));
    // The one-path tool's schema is unchanged.
    let read = ws.cmd().arg("--schema").output().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&read.stdout).unwrap()["name"], "read");
}

#[test]
fn model_facing_output_snapshot() {
    let ws = Ws::new();
    ws.file("src/lib.rs", "pub mod parse;\n").file("src/parse.rs", numbered_lines(3)).file("README.md", "# demo\n");
    insta::assert_snapshot!("mixed_call", ws.many(&["README.md", "src/*.rs", "tests/**/*.rs", "Cargo.tml"]));
}

#[test]
#[cfg(unix)]
fn glob_matches_whose_names_are_not_utf8_are_skipped_saying_why() {
    use std::os::unix::ffi::OsStrExt;
    let ws = Ws::new();
    ws.file("ok.txt", "fine\n");
    std::fs::write(ws.root.join(std::ffi::OsStr::from_bytes(b"n\xffame.txt")), "x\n").unwrap();
    let v = ws.many_json(&["*.txt"]);
    assert_eq!(file_paths(&v), ["ok.txt"]);
    assert_eq!(v["meta"]["withheld"], 0, "not a policy refusal: {v}");
    assert_eq!(v["meta"]["files_skipped"], 1, "{v}");
    let reason = v["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("1 match(es) not read: their names are not valid UTF-8"), "{reason}");
}

/// Makes `levels` nested folders named `name` beneath `dir`, each created relative to the one before (no path
/// beyond PATH_MAX is ever spelled), and writes `file` at the bottom.
#[cfg(target_os = "linux")] // rustix, a dependency on Linux only
fn nest_beyond_path_max(dir: &std::path::Path, name: &str, levels: usize, file: &str) {
    use rustix::fs::{CWD, Mode, OFlags, mkdirat, openat};
    let folder = OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut here = openat(CWD, dir, folder, Mode::empty()).expect("open the top folder");
    for _ in 0..levels {
        mkdirat(&here, name, Mode::from_raw_mode(0o755)).expect("mkdirat");
        here = openat(&here, name, folder, Mode::empty()).expect("open the folder just made");
    }
    openat(&here, file, OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC, Mode::from_raw_mode(0o644)).expect("file");
}

#[cfg(target_os = "linux")]
#[test]
fn a_glob_whose_match_lies_beyond_path_max_says_the_walk_stopped_and_why() {
    let ws = Ws::new();
    ws.file("near/shallow.txt", "near\n");
    nest_beyond_path_max(&ws.root.join("near"), &"d".repeat(200), 25, "deep.txt");
    for pattern in ["**/deep.txt", "near/**/*.txt"] {
        let v = ws.many_json(&[pattern]);
        assert_eq!(v["meta"]["walk_stopped_early"], true, "{pattern}: {v}");
        let reasons: Vec<&str> =
            v["skipped"].as_array().unwrap().iter().map(|s| s["reason"].as_str().unwrap()).collect();
        assert!(!reasons.contains(&"the glob matched no file"), "{pattern}: {reasons:?}");
        let stopped = reasons.iter().find(|r| r.starts_with("the walk stopped at "));
        let stopped = stopped.unwrap_or_else(|| panic!("{pattern}: no reason names the stop: {reasons:?}"));
        assert!(stopped.contains("longer than the system allows (4096 bytes, PATH_MAX)"), "{stopped}");
        assert!(output(&v).contains(stopped), "the model sees it too: {v}");
    }
    let v = ws.many_json(&["**/deep.txt"]);
    assert_eq!(v["skipped"][0]["reason"], "the glob matched no file it could reach", "{v}");
    // What can be reached is still read.
    let v = ws.many_json(&["near/**/*.txt"]);
    assert_eq!(file_paths(&v), ["near/shallow.txt"], "{v}");
}
