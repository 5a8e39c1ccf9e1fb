//! Globs made of names and `*` alone, matched without compiling them: most policy globs are such (`.env`, `*.pem`,
//! `id_rsa*`, `.kube/config`, `/proc/**/environ`), and compiling them to regular expressions cost more than the read
//! a one-shot command line makes (see `rules`, which gives every other glob to `globset`).
//!
//! They mean what `globset` makes of them with `literal_separator` set: `*` matches any run of bytes within one name
//! (a leading `.` included), `**` as a whole name matches any number of names, none included, and everything else
//! matches itself, byte for byte. Paths are matched as bytes with `/` between names (on Windows `\` is turned into
//! `/`, and a name that is not Unicode is read lossily, as `globset` reads it).
//!
//! Literal names (`**/.env`) and extensions (`**/*.pem`) are looked up by hash, so a long list of them costs one
//! lookup each per name checked; the others are tried in order.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// One glob: its names, with at most one `**` among them.
#[derive(Debug, Clone)]
struct Wildcard {
    /// Names before the `**` (all of them when there is none).
    head: Vec<Vec<u8>>,
    /// Names after the `**`, when there is one.
    tail: Option<Vec<Vec<u8>>>,
}

impl Wildcard {
    /// The glob, when it is one this module matches: names of literal bytes and `*`, no empty name but a leading one
    /// (an absolute glob), at most one `**`, which is a whole name and not the last.
    fn parse(glob: &str) -> Option<Wildcard> {
        if glob.contains(['?', '[', ']', '{', '}', '\\']) {
            return None;
        }
        let names: Vec<&str> = glob.split('/').collect();
        let empty_past_the_first = names.iter().skip(1).any(|name| name.is_empty());
        let stars = names.iter().filter(|name| name.contains("**")).count();
        if empty_past_the_first || stars > 1 || names.last().is_some_and(|name| name.contains("**")) {
            return None;
        }
        let bytes = |names: &[&str]| names.iter().map(|name| name.as_bytes().to_vec()).collect::<Vec<_>>();
        match names.iter().position(|name| name.contains("**")) {
            None => Some(Wildcard { head: bytes(&names), tail: None }),
            Some(at) if names[at] == "**" => {
                Some(Wildcard { head: bytes(&names[..at]), tail: Some(bytes(&names[at + 1..])) })
            }
            Some(_) => None,
        }
    }

    fn matches(&self, names: &[&[u8]]) -> bool {
        let head_matches = |names: &[&[u8]]| self.head.iter().zip(names).all(|(glob, name)| name_matches(glob, name));
        match &self.tail {
            None => names.len() == self.head.len() && head_matches(names),
            Some(tail) => {
                names.len() >= self.head.len() + tail.len()
                    && head_matches(names)
                    && tail.iter().zip(&names[names.len() - tail.len()..]).all(|(glob, name)| name_matches(glob, name))
            }
        }
    }

    /// The name matched by hash when this is `**/NAME` with no `*` in NAME.
    fn literal_name(&self) -> Option<&[u8]> {
        match (self.head.as_slice(), self.tail.as_deref()) {
            ([], Some([name])) if !name.contains(&b'*') => Some(name),
            _ => None,
        }
    }

    /// The extension matched by hash when this is `**/*.EXT`, EXT holding no `*` and no `.`.
    fn extension(&self) -> Option<&[u8]> {
        match (self.head.as_slice(), self.tail.as_deref()) {
            ([], Some([name])) => {
                let extension = name.strip_prefix(b"*.")?;
                let plain = !extension.is_empty() && !extension.iter().any(|&b| b == b'*' || b == b'.');
                plain.then_some(extension)
            }
            _ => None,
        }
    }
}

