//! The MCP face, tested as a real client would use it: `rmcp`'s own client drives `agent-read mcp` as a child
//! process over stdio.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;

type Client = RunningService<RoleClient, ()>;

async fn connect(root: &Path) -> Client {
    let binary = env!("CARGO_BIN_EXE_agent-read");
    let command = tokio::process::Command::new(binary).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(root);
    });
    let transport = TokioChildProcess::new(command).expect("spawn agent-read mcp");
    ().serve(transport).await.expect("initialize")
}

async fn call(client: &Client, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await.expect("tools/call")
}

fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap();
    value[0]["text"].as_str().expect("text content").to_string()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("notes.txt"), lines).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=do-not-show\n").unwrap();
    dir
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
    assert_eq!(tools.len(), 1);
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(tool["name"], "read");
    assert_eq!(tool["description"], agent_read::tool::DESCRIPTION);
    assert_eq!(tool["inputSchema"], agent_read::tool::parameters_schema());
    assert_eq!(tool["outputSchema"], agent_read::tool::output_schema());
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["idempotentHint"], true);
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
