//! The second step of `read_many`: read the files, one at a time, each within its fair share of the output cap.
//!
//! Before reading, the skipped list known so far (and the files that get no useful share) is priced, so the shares
//! come out of what is truly left. Every file then costs at most its share: its section, or its line in the skipped
//! list when it turns out not to be shown (an attachment, a withheld glob match, the time budget spent). So the
//! whole output stays within the cap, exactly.

use super::expand::{Candidate, Expansion, Order, Skip};
use super::request::ReadManyRequest;
use super::result::Skipped;
use super::share::{self, Claim, MIN_READ_CAP, SEPARATOR, Shares};
use crate::budget::Cancel;
use crate::engine::{Bounds, Reader, Seen};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::FOOTER_RESERVE;
use crate::render::many::{self as render, MORE_RESERVE, SEARCHED_RESERVE, SKIPPED_TITLE, SUMMARY_RESERVE};
use crate::result::ReadResult;
use std::time::Instant;

/// One call being read.
pub struct Call<'a> {
    /// The reader whose roots, policy and limits apply.
    pub reader: &'a Reader,
    /// The request (its per-file `limit`).
    pub request: &'a ReadManyRequest,
    /// The caller's cancel signal.
    pub cancel: &'a Cancel,
    /// When the whole call must be done.
    pub deadline: Instant,
    /// The output cap the whole call shares (the reader's, or a session's smaller one).
    pub cap: usize,
    /// Whether to report what each file read was ([`Seen`]), for a session's ledger.
    pub observe: bool,
}

/// What was read and what was left out, each with where it stands.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Files shown: where, the path of the header, the result, and the section text.
    pub sections: Vec<Section>,
    /// Entries not shown, each with its line when it is spelled out.
    pub skipped: Vec<(Order, Skipped, Option<String>)>,
    /// Skipped entries not spelled out (all in the JSON result).
    pub unlisted: usize,
    /// Glob matches the read itself refused (the policy saw more than the walk could).
    pub withheld_late: u64,
    /// With `find`: what was searched.
    pub searched: Option<render::Searched>,
}

/// One file shown.
#[derive(Debug)]
pub struct Section {
    /// Its place in the request.
    pub order: Order,
    /// The path its header shows.
    pub path: String,
    /// Its own `read` result.
    pub result: ReadResult,
    /// Its text: header and output.
    pub text: String,
    /// What was read, when the call observes for a session's ledger.
    pub seen: Option<Seen>,
}

/// How one file came out.
// One value per file, moved once: boxing the shown result would only add an allocation (as for `ReadResult`).
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Shown(ReadResult, String, Option<Seen>),
    Skipped(Skipped, String),
    Withheld,
    /// Searched (`find`), without a match: counted, not shown.
    NoMatch,
    /// A glob match that is not text, which `find` does not search: counted, not shown.
    NotText,
}

