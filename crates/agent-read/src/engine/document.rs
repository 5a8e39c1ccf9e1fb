//! Documents as text (DOCX, XLSX, PPTX, HTML): converted in memory, then windowed by lines like any text, so the
//! footer's next call, the output cap and the time budget work as for a file. A workbook's sheets and a
//! presentation's slides are units, chosen with `pages` and rendered each under a `── sheet N of T: name ──` header
//! with its text behind the [gutter](crate::render::GUTTER) (a cell cannot print a header of its own); a document
//! without units is its converted text alone. Byte ranges address the raw file: an HTML page's markup, while a zip
//! container has no text to show by bytes.

use super::file::FileRequest;
use super::target::Target;
use super::text::{self, Rendering};
use crate::classify::document::DocumentKind;
use crate::classify::{self, Content, EncodingSource, TextFormat, codec::DecodeLimit};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::media::document::{self, DocumentError, MAX_FILE_BYTES};
use crate::media::pages::PageSelection;
use crate::render::document::{Conversion, UnitView};
use crate::render::{self, human_size};
use crate::request::Window;
use crate::result::{ReadResult, TextMeta};
use std::io::Read;

/// Characters of converted text at most for one read (the chosen units, bounded).
const MAX_CONVERTED_CHARS: usize = 16 * 1024 * 1024;

/// Reads a document as its converted text.
pub fn read(
    target: &Target<'_>,
    kind: DocumentKind,
    request: FileRequest<'_>,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    if matches!(request.window, Window::Bytes { .. }) {
        return read_raw_bytes(target, kind, request, limits);
    }
    let selection = selection(target, kind, request.pages)?;
    let size = target.metadata.len();
    if size > MAX_FILE_BYTES {
        return Err(ReadError::new(
            ErrorCode::TooLarge,
            format!(
                "{}: {} is over the {} a document may have to be converted",
                target.shown,
                human_size(size),
                human_size(MAX_FILE_BYTES)
            ),
        )
        .with_hint("ask the user for a smaller export (e.g. one sheet as CSV), or skip this file"));
    }
    let mut bytes = Vec::new();
    target.file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).map_err(|e| ReadError::from_io(&e, &target.shown))?;
    if kind == DocumentKind::Html {
        bytes = decode_page(target.head, bytes);
    }
    let converted = document::convert(kind, &bytes, &selection, MAX_CONVERTED_CHARS, &mut || target.budget.check())
        .map_err(|error| document_error(target, kind, error, limits))?;
    drop(bytes);
    if request.pages.is_some()
        && let Some(missing) = selection.first_missing(converted.unit_count)
    {
        return Err(past_end(target, kind, missing, converted.unit_count));
    }
    let chosen: Vec<u32> = converted.units.iter().map(|unit| unit.number).collect();
    let spec = crate::render::spec_of(&chosen);
    let meta = TextMeta {
        rendered_from: Some(kind.name()),
        page_count: kind.unit().map(|_| converted.unit_count),
        pages_shown: kind.unit().map(|_| spec.clone()),
        ..text::base_meta(target, &utf8())
    };
    let conversion = Conversion {
        description: kind.description(),
        unit: kind.unit(),
        units: (converted.units.iter())
            .map(|u| UnitView { number: u.number, title: u.title.as_deref(), text: &u.text })
            .collect(),
        unit_count: converted.unit_count,
        names: &converted.names,
        complete: converted.complete,
        max_bytes: MAX_CONVERTED_CHARS as u64,
    };
    let rendering = Rendering {
        notices: render::document::notices(&conversion),
        call_prefix: request.pages.map(|_| format!("pages={spec} ")).unwrap_or_default(),
        page_header: kind.unit().map(render::document::unit_header_start),
        streamed: false,
    };
    let text = render::document::render(&conversion);
    text::read_rendered(&text, request.window, meta, limits, &target.budget, &rendering).map(ReadResult::Text)
}

