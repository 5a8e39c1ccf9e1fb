//! Documents through the binary: DOCX, XLSX, PPTX and HTML converted to text and windowed like any text; damaged,
//! encrypted and hostile documents refused cleanly, in bounded memory. The fixtures are made by python-docx, openpyxl,
//! python-pptx and msoffcrypto-tool (`tests/fixtures/documents/make.py`).

use crate::common::mcp::{call, text_of};
use crate::common::{Bin, Ws, output, parse_one_json};
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::time::Duration;

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!("../fixtures/documents/", $name)).as_slice()
    };
}

fn read(ws: &Ws, request: Value) -> Value {
    let out = ws.cmd().write_stdin(request.to_string()).output().expect("run");
    parse_one_json(&out.stdout)
}

fn footer(out: &str) -> &str {
    out.lines().last().unwrap_or_default()
}

#[test]
fn a_docx_reads_as_headings_lists_tables_links_and_comments() {
    let ws = Ws::new();
    ws.file("report.docx", fixture!("report.docx"));
    let result = read(&ws, json!({"path": "report.docx"}));
    assert_eq!(result["kind"], "text", "{result}");
    assert_eq!(result["meta"]["rendered_from"], "docx");
    let out = output(&result);
    for expected in [
        "1: # Quarterly report\n",
        "3: # Summary\n",
        "5: Revenue grew by 12% over the quarter. See [the dashboard](https://example.com/q3).\n",
        "7: ## Findings\n",
        "9: - First finding\n10: - Second finding\n11: 1. Step one\n12: 2. Step two\n",
        "14: | Region | Q2 | Q3 |\n15: | --- | --- | --- |\n16: | North | 10 | 12 |\n17: | South \\| East | 7 | 9 |\n",
        "A sentence someone commented on.[comment 0]\n",
        "[comment 0] Ana: Check this figure\n",
    ] {
        assert!(out.contains(expected), "{expected:?} not in:\n{out}");
    }
    assert!(footer(out).contains("converted from Word document (DOCX)"), "{}", footer(out));
    // Windowed like any text: the footer's next call reads on.
    let window = read(&ws, json!({"path": "report.docx", "offset": 9, "limit": 2}));
    let out = output(&window);
    assert!(out.starts_with("9: - First finding\n10: - Second finding\n"), "{out}");
    assert!(footer(out).ends_with("next: offset=11 limit=2)"), "{}", footer(out));
}

#[test]
fn a_docx_footnote_is_marked_and_given_after_the_body() {
    let ws = Ws::new();
    ws.file("notes.docx", fixture!("notes.docx"));
    let out = output(&read(&ws, json!({"path": "notes.docx"}))).to_string();
    assert!(out.starts_with("1: Figures are audited.[^1]\n2: \n3: [^1]: Source: the finance team.\n"), "{out}");
}

#[test]
fn an_xlsx_has_a_unit_per_sheet_chosen_with_pages_with_dates_and_cached_formula_values() {
    let ws = Ws::new();
    ws.file("book.xlsx", fixture!("book.xlsx"));
    let whole = read(&ws, json!({"path": "book.xlsx"}));
    assert_eq!(whole["meta"]["rendered_from"], "xlsx");
    assert_eq!(whole["meta"]["page_count"], 3);
    let out = output(&whole);
    assert!(
        out.starts_with(
            "1: ── sheet 1 of 3: Sales ──\n2: │ | Date | Region | Units | Price | Total |\n3: │ | --- | --- | --- | --- | --- |\n\
             4: │ | 2024-03-01 | North | 3 | 2.5 | 7.5 |\n5: │ | 2024-03-02 | South | 4 | 1.25 | 5 |\n"
        ),
        "{out}"
    );
    assert!(out.contains("│ | Meeting at | 2024-03-05 14:30:00 |"), "{out}");
    assert!(footer(out).contains("3 sheet(s): 1 Sales, 2 Costs, 3 Notes"), "{}", footer(out));
    // `pages` chooses sheets; a window of them names the sheets again in its next call.
    let costs = read(&ws, json!({"path": "book.xlsx", "pages": "2", "limit": 2}));
    assert_eq!(costs["meta"]["pages_shown"], "2");
    let out = output(&costs);
    assert!(out.starts_with("1: ── sheet 2 of 3: Costs ──\n2: │ | Item | Cost |\n"), "{out}");
    assert!(footer(out).ends_with("next: pages=2 offset=3 limit=2)"), "{}", footer(out));
    let past = read(&ws, json!({"path": "book.xlsx", "pages": "4"}));
    assert_eq!(past["error_code"], "INVALID_RANGE", "{past}");
    assert!(output(&past).contains("sheet 4 is past the end: book.xlsx has 3 sheet(s)"), "{past}");
}

