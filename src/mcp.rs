//! The MCP face: `agent-read mcp` serves the `read` tool over stdio with the official Rust SDK (`rmcp`).
//!
//! Thin by design: the tool's name, description and input schema come from [`agent_read::tool`], every call goes to
//! the same [`Reader`] as the command line, and the result is the same JSON — as `structuredContent`, with the model
//! text as text content. Reads run on tokio's blocking pool behind a semaphore, so a slow read never stalls the
//! protocol loop or the other requests.

use agent_read::tool::{self, SchemaFormat};
use agent_read::{ReadResult, Reader};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Reads that may run at once; further calls wait their turn.
const MAX_CONCURRENT_READS: usize = 16;

/// The server: one reader shared by every call.
#[derive(Clone)]
struct ReadServer {
    reader: Arc<Reader>,
    permits: Arc<Semaphore>,
    tool: Arc<Tool>,
}

impl ReadServer {
    fn new(reader: Reader) -> Result<Self, String> {
        let mut definition = tool::definition(SchemaFormat::Mcp);
        definition["outputSchema"] = tool::output_schema();
        let tool: Tool = serde_json::from_value(definition).map_err(|e| format!("tool definition: {e}"))?;
        Ok(ReadServer {
            reader: Arc::new(reader),
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_READS)),
            tool: Arc::new(tool),
        })
    }

    async fn read(&self, arguments: Value) -> Result<ReadResult, ErrorData> {
        let permit =
            self.permits.clone().acquire_owned().await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            reader.read_json(&arguments)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("the read task failed: {e}"), None))
    }
}

/// The tool result: the model text as text content, the JSON result as structured content, `isError` on failure.
fn tool_result(result: &ReadResult) -> Result<CallToolResult, ErrorData> {
    let structured = serde_json::to_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let content = vec![ContentBlock::text(result.output())];
    let mut call = if result.is_ok() { CallToolResult::success(content) } else { CallToolResult::error(content) };
    call.structured_content = Some(structured);
    Ok(call)
}

impl ServerHandler for ReadServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent-read", env!("CARGO_PKG_VERSION")))
            .with_instructions("One read-only tool, `read`: bounded, paged windows of files and directories.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.as_ref().clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != tool::NAME {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`; this server has one tool: `{}`", request.name, tool::NAME),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = tokio::select! {
            result = self.read(arguments) => result?,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        Ok(tool_result(&result)?.into())
    }
}

/// Serves the `read` tool on standard input and output until the client disconnects.
pub fn serve_stdio(reader: Reader) -> Result<(), String> {
    let server = ReadServer::new(reader)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_CONCURRENT_READS)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let service = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP start-up failed: {e}"))?;
        service.waiting().await.map(|_| ()).map_err(|e| format!("MCP server stopped: {e}"))
    })
}
