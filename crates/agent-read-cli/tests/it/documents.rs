//! Documents through the binary: DOCX, ODT, XLSX, XLS, ODS, PPTX, EPUB and HTML converted to text and windowed like
//! any text, a window deep in a long sheet included; damaged, encrypted and hostile documents refused cleanly, in
//! bounded memory. The fixtures are made by python-docx, openpyxl, python-pptx, msoffcrypto-tool, LibreOffice, odfpy
//! and EbookLib (`tests/fixtures/documents/make.py`); the long workbooks by the tests themselves.

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

#[test]
fn an_odt_reads_as_headings_lists_tables_links_and_comments() {
    let ws = Ws::new();
    ws.file("report.odt", fixture!("report.odt"));
    let result = read(&ws, json!({"path": "report.odt"}));
    assert_eq!(result["meta"]["rendered_from"], "odt", "{result}");
    let out = output(&result);
    for expected in [
        "1: # Quarterly report\n2: \n3: # Summary\n",
        "5: Revenue grew by 12% over the quarter. See [the dashboard](https://example.com/q3).\n",
        "7: ## Findings\n",
        "9: - First finding\n10: - Second finding\n11: 1. Step one\n12: 2. Step two\n",
        "14: | Region | Q2 | Q3 |\n15: | --- | --- | --- |\n16: | North | 10 | 12 |\n17: | South \\| East | 7 | 9 |\n",
        ": A sentence someone commented on.[comment 1]\n",
        ": [comment 1] Ana: Check this figure\n",
    ] {
        assert!(out.contains(expected), "{expected:?} not in:\n{out}");
    }
    assert!(footer(out).contains("converted from OpenDocument text (ODT)"), "{}", footer(out));
}

#[test]
fn an_odt_marks_footnotes_endnotes_and_annotations_and_numbers_lists_by_their_style() {
    let ws = Ws::new();
    ws.file("notes.odt", fixture!("notes.odt"));
    let out = output(&read(&ws, json!({"path": "notes.odt"}))).to_string();
    let expected = "1: # Method\n2: \n3: Figures are audited[^1] and final[^i].\n4: \n5: 1. Collect\n6:   - from sales\n\
                    7:   - from costs\n8: 2. Compare\n9: \n10: Reviewed by the board.[comment 1]\n11: \n\
                    12: [^1]: Source: the finance team.\n13: \n14: [^i]: Closed in March.\n15: \n16: [comment 1] Ben: Which board?\n";
    assert!(out.starts_with(expected), "{out}");
}

/// What the window shows, without its footer.
fn lines(out: &str) -> &str {
    out.rsplit_once("\n(").map_or(out, |(lines, _)| lines)
}

#[test]
fn an_ods_and_an_xls_read_as_the_xlsx_they_were_saved_from() {
    let ws = Ws::new();
    ws.file("book.xlsx", fixture!("book.xlsx"));
    ws.file("book.ods", fixture!("book.ods"));
    ws.file("book.xls", fixture!("book.xls"));
    let xlsx = read(&ws, json!({"path": "book.xlsx"}));
    for (path, kind, described) in
        [("book.ods", "ods", "OpenDocument spreadsheet (ODS)"), ("book.xls", "xls", "Excel 97-2003 workbook (XLS)")]
    {
        let result = read(&ws, json!({"path": path}));
        assert_eq!(result["meta"]["rendered_from"], kind, "{result}");
        assert_eq!(result["meta"]["page_count"], 3, "{result}");
        // The dates, the cached values of the formulas and the header rows, line for line.
        assert_eq!(lines(output(&result)), lines(output(&xlsx)), "{path}");
        let tail = footer(output(&result));
        assert!(
            tail.contains(&format!("converted from {described} · 3 sheet(s): 1 Sales, 2 Costs, 3 Notes")),
            "{tail}"
        );
        let costs = read(&ws, json!({"path": path, "pages": "2", "limit": 2}));
        let out = output(&costs);
        assert!(out.starts_with("1: ── sheet 2 of 3: Costs ──\n2: │ | Item | Cost |\n"), "{path}: {out}");
        assert!(footer(out).ends_with("next: pages=2 offset=3 limit=2)"), "{}", footer(out));
    }
}

