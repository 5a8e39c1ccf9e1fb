//! Read policy: which paths inside the roots may still not be read.
//!
//! Deny globs (a default set for secrets, extended or replaced by configuration), an optional allow list (when it is
//! set, only paths matching it may be read), and optionally the `.gitignore`/`.ignore` files of the workspace. Globs
//! match case-insensitively, so `.ENV` is `.env`. A pattern without `/` names a file or directory anywhere (`.env`,
//! `*.pem`); a trailing `/` is allowed for directories (`.ssh/`); a pattern with `/` is anchored at the root
//! (`config/*.key`), or at the file system root when it starts with `/` (`/proc/**/environ`). Anything beneath a
//! matching directory matches too.
//!
//! The engine checks the path as asked *and* the path the opened file really has, so a symlink `notes.txt -> .env`
//! is denied like `.env` itself.

use crate::config::ConfigError;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Globs denied unless the configuration turns the defaults off.
pub const DEFAULT_DENY: &[&str] = &[
    ".env",
    ".env.*",
    // direnv's file: `export` lines, often of tokens and database URLs.
    ".envrc",
    ".htpasswd",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.kdbx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".aws/",
    ".gnupg/",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "secrets/",
    "*secret*",
    "*password*",
    "*credential*",
    // `**`: per-thread aliases (`/proc/<pid>/task/<tid>/environ`) hold the same data.
    "/proc/**/environ",
    "/proc/**/mem",
    "/etc/shadow",
    "/etc/gshadow",
];

/// Policy settings as configured (`[policy]` in the TOML file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Whether [`DEFAULT_DENY`] applies (set false to replace it with `deny` alone).
    pub default_deny: bool,
    /// Extra deny globs.
    pub deny: Vec<String>,
    /// When not empty, only paths matching one of these globs may be read.
    pub allow: Vec<String>,
    /// Whether paths ignored by `.gitignore`/`.ignore` files inside the root are denied.
    pub respect_ignore: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig { default_deny: true, deny: Vec::new(), allow: Vec::new(), respect_ignore: false }
    }
}

/// Why a path may not be read: the rule that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The rule, as written (`.env`, `not in the allow list`, `.gitignore: target/`).
    pub rule: String,
}

/// A compiled policy. Cheap to query; build once per reader.
#[derive(Debug, Clone)]
pub struct Policy {
    deny: Rules,
    allow: Option<Rules>,
    respect_ignore: bool,
}

impl Policy {
    /// Compiles the configured globs; a malformed glob is an error naming it.
    pub fn new(config: &PolicyConfig) -> Result<Policy, ConfigError> {
        let defaults = DEFAULT_DENY.iter().map(|s| s.to_string()).filter(|_| config.default_deny);
        let deny: Vec<String> = defaults.chain(config.deny.iter().cloned()).collect();
        let allow = if config.allow.is_empty() { None } else { Some(Rules::new(&config.allow)?) };
        Ok(Policy { deny: Rules::new(&deny)?, allow, respect_ignore: config.respect_ignore })
    }

    /// Whether ignore files are consulted.
    pub fn respects_ignore_files(&self) -> bool {
        self.respect_ignore
    }

    /// Checks a path given relative to its root (`relative`) and as an absolute path (`absolute`).
    pub fn check(&self, relative: &Path, absolute: &Path) -> Result<(), Denial> {
        if let Some(rule) = self.deny.first_match(relative, absolute) {
            return Err(Denial { rule: rule.to_string() });
        }
        match &self.allow {
            Some(allow) if !relative.as_os_str().is_empty() && allow.first_match(relative, absolute).is_none() => {
                Err(Denial { rule: "not in the allow list".to_string() })
            }
            _ => Ok(()),
        }
    }

