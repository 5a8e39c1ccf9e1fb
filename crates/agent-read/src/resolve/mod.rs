//! Stage 2 of a read: resolve the requested path to a root, then open it — confined by the kernel.
//!
//! Every open goes through a `cap-std` directory handle of its root: `openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS` (with `cap-std`'s own component-by-component fallback on kernels without it). A path that
//! leads out of the root, through `..` or any symlink, fails inside the kernel's own lookup, so there is no window
//! between a check and the open. Only symlinks with *absolute* targets need a second step, because the kernel refuses
//! them beneath a root even when they point back inside: their real path is looked up and, when it lies beneath a
//! root, opened again through that root's handle — still confined, so a swap in between gains nothing.
//!
//! Opening is non-blocking, and the opened handle's type is checked, so a FIFO or a device is refused at once. A root
//! of `/` means unrestricted: files are opened by their absolute path.
//!
//! The `narrow` module makes roots beneath these ([`Roots::narrowed`]):
//! each opened through the confined handle of the root it lies beneath, so a client's roots can only narrow the
//! configured ones.
//!
//! Policy does not judge a path from the root a request resolved against, but from its *anchor*: the outermost
//! configured root holding it ([`Roots::judged`]). So overlapping roots, given in any order, and roots narrowed beneath
//! the configured ones all see the same rules match.

mod ignore_files;
mod narrow;
mod windows;

pub use narrow::Asked;

use crate::config_error::{ConfigError, RootProblem};
use crate::error::{ErrorCode, ReadError};
use crate::platform;
use cap_std::fs::{Dir, OpenOptions};
use std::fs::{File, Metadata};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The directories reads are confined to, each with an open handle, and the configured roots policy judges from.
#[derive(Debug)]
pub struct Roots {
    roots: Vec<Root>,
    /// The configured roots (and roots an operator let a client choose): every root lies beneath one of them.
    anchors: Vec<Anchor>,
    /// How policy judges each root itself (which anchor, where beneath it): what lies beneath a root is judged from
    /// the same anchor, since no anchor shallower than the root's own can hold it.
    judged_roots: Vec<Judged>,
    /// Whether these roots were narrowed beneath the configured ones (then an `OUTSIDE_ROOT` names the roots in force).
    narrowed: bool,
}

#[derive(Debug)]
struct Root {
    /// The root as configured (or asked for), made absolute.
    given: PathBuf,
    /// The root's real path (symlinks resolved).
    real: PathBuf,
    /// The handle every open goes through; `None` for `/`, which is unrestricted.
    dir: Option<Arc<Dir>>,
}

/// A root paths are judged from: its real path, how many components it has, and the handle its ignore files are read
/// through.
#[derive(Debug, Clone)]
struct Anchor {
    real: PathBuf,
    depth: usize,
    dir: Option<Arc<Dir>>,
}

/// A path as policy judges it: relative to its anchor (the outermost configured root holding it), and absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Index of the anchor.
    pub anchor: usize,
    /// The path relative to the anchor.
    pub relative: PathBuf,
    /// The absolute path.
    pub absolute: PathBuf,
}

/// A request path resolved to a root, not yet opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the root.
    pub root: usize,
    /// The path to open beneath the root, as the request spelled it (`..` left to the kernel).
    pub beneath: PathBuf,
    /// The same path with `.` and `..` resolved lexically: how it is shown and what policy sees as asked.
    pub relative: PathBuf,
    /// Whether the request spelled a relative path that stays beneath a root: such a path is looked for beneath
    /// each root in turn, the first root first (see [`Roots::beneath_later_roots`]).
    pub in_any_root: bool,
}

/// An opened path: a regular file or a directory, with where it really is.
#[derive(Debug)]
pub struct Opened {
    /// What was opened.
    pub handle: Handle,
    /// The root it really lies beneath.
    pub root: usize,
    /// Its real path relative to that root (symlinks resolved).
    pub real_relative: PathBuf,
}

/// The open handle of a regular file or a directory.
#[derive(Debug)]
pub enum Handle {
    /// A regular file with its metadata (taken from the open handle).
    File(File, Metadata),
    /// A directory, as a handle its listing is read through.
    Directory(Dir),
}