impl Call<'_> {
    /// Reads the expansion's files within the cap; `Err` only when the caller cancelled.
    pub fn gather(&self, expansion: Expansion) -> Result<Gathered, ReadError> {
        let cap = self.cap;
        let candidates = expansion.candidates;
        let claims: Vec<Claim> =
            candidates.iter().map(|c| Claim { size: c.size, header: render::header(&c.path).len() }).collect();
        let known = |k: usize| self.known_skips(&expansion.skipped, &candidates[k..]);
        let searched = if self.request.find.is_some() { SEARCHED_RESERVE } else { 0 };
        let room = |k: usize| cap.saturating_sub(fixed_cost(&known(k), cap) + searched);
        let fit = share::files_that_fit(&claims, room);
        let skips = known(fit);
        let listed = share::listed_prefix(&line_lengths(&skips), cap / 4, MORE_RESERVE);
        let searched = self.request.find.as_ref().map(|_| render::Searched::default());
        let mut gathered = Gathered { unlisted: skips.len() - listed, searched, ..Gathered::default() };
        for (position, skip) in skips.into_iter().enumerate() {
            let line = (position < listed).then(|| render::skip_line(skip.entry.as_skip()));
            gathered.skipped.push((skip.order, skip.entry, line));
        }
        let mut shares = Shares::new(room(fit), fit);
        let mut by_size: Vec<(&Candidate, Claim)> = candidates[..fit].iter().zip(claims).collect();
        by_size.sort_by_key(|(c, _)| (c.size, c.order));
        for (candidate, claim) in by_size {
            let share = shares.next();
            let outcome = self.read_one(candidate, claim, share)?;
            if let Some(searched) = gathered.searched.as_mut() {
                searched.files += u64::from(matches!(outcome, Outcome::Shown(..) | Outcome::NoMatch));
                searched.without_match += u64::from(matches!(outcome, Outcome::NoMatch));
                searched.not_text += u64::from(matches!(outcome, Outcome::NotText));
            }
            let used = match outcome {
                Outcome::Shown(result, text, seen) => {
                    let used = text.len() + SEPARATOR;
                    let (order, path) = (candidate.order, candidate.path.clone());
                    gathered.sections.push(Section { order, path, result, text, seen });
                    used
                }
                Outcome::Skipped(entry, line) => {
                    let used = line.len() + 1;
                    gathered.skipped.push((candidate.order, entry, Some(line)));
                    used
                }
                Outcome::Withheld => {
                    gathered.withheld_late += 1;
                    0
                }
                Outcome::NoMatch | Outcome::NotText => 0,
            };
            shares.spend(used);
        }
        gathered.sections.sort_by_key(|section| section.order);
        gathered.skipped.sort_by_key(|skip| skip.0);
        Ok(gathered)
    }

    /// The entries known to be skipped when the first `k` files are read: the expansion's, and the files after
    /// them, which get no useful share.
    fn known_skips(&self, expanded: &[Skip], left_out: &[Candidate]) -> Vec<Skip> {
        let reason = format!(
            "not read: no room left in the output cap for a useful share (a small file's whole output, or {} of a \
             larger one)",
            crate::render::human_size(MIN_READ_CAP as u64)
        );
        let mut skips = expanded.to_vec();
        skips.extend(left_out.iter().map(|c| Skip { order: c.order, entry: self.file_skip(&c.path, reason.clone()) }));
        skips.sort_by_key(|skip| skip.order);
        skips
    }

    fn file_skip(&self, path: &str, reason: String) -> Skipped {
        let next = Some(read_call(self.request, path));
        Skipped { path: Some(path.to_string()), pattern: None, reason, error_code: None, count: 1, next }
    }

    /// Reads one file within `share` bytes (header and separator included).
    fn read_one(&self, candidate: &Candidate, claim: Claim, share: usize) -> Result<Outcome, ReadError> {
        let header = render::header(&candidate.path);
        let now = Instant::now();
        if now >= self.deadline {
            let reason = "not read: the call's time budget ran out".to_string();
            return Ok(self.skipped(self.file_skip(&candidate.path, reason), share));
        }
        let room = share.saturating_sub(header.len() + SEPARATOR);
        // A small file was admitted on a bound of its whole output, within its share: it gets the renderer's footer
        // reserve on top, so that its lines are never cut short of it.
        let limits = Limits {
            max_output_bytes: if claim.is_small() { room + FOOTER_RESERVE } else { room }.max(MIN_READ_CAP),
            timeout_ms: u64::try_from((self.deadline - now).as_millis()).unwrap_or(u64::MAX).max(1),
            ..self.reader.limits().clone()
        };
        let request = self.request.file_request(&candidate.path);
        let bounds = Bounds { limits: &limits, attachments: false, observe: self.observe, known_content: None };
        let (result, seen) = self.reader.read_bounded(&request, self.cancel, &bounds);
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        Ok(match result {
            ReadResult::Attachment(attachment) => {
                let reason = format!("{}, not inlined: read it alone to get it as an attachment", attachment.output);
                let next = Some(read_call(&ReadManyRequest::default(), &candidate.path));
                let entry = Skipped { next, ..self.file_skip(&candidate.path, reason) };
                self.skipped(entry, share)
            }
            // A glob match refused now, or gone (the walk lists folders by path, so a folder swapped for a link
            // mid-walk could have listed a name from elsewhere), is withheld unnamed like a refused match.
            ReadResult::Error(e)
                if candidate.from_glob
                    && matches!(e.code, ErrorCode::Denied | ErrorCode::OutsideRoot | ErrorCode::NotFound) =>
            {
                Outcome::Withheld
            }
            // A search leaves out what holds no match, and the glob matches it cannot search; a file the request
            // named keeps its section, error or not.
            ReadResult::Text(text) if text.meta.find_matches == Some(0) => Outcome::NoMatch,
            ReadResult::Error(e)
                if self.request.find.is_some() && candidate.from_glob && e.code == ErrorCode::InvalidParam =>
            {
                Outcome::NotText
            }
            result => {
                let text = format!("{header}{}", result.output());
                if text.len() + SEPARATOR > share {
                    // Outputs keep to their cap; this only guards the sum against a file that would not.
                    let reason = format!("not shown: its output ({} B) did not fit its share", text.len());
                    return Ok(self.skipped(self.file_skip(&candidate.path, reason), share));
                }
                Outcome::Shown(result, text, seen)
            }
        })
    }

    /// A file left out, with its line: the next call is dropped from the line when the line would not fit.
    fn skipped(&self, entry: Skipped, share: usize) -> Outcome {
        let line = render::skip_line(entry.as_skip());
        let line = if line.len() < share { line } else { render::skip_line_without_next(entry.as_skip()) };
        Outcome::Skipped(entry, line)
    }
}

/// Bytes of the cap not available to files: the summary, and the skipped list's title and spelled-out lines.
fn fixed_cost(skips: &[Skip], cap: usize) -> usize {
    let lengths = line_lengths(skips);
    let listed = share::listed_prefix(&lengths, cap / 4, MORE_RESERVE);
    let lines: usize = lengths[..listed].iter().map(|len| len + 1).sum();
    let more = if listed < lengths.len() { MORE_RESERVE } else { 0 };
    SUMMARY_RESERVE + SKIPPED_TITLE.len() + SEPARATOR + lines + more
}

fn line_lengths(skips: &[Skip]) -> Vec<usize> {
    skips.iter().map(|skip| render::skip_line(skip.entry.as_skip()).len()).collect()
}

/// The exact `read` call for one file of this call: `read {"path":"src/a.rs","limit":50}`.
pub fn read_call(request: &ReadManyRequest, path: &str) -> String {
    let arguments = serde_json::to_string(&request.file_request(path)).unwrap_or_default();
    format!("read {arguments}")
}

/// The error of a call its caller cancelled.
pub fn cancelled() -> ReadError {
    ReadError::new(ErrorCode::Cancelled, "read_many: the call was cancelled by its caller")
}
