//! What the model sees of a `read_many` call: each file under a `==> path <==` header, a `--- skipped ---` list,
//! then one summary line.
//!
//! ```text
//! ==> src/lib.rs <==
//! 1: //! The crate.
//! (lines 1-1 of 1 · 15 B · end of file)
//!
//! --- skipped ---
//! logo.png: PNG image (12.0 KiB), not inlined: read it alone to get it as an attachment · next: read {"path":"logo.png"}
//!
//! (read_many: 1 shown · 1 skipped · 61 B of the 50.0 KiB cap)
//! ```

use super::human_size;
use crate::escape::{self, one_line_name};

/// The title of the skipped list.
pub const SKIPPED_TITLE: &str = "--- skipped ---";

/// Bytes kept for the summary line and the blank line before it (the longest summary is far shorter).
pub const SUMMARY_RESERVE: usize = 224;

/// Bytes kept on top of [`SUMMARY_RESERVE`] for what a search counts (`N searched, N without a match, N not text`).
pub const SEARCHED_RESERVE: usize = 112;

/// Bytes kept for the line that counts skipped entries not spelled out.
pub const MORE_RESERVE: usize = 100;

/// The header line of a file's section, newline included. A path holding control or invisible characters is shown
/// JSON-quoted, as a request spells it, so a file name cannot break the envelope.
pub fn header(path: &str) -> String {
    format!("==> {} <==\n", one_line_name(path))
}

/// A skipped entry, as its line in the skipped list states it.
#[derive(Debug, Clone, Copy)]
pub struct Skip<'a> {
    /// The path, or the pattern that matched nothing.
    pub what: &'a str,
    /// Why it was skipped.
    pub reason: &'a str,
    /// The call that gets it, as JSON.
    pub next: Option<&'a str>,
}

/// One line of the skipped list: what, why, and the call that gets it (JSON, with nothing in it shown raw).
pub fn skip_line(entry: Skip<'_>) -> String {
    let mut line = skip_line_without_next(entry);
    if let Some(next) = entry.next {
        line.push_str(" · next: ");
        line.push_str(&escape::json_shown(next));
    }
    line
}

/// One line of the skipped list without its next call (when the call would not fit its share). The path or pattern
/// is quoted when it must be; the reason, which may quote an error naming a path, is shown escaped.
pub fn skip_line_without_next(entry: Skip<'_>) -> String {
    format!("{}: {}", one_line_name(entry.what), escape::shown(entry.reason))
}

/// The line standing for skipped entries not spelled out.
pub fn more_line(unlisted: usize) -> String {
    format!("… and {unlisted} more skipped entr(ies), listed in the JSON result's `skipped`")
}

/// The counts the summary line states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Files shown.
    pub shown: usize,
    /// Of those, errors.
    pub failed: usize,
    /// Files skipped.
    pub skipped: u64,
    /// Glob matches withheld.
    pub withheld: u64,
    /// Bytes of the output before the summary.
    pub bytes: usize,
    /// The output cap.
    pub cap: usize,
    /// The `max_files` applied, when the request asked for more.
    pub clamped_max_files: Option<usize>,
    /// With `find`: the files searched, and of them those without a match and those that are not text.
    pub searched: Option<Searched>,
}

/// What a `read_many` with `find` searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Searched {
    /// Files searched (their sections show only when they match).
    pub files: u64,
    /// Of those, files without a match: not shown.
    pub without_match: u64,
    /// Glob matches that are not text (binary data, images), not searched.
    pub not_text: u64,
}

