//! Globs made of names and `*` alone, matched without compiling them: most policy globs are such (`.env`, `*.pem`,
//! `id_rsa*`, `.kube/config`, `/proc/**/environ`), and compiling them to regular expressions cost more than the read
//! a one-shot command line makes (see `rules`, which gives every other glob to `globset`).
//!
//! They mean what `globset` makes of them with `literal_separator` set: `*` matches any run of bytes within one name
//! (a leading `.` included), `**` as a whole name matches any number of names, none included, and everything else
//! matches itself, byte for byte. Paths are matched as bytes with `/` between names (see `rules`, which spells them
//! so).
//!
//! Literal names (`**/.env`) and extensions (`**/*.pem`) are looked up by hash, so a long list of them costs one
//! lookup each per name checked; the others are tried in order.

use std::collections::HashMap;

/// One name of a glob, cut at its `*`s: `a*b*c` is `a`, `b`, `c`; a name without `*` is one piece.
#[derive(Debug, Clone)]
struct NameGlob {
    pieces: Vec<Vec<u8>>,
}

impl NameGlob {
    fn new(name: &str) -> NameGlob {
        NameGlob { pieces: name.as_bytes().split(|&b| b == b'*').map(<[u8]>::to_vec).collect() }
    }

    /// Whether `name` matches: it starts with the first piece, ends with the last, and holds the others in order
    /// between them (each at its leftmost place, which leaves the most room for the next).
    fn matches(&self, name: &[u8]) -> bool {
        let Some((first, rest)) = self.pieces.split_first() else { return name.is_empty() };
        let Some((last, middle)) = rest.split_last() else { return name == first.as_slice() };
        if name.len() < first.len() + last.len() || !name.starts_with(first) || !name.ends_with(last) {
            return false;
        }
        let mut between = &name[first.len()..name.len() - last.len()];
        for piece in middle {
            match memchr::memmem::find(between, piece) {
                Some(at) => between = &between[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
}

/// One glob: its names, with at most one `**` among them.
#[derive(Debug, Clone)]
struct Wildcard {
    /// Names before the `**` (all of them when there is none).
    head: Vec<NameGlob>,
    /// Names after the `**`, when there is one.
    tail: Option<Vec<NameGlob>>,
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
        let globs = |names: &[&str]| names.iter().map(|name| NameGlob::new(name)).collect::<Vec<_>>();
        match names.iter().position(|name| name.contains("**")) {
            None => Some(Wildcard { head: globs(&names), tail: None }),
            Some(at) if names[at] == "**" => {
                Some(Wildcard { head: globs(&names[..at]), tail: Some(globs(&names[at + 1..])) })
            }
            Some(_) => None,
        }
    }

    /// Whether `path` (`count` names between `/`) matches, its last names tried first: they reject most paths.
    fn matches(&self, path: &[u8], count: usize) -> bool {
        let names = || path.split(|&b| b == b'/');
        let head_matches = || self.head.iter().zip(names()).all(|(glob, name)| glob.matches(name));
        match &self.tail {
            None => count == self.head.len() && head_matches(),
            Some(tail) => {
                let last_names = path.rsplit(|&b| b == b'/');
                count >= self.head.len() + tail.len()
                    && tail.iter().rev().zip(last_names).all(|(glob, name)| glob.matches(name))
                    && head_matches()
            }
        }
    }

    /// The name matched by hash when this is `**/NAME` with no `*` in NAME.
    fn literal_name(&self) -> Option<&[u8]> {
        match (self.head.as_slice(), self.tail.as_deref()) {
            ([], Some([name])) if name.pieces.len() == 1 => Some(&name.pieces[0]),
            _ => None,
        }
    }

    /// The extension matched by hash when this is `**/*.EXT`, EXT holding no `*` and no `.`.
    fn extension(&self) -> Option<&[u8]> {
        match (self.head.as_slice(), self.tail.as_deref()) {
            ([], Some([name])) => match name.pieces.as_slice() {
                [star, extension] if star.is_empty() => {
                    let extension = extension.strip_prefix(b".")?;
                    (!extension.is_empty() && !extension.contains(&b'.')).then_some(extension)
                }
                _ => None,
            },
            _ => None,
        }
    }
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

    /// The smallest index of a glob matching `path`: its bytes, with `/` between names (lowercased already when
    /// matching ignores case).
    pub fn first_match(&self, path: &[u8]) -> Option<usize> {
        let last = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
        let by_name = if self.names.is_empty() { None } else { self.names.get(last).copied() };
        let by_extension = match last.iter().rposition(|&b| b == b'.') {
            Some(dot) if !self.extensions.is_empty() => self.extensions.get(&last[dot + 1..]).copied(),
            _ => None,
        };
        let hashed = by_name.into_iter().chain(by_extension).min();
        let before = hashed.unwrap_or(usize::MAX);
        let count = memchr::memchr_iter(b'/', path).count() + 1;
        let mut others = self.others.iter().take_while(|(index, _)| *index < before);
        let other = others.find(|(_, wildcard)| wildcard.matches(path, count));
        other.map(|(index, _)| *index).or(hashed)
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
        assert_eq!(ours.first_match(path.as_bytes()).is_some(), theirs.is_match(path), "{glob} on {path}");
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
                proptest::prop_assert_eq!(ours.first_match(path.as_bytes()).is_some(), theirs.is_match(&path));
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
        assert_eq!(ours.first_match(b"a/server.key"), Some(1));
        assert_eq!(ours.first_match(b"secret.key"), Some(0));
        assert_eq!(ours.first_match(b"main.rs"), None);
    }

    #[test]
    fn names_that_are_not_unicode_are_matched_as_bytes() {
        let mut ours = Wildcards::default();
        assert!(ours.add(0, "**/*.pem") && ours.add(1, "**/k*y"));
        assert_eq!(ours.first_match(b"d/k\xff.pem"), Some(0));
        assert_eq!(ours.first_match(b"k\xfe\xffy"), Some(1));
    }
}
