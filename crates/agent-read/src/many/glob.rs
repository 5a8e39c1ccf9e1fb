//! Globs of a `read_many` call: which files beneath the roots a pattern such as `src/**/*.rs` matches.
//!
//! The walk starts at the root and goes down only towards and beneath the pattern's literal base (`src` here), with
//! the `ignore` crate's walker. Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) are honoured as the read
//! policy reads them ([`crate::policy::ignore`]: git's own rules, from the configured root down, read through its
//! confined handle), whether or not the folder is a git repository, so the walk and `respect_ignore` agree on what is
//! ignored. Symbolic links are never followed into, and hidden names are skipped unless the pattern itself has a
//! component starting with `.`. It is bounded in entries visited and in time; a stop says so. Only the names come
//! from the walk: every file is still opened through [`Reader::read`](crate::Reader::read), confined and checked by
//! the policy.
//!
//! The glob itself is bounded in complexity before it is compiled ([`crate::policy::bounds`]): a glob past the bounds
//! is `INVALID_PARAM` naming the bound.

use crate::budget::Cancel;
use crate::error::{ErrorCode, ReadError};
use crate::policy::bounds;
use crate::policy::ignore::IgnoreFiles;
use crate::resolve::Roots;
use globset::{GlobBuilder, GlobMatcher};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Entries the glob walks of one call visit at most, all globs together.
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// Whether a request entry is a glob rather than a path: it holds a wildcard, a class or an alternation.
pub fn is_glob(entry: &str) -> bool {
    entry.contains(['*', '?', '[', '{'])
}

/// The bounds of a call's walks, shared by all its globs.
#[derive(Debug)]
pub struct WalkBudget<'a> {
    /// When walking must stop.
    pub deadline: Instant,
    /// The caller's cancel signal.
    pub cancel: &'a Cancel,
    /// Entries visited so far.
    pub visited: usize,
}

/// A file a glob matched: where it is beneath its root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    /// Its root.
    pub root: usize,
    /// Its path beneath that root, as the walk found it (a symbolic link is not resolved).
    pub relative: PathBuf,
    /// Whether it is a symbolic link (its target is looked up later, only if it is read).
    pub is_link: bool,
    /// Its size (of the link itself, for a link).
    pub size: u64,
}

/// What a glob matched.
#[derive(Debug, Default)]
pub struct Found {
    /// The matches, sorted by path.
    pub files: Vec<Match>,
    /// Why the walk stopped before the end, when it did.
    pub stopped: Option<String>,
    /// Parts of the tree the walk could not enter, each kind once with its count (their matches are missing).
    pub unwalked: Vec<String>,
}

/// Walks for the files `pattern` matches; an invalid pattern, or a base outside the roots, is an error.
pub fn find(roots: &Roots, pattern: &str, budget: &mut WalkBudget<'_>) -> Result<Found, ReadError> {
    let split = Split::of(pattern)?;
    // Checked with the request already (see `request::check_entry`); again here, where the glob is compiled.
    bounds::check(&split.rest).map_err(|why| ReadError::invalid_param(format!("invalid glob: {why}")))?;
    // Windows' file systems ignore case: so do its globs.
    let matcher = GlobBuilder::new(&split.rest)
        .literal_separator(true)
        .case_insensitive(cfg!(windows))
        .build()
        .map_err(|e| ReadError::invalid_param(format!("invalid glob: {e}")).with_hint(GLOB_HINT))?
        .compile_matcher();
    let resolved = roots.resolve(&split.base)?;
    // The base may go through a link: walk where it really is (a walk never follows links itself). It is followed as
    // spelled, so a `..` after a link climbs out of where the link leads, as it does for a path.
    let Some((root, base)) = roots.leads_to(resolved.root, &resolved.beneath) else {
        return Err(ReadError::new(ErrorCode::OutsideRoot, format!("{}: outside the allowed roots", split.base))
            .with_hint("globs match only beneath the workspace roots"));
    };
    let root_path = roots.real_path(root).to_path_buf();
    let walk = Walk { root, root_path: &root_path, base: &base, matcher: &matcher };
    let mut found = walk.run(walker(roots, root, &base, &split.rest), budget);
    found.files.sort();
    Ok(found)
}

