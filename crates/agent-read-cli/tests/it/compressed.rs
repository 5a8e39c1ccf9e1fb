//! Compressed text and tables through the binary, with fixtures made by the producers people use: the `gzip`,
//! `zstd`, `xz`, `bzip2` and `pbzip2` command-line tools, and Python's csv module.

use crate::common::mcp::{call, serve, text_of};
use assert_cmd::Command;
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The four tools, each with the flags that compress stdin to stdout, and the extension they write.
pub(crate) const CODECS: [(&str, &[&str], &str); 4] =
    [("gzip", &["-c"], "gz"), ("zstd", &["-c", "-q"], "zst"), ("xz", &["-c"], "xz"), ("bzip2", &["-c"], "bz2")];

/// `data` compressed by the real `tool` (a missing tool fails the test: install gzip, zstd, xz-utils, bzip2).
pub(crate) fn compressed_by(tool: &str, args: &[&str], data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new(tool)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`{tool}` must be installed for these tests: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{tool} failed");
    out.stdout
}

pub(crate) fn log_lines(n: u32) -> Vec<u8> {
    (1..=n).map(|i| format!("2026-11-25 request {i} served\n")).collect::<String>().into_bytes()
}

fn read_json(root: &Path, request: Value, flags: &[&str]) -> Value {
    let out = Command::cargo_bin("agent-read")
        .unwrap()
        .arg("--root")
        .arg(root)
        .args(flags)
        .write_stdin(request.to_string())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
}

fn output(result: &Value) -> &str {
    result["output"].as_str().unwrap()
}

#[test]
fn every_codec_windows_its_text_at_the_start_middle_and_end_with_exact_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(10_000);
    for (tool, args, ext) in CODECS {
        let name = format!("app.log.{ext}");
        let packed = compressed_by(tool, args, &text);
        std::fs::write(dir.path().join(&name), &packed).unwrap();
        let start = read_json(dir.path(), json!({"path": name, "limit": 2}), &[]);
        assert_eq!(
            output(&start),
            format!(
                "1: 2026-11-25 request 1 served\n2: 2026-11-25 request 2 served\n(lines 1-2 of 10000 · {} · \
                 {tool}-compressed, {} of text · next: offset=3 limit=2)",
                human(packed.len() as u64),
                human(text.len() as u64)
            ),
            "{tool}"
        );
        let meta = &start["meta"];
        assert_eq!(meta["compression"], tool);
        assert_eq!(meta["size_bytes"], packed.len() as u64, "{tool}: the file's own size");
        assert_eq!(meta["decompressed_bytes"], text.len() as u64, "{tool}");
        let middle = read_json(dir.path(), json!({"path": name, "offset": 5_000, "limit": 1}), &[]);
        assert!(output(&middle).starts_with("5000: 2026-11-25 request 5000 served\n"), "{tool}: {}", output(&middle));
        let tail = read_json(dir.path(), json!({"path": name, "offset": -2}), &[]);
        assert!(
            output(&tail).starts_with("9999: 2026-11-25 request 9999 served\n10000: 2026-11-25 request 10000 served\n"),
            "{tool}: {}",
            output(&tail)
        );
        assert!(output(&tail).ends_with("of text · end of file)"), "{tool}: {}", output(&tail));
    }
}

fn human(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[test]
fn compression_is_found_by_content_and_concatenated_members_are_one_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut joined = compressed_by("gzip", &["-c"], b"first member\n");
    joined.extend(compressed_by("gzip", &["-c"], b"second member\n"));
    std::fs::write(dir.path().join("rotated.log"), &joined).unwrap();
    let mut frames = compressed_by("zstd", &["-c", "-q"], b"frame one\n");
    frames.extend(compressed_by("zstd", &["-c", "-q"], b"frame two\n"));
    std::fs::write(dir.path().join("frames.bin"), &frames).unwrap();
    let gz = read_json(dir.path(), json!({"path": "rotated.log"}), &[]);
    assert!(output(&gz).starts_with("1: first member\n2: second member\n(lines 1-2 of 2"), "{}", output(&gz));
    let zst = read_json(dir.path(), json!({"path": "frames.bin"}), &[]);
    assert!(output(&zst).starts_with("1: frame one\n2: frame two\n(lines 1-2 of 2"), "{}", output(&zst));
}

