//! Test support: a tmpfs mounted for one test, for the paths that behave differently across file systems and mounts.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted at a directory; unmounted when dropped (lazily, so a test that failed with a file open in it still
/// leaves no mount behind).
pub(crate) struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    /// Mounts a fresh tmpfs at `at` (an existing directory); `None`, said on stderr, where this process may not mount
    /// (not root, no `CAP_SYS_ADMIN`, no `mount` program): then the caller has nothing to test.
    pub(crate) fn mount(at: &Path) -> Option<Tmpfs> {
        let mounted = Command::new("mount").args(["-t", "tmpfs", "agent-read-test"]).arg(at).output();
        match mounted {
            Ok(output) if output.status.success() => Some(Tmpfs { at: at.to_path_buf() }),
            Ok(output) => skip(at, &String::from_utf8_lossy(&output.stderr)),
            Err(error) => skip(at, &error.to_string()),
        }
    }
}

fn skip(at: &Path, why: &str) -> Option<Tmpfs> {
    eprintln!("skipped: cannot mount a tmpfs at {}: {}", at.display(), why.trim());
    None
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg("-l").arg(&self.at).status();
        if !unmounted.is_ok_and(|status| status.success()) {
            eprintln!("could not unmount the test tmpfs at {}", self.at.display());
        }
    }
}