impl Roots {
    /// Checks and opens the roots: each must be an existing directory. No roots means the working directory.
    pub fn new(paths: &[PathBuf]) -> Result<Roots, ConfigError> {
        #[cfg(all(target_os = "linux", feature = "portable-resolver"))]
        platform::portable::refuse_openat2().map_err(|reason| ConfigError::PortableResolver { reason })?;
        let cwd = std::env::current_dir().map_err(|e| ConfigError::WorkingDirectory { reason: e.to_string() })?;
        let paths = if paths.is_empty() { std::slice::from_ref(&cwd) } else { paths };
        let roots = paths.iter().map(|path| Root::open(&cwd.join(path), path)).collect::<Result<Vec<_>, _>>()?;
        let anchors = roots.iter().map(Root::anchor).collect();
        Ok(Roots::assemble(roots, anchors, false))
    }

    /// Roots with their anchors, each root judged once.
    fn assemble(roots: Vec<Root>, anchors: Vec<Anchor>, narrowed: bool) -> Roots {
        let judged_roots = roots.iter().map(|root| narrow::judge(&anchors, &root.real)).collect();
        Roots { roots, anchors, judged_roots, narrowed }
    }

    /// The real path of root `index`.
    pub fn real_path(&self, index: usize) -> &Path {
        &self.roots[index].real
    }

