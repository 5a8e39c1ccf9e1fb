//! The MCP face: `agent-read mcp` serves the `read` tool (and `read_many`, see [`many`]) with the official Rust SDK
//! (`rmcp`), on standard input and output or over streamable HTTP ([`http`]).
//!
//! Thin by design: the tool's name, description and input schema come from the library
//! ([`agent_read::tool_definition_for`]), every call goes to the same [`Reader`] as the command line, and the result
//! is the same JSON — as `structuredContent`, with the model text as text content. Reads run on tokio's blocking pool, so a slow read never stalls the protocol loop or the other
//! requests; a cancelled (or abandoned) request stops its read. Each client may run [`MAX_READS_PER_CLIENT`] reads at
//! once and every client together [`MAX_CONCURRENT_READS`], so one client's slow reads cannot take every reader from
//! the others; a read's time budget counts from its request's arrival, so a wait in line is spent from it, never added
//! to it.
//!
//! A read of a big file that gave a lower bound of its lines (its rest was too far to count within the read) leaves
//! the count to the background ([`counting`]): one file at a time on the blocking pool, so a later read has the
//! exact total.
//!
//! Each connection (over HTTP: each MCP session) reads through its own [`Session`]: a ledger of what it returned, so
//! that an exact repeat of an unchanged read answers a one-line notice (on by default), and an optional token budget
//! that every answer reports. Stateless HTTP has no connection to keep one in: there every request stands alone.
//!
//! Roots: the configured roots (`--root`, `roots` in the configuration, or the working directory) are the ceiling.
//! When the client offers MCP Roots (asked for after initialization and again on every `roots/list_changed`; on
//! protocol 2026-07-28, which has neither, asked for within a call, see [`client_roots`]), the server reads beneath
//! those of the client's roots that lie inside the configured ones, opened through their confined handles, keeping the
//! configured policy (judged from the configured roots) and limits. A client root outside them — `file:///`, a
//! parent, a sibling, a link leading out — is refused: said on standard error, in the audit log, and to the model in
//! the footer of its next answer, with the roots in force. Only `--trust-client-roots` (stdio only) lets a client
//! choose roots beyond. Reads wait for the first list (see [`client_roots::Settled`]); when no client root is left
//! (the client withdrew them all, or none could be taken), the configured roots serve. Over HTTP each session (each
//! call, on protocol 2026-07-28) has its own roots: one client's roots never widen another's.

mod backlog;
mod client_roots;
mod counting;
mod duplicates;
pub mod http;
mod http_auth;
mod http_edges;
mod http_serve;
mod http_sessions;
mod malformed;
mod many;
mod stdio;

