//! The MCP face, tested as a real client would use it: `rmcp`'s own client drives `agent-read mcp` as a child
//! process over stdio.

use crate::common::mcp::{
    RootsClient, assert_resources_and_prompts_are_not_served, call, call_tool, protocol_2026, text_of, workspace,
};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;

type Client = RunningService<RoleClient, ()>;

async fn connect(root: &Path) -> Client {
    connect_with(root, &[]).await
}

async fn connect_with(root: &Path, flags: &[&str]) -> Client {
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(root).args(flags);
    });
    let transport = TokioChildProcess::new(command).expect("spawn agent-read mcp");
    ().serve(transport).await.expect("initialize")
}

#[tokio::test]
async fn server_names_itself_and_lists_the_read_tool_with_its_schemas() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let info = client.peer_info().expect("server info");
    let info = serde_json::to_value(info).unwrap();
    assert_eq!(info["serverInfo"]["name"], "agent-read");
    assert_eq!(info["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 2, "read and read_many");
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(tool["name"], "read");
    // Served in a session that answers exact repeats with a notice: `reread` is offered and explained.
    let served = agent_read::Served::WithRepeatStubs;
    assert_eq!(tool["description"], agent_read::tool_description_for(served));
    assert_eq!(tool["inputSchema"], agent_read::parameters_schema_for(served));
    assert_eq!(tool["outputSchema"], agent_read::output_schema());
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["idempotentHint"], true);
    client.cancel().await.unwrap();
}

/// What `tools/list` serves, input and output schemas of both tools, with repeat stubs (`reread` offered) and
/// without, stays inside the subset every MCP client and function-calling API accepts.
#[tokio::test]
async fn every_listed_schema_is_portable() {
    use crate::common::portable::{Kind, problems};
    let dir = workspace();
    for flags in [&[][..], &["--no-repeat-stubs"][..]] {
        let client = connect_with(dir.path(), flags).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        assert_eq!(tools.len(), 2);
        for tool in tools {
            let tool = serde_json::to_value(&tool).unwrap();
            let input = problems(&tool["inputSchema"], Kind::Input);
            assert!(input.is_empty(), "{} {flags:?} inputSchema: {input:#?}", tool["name"]);
            let output = problems(&tool["outputSchema"], Kind::Output);
            assert!(output.is_empty(), "{} {flags:?} outputSchema: {output:#?}", tool["name"]);
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn read_many_is_listed_with_its_schemas_and_reads_several_files_in_one_call() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let many = serde_json::to_value(tools.iter().find(|t| t.name == "read_many").expect("read_many listed")).unwrap();
    assert_eq!(many["description"], agent_read::MANY_DESCRIPTION);
    assert_eq!(many["inputSchema"], agent_read::many_parameters_schema());
    assert_eq!(many["outputSchema"], agent_read::many_output_schema());
    assert_eq!(
        (many["annotations"]["readOnlyHint"].as_bool(), many["annotations"]["idempotentHint"].as_bool()),
        (Some(true), Some(true))
    );

    let result = call_tool(&client, "read_many", json!({"paths": ["notes.txt", "src/*.rs", ".e*"], "limit": 2})).await;
    assert_eq!(result.is_error, Some(false));
    let structured = result.structured_content.clone().expect("structuredContent");
    assert_eq!((structured["ok"].as_bool(), structured["kind"].as_str()), (Some(true), Some("many")));
    assert_eq!(structured["output"].as_str(), Some(text_of(&result).as_str()));
    let paths: Vec<&str> =
        structured["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["notes.txt", "src/main.rs"]);
    let text = text_of(&result);
    assert!(text.starts_with("==> notes.txt <==\n1: line 1\n2: line 2\n(lines 1-2 of 30 · 231 B · next: offset=3 limit=2)\n\n==> src/main.rs <==\n"), "{text}");
    assert!(!text.contains("do-not-show") && !text.contains(".env"), "the denied match is withheld unnamed: {text}");
    assert_eq!(structured["meta"]["withheld"], 1);

    let rejected = call_tool(&client, "read_many", json!({"path": "notes.txt"})).await;
    assert_eq!(rejected.is_error, Some(true));
    assert_eq!(rejected.structured_content.expect("structuredContent")["error_code"], "INVALID_PARAM");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn reads_and_pages_with_the_footers_next_offset() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let first = call(&client, json!({"path": "notes.txt", "limit": 10})).await;
    assert_eq!(first.is_error, Some(false));
    let structured = first.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["kind"], "text");
    assert_eq!(structured["output"].as_str(), Some(text_of(&first).as_str()));
    assert!(text_of(&first).ends_with("(lines 1-10 of 30 · 231 B · next: offset=11 limit=10)"), "{}", text_of(&first));
    let next = structured["meta"]["next_offset"].clone();
    let second = call(&client, json!({"path": "notes.txt", "offset": next, "limit": 10})).await;
    assert!(text_of(&second).starts_with("11: line 11\n"), "{}", text_of(&second));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn find_works_over_mcp_in_one_file_and_across_files() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let found = call(&client, json!({"path": "notes.txt", "find": "line 2[05]$", "context": 0})).await;
    assert_eq!(found.is_error, Some(false));
    assert_eq!(
        text_of(&found),
        "20: line 20\n--\n25: line 25\n(find \"line 2[05]$\" from line 1: 2 of 2 match(es) · lines 20-25 shown · 231 B · end of file)"
    );
    assert_eq!(found.structured_content.expect("structuredContent")["meta"]["find_total"], 2);
    let many = call_tool(&client, "read_many", json!({"paths": ["*.txt"], "find": "line 3$", "context": 0})).await;
    assert!(text_of(&many).contains("==> notes.txt <==\n3: line 3\n"), "{}", text_of(&many));
    let bad = call(&client, json!({"path": "notes.txt", "find": "("})).await;
    assert_eq!(bad.is_error, Some(true));
    client.cancel().await.unwrap();
}

/// CPU time (user and system, in clock ticks) process `pid` has used so far.
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name: state, ppid, …, with utime and stime the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_server_goes_quiet_after_answering_a_quick_run_of_reads() {
    // After each answer the stdio server watches its input for a moment, since a sequential client's next request
    // comes within microseconds; then it must sleep. A watch that did not end would spend a core while idle.
    let dir = workspace();
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(dir.path());
    });
    let transport = TokioChildProcess::new(command).expect("spawn agent-read mcp");
    let pid = transport.id().expect("the server's pid");
    let client = ().serve(transport).await.expect("initialize");
    for offset in 1..=30 {
        let answer = call(&client, json!({"path": "notes.txt", "offset": offset, "limit": 1})).await;
        assert_eq!(answer.is_error, Some(false), "{}", text_of(&answer));
    }
    let before = cpu_ticks(pid);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let used = cpu_ticks(pid) - before;
    // Half a second is 50 ticks at the usual 100 a second; a server asleep uses none of them.
    assert!(used < 10, "the server used {used} ticks of CPU in half a second without a request");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn lists_directories() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let result = call(&client, json!({"path": "."})).await;
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["kind"], "directory");
    assert_eq!(
        text_of_value(&structured),
        ".env  (18 B)  (denied)\nnotes.txt  (231 B)\nsrc/\n(entries 1-3 of 3 · end of directory)"
    );
    client.cancel().await.unwrap();
}