#[test]
fn a_gzipped_legacy_encoding_is_detected_or_forced_like_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let latin1: Vec<u8> = b"caf\xe9 cr\xe8me br\xfbl\xe9e\nna\xefve fa\xe7ade\n".to_vec();
    std::fs::write(dir.path().join("menu.txt.gz"), compressed_by("gzip", &["-c"], &latin1)).unwrap();
    let detected = read_json(dir.path(), json!({"path": "menu.txt.gz"}), &[]);
    assert!(output(&detected).starts_with("1: café crème brûlée\n2: naïve façade\n"), "{}", output(&detected));
    assert_eq!(detected["meta"]["encoding"], "windows-1252");
    let forced = read_json(dir.path(), json!({"path": "menu.txt.gz", "encoding": "iso-8859-1", "limit": 1}), &[]);
    assert!(output(&forced).starts_with("1: café crème brûlée\n"), "{}", output(&forced));
    assert_eq!(forced["meta"]["encoding_source"], "forced");
    assert!(output(&forced).contains("next: encoding=windows-1252 offset=2 limit=1"), "{}", output(&forced));
}

#[test]
fn a_bomb_of_a_terabyte_of_newlines_stops_at_the_time_budget() {
    let dir = tempfile::tempdir().unwrap();
    // One zstd frame of 64 MiB of line feeds is a few KiB; 16,384 of them hold a terabyte of empty lines.
    let frame = compressed_by("zstd", &["-c", "-q", "-1"], &vec![b'\n'; 64 << 20]);
    let bomb: Vec<u8> = std::iter::repeat_n(frame.as_slice(), 16_384).flatten().copied().collect();
    assert!(bomb.len() < 64 << 20, "the bomb is small: {} bytes", bomb.len());
    std::fs::write(dir.path().join("bomb.log.zst"), &bomb).unwrap();
    let started = Instant::now();
    let result = read_json(dir.path(), json!({"path": "bomb.log.zst", "offset": -1}), &["--timeout-ms", "1000"]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "ran {:?} past a 1 s budget (the budget is what this test waits for)",
        started.elapsed()
    );
    assert_eq!(result["error_code"], "TIMEOUT", "{result}");
    assert!(result["hint"].as_str().unwrap().contains("decodes all of it to count its lines"), "{result}");
}

#[test]
fn damaged_streams_end_with_an_error_saying_so_after_what_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(200_000);
    for (tool, args, ext) in CODECS {
        let packed = compressed_by(tool, args, &text);
        let cut = format!("cut.log.{ext}");
        std::fs::write(dir.path().join(&cut), &packed[..packed.len() * 3 / 4]).unwrap();
        let result = read_json(dir.path(), json!({"path": cut, "limit": 1}), &[]);
        assert_eq!(result["error_code"], "IO_ERROR", "{tool}: {result}");
        let message = result["error"].as_str().unwrap();
        assert!(message.contains("the compressed stream is damaged"), "{tool}: {message}");
        assert!(result["hint"].as_str().unwrap().contains("corrupt or cut short"), "{tool}: {result}");
    }
    // A flipped byte in gzip's trailer: every line decodes, the checksum does not match.
    let mut packed = compressed_by("gzip", &["-c"], b"one\ntwo\n");
    let crc = packed.len() - 8;
    packed[crc] ^= 0xff;
    std::fs::write(dir.path().join("flipped.gz"), &packed).unwrap();
    let result = read_json(dir.path(), json!({"path": "flipped.gz"}), &[]);
    assert_eq!(result["error_code"], "IO_ERROR", "{result}");
    let shown = output(&result);
    assert!(shown.starts_with("1: one\n2: two\nIO_ERROR: flipped.gz: the compressed stream is damaged"), "{shown}");
    // Not compressed at all past its magic bytes.
    std::fs::write(dir.path().join("fake.gz"), b"\x1f\x8b\x08 but then plain words\n").unwrap();
    let result = read_json(dir.path(), json!({"path": "fake.gz"}), &[]);
    assert_eq!(result["error_code"], "IO_ERROR", "{result}");
}

#[test]
fn a_stream_asking_for_more_memory_than_a_read_may_take_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(100);
    // Headers asking for a 1.5 GiB dictionary and a 2 GiB window: valid files, refused before allocating.
    let cases = [
        ("wide.log.xz", compressed_by("xz", &["-c", "--lzma2=dict=1536MiB"], &text), "more than 160 MiB of memory"),
        ("wide.log.zst", compressed_by("zstd", &["-c", "-q", "--long=31"], &text), "window of more than 128 MiB"),
    ];
    for (name, packed, says) in cases {
        std::fs::write(dir.path().join(name), packed).unwrap();
        let result = read_json(dir.path(), json!({"path": name}), &[]);
        assert_eq!(result["error_code"], "TOO_LARGE", "{name}: {result}");
        assert!(result["error"].as_str().unwrap().contains(says), "{name}: {result}");
        assert!(result["hint"].as_str().unwrap().contains("memory a read may take"), "{name}: {result}");
    }
}

