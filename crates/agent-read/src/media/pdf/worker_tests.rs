//! PDF text extraction in a worker process (`Isolation::Process`).
//!
//! The worker is the real program, `agent-read-worker` (crate agent-read-cli), started in its `pdf` mode: it is found
//! beside this test binary's directory, so the workspace's `cargo test` (which builds every
//! crate before it runs a test) has built it. A few cases put a shell in its place to play a worker that hangs,
//! crashes or answers garbage. Fixtures are made with lopdf, by the helpers the integration tests use too (`super::fixtures`).

use super::fixtures::{
    Fixture, encrypted, handmade, numbered, pdf_of, peak_rss_bytes, show, stream_object, texts, zeros_zlib,
};
use crate::budget::Cancel;
use crate::media::child::testing::{as_file, built_worker};
use crate::media::pdf::{self, Extracted, Isolation, PageSelection, PdfError};
use lopdf::{Dictionary, Stream, dictionary};
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The worker program in its PDF mode.
fn worker() -> Isolation {
    Isolation::Process { program: built_worker(), args: vec![crate::media::pdf::WORKER_MODE.into()] }
}

/// A shell script in the worker's place (the worker's own arguments become `$1`…).
fn fake_worker(script: &str) -> Isolation {
    Isolation::Process { program: PathBuf::from("/bin/sh"), args: vec!["-c".into(), script.into(), "sh".into()] }
}

fn run(bytes: &[u8], pages: &str, max_chars: usize, isolation: &Isolation) -> Result<Extracted, PdfError> {
    let selection = PageSelection::parse(pages).expect("a valid selection");
    let deadline = Instant::now() + Duration::from_secs(30);
    pdf::extract(&as_file(bytes), &selection, max_chars, deadline, &Cancel::new(), isolation)
}

/// Children of this process that ended but were not reaped, ignoring any that is reaped within two seconds (other
/// tests run workers at the same time).
fn lasting_zombies() -> Vec<String> {
    let zombies = || {
        let mut found = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for pid in children.split_whitespace() {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
                if state == Some("Z") {
                    found.push(pid.to_string());
                }
            }
        }
        found
    };
    let first = zombies();
    let started = Instant::now();
    let mut lasting = first.clone();
    while !lasting.is_empty() && started.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(50));
        let now = zombies();
        lasting.retain(|pid| now.contains(pid));
    }
    lasting
}

#[test]
fn the_worker_extracts_only_the_chosen_pages_with_their_exact_text() {
    let extracted = run(&numbered(6), "2,4-5", 100_000, &worker()).unwrap();
    assert_eq!(extracted.page_count, 6);
    assert!(extracted.complete);
    assert_eq!(texts(&extracted), [(2, "Page 2 text"), (4, "Page 4 text"), (5, "Page 5 text")]);
}

#[test]
fn the_worker_stops_after_the_page_that_crosses_max_chars() {
    let extracted = run(&numbered(10), "1-", 30, &worker()).unwrap();
    assert_eq!(extracted.page_count, 10);
    assert!(!extracted.complete);
    assert_eq!(texts(&extracted), [(1, "Page 1 text"), (2, "Page 2 text"), (3, "Page 3 text")]);
}

#[test]
fn the_worker_reads_200_pages_whole() {
    let lines = |page: u32| {
        (1..=45)
            .map(|i| format!("Page {page}, line {i}: the quick brown fox jumps over the lazy dog"))
            .collect::<Vec<_>>()
    };
    let bytes = pdf_of(&(1..=200).map(|page| lines(page).join("\n")).collect::<Vec<_>>());
    let started = Instant::now();
    let extracted = run(&bytes, "1-", usize::MAX / 64, &worker()).unwrap();
    eprintln!("200 pages in the worker (debug build): {:?}", started.elapsed());
    assert!(extracted.complete);
    assert_eq!(extracted.pages.len(), 200);
    assert_eq!(extracted.pages[199].text, lines(200).join("\n"));
}

