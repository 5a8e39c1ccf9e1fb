//! What makes a configuration unusable. A leaf: every stage that checks a setting (roots, policy globs, the audit
//! log, limits) returns it, and it imports nothing of the crate.
//!
//! Each variant carries what a program needs to act on it (the key, the path, the glob); its `Display` is the sentence
//! the command line prints, which names the problem and the fix.

use std::fmt;
use std::path::PathBuf;

/// A configuration that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file could not be read.
    Unreadable {
        /// The file named.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The TOML does not parse, or names a key or value the configuration does not have.
    Toml {
        /// The parser's words, which say where.
        message: String,
    },
    /// A top-level key written after a `[section]` header, where TOML puts it into that section.
    KeyUnderSection {
        /// The top-level key.
        key: String,
        /// The section it landed in.
        section: String,
    },
    /// `roots = []`, which names no directory to read from.
    EmptyRoots,
    /// A number outside the range its key accepts.
    OutOfRange {
        /// The dotted key (`limits.max_line_chars`, `http.max_sessions`).
        key: &'static str,
        /// The bound it crossed.
        bound: ValueBound,
    },
    /// No roots were given, and the working directory they default to cannot be determined.
    WorkingDirectory {
        /// The operating system's reason.
        reason: String,
    },
    /// A root that cannot be used.
    Root {
        /// The root as configured.
        path: PathBuf,
        /// What is wrong with it.
        problem: RootProblem,
    },
    /// A policy glob that cannot be compiled.
    Glob {
        /// The list it is in.
        list: GlobList,
        /// The glob as configured.
        pattern: String,
        /// What is wrong with it.
        problem: GlobProblem,
    },
    /// The audit log cannot be opened for appending.
    AuditLog {
        /// The file named.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The index cache folder cannot be created or written.
    IndexCache {
        /// The folder named.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// `http.insecure_no_auth` together with an authentication it would switch off.
    InsecureNoAuthWithAuthentication,
    /// `[http.oauth]` whose `authorization_servers` is empty.
    OAuthWithoutIssuer,
    /// `http.oauth.jwks_url` with several authorization servers, which it cannot all serve.
    JwksUrlWithSeveralIssuers,
    /// A `portable-resolver` test build could not refuse `openat2` to itself (its seccomp filter was not accepted).
    PortableResolver {
        /// Why.
        reason: String,
    },
}

/// The bound a number crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueBound {
    /// It must be at least this.
    AtLeast(u64),
    /// It must be at most this.
    AtMost(u64),
}

/// What is wrong with a root.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootProblem {
    /// Its `..` components climb above `/`.
    ClimbsAboveSlash,
    /// It cannot be resolved (it does not exist, or a component cannot be searched).
    Unusable {
        /// The operating system's reason.
        reason: String,
    },
    /// It is not a directory.
    NotADirectory,
    /// It is a directory that cannot be opened.
    Unopenable {
        /// The operating system's reason.
        reason: String,
    },
}

/// The policy list a glob belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GlobList {
    /// `policy.deny` (and the built-in deny globs).
    Deny,
    /// `policy.allow`.
    Allow,
}

/// What is wrong with a policy glob.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GlobProblem {
    /// Nothing is left once spaces and trailing `/` are trimmed.
    Empty,
    /// It is beyond the complexity accepted (nesting, alternatives, length).
    TooComplex {
        /// Which bound, and what is accepted.
        why: String,
    },
    /// It is not a valid glob.
    Invalid {
        /// The glob parser's reason.
        reason: String,
    },
    /// It is valid but too big to compile.
    Uncompilable {
        /// The compiler's reason.
        reason: String,
    },
}

impl GlobList {
    /// The list's name in the configuration (`deny`, `allow`).
    pub fn name(self) -> &'static str {
        match self {
            GlobList::Deny => "deny",
            GlobList::Allow => "allow",
        }
    }
}

