//! Opening without waiting: the path an async caller may take on its own thread, because it cannot block.
//!
//! [`Roots::open_cached`] opens a regular file only when the kernel can do it from memory alone, and otherwise gives
//! up at once (`None`), leaving the caller to open it the ordinary way ([`Roots::open`]) where waiting is allowed. It
//! is never the only way in: every `None` falls back, so it may refuse anything unusual, and does.
//!
//! It is confined exactly like [`Roots::open`] — `openat2` through the root's handle with `RESOLVE_BENEATH` — and
//! stricter on every other count:
//! - `RESOLVE_CACHED`: the lookup uses only the kernel's dentry cache; a component that would need the disk, or a
//!   network file system's revalidation, fails with `EAGAIN` instead of waiting.
//! - `RESOLVE_NO_SYMLINKS`: no link is followed anywhere in the path, so the file's real path is its root's real path
//!   joined with the request's path, `.` and `..` folded — no `/proc/self/fd` lookup needed.
//! - `RESOLVE_NO_XDEV`: the path stays on the root's own mount, whose file system was checked once, when the roots
//!   were opened, to be a local one whose `fstat` and cached reads never wait on a device or a server.
//! - Only regular files: directories, FIFOs, sockets and devices all take the ordinary path.
//!
//! It may also give up now and then for no lasting reason (a lookup racing with the kernel's own cache updates), which
//! costs only the fallback. A directory renamed during the lookup can leave the opened file at another path than the
//! one asked; SECURITY.md (claim 16 and "What is not enforced") says why that shows nothing a read could not.

use super::{Handle, Opened, Resolved, Roots, dot_if_empty};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::fs::File;
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;

/// The lookup flags of an open that must not wait (see the module's documentation).
const WITHOUT_WAITING: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_XDEV)
    .union(ResolveFlags::CACHED);

/// Read-only, and non-blocking in case the path is (despite everything) a FIFO or a device.
fn open_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

impl Roots {
    /// Opens a resolved path as [`Roots::open`] would, but only if it is a regular file the kernel can open without
    /// waiting, beneath a root that allows it; `None` otherwise, for any reason — the caller then uses
    /// [`Roots::open`], which says what is wrong when something is.
    pub fn open_cached(&self, resolved: &Resolved) -> Option<Opened> {
        let root = self.roots.get(resolved.root)?;
        let dir = root.dir.as_ref().filter(|_| root.opens_without_waiting.load(Ordering::Relaxed))?;
        let fd =
            rustix::fs::openat2(dir, dot_if_empty(&resolved.beneath), open_flags(), Mode::empty(), WITHOUT_WAITING)
                .ok()?;
        let file = File::from(fd);
        let metadata = file.metadata().ok().filter(std::fs::Metadata::is_file)?;
        // No link and no other mount on the way: the lexical path is the real one.
        Some(Opened {
            handle: Handle::File(file, metadata),
            root: resolved.root,
            real_relative: resolved.relative.clone(),
        })
    }

    /// Makes [`Roots::open_cached`] refuse everything beneath root `index` from now on: its file system turned out
    /// unable to read without waiting (`RWF_NOWAIT` unsupported), so every attempt would be wasted.
    pub fn stop_opening_without_waiting(&self, index: usize) {
        if let Some(root) = self.roots.get(index) {
            root.opens_without_waiting.store(false, Ordering::Relaxed);
        }
    }
}

/// Whether files beneath the directory `dir` can be opened and read without waiting: it lies on a local file system
/// (one whose metadata and cached pages are served from memory), and this kernel has `openat2` with `RESOLVE_CACHED`
/// and lets this process use it (a seccomp filter may not).
pub(super) fn opens_without_waiting(dir: &impl AsFd) -> bool {
    local_file_system(dir)
        && rustix::fs::openat2(dir, ".", open_flags() | OFlags::DIRECTORY, Mode::empty(), WITHOUT_WAITING).is_ok()
}

