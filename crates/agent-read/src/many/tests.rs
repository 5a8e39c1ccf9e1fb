//! `read_many` end to end through a [`Reader`] on real files: expansion, fair shares, envelopes and the cap.

use super::*;
use crate::config::Config;
use crate::error::ErrorCode;
use crate::limits::Limits;
use crate::result::ReadResult;
use std::path::{Path, PathBuf};

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (path, text) in files {
        write(&root, path, text.as_bytes());
    }
    (dir, root)
}

/// [`workspace`] for files whose paths and texts were built at run time.
fn workspace_of(files: &[(String, String)]) -> (tempfile::TempDir, PathBuf) {
    let refs: Vec<(&str, &str)> = files.iter().map(|(path, text)| (path.as_str(), text.as_str())).collect();
    workspace(&refs)
}

fn write(root: &Path, path: &str, bytes: &[u8]) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, bytes).unwrap();
}

fn reader_with_cap(root: &Path, cap: usize) -> Reader {
    let limits = Limits { max_output_bytes: cap, ..Limits::default() };
    Reader::new(Config { limits, ..Config::with_roots([root]) }).unwrap()
}

fn run(reader: &Reader, request: ReadManyRequest) -> ManyResult {
    match reader.read_many(&request, &ReadOptions::default()) {
        ReadManyResult::Many(many) => {
            assert!(many.output.len() <= reader.limits().max_output_bytes, "over the cap: {}", many.output.len());
            assert_eq!(many.meta.bytes, many.output.len());
            many
        }
        ReadManyResult::Error(e) => panic!("the call failed: {e}"),
    }
}

fn paths_of(many: &ManyResult) -> Vec<&str> {
    many.files.iter().map(|f| f.path.as_str()).collect()
}

fn skipped_of(many: &ManyResult) -> Vec<(String, String)> {
    let what = |s: &Skipped| s.path.clone().or(s.pattern.clone()).unwrap_or_default();
    many.skipped.iter().map(|s| (what(s), s.reason.clone())).collect()
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i} of a longer file, padded to look like code\n")).collect()
}

#[test]
fn globs_honour_ignore_files_skip_hidden_names_and_come_sorted() {
    let (_dir, root) = workspace(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/b.rs", "b\n"),
        ("src/a.rs", "a\n"),
        ("src/deep/c.rs", "c\n"),
        ("src/debug.log", "log\n"),
        ("target/gen.rs", "generated\n"),
        ("src/.hidden.rs", "hidden\n"),
        ("src/sub/.ignore", "skipme.rs\n"),
        ("src/sub/skipme.rs", "x\n"),
        (".github/ci.yml", "on: push\n"),
    ]);
    let reader = reader_with_cap(&root, 50 * 1024);
    let many = run(&reader, ReadManyRequest::new(["**/*.rs"]));
    assert_eq!(paths_of(&many), ["src/a.rs", "src/b.rs", "src/deep/c.rs"]);
    assert!(
        many.output.starts_with("==> src/a.rs <==\n1: a\n(lines 1-1 of 1 · 2 B · end of file)\n\n==> src/b.rs <==\n")
    );
    // A pattern that names a hidden component reaches hidden names.
    let hidden = run(&reader, ReadManyRequest::new([".github/*.yml", "src/.*.rs"]));
    assert_eq!(paths_of(&hidden), [".github/ci.yml", "src/.hidden.rs"]);
}