    /// The real paths of the roots in force, in order.
    pub fn real_paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|root| root.real.as_path())
    }

    /// How policy judges a path beneath root `root`: relative to the outermost anchor holding it (every root lies
    /// beneath one; should none hold it, the root itself stands in).
    pub fn judged(&self, root: usize, relative: &Path) -> Judged {
        let beneath =
            |base: &Path| if relative.as_os_str().is_empty() { base.to_path_buf() } else { base.join(relative) };
        let absolute = beneath(&self.roots[root].real);
        match &self.judged_roots[root] {
            Judged { anchor: usize::MAX, .. } => {
                Judged { anchor: usize::MAX, relative: relative.to_path_buf(), absolute }
            }
            Judged { anchor, relative: root_beneath, .. } => {
                Judged { anchor: *anchor, relative: beneath(root_beneath), absolute }
            }
        }
    }

    /// Resolves a request path to a root; anything lexically outside every root is `OUTSIDE_ROOT`. A relative path
    /// starts at the first root; one whose `..` climbs out of it resolves as its absolute spelling would, so it may
    /// still land beneath another root.
    pub fn resolve(&self, path: &str) -> Result<Resolved, ReadError> {
        #[cfg(windows)]
        let respelled = self.windows_spelling(path)?;
        #[cfg(windows)]
        let asked = Path::new(&respelled);
        #[cfg(not(windows))]
        let asked = Path::new(path);
        if asked.is_relative() {
            if let Some(relative) = normalize(&Path::new("/").join(asked)) {
                let relative = relative.strip_prefix("/").unwrap_or(&relative).to_path_buf();
                return Ok(Resolved { root: 0, beneath: asked.to_path_buf(), relative, in_any_root: true });
            }
            let first = self.roots.first().ok_or_else(|| self.outside_root(path))?;
            return self.resolve_absolute(&first.real.join(asked), path);
        }
        self.resolve_absolute(asked, path)
    }

    /// Resolves an absolute path (the request's `path`, or what a relative one spells from the first root).
    fn resolve_absolute(&self, asked: &Path, path: &str) -> Result<Resolved, ReadError> {
        let normalized = normalize(asked).ok_or_else(|| self.outside_root(path))?;
        for (index, root) in self.roots.iter().enumerate() {
            for base in [&root.real, &root.given] {
                if let Some(relative) = strip_base(&normalized, base) {
                    // Keep the request's own `..` for the kernel when the spelling allows it.
                    let beneath = strip_base(asked, base).unwrap_or_else(|| relative.clone());
                    return Ok(Resolved { root: index, beneath, relative, in_any_root: false });
                }
            }
        }
        Err(self.outside_root(path))
    }

    /// How a root-relative path is shown: relative beneath the first root, absolute beneath the others (so that
    /// passing it back as a request path reaches the same file).
    pub fn display_in(&self, root: usize, relative: &Path) -> String {
        let root_path = &self.roots[root].real;
        if root == 0 && root_path != Path::new("/") {
            if relative.as_os_str().is_empty() { ".".to_string() } else { relative.to_string_lossy().into_owned() }
        } else {
            root_path.join(relative).to_string_lossy().into_owned()
        }
    }

    /// Opens a resolved path without blocking, confined beneath its root.
    pub fn open(&self, resolved: &Resolved, shown: &str) -> Result<Opened, ReadError> {
        // Which root, and which path beneath it, the open finally went through.
        let (file, root, beneath) = match self.open_beneath(resolved.root, &resolved.beneath) {
            Ok(file) => (file, resolved.root, resolved.beneath.clone()),
            Err(e) if is_escape(&e) => self.open_through_absolute_symlink(resolved, shown)?,
            Err(e) => return Err(self.open_error(&e, resolved, shown)),
        };
        let metadata = file.metadata().map_err(|e| ReadError::from_io(&e, shown))?;
        // The type first: a pipe or socket has no path to locate (its "real path" is `pipe:[N]`).
        if let Some(what) = platform::special_kind(&file, &metadata) {
            return Err(not_regular(what, shown));
        }
        let walked = follow_links(&self.roots[root].real.join(&beneath));
        let real = platform::real_path::of(&file, walked.as_deref())
            .ok_or_else(|| ReadError::new(ErrorCode::IoError, format!("{shown}: cannot tell where the file is")))?;
        let (root, real_relative) = self.locate(&real).ok_or_else(|| self.outside_root(shown))?;
        let handle =
            if metadata.is_dir() { Handle::Directory(Dir::from_std_file(file)) } else { Handle::File(file, metadata) };
        Ok(Opened { handle, root, real_relative })
    }

    /// Where a root-relative path leads with every symbolic link followed: the root it lies beneath and the path
    /// relative to that root, or `None` when it leads out of every root (or loops).
    pub fn leads_to(&self, root: usize, relative: &Path) -> Option<(usize, PathBuf)> {
        follow_links(&self.roots[root].real.join(relative)).and_then(|path| self.locate(&path))
    }

    /// Metadata of a root-relative path without following a final symlink, confined like every open.
    pub fn symlink_metadata(&self, root: usize, relative: &Path) -> io::Result<cap_std::fs::Metadata> {
        match &self.roots[root].dir {
            Some(dir) => dir.symlink_metadata(dot_if_empty(relative)),
            None => Dir::open_ambient_dir("/", cap_std::ambient_authority())?.symlink_metadata(dot_if_empty(relative)),
        }
    }

    /// Opens a directory beneath a root, confined like every open.
    pub fn open_dir(&self, root: usize, relative: &Path) -> io::Result<Dir> {
        match &self.roots[root].dir {
            Some(dir) => dir.open_dir(dot_if_empty(relative)),
            None => Dir::open_ambient_dir(Path::new("/").join(relative), cap_std::ambient_authority()),
        }
    }

    /// Lists a directory beneath a root, confined like every open: its entries' names and kinds, as the directory
    /// stream gives them.
    pub fn read_dir(&self, root: usize, relative: &Path) -> io::Result<cap_std::fs::ReadDir> {
        match &self.roots[root].dir {
            Some(dir) => dir.read_dir(dot_if_empty(relative)),
            None => Dir::open_ambient_dir("/", cap_std::ambient_authority())?.read_dir(dot_if_empty(relative)),
        }
    }

    fn open_beneath(&self, root: usize, relative: &Path) -> io::Result<File> {
        let root = &self.roots[root];
        open_confined(root.dir.as_deref(), &root.real, relative)
    }

    /// The kernel refuses absolute symlink targets beneath a root. Look the real path up; if it lies beneath a root,
    /// open it again through that root's handle (still confined).
    fn open_through_absolute_symlink(
        &self,
        resolved: &Resolved,
        shown: &str,
    ) -> Result<(File, usize, PathBuf), ReadError> {
        let joined = self.roots[resolved.root].real.join(&resolved.beneath);
        // Where the path leads, following every link even when the end does not exist, so that a dangling link
        // out of the roots is OUTSIDE_ROOT (saying NOT_FOUND would tell which outside files exist).
        let leads_to = follow_links(&joined).ok_or_else(|| outside_root(shown).with_hint(SYMLINK_OUT_HINT))?;
        let (root, relative) = self.locate(&leads_to).ok_or_else(|| outside_root(shown).with_hint(SYMLINK_OUT_HINT))?;
        match self.open_beneath(root, &relative) {
            Ok(file) => Ok((file, root, relative)),
            Err(e) if is_escape(&e) => Err(outside_root(shown).with_hint(SYMLINK_OUT_HINT)),
            Err(e) => Err(self.open_error(&e, resolved, shown)),
        }
    }

    /// The root a real path lies beneath, and the path relative to it.
    pub(crate) fn locate(&self, real: &Path) -> Option<(usize, PathBuf)> {
        self.roots.iter().enumerate().find_map(|(i, root)| strip_base(real, &root.real).map(|relative| (i, relative)))
    }

    /// Where else a relative request path may be: the same path beneath each root after the one it resolved to, in
    /// order. Empty for a path the request spelled absolute, or whose `..` climbed out of the first root.
    pub fn beneath_later_roots(&self, resolved: &Resolved) -> Vec<Resolved> {
        if !resolved.in_any_root {
            return Vec::new();
        }
        (resolved.root + 1..self.roots.len()).map(|root| Resolved { root, ..resolved.clone() }).collect()
    }

    /// Whether more than one root is in force.
    pub fn several(&self) -> bool {
        self.roots.len() > 1
    }

    /// The roots in force as the model may pass them back: the first few real paths, then how many more.
    pub fn named(&self) -> String {
        self.named_from(0)
    }

    /// The same from root `first` on.
    pub fn named_from(&self, first: usize) -> String {
        const NAMED: usize = 5;
        let roots = self.roots.get(first..).unwrap_or_default();
        let mut named: Vec<String> = roots.iter().take(NAMED).map(|r| r.real.display().to_string()).collect();
        if roots.len() > NAMED {
            named.push(format!("and {} more", roots.len() - NAMED));
        }
        named.join(", ")
    }

    /// `OUTSIDE_ROOT` for `path`; beneath narrowed roots, naming the roots in force (they lie within the configured
    /// roots, so naming them tells nothing beyond those).
    fn outside_root(&self, path: &str) -> ReadError {
        let error = outside_root(path);
        if self.narrowed {
            error.with_hint(format!(
                "the roots in force (the client's, within the configured roots) are {}; relative paths are looked \
                 for beneath each in turn",
                self.named()
            ))
        } else if self.several() {
            error.with_hint(format!(
                "read only paths inside the roots: {}; relative paths are looked for beneath each in turn",
                self.named()
            ))
        } else {
            error
        }
    }

    fn open_error(&self, err: &io::Error, resolved: &Resolved, shown: &str) -> ReadError {
        match err {
            // Opening a socket fails with ENXIO; say what the path is rather than an opaque I/O error.
            err if platform::is_special_open_failure(err) => {
                match self.symlink_metadata(resolved.root, &resolved.beneath) {
                    Ok(metadata) => not_regular(platform::cap_type_kind(&metadata.file_type()), shown),
                    Err(e) => ReadError::from_io(&e, shown),
                }
            }
            err if platform::is_link_loop(err) => ReadError::new(
                ErrorCode::IoError,
                format!("{shown}: too many levels of symbolic links (a loop, or a /proc magic link, never followed)"),
            )
            .with_hint("read the file the link should point to by its own path"),
            // A file named where the path needs a directory (`a.txt/`, `a.txt/b`, `app.log/../x`). It is named as
            // the request spelled it: the shown path has `..` folded, and may no longer hold the file's name.
            err if err.kind() == io::ErrorKind::NotADirectory => ReadError::new(
                ErrorCode::NotFound,
                format!(
                    "{}: a name followed by `/` in this path is a file, not a directory",
                    self.display_in(resolved.root, &resolved.beneath)
                ),
            ),
            err => ReadError::from_io(err, shown),
        }
    }
}

