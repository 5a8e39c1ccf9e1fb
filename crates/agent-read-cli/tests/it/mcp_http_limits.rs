//! The HTTP face's timeouts and caps, tested with raw connections as an attacker holds them: `agent-read mcp --http`
//! runs as a child process with short limits from a configuration's `[http]` table.

use crate::common::http::{HttpServer, INITIALIZE, raw_exchange, raw_post};
use crate::common::mcp::workspace;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A server rooted at a fresh workspace, with `http` as its `[http]` table and the flags `extra`; the workspace and
/// the configuration's folder live as long as it.
fn server_with(http: &str, extra: &[&str]) -> (tempfile::TempDir, tempfile::TempDir, HttpServer) {
    let (root, config_dir) = (workspace(), tempfile::tempdir().unwrap());
    let config = config_dir.path().join("config.toml");
    std::fs::write(&config, format!("[http]\n{http}\n")).unwrap();
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = HttpServer::start(root.path(), &args);
    (root, config_dir, server)
}

/// The head of a JSON `POST /mcp` of `body`, kept alive.
fn post_head(server: &HttpServer, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nContent-Length: {}\r\n\r\n",
        server.authority(),
        body.len()
    )
}

/// A connection to the server.
fn connect(server: &HttpServer) -> TcpStream {
    TcpStream::connect(server.authority()).unwrap()
}

/// One answer with a `Content-Length` read from `stream`, or `None` when none arrives within `wait`.
fn answer_within(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => bytes.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&bytes).into_owned();
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    let mut body = vec![0u8; length.unwrap_or(0)];
    stream.read_exact(&mut body).ok()?;
    Some(head + &String::from_utf8_lossy(&body))
}