/// The server keeps a big directory's sorted listing between pages; every page still shows the directory as it is
/// when the page is read: a file's new size, an entry added, one removed and one renamed.
#[tokio::test]
async fn pages_of_a_big_directory_show_it_as_it_is_now() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..5000 {
        std::fs::write(big.join(format!("f{i:04}")), "x").unwrap();
    }
    // A listing is kept once the directory's times are a few seconds old.
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    let client = connect_with(dir.path(), &["--no-repeat-stubs"]).await;
    let page = async |offset: i64| text_of(&call(&client, json!({"path": "big", "offset": offset, "limit": 3})).await);
    assert_eq!(
        page(1).await,
        "f0000  (1 B)\nf0001  (1 B)\nf0002  (1 B)\n(entries 1-3 of 5000 · next: offset=4 limit=3)"
    );
    std::fs::write(big.join("f0001"), "longer").unwrap();
    assert_eq!(
        page(2).await,
        "f0001  (6 B)\nf0002  (1 B)\nf0003  (1 B)\n(entries 2-4 of 5000 · next: offset=5 limit=3)"
    );
    std::fs::write(big.join("a_new"), "").unwrap();
    std::fs::remove_file(big.join("f0000")).unwrap();
    std::fs::rename(big.join("f0002"), big.join("e_renamed")).unwrap();
    assert_eq!(
        page(1).await,
        "a_new  (0 B)\ne_renamed  (1 B)\nf0001  (6 B)\n(entries 1-3 of 5000 · next: offset=4 limit=3)"
    );
    assert_eq!(page(4999).await, "f4998  (1 B)\nf4999  (1 B)\n(entries 4999-5000 of 5000 · end of directory)");
    client.cancel().await.unwrap();
}

fn text_of_value(structured: &Value) -> &str {
    structured["output"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn failures_are_tool_results_with_is_error_and_the_instructive_message() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let missing = call(&client, json!({"path": "src/mian.rs"})).await;
    assert_eq!(missing.is_error, Some(true));
    let structured = missing.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["error_code"], "NOT_FOUND");
    assert_eq!(structured["suggestions"], json!(["src/main.rs"]));
    assert!(text_of(&missing).starts_with("NOT_FOUND: src/mian.rs"), "{}", text_of(&missing));
    let denied = call(&client, json!({"path": ".env"})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(!text_of(&denied).contains("do-not-show"));
    let invalid = call(&client, json!({"path": "notes.txt", "offset": 0})).await;
    assert_eq!(invalid.structured_content.expect("structuredContent")["error_code"], "INVALID_PARAM");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let outcome = client.call_tool(CallToolRequestParams::new("write")).await;
    assert!(outcome.is_err(), "{outcome:?}");
    // The connection survives it.
    let ok = call(&client, json!({"path": "src/main.rs"})).await;
    assert_eq!(ok.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn resources_prompts_and_completions_are_not_found_with_the_methods_served() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    assert_resources_and_prompts_are_not_served(&client).await;
    let ok = call(&client, json!({"path": "src/main.rs"})).await;
    assert_eq!(ok.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_all_answer() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let tasks: Vec<_> = (1..=30)
        .map(|offset| {
            let peer = client.peer().clone();
            tokio::spawn(async move {
                let Value::Object(arguments) = json!({"path": "notes.txt", "offset": offset, "limit": 1}) else {
                    unreachable!()
                };
                peer.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let result = task.await.expect("task").expect("tools/call");
        assert!(text_of(&result).starts_with(&format!("{}: line {}\n", i + 1, i + 1)), "{}", text_of(&result));
    }
    client.cancel().await.unwrap();
}

#[test]
fn a_request_before_initialize_is_told_to_send_initialize_first_and_a_stray_notification_is_skipped() {
    let dir = workspace();
    let lines = [
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
    ];
    let stdout = serve_lines_from_a_file(dir.path(), &lines);
    let answer: Value = serde_json::from_str(stdout.lines().next().unwrap_or_default()).unwrap_or_default();
    assert_eq!(answer["id"], 1, "{stdout}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("send initialize first"), "{stdout}");
}

/// Runs `agent-read mcp` rooted at `root` with `lines` (one message each) in a file as its standard input; returns
/// what it wrote to standard output.
fn serve_lines_from_a_file(root: &Path, lines: &[Vec<u8>]) -> String {
    serve_lines_with_env(root, lines, &[])
}

/// [`serve_lines_from_a_file`] with `env` added to the server's environment.
fn serve_lines_with_env(root: &Path, lines: &[Vec<u8>], env: &[(&str, &str)]) -> String {
    let input = root.join("requests.jsonl");
    std::fs::write(&input, lines.iter().flat_map(|line| line.iter().copied().chain([b'\n'])).collect::<Vec<u8>>())
        .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .arg("mcp")
        .arg("--root")
        .arg(root)
        .envs(env.iter().copied())
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .expect("run agent-read mcp");
    String::from_utf8(output.stdout).unwrap()
}

/// Clients start stdio servers on pipes, which the server drives without blocking; any other standard input (a file,
/// a terminal, a socket) takes the blocking path. Both must serve.
#[test]
fn a_standard_input_that_is_not_a_pipe_is_served_too() {
    let dir = workspace();
    let requests = [
        initialize_request("file-client", json!({})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "read", "arguments": {"path": "src/main.rs"}}}),
    ];
    let lines: Vec<Vec<u8>> = requests.iter().map(|request| request.to_string().into_bytes()).collect();
    let stdout = serve_lines_from_a_file(dir.path(), &lines);
    let answer: Value = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|message| message["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the call in {stdout:?}"));
    assert_eq!(answer["result"]["content"][0]["text"], "1: fn main() {}\n(lines 1-1 of 1 · 13 B · end of file)");
}

/// Every line that needs an answer gets one, with the request's id when it can be read, so that no client waits
/// forever on a request the server could not take; and the server goes on serving.
#[test]
fn malformed_lines_are_answered_as_json_rpc_says_and_serving_goes_on() {
    let dir = workspace();
    let initialize = initialize_request("raw", json!({}));
    let mut lines: Vec<Vec<u8>> =
        vec![initialize.to_string().into(), br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()];
    lines.extend([
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}".to_vec(),
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{"path":"notes.txt"}}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":5,"method":"files/write"}"#.to_vec(),
        br#"{"id":6,"method":"ping"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"oops"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{"path":"src/main.rs"}}}"#
            .to_vec(),
    ]);
    let stdout = serve_lines_from_a_file(dir.path(), &lines);
    let answers: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    // In any order: the transport answers what it cannot parse, the handler what it cannot serve.
    let mut codes: Vec<(Value, Value)> = answers
        .iter()
        .filter(|a| a.get("error").is_some())
        .map(|a| (a["id"].clone(), a["error"]["code"].clone()))
        .collect();
    let expected =
        [(Value::Null, -32700), (json!(3), -32700), (json!(4), -32602), (json!(5), -32601), (json!(6), -32600)];
    codes.sort_by_key(|(id, _)| id.to_string());
    let mut expected = expected.map(|(id, code)| (id, json!(code)));
    expected.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(codes, expected, "{stdout}");
    let call = answers.iter().find(|a| a["id"] == 7).unwrap_or_else(|| panic!("no answer to the call: {stdout}"));
    assert_eq!(call["result"]["content"][0]["text"], "1: fn main() {}\n(lines 1-1 of 1 · 13 B · end of file)");
    assert_eq!(answers.len(), 7, "the initialize, five errors, the call; nothing for notifications: {stdout}");
}

/// `agent-read mcp` rooted at `root`, with its standard input, output and error on pipes the test holds.
/// A raw `initialize` request (id 1, protocol 2025-11-25) from a client named `name` with `capabilities`.
fn initialize_request(name: &str, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
           "capabilities": capabilities, "clientInfo": {"name": name, "version": "1"}}})
}