const SYMLINK_OUT_HINT: &str = "this path goes through a symbolic link that leads outside the roots";

impl Root {
    /// Checks and opens a root: `path` made absolute (`absolute`), which must be an existing directory.
    fn open(absolute: &Path, path: &Path) -> Result<Root, ConfigError> {
        let refuse = |problem| ConfigError::Root { path: path.to_path_buf(), problem };
        let given = normalize(absolute).ok_or_else(|| refuse(RootProblem::ClimbsAboveSlash))?;
        let real =
            std::fs::canonicalize(&given).map_err(|e| refuse(RootProblem::Unusable { reason: e.to_string() }))?;
        // Windows gives `\\?\C:\work`; roots, and the real paths they are compared with, are kept as `C:\work`.
        #[cfg(windows)]
        let real = PathBuf::from(platform::windows_paths::plain(&real.to_string_lossy()));
        if !real.is_dir() {
            return Err(refuse(RootProblem::NotADirectory));
        }
        let dir = if real == Path::new("/") {
            None
        } else {
            let dir = Dir::open_ambient_dir(&real, cap_std::ambient_authority())
                .map_err(|e| refuse(RootProblem::Unopenable { reason: e.to_string() }))?;
            Some(Arc::new(dir))
        };
        Ok(Root::with(given, real, dir))
    }

