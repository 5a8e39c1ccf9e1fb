//! A regular file: sniff its first block, classify it, and send it down the road its content needs — text windows,
//! notebooks (rendered, then windowed like text), images (attachments) or PDFs (pages of text).

use super::target::{Target, is_windowed, read_end_of, region_needs_an_image};
use super::text::{self, Rendering, io_error};
use crate::classify::{self, Codec, Content, ImageType, SNIFF_LEN, TextFormat};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::media::notebook;
use crate::render::notebook::NotRendered;
use crate::render::{self, human_size};
use crate::request::{PixelRegion, Window};
use crate::result::{AttachmentResult, ReadResult, TextMeta};
use crate::window::Source;
use std::fs::{File, Metadata};
use std::io::Read;

/// What a request asks of a file, beyond its path.
pub struct FileRequest<'a> {
    /// Lines or bytes.
    pub window: Window,
    /// The encoding the request forced, if any (the caller wants text: media detection is skipped).
    pub forced: Option<Codec>,
    /// PDF pages, as the request gave them.
    pub pages: Option<&'a str>,
    /// Whether attachments are made; when not, an image (or a PDF as a document) is described, not decoded.
    pub attachments: bool,
}

/// How media files are handled: where PDFs and documents are parsed, and whether PDFs go out whole.
#[derive(Debug)]
pub struct Media {
    /// Isolation of PDF text extraction.
    #[cfg(feature = "pdf")]
    pdf_isolation: crate::media::pdf::Isolation,
    /// Whether PDFs go out whole, as documents.
    #[cfg(feature = "pdf")]
    pdf_as_document: bool,
    /// Where documents are converted.
    #[cfg(feature = "documents")]
    documents: crate::media::document::Converter,
}

impl Media {
    /// PDFs and documents parsed in this process (PDFs in a thread); PDFs as documents when asked.
    pub fn in_process(pdf_as_document: bool) -> Media {
        let _ = pdf_as_document;
        Media {
            #[cfg(feature = "pdf")]
            pdf_isolation: crate::media::pdf::Isolation::thread(),
            #[cfg(feature = "pdf")]
            pdf_as_document,
            #[cfg(feature = "documents")]
            documents: crate::media::document::Converter::in_process(),
        }
    }

    /// PDFs and documents parsed in child processes of the worker `program`; PDFs as documents when asked. Nothing
    /// here names a parser, so a program built on this alone links none.
    pub fn in_worker(program: std::path::PathBuf, pdf_as_document: bool) -> Media {
        let _ = (&program, pdf_as_document);
        Media {
            #[cfg(feature = "pdf")]
            pdf_isolation: crate::media::pdf::Isolation::Process {
                program: program.clone(),
                args: vec![crate::media::pdf::WORKER_MODE.to_string()],
            },
            #[cfg(feature = "pdf")]
            pdf_as_document,
            #[cfg(feature = "documents")]
            documents: crate::media::document::Converter::Worker(program),
        }
    }
}

/// The first bytes of an open regular file (up to [`SNIFF_LEN`], never past where reading stops): what classifying
/// it needs, and for a small file the whole file, so that its window and its hash need no second read.
///
/// A file that states size 0 (a `/proc` file) makes its content as it is read, and may make it anew, longer or
/// shorter, at each read at an offset. Its head is therefore read forward from its start, in one pass, which the
/// kernel serves from one rendering; when that pass reaches the end, the head is the whole content and a text read
/// takes nothing more from the file ([`Target::read_end`]), so every part of its answer comes from the same content.
pub fn read_head(file: &File, metadata: &Metadata, shown: &str) -> Result<Vec<u8>, ReadError> {
    if metadata.len() == 0 {
        return read_forward(file, SNIFF_LEN).map_err(io_error(shown));
    }
    let end = read_end_of(metadata);
    // A small file's block is the file (its size is known from the open handle; reading stops there anyway).
    let mut block = vec![0u8; SNIFF_LEN.min(usize::try_from(end).unwrap_or(SNIFF_LEN))];
    let read = Source::new(file, 0, end, Codec::Whatwg(encoding_rs::UTF_8).newline_layout())
        .read_at(0, &mut block)
        .map_err(io_error(shown))?;
    block.truncate(read);
    Ok(block)
}