#[test]
fn the_worker_refuses_encrypted_and_malformed_pdfs_and_reads_what_the_empty_password_opens() {
    assert!(matches!(run(&encrypted("secret"), "1", 100, &worker()), Err(PdfError::Encrypted)));
    assert_eq!(texts(&run(&encrypted(""), "1", 100, &worker()).unwrap()), [(1, "Secret page")]);
    let mut garbage = b"%PDF-1.7\n".to_vec();
    garbage.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    assert!(matches!(run(&garbage, "1", 100, &worker()), Err(PdfError::Malformed(_))));
    let whole = numbered(20);
    assert!(matches!(run(&whole[..whole.len() / 2], "1", 100, &worker()), Err(PdfError::Malformed(_))));
    assert!(matches!(run(b"just text", "1", 100, &worker()), Err(PdfError::Malformed(_))));
}

#[test]
fn a_page_that_makes_the_extractor_panic_gets_a_note_in_the_worker() {
    let mut fixture = Fixture::new();
    fixture.text_page("fine");
    let broken = fixture.doc.add_object(Stream::new(Dictionary::new(), b"BT /F1 12 Tf 5 Tj ET".to_vec()));
    fixture.page(broken.into());
    let extracted = run(&fixture.bytes(), "1-", 1000, &worker()).unwrap();
    assert_eq!(extracted.pages[0].text, "fine");
    assert!(extracted.pages[1].text.contains("[text extraction failed on this page: the extractor panicked"));
}

#[test]
fn a_decompression_bomb_fails_cleanly_within_the_budget_in_the_worker() {
    // 2 GiB of zeros in 2 MiB of FlateDecode, as the page's second content stream.
    let mut fixture = Fixture::new();
    let text = fixture.doc.add_object(Stream::new(Dictionary::new(), show("Before the bomb")));
    let bomb = Stream::new(dictionary! { "Filter" => "FlateDecode" }, zeros_zlib((2u64 << 30) / 258));
    let bomb = fixture.doc.add_object(bomb);
    fixture.page(vec![text.into(), bomb.into()].into());
    let bytes = fixture.bytes();
    let before = peak_rss_bytes();
    let started = Instant::now();
    let err = run(&bytes, "1", 10_000, &worker()).unwrap_err();
    let took = started.elapsed();
    eprintln!("process mode: the 2 GiB bomb failed in {took:?}: {err}");
    assert!(matches!(err, PdfError::TooLarge(_)), "{err:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(peak_rss_bytes() < before.max(64 << 20) + (256 << 20), "the parent grew: {} bytes", peak_rss_bytes());
}

#[test]
fn an_object_stream_bomb_unpacked_while_loading_is_bounded_by_the_worker_limits() {
    // lopdf inflates object streams while it loads, before any check of ours: only the worker's limits bound it.
    let bytes = handmade(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        stream_object("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        stream_object("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &zeros_zlib((8u64 << 30) / 258)),
    ]);
    let before = peak_rss_bytes();
    let started = Instant::now();
    let outcome = run(&bytes, "1", 100, &worker());
    let took = started.elapsed();
    eprintln!("process mode: the 8 GiB object stream bomb gave {outcome:?} in {took:?}");
    match outcome {
        Ok(extracted) => assert_eq!(texts(&extracted), [(1, "Hello")]),
        Err(err) => assert!(matches!(err, PdfError::TooLarge(_) | PdfError::Timeout), "{err:?}"),
    }
    assert!(took < Duration::from_secs(35), "{took:?}");
    assert!(peak_rss_bytes() < before.max(64 << 20) + (256 << 20), "the parent grew: {} bytes", peak_rss_bytes());
}

#[test]
fn a_deadline_in_the_past_times_out_without_starting_a_worker() {
    let file = as_file(&numbered(2));
    let isolation = fake_worker("touch /nonexistent-dir/started");
    let err = pdf::extract(&file, &PageSelection::all(), 100, Instant::now(), &Cancel::new(), &isolation).unwrap_err();
    assert!(matches!(err, PdfError::Timeout), "{err:?}");
}

