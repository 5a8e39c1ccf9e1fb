//! Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) read as git reads them, failing closed.
//!
//! Git's rules, which this module keeps:
//! - A path is ignored when an ancestor directory is: git never looks inside an ignored directory, so no ignore file
//!   there (nor a later `!` line anywhere) can bring a file back.
//! - Otherwise the deepest directory whose ignore files have a rule for the path decides, and within a directory the
//!   last matching line does (`.ignore` after `.gitignore`, both above the repository's `.git/info/exclude`).
//! - Git has no `{a,b}` alternation: braces are plain characters, and so they are here.
//!
//! Failing closed where the `ignore` crate alone would not:
//! - A line that still cannot be compiled (a dangling `\`, a reversed range `[z-a]`) is taken as a literal name, the
//!   way git takes characters that do not form a pattern; the other lines are kept. (The crate skips such a line, and
//!   a line its regex engine refuses made it drop the whole file.)
//! - Bytes that are not UTF-8 each match any one byte (`?`), so the line still denies the name it spells.
//! - An ignore file that cannot be read (larger than [`MAX_IGNORE_FILE`], unreadable, leading outside the roots) or
//!   whose rules cannot be compiled together denies everything beneath its directory, naming the file: what it would
//!   deny cannot be known.

use super::Denial;
use super::bounds::class_end;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Largest ignore file read; a larger one denies everything beneath its directory.
pub const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// Longest line compiled as a pattern; a longer one makes its file fail closed.
const MAX_LINE_BYTES: usize = 4096;

/// The ignore files of one directory, lowest precedence first, as paths relative to that directory.
const FILES: [&str; 3] = [".git/info/exclude", ".gitignore", ".ignore"];

/// What reading one ignore file gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreFile {
    /// There is none (or it is not a regular file).
    Missing,
    /// Its bytes.
    Text(Vec<u8>),
    /// It exists but cannot be used: why, in a few words.
    Unreadable(String),
}

/// The compiled ignore files of one directory.
#[derive(Debug)]
pub enum DirRules {
    /// No ignore file.
    None,
    /// Compiled rules.
    Rules(Box<Compiled>),
    /// An ignore file that cannot be used: everything beneath is denied by this rule.
    Uncheckable(String),
}

/// The `.gitignore` and `.ignore` rules, then those of `.git/info/exclude` (consulted only when the first say
/// nothing); `written` maps a line changed for `globset` back to the line as the file has it.
#[derive(Debug)]
pub struct Compiled {
    own: Gitignore,
    exclude: Gitignore,
    written: HashMap<String, String>,
}

/// What one directory's rules say of a path.
enum Verdict {
    Ignored(String),
    Kept,
    Silent,
}

impl DirRules {
    /// Reads and compiles the ignore files of `dir` (relative to the root of the paths checked) with `read`.
    fn load(dir: &Path, read: &dyn Fn(&Path) -> IgnoreFile) -> DirRules {
        let base = Path::new("/").join(dir);
        let mut own = GitignoreBuilder::new(&base);
        let mut exclude = GitignoreBuilder::new(&base);
        let (mut any, mut written) = (false, HashMap::new());
        for name in FILES {
            let file = dir.join(name);
            let builder = if name == FILES[0] { &mut exclude } else { &mut own };
            match read(&file) {
                IgnoreFile::Missing => continue,
                IgnoreFile::Unreadable(why) => return DirRules::Uncheckable(uncheckable(&file, &why)),
                IgnoreFile::Text(bytes) => {
                    if let Err(why) = add_lines(builder, &file, &bytes, &mut written) {
                        return DirRules::Uncheckable(uncheckable(&file, &why));
                    }
                    any = true;
                }
            }
        }
        if !any {
            return DirRules::None;
        }
        match (own.build(), exclude.build()) {
            (Ok(own), Ok(exclude)) => DirRules::Rules(Box::new(Compiled { own, exclude, written })),
            (Err(e), _) | (_, Err(e)) => {
                DirRules::Uncheckable(format!("ignore files of {}: cannot be compiled ({e})", shown_dir(dir)))
            }
        }
    }

