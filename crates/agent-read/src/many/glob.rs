//! Globs of a `read_many` call: which files beneath the roots a pattern such as `src/**/*.rs` matches.
//!
//! The walk goes to the pattern's literal base (`src` here) and down beneath it, depth first, each folder listed once
//! through the root's confined handle and its names sorted, so matches come out sorted by path, component by
//! component. Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) are honoured as the read policy reads them
//! ([`crate::policy::ignore`]: git's own rules, from the configured root down, read through its confined handle),
//! whether or not the folder is a git repository, so the walk and `respect_ignore` agree on what is ignored; beneath
//! the base, a folder's ignore files are opened only when its listing names them. Symbolic links are never followed
//! into, and hidden names are skipped unless the pattern itself has a component starting with `.`. Nothing is
//! `stat`-ed: kinds come from the directory stream. It is bounded in entries listed and in time; a stop says so. Only
//! the names come from the walk: every file is still opened through [`Reader::read`](crate::Reader::read), confined
//! and checked by the policy.
//!
//! The glob itself is bounded in complexity before it is compiled ([`crate::policy::bounds`]): a glob past the bounds
//! is `INVALID_PARAM` naming the bound.

use crate::budget::Cancel;
use crate::error::{ErrorCode, ReadError};
use crate::policy::bounds;
use crate::policy::ignore::{DirRules, IgnoreFile, IgnoreFiles, ignored_along};
use crate::resolve::Roots;
use cap_std::fs::FileType;
use globset::{GlobBuilder, GlobMatcher};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Entries the glob walks of one call list at most, all globs together.
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
    /// Entries listed so far.
    pub visited: usize,
}

impl WalkBudget<'_> {
    /// Counts one more entry listed; why the walk must stop, when it must.
    fn visit(&mut self) -> Option<String> {
        self.visited += 1;
        if self.visited > MAX_WALK_ENTRIES {
            return Some(format!("the walk stopped after visiting {MAX_WALK_ENTRIES} entries"));
        }
        (self.cancel.is_cancelled() || Instant::now() >= self.deadline).then(|| "the walk ran out of time".to_string())
    }
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
}

/// What a glob matched.
#[derive(Debug, Default)]
pub struct Found {
    /// The matches, sorted by path, component by component.
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
    let names: Vec<&str> = split.rest.split('/').collect();
    let shown = Shown { hidden: names.iter().any(|c| c.starts_with('.')), git: names.contains(&".git") };
    // Where the root lies beneath its anchor: ignore files above the root apply too.
    let anchored = roots.judged(root, Path::new(""));
    let ignores = IgnoreFiles::new(roots.ignore_file_reader(anchored.anchor));
    let walk = Walk { roots, root, base: &base, above: &anchored.relative, matcher: &matcher, shown, ignores };
    Ok(walk.run(budget))
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

/// Which names beneath the base the walk goes into or yields: hidden ones only when the pattern names one, `.git`
/// only when it names `.git`.
#[derive(Debug, Clone, Copy)]
struct Shown {
    hidden: bool,
    git: bool,
}

impl Shown {
    fn admits(self, name: &OsString) -> bool {
        let name = name.as_encoded_bytes();
        if name == b".git" { self.git } else { self.hidden || !name.starts_with(b".") }
    }
}

/// A folder being walked: its sorted entries and the next to visit.
struct Folder {
    entries: Vec<(OsString, FileType)>,
    next: usize,
}

/// Where a walk stands: the folders from the base down to the one being walked, and the path of the entry at hand
/// (or of that folder) beneath the base and as ignore files judge it (beneath the anchor, with a leading `/`), grown
/// and shrunk name by name rather than joined anew for every entry.
struct Position {
    folders: Vec<Folder>,
    below: PathBuf,
    rooted: PathBuf,
}

impl Position {
    fn pop(&mut self) {
        self.below.pop();
        self.rooted.pop();
    }
}

struct Walk<'a, F> {
    roots: &'a Roots,
    root: usize,
    base: &'a Path,
    /// Where the root lies beneath its anchor (the paths ignore files judge start there).
    above: &'a Path,
    matcher: &'a GlobMatcher,
    shown: Shown,
    ignores: IgnoreFiles<F>,
}

