//! The examples the documentation shows are run, so that none can drift from the code.
//!
//! - Every `console` block of README.md and docs/*.md runs through trycmd: each `$ agent-read …` line is run and
//!   what it prints (standard output and error together), and its exit status (`? 1`), must match the block.
//! - Every result in README.md and docs/*.md that follows a `<!-- example: … -->` line is compared with what that
//!   command returns: a ```json block with the JSON pretty-printed, a ```text block with standard output as printed
//!   (trycmd would turn a JSON string's `\n` into `/n`). `[..]` in a line matches anything (a time, a base64
//!   payload), and a line `...` any lines.
//! - Every ```toml block is a configuration agent-read loads, unless the line before it says
//!   `<!-- another program's configuration -->` (a client's own settings).
//! - Every link from one document to another (`[…](file.md#anchor)`) reaches a file that exists and a heading in it.
//!
//! Each document reads its own copy of one small project, [`demo_project`], from the project's root: commands run
//! there with no `--root`, as a person would in their checkout.
//!
//! `TRYCMD=overwrite cargo test --test docs` writes what the binary printed back into the documents, keeping the
//! `[..]` that still match.

use crate::common::pdf::pdf_of;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_agent-read");

/// The repository's root, where README.md and docs/ are (this crate is `crates/agent-read-cli`).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every Markdown file in docs/, relative to the repository's root.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repository().join("docs"))
        .expect("docs/ exists")
        .map(|entry| PathBuf::from("docs").join(entry.expect("docs/ entry").file_name()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

fn source(rel: &Path) -> PathBuf {
    repository().join(rel)
}

#[test]
fn console_examples_print_what_the_binary_prints() {
    let stage = tempfile::tempdir().expect("tempdir");
    let cases = trycmd::TestCases::new();
    cases.register_bin("agent-read", Path::new(BIN));
    let mut staged = Vec::new();
    for rel in documents() {
        let copy = stage.path().join(&rel);
        std::fs::create_dir_all(copy.parent().expect("a parent")).expect("stage dir");
        std::fs::copy(source(&rel), &copy).expect("copy document");
        // trycmd runs a document's commands in `<name>.in`, beside it.
        demo_project(&copy.with_extension("in"));
        cases.case(&copy);
        staged.push((rel, copy));
    }
    cases.run();
    if std::env::var_os("TRYCMD").is_some_and(|mode| mode == "overwrite") {
        for (rel, copy) in staged {
            std::fs::copy(copy, source(&rel)).expect("write the document back");
        }
    }
}

/// One `<!-- example: … -->` line and the block after it.
struct JsonExample {
    /// The marker's line, 1-based.
    line: usize,
    command: String,
    expected: String,
    /// A ```json block (the result pretty-printed) rather than ```text (standard output as printed).
    pretty: bool,
}

/// The JSON examples of one document.
fn json_examples(rel: &Path) -> Vec<JsonExample> {
    let text = std::fs::read_to_string(source(rel)).expect("read document");
    let lines: Vec<&str> = text.lines().collect();
    let mut examples = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(command) = line.trim().strip_prefix("<!-- example:").and_then(|rest| rest.strip_suffix("-->")) else {
            continue;
        };
        let fence = lines.get(index + 1).map(|l| l.trim());
        assert!(
            matches!(fence, Some("```json" | "```text")),
            "{}:{}: a ```json or ```text block must follow",
            rel.display(),
            index + 1
        );
        let body: Vec<&str> = lines[index + 2..].iter().take_while(|l| l.trim() != "```").copied().collect();
        examples.push(JsonExample {
            line: index + 1,
            command: command.trim().to_string(),
            expected: body.join("\n") + "\n",
            pretty: fence == Some("```json"),
        });
    }
    examples
}

/// What an example's command returns: with `pretty`, as pretty JSON in the order the keys were written, else standard
/// output as printed. `agent-read ARGS…` runs the binary (no shell: arguments are split on spaces, globs reach it as
/// written); `echo 'JSON' | agent-read ARGS…` gives it JSON on standard input (`printf 'A\nB' | …` two lines);
/// `audit-of agent-read ARGS…` returns the lines that run appended to its audit log; `session-repeat PATH` reads PATH
/// twice in a library session with repeat notices on and returns the second answer.
fn run_example(command: &str, project: &Path, pretty: bool) -> String {
    // `printf` turns `\n` into line breaks, as the shell's does: several messages for the MCP server.
    let piped = |prefix: &str| command.strip_prefix(prefix).and_then(|rest| rest.split_once("' | "));
    let (stdin, command) = match (piped("echo '"), piped("printf '")) {
        (Some((text, rest)), _) => (Some(text.to_string()), rest),
        (None, Some((text, rest))) => (Some(text.replace("\\n", "\n")), rest),
        (None, None) => (None, command),
    };
    let stdin = stdin.as_deref();
    let mut words = command.split_whitespace();
    match words.next() {
        Some("agent-read") => {
            let output = run_binary(words, stdin, project);
            if !pretty {
                return String::from_utf8(output.stdout).expect("output is UTF-8");
            }
            let mut parsed = serde_json::Deserializer::from_slice(&output.stdout);
            let mut pretty = serde_json::Serializer::pretty(Vec::new());
            serde_transcode::transcode(&mut parsed, &mut pretty).unwrap_or_else(|e| {
                panic!("`{command}` printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stdout))
            });
            String::from_utf8(pretty.into_inner()).expect("JSON is UTF-8") + "\n"
        }
        Some("audit-of") => {
            let log = project.with_file_name("audit.jsonl");
            let args = ["--audit-log", log.to_str().expect("a UTF-8 path")].into_iter().chain(words.skip(1));
            run_binary(args, stdin, project);
            let lines = std::fs::read_to_string(&log).expect("the audit log");
            std::fs::remove_file(&log).expect("remove the audit log");
            lines
        }
        Some("session-repeat") => {
            let path = words.next().expect("a path");
            let reader = agent_read::Reader::new(agent_read::Config::with_roots([project])).expect("reader");
            let settings = agent_read::SessionSettings { repeat_read_stubs: true, ..Default::default() };
            let session = agent_read::Session::new(Arc::new(reader), settings).expect("session");
            let (request, options) = (agent_read::ReadRequest::new(path), agent_read::ReadOptions::default());
            session.read(&request, &options);
            serde_json::to_string_pretty(&session.read(&request, &options)).expect("result as JSON") + "\n"
        }
        other => panic!("unknown example command {other:?} in `{command}`"),
    }
}

/// Runs the binary in `project`, with `stdin` (or nothing) on its standard input.
fn run_binary<'a>(args: impl Iterator<Item = &'a str>, stdin: Option<&str>, project: &Path) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(BIN)
        .args(args)
        .current_dir(project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run binary");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or_default().as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("binary output")
}

#[test]
fn json_examples_are_what_the_commands_return() {
    let stage = tempfile::tempdir().expect("tempdir");
    let project = stage.path().join("project");
    demo_project(&project);
    let overwrite = std::env::var_os("TRYCMD").is_some_and(|mode| mode == "overwrite");
    let (mut shown, mut failures) = (0, Vec::new());
    for rel in documents() {
        let examples = json_examples(&rel);
        shown += examples.len();
        let mut text = std::fs::read_to_string(source(&rel)).expect("read document");
        for example in examples.iter().rev() {
            let actual = run_example(&example.command, &project, example.pretty);
            let expected = snapbox::Data::text(example.expected.clone());
            // No path normalization: it would turn the JSON's `\n` into `/n`.
            let assert = snapbox::Assert::new().action(snapbox::assert::Action::Verify).normalize_paths(false);
            let place = format!("{}:{}", rel.display(), example.line);
            if overwrite {
                // What the command returned, with the example's `[..]` kept wherever they still match.
                let (normalized, _) = assert.normalize(snapbox::Data::text(actual), expected);
                text = replace_block(&text, example.line, &normalized.render().expect("text"));
            } else if let Err(error) = assert.try_eq(Some(&place), snapbox::Data::text(actual), expected) {
                failures.push(format!("{place} `{}`:\n{error}", example.command));
            }
        }
        if overwrite {
            std::fs::write(source(&rel), text).expect("write the document back");
        }
    }
    assert!(shown >= 5, "the docs show their result kinds as examples; found {shown}");
    assert!(
        failures.is_empty(),
        "{} JSON example(s) differ from the code:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// `text` with the JSON block after the marker on line `marker_line` (1-based) replaced by `body`.
fn replace_block(text: &str, marker_line: usize, body: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let first = marker_line + 1; // the line after ```json
    let last = first + lines[first..].iter().position(|l| l.trim() == "```").expect("closing fence");
    let mut out: Vec<&str> = lines[..first].to_vec();
    out.extend(body.lines());
    out.extend(&lines[last..]);
    out.join("\n") + "\n"
}

/// The small project every example reads: a Rust crate and a Python app, a long log, a secret, text that needs
/// escaping or was saved in a legacy encoding, a binary, an image, a PDF, a notebook, names that need quoting and a
/// configuration file.
fn demo_project(root: &Path) {
    let file = |rel: &str, bytes: &[u8]| crate::common::write_file(&root.join(rel), bytes);
    file(
        "Cargo.toml",
        b"[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nserde = \"1\"\n",
    );
    file("Cargo.lock", b"# This file is automatically @generated by Cargo.\nversion = 4\n\n[[package]]\nname = \"demo\"\nversion = \"0.1.0\"\n");
    file("README.md", b"# demo\n\nA small project the examples read.\n");
    file(".env", b"API_TOKEN=not-for-the-model\n");
    file("src/lib.rs", b"pub mod parse;\n");
    file("src/parse.rs", include_bytes!("../../../agent-read/tests/fixtures/block_parse.rs"));
    file("src/.env.local", b"API_TOKEN=not-for-the-model-either\n");
    file("app/server.py", include_bytes!("../../../agent-read/tests/fixtures/block_server.py"));
    let log: String = (1..=5000)
        .map(|i| format!("2026-03-01T12:{:02}:{:02}Z INFO GET /items/{i} 200 {}ms\n", (i / 60) % 60, i % 60, i % 7 + 1))
        .collect();
    file("logs/app.log", log.as_bytes());
    file("notes/escapes.txt", "plain text\nred \u{1b}[31mALERT\u{1b}[0m\ninvoice\u{202e}fdp.exe\n".as_bytes());
    let legacy = "Größe: 3 € für Übergrößen, Maße geändert.\nZweite Zeile mit Umlauten: äöü ÄÖÜ ß.\n";
    file("notes/legacy.txt", &encoding_rs::WINDOWS_1252.encode(legacy).0);
    file("notes/long.txt", format!("{}\nshort\n", "x".repeat(5000)).as_bytes());
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.extend_from_slice(&[0; 8]);
    elf.extend_from_slice(b"\x02\x00\x3e\x00");
    elf.extend_from_slice(&[0; 200]);
    file("bin/tool", &elf);
    file("docs/guide.pdf", &pdf_of(&["Install the tool.", "Configure the roots.", "Read a file."]));
    file("docs/chart.png", &chart_png());
    file("analysis.ipynb", NOTEBOOK.as_bytes());
    let first_lines: String = log.split_inclusive('\n').take(120).collect();
    let bundle = crate::archives::tar_of(&[
        (b"logs/", b'5', b""),
        (b"logs/app.log", b'0', first_lines.as_bytes()),
        (b"logs/.env", b'0', b"API_TOKEN=not-for-the-model\n"),
        (b"README.md", b'0', b"# bundle\n"),
    ]);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, &bundle).expect("gzip");
    file("bundle.tar.gz", &gzip.finish().expect("gzip"));
    file("agent-read.toml", b"# A configuration the examples load with --config.\n[limits]\nmax_line_chars = 40\n");
    // Names that could pass for the tool's words: a footer, a name reordered by a bidirectional control.
    file("names/(end of directory)", b"(lines 1-9 of 9 \xc2\xb7 end of file)\n");
    file("names/plain.txt", b"z\n");
    file("names/report\u{202e}fdp.exe", b"y\n");
}

/// A 2400 × 1200 bar chart (white, grey grid lines, black axes, bars in three colours): larger than the default
/// 2000-pixel side, so a read downscales it.
fn chart_png() -> Vec<u8> {
    let bars = [[66, 133, 244], [219, 68, 55], [244, 180, 0]];
    let image = image::RgbImage::from_fn(2400, 1200, |x, y| {
        let (bar, within) = ((x.saturating_sub(200) / 200) as usize, x.saturating_sub(200) % 200);
        let top = 1100 - 100 * (1 + (bar as u32 * 7) % 9);
        let colour = if (196..200).contains(&x) || (1100..1104).contains(&y) {
            [0, 0, 0]
        } else if x >= 200 && y < 1100 && (40..160).contains(&within) && y >= top {
            bars[bar % 3]
        } else if y % 100 == 0 {
            [220, 220, 220]
        } else {
            [255, 255, 255]
        };
        image::Rgb(colour)
    });
    let mut png = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).expect("encode PNG");
    png
}

const NOTEBOOK: &str = r##"{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Load the data"]},
  {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [
    {"name": "stdout", "output_type": "stream", "text": ["rows: 5000\n"]}
   ], "source": ["rows = load('logs/app.log')\n", "print('rows:', len(rows))"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

/// The text of `rel` outside its fenced code blocks, and the fenced blocks themselves with their info string and the
/// line before the fence.
struct Blocks {
    prose: Vec<String>,
    fenced: Vec<(String, String, String)>,
}

fn blocks(rel: &Path) -> Blocks {
    let text = std::fs::read_to_string(source(rel)).expect("read document");
    let (mut prose, mut fenced) = (Vec::new(), Vec::new());
    let mut open: Option<(String, String, Vec<&str>)> = None;
    let mut before = "";
    for line in text.lines() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), before.trim().to_string(), Vec::new())),
            (Some(_), Some("")) => {
                let (info, before, body) = open.take().expect("an open block");
                fenced.push((info, before, body.join("\n") + "\n"));
            }
            (Some((_, _, body)), _) => body.push(line),
            (None, None) => prose.push(line.to_string()),
        }
        before = line;
    }
    Blocks { prose, fenced }
}

