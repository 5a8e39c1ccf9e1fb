//! Archives on the road: a zip or tar file read as a directory of its members, and a path through it
//! (`logs.zip/dir/b.log`) read as that member — a text member windowed like any text, any other member down the same
//! road as a file (see [`member`]).
//!
//! Contract:
//! - **Finding the archive.** A path that does not open is looked at name by name from the root: the first name on
//!   the way that is a regular file (not a directory) and an archive is the archive, and the rest of the path is a
//!   member path inside it. A real directory named like an archive (`logs.zip/`) is a directory and wins. The archive
//!   itself is opened and judged by policy like any file.
//! - **Policy.** The whole path, archive and member (`bundle.zip/.env`, `x.tar.gz/secrets/a.txt`), is judged by the
//!   deny and allow globs and the ignore files before the archive is read, as a file's path would be; a member that
//!   the archive's index shows is a directory is judged again as a directory (an ignore rule `build/` refuses it, as
//!   it does a real `build/`). A listing marks the members it refuses, and a NOT_FOUND never suggests one; both judge
//!   a directory as a directory.
//! - **Nesting.** A member that is itself an archive is listed and read one level deep (`outer.zip/inner.tar/b.log`);
//!   an archive inside that is refused.
//! - **Byte ranges** on the archive address its raw file; on a member, the member's own bytes.

mod member;

use super::Reader;
use super::directory::{self, Page};
use super::file::FileRequest;
use super::target::Target;
use crate::budget::Budget;
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render;
use crate::request::Window;
use crate::resolve::{Handle, Resolved};
use crate::result::{ArchiveMeta, DirEntry, EntryKind, ReadResult};
use crate::source::archive::{self, Archive, ArchiveError, Catalog, Child, Format, Lookup, MemberKind};
use std::path::{Component, Path, PathBuf};

/// Archives are read this many levels deep: an archive file, and an archive member of it.
const MAX_DEPTH: u8 = 2;

/// Where an archive is: its open bytes, how it is named, and where policy judges its members from.
pub(super) struct Place<'a> {
    /// The archive's bytes.
    pub archive: Archive<'a>,
    /// The archive as shown (a file's path, or for a nested archive the outer archive's member path).
    pub shown: String,
    /// The root its file lies beneath, and that file's real path relative to it: members are judged at
    /// `relative/inner/member`.
    pub root: usize,
    pub relative: PathBuf,
    /// The member path of a nested archive inside the outer one (empty for an archive file).
    pub inner: String,
    /// 1 for an archive file, 2 for an archive inside one.
    pub depth: u8,
}

impl Place<'_> {
    /// A member path as shown to the model.
    fn shown_member(&self, path: &str) -> String {
        if path.is_empty() { self.shown.clone() } else { format!("{}/{path}", self.shown) }
    }

    /// A member path as policy judges it: beneath the archive file's real path.
    fn judged(&self, path: &str) -> PathBuf {
        let mut judged = self.relative.clone();
        for part in self.inner.split('/').chain(path.split('/')).filter(|part| !part.is_empty()) {
            judged.push(part);
        }
        judged
    }

    /// What results say of the archive, for the member `path`.
    fn meta(&self, path: &str) -> ArchiveMeta {
        ArchiveMeta {
            path: self.shown.clone(),
            format: self.archive.format.name(),
            member: (!path.is_empty()).then(|| path.to_string()),
            ..ArchiveMeta::default()
        }
    }
}

/// An archive file found on the way to a path, and the member path after it.
struct Found {
    opened: crate::resolve::Opened,
    shown: String,
    head: Vec<u8>,
    format: Format,
    member: String,
}

impl Found {
    /// Where the archive is, for reading it within `budget`.
    fn place(&self, budget: &Budget) -> Option<Place<'_>> {
        let Handle::File(file, metadata) = &self.opened.handle else { return None };
        Some(Place {
            archive: Archive {
                file,
                end: super::target::read_end_of(metadata),
                format: self.format,
                budget: budget.clone(),
            },
            shown: self.shown.clone(),
            root: self.opened.root,
            relative: self.opened.real_relative.clone(),
            inner: String::new(),
            depth: 1,
        })
    }
}

