//! Roots narrowed beneath the configured ones: how a client's roots (MCP Roots) are taken in.
//!
//! The configured roots are the ceiling. A directory asked for is first placed lexically beneath a configured root
//! (`..` folded, so `file:///ws/../etc` is `/etc`, outside), then opened *through that root's confined handle*, so a
//! symbolic link on the way that leads out — or is swapped to lead out between any check and the open — fails inside
//! the kernel's own lookup. The opened handle is the narrowed root: every later open goes through it. Where it really
//! is comes from the kernel's record of the open handle, never from the path as asked.
//!
//! Only when the operator allows it (`beyond`) is a directory outside every configured root opened as a root of its
//! own; it then becomes an anchor too, a root paths beneath it are judged from.

use super::{Anchor, Judged, Root, Roots, dot_if_empty, follow_links, io_words, is_escape, normalize};
use crate::platform;
use cap_std::fs::Dir;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// What became of one directory asked for as a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The path as asked.
    pub path: PathBuf,
    /// Its real path when it is a root now; why it is not, when refused (a phrase naming nothing beyond the
    /// configured roots).
    pub outcome: Result<PathBuf, String>,
}

/// Roots narrowed beneath configured ones, and what became of each directory asked for.
#[derive(Debug)]
pub struct Narrowing {
    /// The new roots; `None` when no directory asked for could be taken.
    pub roots: Option<Roots>,
    /// Each directory asked for, in order.
    pub asked: Vec<Asked>,
}

/// Why a directory asked for lies outside: the phrase every such refusal gives.
pub const OUTSIDE_CONFIGURED: &str = "outside the configured roots";

impl Roots {
    /// Roots at the directories `asked` (absolute paths), each beneath one of these roots and opened through its
    /// handle; with `beyond`, a directory outside every root is opened as a root of its own instead of refused.
    /// `refuse` may refuse an accepted directory still (the read policy), given how policy judges it.
    pub fn narrowed(&self, asked: &[PathBuf], beyond: bool, refuse: &dyn Fn(&Judged) -> Option<String>) -> Narrowing {
        let mut roots: Vec<Root> = Vec::new();
        let mut anchors: Vec<Anchor> = self.anchors.clone();
        let mut outcomes = Vec::with_capacity(asked.len());
        for path in asked {
            let outcome = self.narrow_one(path, beyond).and_then(|(root, is_beyond)| {
                let real = root.real.clone();
                let mut with_it = anchors.clone();
                if is_beyond {
                    with_it.push(root.anchor());
                }
                if let Some(why) = refuse(&judge(&with_it, &real)) {
                    return Err(why);
                }
                if !roots.iter().any(|kept| kept.real == real) {
                    anchors = with_it;
                    roots.push(root);
                }
                Ok(real)
            });
            outcomes.push(Asked { path: path.clone(), outcome });
        }
        let roots = (!roots.is_empty()).then_some(Roots::assemble(roots, anchors, true));
        Narrowing { roots, asked: outcomes }
    }

    /// Opens the directory `asked` as a root beneath one of these (or, with `beyond`, as one of its own: then
    /// `true`).
    fn narrow_one(&self, asked: &Path, beyond: bool) -> Result<(Root, bool), String> {
        if !asked.is_absolute() {
            return Err("not an absolute path".to_string());
        }
        let outside = || -> Result<(Root, bool), String> {
            if !beyond {
                return Err(OUTSIDE_CONFIGURED.to_string());
            }
            Root::open(asked, asked).map(|root| (root, true)).map_err(|e| e.to_string())
        };
        let Ok(resolved) = self.resolve_absolute(asked, "") else { return outside() };
        let dir = match self.open_dir_beneath(resolved.root, &resolved.beneath) {
            Ok(dir) => dir,
            Err(e) if is_escape(&e) => match self.open_dir_through_absolute_symlink(resolved.root, &resolved.beneath) {
                Some(opened) => opened,
                None if beyond => return outside(),
                None => return Err(format!("{OUTSIDE_CONFIGURED} (through a symbolic link)")),
            },
            Err(e) if platform::is_missing(&e) => {
                return Err("not an existing directory".to_string());
            }
            Err(e) => return Err(format!("cannot be opened ({})", io_words(&e))),
        };
        let real = match &dir {
            Some(dir) => {
                let walked = follow_links(&self.roots[resolved.root].real.join(&resolved.beneath));
                let handle = dir.try_clone().map_err(|e| format!("cannot be opened ({})", io_words(&e)))?;
                platform::real_path::of(&handle.into_std_file(), walked.as_deref()).ok_or("cannot tell where it is")?
            }
            None => PathBuf::from("/"),
        };
        // The handle was opened confined beneath a root: where it really is lies beneath one.
        if self.locate(&real).is_none() {
            return Err(OUTSIDE_CONFIGURED.to_string());
        }
        let plain = !asked.components().any(|c| c == Component::ParentDir);
        let given = if plain { normalize(asked).unwrap_or_else(|| real.clone()) } else { real.clone() };
        Ok((Root::with(given, real, dir.map(Arc::new)), false))
    }

