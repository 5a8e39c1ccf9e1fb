//! One member of an archive, read like a file.
//!
//! - **Text** is streamed (see [`crate::window::stream`]): decompressed as the window is read, in constant memory,
//!   with every text window — lines, tails, `find`, CSV headers, encodings — and byte ranges over the member's own
//!   bytes. Each read reaches the member from the start of its data (a zip member) or of the archive (a compressed
//!   tar); a byte range reads it twice, a tail once when its lines lie in the text the stream keeps.
//! - **Anything else** (a PDF, an image, a document, a notebook, compressed text, a nested archive) is copied into an
//!   unnamed temporary file of at most [`MAX_COPY_BYTES`] ([`crate::source::copy`]), and that file goes down the road
//!   a file of the same content takes.
//! - Block mode needs to read backward from its anchor, which a stream cannot do cheaply: refused, as for compressed
//!   text. Links are never followed; encrypted members and compression methods this build does not read are refused
//!   before anything is decoded.

use super::{MAX_DEPTH, Place, archive_error};
use crate::classify::{self, Content, SNIFF_LEN};
use crate::engine::Reader;
use crate::engine::file::{FileRequest, read_head};
use crate::engine::target::Target;
use crate::engine::{table, text};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::{self, human_size};
use crate::request::Window;
use crate::result::{ArchiveMeta, ReadResult, TextMeta};
use crate::source::archive::{Archive, ArchiveError, Format, Member, MemberKind};
use crate::source::copy::{CopyError, copy};
use crate::window::Source;
use crate::window::index::store::LineIndexes;
use crate::window::stream::{self, Decoder, Opener, Stream};

/// Bytes of a member copied out at most, for the roads that read a file whole or by seeking.
pub const MAX_COPY_BYTES: u64 = 256 * 1024 * 1024;

impl Reader {
    /// Reads the member `member` of the archive at `place` as the request asks.
    pub(super) fn read_member(
        &self,
        place: &Place<'_>,
        member: &Member,
        request: FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        let path = member.path.as_deref().unwrap_or_default();
        let shown = place.shown_member(path);
        refuse_unreadable(&shown, member)?;
        let archive = &place.archive;
        let open: &Opener<'_> = &|_| archive.open(member).map(as_decoder);
        let stream = Stream::new(open, archive.budget.clone());
        let head = member_head(&stream, &shown, place)?;
        let archive_meta =
            ArchiveMeta { compressed_size: member.compressed_size, method: member.method, ..place.meta(path) };
        // An archive inside the archive (or an Office document, which is a zip) is read from a copy.
        if Format::is_archive_head(&head) || !is_streamed_text(&head, &shown, &request) {
            return self.read_copied(place, member, &shown, &stream, request, limits, archive_meta);
        }
        let Content::Text(format) = classify::classify(&head, request.forced) else {
            return self.read_copied(place, member, &shown, &stream, request, limits, archive_meta);
        };
        if matches!(request.window, Window::Block(_)) {
            return Err(block_refused(&shown));
        }
        if request.pages.is_some() {
            return Err(ReadError::invalid_param(format!(
                "{shown}: `pages` applies to PDFs, workbooks and presentations only, and this is text"
            ))
            .with_hint("remove `pages`; page through its lines with offset and limit"));
        }
        let window = request.window;
        let source = Source::streamed(&stream, format.bom_len as u64, format.codec.newline_layout())
            .ending_at(member.size)
            .with_budget(archive.budget.clone());
        let meta = TextMeta {
            path: shown.clone(),
            size_bytes: member.size,
            mtime: member.modified().and_then(render::rfc3339_seconds),
            encoding: format.codec.name(),
            encoding_source: format.source,
            bom_removed: format.bom_len > 0,
            archive: Some(archive_meta),
            ..TextMeta::default()
        };
        let notice = notice_of(place, member);
        let limits = &room_for(limits, &notice);
        let rendering = text::Rendering { notices: vec![notice], ..text::Rendering::for_text(&format) };
        let whole = member.size <= SNIFF_LEN as u64;
        let table = match &window {
            Window::Lines(_) if format.codec.is_utf8() => {
                table::sniff(&shown, head.get(format.bom_len..).unwrap_or_default(), whole)
            }
            _ => None,
        };
        table::read_with(table, limits, |limits| text::read_member(&source, &format, window, meta, limits, &rendering))
            .map(ReadResult::Text)
            .map_err(|error| with_member_hint(error, archive.format))
    }

