//! Helpers shared by the process-level test files: a workspace on disk and the binary confined to it.
#![allow(dead_code)] // Each test file uses its own share of these.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod envelope;
pub mod http;
pub mod mcp;
pub mod pdf;
pub mod portable;

/// A temporary workspace: `<tmp>/work` is the root reads are confined to; `<tmp>` is outside it.
pub struct Ws {
    _dir: tempfile::TempDir,
    /// `<tmp>` (canonical), outside the root.
    pub outer: PathBuf,
    /// `<tmp>/work` (canonical), the root.
    pub root: PathBuf,
}

impl Ws {
    /// A fresh workspace with an empty root.
    pub fn new() -> Ws {
        let dir = tempfile::tempdir().expect("tempdir");
        let outer = dir.path().canonicalize().expect("canonical tempdir");
        let root = outer.join("work");
        std::fs::create_dir(&root).expect("create root");
        Ws { _dir: dir, outer, root }
    }

    /// Writes a file beneath the root (creating parent directories).
    pub fn file(&self, rel: &str, bytes: impl AsRef<[u8]>) -> &Ws {
        write_file(&self.root.join(rel), bytes.as_ref());
        self
    }

    /// Writes a file beneath `<tmp>`, outside the root; returns its absolute path.
    pub fn outside_file(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.outer.join(rel);
        write_file(&path, bytes.as_ref());
        path
    }

    /// Creates a directory beneath the root.
    pub fn dir(&self, rel: &str) -> &Ws {
        std::fs::create_dir_all(self.root.join(rel)).expect("create dir");
        self
    }

    /// The binary, confined to the root, run from the root, with a generous timeout.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("agent-read").expect("binary built");
        cmd.current_dir(&self.root).arg("--root").arg(&self.root).timeout(Duration::from_secs(60));
        cmd
    }

    /// [`Ws::cmd`] with the process's address space limited to `bytes` (`RLIMIT_AS`, inherited by what it starts):
    /// a read that would need more memory fails to allocate.
    #[cfg(unix)]
    pub fn cmd_with_memory_limit(&self, bytes: u64) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
        cmd.current_dir(&self.root).arg("--root").arg(&self.root);
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
        let mut cmd = Command::from_std(cmd);
        cmd.timeout(Duration::from_secs(60));
        cmd
    }
}

/// Writes `bytes` to `path`, creating its parent directories.
pub fn write_file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, bytes).expect("write file");
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
