//! The three programs: `agent-read` links neither the parsers of PDFs and documents (they run in `agent-read-worker`)
//! nor the MCP server's stack (`agent-read mcp` runs `agent-read-mcp` in its place), and says what is wrong, without
//! blaming the file, when a helper is missing.

use crate::common::Ws;
use std::process::Command;

/// Strings of the parsers' own tables: an HTML named character reference (html5ever), glyph names of PDF fonts
/// (pdf-extract), and the part a workbook's shared strings are in (the converter of XLSX).
const PARSER_STRINGS: [&str; 3] = ["CounterClockwiseContourIntegral", "Acircumflexsmall", "xl/sharedStrings.xml"];

/// Strings of the MCP server's stack: the protocol's notification (rmcp), its HTTP session header (rmcp's streamable
/// HTTP), a TLS cipher suite's name (rustls, for reqwest).
const SERVER_STRINGS: [&str; 3] = ["notifications/initialized", "Mcp-Session-Id", "TLS13_AES_128_GCM_SHA256"];

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

#[test]
fn the_reading_program_links_no_server_and_the_server_program_links_it() {
    let reader = std::fs::read(env!("CARGO_BIN_EXE_agent-read")).unwrap();
    let server = std::fs::read(env!("CARGO_BIN_EXE_agent-read-mcp")).unwrap();
    for needle in SERVER_STRINGS {
        assert!(!holds(&reader, needle), "agent-read holds {needle:?}: the server's stack is linked into it");
        assert!(holds(&server, needle), "agent-read-mcp lacks {needle:?}");
    }
    for needle in PARSER_STRINGS {
        assert!(!holds(&server, needle), "agent-read-mcp holds {needle:?}: a parser is linked into it");
    }
}

#[cfg(unix)]
#[test]
fn without_its_server_program_agent_read_mcp_says_how_to_get_it() {
    let alone = tempfile::tempdir().unwrap();
    let program = alone.path().join("agent-read");
    std::fs::copy(env!("CARGO_BIN_EXE_agent-read"), &program).unwrap();
    let output = Command::new(&program).args(["mcp", "--root"]).arg(alone.path()).output().unwrap();
    let err = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("agent-read-mcp is missing"), "{err}");
    assert!(err.contains("cargo build --release --bin agent-read-mcp"), "{err}");
    // Its help needs no server.
    let help = Command::new(&program).args(["mcp", "--help"]).output().unwrap();
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("--http"), "{help:?}");
}

#[test]
fn the_server_program_is_for_agent_read_mcp_alone() {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-read-mcp")).arg("notes.txt").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(err.contains("agent-read-mcp serves MCP for `agent-read mcp`: run `agent-read mcp"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_to_the_reading_program_finds_its_helpers_beside_the_program_itself() {
    let ws = Ws::new();
    ws.file("page.html", "<html><body><p>A page</p></body></html>");
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("agent-read");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_agent-read"), &link).unwrap();
    let output = Command::new(&link).arg("--root").arg(&ws.root).arg("page.html").output().unwrap();
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(out.starts_with("1: A page\n"), "{out}{}", String::from_utf8_lossy(&output.stderr));
}