#[test]
fn a_hanging_worker_is_killed_at_the_deadline_and_reaped() {
    let file = as_file(&numbered(2));
    let started = Instant::now();
    let deadline = started + Duration::from_millis(300);
    let isolation = fake_worker("exec sleep 30");
    let err = pdf::extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &isolation).unwrap_err();
    let late = started.elapsed().saturating_sub(Duration::from_millis(300));
    assert!(matches!(err, PdfError::Timeout), "{err:?}");
    assert!(late < Duration::from_secs(1), "{late:?} late");
    assert_eq!(lasting_zombies(), Vec::<String>::new());
}

#[test]
fn cancelling_kills_the_worker_and_reaps_it() {
    let file = as_file(&numbered(2));
    let cancel = Cancel::new();
    let canceller = cancel.clone();
    let timer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        canceller.cancel();
    });
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    let err = pdf::extract(&file, &PageSelection::all(), 100, deadline, &cancel, &fake_worker("exec sleep 30"));
    timer.join().unwrap();
    let err = err.unwrap_err();
    assert!(matches!(&err, PdfError::Io(io) if crate::budget::is_cancelled(io)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(lasting_zombies(), Vec::<String>::new());
}

#[test]
fn a_crashing_or_babbling_worker_is_a_short_crash_report() {
    let bytes = numbered(1);
    let killed = run(&bytes, "1", 100, &fake_worker("echo 'some detail' >&2; kill -SEGV $$")).unwrap_err();
    assert!(matches!(&killed, PdfError::Crashed(reason) if reason.contains("signal 11: some detail")), "{killed:?}");
    let status = run(&bytes, "1", 100, &fake_worker("yes 'a long line of noise' | head -c 100000 >&2; exit 7"));
    let status = status.unwrap_err();
    assert!(matches!(&status, PdfError::Crashed(reason) if reason.contains("status 7") && reason.len() < 300));
    let garbage = run(&bytes, "1", 100, &fake_worker("echo not json")).unwrap_err();
    assert!(matches!(&garbage, PdfError::Crashed(reason) if reason.contains("not valid")), "{garbage:?}");
    let silent = run(&bytes, "1", 100, &fake_worker("exit 0")).unwrap_err();
    assert!(matches!(&silent, PdfError::Crashed(reason) if reason.contains("no answer")), "{silent:?}");
    let flood = run(&bytes, "1", 10, &fake_worker("head -c 40000000 /dev/zero")).unwrap_err();
    assert!(matches!(&flood, PdfError::Crashed(reason) if reason.contains("passed")), "{flood:?}");
    let memory = "echo 'memory allocation of 1073741824 bytes failed' >&2; kill -ABRT $$";
    let memory = run(&bytes, "1", 100, &fake_worker(memory)).unwrap_err();
    assert!(matches!(&memory, PdfError::TooLarge(reason) if reason.contains("more memory")), "{memory:?}");
}

#[test]
fn a_missing_worker_program_is_an_io_error_naming_it() {
    let isolation = Isolation::Process { program: PathBuf::from("/nonexistent/agent-read"), args: Vec::new() };
    let err = run(&numbered(1), "1", 100, &isolation).unwrap_err();
    assert!(matches!(&err, PdfError::Io(io) if io.to_string().contains("/nonexistent/agent-read")), "{err:?}");
}

#[test]
fn the_worker_reads_the_file_from_its_start_and_its_offset_is_left_alone() {
    let mut file = as_file(&numbered(2));
    file.seek(SeekFrom::Start(123)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let extracted = pdf::extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &worker()).unwrap();
    assert_eq!(texts(&extracted), [(1, "Page 1 text"), (2, "Page 2 text")]);
    assert_eq!(file.stream_position().unwrap(), 123);
}

#[test]
fn the_worker_programs_pdf_mode_answers_one_json_document() {
    let binary = built_worker();
    let output = Command::new(&binary)
        .args(["pdf", "2", "1000", "10", "-"])
        .stdin(Stdio::from(as_file(&numbered(3))))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["outcome"], "extracted");
    assert_eq!(answer["page_count"], 3);
    assert_eq!(answer["pages"][0]["text"], "Page 2 text");
    let usage = Command::new(&binary).args(["pdf", "nonsense"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert!(usage.stdout.is_empty());
    let unknown = Command::new(&binary).args(["read", "x"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown mode \"read\""), "{unknown:?}");
}