/// The units `pages` chooses; `pages` of a document without units is refused.
fn selection(target: &Target<'_>, kind: DocumentKind, pages: Option<&str>) -> Result<PageSelection, ReadError> {
    let Some(spec) = pages else { return Ok(PageSelection::all()) };
    if kind.unit().is_none() {
        return Err(ReadError::invalid_param(format!(
            "{}: `pages` chooses pages of a PDF, sheets of a workbook and slides of a presentation; a {} is one flow of text",
            target.shown,
            kind.description()
        ))
        .with_hint("remove `pages`; page through its text with offset and limit"));
    }
    PageSelection::parse(spec)
        .map_err(|message| ReadError::invalid_param(message).with_hint(r#"send pages as "3", "1-5", "2,4-6" or "8-""#))
}

fn utf8() -> TextFormat {
    TextFormat { codec: classify::Codec::Whatwg(encoding_rs::UTF_8), source: EncodingSource::Detected, bom_len: 0 }
}

/// An HTML page's bytes as UTF-8, decoded from the encoding its head was found in.
fn decode_page(head: &[u8], bytes: Vec<u8>) -> Vec<u8> {
    let Content::Text(format) = classify::classify(head, None) else { return bytes };
    let text = bytes.get(format.bom_len..).unwrap_or_default();
    format.codec.decode(text, DecodeLimit::NONE, true).text.into_bytes()
}

/// A byte range of a document: an HTML page's markup; a zip container's bytes are refused, with the way to its text.
fn read_raw_bytes(
    target: &Target<'_>,
    kind: DocumentKind,
    request: FileRequest<'_>,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let Content::Text(format) = classify::classify(target.head, None) else {
        return Err(ReadError::new(
            ErrorCode::Binary,
            format!(
                "{}: a {} is a zip container; byte ranges address its raw bytes, which are not text",
                target.shown,
                kind.description()
            ),
        )
        .with_hint("remove start_byte/end_byte to read its converted text (offset/limit page through it)"));
    };
    let rendering = Rendering {
        notices: vec!["byte ranges address the raw markup; remove start_byte/end_byte for the page's text".to_string()],
        ..Rendering::default()
    };
    text::read(target, &format, request.window, limits, &rendering).map(ReadResult::Text)
}

fn past_end(target: &Target<'_>, kind: DocumentKind, missing: u32, count: u32) -> ReadError {
    let unit = kind.unit().unwrap_or("page");
    ReadError::invalid_range(format!("{unit} {missing} is past the end: {} has {count} {unit}(s)", target.shown))
        .with_hint(format!("choose {unit}s between 1 and {count}, e.g. pages=\"1-{count}\""))
}

fn document_error(target: &Target<'_>, kind: DocumentKind, error: DocumentError, limits: &Limits) -> ReadError {
    let shown = &target.shown;
    let what = kind.description();
    match error {
        DocumentError::Damaged(reason) => ReadError::new(
            ErrorCode::Binary,
            format!("{shown}: {what} that cannot be read: {reason}"),
        )
        .with_hint(
            "the file is damaged, truncated or not what its name says; ask the user for a fresh copy; do not retry it",
        ),
        DocumentError::Encrypted => {
            ReadError::new(ErrorCode::Binary, format!("{shown}: {what} encrypted with a password"))
                .with_hint("its text cannot be read without the password; ask the user for an unprotected copy")
        }
        DocumentError::TooLarge(reason) => {
            ReadError::new(ErrorCode::TooLarge, format!("{shown}: {what} too large to convert: {reason}"))
                .with_hint("skip this file, or ask the user for a smaller export")
        }
        DocumentError::Stopped(error) if error.kind() == std::io::ErrorKind::TimedOut => ReadError::new(
            ErrorCode::Timeout,
            format!("{shown}: converting the {what} ran past the {} s time budget", limits.timeout_ms as f64 / 1000.0),
        )
        .with_hint(match kind.unit() {
            Some(unit) => format!("choose fewer {unit}s at once, e.g. pages=\"1\""),
            None => "skip this file, or ask the user for a smaller export".to_string(),
        }),
        DocumentError::Stopped(error) => ReadError::from_io(&error, shown),
    }
}
