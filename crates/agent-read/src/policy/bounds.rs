//! Bounds on a glob's complexity, checked before `globset` sees it.
//!
//! `globset` turns a glob into a regular expression, and the regex parser refuses to nest groups more than 250 deep;
//! `globset` then panics on a glob it parsed itself (`{{{…a…}}}` nested 250 deep). A glob from a request
//! (`read_many`'s `paths`) or from the configuration (`--deny`, `--allow`, `[policy]`) is therefore checked here
//! first, and refused with the limit it broke and what to write instead. The bounds are far beyond any glob written
//! by hand, and they keep each glob's regex small, so that no single glob can exhaust the regex size limits either.

/// Longest glob accepted, in bytes.
pub const MAX_GLOB_BYTES: usize = 1024;

/// Deepest nesting of `{…}` alternations accepted.
pub const MAX_BRACE_DEPTH: usize = 8;

/// Most alternatives (`a` and `b` in `{a,b}`, every group counted) accepted in one glob.
pub const MAX_ALTERNATIVES: usize = 256;

/// Checks `glob` against the bounds; the error names the bound broken and the fix.
pub fn check(glob: &str) -> Result<(), String> {
    if glob.len() > MAX_GLOB_BYTES {
        return Err(format!(
            "the glob is {} bytes long; at most {MAX_GLOB_BYTES} are accepted: use a shorter glob, or several",
            glob.len()
        ));
    }
    let shape = Shape::of(glob);
    if shape.depth > MAX_BRACE_DEPTH {
        return Err(format!(
            "the glob nests `{{…}}` {} deep; at most {MAX_BRACE_DEPTH} levels are accepted: flatten the alternatives \
             into one group (`{{a,b,c}}`) or use several globs",
            shape.depth
        ));
    }
    if shape.alternatives > MAX_ALTERNATIVES {
        return Err(format!(
            "the glob has {} alternatives in `{{…}}`; at most {MAX_ALTERNATIVES} are accepted: use several globs, \
             or a wildcard",
            shape.alternatives
        ));
    }
    Ok(())
}

/// How deep a glob's alternations nest and how many alternatives they hold.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    depth: usize,
    alternatives: usize,
}

impl Shape {
    /// Reads `glob` as `globset` does: `\` escapes the next character, and braces inside a class (`[{]`) are
    /// literal. A `[` that never closes is taken as literal, so the braces after it still count (stricter, never
    /// laxer, than `globset`, which refuses such a glob anyway).
    fn of(glob: &str) -> Shape {
        let chars: Vec<char> = glob.chars().collect();
        let (mut shape, mut depth, mut i) = (Shape::default(), 0usize, 0);
        while let Some(&c) = chars.get(i) {
            match c {
                '\\' => i += 1,
                '[' => i = class_end(&chars, i).unwrap_or(i),
                '{' => {
                    depth += 1;
                    shape.depth = shape.depth.max(depth);
                    shape.alternatives += 1;
                }
                ',' if depth > 0 => shape.alternatives += 1,
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        shape
    }
}

/// The index of the `]` that closes the class opened at `open`, or `None` when it never closes. A `]` right after
/// the `[` (or after `[!`/`[^`) is a member, not the end: git's reading and `globset`'s, which the ignore rules share.
pub(super) fn class_end(chars: &[char], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if matches!(chars.get(i), Some('!' | '^')) {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    (i..chars.len()).find(|&j| chars[j] == ']')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_globs_pass() {
        for glob in ["src/**/*.rs", "*.{md,txt}", "{a,{b,c}}/x", "[{]literal[}]", "a\\{b", "[]{]x", ""] {
            assert_eq!(check(glob), Ok(()), "{glob}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_naming_the_limit() {
        let deep = format!("{}a{}", "{".repeat(250), "}".repeat(250));
        let error = check(&deep).unwrap_err();
        assert!(error.contains("nests `{…}` 250 deep; at most 8 levels"), "{error}");
        let nine = format!("{}a{}", "{x,".repeat(9), "}".repeat(9));
        assert!(check(&nine).is_err());
        let eight = format!("{}a{}", "{x,".repeat(8), "}".repeat(8));
        assert_eq!(check(&eight), Ok(()));
    }

    #[test]
    fn braces_inside_classes_and_escapes_do_not_count() {
        let escaped = "\\{".repeat(300);
        assert_eq!(Shape::of(&escaped), Shape::default());
        assert_eq!(Shape::of(&"[{]".repeat(300)), Shape::default());
        // An unclosed class is literal: the braces after it count.
        assert_eq!(Shape::of("[{a,b}"), Shape { depth: 1, alternatives: 2 });
    }

    #[test]
    fn too_many_alternatives_and_too_long_globs_are_refused() {
        let wide = format!("{{{}}}", vec!["a"; 300].join(","));
        assert!(check(&wide).unwrap_err().contains("300 alternatives"), "{wide}");
        let long = "a".repeat(MAX_GLOB_BYTES + 1);
        assert!(check(&long).unwrap_err().contains("at most 1024 are accepted"));
    }
}
