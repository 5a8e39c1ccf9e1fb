//! The `agent-read` command line and MCP server: a thin face over the library's [`Reader`]. Its programs are thin
//! too: `agent-read` runs [`read_main`], and `agent-read mcp` runs `agent-read-mcp` ([`mcp_main`]) in its place (on
//! Windows, which cannot replace a process, it serves in its own), so that the program started for every one-shot
//! read links no server, runtime or HTTP stack; neither links a parser of PDFs or documents, which run in
//! `agent-read-worker`.
//!
//! - `agent-read PATH [--offset N] [--limit N] [--start-byte N --end-byte N] [--encoding E] [--mode block
//!   --anchor-line N] [--region X0,Y0,X1,Y1] [--json]` prints what the model would see (or the JSON result with
//!   `--json`).
//! - `agent-read` with a JSON request on standard input prints one JSON result on standard output.
//! - `agent-read --schema [--schema-format openai|anthropic|mcp]` prints the tool definition.
//! - `agent-read many PATH_OR_GLOB... [--limit N] [--max-files N] [--json]` reads several files in one answer (the
//!   `read_many` tool; without paths, one JSON request on standard input); `agent-read many --schema` prints that tool.
//! - `agent-read mcp [--root DIR]... [--trust-client-roots]` serves the tool as an MCP server on standard input and
//!   output; `agent-read mcp --http ADDR [--allow-host HOST]... [--stateless] [--auth-token-file FILE]
//!   [--insecure-no-auth]` serves it over streamable HTTP.
//!
//! Exit status: 0 when a result was printed (for JSON output, errors included), 1 when a plain-text read failed on
//! the file (the error went to standard error), 2 for a usage or configuration error — in plain text, a read refused
//! for its flags alone (`INVALID_PARAM`, or flags that contradict each other whatever the file) is one. `mcp`: 0 when
//! the client ends the session, 1 when serving failed after start, 2 when it cannot be served as configured. A bug (a
//! panic) ends a read as an `INTERNAL` error under the same rules (see `cli_panics`).
//!
//! People read the help (`-h` short, `--help` with examples and exit codes: `cli_help`) and the errors of plain-text
//! reads, which speak in flags (`flag_errors`); programs and models read JSON and the MCP face, which keep the
//! tool's own words.

mod cli_help;
mod cli_panics;
mod flag_errors;
mod many_cli;
mod mcp;