fn spawn_piped(root: &Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .arg("mcp")
        .arg("--root")
        .arg(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agent-read mcp")
}

#[test]
fn a_client_gone_before_initialize_is_answered_ends_the_server_with_a_plain_reason() {
    use std::io::Write as _;
    let dir = workspace();
    let mut child = spawn_piped(dir.path());
    drop(child.stdout.take());
    let initialize = initialize_request("gone", json!({}));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("MCP start-up failed: the connection failed while sending initialize response"),
        "{stderr}"
    );
    assert!(!stderr.contains("agent_read::"), "no Rust type names: {stderr}");
    drop(stdin);
}

/// A client that stops reading the server's answers but keeps its standard input open: the server stops at the
/// first answer it cannot write, rather than serve requests whose answers go nowhere until the input closes.
#[test]
fn a_client_that_closes_the_servers_output_ends_the_server_though_its_input_stays_open() {
    use std::io::{BufRead as _, Write as _};
    let dir = workspace();
    let mut child = spawn_piped(dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let initialize = initialize_request("deaf", json!({}));
    writeln!(stdin, "{initialize}").unwrap();
    let mut answers = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    answers.read_line(&mut first).unwrap();
    assert!(first.contains("\"serverInfo\""), "{first}");
    drop(answers);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "read", "arguments": {"path": "src/main.rs"}}});
    writeln!(stdin, "{call}").unwrap();
    // A guard against a hang, not a timing: the server stops within moments of the failed write.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("still serving 30 s after its output closed, with its input open");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("writing to standard output failed"), "{stderr}");
    assert!(stderr.contains("the client cannot receive answers; stopping"), "{stderr}");
    drop(stdin);
}

/// A client that leaves while the server is asking for its roots (here, right after saying they changed): the server
/// ends quietly, without a log line claiming it keeps `--root` for a client that is gone.
#[test]
fn a_client_that_leaves_while_asked_for_its_roots_gets_no_log_line_about_them() {
    use std::io::{BufRead as _, Write as _};
    let dir = workspace();
    let mut child = spawn_piped(dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = std::io::BufReader::new(child.stdout.take().unwrap());
    let initialize = initialize_request("leaving", json!({"roots": {"listChanged": true}}));
    writeln!(stdin, "{initialize}").unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    // Every roots/list the server sends is read; the first is answered, the one after list_changed is not.
    let mut next_roots_request = || loop {
        let mut line = String::new();
        assert_ne!(answers.read_line(&mut line).unwrap(), 0, "the server closed its output");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "roots/list" {
            return message["id"].clone();
        }
    };
    let id = next_roots_request();
    let root = format!("file://{}", dir.path().display());
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "result": {"roots": [{"uri": root}]}})).unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}}"#).unwrap();
    next_roots_request();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("roots could not be listed"), "{stderr}");
}

/// Waits (bounded) until a read of `path` gives the expected error code or success.
async fn eventually(client: &RunningService<RoleClient, RootsClient>, path: &str, ok: bool) -> Value {
    for _ in 0..100 {
        let Value::Object(arguments) = json!({"path": path}) else { unreachable!() };
        let result =
            client.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await.expect("tools/call");
        let structured = result.structured_content.expect("structuredContent");
        if structured["ok"] == ok {
            return structured;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{path} never became ok={ok}");
}

/// Two directories inside `root` for a client to offer as roots: `from_first.txt` in one, `from_second.txt` in the
/// other.
fn two_client_roots(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (first, second) = (root.join("first"), root.join("second"));
    std::fs::create_dir(&first).unwrap();
    std::fs::write(first.join("from_first.txt"), "first root\n").unwrap();
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("from_second.txt"), "second root\n").unwrap();
    (first, second)
}

#[tokio::test]
async fn roots_offered_by_the_client_narrow_the_command_line_roots_and_follow_changes() {
    let cli_root = workspace();
    let (first, second) = two_client_roots(cli_root.path());
    let not_a_dir = first.join("from_first.txt");
    let missing = first.join("no_such_dir");
    let uri = |p: &Path| format!("file://{}", p.display());
    let offered = vec![uri(&first), uri(&not_a_dir), uri(&missing), "https://example.com/repo".to_string()];
    let roots = std::sync::Arc::new(std::sync::Mutex::new(offered));
    let handler = RootsClient::new(roots.clone());
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let log = cli_root.path().join("server.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(cli_root.path());
    });
    let (server, _) = TokioChildProcess::builder(command).stderr(log_file).spawn().unwrap();
    let client = handler.serve(server).await.expect("initialize");
    // The client's usable root narrows --root; the others are refused, each with a line saying why, and the model
    // is told once, at the end of its next answer.
    let read = eventually(&client, "from_first.txt", true).await;
    let told = format!(
        "1: first root\n(lines 1-1 of 1 · 11 B · end of file · client roots refused: {} (not an existing directory), \
         {} (not an existing directory), https://example.com/repo (not a file:// URI); reading beneath the client's \
         roots taken: {})",
        uri(&not_a_dir),
        uri(&missing),
        first.canonicalize().unwrap().display()
    );
    assert_eq!(read["output"], told);
    let again = eventually(&client, "from_first.txt", true).await;
    assert!(!again["output"].as_str().unwrap().contains("client roots refused"), "{again}");
    assert_eq!(eventually(&client, "notes.txt", false).await["error_code"], "NOT_FOUND");
    // roots/list_changed: the server asks again and follows.
    *roots.lock().unwrap() = vec![uri(&second)];
    client.notify_roots_list_changed().await.expect("notify");
    eventually(&client, "from_second.txt", true).await;
    assert_eq!(eventually(&client, "from_first.txt", false).await["error_code"], "NOT_FOUND");
    // Withdrawing every root: the client's roots stop being readable, and --root serves again.
    *roots.lock().unwrap() = vec![];
    client.notify_roots_list_changed().await.expect("notify");
    eventually(&client, "notes.txt", true).await;
    assert_eq!(eventually(&client, "from_second.txt", false).await["error_code"], "NOT_FOUND");
    client.cancel().await.unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("the client offers no usable root; reading beneath the configured roots"), "{logged}");
    for refused in [&not_a_dir, &missing] {
        let line = format!("agent-read: client root {} refused: not an existing directory", uri(refused));
        assert!(logged.contains(&line), "{logged}");
    }
    assert!(logged.contains("client root https://example.com/repo refused: not a file:// URI"), "{logged}");
}