/// The part of a glob entry that is compiled: from its first wildcard component on (`**/*.rs` of `src/**/*.rs`).
pub fn pattern_part(entry: &str) -> Option<String> {
    Split::of(entry).ok().map(|split| split.rest)
}

const GLOB_HINT: &str = "use `*` within a name, `**` across directories, `?`, `[abc]` or `{a,b}`, e.g. \"src/**/*.rs\"";

/// A pattern cut where its first wildcard component starts: the literal base folder, and the glob beneath it.
#[derive(Debug, PartialEq, Eq)]
struct Split {
    base: String,
    rest: String,
}

impl Split {
    fn of(pattern: &str) -> Result<Split, ReadError> {
        // On Windows `\` separates names too (and escapes nothing).
        #[cfg(windows)]
        let pattern = &crate::platform::windows_paths::glob(pattern);
        let parts: Vec<&str> = pattern.split('/').filter(|part| !part.is_empty()).collect();
        let first_glob = parts.iter().position(|part| is_glob(part)).unwrap_or(parts.len());
        let rest: Vec<&str> = parts[first_glob..].iter().copied().filter(|part| *part != ".").collect();
        if rest.contains(&"..") {
            return Err(ReadError::invalid_param(format!("`..` cannot follow a wildcard (in `{pattern}`)"))
                .with_hint("put `..` before the first wildcard, or name the folder itself"));
        }
        let base = parts[..first_glob].join("/");
        let base = match (pattern.starts_with('/'), base.is_empty()) {
            (true, _) => format!("/{base}"),
            (false, true) => ".".to_string(),
            (false, false) => base,
        };
        Ok(Split { base, rest: rest.join("/") })
    }
}

/// The walker: from root `root`, towards and beneath `base`, skipping what the ignore files ignore (read from the
/// root's anchor down, as the policy reads them).
fn walker(roots: &Roots, root: usize, base: &Path, rest: &str) -> ignore::Walk {
    let components: Vec<&str> = rest.split('/').collect();
    let allow_hidden = components.iter().any(|c| c.starts_with('.'));
    let allow_git = components.contains(&".git");
    let root_path = roots.real_path(root).to_path_buf();
    let base = base.to_path_buf();
    // Where the root lies beneath its anchor: ignore files above the root apply too.
    let anchored = roots.judged(root, Path::new(""));
    let ignores = IgnoreFiles::new(roots.ignore_file_reader(anchored.anchor));
    let mut builder = ignore::WalkBuilder::new(&root_path);
    builder.standard_filters(false).follow_links(false).filter_entry(move |entry| {
        let Some(relative) = entry.path().strip_prefix(&root_path).ok() else { return false };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        // The walk never enters an ignored directory, so only the entry itself needs judging.
        keep(relative, &base, allow_hidden, allow_git)
            && ignores.entry_ignored(&anchored.relative.join(relative), is_dir).is_none()
    });
    builder.build()
}

/// Whether the walk goes into (or yields) `relative` (to the root): on the way down to the base, or beneath it and
/// not hidden.
fn keep(relative: &Path, base: &Path, allow_hidden: bool, allow_git: bool) -> bool {
    if base.starts_with(relative) {
        return true;
    }
    if !relative.starts_with(base) {
        return false;
    }
    let name = relative.file_name().map(|name| name.as_encoded_bytes()).unwrap_or_default();
    if name == b".git" { allow_git } else { allow_hidden || !name.starts_with(b".") }
}

struct Walk<'a> {
    root: usize,
    root_path: &'a Path,
    base: &'a Path,
    matcher: &'a GlobMatcher,
}

