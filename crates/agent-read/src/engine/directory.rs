//! A directory through list → window → render: entries sorted by name, paged with offset/limit.
//!
//! The listing is read through the directory's own confined handle. Names and kinds come from the directory stream
//! alone (no `stat` per entry); only the entries of the returned page are measured, so a page of a huge directory
//! costs one listing and one sort, and a later page of the same unchanged directory only its own entries (the sorted
//! listing is kept: [`Listings`]). Entries the policy denies (or links to denied files) are listed but marked, so the
//! model does not try them. A name is one line whatever it holds: one with control characters is JSON-quoted, so it
//! cannot pass for other entries, and a name that is not UTF-8 (which no request can spell) is marked as such.

use super::listings::{Listings, Sorted};
use crate::budget::Budget;
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::listing::{self, ListingFooter};
use crate::render::{self, FOOTER_RESERVE};
use crate::request::Window;
use crate::result::{DirEntry, DirectoryMeta, DirectoryResult, EntryKind};
use cap_std::fs::{Dir, FileType};
use std::ffi::OsString;
use std::path::Path;

/// An open directory and what listing it needs to know.
pub struct Listing<'a> {
    /// The directory's confined handle.
    pub dir: &'a Dir,
    /// Its real path relative to its root.
    pub relative: &'a Path,
    /// Whether the read policy refuses an entry (its root-relative path, its type), to mark it.
    pub refuses: &'a dyn Fn(&Path, FileType) -> bool,
    /// The path as shown to the model.
    pub shown: String,
    /// When the listing must stop.
    pub budget: Budget,
    /// The other roots in force, when this is the first root's own listing and there are several.
    pub other_roots: Option<String>,
    /// Sorted listings kept from earlier pages.
    pub listings: &'a Listings,
}

/// Entries listed at most; a larger directory is listed up to here and says so.
const MAX_ENTRIES: usize = 1_000_000;

/// A listing that failed; running out of time says what helps, since every page reads and sorts all the names.
fn listing_error(error: &std::io::Error, shown: &str) -> ReadError {
    let mapped = ReadError::from_io(error, shown);
    if mapped.code != ErrorCode::Timeout {
        return mapped;
    }
    mapped.with_hint(
        "this directory has too many entries to list in time; read the files you need by path, or list a subdirectory",
    )
}

/// Lists one page of a directory.
pub fn list(listing: &Listing<'_>, window: Window, limits: &Limits) -> Result<DirectoryResult, ReadError> {
    let shown = listing.shown.clone();
    let Window::Lines(lines) = window else {
        return Err(ReadError::invalid_param(format!(
            "{shown} is a directory; start_byte/end_byte apply to files only"
        ))
        .with_hint("page a directory with offset and limit"));
    };
    let io_err = |e: std::io::Error| listing_error(&e, &shown);
    listing.budget.check().map_err(io_err)?;
    let sorted = listing.listings.sorted(listing.dir, || read_sorted(listing)).map_err(io_err)?;
    let names = &sorted.entries;
    let page = Page {
        shown,
        total: names.len() as u64,
        stopped_at: sorted.cut.then_some(MAX_ENTRIES),
        notices: Vec::new(),
        other_roots: listing.other_roots.clone(),
        archive: None,
    };
    page_of(page, lines, limits, |index| {
        let (name, file_type) = &names[index];
        let entry = describe(listing.dir, name, *file_type);
        let denied = file_type.is_some_and(|file_type| (listing.refuses)(&listing.relative.join(name), file_type));
        let other_kind = file_type.map_or("unknown", other_kind_name);
        let line = listing::entry_line(&entry, other_kind, name.to_str().is_none(), denied);
        (entry, line)
    })
}

/// A listing to page: what it is called, how many entries it has, and what its footer says beside the window.
pub struct Page {
    /// The directory as shown to the model.
    pub shown: String,
    /// Entries in all.
    pub total: u64,
    /// The listing stopped at this many entries before the directory's end.
    pub stopped_at: Option<usize>,
    /// Footer notices after the window.
    pub notices: Vec<String>,
    /// The other roots in force, when this is the first root's own listing and there are several.
    pub other_roots: Option<String>,
    /// The archive listed (a listing of an archive or of a directory inside one).
    pub archive: Option<crate::result::ArchiveMeta>,
}

