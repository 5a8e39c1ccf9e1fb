//! The command line as a person meets it: help that fits the terminal, short and long help, exit codes that tell a
//! usage error from a failed read, errors that speak in flags and name `--root`, and `mcp` saying at a terminal
//! that it waits for a client.

use crate::common::{Bin, Ws, parse_one_json};
use serde_json::Value;

/// Standard error of a run that printed nothing on standard output, with its exit code.
fn failure(ws: &Ws, args: &[&str]) -> (Option<i32>, String) {
    let out = ws.cmd().args(args).output().unwrap();
    assert!(out.stdout.is_empty(), "{args:?}: nothing on standard output");
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

/// A workspace with `a.txt` of 300 lines.
fn three_hundred_lines() -> Ws {
    let ws = Ws::new();
    let text: String = (1..=300).map(|n| format!("{n}\n")).collect();
    ws.file("a.txt", text);
    ws
}

/// The help a run prints, with `COLUMNS` set to `columns` (or unset), standard output being a pipe.
fn help(args: &[&str], columns: Option<&str>) -> String {
    let ws = Ws::new();
    let mut cmd = ws.cmd();
    cmd.args(args).env_remove("COLUMNS");
    if let Some(columns) = columns {
        cmd.env("COLUMNS", columns);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn widest(text: &str) -> usize {
    text.lines().map(|line| line.chars().count()).max().unwrap_or(0)
}

const HELPS: [&[&str]; 6] =
    [&["-h"], &["--help"], &["many", "-h"], &["many", "--help"], &["mcp", "-h"], &["mcp", "--help"]];

#[test]
fn help_is_wrapped_to_the_terminal_and_to_100_columns_when_it_cannot_tell() {
    for args in HELPS {
        let narrow = help(args, Some("60"));
        assert!(widest(&narrow) <= 60, "{args:?} at COLUMNS=60:\n{narrow}");
        let unknown = help(args, None);
        assert!(widest(&unknown) <= 100, "{args:?} without a terminal:\n{unknown}");
        let wide = help(args, Some("250"));
        assert!(widest(&wide) <= 100, "{args:?} at COLUMNS=250 stays readable:\n{wide}");
    }
    assert!(widest(&help(&["--help"], None)) > 60, "wrapped to the width, not narrower");
}

#[test]
fn short_help_points_to_long_help_with_examples_and_exit_codes() {
    let short = help(&["-h"], None);
    let long = help(&["--help"], None);
    assert!(short.contains("--help shows examples and exit codes"), "{short}");
    assert!(!short.contains("Exit status:") && !short.contains("Examples:"), "{short}");
    assert!(long.lines().count() > short.lines().count());
    for expected in ["Examples:", "agent-read app.log --offset -100", "Exit status:", "  0  ", "  1  ", "  2  usage"] {
        assert!(long.contains(expected), "--help lacks {expected:?}:\n{long}");
    }
    assert!(long.contains("(`next: offset=2001` is --offset 2001)"), "the footer's words explained:\n{long}");
    let many = help(&["many", "--help"], None);
    assert!(many.contains("agent-read many 'src/**/*.rs'") && many.contains("Exit status:"), "{many}");
    assert!(!help(&["many", "-h"], None).contains("Exit status:"));
    let mcp = help(&["mcp", "--help"], None);
    assert!(
        mcp.contains("claude mcp add agent-read -- agent-read mcp --root") && mcp.contains("Exit status:"),
        "{mcp}"
    );
}

#[test]
fn a_read_refused_for_its_flags_is_a_usage_error_and_a_read_that_fails_on_the_file_is_not() {
    let ws = three_hundred_lines();
    let usage: [&[&str]; 12] = [
        &["a.txt", "--limit", "0"],
        &["a.txt", "--limit", "-3"],
        &["a.txt", "--offset", "0"],
        &["a.txt", "--start-byte", "-1"],
        &["a.txt", "--start-byte", "9", "--end-byte", "3"],
        &["a.txt", "--offset", "3", "--start-byte", "1"],
        &["a.txt", "--anchor-line", "3"],
        &["a.txt", "--mode", "block"],
        &["a.txt", "--mode", "blocks", "--anchor-line", "3"],
        &["a.txt", "--encoding", "no-such-encoding"],
        &["a.txt", "--pages", "3"],
        &["many", "a.txt", "--max-files", "0"],
    ];
    for args in usage {
        let (code, stderr) = failure(&ws, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("INVALID_"), "{args:?}: the error itself: {stderr}");
    }
    let on_the_file: [&[&str]; 3] =
        [&["a.txt", "--offset", "400"], &["b.txt"], &["a.txt", "--mode", "block", "--anchor-line", "999"]];
    for args in on_the_file {
        let (code, stderr) = failure(&ws, args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
    }
    // JSON output is a result like any other: exit 0, whatever it says.
    let out = ws.cmd().args(["a.txt", "--limit", "0", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(parse_one_json(&out.stdout)["error_code"], "INVALID_PARAM");
}

#[test]
fn errors_from_flags_speak_in_flags() {
    let ws = three_hundred_lines();
    let cases: [(&[&str], &str); 6] = [
        (&["a.txt", "--offset", "400"], "Next: read the end with --offset -100"),
        (&["a.txt", "--limit", "0"], "`--limit` must be at least 1, not 0"),
        (&["a.txt", "--start-byte", "9", "--end-byte", "3"], "Next: send e.g. --start-byte 9 --end-byte 4105"),
        (&["a.txt", "--mode", "block"], "agent-read src/app.py --mode block --anchor-line 812"),
        (&["a.txt", "--anchor-line", "3"], "add --mode block to read the block around line 3, or send --offset 3"),
        (&["b.txt"], "Next: list the directory to see what exists: agent-read ."),
    ];
    for (args, expected) in cases {
        let (_, stderr) = failure(&ws, args);
        assert!(stderr.contains(expected), "{args:?} should say {expected:?}:\n{stderr}");
        for field in ["offset", "limit", "start_byte", "end_byte", "mode", "anchor_line", "path"] {
            for json_word in [format!("{field}="), format!("\"{field}\""), format!("`{field}`")] {
                assert!(!stderr.contains(&json_word), "{args:?}: {json_word} is the JSON call's word:\n{stderr}");
            }
        }
    }
}

#[test]
fn the_model_keeps_its_own_words() {
    let ws = three_hundred_lines();
    let json = ws.cmd().args(["a.txt", "--offset", "400", "--json"]).output().unwrap();
    assert_eq!(parse_one_json(&json.stdout)["hint"], "read the end with offset=-100");
    let stdin = ws.cmd().write_stdin(r#"{"path": "a.txt", "mode": "block"}"#).output().unwrap();
    let stdin = parse_one_json(&stdin.stdout);
    assert!(stdin["hint"].as_str().unwrap().contains(r#"{"path": "src/app.py", "mode": "block""#), "{stdin}");
}

#[test]
fn the_paths_a_person_named_are_not_reworded() {
    let ws = Ws::new();
    ws.file("offset=1", "x\n");
    let (code, stderr) = failure(&ws, &["offset=3"]);
    assert_eq!(code, Some(1));
    assert!(stderr.starts_with("NOT_FOUND: offset=3: no such file or directory\n"), "{stderr}");
    assert!(stderr.contains("Did you mean: offset=1?"), "{stderr}");
}

#[test]
fn a_path_outside_the_roots_names_root() {
    let ws = Ws::new();
    let outside = ws.outside_file("secret.txt", "x\n");
    for path in [outside.to_str().unwrap(), "../secret.txt"] {
        let (code, stderr) = failure(&ws, &[path]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.starts_with("OUTSIDE_ROOT: "), "{stderr}");
        assert!(stderr.contains("Next: to read it, start agent-read with --root DIR"), "{stderr}");
    }
    // JSON keeps the model's next step: a model cannot restart its tool.
    let json = ws.cmd().args(["../secret.txt", "--json"]).output().unwrap();
    let hint: Value = parse_one_json(&json.stdout)["hint"].clone();
    assert!(!hint.as_str().unwrap().contains("--root"), "{hint}");
}

/// A client on a pipe hears nothing of the note (here one that leaves before it initializes: only that is said).
#[test]
fn mcp_on_a_pipe_says_nothing_of_waiting() {
    let ws = Ws::new();
    let out = ws.cmd().arg("mcp").write_stdin("").output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "agent-read: MCP start-up failed: the client closed the connection before initialize was answered\n"
    );
}

/// `agent-read mcp` with a terminal (a pseudo-terminal) on standard input says on standard error that it waits for a
/// client and how to register it, and ends on Ctrl-D as it says.
#[cfg(unix)]
#[test]
fn mcp_at_a_terminal_says_it_waits_for_a_client() {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let ws = Ws::new();
    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pseudo-terminal");
    grantpt(&controller).unwrap();
    unlockpt(&controller).unwrap();
    let name = ptsname(&controller, Vec::new()).unwrap();
    let terminal = std::fs::OpenOptions::new().read(true).write(true).open(name.to_str().unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .arg("mcp")
        .arg("--root")
        .arg(&ws.root)
        .current_dir(&ws.root)
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).map(|_| text)
    });
    // Ctrl-D, the terminal's end of input, once the program had time to start reading.
    std::thread::sleep(Duration::from_millis(300));
    let mut controller = std::fs::File::from(controller);
    controller.write_all(b"\x04").unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("agent-read mcp did not end on Ctrl-D");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap().unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("agent-read mcp: waiting for an MCP client on standard input"), "{stderr}");
    let register = format!("claude mcp add agent-read -- agent-read mcp --root {}", ws.root.display());
    assert!(lines[1].ends_with(&register), "{stderr}");
    // Ended before any client came: start-up failed, as it says.
    assert_eq!(
        lines[2..],
        ["agent-read: MCP start-up failed: the client closed the connection before initialize was answered"]
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
}
