//! Helpers shared by the process-level tests: the library's test helpers (a workspace on disk, envelopes, PDF
//! fixtures), the binary confined to a workspace, MCP clients, raw HTTP, and the portable schema subset.
#![allow(dead_code)] // Each test uses its own share of these.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

#[path = "../../../agent-read/tests/common/mod.rs"]
mod library;

#[allow(unused_imports)] // Each test uses its own share of these.
pub use library::{Ws, envelope, pdf, write_file, zip64};

pub mod http;
pub mod mcp;
pub mod portable;

/// The `agent-read` binary, run for a [`Ws`].
pub trait Bin {
    /// The binary, confined to the root, run from the root, with a generous timeout.
    fn cmd(&self) -> Command;

    /// [`Bin::cmd`] with the process's address space limited to `bytes` (`RLIMIT_AS`, inherited by what it starts):
    /// a read that would need more memory fails to allocate.
    #[cfg(unix)]
    fn cmd_with_memory_limit(&self, bytes: u64) -> Command;
}

impl Bin for Ws {
    fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-read"));
        cmd.current_dir(&self.root).arg("--root").arg(&self.root).timeout(Duration::from_secs(60));
        cmd
    }

    #[cfg(unix)]
    fn cmd_with_memory_limit(&self, bytes: u64) -> Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
        cmd.current_dir(&self.root).arg("--root").arg(&self.root);
        let mut cmd = with_memory_limit(cmd, bytes);
        cmd.timeout(Duration::from_secs(60));
        cmd
    }
}

/// `cmd` with the address space of the process it starts limited to `bytes` (`RLIMIT_AS`, inherited by what that
/// process starts): a read that would need more memory fails to allocate.
#[cfg(unix)]
pub fn with_memory_limit(mut cmd: std::process::Command, bytes: u64) -> Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: `setrlimit` is async-signal-safe; the closure only calls it and reads errno.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Command::from_std(cmd)
}

/// The one line of JSON a JSON-mode run prints.
pub fn parse_one_json(stdout: &[u8]) -> Value {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    assert_eq!(text.matches('\n').count(), 1, "exactly one line of JSON expected: {text}");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text}"))
}

/// The `output` of a result.
pub fn output(v: &Value) -> &str {
    v["output"].as_str().unwrap_or_else(|| panic!("no output in {v}"))
}