use agent_read::ReadMode;
use agent_read::SchemaFormat;
use agent_read::TokenCounting;
use agent_read::{Config, ErrorCode, ReadError, ReadOptions, ReadRequest, ReadResult, Reader, SessionSettings};
use clap::Parser;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest JSON request accepted on standard input.
const MAX_REQUEST_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Parser)]
#[command(
    name = "agent-read",
    version,
    about = "Read files and directories as an AI agent should: bounded windows, explicit envelopes, honest content.",
    max_term_width = 100,
    after_help = cli_help::AFTER_HELP,
    after_long_help = cli_help::AFTER_LONG_HELP
)]
struct Cli {
    /// Another mode than reading one path.
    #[command(subcommand)]
    command: Option<Mode>,
    /// File or directory to read (relative to the first root, or absolute inside a root).
    path: Option<String>,
    /// 1-based first line; negative counts from the end (-100: the last 100 lines).
    #[arg(long, allow_negative_numbers = true, help_heading = "Window")]
    offset: Option<i64>,
    /// Lines (or directory entries) to return.
    #[arg(long, allow_negative_numbers = true, help_heading = "Window")]
    limit: Option<i64>,
    /// Byte-range mode: first byte (0-based).
    #[arg(long, allow_negative_numbers = true, help_heading = "Window")]
    start_byte: Option<i64>,
    /// Byte-range mode: end byte (exclusive).
    #[arg(long, allow_negative_numbers = true, help_heading = "Window")]
    end_byte: Option<i64>,
    /// PDF pages, workbook sheets (XLSX, XLS, ODS), PPTX slides or EPUB chapters to read: "3", "1-5", "2,4-6", "8-".
    #[arg(long, help_heading = "Window")]
    pages: Option<String>,
    /// Show the lines matching this regular expression (Rust regex syntax, as ripgrep), with --context lines around.
    #[arg(long, value_name = "REGEX", allow_hyphen_values = true, help_heading = "Window")]
    find: Option<String>,
    /// With --find: lines shown before and after each match (0 to 20, default 2).
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Window")]
    context: Option<i64>,
    /// Force a text encoding (WHATWG label: utf-8, utf-16le, windows-1252, shift_jis, ...).
    #[arg(long, help_heading = "Window")]
    encoding: Option<String>,
    /// "lines" (default) or "block": the indentation block around --anchor-line.
    #[arg(long, value_name = "MODE", help_heading = "Window")]
    mode: Option<String>,
    /// Block mode: the 1-based line whose enclosing block to show.
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Window")]
    anchor_line: Option<i64>,
    /// Block mode: how far out to go (1, the default: the nearest definition around the line; 2: the one around it).
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Window")]
    levels: Option<i64>,
    /// Images: the part to return at full resolution, left,top,right,bottom in the image's pixels (e.g. 0,0,800,600).
    #[arg(long, value_name = "X0,Y0,X1,Y1", allow_hyphen_values = true, help_heading = "Window")]
    region: Option<String>,
    /// Print the JSON result instead of the model text.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// A directory reads are confined to (repeatable; default: the working directory).
    #[arg(long = "root", value_name = "DIR", global = true, help_heading = "Workspace")]
    roots: Vec<PathBuf>,
    /// TOML configuration file (roots, limits, policy, audit log, MCP sessions).
    #[arg(long, value_name = "FILE", global = true, help_heading = "Workspace")]
    config: Option<PathBuf>,
    /// Deny paths matching this glob, on top of the configured ones (repeatable).
    #[arg(long = "deny", value_name = "GLOB", global = true, help_heading = "Workspace")]
    deny: Vec<String>,
    /// Allow only paths matching this glob (repeatable; replaces the configured allow list).
    #[arg(long = "allow", value_name = "GLOB", global = true, help_heading = "Workspace")]
    allow: Vec<String>,
    /// Drop the built-in deny list of secrets (.env, *.pem, .ssh/, ...).
    #[arg(long, global = true, help_heading = "Workspace")]
    no_default_deny: bool,
    /// Deny what .gitignore/.ignore files inside the root ignore.
    #[arg(long, global = true, help_heading = "Workspace")]
    respect_ignore: bool,
    /// Append one JSON line per read (time, root, path, outcome, bytes; never content), and per change of an MCP
    /// client's roots, to FILE.
    #[arg(long, value_name = "FILE", global = true, help_heading = "Workspace")]
    audit_log: Option<PathBuf>,
    /// Return PDFs whole, as a document attachment (for models that read PDFs natively).
    #[arg(long, global = true, help_heading = "Workspace")]
    pdf_as_document: bool,
    /// Keep line indexes of big files (1 MiB and up) in DIR, so later runs on the same file skip the full pass.
    #[arg(long, value_name = "DIR", global = true, help_heading = "Workspace")]
    index_cache: Option<PathBuf>,
    /// Time budget of one read in milliseconds (default 30000).
    #[arg(long, value_name = "MS", global = true, help_heading = "Workspace")]
    timeout_ms: Option<u64>,
    /// Print the tool definition (name, description, JSON Schema of the request) and exit.
    #[arg(long, help_heading = "Output")]
    schema: bool,
    /// Shape of the tool definition printed by --schema.
    #[arg(long, value_name = "FORMAT", value_parser = ["plain", "openai", "anthropic", "mcp"], help_heading = "Output")]
    schema_format: Option<String>,
}

/// Modes other than reading one path.
#[derive(Debug, clap::Subcommand)]
enum Mode {
    /// Serve the `read` and `read_many` tools to an MCP client (stdio; --http for HTTP)
    ///
    /// Serve the `read` and `read_many` tools as an MCP server, on standard input and output unless --http is given.
    /// A file named `mcp` is `./mcp`.
    #[command(after_long_help = cli_help::MCP_AFTER_LONG_HELP)]
    Mcp(McpArgs),
    /// Read several files, directories or globs in one answer (the `read_many` tool)
    ///
    /// Read several files, directories or globs in one answer, sharing the output cap (the `read_many` tool). A file
    /// named `many` is `./many`.
    #[command(after_long_help = cli_help::MANY_AFTER_LONG_HELP)]
    Many(many_cli::ManyArgs),
}

