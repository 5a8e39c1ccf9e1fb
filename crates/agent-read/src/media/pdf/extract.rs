//! Extraction itself, wherever it runs: the PDF's bytes read from the open file, loaded by lopdf, its textless streams
//! emptied, then the chosen pages walked in order — each checked by the guards first, its text gathered — until the
//! text reaches `max_chars`.

use super::guard::Guard;
use super::lazy::{Lazily, Lazy};
use super::measure::probe_raw_streams;
use super::stop::Stop;
use super::text::{PageView, page_text};
use super::xref::read_index;
use super::{Extracted, MAX_PDF_BYTES, PageSelection, PageText, PdfError, file_too_large, shorten};
use crate::media::child::read_whole;
use lopdf::{Dictionary, Document, Object, ObjectId};
use std::collections::BTreeMap;
use std::fs::File;

/// Reads the whole PDF from the start of `file` without moving its offset (or, for a pipe, from where it is).
pub(super) fn read_pdf(file: &File, stop: &Stop) -> Result<Vec<u8>, PdfError> {
    let expected = file.metadata().map_err(PdfError::Io)?.len();
    if expected > MAX_PDF_BYTES {
        return Err(file_too_large(expected));
    }
    let data = read_whole(file, MAX_PDF_BYTES, || stop.check())?;
    if data.len() as u64 > MAX_PDF_BYTES {
        return Err(file_too_large(data.len() as u64));
    }
    Ok(data)
}

/// Where extraction runs: what bounds its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Host {
    /// A thread of the caller's process: nothing but these checks bounds it, so the raw file is probed for bombs
    /// before loading, and content too large to parse is refused.
    Thread,
    /// The worker process, under its own memory limit.
    Worker,
}

/// Extracts the chosen pages of the PDF in `data`: loaded an object at a time when its cross-reference data reads
/// plainly (`lazy`), whole by lopdf otherwise.
pub(super) fn extract_bytes(
    data: &[u8],
    selection: &PageSelection,
    max_chars: usize,
    stop: &Stop,
    host: Host,
) -> Result<Extracted, PdfError> {
    let Some(header) = memchr::memmem::find(data, b"%PDF-") else {
        return Err(PdfError::Malformed("it has no %PDF- header, so it is not a PDF".to_string()));
    };
    if host == Host::Thread {
        probe_raw_streams(data, stop)?;
    }
    let from_header = &data[header..];
    if let Some(index) = read_index(from_header, stop)? {
        let lazily = Lazy::open(from_header, index, stop).and_then(|(lazy, doc)| {
            let mut pages = Pages::Lazy(Box::new(lazy));
            extract_pages(doc, &mut pages, selection, max_chars, stop)
        });
        match lazily {
            Ok(extracted) => return Ok(extracted),
            Err(Lazily::Failed(err)) => return Err(err),
            Err(Lazily::GiveUp) => {}
        }
    }
    let mut doc = Document::load_mem(data).map_err(load_error)?;
    if doc.trailer.get(b"Encrypt").is_ok() {
        return Err(PdfError::Encrypted);
    }
    stop.check()?;
    for object in doc.objects.values_mut() {
        empty_if_textless(object);
    }
    let mut pages = Pages::Listed(doc.get_pages());
    extract_pages(doc, &mut pages, selection, max_chars, stop).map_err(|err| match err {
        Lazily::Failed(err) => err,
        Lazily::GiveUp => PdfError::Malformed("its structure could not be followed".to_string()),
    })
}

/// The pages of a document: listed by lopdf from a whole document, or found in one loaded as needed.
enum Pages<'a> {
    Listed(BTreeMap<u32, ObjectId>),
    Lazy(Box<Lazy<'a>>),
}

impl Pages<'_> {
    fn count(&self) -> u32 {
        match self {
            Pages::Listed(pages) => u32::try_from(pages.len()).unwrap_or(u32::MAX),
            Pages::Lazy(lazy) => lazy.page_count(),
        }
    }

    /// The page `number`, with what extracting it reads loaded.
    fn page(&mut self, doc: &mut Document, number: u32, stop: &Stop) -> Result<Option<ObjectId>, Lazily> {
        match self {
            Pages::Listed(pages) => Ok(pages.get(&number).copied()),
            Pages::Lazy(lazy) => {
                let page_id = lazy.find(doc, number, stop)?;
                lazy.prepare(doc, page_id, stop)?;
                Ok(Some(page_id))
            }
        }
    }
}

/// Walks the chosen pages in order — each checked by the guards, its text gathered — until the text reaches
/// `max_chars`.
fn extract_pages(
    mut doc: Document,
    pages_of: &mut Pages<'_>,
    selection: &PageSelection,
    max_chars: usize,
    stop: &Stop,
) -> Result<Extracted, Lazily> {
    let page_count = pages_of.count();
    if page_count == 0 {
        return Err(PdfError::Malformed("it has no pages (its page tree is missing or broken)".to_string()).into());
    }
    let view = PageView::install(&mut doc)?;
    let mut guard = Guard::new();
    let mut pages = Vec::new();
    let mut gathered = 0usize;
    let mut complete = true;
    for number in selection.pages(page_count) {
        if !pages.is_empty() && gathered >= max_chars {
            complete = false;
            break;
        }
        stop.check()?;
        let Some(page_id) = pages_of.page(&mut doc, number, stop)? else { continue };
        guard.check_page(&doc, number, page_id, stop)?;
        let page = page_text(&mut doc, &view, page_id, max_chars, stop)?;
        gathered = gathered.saturating_add(page.text.chars().count());
        let cut = page.cut;
        pages.push(PageText { number, text: page.text, cut, capped: page.capped, skipped: page.skipped });
        if cut {
            complete = false;
            break;
        }
    }
    Ok(Extracted { page_count, pages, complete })
}

