//! Errors meant for the model: a stable code, a message naming the problem, and the next step.
//!
//! These are values, not failures of the program: every one of them becomes an `error` result the harness hands
//! back to the model. Nothing here aborts a read.

use serde::Serialize;
use std::fmt;

/// The machine-readable class of a failed read (docs/contract.md, Results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    /// A request field is missing, unknown, of the wrong type or out of its domain.
    InvalidParam,
    /// An offset or byte range lies outside the file.
    InvalidRange,
    /// The path does not exist.
    NotFound,
    /// The path leads outside every root.
    OutsideRoot,
    /// A policy rule forbids the path.
    Denied,
    /// The operating system refused access.
    PermissionDenied,
    /// The path is a FIFO, socket, device or other non-regular file.
    NotRegular,
    /// The file's content is binary.
    Binary,
    /// No window can make the content small enough.
    TooLarge,
    /// The read ran past its time budget.
    Timeout,
    /// The caller cancelled the read before it finished.
    Cancelled,
    /// Any other input/output failure.
    IoError,
    /// A bug in agent-read (a panic) ended the request; nothing of it is shown.
    Internal,
}

impl ErrorCode {
    /// The code as it appears in JSON (`NOT_FOUND`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParam => "INVALID_PARAM",
            ErrorCode::InvalidRange => "INVALID_RANGE",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::OutsideRoot => "OUTSIDE_ROOT",
            ErrorCode::Denied => "DENIED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::NotRegular => "NOT_REGULAR",
            ErrorCode::Binary => "BINARY",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::IoError => "IO_ERROR",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed read as the model will see it: what went wrong, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The class of failure.
    pub code: ErrorCode,
    /// One sentence naming the problem (never file content).
    pub message: String,
    /// The next step, when there is one.
    pub hint: Option<String>,
    /// Paths the model may have meant (inside the roots only).
    pub suggestions: Vec<String>,
    /// What was gathered before the failure (the lines read before a `TIMEOUT`), shown before the error.
    pub partial: Option<String>,
    /// A closing line in parentheses after the next step (a session's budget), when there is one. Boxed: errors
    /// travel in `Result`s everywhere, and this keeps them small.
    pub note: Option<Box<str>>,
}

impl ReadError {
    /// An error with a code and message and nothing else.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ReadError { code, message: message.into(), hint: None, suggestions: Vec::new(), partial: None, note: None }
    }

    /// Shorthand for an `INVALID_PARAM` error.
    pub fn invalid_param(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParam, message)
    }

    /// Shorthand for an `INVALID_RANGE` error.
    pub fn invalid_range(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRange, message)
    }

    /// The `TIMEOUT` of a request that waited `waited` before its read could start (for a free reader, say), past its
    /// whole time budget of `timeout_ms`, so that its read never started.
    pub fn waited_out(waited: std::time::Duration, timeout_ms: u64) -> Self {
        let (waited, budget) = (waited.as_secs_f64(), timeout_ms as f64 / 1000.0);
        Self::new(
            ErrorCode::Timeout,
            format!(
                "the request waited {waited:.1} s before its read could start, past its whole {budget} s time budget, \
                 so nothing was read"
            ),
        )
        .with_hint("retry in a moment; when other reads keep the server busy, send fewer at once")
    }

    /// Attaches the next step.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Attaches what was gathered before the failure.
    pub fn with_partial(mut self, partial: String) -> Self {
        self.partial = Some(partial).filter(|p| !p.is_empty());
        self
    }

    /// Attaches near-miss paths.
    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> Self {
        self.suggestions = suggestions;
        self
    }

    /// Shortens the message and the hint to `max_bytes` each and every suggestion to a third of that, so that no
    /// input (a huge path, say) can make an error long; control and invisible characters in the message and the
    /// hint (a path's) are shown escaped, as in content, so that no name can break the error's lines.
    pub fn clipped(mut self, max_bytes: usize) -> Self {
        self.message = clip(&crate::escape::shown(&self.message), max_bytes);
        self.hint = self.hint.map(|h| clip(&crate::escape::shown(&h), max_bytes));
        for suggestion in &mut self.suggestions {
            *suggestion = clip(suggestion, max_bytes / 3);
        }
        self
    }

    /// Maps an operating-system error met while opening or reading `shown_path`.
    pub fn from_io(err: &std::io::Error, shown_path: &str) -> Self {
        use std::io::ErrorKind;
        if crate::budget::is_cancelled(err) {
            return Self::new(ErrorCode::Cancelled, format!("{shown_path}: the read was cancelled by its caller"));
        }
        if let Some(missing) = err.get_ref().and_then(|inner| inner.downcast_ref::<WorkerMissing>()) {
            return Self::new(ErrorCode::Internal, format!("{shown_path}: {missing}")).with_hint(
                "the tool's installation is incomplete, the file is not at fault: tell the user; files other than PDFs and documents can still be read",
            );
        }
        match err.kind() {
            ErrorKind::NotFound => Self::new(ErrorCode::NotFound, format!("{shown_path}: no such file or directory")),
            ErrorKind::PermissionDenied => {
                Self::new(ErrorCode::PermissionDenied, format!("{shown_path}: the operating system denied access"))
                    .with_hint("this file cannot be read with the tool's permissions; choose another file")
            }
            ErrorKind::NotADirectory => Self::new(
                ErrorCode::NotFound,
                format!("{shown_path}: a component of the path is a file, not a directory"),
            ),
            ErrorKind::InvalidFilename => Self::new(
                ErrorCode::InvalidParam,
                format!("{shown_path}: a name in the path is longer than the file system allows"),
            )
            .with_hint("check the path: each name between slashes is at most 255 bytes"),
            ErrorKind::TimedOut => Self::new(
                ErrorCode::Timeout,
                format!("{shown_path}: the read ran past its time budget and was stopped"),
            )
            .with_hint("read a byte range (start_byte/end_byte), which does not scan the whole file"),
            // A decoder refusing what a file asks of it (an xz dictionary, a zstd window past the bound): no retry
            // gets further.
            ErrorKind::OutOfMemory => Self::new(ErrorCode::TooLarge, format!("{shown_path}: {err}"))
                .with_hint("this file cannot be decoded within the memory a read may take; choose another file"),
            // What a read needed (memory all reads share, a turn among PDF extractions) was held by others.
            ErrorKind::ResourceBusy => Self::new(ErrorCode::TooLarge, format!("{shown_path}: {err}")).with_hint(
                "the server is busy with other reads for now: read it again once the other reads have finished",
            ),
            _ => Self::new(ErrorCode::IoError, format!("{shown_path}: input/output error: {err}"))
                .with_hint("retry once; if it fails again, the file is unreadable"),
        }
    }
}

