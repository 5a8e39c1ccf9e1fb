//! Read policy: which paths inside the roots may still not be read.
//!
//! Deny globs (a default set for secrets, extended or replaced by configuration), an optional allow list (when it is
//! set, only paths matching it may be read), and optionally the `.gitignore`/`.ignore` files of the workspace (see
//! [`ignore`]). Globs match case-insensitively, so `.ENV` is `.env`, and anything beneath a matching directory matches
//! too. A deny glob matches at any depth, whether or not it holds a `/` (`.env`, `*.pem`, `.kube/config`); a trailing
//! `/` is allowed for directories (`.ssh/`); one that starts with `/` is anchored at the file system root
//! (`/proc/**/environ`). A copy an editor or a backup leaves of a denied name is denied too (`.env~`, `#.env#`,
//! `server.key.bak`, `.env.swp`: see [`rules::copies_of`]). An allow glob without `/` matches at any depth; one with
//! `/` is anchored at the root (`docs/*.md`).
//!
//! Paths are judged relative to the *outermost configured root* that holds them, not to the root a request happened to
//! resolve against: with roots `ws/secrets` and `ws`, `ws/secrets/token.txt` is `secrets/token.txt` either way, and a
//! client root narrowed to `ws/.ssh` still sees `.ssh/` rules match (see [`crate::resolve::Roots::judged`]).
//!
//! The engine checks the path as asked *and* the path the opened file really has, so a symlink `notes.txt -> .env`
//! is denied like `.env` itself.
//!
//! Every glob from configuration is bounded in complexity before it is compiled ([`bounds`]).

pub mod bounds;
pub mod ignore;
pub mod rules;
mod wildcard;

use crate::config_error::ConfigError;
use ignore::{IgnoreFile, IgnoreFiles};
use rules::{Kind, Rules};
use serde::Deserialize;
use std::path::Path;

/// Globs denied unless the configuration turns the defaults off, each with why. Names match at any depth, and copies
/// of a matching name (`.env~`, `server.key.bak`, `.id_rsa.swp`) are denied with it. SECURITY.md lists them too.
pub const DEFAULT_DENY: &[&str] = &[
    // dotenv files: API keys, database URLs, tokens.
    ".env",
    // dotenv per environment (`.env.local`, `.env.production`); templates (`.env.example`) too, to fail safe.
    ".env.*",
    // dotenv files named for their environment or service (`production.env`, `app.env`), as docker compose's
    // `env_file` and systemd's `EnvironmentFile` name them.
    "*.env",
    // direnv's file: `export` lines, often of tokens and database URLs.
    ".envrc",
    // Apache basic-auth password hashes.
    ".htpasswd",
    // PEM: private keys and certificates with their keys.
    "*.pem",
    // Private keys by their usual extension (`server.key`).
    "*.key",
    // PKCS#12 key stores (private key and certificate chain).
    "*.p12",
    "*.pfx",
    // PuTTY private keys.
    "*.ppk",
    // KeePass password databases.
    "*.kdbx",
    // Java key stores.
    "*.keystore",
    "*.jks",
    // SSH private keys (and their `.pub` halves, harmless but named alike).
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    // SSH: keys, known hosts, agent configuration.
    ".ssh/",
    // AWS CLI credentials and configuration.
    ".aws/",
    // Azure CLI tokens.
    ".azure/",
    // Google Cloud SDK credentials and tokens.
    ".config/gcloud/",
    // GnuPG private keyrings.
    ".gnupg/",
    // Kubernetes cluster credentials (client keys, tokens).
    ".kube/config",
    // Docker registry auths: the current file and the legacy one.
    ".docker/config.json",
    ".dockercfg",
    // GitHub CLI OAuth token; `hub`'s token.
    ".config/gh/hosts.yml",
    ".config/hub",
    // HashiCorp Vault token.
    ".vault-token",
    // s3cmd and boto (gsutil) access keys.
    ".s3cfg",
    ".boto",
    // Terraform state: every resource's attributes, secrets included, in plain text.
    "*.tfstate",
    // Machine passwords for FTP, curl, git over HTTP (`_netrc` on Windows).
    ".netrc",
    "_netrc",
    // PostgreSQL and MySQL client passwords.
    ".pgpass",
    ".my.cnf",
    // npm and PyPI publish tokens.
    ".npmrc",
    ".pypirc",
    // git's stored HTTP credentials.
    ".git-credentials",
    // Shell and REPL histories: commands typed with passwords and tokens in them.
    ".*_history",
    // Secret stores by name: `secrets/`, `client_secret.json`, `passwords.txt`, `credentials.json`.
    "secrets/",
    "*secret*",
    "*password*",
    "*credential*",
    // Another process's environment and memory. `**`: per-thread aliases (`/proc/<pid>/task/<tid>/environ`).
    "/proc/**/environ",
    "/proc/**/mem",
    // Password hashes, and the copies `shadow`'s tools keep.
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
];