/// How to serve MCP.
#[derive(Debug, clap::Args)]
struct McpArgs {
    /// Serve over streamable HTTP at http://ADDR/mcp. ADDR is IP:PORT, localhost:PORT, or a port on 127.0.0.1.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Accept requests whose Host header is HOST, besides loopback names (repeatable; `*` accepts any host).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,
    /// HTTP without sessions: every request stands alone (JSON responses), so instances can run behind any load
    /// balancer; client roots are not asked for.
    #[arg(long, requires = "http")]
    stateless: bool,
    /// Require a bearer token from every HTTP client: one of the tokens in FILE, one a line (`#` comments; at least
    /// 32 characters each; the file private to its owner). Also `[http] auth_token_file`.
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_token_file: Option<PathBuf>,
    /// Serve HTTP beyond loopback, or for any Host, without authentication (only behind something that
    /// authenticates clients). Also `[http] insecure_no_auth`.
    #[arg(long, requires = "http")]
    insecure_no_auth: bool,
    /// Send the content again on an exact repeat of an unchanged read, instead of a one-line "unchanged" notice.
    #[arg(long)]
    no_repeat_stubs: bool,
    /// Tokens one connection's session may return in all; every answer then says what is left, and default windows
    /// shrink as it runs out.
    #[arg(long, value_name = "N")]
    budget_tokens: Option<u64>,
    /// How the budget counts tokens: `estimate` (bytes; the default) or `o200k` (exact; needs the `tiktoken` feature).
    #[arg(long, value_name = "HOW", value_parser = ["estimate", "o200k"])]
    token_counting: Option<String>,
    /// Let the client's MCP roots reach beyond --root (stdio only). Without it, a client's roots only narrow --root,
    /// and one outside is refused.
    #[arg(long)]
    trust_client_roots: bool,
}

impl McpArgs {
    /// The session settings: the configuration's `[session]` table, then these flags; repeat stubs on by default.
    fn session_settings(&self, config: &Config) -> Result<SessionSettings, String> {
        let mut settings = config.session.settings(true);
        settings.repeat_read_stubs &= !self.no_repeat_stubs;
        if let Some(budget) = self.budget_tokens {
            settings.budget_tokens = Some(budget);
        }
        if let Some(how) = &self.token_counting {
            settings.token_counting = TokenCounting::parse(how)?;
        }
        settings.token_counting.available()?;
        Ok(settings)
    }

    /// The HTTP flags, over the configuration's `[http]` table.
    fn apply_http_flags(&self, config: &mut Config) {
        if let Some(file) = &self.auth_token_file {
            config.http.auth_token_file = Some(file.clone());
        }
        config.http.insecure_no_auth |= self.insecure_no_auth;
    }
}

impl Cli {
    fn has_request_flags(&self) -> bool {
        self.offset.is_some()
            || self.limit.is_some()
            || self.start_byte.is_some()
            || self.end_byte.is_some()
            || self.encoding.is_some()
            || self.pages.is_some()
            || self.mode.is_some()
            || self.anchor_line.is_some()
            || self.levels.is_some()
            || self.find.is_some()
            || self.context.is_some()
            || self.region.is_some()
    }
}

/// `agent-read`'s main: reads what the command line asks for.
pub fn read_main() -> ExitCode {
    let cli = Cli::parse();
    cli_panics::install_hook();
    cli_panics::caught(&cli, || run(&cli))
}

/// `agent-read-mcp`'s main: serves MCP as `agent-read mcp` was asked to, with the same command line (the program is
/// started by `agent-read mcp`, in its place).
pub fn mcp_main() -> ExitCode {
    let cli = Cli::parse();
    cli_panics::install_hook();
    cli_panics::caught(&cli, || match &cli.command {
        Some(Mode::Mcp(args)) => serve_mcp(&cli, args),
        _ => usage_error("agent-read-mcp serves MCP for `agent-read mcp`: run `agent-read mcp [--root DIR]...`"),
    })
}

/// Runs what `cli` asks for.
fn run(cli: &Cli) -> ExitCode {
    if let Some(Mode::Many(args)) = &cli.command {
        return many_cli::run(cli, args);
    }
    if cli.schema || cli.schema_format.is_some() {
        let format = cli.schema_format.as_deref().and_then(SchemaFormat::parse).unwrap_or(SchemaFormat::Plain);
        let text = serde_json::to_string_pretty(&agent_read::tool_definition(format)).unwrap_or_default();
        return print_stdout(&text, ExitCode::SUCCESS);
    }
    if let Some(Mode::Mcp(args)) = &cli.command {
        #[cfg(unix)]
        {
            let _ = args;
            return mcp_in_place();
        }
        #[cfg(not(unix))]
        return serve_mcp(cli, args);
    }
    let config = match build_config(cli) {
        Ok(config) => config,
        Err(message) => return usage_error(&message),
    };
    let reader = match reader(config) {
        Ok(reader) => reader,
        Err(e) => return usage_error(&e.to_string()),
    };
    match cli.path.clone() {
        Some(path) => read_path(&reader, cli, path),
        None if cli.has_request_flags() => usage_error(
            "--offset, --limit, --start-byte, --end-byte, --pages, --encoding, --mode, --anchor-line, --levels, --find, --context and --region need a PATH",
        ),
        None => read_stdin(&reader),
    }
}