/// Protocol 2026-07-28 lets a server send no request of its own: the first call is answered `input_required` with a
/// `roots/list` in it, the client calls again with its roots, and over stdio they hold for the connection until it
/// says they changed.
#[tokio::test]
async fn a_client_on_protocol_2026_07_28_gives_its_roots_in_a_call_and_they_hold_until_it_changes_them() {
    use rmcp::ClientServiceExt;
    use std::sync::atomic::Ordering;
    let cli_root = workspace();
    let (first, second) = two_client_roots(cli_root.path());
    let uri = |p: &Path| format!("file://{}", p.display());
    let roots = std::sync::Arc::new(std::sync::Mutex::new(vec![uri(&first)]));
    let handler = RootsClient::new(roots.clone());
    let asked = handler.asked.clone();
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(cli_root.path());
    });
    let client = handler.serve_with_lifecycle(TokioChildProcess::new(command).unwrap(), protocol_2026()).await;
    let client = client.expect("discover");
    let read = call(&client, json!({"path": "from_first.txt"})).await;
    assert_eq!(text_of(&read), "1: first root\n(lines 1-1 of 1 · 11 B · end of file)");
    // Beneath --root only: the client's roots replace it.
    let outside = call(&client, json!({"path": "notes.txt"})).await;
    assert_eq!(outside.structured_content.expect("structuredContent")["error_code"], "NOT_FOUND");
    let many = call_tool(&client, "read_many", json!({"paths": ["from_first.txt"]})).await;
    assert!(text_of(&many).contains("first root"), "{}", text_of(&many));
    assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once for the connection");
    // A change, said: the next call asks again and follows.
    *roots.lock().unwrap() = vec![uri(&second)];
    client.notify_roots_list_changed().await.expect("notify");
    eventually(&client, "from_second.txt", true).await;
    assert_eq!(eventually(&client, "from_first.txt", false).await["error_code"], "NOT_FOUND");
    assert_eq!(asked.load(Ordering::SeqCst), 2, "asked again after the change only");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_read_before_the_client_has_listed_its_roots_waits_for_them() {
    let cli_root = workspace();
    let client_root = cli_root.path().join("mine");
    std::fs::create_dir(&client_root).unwrap();
    std::fs::write(client_root.join("mine.txt"), "client root\n").unwrap();
    let uri = format!("file://{}", client_root.display());
    let slow = RootsClient::fixed(uri).answering_after(std::time::Duration::from_millis(500));
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(cli_root.path());
    });
    let client = slow.serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    // Sent at once: without waiting, it would read notes.txt beneath --root, which this client never offered.
    let first = call(&client, json!({"path": "notes.txt"})).await;
    assert_eq!(first.structured_content.expect("structuredContent")["error_code"], "NOT_FOUND");
    let mine = call(&client, json!({"path": "mine.txt"})).await;
    assert_eq!(text_of(&mine), "1: client root\n(lines 1-1 of 1 · 12 B · end of file)");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn waiting_for_the_clients_roots_is_spent_from_the_time_budget() {
    let cli_root = workspace();
    let uri = format!("file://{}", cli_root.path().join("src").display());
    let slow = RootsClient::fixed(uri).answering_after(std::time::Duration::from_millis(1500));
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(cli_root.path()).arg("--timeout-ms").arg("1000");
    });
    let client = slow.serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    // A listing goes to the pool, which sees the whole budget already spent on the roots.
    let listing = call(&client, json!({"path": "."})).await;
    let structured = listing.structured_content.expect("structuredContent");
    assert_eq!(structured["error_code"], "TIMEOUT", "{structured}");
    assert!(structured["error"].as_str().unwrap().contains("before its read could start"), "{structured}");
    // The next one, with the roots known, reads.
    assert_eq!(call(&client, json!({"path": "."})).await.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_that_never_lists_its_roots_is_read_beneath_the_command_line_roots_after_a_wait() {
    let cli_root = workspace();
    let silent = RootsClient::fixed("file:///".to_string()).answering_after(std::time::Duration::from_secs(3600));
    let log = cli_root.path().join("server.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(cli_root.path());
    });
    let (server, _) = TokioChildProcess::builder(command).stderr(log_file).spawn().unwrap();
    let client = silent.serve(server).await.expect("initialize");
    let read = call(&client, json!({"path": "src/main.rs"})).await;
    assert_eq!(text_of(&read), "1: fn main() {}\n(lines 1-1 of 1 · 13 B · end of file)");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("offers roots but has not listed them within 5 s; reading beneath --root"), "{logged}");
    client.cancel().await.unwrap();
}

/// `huge.log` in `dir`: text up front, then a 64 GiB hole, so that a read of a line past the text (or a search that
/// finds nothing) takes many seconds.
fn write_huge_log(dir: &Path) {
    let huge = dir.join("huge.log");
    std::fs::write(&huge, "line\n".repeat(20_000)).unwrap();
    std::fs::File::options().write(true).open(&huge).unwrap().set_len(64 << 30).unwrap();
}