    /// Checks `relative` against the ignore files found from the root down to its parent. `read_ignore_file` reads a
    /// root-relative file (through the confined root handle) or returns `None`.
    pub fn check_ignored(
        &self,
        relative: &Path,
        is_dir: bool,
        read_ignore_file: impl Fn(&Path) -> Option<String>,
    ) -> Result<(), Denial> {
        if !self.respect_ignore {
            return Ok(());
        }
        let dirs: Vec<&Path> = relative.ancestors().skip(1).collect();
        // The deepest ignore file that says anything decides, as in git.
        for dir in dirs {
            let base = Path::new("/").join(dir);
            let mut builder = ignore::gitignore::GitignoreBuilder::new(&base);
            let mut any = false;
            for name in [".gitignore", ".ignore"] {
                if let Some(text) = read_ignore_file(&dir.join(name)) {
                    for line in text.lines() {
                        // A malformed line is skipped, as git does.
                        let _ = builder.add_line(Some(dir.join(name)), line);
                        any = true;
                    }
                }
            }
            if !any {
                continue;
            }
            let Ok(ignore) = builder.build() else { continue };
            let matched = ignore.matched_path_or_any_parents(Path::new("/").join(relative), is_dir);
            if let Some(glob) = matched.inner() {
                if matched.is_ignore() {
                    let file = glob.from().map(|p| p.display().to_string()).unwrap_or_default();
                    return Err(Denial { rule: format!("{file}: {}", glob.original()) });
                }
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A compiled list of globs: one set matched against root-relative paths, one against absolute paths.
#[derive(Debug, Clone)]
struct Rules {
    relative: GlobSet,
    relative_sources: Vec<String>,
    absolute: GlobSet,
    absolute_sources: Vec<String>,
}

impl Rules {
    fn new(patterns: &[String]) -> Result<Rules, ConfigError> {
        let mut relative = (GlobSetBuilder::new(), Vec::new());
        let mut absolute = (GlobSetBuilder::new(), Vec::new());
        for pattern in patterns {
            let trimmed = pattern.trim().trim_end_matches('/');
            if trimmed.is_empty() {
                return Err(ConfigError::new(format!("policy glob `{pattern}` is empty")));
            }
            let (target, expanded) = if trimmed.starts_with('/') {
                (&mut absolute, vec![trimmed.to_string(), format!("{trimmed}/**")])
            } else if trimmed.contains('/') {
                (&mut relative, vec![trimmed.to_string(), format!("{trimmed}/**")])
            } else {
                (&mut relative, vec![format!("**/{trimmed}"), format!("**/{trimmed}/**")])
            };
            for glob in expanded {
                let compiled = GlobBuilder::new(&glob)
                    .case_insensitive(true)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| ConfigError::new(format!("policy glob `{pattern}` is invalid: {e}")))?;
                target.0.add(compiled);
                target.1.push(pattern.clone());
            }
        }
        let build = |b: GlobSetBuilder| b.build().map_err(|e| ConfigError::new(format!("policy globs: {e}")));
        Ok(Rules {
            relative: build(relative.0)?,
            relative_sources: relative.1,
            absolute: build(absolute.0)?,
            absolute_sources: absolute.1,
        })
    }

    fn first_match(&self, relative: &Path, absolute: &Path) -> Option<&str> {
        first_in(&self.relative, &self.relative_sources, relative)
            .or_else(|| first_in(&self.absolute, &self.absolute_sources, absolute))
    }
}

/// The source of the first glob in `set` that matches `path`.
fn first_in<'s>(set: &GlobSet, sources: &'s [String], path: &Path) -> Option<&'s str> {
    // `is_match` first: most paths match nothing, and it is a cheaper search than listing every match.
    if !set.is_match(path) {
        return None;
    }
    set.matches(path).first().and_then(|i| sources.get(*i)).map(String::as_str)
}

/// Joins a root and a root-relative path into the absolute path policy globs see.
pub fn absolute_of(root: &Path, relative: &Path) -> PathBuf {
    if relative.as_os_str().is_empty() { root.to_path_buf() } else { root.join(relative) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_policy() -> Policy {
        Policy::new(&PolicyConfig::default()).unwrap()
    }

    fn denied(policy: &Policy, rel: &str) -> Option<String> {
        policy.check(Path::new(rel), &Path::new("/work").join(rel)).err().map(|d| d.rule)
    }

    #[test]
    fn default_secrets_are_denied_in_any_case_and_depth() {
        let p = default_policy();
        for path in [".env", ".ENV", "app/.env.local", ".Env.Production", "certs/server.PEM", "a/b/id_rsa.pub"] {
            assert!(denied(&p, path).is_some(), "{path}");
        }
        assert_eq!(denied(&p, "home/.ssh/config").as_deref(), Some(".ssh/"));
        assert_eq!(denied(&p, "deploy/secrets/db.yaml").as_deref(), Some("secrets/"));
        assert_eq!(denied(&p, "MY_PASSWORD.txt").as_deref(), Some("*password*"));
    }

    #[test]
    fn ordinary_names_are_allowed() {
        let p = default_policy();
        for path in ["src/main.rs", "..env", "environment.md", "README.md", "keys.txt", "docs/env.md"] {
            assert_eq!(denied(&p, path), None, "{path}");
        }
    }

    #[test]
    fn absolute_rules_match_the_absolute_path() {
        let p = default_policy();
        let rule = p.check(Path::new("1/environ"), Path::new("/proc/1/environ")).unwrap_err().rule;
        assert_eq!(rule, "/proc/**/environ");
        let thread = p.check(Path::new("x"), Path::new("/proc/7/task/9/environ")).unwrap_err().rule;
        assert_eq!(thread, "/proc/**/environ");
    }

    #[test]
    fn allow_list_restricts_and_defaults_can_be_replaced() {
        let config = PolicyConfig {
            default_deny: false,
            deny: vec!["*.log".into()],
            allow: vec!["src/".into(), "*.md".into()],
            respect_ignore: false,
        };
        let p = Policy::new(&config).unwrap();
        assert_eq!(denied(&p, ".env").as_deref(), Some("not in the allow list"));
        assert_eq!(denied(&p, "src/.env"), None);
        assert_eq!(denied(&p, "src/debug.log").as_deref(), Some("*.log"));
        assert_eq!(denied(&p, "notes/README.md"), None);
        // The root itself can always be listed.
        assert_eq!(denied(&p, ""), None);
    }

    #[test]
    fn invalid_glob_is_a_config_error_naming_it() {
        let config = PolicyConfig { deny: vec!["a[".into()], ..PolicyConfig::default() };
        assert!(Policy::new(&config).unwrap_err().to_string().contains("`a[`"));
    }

    #[test]
    fn ignore_files_deny_when_respected() {
        let config = PolicyConfig { respect_ignore: true, ..PolicyConfig::default() };
        let p = Policy::new(&config).unwrap();
        let files = |path: &Path| match path.to_str() {
            Some(".gitignore") => Some("target/\n*.tmp\n".to_string()),
            Some("sub/.ignore") => Some("!keep.tmp\n".to_string()),
            _ => None,
        };
        let rule = p.check_ignored(Path::new("target/debug/x"), false, files).unwrap_err().rule;
        assert_eq!(rule, ".gitignore: target/");
        assert!(p.check_ignored(Path::new("a.tmp"), false, files).is_err());
        assert!(p.check_ignored(Path::new("sub/keep.tmp"), false, files).is_ok());
        assert!(p.check_ignored(Path::new("src/main.rs"), false, files).is_ok());
    }
}
