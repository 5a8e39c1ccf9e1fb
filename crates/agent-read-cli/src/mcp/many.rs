//! The `read_many` tool of the MCP server: several files in one call, with the same session, pool and cancellation
//! as `read`.
//!
//! One call holds one permit of the shared pool for its whole run (it reads its files one after another), and a
//! cancelled (or abandoned) request stops the file being read at its next chunk. The result is the JSON result as
//! `structuredContent` and the model text as text content; `isError` only when the request itself was rejected.

use super::ReadServer;
use super::backlog::Call;
use agent_read::SchemaFormat;
use agent_read::{ReadManyRequest, ReadManyResult};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

/// The `read_many` tool as listed: name, description, input schema and annotations from [`agent_read::many_definition`], with
/// its output schema.
pub fn many_tool() -> Result<Tool, String> {
    let mut definition = agent_read::many_definition(SchemaFormat::Mcp);
    definition["outputSchema"] = agent_read::many_output_schema();
    serde_json::from_value(definition).map_err(|e| format!("read_many tool definition: {e}"))
}

impl ReadServer {
    /// Answers a `tools/call` of `read_many`.
    pub(super) async fn call_read_many(
        &self,
        arguments: Value,
        call: Call,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = tokio::select! {
            result = self.read_many(arguments, call) => result?,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        Ok(result.into())
    }

    /// Runs one call on the blocking pool, its tool result built there too; dropping the future cancels it.
    async fn read_many(&self, arguments: Value, call: Call) -> Result<CallToolResult, ErrorData> {
        self.on_blocking_pool("read_many", call, move |session, options| {
            let result = match ReadManyRequest::from_value(&arguments) {
                Ok(request) => session.read_many(&request, options),
                Err(error) => session.refuse_many(error),
            };
            many_tool_result(&result)
        })
        .await?
    }
}

/// The tool result: the model text as text content, the JSON result as structured content.
fn many_tool_result(result: &ReadManyResult) -> Result<CallToolResult, ErrorData> {
    let structured = serde_json::to_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let content = vec![ContentBlock::text(result.output())];
    let mut call = if result.is_ok() { CallToolResult::success(content) } else { CallToolResult::error(content) };
    call.structured_content = Some(structured);
    Ok(call)
}