impl Walk<'_> {
    fn run(
        &self,
        walker: impl IntoIterator<Item = Result<ignore::DirEntry, ignore::Error>>,
        budget: &mut WalkBudget<'_>,
    ) -> Found {
        let mut found = Found::default();
        let mut faults = Faults::default();
        for item in walker {
            budget.visited += 1;
            if budget.visited > MAX_WALK_ENTRIES {
                found.stopped = Some(format!("the walk stopped after visiting {MAX_WALK_ENTRIES} entries"));
                break;
            }
            if budget.cancel.is_cancelled() || Instant::now() >= budget.deadline {
                found.stopped = Some("the walk ran out of time".to_string());
                break;
            }
            match item {
                Ok(entry) => found.files.extend(self.matched(&entry)),
                Err(error) => faults.count(&error),
            }
        }
        found.unwalked = faults.reasons();
        found
    }

    fn matched(&self, entry: &ignore::DirEntry) -> Option<Match> {
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            return None;
        }
        let relative = entry.path().strip_prefix(self.root_path).ok()?;
        let below = relative.strip_prefix(self.base).ok()?;
        if below.as_os_str().is_empty() || !self.matcher.is_match(below) {
            return None;
        }
        let size = entry.metadata().map(|metadata| metadata.len()).unwrap_or(0);
        Some(Match { root: self.root, relative: relative.to_path_buf(), is_link: file_type.is_symlink(), size })
    }
}

/// What kept the walk out of parts of the tree, counted by kind. The walk goes on past each (the rest of the tree is
/// still walked), but a glob's answer must say that matches may be missing, and why: silence would read as "no such
/// file".
#[derive(Debug, Default)]
struct Faults {
    /// Paths longer than the system allows (`ENAMETOOLONG`): beyond `PATH_MAX`, which no request can name either.
    too_long: usize,
    /// Folders the operating system refused to list.
    refused: usize,
    /// Other input/output errors, by what the operating system said.
    other_io: Vec<(String, usize)>,
    /// Ignore files with rules that could not be read (the walk keeps the rest of their rules).
    ignore_rules: usize,
}

impl Faults {
    fn count(&mut self, error: &ignore::Error) {
        let Some(io) = error.io_error() else {
            self.ignore_rules += 1;
            return;
        };
        match io.kind() {
            std::io::ErrorKind::InvalidFilename => self.too_long += 1,
            std::io::ErrorKind::PermissionDenied => self.refused += 1,
            _ => {
                let said = io.to_string();
                match self.other_io.iter_mut().find(|(seen, _)| *seen == said) {
                    Some((_, count)) => *count += 1,
                    None => self.other_io.push((said, 1)),
                }
            }
        }
    }

