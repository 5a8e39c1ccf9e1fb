//! Stage 2 of a read: resolve the requested path against the roots, then open it.
//!
//! Confinement here is by path: a relative path is joined to the first root, `.` and `..` are resolved lexically,
//! and the result must lie beneath a root, compared component by component (so `/work` never admits
//! `/work_secrets`). The opened file's real path is then checked too, so a symlink leading out of the roots is
//! refused. Opening is non-blocking and the opened handle's type is checked, so a FIFO or device is refused at once
//! instead of hanging the read.

use crate::config::ConfigError;
use crate::error::{ErrorCode, ReadError};
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// The directories reads are confined to.
#[derive(Debug, Clone)]
pub struct Roots {
    roots: Vec<Root>,
}

#[derive(Debug, Clone)]
struct Root {
    /// The root as configured, made absolute.
    given: PathBuf,
    /// The root's real path (symlinks resolved).
    real: PathBuf,
}

/// A request path resolved to a location beneath a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the root it lies beneath.
    pub root: usize,
    /// Absolute path, lexically normalised.
    pub absolute: PathBuf,
    /// Path relative to that root (empty for the root itself).
    pub relative: PathBuf,
}

/// An opened path: a regular file or a directory.
#[derive(Debug)]
pub enum Opened {
    /// A regular file with its metadata (taken from the open handle).
    File(File, Metadata),
    /// A directory.
    Directory,
}

impl Roots {
    /// Checks and records the roots: each must be an existing directory. No roots means the working directory.
    pub fn new(paths: &[PathBuf]) -> Result<Roots, ConfigError> {
        let cwd = std::env::current_dir()
            .map_err(|e| ConfigError::new(format!("cannot determine the working directory: {e}")))?;
        let paths = if paths.is_empty() { std::slice::from_ref(&cwd) } else { paths };
        let mut roots = Vec::with_capacity(paths.len());
        for path in paths {
            let given = normalize(&cwd.join(path))
                .ok_or_else(|| ConfigError::new(format!("root {} climbs above /", path.display())))?;
            let real = std::fs::canonicalize(&given)
                .map_err(|e| ConfigError::new(format!("root {} cannot be used: {e}", path.display())))?;
            if !real.is_dir() {
                return Err(ConfigError::new(format!("root {} is not a directory", path.display())));
            }
            roots.push(Root { given, real });
        }
        Ok(Roots { roots })
    }

    /// The real path of each root, in order.
    pub fn real_paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.real.as_path())
    }

    /// Resolves a request path; anything outside every root is `OUTSIDE_ROOT`.
    pub fn resolve(&self, path: &str) -> Result<Resolved, ReadError> {
        let asked = Path::new(path);
        let joined = if asked.is_absolute() { asked.to_path_buf() } else { self.roots[0].real.join(asked) };
        let absolute = normalize(&joined).ok_or_else(|| outside_root(path))?;
        for (index, root) in self.roots.iter().enumerate() {
            for base in [&root.real, &root.given] {
                if let Ok(relative) = absolute.strip_prefix(base) {
                    let absolute = root.real.join(relative);
                    return Ok(Resolved { root: index, absolute, relative: relative.to_path_buf() });
                }
            }
        }
        Err(outside_root(path))
    }

    /// How a resolved path is shown: relative to the first root, absolute beneath the others (so that passing it
    /// back as a request path reaches the same file).
    pub fn display(&self, resolved: &Resolved) -> String {
        self.display_in(resolved.root, &resolved.relative)
    }

    /// Shows `relative` (beneath root `root`) the way [`Roots::display`] does.
    pub fn display_in(&self, root: usize, relative: &Path) -> String {
        let root_path = &self.roots[root].real;
        if root == 0 && root_path != Path::new("/") {
            if relative.as_os_str().is_empty() { ".".to_string() } else { relative.to_string_lossy().into_owned() }
        } else {
            root_path.join(relative).to_string_lossy().into_owned()
        }
    }

    /// Whether a real (symlink-free) path lies beneath some root.
    pub fn is_inside(&self, real: &Path) -> bool {
        self.real_paths().any(|root| real.starts_with(root))
    }

    /// Opens a resolved path without blocking and without leaving the roots through symlinks.
    pub fn open(&self, resolved: &Resolved, shown: &str) -> Result<Opened, ReadError> {
        let real = match std::fs::canonicalize(&resolved.absolute) {
            Ok(real) => real,
            Err(e) => {
                // A missing path behind a symlink that leads out is outside, not missing: saying "not found" there
                // would tell the model which outside files exist.
                if !self.is_inside(&deepest_existing_ancestor(&resolved.absolute)) {
                    return Err(outside_root(shown).with_hint(SYMLINK_OUT_HINT));
                }
                return Err(ReadError::from_io(&e, shown));
            }
        };
        if !self.is_inside(&real) {
            return Err(outside_root(shown).with_hint(SYMLINK_OUT_HINT));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&real)
            .map_err(|e| open_error(&e, &real, shown))?;
        let metadata = file.metadata().map_err(|e| ReadError::from_io(&e, shown))?;
        if metadata.is_dir() {
            return Ok(Opened::Directory);
        }
        if !metadata.is_file() {
            return Err(not_regular(&metadata, shown));
        }
        Ok(Opened::File(file, metadata))
    }
}

