//! Notebooks through the binary: cells rendered as text, then windowed like any text; invalid notebook JSON read as
//! plain text with a notice.

use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::Path;

fn read_json(root: &Path, request: Value) -> Value {
    let out = Command::cargo_bin("agent-read")
        .unwrap()
        .arg("--root")
        .arg(root)
        .write_stdin(request.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn notebook() -> Value {
    let image = "iVBORw0KGgo".repeat(4000);
    let long_output: String = (0..600).map(|i| format!("row {i:04}\n")).collect();
    json!({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Results\n", "Loss by epoch."]},
            {"cell_type": "code", "execution_count": 7, "metadata": {}, "source": "plot(losses)\nlosses[-1]",
             "outputs": [
                {"output_type": "stream", "name": "stdout", "text": long_output},
                {"output_type": "display_data", "metadata": {},
                 "data": {"image/png": image, "text/plain": "<Figure size 640x480>"}},
                {"output_type": "execute_result", "execution_count": 7, "metadata": {}, "data": {"text/plain": "0.031"}}
             ]}
        ]
    })
}

#[test]
fn cells_are_rendered_with_index_kind_source_and_text_outputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.ipynb"), notebook().to_string()).unwrap();
    let result = read_json(dir.path(), json!({"path": "train.ipynb", "limit": 8}));
    assert_eq!(result["kind"], "text");
    assert_eq!(result["meta"]["rendered_from"], "notebook");
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with(
            "1: [cell 1 · markdown]\n2: │ # Results\n3: │ Loss by epoch.\n4: \n5: [cell 2 · code · In [7]]\n\
             6: │ plot(losses)\n7: │ losses[-1]\n8: [output · stream stdout]\n"
        ),
        "{output}"
    );
    assert!(!output.contains("iVBORw0KGgo"), "base64 never reaches the model");
    let footer = output.lines().last().unwrap();
    assert!(footer.contains("notebook: 2 cell(s)"), "{footer}");
    assert!(footer.contains("1 long output(s) cut") && footer.contains("1 image output(s) described"), "{footer}");
    assert!(footer.ends_with("next: offset=9 limit=8)"), "{footer}");
}

#[test]
fn long_outputs_are_cut_with_a_marker_and_images_are_described() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.ipynb"), notebook().to_string()).unwrap();
    let result = read_json(dir.path(), json!({"path": "train.ipynb"}));
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("row 0000"), "{output}");
    assert!(!output.contains("row 0599"), "the long output is cut: {output}");
    assert!(output.contains("… [output cut: "), "{output}");
    assert!(output.contains("(image output: image/png, "), "{output}");
    assert!(output.contains("<Figure size 640x480>") && output.contains("0.031"), "{output}");
    assert!(output.len() < 8 * 1024, "a few KiB of model text, not the 50 KiB image: {} bytes", output.len());
}