/// A day in milliseconds: the longest timeout a key accepts.
const DAY_MS: u64 = 86_400_000;

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Unreadable { path, reason } => {
                write!(f, "cannot read config file {}: {reason}", path.display())
            }
            ConfigError::Toml { message } => write!(f, "invalid config: {message}"),
            ConfigError::KeyUnderSection { key, section } => write!(
                f,
                "invalid config: `{key}` is under [{section}], but it is a top-level key; move it above the first \
                 [section] header (TOML puts every key after a header into that section)"
            ),
            ConfigError::EmptyRoots => f.write_str(
                "invalid config: `roots = []` names no directory; list at least one, or remove the key to read from \
                 the working directory",
            ),
            ConfigError::OutOfRange { key, bound } => out_of_range(f, key, *bound),
            ConfigError::WorkingDirectory { reason } => write!(f, "cannot determine the working directory: {reason}"),
            ConfigError::Root { path, problem } => {
                let path = path.display();
                match problem {
                    RootProblem::ClimbsAboveSlash => write!(f, "root {path} climbs above /"),
                    RootProblem::Unusable { reason } => write!(f, "root {path} cannot be used: {reason}"),
                    RootProblem::NotADirectory => write!(f, "root {path} is not a directory"),
                    RootProblem::Unopenable { reason } => write!(f, "root {path} cannot be opened: {reason}"),
                }
            }
            ConfigError::Glob { list, pattern, problem } => {
                let list = list.name();
                match problem {
                    GlobProblem::Empty => write!(f, "{list} glob `{pattern}` is empty"),
                    GlobProblem::TooComplex { why } => write!(f, "{list} glob `{pattern}`: {why}"),
                    GlobProblem::Invalid { reason } => write!(f, "{list} glob `{pattern}` is invalid: {reason}"),
                    GlobProblem::Uncompilable { reason } => {
                        write!(f, "{list} glob `{pattern}` cannot be compiled: {reason}")
                    }
                }
            }
            ConfigError::AuditLog { path, reason } => {
                write!(f, "audit log {} cannot be opened: {reason}", path.display())
            }
            ConfigError::IndexCache { path, reason } => {
                write!(f, "index cache {}: {reason}; give a folder this process can write", path.display())
            }
            ConfigError::InsecureNoAuthWithAuthentication => f.write_str(
                "--insecure-no-auth (http.insecure_no_auth) contradicts the authentication configured \
                 (--auth-token-file or [http.oauth]); drop one of them",
            ),
            ConfigError::OAuthWithoutIssuer => f.write_str(
                "http.oauth.authorization_servers names no issuer; list the issuer URL of at least one authorization \
                 server",
            ),
            ConfigError::JwksUrlWithSeveralIssuers => f.write_str(
                "http.oauth.jwks_url serves one issuer, and authorization_servers names several; drop jwks_url (each \
                 issuer's key set is then found in its metadata)",
            ),
            ConfigError::PortableResolver { reason } => {
                write!(f, "the portable resolver could not be forced: {reason}")
            }
        }
    }
}

/// `key must be at least/most N`, with why the bound is what it is where that is not obvious.
fn out_of_range(f: &mut fmt::Formatter<'_>, key: &str, bound: ValueBound) -> fmt::Result {
    match bound {
        // The two line counts share one rule, and one sentence.
        ValueBound::AtLeast(1) if matches!(key, "limits.default_lines" | "limits.max_lines") => {
            f.write_str("limits.default_lines and limits.max_lines must be at least 1")
        }
        ValueBound::AtLeast(1) if key.starts_with("http.") => {
            write!(f, "{key} must be at least 1 (nothing can be served with 0)")
        }
        ValueBound::AtLeast(min) => write!(f, "{key} must be at least {min}"),
        ValueBound::AtMost(DAY_MS) if key.ends_with("_ms") => write!(f, "{key} must be at most {DAY_MS} (a day)"),
        ValueBound::AtMost(max) => write!(f, "{key} must be at most {max}"),
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_says_what_is_wrong_in_the_words_the_command_line_prints() {
        let cases = [
            (
                ConfigError::OutOfRange { key: "limits.max_lines", bound: ValueBound::AtLeast(1) },
                "limits.default_lines and limits.max_lines must be at least 1",
            ),
            (
                ConfigError::OutOfRange { key: "http.max_sessions", bound: ValueBound::AtLeast(1) },
                "http.max_sessions must be at least 1 (nothing can be served with 0)",
            ),
            (
                ConfigError::OutOfRange { key: "http.head_timeout_ms", bound: ValueBound::AtMost(DAY_MS) },
                "http.head_timeout_ms must be at most 86400000 (a day)",
            ),
            (
                ConfigError::OutOfRange { key: "limits.max_image_bytes", bound: ValueBound::AtLeast(16384) },
                "limits.max_image_bytes must be at least 16384",
            ),
            (
                ConfigError::Root { path: "/w/../..".into(), problem: RootProblem::ClimbsAboveSlash },
                "root /w/../.. climbs above /",
            ),
            (
                ConfigError::Glob { list: GlobList::Allow, pattern: " /".into(), problem: GlobProblem::Empty },
                "allow glob ` /` is empty",
            ),
        ];
        for (error, words) in cases {
            assert_eq!(error.to_string(), words);
        }
    }
}