impl<F: Fn(&Path) -> IgnoreFile> Walk<'_, F> {
    fn run(&self, budget: &mut WalkBudget<'_>) -> Found {
        let mut found = Found::default();
        let mut faults = Faults::default();
        let Some(mut chain) = self.chain_to_base(budget, &mut found) else { return found };
        let rooted = Path::new("/").join(self.above).join(self.base);
        let mut at = Position { folders: Vec::new(), below: PathBuf::new(), rooted };
        self.enter(&mut at, &mut chain, budget, &mut found, &mut faults);
        while let Some(folder) = at.folders.last_mut() {
            let Some((name, kind)) = folder.entries.get(folder.next) else {
                at.folders.pop();
                chain.pop();
                at.pop();
                continue;
            };
            folder.next += 1;
            let kind = *kind;
            if !self.shown.admits(name) {
                continue;
            }
            at.below.push(name);
            at.rooted.push(name);
            if ignored_along(&chain, &at.rooted, kind.is_dir()).is_none() {
                if kind.is_dir() {
                    if found.stopped.is_none() && self.enter(&mut at, &mut chain, budget, &mut found, &mut faults) {
                        continue;
                    }
                } else if self.matcher.is_match(&at.below) {
                    let relative = self.base.join(&at.below);
                    found.files.push(Match { root: self.root, relative, is_link: kind.is_symlink() });
                }
            }
            at.pop();
        }
        found.unwalked = faults.reasons();
        found
    }

    /// The ignore rules of the folders from the anchor down to the base's parent, when none of those folders below
    /// the anchor, nor the base, is ignored; `None` (nothing to walk) otherwise.
    fn chain_to_base(&self, budget: &mut WalkBudget<'_>, found: &mut Found) -> Option<Vec<Arc<DirRules>>> {
        let mut chain = Vec::new();
        let (mut folder, mut rooted) = (PathBuf::new(), PathBuf::from("/"));
        for name in self.above.join(self.base).iter() {
            chain.push(self.ignores.rules(&folder));
            folder.push(name);
            rooted.push(name);
            if ignored_along(&chain, &rooted, true).is_some() {
                return None;
            }
        }
        found.stopped = budget.visit();
        found.stopped.is_none().then_some(chain)
    }

    /// Lists the folder `at` stands on and pushes it with its ignore rules; `false` when it could not be listed (what
    /// kept the walk out is counted, and a missing base is no fault: the glob then matches nothing).
    fn enter(
        &self,
        at: &mut Position,
        chain: &mut Vec<Arc<DirRules>>,
        budget: &mut WalkBudget<'_>,
        found: &mut Found,
        faults: &mut Faults,
    ) -> bool {
        let listing = match self.roots.read_dir(self.root, &self.base.join(&at.below)) {
            Ok(listing) => listing,
            Err(e) if at.below.as_os_str().is_empty() && crate::platform::is_missing(&e) => return false,
            Err(e) => {
                faults.count(&e);
                return false;
            }
        };
        let mut entries = Vec::new();
        for entry in listing {
            if let Some(why) = budget.visit() {
                found.stopped = Some(why);
                break;
            }
            match entry.and_then(|entry| Ok((entry.file_name(), entry.file_type()?))) {
                Ok(entry) => entries.push(entry),
                Err(e) => faults.count(&e),
            }
        }
        entries.sort_unstable_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
        let listed =
            |name: &str| entries.binary_search_by(|(entry, _)| entry.as_encoded_bytes().cmp(name.as_bytes())).is_ok();
        let judged = at.rooted.strip_prefix("/").unwrap_or(&at.rooted);
        chain.push(self.ignores.listed_rules(judged, &listed));
        at.folders.push(Folder { entries, next: 0 });
        true
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
}

impl Faults {
    fn count(&mut self, io: &io::Error) {
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
        let mut faults = Faults::default();
        for code in [libc::ENAMETOOLONG, libc::EACCES, libc::ENAMETOOLONG, libc::EIO] {
            faults.count(&io::Error::from_raw_os_error(code));
        }
        assert_eq!(
            faults.reasons(),
            [
                "the walk stopped at 2 path(s) longer than the system allows (4096 bytes, PATH_MAX): nothing deeper \
                 can be walked or read by name, so matches there are missing",
                "the walk could not enter 1 folder(s): the operating system denied access, so matches in them are \
                 missing",
                "the walk could not read 1 entr(y/ies) (Input/output error (os error 5)), so matches there may be missing",
            ]
        );
    }

    #[test]
    fn hidden_names_are_walked_only_when_the_pattern_names_one() {
        let name = |n: &str| OsString::from(n);
        let plain = Shown { hidden: false, git: false };
        assert!(plain.admits(&name("x.rs")) && !plain.admits(&name(".hidden")) && !plain.admits(&name(".git")));
        let hidden = Shown { hidden: true, git: false };
        assert!(
            hidden.admits(&name(".hidden")) && !hidden.admits(&name(".git")),
            ".git only when the pattern names it"
        );
        assert!(Shown { hidden: true, git: true }.admits(&name(".git")));
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
