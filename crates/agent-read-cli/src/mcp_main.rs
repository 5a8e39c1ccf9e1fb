//! `agent-read-mcp`: the MCP server that `agent-read mcp` runs in its place, with the same command line (see the
//! crate's documentation). Not meant to be run by hand.

fn main() -> std::process::ExitCode {
    agent_read_cli::mcp_main()
}
