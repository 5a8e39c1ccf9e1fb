//! Near-miss suggestions for a path that does not exist: up to three siblings of the first missing component,
//! ranked by case-insensitive edit distance, same extension preferred. Only entries inside the root are ever looked
//! at, because the scan starts from the deepest existing directory beneath the root.

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
pub fn near_misses(roots: &Roots, resolved: &Resolved) -> NearMiss {
    let root_real = match roots.real_paths().nth(resolved.root) {
        Some(root) => root.to_path_buf(),
        None => return NearMiss::default(),
    };
    let components: Vec<&OsStr> = resolved.relative.iter().collect();
    let mut parent = PathBuf::new();
    for (depth, name) in components.iter().enumerate() {
        let next = parent.join(name);
        if std::fs::symlink_metadata(root_real.join(&next)).is_ok() {
            parent = next;
            continue;
        }
        let parent_real = std::fs::canonicalize(root_real.join(&parent)).unwrap_or_default();
        if !roots.is_inside(&parent_real) {
            // The walk went through a symlink that leads out: nothing there may be named.
            return NearMiss::default();
        }
        let rest: PathBuf = components[depth + 1..].iter().collect();
        let suggestions = ranked_siblings(&root_real.join(&parent), name)
            .into_iter()
            .map(|sibling| {
                let with_rest = parent.join(&sibling).join(&rest);
                let chosen = if !rest.as_os_str().is_empty()
                    && std::fs::canonicalize(root_real.join(&with_rest)).is_ok_and(|real| roots.is_inside(&real))
                {
                    with_rest
                } else {
                    parent.join(&sibling)
                };
                roots.display_in(resolved.root, &chosen)
            })
            .collect();
        return NearMiss { suggestions, existing_parent: Some(roots.display_in(resolved.root, &parent)) };
    }
    NearMiss::default()
}

fn ranked_siblings(dir: &Path, missing: &OsStr) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let missing = missing.to_string_lossy().to_lowercase();
    let missing_ext = extension(&missing);
    let mut scored: Vec<(f64, String)> = entries
        .take(MAX_SCANNED)
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
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
    scored.into_iter().take(MAX_SUGGESTIONS).map(|(_, name)| name).collect()
}

fn extension(name: &str) -> Option<&str> {
    Path::new(name).extension().and_then(OsStr::to_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(files: &[&str]) -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        (dir, roots)
    }

    #[test]
    fn suggests_case_and_typo_variants_same_extension_first() {
        let (_dir, roots) = setup(&["src/main.rs", "src/main.py", "src/lib.rs", "README.md"]);
        let miss = near_misses(&roots, &roots.resolve("src/mian.rs").unwrap());
        assert_eq!(miss.suggestions.first().map(String::as_str), Some("src/main.rs"));
        assert_eq!(miss.existing_parent.as_deref(), Some("src"));
        let miss = near_misses(&roots, &roots.resolve("readme.md").unwrap());
        assert_eq!(miss.suggestions, vec!["README.md"]);
    }

    #[test]
    fn missing_directory_suggests_the_full_path_when_it_exists() {
        let (_dir, roots) = setup(&["utils/mod.rs"]);
        let miss = near_misses(&roots, &roots.resolve("utls/mod.rs").unwrap());
        assert_eq!(miss.suggestions, vec!["utils/mod.rs"]);
        assert_eq!(miss.existing_parent.as_deref(), Some("."));
    }

    #[test]
    fn never_suggests_through_a_symlink_leading_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret_plan.txt"), "x").unwrap();
        let (dir, roots) = setup(&["a.txt"]);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
        let miss = near_misses(&roots, &roots.resolve("linkdir/secret_plan.tx").unwrap());
        assert_eq!(miss, NearMiss::default());
    }

    #[test]
    fn nothing_similar_means_no_suggestion() {
        let (_dir, roots) = setup(&["alpha.txt"]);
        assert!(near_misses(&roots, &roots.resolve("zzzzzzzz.bin").unwrap()).suggestions.is_empty());
    }
}
