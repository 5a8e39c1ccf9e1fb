//! Helpers shared by the MCP test files (stdio and HTTP): calls, their text, a small workspace.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, Service};
use serde_json::Value;

/// Calls the `read` tool with `arguments` (a JSON object); a protocol failure fails the test.
pub async fn call<C: Service<RoleClient>>(client: &RunningService<RoleClient, C>, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await.expect("tools/call")
}

/// The text of a result's first content block.
pub fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap();
    value[0]["text"].as_str().expect("text content").to_string()
}

/// A root with `notes.txt` (30 lines), `src/main.rs` and a `.env` the policy denies.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("notes.txt"), lines).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=do-not-show\n").unwrap();
    dir
}