use agent_read::Who;
use agent_read::{Cancel, Config, ReadOptions, ReadRequest, ReadResult, Reader, Session, SessionSettings};
use agent_read::{SchemaFormat, Served};
use backlog::Call;
use client_roots::InCall;
use duplicates::DuplicateArgument;
use rmcp::model::{
    self, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Semaphore;

/// Reads one client (a stdio connection, an HTTP session) may run at once; its further calls wait their turn.
const MAX_READS_PER_CLIENT: usize = 16;

/// Reads that may run at once across every client. Four clients' worth, so that one client keeping all of its own
/// slots busy with slow reads never makes another client's read wait; past that, calls wait their turn in order of
/// arrival, and no client has more than its own share waiting in the line.
const MAX_CONCURRENT_READS: usize = 4 * MAX_READS_PER_CLIENT;

/// The server of one client: one session shared by its calls, whose reader is replaced when the client's roots change.
#[derive(Clone)]
struct ReadServer {
    /// The reader of the configured roots: every client's roots narrow it (see [`client_roots::adopt`]).
    configured: Arc<Reader>,
    /// Whether clients may choose roots beyond the configured ones (`--trust-client-roots`; stdio only).
    trust_client_roots: bool,
    /// How clients reach this server, for the audit log: `stdio`, `http`, `http-stateless`.
    transport: &'static str,
    settings: SessionSettings,
    session: Arc<Session>,
    permits: Arc<Semaphore>,
    /// This client's own slots, taken before one of the shared `permits`.
    client_permits: Arc<Semaphore>,
    tool: Arc<Tool>,
    many_tool: Arc<Tool>,
    /// Whether this client's roots are known: reads wait for them (see [`client_roots::Settled`]).
    roots_settled: client_roots::Settled,
    /// Whether this client has given its roots in a call, on protocol 2026-07-28 or later (see [`client_roots`]).
    roots_given: client_roots::GivenInCall,
    /// Serve calls only within a session (HTTP with a token budget, which a session keeps): offer only the protocols
    /// that begin with `initialize` (see [`ReadServer::supported_protocol_versions`]), and refuse a call sent without
    /// one (see [`outside_a_session`]).
    sessions_required: bool,
    /// Over stdio, what the client is owed: no read starts while answers wait to be written (see [`backlog`]).
    backlog: Option<backlog::Backlog>,
    /// The lines counted in the background after reads that gave a lower bound; shared by every client.
    counting: Arc<counting::Counting>,
}

impl ReadServer {
    fn new(config: Config, settings: SessionSettings) -> Result<Self, String> {
        let trust_client_roots = config.trust_client_roots;
        let configured = Arc::new(crate::reader(config).map_err(|e| e.to_string())?);
        let session = Session::new(configured.clone(), settings)?;
        let served = if settings.repeat_read_stubs { Served::WithRepeatStubs } else { Served::OneShot };
        let mut definition = agent_read::tool_definition_for(SchemaFormat::Mcp, served);
        definition["outputSchema"] = agent_read::output_schema();
        let tool: Tool = serde_json::from_value(definition).map_err(|e| format!("tool definition: {e}"))?;
        Ok(ReadServer {
            configured,
            trust_client_roots,
            transport: "stdio",
            settings,
            session: Arc::new(session),
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_READS)),
            client_permits: Arc::new(Semaphore::new(MAX_READS_PER_CLIENT)),
            tool: Arc::new(tool),
            many_tool: Arc::new(many::many_tool()?),
            roots_settled: client_roots::Settled::new(),
            roots_given: client_roots::GivenInCall::default(),
            sessions_required: false,
            backlog: None,
            counting: Arc::default(),
        })
    }

    /// The server for a new client (an HTTP session): the configured roots, a session and slots of its own, the
    /// shared permits.
    fn for_new_client(&self) -> Result<Self, String> {
        let session = Session::new(self.configured.clone(), self.settings)?;
        let client_permits = Arc::new(Semaphore::new(MAX_READS_PER_CLIENT));
        let roots_settled = client_roots::Settled::new();
        let roots_given = client_roots::GivenInCall::default();
        let session = Arc::new(session);
        Ok(ReadServer { session, client_permits, roots_settled, roots_given, ..self.clone() })
    }

    /// Runs one read on the blocking pool, where its tool result is built too (the protocol thread, which every answer
    /// passes through, is then left only the final serialization).
    async fn read(&self, arguments: Value, call: Call) -> Result<CallToolResult, ErrorData> {
        let counting = self.counting.clone();
        self.on_blocking_pool("read", call, move |session, options| {
            let result = match ReadRequest::from_value(&arguments) {
                Ok(request) => {
                    let result = session.read(&request, options);
                    counting.after(&session.reader(), &request, &result);
                    result
                }
                Err(error) => session.refuse(error),
            };
            tool_result(&result, session)
        })
        .await?
    }

    /// Runs `work` with the session on the blocking pool, holding one of this client's slots and one of the shared
    /// permits. Its time budget counts from the call's arrival, so that any wait is spent from it.
    /// Dropping the returned future (the request was cancelled, or its client went away) cancels the work, which then
    /// stops at its next chunk instead of running to the end.
    async fn on_blocking_pool<T: Send + 'static>(
        &self,
        tool: &str,
        call: Call,
        work: impl FnOnce(&Session, &ReadOptions) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        let slots = self.take_slots(&call).await?;
        self.run_on_pool(slots, tool, call.arrived, work).await
    }

    /// Waits for one of this client's slots, then for one of the shared permits: a client with many reads waiting
    /// holds at most its share of the shared line. Over stdio, then for room for the answer (see [`backlog`]): held
    /// last, so that the reads waiting in line hold none.
    async fn take_slots(&self, call: &Call) -> Result<Slots, ErrorData> {
        let closed = |e: tokio::sync::AcquireError| ErrorData::internal_error(e.to_string(), None);
        let client_permit = self.client_permits.clone().acquire_owned().await.map_err(closed)?;
        let permit = self.permits.clone().acquire_owned().await.map_err(closed)?;
        self.room(call).await;
        Ok(Slots { _client: client_permit, _shared: permit })
    }

    /// Runs `work` on the blocking pool in the `slots` taken for it (see [`ReadServer::on_blocking_pool`]).
    async fn run_on_pool<T: Send + 'static>(
        &self,
        slots: Slots,
        tool: &str,
        arrived: Instant,
        work: impl FnOnce(&Session, &ReadOptions) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        let options = ReadOptions::cancellable(&Cancel::arrived_at(self.budget_start(arrived)));
        let session = self.session.clone();
        let _cancel_when_dropped = CancelOnDrop(options.cancel.clone());
        tokio::task::spawn_blocking(move || {
            let output = work(&session, &options);
            drop(slots);
            output
        })
        .await
        .map_err(|e| match e.is_panic() {
            // Its message is the panic's: never shown.
            true => internal_error(),
            false => {
                ErrorData::internal_error(format!("the {tool} task was stopped: the server is shutting down"), None)
            }
        })
    }
}

