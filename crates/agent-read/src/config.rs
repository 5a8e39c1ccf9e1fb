//! Configuration: the roots a reader is confined to and the limits that bound every read.
//!
//! A configuration is plain data. It can be built in code, or loaded from TOML:
//!
//! ```toml
//! roots = ["/work/project", "/work/docs"]
//! audit_log = "/var/log/agent-read.jsonl"   # one JSON line per read (never content)
//! pdf_as_document = false      # true: PDFs come back whole, as a document attachment
//! index_cache = "/var/cache/agent-read"     # keep line indexes of big files on disk too (off by default)
//! trust_client_roots = false   # MCP over stdio: let the client choose roots beyond these (off by default)
//!
//! [limits]
//! default_lines = 2000
//! max_lines = 10000
//! max_line_chars = 2000
//! max_output_bytes = 51200
//! timeout_ms = 30000
//! max_image_side = 2000        # pixels; larger images are downscaled
//! max_image_bytes = 3750000    # larger image attachments are re-encoded smaller
//!
//! [policy]
//! default_deny = true          # the built-in secret globs (.env, *.pem, .ssh/, …)
//! deny = ["*.sqlite"]          # extra deny globs
//! allow = []                   # when set, only matching paths may be read
//! respect_ignore = false       # deny what .gitignore/.ignore files ignore
//!
//! [session]                    # the MCP server's per-connection sessions (the library takes SessionSettings)
//! repeat_read_stubs = true     # an exact repeat of an unchanged read answers a one-line notice (default true)
//! budget_tokens = 200000       # tokens one session may return; every answer says what is left (default none)
//! token_counting = "estimate"  # or "o200k" (exact; needs the `tiktoken` cargo feature)
//!
//! [http]                       # the MCP server over HTTP (see `HttpConfig` for every key and its default)
//! auth_token_file = "tokens"   # static bearer tokens, one a line (off by default)
//! head_timeout_ms = 10000      # a request's head must arrive within this
//! max_sessions = 1000          # MCP sessions held at once
//! ```

mod http;

pub use http::{HttpConfig, OAuthConfig};

use crate::config_error::ConfigError;
use crate::limits::Limits;
use crate::policy::PolicyConfig;
use crate::tokens::TokenCounting;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Everything a [`crate::Reader`] needs: roots, limits, policy and the optional audit log. The default has no roots,
/// which means the working directory, the default deny list, and no audit log.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Directories every read is confined to; relative request paths resolve against the first.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// Bounds on every read.
    #[serde(default)]
    pub limits: Limits,
    /// Which paths inside the roots may still not be read.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// File that receives one JSON line per read (time, root, path, outcome, bytes returned; never content), and one
    /// per change of an MCP client's roots (who, which roots were asked, taken and refused).
    #[serde(default)]
    pub audit_log: Option<PathBuf>,
    /// Return PDFs whole, as a document attachment, for models that read PDFs natively (text is still extracted when
    /// a request names `pages` or a line window).
    #[serde(default)]
    pub pdf_as_document: bool,
    /// Folder where line indexes of big files are also kept on disk, so that separate processes (one-shot command
    /// lines) reading the same big file skip the full pass. Created if missing; off by default.
    #[serde(default)]
    pub index_cache: Option<PathBuf>,
    /// How the MCP server's per-connection sessions behave (`[session]`); each field falls back to that face's default.
    #[serde(default)]
    pub session: SessionConfig,
    /// Let an MCP client choose roots beyond `roots` (`--trust-client-roots`). Off by default: a client's roots then
    /// only narrow the configured ones. The MCP server refuses it over HTTP.
    #[serde(default)]
    pub trust_client_roots: bool,
    /// How the MCP server's HTTP face authenticates and bounds its clients (`[http]`).
    #[serde(default)]
    pub http: HttpConfig,
}

/// The `[session]` table: every field optional, so that each face keeps its own defaults for what is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Answer an exact repeat of an unchanged read with a one-line notice.
    pub repeat_read_stubs: Option<bool>,
    /// Tokens one session may return in all.
    pub budget_tokens: Option<u64>,
    /// How tokens are counted.
    pub token_counting: Option<TokenCounting>,
}

impl Config {
    /// A configuration with the given roots and default limits.
    pub fn with_roots(roots: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        Config { roots: roots.into_iter().map(Into::into).collect(), ..Config::default() }
    }

    /// Parses TOML text; relative roots are taken relative to `base_dir` (the config file's directory).
    pub fn from_toml(text: &str, base_dir: &Path) -> Result<Self, ConfigError> {
        let invalid = |e: toml::de::Error| ConfigError::Toml { message: e.to_string() };
        check_layout(&toml::from_str(text).map_err(invalid)?)?;
        // Parsed again as the typed config, whose errors point at the line.
        let mut config: Config = toml::from_str(text).map_err(invalid)?;
        for path in config
            .roots
            .iter_mut()
            .chain(config.audit_log.iter_mut())
            .chain(config.index_cache.iter_mut())
            .chain(config.http.auth_token_file.iter_mut())
        {
            if path.is_relative() {
                *path = base_dir.join(&*path);
            }
        }
        Ok(config)
    }

