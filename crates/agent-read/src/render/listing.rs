//! A directory listing as the model sees it: one line per entry, and a footer saying which entries it shows, why it
//! stopped, and the next call.

use super::{Footer, human_size};
use crate::escape::one_line_name;
use crate::result::{DirEntry, EntryKind};

/// The whole answer for a directory without entries.
pub const EMPTY_DIRECTORY: &str = "(empty directory)";
/// The whole answer for an archive (or a directory inside one) without members.
pub const EMPTY_ARCHIVE_DIRECTORY: &str = "(empty archive)";

/// An entry's line: its name on one line, `/` after a directory, the size of a file, what else it is; whether its
/// name is not UTF-8 (`not_utf8`: it cannot be named in a request) and whether the policy refuses it (`denied`).
pub fn entry_line(entry: &DirEntry, other_kind: &str, not_utf8: bool, denied: bool) -> String {
    let name = one_line_name(&entry.name);
    let mut line = match entry.kind {
        EntryKind::Dir => format!("{name}/"),
        EntryKind::File => format!("{name}  ({})", human_size(entry.size.unwrap_or(0))),
        EntryKind::Symlink => format!("{name}  (symlink)"),
        EntryKind::Other => format!("{name}  ({other_kind})"),
    };
    if not_utf8 {
        line.push_str("  (name not UTF-8: cannot be read by path)");
    }
    if denied {
        line.push_str("  (denied)");
    }
    line
}

/// What a listing showed, as facts; [`ListingFooter::text`] chooses the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingFooter {
    /// First entry shown, from 1.
    pub first: u64,
    /// Last entry shown.
    pub last: u64,
    /// Entries listed in all.
    pub total: u64,
    /// The listing stopped at this many entries, before the directory's end.
    pub stopped_at: Option<usize>,
    /// The request's limit was clamped to this.
    pub clamped_to: Option<u64>,
    /// The output cap (in bytes) that cut the listing short.
    pub cap_reached: Option<usize>,
    /// The call that lists the next entries.
    pub next_call: Option<String>,
    /// The other roots in force, named in the listing of the first root (relative paths are looked for beneath
    /// them too).
    pub other_roots: Option<String>,
    /// What else the footer says of the listing (an archive's format and member count), before the window's own
    /// notices.
    pub notices: Vec<String>,
}

impl ListingFooter {
    /// The footer line.
    pub fn text(&self) -> String {
        let (first, last, total) = (self.first, self.last, self.total);
        let mut footer = Footer::new(format!("entries {first}-{last} of {total}"));
        for notice in &self.notices {
            footer.notice(notice.clone());
        }
        if let Some(entries) = self.stopped_at {
            footer.notice(format!("listing stopped at {entries} entries"));
        }
        if let Some(limit) = self.clamped_to {
            footer.notice(format!("limit clamped to {limit}"));
        }
        if let Some(cap) = self.cap_reached {
            footer.notice(format!("output cap {} reached", human_size(cap as u64)));
        }
        if let Some(roots) = &self.other_roots {
            footer.notice(format!("other roots: {roots}"));
        }
        footer.finish(self.next_call.clone(), "end of directory")
    }
}
