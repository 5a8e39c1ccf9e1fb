//! Static bearer tokens from `--auth-token-file`.
//!
//! The file's format: UTF-8 text, one token a line; blank lines and lines that start with `#` are skipped, and
//! spaces around a token are trimmed. A token has at least [`MIN_TOKEN_CHARS`] characters, all of them characters a
//! bearer token may have (letters, digits, `-._~+/`, `=` at the end). The file must not be readable or writable by
//! other users (on Unix: `chmod 600`), and must hold at least one token. No message ever shows a token: a bad line
//! is named by its number.

use std::path::Path;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// The shortest token accepted: 32 characters of a random hex string carry 128 bits.
pub(crate) const MIN_TOKEN_CHARS: usize = 32;

/// The largest token file read: far more than any list of tokens needs.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The tokens of one file.
pub(crate) struct StaticTokens {
    tokens: Vec<Vec<u8>>,
}

impl StaticTokens {
    /// Reads and checks the token file at `path`.
    pub(crate) fn load(path: &Path) -> Result<StaticTokens, String> {
        let shown = path.display();
        let file = std::fs::File::open(path).map_err(|e| format!("cannot read the token file {shown}: {e}"))?;
        check_not_shared(&file, path)?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut text)
            .map_err(|e| format!("the token file {shown} is not UTF-8 text: {e}"))?;
        Self::parse(&text).map_err(|why| format!("the token file {shown}: {why}"))
    }

    /// The tokens of a file's `text` (see the module's documentation for the format).
    pub(crate) fn parse(text: &str) -> Result<StaticTokens, String> {
        let mut tokens = Vec::new();
        for (number, line) in text.lines().enumerate().map(|(i, line)| (i + 1, line.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !is_token68(line) {
                return Err(format!(
                    "line {number} is not a bearer token (only letters, digits and -._~+/ are allowed, with = at \
                     the end, and no spaces); generate one with `openssl rand -hex 32`"
                ));
            }
            if line.len() < MIN_TOKEN_CHARS {
                return Err(format!(
                    "the token on line {number} has {} characters, fewer than {MIN_TOKEN_CHARS}; generate one with \
                     `openssl rand -hex 32`",
                    line.len()
                ));
            }
            tokens.push(line.as_bytes().to_vec());
        }
        if tokens.is_empty() {
            return Err("it holds no token; write one a line (generate one with `openssl rand -hex 32`)".to_string());
        }
        Ok(StaticTokens { tokens })
    }

    /// Which token `presented` is (counting from 1), if any. Every token is compared, each in time that does not
    /// depend on how much of it matches, so the time taken tells nothing about any token's content.
    pub(crate) fn position(&self, presented: &[u8]) -> Option<usize> {
        let mut found = 0u64;
        for (number, token) in (1u64..).zip(&self.tokens) {
            found.conditional_assign(&number, token.as_slice().ct_eq(presented));
        }
        usize::try_from(found).ok().filter(|&number| number != 0)
    }
}

/// Whether `text` has the syntax of a bearer token (RFC 6750's `b64token`).
fn is_token68(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    !body.is_empty() && body.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// Refuses a token file other users may read or change: anyone who can read it can act as every client.
#[cfg(unix)]
fn check_not_shared(file: &std::fs::File, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mode = file.metadata().map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?.mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "the token file {} may be read or changed by other users (mode {:o}); make it private with `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        ));
    }
    Ok(())
}

/// On other systems a file's access is governed by its ACL, which is not checked here.
#[cfg(not(unix))]
fn check_not_shared(_file: &std::fs::File, _path: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210==";

    #[test]
    fn comments_and_blank_lines_are_skipped_and_every_token_is_accepted() {
        let tokens = StaticTokens::parse(&format!("# clients\n\n  {A}  \n#{B}\n{B}\n")).unwrap();
        assert_eq!((tokens.position(A.as_bytes()), tokens.position(B.as_bytes())), (Some(1), Some(2)));
        assert_eq!(tokens.position(format!("#{B}").as_bytes()), None, "a comment is no token");
    }

    #[test]
    fn a_guess_is_refused_however_much_of_it_matches() {
        let tokens = StaticTokens::parse(A).unwrap();
        for guess in [&A[..31], &format!("{A}0"), &format!("{}X", &A[..31]), "", &A.to_uppercase()] {
            assert_eq!(tokens.position(guess.as_bytes()), None, "{guess}");
        }
    }

    #[test]
    fn short_malformed_or_missing_tokens_are_refused_without_showing_them() {
        let short = StaticTokens::parse("# c\nshort-secret-token\n").err().unwrap();
        assert!(short.contains("line 2 has 18 characters, fewer than 32"), "{short}");
        assert!(!short.contains("short-secret-token"), "{short}");
        let spaced = StaticTokens::parse(&format!("{A} {B}")).err().unwrap();
        assert!(spaced.contains("line 1 is not a bearer token") && !spaced.contains(A), "{spaced}");
        let empty = StaticTokens::parse("# only a comment\n").err().unwrap();
        assert!(empty.contains("holds no token"), "{empty}");
        let inner_equals = StaticTokens::parse(&format!("{A}=x")).err().unwrap();
        assert!(inner_equals.contains("not a bearer token"), "{inner_equals}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, A).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = StaticTokens::load(&path).err().unwrap();
        assert!(err.contains("mode 644") && err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(StaticTokens::load(&path).unwrap().position(A.as_bytes()), Some(1));
    }
}
