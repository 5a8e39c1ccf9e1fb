//! Outlines and conversions in a worker process ([`Converter::Worker`](super::Converter::Worker)): the real
//! `agent-read-worker` gives what a conversion in this process gives, and scripts in its place play a worker that
//! hangs, floods, crashes or babbles, each ending in a short error (or none, when the reader hung up) and a reaped
//! child.

use super::process::{convert, outline};
use super::{DocumentError, Outline, page_as_utf8, text_of};
use crate::budget::{Budget, Cancel, is_cancelled};
use crate::classify::document::DocumentKind;
use crate::media::child::testing::{as_file, built_worker};
use crate::media::pages::PageSelection;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A page in windows-1252 (its `é` is one byte), with a link, a list and a script that must not show.
const PAGE: &[u8] = b"<html><head><meta charset=\"windows-1252\"><title>T</title><script>hidden()</script></head>\
    <body><h1>Caf\xe9 notes</h1><p>See <a href=\"https://example.com\">the site</a>.</p><ul><li>one</li>\
    <li>two</li></ul></body></html>";

fn budget(seconds: u64) -> Budget {
    Budget::new(Instant::now() + Duration::from_secs(seconds), Cancel::new())
}

/// Outline and text of `bytes` made by the worker `program`.
fn in_worker(program: &Path, kind: DocumentKind, bytes: &[u8]) -> Result<(Outline, String), DocumentError> {
    let file = as_file(bytes);
    let outline = outline(program, &file, kind, &budget(30))?;
    let mut text = Vec::new();
    convert(program, &file, kind, &PageSelection::all(), outline.unit_count, &budget(30), &mut text)?;
    Ok((outline, String::from_utf8(text).expect("converted text is UTF-8")))
}

/// A shell script in the worker's place (its arguments are the worker's, and ignored). What runs for long is `exec`ed, so
/// that no grandchild holds the pipes, as none of the real worker can (it may start no process).
#[cfg(unix)]
fn script(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("fake-worker");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn the_worker_gives_the_outline_and_text_a_conversion_here_gives() {
    let here = text_of(DocumentKind::Html, &page_as_utf8(PAGE.to_vec()), &PageSelection::all()).unwrap();
    let there = in_worker(&built_worker(), DocumentKind::Html, PAGE).unwrap();
    assert_eq!(there, here);
    assert!(there.1.starts_with("# Café notes\n"), "{}", there.1);
    assert!(!there.1.contains("hidden()"), "{}", there.1);
}

#[test]
fn a_damaged_document_is_the_same_error_from_the_worker() {
    let garbage = b"PK\x03\x04 not a zip at all, but named as a workbook";
    let here = text_of(DocumentKind::Xlsx, garbage, &PageSelection::all()).unwrap_err();
    let there = outline(&built_worker(), &as_file(garbage), DocumentKind::Xlsx, &budget(30)).unwrap_err();
    assert!(matches!(&there, DocumentError::Damaged(_)), "{there:?}");
    assert_eq!(there.to_string(), here.to_string());
}

#[cfg(unix)]
#[test]
fn a_hanging_worker_is_killed_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(dir.path(), "exec sleep 30");
    let started = Instant::now();
    let deadline = Budget::new(Instant::now() + Duration::from_millis(300), Cancel::new());
    let err =
        convert(&program, &as_file(b"x"), DocumentKind::Docx, &PageSelection::all(), 1, &deadline, &mut Vec::new())
            .unwrap_err();
    assert!(matches!(&err, DocumentError::Stopped(e) if e.kind() == io::ErrorKind::TimedOut), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[cfg(unix)]
#[test]
fn cancelling_kills_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(dir.path(), "exec sleep 30");
    let cancel = Cancel::new();
    let budget = Budget::new(Instant::now() + Duration::from_secs(30), cancel.clone());
    let started = Instant::now();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
    });
    let err = outline(&program, &as_file(b"x"), DocumentKind::Xlsx, &budget).unwrap_err();
    canceller.join().unwrap();
    assert!(matches!(&err, DocumentError::Stopped(e) if is_cancelled(e)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

/// A sink that takes `room` bytes, then fails as a channel whose reader hung up.
struct HangsUp {
    room: usize,
}

impl Write for HangsUp {
    fn write(&mut self, text: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let n = text.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
#[test]
fn a_worker_whose_reader_hung_up_is_stopped_without_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // Text without end, as a sheet of a billion rows would be.
    let program = script(dir.path(), "exec yes '│ | a row | of a sheet |'");
    let started = Instant::now();
    let mut sink = HangsUp { room: 1 << 20 };
    convert(&program, &as_file(b"x"), DocumentKind::Xlsx, &PageSelection::all(), 1, &budget(30), &mut sink).unwrap();
    assert_eq!(sink.room, 0);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[cfg(unix)]
#[test]
fn a_crashing_or_babbling_worker_is_a_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let crash = script(dir.path(), "echo 'line one'; echo 'thread main panicked at boom' >&2; exit 101");
    let mut text = Vec::new();
    let err = convert(&crash, &as_file(b"x"), DocumentKind::Docx, &PageSelection::all(), 1, &budget(30), &mut text)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "damaged or not a valid document: the converter's worker exited with status 101: thread main panicked at boom"
    );
    assert_eq!(text, b"line one\n", "the text before the crash is kept");
    let babble = script(dir.path(), "echo 'not json'");
    let err = outline(&babble, &as_file(b"x"), DocumentKind::Xlsx, &budget(30)).unwrap_err();
    assert!(err.to_string().contains("the worker's outline is not valid"), "{err}");
    let killed = script(dir.path(), "kill -9 $$");
    let err = outline(&killed, &as_file(b"x"), DocumentKind::Xlsx, &budget(30)).unwrap_err();
    assert!(err.to_string().contains("the worker was killed (SIGKILL"), "{err}");
}

#[test]
fn a_missing_worker_says_how_to_get_it() {
    let program = Path::new("/nonexistent/agent-read-worker");
    let err = outline(program, &as_file(b"x"), DocumentKind::Docx, &budget(30)).unwrap_err();
    let DocumentError::Stopped(error) = &err else { panic!("{err:?}") };
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert!(error.to_string().contains("/nonexistent/agent-read-worker is missing"), "{error}");
    assert!(error.to_string().contains("cargo build --release --bin agent-read-worker"), "{error}");
}

#[cfg(unix)]
#[test]
fn an_outline_past_its_cap_is_too_large_and_not_held() {
    let dir = tempfile::tempdir().unwrap();
    // 20 MiB of output where an outline of a few names is expected.
    let program = script(dir.path(), "exec head -c 20971520 /dev/zero");
    let err = outline(&program, &as_file(b"x"), DocumentKind::Xlsx, &budget(30)).unwrap_err();
    assert!(matches!(&err, DocumentError::TooLarge(reason) if reason.contains("outline passed")), "{err:?}");
}
