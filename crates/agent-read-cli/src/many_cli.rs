//! `agent-read many`: the `read_many` tool on the command line.
//!
//! - `agent-read many PATH_OR_GLOB... [--limit N] [--max-files N] [--json]` prints what the model would see (or the
//!   JSON result); exit 0 whenever the call ran, failed files included (their sections say why), 1 when the call
//!   failed as a whole (an internal error, say), 2 when it was refused for its flags alone (`INVALID_PARAM`); the
//!   error goes to standard error, worded in flags.
//! - `agent-read many` with a JSON request (`{"paths": [...]}`) on standard input prints one JSON result.
//! - `agent-read many --schema [--schema-format openai|anthropic|mcp]` prints the tool definition.
//!
//! The global options (`--root`, `--config`, `--deny`, …) apply as for every mode.

use super::{
    Cli, build_config, print_flag_error, print_json, print_stdout, refused_for_its_flags, stdin_request, usage_error,
};
use agent_read::SchemaFormat;
use agent_read::{ReadManyRequest, ReadManyResult, ReadOptions};
use std::process::ExitCode;

/// Arguments of `agent-read many`.
#[derive(Debug, clap::Args)]
pub struct ManyArgs {
    /// Files, directories or globs (quote globs so the shell leaves them alone: 'src/**/*.rs'). Without any, one JSON
    /// request ({"paths": [...]}) is read from standard input and one JSON result printed.
    #[arg(value_name = "PATH_OR_GLOB")]
    paths: Vec<String>,
    /// Lines (or directory entries) per file.
    #[arg(long, allow_negative_numbers = true)]
    limit: Option<i64>,
    /// Files read at most, glob matches included (default 50, 200 with --find, at most 200).
    #[arg(long, allow_negative_numbers = true)]
    max_files: Option<i64>,
    /// Search every file for this regular expression: only matching lines (with --context lines around) are shown.
    #[arg(long, value_name = "REGEX", allow_hyphen_values = true)]
    find: Option<String>,
    /// With --find: lines shown before and after each match (0 to 20, default 2).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    context: Option<i64>,
    /// Print the JSON result instead of the model text.
    #[arg(long)]
    json: bool,
    /// Print the `read_many` tool definition (name, description, JSON Schema of the request) and exit.
    #[arg(long)]
    schema: bool,
    /// Shape of the tool definition printed by --schema.
    #[arg(long, value_name = "FORMAT", value_parser = ["plain", "openai", "anthropic", "mcp"])]
    schema_format: Option<String>,
}

impl ManyArgs {
    /// Whether the answer is JSON: asked with `--json`, or for a request on standard input.
    pub fn answers_in_json(&self) -> bool {
        self.json || self.paths.is_empty()
    }
}

/// Runs `agent-read many`.
pub fn run(cli: &Cli, args: &ManyArgs) -> ExitCode {
    let format = args.schema_format.as_deref().or(cli.schema_format.as_deref());
    if args.schema || cli.schema || format.is_some() {
        let format = format.and_then(SchemaFormat::parse).unwrap_or(SchemaFormat::Plain);
        let text = serde_json::to_string_pretty(&agent_read::many_definition(format)).unwrap_or_default();
        return print_stdout(&text, ExitCode::SUCCESS);
    }
    if cli.path.is_some() || cli.has_request_flags() || cli.json {
        return usage_error(
            "give `many` its own arguments after it: agent-read many PATH_OR_GLOB... [--limit N] [--json]",
        );
    }
    let reader = match build_config(cli).and_then(|config| crate::reader(config).map_err(|e| e.to_string())) {
        Ok(reader) => reader,
        Err(message) => return usage_error(&message),
    };
    if args.paths.is_empty() {
        if args.limit.is_some() || args.max_files.is_some() || args.find.is_some() || args.context.is_some() {
            return usage_error("--limit, --max-files, --find and --context need at least one PATH_OR_GLOB");
        }
        let Some(request) = stdin_request() else {
            return usage_error("give PATH_OR_GLOB..., or pipe one JSON request to standard input (see --help)");
        };
        let result = match request {
            Ok(text) => match ReadManyRequest::from_json(&text) {
                Ok(request) => reader.read_many(&request, &ReadOptions::default()),
                Err(error) => reader.refuse_many(error),
            },
            Err(error) => ReadManyResult::Error(error),
        };
        return print_json(&result);
    }
    let request = ReadManyRequest {
        paths: args.paths.clone(),
        limit: args.limit,
        find: args.find.clone(),
        context: args.context,
        max_files: args.max_files,
    };
    agent_read::test_point("cli", request.paths.first().map_or("", String::as_str));
    let result = reader.read_many(&request, &ReadOptions::default());
    if args.json {
        return print_json(&result);
    }
    match result {
        ReadManyResult::Error(error) => {
            let usage = refused_for_its_flags(&error, request.check(reader.limits()).is_err());
            let paths: Vec<&str> = request.paths.iter().map(String::as_str).collect();
            print_flag_error(&error, ExitCode::from(if usage { 2 } else { 1 }), &paths)
        }
        ReadManyResult::Many(many) => print_stdout(&many.output, ExitCode::SUCCESS),
    }
}
