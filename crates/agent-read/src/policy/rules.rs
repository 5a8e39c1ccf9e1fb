//! A compiled list of policy globs (the deny list, or the allow list), and how a path is matched against it.
//!
//! Matching is ASCII case-insensitive, done by lowercasing both the globs and the paths (`globset`'s own
//! case-insensitive mode turns every glob into a regex). A glob with a class (`[A-Z]`) keeps `globset`'s
//! case-insensitive mode, whose folding is ASCII-only too, so both kinds agree.
//!
//! Globs of names and `*` alone — every default one — are matched by [`wildcard`](super::wildcard), which compiles
//! nothing: a one-shot read then pays no regex compilation. The others go to `globset`, into as few sets as their
//! regexes allow: a set whose regexes outgrow the regex engine's size limit is split in two until each part builds,
//! so a list of ten thousand globs is accepted like a short one.
//!
//! "Anything beneath a matching directory matches too" is checked by matching the path and each of its ancestors,
//! rather than by a second `…/**` glob per pattern: that second glob was always a regex.

use super::bounds;
use super::wildcard::Wildcards;
use crate::config_error::{ConfigError, GlobList, GlobProblem};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::{Component, Path};

/// Which list the globs form, which decides where a glob without a leading `/` may match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Deny globs match at any depth, whatever they contain (a secret stays denied wherever it sits), and an editor's
    /// or a backup's copy of a name they match is matched too (see [`copies_of`]).
    Deny,
    /// Allow globs match at any depth when they name no `/`, else from the root down (`src/` anywhere, `docs/*.md`
    /// only at the top); a copy is matched only on its own name.
    Allow,
}

impl Kind {
    fn list(self) -> GlobList {
        match self {
            Kind::Deny => GlobList::Deny,
            Kind::Allow => GlobList::Allow,
        }
    }
}

/// Compiled globs: those matched against paths relative to their root, and those (starting with `/`) matched against
/// absolute paths.
#[derive(Debug, Clone)]
pub struct Rules {
    relative: Sets,
    absolute: Sets,
    kind: Kind,
}

impl Rules {
    /// Compiles `patterns` as a list of `kind`; an error names the glob and what is wrong with it.
    pub fn new(patterns: &[String], kind: Kind) -> Result<Rules, ConfigError> {
        let list = kind.list();
        let refuse = |pattern: &String, problem| ConfigError::Glob { list, pattern: pattern.clone(), problem };
        let (mut relative, mut absolute) = (Sets::default(), Sets::default());
        let (mut relative_globs, mut absolute_globs) = (Vec::new(), Vec::new());
        for pattern in patterns {
            let spelled = native_glob(pattern);
            let folded = folded(spelled.trim()).ok_or_else(|| {
                refuse(
                    pattern,
                    GlobProblem::Invalid {
                        reason: "`..` never matches: paths are matched with `..` resolved; name the folder itself"
                            .to_string(),
                    },
                )
            })?;
            let trimmed = folded.trim_end_matches('/');
            if trimmed.is_empty() {
                return Err(refuse(pattern, GlobProblem::Empty));
            }
            bounds::check(trimmed).map_err(|why| refuse(pattern, GlobProblem::TooComplex { why }))?;
            let (sets, globs, glob) = if is_absolute_glob(trimmed) {
                (&mut absolute, &mut absolute_globs, trimmed.to_string())
            } else if trimmed.starts_with("**/") || (kind == Kind::Allow && trimmed.contains('/')) {
                (&mut relative, &mut relative_globs, trimmed.to_string())
            } else {
                (&mut relative, &mut relative_globs, format!("**/{trimmed}"))
            };
            let index = sets.sources.len();
            sets.sources.push(pattern.clone());
            if !sets.wildcards.add(index, &glob.to_ascii_lowercase()) {
                let compiled =
                    compile(&glob).map_err(|e| refuse(pattern, GlobProblem::Invalid { reason: e.to_string() }))?;
                globs.push((compiled, index));
            }
        }
        relative.build(relative_globs, list)?;
        absolute.build(absolute_globs, list)?;
        Ok(Rules { relative, absolute, kind })
    }