    /// What these rules say of `rooted`: a path relative to the root of the paths checked, written with a leading
    /// `/` (the rules are compiled beneath `/`).
    fn verdict(&self, rooted: &Path, is_dir: bool) -> Verdict {
        let (own, exclude, written) = match self {
            DirRules::None => return Verdict::Silent,
            DirRules::Uncheckable(rule) => return Verdict::Ignored(rule.clone()),
            DirRules::Rules(compiled) => (&compiled.own, &compiled.exclude, &compiled.written),
        };
        for rules in [own, exclude] {
            match rules.matched(rooted, is_dir) {
                Match::None => continue,
                Match::Whitelist(_) => return Verdict::Kept,
                Match::Ignore(glob) => {
                    let file = glob.from().map(|p| p.display().to_string()).unwrap_or_default();
                    let line = written.get(glob.original()).map_or(glob.original(), String::as_str);
                    return Verdict::Ignored(format!("{file}: {line}"));
                }
            }
        }
        Verdict::Silent
    }
}

/// The rule that denies everything beneath an ignore file that cannot be used.
fn uncheckable(file: &Path, why: &str) -> String {
    format!("{}: {why}, so what it ignores cannot be known", file.display())
}

fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() { ".".to_string() } else { dir.display().to_string() }
}

/// Adds every line of `bytes` to `builder` as git reads it (see the module documentation), noting in `written` each
/// line changed on the way; an error only for a line too long to compile.
fn add_lines(
    builder: &mut GitignoreBuilder,
    file: &Path,
    bytes: &[u8],
    written: &mut HashMap<String, String>,
) -> Result<(), String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    for (number, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            return Err(format!("line {} is longer than {MAX_LINE_BYTES} bytes", number + 1));
        }
        let mut text = git_pattern(line);
        if builder.add_line(Some(file.to_path_buf()), &text).is_err() {
            // Still not a pattern: the name as written.
            text = escape_all(&text);
            builder
                .add_line(Some(file.to_path_buf()), &text)
                .map_err(|e| format!("line {} cannot be compiled ({e})", number + 1))?;
        }
        let as_written = String::from_utf8_lossy(line);
        if text != as_written {
            written.insert(kept(&text).to_string(), kept(&as_written).to_string());
        }
    }
    Ok(())
}

/// A line as `add_line` keeps it: without trailing white space, unless the last space is escaped.
fn kept(line: &str) -> &str {
    if line.ends_with("\\ ") { line } else { line.trim_end() }
}

