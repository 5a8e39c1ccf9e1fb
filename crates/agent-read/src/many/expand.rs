//! The first step of `read_many`: the request's entries become the files to read, in request order.
//!
//! A literal path is read as given, so its errors (NOT_FOUND with near misses, DENIED, OUTSIDE_ROOT) come from the
//! normal read. A glob becomes its matches, sorted. Every file is kept once, by where it really is (a path, the same
//! path spelled another way, a link to it and a glob match are one file), and at most `max_files` are kept. A glob
//! match the read policy refuses is withheld: counted, never named, so a glob cannot probe for protected names.

use super::glob::{self, Match, WalkBudget};
use super::result::Skipped;
use crate::engine::Reader;
use crate::error::{ErrorCode, ReadError};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::Path;

/// Where an item stands: its entry in `paths`, then its place among that entry's matches.
pub type Order = (usize, usize);

/// A file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Where its section goes.
    pub order: Order,
    /// The path to read and to show in its header.
    pub path: String,
    /// Its size: files are read smallest first.
    pub size: u64,
    /// Whether a glob matched it (then a policy refusal at read time withholds it, unnamed).
    pub from_glob: bool,
}

/// An entry not read, with where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// Where its line goes.
    pub order: Order,
    /// What the result reports.
    pub entry: Skipped,
}

/// The files to read and what was left out before reading.
#[derive(Debug, Default)]
pub struct Expansion {
    /// At most `max_files` files, in request order.
    pub candidates: Vec<Candidate>,
    /// Entries not read.
    pub skipped: Vec<Skip>,
    /// Glob matches withheld by the policy.
    pub withheld: u64,
    /// Whether a walk stopped before its end, or could not enter part of the tree.
    pub walk_stopped: bool,
}

/// Expands the entries (`next_call` gives the `read` call that gets one file).
pub struct Expander<'a> {
    /// The reader whose roots and policy apply.
    pub reader: &'a Reader,
    /// Files kept at most.
    pub max_files: usize,
    /// The follow-up call for a file left out.
    pub next_call: &'a dyn Fn(&str) -> String,
}

