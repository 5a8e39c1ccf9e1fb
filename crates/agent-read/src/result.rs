//! The last stage's product: a read result, a plain serializable value (docs/contract.md, Results).
//!
//! Every result carries `ok`, `kind` and `output` (the text the model should see). Failures also carry `error` and
//! `error_code`, so a harness that only knows `{"output"}` or `{"error", "error_code"}` works unchanged.

use crate::error::{ErrorCode, ReadError, render_error};
use crate::tokens::ImageTokens;
use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// The outcome of one read.
#[derive(Debug, Clone, PartialEq)]
// One value per read, built once and moved a few times: boxing the text variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum ReadResult {
    /// A window of a text file.
    Text(TextResult),
    /// A page of a directory listing.
    Directory(DirectoryResult),
    /// A file returned whole as an attachment (an image; a PDF when asked for as a document).
    Attachment(AttachmentResult),
    /// In a session: an exact repeat of an earlier read of an unchanged file, answered with a one-line notice.
    Unchanged(UnchangedResult),
    /// A failed read, with what to do next.
    Error(ReadError),
}

impl ReadResult {
    /// Whether the read succeeded.
    pub fn is_ok(&self) -> bool {
        !matches!(self, ReadResult::Error(_))
    }

    /// The text the model should see: the rendered window, or the error with its next step. Borrowed, except an
    /// error's, which is rendered on each call.
    pub fn output(&self) -> Cow<'_, str> {
        match self {
            ReadResult::Text(t) => Cow::Borrowed(&t.output),
            ReadResult::Directory(d) => Cow::Borrowed(&d.output),
            ReadResult::Attachment(a) => Cow::Borrowed(&a.output),
            ReadResult::Unchanged(u) => Cow::Borrowed(&u.output),
            ReadResult::Error(e) => Cow::Owned(render_error(e)),
        }
    }

    /// The error, when the read failed.
    pub fn error(&self) -> Option<&ReadError> {
        match self {
            ReadResult::Error(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ReadError> for ReadResult {
    fn from(e: ReadError) -> Self {
        ReadResult::Error(e)
    }
}

/// A window of a text file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextResult {
    /// The rendered window with its footer.
    pub output: String,
    /// What the window shows and what it left out.
    pub meta: TextMeta,
}

/// What a CSV or TSV file's first record says (see `docs/formats.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct TableMeta {
    /// The field delimiter: `,`, `;`, `|` or a tab.
    pub delimiter: String,
    /// Fields in the first record.
    pub columns: usize,
    /// The physical lines the header row (the first record) spans, when it is plausible as one (no empty name, not
    /// all numbers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_lines: Option<[u64; 2]>,
    /// Whether the header row was repeated above this window (it starts below the header).
    pub header_shown: bool,
}

/// The envelope of a text window. Line-mode and byte-mode fields are present only in their mode.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TextMeta {
    /// The path as resolved, relative to its root when inside one.
    pub path: String,
    /// File size in bytes.
    pub size_bytes: u64,
    /// Last modification time, RFC 3339 (UTC), when the file system reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
    /// The encoding the content was decoded with.
    pub encoding: &'static str,
    /// What the lines are when they are not the file's own: `notebook` (cells rendered as text) or `pdf` (pages of
    /// extracted text). Line numbers and byte offsets then count the rendering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rendered_from: Option<&'static str>,
    /// The compression the text was decompressed from (`gzip`, `zstd`, `xz`, `bzip2`); `size_bytes` is then the
    /// compressed size, line numbers count the decompressed text, and byte ranges address the compressed file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<&'static str>,
    /// The decompressed text's size in bytes, when the read decoded it to its end (absent otherwise: never guessed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompressed_bytes: Option<u64>,
    /// The archive the text is a member of (a path through an archive, `logs.zip/dir/b.log`); `size_bytes` and `mtime`
    /// are then the member's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveMeta>,
    /// A CSV or TSV file's delimiter, column count and header row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<TableMeta>,
    /// Pages in the document (PDFs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_count: Option<u32>,
    /// The pages shown, as `pages` reads them back: `1-7` (PDFs, page mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_shown: Option<String>,
    /// The `pages` of the next call; absent at the end (PDFs, page mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_pages: Option<String>,
    /// How that encoding was chosen: `bom`, `detected`, `guessed`, `fallback` or `forced`.
    pub encoding_source: crate::classify::EncodingSource,
    /// Whether a byte order mark was found and removed.
    pub bom_removed: bool,
    /// Bytes invalid in the encoding within the returned window, shown as U+FFFD (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_bytes: Option<u64>,
    /// NUL characters in the window, shown as `␀` (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nul_chars: Option<Flagged>,
    /// Other control characters and line or paragraph separators in the window, shown escaped (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_chars: Option<Flagged>,
    /// Bidirectional controls and invisible characters in the window (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invisible_chars: Option<Flagged>,
    /// Whether content exists before the window.
    pub more_before: bool,
    /// Whether content exists after the window.
    pub more_after: bool,
    /// Whether the output byte cap ended the window early.
    pub byte_cap_hit: bool,
    /// Lines in the whole file (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// First line shown (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line shown (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Lines shown (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returned_lines: Option<u64>,
    /// The `offset` of the next window; absent at the end (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Lines cut at the per-line limit (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_lines: Option<u64>,
    /// The limit applied when the requested one was clamped (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_clamped_to: Option<u64>,
    /// `lf`, `crlf`, `cr`, `mixed`, or `none` for a file without line breaks (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_ending: Option<&'static str>,
    /// Whether the file ends with a newline (line mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trailing_newline: Option<bool>,
    /// `block` (opened by a header line) or `paragraph` (top level, between blank lines) (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_kind: Option<&'static str>,
    /// First line of the block around the anchor, annotations above its header included (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_start_line: Option<u64>,
    /// Last line of the block, its closing line included (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_end_line: Option<u64>,
    /// The line that opens the block; absent for a top-level paragraph (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_header_line: Option<u64>,
    /// Matching lines shown (`find`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub find_matches: Option<u64>,
    /// Matching lines in all from where the search started, when it reached the end of the content within the time
    /// budget (`find`); absent when it stopped before (the footer then gives a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub find_total: Option<u64>,
    /// The line the request asked about (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_line: Option<u64>,
    /// The call that shows more around the block — `mode=block anchor_line=N` for the enclosing block, or at top level
    /// `offset=N limit=M`; absent when the block is the whole file (block mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widen: Option<String>,
    /// The byte range asked for, `[start, end)` (byte mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_range: Option<[u64; 2]>,
    /// The byte range returned, `[start, end)` (byte mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_range: Option<[u64; 2]>,
    /// Whether an end was moved to a character boundary, past the file's end or to the output cap (byte mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary_adjusted: Option<bool>,
    /// Share of the file the returned range covers, in percent (byte mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_of_file: Option<f64>,
    /// The `start_byte` of the next range; absent at the end (byte mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_start_byte: Option<u64>,
}

