//! Near-miss suggestions for a path that does not exist: up to three siblings of the first missing component,
//! ranked by case-insensitive edit distance, same extension preferred.
//!
//! Nothing here may leak: the walk and the listing go through the root's confined handle (a symlink leading out
//! makes them fail, and then nothing is suggested), and a name the read policy refuses (deny and allow globs, ignore
//! files when respected), or a link to one, is never offered.
//!
//! An error must come back fast whatever the directory: at most [`MAX_SCANNED`] entries are compared, names whose
//! lengths alone rule them out are skipped, the comparisons' total work is capped, and the read's time budget is
//! checked as the entries go by.

use crate::budget::Budget;
use crate::resolve::{Resolved, Roots};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Suggestions offered at most.
const MAX_SUGGESTIONS: usize = 3;
/// Directory entries compared at most, so a huge directory cannot slow an error down.
const MAX_SCANNED: usize = 20_000;
/// Similarity below which a name is not offered.
const MIN_SIMILARITY: f64 = 0.5;
/// Bonus to the similarity of a name with the missing name's extension.
const SAME_EXTENSION_BONUS: f64 = 0.1;
/// Cells of edit-distance tables filled at most for one error (a comparison fills one per pair of characters):
/// a NOT_FOUND among 20,000 names of 245 characters measured 20 ms for the whole process, where comparing them all took
/// seconds. Names of usual length (30 characters: 900 cells) are compared to about 9,000 of them.
const MAX_COMPARED_CELLS: usize = 8_000_000;
/// Entries between two checks of the time budget.
const ENTRIES_BETWEEN_CHECKS: usize = 256;

/// Whether the read policy refuses a root-relative path (`root`, `relative`, whether it is a directory).
pub type Refuses<'a> = dyn Fn(usize, &Path, bool) -> bool + 'a;

/// What to tell the model about a missing path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NearMiss {
    /// Existing paths it may have meant, shown as request paths.
    pub suggestions: Vec<String>,
    /// The deepest existing directory on the way, shown as a request path.
    pub existing_parent: Option<String>,
}

impl NearMiss {
    /// Adds what another root offered: its suggestions after these, up to the same total; its existing parent when
    /// these have none.
    pub fn merge(&mut self, other: NearMiss) {
        for suggestion in other.suggestions {
            if self.suggestions.len() < MAX_SUGGESTIONS && !self.suggestions.contains(&suggestion) {
                self.suggestions.push(suggestion);
            }
        }
        if self.existing_parent.is_none() {
            self.existing_parent = other.existing_parent;
        }
    }
}

/// Where to look and what may be offered.
pub struct Search<'a> {
    /// The roots the path was resolved in.
    pub roots: &'a Roots,
    /// The read policy, as a question about one path.
    pub refuses: &'a Refuses<'a>,
    /// When to stop comparing names.
    pub budget: &'a Budget,
}

/// Finds near misses for `resolved`, which does not exist.
pub fn near_misses(search: &Search<'_>, resolved: &Resolved) -> NearMiss {
    let (roots, root) = (search.roots, resolved.root);
    let components: Vec<&OsStr> = resolved.relative.iter().collect();
    let mut parent = PathBuf::new();
    for (depth, name) in components.iter().enumerate() {
        let next = parent.join(name);
        if roots.symlink_metadata(root, &next).is_ok() {
            parent = next;
            continue;
        }
        let rest: PathBuf = components[depth + 1..].iter().collect();
        let Some(siblings) = ranked_siblings(search, root, &parent, name) else {
            // The parent could not be opened beneath the root (it leads out): name nothing.
            return NearMiss::default();
        };
        let suggestions = siblings
            .into_iter()
            .map(|sibling| {
                let with_rest = parent.join(&sibling).join(&rest);
                let reachable = !rest.as_os_str().is_empty() && offerable(search, root, &with_rest);
                let chosen = if reachable { with_rest } else { parent.join(&sibling) };
                roots.display_in(root, &chosen)
            })
            .collect();
        return NearMiss { suggestions, existing_parent: Some(roots.display_in(root, &parent)) };
    }
    NearMiss::default()
}

/// The entries of `parent` most like `missing`, best first, each one offerable.
fn ranked_siblings(search: &Search<'_>, root: usize, parent: &Path, missing: &OsStr) -> Option<Vec<String>> {
    let dir = search.roots.open_dir(root, parent).ok()?;
    // A name that is not UTF-8 cannot be asked for in a request, so it is never offered.
    let names =
        dir.entries().ok()?.filter_map(|entry| entry.ok().and_then(|entry| entry.file_name().into_string().ok()));
    let reachable = |name: &String| offerable(search, root, &parent.join(name));
    Some(ranked(&missing.to_string_lossy(), names, search.budget, reachable))
}

/// The names most like `missing` (at most [`MAX_SCANNED`] compared, within the comparison budget and the time
/// budget), best first, those `offerable` refuses left out: what a NOT_FOUND suggests, from a directory or from an
/// archive's members.
pub fn ranked(
    missing: &str,
    names: impl Iterator<Item = String>,
    budget: &Budget,
    offerable: impl Fn(&String) -> bool,
) -> Vec<String> {
    let missing = missing.to_lowercase();
    let missing_chars = missing.chars().count();
    let missing_ext = extension(&missing);
    let mut cells_left = MAX_COMPARED_CELLS;
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (index, name) in names.take(MAX_SCANNED).enumerate() {
        if index % ENTRIES_BETWEEN_CHECKS == 0 && budget.check().is_err() {
            break;
        }
        let lower = name.to_lowercase();
        let chars = lower.chars().count();
        let bonus = if extension(&lower) == missing_ext { SAME_EXTENSION_BONUS } else { 0.0 };
        // The distance is at least the difference in length, which bounds the similarity from above.
        let longest = chars.max(missing_chars).max(1);
        if 1.0 - chars.abs_diff(missing_chars) as f64 / longest as f64 + bonus < MIN_SIMILARITY {
            continue;
        }
        let Some(left) = cells_left.checked_sub(chars * missing_chars) else { break };
        cells_left = left;
        let score = strsim::normalized_damerau_levenshtein(&missing, &lower) + bonus;
        if score >= MIN_SIMILARITY {
            scored.push((score, name));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, name)| name).filter(offerable).take(MAX_SUGGESTIONS).collect()
}