/// The audit log once it holds `lines` lines, or what it holds after 10 s.
async fn audit_lines_after(audit_log: &Path, lines: usize) -> String {
    let mut outcome = String::new();
    for _ in 0..200 {
        outcome = std::fs::read_to_string(audit_log).unwrap_or_default();
        if outcome.lines().count() >= lines {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    outcome
}

#[tokio::test]
async fn a_slow_read_delays_no_other_and_cancelling_it_stops_it() {
    slow_read_then_cancelled(None).await;
}

/// On protocol 2026-07-28 there is no `initialize`: `notifications/cancelled` must still reach the read it names.
#[tokio::test]
async fn a_read_cancelled_by_a_client_on_protocol_2026_07_28_stops() {
    slow_read_then_cancelled(Some(protocol_2026())).await;
}

/// A slow read beside a quick one, then cancelled, from a client that starts as `lifecycle` says (default:
/// `initialize`).
async fn slow_read_then_cancelled(lifecycle: Option<rmcp::ClientLifecycleMode>) {
    use rmcp::ClientServiceExt;
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let dir = workspace();
    write_huge_log(dir.path());
    let audit = tempfile::tempdir().unwrap();
    let audit_log = audit.path().join("audit.jsonl");
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp")
            .arg("--root")
            .arg(dir.path())
            .arg("--audit-log")
            .arg(&audit_log)
            .arg("--timeout-ms")
            .arg("600000");
    });
    let transport = TokioChildProcess::new(command).unwrap();
    let client = match lifecycle {
        Some(lifecycle) => ().serve_with_lifecycle(transport, lifecycle).await.expect("discover"),
        None => ().serve(transport).await.expect("initialize"),
    };
    let Value::Object(arguments) = json!({"path": "huge.log", "offset": 30_000}) else { unreachable!() };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("read").with_arguments(arguments),
    ));
    let handle = client.send_cancellable_request(request, PeerRequestOptions::no_options()).await.expect("send");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // While the slow read scans, another read answers: the audit log then holds that read alone.
    let quick = call(&client, json!({"path": "notes.txt", "limit": 1})).await;
    assert_eq!(quick.is_error, Some(false));
    let during = std::fs::read_to_string(&audit_log).unwrap_or_default();
    assert_eq!(during.lines().count(), 1, "only the quick read has finished: {during:?}");
    assert!(during.contains("notes.txt"), "{during:?}");
    handle.cancel(Some("no longer needed".into())).await.expect("cancel");
    // The read stops at its next chunk and the audit log says so (without cancellation it would run for minutes).
    let outcome = audit_lines_after(&audit_log, 2).await;
    assert!(outcome.contains(r#""outcome":"CANCELLED""#), "audit log after cancelling: {outcome:?}");
    // The server goes on answering.
    let after = call(&client, json!({"path": "notes.txt", "limit": 1})).await;
    assert_eq!(after.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_read_many_stops_the_file_it_is_reading() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let dir = workspace();
    write_huge_log(dir.path());
    let audit = tempfile::tempdir().unwrap();
    let audit_log = audit.path().join("audit.jsonl");
    let client =
        connect_with(dir.path(), &["--audit-log", audit_log.to_str().unwrap(), "--timeout-ms", "600000"]).await;
    let Value::Object(arguments) = json!({"paths": ["notes.txt", "huge.log"], "find": "absent"}) else {
        unreachable!()
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("read_many").with_arguments(arguments),
    ));
    let handle = client.send_cancellable_request(request, PeerRequestOptions::no_options()).await.expect("send");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    handle.cancel(Some("no longer needed".into())).await.expect("cancel");
    // The smaller file was read first; the big one stops at its next chunk (it would run for minutes otherwise).
    let outcome = audit_lines_after(&audit_log, 2).await;
    let lines: Vec<&str> = outcome.lines().collect();
    assert_eq!(lines.len(), 2, "{outcome:?}");
    assert!(lines[0].contains("notes.txt") && lines[0].contains(r#""outcome":"ok""#), "{outcome:?}");
    assert!(lines[1].contains("huge.log") && lines[1].contains(r#""outcome":"CANCELLED""#), "{outcome:?}");
    // The server goes on answering.
    let after = call_tool(&client, "read_many", json!({"paths": ["notes.txt"], "limit": 1})).await;
    assert_eq!(after.is_error, Some(false));
    client.cancel().await.unwrap();
}

/// A 120×80 opaque gradient, as PNG bytes.
fn gradient_png() -> Vec<u8> {
    let picture = image::RgbImage::from_fn(120, 80, |x, y| image::Rgb([(x * 2) as u8, (y * 3) as u8, (x + y) as u8]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(picture).write_to(&mut bytes, image::ImageFormat::Png).expect("encode PNG");
    bytes.into_inner()
}

#[tokio::test]
async fn an_image_is_a_text_block_then_an_image_block_and_its_bytes_travel_once() {
    use base64::Engine;
    let dir = workspace();
    let bytes = gradient_png();
    std::fs::write(dir.path().join("chart.png"), &bytes).unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, json!({"path": "chart.png"})).await;
    assert_eq!(result.is_error, Some(false));
    let content = serde_json::to_value(&result.content).unwrap();
    let blocks = content.as_array().expect("content is a list");
    assert_eq!(blocks.len(), 2, "text then image");
    assert_eq!(blocks[0]["type"], "text");
    assert!(text_of(&result).starts_with("PNG image · 120×80 · "), "{}", text_of(&result));
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["mimeType"], "image/png");
    let data = blocks[1]["data"].as_str().expect("image data");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).expect("base64"), bytes);
    let structured = result.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["ok"], true);
    assert_eq!(structured["kind"], "attachment");
    assert_eq!(structured["output"].as_str(), Some(text_of(&result).as_str()));
    let attached = &structured["attachments"][0];
    assert_eq!(attached["mime"], "image/png");
    assert_eq!((attached["width"].as_u64(), attached["height"].as_u64()), (Some(120), Some(80)));
    assert_eq!(attached["size_bytes"], bytes.len() as u64);
    assert!(attached.get("data").is_none(), "no base64 in structuredContent: {attached}");
    assert!(!structured.to_string().contains(&data[..64]), "the bytes travel only in the image block");
    assert_eq!(structured["meta"]["reencoded"], false);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_region_of_an_image_is_an_image_block_at_full_resolution() {
    use base64::Engine;
    let dir = workspace();
    std::fs::write(dir.path().join("chart.png"), gradient_png()).unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, json!({"path": "chart.png", "region": [20, 10, 60, 50]})).await;
    assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content[1]["type"], "image", "text then image: {content}");
    let data = base64::engine::general_purpose::STANDARD.decode(content[1]["data"].as_str().unwrap()).unwrap();
    let crop = image::load_from_memory(&data).expect("the block decodes");
    assert_eq!(content[1]["mimeType"], image::guess_format(&data).unwrap().to_mime_type());
    assert_eq!((crop.width(), crop.height()), (40, 40));
    assert!(text_of(&result).contains(" · region [20,10,60,50] at full resolution: 40×40, "), "{}", text_of(&result));
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["meta"]["region"], json!([20, 10, 60, 50]));
    assert!(structured["meta"]["estimated_tokens"]["anthropic"].is_u64(), "{structured}");
    let outside = call(&client, json!({"path": "chart.png", "region": [0, 0, 121, 80]})).await;
    assert_eq!(outside.is_error, Some(true));
    assert!(
        text_of(&outside)
            .starts_with("INVALID_RANGE: region [0,0,121,80] reaches past the image: chart.png is 120×80 pixels"),
        "{}",
        text_of(&outside)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_image_is_an_error_result_without_an_image_block() {
    let dir = workspace();
    let bytes = gradient_png();
    std::fs::write(dir.path().join("half.png"), &bytes[..bytes.len() / 2]).unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, json!({"path": "half.png"})).await;
    assert_eq!(result.is_error, Some(true));
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content.as_array().map(Vec::len), Some(1), "one text block: {content}");
    assert!(
        text_of(&result).starts_with("BINARY: half.png: a PNG image that cannot be decoded"),
        "{}",
        text_of(&result)
    );
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error_code"], "BINARY");
    assert!(structured.get("attachments").is_none(), "{structured}");
    // The server goes on answering.
    assert_eq!(call(&client, json!({"path": "notes.txt", "limit": 1})).await.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_pdf_is_text_under_page_headers_with_its_page_count() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("report.pdf"),
        crate::common::pdf::pdf_of(&["First page words", "Second page words"]),
    )
    .unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, json!({"path": "report.pdf"})).await;
    assert_eq!(result.is_error, Some(false));
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content.as_array().map(Vec::len), Some(1), "one text block: {content}");
    assert_eq!(content[0]["type"], "text");
    let text = text_of(&result);
    assert!(
        text.starts_with(
            "── page 1 of 2 ──\n│ First page words\n\n── page 2 of 2 ──\n│ Second page words\n(pages 1-2 of 2 · "
        ),
        "{text}"
    );
    assert!(text.ends_with(" · end of document)"), "{text}");
    let structured = result.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["kind"], "text");
    assert_eq!(structured["output"].as_str(), Some(text.as_str()));
    assert_eq!(structured["meta"]["rendered_from"], "pdf");
    assert_eq!(structured["meta"]["page_count"], 2);
    assert_eq!(structured["meta"]["pages_shown"], "1-2");
    // One page, and a page past the end.
    let second = call(&client, json!({"path": "report.pdf", "pages": 2})).await;
    assert!(text_of(&second).starts_with("── page 2 of 2 ──\n│ Second page words\n"), "{}", text_of(&second));
    let past = call(&client, json!({"path": "report.pdf", "pages": "3"})).await;
    assert_eq!(past.is_error, Some(true));
    assert_eq!(past.structured_content.expect("structuredContent")["error_code"], "INVALID_RANGE");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_pdf_as_a_document_is_an_embedded_resource_whose_bytes_travel_once() {
    let dir = workspace();
    let bytes = crate::common::pdf::pdf_of(&["First page", "Second page"]);
    std::fs::create_dir(dir.path().join("my docs")).unwrap();
    std::fs::write(dir.path().join("my docs/paper #1.pdf"), &bytes).unwrap();
    std::fs::write(dir.path().join("paper.pdf"), &bytes).unwrap();
    let client = connect_with(dir.path(), &["--pdf-as-document"]).await;
    // The resource is named by the file's absolute URI, percent-encoded (`#` would start a fragment).
    let named = call(&client, json!({"path": "my docs/paper #1.pdf"})).await;
    let named = serde_json::to_value(&named.content).unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    let expected = format!("file://{}/my%20docs/paper%20%231.pdf", real.display());
    assert_eq!(named[1]["resource"]["uri"], expected.as_str(), "{named}");
    let result = call(&client, json!({"path": "paper.pdf"})).await;
    assert_eq!(result.is_error, Some(false));
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content[0]["type"], "text");
    assert!(content[0]["text"].as_str().unwrap().starts_with("PDF document · 2 page(s) · "), "{content}");
    assert_eq!(content[1]["type"], "resource");
    assert_eq!(content[1]["resource"]["mimeType"], "application/pdf");
    let blob = content[1]["resource"]["blob"].as_str().unwrap();
    use base64::Engine;
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(blob).unwrap(), bytes);
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["attachments"][0]["mime"], "application/pdf");
    assert!(structured["attachments"][0].get("data").is_none(), "{structured}");
    // Asking for pages still gives text.
    let text = call(&client, json!({"path": "paper.pdf", "pages": "2"})).await;
    assert!(text_of(&text).starts_with("── page 2 of 2 ──\n│ Second page"), "{}", text_of(&text));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_exact_repeat_in_one_connection_answers_a_one_line_notice() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let first = call(&client, json!({"path": "notes.txt", "limit": 5})).await;
    assert!(text_of(&first).starts_with("1: line 1\n"), "{}", text_of(&first));
    let repeat = call(&client, json!({"path": "notes.txt", "limit": 5})).await;
    assert_eq!(repeat.is_error, Some(false));
    let stub = text_of(&repeat);
    assert!(stub.starts_with("(unchanged since your read at ") && !stub.contains('\n'), "{stub}");
    assert!(stub.contains("lines 1-5 of 30"), "{stub}");
    let structured = repeat.structured_content.expect("structuredContent");
    assert_eq!(structured["kind"], "unchanged");
    assert_eq!(structured["meta"]["saved_bytes"], text_of(&first).len());
    let again = call(&client, json!({"path": "notes.txt", "limit": 5, "reread": true})).await;
    assert_eq!(text_of(&again), text_of(&first));
    std::fs::write(dir.path().join("notes.txt"), "changed\n").unwrap();
    let changed = call(&client, json!({"path": "notes.txt", "limit": 5})).await;
    assert!(text_of(&changed).starts_with("1: changed\n"), "{}", text_of(&changed));
    client.cancel().await.unwrap();

    // Another connection is another session: its first read gets the content.
    let other = connect(dir.path()).await;
    assert!(text_of(&call(&other, json!({"path": "notes.txt"})).await).starts_with("1: changed\n"));
    other.cancel().await.unwrap();
}