/// A window or dictionary the operating system will not give (the process under a 96 MiB address-space limit) is
/// `TOO_LARGE` saying there was no memory for it, not damage.
#[cfg(unix)]
#[test]
fn a_window_the_system_will_not_allocate_is_too_large_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(100);
    let cases = [
        ("window.log.zst", compressed_by("zstd", &["-c", "-q", "--long=27"], &text), "the zstd stream"),
        ("dictionary.log.xz", compressed_by("xz", &["-c", "--lzma2=preset=1,dict=96MiB"], &text), "the xz stream"),
    ];
    for (name, packed, stream) in cases {
        std::fs::write(dir.path().join(name), packed).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
        cmd.arg("--root").arg(dir.path());
        // An address space of 96 MiB cannot hold a 96 MiB dictionary (or a 128 MiB window) beside the program,
        // however small the program is.
        let out = crate::common::with_memory_limit(cmd, 96 << 20)
            .write_stdin(json!({"path": name}).to_string())
            .output()
            .unwrap();
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["error_code"], "TOO_LARGE", "{name}: {result}");
        assert!(result["error"].as_str().unwrap().ends_with(&format!("no memory left to decode {stream}")), "{result}");
    }
}

/// Small files whose decoding takes much memory (a zstd frame with a 128 MiB window, an xz block with a 64 MiB
/// dictionary, each under 100 KiB on disk), read twelve at once by one MCP client: the decoders share the budget
/// every read in the process shares, so the server's peak stays near that budget, and every read still ends with
/// the file's last line (or, past the time it may wait, as busy). Each holding its own would take the server past a
/// gigabyte.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn twelve_concurrent_reads_of_small_files_with_huge_windows_share_one_memory_budget() {
    const PEAK_LIMIT: u64 = 480 << 20;
    let dir = tempfile::tempdir().unwrap();
    let text = |mib: usize| {
        let line = "a log line repeated until the window is full\n";
        let mut text = line.repeat((mib << 20) / line.len());
        text.push_str("the last line\n");
        text.into_bytes()
    };
    let files = [
        ("window.log.zst", compressed_by("zstd", &["-c", "-q", "-1", "--long=27"], &text(160))),
        ("dictionary.log.xz", compressed_by("xz", &["-c", "--lzma2=preset=1,dict=64MiB"], &text(80))),
    ];
    for (name, packed) in &files {
        assert!(packed.len() < 100 << 10, "{name}: {} bytes", packed.len());
        std::fs::write(dir.path().join(name), packed).unwrap();
    }
    let (client, pid) = serve(dir.path()).await;
    let calls = (0..12).map(|i| json!({"path": files[i % 2].0, "offset": -1, "reread": true})).collect();
    let mut read = 0;
    for text in crate::common::mcp::reads_at_once(&client, calls).await {
        if text.contains("TOO_LARGE") {
            assert!(text.contains("not decoded now: the server is busy with other reads"), "{text}");
            assert!(text.contains("read it again once the other reads have finished"), "{text}");
        } else {
            assert!(text.contains(": the last line\n"), "{text}");
            read += 1;
        }
    }
    assert!(read > 0, "some reads went through");
    let peak = crate::common::mcp::proc_status_bytes(pid, "VmHWM:");
    assert!(peak < PEAK_LIMIT, "the server's peak: {} MiB", peak >> 20);
    client.cancel().await.unwrap();
}

#[test]
fn byte_ranges_address_the_raw_file_and_are_refused_as_binary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log.xz"), compressed_by("xz", &["-c"], b"alpha\n")).unwrap();
    let result = read_json(dir.path(), json!({"path": "a.log.xz", "start_byte": 0, "end_byte": 10}), &[]);
    assert_eq!(result["error_code"], "BINARY", "{result}");
    assert!(result["error"].as_str().unwrap().contains("byte ranges address the file's raw compressed bytes"));
}

