//! Near-miss suggestions for a path that does not exist: up to three siblings of the first missing component,
//! ranked by case-insensitive edit distance, same extension preferred.
//!
//! Nothing here may leak: the walk and the listing go through the root's confined handle (a symlink leading out
//! makes them fail, and then nothing is suggested), and a name the policy denies is never offered.

use crate::policy::{Policy, absolute_of};
use crate::resolve::{Resolved, Roots};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Suggestions offered at most.
const MAX_SUGGESTIONS: usize = 3;
/// Directory entries compared at most, so a huge directory cannot slow an error down.
const MAX_SCANNED: usize = 20_000;
/// Similarity below which a name is not offered.
const MIN_SIMILARITY: f64 = 0.5;

/// What to tell the model about a missing path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NearMiss {
    /// Existing paths it may have meant, shown as request paths.
    pub suggestions: Vec<String>,
    /// The deepest existing directory on the way, shown as a request path.
    pub existing_parent: Option<String>,
}

/// Finds near misses for `resolved`, which does not exist.
pub fn near_misses(roots: &Roots, policy: &Policy, resolved: &Resolved) -> NearMiss {
    let root = resolved.root;
    let components: Vec<&OsStr> = resolved.relative.iter().collect();
    let mut parent = PathBuf::new();
    for (depth, name) in components.iter().enumerate() {
        let next = parent.join(name);
        if roots.symlink_metadata(root, &next).is_ok() {
            parent = next;
            continue;
        }
        let rest: PathBuf = components[depth + 1..].iter().collect();
        let Some(siblings) = ranked_siblings(roots, policy, root, &parent, name) else {
            // The parent could not be opened beneath the root (it leads out): name nothing.
            return NearMiss::default();
        };
        let suggestions = siblings
            .into_iter()
            .map(|sibling| {
                let with_rest = parent.join(&sibling).join(&rest);
                let reachable = !rest.as_os_str().is_empty()
                    && roots.symlink_metadata(root, &with_rest).is_ok()
                    && offerable(roots, policy, root, &with_rest);
                let chosen = if reachable { with_rest } else { parent.join(&sibling) };
                roots.display_in(root, &chosen)
            })
            .collect();
        return NearMiss { suggestions, existing_parent: Some(roots.display_in(root, &parent)) };
    }
    NearMiss::default()
}

fn ranked_siblings(roots: &Roots, policy: &Policy, root: usize, parent: &Path, missing: &OsStr) -> Option<Vec<String>> {
    let dir = roots.open_dir(root, parent).ok()?;
    let missing = missing.to_string_lossy().to_lowercase();
    let missing_ext = extension(&missing);
    let mut scored: Vec<(f64, String)> = dir
        .entries()
        .ok()?
        .take(MAX_SCANNED)
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| {
            let relative = parent.join(name);
            policy.check(&relative, &absolute_of(roots.real_path(root), &relative)).is_ok()
        })
        .filter_map(|name| {
            let lower = name.to_lowercase();
            let mut score = strsim::normalized_damerau_levenshtein(&missing, &lower);
            if extension(&lower) == missing_ext {
                score += 0.1;
            }
            (score >= MIN_SIMILARITY).then_some((score, name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let reachable = |name: &String| offerable(roots, policy, root, &parent.join(name));
    Some(scored.into_iter().map(|(_, name)| name).filter(reachable).take(MAX_SUGGESTIONS).collect())
}

/// A path may be offered only if reading it could succeed: a link leading out of the roots, or to a denied file,
/// would only earn a refusal (and naming it would hint at what lies outside).
fn offerable(roots: &Roots, policy: &Policy, root: usize, relative: &Path) -> bool {
    roots
        .leads_to(root, relative)
        .is_some_and(|(real_root, real)| policy.check(&real, &absolute_of(roots.real_path(real_root), &real)).is_ok())
}

fn extension(name: &str) -> Option<&str> {
    Path::new(name).extension().and_then(OsStr::to_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyConfig;

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
        near_misses(roots, policy, &roots.resolve(path).unwrap())
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
        let (_dir, roots, policy) = setup(&[".env", ".envrc"]);
        assert_eq!(miss(&roots, &policy, ".evn").suggestions, vec![".envrc"]);
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
    fn nothing_similar_means_no_suggestion() {
        let (_dir, roots, policy) = setup(&["alpha.txt"]);
        assert!(miss(&roots, &policy, "zzzzzzzz.bin").suggestions.is_empty());
    }
}
