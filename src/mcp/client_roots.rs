//! A client's MCP roots: when they are known ([`Settled`]), and the directories they name: `file:` URIs (RFC 8089:
//! `file:///p`, `file://localhost/p`, `file:/p`) on this machine, percent-decoded byte for byte.

use rmcp::RoleServer;
use rmcp::service::Peer;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a read waits for a client that offers roots to list them before it reads beneath `--root`.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// Whether a client's first `roots/list` has been answered (or has failed), so that reads know their roots. Until
/// then, a read from a client that offers roots waits, rather than read beneath `--root`, which the client may never
/// have meant to open.
#[derive(Clone, Debug)]
pub(super) struct Settled(Arc<watch::Sender<bool>>);

impl Settled {
    /// Roots not yet settled.
    pub fn new() -> Settled {
        Settled(Arc::new(watch::Sender::new(false)))
    }

    /// Marks the roots settled: reads waiting go on.
    pub fn settle(&self) {
        self.0.send_replace(true);
    }

    /// Returns once reads from `peer` may go on: at once when it offers no roots or they are settled; else when they
    /// are, or after [`ROOTS_WAIT`] (then with a line on standard error, and settled for every later read).
    pub async fn wait(&self, peer: &Peer<RoleServer>) {
        let offers_roots = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
        if !offers_roots || *self.0.borrow() {
            return;
        }
        let mut settled = self.0.subscribe();
        if tokio::time::timeout(ROOTS_WAIT, settled.wait_for(|settled| *settled)).await.is_err() {
            eprintln!(
                "agent-read: the client offers roots but has not listed them within {} s; reading beneath --root \
                 until it does",
                ROOTS_WAIT.as_secs()
            );
            self.settle();
        }
    }
}

/// The local directory a client root names, or why it cannot be used (a phrase for the log line).
pub(super) fn local_directory(uri: &str) -> Result<PathBuf, &'static str> {
    let path = local_path(uri)?;
    if path.is_dir() { Ok(path) } else { Err("not an existing directory") }
}

/// The absolute path a `file:` URI names on this machine: `file:///p` and `file://localhost/p` (the authority may
/// name only this host); the path's escapes decoded to the exact bytes, since Unix paths need not be UTF-8.
fn local_path(uri: &str) -> Result<PathBuf, &'static str> {
    let (scheme, rest) = uri.split_once(':').ok_or("not a file:// URI")?;
    if !scheme.eq_ignore_ascii_case("file") {
        return Err("not a file:// URI");
    }
    // RFC 8089 allows the authority to be left out: `file:/path`.
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after_slashes) => after_slashes.split_at(after_slashes.find('/').unwrap_or(after_slashes.len())),
        None if rest.starts_with('/') => ("", rest),
        None => return Err("not a file:// URI with an absolute path (file:///path)"),
    };
    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
        return Err("names another host; only local directories can be roots");
    }
    if path.is_empty() {
        return Err("has no path");
    }
    // A query or fragment is not part of the path; a `?` or `#` in a directory's name arrives escaped.
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if bytes.contains(&0) {
        return Err("its path holds a NUL byte");
    }
    Ok(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_authority_and_localhost_name_the_same_local_path() {
        assert_eq!(local_path("file:///home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("file://localhost/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("FILE://LocalHost/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("file:/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
    }

    #[test]
    fn escapes_decode_to_exact_bytes_even_when_not_utf8() {
        assert_eq!(local_path("file:///a%20b/c%23d"), Ok(PathBuf::from("/a b/c#d")));
        let latin1 = local_path("file:///caf%E9").unwrap();
        assert_eq!(latin1.into_os_string().into_vec(), b"/caf\xe9");
    }

    #[test]
    fn other_hosts_schemes_and_shapes_are_refused_with_the_reason() {
        assert_eq!(local_path("file://server/share"), Err("names another host; only local directories can be roots"));
        assert_eq!(local_path("https://example.com/x"), Err("not a file:// URI"));
        assert_eq!(local_path("/plain/path"), Err("not a file:// URI"));
        assert_eq!(local_path("file:relative"), Err("not a file:// URI with an absolute path (file:///path)"));
        assert_eq!(local_path("file://"), Err("has no path"));
        assert_eq!(local_path("file:///a%00b"), Err("its path holds a NUL byte"));
    }

    #[test]
    fn only_existing_directories_are_usable() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let uri = |p: &std::path::Path| format!("file://{}", p.display());
        assert_eq!(local_directory(&uri(dir.path())), Ok(dir.path().to_path_buf()));
        assert_eq!(local_directory(&uri(&file)), Err("not an existing directory"));
        assert_eq!(local_directory(&uri(&dir.path().join("missing"))), Err("not an existing directory"));
    }
}