/// How long the server took to close `stream` (to end it or reset it), or `None` if it is still open after `wait`.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> Option<Duration> {
    let started = Instant::now();
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buffer = [0u8; 1024];
    while started.elapsed() < wait {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

#[test]
fn slow_and_silent_request_heads_are_closed_within_the_head_timeout() {
    let (_root, _config, server) = server_with("head_timeout_ms = 600", &["--stateless"]);
    let head = post_head(&server, INITIALIZE);
    // Slowloris: half the connections send their head a byte at a time, the others nothing at all.
    let mut slow: Vec<TcpStream> = (0..40).map(|_| connect(&server)).collect();
    let started = Instant::now();
    let mut open = vec![true; slow.len()];
    for byte in head.bytes().take(30) {
        for (stream, _) in slow.iter_mut().zip(&open).step_by(2).filter(|(_, open)| **open) {
            let _ = stream.write_all(&[byte]);
        }
        std::thread::sleep(Duration::from_millis(40));
        for (stream, open) in slow.iter_mut().zip(open.iter_mut()).filter(|(_, open)| **open) {
            *open = closed_within(stream, Duration::from_millis(1)).is_none();
        }
    }
    for (stream, open) in slow.iter_mut().zip(open.iter_mut()).filter(|(_, open)| **open) {
        *open = closed_within(stream, Duration::from_secs(5)).is_none();
    }
    let still_open = open.iter().filter(|open| **open).count();
    assert_eq!(still_open, 0, "{still_open} slow connections still open {:?} after they opened", started.elapsed());
    // Meanwhile a client sending its head at once is served.
    let mut prompt = connect(&server);
    prompt.write_all(format!("{head}{INITIALIZE}").as_bytes()).unwrap();
    let answer = answer_within(&mut prompt, Duration::from_secs(10)).expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout_and_serves_until_then() {
    let (_root, _config, server) = server_with("idle_timeout_ms = 1500\nhead_timeout_ms = 60000", &["--stateless"]);
    let request = format!("{}{INITIALIZE}", post_head(&server, INITIALIZE));
    let mut stream = connect(&server);
    for _ in 0..2 {
        stream.write_all(request.as_bytes()).unwrap();
        let answer = answer_within(&mut stream, Duration::from_secs(10)).expect("an answer on the kept connection");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let closed = closed_within(&mut stream, Duration::from_secs(10)).expect("the idle connection was never closed");
    assert!(closed >= Duration::from_millis(900), "closed after {closed:?} idle: before the idle timeout");
}

#[test]
fn a_body_that_does_not_arrive_within_the_body_timeout_is_answered_408_and_the_connection_closed() {
    let (_root, _config, server) = server_with("body_timeout_ms = 500", &["--stateless"]);
    let mut stream = connect(&server);
    let head = post_head(&server, &"x".repeat(1000));
    stream.write_all(format!("{head}{{\"jsonrpc\":").as_bytes()).unwrap();
    let answer = answer_within(&mut stream, Duration::from_secs(10)).expect("an answer to the stalled body");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("within 500 ms ([http] body_timeout_ms)"), "{answer}");
    assert!(closed_within(&mut stream, Duration::from_secs(5)).is_some(), "the connection stayed open");
}

#[test]
fn connections_beyond_the_cap_wait_and_idle_ones_are_closed_to_make_room() {
    let (_root, _config, server) = server_with("max_connections = 3\nhead_timeout_ms = 20000", &["--stateless"]);
    let request = format!("{}{INITIALIZE}", post_head(&server, INITIALIZE));
    // Three connections in the middle of their heads hold every place: a fourth is not served meanwhile.
    let mut partial: Vec<TcpStream> = (0..3).map(|_| connect(&server)).collect();
    for stream in &mut partial {
        stream.write_all(b"POST /mcp HTTP/1.1\r\n").unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut waiting = connect(&server);
    waiting.write_all(request.as_bytes()).unwrap();
    assert_eq!(answer_within(&mut waiting, Duration::from_millis(1500)), None, "served beyond the cap");
    // One of them goes: the waiting one is served.
    drop(partial.pop());
    let answer = answer_within(&mut waiting, Duration::from_secs(10)).expect("served once there was room");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Now `waiting` sits idle between requests, the oldest such: a new client is served at once, and it is closed.
    drop(partial);
    let mut kept: Vec<TcpStream> = (0..2).map(|_| connect(&server)).collect();
    for stream in &mut kept {
        stream.write_all(request.as_bytes()).unwrap();
        assert!(answer_within(stream, Duration::from_secs(10)).is_some_and(|a| a.starts_with("HTTP/1.1 200")));
    }
    let mut newcomer = connect(&server);
    newcomer.write_all(request.as_bytes()).unwrap();
    let answer = answer_within(&mut newcomer, Duration::from_secs(3)).expect("a new client waited on idle ones");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(closed_within(&mut waiting, Duration::from_secs(3)).is_some(), "the longest-idle connection stayed open");
    for stream in &mut kept {
        assert_eq!(closed_within(stream, Duration::from_millis(100)), None, "a newer idle connection was closed");
    }
}

#[cfg(unix)]
#[test]
fn with_few_file_descriptors_the_server_serves_fewer_connections_and_stays_up() {
    let root = workspace();
    let server = HttpServer::start_with_files_limit(root.path(), &["--stateless"], 300);
    assert!(server.stderr().contains("serving at most 44 connections, not 1024"), "{}", server.stderr());
    let idle: Vec<TcpStream> = (0..400).map(|_| connect(&server)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let answer = raw_post(server.authority(), server.authority(), INITIALIZE);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(idle);
    assert!(!server.stderr().contains("cannot accept"), "{}", server.stderr());
}

/// A session begun with a raw `initialize`: its id.
fn new_session(server: &HttpServer) -> String {
    let initialized = raw_post(server.authority(), server.authority(), INITIALIZE);
    assert!(initialized.starts_with("HTTP/1.1 200"), "{initialized}");
    let id = initialized
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| line[15..].trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {initialized}"));
    in_session(server, &id, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    id
}

/// A raw POST of `body` in session `id`: the whole answer.
fn in_session(server: &HttpServer, id: &str, body: &str) -> String {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
        server.authority()
    );
    raw_exchange(server.authority(), &head, body)
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// A file whose reading takes minutes: text, then a 64 GiB hole, read past to reach a line beyond the text.
fn huge_file(root: &std::path::Path) {
    let huge = root.join("huge.log");
    std::fs::write(&huge, "line\n".repeat(20_000)).unwrap();
    std::fs::File::options().write(true).open(&huge).unwrap().set_len(64 << 30).unwrap();
}

/// Starts a read of `huge.log` in session `id`, whose answer never comes while the test runs.
fn start_slow_call(server: &HttpServer, id: &str) {
    let (authority, id) = (server.authority().to_string(), id.to_string());
    let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read","arguments":{"path":"huge.log","offset":30000}}}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    std::thread::spawn(move || raw_exchange(&authority, &head, body));
}

#[test]
fn at_the_session_cap_the_longest_idle_session_ends_and_with_every_session_busy_a_new_one_is_refused() {
    let (root, _config, server) = server_with("max_sessions = 2", &["--timeout-ms", "600000"]);
    huge_file(root.path());
    let first = new_session(&server);
    let second = new_session(&server);
    assert!(in_session(&server, &first, TOOLS_LIST).starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(20));
    assert!(in_session(&server, &second, TOOLS_LIST).starts_with("HTTP/1.1 200"), "used last: the first is idlest");
    let third = new_session(&server);
    let gone = in_session(&server, &first, TOOLS_LIST);
    assert!(gone.starts_with("HTTP/1.1 404"), "the longest-idle session should have ended: {gone}");
    for id in [&second, &third] {
        assert!(in_session(&server, id, TOOLS_LIST).starts_with("HTTP/1.1 200"));
    }
    // Both sessions busy: no session can be ended for a new one, which is told to come back.
    start_slow_call(&server, &second);
    start_slow_call(&server, &third);
    std::thread::sleep(Duration::from_millis(500));
    let refused = raw_post(server.authority(), server.authority(), INITIALIZE);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after: 1"), "{refused}");
    assert!(refused.contains("[http] max_sessions"), "{refused}");
    // A page from a refused origin gets its refusal first, and takes nothing.
    let head = "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\n";
    assert!(raw_exchange(server.authority(), head, INITIALIZE).starts_with("HTTP/1.1 403"));
}

#[test]
fn a_burst_of_initializes_leaves_at_most_the_cap_of_sessions_and_a_new_client_is_served() {
    let (_root, _config, server) = server_with("max_sessions = 5", &[]);
    let ids: Vec<String> = (0..60).map(|_| new_session(&server)).collect();
    let live = ids.iter().filter(|id| in_session(&server, id, TOOLS_LIST).starts_with("HTTP/1.1 200")).count();
    assert_eq!(live, 5, "sessions held after 60 initializes");
    // The newest are the ones kept.
    assert!(in_session(&server, &ids[59], TOOLS_LIST).starts_with("HTTP/1.1 200"));
    assert!(raw_post(server.authority(), server.authority(), INITIALIZE).starts_with("HTTP/1.1 200"));
}

#[test]
fn a_session_runs_at_most_its_cap_of_calls_and_more_are_refused_with_429() {
    let (root, _config, server) = server_with("max_calls_per_session = 2", &["--timeout-ms", "600000"]);
    huge_file(root.path());
    let busy = new_session(&server);
    start_slow_call(&server, &busy);
    start_slow_call(&server, &busy);
    std::thread::sleep(Duration::from_millis(500));
    let refused = in_session(&server, &busy, TOOLS_LIST);
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after: 1"), "{refused}");
    assert!(refused.contains("[http] max_calls_per_session"), "{refused}");
    // A notification is no call: still taken. Another session is not held up.
    let note = in_session(&server, &busy, r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    assert!(note.starts_with("HTTP/1.1 202"), "{note}");
    let other = new_session(&server);
    assert!(in_session(&server, &other, TOOLS_LIST).starts_with("HTTP/1.1 200"));
}