impl Summary {
    /// `(read_many: 3 shown (1 error) · 2 skipped · 1 withheld · 12.1 KiB of the 50.0 KiB cap)`.
    pub fn line(&self) -> String {
        let mut line = match self.searched {
            Some(searched) => format!(
                "(read_many: {} searched, {} without a match, {} not text · {} shown",
                searched.files, searched.without_match, searched.not_text, self.shown
            ),
            None => format!("(read_many: {} shown", self.shown),
        };
        if self.failed > 0 {
            line.push_str(&format!(" ({} error{})", self.failed, if self.failed == 1 { "" } else { "s" }));
        }
        line.push_str(&format!(" · {} skipped", self.skipped));
        if self.withheld > 0 {
            line.push_str(&format!(" · {} withheld", self.withheld));
        }
        if let Some(max_files) = self.clamped_max_files {
            line.push_str(&format!(" · max_files clamped to {max_files}"));
        }
        let (bytes, cap) = (human_size(self.bytes as u64), human_size(self.cap as u64));
        line.push_str(&format!(" · {bytes} of the {cap} cap)"));
        line
    }
}

/// The whole output: sections, then the skipped list, then the summary, separated by blank lines.
pub fn assemble(sections: &[String], skipped_lines: &[String], summary: impl FnOnce(usize) -> String) -> String {
    let mut pieces: Vec<String> = sections.to_vec();
    if !skipped_lines.is_empty() {
        pieces.push(format!("{SKIPPED_TITLE}\n{}", skipped_lines.join("\n")));
    }
    let mut output = pieces.join("\n\n");
    let line = summary(output.len());
    if !output.is_empty() {
        output.push_str("\n\n");
    }
    output.push_str(&line);
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_stay_within_their_reserve() {
        let longest = Summary {
            shown: usize::MAX,
            failed: usize::MAX,
            skipped: u64::MAX,
            withheld: u64::MAX,
            bytes: usize::MAX,
            cap: usize::MAX,
            clamped_max_files: Some(usize::MAX),
            searched: None,
        };
        assert!(longest.line().len() + 2 <= SUMMARY_RESERVE, "{}", longest.line());
        let searched = Some(Searched { files: u64::MAX, without_match: u64::MAX, not_text: u64::MAX });
        let searching = Summary { searched, ..longest };
        assert!(searching.line().len() + 2 <= SUMMARY_RESERVE + SEARCHED_RESERVE, "{}", searching.line());
        assert!(more_line(usize::MAX).len() < MORE_RESERVE);
        let one = Summary {
            shown: 2,
            failed: 1,
            skipped: 0,
            withheld: 0,
            bytes: 100,
            cap: 51200,
            clamped_max_files: None,
            searched: None,
        };
        assert_eq!(one.line(), "(read_many: 2 shown (1 error) · 0 skipped · 100 B of the 50.0 KiB cap)");
        let clamped = Summary { failed: 0, clamped_max_files: Some(200), ..one };
        assert_eq!(
            clamped.line(),
            "(read_many: 2 shown · 0 skipped · max_files clamped to 200 · 100 B of the 50.0 KiB cap)"
        );
    }

    #[test]
    fn headers_and_lines_keep_to_one_line() {
        assert_eq!(header("a\nb.txt"), "==> \"a\\nb.txt\" <==\n");
        assert_eq!(header("a\u{2028}==> b <=="), "==> \"a\\u2028==> b <==\" <==\n");
        let entry = Skip { what: "*.png", reason: "the glob matched no file", next: None };
        assert_eq!(skip_line(entry), "*.png: the glob matched no file");
        let next = Skip { next: Some("read {\"path\":\"a\"}"), ..entry };
        assert_eq!(skip_line(next), "*.png: the glob matched no file · next: read {\"path\":\"a\"}");
    }

    #[test]
    fn pieces_are_separated_by_blank_lines_and_end_with_the_summary() {
        let out = assemble(&["==> a <==\nA".into(), "==> b <==\nB".into()], &["c: gone".into()], |n| format!("({n})"));
        assert_eq!(out, "==> a <==\nA\n\n==> b <==\nB\n\n--- skipped ---\nc: gone\n\n(49)");
        assert_eq!(assemble(&[], &[], |n| format!("({n})")), "(0)");
    }
}
