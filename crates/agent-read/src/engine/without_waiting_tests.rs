//! Reads that must not wait ([`Reader::read_without_waiting`], [`Session::read_json_without_waiting`]): when they
//! answer, they answer exactly what the ordinary read answers (result and what was observed), and they step aside
//! (`None`) for everything that could wait — directories, links, big or empty files, media, notebooks, FIFOs, files
//! not found, an audit log, ignore files. Files are written just before they are read, so they are in the caches.
//!
//! Where the temporary directory cannot be read without waiting (a file system that is not local, a kernel without
//! `RESOLVE_CACHED`, a seccomp filter), each test says so on stderr and checks only that every read steps aside.

use crate::engine::ReadOptions;
use crate::request::ReadMode;
use crate::resolve::Roots;
use crate::{Cancel, Config, ReadRequest, ReadResult, Reader, Session, SessionSettings};
use proptest::prelude::*;
use serde_json::json;
use std::path::Path;

/// A root holding every kind of file the tests read.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(root.join(name), bytes).unwrap();
    write("a.txt", b"one\ntwo\nthree\n");
    write("crlf.txt", b"alpha\r\nbeta\r\ngamma");
    write("code.py", b"def f():\n    if x:\n        return 1\n    return 2\n\nprint(f())\n");
    write("utf16.txt", &[0xFF, 0xFE, b'h', 0, b'i', 0, b'\n', 0, b'!', 0]);
    write("latin.txt", b"caf\xe9 cr\xe8me\nna\xefve\n");
    write("long.txt", format!("{}\nshort\n", "x".repeat(5000)).as_bytes());
    write("bin.dat", &[0x7F, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0x3E, 0]);
    write(".env", b"SECRET=1\n");
    write("big.txt", "line\n".repeat(20_000).as_bytes());
    write("empty.txt", b"");
    write("nb.ipynb", br#"{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#);
    write("img.png", &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R']);
    write("doc.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");
    std::fs::create_dir(root.join("sub")).unwrap();
    write("sub/inner.txt", b"inside\n");
    std::os::unix::fs::symlink("a.txt", root.join("link.txt")).unwrap();
    dir
}

/// Whether this machine can open and read `file` beneath `root` without waiting (some file systems refuse
/// `RWF_NOWAIT`); says so on stderr when it cannot.
fn can_read_without_waiting(root: &Path, file: &str) -> bool {
    let roots = Roots::new(&[root.to_path_buf()]).unwrap();
    let resolved = roots.resolve(file).unwrap();
    let can = (0..ATTEMPTS).find_map(|_| roots.open_cached(&resolved)).is_some_and(|opened| {
        let crate::resolve::Handle::File(file, _) = opened.handle else { return false };
        let mut byte = [0u8; 1];
        let flags = rustix::io::ReadWriteFlags::NOWAIT;
        rustix::io::preadv2(&file, &mut [std::io::IoSliceMut::new(&mut byte)], 0, flags).is_ok()
    });
    if !can {
        eprintln!("{} cannot be read without waiting here: only stepping aside is checked", root.display());
    }
    can
}

/// A read that cannot wait may still give up now and then when a lookup races with the kernel's own cache updates
/// (`EAGAIN`), which is allowed: the tests try a few times. What must step aside steps aside every time.
const ATTEMPTS: usize = 20;

/// [`Reader::read_without_waiting`], tried up to [`ATTEMPTS`] times.
fn without_waiting(reader: &Reader, request: &ReadRequest) -> Option<(ReadResult, Option<crate::engine::Seen>)> {
    (0..ATTEMPTS).find_map(|_| reader.read_without_waiting(request, observing()))
}

/// [`Session::read_json_without_waiting`], tried up to [`ATTEMPTS`] times (a try that steps aside records nothing).
fn session_without_waiting(session: &Session, request: &serde_json::Value) -> Option<ReadResult> {
    (0..ATTEMPTS).find_map(|_| session.read_json_without_waiting(request))
}

/// Observing, as sessions read.
fn observing() -> ReadOptions<'static> {
    ReadOptions { observe: true, ..ReadOptions::default() }
}

/// Reads `request` both ways; asserts that the read that must not wait answered, and answered the same.
fn assert_same_both_ways(reader: &Reader, request: &ReadRequest) {
    let fast = without_waiting(reader, request);
    let (fast, fast_seen) = fast.unwrap_or_else(|| panic!("{request:?} stepped aside"));
    let (slow, slow_seen) = reader.read_with(request, &Cancel::new(), observing());
    assert_eq!(serde_json::to_value(&fast).unwrap(), serde_json::to_value(&slow).unwrap(), "{request:?}");
    assert_eq!(fast.output(), slow.output(), "{request:?}");
    assert_eq!(fast_seen, slow_seen, "{request:?}");
}

fn request(path: &str) -> ReadRequest {
    ReadRequest::new(path)
}