/// A read's place on the pool: one of its client's slots and one of the shared permits, given back when dropped.
struct Slots {
    _client: tokio::sync::OwnedSemaphorePermit,
    _shared: tokio::sync::OwnedSemaphorePermit,
}

/// Gives its signal when dropped: ties a blocking read's life to the async request waiting for it.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl ReadServer {
    /// Asks the client for its roots and reads beneath them from now on (those inside the configured roots).
    // MCP Roots is deprecated by SEP-2577 in the newest protocol, but the contract (docs/contract.md, Faces) asks for
    // it and the clients people
    // use today (Claude Code, Cursor, VS Code) still offer roots this way.
    #[allow(deprecated)]
    async fn adopt_client_roots(&self, peer: &Peer<RoleServer>, extensions: &model::Extensions) {
        let offers_roots = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
        if !offers_roots {
            return;
        }
        match peer.list_roots().await {
            Ok(listed) => {
                let uris: Vec<String> = listed.roots.into_iter().map(|root| root.uri).collect();
                let client = peer.peer_info().map(|info| info.client_info.clone());
                self.adopt_roots(&uris, extensions, client.as_ref());
            }
            // The client has gone (often right after a roots/list_changed): nothing more is read for it.
            Err(rmcp::ServiceError::TransportClosed) => {}
            Err(e) => eprintln!("agent-read: the client's roots could not be listed ({e}); keeping the roots in force"),
        }
    }

    /// Reads beneath the client's roots (`uris`) from now on, those the configured roots allow; beneath the
    /// configured roots when none is left. `extensions` and `client` say who asked, for the audit log.
    fn adopt_roots(&self, uris: &[String], extensions: &model::Extensions, client: Option<&Implementation>) {
        let session_id = session_id(extensions);
        let authenticated = authenticated(extensions);
        let who = Who {
            transport: self.transport,
            session: session_id.as_deref(),
            client: client.map(|c| c.name.as_str()),
            client_version: client.map(|c| c.version.as_str()),
            authenticated: authenticated.as_deref(),
        };
        let (reader, notice) = client_roots::adopt(&self.configured, uris, self.trust_client_roots, who);
        // The session keeps its ledger: a file it read is the same file under new roots.
        match notice {
            Some(notice) => self.session.replace_reader_and_notify(reader, &notice),
            None => self.session.replace_reader(reader),
        }
    }
}