#[test]
fn a_pptx_has_a_unit_per_slide_with_title_text_tables_and_notes() {
    let ws = Ws::new();
    ws.file("deck.pptx", fixture!("deck.pptx"));
    let out = output(&read(&ws, json!({"path": "deck.pptx", "pages": "2"}))).to_string();
    let expected = "1: ── slide 2 of 3: Milestones ──\n2: │ # Milestones\n3: │\n4: │ Beta in March\n5: │   Detail under beta\n\
                    6: │\n7: │ | Phase | Date |\n8: │ | --- | --- |\n9: │ | GA | June |\n10: │\n11: │ Notes:\n\
                    12: │ Stress the June date.\n";
    assert!(out.starts_with(expected), "{out}");
    let all = read(&ws, json!({"path": "deck.pptx"}));
    assert!(output(&all).contains("│ Welcome everyone; introduce the team."), "{all}");
    assert_eq!(all["meta"]["page_count"], 3);
    // `find` searches the converted text and names the slide of each match.
    let found = read(&ws, json!({"path": "deck.pptx", "find": "June", "context": 0}));
    let out = output(&found);
    assert!(out.contains(": ⟨slide 2⟩ │ | GA | June |\n"), "{out}");
    assert!(out.contains(": ⟨slide 2⟩ │ Stress the June date.\n"), "{out}");
}

const PAGE: &str = r#"<!doctype html><html><head><title>Shop</title><style>body { color: red }</style>
<script>var tracking = "SECRET-SCRIPT";</script></head><body>
<nav hidden>SECRET-NAV</nav><h1>Welcome</h1><p>Read the <a href="/docs/start">getting started guide</a> first.</p>
<div style="display: none">SECRET-DISPLAY</div><p aria-hidden="true">SECRET-ARIA</p><template>SECRET-TEMPLATE</template>
<ul><li>Fast</li><li>Small</li></ul><table><tr><th>Plan</th><th>Price</th></tr><tr><td>Free</td><td>0</td></tr></table>
<noscript>SECRET-NOSCRIPT</noscript></body></html>"#;

#[test]
fn an_html_page_reads_as_its_text_without_script_style_or_hidden_content() {
    let ws = Ws::new();
    ws.file("shop.html", PAGE);
    let result = read(&ws, json!({"path": "shop.html"}));
    assert_eq!(result["meta"]["rendered_from"], "html");
    let out = output(&result);
    assert!(out.contains("# Welcome\n"), "{out}");
    assert!(out.contains("Read the [getting started guide](/docs/start) first."), "{out}");
    assert!(out.contains("- Fast\n") && out.contains("- Small\n"), "{out}");
    assert!(out.contains("| Plan | Price |\n") && out.contains("| Free | 0 |\n"), "{out}");
    assert!(!out.contains("SECRET") && !out.contains("color: red") && !out.contains("Shop"), "{out}");
    // The markup stays readable: by bytes, or with an encoding forced.
    let markup = read(&ws, json!({"path": "shop.html", "encoding": "utf-8"}));
    assert!(output(&markup).contains("SECRET-SCRIPT"), "{markup}");
    let bytes = read(&ws, json!({"path": "shop.html", "start_byte": 0, "end_byte": 40}));
    assert!(output(&bytes).contains("<!doctype html>"), "{bytes}");
}

