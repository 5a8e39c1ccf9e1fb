//! `agent-read`: the command line (see the crate's documentation).

fn main() -> std::process::ExitCode {
    agent_read_cli::read_main()
}