#[test]
fn compressed_copies_of_denied_names_are_denied() {
    let dir = tempfile::tempdir().unwrap();
    let secret = compressed_by("gzip", &["-c"], b"API_KEY=do-not-show\n");
    for name in [".env.gz", ".env.production.zst", "server.key.gz", "certs/tls.pem.xz", "vault.kdbx.bz2"] {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &secret).unwrap();
        let result = read_json(dir.path(), json!({"path": name}), &[]);
        assert_eq!(result["error_code"], "DENIED", "{name}: {result}");
        assert!(!result.to_string().contains("do-not-show"), "{name}");
    }
}

#[test]
fn a_csv_window_below_the_header_repeats_it_marked_and_meta_names_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import csv, sys
with open(sys.argv[1] + "/people.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "name", "note"])
    w.writerow([1, "Ada", "first line\nsecond line"])
    for i in range(2, 500):
        w.writerow([i, f"name {i}", "plain"])
with open(sys.argv[1] + "/cities.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t", lineterminator="\n")
    w.writerow(["city", "country"])
    for i in range(100):
        w.writerow([f"city {i}", "X"])
with open(sys.argv[1] + "/numbers.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    for i in range(100):
        w.writerow([i, i * 2])
"#;
    let status = std::process::Command::new("python3").arg("-c").arg(script).arg(dir.path()).status().unwrap();
    assert!(status.success());
    let deep = read_json(dir.path(), json!({"path": "people.csv", "offset": 400, "limit": 2}), &[]);
    assert_eq!(
        output(&deep).lines().take(3).collect::<Vec<_>>(),
        ["⟨header row, line 1⟩ id,name,note", "400: 398,name 398,plain", "401: 399,name 399,plain"]
    );
    let table = &deep["meta"]["table"];
    assert_eq!(*table, json!({"delimiter": ",", "columns": 3, "header_lines": [1, 1], "header_shown": true}));
    // Line numbers stay physical: record 1's quoted line break makes it lines 2-3.
    let top = read_json(dir.path(), json!({"path": "people.csv", "limit": 4}), &[]);
    assert!(output(&top).starts_with("1: id,name,note\n2: 1,Ada,\"first line\n3: second line\"\n4: 2,"), "{top}");
    assert_eq!(top["meta"]["table"]["header_shown"], false);
    let tsv = read_json(dir.path(), json!({"path": "cities.tsv", "offset": -1}), &[]);
    assert!(output(&tsv).starts_with("⟨header row, line 1⟩ city\tcountry\n101: city 99\tX\n"), "{tsv}");
    assert_eq!(tsv["meta"]["table"]["delimiter"], "\t");
    // Compressed, the same table: judged by its name without `.gz`, its header from the decompressed text.
    let csv = std::fs::read(dir.path().join("people.csv")).unwrap();
    std::fs::write(dir.path().join("people.csv.gz"), compressed_by("gzip", &["-c"], &csv)).unwrap();
    let gz = read_json(dir.path(), json!({"path": "people.csv.gz", "offset": 400, "limit": 2}), &[]);
    assert_eq!(
        output(&gz).lines().take(2).collect::<Vec<_>>(),
        ["⟨header row, line 1⟩ id,name,note", "400: 398,name 398,plain"]
    );
    assert_eq!(gz["meta"]["table"], *table);
    // No plausible header (numbers only): still read, columns counted, nothing repeated.
    let numbers = read_json(dir.path(), json!({"path": "numbers.csv", "offset": 50, "limit": 1}), &[]);
    assert_eq!(output(&numbers).lines().next(), Some("50: 49,98"));
    assert_eq!(numbers["meta"]["table"], json!({"delimiter": ",", "columns": 2, "header_shown": false}));
}

#[test]
fn a_file_that_only_looks_like_a_header_cannot_forge_the_tools_marker() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..50).map(|i| format!("{i},x\n")).collect();
    std::fs::write(dir.path().join("forged.csv"), format!("⟨header row⟩ id,name\n{rows}")).unwrap();
    let result = read_json(dir.path(), json!({"path": "forged.csv", "offset": 10, "limit": 1}), &[]);
    let first = output(&result).lines().next().unwrap();
    assert!(first.starts_with("⟨header row, line 1⟩ "), "{first}");
    assert_eq!(first, "⟨header row, line 1⟩ ⟨U+27E8⟩header row⟩ id,name", "the file's own ⟨ is shown escaped");
}

