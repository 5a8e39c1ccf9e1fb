//! Sessions through the library: the ledger and freshness, repeat-read stubs, budgets, and many threads at once.
//! Real files in temporary directories.

use crate::common::Ws;
use agent_read::{Basis, TokenCounting, Usage};
use agent_read::{
    Config, Freshness, ReadManyRequest, ReadOptions, ReadRequest, ReadResult, Reader, Session, SessionSettings,
};
use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn session(ws: &Ws, settings: SessionSettings) -> Session {
    let reader = Reader::new(Config::with_roots([&ws.root])).unwrap();
    Session::new(Arc::new(reader), settings).unwrap()
}

fn stubs() -> SessionSettings {
    SessionSettings { repeat_read_stubs: true, ..SessionSettings::default() }
}

fn is_fresh(freshness: &Freshness) -> bool {
    matches!(freshness, Freshness::Fresh { .. })
}

fn reason(freshness: Freshness) -> String {
    match freshness {
        Freshness::Changed { reason, .. } => reason,
        other => panic!("expected a change, got {other:?}"),
    }
}

#[test]
fn freshness_follows_content_not_timestamps() {
    let ws = Ws::new();
    ws.file("a.txt", "one\ntwo\n");
    let session = session(&ws, SessionSettings::default());
    assert_eq!(session.freshness("a.txt"), Freshness::Unread);
    assert!(session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).is_ok());
    assert!(matches!(session.freshness("a.txt"), Freshness::Fresh { basis: Basis::Content, .. }));

    // Touched, and even rewritten with the same bytes through a new file: still fresh.
    let path = ws.root.join("a.txt");
    File::options().write(true).open(&path).unwrap().set_modified(SystemTime::now() + Duration::from_secs(60)).unwrap();
    assert!(is_fresh(&session.freshness("a.txt")));
    std::fs::write(ws.root.join("a.tmp"), "one\ntwo\n").unwrap();
    std::fs::rename(ws.root.join("a.tmp"), &path).unwrap();
    assert!(is_fresh(&session.freshness("a.txt")), "same content through a new inode");
    session.read(&ReadRequest::new("a.txt"), &ReadOptions::default());

    // A same-size change right away (same second, and the old time put back) is still caught.
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, "one\nTWO\n").unwrap();
    File::options().write(true).open(&path).unwrap().set_modified(modified).unwrap();
    assert_eq!(reason(session.freshness("a.txt")), "content changed (same size)");
    std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
    assert_eq!(reason(session.freshness("a.txt")), "content changed (size 8 → 14 bytes)");

    // Reading again makes it fresh; deleting it is a change; forgetting it makes it unread.
    session.read(&ReadRequest::new("a.txt"), &ReadOptions::default());
    assert!(is_fresh(&session.freshness("./a.txt")), "any spelling of the path");
    std::fs::remove_file(&path).unwrap();
    assert!(reason(session.freshness("a.txt")).starts_with("deleted"));
    session.forget("a.txt");
    assert_eq!(session.freshness("a.txt"), Freshness::Unread);
}

#[test]
#[cfg(unix)]
fn freshness_through_a_symlink_and_of_unread_or_outside_paths() {
    let ws = Ws::new();
    ws.file("real.txt", "x\n");
    std::os::unix::fs::symlink("real.txt", ws.root.join("link.txt")).unwrap();
    let session = session(&ws, SessionSettings::default());
    session.read(&ReadRequest::new("link.txt"), &ReadOptions::default());
    assert!(is_fresh(&session.freshness("real.txt")), "the ledger keys the real file");
    std::fs::remove_file(ws.root.join("real.txt")).unwrap();
    assert!(reason(session.freshness("link.txt")).starts_with("deleted"), "found through the link's path");
    let outside = ws.outside_file("secret.txt", "s");
    assert_eq!(session.freshness(outside.to_str().unwrap()), Freshness::Unread);
    // A denied file is never read, so never in the ledger, and checking it tells nothing about it.
    ws.file(".env", "TOKEN=1");
    assert!(session.read(&ReadRequest::new(".env"), &ReadOptions::default()).error().is_some());
    assert_eq!(session.freshness(".env"), Freshness::Unread);
    assert_eq!(session.freshness("never-read.txt"), Freshness::Unread);
}