    /// Reads a member that is not streamed text: copied into a temporary file, then read as a file of that content
    /// is; a member that is an archive is read as a nested archive's top.
    #[allow(clippy::too_many_arguments)]
    fn read_copied(
        &self,
        place: &Place<'_>,
        member: &Member,
        shown: &str,
        stream: &Stream<'_>,
        request: FileRequest<'_>,
        limits: &Limits,
        archive_meta: ArchiveMeta,
    ) -> Result<ReadResult, ReadError> {
        let (file, metadata) = copied(place, member, shown, stream, limits)?;
        let head = read_head(&file, &metadata, shown)?;
        // A copy is read once: whatever a line index or a stream's totals learned of it would never be used again.
        let indexes = LineIndexes::in_memory();
        let budget = place.archive.budget.clone();
        let target = Target {
            file: &file,
            metadata: &metadata,
            head: &head,
            shown: shown.to_string(),
            budget,
            indexes: &indexes,
        };
        if let Some(format) = super::sniff(&target, &request) {
            let path = member.path.as_deref().unwrap_or_default();
            return self.list_nested(place, path, &target, format, "", request, limits);
        }
        let notice = notice_of(place, member);
        let result = self.read_content(&target, request, &room_for(limits, &notice))?;
        Ok(stamped(result, member, archive_meta, &notice))
    }

    /// Reads `rest` inside the member `outer` of the archive at `place`, itself an archive.
    pub(super) fn read_nested(
        &self,
        place: &Place<'_>,
        outer: &Member,
        rest: &str,
        request: FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        let path = outer.path.as_deref().unwrap_or_default();
        let shown = place.shown_member(path);
        refuse_unreadable(&shown, outer)?;
        let archive = &place.archive;
        let open: &Opener<'_> = &|_| archive.open(outer).map(as_decoder);
        let stream = Stream::new(open, archive.budget.clone());
        let (file, metadata) = copied(place, outer, &shown, &stream, limits)?;
        let head = read_head(&file, &metadata, &shown)?;
        let indexes = LineIndexes::in_memory();
        let budget = archive.budget.clone();
        let target =
            Target { file: &file, metadata: &metadata, head: &head, shown: shown.clone(), budget, indexes: &indexes };
        match super::sniff(&target, &request) {
            Some(format) => self.list_nested(place, path, &target, format, rest, request, limits),
            None => Err(ReadError::new(
                ErrorCode::NotFound,
                format!(
                    "{}: {shown} is a file in the archive, not a directory or an archive",
                    place.shown_member(&format!("{path}/{rest}"))
                ),
            )
            .with_hint(format!("read the member itself: path={shown}"))),
        }
    }

    /// Reads `rest` inside the archive copied out of the member `path` of the archive at `place`.
    #[allow(clippy::too_many_arguments)]
    fn list_nested(
        &self,
        place: &Place<'_>,
        path: &str,
        target: &Target<'_>,
        format: Format,
        rest: &str,
        request: FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        let shown = place.shown_member(path);
        if place.depth >= MAX_DEPTH {
            return Err(ReadError::new(
                ErrorCode::TooLarge,
                format!("{shown}: an archive inside an archive inside an archive; archives are read one level deep"),
            )
            .with_hint(
                "read the members of the outer archives; ask the user to extract the inner one if it is needed",
            ));
        }
        let inner = if place.inner.is_empty() { path.to_string() } else { format!("{}/{path}", place.inner) };
        let nested = Place {
            archive: Archive { file: target.file, end: target.read_end(), format, budget: target.budget.clone() },
            shown,
            root: place.root,
            relative: place.relative.clone(),
            inner,
            depth: place.depth + 1,
        };
        self.check_member_policy(&nested, rest)?;
        self.read_in_archive(&nested, rest, request, limits)
    }
}

