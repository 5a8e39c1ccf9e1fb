//! Where an open file or directory really is: the system's own record of the handle — `/proc/self/fd` on Linux,
//! `fcntl(F_GETPATH)` on macOS, `GetFinalPathNameByHandleW` on Windows — so that policy judges the file the read
//! holds, whatever links and renames the path went through.
//!
//! Where no record is kept or it cannot be had (Linux in its portable mode, which never asks `/proc`), the path the
//! request leads to, every link followed, stands in — but only when it names the very file the handle holds (same
//! device and inode). A path swapped between the open and that check names another file, and is refused: the caller
//! then cannot tell where the file is, and reads nothing.

use std::fs::File;
use std::path::{Path, PathBuf};

/// Where `file` really is (absolute); `walked` is where the request's path leads with every link followed, taken
/// only when the system keeps no record of the handle and `walked` names this same file.
pub fn of(file: &File, walked: Option<&Path>) -> Option<PathBuf> {
    recorded(file).or_else(|| walked.filter(|path| names_this_file(file, path)).map(Path::to_path_buf))
}

/// The system's record of where `file` is, if it keeps one this process may ask.
fn recorded(file: &File) -> Option<PathBuf> {
    #[cfg(all(target_os = "linux", not(feature = "portable-resolver")))]
    {
        use std::os::fd::AsRawFd as _;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok().filter(|p| p.is_absolute())
    }
    #[cfg(target_os = "macos")]
    {
        fcntl_path(file)
    }
    #[cfg(windows)]
    {
        super::windows::final_path(file)
    }
    #[cfg(not(any(all(target_os = "linux", not(feature = "portable-resolver")), target_os = "macos", windows)))]
    {
        let _ = file;
        None
    }
}

/// `fcntl(F_GETPATH)`: the path the kernel keeps for an open descriptor.
#[cfg(target_os = "macos")]
fn fcntl_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::ffi::OsStringExt as _;
    let mut buffer = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most MAXPATHLEN (= PATH_MAX) bytes, its NUL included, into the buffer, which holds
    // that many and lives for the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPATH, buffer.as_mut_ptr()) } == -1 {
        return None;
    }
    let length = buffer.iter().position(|&byte| byte == 0)?;
    buffer.truncate(length);
    Some(PathBuf::from(std::ffi::OsString::from_vec(buffer))).filter(|p| p.is_absolute())
}

/// Whether `path` names the file `file` holds (same device and inode) with no link anywhere on it: each directory is
/// opened from the one before without following a link, and the last name is looked up without following one. A link
/// swapped in at any step fails the check, so a path that only leads to the file through a link (one that was a plain
/// file when the path was walked) never stands in for it.
#[cfg(unix)]
fn names_this_file(file: &File, path: &Path) -> bool {
    use rustix::fs::{AtFlags, Mode, OFlags};
    use std::path::Component;
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => names.push(name),
            _ => return false,
        }
    }
    // O_PATH opens a directory to walk through it without read permission, and never opens a device or FIFO.
    #[cfg(target_os = "linux")]
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let (Ok(held), true) = (rustix::fs::fstat(file), path.has_root()) else { return false };
    let Ok(mut directory) = rustix::fs::open("/", flags, Mode::empty()) else { return false };
    let named = match names.split_last() {
        None => rustix::fs::fstat(&directory),
        Some((last, parents)) => {
            for name in parents {
                match rustix::fs::openat(&directory, *name, flags, Mode::empty()) {
                    Ok(next) => directory = next,
                    Err(_) => return false,
                }
            }
            rustix::fs::statat(&directory, *last, AtFlags::SYMLINK_NOFOLLOW)
        }
    };
    named.is_ok_and(|named| named.st_dev == held.st_dev && named.st_ino == held.st_ino)
}

/// Windows always keeps a record of the handle; without it nothing stands in.
#[cfg(windows)]
fn names_this_file(_file: &File, _path: &Path) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_walked_path_stands_in_only_for_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(base.join("a.txt"), "a").unwrap();
        std::fs::write(base.join("b.txt"), "b").unwrap();
        let file = File::open(base.join("a.txt")).unwrap();
        assert!(names_this_file(&file, &base.join("a.txt")));
        assert!(!names_this_file(&file, &base.join("b.txt")), "another file");
        assert!(!names_this_file(&file, &base.join("missing")), "no file");
        // Renamed away and replaced: the path now names another file, the handle still holds the first.
        std::fs::rename(base.join("a.txt"), base.join("moved.txt")).unwrap();
        std::fs::write(base.join("a.txt"), "new").unwrap();
        assert!(!names_this_file(&file, &base.join("a.txt")));
        let found = of(&file, Some(&base.join("a.txt")));
        assert_ne!(found.as_deref(), Some(base.join("a.txt").as_path()), "a swapped path is never taken");
    }

    #[test]
    fn a_path_that_reaches_the_file_through_a_link_never_stands_in() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::write(base.join("real/.env"), "secret").unwrap();
        let file = File::open(base.join("real/.env")).unwrap();
        assert!(names_this_file(&file, &base.join("real/.env")));
        // A link in the last place (a plain file when the path was walked, a link to the file when it is checked).
        std::os::unix::fs::symlink(".env", base.join("real/target")).unwrap();
        assert!(!names_this_file(&file, &base.join("real/target")), "a last name that is a link");
        // A link on the way.
        std::os::unix::fs::symlink("real", base.join("alias")).unwrap();
        assert!(!names_this_file(&file, &base.join("alias/.env")), "a directory on the way that is a link");
        assert!(!names_this_file(&file, Path::new("real/.env")), "a relative path");
    }

    #[test]
    fn the_real_path_of_an_open_file_is_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(base.join("a.txt"), "a").unwrap();
        let file = File::open(base.join("a.txt")).unwrap();
        assert_eq!(of(&file, Some(&base.join("a.txt"))), Some(base.join("a.txt")));
    }
}
