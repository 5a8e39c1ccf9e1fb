//! Archives through the binary: zip, tar, tar.gz and tar.zst made by the real `zip`, `tar`, `gzip` and `zstd` tools
//! (and hostile ones written byte by byte), listed like directories and read member by member on every face; names
//! that climb, links, nesting, the deny policy, damage, encryption and bombs refused cleanly.

use crate::common::mcp::{call, text_of};
use crate::common::{Bin, Ws, output, parse_one_json};
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn read(ws: &Ws, request: Value) -> Value {
    let out = ws.cmd().write_stdin(request.to_string()).output().expect("run");
    parse_one_json(&out.stdout)
}

fn footer(out: &str) -> &str {
    out.lines().last().unwrap_or_default()
}

/// Runs a real archiver in `dir` (a missing tool fails the test: install zip, tar, gzip and zstd).
fn run(dir: &Path, tool: &str, args: &[&str]) {
    let status = Command::new(tool)
        .current_dir(dir)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("`{tool}` must be installed for these tests: {e}"));
    assert!(status.success(), "{tool} {args:?} failed");
}

/// A project tree outside the root, to archive: a log of 300 lines, a CSV, a notes file, and secrets.
fn staged(ws: &Ws) -> std::path::PathBuf {
    let stage = ws.outer.join("stage");
    let log: String = (1..=300).map(|i| format!("2026-11-25 request {i} served\n")).collect();
    crate::common::write_file(&stage.join("logs/app.log"), log.as_bytes());
    crate::common::write_file(&stage.join("people.csv"), b"name,age\nann,31\nbob,42\ncy,7\n");
    crate::common::write_file(&stage.join("notes/readme.md"), b"# Notes\nhello\n");
    crate::common::write_file(&stage.join(".env"), b"API_KEY=hunter2\n");
    crate::common::write_file(&stage.join("keys/id_rsa"), b"-----BEGIN OPENSSH PRIVATE KEY-----\n");
    crate::common::write_file(&stage.join("secrets/a.txt"), b"the plan\n");
    stage
}

/// The same tree as `bundle.zip`, `bundle.tar`, `bundle.tar.gz` and `bundle.tar.zst` in the root, by the real tools.
fn bundles(ws: &Ws) -> [(&'static str, &'static str); 4] {
    let stage = staged(ws);
    let root = ws.root.to_str().unwrap();
    let members = ["logs", "people.csv", "notes", ".env", "keys", "secrets"];
    let zip = format!("{root}/bundle.zip");
    let mut zip_args = vec!["-q", "-r", "-X", zip.as_str()];
    zip_args.extend(members);
    run(&stage, "zip", &zip_args);
    for (name, flag) in [("bundle.tar", None), ("bundle.tar.gz", Some("--gzip")), ("bundle.tar.zst", Some("--zstd"))] {
        let file = format!("{root}/{name}");
        let mut args: Vec<&str> = flag.into_iter().collect();
        args.extend(["-cf", &file]);
        args.extend(members);
        run(&stage, "tar", &args);
    }
    [("bundle.zip", "zip"), ("bundle.tar", "tar"), ("bundle.tar.gz", "tar.gz"), ("bundle.tar.zst", "tar.zst")]
}