    /// One sentence per kind of fault met, saying what is missing and why.
    fn reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.too_long > 0 {
            reasons.push(format!(
                "the walk stopped at {} path(s) longer than the system allows ({} bytes, PATH_MAX): nothing deeper can \
                 be walked or read by name, so matches there are missing",
                self.too_long,
                crate::request::MAX_PATH_BYTES
            ));
        }
        if self.refused > 0 {
            reasons.push(format!(
                "the walk could not enter {} folder(s): the operating system denied access, so matches in them are \
                 missing",
                self.refused
            ));
        }
        for (said, count) in &self.other_io {
            reasons
                .push(format!("the walk could not read {count} entr(y/ies) ({said}), so matches there may be missing"));
        }
        if self.ignore_rules > 0 {
            reasons.push(format!(
                "{} ignore file(s) in the walk had rules that could not be read: files those rules name may be listed",
                self.ignore_rules
            ));
        }
        reasons
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pattern: &str) -> (String, String) {
        let split = Split::of(pattern).unwrap();
        (split.base, split.rest)
    }

    #[test]
    fn patterns_split_at_their_first_wildcard_component() {
        assert_eq!(split("src/**/*.rs"), ("src".into(), "**/*.rs".into()));
        assert_eq!(split("*.md"), (".".into(), "*.md".into()));
        assert_eq!(split("/work/p/docs/{a,b}.md"), ("/work/p/docs".into(), "{a,b}.md".into()));
        assert_eq!(split("./a//b/./c?"), ("./a/b/.".into(), "c?".into()));
        assert_eq!(split("src/../lib/*.rs"), ("src/../lib".into(), "*.rs".into()));
        assert!(Split::of("src/*/../x").unwrap_err().message.contains("`..` cannot follow a wildcard"));
        assert!(is_glob("a[bc]") && is_glob("{a,b}") && is_glob("a?") && !is_glob("src/main.rs"));
    }

    #[test]
    fn the_walk_stops_at_its_entry_and_time_bounds_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("f{i:02}.txt")), "x").unwrap();
        }
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        let cancel = Cancel::new();
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let mut budget = WalkBudget { deadline: later, cancel: &cancel, visited: 0 };
        let whole = find(&roots, "*.txt", &mut budget).unwrap();
        assert_eq!((whole.files.len(), whole.stopped.as_deref()), (20, None));
        assert_eq!(budget.visited, 21, "the root and its 20 files");
        let mut nearly_spent = WalkBudget { deadline: later, cancel: &cancel, visited: MAX_WALK_ENTRIES - 5 };
        let cut = find(&roots, "*.txt", &mut nearly_spent).unwrap();
        assert_eq!(cut.files.len(), 4, "the root, then four files");
        assert_eq!(cut.stopped.as_deref(), Some("the walk stopped after visiting 100000 entries"));
        let mut late = WalkBudget { deadline: Instant::now(), cancel: &cancel, visited: 0 };
        assert_eq!(find(&roots, "*.txt", &mut late).unwrap().stopped.as_deref(), Some("the walk ran out of time"));
    }

    #[test]
    fn what_the_walk_could_not_enter_is_said_by_kind_with_its_count() {
        let matcher = GlobBuilder::new("*").build().unwrap().compile_matcher();
        let walk = Walk { root: 0, root_path: Path::new("/r"), base: Path::new(""), matcher: &matcher };
        let io = |code| Err(ignore::Error::from(std::io::Error::from_raw_os_error(code)));
        let rules = Err(ignore::Error::Glob { glob: Some("[".into()), err: "unclosed class".into() });
        let faults = vec![io(libc::ENAMETOOLONG), io(libc::EACCES), io(libc::ENAMETOOLONG), io(libc::EIO), rules];
        let cancel = Cancel::new();
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let mut budget = WalkBudget { deadline: later, cancel: &cancel, visited: 0 };
        let found = walk.run(faults, &mut budget);
        assert!(found.files.is_empty() && found.stopped.is_none());
        assert_eq!(
            found.unwalked,
            [
                "the walk stopped at 2 path(s) longer than the system allows (4096 bytes, PATH_MAX): nothing deeper \
                 can be walked or read by name, so matches there are missing",
                "the walk could not enter 1 folder(s): the operating system denied access, so matches in them are \
                 missing",
                "the walk could not read 1 entr(y/ies) (Input/output error (os error 5)), so matches there may be missing",
                "1 ignore file(s) in the walk had rules that could not be read: files those rules name may be listed",
            ]
        );
    }

    #[test]
    fn the_walk_keeps_to_the_base_and_skips_hidden_names_unless_asked() {
        let base = Path::new("src/a");
        let kept = |path: &str, hidden: bool| keep(Path::new(path), base, hidden, false);
        assert!(kept("src", false) && kept("src/a", false) && kept("src/a/x.rs", false));
        assert!(!kept("docs", false) && !kept("src/b.rs", false));
        assert!(!kept("src/a/.hidden", false) && kept("src/a/.hidden", true));
        assert!(!kept("src/a/.git", true), ".git only when the pattern names it");
        assert!(keep(Path::new(".github/w/x.yml"), Path::new(".github/w"), false, false), "a named base");
    }

    #[test]
    fn a_glob_past_the_complexity_bounds_is_invalid_param_naming_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        let cancel = Cancel::new();
        let mut budget =
            WalkBudget { deadline: Instant::now() + std::time::Duration::from_secs(60), cancel: &cancel, visited: 0 };
        let nested = format!("src/{}a{}", "{".repeat(250), "}".repeat(250));
        let error = find(&roots, &nested, &mut budget).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParam);
        assert!(error.message.contains("nests `{…}` 250 deep; at most 8 levels"), "{}", error.message);
    }
}