/// At most `limit` bytes from the start of `file`, read forward. The handle is left at its start, wherever it was: the
/// road that reads a file forward from its offset (a document's bytes, converted in this process) reads it from there.
fn read_forward(mut file: &File, limit: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let mut head = Vec::with_capacity(limit);
    file.take(limit as u64).read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(head)
}

/// What the file is, from its head; fails when the request asks what this content cannot give (pages of a file that
/// is not a PDF, block mode on anything but text).
pub fn classify(target: &Target<'_>, request: &FileRequest<'_>) -> Result<Content, ReadError> {
    let content = classify::classify(target.head, request.forced);
    let content = classify::document::refine(content, target.head, &target.shown, request.forced);
    if request.pages.is_some() && !matches!(content, Content::Pdf | Content::Document(_)) {
        return Err(ReadError::invalid_param(format!(
            "{}: `pages` applies to PDFs, workbooks, presentations and books only, and this is none of them",
            target.shown
        ))
        .with_hint("remove `pages`; page through other files with offset and limit"));
    }
    if matches!(request.window, Window::Block(_)) && !matches!(content, Content::Text(_)) {
        return Err(block_needs_text(target, &content));
    }
    if matches!(request.window, Window::Region(_)) && !matches!(content, Content::Image(_)) {
        return Err(region_needs_an_image(&target.shown, &content_name(&content)));
    }
    if matches!(request.window, Window::Find(_))
        && !matches!(content, Content::Text(_) | Content::Pdf | Content::Document(_))
    {
        return Err(ReadError::invalid_param(format!("{}: `find` searches text, and this is not text", target.shown))
            .with_hint("remove `find`; it applies to text files, notebooks, PDFs and documents"));
    }
    Ok(content)
}

/// Reads a regular file already classified by [`classify`].
pub fn read_classified(
    target: &Target<'_>,
    content: Content,
    request: FileRequest<'_>,
    limits: &Limits,
    media: &Media,
) -> Result<ReadResult, ReadError> {
    match content {
        Content::Text(format) if is_rendered_notebook(target, &request) => {
            read_notebook(target, &format, request.window, limits)
        }
        Content::Text(format) => read_text(target, &format, request.window, limits).map(ReadResult::Text),
        Content::Image(kind) if !request.attachments && cfg!(feature = "images") => {
            Ok(not_attached(target, kind.mime(), &format!("{} image", kind.name())))
        }
        Content::Image(kind) => {
            let region = match &request.window {
                Window::Region(region) => Some(*region),
                _ => None,
            };
            read_image(target, kind, region, limits).map(|result| note_ignored_window(result, &request.window))
        }
        Content::Pdf => read_pdf(target, &request, limits, media),
        Content::Document(kind) => read_document(target, kind, request, limits, media),
        Content::Binary { description, hint } => Err(binary_error(target, &description, hint)),
    }
}

/// A text file's window; a CSV or TSV file's also names its table and repeats its header row when the window starts
/// below it (within the output cap: the row's bytes are kept out of the lines' share).
fn read_text(
    target: &Target<'_>,
    format: &TextFormat,
    window: Window,
    limits: &Limits,
) -> Result<crate::result::TextResult, ReadError> {
    let rendering = Rendering::for_text(format);
    let whole = target.head.len() as u64 == target.metadata.len();
    let table = (format.codec.is_utf8() && matches!(window, Window::Lines(_)))
        .then(|| super::table::sniff(&target.shown, target.head.get(format.bom_len..).unwrap_or_default(), whole))
        .flatten();
    super::table::read_with(table, limits, |limits| text::read(target, format, window, limits, &rendering))
}

/// Whether a text file is rendered as a notebook: its name says so and no encoding was forced (which asks for text).
fn is_rendered_notebook(target: &Target<'_>, request: &FileRequest<'_>) -> bool {
    request.forced.is_none() && is_notebook(&target.shown)
}

/// Notebooks larger than this are shown as their JSON text: rendering needs the whole document in memory.
const MAX_NOTEBOOK_BYTES: u64 = 64 * 1024 * 1024;

fn is_notebook(shown: &str) -> bool {
    shown.rsplit('.').next().is_some_and(|extension| extension.eq_ignore_ascii_case("ipynb"))
}