#[test]
fn an_exact_repeat_of_an_unchanged_read_is_a_one_line_stub() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha\nbeta\n");
    let session = session(&ws, stubs());
    let first = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default());
    assert_eq!(first.output(), "1: alpha\n2: beta\n(lines 1-2 of 2 · 11 B · end of file)");

    let second = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default());
    let ReadResult::Unchanged(stub) = &second else { panic!("expected a stub: {}", second.output()) };
    assert!(stub.output.starts_with("(unchanged since your read at "), "{}", stub.output);
    assert!(stub.output.contains(": lines 1-2 of 2 · 11 B · end of file."), "{}", stub.output);
    assert!(stub.output.ends_with("send reread=true to get it again)"), "{}", stub.output);
    assert!(!stub.output.contains('\n'));
    assert_eq!(stub.meta.path, "a.txt");
    assert_eq!(stub.meta.saved_bytes, first.output().len() as u64);
    let json = serde_json::to_value(&second).unwrap();
    assert_eq!((json["ok"].as_bool(), json["kind"].as_str()), (Some(true), Some("unchanged")));

    // Another window, or reread, gets the content.
    assert_eq!(
        session
            .read(&ReadRequest { limit: Some(1), ..ReadRequest::new("a.txt") }, &ReadOptions::default())
            .output()
            .into_owned()
            .lines()
            .count(),
        2
    );
    assert_eq!(
        session
            .read(&ReadRequest { reread: true, ..ReadRequest::new("a.txt") }, &ReadOptions::default())
            .output()
            .into_owned(),
        first.output()
    );

    // Any change to the file, even outside the window and of the same size, sends the content again.
    std::fs::write(ws.root.join("a.txt"), "alpha\nBETA\n").unwrap();
    let window = ReadRequest { limit: Some(1), ..ReadRequest::new("a.txt") };
    assert!(
        matches!(session.read(&window, &ReadOptions::default()), ReadResult::Text(_)),
        "the file changed after line 1"
    );
    assert!(matches!(session.read(&window, &ReadOptions::default()), ReadResult::Unchanged(_)));
    let usage = session.usage();
    assert_eq!((usage.reads, usage.stubs), (6, 2));
}

#[test]
fn stubs_are_off_unless_asked_for_and_errors_are_never_stubbed() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha\n").dir("d");
    let plain = session(&ws, SessionSettings::default());
    plain.read(&ReadRequest::new("a.txt"), &ReadOptions::default());
    assert!(matches!(plain.read(&ReadRequest::new("a.txt"), &ReadOptions::default()), ReadResult::Text(_)));

    let session = session(&ws, stubs());
    for _ in 0..2 {
        assert!(matches!(
            session.read(&ReadRequest::new("missing.txt"), &ReadOptions::default()),
            ReadResult::Error(_)
        ));
    }
    session.read(&ReadRequest::new("d"), &ReadOptions::default());
    assert!(
        matches!(session.read(&ReadRequest::new("d"), &ReadOptions::default()), ReadResult::Unchanged(_)),
        "directories too"
    );
    ws.file("d/new.txt", "n");
    assert!(
        matches!(session.read(&ReadRequest::new("d"), &ReadOptions::default()), ReadResult::Directory(_)),
        "a new entry"
    );
}

