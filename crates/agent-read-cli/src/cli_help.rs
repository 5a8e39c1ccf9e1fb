//! What the command line tells a person: the examples and exit codes of `--help` (`-h` is the short form), and the
//! note `agent-read mcp` prints when a person starts it at a terminal rather than an MCP client.
//!
//! Example lines stay under 80 columns, so that help wrapped to a terminal keeps them whole.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// After the options in `-h`.
pub const AFTER_HELP: &str = "\
Without PATH, one JSON request is read from standard input and one JSON result printed.
--help shows examples and exit codes.";

/// After the options in `--help`.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  agent-read src/main.rs                      the first 2000 lines, numbered
  agent-read app.log --offset -100            the last 100 lines
  agent-read data.csv --offset 2001 --limit 500
  agent-read dump.min.js --start-byte 0 --end-byte 4096
  agent-read src/app.py --mode block --anchor-line 812
  agent-read report.pdf --pages 2-4
  agent-read shot.png --region 0,0,800,600    that part at full resolution
  agent-read docs --root ~/project            lists ~/project/docs
  echo '{\"path\": \"README.md\", \"limit\": 20}' | agent-read
  agent-read many 'src/**/*.rs' --limit 50    several files, one answer
  agent-read --schema --schema-format openai  the tool for a harness
  agent-read mcp --root ~/project             serve an MCP client

The output is what a model would see. Its last line names the next call in the
tool's JSON words (`next: offset=2001` is --offset 2001); errors, on standard
error, say it in flags.

Exit status:
  0  the read was printed; with --json or a JSON request: any result, errors too
  1  the read failed on the file: not found, outside the roots, denied, binary, past
     its end, ... (the error and its next step are on standard error)
  2  usage: an unknown flag, a flag value the read refuses (INVALID_PARAM) or flags
     that contradict each other, a missing PATH, or a bad configuration";

/// After the options of `agent-read many --help`.
pub const MANY_AFTER_LONG_HELP: &str = "\
Examples:
  agent-read many src/lib.rs src/main.rs Cargo.toml
  agent-read many 'src/**/*.rs' --limit 80 --max-files 20
  agent-read many docs '*.md' --json
  echo '{\"paths\": [\"src/*.rs\"]}' | agent-read many

Exit status:
  0  the call ran, even when some files failed (each section says why)
  1  the call failed as a whole (an internal error, say); the error is on standard
     error
  2  usage: a flag value the call refuses (INVALID_PARAM), or a bad configuration";

/// After the options of `agent-read mcp --help`.
pub const MCP_AFTER_LONG_HELP: &str = "\
Register it with an MCP client rather than running it by hand, e.g.:
  claude mcp add agent-read -- agent-read mcp --root /path/to/project
  {\"mcpServers\": {\"agent-read\": {\"command\": \"agent-read\",
    \"args\": [\"mcp\", \"--root\", \"/path/to/project\"]}}}
Over HTTP: agent-read mcp --http 127.0.0.1:8765 --root /path/to/project

Exit status:
  0  the client ended the session (end of input), or the HTTP server was stopped
     (Ctrl-C, SIGTERM)
  1  serving failed after it started
  2  it cannot be served as configured (flags, configuration, address)";

/// Says on standard error, when standard input is a terminal, that the stdio server waits for an MCP client and how
/// to register it; says nothing when a client (a pipe) is on standard input. `roots` are the roots in force (none:
/// the working directory), `config` the `--config` file given.
pub fn note_mcp_at_a_terminal(roots: &[PathBuf], config: Option<&Path>) {
    if !std::io::stdin().is_terminal() {
        return;
    }
    let mut flags: Vec<String> = if roots.is_empty() {
        std::env::current_dir().map(|dir| vec![path_flag("--root", &dir)]).unwrap_or_default()
    } else {
        roots.iter().map(|root| path_flag("--root", root)).collect()
    };
    flags.extend(config.map(|file| path_flag("--config", file)));
    let _ = writeln!(
        std::io::stderr(),
        "agent-read mcp: waiting for an MCP client on standard input (Ctrl-D or Ctrl-C ends it).\n\
         Register it with your client instead, e.g.: claude mcp add agent-read -- agent-read mcp {}",
        flags.join(" ")
    );
}

/// `FLAG PATH`, with PATH absolute (the client starts the server in another directory) and quoted for a shell when it
/// must be.
fn path_flag(flag: &str, path: &Path) -> String {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    format!("{flag} {}", crate::flag_errors::shell_word(&path.to_string_lossy()))
}