/// A tree with ignore files at several levels (a negation, a nested `.ignore`, the repository's exclude file), hidden
/// and denied names, links of every kind and names that sort differently by component than as strings: each glob's
/// answer, files and withheld count, is what the walk by path gave before the walk by sorted listings.
#[test]
#[cfg(unix)]
fn globs_over_a_tricky_tree_give_the_same_answers_as_ever() {
    let (_dir, root) = workspace(&[
        (".gitignore", "target/\n*.log\n!keep.log\n"),
        (".ignore", "docs/private/\n"),
        ("src/a.rs", "x\n"),
        ("src/b.rs", "x\n"),
        ("src/.hidden.rs", "x\n"),
        ("src/gen/.gitignore", "*.rs\n!keep.rs\n"),
        ("src/gen/x.rs", "x\n"),
        ("src/gen/keep.rs", "x\n"),
        ("src/deep/.ignore", "skip/\n"),
        ("src/deep/skip/z.rs", "x\n"),
        ("src/deep/ok/y.rs", "x\n"),
        ("target/t.rs", "x\n"),
        ("build.log", "x\n"),
        ("keep.log", "x\n"),
        ("docs/private/p.rs", "x\n"),
        ("docs/pub.rs", "x\n"),
        (".git/info/exclude", "excluded.rs\n"),
        ("excluded.rs", "x\n"),
        (".git/HEAD", "x\n"),
        (".env", "K=1\n"),
        ("src/.env.rs", "x\n"),
        ("src/secret_key.rs", "x\n"),
        ("src/Password.RS", "x\n"),
        ("a/x.rs", "x\n"),
        ("a-b/x.rs", "x\n"),
        ("a/b/c/d.rs", "x\n"),
        ("A/Z.rs", "x\n"),
        (".github/workflows/ci.rs", "x\n"),
    ]);
    std::fs::create_dir(root.join("src/empty")).unwrap();
    for (link, to) in [("a.rs", "src/link.rs"), ("deep", "src/linkdir"), ("/etc/hostname", "src/out.rs")] {
        std::os::unix::fs::symlink(link, root.join(to)).unwrap();
    }
    std::os::unix::fs::symlink("missing.rs", root.join("src/dangling.rs")).unwrap();
    let reader = reader_with_cap(&root, 50 * 1024);
    let cases: [(&str, &[&str], u64); 9] = [
        (
            "**/*.rs",
            &[
                "A/Z.rs",
                "a/b/c/d.rs",
                "a/x.rs",
                "a-b/x.rs",
                "docs/pub.rs",
                "src/a.rs",
                "src/b.rs",
                "src/deep/ok/y.rs",
                "src/gen/keep.rs",
            ],
            2,
        ),
        ("src/**/*.rs", &["src/a.rs", "src/b.rs", "src/deep/ok/y.rs", "src/gen/keep.rs"], 2),
        ("**/*.log", &["keep.log"], 0),
        ("*", &["keep.log"], 0),
        (".github/**/*.rs", &[".github/workflows/ci.rs"], 0),
        ("**/.*", &[".gitignore", ".ignore", "src/.hidden.rs", "src/deep/.ignore", "src/gen/.gitignore"], 2),
        ("src/*", &["src/a.rs", "src/b.rs"], 3),
        ("src/gen/*", &["src/gen/keep.rs"], 0),
        ("src/deep/*/*.rs", &["src/deep/ok/y.rs"], 0),
    ];
    for (glob, files, withheld) in cases {
        let many = run(&reader, ReadManyRequest { max_files: Some(200), ..ReadManyRequest::new([glob]) });
        assert_eq!((paths_of(&many).as_slice(), many.meta.withheld), (files, withheld), "{glob}");
    }
}

/// A root narrowed into a folder the configured root's ignore files ignore is walked as the configured root would
/// walk it: nothing beneath it comes back, as a read with `respect_ignore` refuses it.
#[test]
fn a_glob_beneath_a_narrowed_root_in_an_ignored_folder_matches_nothing() {
    let (_dir, root) = workspace(&[(".gitignore", "build/\n"), ("build/out.txt", "x\n"), ("src/a.txt", "a\n")]);
    let reader = reader_with_cap(&root, 50 * 1024);
    let (ignored, _) = reader.narrowed(&[root.join("build")], false);
    let many = run(&ignored.unwrap(), ReadManyRequest::new(["*.txt"]));
    assert_eq!(skipped_of(&many), [("*.txt".to_string(), "the glob matched no file".to_string())]);
    let (kept, _) = reader.narrowed(&[root.join("src")], false);
    assert_eq!(paths_of(&run(&kept.unwrap(), ReadManyRequest::new(["*.txt"]))), ["a.txt"]);
}