/// Policy settings as configured (`[policy]` in the TOML file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Whether the built-in deny list of secrets applies (set false to replace it with `deny` alone).
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
    /// Compiles the configured globs; a malformed or too complex glob is an error naming it.
    pub fn new(config: &PolicyConfig) -> Result<Policy, ConfigError> {
        let defaults = DEFAULT_DENY.iter().map(|s| s.to_string()).filter(|_| config.default_deny);
        let deny: Vec<String> = defaults.chain(config.deny.iter().cloned()).collect();
        let allow = if config.allow.is_empty() { None } else { Some(Rules::new(&config.allow, Kind::Allow)?) };
        Ok(Policy { deny: Rules::new(&deny, Kind::Deny)?, allow, respect_ignore: config.respect_ignore })
    }

    /// Whether ignore files are consulted.
    pub fn respects_ignore_files(&self) -> bool {
        self.respect_ignore
    }

    /// Checks a path given relative to its root (`relative`) and as an absolute path (`absolute`); the root itself
    /// (an empty `relative`) is never refused by the allow list.
    #[cfg(test)]
    pub fn check(&self, relative: &Path, absolute: &Path) -> Result<(), Denial> {
        self.check_at(relative, absolute, relative.as_os_str().is_empty())
    }

    /// [`Policy::check`] for a path that may be a root (`is_root`) though `relative` is not empty: a root narrowed
    /// beneath the one its path is judged from may always be listed, as long as no deny rule matches it.
    pub fn check_at(&self, relative: &Path, absolute: &Path, is_root: bool) -> Result<(), Denial> {
        if let Some(rule) = self.deny.first_match(relative, absolute) {
            return Err(Denial { rule: rule.to_string() });
        }
        match &self.allow {
            Some(allow) if !is_root && allow.first_match(relative, absolute).is_none() => {
                Err(Denial { rule: "not in the allow list".to_string() })
            }
            _ => Ok(()),
        }
    }

    /// [`Policy::check_at`] for an entry (not a root) of a directory that passed [`Policy::check_at`] itself, as
    /// listed: the deny rules try the entry's own path only, since its ancestors are the directory's.
    pub fn check_entry(&self, relative: &Path, absolute: &Path) -> Result<(), Denial> {
        if let Some(rule) = self.deny.first_match_beneath_cleared(relative, absolute) {
            return Err(Denial { rule: rule.to_string() });
        }
        match &self.allow {
            Some(allow) if allow.first_match(relative, absolute).is_none() => {
                Err(Denial { rule: "not in the allow list".to_string() })
            }
            _ => Ok(()),
        }
    }

    /// Checks `relative` against the ignore files from the root down to its parent, as git would (see [`ignore`]).
    /// `read_ignore_file` reads a root-relative file (through the confined root handle).
    pub fn check_ignored(
        &self,
        relative: &Path,
        is_dir: bool,
        read_ignore_file: impl Fn(&Path) -> IgnoreFile,
    ) -> Result<(), Denial> {
        if !self.respect_ignore {
            return Ok(());
        }
        match IgnoreFiles::new(read_ignore_file).ignored(relative, is_dir) {
            Some(denial) => Err(denial),
            None => Ok(()),
        }
    }
}

