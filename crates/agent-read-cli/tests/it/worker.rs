//! The worker program: `agent-read` parses PDFs and documents in `agent-read-worker`, installed beside it, links none
//! of their parsers itself, and says what is wrong, without blaming the file, when the worker is missing.

use crate::common::Ws;
use std::process::Command;

/// Strings of the parsers' own tables: an HTML named character reference (html5ever), glyph names of PDF fonts
/// (pdf-extract), and the part a workbook's shared strings are in (the converter of XLSX).
const PARSER_STRINGS: [&str; 3] = ["CounterClockwiseContourIntegral", "Acircumflexsmall", "xl/sharedStrings.xml"];

fn holds(binary: &[u8], needle: &str) -> bool {
    binary.windows(needle.len()).any(|window| window == needle.as_bytes())
}

#[test]
fn the_reading_program_links_no_parser_of_pdfs_or_documents_and_the_worker_links_them_all() {
    let reader = std::fs::read(env!("CARGO_BIN_EXE_agent-read")).unwrap();
    let worker = std::fs::read(env!("CARGO_BIN_EXE_agent-read-worker")).unwrap();
    for needle in PARSER_STRINGS {
        assert!(!holds(&reader, needle), "agent-read holds {needle:?}: a parser is linked into it");
        assert!(holds(&worker, needle), "agent-read-worker lacks {needle:?}");
    }
}

#[test]
fn without_its_worker_the_reader_says_its_installation_is_incomplete_and_still_reads_text() {
    let ws = Ws::new();
    ws.file("notes.txt", "plain words\n");
    ws.file("page.html", "<html><body><p>A page</p></body></html>");
    ws.file("doc.pdf", crate::common::pdf::pdf_of(&["Words"]));
    // The reading program alone, with no worker beside it.
    let alone = tempfile::tempdir().unwrap();
    let program = alone.path().join(format!("agent-read{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(env!("CARGO_BIN_EXE_agent-read"), &program).unwrap();
    let read = |path: &str| {
        let output = Command::new(&program).arg("--root").arg(&ws.root).arg(path).output().unwrap();
        (output.status.code(), String::from_utf8(output.stdout).unwrap(), String::from_utf8(output.stderr).unwrap())
    };
    let (code, out, _) = read("notes.txt");
    assert_eq!((code, out.as_str()), (Some(0), "1: plain words\n(lines 1-1 of 1 · 12 B · end of file)\n"));
    for path in ["page.html", "doc.pdf"] {
        let (code, _, out) = read(path);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.starts_with(&format!("INTERNAL: {path}: ")), "{out}");
        assert!(out.contains("agent-read-worker is missing"), "{out}");
        assert!(out.contains("cargo install --locked agent-read-cli"), "{out}");
        assert!(out.contains("Next: the tool's installation is incomplete, the file is not at fault"), "{out}");
    }
}