#[test]
#[cfg(unix)]
fn duplicates_are_read_once_whatever_their_spelling() {
    let (_dir, root) = workspace(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    std::os::unix::fs::symlink("a.txt", root.join("link.txt")).unwrap();
    let reader = reader_with_cap(&root, 50 * 1024);
    let absolute = root.join("a.txt").display().to_string();
    let many = run(&reader, ReadManyRequest::new(["a.txt", "./a.txt", absolute.as_str(), "*.txt", "link.txt"]));
    assert_eq!(paths_of(&many), ["a.txt", "b.txt"]);
    assert!(many.skipped.is_empty(), "{:?}", many.skipped);
}

#[test]
#[cfg(unix)]
fn a_glob_climbing_out_of_a_linked_folder_goes_where_the_path_does() {
    // `lnk` leads to `a/b`, so `lnk/..` is `a`, for a glob's base as for a path (and as for a shell).
    let (_dir, root) = workspace(&[("a/b/in_b.txt", "b\n"), ("a/x.txt", "in a\n"), ("x.txt", "in the root\n")]);
    std::os::unix::fs::symlink("a/b", root.join("lnk")).unwrap();
    let reader = reader_with_cap(&root, 50 * 1024);
    let by_path = run(&reader, ReadManyRequest::new(["lnk/../x.txt"]));
    assert!(by_path.output.contains("1: in a\n"), "{}", by_path.output);
    let by_glob = run(&reader, ReadManyRequest::new(["lnk/../*.txt"]));
    assert_eq!(paths_of(&by_glob), ["a/x.txt"]);
    assert!(by_glob.output.contains("1: in a\n"), "{}", by_glob.output);
}

#[test]
#[cfg(unix)]
fn denied_glob_matches_are_counted_never_named() {
    let (dir, root) =
        workspace(&[("app/main.rs", "fn main() {}\n"), ("app/.env", "TOKEN=x\n"), ("app/db_password.txt", "x")]);
    std::fs::write(dir.path().join("outside.txt"), "outside\n").unwrap();
    let reader = reader_with_cap(&root.join("app"), 50 * 1024);
    std::os::unix::fs::symlink(root.join("outside.txt"), root.join("app/out.txt")).unwrap();
    let many = run(&reader, ReadManyRequest::new(["*", ".*"]));
    assert_eq!(paths_of(&many), ["main.rs"]);
    assert_eq!(many.meta.withheld, 3, "{:?}", many.skipped);
    for secret in ["password", ".env", "out.txt", "TOKEN", "outside.txt"] {
        assert!(!many.output.contains(secret), "{secret} named in {}", many.output);
        assert!(!serde_json::to_string(&many).unwrap().contains(secret), "{secret} in the JSON");
    }
    assert!(many.output.contains("*: 2 match(es) withheld unnamed"), "{}", many.output);
    // A literal path is the caller's own words: its denial is shown, as `read` would.
    let literal = run(&reader, ReadManyRequest::new([".env"]));
    assert_eq!(literal.files[0].result.error().map(|e| e.code), Some(ErrorCode::Denied));
}

#[test]
fn max_files_bounds_the_files_read_and_counts_the_rest() {
    let files: Vec<(String, String)> = (0..8).map(|i| (format!("f{i}.txt"), format!("{i}\n"))).collect();
    let (_dir, root) = workspace_of(&files);
    let reader = reader_with_cap(&root, 50 * 1024);
    let request = ReadManyRequest { max_files: Some(3), ..ReadManyRequest::new(["f7.txt", "*.txt", "f0.txt"]) };
    let many = run(&reader, request);
    assert_eq!(paths_of(&many), ["f7.txt", "f0.txt", "f1.txt"]);
    assert_eq!(many.meta.files_skipped, 5);
    let skipped = skipped_of(&many);
    assert_eq!(skipped.len(), 1, "f0.txt was read already: {skipped:?}");
    assert_eq!(skipped[0].0, "*.txt");
    assert!(skipped[0].1.starts_with("5 more match(es) not read: max_files=3 reached"), "{skipped:?}");
    let clamped = run(&reader, ReadManyRequest { max_files: Some(999), ..ReadManyRequest::new(["*.txt"]) });
    assert_eq!((clamped.meta.max_files, clamped.meta.max_files_clamped_from), (MAX_FILES, Some(999)));
    assert!(clamped.output.contains(" · max_files clamped to 200 · "), "{}", clamped.output);
}

#[test]
fn a_glob_matching_nothing_and_an_invalid_glob_are_skipped_entries() {
    let (_dir, root) = workspace(&[("a.txt", "a\n")]);
    let reader = reader_with_cap(&root, 50 * 1024);
    let many = run(&reader, ReadManyRequest::new(["*.py", "src/[", "../*.txt", "a.txt"]));
    assert_eq!(paths_of(&many), ["a.txt"]);
    let skipped = skipped_of(&many);
    assert_eq!(skipped[0], ("*.py".to_string(), "the glob matched no file".to_string()));
    assert!(skipped[1].1.starts_with("invalid glob: "), "{skipped:?}");
    assert!(skipped[2].1.contains("outside the allowed roots"), "{skipped:?}");
    assert_eq!(many.skipped[2].error_code, Some(ErrorCode::OutsideRoot));
    assert!(many.output.contains("--- skipped ---\n*.py: the glob matched no file\n"), "{}", many.output);
}

#[test]
fn small_files_come_whole_and_a_big_one_gets_the_rest_with_its_next_call() {
    let big = lines(2000);
    let (_dir, root) = workspace(&[("big.txt", big.as_str()), ("a.txt", "alpha\n"), ("b.txt", &lines(20))]);
    let reader = reader_with_cap(&root, 8 * 1024);
    let many = run(&reader, ReadManyRequest::new(["big.txt", "a.txt", "b.txt"]));
    assert_eq!(paths_of(&many), ["big.txt", "a.txt", "b.txt"], "request order, whatever the reading order");
    let meta = |i: usize| match &many.files[i].result {
        ReadResult::Text(text) => text.meta.clone(),
        other => panic!("not text: {other:?}"),
    };
    assert_eq!((meta(1).end_line, meta(1).more_after), (Some(1), false));
    assert_eq!((meta(2).end_line, meta(2).more_after), (Some(20), false));
    let big_meta = meta(0);
    assert!(big_meta.byte_cap_hit && big_meta.more_after, "{big_meta:?}");
    let next = big_meta.next_offset.unwrap();
    assert!(many.output.contains(&format!("next: offset={next})")), "{}", many.output);
    // The big file got what the small ones left: more than an equal third of the cap.
    assert!(next > 60, "{next}");
    assert!(many.output.len() > 6 * 1024, "the cap is used: {}", many.output.len());
    let summary = many.output.rsplit('\n').next().unwrap();
    assert!(summary.starts_with("(read_many: 3 shown · 0 skipped · ") && summary.ends_with(" of the 8.0 KiB cap)"));
}

#[test]
fn too_many_files_for_a_useful_share_read_the_first_and_list_the_rest() {
    let files: Vec<(String, String)> = (0..12).map(|i| (format!("f{i:02}.txt"), lines(100))).collect();
    let (_dir, root) = workspace_of(&files);
    let reader = reader_with_cap(&root, 8 * 1024);
    let many = run(&reader, ReadManyRequest { limit: Some(40), ..ReadManyRequest::new(["*.txt"]) });
    let shown = many.files.len();
    assert!((5..12).contains(&shown), "{shown} shown");
    assert_eq!(paths_of(&many)[0], "f00.txt", "the first ones are read");
    let rest = &many.skipped[0];
    assert_eq!(rest.path.as_deref(), Some(format!("f{shown:02}.txt").as_str()));
    assert!(rest.reason.starts_with("not read: no room left in the output cap"), "{rest:?}");
    assert_eq!(rest.next.as_deref(), Some(format!(r#"read {{"path":"f{shown:02}.txt","limit":40}}"#).as_str()));
    assert_eq!(many.meta.files_skipped as usize, 12 - shown);
}

#[test]
fn many_small_files_are_all_read_when_their_whole_output_fits() {
    // Each of these answers in about 60 bytes; counting each at the 1 KiB a large file needs read 38 of
    // them and skipped the rest, in a cap used to a tenth.
    let files: Vec<(String, String)> = (0..120).map(|i| (format!("f{i:03}.conf"), format!("key{i} = on\n"))).collect();
    let (_dir, root) = workspace_of(&files);
    let reader = reader_with_cap(&root, 50 * 1024);
    let many = run(&reader, ReadManyRequest { max_files: Some(200), ..ReadManyRequest::new(["*.conf"]) });
    assert_eq!((many.files.len(), many.skipped.len()), (120, 0), "{:?}", skipped_of(&many).first());
    assert!(many.output.contains("==> f119.conf <==\n1: key119 = on\n"), "{}", many.output);
}

#[test]
fn a_small_file_admitted_on_its_bound_is_read_whole_even_in_a_tight_share() {
    // 120 empty lines answer in about 650 bytes: more than the 512 bytes of lines a read capped at 1 KiB keeps
    // beside its footer reserve, less than the share it is offered here.
    let (_dir, root) = workspace(&[("blank.txt", &"\n".repeat(120)), ("big.txt", &lines(400))]);
    let reader = reader_with_cap(&root, 2400);
    let many = run(&reader, ReadManyRequest::new(["blank.txt", "big.txt"]));
    assert_eq!(paths_of(&many), ["blank.txt", "big.txt"]);
    let blank = many.output.split("==> big.txt <==").next().unwrap();
    assert!(blank.contains("120: \n(lines 1-120 of 120 · 120 B · end of file)"), "{blank}");
}

#[test]
fn images_are_listed_not_decoded_and_binaries_show_their_error() {
    let (_dir, root) = workspace(&[("notes.txt", "n\n")]);
    // A PNG signature and header only: listing it must not need the pixels.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x10\0\0\0\x10\x08\x02\0\0\0".to_vec();
    png.extend([0u8; 40]);
    write(&root, "logo.png", &png);
    write(&root, "app.bin", b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0>\0");
    let reader = reader_with_cap(&root, 50 * 1024);
    let many = run(&reader, ReadManyRequest::new(["logo.png", "app.bin", "notes.txt", "missing.txt"]));
    // Without the `images` feature an image is a BINARY file like any other.
    let images = cfg!(feature = "images");
    let shown: &[&str] = if images {
        &["app.bin", "notes.txt", "missing.txt"]
    } else {
        &["logo.png", "app.bin", "notes.txt", "missing.txt"]
    };
    assert_eq!(paths_of(&many), shown);
    assert_eq!(many.meta.files_failed, shown.len() - 1);
    assert!(many.output.contains("==> app.bin <==\nBINARY: app.bin: binary data (20 B)"), "{}", many.output);
    if images {
        let (what, reason) = &skipped_of(&many)[0];
        assert_eq!(what, "logo.png");
        let expected = format!("PNG image ({} B), not inlined: read it alone to get it as an attachment", png.len());
        assert_eq!(reason, &expected);
        assert_eq!(many.skipped[0].next.as_deref(), Some(r#"read {"path":"logo.png"}"#));
    }
}

#[test]
fn a_cancelled_call_reads_nothing() {
    let (_dir, root) = workspace(&[("a.txt", "a\n")]);
    let reader = reader_with_cap(&root, 50 * 1024);
    let cancel = Cancel::new();
    cancel.cancel();
    let result = reader.read_many(&ReadManyRequest::new(["a.txt", "*.txt"]), &ReadOptions::cancellable(&cancel));
    assert_eq!(result.error().map(|e| e.code), Some(ErrorCode::Cancelled));
}

#[test]
fn a_call_that_waited_its_whole_budget_reads_nothing_and_one_that_waited_less_reads_everything() {
    use std::time::{Duration, Instant};
    let (_dir, root) = workspace(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let limits = Limits { timeout_ms: 2_000, ..Limits::default() };
    let reader = Reader::new(Config { limits, ..Config::with_roots([&root]) }).unwrap();
    let request = ReadManyRequest::new(["*.txt"]);
    let long_ago = Cancel::arrived_at(Instant::now() - Duration::from_secs(3));
    let error =
        reader.read_many(&request, &ReadOptions::cancellable(&long_ago)).error().cloned().expect("the call was read");
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(error.message.contains("waited"), "{}", error.message);
    // Waiting most of the budget leaves each file the rest of it, not less: both are read.
    let lately = Cancel::arrived_at(Instant::now() - Duration::from_millis(1_500));
    let ReadManyResult::Many(many) = reader.read_many(&request, &ReadOptions::cancellable(&lately)) else {
        panic!("the call failed")
    };
    assert_eq!(paths_of(&many), ["a.txt", "b.txt"], "{:?}", skipped_of(&many));
}

#[test]
fn the_cap_holds_for_every_mix_of_sizes_and_caps() {
    let (_dir, root) = workspace(&[]);
    for i in 0..30 {
        write(&root, &format!("d{}/f{i}.txt", i % 4), lines(i * i * 3).as_bytes());
    }
    write(&root, "long.txt", "x".repeat(300_000).as_bytes());
    for cap in [1024, 2000, 4096, 10_000, 51_200] {
        let reader = reader_with_cap(&root, cap);
        for paths in [vec!["**/*.txt"], vec!["long.txt", "d1", "d2/*", "nope/*.rs", "missing"]] {
            let many = run(&reader, ReadManyRequest::new(paths.clone()));
            assert!(many.output.ends_with(" cap)"), "{paths:?} at {cap}: {}", many.output);
        }
    }
}

#[test]
fn a_glob_match_gone_before_its_read_is_withheld_unnamed() {
    let (_dir, root) = workspace(&[("a.txt", "a\n"), ("vanishing.txt", "b\n")]);
    let reader = reader_with_cap(&root, 50 * 1024);
    let request = ReadManyRequest::new(["*.txt"]);
    let next_call = |path: &str| gather::read_call(&request, path);
    let expander = Expander { reader: &reader, max_files: 50, next_call: &next_call };
    let cancel = Cancel::new();
    let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let expansion =
        expander.expand(&request.paths, &mut glob::WalkBudget { deadline: far, cancel: &cancel, visited: 0 });
    assert_eq!(expansion.candidates.len(), 2);
    // As if the walk had listed a name from elsewhere (a folder swapped for a link mid-walk): the name is not there.
    std::fs::remove_file(root.join("vanishing.txt")).unwrap();
    let call = Call {
        reader: &reader,
        request: &request,
        cancel: &cancel,
        deadline: far,
        cap: reader.limits().max_output_bytes,
        observe: false,
    };
    let gathered = call.gather(expansion).unwrap();
    assert_eq!(gathered.withheld_late, 1);
    let many = finish(gathered, ManyMeta { cap: 50 * 1024, ..ManyMeta::default() });
    assert_eq!(paths_of(&many), ["a.txt"]);
    assert!(!many.output.contains("vanishing") && many.output.contains(" · 1 withheld · "), "{}", many.output);
}