#[test]
fn a_truncated_docx_is_refused_as_damaged() {
    let ws = Ws::new();
    let whole = fixture!("report.docx");
    ws.file("cut.docx", &whole[..whole.len() / 2]);
    let result = read(&ws, json!({"path": "cut.docx"}));
    assert_eq!(result["error_code"], "BINARY", "{result}");
    let out = output(&result);
    assert!(out.contains("cut.docx: Word document (DOCX) that cannot be read"), "{out}");
    assert!(out.contains("damaged, truncated"), "{out}");
}

#[test]
fn an_encrypted_xlsx_is_refused_as_password_protected() {
    let ws = Ws::new();
    ws.file("locked.xlsx", fixture!("encrypted.xlsx"));
    let result = read(&ws, json!({"path": "locked.xlsx"}));
    assert_eq!(result["error_code"], "BINARY", "{result}");
    assert!(output(&result).contains("password-protected Office document"), "{result}");
    assert!(output(&result).contains("ask the user for an unprotected copy"), "{result}");
}

#[test]
fn pages_of_a_docx_is_refused_with_the_way_to_page_it() {
    let ws = Ws::new();
    ws.file("report.docx", fixture!("report.docx"));
    let result = read(&ws, json!({"path": "report.docx", "pages": "2"}));
    assert_eq!(result["error_code"], "INVALID_PARAM", "{result}");
    assert!(output(&result).contains("page through its text with offset and limit"), "{result}");
}

/// The address space the hostile documents are read in.
#[cfg(unix)]
const SMALL_MEMORY: u64 = 256 << 20;

#[cfg(unix)]
fn read_in_small_memory(ws: &Ws, request: Value) -> Value {
    let mut cmd = ws.cmd_with_memory_limit(SMALL_MEMORY);
    cmd.args(["--timeout-ms", "120000"]).timeout(Duration::from_secs(180));
    let out = cmd.write_stdin(request.to_string()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

#[cfg(unix)]
#[test]
fn zip_bombs_and_oversized_parts_are_refused_in_256_mb() {
    let ws = Ws::new();
    // A body that inflates to 384 MiB; shared strings past their cap; one cell of 300 MiB of text.
    ws.file("bomb.docx", fixture!("bomb.docx"));
    ws.file("strings.xlsx", fixture!("strings_bomb.xlsx"));
    ws.file("cell.xlsx", fixture!("long_cell.xlsx"));
    for (path, says) in [
        ("bomb.docx", "part word/document.xml inflates past 32.0 MiB"),
        ("strings.xlsx", "part xl/sharedStrings.xml inflates past"),
        ("cell.xlsx", "part xl/worksheets/sheet1.xml holds a single text or tag over 4.0 MiB"),
    ] {
        let result = read_in_small_memory(&ws, json!({"path": path}));
        assert_eq!(result["error_code"], "TOO_LARGE", "{path}: {result}");
        assert!(output(&result).contains(says), "{path}: {result}");
    }
}

#[tokio::test]
async fn the_mcp_server_reads_a_workbook_sheet() {
    let ws = Ws::new();
    ws.file("book.xlsx", fixture!("book.xlsx"));
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(&ws.root);
    });
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("initialize");
    let result = call(&client, json!({"path": "book.xlsx", "pages": "3"})).await;
    assert_eq!(result.is_error, Some(false));
    let text = text_of(&result);
    assert!(text.starts_with("1: ── sheet 3 of 3: Notes ──\n2: │ | Meeting at | 2024-03-05 14:30:00 |\n"), "{text}");
    assert_eq!(result.structured_content.expect("structured")["meta"]["rendered_from"], "xlsx");
    client.cancel().await.expect("cancel");
}