    /// A root from its parts.
    fn with(given: PathBuf, real: PathBuf, dir: Option<Arc<Dir>>) -> Root {
        Root { given, real, dir }
    }

    fn anchor(&self) -> Anchor {
        Anchor { real: self.real.clone(), depth: self.real.components().count(), dir: self.dir.clone() }
    }
}

/// Opens `relative` for reading without blocking, beneath `dir` (confined), or beneath `/` (`real`) when `dir` is
/// `None`.
fn open_confined(dir: Option<&Dir>, real: &Path, relative: &Path) -> io::Result<File> {
    match dir {
        Some(dir) => {
            let mut options = OpenOptions::new();
            platform::nonblocking(options.read(true));
            dir.open_with(dot_if_empty(relative), &options).map(cap_std::fs::File::into_std)
        }
        None => platform::nonblocking_std(std::fs::OpenOptions::new().read(true)).open(real.join(relative)),
    }
}

/// An I/O error in a few words, without the "(os error N)" tail.
fn io_words(error: &io::Error) -> String {
    let text = error.to_string();
    text.split(" (os error").next().unwrap_or(&text).to_string()
}

/// Whether `cap-std` refused a path because it leads out of the root.
fn is_escape(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none() || platform::is_cross_device(err)
}

/// `path` relative to `base`, when it lies beneath it. On Windows names compare without regard to case, and every
/// spelling of a drive or share (`C:`, `c:`, `\\?\C:`) is the same start, as they are to the file system.
fn strip_base(path: &Path, base: &Path) -> Option<PathBuf> {
    #[cfg(windows)]
    {
        use platform::windows_paths::{beneath, parse};
        let (path, base) = (parse(&path.to_string_lossy()).ok()?, parse(&base.to_string_lossy()).ok()?);
        beneath(&base, &path).map(|names| names.iter().collect())
    }
    #[cfg(not(windows))]
    {
        path.strip_prefix(base).ok().map(Path::to_path_buf)
    }
}

/// Links followed at most while working out where a path leads (Linux allows 40).
const MAX_LINK_HOPS: usize = 40;

/// Where `path` leads with every symbolic link followed, like `realpath -m`: a missing tail is kept as written.
/// `None` for a loop. Used only to classify a refused open; the open itself stays confined by the kernel.
fn follow_links(path: &Path) -> Option<PathBuf> {
    let mut pending: Vec<Step> = steps(path);
    let mut resolved = PathBuf::new();
    let mut hops = 0;
    while let Some(step) = pending.pop() {
        let name = match step {
            Step::Start(start) => {
                resolved = start;
                continue;
            }
            Step::Up => {
                resolved.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let candidate = resolved.join(&name);
        match std::fs::symlink_metadata(&candidate) {
            // Windows counts junctions as symbolic links too: both are followed here, both confined by the open.
            Ok(metadata) if metadata.file_type().is_symlink() => {
                hops += 1;
                let target = std::fs::read_link(&candidate).ok().filter(|_| hops <= MAX_LINK_HOPS)?;
                #[cfg(windows)]
                let target = PathBuf::from(platform::windows_paths::plain(&target.to_string_lossy()));
                pending.extend(steps(&target));
            }
            _ => resolved = candidate,
        }
    }
    Some(resolved)
}

/// One step of [`follow_links`]: start over at an absolute start (`/`, `C:\`), go up, or go down into a name.
enum Step {
    Start(PathBuf),
    Up,
    Name(std::ffi::OsString),
}

/// The steps of `path`, last first (they are taken from the end).
fn steps(path: &Path) -> Vec<Step> {
    let mut start = PathBuf::new();
    let mut steps = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => start.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => steps.push(Step::Up),
            Component::Normal(name) => steps.push(Step::Name(name.to_owned())),
        }
    }
    if !start.as_os_str().is_empty() {
        steps.insert(0, Step::Start(start));
    }
    steps.reverse();
    steps
}