#[tokio::test]
async fn an_mcp_read_of_a_gzipped_log_pages_its_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.log.gz"), compressed_by("gzip", &["-c"], &log_lines(300))).unwrap();
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(dir.path());
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let result = call(&client, json!({"path": "app.log.gz", "offset": 150, "limit": 1})).await;
    assert_eq!(result.is_error, Some(false));
    let text = text_of(&result);
    assert!(text.starts_with("150: 2026-11-25 request 150 served\n(lines 150-150 of 300"), "{text}");
    assert!(text.contains("gzip-compressed") && text.ends_with("next: offset=151 limit=1)"), "{text}");
    assert_eq!(result.structured_content.unwrap()["meta"]["compression"], "gzip");
    client.cancel().await.unwrap();
}

#[test]
fn find_searches_the_decompressed_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.log.bz2"), compressed_by("bzip2", &["-c"], &log_lines(500))).unwrap();
    let result = read_json(dir.path(), json!({"path": "app.log.bz2", "find": "request 4[0-9]7 ", "context": 0}), &[]);
    let shown = output(&result);
    assert!(shown.starts_with("407: 2026-11-25 request 407 served\n--\n417: "), "{shown}");
    assert!(shown.contains("10 of 10 match(es)") && shown.contains("bzip2-compressed"), "{shown}");
    assert_eq!(result["meta"]["compression"], "bzip2");
}

/// A deep window and a tail read twice by one MCP server (the second through the restart points the first learned)
/// are the lines a fresh process reads cold, for gzip, pigz, multi-frame zstd, bzip2, pbzip2, multi-block xz and
/// concatenated xz streams; a file rewritten under the same name is read afresh.
#[tokio::test]
async fn a_repeat_deep_read_over_mcp_returns_the_lines_of_a_cold_read() {
    let dir = tempfile::tempdir().unwrap();
    // About 12 MiB of text: restart points every few MiB.
    let text = log_lines(400_000);
    let files = [
        ("gzip.log.gz", compressed_by("gzip", &["-c"], &text)),
        ("pigz.log.gz", compressed_by("pigz", &["-c", "-p", "2"], &text)),
        ("frames.log.zst", compressed_by("pzstd", &["-c", "-q", "-p", "2"], &text)),
        ("bzip2.log.bz2", compressed_by("bzip2", &["-c", "-1"], &text)),
        ("pbzip2.log.bz2", compressed_by("pbzip2", &["-c", "-p2"], &text)),
        ("blocks.log.xz", compressed_by("xz", &["-c", "-T2", "--block-size=1MiB"], &text)),
        ("streams.log.xz", text.chunks(4 << 20).flat_map(|part| compressed_by("xz", &["-c"], part)).collect()),
    ];
    for (name, packed) in &files {
        std::fs::write(dir.path().join(name), packed).unwrap();
    }
    let (client, _) = serve(dir.path()).await;
    for (name, _) in &files {
        for window in [json!({"offset": 360_001, "limit": 3}), json!({"offset": -2})] {
            let mut request = json!({"path": name});
            request.as_object_mut().unwrap().extend(window.as_object().unwrap().clone());
            let cold = output(&read_json(dir.path(), request.clone(), &[])).to_string();
            let first = text_of(&call(&client, request.clone()).await);
            // `reread`: the server would otherwise answer that the lines are unchanged since the first read.
            request["reread"] = json!(true);
            let again = text_of(&call(&client, request.clone()).await);
            assert_eq!(first, cold, "{name} {window}: the server's first read");
            assert_eq!(again, cold, "{name} {window}: the repeat read");
        }
        let deep = text_of(&call(&client, json!({"path": name, "offset": 360_001, "limit": 1, "reread": true})).await);
        assert!(deep.starts_with("360001: 2026-11-25 request 360001 served\n"), "{name}: {deep}");
    }
    // Rewritten in place: other lines under the same name and inode.
    let other: Vec<u8> = log_lines(400_000).iter().map(|b| if *b == b'r' { b'R' } else { *b }).collect();
    for (name, tool) in [("gzip.log.gz", "gzip"), ("bzip2.log.bz2", "bzip2")] {
        std::fs::write(dir.path().join(name), compressed_by(tool, &["-c"], &other)).unwrap();
        let deep = text_of(&call(&client, json!({"path": name, "offset": 360_001, "limit": 1, "reread": true})).await);
        assert!(deep.starts_with("360001: 2026-11-25 Request 360001 seRved\n"), "{name}: {deep}");
    }
    client.cancel().await.unwrap();
}