/// A notebook's cells rendered as text, then windowed like any text; invalid notebook JSON is read as plain text.
fn read_notebook(
    target: &Target<'_>,
    format: &TextFormat,
    window: Window,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let size = target.metadata.len();
    let plain = |why: NotRendered| {
        let notice = render::notebook::not_rendered(why);
        let rendering = Rendering { notices: vec![notice], ..Rendering::default() };
        text::read(target, format, window.clone(), limits, &rendering).map(ReadResult::Text)
    };
    if size > MAX_NOTEBOOK_BYTES {
        return plain(NotRendered::TooBigOnDisk(MAX_NOTEBOOK_BYTES));
    }
    let stopped = |e: std::io::Error| notebook_error(&e, &target.shown);
    let mut json = Vec::new();
    target.file.take(MAX_NOTEBOOK_BYTES).read_to_end(&mut json).map_err(stopped)?;
    target.budget.check().map_err(stopped)?;
    let json = notebook_json_as_utf8(json, format);
    if notebook::parses_too_big(&json) {
        return plain(NotRendered::TooBigParsed(notebook::MAX_PARSED_BYTES as u64));
    }
    let Some(notebook) = notebook::render(&json, &mut || target.budget.check()).map_err(stopped)? else {
        return plain(NotRendered::NotANotebook);
    };
    let notices = render::notebook::notices(&notebook);
    let meta = TextMeta { rendered_from: Some("notebook"), ..text::base_meta(target, format) };
    let rendering = Rendering { notices, ..Rendering::default() };
    text::read_rendered(&notebook.text, window, meta, limits, &target.budget, &rendering).map(ReadResult::Text)
}

/// A notebook's bytes as the UTF-8 JSON its parser reads: without a byte order mark, and decoded from the encoding
/// the file was found in (a notebook saved as UTF-16 is still a notebook).
fn notebook_json_as_utf8(mut json: Vec<u8>, format: &TextFormat) -> Vec<u8> {
    let text = json.get(format.bom_len..).unwrap_or_default();
    if format.codec == Codec::Whatwg(encoding_rs::UTF_8) {
        json.drain(..format.bom_len.min(json.len()));
        return json;
    }
    format.codec.decode(text, classify::codec::DecodeLimit::NONE, true).text.into_bytes()
}

/// A notebook's read or rendering that failed; running out of time gets the way around the rendering.
fn notebook_error(error: &std::io::Error, shown: &str) -> ReadError {
    let mapped = ReadError::from_io(error, shown);
    if mapped.code != ErrorCode::Timeout {
        return mapped;
    }
    mapped.with_hint("read it as JSON text with encoding=\"utf-8\", which windows the file without rendering it whole")
}

#[cfg(feature = "images")]
fn read_image(
    target: &Target<'_>,
    kind: ImageType,
    region: Option<PixelRegion>,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let image = crate::media::image::ImageFile {
        file: target.file,
        kind,
        meta: target.attachment_meta(kind.mime()),
        budget: &target.budget,
        region,
    };
    crate::media::image::read(image, limits).map(ReadResult::Attachment)
}

#[cfg(not(feature = "images"))]
fn read_image(
    target: &Target<'_>,
    kind: ImageType,
    _region: Option<PixelRegion>,
    _limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let _ = target.attachment_meta(kind.mime());
    Err(binary_error(target, &format!("{} image", kind.name()), Some(without_feature("images"))))
}

#[cfg(feature = "pdf")]
fn read_pdf(
    target: &Target<'_>,
    request: &FileRequest<'_>,
    limits: &Limits,
    media: &Media,
) -> Result<ReadResult, ReadError> {
    if media.pdf_as_document && request.pages.is_none() && !is_windowed(&request.window) {
        if !request.attachments {
            return Ok(not_attached(target, "application/pdf", "PDF document"));
        }
        let meta = target.attachment_meta("application/pdf");
        return super::pdf::read_document(target, meta, limits, &media.pdf_isolation);
    }
    super::pdf::read(target, request.pages, request.window.clone(), limits, &media.pdf_isolation)
}

#[cfg(not(feature = "pdf"))]
fn read_pdf(
    target: &Target<'_>,
    _request: &FileRequest<'_>,
    _limits: &Limits,
    _media: &Media,
) -> Result<ReadResult, ReadError> {
    Err(binary_error(target, "PDF document", Some(without_feature("pdf"))))
}