fn dot_if_empty(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() { Path::new(".") } else { relative }
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

fn not_regular(what: &str, shown: &str) -> ReadError {
    ReadError::new(ErrorCode::NotRegular, format!("{shown}: is {what}; only regular files and directories are read"))
        .with_hint("read a regular file instead")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Some(PathBuf::from("/a/c")));
        assert_eq!(normalize(Path::new("/a/..")), Some(PathBuf::from("/")));
        assert_eq!(normalize(Path::new("/..")), None);
    }

    fn setup() -> (tempfile::TempDir, PathBuf, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(dir.path().join("work_secrets")).unwrap();
        std::fs::write(dir.path().join("work_secrets/x"), "secret").unwrap();
        std::fs::write(root.join("inside.txt"), "hello").unwrap();
        let roots = Roots::new(std::slice::from_ref(&root)).unwrap();
        (dir, root, roots)
    }

    #[test]
    fn dot_dot_out_of_the_first_root_may_land_in_another_root() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().canonicalize().unwrap();
        let nested = outer.join("nested");
        std::fs::create_dir(&nested).unwrap();
        std::fs::write(outer.join("a.txt"), "a").unwrap();
        let roots = Roots::new(&[nested.clone(), outer.clone()]).unwrap();
        let climbed = roots.resolve("../a.txt").unwrap();
        assert_eq!((climbed.root, climbed.relative.as_path()), (1, Path::new("a.txt")));
        assert_eq!(roots.resolve("../../a.txt").unwrap_err().code, ErrorCode::OutsideRoot);
        let only_nested = Roots::new(std::slice::from_ref(&nested)).unwrap();
        assert_eq!(only_nested.resolve("../a.txt").unwrap_err().code, ErrorCode::OutsideRoot);
    }

    #[test]
    fn sibling_prefix_and_dot_dot_are_outside() {
        let (dir, _root, roots) = setup();
        let outside = format!("{}/work_secrets/x", dir.path().display());
        assert_eq!(roots.resolve(&outside).unwrap_err().code, ErrorCode::OutsideRoot);
        assert_eq!(roots.resolve("../work_secrets/x").unwrap_err().code, ErrorCode::OutsideRoot);
        let inside = roots.resolve("a/../b").unwrap();
        assert_eq!((inside.relative.as_path(), inside.beneath.as_path()), (Path::new("b"), Path::new("a/../b")));
        assert_eq!(roots.display_in(0, &roots.resolve(".").unwrap().relative), ".");
    }

    #[test]
    fn a_file_used_as_a_directory_is_named_as_the_request_spelled_it() {
        let (_dir, _root, roots) = setup();
        for asked in ["inside.txt/", "inside.txt/more", "inside.txt/../other.txt"] {
            let resolved = roots.resolve(asked).unwrap();
            let shown = roots.display_in(0, &resolved.relative);
            let err = roots.open(&resolved, &shown).unwrap_err();
            assert_eq!(err.code, ErrorCode::NotFound, "{asked}");
            // `inside.txt/../other.txt` is shown as `other.txt`, which holds no file to blame: the message keeps it.
            assert_eq!(
                err.message,
                format!("{asked}: a name followed by `/` in this path is a file, not a directory"),
                "{asked}"
            );
        }
    }

    #[test]
    fn relative_symlink_out_is_refused_by_the_kernel() {
        let (_dir, root, roots) = setup();
        std::os::unix::fs::symlink("../work_secrets/x", root.join("link")).unwrap();
        let err = roots.open(&roots.resolve("link").unwrap(), "link").unwrap_err();
        assert_eq!(err.code, ErrorCode::OutsideRoot);
    }

    #[test]
    fn absolute_symlink_inside_is_followed_and_located() {
        let (_dir, root, roots) = setup();
        std::os::unix::fs::symlink(root.join("inside.txt"), root.join("abs_link")).unwrap();
        let opened = roots.open(&roots.resolve("abs_link").unwrap(), "abs_link").unwrap();
        assert_eq!(opened.real_relative, PathBuf::from("inside.txt"));
        assert!(matches!(opened.handle, Handle::File(..)));
    }

    #[test]
    fn absolute_symlink_outside_is_outside() {
        let (dir, root, roots) = setup();
        std::os::unix::fs::symlink(dir.path().join("work_secrets/x"), root.join("abs_out")).unwrap();
        let err = roots.open(&roots.resolve("abs_out").unwrap(), "abs_out").unwrap_err();
        assert_eq!(err.code, ErrorCode::OutsideRoot);
    }

    #[test]
    fn dangling_links_are_classified_by_where_they_lead() {
        let (dir, root, roots) = setup();
        std::os::unix::fs::symlink("../outside/nope", root.join("out_rel")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nope"), root.join("out_abs")).unwrap();
        std::os::unix::fs::symlink(root.join("nope"), root.join("in_abs")).unwrap();
        for (link, code) in
            [("out_rel", ErrorCode::OutsideRoot), ("out_abs", ErrorCode::OutsideRoot), ("in_abs", ErrorCode::NotFound)]
        {
            assert_eq!(roots.open(&roots.resolve(link).unwrap(), link).unwrap_err().code, code, "{link}");
        }
    }

    #[test]
    fn follow_links_resolves_chains_and_detects_loops() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("b", base.join("a")).unwrap();
        std::os::unix::fs::symlink("sub/../c", base.join("b")).unwrap();
        std::fs::create_dir(base.join("sub")).unwrap();
        assert_eq!(follow_links(&base.join("a/x")), Some(base.join("c/x")));
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        assert_eq!(follow_links(&base.join("loop")), None);
    }

    #[test]
    fn a_root_given_through_a_symlink_accepts_both_spellings() {
        let (dir, root, _) = setup();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        let roots = Roots::new(std::slice::from_ref(&alias)).unwrap();
        for asked in [alias.join("inside.txt"), root.join("inside.txt")] {
            let resolved = roots.resolve(asked.to_str().unwrap()).unwrap();
            let opened = roots.open(&resolved, "inside.txt").unwrap();
            assert_eq!(opened.real_relative, PathBuf::from("inside.txt"));
        }
    }

    #[test]
    fn relative_paths_use_the_first_root_and_later_roots_are_shown_absolute() {
        let (dir, root, _) = setup();
        let second = dir.path().join("work_secrets");
        let roots = Roots::new(&[root.clone(), second.clone()]).unwrap();
        let first = roots.open(&roots.resolve("inside.txt").unwrap(), "inside.txt").unwrap();
        assert_eq!((first.root, roots.display_in(first.root, &first.real_relative)), (0, "inside.txt".to_string()));
        let other = second.join("x");
        let opened = roots.open(&roots.resolve(other.to_str().unwrap()).unwrap(), "x").unwrap();
        let real_second = std::fs::canonicalize(&second).unwrap();
        assert_eq!(opened.root, 1);
        assert_eq!(roots.display_in(1, &opened.real_relative), real_second.join("x").to_string_lossy());
        assert_eq!(roots.resolve("x").unwrap().root, 0);
    }

    #[test]
    fn missing_root_is_a_config_error() {
        let err = Roots::new(&[PathBuf::from("/definitely/not/here")]).unwrap_err();
        assert!(err.to_string().contains("/definitely/not/here"));
    }

    #[cfg(all(target_os = "linux", feature = "portable-resolver"))]
    #[test]
    fn openat2_is_refused_once_roots_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        Roots::new(&[dir.path().to_path_buf()]).unwrap();
        let how = rustix::fs::ResolveFlags::BENEATH;
        let tried =
            rustix::fs::openat2(rustix::fs::CWD, ".", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty(), how);
        assert_eq!(tried.err(), Some(rustix::io::Errno::NOSYS));
    }
}
