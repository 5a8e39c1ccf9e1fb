//! The directories a client's MCP roots name: `file:` URIs (RFC 8089: `file:///p`, `file://localhost/p`, `file:/p`)
//! on this machine, percent-decoded byte for byte.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

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