#[test]
fn a_budget_is_reported_in_every_footer_and_shrinks_the_default_window() {
    let ws = Ws::new();
    let long: String = (1..=5000).map(|i| format!("line number {i} of a long file\n")).collect();
    ws.file("long.txt", &long).file("small.txt", "tiny\n");
    let settings = SessionSettings { budget_tokens: Some(3000), ..SessionSettings::default() };
    let session = session(&ws, settings);

    let small = session.read(&ReadRequest::new("small.txt"), &ReadOptions::default()).output().into_owned();
    let left = session.usage().tokens_left().unwrap();
    assert!(small.ends_with(&format!(" · session budget: {left} of 3000 tokens left)")), "{small}");

    // The default window (50 KiB, about 12,800 tokens) does not fit what is left: it shrinks, and says so.
    let shrunk = session.read(&ReadRequest::new("long.txt"), &ReadOptions::default()).output().into_owned();
    assert!(shrunk.len() <= 4 * 3000, "{}", shrunk.len());
    assert!(shrunk.contains("next: offset="), "the window ends early with its next call: {shrunk}");
    assert!(shrunk.contains("window shrunk to "), "{shrunk}");

    // An explicit window is honoured as asked; the budget is spent, and every answer says so.
    let asked = session
        .read(&ReadRequest { limit: Some(400), ..ReadRequest::new("long.txt") }, &ReadOptions::default())
        .output()
        .into_owned();
    assert_eq!(asked.lines().count(), 401);
    assert!(asked.ends_with("session budget spent: all 3000 tokens used)"), "{}", asked.lines().last().unwrap());
    let after = session.read(&ReadRequest::new("long.txt"), &ReadOptions::default()).output().into_owned();
    assert!(after.len() <= 1024 + 200, "the smallest window once spent: {}", after.len());
    let error = session.read(&ReadRequest::new("missing.txt"), &ReadOptions::default()).output().into_owned();
    assert!(error.ends_with("\n(session budget spent: all 3000 tokens used)"), "{error}");
}

#[cfg(feature = "images")]
#[test]
fn an_image_counts_what_it_costs_a_model_not_its_bytes() {
    let ws = Ws::new();
    let picture = image::RgbImage::from_fn(1000, 1000, |x, y| image::Rgb([x as u8, y as u8, (x ^ y) as u8]));
    picture.save(ws.root.join("picture.png")).unwrap();
    let session = session(&ws, SessionSettings { budget_tokens: Some(100_000), ..SessionSettings::default() });
    let read = session.read(&ReadRequest::new("picture.png"), &ReadOptions::default());
    let ReadResult::Attachment(attached) = &read else { panic!("{}", read.output()) };
    let tokens = attached.meta.estimated_tokens.expect("an image states its tokens");
    // 1000 × 1000: about 1,334 tokens for Claude, 765 for OpenAI, 4 tiles (1,032) for Gemini; the most is charged.
    assert_eq!((tokens.anthropic, tokens.openai, tokens.gemini), (1334, 765, 1032));
    let text = agent_read::TokenCounting::Estimate.count(&attached.output);
    let charged = session.usage().tokens;
    assert!(charged >= 1334 + text && charged < 1334 + text + 40, "{charged}: 1334 + the text's {text} + the note");
    assert!(charged < attached.attachments[0].data.len() as u64 / 4, "far less than its base64 would count");
}

#[test]
fn usage_counts_bytes_and_tokens_of_what_was_returned() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha beta gamma\n".repeat(20));
    let session = session(&ws, SessionSettings::default());
    let outputs: Vec<String> = (0..3)
        .map(|_| session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned())
        .collect();
    let usage: Usage = session.usage();
    assert_eq!(usage.reads, 3);
    assert_eq!(usage.bytes, outputs.iter().map(|o| o.len() as u64).sum::<u64>());
    let tokens: u64 = outputs.iter().map(|o| TokenCounting::Estimate.count(o)).sum();
    assert_eq!(usage.tokens, tokens);
    assert_eq!(usage.tokens_left(), None);
}

#[test]
fn exact_token_counts_are_refused_without_the_feature_and_used_with_it() {
    let ws = Ws::new();
    let reader = Arc::new(Reader::new(Config::with_roots([&ws.root])).unwrap());
    let settings = SessionSettings { token_counting: TokenCounting::O200k, ..SessionSettings::default() };
    match (Session::new(reader, settings), cfg!(feature = "tiktoken")) {
        (Ok(session), true) => {
            ws.file("a.txt", "hello world");
            let output = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned();
            let exact = TokenCounting::O200k.count(&output);
            assert_ne!(exact, TokenCounting::Estimate.count(&output), "the heuristic is not what counted");
            assert_eq!(session.usage().tokens, exact);
        }
        (Err(message), false) => assert!(message.contains("`tiktoken` feature"), "{message}"),
        (Ok(_), false) => panic!("exact counts accepted without the feature"),
        (Err(message), true) => panic!("exact counts refused with the feature: {message}"),
    }
}