/// Refuses a member no stream can give text of: a link, a device, an encrypted member, a compression this build does
/// not read, a sparse tar member.
fn refuse_unreadable(shown: &str, member: &Member) -> Result<(), ReadError> {
    let refusal = match member.kind {
        MemberKind::Symlink | MemberKind::HardLink => Some((
            ErrorCode::NotRegular,
            format!(
                "{shown}: a {} inside the archive; links in archives are never followed",
                if member.kind == MemberKind::Symlink { "symbolic link" } else { "hard link" }
            ),
            "read the member it names by that member's own path (list the archive to see its members)".to_string(),
        )),
        MemberKind::Special => Some((
            ErrorCode::NotRegular,
            format!("{shown}: a device or FIFO stored in the archive; it has no content"),
            "list the archive to see the files it holds".to_string(),
        )),
        _ if member.encrypted => Some((
            ErrorCode::Binary,
            format!("{shown}: a member encrypted with a password"),
            "its content cannot be read without the password; ask the user for an unencrypted copy".to_string(),
        )),
        _ if member.method.is_some_and(|method| !matches!(method, "stored" | "deflate")) => Some((
            ErrorCode::Binary,
            format!(
                "{shown}: a member compressed with {}, which this build does not read",
                member.method.unwrap_or_default()
            ),
            "only stored and deflated zip members are read; ask the user for the file itself".to_string(),
        )),
        _ if member.sparse => Some((
            ErrorCode::Binary,
            format!("{shown}: a sparse file (GNU tar), whose data is not stored in one run; not read"),
            "ask the user for the file itself, or an archive made without --sparse".to_string(),
        )),
        _ => None,
    };
    match refusal {
        Some((code, message, hint)) => Err(ReadError::new(code, message).with_hint(hint)),
        None => Ok(()),
    }
}

/// The member's first bytes (what classifying it needs), or the error that stopped its reading before them.
fn member_head(stream: &Stream<'_>, shown: &str, place: &Place<'_>) -> Result<Vec<u8>, ReadError> {
    let mut head = vec![0u8; SNIFF_LEN];
    let n = stream.read_at(0, &mut head).map_err(|error| match stream::damage(&error) {
        Some(damage) => ReadError::new(ErrorCode::IoError, format!("{shown}: the member is damaged ({damage})"))
            .with_hint(
                "the archive is corrupt or cut short (an unfinished download or copy?); ask the user for a fresh copy",
            ),
        None if error.kind() == std::io::ErrorKind::TimedOut => {
            with_member_hint(ReadError::from_io(&error, shown), place.archive.format)
        }
        None => ReadError::from_io(&error, shown),
    })?;
    head.truncate(n);
    Ok(head)
}

/// Whether a member is read as streamed text: text by its first bytes, not compressed, and not a notebook, a page or
/// a document (which their own roads convert, from a copy). A forced encoding asks for the member's own text.
fn is_streamed_text(head: &[u8], shown: &str, request: &FileRequest<'_>) -> bool {
    if request.forced.is_some() {
        return true;
    }
    if crate::media::compressed::Compression::sniff(head).is_some() {
        return false;
    }
    let content = classify::classify(head, None);
    let refined = classify::document::refine(content, head, shown, None);
    let notebook = shown.rsplit('.').next().is_some_and(|extension| extension.eq_ignore_ascii_case("ipynb"));
    matches!(refined, Content::Text(_)) && !notebook
}

/// A member's bytes as a stream's decoder: one that makes no restart points, so every read that looks back starts the
/// member afresh (no restart point is ever offered to it).
fn as_decoder<'f>(reader: Box<dyn std::io::Read + 'f>) -> Box<dyn Decoder + 'f> {
    Box::new(MemberBytes(reader))
}

struct MemberBytes<'f>(Box<dyn std::io::Read + 'f>);

impl std::io::Read for MemberBytes<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Decoder for MemberBytes<'_> {}