    /// The first rule (in the order given) that matches `relative` or `absolute`, or one of their ancestors (or, for
    /// deny rules, a name they are a copy of).
    pub fn first_match(&self, relative: &Path, absolute: &Path) -> Option<&str> {
        self.first_match_from(relative, absolute, Ancestors::Included)
    }

    /// [`Rules::first_match`] for an entry of a directory these rules were checked on already and matched nothing:
    /// the directory's ancestors are the entry's, so only the entry itself (and the names it is a copy of) is tried.
    pub fn first_match_beneath_cleared(&self, relative: &Path, absolute: &Path) -> Option<&str> {
        self.first_match_from(relative, absolute, Ancestors::Cleared)
    }

    fn first_match_from(&self, relative: &Path, absolute: &Path, ancestors: Ancestors) -> Option<&str> {
        let copies = self.kind == Kind::Deny;
        let relative_match = self.relative.first_match(relative, copies, ancestors);
        relative_match.or_else(|| self.absolute.first_match(absolute, copies, ancestors))
    }
}

/// Whether a path's ancestors are still to be matched, or known to match no rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ancestors {
    Included,
    Cleared,
}

/// A glob as this system's users write it: on Windows, `\` separates names like `/` (see
/// [`crate::platform::windows_paths::glob`]); elsewhere `\` escapes the character after it, as globs do.
fn native_glob(pattern: &str) -> String {
    #[cfg(windows)]
    {
        crate::platform::windows_paths::glob(pattern)
    }
    #[cfg(not(windows))]
    {
        pattern.to_string()
    }
}

/// `glob` spelled as the paths it is matched against are: without `.` names and empty names between `/` (`./x`,
/// `a//b`, `a/./b` would otherwise never match); a leading and a trailing `/` stay. `None` when it names `..`.
fn folded(glob: &str) -> Option<String> {
    let names: Vec<&str> = glob.split('/').collect();
    if names.contains(&"..") {
        return None;
    }
    let last = names.len().saturating_sub(1);
    let kept =
        names.iter().enumerate().filter(|&(at, name)| (at == 0 || at == last || !name.is_empty()) && *name != ".");
    Some(kept.map(|(_, name)| *name).collect::<Vec<_>>().join("/"))
}

/// Whether a glob (separators `/`) is matched against absolute paths: it starts at `/`, or on Windows at a drive
/// (`C:/Users/*/.aws`).
fn is_absolute_glob(glob: &str) -> bool {
    glob.starts_with('/') || cfg!(windows) && crate::platform::windows_paths::is_drive_glob(glob)
}

/// Suffixes editors and tools give copies of a file: backups (`~`, `.bak`, `.orig` from merges, `.save` from nano,
/// `.old`, `.backup`), vim's swap files (`.swp`, then `.swo`, `.swn` for a second and third), and compressed copies
/// (`.gz`, `.zst`, `.xz`, `.bz2`), which a read decompresses: `server.key.gz` shows the key.
const COPY_SUFFIXES: [&str; 13] =
    ["~", ".bak", ".backup", ".old", ".orig", ".save", ".swp", ".swo", ".swn", ".gz", ".zst", ".xz", ".bz2"];

