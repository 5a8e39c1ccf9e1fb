//! The Windows build itself, run under Wine: the code paths no Linux test reaches — cap-std's Windows resolution
//! beneath a root, where an opened handle really is (`GetFinalPathNameByHandleW`), the worker (PDFs, documents) held
//! by a Job Object, Windows' path rules in a real process, the C of xz's decoder as MinGW compiled it — attacked as on
//! Linux: every way out of the root is tried and every secret is asked for, by the command line and by an MCP client
//! over stdio.
//!
//! These tests are ignored by a plain `cargo test`: they need `agent-read.exe` (built for `x86_64-pc-windows-gnu`)
//! named by `AGENT_READ_WINDOWS_EXE` and `wine` on the `PATH`. `.ci/cross` builds the one and installs the other, then
//! runs them: `cargo test -p agent-read-cli --test it -- --ignored windows_wine::`.
//!
//! Wine maps the Linux root to drive `Z:`, so a workspace at `/tmp/x` is `Z:\tmp\x` to the program, and Wine shows
//! Linux symbolic links to it as Windows links. Wine is not Windows: NTFS junctions, ACLs and real device drivers are
//! not here (docs/platforms.md says what is verified where).
#![cfg(target_os = "linux")] // Wine runs on Linux; the workspace's links are made with Linux's symlink.

use crate::common::Ws;
use crate::common::http::HttpServer;
use crate::common::mcp::{RootsClient, call, text_of};
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The Windows binary under test.
fn exe() -> String {
    std::env::var("AGENT_READ_WINDOWS_EXE").unwrap_or_else(|_| {
        panic!("AGENT_READ_WINDOWS_EXE must name agent-read.exe built for Windows (.ci/cross builds it and runs these)")
    })
}

/// How the program under Wine names a Linux path.
fn windows_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// `agent-read.exe ARGS`, confined to the workspace's root, run from it.
fn run(ws: &Ws, args: &[&str]) -> Output {
    wine(ws).args(["--root", &windows_path(&ws.root)]).args(args).output().expect("run wine")
}

fn wine(ws: &Ws) -> Command {
    let mut command = Command::new("wine");
    command.arg(exe()).current_dir(&ws.root).env("WINEDEBUG", "-all").stdin(Stdio::null());
    command
}

/// What a plain-text run printed, standard output then standard error, without what Wine itself says there (a prefix
/// still settling may report a fault of one of Wine's own service processes).
fn printed(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let program: String = stderr.lines().filter(|line| !is_wines_own(line)).map(|line| format!("{line}\n")).collect();
    format!("{}{program}", String::from_utf8_lossy(&output.stdout))
}

/// A line Wine writes: `wine: …`, or a debug channel's `0024:err:module:…`.
fn is_wines_own(line: &str) -> bool {
    let channel = line.split(':').nth(1);
    line.starts_with("wine: ")
        || (line.get(..4).is_some_and(|id| id.chars().all(|c| c.is_ascii_hexdigit()))
            && matches!(channel, Some("err" | "fixme" | "warn" | "trace")))
}

