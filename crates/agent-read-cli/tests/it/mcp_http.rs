//! The MCP face over streamable HTTP, tested as a real client would use it: `agent-read mcp --http` runs as a child
//! process and `rmcp`'s own HTTP client talks to it, in session mode and in stateless mode.

use crate::common::http::{HttpServer, INITIALIZE, client_transport, raw_exchange, raw_post, raw_post_with};
use crate::common::mcp::{
    RootsClient, assert_resources_and_prompts_are_not_served, call, call_tool, protocol_2026, text_of, workspace,
};
use rmcp::ServiceExt;
use serde_json::json;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

/// The whole life of a client: schemas, a read, paging, a failure as a tool result. `served` is how the tool is
/// described: with repeat-read notices in session mode, one-shot when stateless.
async fn exercise(server: &HttpServer, served: agent_read::Served) {
    let client = server.connect().await;
    let info = serde_json::to_value(client.peer_info().expect("server info")).unwrap();
    assert_eq!(info["serverInfo"]["name"], "agent-read");
    assert_eq!(info["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let tools = client.list_all_tools().await.expect("tools/list");
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(tools.len(), 2, "read and read_many");
    assert_eq!(tool["inputSchema"], agent_read::parameters_schema_for(served));
    assert_eq!(tool["description"], agent_read::tool_description_for(served));
    assert_eq!(tool["outputSchema"], agent_read::output_schema());
    let many = serde_json::to_value(&tools[1]).unwrap();
    assert_eq!(many["inputSchema"], agent_read::many_parameters_schema());
    assert_eq!(many["outputSchema"], agent_read::many_output_schema());
    assert_resources_and_prompts_are_not_served(&client).await;
    let first = call(&client, json!({"path": "notes.txt", "limit": 10})).await;
    assert_eq!(first.is_error, Some(false));
    let next = first.structured_content.as_ref().expect("structuredContent")["meta"]["next_offset"].clone();
    assert_eq!(next, 11);
    let second = call(&client, json!({"path": "notes.txt", "offset": next, "limit": 10})).await;
    assert!(text_of(&second).starts_with("11: line 11\n"), "{}", text_of(&second));
    let many = call_tool(&client, "read_many", json!({"paths": ["notes.txt", "src/*.rs"], "limit": 1})).await;
    assert_eq!(many.is_error, Some(false));
    assert_eq!(many.structured_content.as_ref().expect("structuredContent")["kind"], "many");
    assert!(text_of(&many).starts_with("==> notes.txt <==\n1: line 1\n"), "{}", text_of(&many));
    let denied = call(&client, json!({"path": ".env"})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text_of(&denied).starts_with("DENIED: .env: denied by the read policy"), "{}", text_of(&denied));
    assert!(!text_of(&denied).contains("do-not-show"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn session_mode_serves_a_whole_client_life() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[]);
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    exercise(&server, agent_read::Served::WithRepeatStubs).await;
}

#[tokio::test]
async fn stateless_mode_serves_a_whole_client_life() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"]);
    exercise(&server, agent_read::Served::OneShot).await;
}

#[tokio::test]
async fn each_http_session_has_its_own_ledger() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[]);
    let first = server.connect().await;
    let content = text_of(&call(&first, json!({"path": "notes.txt"})).await);
    assert!(content.starts_with("1: line 1\n"), "{content}");
    let repeat = text_of(&call(&first, json!({"path": "notes.txt"})).await);
    assert!(repeat.starts_with("(unchanged since your read at "), "{repeat}");
    let second = server.connect().await;
    assert_eq!(text_of(&call(&second, json!({"path": "notes.txt"})).await), content);
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

#[tokio::test]
async fn stateless_mode_repeats_content_and_refuses_a_budget() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"]);
    let client = server.connect().await;
    let first = text_of(&call(&client, json!({"path": "notes.txt"})).await);
    assert_eq!(text_of(&call(&client, json!({"path": "notes.txt"})).await), first, "no session, no notice");
    client.cancel().await.unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .args(["mcp", "--http", "127.0.0.1:0", "--stateless", "--budget-tokens", "1000", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--stateless") && stderr.contains("budget"), "{stderr}");
}

#[tokio::test]
async fn many_concurrent_clients_all_get_their_answers() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[]);
    let client = std::sync::Arc::new(server.connect().await);
    let tasks: Vec<_> = (1..=30)
        .map(|line| {
            let client = client.clone();
            tokio::spawn(async move { call(&client, json!({"path": "notes.txt", "offset": line, "limit": 1})).await })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let text = text_of(&task.await.unwrap());
        assert!(text.starts_with(&format!("{}: line {}\n", i + 1, i + 1)), "{text}");
    }
}

#[tokio::test]
async fn one_client_keeping_all_its_slots_busy_does_not_stall_another() {
    let dir = workspace();
    let huge = dir.path().join("huge.log");
    std::fs::write(&huge, "line\n".repeat(20_000)).unwrap();
    // A 64 GiB hole after the text: counting its lines takes minutes.
    std::fs::File::options().write(true).open(&huge).unwrap().set_len(64 << 30).unwrap();
    let audit = tempfile::tempdir().unwrap();
    let audit_log = audit.path().join("audit.jsonl");
    let flags = ["--audit-log", audit_log.to_str().unwrap(), "--timeout-ms", "600000"];
    let server = HttpServer::start(dir.path(), &flags);
    let greedy = std::sync::Arc::new(server.connect().await);
    let slow: Vec<_> = (0..16)
        .map(|_| {
            let greedy = greedy.clone();
            tokio::spawn(async move { call(&greedy, json!({"path": "huge.log"})).await })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // A directory listing always goes to the pool; with one pool for everyone it would wait minutes for a slot.
    let other = server.connect().await;
    let listing = tokio::time::timeout(std::time::Duration::from_secs(60), call(&other, json!({"path": "src"})))
        .await
        .expect("the other client's read waited behind the first client's slow reads");
    assert!(text_of(&listing).starts_with("main.rs"), "{}", text_of(&listing));
    let audited = std::fs::read_to_string(&audit_log).unwrap();
    assert_eq!(audited.lines().count(), 1, "the slow reads were still running: {audited}");
    slow.iter().for_each(|task| task.abort());
}

#[tokio::test]
async fn foreign_host_headers_are_refused_and_allow_host_admits_them() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"]);
    let refused = raw_post(server.authority(), "attacker.example:8080", INITIALIZE);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.contains("`attacker.example:8080`") && refused.contains("--allow-host attacker.example"),
        "{refused}"
    );
    // A request without a Host header names its host in its target: the refusal names that host.
    let absolute = "POST http://evil.example/mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                    Accept: application/json, text/event-stream\r\n";
    let refused = raw_exchange(server.authority(), absolute, INITIALIZE);
    assert!(refused.starts_with("HTTP/1.1 403") && refused.contains("the host `evil.example`"), "{refused}");
    let loopback = raw_post(server.authority(), server.authority(), INITIALIZE);
    assert!(loopback.starts_with("HTTP/1.1 200"), "{loopback}");
    let allowing = HttpServer::start(dir.path(), &["--stateless", "--allow-host", "files.internal"]);
    let admitted = raw_post(allowing.authority(), "files.internal", INITIALIZE);
    assert!(admitted.starts_with("HTTP/1.1 200"), "{admitted}");
    assert!(admitted.contains(r#""name":"agent-read""#), "{admitted}");
}

/// A POST of `body` with an `Origin` header.
fn post_from_origin(authority: &str, origin: &str, body: &str) -> String {
    raw_post_with(authority, authority, &format!("Origin: {origin}\r\n"), body)
}

#[tokio::test]
async fn browser_pages_may_connect_only_from_loopback_or_an_allowed_host() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless", "--allow-host", "files.internal"]);
    for origin in ["http://localhost:6274", "http://127.0.0.1", "https://[::1]:8443", "https://files.internal"] {
        let answer = post_from_origin(server.authority(), origin, INITIALIZE);
        assert!(answer.starts_with("HTTP/1.1 200"), "{origin}: {answer}");
    }
    let refused = post_from_origin(server.authority(), "https://evil.example", INITIALIZE);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("the Origin `https://evil.example` is not accepted"), "{refused}");
    // A refusal comes before anything else is said: not even that the body is too large.
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(5 << 20));
    let refused_huge = post_from_origin(server.authority(), "https://evil.example", &huge);
    assert!(refused_huge.starts_with("HTTP/1.1 403"), "{}", &refused_huge[..200.min(refused_huge.len())]);
    let too_large = post_from_origin(server.authority(), "http://localhost", &huge);
    assert!(too_large.starts_with("HTTP/1.1 413"), "{}", &too_large[..200.min(too_large.len())]);
    // Clients that are not browsers send no Origin, and need none.
    assert!(raw_post(server.authority(), server.authority(), INITIALIZE).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn other_paths_are_not_found_and_malformed_json_is_a_protocol_error() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"]);
    let mut stream = std::net::TcpStream::connect(server.authority()).unwrap();
    write!(stream, "GET /other HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.authority()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    // A body that is not a message is answered 400 with the JSON-RPC error it is owed, its id when readable.
    for (body, code, id) in [
        ("{not json", "-32700", None),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, "-32600", None),
        (r#"{"id":7,"method":"ping"}"#, "-32600", Some(r#""id":7"#)),
    ] {
        let answer = raw_post(server.authority(), server.authority(), body);
        assert!(answer.starts_with("HTTP/1.1 400"), "{body}: {answer}");
        assert!(answer.to_ascii_lowercase().contains("content-type: application/json"), "{body}: {answer}");
        assert!(answer.contains(&format!(r#""code":{code}"#)), "{body}: {answer}");
        assert_eq!(answer.contains(r#""id":"#), id.is_some(), "{body}: {answer}");
        assert!(id.is_none_or(|id| answer.contains(id)), "{body}: {answer}");
        // Where there is advice on framing, it is for HTTP: a message per request, not per line as over stdio.
        let framing = id.is_none();
        assert_eq!(answer.contains("in a request of its own"), framing, "{answer}");
        assert!(!answer.contains("line of its own"), "{answer}");
    }
    // A UTF-8 byte-order mark before the JSON is skipped, as JSON allows.
    let with_bom = raw_post(server.authority(), server.authority(), &format!("\u{feff}{INITIALIZE}"));
    assert!(with_bom.starts_with("HTTP/1.1 200") && with_bom.contains(r#""name":"agent-read""#), "{with_bom}");
    // Stateless mode has no sessions to end: rmcp says DELETE is not allowed, session id or not.
    let head = format!("DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: any\r\n", server.authority());
    let delete = raw_exchange(server.authority(), &head, "");
    assert!(delete.starts_with("HTTP/1.1 405"), "{delete}");
    // A tools/call whose params do not fit: invalid params, with the reason.
    let unfit = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#;
    let answer = raw_post(server.authority(), server.authority(), unfit);
    assert!(answer.contains(r#""code":-32602"#) && answer.contains("missing field `name`"), "{answer}");
    // A method this server does not serve names the methods it does: with 200 from a client that opened with
    // `initialize`, 404 on protocol 2026-07-28 (its version in `_meta` and in the headers).
    let meta =
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    for method in ["files/write", "resources/list"] {
        let said = format!("method `{method}` not found; this server serves tools: tools/list, tools/call");
        let legacy = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"{method}"}}"#);
        let answer = raw_post(server.authority(), server.authority(), &legacy);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(r#""code":-32601"#) && answer.contains(&said), "{answer}");
        let current = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{"_meta":{meta}}}}}"#);
        let headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
        let answer = raw_post_with(server.authority(), server.authority(), &headers, &current);
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        assert!(answer.contains(r#""code":-32601"#) && answer.contains(&said), "{answer}");
    }
}

#[tokio::test]
async fn ending_a_session_answers_204_and_the_session_is_gone() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[]);
    let initialized = raw_post(server.authority(), server.authority(), INITIALIZE);
    let session = initialized
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| line[15..].trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {initialized}"));
    let head = |method: &str| {
        format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            server.authority()
        )
    };
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let initialized_note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    raw_exchange(server.authority(), &head("POST"), initialized_note);
    let before = raw_exchange(server.authority(), &head("POST"), list);
    assert!(before.starts_with("HTTP/1.1 200") && before.contains(r#""name":"read""#), "{before}");
    let ended = raw_exchange(server.authority(), &head("DELETE"), "");
    assert!(ended.starts_with("HTTP/1.1 204"), "{ended}");
    let after = raw_exchange(server.authority(), &head("POST"), list);
    assert!(after.starts_with("HTTP/1.1 404"), "the session outlived its DELETE: {after}");
    // Ending it again is ending a session that does not exist: 404, as for any other request naming it.
    let again = raw_exchange(server.authority(), &head("DELETE"), "");
    assert!(again.starts_with("HTTP/1.1 404") && again.contains("no such session"), "{again}");
    // From a refused host, only the refusal: whether the session exists is not said.
    let foreign = head("DELETE").replace(&format!("Host: {}", server.authority()), "Host: evil.example");
    let refused = raw_exchange(server.authority(), &foreign, "");
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
}

#[tokio::test]
async fn each_session_keeps_its_own_roots() {
    let cli_root = workspace();
    let client_root = cli_root.path().join("mine");
    std::fs::create_dir(&client_root).unwrap();
    std::fs::write(client_root.join("mine.txt"), "the client's own\n").unwrap();
    let server = HttpServer::start(cli_root.path(), &[]);
    let transport = client_transport(&server.url);
    let with_roots = RootsClient::fixed(format!("file://{}", client_root.display()))
        .serve(transport)
        .await
        .expect("initialize with roots");
    let mut adopted = false;
    for _ in 0..100 {
        if call(&with_roots, json!({"path": "mine.txt"})).await.is_error == Some(false) {
            adopted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(adopted, "the session never adopted the client's root");
    // Another session, without roots, still reads beneath --root and cannot see the first client's root.
    let plain = server.connect().await;
    assert_eq!(call(&plain, json!({"path": "notes.txt", "limit": 1})).await.is_error, Some(false));
    let other = call(&plain, json!({"path": "mine.txt"})).await;
    assert_eq!(other.structured_content.unwrap()["error_code"], "NOT_FOUND");
}

/// Over HTTP, protocol 2026-07-28 has no sessions: every call from a client offering roots is asked for them
/// (`input_required`) and read beneath the roots it then gives, in either mode, even `--stateless`. Two clients at
/// once each read beneath their own roots, and a client without roots beneath `--root`.
#[tokio::test]
async fn clients_on_protocol_2026_07_28_give_their_roots_in_every_call_and_keep_them_to_themselves() {
    use rmcp::ClientServiceExt;
    use std::sync::atomic::Ordering;
    let cli_root = workspace();
    let (a, b) = (cli_root.path().join("a"), cli_root.path().join("b"));
    for (dir, file, text) in [(&a, "a.txt", "root a\n"), (&b, "b.txt", "root b\n")] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }
    for flags in [&[][..], &["--stateless"][..]] {
        let server = HttpServer::start(cli_root.path(), flags);
        let connect = |root: &Path| {
            let handler = RootsClient::fixed(format!("file://{}", root.display()));
            let transport = client_transport(&server.url);
            let asked = handler.asked.clone();
            async move { (handler.serve_with_lifecycle(transport, protocol_2026()).await.expect("discover"), asked) }
        };
        let ((client_a, asked_a), (client_b, asked_b)) = tokio::join!(connect(&a), connect(&b));
        // The two clients' calls interleave: each await lets the other's go on.
        let reads = |client, own: &'static str, other: &'static str| async move {
            let mut results = Vec::new();
            for i in 0..10 {
                results.push(call(client, json!({"path": if i % 2 == 0 { own } else { other }})).await);
            }
            results
        };
        let (results_a, results_b) =
            tokio::join!(reads(&client_a, "a.txt", "b.txt"), reads(&client_b, "b.txt", "a.txt"));
        for (results, own) in [(results_a, "root a"), (results_b, "root b")] {
            for (i, result) in results.iter().enumerate() {
                let structured = result.structured_content.as_ref().expect("structuredContent");
                if i % 2 == 0 {
                    assert!(text_of(result).contains(own), "{flags:?}: {}", text_of(result));
                } else {
                    assert_eq!(structured["error_code"], "NOT_FOUND", "{flags:?}: another client's root");
                }
            }
        }
        assert_eq!((asked_a.load(Ordering::SeqCst), asked_b.load(Ordering::SeqCst)), (10, 10), "{flags:?}");
        let plain = ().serve_with_lifecycle(client_transport(&server.url), protocol_2026());
        let plain = plain.await.expect("discover");
        assert_eq!(call(&plain, json!({"path": "notes.txt", "limit": 1})).await.is_error, Some(false), "{flags:?}");
        let other = call(&plain, json!({"path": "a.txt"})).await;
        assert_eq!(other.structured_content.unwrap()["error_code"], "NOT_FOUND", "{flags:?}");
    }
}

/// A token budget needs a session, which protocol 2026-07-28 has not over HTTP: with one, the server offers only the
/// protocols that begin with `initialize` (a client that speaks both then opens a session), refuses a client that
/// speaks only 2026-07-28 when it connects, and refuses a call sent without a session, rather than serve it unbounded.
#[tokio::test]
async fn with_a_token_budget_http_calls_need_a_session() {
    use rmcp::ClientServiceExt;
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--budget-tokens", "100000"]);
    let only_2026 = ().serve_with_lifecycle(client_transport(&server.url), protocol_2026());
    let Err(refused) = only_2026.await else { panic!("a client speaking only 2026-07-28 is refused at discovery") };
    assert!(format!("{refused:?}").contains("2025-11-25"), "the versions offered: {refused:?}");
    // rmcp's client keeps only the versions; a client that shows the error's message is told why, and what to do.
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n";
    let answer = raw_post_with(server.authority(), server.authority(), headers, discover);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default()).expect("JSON");
    assert_eq!(body["error"]["code"], -32022, "{answer}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("token budget (--budget-tokens), which needs a session"), "{message}");
    assert!(message.contains("starts with initialize"), "{message}");
    assert!(body["error"]["data"]["supported"].to_string().contains("2025-11-25"), "{answer}");
    // The call rmcp would serve on its own: its protocol version in `_meta`, no session.
    let sessionless = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"notes.txt"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let headers = "MCP-Protocol-Version: 2025-11-25\r\n";
    let answer = raw_post_with(server.authority(), server.authority(), headers, sessionless);
    assert!(answer.contains("needs a session") && answer.contains("initialize"), "{answer}");
    assert!(!answer.contains("line 1"), "nothing read: {answer}");
    // With a session, the budget holds from call to call.
    let client = server.connect().await;
    let left = |text: String| {
        let tail = text.rsplit("session budget: ").next().unwrap_or_default().to_string();
        tail.split_whitespace().next().unwrap_or_default().replace(',', "").parse::<u64>().expect("tokens left")
    };
    let first = left(text_of(&call(&client, json!({"path": "notes.txt", "limit": 5})).await));
    let second = left(text_of(&call(&client, json!({"path": "src/main.rs"})).await));
    assert!(second < first && first < 100_000, "the budget holds across calls: {first} then {second}");
}

#[tokio::test]
async fn sigterm_ends_the_server_and_its_open_sessions() {
    let dir = workspace();
    let mut server = HttpServer::start(dir.path(), &[]);
    let client = server.connect().await;
    assert_eq!(call(&client, json!({"path": "notes.txt", "limit": 1})).await.is_error, Some(false));
    let status = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "still running 10 s after SIGTERM");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "{exit:?}");
}

/// A key named twice is refused over HTTP as over stdio: in a call's arguments as a tool error naming it (the body
/// still holds both keys when the server reads it, before rmcp keeps the last), anywhere else in the message `400`
/// with `-32600` naming it; in either mode.
#[tokio::test]
async fn a_key_named_twice_in_a_body_is_refused_naming_it() {
    let dir = workspace();
    for mode in [&["--stateless"][..], &[]] {
        let server = HttpServer::start(dir.path(), mode);
        let session = match mode.is_empty() {
            true => {
                let initialized = raw_post(server.authority(), server.authority(), INITIALIZE);
                let id = initialized.lines().find_map(|line| {
                    line.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| line[15..].trim().to_string())
                });
                format!("Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-06-18\r\n", id.expect("a session"))
            }
            false => String::new(),
        };
        let post = |body: &str| raw_post_with(server.authority(), server.authority(), &session, body);
        let call =
            |id: u32, params: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        for (body, key) in [
            (call(2, r#"{"name":"read","arguments":{"path":".env","path":"notes.txt"}}"#), "path"),
            (
                format!(
                    "\u{feff}{}",
                    call(3, r#"{"name":"read","arguments":{"path":"notes.txt","p\u0061th":".env"}}"#)
                ),
                "path",
            ),
            (call(4, r#"{"name":"read_many","arguments":{"paths":[".env"],"paths":["notes.txt"]}}"#), "paths"),
        ] {
            let answer = post(&body);
            assert!(answer.starts_with("HTTP/1.1 200"), "{mode:?} {body}: {answer}");
            let said = format!("INVALID_PARAM: the key `{key}` appears more than once in the arguments;");
            assert!(answer.contains(&said) && answer.contains(r#""isError":true"#), "{mode:?} {body}: {answer}");
            assert!(!answer.contains("line 1") && !answer.contains("do-not-show"), "nothing was read: {answer}");
        }
        for (body, id, key) in [
            (call(5, r#"{"name":"read","name":"read_many","arguments":{"path":"notes.txt"}}"#), Some(5), "name"),
            (
                call(6, r#"{"name":"read","arguments":{"path":".env"},"arguments":{"path":"notes.txt"}}"#),
                Some(6),
                "arguments",
            ),
            (r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}"#.to_string(), None, "id"),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}"#.into(),
                None,
                "requestId",
            ),
        ] {
            let answer = post(&body);
            assert!(answer.starts_with("HTTP/1.1 400"), "{mode:?} {body}: {answer}");
            assert!(answer.contains(r#""code":-32600"#), "{answer}");
            assert!(answer.contains(&format!("the key `{key}` appears more than once")), "{answer}");
            assert_eq!(answer.contains(r#""id":"#), id.is_some(), "{answer}");
            assert!(id.is_none_or(|id| answer.contains(&format!(r#""id":{id}"#))), "{answer}");
        }
        // The server goes on serving.
        let fine = post(&call(9, r#"{"name":"read","arguments":{"path":"src/main.rs"}}"#));
        assert!(fine.contains("1: fn main() {}") && !fine.contains(r#""isError":true"#), "{mode:?}: {fine}");
    }
}

/// A bug (a panic, made on purpose by a debug build's test switch) ends the call it hits over HTTP too, without a
/// word of it, and the server goes on: in a read a tool error `INTERNAL`, in the server's own handling `-32603`.
#[tokio::test]
async fn a_panic_ends_the_call_it_hits_and_the_server_goes_on() {
    let dir = workspace();
    std::fs::write(dir.path().join("boom.txt"), "TOKEN=secret\n").unwrap();
    let call = |id: u32, path: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read","arguments":{{"path":"{path}"}}}}}}"#
        )
    };
    for (point, said) in [
        ("read:boom.txt", r#""error_code":"INTERNAL""#),
        ("mcp:boom.txt", r#""code":-32603,"message":"internal error: a bug in agent-read ended this call"#),
    ] {
        let server = HttpServer::start_with_env(dir.path(), &["--stateless"], &[("AGENT_READ_TEST_PANIC", point)]);
        let post = |body: &str| raw_post(server.authority(), server.authority(), body);
        for _ in 0..2 {
            let answer = post(&call(2, "boom.txt"));
            assert!(answer.starts_with("HTTP/1.1 200") && answer.contains(said), "{point}: {answer}");
            assert!(!answer.contains("TOKEN") && !answer.contains("test panic"), "{point}: {answer}");
        }
        let fine = post(&call(3, "src/main.rs"));
        assert!(fine.contains("1: fn main() {}") && !fine.contains(r#""isError":true"#), "{point}: {fine}");
    }
}