/// The names `name` may be a copy of: without a copy suffix (`server.key~`, `tls.pem.bak`), without Emacs's
/// auto-save `#…#` (`#.env#`), without vim's swap dot (`.server.key.swp`), repeatedly (`.env.bak~`). Empty when
/// `name` is no copy.
pub fn copies_of(name: &[u8]) -> Vec<Vec<u8>> {
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut pending = vec![name.to_vec()];
    while let Some(current) = pending.pop() {
        let mut originals: Vec<&[u8]> = Vec::new();
        if let Some(inner) = current.strip_prefix(b"#").and_then(|rest| rest.strip_suffix(b"#")) {
            originals.push(inner);
        }
        for suffix in COPY_SUFFIXES {
            if let Some(stem) = current.strip_suffix(suffix.as_bytes()) {
                originals.push(stem);
                if suffix.starts_with(".sw")
                    && let Some(unhidden) = stem.strip_prefix(b".")
                {
                    originals.push(unhidden);
                }
            }
        }
        for original in originals {
            // Bounded: every step makes the name shorter.
            if !original.is_empty() && !found.iter().any(|known| known == original) {
                found.push(original.to_vec());
                pending.push(original.to_vec());
            }
        }
    }
    found
}

/// A glob as matched: lowercased when that keeps its meaning (no class), else compiled case-insensitively.
fn compile(glob: &str) -> Result<Glob, globset::Error> {
    let has_class = glob.contains('[');
    let text = if has_class { glob.to_string() } else { glob.to_ascii_lowercase() };
    GlobBuilder::new(&text).case_insensitive(has_class).literal_separator(true).build()
}

/// Globs in order: those [`Wildcards`] match, the others in one or more `globset` sets, each glob with its place.
#[derive(Debug, Clone, Default)]
struct Sets {
    wildcards: Wildcards,
    sets: Vec<(GlobSet, Vec<usize>)>,
    /// The patterns as written, by place.
    sources: Vec<String>,
}

impl Sets {
    /// Compiles the globs `globset` matches (each with its place).
    fn build(&mut self, globs: Vec<(Glob, usize)>, list: GlobList) -> Result<(), ConfigError> {
        if globs.is_empty() { Ok(()) } else { self.add(globs, list) }
    }

    /// Builds `globs` as one set, or, when their regexes are too big for one, as two halves (each split again as
    /// needed).
    fn add(&mut self, globs: Vec<(Glob, usize)>, list: GlobList) -> Result<(), ConfigError> {
        let mut builder = GlobSetBuilder::new();
        globs.iter().for_each(|(glob, _)| _ = builder.add(glob.clone()));
        match builder.build() {
            Ok(set) => {
                self.sets.push((set, globs.into_iter().map(|(_, index)| index).collect()));
                Ok(())
            }
            Err(e) if globs.len() == 1 => Err(ConfigError::Glob {
                list,
                pattern: self.sources[globs[0].1].clone(),
                problem: GlobProblem::Uncompilable { reason: e.to_string() },
            }),
            Err(_) => {
                let mut first = globs;
                let second = first.split_off(first.len() / 2);
                self.add(first, list)?;
                self.add(second, list)
            }
        }
    }

    /// The first pattern (in order) matching `path` or one of its ancestors, or with `copies`, one of them with its
    /// last name replaced by a name it is a copy of.
    fn first_match(&self, path: &Path, copies: bool, ancestors: Ancestors) -> Option<&str> {
        if self.sources.is_empty() {
            return None;
        }
        let spelled = Spelled::of(path);
        let tried = || spelled.ancestors().take(if ancestors == Ancestors::Cleared { 1 } else { usize::MAX });
        let originals: Vec<Vec<u8>> = if copies { tried().flat_map(originals_of).collect() } else { Vec::new() };
        let paths = || tried().chain(originals.iter().map(Vec::as_slice));
        let by_wildcard = paths().filter_map(|path| self.wildcards.first_match(path)).min();
        let by_set = if self.sets.is_empty() {
            None
        } else {
            let candidates: Vec<globset::Candidate<'_>> = paths().map(globset::Candidate::from_bytes).collect();
            self.sets.iter().find_map(|(set, indexes)| {
                // `is_match` first: most paths match nothing, and it is a cheaper search than listing every match.
                let first = candidates
                    .iter()
                    .filter(|candidate| set.is_match_candidate(candidate))
                    .filter_map(|candidate| set.matches_candidate(candidate).into_iter().min())
                    .min()?;
                indexes.get(first).copied()
            })
        };
        let first = by_wildcard.into_iter().chain(by_set).min()?;
        self.sources.get(first).map(String::as_str)
    }
}