/// The archive `target` holds, when it is one: a zip that is not an Office document (a `.docx` is a zip, and is read
/// as a document), or a tar, plain or compressed. A forced encoding asks for the file's own text, so it finds none.
pub(super) fn sniff(target: &Target<'_>, request: &FileRequest<'_>) -> Option<Format> {
    if request.forced.is_some() {
        return None;
    }
    sniff_any(target)
}

/// The archive `target` holds, whatever the request forces (a path through an archive names a member: an encoding
/// it forces is the member's).
fn sniff_any(target: &Target<'_>) -> Option<Format> {
    let format = Format::sniff(target.file, target.read_end(), target.head, &target.budget)?;
    if format == Format::Zip {
        let content = crate::classify::classify(target.head, None);
        let refined = crate::classify::document::refine(content, target.head, &target.shown, None);
        if matches!(refined, crate::classify::Content::Document(_)) {
            return None;
        }
    }
    Some(format)
}

impl Reader {
    /// Reads a path that did not open as a file or directory, when a name on its way is an archive: the member (or
    /// directory of members) the rest of the path names. `Ok(None)` when no archive is on the way: the caller's
    /// `missing` error stands.
    pub(super) fn read_through_archive(
        &self,
        resolved: &Resolved,
        request: FileRequest<'_>,
        (budget, limits, observe): (&Budget, &Limits, bool),
        trace: &mut super::Trace,
    ) -> Result<Option<ReadResult>, ReadError> {
        let Some(found) = self.archive_found(resolved, budget, trace)? else { return Ok(None) };
        let Some(place) = found.place(budget) else { return Ok(None) };
        trace.shown = Some(place.shown_member(&found.member));
        self.check_member_policy(&place, &found.member)?;
        let result = self.read_in_archive(&place, &found.member, request, limits)?;
        if observe {
            trace.seen = self.seen_member(&found);
        }
        Ok(Some(result))
    }

    /// What a session learns of a path through an archive (see [`Reader::observe`]): the archive file as found now,
    /// under the member's path, so that a member counts as changed when its archive does. `Ok(None)` when no archive
    /// is on the way.
    pub(super) fn observe_through_archive(&self, resolved: &Resolved) -> Result<Option<super::Seen>, ReadError> {
        let timeout = std::time::Duration::from_millis(self.limits.timeout_ms);
        let budget = Budget::new(std::time::Instant::now() + timeout, crate::budget::Cancel::new());
        let Some(found) = self.archive_found(resolved, &budget, &mut super::Trace::default())? else { return Ok(None) };
        let Some(place) = found.place(&budget) else { return Ok(None) };
        self.check_member_policy(&place, &found.member)?;
        Ok(self.seen_member(&found))
    }

