//! The command line's side of catching panics ([`agent_read::internal_error`] is the library's side): a panic anywhere
//! in a run (the library catches its own, so this is the command line's own code) still ends it the way its face
//! promises, and says nothing of itself but one line for the operator.
//!
//! - JSON output (`--json`, or a request on standard input): one JSON result, the `INTERNAL` error, exit 0 as for any
//!   result printed;
//! - plain text: the `INTERNAL` error on standard error, exit 1 as for any failed read;
//! - `mcp`: serving has ended; a line on standard error, exit 1.
//!
//! The panic hook prints one line on standard error for every panic, caught or not (a harness may show standard
//! error to the model): where in the code it happened, never its message, which may quote a path or a file's bytes.
//! `AGENT_READ_PANIC_REPORT=1` in the operator's environment brings back Rust's own report (the message, and a
//! backtrace with `RUST_BACKTRACE`); not `RUST_BACKTRACE` alone, which many developers' shells set for everything.

use super::{Cli, Mode, print_json};
use agent_read::ReadResult;
use std::io::Write;
use std::process::ExitCode;

/// The environment variable that brings back Rust's own panic report.
const REPORT_VAR: &str = "AGENT_READ_PANIC_REPORT";

/// Replaces the panic hook with one that prints a single line without the panic's message (see the module's doc).
pub fn install_hook() {
    let rust_report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os(REPORT_VAR).is_some_and(|value| value == "1") {
            return rust_report(info);
        }
        let place = info.location().map(|at| format!(" at {}:{}", last_components(at.file()), at.line()));
        let place = place.unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "agent-read: internal error (a bug){place}: the request it hit was answered without its details; set \
             {REPORT_VAR}=1 to see them"
        );
    }));
}

/// The last three components of a source path (`globset-0.4.19/src/glob.rs`, `src/engine/mod.rs`): where in which
/// crate, without the directories of the machine that built it.
fn last_components(file: &str) -> &str {
    let cut = file.rmatch_indices('/').nth(2).map_or(0, |(at, _)| at + 1);
    &file[cut..]
}

/// Runs `run`, ending as `cli`'s face promises should it panic.
pub fn caught(cli: &Cli, run: impl FnOnce() -> ExitCode) -> ExitCode {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(code) => code,
        Err(_) => answer_internal(cli),
    }
}

/// How the run that panicked ends (see the module's doc).
fn answer_internal(cli: &Cli) -> ExitCode {
    let json = match &cli.command {
        Some(Mode::Mcp(_)) => {
            let _ = writeln!(std::io::stderr(), "agent-read: serving stopped at an internal error (a bug)");
            return ExitCode::from(1);
        }
        Some(Mode::Many(args)) => args.answers_in_json(),
        None => cli.json || cli.path.is_none(),
    };
    let result = ReadResult::Error(agent_read::internal_error());
    if json {
        return print_json(&result);
    }
    let _ = writeln!(std::io::stderr(), "{}", result.output());
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_placed_by_crate_and_file_without_the_builders_directories() {
        let registry = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/globset-0.4.19/src/glob.rs";
        assert_eq!(last_components(registry), "globset-0.4.19/src/glob.rs");
        assert_eq!(last_components("src/engine/mod.rs"), "src/engine/mod.rs");
        assert_eq!(last_components("src/main.rs"), "src/main.rs");
    }
}