/// What a lopdf loading error means.
fn load_error(err: lopdf::Error) -> PdfError {
    match err {
        lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword | lopdf::Error::UnsupportedSecurityHandler(_) => {
            PdfError::Encrypted
        }
        other => PdfError::Malformed(shorten(&other.to_string())),
    }
}

/// Empties a stream that holds no text — an image, an embedded file, metadata, an object or cross-reference stream
/// already unpacked — so nothing inflates it (pdf-extract reads an image it meets as page content).
pub(super) fn empty_if_textless(object: &mut Object) {
    if let Object::Stream(stream) = object {
        let textless = name_is(&stream.dict, b"Subtype", b"Image")
            || [&b"EmbeddedFile"[..], b"Metadata", b"ObjStm", b"XRef"]
                .iter()
                .any(|kind| name_is(&stream.dict, b"Type", kind));
        if textless {
            stream.set_plain_content(Vec::new());
        }
    }
}

/// Whether `dict[key]` is the name `name`.
fn name_is(dict: &Dictionary, key: &[u8], name: &[u8]) -> bool {
    dict.get(key).and_then(Object::as_name).is_ok_and(|found| found == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Cancel;
    use crate::media::child::testing::as_file;
    use crate::media::pdf::fixtures::{Fixture, encrypted, numbered, run_bytes, show, texts, zeros_zlib};
    use crate::media::pdf::{Isolation, extract};
    use lopdf::{Stream, dictionary};
    use std::time::{Duration, Instant};

    #[test]
    fn extracts_only_the_chosen_pages_with_their_exact_text() {
        let extracted = run_bytes(&numbered(6), "2,4-5", 100_000).unwrap();
        assert_eq!(extracted.page_count, 6);
        assert!(extracted.complete);
        assert_eq!(texts(&extracted), [(2, "Page 2 text"), (4, "Page 4 text"), (5, "Page 5 text")]);
    }

    #[test]
    fn stops_after_the_page_that_crosses_max_chars() {
        let extracted = run_bytes(&numbered(10), "1-", 30).unwrap();
        assert_eq!(extracted.page_count, 10);
        assert!(!extracted.complete);
        // "Page N text" is 11 characters: 11, 22, then 33 crosses 30.
        assert_eq!(texts(&extracted), [(1, "Page 1 text"), (2, "Page 2 text"), (3, "Page 3 text")]);
        let all = run_bytes(&numbered(10), "1-", 10_000).unwrap();
        assert!(all.complete);
        assert_eq!(all.pages.len(), 10);
    }

    #[test]
    fn not_a_pdf_garbage_and_truncation_are_malformed() {
        let not_pdf = run_bytes(b"hello, world\n", "1-", 100).unwrap_err();
        assert!(matches!(&not_pdf, PdfError::Malformed(reason) if reason.contains("%PDF-")), "{not_pdf:?}");
        let mut garbage = b"%PDF-1.7\n".to_vec();
        garbage.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        assert!(matches!(run_bytes(&garbage, "1-", 100), Err(PdfError::Malformed(_))));
        let whole = numbered(20);
        for cut in [whole.len() / 2, whole.len() - 40, 200] {
            let err = run_bytes(&whole[..cut], "1-", 100).unwrap_err();
            assert!(matches!(err, PdfError::Malformed(_)), "cut at {cut}: {err:?}");
        }
        let empty = run_bytes(b"", "1", 100).unwrap_err();
        assert!(matches!(empty, PdfError::Malformed(_)), "{empty:?}");
    }

    #[test]
    fn an_encrypted_pdf_is_refused_unless_the_empty_password_opens_it() {
        let locked = run_bytes(&encrypted("secret"), "1", 100).unwrap_err();
        assert!(matches!(locked, PdfError::Encrypted), "{locked:?}");
        let open = run_bytes(&encrypted(""), "1", 100).unwrap();
        assert_eq!(texts(&open), [(1, "Secret page")]);
    }

    #[test]
    fn images_hold_no_text_and_are_never_inflated() {
        let mut fixture = Fixture::new();
        // 33 MiB of zeros behind 32 KiB of FlateDecode, as an image: skipped, whatever its size.
        let image = fixture.doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1, "Filter" => "FlateDecode" },
            zeros_zlib(130_000),
        ));
        let mut content = b"q /Im1 Do Q ".to_vec();
        content.extend(show("Caption"));
        fixture.page_with(content, dictionary! { "XObject" => dictionary! { "Im1" => image } });
        let bytes = fixture.bytes();
        let selection = PageSelection::all();
        let extracted = extract_bytes(&bytes, &selection, 1000, &Stop::never(), Host::Worker).unwrap();
        assert_eq!(texts(&extracted), [(1, "Caption")]);
    }

    #[test]
    fn extraction_reads_the_file_from_its_start_and_leaves_its_offset_alone() {
        use std::io::{Seek, SeekFrom};
        let mut file = as_file(&numbered(2));
        file.seek(SeekFrom::Start(100)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let extracted = extract(&file, &PageSelection::all(), 100, deadline, &Cancel::new(), &Isolation::thread());
        assert_eq!(texts(&extracted.unwrap()), [(1, "Page 1 text"), (2, "Page 2 text")]);
        assert_eq!(file.stream_position().unwrap(), 100);
    }
}
