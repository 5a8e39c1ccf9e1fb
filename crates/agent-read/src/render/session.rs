//! What a session adds to the model's text: the "unchanged" stub, the budget note and notices in the footer, and the
//! reason a file counts as changed (from facts the session gathers: `crate::engine::observe`).

use super::human_size;
use crate::error::ErrorCode;
use crate::result::{ReadResult, UnchangedMeta, UnchangedResult};
use std::time::SystemTime;

/// Output bytes kept free for the budget note, so that an answer with it still fits the configured cap.
pub const BUDGET_NOTE_RESERVE: usize = 128;

/// The one-line answer to an exact repeat of the read that delivered `output` at `read_at`.
pub fn stub(result: &ReadResult, output: &str, read_at: SystemTime) -> UnchangedResult {
    let window = footer_of(output);
    let time = super::rfc3339_seconds(read_at).unwrap_or_default();
    let clock = time.get(11..19).unwrap_or(&time);
    let ago = SystemTime::now().duration_since(read_at).map(|age| age.as_secs()).unwrap_or(0);
    let text = format!(
        "(unchanged since your read at {clock} UTC, {}: {window}. The content is as you saw it then; \
         send reread=true to get it again)",
        age_words(ago)
    );
    UnchangedResult {
        output: text,
        meta: UnchangedMeta { path: path_of(result), read_at: time, window, saved_bytes: output.len() as u64 },
    }
}

/// The budget note: what is left of `budget` tokens, and the smaller window when the budget made one.
pub fn budget_note(left: u64, budget: u64, shrunk_to: Option<usize>) -> String {
    let mut note = if left == 0 {
        format!("session budget spent: all {budget} tokens used")
    } else {
        format!("session budget: {left} of {budget} tokens left")
    };
    if let Some(cap) = shrunk_to {
        note.push_str(&format!(", window shrunk to {} to fit it", human_size(cap as u64)));
    }
    note
}

/// A pending notice and the note that follows it in one footer.
pub fn notice_then(notice: &str, note: &str) -> String {
    format!("{notice} · {note}")
}

/// `text` cut to at most `max` bytes at a character boundary, ending in `…` when cut.
pub fn clipped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `result` with `note` at the end of its footer (or as a last line in parentheses when it has none).
pub fn with_note(result: ReadResult, note: String) -> ReadResult {
    match result {
        ReadResult::Text(mut t) => {
            t.output = add_note(&t.output, &note);
            ReadResult::Text(t)
        }
        ReadResult::Directory(mut d) => {
            d.output = add_note(&d.output, &note);
            ReadResult::Directory(d)
        }
        ReadResult::Attachment(mut a) => {
            a.output = add_note(&a.output, &note);
            ReadResult::Attachment(a)
        }
        ReadResult::Unchanged(mut u) => {
            u.output = add_note(&u.output, &note);
            ReadResult::Unchanged(u)
        }
        ReadResult::Error(mut e) => {
            e.note = Some(note.into_boxed_str());
            ReadResult::Error(e)
        }
    }
}

/// How a file differs from when it was read: the facts a reason is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Whether it is a directory now, when it was the other kind before.
    pub now_a_directory: Option<bool>,
    /// Its size before and now, when they differ.
    pub sizes: Option<(u64, u64)>,
    /// Whether another file stands at the path (another device or inode).
    pub replaced: bool,
    /// Whether both reads hashed the content (so the content is known to differ).
    pub by_content: bool,
}

/// How a file differs from when it was read, in a few words.
pub fn change_reason(change: Change) -> String {
    if let Some(now_a_directory) = change.now_a_directory {
        return if now_a_directory { "replaced by a directory" } else { "replaced by a file" }.to_string();
    }
    let size = change.sizes.map(|(before, now)| format!("size {before} → {now} bytes"));
    let replaced = change.replaced;
    match (change.by_content, size) {
        (true, Some(size)) => format!("content changed ({size})"),
        (true, None) if replaced => "replaced by a file with different content (same size)".to_string(),
        (true, None) => "content changed (same size)".to_string(),
        (false, Some(size)) => format!("modified ({size})"),
        (false, None) if replaced => "replaced by another file".to_string(),
        (false, None) => "modified (times changed; too big to compare by content, so counted as changed)".to_string(),
    }
}

/// Why a file read before cannot be read now, from the error its read met.
pub fn gone_reason(code: ErrorCode) -> String {
    match code {
        ErrorCode::NotFound => "deleted (or moved): it no longer exists at this path".to_string(),
        ErrorCode::Denied | ErrorCode::OutsideRoot => "no longer readable here (policy or roots changed)".to_string(),
        other => format!("cannot be read now ({other})"),
    }
}

/// The footer's words (the last line, without its parentheses).
fn footer_of(output: &str) -> String {
    let last = output.lines().last().unwrap_or_default();
    last.strip_prefix('(').and_then(|line| line.strip_suffix(')')).unwrap_or(last).to_string()
}

/// `text` with `note` inside its footer's parentheses, or on a line of its own when the last line is not a footer.
pub fn add_note(text: &str, note: &str) -> String {
    let last_line_start = text.rfind('\n').map_or(0, |i| i + 1);
    let last = &text[last_line_start..];
    if last.starts_with('(') && last.ends_with(')') {
        format!("{} · {note})", &text[..text.len() - 1])
    } else if text.is_empty() {
        format!("({note})")
    } else {
        format!("{text}\n({note})")
    }
}

fn age_words(seconds: u64) -> String {
    match seconds {
        0..=59 => "moments ago".to_string(),
        60..=119 => "1 min ago".to_string(),
        120..=3599 => format!("{} min ago", seconds / 60),
        _ => format!("{} h ago", seconds / 3600),
    }
}

fn path_of(result: &ReadResult) -> String {
    match result {
        ReadResult::Text(t) => t.meta.path.clone(),
        ReadResult::Directory(d) => d.meta.path.clone(),
        ReadResult::Attachment(a) => a.meta.path.clone(),
        ReadResult::Unchanged(u) => u.meta.path.clone(),
        ReadResult::Error(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_goes_inside_the_footer() {
        assert_eq!(add_note("1: a\n(lines 1-1 of 1 · end of file)", "x"), "1: a\n(lines 1-1 of 1 · end of file · x)");
        assert_eq!(add_note("PNG image, 2×2", "x"), "PNG image, 2×2\n(x)");
        assert_eq!(add_note("", "x"), "(x)");
    }

    #[test]
    fn the_stub_names_the_window_and_the_way_back() {
        let read_at = SystemTime::now() - std::time::Duration::from_secs(180);
        let output = "1: a\n2: b\n(lines 1-2 of 2 · 4 B · end of file)";
        let stub = stub(&ReadResult::Error(crate::ReadError::invalid_param("x")), output, read_at);
        assert!(stub.output.starts_with("(unchanged since your read at "), "{}", stub.output);
        assert!(stub.output.contains("UTC, 3 min ago: lines 1-2 of 2 · 4 B · end of file."), "{}", stub.output);
        assert!(stub.output.ends_with("send reread=true to get it again)"), "{}", stub.output);
        assert_eq!(stub.meta.window, "lines 1-2 of 2 · 4 B · end of file");
        assert_eq!(stub.meta.saved_bytes, output.len() as u64);
        assert!(!stub.output.contains('\n'));
    }
}