    /// Opens a directory beneath root `root`, confined; `None` for `/` itself beneath an unrestricted root.
    fn open_dir_beneath(&self, root: usize, beneath: &Path) -> std::io::Result<Option<Dir>> {
        let root = &self.roots[root];
        match &root.dir {
            Some(dir) => dir.open_dir(dot_if_empty(beneath)).map(Some),
            None => {
                let path = Path::new("/").join(beneath);
                if normalize(&path).is_some_and(|p| p == Path::new("/")) {
                    return Ok(None);
                }
                Dir::open_ambient_dir(path, cap_std::ambient_authority()).map(Some)
            }
        }
    }

    /// The kernel refuses absolute symlink targets beneath a root: where the path leads is looked up and, when it
    /// lies beneath a root, opened through that root's handle (still confined, so a swap in between gains nothing).
    fn open_dir_through_absolute_symlink(&self, root: usize, beneath: &Path) -> Option<Option<Dir>> {
        let leads_to = follow_links(&self.roots[root].real.join(beneath))?;
        let (root, relative) = self.locate(&leads_to)?;
        self.open_dir_beneath(root, &relative).ok()
    }
}

/// How policy judges the absolute path `absolute` among `anchors` (see [`Roots::judged`]).
pub(super) fn judge(anchors: &[Anchor], absolute: &Path) -> Judged {
    let outermost = anchors
        .iter()
        .enumerate()
        .filter(|(_, anchor)| absolute.starts_with(&anchor.real))
        .min_by_key(|(_, anchor)| anchor.depth);
    match outermost {
        Some((anchor, found)) => Judged {
            anchor,
            relative: absolute.strip_prefix(&found.real).map(Path::to_path_buf).unwrap_or_default(),
            absolute: absolute.to_path_buf(),
        },
        None => Judged { anchor: usize::MAX, relative: PathBuf::new(), absolute: absolute.to_path_buf() },
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// `<tmp>/ws` (the configured root) with `sub/`, `.ssh/`, a link `out` to `<tmp>/outside`, and an absolute link
    /// `abs_sub` to `ws/sub`.
    fn layout() -> (tempfile::TempDir, PathBuf, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().canonicalize().unwrap();
        let ws = tmp.join("ws");
        for d in ["ws/sub/deeper", "ws/.ssh", "outside", "ws_sibling"] {
            std::fs::create_dir_all(tmp.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("../outside", ws.join("out")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("abs_sub")).unwrap();
        std::os::unix::fs::symlink(tmp.join("outside"), ws.join("abs_out")).unwrap();
        let roots = Roots::new(std::slice::from_ref(&ws)).unwrap();
        (dir, ws, roots)
    }

    fn outcomes(roots: &Roots, asked: &[PathBuf], beyond: bool) -> Vec<Result<PathBuf, String>> {
        roots.narrowed(asked, beyond, &|_| None).asked.into_iter().map(|a| a.outcome).collect()
    }

    #[test]
    fn only_directories_beneath_the_configured_roots_are_taken() {
        let (_dir, ws, roots) = layout();
        let tmp = ws.parent().unwrap().to_path_buf();
        let refused = [
            PathBuf::from("/"),
            tmp.clone(),
            tmp.join("outside"),
            tmp.join("ws_sibling"),
            ws.join("../outside"),
            ws.join("sub/../../outside"),
            ws.join("out"),
            ws.join("abs_out"),
        ];
        for (asked, outcome) in refused.iter().zip(outcomes(&roots, &refused, false)) {
            let why = outcome.expect_err(&asked.display().to_string());
            assert!(why.starts_with(OUTSIDE_CONFIGURED), "{}: {why}", asked.display());
        }
        let taken = [ws.join("sub"), ws.join("sub/deeper/.."), ws.join("abs_sub"), ws.clone()];
        let real = [ws.join("sub"), ws.join("sub"), ws.join("sub"), ws.clone()];
        assert_eq!(outcomes(&roots, &taken, false), real.map(Ok).to_vec());
        let missing = outcomes(&roots, &[ws.join("nope"), PathBuf::from("relative")], false);
        assert_eq!(missing, [Err("not an existing directory".into()), Err("not an absolute path".into())]);
    }

    #[test]
    fn a_narrowed_root_confines_reads_and_judges_from_the_configured_root() {
        let (_dir, ws, roots) = layout();
        std::fs::write(ws.join("sub/a.txt"), "a").unwrap();
        std::fs::write(ws.join("top.txt"), "t").unwrap();
        let narrowed = roots.narrowed(&[ws.join("sub")], false, &|_| None).roots.unwrap();
        let opened = narrowed.open(&narrowed.resolve("a.txt").unwrap(), "a.txt").unwrap();
        assert_eq!(opened.real_relative, PathBuf::from("a.txt"));
        let above = narrowed.resolve(ws.join("top.txt").to_str().unwrap()).unwrap_err();
        assert!(above.hint.as_deref().unwrap_or("").contains(&ws.join("sub").display().to_string()), "{above:?}");
        assert_eq!(narrowed.resolve("../top.txt").unwrap_err().code, crate::error::ErrorCode::OutsideRoot);
        let judged = narrowed.judged(0, Path::new("a.txt"));
        assert_eq!((judged.anchor, judged.relative), (0, PathBuf::from("sub/a.txt")));
    }

    #[test]
    fn refuse_sees_the_path_as_judged_from_the_configured_root() {
        let (_dir, ws, roots) = layout();
        let refuse = |judged: &Judged| judged.relative.starts_with(".ssh").then(|| "denied".to_string());
        let narrowing = roots.narrowed(&[ws.join(".ssh"), ws.join("sub")], false, &refuse);
        let outcomes: Vec<_> = narrowing.asked.iter().map(|a| a.outcome.clone()).collect();
        assert_eq!(outcomes, [Err("denied".to_string()), Ok(ws.join("sub"))]);
    }

    #[test]
    fn beyond_opens_outside_directories_as_roots_of_their_own() {
        let (_dir, ws, roots) = layout();
        let outside = ws.parent().unwrap().join("outside");
        let narrowing = roots.narrowed(&[outside.clone(), ws.join("sub")], true, &|_| None);
        let narrowed = narrowing.roots.unwrap();
        assert_eq!(narrowed.real_paths().collect::<Vec<_>>(), [outside.as_path(), ws.join("sub").as_path()]);
        assert_eq!(narrowed.judged(0, Path::new("x")).relative, PathBuf::from("x"));
    }

    #[test]
    fn a_path_beneath_any_root_is_judged_as_its_absolute_path_is() {
        let (_dir, ws, _) = layout();
        // Overlapping roots in both orders, and a root narrowed beneath another.
        let roots = Roots::new(&[ws.join("sub"), ws.clone()]).unwrap();
        let narrowed = roots.narrowed(&[ws.join("sub/deeper")], false, &|_| None).roots.unwrap();
        for (roots, root) in [(&roots, 0), (&roots, 1), (&narrowed, 0)] {
            for relative in ["", "a", "deeper/b.txt", ".ssh/key"] {
                let judged = roots.judged(root, Path::new(relative));
                assert_eq!(judged, judge(&roots.anchors, &judged.absolute), "root {root}, {relative:?}");
            }
        }
        assert_eq!(roots.judged(0, Path::new("a")).relative, PathBuf::from("sub/a"), "judged from the outer root");
    }
}