/// Whom HTTP authentication let in for this request, if it is on.
fn authenticated(extensions: &model::Extensions) -> Option<String> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<http_auth::Authenticated>().map(|who| who.0.clone())
}

/// The MCP session id an HTTP request carried, if any.
fn session_id(extensions: &model::Extensions) -> Option<String> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    let header = parts.headers.get(rmcp::transport::common::http_header::HEADER_SESSION_ID)?;
    header.to_str().ok().map(str::to_string)
}

/// Refuses to let clients choose roots beyond the configured ones over HTTP without authentication: there, anyone
/// who can reach the port would choose. `unauthenticated_http` is true when serving HTTP with neither a token file
/// nor OAuth.
pub fn check_client_roots_trust(trust_client_roots: bool, unauthenticated_http: bool) -> Result<(), String> {
    if trust_client_roots && unauthenticated_http {
        return Err("--trust-client-roots (or `trust_client_roots` in the configuration) lets a client choose roots \
                    beyond the configured ones, which over HTTP needs authentication: add --auth-token-file FILE (or \
                    [http.oauth]), serve it on standard input and output, or drop it"
            .to_string());
    }
    Ok(())
}

/// The tool result: the model text as text content (then each attachment as an image block), the JSON result as
/// structured content, `isError` on failure.
fn tool_result(result: &ReadResult, session: &Session) -> Result<CallToolResult, ErrorData> {
    let mut structured = serde_json::to_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let mut content = vec![ContentBlock::text(result.output())];
    if let ReadResult::Attachment(attached) = result {
        let uri = file_uri(session, &attached.meta.path);
        content.extend(attached.attachments.iter().map(|a| attachment_block(a, &uri)));
        // The bytes travel once, in the image blocks: clients that show structured content to the model would
        // otherwise pour megabytes of base64 into its context.
        if let Some(list) = structured.get_mut("attachments").and_then(Value::as_array_mut) {
            list.iter_mut().filter_map(Value::as_object_mut).for_each(|a| _ = a.remove("data"));
        }
    }
    let mut call = if result.is_ok() { CallToolResult::success(content) } else { CallToolResult::error(content) };
    call.structured_content = Some(structured);
    Ok(call)
}

/// Images as image blocks; anything else (a PDF document) as an embedded resource holding its bytes, named by `uri`.
fn attachment_block(attachment: &agent_read::Attachment, uri: &str) -> ContentBlock {
    if attachment.mime.starts_with("image/") {
        return ContentBlock::image(attachment.data.clone(), attachment.mime.clone());
    }
    let blob = ResourceContents::blob(attachment.data.clone(), uri.to_string());
    ContentBlock::resource(blob.with_mime_type(attachment.mime.clone()))
}

/// Bytes a `file:` URI's path keeps as they are; every other byte is percent-encoded (`#`, `?`, spaces, non-ASCII).
const URI_PATH_KEEPS: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'/').remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// The `file://` URI of a path a result shows: its absolute path beneath its root, percent-encoded byte for byte.
fn file_uri(session: &Session, shown: &str) -> String {
    // The path was just read, so it resolves; the root-relative form is only a fallback.
    let absolute = session.reader().lexical_path(shown).unwrap_or_else(|_| Path::new("/").join(shown));
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt as _;
        absolute.as_os_str().as_bytes().to_vec()
    };
    // `C:\work\a.txt` is `file:///C:/work/a.txt`.
    #[cfg(windows)]
    let bytes = agent_read::uri_path_of_windows_path(&absolute.to_string_lossy()).into_bytes();
    let encoded = percent_encoding::percent_encode(&bytes, URI_PATH_KEEPS);
    format!("file://{encoded}")
}