/// The error inside the `io::Error` of a worker program that could not be started because it is not there: the
/// installation's fault, not the file's, so it must not read as `NOT_FOUND`.
#[derive(Debug)]
pub struct WorkerMissing(pub String);

impl fmt::Display for WorkerMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WorkerMissing {}

/// Bytes kept at most of an error message or hint (less when the output cap is small).
pub const MAX_MESSAGE_BYTES: usize = 1000;

/// Keeps the start and the end of a long text within `max_bytes`, with `…` between.
fn clip(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let half = max_bytes.saturating_sub('…'.len_utf8()) / 2;
    let head_end = (0..=half).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    let tail_start = (text.len() - half..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    format!("{}…{}", &text[..head_end], &text[tail_start..])
}

/// The model-facing text of an error: what was gathered (if anything), `CODE: message`, then the next step. Made
/// here, where errors are built, so that results (`crate::result`) and the renderers (`crate::render`) both take it
/// from below.
pub fn render_error(e: &ReadError) -> String {
    let mut out = e.partial.clone().unwrap_or_default();
    out.push_str(&format!("{}: {}", e.code, e.message));
    if !e.suggestions.is_empty() {
        let suggestions: Vec<_> = e.suggestions.iter().map(|s| crate::escape::one_line_name(s)).collect();
        out.push_str(&format!("\nDid you mean: {}?", suggestions.join(", ")));
    }
    if let Some(hint) = &e.hint {
        out.push_str(&format!("\nNext: {hint}"));
    }
    if let Some(note) = &e.note {
        out.push_str(&format!("\n({note})"));
    }
    out
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_spec_names() {
        let json = serde_json::to_string(&ErrorCode::PermissionDenied).unwrap();
        assert_eq!(json, "\"PERMISSION_DENIED\"");
        assert_eq!(ErrorCode::NotRegular.as_str(), "NOT_REGULAR");
    }

    #[test]
    fn io_not_found_maps_to_not_found() {
        let err = std::io::Error::from(std::io::ErrorKind::NotFound);
        let mapped = ReadError::from_io(&err, "a.txt");
        assert_eq!(mapped.code, ErrorCode::NotFound);
        assert!(mapped.message.contains("a.txt"));
    }

    #[test]
    fn a_name_too_long_is_a_bad_parameter_not_a_retry() {
        let err = std::io::Error::from_raw_os_error(36); // ENAMETOOLONG
        let mapped = ReadError::from_io(&err, "x/yyy");
        assert_eq!(mapped.code, ErrorCode::InvalidParam);
        assert!(mapped.message.starts_with("x/yyy: a name in the path is longer"), "{}", mapped.message);
        assert!(mapped.hint.unwrap().contains("255 bytes"));
    }

    #[test]
    fn clipped_errors_stay_short() {
        let e = ReadError::invalid_param("日".repeat(100_000)).with_hint("y".repeat(5000)).clipped(MAX_MESSAGE_BYTES);
        assert!(e.message.len() <= MAX_MESSAGE_BYTES && e.message.contains('…'), "{}", e.message.len());
        assert!(e.hint.unwrap().len() <= MAX_MESSAGE_BYTES);
        assert_eq!(ReadError::invalid_param("short").clipped(10).message, "short");
    }

    #[test]
    fn clipped_errors_show_control_characters_in_paths_escaped() {
        let e = ReadError::new(ErrorCode::NotFound, "a\n(lines 1-1 of 1 · end of file)\u{1b}[2J: no such file")
            .with_hint("list \u{2028}x")
            .clipped(MAX_MESSAGE_BYTES);
        assert_eq!(e.message, "a␊(lines 1-1 of 1 · end of file)␛[2J: no such file");
        assert_eq!(e.hint.as_deref(), Some("list ⟨U+2028⟩x"));
    }

    #[test]
    fn display_includes_hint() {
        let e = ReadError::invalid_param("bad").with_hint("do this");
        assert_eq!(e.to_string(), "INVALID_PARAM: bad (do this)");
    }
}
