//! Helpers shared by the tests of both crates (the faces' tests mount this directory too): a workspace on disk, what
//! an envelope must show, PDF fixtures.
#![allow(dead_code)] // Each test uses its own share of these.

use std::path::{Path, PathBuf};

pub mod envelope;
pub mod pdf;
pub mod zip64;

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
}

/// Writes `bytes` to `path`, creating its parent directories.
pub fn write_file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, bytes).expect("write file");
}