/// A line as a `globset` pattern meaning what git means: braces escaped (git has no alternation), and every byte
/// that is not UTF-8 made `?` (any one byte, since `globset` matches bytes).
fn git_pattern(line: &[u8]) -> String {
    let mut text = String::with_capacity(line.len());
    for chunk in line.utf8_chunks() {
        text.push_str(chunk.valid());
        chunk.invalid().iter().for_each(|_| text.push('?'));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => {
                out.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    out.push(next);
                    i += 1;
                }
            }
            '[' => {
                // A class is copied whole: braces inside it are members already.
                let end = class_end(&chars, i).unwrap_or(i);
                out.extend(&chars[i..=end]);
                i = end;
            }
            '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// `text` with every wildcard character escaped (a leading `!`, slashes and a trailing `/` keep their meaning).
fn escape_all(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The ignore files beneath one root, each directory's compiled once and kept while this lives (a check, or a walk).
pub struct IgnoreFiles<F> {
    read: F,
    dirs: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
    /// The rules of every directory without ignore files, shared.
    none: Arc<DirRules>,
}

impl<F: Fn(&Path) -> IgnoreFile> IgnoreFiles<F> {
    /// Ignore files read with `read` (a path relative to the root, e.g. `src/.gitignore`).
    pub fn new(read: F) -> Self {
        IgnoreFiles { read, dirs: Mutex::new(HashMap::new()), none: Arc::new(DirRules::None) }
    }

    /// The rules of directory `dir` (relative to the root of the paths checked), read once.
    pub fn rules(&self, dir: &Path) -> Arc<DirRules> {
        if let Some(rules) = self.dirs.lock().unwrap_or_else(PoisonError::into_inner).get(dir) {
            return rules.clone();
        }
        let rules = Arc::new(DirRules::load(dir, &self.read));
        self.dirs.lock().unwrap_or_else(PoisonError::into_inner).insert(dir.to_path_buf(), rules.clone());
        rules
    }

    /// The rules of directory `dir` whose listing is known: only the ignore files `listed` names (`.gitignore`,
    /// `.ignore`, `.git`) are looked for, so a directory without any costs no open. Not kept: a walk lists each
    /// directory once.
    pub fn listed_rules(&self, dir: &Path, listed: &dyn Fn(&str) -> bool) -> Arc<DirRules> {
        if ![".git", ".gitignore", ".ignore"].into_iter().any(listed) {
            return self.none.clone();
        }
        let read = |file: &Path| {
            let first = file.strip_prefix(dir).ok().and_then(|rest| rest.iter().next()).and_then(|name| name.to_str());
            if first.is_some_and(listed) { (self.read)(file) } else { IgnoreFile::Missing }
        };
        Arc::new(DirRules::load(dir, &read))
    }

    /// Whether `relative` is ignored, as git decides: through an ignored ancestor, or by its own rules.
    pub fn ignored(&self, relative: &Path, is_dir: bool) -> Option<Denial> {
        let prefixes: Vec<&Path> = relative.ancestors().filter(|p| !p.as_os_str().is_empty()).collect();
        prefixes.iter().rev().find_map(|prefix| self.entry_ignored(prefix, is_dir || *prefix != relative))
    }

    /// Whether `relative` itself is ignored by the rules above it, its ancestors being known not to be.
    fn entry_ignored(&self, relative: &Path, is_dir: bool) -> Option<Denial> {
        let rooted = Path::new("/").join(relative);
        for dir in relative.ancestors().skip(1) {
            match self.rules(dir).verdict(&rooted, is_dir) {
                Verdict::Ignored(rule) => return Some(Denial { rule }),
                Verdict::Kept => return None,
                Verdict::Silent => {}
            }
        }
        None
    }
}

/// Whether a path is ignored by the rules of the directories above it, `chain` holding each one's from the root of
/// the paths checked down to the path's parent, its ancestors being known not to be ignored (a walk's). The path is
/// `rooted`: relative to the root of the paths checked, written with a leading `/`.
pub fn ignored_along(chain: &[Arc<DirRules>], rooted: &Path, is_dir: bool) -> Option<Denial> {
    for rules in chain.iter().rev() {
        match rules.verdict(rooted, is_dir) {
            Verdict::Ignored(rule) => return Some(Denial { rule }),
            Verdict::Kept => return None,
            Verdict::Silent => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> IgnoreFiles<impl Fn(&Path) -> IgnoreFile + use<>> {
        let list: Vec<(PathBuf, Vec<u8>)> =
            list.iter().map(|(n, t)| (PathBuf::from(n), t.as_bytes().to_vec())).collect();
        IgnoreFiles::new(move |path: &Path| {
            let found = list.iter().find(|(name, _)| name == path);
            found.map_or(IgnoreFile::Missing, |(_, bytes)| IgnoreFile::Text(bytes.clone()))
        })
    }

    fn rule(files: &IgnoreFiles<impl Fn(&Path) -> IgnoreFile>, path: &str) -> Option<String> {
        files.ignored(Path::new(path), false).map(|denial| denial.rule)
    }

    #[test]
    fn the_deepest_rule_decides_and_the_last_line_wins() {
        let f = files(&[(".gitignore", "*.tmp\ntarget/\n"), ("sub/.ignore", "!keep.tmp\n")]);
        assert_eq!(rule(&f, "target/debug/x").as_deref(), Some(".gitignore: target/"));
        assert_eq!(rule(&f, "a.tmp").as_deref(), Some(".gitignore: *.tmp"));
        assert_eq!(rule(&f, "sub/keep.tmp"), None);
        assert_eq!(rule(&f, "src/main.rs"), None);
    }

    #[test]
    fn nothing_inside_an_ignored_directory_comes_back() {
        let deeper = files(&[(".gitignore", "build/\n"), ("build/.gitignore", "!keep.txt\n")]);
        assert_eq!(rule(&deeper, "build/keep.txt").as_deref(), Some(".gitignore: build/"));
        let same_file = files(&[(".gitignore", "build/\n!build/keep.txt\n")]);
        assert_eq!(rule(&same_file, "build/keep.txt").as_deref(), Some(".gitignore: build/"));
        // A file (not a directory) can be brought back by a later line.
        let file_level = files(&[(".gitignore", "*.txt\n!keep.txt\n")]);
        assert_eq!(rule(&file_level, "keep.txt"), None);
    }

    #[test]
    fn a_line_the_crate_cannot_compile_keeps_every_other_rule_and_means_what_git_means() {
        let nested = format!("{}a{}\n*.log\n", "{".repeat(250), "}".repeat(250));
        let f = files(&[(".gitignore", &nested)]);
        assert_eq!(rule(&f, "x.log").as_deref(), Some(".gitignore: *.log"));
        let f = files(&[(".gitignore", "a{b\n{x,y}\nz\\\n[z-a]\n*.log\n")]);
        for (path, line) in [("a{b", "a{b"), ("{x,y}", "{x,y}"), ("z\\", "z\\"), ("[z-a]", "[z-a]"), ("q.log", "*.log")]
        {
            assert_eq!(rule(&f, path), Some(format!(".gitignore: {line}")), "{path}");
        }
        assert_eq!(rule(&f, "x"), None, "braces are no alternation in git");
    }

    #[test]
    #[cfg(unix)]
    fn bytes_that_are_not_utf8_still_deny_the_name() {
        let f = IgnoreFiles::new(|path: &Path| match path.to_str() {
            Some(".gitignore") => IgnoreFile::Text(b"caf\xe9.txt\r\n".to_vec()),
            _ => IgnoreFile::Missing,
        });
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        assert!(f.ignored(Path::new(name), false).is_some());
        assert_eq!(rule(&f, "cafe.txt").as_deref(), Some(".gitignore: caf\u{fffd}.txt"), "one byte, any byte");
    }

    #[test]
    fn an_ignore_file_that_cannot_be_used_denies_everything_beneath_it() {
        let f = IgnoreFiles::new(|path: &Path| match path.to_str() {
            Some("sub/.gitignore") => IgnoreFile::Unreadable("larger than 1 MiB".into()),
            _ => IgnoreFile::Missing,
        });
        let denied = f.ignored(Path::new("sub/deep/x.rs"), false).unwrap().rule;
        assert_eq!(denied, "sub/.gitignore: larger than 1 MiB, so what it ignores cannot be known");
        assert!(f.ignored(Path::new("other/x.rs"), false).is_none());
        let long = format!("{}\n", "x".repeat(5000));
        assert!(rule(&files(&[(".gitignore", &long)]), "a").unwrap().contains("line 1 is longer than 4096 bytes"));
    }

    #[test]
    fn the_repository_exclude_file_yields_to_the_gitignore_files() {
        let f = files(&[(".git/info/exclude", "*.local\nnotes.md\n"), (".gitignore", "!notes.md\n")]);
        assert_eq!(rule(&f, "a.local").as_deref(), Some(".git/info/exclude: *.local"));
        assert_eq!(rule(&f, "notes.md"), None);
    }
}
