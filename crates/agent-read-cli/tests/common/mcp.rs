//! Helpers shared by the MCP test files (stdio and HTTP): calls, their text, a small workspace.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, Service};
use serde_json::Value;
use std::path::Path;

/// Calls the `read` tool with `arguments` (a JSON object); a protocol failure fails the test.
pub async fn call<C: Service<RoleClient>>(client: &RunningService<RoleClient, C>, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await.expect("tools/call")
}

/// Calls the tool `name` with `arguments` (a JSON object); a protocol failure fails the test.
pub async fn call_tool<C: Service<RoleClient>>(
    client: &RunningService<RoleClient, C>,
    name: &'static str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new(name).with_arguments(arguments)).await.expect("tools/call")
}

/// The text of a result's first content block.
pub fn text_of(result: &CallToolResult) -> String {
    let value = serde_json::to_value(&result.content).unwrap();
    value[0]["text"].as_str().expect("text content").to_string()
}

/// Asks for resources, prompts and a completion, which the server does not offer: each is `-32601` naming the
/// method and the methods it does serve, and the connection goes on.
pub async fn assert_resources_and_prompts_are_not_served<C: Service<RoleClient>>(
    client: &RunningService<RoleClient, C>,
) {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, ReadResourceRequestParams, Reference};
    let completion = CompleteRequestParams::new(Reference::for_prompt("summary"), ArgumentInfo::new("topic", "x"));
    let answers = [
        ("resources/list", client.list_resources(None).await.err()),
        ("resources/templates/list", client.list_resource_templates(None).await.err()),
        ("resources/read", client.read_resource(ReadResourceRequestParams::new("file:///etc/hosts")).await.err()),
        ("prompts/list", client.list_prompts(None).await.err()),
        ("completion/complete", client.complete(completion).await.err()),
    ];
    for (method, error) in answers {
        let Some(rmcp::ServiceError::McpError(error)) = error else { panic!("{method}: {error:?}") };
        assert_eq!(error.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND, "{method}");
        let expected = format!("method `{method}` not found; this server serves tools: tools/list, tools/call");
        assert_eq!(error.message, expected);
    }
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

/// A client that offers MCP Roots: the roots it lists can be changed, and it tells the server when they do.
#[derive(Clone)]
pub struct RootsClient {
    roots: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// How long it takes to answer `roots/list`.
    delay: std::time::Duration,
    /// How many times the server has asked for the roots.
    pub asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl RootsClient {
    /// A client offering `roots` (file:// URIs), changeable through the shared list.
    pub fn new(roots: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> Self {
        RootsClient { roots, delay: std::time::Duration::ZERO, asked: Default::default() }
    }

    /// The same client, slow to answer `roots/list` by `delay`.
    pub fn answering_after(self, delay: std::time::Duration) -> Self {
        RootsClient { delay, ..self }
    }

    /// A client offering one root, for good.
    pub fn fixed(uri: String) -> Self {
        RootsClient::new(std::sync::Arc::new(std::sync::Mutex::new(vec![uri])))
    }
}

#[allow(deprecated)] // MCP Roots: deprecated by SEP-2577, still what today's clients offer (see src/mcp/mod.rs).
impl rmcp::ClientHandler for RootsClient {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let capabilities =
            rmcp::model::ClientCapabilities::builder().enable_roots().enable_roots_list_changed().build();
        rmcp::model::ClientInfo::new(capabilities, rmcp::model::Implementation::new("roots-test", "1"))
            .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let uris = self.roots.lock().unwrap().clone();
        Ok(rmcp::model::ListRootsResult::new(uris.into_iter().map(rmcp::model::Root::new).collect()))
    }
}

/// How a client on protocol 2026-07-28 starts: `server/discover`, then every request carries its own version and
/// capabilities (no `initialize`).
pub fn protocol_2026() -> rmcp::service::ClientLifecycleMode {
    rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    }
}

/// A field of `/proc/PID/status` in bytes (`VmHWM`: the peak resident set; `VmRSS`: the current one): what the tests
/// of a server's memory read of the server.
#[cfg(target_os = "linux")]
pub fn proc_status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap_or_else(|| panic!("no {field}: {status}"));
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// The binary serving MCP over stdio beneath `root`, with its client, and its process id (to look at its memory or its
/// children while it serves).
pub async fn serve(root: &Path) -> (RunningService<RoleClient, ()>, u32) {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-read")).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(root);
    });
    let server = TokioChildProcess::new(command).expect("spawn");
    let pid = server.id().expect("running");
    (().serve(server).await.expect("initialize"), pid)
}

/// The text of the answers to reads with each of `calls` (arguments), all sent at once: in the order they came back.
pub async fn reads_at_once(client: &RunningService<RoleClient, ()>, calls: Vec<Value>) -> Vec<String> {
    let mut reads = tokio::task::JoinSet::new();
    for arguments in calls {
        let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
        let peer = client.peer().clone();
        reads.spawn(async move { peer.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await });
    }
    let mut texts = Vec::new();
    while let Some(answer) = reads.join_next().await {
        texts.push(text_of(&answer.expect("task").expect("answered")));
    }
    texts
}
