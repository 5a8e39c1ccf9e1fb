//! The line index seen from outside: the command line's on-disk cache (`--index-cache`) across separate runs, and a
//! library reader whose kept index follows a growing log. The window-level proofs (a read through the index does
//! not scan before its checkpoint; an append extends the index) sit beside the code in `src/window/`.

use crate::common::{Bin, Ws};
use agent_read::{Config, ReadOptions, ReadRequest, Reader};
use std::io::{Seek, Write};
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

/// `big.log` in `ws`: `lines` numbered lines (enough to fill the 64 KiB that tell text from binary), then a hole
/// (NUL bytes, a line of its own) up to `size` bytes, then `last` (a line break first, so that the hole ends there).
#[cfg(unix)]
fn sparse_log(ws: &Ws, lines: u64, size: u64, last: &str) -> PathBuf {
    let path = ws.file("big.log", log_lines(1, lines)).root.join("big.log");
    let tail = format!("\n{last}");
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(size - tail.len() as u64).unwrap();
    file.seek(std::io::SeekFrom::End(0)).unwrap();
    file.write_all(tail.as_bytes()).unwrap();
    path
}

fn json_read(ws: &Ws, args: &[&str], request: serde_json::Value) -> serde_json::Value {
    let out = ws.cmd().args(args).write_stdin(request.to_string()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    crate::common::parse_one_json(&out.stdout)
}

/// A window far from the end of a big file does not count the rest: the footer gives a lower bound, how far the
/// count went and the call that counts every line; that call (a tail) gives the total, and leaves it for later runs.
#[cfg(unix)]
#[test]
fn the_first_window_of_a_big_file_gives_a_lower_bound_and_the_call_that_counts() {
    let ws = Ws::new();
    sparse_log(&ws, 5000, 96 << 20, "the last line\n");
    let cache = ws.outer.join("index-cache");
    let cached = ["--index-cache", cache.to_str().unwrap()];
    let v = json_read(&ws, &cached, serde_json::json!({"path": "big.log", "limit": 2}));
    let out = crate::common::output(&v);
    let footer = out.lines().last().unwrap();
    assert!(out.starts_with("1:        1 event ·\n2:        2 event ··\n(lines 1-2 of at least "), "{out}");
    assert!(
        footer.ends_with(
            " · 96.0 MiB · lines counted to <0.1% of the file only (offset=-100 reads the end and counts them all) · \
             next: offset=3 limit=2)"
        ),
        "{footer}"
    );
    let meta = &v["meta"];
    assert!(meta.get("total_lines").is_none(), "{meta}");
    let at_least = meta["total_lines_at_least"].as_u64().unwrap();
    assert!((3..=5001).contains(&at_least), "{meta}");
    assert!(footer.contains(&format!("of at least {at_least} ")), "{footer}");
    assert_eq!((meta["more_after"].as_bool(), meta["next_offset"].as_u64()), (Some(true), Some(3)));

    let tail = json_read(&ws, &cached, serde_json::json!({"path": "big.log", "offset": -1}));
    let out = crate::common::output(&tail);
    assert!(out.starts_with("5002: the last line\n(lines 5002-5002 of 5002 · 96.0 MiB · "), "{out}");
    assert_eq!(tail["meta"]["total_lines"], 5002);
    // The count is kept: a later run's first window knows the total.
    let again = json_read(&ws, &cached, serde_json::json!({"path": "big.log", "limit": 2}));
    assert!(crate::common::output(&again).contains("(lines 1-2 of 5002 · 96.0 MiB · next: offset=3 limit=2)"));
    assert_eq!(again["meta"]["total_lines"], 5002);
}

/// A tail needs every line before it counted to number its lines; when that takes longer than the time budget, the
/// last lines come by byte offset, saying so and how far the count went, instead of a bare TIMEOUT.
#[cfg(unix)]
#[test]
fn a_tail_whose_count_runs_out_of_time_comes_by_byte_offset() {
    let ws = Ws::new();
    let path = sparse_log(&ws, 5000, 64 << 30, "second to last\nthe last line\n");
    let size = std::fs::metadata(&path).unwrap().len();
    let start = size - "second to last\nthe last line\n".len() as u64;
    let started = std::time::Instant::now();
    let v = json_read(&ws, &["--timeout-ms", "300"], serde_json::json!({"path": "big.log", "offset": -2}));
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(v["ok"], true, "{v}");
    let out = crate::common::output(&v);
    let at_least = v["meta"]["total_lines_at_least"].as_u64().expect("what the count reached");
    assert!(at_least > 5000, "{v}");
    assert_eq!(
        out,
        format!(
            "@{start}: second to last\n@{}: the last line\n(bytes {start}-{size} of {size} · 0% of the file · the \
             last 2 line(s) by byte offset: counting the lines before them took longer than the 0.3 s time budget \
             (at least {at_least} counted) · end of file)",
            start + 15
        )
    );
    assert_eq!(v["meta"]["actual_range"], serde_json::json!([start, size]));
}