#[test]
fn text_and_its_windows_read_the_same_without_waiting() {
    let dir = workspace();
    if !can_read_without_waiting(dir.path(), "a.txt") {
        return;
    }
    let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
    let requests = [
        request("a.txt"),
        request("./sub/../a.txt"),
        request("sub/inner.txt"),
        ReadRequest { path: dir.path().join("a.txt").to_string_lossy().into_owned(), ..request("") },
        ReadRequest { offset: Some(2), limit: Some(1), ..request("a.txt") },
        ReadRequest { offset: Some(-2), ..request("a.txt") },
        ReadRequest { start_byte: Some(4), end_byte: Some(9), ..request("a.txt") },
        ReadRequest { mode: Some(ReadMode::Block), anchor_line: Some(2), ..request("code.py") },
        request("crlf.txt"),
        request("utf16.txt"),
        request("latin.txt"),
        ReadRequest { encoding: Some("iso-8859-2".into()), ..request("latin.txt") },
        request("long.txt"),
        // Errors found without opening anything, or on sight of the content.
        request("bin.dat"),
        request(".env"),
        request("../outside.txt"),
        ReadRequest { offset: Some(99), ..request("a.txt") },
        ReadRequest { pages: Some("1".into()), ..request("a.txt") },
        ReadRequest { encoding: Some("klingon".into()), ..request("a.txt") },
        ReadRequest { mode: Some(ReadMode::Block), anchor_line: Some(1), ..request("bin.dat") },
    ];
    for request in &requests {
        assert_same_both_ways(&reader, request);
    }
}

#[test]
fn whatever_could_wait_steps_aside() {
    let dir = workspace();
    let root = dir.path();
    let fifo = std::process::Command::new("mkfifo").arg(root.join("pipe")).status().unwrap();
    assert!(fifo.success());
    let reader = Reader::new(Config::with_roots([root])).unwrap();
    for path in [".", "sub", "link.txt", "big.txt", "empty.txt", "nb.ipynb", "img.png", "doc.pdf", "pipe", "nope.txt"] {
        assert!(without_waiting(&reader, &request(path)).is_none(), "{path} did not step aside");
    }
    // The ordinary read still answers them all: a FIFO with an error, at once.
    let ReadResult::Error(error) = reader.read(&request("pipe")) else { panic!("a FIFO was read") };
    assert_eq!(error.code, crate::ErrorCode::NotRegular);
}

#[test]
fn an_audit_log_or_respected_ignore_files_send_every_read_the_ordinary_way() {
    let dir = workspace();
    let log = tempfile::NamedTempFile::new().unwrap();
    let audited = Config { audit_log: Some(log.path().to_path_buf()), ..Config::with_roots([dir.path()]) };
    let mut ignoring = Config::with_roots([dir.path()]);
    ignoring.policy.respect_ignore = true;
    for config in [audited, ignoring] {
        let reader = Reader::new(config).unwrap();
        assert!(without_waiting(&reader, &request("a.txt")).is_none());
        assert!(without_waiting(&reader, &request(".env")).is_none());
    }
    assert_eq!(std::fs::read_to_string(log.path()).unwrap(), "", "a read that stepped aside was audited");
}

#[test]
fn a_session_remembers_reads_made_without_waiting() {
    let dir = workspace();
    if !can_read_without_waiting(dir.path(), "a.txt") {
        return;
    }
    let reader = std::sync::Arc::new(Reader::new(Config::with_roots([dir.path()])).unwrap());
    let settings = SessionSettings { repeat_read_stubs: true, ..SessionSettings::default() };
    let session = Session::new(reader, settings).unwrap();
    let first = session_without_waiting(&session, &json!({"path": "a.txt"})).unwrap();
    assert!(matches!(first, ReadResult::Text(_)), "{}", first.output());
    // The same read again, the ordinary way: the ledger knows it was sent.
    let again = session.read_json_cancellable(&json!({"path": "a.txt"}), &Cancel::new());
    assert!(matches!(again, ReadResult::Unchanged(_)), "{}", again.output());
    let usage = session.usage();
    assert_eq!((usage.reads, usage.stubs), (2, 1));
    // A request that does not parse, or that could wait, records nothing.
    assert!(session_without_waiting(&session, &json!({"path": 7})).is_none());
    assert!(session_without_waiting(&session, &json!({"path": "sub"})).is_none());
    assert_eq!(session.usage().reads, 2);
}

/// Bytes of a generated file: a mix of ASCII, multibyte UTF-8, line endings and the odd invalid byte.
fn content() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        "[ -~]{0,40}".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just("é ü 日本".as_bytes().to_vec()),
        Just(vec![0xC3]),
        Just(vec![b'y'; 3000]),
    ];
    proptest::collection::vec(piece, 1..60).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any content, any line window: the same answer both ways, whenever the read that must not wait answers.
    #[test]
    fn any_file_reads_the_same_without_waiting(
        bytes in content(),
        offset in prop_oneof![Just(None), (-30i64..30).prop_map(Some)],
        limit in prop_oneof![Just(None), (1i64..20).prop_map(Some)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), &bytes).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let request = ReadRequest { offset, limit, ..request("f.txt") };
        let fast = without_waiting(&reader, &request);
        // Text up to 64 KiB, just written (so cached), is read without waiting wherever that is possible at all.
        let small = (1..=64 * 1024).contains(&bytes.len());
        prop_assert!(fast.is_some() || !small || !can_read_without_waiting(dir.path(), "f.txt"), "a small file stepped aside");
        if let Some((fast, fast_seen)) = fast {
            let (slow, slow_seen) = reader.read_with(&request, &Cancel::new(), observing());
            prop_assert_eq!(fast.output(), slow.output());
            prop_assert_eq!(fast_seen, slow_seen);
        }
    }
}
