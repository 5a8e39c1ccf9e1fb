//! Request paths on Windows: checked against Windows' own rules ([`crate::platform::windows_paths`]) before they
//! are resolved, and spelled the usual way (`C:\work\a.txt`), so that every other step sees one spelling.

use super::Roots;
use crate::error::{ErrorCode, ReadError};
use crate::platform::windows_paths::{Refusal, Start, parse};

impl Roots {
    /// `path` checked and spelled the usual way; a path at the current drive's root (`\work`) is taken on the first
    /// root's drive.
    #[cfg_attr(not(windows), allow(dead_code))]
    pub(super) fn windows_spelling(&self, path: &str) -> Result<String, ReadError> {
        let parsed = parse(path).map_err(|refusal| refused(path, &refusal))?;
        if parsed.start != Start::DriveRoot {
            return Ok(parsed.native());
        }
        let first = self.roots.first().map(|root| root.real.to_string_lossy().into_owned()).unwrap_or_default();
        match parse(&first).map(|root| root.start) {
            Ok(Start::Prefix(drive)) => Ok(format!("{drive}{}", parsed.native())),
            _ => Ok(parsed.native()),
        }
    }
}

/// The error a refused path gets: a device or a stream is no regular file; the rest are malformed requests.
pub(super) fn refused(path: &str, refusal: &Refusal) -> ReadError {
    let code = match refusal {
        Refusal::Device(_) | Refusal::Stream(_) => ErrorCode::NotRegular,
        _ => ErrorCode::InvalidParam,
    };
    let hint = match code {
        ErrorCode::NotRegular => "only regular files and directories are read; name the file itself",
        _ => "spell the path as Windows names the file: C:\\dir\\file or dir\\file",
    };
    ReadError::new(code, format!("{path}: {}", refusal.describe())).with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(path: &str) -> Option<ErrorCode> {
        parse(path).err().map(|refusal| refused(path, &refusal).code)
    }

    #[test]
    fn devices_and_streams_are_not_regular_and_the_rest_invalid() {
        for path in ["NUL", r"logs\con.txt", "COM1.tar.gz", r"\\.\COM1", "notes.txt:hidden", "file::$DATA"] {
            assert_eq!(code(path), Some(ErrorCode::NotRegular), "{path}");
        }
        for path in [".env.", "a ", "C:work", "a|b", r"\\server"] {
            assert_eq!(code(path), Some(ErrorCode::InvalidParam), "{path}");
        }
        assert_eq!(code(r"src\main.rs"), None);
        let error = refused("a.txt:y", &parse("a.txt:y").unwrap_err());
        assert!(error.message.contains("alternate data stream"), "{}", error.message);
    }

    #[test]
    fn a_path_at_the_drive_root_takes_the_first_roots_drive() {
        // Spelled as on Windows, whatever this system is: the first root's drive, or none.
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(roots.windows_spelling("a/b").unwrap(), r"a\b");
        assert_eq!(roots.windows_spelling(r"\\?\D:\x/y").unwrap(), r"D:\x\y");
        let at_root = roots.windows_spelling(r"\work\a").unwrap();
        assert!(at_root.ends_with(r"\work\a"), "{at_root}");
        assert_eq!(roots.windows_spelling("NUL").unwrap_err().code, ErrorCode::NotRegular);
    }
}