#[test]
fn the_rendered_notebook_pages_to_its_end_without_gaps() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.ipynb"), notebook().to_string()).unwrap();
    let whole = read_json(dir.path(), json!({"path": "train.ipynb"}));
    let total = whole["meta"]["total_lines"].as_u64().unwrap();
    let mut lines = Vec::new();
    let mut offset = 1;
    loop {
        let page = read_json(dir.path(), json!({"path": "train.ipynb", "offset": offset, "limit": 50}));
        let output = page["output"].as_str().unwrap();
        lines.extend(output.lines().filter(|l| !l.starts_with('(')).map(str::to_string));
        match page["meta"]["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(lines.len() as u64, total);
    let expected: Vec<String> =
        whole["output"].as_str().unwrap().lines().filter(|l| !l.starts_with('(')).map(str::to_string).collect();
    assert_eq!(lines, expected);
}

#[test]
fn a_notebook_saved_with_a_byte_order_mark_in_utf_8_or_utf_16_is_still_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let json = notebook().to_string();
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(json.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    std::fs::write(dir.path().join("utf16.ipynb"), utf16).unwrap();
    std::fs::write(dir.path().join("bom.ipynb"), [&b"\xEF\xBB\xBF"[..], json.as_bytes()].concat()).unwrap();
    for name in ["utf16.ipynb", "bom.ipynb"] {
        let result = read_json(dir.path(), json!({"path": name, "limit": 2}));
        assert_eq!(result["meta"]["rendered_from"], "notebook", "{name}: {}", result["output"]);
        assert!(result["output"].as_str().unwrap().starts_with("1: [cell 1 · markdown]\n2: │ # Results\n"), "{name}");
    }
}

#[test]
fn invalid_notebook_json_is_read_as_plain_text_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.ipynb"), "{\"cells\": [\n  {\"cell_type\": \"code\",\n").unwrap();
    let result = read_json(dir.path(), json!({"path": "broken.ipynb"}));
    assert_eq!(result["kind"], "text");
    assert!(result["meta"].get("rendered_from").is_none());
    let output = result["output"].as_str().unwrap();
    assert!(output.starts_with("1: {\"cells\": [\n2:   {\"cell_type\": \"code\",\n"), "{output}");
    assert!(
        output.ends_with("(lines 1-2 of 2 · 36 B · not valid notebook JSON: shown as plain text · end of file)"),
        "{output}"
    );
}

#[test]
fn a_forced_encoding_reads_the_notebook_json_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.ipynb"), notebook().to_string()).unwrap();
    let result = read_json(dir.path(), json!({"path": "train.ipynb", "encoding": "utf-8", "limit": 1}));
    assert!(result["output"].as_str().unwrap().starts_with("1: {\"cells\":"), "{}", result["output"]);
}

#[test]
fn a_notebook_too_big_to_parse_is_read_as_json_text_without_parsing_it() {
    // 100,000 empty objects: 300 KB on disk, but parsed each would take a map node — about 70 MB in all.
    let dir = tempfile::tempdir().unwrap();
    let cells = vec!["{}"; 100_000].join(",");
    std::fs::write(dir.path().join("many.ipynb"), format!("{{\"cells\": [{cells}]}}")).unwrap();
    let result = read_json(dir.path(), json!({"path": "many.ipynb"}));
    assert_eq!(result["kind"], "text");
    assert!(result["meta"].get("rendered_from").is_none());
    let output = result["output"].as_str().unwrap();
    assert!(output.starts_with("1: {\"cells\": [{},{},"), "{output}");
    assert!(output.contains("notebook too large to render (over 64.0 MiB parsed) shown as JSON text"), "{output}");
    // Fewer of the same objects render as cells.
    let cells = vec!["{}"; 1_000].join(",");
    std::fs::write(dir.path().join("some.ipynb"), format!("{{\"cells\": [{cells}]}}")).unwrap();
    let result = read_json(dir.path(), json!({"path": "some.ipynb", "limit": 1}));
    assert_eq!(result["meta"]["rendered_from"], "notebook");
}

#[test]
fn a_notebook_whose_rendering_runs_past_the_time_budget_says_how_to_read_it_instead() {
    let dir = tempfile::tempdir().unwrap();
    let cell = json!({"cell_type": "code", "source": "x = 1", "outputs": [{"output_type": "stream", "text": "1"}]});
    let cells: Vec<Value> = vec![cell; 60_000];
    std::fs::write(dir.path().join("long.ipynb"), json!({"cells": cells}).to_string()).unwrap();
    let out = Command::cargo_bin("agent-read")
        .unwrap()
        .args(["--timeout-ms", "1", "--root"])
        .arg(dir.path())
        .write_stdin(json!({"path": "long.ipynb"}).to_string())
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["error_code"], "TIMEOUT", "{result}");
    assert!(result["hint"].as_str().unwrap().contains("encoding=\"utf-8\""), "{result}");
}