/// The window `lines` of a sorted listing of `page.total` entries, `entry_at` giving the entry at an index (0-based)
/// and its line: only the entries of the window are described.
pub fn page_of(
    page: Page,
    lines: crate::request::LineWindow,
    limits: &Limits,
    entry_at: impl Fn(usize) -> (DirEntry, String),
) -> Result<DirectoryResult, ReadError> {
    let Page { shown, total, stopped_at, notices, other_roots, archive } = page;
    if total == 0 {
        let mut empty = empty_directory(shown);
        empty.meta.archive = archive;
        if empty.meta.archive.is_some() {
            empty.output = listing::EMPTY_ARCHIVE_DIRECTORY.to_string();
        }
        return Ok(empty);
    }
    let first = first_index(lines.offset, total).ok_or_else(|| past_end(&shown, lines.offset, total))?;
    let budget = limits.max_output_bytes - FOOTER_RESERVE;
    let mut output = String::new();
    let mut entries = Vec::new();
    let mut cap_hit = false;
    let end = first.saturating_add(lines.limit).min(total);
    for index in first..end {
        let (entry, line) = entry_at(index as usize);
        if output.len() + line.len() + 1 > budget && !entries.is_empty() {
            cap_hit = true;
            break;
        }
        output.push_str(&line);
        output.push('\n');
        entries.push(entry);
    }
    let returned = entries.len() as u64;
    let last = first + returned;
    let next_offset = (last < total).then_some(last + 1);
    let footer = ListingFooter {
        first: first + 1,
        last,
        total,
        stopped_at,
        clamped_to: lines.clamped_from.map(|_| limits.max_lines),
        cap_reached: cap_hit.then_some(limits.max_output_bytes),
        next_call: next_offset.map(|n| lines.next_call(n)),
        other_roots,
        notices,
    };
    render::append_footer(&mut output, &footer.text());
    let meta = DirectoryMeta {
        path: shown,
        total_entries: total,
        returned_entries: returned,
        offset: first + 1,
        next_offset,
        byte_cap_hit: cap_hit,
        limit_clamped_to: lines.clamped_to(),
        archive,
    };
    Ok(DirectoryResult { output, meta, entries })
}

/// Every entry of the directory (up to [`MAX_ENTRIES`]), sorted by name bytes.
fn read_sorted(listing: &Listing<'_>) -> std::io::Result<Sorted> {
    let mut sorted = Sorted::default();
    for entry in listing.dir.entries()? {
        if sorted.entries.len() == MAX_ENTRIES {
            sorted.cut = true;
            break;
        }
        if sorted.entries.len().is_multiple_of(4096) {
            listing.budget.check()?;
        }
        let entry = entry?;
        sorted.entries.push((entry.file_name(), entry.file_type().ok()));
    }
    sorted.entries.sort_unstable_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    Ok(sorted)
}

/// The 0-based index of the first entry for `offset`, or `None` when it is past the end.
fn first_index(offset: i64, total: u64) -> Option<u64> {
    if offset > 0 {
        let index = offset.unsigned_abs() - 1;
        (index < total).then_some(index)
    } else {
        Some(total.saturating_sub(offset.unsigned_abs()))
    }
}

fn past_end(shown: &str, offset: i64, total: u64) -> ReadError {
    ReadError::invalid_range(format!(
        "offset {offset} is past the end: {shown} has {total} entries, so the last valid offset is {total}"
    ))
    .with_hint(format!("list from the start with offset=1, or the last entries with offset=-{}", total.min(50)))
}

fn describe(dir: &Dir, name: &OsString, file_type: Option<FileType>) -> DirEntry {
    let kind = match file_type {
        Some(t) if t.is_dir() => EntryKind::Dir,
        Some(t) if t.is_file() => EntryKind::File,
        Some(t) if t.is_symlink() => EntryKind::Symlink,
        _ => EntryKind::Other,
    };
    let size = match kind {
        EntryKind::File | EntryKind::Symlink => dir.symlink_metadata(name).ok().map(|m| m.len()),
        _ => None,
    };
    DirEntry { name: name.to_string_lossy().into_owned(), kind, size, compressed_size: None }
}

