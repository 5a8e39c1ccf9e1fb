//! The examples the documentation shows are run, so that none can drift from the code.
//!
//! - Every `console` block of README.md and docs/*.md runs through trycmd: each `$ agent-read …` line is run and
//!   what it prints (standard output and error together), and its exit status (`? 1`), must match the block.
//! - Every pretty JSON result in docs/*.md that follows a `<!-- example: … -->` line is compared with what that
//!   command returns, pretty-printed. `[..]` in a line matches anything (a time, a base64 payload), and a line `...`
//!   any lines.
//!
//! Each document reads its own copy of one small project, [`demo_project`], from the project's root: commands run
//! there with no `--root`, as a person would in their checkout.
//!
//! `TRYCMD=overwrite cargo test --test docs` writes what the binary printed back into the documents, keeping the
//! `[..]` that still match.

mod common;

use common::pdf::pdf_of;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_agent-read");

/// README.md and every Markdown file in docs/, relative to the crate.
fn documents() -> Vec<PathBuf> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![PathBuf::from("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(crate_dir.join("docs"))
        .expect("docs/ exists")
        .map(|entry| PathBuf::from("docs").join(entry.expect("docs/ entry").file_name()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

fn source(rel: &Path) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
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

/// One `<!-- example: … -->` line and the JSON block after it.
struct JsonExample {
    /// The marker's line, 1-based.
    line: usize,
    command: String,
    expected: String,
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
        assert_eq!(lines.get(index + 1).map(|l| l.trim()), Some("```json"), "{}:{}: a ```json block must follow", rel.display(), index + 1);
        let body: Vec<&str> = lines[index + 2..].iter().take_while(|l| l.trim() != "```").copied().collect();
        examples.push(JsonExample {
            line: index + 1,
            command: command.trim().to_string(),
            expected: body.join("\n") + "\n",
        });
    }
    examples
}

/// What an example's command returns, as pretty JSON in the order the keys were written. `agent-read ARGS…` runs the binary (no shell: arguments are
/// split on spaces, globs reach it as written); `session-repeat PATH` reads PATH twice in a library session with
/// repeat notices on and returns the second answer.
fn run_example(command: &str, project: &Path) -> String {
    let mut words = command.split_whitespace();
    match words.next() {
        Some("agent-read") => {
            let output = std::process::Command::new(BIN).args(words).current_dir(project).output().expect("run binary");
            let mut parsed = serde_json::Deserializer::from_slice(&output.stdout);
            let mut pretty = serde_json::Serializer::pretty(Vec::new());
            serde_transcode::transcode(&mut parsed, &mut pretty)
                .unwrap_or_else(|e| panic!("`{command}` printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)));
            String::from_utf8(pretty.into_inner()).expect("JSON is UTF-8") + "\n"
        }
        Some("session-repeat") => {
            let path = words.next().expect("a path");
            let reader = agent_read::Reader::new(agent_read::Config::with_roots([project])).expect("reader");
            let settings = agent_read::SessionSettings { repeat_read_stubs: true, ..Default::default() };
            let session = agent_read::Session::new(Arc::new(reader), settings).expect("session");
            session.read(&agent_read::ReadRequest::new(path));
            serde_json::to_string_pretty(&session.read(&agent_read::ReadRequest::new(path))).expect("result as JSON") + "\n"
        }
        other => panic!("unknown example command {other:?} in `{command}`"),
    }
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
            let actual = run_example(&example.command, &project);
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
    assert!(failures.is_empty(), "{} JSON example(s) differ from the code:\n\n{}", failures.len(), failures.join("\n\n"));
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
/// escaping or was saved in a legacy encoding, a binary, an image, a PDF and a notebook.
fn demo_project(root: &Path) {
    let file = |rel: &str, bytes: &[u8]| common::write_file(&root.join(rel), bytes);
    file("Cargo.toml", b"[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nserde = \"1\"\n");
    file("Cargo.lock", b"# This file is automatically @generated by Cargo.\nversion = 4\n\n[[package]]\nname = \"demo\"\nversion = \"0.1.0\"\n");
    file("README.md", b"# demo\n\nA small project the examples read.\n");
    file(".env", b"API_TOKEN=not-for-the-model\n");
    file("src/lib.rs", b"pub mod parse;\n");
    file("src/parse.rs", include_bytes!("fixtures/block_parse.rs"));
    file("src/.env.local", b"API_TOKEN=not-for-the-model-either\n");
    file("app/server.py", include_bytes!("fixtures/block_server.py"));
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
}

/// A 2400 × 1200 gradient: larger than the default 2000-pixel side, so a read downscales it.
fn chart_png() -> Vec<u8> {
    let image = image::RgbImage::from_fn(2400, 1200, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 128]));
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