/// A path as it is matched: ASCII letters lowercased, names between `/` (on Windows `\` becomes `/` too, and a name
/// that is not Unicode is read lossily, as `globset` reads it), and how many of its first bytes are its root (`/`,
/// `C:/`), which is an ancestor of every path and never a match of its own.
struct Spelled {
    bytes: Vec<u8>,
    root: usize,
}

impl Spelled {
    fn of(path: &Path) -> Spelled {
        #[cfg(unix)]
        let bytes = {
            use std::os::unix::ffi::OsStrExt as _;
            path.as_os_str().as_bytes().to_ascii_lowercase()
        };
        #[cfg(not(unix))]
        let bytes = path.to_string_lossy().replace('\\', "/").to_ascii_lowercase().into_bytes();
        let mut components = path.components();
        let root = match components.next() {
            Some(Component::Prefix(prefix)) => {
                prefix.as_os_str().len() + usize::from(components.next() == Some(Component::RootDir))
            }
            Some(Component::RootDir) => 1,
            _ => 0,
        };
        Spelled { bytes, root }
    }

    /// The path and each of its ancestors but the root, the path first (paths here are normalized: no `.`, `..` or
    /// doubled `/`).
    fn ancestors(&self) -> impl Iterator<Item = &[u8]> {
        let bytes = self.bytes.as_slice();
        let whole = (bytes.len() > self.root).then_some(bytes);
        let parents = memchr::memrchr_iter(b'/', bytes).filter(|&at| at >= self.root).map(move |at| &bytes[..at]);
        whole.into_iter().chain(parents)
    }
}

/// `path` with its last name replaced by each name it may be a copy of. Names are bytes, not always UTF-8: a copy
/// suffix is ASCII, and a name that is not Unicode is no less a copy (`k\xff.pem.bak`).
fn originals_of(path: &[u8]) -> Vec<Vec<u8>> {
    let start = memchr::memrchr(b'/', path).map_or(0, |at| at + 1);
    let name = &path[start..];
    if !may_be_a_copy(name) {
        return Vec::new();
    }
    copies_of(name).into_iter().map(|original| [&path[..start], &original].concat()).collect()
}