/// A workspace with text, a secret beneath the root and files outside it.
fn workspace() -> Ws {
    let ws = Ws::new();
    ws.file("notes.txt", "alpha\nbeta\n").file("sub/deep.txt", "deep\n").file(".env", "TOKEN=inside-secret\n");
    ws.file("Sub2/ID_RSA", "PRIVATE-KEY-inside\n").file(".aws/credentials", "aws-inside\n");
    ws.outside_file("outside.txt", "OUTSIDE-MARKER\n");
    ws
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn paths_are_read_the_windows_way_and_never_lead_out_of_the_root() {
    let ws = workspace();
    let root = windows_path(&ws.root);
    let outer = windows_path(&ws.outer);
    let inside = [
        "notes.txt".to_string(),
        r"sub\..\notes.txt".to_string(),
        format!(r"{root}\notes.txt"),
        format!("{}/notes.txt", root.replace('\\', "/")),
        format!(r"\\?\{root}\notes.txt"),
        format!(r"{root}\SUB\..\Notes.TXT"),
    ];
    for path in &inside {
        let output = run(&ws, &[path]);
        assert_eq!(printed(&output), "1: alpha\n2: beta\n(lines 1-2 of 2 · 11 B · end of file)\n", "{path}");
        assert!(output.status.success(), "{path}");
    }
    let outside = [
        r"..\outside.txt".to_string(),
        "../outside.txt".to_string(),
        format!(r"{outer}\outside.txt"),
        format!(r"\\?\{outer}\outside.txt"),
        format!(r"\\?\UNC\localhost\{}\outside.txt", outer.replace(':', "$")),
        r"\\localhost\Z$\etc\passwd".to_string(),
        r"C:\windows\win.ini".to_string(),
        r"sub\..\..\outside.txt".to_string(),
    ];
    for path in &outside {
        let output = run(&ws, &[path]);
        let text = printed(&output);
        assert!(text.starts_with("OUTSIDE_ROOT: "), "{path}: {text}");
        assert!(!text.contains("OUTSIDE-MARKER") && !text.contains("root:"), "{path} leaked: {text}");
        assert_eq!(output.status.code(), Some(1), "{path}");
    }
    // Relative to a drive's current directory: ambiguous, refused.
    assert!(printed(&run(&ws, &["Z:notes.txt"])).starts_with("INVALID_PARAM: "));
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn devices_streams_and_names_windows_would_alter_are_refused() {
    let ws = workspace();
    for device in ["NUL", "con.txt", "COM1", r"sub\aux.log", "CONIN$", r"\\.\PhysicalDrive0"] {
        let text = printed(&run(&ws, &[device]));
        assert!(text.starts_with("NOT_REGULAR: "), "{device}: {text}");
    }
    for stream in ["notes.txt:hidden", "notes.txt::$DATA"] {
        let text = printed(&run(&ws, &[stream]));
        assert!(text.starts_with("NOT_REGULAR: ") && text.contains("alternate data stream"), "{stream}: {text}");
    }
    // `.env.` and `.env ` open `.env` on Windows: refused before any open.
    for altered in [".env.", ".env ", r"sub\..\.env."] {
        let text = printed(&run(&ws, &[altered]));
        assert!(text.starts_with("INVALID_PARAM: "), "{altered:?}: {text}");
        assert!(!text.contains("inside-secret"), "{altered:?}: {text}");
    }
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn secrets_are_denied_whatever_the_case_or_the_separator() {
    let ws = workspace();
    let root = windows_path(&ws.root);
    for secret in
        [".env", ".ENV", r"sub\..\.Env", r"Sub2\id_rsa", "sub2/ID_RSA", r".AWS\Credentials", &format!(r"{root}\.env")]
    {
        let text = printed(&run(&ws, &[secret]));
        assert!(text.starts_with("DENIED: "), "{secret}: {text}");
        assert!(!text.contains("inside"), "{secret}: {text}");
    }
    let listing = printed(&run(&ws, &["."]));
    assert!(listing.contains("notes.txt") && !listing.contains("inside"), "{listing}");
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn links_inside_the_root_are_followed_and_links_leading_out_are_refused() {
    let ws = workspace();
    std::os::unix::fs::symlink("notes.txt", ws.root.join("inside-link.txt")).unwrap();
    std::os::unix::fs::symlink(ws.outer.join("outside.txt"), ws.root.join("out-link.txt")).unwrap();
    std::os::unix::fs::symlink(&ws.outer, ws.root.join("out-dir")).unwrap();
    std::os::unix::fs::symlink(ws.root.join(".env"), ws.root.join("innocent.txt")).unwrap();
    assert!(printed(&run(&ws, &["inside-link.txt"])).starts_with("1: alpha\n"));
    for escape in ["out-link.txt", r"out-dir\outside.txt", "out-dir"] {
        let text = printed(&run(&ws, &[escape]));
        assert!(text.starts_with("OUTSIDE_ROOT: "), "{escape}: {text}");
        assert!(!text.contains("OUTSIDE-MARKER"), "{escape}: {text}");
    }
    // A harmless name for a secret: judged where it leads.
    let text = printed(&run(&ws, &["innocent.txt"]));
    assert!(text.starts_with("DENIED: ") && !text.contains("inside-secret"), "{text}");
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn a_pdf_is_extracted_by_the_worker_held_in_its_job_object() {
    let ws = workspace();
    ws.file("doc.pdf", crate::common::pdf::pdf_of(&["First page words", "Second page words"]));
    let output = run(&ws, &["doc.pdf", "--pages", "2"]);
    let text = printed(&output);
    assert!(text.starts_with("── page 2 of 2 ──\n│ Second page words\n"), "{text}");
    assert!(output.status.success(), "{text}");
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn a_document_is_converted_by_the_worker_held_in_its_job_object() {
    let ws = workspace();
    ws.file("report.docx", include_bytes!("../fixtures/documents/report.docx").as_slice());
    ws.file(
        "page.html",
        "<html><body><h1>Title</h1><p>Caf&eacute; &CounterClockwiseContourIntegral;</p></body></html>",
    );
    let output = run(&ws, &["report.docx", "--limit", "1"]);
    let text = printed(&output);
    assert!(text.starts_with("1: # Quarterly report\n"), "{text}");
    assert!(output.status.success(), "{text}");
    let output = run(&ws, &["page.html"]);
    let text = printed(&output);
    assert!(text.starts_with("1: # Title\n2: \n3: Café ∳\n"), "{text}");
    assert!(output.status.success(), "{text}");
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn compressed_logs_are_decoded_by_the_windows_build() {
    use crate::compressed::{CODECS, compressed_by, log_lines};
    let ws = workspace();
    let text = log_lines(20_000);
    let mut names = Vec::new();
    for (tool, args, ext) in CODECS {
        names.push((format!("app.log.{ext}"), tool));
        ws.file(&format!("app.log.{ext}"), compressed_by(tool, args, &text));
    }
    // Blocks, each a restart point: the tail is read again from the last one.
    names.push(("blocks.log.xz".to_string(), "xz"));
    ws.file("blocks.log.xz", compressed_by("xz", &["-c", "-T2", "--block-size=64KiB"], &text));
    for (name, tool) in &names {
        for _ in 0..2 {
            let output = run(&ws, &[name, "--offset", "-1"]);
            let text = printed(&output);
            assert!(text.starts_with("20000: 2026-11-25 request 20000 served\n"), "{name}: {text}");
            assert!(text.contains(&format!("{tool}-compressed")), "{name}: {text}");
            assert!(output.status.success(), "{name}: {text}");
        }
    }
}

#[test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
fn json_requests_on_standard_input_are_confined_too() {
    let ws = workspace();
    let request = json!({"path": r"C:\windows\win.ini"}).to_string() + "\n";
    let mut child = wine(&ws)
        .args(["--root", &windows_path(&ws.root)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run wine");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), request.as_bytes()).unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let result: Value = serde_json::from_slice(&output.stdout).expect("one JSON result");
    assert_eq!(result["error_code"], "OUTSIDE_ROOT", "{result}");
    assert!(output.status.success());
}

#[tokio::test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
async fn the_mcp_server_serves_reads_and_client_roots_only_narrow_it() {
    let ws = workspace();
    let root = windows_path(&ws.root);
    // The client offers its workspace folder `sub` and a folder outside the server's root, as `file:` URIs.
    let uri = |path: &Path| format!("file:///{}", windows_path(path).replace('\\', "/"));
    let client =
        RootsClient::new(std::sync::Arc::new(std::sync::Mutex::new(vec![uri(&ws.root.join("sub")), uri(&ws.outer)])));
    let command = tokio::process::Command::new("wine").configure(|cmd| {
        cmd.arg(exe()).args(["mcp", "--root", &root]).env("WINEDEBUG", "-all");
    });
    let client = client.serve(TokioChildProcess::new(command).expect("spawn wine")).await.expect("initialize");
    let deep = text_of(&call(&client, json!({"path": format!(r"{root}\sub\deep.txt")})).await);
    assert!(deep.starts_with("1: deep\n(lines 1-1 of 1 · 5 B · end of file · client roots refused: "), "{deep}");
    assert!(deep.ends_with(&format!(r"reading beneath the client's roots taken: {root}\sub)")), "{deep}");
    // Narrowed to `sub`: the rest of the server's root is out of reach, and outside it always was.
    for path in [format!(r"{root}\notes.txt"), windows_path(&ws.outer.join("outside.txt")), r"..\.env".to_string()] {
        let answer = call(&client, json!({"path": path})).await;
        let structured = answer.structured_content.clone().unwrap_or_default();
        assert_eq!(structured["error_code"], "OUTSIDE_ROOT", "{path}: {}", text_of(&answer));
        assert!(!text_of(&answer).contains("OUTSIDE-MARKER") && !text_of(&answer).contains("alpha"), "{path}");
    }
    client.cancel().await.expect("close");
}

#[tokio::test]
#[ignore = "needs the Windows build and Wine: run by .ci/cross"]
async fn the_mcp_server_over_http_holds_the_root_and_the_policy() {
    let ws = workspace();
    let mut command = wine(&ws);
    command.args(["mcp", "--http", "127.0.0.1:0"]);
    let server = HttpServer::spawn(&mut command, windows_path(&ws.root), &[]);
    let client = server.connect().await;
    let notes = text_of(&call(&client, json!({"path": r"sub\..\notes.txt", "limit": 1})).await);
    assert!(notes.starts_with("1: alpha\n(lines 1-1 of 2 "), "{notes}");
    for (path, code) in
        [(r"C:\windows\win.ini", "OUTSIDE_ROOT"), (r"..\outside.txt", "OUTSIDE_ROOT"), (".ENV", "DENIED")]
    {
        let answer = call(&client, json!({"path": path})).await;
        let structured = answer.structured_content.clone().unwrap_or_default();
        assert_eq!(structured["error_code"], code, "{path}: {}", text_of(&answer));
        assert!(!text_of(&answer).contains("OUTSIDE-MARKER") && !text_of(&answer).contains("inside-secret"));
    }
    client.cancel().await.expect("close");
}
