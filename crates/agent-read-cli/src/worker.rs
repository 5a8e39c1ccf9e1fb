//! `agent-read-worker`: the program `agent-read` starts, one process per PDF extraction or document conversion, to
//! parse a file it has opened (handed over as standard input). It is confined before it reads a byte; see the
//! library's `worker_main`. Not meant to be run by hand.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os().skip(1).map(|arg| arg.to_string_lossy().into_owned()).collect();
    ExitCode::from(u8::try_from(agent_read::worker_main(&args)).unwrap_or(1))
}
