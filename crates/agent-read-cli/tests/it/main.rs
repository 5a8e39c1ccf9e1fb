//! The command line's and the MCP server's tests, in one binary (one link instead of one per file): the
//! `agent-read` binary driven as a process, by real clients. Helpers shared with the library's tests are in
//! `tests/common/` (which mounts the library's own).

#[path = "../common/mod.rs"]
mod common;

mod adversarial;
mod archives;
mod block;
mod cli;
mod compressed;
mod docs;
mod documents;
mod envelope;
mod find;
mod images;
mod index;
mod mcp;
mod mcp_http;
mod mcp_http_auth;
mod mcp_http_limits;
mod mcp_roots;
mod notebooks;
mod pdf_read;
mod programs;
mod read_many;
mod windows_wine;