#[tokio::test]
async fn repeat_stubs_can_be_turned_off_and_a_budget_is_reported() {
    let dir = workspace();
    let client = connect_with(dir.path(), &["--no-repeat-stubs", "--budget-tokens", "1000"]).await;
    budget_spent_across_calls(&client).await;
}

/// Over stdio a connection is a session whatever the protocol: a 2026-07-28 client's budget holds across its calls.
#[tokio::test]
async fn a_client_on_protocol_2026_07_28_spends_one_budget_over_its_connection() {
    use rmcp::ClientServiceExt;
    let dir = workspace();
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(dir.path()).args(["--no-repeat-stubs", "--budget-tokens", "1000"]);
    });
    let transport = TokioChildProcess::new(command).unwrap();
    let client = ().serve_with_lifecycle(transport, protocol_2026()).await.expect("discover");
    budget_spent_across_calls(&client).await;
}

/// Two equal reads, both with the content, the second reporting less budget left.
async fn budget_spent_across_calls(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(tool["inputSchema"], agent_read::parameters_schema(), "no `reread` without stubs");
    let first = text_of(&call(client, json!({"path": "notes.txt", "limit": 2})).await);
    let second = text_of(&call(client, json!({"path": "notes.txt", "limit": 2})).await);
    assert!(first.starts_with("1: line 1\n") && second.starts_with("1: line 1\n"), "{second}");
    assert!(first.ends_with(" tokens left)"), "{first}");
    let left = |text: &str| -> u64 {
        let words = text.rsplit("session budget: ").next().unwrap();
        words.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(left(&second) < left(&first), "{first}\n{second}");
}

#[test]
fn exact_token_counts_without_the_feature_are_a_usage_error() {
    if cfg!(feature = "tiktoken") {
        return;
    }
    let dir = workspace();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .args(["mcp", "--token-counting", "o200k", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`tiktoken` feature"), "{stderr}");
}

#[tokio::test]
async fn block_mode_and_read_many_work_in_a_budgeted_session() {
    let dir = workspace();
    let source = "import os\n\nclass Tool:\n    def run(self):\n        x = 1\n        return x\n\n    def stop(self):\n        pass\n";
    std::fs::write(dir.path().join("tool.py"), source).unwrap();
    let client = connect_with(dir.path(), &["--budget-tokens", "5000"]).await;
    let block = call(&client, json!({"path": "tool.py", "mode": "block", "anchor_line": 5})).await;
    let text = text_of(&block);
    assert!(text.starts_with("4:     def run(self):\n5:         x = 1\n6:         return x\n"), "{text}");
    assert!(text.contains("widen: mode=block anchor_line=3"), "{text}");
    assert!(text.ends_with(" tokens left)"), "the session's budget note closes the footer: {text}");
    assert_eq!(block.structured_content.expect("structuredContent")["meta"]["block_start_line"], 4);

    // The same block again is a repeat; read_many shows the files and counts against the same budget.
    let repeat = text_of(&call(&client, json!({"path": "tool.py", "mode": "block", "anchor_line": 5})).await);
    assert!(repeat.starts_with("(unchanged since your read at "), "{repeat}");
    let many = text_of(&call_tool(&client, "read_many", json!({"paths": ["tool.py", "notes.txt"], "limit": 2})).await);
    assert!(many.contains("==> tool.py <==") && many.contains("==> notes.txt <=="), "{many}");
    let left = |text: &str| -> u64 {
        let words = text.rsplit("session budget: ").next().unwrap();
        words.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(left(&many) < left(&text), "{many}");
    client.cancel().await.unwrap();
}

/// A glob nested past any reason used to panic inside `globset` (answered `-32603` with the panic text): it is a
/// tool error naming the limit, and the connection goes on.
#[tokio::test]
async fn a_glob_nested_past_the_bounds_is_a_tool_error_naming_the_limit() {
    let dir = workspace();
    let client = connect(dir.path()).await;
    let nested = format!("src/{}a{}", "{".repeat(250), "}".repeat(250));
    let result = call_tool(&client, "read_many", json!({ "paths": [nested] })).await;
    assert_eq!(result.is_error, Some(true));
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error_code"], "INVALID_PARAM", "{structured}");
    assert!(structured["error"].as_str().unwrap().contains("at most 8 levels are accepted"), "{structured}");
    assert_eq!(call(&client, json!({"path": "notes.txt", "limit": 1})).await.is_error, Some(false));
    client.cancel().await.unwrap();
}

/// A key named twice anywhere in a message is refused, never resolved to one of its values: in a call's arguments as
/// a tool error the model sees (`INVALID_PARAM` naming the key), anywhere else as `-32600` naming it; a notification
/// that names one twice is dropped; and serving goes on.
#[test]
fn a_key_named_twice_in_a_message_is_refused_naming_it_and_serving_goes_on() {
    let dir = workspace();
    let call = |id: u32, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#).into_bytes()
    };
    let mut lines: Vec<Vec<u8>> = vec![
        initialize_request("raw", json!({})).to_string().into(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
    ];
    lines.extend([
        call(2, r#"{"name":"read","arguments":{"path":".env","path":"notes.txt"}}"#),
        call(3, r#"{"name":"read","arguments":{"path":"notes.txt","pa\u0074h":"src/main.rs"}}"#),
        call(4, r#"{"name":"read_many","arguments":{"paths":["notes.txt"],"limit":1,"limit":30}}"#),
        call(5, r#"{"name":"read","name":"read_many","arguments":{"path":"notes.txt"}}"#),
        call(6, r#"{"name":"read","arguments":{"path":".env"},"arguments":{"path":"notes.txt"}}"#),
        br#"{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"requestId":10}}"#.to_vec(),
        [&b"\xEF\xBB\xBF"[..], &call(11, r#"{"name":"read","arguments":{"path":"src/main.rs","path":"notes.txt"}}"#)]
            .concat(),
        call(12, r#"{"name":"read","arguments":{"path":"src/main.rs"}}"#),
    ]);
    let stdout = serve_lines_from_a_file(dir.path(), &lines);
    let answers: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let answer = |id: Value| {
        answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer for {id}: {stdout}")).clone()
    };
    for (id, key) in [(2, "path"), (3, "path"), (4, "limit"), (11, "path")] {
        let result = &answer(json!(id))["result"];
        assert_eq!(result["isError"], true, "{id}: {result}");
        assert_eq!(result["structuredContent"]["error_code"], "INVALID_PARAM", "{id}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let expected = format!("INVALID_PARAM: the key `{key}` appears more than once in the arguments;");
        assert!(text.starts_with(&expected), "{id}: {text}");
        assert!(!text.contains("line 1") && !text.contains("fn main"), "nothing was read: {text}");
    }
    for (id, key, place) in
        [(json!(5), "name", "`params`"), (json!(6), "arguments", "`params`"), (Value::Null, "id", "the message")]
    {
        let error = &answer(id.clone())["error"];
        assert_eq!(error["code"], -32600, "{id}: {error}");
        let expected = format!("invalid request: the key `{key}` appears more than once in {place};");
        assert!(error["message"].as_str().unwrap().starts_with(&expected), "{id}: {error}");
    }
    let served = answer(json!(12));
    assert_eq!(served["result"]["content"][0]["text"], "1: fn main() {}\n(lines 1-1 of 1 · 13 B · end of file)");
    assert_eq!(answers.len(), 9, "the initialize, four tool errors, three protocol errors, the call: {stdout}");
}

/// A bug (a panic, made on purpose by a debug build's test switch) ends the call it hits, never the server: in a
/// read, a tool error `INTERNAL`; in the server's own handling of a call, `-32603`; neither says a word of the panic,
/// and the calls after it are served.
#[test]
fn a_panic_ends_the_call_it_hits_without_a_word_of_it_and_serving_goes_on() {
    let dir = workspace();
    std::fs::write(dir.path().join("boom.txt"), "TOKEN=secret\n").unwrap();
    let call = |id: u32, tool: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let lines: Vec<Vec<u8>> = [
        initialize_request("raw", json!({})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2, "read", json!({"path": "boom.txt"})),
        call(3, "read_many", json!({"paths": ["boom.txt", "src/main.rs"]})),
        call(4, "read", json!({"path": "notes.txt", "limit": 1})),
    ]
    .iter()
    .map(|message| message.to_string().into_bytes())
    .collect();
    let answers = |point: &str| -> Vec<Value> {
        let stdout = serve_lines_with_env(dir.path(), &lines, &[("AGENT_READ_TEST_PANIC", point)]);
        assert!(!stdout.contains("test panic"), "{stdout}");
        stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    };
    let answer = |all: &[Value], id: u32| all.iter().find(|a| a["id"] == id).cloned().expect("an answer");
    let in_a_read = answers("read:boom.txt");
    let read = &answer(&in_a_read, 2)["result"];
    assert_eq!(
        (read["isError"].as_bool(), read["structuredContent"]["error_code"].as_str()),
        (Some(true), Some("INTERNAL"))
    );
    let many = answer(&in_a_read, 3)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(
        many.contains("==> boom.txt <==\nINTERNAL: an internal error") && many.contains("1: fn main() {}"),
        "{many}"
    );
    assert!(!serde_json::to_string(&in_a_read).unwrap().contains("TOKEN"), "{in_a_read:?}");
    let fine = answer(&in_a_read, 4)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(fine.starts_with("1: line 1\n"), "{fine}");
    let in_the_server = answers("mcp:boom.txt");
    let error = &answer(&in_the_server, 2)["error"];
    assert_eq!(error["code"], -32603, "{error}");
    assert_eq!(error["message"], "internal error: a bug in agent-read ended this call; the server goes on serving");
    let fine = answer(&in_the_server, 4)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(fine.starts_with("1: line 1\n"), "{fine}");
}

/// Backpressure: a client that writes thousands of calls and reads no answer leaves the server small — it stops
/// taking requests while answers wait to be written, so the client's writes block — and once the client reads, every
/// call is answered: nothing is lost.
#[test]
fn a_client_that_reads_no_answer_is_made_to_wait_and_then_gets_every_answer() {
    use std::io::{BufRead, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    const CALLS: usize = 2000;
    const PEAK_LIMIT: u64 = 96 << 20;
    let dir = workspace();
    // Each call reads a different window of some 260 lines of 100 bytes (never a repeat, which would be answered
    // by a one-line notice): about 55 KB of answer each (the text travels twice), 110 MB in all.
    let lines: String = (1..=600).map(|i| format!("line {i:06} {}\n", "x".repeat(88))).collect();
    let offset = |call: usize| call % 300 + 1;
    std::fs::write(dir.path().join("big.log"), lines).unwrap();
    let mut child = spawn_piped(dir.path());
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let written = std::sync::Arc::new(AtomicUsize::new(0));
    let writer = std::thread::spawn({
        let written = written.clone();
        move || {
            writeln!(stdin, "{}", initialize_request("silent", json!({}))).unwrap();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
            for i in 0..CALLS {
                let arguments = json!({"path": "big.log", "offset": offset(i), "limit": 250 + i / 300});
                let call = json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                                  "params": {"name": "read", "arguments": arguments}});
                writeln!(stdin, "{call}").unwrap();
                written.store(i + 1, Ordering::SeqCst);
            }
            stdin
        }
    });
    // Until the writes block (or all went through), then until the server's memory settles.
    let settled = |sample: &dyn Fn() -> u64| {
        let (mut last, mut still) = (sample(), 0);
        for _ in 0..480 {
            std::thread::sleep(std::time::Duration::from_millis(250));
            let now = sample();
            still = if now.abs_diff(last) < (1 << 20) { still + 1 } else { 0 };
            last = now;
            if still >= 8 {
                return;
            }
        }
    };
    settled(&|| written.load(Ordering::SeqCst) as u64);
    settled(&|| crate::common::mcp::proc_status_bytes(pid, "VmRSS:"));
    let peak = crate::common::mcp::proc_status_bytes(pid, "VmHWM:");
    let taken = written.load(Ordering::SeqCst);
    // Now read: every call is answered. (Answers are scanned, not parsed: 400 MB of JSON is slow in a debug build.)
    let (answered, reading) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut ids = std::collections::HashSet::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let id = line.strip_prefix(r#"{"jsonrpc":"2.0","id":"#).and_then(|rest| rest.split(',').next());
            let id: u64 = id.and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("no id: {line:.200}"));
            let window = format!(r#""text":"{}: line "#, offset(id.saturating_sub(2) as usize));
            let read = line.contains(&window) && !line.contains(r#""isError":true"#);
            assert!(read || id == 1, "{line:.300}");
            ids.insert(id);
            if ids.len() == CALLS + 1 {
                break;
            }
        }
        let _ = answered.send(ids);
    });
    let ids = reading.recv_timeout(std::time::Duration::from_secs(300));
    let stdin = writer.join().unwrap();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let ids = ids.expect("every answer within the time");
    assert_eq!(ids, (1..=CALLS as u64 + 1).collect(), "every call answered once");
    assert!(taken < CALLS, "the server took all {CALLS} calls while none of their answers was read");
    assert!(peak < PEAK_LIMIT, "peak resident memory {} MiB with answers unread", peak >> 20);
}

/// A read of a big file that gave a lower bound of its lines leaves the count to the server: it goes on in the
/// background, and a later read (of any window) gives the exact total without counting.
#[cfg(unix)]
#[tokio::test]
async fn a_big_files_lines_are_counted_in_the_background_for_later_reads() {
    use std::io::{Seek, Write};
    let dir = workspace();
    let path = dir.path().join("big.log");
    std::fs::write(&path, "line\n".repeat(20_000)).unwrap();
    // A 96 MiB hole (a line of NUL bytes) and a last line: too far for a first window to count.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len((96 << 20) - 6).unwrap();
    file.seek(std::io::SeekFrom::End(0)).unwrap();
    file.write_all(b"\nlast\n").unwrap();
    let client = connect_with(dir.path(), &["--no-repeat-stubs"]).await;
    let first = call(&client, json!({"path": "big.log", "limit": 2})).await;
    let meta = &first.structured_content.as_ref().unwrap()["meta"];
    assert!(meta.get("total_lines").is_none() && meta["total_lines_at_least"].as_u64().is_some(), "{meta}");
    assert!(text_of(&first).contains("(lines 1-2 of at least "), "{}", text_of(&first));
    let mut exact = None;
    for _ in 0..600 {
        let again = call(&client, json!({"path": "big.log", "limit": 2})).await;
        exact = again.structured_content.as_ref().unwrap()["meta"]["total_lines"].as_u64();
        if exact.is_some() {
            assert!(text_of(&again).contains("(lines 1-2 of 20002 · 96.0 MiB · next: offset=3 limit=2)"));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(exact, Some(20_002), "the count never finished");
    client.cancel().await.unwrap();
}