#[test]
fn archives_made_by_zip_and_tar_list_like_directories_and_read_their_members_with_every_text_window() {
    let ws = Ws::new();
    for (archive, format) in bundles(&ws) {
        let top = read(&ws, json!({"path": archive}));
        assert_eq!(top["kind"], "directory", "{archive}: {top}");
        let lines: Vec<&str> = output(&top).lines().collect();
        assert!(lines[0].starts_with(".env  (") && lines[0].ends_with("(denied)"), "{archive}: {}", output(&top));
        assert!(
            lines.contains(&"logs/") && lines.contains(&"notes/") && lines.contains(&"secrets/  (denied)"),
            "{archive}: {}",
            output(&top)
        );
        assert!(footer(output(&top)).contains(&format!("{format} archive, ")), "{archive}: {}", output(&top));
        assert_eq!(top["meta"]["archive"]["format"], format);
        let file_entry = top["entries"].as_array().unwrap().iter().find(|e| e["name"] == "people.csv").unwrap();
        assert_eq!(file_entry["size"], 28, "{archive}");
        assert_eq!(file_entry["compressed_size"].is_u64(), format == "zip", "{archive}: {file_entry}");

        let tail = read(&ws, json!({"path": format!("{archive}/logs/app.log"), "offset": -2}));
        assert_eq!(
            output(&tail).lines().take(2).collect::<Vec<_>>(),
            ["299: 2026-11-25 request 299 served", "300: 2026-11-25 request 300 served"],
            "{archive}"
        );
        assert!(footer(output(&tail)).contains(&format!("member of {archive} ({format}")), "{}", output(&tail));
        assert_eq!(tail["meta"]["total_lines"], 300);
        assert_eq!(tail["meta"]["archive"]["member"], "logs/app.log");
        assert_eq!(tail["meta"]["path"], format!("{archive}/logs/app.log"));
        if format == "tar.gz" || format == "tar.zst" {
            assert!(footer(output(&tail)).contains(&format!("each read decompresses the {format} up to it")));
        }

        let found = read(&ws, json!({"path": format!("{archive}/logs/app.log"), "find": "request 15[0-1] "}));
        assert!(
            output(&found).contains("150: 2026-11-25 request 150 served\n151: 2026-11-25 request 151 served"),
            "{}",
            output(&found)
        );

        let table = read(&ws, json!({"path": format!("{archive}/people.csv"), "offset": 3}));
        assert!(
            output(&table).starts_with("⟨header row, line 1⟩ name,age\n3: bob,42\n"),
            "{archive}: {}",
            output(&table)
        );
        assert_eq!(table["meta"]["table"]["columns"], 2);

        let bytes = read(&ws, json!({"path": format!("{archive}/notes/readme.md"), "start_byte": 2, "end_byte": 7}));
        assert!(output(&bytes).starts_with("@2: Notes"), "{archive}: {}", output(&bytes));

        let listing = read(&ws, json!({"path": format!("{archive}/notes")}));
        assert!(output(&listing).starts_with("readme.md  ("), "{archive}: {}", output(&listing));
    }
}

#[test]
fn a_real_directory_named_like_an_archive_wins_and_byte_ranges_address_the_archive_file() {
    let ws = Ws::new();
    bundles(&ws);
    ws.file("logs.zip/app.log", "a real file\n");
    let real = read(&ws, json!({"path": "logs.zip/app.log"}));
    assert_eq!(output(&real), "1: a real file\n(lines 1-1 of 1 · 12 B · end of file)");
    let raw = read(&ws, json!({"path": "bundle.zip", "start_byte": 0, "end_byte": 4}));
    assert_eq!(raw["error_code"], "BINARY", "{raw}");
    let missing = read(&ws, json!({"path": "people.csv/x"}));
    assert_eq!(missing["error_code"], "NOT_FOUND");
}

#[test]
fn deny_globs_apply_to_member_paths_and_no_suggestion_names_a_denied_member() {
    let ws = Ws::new();
    bundles(&ws);
    for path in ["bundle.zip/.env", "bundle.tar.gz/keys/id_rsa", "bundle.tar.gz/secrets/a.txt", "bundle.tar.zst/.env"] {
        let refused = read(&ws, json!({"path": path}));
        assert_eq!(refused["error_code"], "DENIED", "{path}: {refused}");
        assert!(!output(&refused).contains("hunter2") && !output(&refused).contains("the plan"));
    }
    let near = read(&ws, json!({"path": "bundle.zip/.envv"}));
    assert_eq!(near["error_code"], "NOT_FOUND");
    assert!(!output(&near).contains("Did you mean"), "a denied member is never suggested: {}", output(&near));
    let near = read(&ws, json!({"path": "bundle.zip/logs/ap.log"}));
    assert!(output(&near).contains("Did you mean: bundle.zip/logs/app.log?"), "{}", output(&near));
    // read_many reads a member path like read, and refuses a denied one the same way.
    let out = ws.cmd().args(["many", "bundle.zip/people.csv", "bundle.tar/.env", "--json"]).output().unwrap();
    let many = parse_one_json(&out.stdout);
    let text = output(&many);
    assert!(text.contains("1: name,age"), "{text}");
    assert!(text.contains("DENIED") && !text.contains("hunter2"), "{text}");
}

