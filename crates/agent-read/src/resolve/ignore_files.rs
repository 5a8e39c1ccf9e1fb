//! Ignore files, read for the policy and for glob walks through the handle of the configured root they lie beneath
//! (see [`Roots::judged`]): confined like every open, and never blocking on a FIFO.

use super::{Dir, Roots, io_words, is_escape, open_confined};
use crate::policy::ignore::{IgnoreFile, MAX_IGNORE_FILE};
use std::path::Path;

impl Roots {
    /// Reads an ignore file (a path relative to anchor `anchor`, see [`Roots::judged`]) through the anchor's handle,
    /// without blocking on a FIFO; [`IgnoreFile::Missing`] when there is none.
    pub fn read_ignore_file(&self, anchor: usize, relative: &Path) -> IgnoreFile {
        match self.anchors.get(anchor) {
            Some(anchor) => read_ignore_file(anchor.dir.as_deref(), &anchor.real, relative),
            None => IgnoreFile::Missing,
        }
    }

    /// A reader of the ignore files beneath anchor `anchor` that owns what it needs (for a walk's filter, which must).
    pub fn ignore_file_reader(&self, anchor: usize) -> impl Fn(&Path) -> IgnoreFile + Send + Sync + 'static {
        let anchor = self.anchors.get(anchor).cloned();
        move |relative: &Path| match &anchor {
            Some(anchor) => read_ignore_file(anchor.dir.as_deref(), &anchor.real, relative),
            None => IgnoreFile::Missing,
        }
    }
}

/// Reads an ignore file beneath `dir` (or `/`), confined like every open: missing when there is none or it is not a
/// regular file; unreadable (which fails closed) when it is too large, cannot be read, or leads out of the root.
fn read_ignore_file(dir: Option<&Dir>, real: &Path, relative: &Path) -> IgnoreFile {
    let file = match open_confined(dir, real, relative) {
        Ok(file) => file,
        Err(e) if is_escape(&e) => return IgnoreFile::Unreadable("leads outside the root".to_string()),
        Err(e) if crate::platform::is_missing(&e) || crate::platform::is_special_open_failure(&e) => {
            return IgnoreFile::Missing;
        }
        Err(e) => return IgnoreFile::Unreadable(format!("cannot be read ({})", io_words(&e))),
    };
    let metadata = match file.metadata() {
        Ok(metadata) if metadata.is_file() => metadata,
        Ok(_) => return IgnoreFile::Missing,
        Err(e) => return IgnoreFile::Unreadable(format!("cannot be read ({})", io_words(&e))),
    };
    if metadata.len() > MAX_IGNORE_FILE {
        return IgnoreFile::Unreadable(format!("larger than {} KiB", MAX_IGNORE_FILE / 1024));
    }
    use std::io::Read as _;
    let mut bytes = Vec::new();
    match file.take(MAX_IGNORE_FILE + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() as u64 > MAX_IGNORE_FILE => {
            IgnoreFile::Unreadable(format!("larger than {} KiB", MAX_IGNORE_FILE / 1024))
        }
        Ok(_) => IgnoreFile::Text(bytes),
        Err(e) => IgnoreFile::Unreadable(format!("cannot be read ({})", io_words(&e))),
    }
}