/// The member copied into an unnamed temporary file, with that file's metadata.
fn copied(
    place: &Place<'_>,
    member: &Member,
    shown: &str,
    stream: &Stream<'_>,
    limits: &Limits,
) -> Result<(std::fs::File, std::fs::Metadata), ReadError> {
    if member.size > MAX_COPY_BYTES {
        return Err(too_large_to_copy(shown, member.size));
    }
    let reader = StreamReader { stream, pos: 0 };
    let file = copy(reader, MAX_COPY_BYTES, &place.archive.budget).map_err(|error| match error {
        CopyError::OverCap => too_large_to_copy(shown, member.size),
        CopyError::Failed(error) if stream::damage(&error).is_some() => ReadError::new(
            ErrorCode::IoError,
            format!("{shown}: the member is damaged ({})", stream::damage(&error).unwrap_or_default()),
        )
        .with_hint(
            "the archive is corrupt or cut short (an unfinished download or copy?); ask the user for a fresh copy",
        ),
        CopyError::Failed(error) if error.kind() == std::io::ErrorKind::TimedOut => {
            archive_error(place, member.path.as_deref().unwrap_or_default(), ArchiveError::Stopped(error), limits)
        }
        CopyError::Failed(error) => ReadError::from_io(&error, shown)
            .with_hint("reading this member needs a temporary file (TMPDIR on Unix); check that one can be written"),
    })?;
    let metadata = file.metadata().map_err(|error| ReadError::from_io(&error, shown))?;
    Ok((file, metadata))
}

/// A stream read from its start, as a reader.
struct StreamReader<'s, 'f> {
    stream: &'s Stream<'f>,
    pos: u64,
}

impl std::io::Read for StreamReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.stream.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn too_large_to_copy(shown: &str, size: u64) -> ReadError {
    ReadError::new(
        ErrorCode::TooLarge,
        format!(
            "{shown}: a member of {} that is not plain text; such members are read from a copy of at most {}",
            human_size(size),
            human_size(MAX_COPY_BYTES)
        ),
    )
    .with_hint("ask the user for the file itself, outside the archive")
}

/// The notice of a member's read.
fn notice_of(place: &Place<'_>, member: &Member) -> String {
    let format = place.archive.format;
    let stored = render::archive::Stored { method: member.method, compressed: member.compressed_size };
    render::archive::member_notice(&place.shown, format.name(), format.is_sequential(), stored)
}

/// `limits` with room for the member's notice kept out of the output cap (an archive's path can be long; the
/// footer's own reserve is for the footer's usual words).
fn room_for(limits: &Limits, notice: &str) -> Limits {
    let cap = limits.max_output_bytes.saturating_sub(notice.len() + 3).max(crate::limits::MIN_OUTPUT_BYTES);
    Limits { max_output_bytes: cap, ..limits.clone() }
}

/// A result of a copied member's road, with the member's own facts: its time, the archive it came out of, and the
/// notice that says so.
fn stamped(result: ReadResult, member: &Member, archive: ArchiveMeta, notice: &str) -> ReadResult {
    let mtime = member.modified().and_then(render::rfc3339_seconds);
    match result {
        ReadResult::Text(mut text) => {
            text.meta.mtime = mtime;
            text.meta.archive = Some(archive);
            render::archive::add_member_notice(&mut text.output, notice);
            ReadResult::Text(text)
        }
        ReadResult::Attachment(mut attachment) => {
            attachment.meta.mtime = mtime;
            attachment.meta.archive = Some(archive);
            render::archive::add_member_notice(&mut attachment.output, notice);
            ReadResult::Attachment(attachment)
        }
        other => other,
    }
}

fn block_refused(shown: &str) -> ReadError {
    ReadError::invalid_param(format!(
        "{shown} is a member of an archive; block mode (`mode` \"block\") applies to files on disk only"
    ))
    .with_hint("remove `mode` and `anchor_line`, and read the lines around it with offset and limit")
}

/// A timeout's way around for a member: reaching it decompresses what lies before it.
fn with_member_hint(error: ReadError, format: Format) -> ReadError {
    if error.code != ErrorCode::Timeout {
        return error;
    }
    error.with_hint(if format.is_sequential() {
        "a member of a compressed tar is decompressed from the archive's start on every read: read a window nearer the \
         member's top, or ask for a longer time budget"
    } else {
        "a member is decompressed from its start on every read, and a window's line count needs all of it: read a \
         window nearer the top, or ask for a longer time budget"
    })
}
