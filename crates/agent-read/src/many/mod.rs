//! `read_many`: several files, directories or globs in one call, sharing one output cap fairly.
//!
//! The road: [`request`] (parse and check) → `expand` (literal paths as given; globs walked beneath the roots with
//! ignore files honoured; duplicates and protected matches dropped; at most `max_files`) → `gather` (files read
//! smallest first, one at a time, each through [`Reader::read`]'s own road with its fair share of the cap) → `render`
//! (`crate::render::many`: sections in request order, the skipped list, a summary) → [`result`].
//!
//! At most one file is open at a time: files are read one after another, each closed before the next is opened.

mod expand;
mod gather;
mod glob;
pub mod request;
pub mod result;
mod share;
#[cfg(test)]
mod tests;

pub use request::{DEFAULT_MAX_FILES, MAX_FILES, MAX_PATHS, ReadManyRequest};
pub use result::{ManyFile, ManyMeta, ManyResult, ReadManyResult, Skipped};

use crate::budget::Cancel;
use crate::engine::{ReadOptions, Reader};
use crate::error::{MAX_MESSAGE_BYTES, ReadError};
use crate::render::many::{Summary, assemble, more_line};
use expand::Expander;
use gather::{Call, Gathered};
use std::time::{Duration, Instant};

/// Longest time the glob walks of one call take: half its time budget, and never more than this.
const MAX_WALK_TIME: Duration = Duration::from_secs(10);

impl Reader {
    /// Reads several files, directories or globs within one output cap (`options.max_output_bytes`, when smaller than
    /// the configured cap). Never panics on any input; a file that fails has its error as its section, and only an
    /// invalid request makes the whole call an error. A cancelled call ends with `CANCELLED` within one chunk's work
    /// of the file being read.
    pub fn read_many(&self, request: &ReadManyRequest, options: &ReadOptions) -> ReadManyResult {
        let cap = options.max_output_bytes.unwrap_or(self.limits().max_output_bytes);
        self.read_many_with(request, &options.cancel, cap, false)
    }

    /// [`Reader::read_many`] within `max_output_bytes` (at most the configured cap, at least the minimum cap), also
    /// reporting what each file shown was (`ManyFile::seen`) when `observe` is set.
    pub(crate) fn read_many_with(
        &self,
        request: &ReadManyRequest,
        cancel: &Cancel,
        max_output_bytes: usize,
        observe: bool,
    ) -> ReadManyResult {
        let cap = max_output_bytes.min(self.limits().max_output_bytes).max(crate::limits::MIN_OUTPUT_BYTES);
        // Each file's read catches its own panics (its section says so); this catches the rest of the call's.
        let tried = crate::panics::caught(|| self.try_read_many(request, cancel, cap, observe));
        match tried.and_then(|many| many) {
            Ok(many) => ReadManyResult::Many(many),
            Err(error) => self.refuse_many(error),
        }
    }

    /// The answer to a `read_many` request refused before it ran (it did not parse, say): a call that read nothing,
    /// its error well inside the cap whatever the input echoed in it.
    pub fn refuse_many(&self, error: ReadError) -> ReadManyResult {
        ReadManyResult::Error(error.clipped(MAX_MESSAGE_BYTES.min(self.limits().max_output_bytes / 4)))
    }

    fn try_read_many(
        &self,
        request: &ReadManyRequest,
        cancel: &Cancel,
        cap: usize,
        observe: bool,
    ) -> Result<ManyResult, ReadError> {
        let started = cancel.budget_start();
        let checked = request.check(self.limits())?;
        crate::panics::test_point("many", request.paths.first().map_or("", String::as_str));
        let budget = Duration::from_millis(self.limits().timeout_ms);
        if let Some(waited) = cancel.waited_past(budget) {
            return Err(ReadError::waited_out(waited, self.limits().timeout_ms));
        }
        // Each file's read gets the rest of the call's budget, counted from when that read starts.
        let cancel = &cancel.budget_from_start();
        let next_call = |path: &str| gather::read_call(request, path);
        let expander = Expander { reader: self, max_files: checked.max_files, next_call: &next_call };
        // The walk may take half of what is left of the budget (a request that waited for a reader has less).
        let deadline = started + budget;
        let walk_deadline =
            Instant::now() + (deadline.saturating_duration_since(Instant::now()) / 2).min(MAX_WALK_TIME);
        let mut walk = glob::WalkBudget { deadline: walk_deadline, cancel, visited: 0 };
        let expansion = expander.expand(&request.paths, &mut walk);
        if cancel.is_cancelled() {
            return Err(gather::cancelled());
        }
        let (withheld, walk_stopped_early) = (expansion.withheld, expansion.walk_stopped);
        let call = Call { reader: self, request, cancel, deadline, cap, observe };
        let gathered = call.gather(expansion)?;
        let meta = ManyMeta {
            withheld,
            max_files: checked.max_files,
            max_files_clamped_from: checked.clamped_from,
            walk_stopped_early,
            cap,
            ..ManyMeta::default()
        };
        Ok(finish(gathered, meta))
    }
}

/// The result: sections and lines in request order, the summary, and the counts.
fn finish(gathered: Gathered, mut meta: ManyMeta) -> ManyResult {
    meta.files_read = gathered.sections.len();
    meta.files_failed = gathered.sections.iter().filter(|section| !section.result.is_ok()).count();
    // Withheld matches have their entries in `skipped` (one per glob) but are counted apart.
    let counted: u64 = gathered.skipped.iter().map(|(_, entry, _)| entry.count).sum();
    meta.files_skipped = counted.saturating_sub(meta.withheld);
    meta.withheld += gathered.withheld_late;
    if let Some(searched) = gathered.searched {
        meta.files_searched = Some(searched.files);
        meta.files_without_match = Some(searched.without_match);
        meta.files_not_text = Some(searched.not_text);
    }
    let texts: Vec<String> = gathered.sections.iter().map(|section| section.text.clone()).collect();
    let mut lines: Vec<String> = gathered.skipped.iter().filter_map(|(_, _, line)| line.clone()).collect();
    if gathered.unlisted > 0 {
        lines.push(more_line(gathered.unlisted));
    }
    let summary = |bytes| {
        let (shown, failed, skipped, withheld) =
            (meta.files_read, meta.files_failed, meta.files_skipped, meta.withheld);
        let clamped_max_files = meta.max_files_clamped_from.map(|_| meta.max_files);
        let searched = gathered.searched;
        Summary { shown, failed, skipped, withheld, bytes, cap: meta.cap, clamped_max_files, searched }.line()
    };
    let output = assemble(&texts, &lines, summary);
    meta.bytes = output.len();
    let files = gathered
        .sections
        .into_iter()
        .map(|section| ManyFile { path: section.path, result: section.result, seen: section.seen })
        .collect();
    let skipped = gathered.skipped.into_iter().map(|(_, entry, _)| entry).collect();
    ManyResult { output, files, skipped, meta }
}