const SYMLINK_OUT_HINT: &str = "this path goes through a symbolic link that leads outside the roots";

/// The real path of the deepest ancestor of `path` (or `path` itself) that exists.
fn deepest_existing_ancestor(path: &Path) -> PathBuf {
    path.ancestors().find_map(|p| std::fs::canonicalize(p).ok()).unwrap_or_else(|| PathBuf::from("/"))
}

/// Resolves `.` and `..` without touching the file system; `None` if `..` climbs above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

fn outside_root(path: &str) -> ReadError {
    ReadError::new(ErrorCode::OutsideRoot, format!("{path}: outside the allowed roots"))
        .with_hint("read only paths inside the workspace; relative paths start at the first root")
}

fn open_error(err: &io::Error, real: &Path, shown: &str) -> ReadError {
    // Opening a socket fails with ENXIO; say what the path is rather than an opaque I/O error.
    if err.raw_os_error() == Some(libc::ENXIO)
        && let Ok(metadata) = std::fs::metadata(real)
    {
        return not_regular(&metadata, shown);
    }
    ReadError::from_io(err, shown)
}

fn not_regular(metadata: &Metadata, shown: &str) -> ReadError {
    let file_type = metadata.file_type();
    let what = if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    ReadError::new(ErrorCode::NotRegular, format!("{shown}: is {what}; only regular files and directories are read"))
        .with_hint("read a regular file instead")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Some(PathBuf::from("/a/c")));
        assert_eq!(normalize(Path::new("/a/..")), Some(PathBuf::from("/")));
        assert_eq!(normalize(Path::new("/..")), None);
    }

    #[test]
    fn sibling_prefix_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(dir.path().join("work_secrets")).unwrap();
        let roots = Roots::new(std::slice::from_ref(&root)).unwrap();
        let outside = format!("{}/work_secrets/x", dir.path().display());
        assert_eq!(roots.resolve(&outside).unwrap_err().code, ErrorCode::OutsideRoot);
        assert_eq!(roots.resolve("../work_secrets/x").unwrap_err().code, ErrorCode::OutsideRoot);
        let inside = roots.resolve("a/../b").unwrap();
        assert_eq!(inside.relative, PathBuf::from("b"));
        assert_eq!(roots.display(&inside), "b");
        assert_eq!(roots.display(&roots.resolve(".").unwrap()), ".");
    }

    #[test]
    fn missing_root_is_a_config_error() {
        let err = Roots::new(&[PathBuf::from("/definitely/not/here")]).unwrap_err();
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