#[test]
fn a_member_directory_an_ignore_file_ignores_is_denied_like_a_real_one_and_never_suggested() {
    let ws = Ws::new();
    ws.file(".gitignore", "build/\n");
    ws.file("build/o.txt", "built\n");
    let stage = ws.outer.join("ignored");
    crate::common::write_file(&stage.join("build/o.txt"), b"built\n");
    crate::common::write_file(&stage.join("keep.txt"), b"kept\n");
    let root = ws.root.to_str().unwrap();
    // `build/` stored as a member, and only implied by `build/o.txt` (zip -D stores no directories).
    run(&stage, "zip", &["-q", "-r", &format!("{root}/c.zip"), "build", "keep.txt"]);
    run(&stage, "zip", &["-q", "-r", "-D", &format!("{root}/d.zip"), "build", "keep.txt"]);
    run(&stage, "tar", &["-cf", &format!("{root}/c.tar"), "build", "keep.txt"]);
    let read_ignoring = |path: &str| {
        let out = ws.cmd().arg("--respect-ignore").write_stdin(json!({"path": path}).to_string()).output().unwrap();
        parse_one_json(&out.stdout)
    };
    let real = read_ignoring("build");
    assert_eq!(real["error_code"], "DENIED", "{real}");
    for archive in ["c.zip", "d.zip", "c.tar"] {
        let listing = read_ignoring(archive);
        assert!(output(&listing).starts_with("build/  (denied)\nkeep.txt  ("), "{archive}: {}", output(&listing));
        for path in [format!("{archive}/build"), format!("{archive}/build/o.txt")] {
            let denied = read_ignoring(&path);
            assert_eq!(denied["error_code"], "DENIED", "{path}: {denied}");
            assert!(output(&denied).contains("rule `.gitignore: build/`"), "{path}: {}", output(&denied));
            assert!(!output(&denied).contains("o.txt  ("), "{path}: its members are not listed: {}", output(&denied));
        }
        let near = read_ignoring(&format!("{archive}/buil"));
        assert_eq!(near["error_code"], "NOT_FOUND", "{near}");
        assert!(!output(&near).contains("Did you mean"), "{archive}: an ignored directory is never suggested: {near}");
    }
}

/// A tar of raw headers: each name stored exactly as given (`..`, absolute, control characters), and a symbolic link.
fn hostile_tar() -> Vec<u8> {
    tar_of(&[
        (b"../../outside.txt", b'0', b"climbed\n"),
        (b"/etc/passwd", b'0', b"root:x:0:0\n"),
        (b"red\x1b[31m.txt", b'0', b"red\n"),
        (b"link", b'2', b""),
        (b"ok.txt", b'0', b"fine\n"),
        (b"ok.txt", b'0', b"second copy\n"),
    ])
}

