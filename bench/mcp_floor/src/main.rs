//! The protocol floor of a `read` over MCP: an rmcp server that does no reading while it serves.
//!
//! At start-up it reads every file under FILES_DIR once with agent-read's library and keeps each answer as the MCP
//! tool result agent-read's server would send: the JSON result as `structuredContent`, the model text as text
//! content. Then it serves `read` the way `agent-read mcp` does, answering each call with a copy of the kept result:
//! on stdio (rmcp, the same version and pipe transport, one protocol thread), or with `--http ADDR` over streamable
//! HTTP (rmcp's service under axum, a worker per core, `TCP_NODELAY`; sessions, or none with `--stateless`). No file
//! is opened, nothing is handed to another thread.
//!
//! So beside agent-read in `bench/mcp_latency.sh`, it shows what the same answers cost with the read itself taken
//! away: the SDK, JSON in both directions, the pipes or sockets and the wake-ups. A server that sends these answers
//! through rmcp, configured as agent-read configures it, cannot be faster than this one.
//!
//! Usage: mcp-floor FILES_DIR [--http ADDR [--stateless]]

use agent_read::tool::{self, SchemaFormat, Served};
use agent_read::{Config, ReadOptions, ReadRequest, Reader};
use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every file's answer, by the path a client asks for (relative to FILES_DIR, or absolute).
#[derive(Clone)]
struct Floor {
    tool: Tool,
    answers: Arc<HashMap<String, CallToolResult>>,
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let path = request.arguments.as_ref().and_then(|a| a.get("path")).and_then(Value::as_str).unwrap_or("");
        match self.answers.get(path) {
            Some(answer) => Ok(answer.clone().into()),
            None => Err(ErrorData::invalid_params(format!("no answer kept for {path:?}"), None)),
        }
    }
}

/// The tool result agent-read's MCP server builds for a read (see `tool_result` in `src/mcp/mod.rs`; text files only).
fn answer(reader: &Reader, path: &str) -> Result<CallToolResult, String> {
    let result = reader.read(&ReadRequest::new(path), &ReadOptions::default());
    if !result.is_ok() {
        return Err(format!("{path}: {}", result.output()));
    }
    let structured = serde_json::to_value(&result).map_err(|e| e.to_string())?;
    let mut call = CallToolResult::success(vec![ContentBlock::text(result.output())]);
    call.structured_content = Some(structured);
    Ok(call)
}

/// Every file under `dir` (directories are walked), as paths relative to it.
fn files_under(dir: &Path, relative: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir.join(relative))? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            files_under(dir, &path, out)?;
        } else {
            out.push(path.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: mcp-floor FILES_DIR [--http ADDR [--stateless]]";
    let dir = PathBuf::from(args.first().ok_or(usage)?);
    let http = match args.get(1..).unwrap_or_default() {
        [] => None,
        [flag, addr] if flag == "--http" => Some((addr.clone(), false)),
        [flag, addr, stateless] if flag == "--http" && stateless == "--stateless" => Some((addr.clone(), true)),
        _ => return Err(usage.to_string()),
    };
    let floor = Floor { tool: tool_definition()?, answers: Arc::new(answers_for(&dir)?) };
    match http {
        None => serve_stdio(floor),
        Some((addr, stateless)) => serve_http(floor, &addr, stateless),
    }
}

fn tool_definition() -> Result<Tool, String> {
    serde_json::from_value(tool::definition_for(SchemaFormat::Mcp, Served::OneShot)).map_err(|e| e.to_string())
}

/// Every file's answer under `dir`, kept under the path as given and as an absolute path, the two ways clients name a
/// file.
fn answers_for(dir: &Path) -> Result<HashMap<String, CallToolResult>, String> {
    let reader =
        Reader::new(Config { roots: vec![dir.to_path_buf()], ..Config::default() }).map_err(|e| e.to_string())?;
    let mut paths = Vec::new();
    files_under(dir, Path::new(""), &mut paths).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut answers = HashMap::new();
    for path in paths {
        let kept = answer(&reader, &path)?;
        answers.insert(dir.join(&path).to_string_lossy().into_owned(), kept.clone());
        answers.insert(path, kept);
    }
    Ok(answers)
}

/// One protocol thread on the standard streams' pipes, as `agent-read mcp` serves stdio.
fn serve_stdio(floor: Floor) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let service = floor.serve(rmcp::transport::stdio_pipes()).await.map_err(|e| e.to_string())?;
        service.waiting().await.map(|_| ()).map_err(|e| e.to_string())
    })
}

/// rmcp's streamable HTTP service at `/mcp`, configured as `agent-read mcp --http` configures it.
fn serve_http(floor: Floor, addr: &str, stateless: bool) -> Result<(), String> {
    let address: SocketAddr = addr.parse().map_err(|e| format!("--http {addr}: {e}"))?;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(stateless)
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"].map(String::from));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| format!("{address}: {e}"))?;
        let service: StreamableHttpService<Floor, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(floor.clone()), Arc::new(LocalSessionManager::default()), config);
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router.into_make_service()).await.map_err(|e| e.to_string())
    })
}

fn main() {
    if let Err(e) = run() {
        eprintln!("mcp-floor: {e}");
        std::process::exit(1);
    }
}