fn other_kind_name(t: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt as _;
        if t.is_fifo() {
            "fifo"
        } else if t.is_socket() {
            "socket"
        } else if t.is_char_device() || t.is_block_device() {
            "device"
        } else {
            "other"
        }
    }
    #[cfg(windows)]
    {
        let _ = t;
        "other"
    }
}

fn empty_directory(shown: String) -> DirectoryResult {
    let output = listing::EMPTY_DIRECTORY.to_string();
    let meta = DirectoryMeta {
        path: shown,
        total_entries: 0,
        returned_entries: 0,
        offset: 1,
        next_offset: None,
        byte_cap_hit: false,
        limit_clamped_to: None,
        archive: None,
    };
    DirectoryResult { output, meta, entries: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::budget::Cancel;
    use crate::policy::{Policy, PolicyConfig};
    use crate::request::LineWindow;
    use std::time::Instant;

    fn lines(offset: i64, limit: u64) -> Window {
        Window::Lines(LineWindow { offset, limit, clamped_from: None, explicit_limit: true })
    }

    fn list_dir(path: &Path, window: Window) -> Result<DirectoryResult, ReadError> {
        let policy = Policy::new(&PolicyConfig::default()).unwrap();
        let refuses = |relative: &Path, _: FileType| policy.check(relative, &path.join(relative)).is_err();
        list_kept(path, window, &Listings::default(), &refuses)
    }

    /// Lists a page of `path` with the listings `listings` keeps and the policy `refuses`.
    fn list_kept(
        path: &Path,
        window: Window,
        listings: &Listings,
        refuses: &dyn Fn(&Path, FileType) -> bool,
    ) -> Result<DirectoryResult, ReadError> {
        let dir = Dir::open_ambient_dir(path, cap_std::ambient_authority()).unwrap();
        let budget = Budget::new(Instant::now() + std::time::Duration::from_secs(30), Cancel::new());
        let listing = Listing {
            dir: &dir,
            relative: Path::new(""),
            refuses,
            shown: "d".into(),
            budget,
            other_roots: None,
            listings,
        };
        list(&listing, window, &Limits::default())
    }

    /// Long enough for any file system's timestamps to tell a change made after it from one made before.
    const SETTLE: std::time::Duration = std::time::Duration::from_millis(60);

    fn kept_page(path: &Path, listings: &Listings) -> String {
        list_kept(path, lines(1, 10), listings, &|_, _| false).unwrap().output
    }

    #[test]
    fn a_kept_listing_serves_later_pages_and_every_change_to_the_directory_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        for name in ["a", "b", "c"] {
            std::fs::write(path.join(name), "x").unwrap();
        }
        let listings = Listings::eager(SETTLE / 2);
        type Change = fn(&Path);
        let changes: [(Change, &str); 4] = [
            (|p| std::fs::write(p.join("a"), "longer").unwrap(), "a  (6 B)\nb  (1 B)\nc  (1 B)\n"),
            (|p| std::fs::write(p.join("0"), "").unwrap(), "0  (0 B)\na  (6 B)\nb  (1 B)\nc  (1 B)\n"),
            (|p| std::fs::remove_file(p.join("b")).unwrap(), "0  (0 B)\na  (6 B)\nc  (1 B)\n"),
            (|p| std::fs::rename(p.join("c"), p.join("_c")).unwrap(), "0  (0 B)\n_c  (1 B)\na  (6 B)\n"),
        ];
        for (n, (change, now)) in changes.into_iter().enumerate() {
            std::thread::sleep(SETTLE);
            kept_page(path, &listings);
            assert_eq!(listings.kept(), 1, "the listing is kept once the directory's times have settled");
            change(path);
            let page = kept_page(path, &listings);
            assert!(page.starts_with(now), "{page}");
            if n == 0 {
                assert_eq!(listings.kept(), 1, "a file's new size leaves its directory as it was: the listing served");
            }
        }
    }

    #[test]
    fn a_kept_listing_is_judged_by_the_policy_on_every_page() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let listings = Listings::eager(SETTLE / 2);
        std::thread::sleep(SETTLE);
        let allowed = list_kept(dir.path(), lines(1, 10), &listings, &|_, _| false).unwrap().output;
        assert_eq!((allowed.as_str(), listings.kept()), ("notes.txt  (1 B)\n(entries 1-1 of 1 · end of directory)", 1));
        let denied = list_kept(dir.path(), lines(1, 10), &listings, &|_, _| true).unwrap().output;
        assert_eq!(denied, "notes.txt  (1 B)  (denied)\n(entries 1-1 of 1 · end of directory)");
    }

    #[test]
    fn a_directory_changed_just_before_it_is_listed_or_a_small_one_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let racy = Listings::eager(std::time::Duration::from_secs(3600));
        kept_page(dir.path(), &racy);
        assert_eq!(racy.kept(), 0, "its times are not an hour old");
        let small = Listings::default();
        std::thread::sleep(SETTLE);
        kept_page(dir.path(), &small);
        assert_eq!(small.kept(), 0, "one entry lists faster than it is kept");
    }

    #[test]
    fn lists_sorted_with_kinds_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b_dir")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "12345").unwrap();
        std::fs::write(dir.path().join("c.txt"), "").unwrap();
        let r = list_dir(dir.path(), lines(1, 2)).unwrap();
        assert_eq!(r.output, "a.txt  (5 B)\nb_dir/\n(entries 1-2 of 3 · next: offset=3 limit=2)");
        assert_eq!(r.entries[0].size, Some(5));
        assert_eq!(r.entries[1].kind, EntryKind::Dir);
        let r = list_dir(dir.path(), lines(-1, 10)).unwrap();
        assert_eq!(r.output, "c.txt  (0 B)\n(entries 3-3 of 3 · end of directory)");
    }

    #[test]
    fn offset_past_end_is_invalid_range() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "").unwrap();
        let err = list_dir(dir.path(), lines(5, 10)).unwrap_err();
        assert!(err.message.contains("last valid offset is 1"), "{}", err.message);
    }

    #[test]
    #[cfg(unix)]
    fn a_name_is_one_line_and_a_name_no_request_can_spell_says_so() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt  (3 B)\nplan.md  (12 B)\nz"), "x").unwrap();
        std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(b"n\xffame.txt")), "xy").unwrap();
        let r = list_dir(dir.path(), lines(1, 10)).unwrap();
        assert_eq!(
            r.output,
            "\"a.txt  (3 B)\\nplan.md  (12 B)\\nz\"  (1 B)\n\
             n\u{FFFD}ame.txt  (2 B)  (name not UTF-8: cannot be read by path)\n\
             (entries 1-2 of 2 · end of directory)"
        );
        // The JSON keeps the name as it is (escaped by JSON itself).
        assert_eq!(r.entries[0].name, "a.txt  (3 B)\nplan.md  (12 B)\nz");
    }

    #[test]
    fn denied_entries_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "KEY=1").unwrap();
        let r = list_dir(dir.path(), lines(1, 10)).unwrap();
        assert!(r.output.starts_with(".env  (5 B)  (denied)\n"), "{}", r.output);
    }

    fn list_stopped(budget: Budget) -> ReadError {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "").unwrap();
        let handle = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let listing = Listing {
            dir: &handle,
            relative: Path::new(""),
            refuses: &|_, _| false,
            shown: "d".into(),
            budget,
            other_roots: None,
            listings: &Listings::default(),
        };
        list(&listing, lines(1, 10), &Limits::default()).unwrap_err()
    }

    #[test]
    fn listing_past_its_deadline_is_a_timeout() {
        let err = list_stopped(Budget::new(Instant::now(), Cancel::new()));
        assert_eq!(err.code, ErrorCode::Timeout);
        assert!(err.hint.unwrap().contains("read the files you need by path"));
    }

    #[test]
    fn cancelled_listing_stops() {
        let cancel = Cancel::new();
        cancel.cancel();
        let err = list_stopped(Budget::new(Instant::now() + std::time::Duration::from_secs(30), cancel));
        assert_eq!(err.code, crate::error::ErrorCode::Cancelled);
    }

    #[test]
    fn empty_directory_has_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let r = list_dir(dir.path(), lines(1, 10)).unwrap();
        assert_eq!(r.output, "(empty directory)");
    }
}
