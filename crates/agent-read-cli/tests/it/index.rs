//! The line index seen from outside: the command line's on-disk cache (`--index-cache`) across separate runs, and a
//! library reader whose kept index follows a growing log. The window-level proofs (a read through the index does
//! not scan before its checkpoint; an append extends the index) sit beside the code in `src/window/`.

use crate::common::{Bin, Ws};
use agent_read::{Config, ReadOptions, ReadRequest, Reader};
use std::io::Write;
use std::path::{Path, PathBuf};

/// 2 MiB or so of numbered lines (big enough to be indexed).
fn log_lines(first: u64, n: u64) -> String {
    (first..first + n).map(|i| format!("{i:>8} event {}\n", "·".repeat((i % 13) as usize))).collect()
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

fn read_deep(ws: &Ws, cache: &Path, args: &[&str]) -> String {
    let out = ws.cmd().arg("--index-cache").arg(cache).arg("big.log").args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn the_cache_folder_serves_later_runs_and_replaces_a_damaged_file() {
    let ws = Ws::new();
    ws.file("big.log", log_lines(1, 80_000));
    let cache = ws.outer.join("index-cache");
    let first = read_deep(&ws, &cache, &["--offset", "70000", "--limit", "2"]);
    assert!(first.starts_with("70000:    70000 event"), "{first}");
    assert!(first.contains("(lines 70000-70001 of 80000 "), "{first}");
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1, "one index file: {files:?}");
    let written = std::fs::read(&files[0]).unwrap();

    assert_eq!(read_deep(&ws, &cache, &["--offset", "70000", "--limit", "2"]), first);
    let tail = read_deep(&ws, &cache, &["--offset", "-1"]);
    assert!(tail.starts_with("80000:    80000 event"), "{tail}");

    std::fs::write(&files[0], b"{\"format\": 1, \"checksum\": 0, \"index\": garbage").unwrap();
    assert_eq!(read_deep(&ws, &cache, &["--offset", "70000", "--limit", "2"]), first);
    assert_eq!(std::fs::read(&files[0]).unwrap(), written, "the damaged file was replaced by a good one");
}

#[test]
fn a_log_that_grew_is_read_to_its_new_end_across_runs() {
    let ws = Ws::new();
    ws.file("big.log", log_lines(1, 80_000));
    let cache = ws.outer.join("index-cache");
    read_deep(&ws, &cache, &["--offset", "-1"]);
    let mut log = std::fs::OpenOptions::new().append(true).open(ws.root.join("big.log")).unwrap();
    log.write_all(log_lines(80_001, 5).as_bytes()).unwrap();
    let tail = read_deep(&ws, &cache, &["--offset", "-2"]);
    assert!(tail.starts_with("80004:    80004 event"), "{tail}");
    assert!(tail.contains("(lines 80004-80005 of 80005 "), "{tail}");
}

#[test]
fn small_files_leave_no_index_behind() {
    let ws = Ws::new();
    ws.file("small.txt", log_lines(1, 100));
    let cache = ws.outer.join("index-cache");
    ws.cmd().arg("--index-cache").arg(&cache).arg("small.txt").assert().success();
    assert!(cache_files(&cache).is_empty());
}

#[test]
fn a_cache_folder_that_cannot_be_made_is_a_usage_error_naming_it() {
    let ws = Ws::new();
    ws.file("big.log", "x\n");
    let blocker = ws.outside_file("not-a-folder", "x");
    let out = ws.cmd().arg("--index-cache").arg(&blocker).arg("big.log").assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("index cache") && stderr.contains("not-a-folder"), "{stderr}");
}

#[test]
fn a_reader_follows_a_growing_log_and_agrees_across_threads() {
    let ws = Ws::new();
    ws.file("big.log", log_lines(1, 80_000));
    let reader = Reader::new(Config::with_roots([&ws.root])).unwrap();
    let at = |offset: i64, limit: u64| {
        let request = ReadRequest { offset: Some(offset), limit: Some(limit as i64), ..ReadRequest::new("big.log") };
        reader.read(&request, &ReadOptions::default()).output().into_owned()
    };
    let deep = at(60_000, 3);
    assert!(deep.starts_with("60000:    60000 event"), "{deep}");
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (at, deep) = (&at, &deep);
            scope.spawn(move || {
                for k in 0..20u64 {
                    let line = 1 + (t * 20 + k) * 997;
                    let out = at(line as i64, 1);
                    assert!(out.starts_with(&format!("{line}: {line:>8} event")), "{out}");
                    assert_eq!(&at(60_000, 3), deep);
                }
            });
        }
    });
    let mut log = std::fs::OpenOptions::new().append(true).open(ws.root.join("big.log")).unwrap();
    log.write_all(log_lines(80_001, 3).as_bytes()).unwrap();
    let tail = at(-1, 1);
    assert!(tail.starts_with("80003:    80003 event") && tail.contains("of 80003 "), "{tail}");
    assert_eq!(at(60_000, 3), deep.replace("of 80000 ", "of 80003 "));
}

#[test]
fn the_index_cache_is_read_from_a_config_file_relative_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_toml("index_cache = \"cache\"", dir.path()).unwrap();
    assert_eq!(config.index_cache, Some(dir.path().join("cache")));
}