/// Files of one zstd frame or one xz block have no restart point: the server parks the decoders where reads stop,
/// and holds the text around a window the first read went past (or a search's first match). Reads and searches in
/// any order, near and far, forward and back, answer what a cold read does; a file rewritten since is read afresh.
#[tokio::test]
async fn reads_over_mcp_that_go_on_with_parked_decoders_agree_with_cold_reads_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(400_000);
    let files = [
        ("frame.log.zst", compressed_by("zstd", &["-c", "-q"], &text)),
        ("block.log.xz", compressed_by("xz", &["-c", "-1"], &text)),
        ("gzip.log.gz", compressed_by("gzip", &["-c"], &text)),
    ];
    for (name, packed) in &files {
        std::fs::write(dir.path().join(name), packed).unwrap();
    }
    let (client, _) = serve(dir.path()).await;
    let window = |offset: i64, limit: u64| json!({"offset": offset, "limit": limit});
    let search = |offset: i64| json!({"find": "request 3[0-9]{3}77 ", "offset": offset, "limit": 2});
    let requests = [
        window(360_001, 3),
        window(360_004, 3),
        window(-2, 2),
        window(360_001, 3),
        window(100_001, 2),
        search(1),
        window(300_070, 10),
        window(360_010, 2),
        search(350_000),
        window(399_990, 20),
        window(-2, 2),
        window(1, 2),
        search(-30_000),
        window(360_001, 3),
    ];
    for (name, _) in &files {
        // A first search, then reads in any order: with the index it learned, and the text it held.
        for step in &requests {
            let mut request = step.clone();
            request["path"] = json!(name);
            request["reread"] = json!(true);
            let cold = output(&read_json(dir.path(), request.clone(), &[])).to_string();
            let served = text_of(&call(&client, request).await);
            assert_eq!(served, cold, "{name} {step}");
        }
    }
    let other: Vec<u8> = text.iter().map(|b| if *b == b'r' { b'R' } else { *b }).collect();
    std::fs::write(dir.path().join("frame.log.zst"), compressed_by("zstd", &["-c", "-q"], &other)).unwrap();
    let deep = json!({"path": "frame.log.zst", "offset": 360_001, "limit": 1, "reread": true});
    let deep = text_of(&call(&client, deep).await);
    assert!(deep.starts_with("360001: 2026-11-25 Request 360001 seRved\n"), "{deep}");
    client.cancel().await.unwrap();
}

/// An xz file whose index says its first block holds one byte more text than it does (the index's CRC-32 fixed up,
/// so only the size lies): the read ends with the damage reported, and whatever lines come before it are the
/// file's, at their own numbers.
#[test]
fn an_xz_index_that_lies_about_a_size_is_damage_and_shifts_no_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = log_lines(400_000);
    let mut packed = compressed_by("xz", &["-c", "-T2", "--block-size=1MiB"], &text);
    let len = packed.len();
    let backward = u32::from_le_bytes(packed[len - 8..len - 4].try_into().unwrap()) as usize;
    let index_at = len - 12 - (backward + 1) * 4;
    // Indicator, count, the first block's unpadded size: then its text size, whose first byte is bumped.
    let mut at = index_at + 1;
    for _ in 0..2 {
        while packed[at] & 0x80 != 0 {
            at += 1;
        }
        at += 1;
    }
    assert!(packed[at] & 0x7f < 0x7f);
    packed[at] += 1;
    // The CRC-32 xz uses is gzip's.
    let mut crc = flate2::Crc::new();
    crc.update(&packed[index_at..len - 16]);
    packed[len - 16..len - 12].copy_from_slice(&crc.sum().to_le_bytes());
    std::fs::write(dir.path().join("lying.log.xz"), &packed).unwrap();
    for window in [json!({"offset": 360_001, "limit": 2}), json!({"limit": 2}), json!({"offset": -2})] {
        let mut request = json!({"path": "lying.log.xz"});
        request.as_object_mut().unwrap().extend(window.as_object().unwrap().clone());
        let result = read_json(dir.path(), request, &[]);
        assert_eq!(result["error_code"], "IO_ERROR", "{window}: {result}");
        assert!(result["error"].as_str().unwrap().contains("damaged"), "{window}: {result}");
        for line in output(&result).lines().take_while(|line| !line.starts_with("IO_ERROR")) {
            let (number, content) = line.split_once(": ").unwrap();
            assert_eq!(content, format!("2026-11-25 request {number} served"), "{window}");
        }
    }
}