/// Characters of one class a window holds: how many, and where the first is — its line (line and block windows),
/// its byte offset (byte ranges) or its page (PDF pages). Offsets and lines count the rendering of a notebook or a
/// PDF, as the window's own do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Flagged {
    /// How many the window holds.
    pub count: u64,
    /// The line of the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_line: Option<u64>,
    /// The byte offset of the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<u64>,
    /// The page of the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_page: Option<u64>,
}

/// A page of a directory listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectoryResult {
    /// One entry a line (directories with a trailing `/`), then the footer.
    pub output: String,
    /// What the page shows and what it left out.
    pub meta: DirectoryMeta,
    /// The entries of this page, in order.
    pub entries: Vec<DirEntry>,
}

/// The envelope of a directory page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectoryMeta {
    /// The directory as resolved, relative to its root when inside one.
    pub path: String,
    /// Entries in the directory.
    pub total_entries: u64,
    /// Entries on this page.
    pub returned_entries: u64,
    /// 1-based position of the first entry on this page.
    pub offset: u64,
    /// The `offset` of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Whether the output byte cap ended the page early.
    pub byte_cap_hit: bool,
    /// The limit applied when the requested one was clamped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_clamped_to: Option<u64>,
    /// The archive listed, when the directory is an archive or a directory inside one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveMeta>,
}

/// What archive a path goes through, and what the member is inside it (see `docs/formats.md`, Archives).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ArchiveMeta {
    /// The archive, as resolved (a file beneath a root, or for a nested archive the outer archive's member).
    pub path: String,
    /// What kind of archive it is: `zip`, `tar`, `tar.gz`, `tar.zst`, `tar.xz` or `tar.bz2`.
    pub format: &'static str,
    /// The member's path inside the archive; absent for the archive's own top listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The member's size inside the archive (zip).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_size: Option<u64>,
    /// How the member is compressed inside the archive (zip: `stored` or `deflate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'static str>,
    /// Members in the whole archive (listings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<u64>,
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// The entry's name (non-UTF-8 bytes shown as U+FFFD).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes, for files and symlinks (the link itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Size inside the archive, for a member of a zip archive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_size: Option<u64>,
}