#[test]
fn an_epub_has_a_unit_per_chapter_titled_from_its_table_of_contents() {
    let ws = Ws::new();
    ws.file("guide.epub", fixture!("guide.epub"));
    let whole = read(&ws, json!({"path": "guide.epub"}));
    assert_eq!(whole["meta"]["rendered_from"], "epub", "{whole}");
    assert_eq!(whole["meta"]["page_count"], 3);
    let out = output(&whole);
    assert!(
        out.starts_with(
            "1: ── chapter 1 of 3: Introduction ──\n2: │ # Introduction\n3: │\n\
             4: │ Welcome to the [field guide](https://example.com/guide).\n5: │\n6: │ - Maps\n7: │ - Tools\n8: \n"
        ),
        "{out}"
    );
    assert!(footer(out).contains("3 chapter(s): 1 Introduction, 2 Birds, 3 Farewell"), "{}", footer(out));
    let about =
        "converted from EPUB book · title Field guide; by A. Writer; language en; identifier agent-read-fixture ·";
    assert!(footer(out).contains(about), "the book's metadata: {}", footer(out));
    let birds = read(&ws, json!({"path": "guide.epub", "pages": "2"}));
    let out = output(&birds);
    assert!(out.starts_with("1: ── chapter 2 of 3: Birds ──\n2: │ # Birds\n3: │\n4: │ | Bird | Season |\n"), "{out}");
    let found = read(&ws, json!({"path": "guide.epub", "find": "Swift", "context": 0}));
    assert!(output(&found).contains(": ⟨chapter 2⟩ │ | Swift | Summer |\n"), "{found}");
}

#[test]
fn encrypted_xls_odt_and_epub_are_refused_as_password_protected() {
    let ws = Ws::new();
    ws.file("locked.xls", fixture!("encrypted.xls"));
    ws.file("locked.odt", fixture!("encrypted.odt"));
    ws.file("locked.epub", fixture!("encrypted.epub"));
    for (path, what) in [
        ("locked.xls", "Excel 97-2003 workbook (XLS)"),
        ("locked.odt", "OpenDocument text (ODT)"),
        ("locked.epub", "EPUB book"),
    ] {
        let result = read(&ws, json!({"path": path}));
        assert_eq!(result["error_code"], "BINARY", "{result}");
        let out = output(&result);
        assert!(out.contains(&format!("{path}: {what} encrypted with a password")), "{out}");
        assert!(out.contains("ask the user for an unprotected copy"), "{out}");
    }
}

#[test]
fn truncated_ods_xls_and_epub_files_are_refused_as_damaged() {
    let ws = Ws::new();
    for (path, whole) in
        [("cut.ods", fixture!("book.ods")), ("cut.xls", fixture!("book.xls")), ("cut.epub", fixture!("guide.epub"))]
    {
        ws.file(path, &whole[..whole.len() / 2]);
        let result = read(&ws, json!({"path": path}));
        assert_eq!(result["error_code"], "BINARY", "{path}: {result}");
        assert!(output(&result).contains("that cannot be read"), "{path}: {result}");
    }
}

#[test]
fn an_ole_file_is_a_workbook_by_its_workbook_stream_whatever_its_name() {
    let ws = Ws::new();
    ws.file("export.doc", fixture!("book.xls"));
    let result = read(&ws, json!({"path": "export.doc", "pages": "3"}));
    assert_eq!(result["meta"]["rendered_from"], "xls", "{result}");
    assert!(output(&result).starts_with("1: ── sheet 3 of 3: Notes ──\n"), "{result}");
}

