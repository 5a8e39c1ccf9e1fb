//! Counting a big text file's lines to the end apart from any read: what a face with time between calls (the MCP
//! server) runs after a read that gave a lower bound, so that later reads know the exact total without a pass.

use super::text;
use super::{Reader, Trace, file, parse_encoding};
use crate::budget::Budget;
use crate::classify::{self, Content};
use crate::error::ReadError;
use crate::request::ReadRequest;
use crate::resolve::Handle;
use crate::window::index::MIN_INDEXED_BYTES;
use std::time::Duration;

impl Reader {
    /// Counts every line of the text file `request` names (its `path`, read in its `encoding`), going on from where
    /// earlier reads stopped counting, and keeps what it learns in the reader's line index: later reads of the file,
    /// while it is unchanged (or only grew), give `total_lines` without a pass. The file is found and judged by the
    /// roots and policy as a read would; nothing is shown, and nothing goes to the audit log.
    ///
    /// Returns the total; `None` for what has no line index (a directory, a file under 1 MiB, compressed or other
    /// non-text content). The count runs within the reader's time budget and `options`' cancel: stopped, it is a
    /// `TIMEOUT` (or `CANCELLED`) error and keeps what it counted, so a later call goes on from there. It does
    /// blocking file I/O, like a read.
    pub fn count_lines(&self, request: &ReadRequest, options: &super::ReadOptions) -> Result<Option<u64>, ReadError> {
        let budget = Budget::new(
            options.cancel.budget_start() + Duration::from_millis(self.limits.timeout_ms),
            options.cancel.clone(),
        );
        let forced = request.encoding.as_deref().map(parse_encoding).transpose()?;
        let (opened, shown) = self.open_confined(&request.path, &budget, &mut Trace::default())?;
        let Handle::File(file, metadata) = opened.handle else { return Ok(None) };
        if metadata.len() < MIN_INDEXED_BYTES {
            return Ok(None);
        }
        let head = file::read_head(&file, &metadata, &shown)?;
        #[cfg(feature = "compressed")]
        if crate::media::compressed::Compression::sniff(&head).is_some() {
            return Ok(None);
        }
        let Content::Text(format) = classify::classify(&head, forced) else { return Ok(None) };
        let indexes = &self.indexes;
        let target = super::target::Target { file: &file, metadata: &metadata, head: &head, shown, budget, indexes };
        text::count_lines(&target, &format).map(Some)
    }
}
