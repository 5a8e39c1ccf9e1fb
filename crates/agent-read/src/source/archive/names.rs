//! Member names as a request can spell them. An archive's names are the file's words, not paths on this machine:
//! nothing is ever extracted, so a name can lead nowhere outside the archive; what matters is that a request path
//! names one member and no other, and that a listing cannot be misread.
//!
//! Contract: a name is readable by path when it is a plain relative path of UTF-8 names — `.` and empty names
//! dropped (`./src/a.rs` is `src/a.rs`, as tar writes it), a trailing `/` marking a directory. A name that climbs
//! (`..`), starts at a root (`/etc/passwd`, `C:\x`, `\\host\x`), holds a backslash (a separator on Windows, so two
//! spellings could name it), or holds a control character is listed (escaped) and marked, and no request reads it.

/// The path a request spells for the stored member name `raw`, without a trailing `/`; `None` when the name is not
/// readable by path (see the module's contract). The root itself (`./`) is the empty path.
pub fn clean_path(raw: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(raw).ok()?;
    if name.starts_with('/') || name.contains('\\') || name.chars().any(char::is_control) || has_drive(name) {
        return None;
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Whether `name` starts with a Windows drive (`C:`), which would make it absolute there.
fn has_drive(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The stored name as text for a listing (bytes that are not UTF-8 shown as U+FFFD), without a trailing `/`.
pub fn shown_name(raw: &[u8]) -> String {
    let name = String::from_utf8_lossy(raw);
    name.strip_suffix('/').unwrap_or(&name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_names_are_readable_and_dot_names_drop() {
        assert_eq!(clean_path(b"dir/b.log").as_deref(), Some("dir/b.log"));
        assert_eq!(clean_path(b"./src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(clean_path(b"dir/").as_deref(), Some("dir"));
        assert_eq!(clean_path(b"a//b").as_deref(), Some("a/b"));
        assert_eq!(clean_path(b"./").as_deref(), Some(""));
        assert_eq!(clean_path("données/été.txt".as_bytes()).as_deref(), Some("données/été.txt"));
    }

    #[test]
    fn names_that_climb_start_at_a_root_or_hide_characters_are_not_readable() {
        for name in [
            &b"../../etc/passwd"[..],
            b"a/../../b",
            b"/etc/passwd",
            b"C:/Windows/x",
            b"c:x",
            b"dir\\b.log",
            b"\\\\host\\share",
            b"a\nb",
            b"a\x00b",
            b"tab\there",
            b"esc\x1b[31m",
            b"n\xffame",
        ] {
            assert_eq!(clean_path(name), None, "{}", String::from_utf8_lossy(name));
        }
    }
}