#[cfg(feature = "documents")]
fn read_document(
    target: &Target<'_>,
    kind: classify::document::DocumentKind,
    request: FileRequest<'_>,
    limits: &Limits,
    media: &Media,
) -> Result<ReadResult, ReadError> {
    super::document::read(target, kind, request, limits, &media.documents)
}

#[cfg(not(feature = "documents"))]
fn read_document(
    target: &Target<'_>,
    kind: classify::document::DocumentKind,
    _request: FileRequest<'_>,
    _limits: &Limits,
    _media: &Media,
) -> Result<ReadResult, ReadError> {
    Err(binary_error(target, kind.description(), Some(without_feature("documents"))))
}

/// An attachment described but not made (no bytes, nothing decoded): what a caller that cannot pass attachments on
/// lists instead.
fn not_attached(target: &Target<'_>, mime: &str, description: &str) -> ReadResult {
    let output = render::attachment::not_attached(description, target.metadata.len());
    ReadResult::Attachment(AttachmentResult { output, attachments: Vec::new(), meta: target.attachment_meta(mime) })
}

/// Says so when a request windowed an attachment with lines or bytes: it is always whole (or the region asked), and
/// a silent ignore would mislead.
fn note_ignored_window(mut result: ReadResult, window: &Window) -> ReadResult {
    if let ReadResult::Attachment(attachment) = &mut result
        && is_windowed(window)
        && !matches!(window, Window::Region(_))
    {
        render::attachment::note_window_ignored(&mut attachment.output);
    }
    result
}

/// What a file's content is, in a few words, for refusals.
fn content_name(content: &Content) -> String {
    match content {
        Content::Text(_) => "text".to_string(),
        Content::Image(kind) => format!("a {} image", kind.name()),
        Content::Pdf => "a PDF".to_string(),
        Content::Document(kind) => format!("a {}", kind.description()),
        Content::Binary { description, .. } => format!("binary ({description})"),
    }
}

/// Block mode asked of a file that is not text: what the file is, and how to read it instead.
fn block_needs_text(target: &Target<'_>, content: &Content) -> ReadError {
    let (what, hint) = match content {
        Content::Image(kind) => {
            (format!("a {} image", kind.name()), "remove `mode` and `anchor_line` to get the image as an attachment")
        }
        Content::Pdf => {
            ("a PDF".to_string(), "remove `mode` and `anchor_line`, and read its text by pages, e.g. pages=\"1-3\"")
        }
        Content::Document(kind) => {
            (format!("a {}", kind.description()), "remove `mode` and `anchor_line` to read its converted text by lines")
        }
        Content::Binary { description, .. } => (
            format!("binary ({description})"),
            "remove `mode` and `anchor_line`; if it really is text in a legacy encoding, add encoding=\"<label>\"",
        ),
        Content::Text(_) => ("text".to_string(), "remove `mode` and `anchor_line`"),
    };
    ReadError::invalid_param(format!(
        "{} is {what}; block mode (`mode` \"block\") applies to text files only",
        target.shown
    ))
    .with_hint(hint)
}

/// The hint for a format this build was compiled without.
#[allow(dead_code)] // Used only in builds without some media feature.
fn without_feature(feature: &str) -> String {
    format!("this build of agent-read cannot show it (built without the `{feature}` feature)")
}

fn binary_error(target: &Target<'_>, description: &str, hint: Option<String>) -> ReadError {
    let size = human_size(target.metadata.len());
    ReadError::new(ErrorCode::Binary, format!("{}: {description} ({size}); not shown as text", target.shown)).with_hint(
        hint.unwrap_or_else(|| {
            "binary content cannot be read as text; if it really is text in a legacy encoding, retry with encoding=\"<label>\"".to_string()
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    #[test]
    fn reading_forward_fills_from_the_start_and_leaves_the_handle_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let mut file = File::open(&path).unwrap();
        file.seek(SeekFrom::Start(5)).unwrap();
        assert_eq!(read_forward(&file, 64).unwrap(), b"one\ntwo\n");
        // A road that reads the file forward after it (a document's bytes, a PDF worker's input) gets all of it.
        let mut rest = String::new();
        file.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "one\ntwo\n");
    }
}