/// A file returned as an attachment, with a short description for the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttachmentResult {
    /// What the attachment is: type, size, dimensions and any rescaling (with the factor to map coordinates back).
    pub output: String,
    /// The attachments (one today).
    pub attachments: Vec<Attachment>,
    /// Facts about the file and what was done to it.
    pub meta: AttachmentMeta,
}

/// One attachment: the bytes a model API takes, base64-encoded, and their type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attachment {
    /// MIME type of `data`, from its content (never from the file name).
    pub mime: String,
    /// The attachment's bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// Width in pixels (images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels (images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Size of the attachment's bytes before base64.
    pub size_bytes: u64,
}

/// The envelope of an attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct AttachmentMeta {
    /// The path as resolved, relative to its root when inside one.
    pub path: String,
    /// File size in bytes.
    pub size_bytes: u64,
    /// Last modification time, RFC 3339 (UTC), when the file system reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
    /// MIME type of the file, from its content.
    pub mime: String,
    /// The image's own width in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_width: Option<u32>,
    /// The image's own height in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_height: Option<u32>,
    /// The part of the image returned, `[x0, y0, x1, y1]` in the original's pixels (right and bottom excluded), when
    /// the request asked for a `region`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<[u32; 4]>,
    /// Returned size ÷ original size (of the region, when one was asked), when the image was downscaled
    /// (coordinates in the attachment ÷ scale, plus the region's top-left corner = coordinates in the original).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Whether the attachment was re-encoded (downscaled or converted) rather than the file's own bytes.
    pub reencoded: bool,
    /// The archive the file is a member of; `size_bytes` and `mtime` are then the member's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveMeta>,
    /// Why the image went out in its encoding, in a few words ("the file's own bytes", "lossless: 143 colours",
    /// "photographic: 6.2× smaller than lossless PNG").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// What the attached image costs each family of models, estimated from its size by the published rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_tokens: Option<ImageTokens>,
}

/// A repeat of an earlier read in the same session: same path, same window, same content, so the model is told so in
/// one line instead of being sent the content again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnchangedResult {
    /// The one-line notice.
    pub output: String,
    /// Which earlier answer it stands for.
    pub meta: UnchangedMeta,
}

/// The earlier answer an [`UnchangedResult`] stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnchangedMeta {
    /// The path as resolved, relative to its root when inside one.
    pub path: String,
    /// When the content was delivered, RFC 3339 (UTC).
    pub read_at: String,
    /// The window, as that answer's footer described it.
    pub window: String,
    /// Bytes of the answer it stands for.
    pub saved_bytes: u64,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Tagged<'a> {
    Text(&'a TextResult),
    Directory(&'a DirectoryResult),
    Attachment(&'a AttachmentResult),
    Unchanged(&'a UnchangedResult),
    Error(ErrorFields<'a>),
}

#[derive(Serialize)]
struct ErrorFields<'a> {
    output: String,
    error: &'a str,
    error_code: ErrorCode,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    suggestions: &'a [String],
}

#[derive(Serialize)]
struct WithOk<'a> {
    ok: bool,
    #[serde(flatten)]
    result: Tagged<'a>,
}

impl Serialize for ReadResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let result = match self {
            ReadResult::Text(t) => Tagged::Text(t),
            ReadResult::Directory(d) => Tagged::Directory(d),
            ReadResult::Attachment(a) => Tagged::Attachment(a),
            ReadResult::Unchanged(u) => Tagged::Unchanged(u),
            ReadResult::Error(e) => Tagged::Error(ErrorFields {
                output: render_error(e),
                error: &e.message,
                error_code: e.code,
                hint: e.hint.as_deref(),
                suggestions: &e.suggestions,
            }),
        };
        WithOk { ok: self.is_ok(), result }.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_serializes_with_ok_kind_output_and_code() {
        let e = ReadError::new(ErrorCode::NotFound, "a.txt: no such file")
            .with_hint("list the directory: path=.")
            .with_suggestions(vec!["b.txt".into()]);
        let v = serde_json::to_value(ReadResult::Error(e)).unwrap();
        assert_eq!(v["ok"], false);
        assert_eq!(v["kind"], "error");
        assert_eq!(v["error_code"], "NOT_FOUND");
        assert_eq!(v["suggestions"][0], "b.txt");
        assert_eq!(
            v["output"],
            "NOT_FOUND: a.txt: no such file\nDid you mean: b.txt?\nNext: list the directory: path=."
        );
    }

    #[test]
    fn text_serializes_flat_with_kind() {
        let t = TextResult { output: "1: a\n".into(), meta: TextMeta { path: "a".into(), ..Default::default() } };
        let v = serde_json::to_value(ReadResult::Text(t)).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["kind"], "text");
        assert_eq!(v["meta"]["path"], "a");
        assert!(v["meta"].get("total_lines").is_none());
    }
}