fn build_config(cli: &Cli) -> Result<Config, String> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if !cli.roots.is_empty() {
        config.roots = cli.roots.clone();
    }
    config.policy.deny.extend(cli.deny.iter().cloned());
    if !cli.allow.is_empty() {
        config.policy.allow = cli.allow.clone();
    }
    config.policy.default_deny &= !cli.no_default_deny;
    config.policy.respect_ignore |= cli.respect_ignore;
    config.pdf_as_document |= cli.pdf_as_document;
    if let Some(path) = &cli.audit_log {
        config.audit_log = Some(path.clone());
    }
    if let Some(dir) = &cli.index_cache {
        config.index_cache = Some(dir.clone());
    }
    if let Some(ms) = cli.timeout_ms {
        config.limits.timeout_ms = ms;
    }
    Ok(config)
}

/// A reader whose PDFs and documents are parsed by `agent-read-worker`, the program built and installed beside this
/// one: a hostile file can crash, hang or exhaust only the worker, and the parsers are not linked into this program
/// (which keeps its start, paid at every one-shot read, close to a bare process's).
pub(crate) fn reader(config: Config) -> Result<Reader, agent_read::ConfigError> {
    Reader::with_worker(config, sibling("agent-read-worker"))
}

/// Serves MCP as `args` say, in this process.
fn serve_mcp(cli: &Cli, args: &McpArgs) -> ExitCode {
    let mut config = match build_config(cli) {
        Ok(config) => config,
        Err(message) => return usage_error(&message),
    };
    args.apply_http_flags(&mut config);
    config.trust_client_roots |= args.trust_client_roots;
    let settings = match args.session_settings(&config) {
        Ok(settings) => settings,
        Err(message) => return usage_error(&message),
    };
    if let Err(message) =
        mcp::check_client_roots_trust(config.trust_client_roots, args.http.is_some() && !config.http.authenticates())
    {
        return usage_error(&message);
    }
    let served = match &args.http {
        None => {
            cli_help::note_mcp_at_a_terminal(&config.roots, cli.config.as_deref());
            mcp::serve_stdio(config, settings)
        }
        Some(listen) => {
            let options = mcp::http::HttpOptions {
                listen: listen.clone(),
                allowed_hosts: args.allowed_hosts.clone(),
                stateless: args.stateless,
            };
            mcp::http::serve_http(config, settings, &options)
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(mcp::ServeError::Usage(message)) => usage_error(&message),
        Err(mcp::ServeError::Failed(message)) => {
            let _ = writeln!(std::io::stderr(), "agent-read: {message}");
            ExitCode::from(1)
        }
    }
}

/// Runs `agent-read-mcp`, beside this program, in this process's place with this command line: the MCP server and
/// everything it needs (an async runtime, HTTP, TLS) stay out of the program every one-shot read starts. Returns only
/// when it could not be started.
#[cfg(unix)]
fn mcp_in_place() -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    let program = sibling("agent-read-mcp");
    let error = std::process::Command::new(&program).args(std::env::args_os().skip(1)).exec();
    let shown = program.display();
    let message = if error.kind() == std::io::ErrorKind::NotFound {
        format!(
            "the MCP server's program {shown} is missing (it is installed beside agent-read: reinstall with `cargo \
             install --locked agent-read-cli`, or build it with `cargo build --release --bin agent-read-mcp`)"
        )
    } else {
        format!("the MCP server's program {shown} could not be started: {error}")
    };
    let _ = writeln!(std::io::stderr(), "agent-read: {message}");
    ExitCode::from(1)
}

/// The program `name` of this installation: beside this program's file, a symbolic link to it followed (macOS names
/// the link it was started by); by name on the `PATH` when this program's own path is unknown.
fn sibling(name: &str) -> PathBuf {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    match std::env::current_exe() {
        Ok(this) => this.canonicalize().unwrap_or(this).with_file_name(name),
        Err(_) => name.into(),
    }
}