impl ServerHandler for ReadServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent-read", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Two read-only tools: `read` (bounded, paged windows of one file or directory) and `read_many` \
                 (several files or globs in one answer, sharing the output budget).",
            )
    }

    /// Every protocol rmcp knows; up to 2025-11-25 only when [`ReadServer::sessions_required`]. Over HTTP, protocol
    /// 2026-07-28 serves every call on its own, so a session's budget would start afresh at each call and bound
    /// nothing: offering only the older protocols makes clients that speak both (the SDKs in their default mode) open
    /// a session with `initialize`, where the budget holds.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.sessions_required {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.adopt_client_roots(&context.peer, &context.extensions).await;
        self.roots_settled.settle();
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        // On protocol 2026-07-28 or later, the next call asks for them; before it, they are asked for now.
        self.roots_given.set(false);
        self.adopt_client_roots(&context.peer, &context.extensions).await;
    }

    /// A request rmcp parsed as no method it knows: a known method whose params do not fit, or an unknown one.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(malformed::unfit_method(&request.method, request.params.as_ref()))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.as_ref().clone(), self.many_tool.as_ref().clone()]))
    }

    malformed::not_served! {
        list_resources(Option<PaginatedRequestParams>) -> model::ListResourcesResult = "resources/list";
        list_resource_templates(Option<PaginatedRequestParams>) -> model::ListResourceTemplatesResult =
            "resources/templates/list";
        read_resource(model::ReadResourceRequestParams) -> model::ReadResourceResponse = "resources/read";
        subscribe(model::SubscribeRequestParams) -> () = "resources/subscribe";
        unsubscribe(model::UnsubscribeRequestParams) -> () = "resources/unsubscribe";
        list_prompts(Option<PaginatedRequestParams>) -> model::ListPromptsResult = "prompts/list";
        get_prompt(model::GetPromptRequestParams) -> model::GetPromptResponse = "prompts/get";
        complete(model::CompleteRequestParams) -> model::CompleteResult = "completion/complete";
    }

    /// Serves one call; a panic in it (a bug: the reader catches its own) ends this call only, as `-32603` without a
    /// word of the panic, and the server goes on (see `agent_read::internal_error`).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use futures_util::FutureExt;
        let call = std::panic::AssertUnwindSafe(self.serve_call(request, context));
        call.catch_unwind().await.unwrap_or_else(|_| Err(internal_error()))
    }
}

/// The `-32603` that stands for a caught panic.
fn internal_error() -> ErrorData {
    ErrorData::internal_error("internal error: a bug in agent-read ended this call; the server goes on serving", None)
}

impl ReadServer {
    /// Serves one `tools/call` (see [`ServerHandler::call_tool`]).
    async fn serve_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let path = request.arguments.as_ref().and_then(|arguments| arguments.get("path")).and_then(Value::as_str);
        agent_read::test_point("mcp", path.unwrap_or_default());
        // The time budget counts from here: waiting for the client's roots or for a reader is spent from it.
        let call = Call { arrived: self.arrival(), id: Some(context.id.clone()) };
        if let Some(DuplicateArgument(duplicate)) = duplicate_argument(&context) {
            let refused = self.session.refuse(duplicate.refusal("the arguments"));
            return tool_result(&refused, &self.session).map(Into::into);
        }
        if self.sessions_required && outside_a_session(&context) {
            return Err(ErrorData::invalid_request(
                "this server keeps a token budget (--budget-tokens), which needs a session, and this call has none: \
                 start one with initialize (protocol 2025-11-25 or older) and send its Mcp-Session-Id header",
                None,
            ));
        }
        match client_roots::in_call(&request, &context)? {
            InCall::Silent => self.roots_settled.wait(&context.peer).await,
            InCall::Offered if self.roots_given.known() => {}
            InCall::Offered => return Ok(client_roots::ask()),
            InCall::Given(uris) => {
                let client =
                    context.meta.client_info().or_else(|| context.peer.peer_info().map(|i| i.client_info.clone()));
                self.adopt_roots(&uris, &context.extensions, client.as_ref());
                self.roots_given.set(true);
            }
        }
        if request.name == agent_read::MANY_NAME {
            let arguments = Value::Object(request.arguments.unwrap_or_default());
            return self.call_read_many(arguments, call, context).await;
        }
        if request.name != agent_read::TOOL_NAME {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; this server's tools: `{}`, `{}`",
                    request.name,
                    agent_read::TOOL_NAME,
                    agent_read::MANY_NAME
                ),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = tokio::select! {
            result = self.read(arguments, call) => result?,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        Ok(result.into())
    }
}