/// A tar written header by header: each `(name, type, body)` stored exactly as given (a link of type `2` points to
/// `/etc/shadow`), every member dated 2017-07-14.
pub(crate) fn tar_of(entries: &[(&[u8], u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, body) in entries {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name);
        header[100..108].copy_from_slice(b"0000644\0");
        header[124..136].copy_from_slice(format!("{:011o}\0", body.len()).as_bytes());
        header[136..148].copy_from_slice(b"13126676700\0");
        header[156] = *kind;
        if *kind == b'2' {
            header[157..168].copy_from_slice(b"/etc/shadow");
        }
        header[257..265].copy_from_slice(b"ustar\x0000");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(body);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

#[test]
fn member_names_that_climb_start_at_a_root_or_hide_characters_are_listed_escaped_and_never_read() {
    let ws = Ws::new();
    ws.file("evil.tar", hostile_tar());
    ws.outside_file("outside.txt", "outside the root\n");
    let listing = read(&ws, json!({"path": "evil.tar"}));
    assert_eq!(
        output(&listing),
        "link  (symlink, not followed)\n\
         ok.txt  (5 B)  (stored 2 times: the first is read)\n\
         ../../outside.txt  (8 B)  (unsafe name: cannot be read by path)\n\
         /etc/passwd  (11 B)  (unsafe name: cannot be read by path)\n\
         \"red\\u001b[31m.txt\"  (4 B)  (unsafe name: cannot be read by path)\n\
         (entries 1-5 of 5 · tar archive, 6 members · end of directory)"
    );
    let climbed = read(&ws, json!({"path": "evil.tar/../../outside.txt"}));
    assert_eq!(climbed["error_code"], "OUTSIDE_ROOT", "{climbed}");
    let absolute = read(&ws, json!({"path": "evil.tar//etc/passwd"}));
    assert_eq!(absolute["error_code"], "NOT_FOUND", "{absolute}");
    assert!(!output(&absolute).contains("root:x"));
    let link = read(&ws, json!({"path": "evil.tar/link"}));
    assert_eq!(link["error_code"], "NOT_REGULAR", "{link}");
    assert!(!output(&link).contains("shadow"), "a link's target is not named: {}", output(&link));
    let first = read(&ws, json!({"path": "evil.tar/ok.txt"}));
    assert!(output(&first).starts_with("1: fine\n"), "{}", output(&first));
}

/// `tar` with the header at byte `header` given `field` at its byte `at`, and its checksum made again.
fn with_header_field(mut tar: Vec<u8>, header: usize, at: usize, field: &[u8]) -> Vec<u8> {
    let block = &mut tar[header..header + 512];
    block[at..at + field.len()].copy_from_slice(field);
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|b| u32::from(*b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    tar
}

/// `tar` with its first header's mtime field (12 bytes) replaced by `field`.
fn with_first_mtime(tar: Vec<u8>, field: &[u8; 12]) -> Vec<u8> {
    with_header_field(tar, 0, 136, field)
}

#[test]
fn damage_in_a_tar_is_told_in_the_tools_words_with_member_names_quoted() {
    let ws = Ws::new();
    // The second header's size is not a number: the tar crate's text would end "when getting size for <name>".
    let bad_size = with_header_field(
        tar_of(&[(b"ok.txt", b'0', b"fine\n"), (b"read this instead", b'0', b"x\n")]),
        1024,
        124,
        b"zzzzzzzzzzz\0",
    );
    ws.file("bad.tar", &bad_size);
    ws.file("bad.tar.gz", gzip_of(&bad_size));
    let cases = [
        ("bad.tar", "bad.tar: a damaged tar archive: a header after member \"ok.txt\" is malformed"),
        (
            "bad.tar.gz",
            "bad.tar.gz: a damaged tar.gz archive: a header after member \"ok.txt\" is malformed, or the tar.gz \
             stream is damaged there",
        ),
    ];
    for (path, message) in cases {
        let damaged = read(&ws, json!({"path": path}));
        assert_eq!(damaged["error_code"], "IO_ERROR", "{path}: {damaged}");
        assert!(output(&damaged).starts_with(&format!("IO_ERROR: {message}\n")), "{path}: {}", output(&damaged));
        assert!(!output(&damaged).contains("read this instead"), "{path}: {}", output(&damaged));
    }
    // A member whose data runs past the end of a plain tar is named quoted.
    let whole = tar_of(&[(b"big file", b'0', &[b'x'; 4096])]);
    ws.file("cut.tar", &whole[..1024]);
    let cut = read(&ws, json!({"path": "cut.tar"}));
    assert!(
        output(&cut).starts_with("IO_ERROR: cut.tar: a damaged tar archive: member \"big file\" is cut short\n"),
        "{}",
        output(&cut)
    );
}

#[test]
fn a_member_dated_past_the_year_9999_is_read_with_no_date() {
    let ws = Ws::new();
    // GNU base-256 numbers: 300,000,000,000 s (the year 11476), and -1 s (1969).
    let mut future = [0u8; 12];
    future[0] = 0x80;
    future[4..].copy_from_slice(&300_000_000_000u64.to_be_bytes());
    let before = [0xffu8; 12];
    for (name, field) in [("future.tar", future), ("before.tar", before)] {
        ws.file(name, with_first_mtime(tar_of(&[(b"ok.txt", b'0', b"fine\n")]), &field));
        let text = read(&ws, json!({"path": format!("{name}/ok.txt")}));
        assert_eq!(text["ok"], true, "{name}: {text}");
        assert!(output(&text).starts_with("1: fine\n"), "{name}: {}", output(&text));
        assert!(text["meta"].get("mtime").is_none(), "{name}: {text}");
        // A member that is not plain text is read from a copy, and stamped with the member's time the same way.
        ws.file(&format!("gz-{name}"), with_first_mtime(tar_of(&[(b"a.log.gz", b'0', &gzip_of(b"one\n"))]), &field));
        let copied = read(&ws, json!({"path": format!("gz-{name}/a.log.gz")}));
        assert_eq!(copied["ok"], true, "{name}: {copied}");
        assert!(copied["meta"].get("mtime").is_none(), "{name}: {copied}");
    }
}

/// Replaces every `from` in `bytes` with `to` (of the same length): a name in a zip's local and central headers.
fn renamed(mut bytes: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(from.len()).position(|window| window == from) {
        bytes[at + found..at + found + to.len()].copy_from_slice(to);
        at += found + to.len();
    }
    bytes
}

#[test]
fn a_zip_name_stored_more_than_once_is_read_as_its_last_copy_and_its_listing_says_so() {
    let ws = Ws::new();
    let stage = ws.outer.join("dup");
    crate::common::write_file(&stage.join("ok.txt"), b"first\n");
    crate::common::write_file(&stage.join("a/ok.txt"), b"second\n");
    crate::common::write_file(&stage.join("ok.tx2"), b"third\n");
    run(&stage, "zip", &["-q", "-X", "two.zip", "ok.txt", "a/ok.txt"]);
    run(&stage, "zip", &["-q", "-X", "three.zip", "ok.txt", "a/ok.txt", "ok.tx2"]);
    // `./ok.txt` is spelled `ok.txt` by a request; in three.zip `ok.txt` is also stored twice exactly.
    let two = renamed(std::fs::read(stage.join("two.zip")).unwrap(), b"a/ok.txt", b"./ok.txt");
    let three = renamed(std::fs::read(stage.join("three.zip")).unwrap(), b"a/ok.txt", b"./ok.txt");
    ws.file("two.zip", two);
    ws.file("three.zip", renamed(three, b"ok.tx2", b"ok.txt"));
    for (archive, last, size) in [("two.zip", "second", "7 B"), ("three.zip", "third", "6 B")] {
        let listing = read(&ws, json!({"path": archive}));
        let lines: Vec<&str> = output(&listing).lines().collect();
        assert_eq!(
            lines[0],
            format!("ok.txt  ({size} · stored)  (stored 2 times: the last is read)"),
            "{archive}: {}",
            output(&listing)
        );
        let member = read(&ws, json!({"path": format!("{archive}/ok.txt")}));
        assert!(output(&member).starts_with(&format!("1: {last}\n")), "{archive}: {}", output(&member));
    }
    let listing = read(&ws, json!({"path": "three.zip"}));
    assert!(
        footer(output(&listing))
            .contains("some names are stored more than once: each is listed and read as its last copy"),
        "{}",
        output(&listing)
    );
}

#[test]
fn an_archive_inside_an_archive_is_read_one_level_deep() {
    let ws = Ws::new();
    bundles(&ws);
    let stage = ws.outer.join("nest");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(ws.root.join("bundle.tar.gz"), stage.join("inner.tar.gz")).unwrap();
    run(&stage, "zip", &["-q", "outer.zip", "inner.tar.gz"]);
    std::fs::copy(stage.join("outer.zip"), ws.root.join("outer.zip")).unwrap();
    let inner = read(&ws, json!({"path": "outer.zip/inner.tar.gz/logs/app.log", "limit": 1}));
    assert!(output(&inner).starts_with("1: 2026-11-25 request 1 served\n"), "{inner}");
    assert_eq!(inner["meta"]["archive"]["path"], "outer.zip/inner.tar.gz");
    assert_eq!(inner["meta"]["archive"]["format"], "tar.gz");
    let listing = read(&ws, json!({"path": "outer.zip/inner.tar.gz"}));
    assert_eq!(listing["kind"], "directory", "{listing}");
    let denied = read(&ws, json!({"path": "outer.zip/inner.tar.gz/.env"}));
    assert_eq!(denied["error_code"], "DENIED");
    run(&stage, "zip", &["-q", "deeper.zip", "outer.zip"]);
    std::fs::copy(stage.join("deeper.zip"), ws.root.join("deeper.zip")).unwrap();
    let deep = read(&ws, json!({"path": "deeper.zip/outer.zip/inner.tar.gz/people.csv"}));
    assert_eq!(deep["error_code"], "TOO_LARGE", "{deep}");
    assert!(output(&deep).contains("archives are read one level deep"), "{}", output(&deep));
}

#[test]
fn damaged_and_encrypted_archives_are_refused_cleanly() {
    let ws = Ws::new();
    bundles(&ws);
    let zip = std::fs::read(ws.root.join("bundle.zip")).unwrap();
    ws.file("cut.zip", &zip[..zip.len() - 30]);
    let cut = read(&ws, json!({"path": "cut.zip"}));
    assert_eq!(cut["error_code"], "IO_ERROR", "{cut}");
    assert!(output(&cut).contains("a damaged zip archive"), "{}", output(&cut));
    let tgz = std::fs::read(ws.root.join("bundle.tar.gz")).unwrap();
    ws.file("cut.tar.gz", &tgz[..tgz.len() / 2]);
    let cut = read(&ws, json!({"path": "cut.tar.gz"}));
    assert_eq!(cut["error_code"], "IO_ERROR", "{cut}");
    let stage = staged(&ws);
    let file = ws.root.join("locked.zip");
    run(&stage, "zip", &["-q", "-P", "secret", file.to_str().unwrap(), "people.csv"]);
    let listing = read(&ws, json!({"path": "locked.zip"}));
    assert!(output(&listing).starts_with("people.csv  (28 B · "), "{}", output(&listing));
    assert!(output(&listing).lines().next().unwrap().ends_with("(encrypted)"));
    let locked = read(&ws, json!({"path": "locked.zip/people.csv"}));
    assert_eq!(locked["error_code"], "BINARY", "{locked}");
    assert!(output(&locked).contains("encrypted with a password"));
}

/// A zip whose only member declares 5 bytes and inflates to 50: the central directory lies about its size.
fn lying_zip() -> Vec<u8> {
    let stage = tempfile::tempdir().unwrap();
    std::fs::write(stage.path().join("a.txt"), "x".repeat(50)).unwrap();
    run(stage.path(), "zip", &["-q", "lie.zip", "a.txt"]);
    let mut zip = std::fs::read(stage.path().join("lie.zip")).unwrap();
    let central = zip.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    zip[central + 24..central + 28].copy_from_slice(&5u32.to_le_bytes());
    zip
}

/// A zip with 65,535 members of 600-byte names: a 40 MiB central directory, past what a listing reads.
fn huge_directory_zip() -> Vec<u8> {
    let mut central = Vec::new();
    for i in 0..65_535u32 {
        let name = format!("{i:0>600}");
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&(name.len() as u16).to_le_bytes());
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&0u32.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    // One empty local header first, as every zip begins.
    let mut zip = b"PK\x03\x04".to_vec();
    zip.extend_from_slice(&[0; 26]);
    let central_at = zip.len() as u32;
    zip.extend_from_slice(&central);
    zip.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    zip.extend_from_slice(&65_535u16.to_le_bytes());
    zip.extend_from_slice(&65_535u16.to_le_bytes());
    zip.extend_from_slice(&(central.len() as u32).to_le_bytes());
    zip.extend_from_slice(&central_at.to_le_bytes());
    zip.extend_from_slice(&[0, 0]);
    zip
}

#[test]
fn a_zip_of_more_members_than_a_listing_holds_is_too_large_naming_its_count() {
    let ws = Ws::new();
    let names: Vec<String> = (0..250_001).map(|i| format!("{i:06}")).collect();
    ws.file("many.zip", crate::common::zip64::zip64_of(&names, names.len() as u64, 0));
    for path in ["many.zip", "many.zip/000001"] {
        let refused = read(&ws, json!({"path": path}));
        assert_eq!(refused["error_code"], "TOO_LARGE", "{path}: {}", footer(output(&refused)));
        assert!(
            output(&refused).contains("declares 250001 members, and a listing holds at most 250000"),
            "{path}: {}",
            output(&refused)
        );
    }
}

#[cfg(unix)]
#[test]
fn bombs_forged_sizes_and_huge_indexes_are_refused_in_256_mb() {
    let ws = Ws::new();
    ws.file("lie.zip", lying_zip());
    ws.file("huge.zip", huge_directory_zip());
    // A member of 1 GiB of empty lines deflated to 1 MiB (a zip bomb), zipped from a pipe (the member is named
    // `-`): a read stops at the time budget.
    let stage = ws.outer.join("bomb");
    std::fs::create_dir_all(&stage).unwrap();
    run(&stage, "sh", &["-c", "head -c 1073741824 /dev/zero | tr '\\0' '\\n' | zip -q -1 bomb.zip -"]);
    std::fs::copy(stage.join("bomb.zip"), ws.root.join("bomb.zip")).unwrap();
    let read_small = |request: Value, timeout: &str| {
        let mut cmd = ws.cmd_with_memory_limit(256 << 20);
        cmd.args(["--timeout-ms", timeout]);
        parse_one_json(&cmd.write_stdin(request.to_string()).output().unwrap().stdout)
    };
    let lie = read_small(json!({"path": "lie.zip/a.txt"}), "30000");
    assert_eq!(lie["error_code"], "IO_ERROR", "{lie}");
    assert!(output(&lie).contains("holds more than its declared size"), "{}", output(&lie));
    let huge = read_small(json!({"path": "huge.zip"}), "30000");
    assert_eq!(huge["error_code"], "TOO_LARGE", "{huge}");
    assert!(output(&huge).contains("central directory is over 32 MiB"), "{}", output(&huge));
    let started = std::time::Instant::now();
    let bomb = read_small(json!({"path": "bomb.zip/-", "offset": -1}), "1500");
    assert_eq!(bomb["error_code"], "TIMEOUT", "{bomb}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[tokio::test]
async fn the_mcp_server_lists_an_archive_and_reads_a_member_and_refuses_a_denied_one() {
    let ws = Ws::new();
    bundles(&ws);
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(&ws.root);
    });
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("initialize");
    let listing = call(&client, json!({"path": "bundle.tar.gz/logs"})).await;
    assert!(text_of(&listing).starts_with("app.log  ("), "{}", text_of(&listing));
    let member = call(&client, json!({"path": "bundle.tar.gz/logs/app.log", "offset": 300})).await;
    assert!(text_of(&member).starts_with("300: 2026-11-25 request 300 served\n"), "{}", text_of(&member));
    // The session knows a member by its path through the archive: an exact repeat is a stub, another member is not.
    let repeat = call(&client, json!({"path": "bundle.tar.gz/logs/app.log", "offset": 300})).await;
    assert!(text_of(&repeat).starts_with("(unchanged since your read at "), "{}", text_of(&repeat));
    let other = call(&client, json!({"path": "bundle.tar.gz/notes/readme.md"})).await;
    assert!(text_of(&other).starts_with("1: # Notes\n"), "{}", text_of(&other));
    // Rewriting the archive changes its members: the same read sends the content again.
    std::fs::copy(ws.root.join("bundle.tar"), ws.root.join("bundle.tar.gz")).unwrap();
    let again = call(&client, json!({"path": "bundle.tar.gz/logs/app.log", "offset": 300})).await;
    assert!(text_of(&again).starts_with("300: 2026-11-25 request 300 served\n"), "{}", text_of(&again));
    let denied = call(&client, json!({"path": "bundle.tar.gz/.env"})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text_of(&denied).starts_with("DENIED: bundle.tar.gz/.env"), "{}", text_of(&denied));
    client.cancel().await.expect("cancel");
}

#[test]
fn members_that_are_not_plain_text_take_the_road_of_their_content() {
    let ws = Ws::new();
    let stage = ws.outer.join("media");
    crate::common::write_file(&stage.join("paper.pdf"), &crate::common::pdf::pdf_of(&["First words", "Second words"]));
    crate::common::write_file(&stage.join("app.log.gz"), &gzip_of(b"one\ntwo\nthree\n"));
    crate::common::write_file(&stage.join("empty.txt"), b"");
    let notebook = r##"{"cells":[{"cell_type":"markdown","source":["# Title"],"metadata":{}}],"metadata":{},"nbformat":4,"nbformat_minor":5}"##;
    crate::common::write_file(&stage.join("nb.ipynb"), notebook.as_bytes());
    run(&stage, "zip", &["-q", "media.zip", "paper.pdf", "app.log.gz", "empty.txt", "nb.ipynb"]);
    std::fs::copy(stage.join("media.zip"), ws.root.join("media.zip")).unwrap();
    let pdf = read(&ws, json!({"path": "media.zip/paper.pdf", "pages": "2"}));
    assert!(output(&pdf).starts_with("── page 2 of 2 ──\n│ Second words\n"), "{pdf}");
    assert!(footer(output(&pdf)).contains("member of media.zip (zip"), "{}", output(&pdf));
    assert_eq!(pdf["meta"]["archive"]["member"], "paper.pdf");
    let log = read(&ws, json!({"path": "media.zip/app.log.gz", "offset": -1}));
    assert!(output(&log).starts_with("3: three\n"), "{}", output(&log));
    assert!(footer(output(&log)).contains("gzip-compressed"), "{}", output(&log));
    let empty = read(&ws, json!({"path": "media.zip/empty.txt"}));
    assert_eq!(empty["ok"], true, "{empty}");
    let cells = read(&ws, json!({"path": "media.zip/nb.ipynb"}));
    assert_eq!(cells["meta"]["rendered_from"], "notebook", "{cells}");
}

fn gzip_of(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip must be installed for these tests");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}