fn read_path(reader: &Reader, cli: &Cli, path: String) -> ExitCode {
    // The mode goes through the same parser as JSON requests, so an unknown one gets the same instructive error.
    let parsed = cli.mode.as_deref().map(ReadMode::parse).transpose().and_then(|mode| {
        let region = cli.region.as_deref().map(ReadRequest::parse_region).transpose()?;
        Ok((mode, region))
    });
    let (mode, region) = match parsed {
        Ok(parsed) => parsed,
        Err(error) if cli.json => return print_json(&ReadResult::Error(error)),
        Err(error) => return print_flag_error(&error, ExitCode::from(2), &[&path]),
    };
    let request = ReadRequest {
        path,
        offset: cli.offset,
        limit: cli.limit,
        start_byte: cli.start_byte,
        end_byte: cli.end_byte,
        pages: cli.pages.clone(),
        find: cli.find.clone(),
        context: cli.context,
        encoding: cli.encoding.clone(),
        mode,
        anchor_line: cli.anchor_line,
        levels: cli.levels,
        region,
        // One read per process: there is no session to repeat a read in.
        reread: false,
    };
    agent_read::test_point("cli", &request.path);
    let result = reader.read(&request, &ReadOptions::default());
    if cli.json {
        return print_json(&result);
    }
    match result {
        ReadResult::Error(error) => {
            let usage = refused_for_its_flags(&error, request.window(reader.limits()).is_err());
            print_flag_error(&error, ExitCode::from(if usage { 2 } else { 1 }), &[&request.path])
        }
        ok => print_stdout(&ok.output(), ExitCode::SUCCESS),
    }
}

/// Whether a plain-text read was refused for its flags alone, a usage error: a value the read refuses
/// (`INVALID_PARAM`), or flags that contradict each other whatever the file (`window_invalid`, such as an end byte
/// before the start byte). A read that fails on the file (past its end, not found, ...) is not one.
pub(crate) fn refused_for_its_flags(error: &ReadError, window_invalid: bool) -> bool {
    error.code == ErrorCode::InvalidParam || window_invalid
}

/// Prints an error of a request made of flags on standard error, worded in flags (see `flag_errors`).
pub(crate) fn print_flag_error(error: &ReadError, code: ExitCode, paths: &[&str]) -> ExitCode {
    let shown = ReadResult::Error(flag_errors::for_flags(error, paths));
    let _ = writeln!(std::io::stderr(), "{}", shown.output());
    code
}

fn read_stdin(reader: &Reader) -> ExitCode {
    let Some(request) = stdin_request() else {
        return usage_error("give a PATH, or pipe one JSON request to standard input (see --help)");
    };
    let result = match request {
        Ok(text) => match ReadRequest::from_json(&text) {
            Ok(request) => reader.read(&request, &ReadOptions::default()),
            Err(error) => reader.refuse(error),
        },
        Err(error) => ReadResult::Error(error),
    };
    print_json(&result)
}

/// The JSON request text on standard input (at most [`MAX_REQUEST_BYTES`], UTF-8), or `None` when standard input is
/// a terminal (nobody is piping a request).
fn stdin_request() -> Option<Result<String, agent_read::ReadError>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut text = String::new();
    Some(match stdin.lock().take(MAX_REQUEST_BYTES + 1).read_to_string(&mut text) {
        Err(e) => Err(agent_read::ReadError::invalid_param(format!("standard input is not a UTF-8 JSON request: {e}"))),
        Ok(_) if text.len() as u64 > MAX_REQUEST_BYTES => {
            Err(agent_read::ReadError::invalid_param(format!("the request is larger than {MAX_REQUEST_BYTES} bytes")))
        }
        Ok(_) => Ok(text),
    })
}

fn print_json(result: &impl serde::Serialize) -> ExitCode {
    match serde_json::to_string(result) {
        Ok(text) => print_stdout(&text, ExitCode::SUCCESS),
        Err(e) => usage_error(&format!("cannot serialize the result: {e}")),
    }
}

/// Prints one line; a closed pipe ends the program quietly instead of panicking.
fn print_stdout(text: &str, code: ExitCode) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => code,
        Err(_) => ExitCode::from(1),
    }
}

fn usage_error(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "agent-read: {message}");
    ExitCode::from(2)
}