impl Expander<'_> {
    /// Expands `paths` in order within the walk budget.
    pub fn expand(&self, paths: &[String], budget: &mut WalkBudget<'_>) -> Expansion {
        let mut state = State::default();
        for (index, entry) in paths.iter().enumerate() {
            if glob::is_glob(entry) {
                self.add_glob(index, entry, budget, &mut state);
            } else {
                self.add_literal(index, entry, &mut state);
            }
        }
        state.out
    }

    fn add_literal(&self, index: usize, entry: &str, state: &mut State) {
        let roots = self.reader.roots();
        // A path that does not resolve is read all the same: the read says what is wrong with it.
        let mut size = 0;
        if let Ok(resolved) = roots.resolve(entry) {
            let key = roots.leads_to(resolved.root, &resolved.relative).unwrap_or((resolved.root, resolved.relative));
            size = roots.symlink_metadata(key.0, &key.1).map(|m| m.len()).unwrap_or(0);
            if !state.seen.insert((key.0, &key.1)) {
                return;
            }
        }
        if state.out.candidates.len() >= self.max_files {
            let reason = format!("not read: max_files={} reached", self.max_files);
            let next = Some((self.next_call)(entry));
            let entry =
                Skipped { path: Some(entry.to_string()), pattern: None, reason, error_code: None, count: 1, next };
            state.out.skipped.push(Skip { order: (index, 0), entry });
            return;
        }
        let candidate = Candidate { order: (index, 0), path: entry.to_string(), size, from_glob: false };
        state.out.candidates.push(candidate);
    }

    fn add_glob(&self, index: usize, pattern: &str, budget: &mut WalkBudget<'_>, state: &mut State) {
        let skip = |sub: usize, reason: String, error_code: Option<ErrorCode>, count: u64| {
            let entry =
                Skipped { path: None, pattern: Some(pattern.to_string()), reason, error_code, count, next: None };
            Skip { order: (index, sub), entry }
        };
        let found = match glob::find(self.reader.roots(), pattern, budget) {
            Ok(found) => found,
            Err(error) => return state.out.skipped.push(skip(0, describe(&error), Some(error.code), 0)),
        };
        let matched = found.files.len();
        let tally = self.keep_matches(index, found.files, state);
        if tally.withheld > 0 {
            let reason = format!(
                "{} match(es) withheld unnamed: denied by the read policy or leading outside the roots",
                tally.withheld
            );
            state.out.skipped.push(skip(matched, reason, Some(ErrorCode::Denied), tally.withheld));
            state.out.withheld += tally.withheld;
        }
        if tally.unspellable > 0 {
            let reason = format!(
                "{} match(es) not read: their names are not valid UTF-8, which no request can spell; rename them to read them",
                tally.unspellable
            );
            state.out.skipped.push(skip(matched + 3, reason, None, tally.unspellable));
        }
        if tally.over > 0 {
            let reason = format!(
                "{} more match(es) not read: max_files={} reached; narrow the glob or raise max_files (at most {})",
                tally.over,
                self.max_files,
                super::request::MAX_FILES
            );
            state.out.skipped.push(skip(matched + 1, reason, None, tally.over));
        }
        let complete = found.stopped.is_none() && found.unwalked.is_empty();
        if matched == 0 {
            let reason = if complete { "the glob matched no file" } else { "the glob matched no file it could reach" };
            state.out.skipped.push(skip(0, reason.to_string(), None, 0));
        }
        if let Some(why) = found.stopped {
            let reason = format!("{why}; matches beyond it are missing: narrow the glob");
            state.out.skipped.push(skip(matched + 2, reason, None, 0));
        }
        for (n, why) in found.unwalked.into_iter().enumerate() {
            state.out.skipped.push(skip(matched + 4 + n, why, None, 0));
        }
        state.out.walk_stopped |= !complete;
    }

    /// Keeps a glob's matches in order: once each, not refused by the policy, up to `max_files`.
    fn keep_matches(&self, index: usize, matches: Vec<Match>, state: &mut State) -> Tally {
        let roots = self.reader.roots();
        let mut tally = Tally::default();
        for (sub, found) in matches.into_iter().enumerate() {
            // A link is one more name for its target: it is kept once, and only when the target is a file within
            // the roots that the policy allows.
            let real = if found.is_link {
                match roots.leads_to(found.root, &found.relative) {
                    Some(real) if roots.symlink_metadata(real.0, &real.1).is_ok_and(|m| m.is_file()) => Some(real),
                    Some(_) => continue,
                    None => {
                        tally.withheld += 1;
                        continue;
                    }
                }
            } else {
                None
            };
            let key = real.as_ref().map_or((found.root, found.relative.as_path()), |(root, path)| (*root, path));
            if state.seen.contains(key) {
                continue;
            }
            if state.out.candidates.len() >= self.max_files {
                // Past the limit nothing more is checked: these are only counted, never named.
                tally.over += 1;
                continue;
            }
            let refused = |(root, path): (usize, &Path)| self.reader.refuses(root, path, false);
            if refused((found.root, &found.relative)) || real.is_some() && refused(key) {
                tally.withheld += 1;
                continue;
            }
            if found.relative.to_str().is_none() {
                tally.unspellable += 1;
                continue;
            }
            // Only a file kept is measured (files are read smallest first): the walk itself measures nothing.
            let size = roots.symlink_metadata(key.0, key.1).map_or(0, |m| m.len());
            let path = roots.display_in(found.root, &found.relative);
            state.seen.insert(key);
            state.out.candidates.push(Candidate { order: (index, sub), path, size, from_glob: true });
        }
        tally
    }
}

/// The message of an error with its next step, as one reason.
fn describe(error: &ReadError) -> String {
    match &error.hint {
        Some(hint) => format!("{}; {hint}", error.message),
        None => error.message.clone(),
    }
}

#[derive(Debug, Default)]
struct State {
    out: Expansion,
    seen: Seen,
}

/// Files kept so far, by root and real path beneath it. The paths are normalized (no `.`, `..` or doubled
/// separators), so each is spelled one way and compared as bytes, which costs less than comparing by component.
#[derive(Debug, Default)]
struct Seen(HashMap<usize, HashSet<OsString>>);

impl Seen {
    fn contains(&self, (root, path): (usize, &Path)) -> bool {
        self.0.get(&root).is_some_and(|paths| paths.contains(path.as_os_str()))
    }

    /// Adds a file; `false` when it was there already.
    fn insert(&mut self, (root, path): (usize, &Path)) -> bool {
        let paths = self.0.entry(root).or_default();
        !paths.contains(path.as_os_str()) && paths.insert(path.as_os_str().to_owned())
    }
}

#[derive(Debug, Default)]
struct Tally {
    withheld: u64,
    over: u64,
    /// Matches whose names are not UTF-8: no request (a JSON string) can name them, so they cannot be read.
    unspellable: u64,
}