#[test]
fn the_ledger_holds_under_concurrent_reads_from_many_threads() {
    let ws = Ws::new();
    for i in 0..5 {
        ws.file(&format!("f{i}.txt"), format!("file {i}\n").repeat(100 + i));
    }
    let session = session(&ws, stubs());
    let (threads, per_thread) = (8, 50);
    let results: Vec<(bool, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let session = &session;
                scope.spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            let result = session
                                .read(&ReadRequest::new(format!("f{}.txt", (t + i) % 5)), &ReadOptions::default());
                            (matches!(result, ReadResult::Unchanged(_)), result.output().len())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    // Looking up and recording happen under one lock: exactly one read per file delivers the content.
    let delivered = results.iter().filter(|(stub, _)| !stub).count();
    assert_eq!(delivered, 5);
    let usage = session.usage();
    assert_eq!(usage.reads, (threads * per_thread) as u64);
    assert_eq!(usage.stubs, (threads * per_thread - 5) as u64);
    assert_eq!(usage.bytes, results.iter().map(|(_, len)| *len as u64).sum::<u64>());
    assert_eq!(session.files_remembered(), 5);
    for i in 0..5 {
        assert!(is_fresh(&session.freshness(&format!("f{i}.txt"))));
    }
}

#[test]
fn a_writer_racing_the_readers_never_gets_a_stale_stub() {
    let ws = Ws::new();
    ws.file("log.txt", "0\n");
    let session = session(&ws, stubs());
    let path = ws.root.join("log.txt");
    let delivered = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for version in 1..200 {
                std::fs::write(&path, format!("{version}\n")).unwrap();
            }
        });
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..200 {
                    match session.read(&ReadRequest::new("log.txt"), &ReadOptions::default()) {
                        ReadResult::Text(text) => delivered.lock().unwrap().push(text.output),
                        ReadResult::Unchanged(_) => {}
                        other => panic!("{}", other.output()),
                    }
                }
            });
        }
    });
    // The writer is done: a stub now may only stand for the final content, and only if a reader was sent it.
    let final_answer = "1: 199\n(lines 1-1 of 1 · 4 B · end of file)";
    let was_delivered = delivered.lock().unwrap().iter().any(|output| output == final_answer);
    match session.read(&ReadRequest::new("log.txt"), &ReadOptions::default()) {
        ReadResult::Unchanged(_) => assert!(was_delivered, "a stub for content no reader was sent"),
        ReadResult::Text(text) => assert_eq!(text.output, final_answer),
        other => panic!("{}", other.output()),
    }
    assert!(matches!(session.read(&ReadRequest::new("log.txt"), &ReadOptions::default()), ReadResult::Unchanged(_)));
}

#[test]
fn read_many_records_its_files_and_counts_against_the_budget() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha\n").file("b.txt", "beta\n").file("c.md", "gamma\n");
    let settings = SessionSettings { budget_tokens: Some(10_000), ..stubs() };
    let session = session(&ws, settings);
    let answer = session.read_many(&ReadManyRequest::new(["*.txt"]), &ReadOptions::default()).output().into_owned();
    assert!(answer.contains("==> a.txt <==") && answer.contains("==> b.txt <=="), "{answer}");
    let left = session.usage().tokens_left().unwrap();
    assert!(answer.ends_with(&format!(" · session budget: {left} of 10000 tokens left)")), "{answer}");
    assert_eq!(session.usage().bytes, answer.len() as u64);
    assert!(is_fresh(&session.freshness("a.txt")) && is_fresh(&session.freshness("b.txt")));
    assert_eq!(session.freshness("c.md"), Freshness::Unread, "not matched, not read");
    std::fs::write(ws.root.join("b.txt"), "BETA\n").unwrap();
    assert_eq!(reason(session.freshness("b.txt")), "content changed (same size)");
    // The section showed a.txt whole, exactly as a `read` would: reading it again is a repeat.
    assert!(matches!(session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()), ReadResult::Unchanged(_)));
    // A section cut to its share is not what a `read` gives: that read sends the content.
    ws.file("long.txt", format!("{}\n", "x".repeat(60)).repeat(3000));
    let cut =
        session.read_many(&ReadManyRequest::new(["long.txt", "a.txt"]), &ReadOptions::default()).output().into_owned();
    assert!(cut.contains("==> long.txt <=="), "{cut}");
    assert!(matches!(session.read(&ReadRequest::new("long.txt"), &ReadOptions::default()), ReadResult::Text(_)));
}