/// The mark a transport put on a call whose arguments name a key twice (see [`duplicates`]): in the request's own
/// extensions over stdio, in those of its HTTP request over HTTP.
fn duplicate_argument(context: &RequestContext<RoleServer>) -> Option<DuplicateArgument> {
    let over_http = context.extensions.get::<axum::http::request::Parts>().map(|parts| &parts.extensions);
    over_http.and_then(|extensions| extensions.get::<DuplicateArgument>()).or_else(|| context.extensions.get()).cloned()
}

/// Whether an HTTP request came without a session: rmcp then serves it on its own (protocol 2026-07-28, or any
/// request carrying its protocol version in `_meta`), with a server of its own that lives for this call alone.
fn outside_a_session(context: &RequestContext<RoleServer>) -> bool {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let session_header = rmcp::transport::common::http_header::HEADER_SESSION_ID;
    parts.is_some_and(|parts| !parts.headers.contains_key(session_header))
}

/// Why serving ended in failure.
#[derive(Debug)]
pub enum ServeError {
    /// The command line or the configuration cannot be served (exit code 2).
    Usage(String),
    /// Serving began and then failed (exit code 1).
    Failed(String),
}

impl From<String> for ServeError {
    fn from(message: String) -> Self {
        ServeError::Usage(message)
    }
}

/// What went wrong before the client was served, in words (rmcp's own words name the transport's Rust types).
fn startup_failure(error: rmcp::service::ServerInitializeError) -> ServeError {
    use rmcp::service::ServerInitializeError as Init;
    let why = match error {
        Init::ConnectionClosed(_) => "the client closed the connection before initialize was answered".to_string(),
        Init::TransportError { error, context } => format!("the connection failed while {context}: {}", error.error),
        Init::ExpectedInitializeRequest(_) => "the client's first message was not initialize".to_string(),
        other => other.to_string(),
    };
    ServeError::Failed(format!("MCP start-up failed: {why}"))
}

/// Serves the tools on standard input and output until the client disconnects.
pub fn serve_stdio(config: Config, settings: SessionSettings) -> Result<(), ServeError> {
    let backlog = backlog::Backlog::default();
    let server = ReadServer { backlog: Some(backlog.clone()), ..ReadServer::new(config, settings)? };
    let counting = server.counting.clone();
    runtime()?.block_on(async move {
        // Pipes (how clients start stdio servers) go through the reactor: blocking stdio would hand every read and
        // write of the protocol to another thread.
        let (input, output) = rmcp::transport::stdio_pipes();
        let transport = stdio::LineTransport::new(input, output).with_backlog(backlog);
        let service = server.serve(transport).await.map_err(startup_failure)?;
        let stopped = service.waiting().await;
        // The runtime waits for its blocking pool when dropped: a count in progress must end first.
        counting.stop();
        stopped.map(|_| ()).map_err(|e| ServeError::Failed(format!("MCP server stopped: {e}")))
    })
}

/// The async runtime for stdio: one thread for the protocol (one client's messages arrive in order on one pipe; more
/// threads would only wake each other), and a blocking pool as large as the reads one client may run at once, and
/// one more for the background count.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(MAX_READS_PER_CLIENT + 1)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// The async runtime for HTTP: a worker per core, since many clients' connections at once would outrun one protocol
/// thread, and a blocking pool as large as the reads all clients may run at once, and one more for the background
/// count.
fn multi_thread_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_CONCURRENT_READS + 1)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}