/// A path may be offered only if reading it could succeed: the policy allows it as named and, when it is a link,
/// where it leads; a link leading out of the roots would only earn a refusal (and naming it would hint at what lies
/// outside).
fn offerable(search: &Search<'_>, root: usize, relative: &Path) -> bool {
    let roots = search.roots;
    let Ok(metadata) = roots.symlink_metadata(root, relative) else { return false };
    if (search.refuses)(root, relative, metadata.is_dir()) {
        return false;
    }
    let Some((real_root, real)) = roots.leads_to(root, relative) else { return false };
    // A broken link would only earn another NOT_FOUND.
    let Ok(real_metadata) = roots.symlink_metadata(real_root, &real) else { return false };
    !(search.refuses)(real_root, &real, real_metadata.is_dir())
}

fn extension(name: &str) -> Option<&str> {
    Path::new(name).extension().and_then(OsStr::to_str)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::budget::Cancel;
    use crate::policy::{Policy, PolicyConfig, absolute_of};

    fn setup(files: &[&str]) -> (tempfile::TempDir, Roots, Policy) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        (dir, roots, Policy::new(&PolicyConfig::default()).unwrap())
    }

    fn miss(roots: &Roots, policy: &Policy, path: &str) -> NearMiss {
        let refuses = |root: usize, relative: &Path, _is_dir: bool| {
            policy.check(relative, &absolute_of(roots.real_path(root), relative)).is_err()
        };
        let budget = Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(60), Cancel::new());
        near_misses(&Search { roots, refuses: &refuses, budget: &budget }, &roots.resolve(path).unwrap())
    }

    #[test]
    fn suggests_case_and_typo_variants_same_extension_first() {
        let (_dir, roots, policy) = setup(&["src/main.rs", "src/main.py", "src/lib.rs", "README.md"]);
        let m = miss(&roots, &policy, "src/mian.rs");
        assert_eq!(m.suggestions.first().map(String::as_str), Some("src/main.rs"));
        assert_eq!(m.existing_parent.as_deref(), Some("src"));
        assert_eq!(miss(&roots, &policy, "readme.md").suggestions, vec!["README.md"]);
    }

    #[test]
    fn missing_directory_suggests_the_full_path_when_it_exists() {
        let (_dir, roots, policy) = setup(&["utils/mod.rs"]);
        let m = miss(&roots, &policy, "utls/mod.rs");
        assert_eq!(m.suggestions, vec!["utils/mod.rs"]);
        assert_eq!(m.existing_parent.as_deref(), Some("."));
    }

    #[test]
    fn never_suggests_denied_names() {
        let (_dir, roots, policy) = setup(&[".env", ".envrc", ".eno"]);
        assert_eq!(miss(&roots, &policy, ".evn").suggestions, vec![".eno"]);
    }

    #[test]
    fn never_suggests_through_a_symlink_leading_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret_plan.txt"), "x").unwrap();
        let (dir, roots, policy) = setup(&["a.txt"]);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
        assert_eq!(miss(&roots, &policy, "linkdir/secret_plan.tx"), NearMiss::default());
    }

    #[test]
    fn never_suggests_a_link_leading_out() {
        let outside = tempfile::tempdir().unwrap();
        let (dir, roots, policy) = setup(&["link_in.txt"]);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link_out")).unwrap();
        std::fs::write(dir.path().join(".env"), "K=1").unwrap();
        std::os::unix::fs::symlink(".env", dir.path().join("link_env")).unwrap();
        assert_eq!(miss(&roots, &policy, "link_up").suggestions, Vec::<String>::new());
        assert_eq!(miss(&roots, &policy, "link_in.tx").suggestions, vec!["link_in.txt"]);
    }

    #[test]
    fn a_spent_time_budget_stops_the_comparisons() {
        let (_dir, roots, policy) = setup(&["src/main.rs"]);
        let refuses = |_: usize, _: &Path, _: bool| false;
        let spent = Budget::new(std::time::Instant::now(), Cancel::new());
        let search = Search { roots: &roots, refuses: &refuses, budget: &spent };
        let m = near_misses(&search, &roots.resolve("src/mian.rs").unwrap());
        assert_eq!(m.suggestions, Vec::<String>::new());
        assert_eq!(m.existing_parent.as_deref(), Some("src"), "the parent is still named");
        assert_eq!(miss(&roots, &policy, "src/mian.rs").suggestions, vec!["src/main.rs"]);
    }

    #[test]
    fn a_broken_link_is_not_offered() {
        let (dir, roots, policy) = setup(&["notes.md"]);
        std::os::unix::fs::symlink("gone.md", dir.path().join("notes_link.md")).unwrap();
        assert_eq!(miss(&roots, &policy, "notes_lnk.md").suggestions, vec!["notes.md"]);
    }

    #[test]
    fn nothing_similar_means_no_suggestion() {
        let (_dir, roots, policy) = setup(&["alpha.txt"]);
        assert!(miss(&roots, &policy, "zzzzzzzz.bin").suggestions.is_empty());
    }
}