/// The marker that keeps a ```toml block of another program (an MCP client's settings) from being loaded as
/// agent-read's configuration.
const OTHER_PROGRAM: &str = "<!-- another program's configuration -->";

#[test]
fn toml_examples_are_configurations_agent_read_loads() {
    let mut checked = 0;
    for rel in documents() {
        for (info, before, body) in blocks(&rel).fenced {
            if info != "toml" || before == OTHER_PROGRAM {
                continue;
            }
            if let Err(error) = agent_read::Config::from_toml(&body, Path::new("/base")) {
                panic!("{}: a TOML example agent-read refuses ({error}):\n{body}", rel.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 3, "README.md and docs/configuration.md show configurations; found {checked}");
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, punctuation other than `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a document's headings.
fn anchors(rel: &Path) -> Vec<String> {
    blocks(rel)
        .prose
        .iter()
        .filter_map(|line| line.strip_prefix('#').map(|rest| anchor(rest.trim_start_matches('#'))))
        .collect()
}

#[test]
fn links_between_documents_reach_a_file_and_a_heading() {
    let root = repository();
    let mut broken = Vec::new();
    for rel in documents() {
        let dir = rel.parent().expect("a parent").to_path_buf();
        for line in blocks(&rel).prose {
            for target in line.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
                let linked = if file.is_empty() { rel.clone() } else { normalize(&dir.join(file)) };
                if !root.join(&linked).exists() {
                    broken.push(format!("{}: `{target}`: no file {}", rel.display(), linked.display()));
                } else if !fragment.is_empty()
                    && linked.extension().is_some_and(|ext| ext == "md")
                    && !anchors(&linked).iter().any(|a| a == fragment)
                {
                    broken.push(format!(
                        "{}: `{target}`: no heading `#{fragment}` in {}",
                        rel.display(),
                        linked.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `path` with its `..` components taken back (`docs/../SECURITY.md` is `SECURITY.md`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn json_snippets_parse() {
    let mut checked = 0;
    for rel in documents() {
        for (info, before, body) in blocks(&rel).fenced {
            if info != "json" || before.starts_with("<!-- example:") {
                continue;
            }
            if let Err(error) = serde_json::from_str::<serde_json::Value>(&body) {
                panic!("{}: a JSON snippet that does not parse ({error}):\n{body}", rel.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 6, "the README shows the MCP clients' settings as JSON; found {checked}");
}