    /// Reads and parses a TOML configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Unreadable { path: path.to_path_buf(), reason: e.to_string() })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_toml(&text, base)
    }
}

/// Keys of the top level, which TOML puts in the table above them when written after a `[section]` header.
const TOP_LEVEL_KEYS: [&str; 5] = ["roots", "audit_log", "pdf_as_document", "index_cache", "trust_client_roots"];

/// Mistakes the field-by-field parse would report without their cause: a top-level key written under a section,
/// and `roots = []`, which would otherwise mean the working directory.
fn check_layout(table: &toml::Table) -> Result<(), ConfigError> {
    for (section, value) in table {
        let Some(inner) = value.as_table() else { continue };
        if let Some(key) = TOP_LEVEL_KEYS.iter().find(|key| inner.contains_key(**key)) {
            return Err(ConfigError::KeyUnderSection { key: key.to_string(), section: section.clone() });
        }
    }
    if table.get("roots").and_then(toml::Value::as_array).is_some_and(Vec::is_empty) {
        return Err(ConfigError::EmptyRoots);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_with_roots_and_partial_limits() {
        let text = "roots = [\"sub\", \"/abs\"]\n[limits]\nmax_lines = 50\n";
        let config = Config::from_toml(text, Path::new("/base")).unwrap();
        assert_eq!(config.roots, vec![PathBuf::from("/base/sub"), PathBuf::from("/abs")]);
        assert_eq!(config.limits.max_lines, 50);
        assert_eq!(config.limits.default_lines, 2000);
    }

    #[test]
    fn toml_policy_timeout_and_audit() {
        let text = "audit_log = \"audit.jsonl\"\n[limits]\ntimeout_ms = 5\n[policy]\ndeny = [\"*.db\"]\nrespect_ignore = true\n";
        let config = Config::from_toml(text, Path::new("/base")).unwrap();
        assert_eq!(config.audit_log, Some(PathBuf::from("/base/audit.jsonl")));
        assert_eq!(config.limits.timeout_ms, 5);
        assert_eq!(config.policy.deny, vec!["*.db".to_string()]);
        assert!(config.policy.default_deny && config.policy.respect_ignore);
    }

    #[test]
    fn toml_session_table_keeps_unset_fields_to_the_face() {
        let config =
            Config::from_toml("[session]\nbudget_tokens = 5000\ntoken_counting = \"o200k\"\n", Path::new("/")).unwrap();
        let settings = config.session.settings(true);
        assert!(settings.repeat_read_stubs, "unset: the face's default");
        assert_eq!(settings.budget_tokens, Some(5000));
        assert_eq!(settings.token_counting, TokenCounting::O200k);
        let off = Config::from_toml("[session]\nrepeat_read_stubs = false\n", Path::new("/")).unwrap();
        assert!(!off.session.settings(true).repeat_read_stubs);
        let unknown = Config::from_toml("[session]\nstubs = true\n", Path::new("/")).unwrap_err().to_string();
        assert!(unknown.contains("stubs"), "{unknown}");
    }

    #[test]
    fn toml_unknown_field_is_rejected_by_name() {
        let err = Config::from_toml("rootz = []", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("rootz"), "{err}");
    }

    #[test]
    fn a_top_level_key_under_a_section_is_named_with_where_it_belongs() {
        let err = Config::from_toml("[policy]\ndeny = []\naudit_log = \"a.jsonl\"\n", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("`audit_log` is under [policy], but it is a top-level key"), "{err}");
    }

    #[test]
    fn empty_roots_are_refused_rather_than_taken_for_the_working_directory() {
        let err = Config::from_toml("roots = []\n", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("`roots = []` names no directory"), "{err}");
        assert!(Config::from_toml("", Path::new("/")).unwrap().roots.is_empty(), "no key: the face's default");
    }

    /// The first TOML block after `marker` in `text` (a README section, or this module's documentation).
    fn toml_block_after(text: &str, marker: &str, line_prefix: &str) -> String {
        let section = &text[text.find(marker).expect("marker")..];
        let lines = section.lines().map(|l| l.strip_prefix(line_prefix).unwrap_or(l).trim_start_matches(' '));
        let block: Vec<&str> = lines.skip_while(|l| *l != "```toml").skip(1).take_while(|l| *l != "```").collect();
        assert!(!block.is_empty(), "no toml block after {marker}");
        block.join("\n")
    }

    #[test]
    fn the_documented_examples_are_valid_configs() {
        let readme = toml_block_after(include_str!("../README.md"), "### Configuration", "");
        let config = Config::from_toml(&readme, Path::new("/base")).unwrap();
        assert_eq!(config.audit_log, Some(PathBuf::from("/base/audit.jsonl")));
        let module = toml_block_after(include_str!("config.rs"), "A configuration is plain data", "//!");
        let config = Config::from_toml(&module, Path::new("/base")).unwrap();
        assert_eq!(config.index_cache, Some(PathBuf::from("/var/cache/agent-read")));
        assert_eq!(config.session.budget_tokens, Some(200_000));
        assert_eq!(config.http.auth_token_file, Some(PathBuf::from("/base/tokens")));
    }
}