/// Whether [`copies_of`] can find anything in `name`: most names end in no copy suffix, and this costs no allocation.
/// Every suffix but `~` is one extension.
fn may_be_a_copy(name: &[u8]) -> bool {
    name.starts_with(b"#")
        || name.ends_with(b"~")
        || memchr::memrchr(b'.', name).is_some_and(|dot| COPY_SUFFIXES.iter().any(|s| s.as_bytes() == &name[dot..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(patterns: &[&str], kind: Kind) -> Rules {
        Rules::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>(), kind).unwrap()
    }

    fn first(rules: &Rules, relative: &str) -> Option<String> {
        rules.first_match(Path::new(relative), &Path::new("/w").join(relative)).map(str::to_string)
    }

    #[test]
    fn slashed_deny_globs_match_at_any_depth_and_beneath() {
        let deny = rules(&[".kube/config", "config/*.key"], Kind::Deny);
        for path in [".kube/config", "proj/infra/.kube/config", "home/u/.KUBE/Config", "a/config/x.key/inner"] {
            assert!(first(&deny, path).is_some(), "{path}");
        }
        assert_eq!(first(&deny, "kube/config"), None);
        assert_eq!(first(&deny, "a/.kube/configs"), None);
    }

    #[test]
    fn slashed_allow_globs_stay_anchored_at_the_root() {
        let allow = rules(&["docs/*.md", "src/"], Kind::Allow);
        assert!(first(&allow, "docs/a.md").is_some() && first(&allow, "lib/src/x.rs").is_some());
        assert_eq!(first(&allow, "vendor/docs/a.md"), None);
    }

    #[test]
    fn the_first_rule_in_order_is_named_whichever_ancestor_matched() {
        let deny = rules(&["secrets/", "*secret*", "*.yaml"], Kind::Deny);
        assert_eq!(first(&deny, "deploy/secrets/db.yaml").as_deref(), Some("secrets/"));
        assert_eq!(first(&deny, "my_secret/db.yaml").as_deref(), Some("*secret*"));
    }

    #[test]
    fn classes_keep_their_meaning_and_still_ignore_case() {
        let deny = rules(&["[A-C]*.TXT", "[Z-a]"], Kind::Deny);
        assert!(first(&deny, "b1.txt").is_some() && first(&deny, "B1.TXT").is_some());
        assert_eq!(first(&deny, "d1.txt"), None);
        assert!(first(&deny, "_").is_some(), "`_` lies between Z and a");
    }

    #[test]
    fn ten_thousand_globs_of_every_kind_build_and_match() {
        let mut patterns: Vec<String> = Vec::new();
        for i in 0..10_000 {
            patterns.push(match i % 4 {
                0 => format!("name{i}.txt"),
                1 => format!("*.ext{i}"),
                2 => format!("*part{i}*"),
                _ => format!("dir{i}/*.d"),
            });
        }
        let deny = Rules::new(&patterns, Kind::Deny).unwrap();
        assert_eq!(first(&deny, "a/b/x.ext9997").as_deref(), Some("*.ext9997"));
        assert_eq!(first(&deny, "xx_part9998_yy").as_deref(), Some("*part9998*"));
        assert_eq!(first(&deny, "q/dir9999/f.d").as_deref(), Some("dir9999/*.d"));
        assert_eq!(first(&deny, "name0.txt").as_deref(), Some("name0.txt"));
        assert_eq!(first(&deny, "ordinary.rs"), None);
    }

    #[test]
    fn absolute_globs_match_the_absolute_path_and_beneath() {
        let deny = rules(&["/proc/**/environ", "/etc/shadow"], Kind::Deny);
        assert_eq!(deny.first_match(Path::new("x"), Path::new("/proc/7/task/9/environ")), Some("/proc/**/environ"));
        assert_eq!(deny.first_match(Path::new("x"), Path::new("/ETC/shadow")), Some("/etc/shadow"));
        assert_eq!(deny.first_match(Path::new("shadow"), Path::new("/w/etc/shadow")), None);
    }

    #[test]
    fn copies_are_denied_like_their_original_but_only_for_deny_rules() {
        let deny = rules(&[".env", "*.key", ".htpasswd", "*.pem", ".ssh/"], Kind::Deny);
        for copy in [".env~", "#.env#", "server.key~", ".htpasswd~", "tls.pem.bak", ".env.swp", ".server.key.swo"] {
            assert!(first(&deny, copy).is_some(), "{copy}");
        }
        assert!(first(&deny, "home/.ssh.bak/id_ed25519").is_some(), "a copied directory");
        assert!(first(&deny, ".env.bak~").is_some(), "a copy of a copy");
        for ordinary in ["main.rs~", "notes.md.bak", "keyboard.rs", "#main.rs#", ".vimrc.swp", "env~"] {
            assert_eq!(first(&deny, ordinary), None, "{ordinary}");
        }
        let allow = rules(&["*.md"], Kind::Allow);
        assert_eq!(first(&allow, "a.md~"), None);
        assert_eq!(copies_of(b"a"), Vec::<Vec<u8>>::new());
        assert_eq!(copies_of(b".x.swp"), vec![b".x".to_vec(), b"x".to_vec()]);
    }

    #[test]
    #[cfg(unix)]
    fn names_that_are_not_unicode_still_match_in_any_case() {
        use std::os::unix::ffi::OsStrExt as _;
        let deny = rules(&["*.pem", "secrets/"], Kind::Deny);
        let name = Path::new(std::ffi::OsStr::from_bytes(b"Certs\xff/K\xfe.PEM"));
        assert_eq!(deny.first_match(name, &Path::new("/w").join(name)), Some("*.pem"));
        let beneath = Path::new(std::ffi::OsStr::from_bytes(b"SECRETS/\xff"));
        assert_eq!(deny.first_match(beneath, &Path::new("/w").join(beneath)), Some("secrets/"));
    }

    #[test]
    fn the_quick_copy_check_lets_every_copy_through() {
        for suffix in COPY_SUFFIXES {
            let name = format!("server.key{suffix}");
            assert!(may_be_a_copy(name.as_bytes()) && !copies_of(name.as_bytes()).is_empty(), "{name}");
        }
        assert!(may_be_a_copy(b"#.env#") && !may_be_a_copy(b"main.rs") && !may_be_a_copy(b"notes.txt"));
    }

    #[test]
    #[cfg(unix)]
    fn copies_of_names_that_are_not_unicode_are_denied_with_them() {
        use std::os::unix::ffi::OsStrExt as _;
        let deny = rules(&["*.pem", "*.key", ".env"], Kind::Deny);
        let names: [&[u8]; 5] =
            [b"k\xff.pem.bak", b"#k\xff.key#", b".k\xff.pem.swp", b"k\xff.key.gz", b"d\xfe/.env.bak"];
        for name in names {
            let path = Path::new(std::ffi::OsStr::from_bytes(name));
            assert!(deny.first_match(path, &Path::new("/w").join(path)).is_some(), "{}", path.display());
        }
    }

    #[test]
    fn globs_spelled_with_dot_or_doubled_slashes_match_as_folded_and_dot_dot_is_refused() {
        let deny = rules(&["./top.txt", "sub//deep.txt", "a/./b/*.key", "/etc//shadow"], Kind::Deny);
        for path in ["top.txt", "x/top.txt", "sub/deep.txt", "a/b/c.key"] {
            assert!(first(&deny, path).is_some(), "{path}");
        }
        assert!(deny.first_match(Path::new("x"), Path::new("/etc/shadow")).is_some());
        assert_eq!(folded("./top.txt").as_deref(), Some("top.txt"));
        assert_eq!(folded("/a//b/./c/").as_deref(), Some("/a/b/c/"));
        assert_eq!(folded("."), Some(String::new()));
        let error = Rules::new(&["../secret".to_string()], Kind::Deny).unwrap_err().to_string();
        assert!(error.contains("../secret") && error.contains("`..`"), "{error}");
    }

    #[test]
    fn a_path_and_its_ancestors_but_never_the_root_are_matched() {
        let spelled = Spelled::of(Path::new("/A/b/C.txt"));
        let ancestors: Vec<&[u8]> = spelled.ancestors().collect();
        assert_eq!(ancestors, [&b"/a/b/c.txt"[..], b"/a/b", b"/a"]);
        let relative = Spelled::of(Path::new("a/b"));
        assert_eq!(relative.ancestors().collect::<Vec<_>>(), [&b"a/b"[..], b"a"]);
        assert_eq!(Spelled::of(Path::new("/")).ancestors().count(), 0);
        assert_eq!(Spelled::of(Path::new("")).ancestors().count(), 0);
    }

    #[test]
    fn a_glob_past_the_bounds_is_a_config_error_naming_it_and_the_limit() {
        let deep = format!("{}a{}", "{".repeat(250), "}".repeat(250));
        let error = Rules::new(&[deep], Kind::Deny).unwrap_err().to_string();
        assert!(error.starts_with("deny glob `{{{") && error.contains("at most 8 levels"), "{error}");
    }
}