/// Whether `name` matches one name of a glob (`*` any run of bytes, the rest itself).
fn name_matches(glob: &[u8], name: &[u8]) -> bool {
    let mut pieces = glob.split(|&b| b == b'*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let mut pieces: Vec<&[u8]> = pieces.collect();
    let Some(last) = pieces.pop() else { return rest.is_empty() };
    let Some(middle) = rest.len().checked_sub(last.len()).filter(|&at| rest[at..] == *last) else { return false };
    rest = &rest[..middle];
    // Each middle piece at its leftmost place leaves the most room for the next: enough for `*` runs.
    for piece in pieces {
        match memchr::memmem::find(rest, piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Globs of this kind, each with its place in the list it came from.
#[derive(Debug, Clone, Default)]
pub struct Wildcards {
    names: HashMap<Vec<u8>, usize>,
    extensions: HashMap<Vec<u8>, usize>,
    others: Vec<(usize, Wildcard)>,
}

impl Wildcards {
    /// Adds `glob` (lowercased already when matching ignores case) as the rule at `index`; `false`, adding nothing,
    /// when it is not one this module matches.
    pub fn add(&mut self, index: usize, glob: &str) -> bool {
        let Some(wildcard) = Wildcard::parse(glob) else { return false };
        if let Some(name) = wildcard.literal_name() {
            self.names.entry(name.to_vec()).or_insert(index);
        } else if let Some(extension) = wildcard.extension() {
            self.extensions.entry(extension.to_vec()).or_insert(index);
        } else {
            self.others.push((index, wildcard));
        }
        true
    }

    /// The smallest index of a glob matching `path`.
    pub fn first_match(&self, path: &Path) -> Option<usize> {
        let bytes = path_bytes(path);
        let names: Vec<&[u8]> = bytes.split(|&b| b == b'/').collect();
        let last = names.last().copied().unwrap_or_default();
        let by_name = self.names.get(last).copied();
        let extension = last.iter().rposition(|&b| b == b'.').map(|dot| &last[dot + 1..]);
        let by_extension = extension.and_then(|extension| self.extensions.get(extension).copied());
        let hashed = by_name.into_iter().chain(by_extension).min();
        let before = hashed.unwrap_or(usize::MAX);
        let other = self.others.iter().take_while(|(index, _)| *index < before).find(|(_, w)| w.matches(&names));
        other.map(|(index, _)| *index).or(hashed)
    }
}

/// A path as `globset` reads it: its bytes, with `/` between names.
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        Cow::Borrowed(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        Cow::Owned(path.to_string_lossy().replace('\\', "/").into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobBuilder;

    /// Whether this module and `globset` agree on `glob` and `path`.
    fn agree(glob: &str, path: &str) {
        let mut ours = Wildcards::default();
        assert!(ours.add(0, glob), "{glob} is one of ours");
        let theirs = GlobBuilder::new(glob).literal_separator(true).build().unwrap().compile_matcher();
        assert_eq!(ours.first_match(Path::new(path)).is_some(), theirs.is_match(path), "{glob} on {path}");
    }

    #[test]
    fn matches_as_globset_does() {
        let globs = [
            "**/.env",
            "**/.env.*",
            "**/*.pem",
            "**/id_rsa*",
            "**/.*_history",
            "**/*secret*",
            "**/.kube/config",
            "**/a*b*c",
            "**/*.tar.gz",
            "/proc/**/environ",
            "/etc/shadow",
            "docs/*.md",
            "src",
            "*",
            "**/*",
            "a/**/b/*.rs",
        ];
        let paths = [
            ".env",
            "a/.env",
            ".env.local",
            ".envrc",
            "x.pem",
            ".pem",
            "pem",
            "a.pem/b",
            "id_rsa",
            "k/id_rsa.pub",
            ".bash_history",
            "_history",
            "my_secret_file",
            "secret",
            "a/.kube/config",
            ".kube/config",
            "kube/config",
            "abc",
            "axbxc",
            "acb",
            "abcbc",
            "x.tar.gz",
            "tar.gz",
            "/proc/1/environ",
            "/proc/environ",
            "/proc/1/task/2/environ",
            "/proc/1/mem",
            "/etc/shadow",
            "/etc/shadow-",
            "docs/a.md",
            "docs/x/a.md",
            "src",
            "src/x",
            "",
            "a/b/x.rs",
            "a/x/y/b/z.rs",
            "a/b/c/z.rs",
        ];
        for glob in globs {
            for path in paths {
                agree(glob, path);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_glob_of_names_and_stars_matches_as_globset_does(
            glob in "(/|\\*\\*/)?([ab.*]{0,4}/|\\*\\*/){0,3}[ab.*]{1,4}",
            path in "/?([ab.]{0,3}/){0,4}[ab.]{0,4}",
        ) {
            let mut ours = Wildcards::default();
            if ours.add(0, &glob) {
                let theirs = GlobBuilder::new(&glob).literal_separator(true).build().unwrap().compile_matcher();
                proptest::prop_assert_eq!(ours.first_match(Path::new(&path)).is_some(), theirs.is_match(&path));
            }
        }
    }

    #[test]
    fn globs_with_other_syntax_are_left_to_globset() {
        let mut ours = Wildcards::default();
        for glob in ["a?", "[ab]", "{a,b}", "a\\*", "a**", "a/**", "a//b", "**/**/a", "a/**b/c", "**"] {
            assert!(!ours.add(0, glob), "{glob}");
        }
        assert!(ours.add(0, "/abs/x") && ours.add(1, "**/x*y"));
    }

    #[test]
    fn the_first_rule_in_order_wins_whichever_way_it_is_looked_up() {
        let mut ours = Wildcards::default();
        for (index, glob) in ["**/*secret*", "**/*.key", "**/server.key", "**/*.key"].iter().enumerate() {
            assert!(ours.add(index, glob));
        }
        assert_eq!(ours.first_match(Path::new("a/server.key")), Some(1));
        assert_eq!(ours.first_match(Path::new("secret.key")), Some(0));
        assert_eq!(ours.first_match(Path::new("main.rs")), None);
    }

    #[test]
    #[cfg(unix)]
    fn names_that_are_not_unicode_are_matched_as_bytes() {
        use std::os::unix::ffi::OsStrExt as _;
        let mut ours = Wildcards::default();
        assert!(ours.add(0, "**/*.pem"));
        let name = std::ffi::OsStr::from_bytes(b"k\xff.pem");
        assert_eq!(ours.first_match(Path::new(name)), Some(0));
    }
}