/// Whether `dir` lies on a file system known to keep what an open and a cached read need in memory. Network and
/// FUSE file systems are left out: their `fstat` may ask a server. tmpfs opens from memory but, up to Linux 6.18 at
/// least, refuses `RWF_NOWAIT` reads: its roots turn themselves off at their first read.
fn local_file_system(dir: &impl AsFd) -> bool {
    let Ok(stat) = rustix::fs::fstatfs(dir) else { return false };
    matches!(
        stat.f_type,
        libc::EXT4_SUPER_MAGIC // also ext2 and ext3
            | libc::XFS_SUPER_MAGIC
            | libc::BTRFS_SUPER_MAGIC
            | libc::TMPFS_MAGIC
            | libc::F2FS_SUPER_MAGIC
            | libc::OVERLAYFS_SUPER_MAGIC
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A root with a file, a subdirectory and a sibling outside it; `None` when this machine's temporary directory
    /// cannot open without waiting (then there is nothing to test here).
    fn setup() -> Option<(tempfile::TempDir, PathBuf, Roots)> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        std::fs::write(root.join("sub/b.txt"), "inner\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside\n").unwrap();
        let roots = Roots::new(std::slice::from_ref(&root)).unwrap();
        if !roots.roots[0].opens_without_waiting.load(Ordering::Relaxed) {
            eprintln!("skipped: {} cannot open files without waiting", dir.path().display());
            return None;
        }
        Some((dir, root, roots))
    }

    /// Opens without waiting, trying a few times: a lookup racing with the kernel's own cache updates may give up
    /// (`EAGAIN`) now and then, which is allowed. What must not open fails every time.
    fn open(roots: &Roots, path: &str) -> Option<Opened> {
        let resolved = roots.resolve(path).ok()?;
        (0..ATTEMPTS).find_map(|_| roots.open_cached(&resolved))
    }

    const ATTEMPTS: usize = 20;

    #[test]
    fn a_cached_regular_file_opens_with_its_lexical_path_as_real_path() {
        let Some((_dir, _root, roots)) = setup() else { return };
        // Opened once the ordinary way, so that every component is in the dentry cache.
        for path in ["a.txt", "sub/b.txt", "sub/../a.txt", "./sub/b.txt"] {
            let resolved = roots.resolve(path).unwrap();
            roots.open(&resolved, path).unwrap();
            let opened = open(&roots, path).unwrap_or_else(|| panic!("{path} was not opened"));
            let expected = if path.ends_with("a.txt") { "a.txt" } else { "sub/b.txt" };
            assert_eq!(opened.real_relative, Path::new(expected), "{path}");
            assert!(matches!(opened.handle, Handle::File(..)));
        }
    }

    #[test]
    fn an_absolute_path_inside_the_root_opens_too() {
        let Some((_dir, root, roots)) = setup() else { return };
        let absolute = std::fs::canonicalize(&root).unwrap().join("sub/b.txt");
        let opened = open(&roots, absolute.to_str().unwrap()).unwrap();
        assert_eq!(opened.real_relative, Path::new("sub/b.txt"));
    }

    #[test]
    fn any_symbolic_link_on_the_way_is_left_to_the_ordinary_open() {
        let Some((dir, root, roots)) = setup() else { return };
        std::os::unix::fs::symlink("a.txt", root.join("inside_link")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("sub_link")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", root.join("out_rel")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out_abs")).unwrap();
        for path in ["inside_link", "sub_link/b.txt", "out_rel", "out_abs"] {
            assert!(open(&roots, path).is_none(), "{path} was opened without the ordinary checks");
        }
        // The ordinary open still follows the link inside, and locates it by where it leads.
        let opened = roots.open(&roots.resolve("inside_link").unwrap(), "inside_link").unwrap();
        assert_eq!(opened.real_relative, Path::new("a.txt"));
    }

    #[test]
    fn nothing_outside_the_root_is_opened() {
        let Some((_dir, root, roots)) = setup() else { return };
        let beneath = |path: &str| Resolved { root: 0, beneath: PathBuf::from(path), relative: PathBuf::from(path) };
        // Forged resolutions that climb out: the kernel refuses them, whatever the lexical check said.
        for path in ["../secret.txt", "sub/../../secret.txt", "/etc/hostname"] {
            let escaped = (0..ATTEMPTS).any(|_| roots.open_cached(&beneath(path)).is_some());
            assert!(!escaped, "{path} escaped the root");
        }
        assert!(open(&roots, &format!("{}/../secret.txt", root.display())).is_none());
    }

    #[test]
    fn directories_fifos_and_missing_files_are_left_to_the_ordinary_open() {
        let Some((_dir, root, roots)) = setup() else { return };
        let fifo = root.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        for path in [".", "sub", "pipe", "missing.txt", "a.txt/x", "bad\0name"] {
            assert!(open(&roots, path).is_none(), "{path:?} was opened");
        }
    }

    #[test]
    fn a_root_turned_off_opens_nothing_more_without_waiting() {
        let Some((_dir, _root, roots)) = setup() else { return };
        assert!(open(&roots, "a.txt").is_some());
        roots.stop_opening_without_waiting(0);
        assert!(open(&roots, "a.txt").is_none());
        roots.open(&roots.resolve("a.txt").unwrap(), "a.txt").unwrap();
    }

    #[test]
    fn another_file_system_mounted_beneath_a_root_is_left_to_the_ordinary_open() {
        let Some((_dir, root, roots)) = setup() else { return };
        std::fs::create_dir(root.join("mnt")).unwrap();
        let Some(_mounted) = crate::test_mount::Tmpfs::mount(&root.join("mnt")) else { return };
        std::fs::write(root.join("mnt/c.txt"), "mounted\n").unwrap();
        let resolved = roots.resolve("mnt/c.txt").unwrap();
        roots.open(&resolved, "mnt/c.txt").unwrap();
        // Its file system was never checked: the cached open does not cross into it, however often it is asked.
        assert!(open(&roots, "mnt/c.txt").is_none(), "the open crossed into another mount");
        assert!(open(&roots, "a.txt").is_some());
    }

    #[test]
    fn a_root_of_slash_never_opens_without_waiting() {
        let roots = Roots::new(&[PathBuf::from("/")]).unwrap();
        assert!(!roots.roots[0].opens_without_waiting.load(Ordering::Relaxed));
        assert!(open(&roots, "/etc/hostname").is_none());
    }
}