    /// The archive on the way to `resolved`, opened and judged as a file path is (confined, by policy), with the
    /// member path after it; `None` when no name on the way is an archive file that opens.
    fn archive_found(
        &self,
        resolved: &Resolved,
        budget: &Budget,
        trace: &mut super::Trace,
    ) -> Result<Option<Found>, ReadError> {
        let Some((archive_path, member)) = self.archive_on_the_way(resolved) else { return Ok(None) };
        let archive_shown = self.roots.display_in(resolved.root, &archive_path);
        // A name on the way that does not open (a broken link, say) leaves the caller's error standing.
        let (opened, shown) = match self.open_confined(&archive_shown, budget, trace) {
            Ok(found) => found,
            Err(error) if error.code == ErrorCode::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let Handle::File(file, metadata) = &opened.handle else { return Ok(None) };
        let head = super::file::read_head(file, metadata, &shown)?;
        let indexes = &self.indexes;
        let target = Target { file, metadata, head: &head, shown, budget: budget.clone(), indexes };
        let Some(format) = sniff_any(&target) else { return Ok(None) };
        let shown = target.shown;
        Ok(Some(Found { opened, shown, head, format, member }))
    }

    /// The archive file found, under the member's path beneath it, its content hashed when small.
    fn seen_member(&self, found: &Found) -> Option<super::Seen> {
        let Handle::File(file, metadata) = &found.opened.handle else { return None };
        let mut real_path = self.roots.real_path(found.opened.root).join(&found.opened.real_relative);
        real_path.extend(found.member.split('/'));
        let mut seen = super::Seen::of(real_path, file, metadata);
        seen.content = super::observe::hash_file(file, metadata, &found.head).ok().flatten();
        Some(seen)
    }

    /// The first name on the way to `resolved` that is not a directory, and the member path after it (UTF-8 names
    /// joined by `/`); `None` when every name on the way is a directory, one does not exist, or the rest cannot be
    /// spelled as a member path.
    fn archive_on_the_way(&self, resolved: &Resolved) -> Option<(PathBuf, String)> {
        let names: Vec<&std::ffi::OsStr> = resolved
            .relative
            .components()
            .map(|component| match component {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let mut prefix = PathBuf::new();
        for (depth, name) in names.iter().enumerate().take(names.len().saturating_sub(1)) {
            prefix.push(name);
            let metadata = self.roots.symlink_metadata(resolved.root, &prefix).ok()?;
            // A link to a directory is a directory on the way (where it leads is judged when the path is opened).
            let leads_to_dir = metadata.is_symlink()
                && self.roots.leads_to(resolved.root, &prefix).is_some_and(|(root, real)| {
                    self.roots.symlink_metadata(root, &real).is_ok_and(|target| target.is_dir())
                });
            if metadata.is_dir() || leads_to_dir {
                continue;
            }
            let rest: Option<Vec<&str>> = names[depth + 1..].iter().map(|name| name.to_str()).collect();
            return Some((prefix, rest?.join("/")));
        }
        None
    }

    /// Refuses a member path the policy refuses, judged as the file path it would be beneath the archive's.
    fn check_member_policy(&self, place: &Place<'_>, path: &str) -> Result<(), ReadError> {
        let judged = place.judged(path);
        let shown = place.shown_member(path);
        self.check_policy(place.root, &judged, &shown)?;
        self.check_ignored_at(place.root, &judged, false, &shown)
    }

    /// Refuses a member directory the ignore files refuse as a directory (`build/`): the same answer as a real
    /// directory gets. [`Reader::check_member_policy`] judged its path as a file's before the archive was read, since
    /// only the archive's index tells a directory.
    fn check_member_dir_ignored(&self, place: &Place<'_>, path: &str) -> Result<(), ReadError> {
        self.check_ignored_at(place.root, &place.judged(path), true, &place.shown_member(path))
    }

    /// Whether the policy refuses a member path (to mark it in a listing, or leave it out of suggestions).
    fn refuses_member(&self, place: &Place<'_>, path: &str, is_dir: bool) -> bool {
        self.refuses(place.root, &place.judged(path), is_dir)
    }

    /// Reads an archive file found at its own path: its top listing.
    pub(super) fn read_archive_file(
        &self,
        target: &Target<'_>,
        format: Format,
        request: FileRequest<'_>,
        limits: &Limits,
        (root, relative): (usize, &Path),
    ) -> Result<ReadResult, ReadError> {
        let archive = Archive { file: target.file, end: target.read_end(), format, budget: target.budget.clone() };
        let place = Place {
            archive,
            shown: target.shown.clone(),
            root,
            relative: relative.to_path_buf(),
            inner: String::new(),
            depth: 1,
        };
        self.read_in_archive(&place, "", request, limits)
    }

    /// Reads `path` inside the archive at `place`: its listing when it is the top or a directory, else its member.
    fn read_in_archive(
        &self,
        place: &Place<'_>,
        path: &str,
        request: FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        if path.is_empty() {
            let catalog = place.archive.catalog().map_err(|error| archive_error(place, "", error, limits))?;
            return self.list_members(place, &catalog, "", request, limits);
        }
        match place.archive.lookup(path).map_err(|error| archive_error(place, path, error, limits))? {
            Lookup::Found(found) if found.kind == MemberKind::Dir => {
                self.check_member_dir_ignored(place, path)?;
                let catalog = place.archive.catalog().map_err(|error| archive_error(place, path, error, limits))?;
                self.list_members(place, &catalog, path, request, limits)
            }
            Lookup::Found(found) => self.read_member(place, &found, request, limits),
            Lookup::Catalog(catalog) if archive::is_directory(&catalog, path) => {
                self.check_member_dir_ignored(place, path)?;
                self.list_members(place, &catalog, path, request, limits)
            }
            Lookup::Catalog(catalog) => match nested_prefix(&catalog, path) {
                Some((outer, rest)) => self.read_nested(place, &outer, &rest, request, limits),
                None => Err(self.missing_member(place, &catalog, path)),
            },
        }
    }

    /// One page of the members directly in the directory `dir` of the archive (`""`: its top).
    fn list_members(
        &self,
        place: &Place<'_>,
        catalog: &Catalog,
        dir: &str,
        request: FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        let shown = place.shown_member(dir);
        let lines = match request.window {
            Window::Lines(lines) if request.pages.is_none() => lines,
            _ => return Err(listing_refusal(&shown, &request.window, request.pages.is_some())),
        };
        let children = archive::children(catalog, dir);
        let page = Page {
            shown,
            total: children.len() as u64,
            stopped_at: None,
            notices: render::archive::listing_notices(
                place.archive.format.name(),
                catalog.members.len(),
                catalog.stopped_at.is_some(),
                catalog.duplicates_dropped,
            ),
            other_roots: None,
            archive: Some(ArchiveMeta { members: Some(catalog.members.len() as u64), ..place.meta(dir) }),
        };
        directory::page_of(page, lines, limits, |index| {
            let child = &children[index];
            let path = if dir.is_empty() { child.name.clone() } else { format!("{dir}/{}", child.name) };
            let unsafe_name = child.member.is_some_and(|member| member.path.is_none());
            let denied = !unsafe_name && self.refuses_member(place, &path, child.is_dir());
            let facts = line_facts(child, unsafe_name, denied, catalog.copy_read == archive::CopyRead::Last);
            (entry_of(child), render::archive::member_line(&facts))
        })
        .map(ReadResult::Directory)
    }

    /// NOT_FOUND for a member path, with the members of its directory most like it (never one policy refuses).
    fn missing_member(&self, place: &Place<'_>, catalog: &Catalog, path: &str) -> ReadError {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let dir_exists = dir.is_empty() || archive::is_directory(catalog, dir);
        let shown = place.shown_member(path);
        let error = ReadError::new(ErrorCode::NotFound, format!("{shown}: no such member in the archive"));
        if !dir_exists {
            return error.with_hint(format!("list the archive to see its members: path={}", place.shown));
        }
        let siblings: Vec<Child<'_>> = archive::children(catalog, dir)
            .into_iter()
            .filter(|child| child.member.is_none_or(|m| m.path.is_some()))
            .collect();
        let dirs: std::collections::HashSet<&str> =
            siblings.iter().filter(|child| child.is_dir()).map(|child| child.name.as_str()).collect();
        let full =
            |child_name: &str| if dir.is_empty() { child_name.to_string() } else { format!("{dir}/{child_name}") };
        // A directory is judged as one, as its line in a listing is.
        let offerable =
            |candidate: &String| !self.refuses_member(place, &full(candidate), dirs.contains(candidate.as_str()));
        let names = siblings.iter().map(|child| child.name.clone());
        let suggestions = crate::suggest::ranked(name, names, &place.archive.budget, offerable)
            .into_iter()
            .map(|candidate| place.shown_member(&full(&candidate)))
            .collect();
        error
            .with_suggestions(suggestions)
            .with_hint(format!("list the directory to see its members: path={}", place.shown_member(dir)))
    }
}

/// The deepest member whose path is a proper prefix of `path` and that is a file (an archive inside the archive),
/// with the rest of the path; of several stored under that prefix, the one a read reaches.
fn nested_prefix(catalog: &Catalog, path: &str) -> Option<(archive::Member, String)> {
    let mut cut = path.len();
    while let Some(at) = path[..cut].rfind('/') {
        let (prefix, rest) = (&path[..at], &path[at + 1..]);
        if let Some(member) = catalog.read_copy(prefix).filter(|member| member.kind == MemberKind::File) {
            return Some((member.clone(), rest.to_string()));
        }
        cut = at;
    }
    None
}

/// What a member's line in a listing shows.
fn line_facts<'c>(
    child: &'c Child<'_>,
    unsafe_name: bool,
    denied: bool,
    last_copy_read: bool,
) -> render::archive::MemberEntry<'c> {
    use render::archive::Shape;
    let shape = match child.member {
        _ if child.is_dir() => Shape::Dir,
        Some(member) => match member.kind {
            MemberKind::Symlink => Shape::Symlink,
            MemberKind::HardLink => Shape::HardLink,
            MemberKind::Special => Shape::Special,
            MemberKind::File | MemberKind::Dir => Shape::File {
                size: member.size,
                compressed: member.compressed_size,
                stored: member.method == Some("stored"),
            },
        },
        None => Shape::Dir,
    };
    render::archive::MemberEntry {
        name: &child.name,
        shape,
        encrypted: child.member.is_some_and(|member| member.encrypted),
        unsafe_name,
        copies: child.copies,
        last_copy_read,
        denied,
    }
}

/// The entry a listing's JSON gives a member.
fn entry_of(child: &Child<'_>) -> DirEntry {
    let kind = match child.member.map(|member| member.kind) {
        _ if child.is_dir() => EntryKind::Dir,
        Some(MemberKind::File) => EntryKind::File,
        Some(MemberKind::Symlink) => EntryKind::Symlink,
        _ => EntryKind::Other,
    };
    let file = child.member.filter(|member| member.kind == MemberKind::File);
    DirEntry {
        name: child.name.clone(),
        kind,
        size: file.map(|member| member.size),
        compressed_size: file.and_then(|member| member.compressed_size),
    }
}

/// What a listing of an archive refuses: a byte range, block mode, `find`, `region` or `pages`.
fn listing_refusal(shown: &str, window: &Window, pages: bool) -> ReadError {
    let what = match window {
        Window::Bytes { .. } => "start_byte/end_byte address a file's bytes",
        Window::Block(_) => "block mode (`mode` \"block\") applies to text files only",
        Window::Find(_) => "`find` searches one file's text",
        Window::Region(_) => "`region` applies to images only",
        Window::Lines(_) if pages => "`pages` applies to PDFs, workbooks and presentations only",
        Window::Lines(_) => "a listing is paged with offset and limit",
    };
    ReadError::invalid_param(format!("{shown} is listed as a directory of its members; {what}")).with_hint(
        "page the listing with offset and limit, and read a member by its path, e.g. path=\"<archive>/<member>\"",
    )
}

/// An archive that could not be read, in the model's terms.
fn archive_error(place: &Place<'_>, path: &str, error: ArchiveError, limits: &Limits) -> ReadError {
    let shown = &place.shown;
    let format = place.archive.format.name();
    match error {
        ArchiveError::Damaged(reason) => {
            ReadError::new(ErrorCode::IoError, format!("{shown}: a damaged {format} archive: {reason}")).with_hint(
                "the archive is corrupt or cut short (an unfinished download or copy?); ask the user for a fresh copy",
            )
        }
        ArchiveError::TooLarge(reason) => {
            ReadError::new(ErrorCode::TooLarge, format!("{shown}: {format} archive too large to list: {reason}"))
                .with_hint("skip this archive, or ask the user for the files it holds")
        }
        ArchiveError::Stopped(error) if error.kind() == std::io::ErrorKind::TimedOut => ReadError::new(
            ErrorCode::Timeout,
            format!(
                "{}: reading the {format} archive ran past the {} s time budget",
                place.shown_member(path),
                limits.timeout_ms as f64 / 1000.0
            ),
        )
        .with_hint(if place.archive.format.is_sequential() {
            "a compressed tar is decompressed from its start to reach a member; ask for a longer time budget, or for the archive uncompressed"
        } else {
            "ask for a longer time budget, or skip this archive"
        }),
        ArchiveError::Stopped(error) => ReadError::from_io(&error, shown),
    }
}