/// An XLSX of one sheet whose rows are `rows` (each a list of inline strings), written as Excel lays one out.
fn workbook_of(rows: impl Iterator<Item = String>) -> Vec<u8> {
    let mut sheet = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    );
    for (index, row) in rows.enumerate() {
        sheet.push_str(&format!(r#"<row r="{}">{row}</row>"#, index + 1));
    }
    sheet.push_str("</sheetData></worksheet>");
    let parts = [
        ("[Content_Types].xml", r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#.to_string()),
        ("_rels/.rels", r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.to_string()),
        ("xl/workbook.xml", r#"<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Log" sheetId="1" r:id="rId1"/></sheets></workbook>"#.to_string()),
        ("xl/_rels/workbook.xml.rels", r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#.to_string()),
        ("xl/worksheets/sheet1.xml", sheet),
    ];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in parts {
        zip.start_file(name, zip::write::SimpleFileOptions::default()).expect("zip");
        std::io::Write::write_all(&mut zip, body.as_bytes()).expect("zip");
    }
    zip.finish().expect("zip").into_inner()
}

fn inline(text: &str) -> String {
    format!(r#"<c t="inlineStr"><is><t>{text}</t></is></c>"#)
}

/// Rows of a long sheet: over 16 MiB of converted text, more than one read's output could ever hold.
const LONG_ROWS: usize = 300_000;

#[cfg(unix)]
#[test]
fn a_window_anywhere_in_a_long_sheet_is_read_in_bounded_memory() {
    let ws = Ws::new();
    let rows = (0..LONG_ROWS)
        .map(|n| format!("{}{}", inline(&format!("entry {n}")), inline("a detail of forty bytes, give or take")));
    ws.file("long.xlsx", workbook_of(rows));
    // The sheet's header line, its header row and rule, then every row behind the gutter: 300,002 lines, over 17 MiB.
    let total = LONG_ROWS + 2;
    let deep = read_in_small_memory(&ws, json!({"path": "long.xlsx", "offset": 299_000, "limit": 2}));
    assert_eq!(deep["meta"]["total_lines"], total, "{deep}");
    let out = output(&deep);
    assert!(
        out.starts_with(
            "299000: │ | entry 298997 | a detail of forty bytes, give or take |\n299001: │ | entry 298998 |"
        ),
        "{out}"
    );
    assert!(footer(out).ends_with("next: offset=299002 limit=2)"), "{}", footer(out));
    let tail = read_in_small_memory(&ws, json!({"path": "long.xlsx", "offset": -1}));
    assert!(output(&tail).starts_with(&format!("{total}: │ | entry 299999 |")), "{tail}");
    let found = read_in_small_memory(&ws, json!({"path": "long.xlsx", "find": "entry 29999[0-9] ", "limit": 1}));
    assert!(output(&found).contains(": ⟨sheet 1⟩ │ | entry 299990 |"), "{found}");
}

/// Eight reads at once of a 48 MiB page (one paragraph of text): each reserves the page and its text, up front, from
/// the memory all reads share, and the others wait their turn; so the server's peak stays near that budget, and
/// every read ends with the page's text: reads that each held part of the budget never wait for one another.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn eight_reads_at_once_of_a_big_page_share_one_memory_budget() {
    use crate::common::mcp::{proc_status_bytes, reads_at_once, serve};
    const PEAK_LIMIT: u64 = 640 << 20;
    let ws = Ws::new();
    ws.file("page.html", format!("<html><body><p>{}</p><p>the end</p></body></html>", "y".repeat(48 << 20)));
    let (client, pid) = serve(&ws.root).await;
    let calls = vec![json!({"path": "page.html", "offset": -1, "reread": true}); 8];
    for text in reads_at_once(&client, calls).await {
        assert!(text.contains(": the end\n"), "every read gets the page's text: {text:.300}");
    }
    let peak = proc_status_bytes(pid, "VmHWM:");
    assert!(peak < PEAK_LIMIT, "the server's peak: {} MiB", peak >> 20);
    client.cancel().await.expect("shut down");
}

/// A page of millions of tags (40 MiB of `<i>x</i>`) builds a tree many times its size: it is refused once the tree
/// outgrows the memory all reads share, with the way to its markup, within a 768 MiB address space (the whole tree
/// would take gigabytes, and the process abort); the markup is then read by byte ranges.
#[cfg(unix)]
#[test]
fn a_page_whose_tree_outgrows_the_shared_memory_is_refused_with_the_way_to_its_markup() {
    let ws = Ws::new();
    ws.file("tags.html", format!("<html><body>{}</body></html>", "<i>x</i>".repeat(5 << 20)));
    let mut cmd = ws.cmd_with_memory_limit(768 << 20);
    cmd.args(["--timeout-ms", "120000"]).timeout(Duration::from_secs(180));
    let out = cmd.write_stdin(json!({"path": "tags.html"}).to_string()).output().expect("run");
    let result = parse_one_json(&out.stdout);
    assert_eq!(result["error_code"], "TOO_LARGE", "{result}");
    let error = result["error"].as_str().unwrap();
    let says = "tags.html: HTML page too large to convert: its tree of elements would take about ";
    assert!(error.starts_with(says), "{result}");
    assert!(error.contains(" of memory, more than the 384.0 MiB all reads share (its 40.0 MiB counted"), "{result}");
    assert!(result["hint"].as_str().unwrap().starts_with("read its markup as text by byte ranges"), "{result}");
    let markup = read(&ws, json!({"path": "tags.html", "start_byte": 0, "end_byte": 20}));
    assert!(output(&markup).starts_with("@0: <html><body><i>x</i>\n"), "{markup}");
}

#[cfg(unix)]
#[test]
fn hostile_opendocument_xls_and_epub_files_are_refused_in_256_mb() {
    let ws = Ws::new();
    ws.file("cell.ods", fixture!("long_cell.ods"));
    ws.file("bomb.odt", fixture!("bomb.odt"));
    ws.file("corners.xls", fixture!("corners.xls"));
    ws.file("repeated.ods", fixture!("repeated_cell.ods"));
    ws.file("repeated.odt", fixture!("repeated_cell.odt"));
    ws.file("formula.xls", fixture!("formula_string.xls"));
    for (path, says) in [
        ("cell.ods", "part content.xml holds a single text or tag over 4.0 MiB"),
        ("bomb.odt", "part content.xml inflates past 32.0 MiB"),
        (
            "corners.xls",
            "its cells would take about 1.0 GiB of memory to read, more than the 384.0 MiB all reads share",
        ),
        // A few kilobytes each, that ask for gigabytes once repeats are written out or a formula's string is placed.
        ("repeated.ods", "a row holds over 16 MiB of text, its repeated cells counted"),
        ("repeated.odt", "a table holds over 64 MiB of text, its repeats counted"),
        ("formula.xls", "its cells would take about 256.0 GiB of memory to read"),
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