/// Joins a root and a root-relative path into the absolute path policy globs see (for the suggestions' tests, which
/// need Unix links).
#[cfg(all(test, unix))]
pub fn absolute_of(root: &Path, relative: &Path) -> std::path::PathBuf {
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
        let ordinary = [
            "src/main.rs",
            "src/env.rs",
            "environment.md",
            "README.md",
            "keys.txt",
            "docs/env.md",
            "src/keyboard.rs",
            "tokenizer.py",
            "monkey.py",
            "src/history.rs",
            "main.rs.bak",
            "notes.md~",
            "config.yaml",
            "docker/config.json",
            "kube/config",
            "src/key.go",
            "envoy.yaml",
            "Cargo.toml",
            ".github/workflows/ci.yml",
            ".config/nvim/init.lua",
        ];
        for path in ordinary {
            assert_eq!(denied(&p, path), None, "{path}");
        }
    }

    #[test]
    fn slashed_defaults_match_at_any_depth() {
        let p = default_policy();
        for (path, rule) in [
            ("proj/infra/.kube/config", ".kube/config"),
            ("home/u/.docker/config.json", ".docker/config.json"),
            ("users/me/.config/gh/hosts.yml", ".config/gh/hosts.yml"),
            ("a/.config/gcloud/access_tokens.db", ".config/gcloud/"),
        ] {
            assert_eq!(denied(&p, path).as_deref(), Some(rule), "{path}");
        }
    }

    #[test]
    fn editor_and_backup_copies_and_the_added_names_are_denied() {
        let p = default_policy();
        let secrets = [
            ".env~",
            "#.env#",
            "server.key~",
            ".htpasswd~",
            "tls.pem.bak",
            ".env.swp",
            ".env.swo",
            ".server.key.swp",
            "id_rsa.orig",
            ".netrc.old",
            ".pgpass.save",
            "deploy/#server.key#",
            ".vault-token",
            ".dockercfg",
            ".s3cfg",
            "home/.bash_history",
            "infra/terraform.tfstate",
            "infra/terraform.tfstate.backup",
            "vpn/client.ppk",
            ".my.cnf",
            "home/.ssh.bak/id_ed25519",
            "server.key.gz",
            "certs/tls.pem.zst",
            ".envrc.xz",
            "vault.kdbx.bz2",
            ".env.bak.gz",
            "deploy/production.env",
            "app.env~",
            "compose/db.env.gz",
            "id_ed25519.gz~",
        ];
        for path in secrets {
            assert!(denied(&p, path).is_some(), "{path}");
        }
        assert_eq!(p.check(Path::new("x"), Path::new("/etc/shadow-")).unwrap_err().rule, "/etc/shadow-");
    }

    #[test]
    fn every_default_entry_has_its_reason_beside_it() {
        let source = include_str!("mod.rs");
        let list = &source[source.find("pub const DEFAULT_DENY").unwrap()..];
        let list = &list[..list.find("];").unwrap()];
        let mut reasoned = true;
        for line in list.lines().skip(1) {
            let line = line.trim();
            if line.starts_with("//") {
                reasoned = true;
            } else if line.starts_with('"') {
                assert!(reasoned, "no reason above {line}");
            } else {
                reasoned = false;
            }
        }
    }

    #[test]
    fn a_narrowed_root_is_listed_under_an_allow_list_but_never_past_a_deny_rule() {
        let config = PolicyConfig { allow: vec!["*.md".into()], ..PolicyConfig::default() };
        let p = Policy::new(&config).unwrap();
        assert!(p.check_at(Path::new("docs"), Path::new("/w/docs"), true).is_ok());
        assert!(p.check_at(Path::new("docs"), Path::new("/w/docs"), false).is_err());
        let rule = p.check_at(Path::new(".ssh"), Path::new("/w/.ssh"), true).unwrap_err().rule;
        assert_eq!(rule, ".ssh/");
    }

    #[test]
    fn an_entry_of_an_allowed_directory_is_judged_as_a_whole_check_judges_it() {
        let config = PolicyConfig { deny: vec!["build/*.log".into(), "/srv/**/private".into()], ..Default::default() };
        let policies = [default_policy(), Policy::new(&config).unwrap()];
        let names = [".env", "main.rs", "id_rsa.pub", "server.key~", "config", "x.log", "private", "#.env#", "Secrets"];
        for policy in &policies {
            for dir in ["", "src", "home/user/.kube", "deep/build", "a/.docker", "srv/x"] {
                let absolute_dir = Path::new("/srv").join(dir);
                if policy.check(Path::new(dir), &absolute_dir).is_err() {
                    continue;
                }
                for name in names {
                    let (relative, absolute) = (Path::new(dir).join(name), absolute_dir.join(name));
                    let whole = policy.check_at(&relative, &absolute, false);
                    assert_eq!(policy.check_entry(&relative, &absolute), whole, "{}", relative.display());
                }
            }
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
        let nested = format!("{}a{}", "{".repeat(250), "}".repeat(250));
        let config = PolicyConfig { allow: vec![nested], ..PolicyConfig::default() };
        let error = Policy::new(&config).unwrap_err().to_string();
        assert!(error.starts_with("allow glob `{{") && error.contains("at most 8 levels"), "{error}");
    }

    #[test]
    fn ignore_files_deny_when_respected() {
        let config = PolicyConfig { respect_ignore: true, ..PolicyConfig::default() };
        let p = Policy::new(&config).unwrap();
        let files = |path: &Path| match path.to_str() {
            Some(".gitignore") => IgnoreFile::Text(b"target/\n*.tmp\n".to_vec()),
            Some("sub/.ignore") => IgnoreFile::Text(b"!keep.tmp\n".to_vec()),
            _ => IgnoreFile::Missing,
        };
        let rule = p.check_ignored(Path::new("target/debug/x"), false, files).unwrap_err().rule;
        assert_eq!(rule, ".gitignore: target/");
        assert!(p.check_ignored(Path::new("a.tmp"), false, files).is_err());
        assert!(p.check_ignored(Path::new("sub/keep.tmp"), false, files).is_ok());
        assert!(p.check_ignored(Path::new("src/main.rs"), false, files).is_ok());
    }
}
