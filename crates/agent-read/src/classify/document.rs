//! Documents converted to text: which kind a file is, from its first bytes and its name.
//!
//! - A zip is an OpenDocument text or spreadsheet, or an EPUB book, when its first entry is the stored `mimetype`
//!   part naming one (as both standards require); an Office Open XML document when its first parts name one (`infer`
//!   looks for `word/`, `xl/`, `ppt/`); failing those, when its name ends in the document's extension. Any other zip is
//!   left as it is.
//! - An OLE compound file is an Excel 97-2003 workbook (XLS) when its directory holds a `Workbook` (or `Book`) stream;
//!   an Office Open XML file encrypted with a password when it holds the encrypted package; a Word or PowerPoint
//!   97-2003 file is named as such and stays binary. When the directory lies beyond the first bytes, the name decides.
//! - An HTML page is text whose name says so (converted only in builds with the `documents` feature; without it a page
//!   is read as its markup).

use super::{Codec, Content};

/// A document kind that is read as its converted text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// Word (Office Open XML).
    Docx,
    /// OpenDocument text.
    Odt,
    /// Excel (Office Open XML).
    Xlsx,
    /// Excel 97-2003 (BIFF in an OLE compound file).
    Xls,
    /// OpenDocument spreadsheet.
    Ods,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// An EPUB book.
    Epub,
    /// An HTML page (text in some encoding).
    Html,
}

impl DocumentKind {
    /// The kind of this [name](DocumentKind::name), as a worker is told it.
    #[cfg(feature = "documents")]
    pub fn from_name(name: &str) -> Option<DocumentKind> {
        use DocumentKind::*;
        [Docx, Odt, Xlsx, Xls, Ods, Pptx, Epub, Html].into_iter().find(|kind| kind.name() == name)
    }

    /// Its short name, as `meta.rendered_from` gives it (`docx`, …).
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Read only where documents are converted.
    pub fn name(self) -> &'static str {
        match self {
            DocumentKind::Docx => "docx",
            DocumentKind::Odt => "odt",
            DocumentKind::Xlsx => "xlsx",
            DocumentKind::Xls => "xls",
            DocumentKind::Ods => "ods",
            DocumentKind::Pptx => "pptx",
            DocumentKind::Epub => "epub",
            DocumentKind::Html => "html",
        }
    }

    /// What one of its units is called (`pages` chooses units), or `None` when it is one flow of text.
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Read only where documents are converted.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            DocumentKind::Xlsx | DocumentKind::Xls | DocumentKind::Ods => Some("sheet"),
            DocumentKind::Pptx => Some("slide"),
            DocumentKind::Epub => Some("chapter"),
            DocumentKind::Docx | DocumentKind::Odt | DocumentKind::Html => None,
        }
    }

    /// How the format is named in the tool's words (`Word document`, …).
    pub fn description(self) -> &'static str {
        match self {
            DocumentKind::Docx => "Word document (DOCX)",
            DocumentKind::Odt => "OpenDocument text (ODT)",
            DocumentKind::Xlsx => "Excel workbook (XLSX)",
            DocumentKind::Xls => "Excel 97-2003 workbook (XLS)",
            DocumentKind::Ods => "OpenDocument spreadsheet (ODS)",
            DocumentKind::Pptx => "PowerPoint presentation (PPTX)",
            DocumentKind::Epub => "EPUB book",
            DocumentKind::Html => "HTML page",
        }
    }

    /// The kind a zip's name gives it.
    fn from_zip_extension(extension: &str) -> Option<DocumentKind> {
        match extension.to_ascii_lowercase().as_str() {
            "docx" | "docm" | "dotx" | "dotm" => Some(DocumentKind::Docx),
            "xlsx" | "xlsm" | "xltx" | "xltm" => Some(DocumentKind::Xlsx),
            "pptx" | "pptm" | "potx" | "ppsx" => Some(DocumentKind::Pptx),
            "odt" => Some(DocumentKind::Odt),
            "ods" => Some(DocumentKind::Ods),
            "epub" => Some(DocumentKind::Epub),
            _ => None,
        }
    }

    /// The kind an OpenDocument or EPUB `mimetype` part names.
    fn from_media_type(media_type: &[u8]) -> Option<DocumentKind> {
        match media_type {
            b"application/vnd.oasis.opendocument.text" => Some(DocumentKind::Odt),
            b"application/vnd.oasis.opendocument.spreadsheet" => Some(DocumentKind::Ods),
            b"application/epub+zip" => Some(DocumentKind::Epub),
            _ => None,
        }
    }
}

/// How a zip file begins.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// How an OLE compound file begins.
const OLE_MAGIC: &[u8] = &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// `content` as classified from `head`, refined by the file's name `shown`: a document read as its text where the
/// bytes and the name agree. A forced encoding asks for the file's own text, so it leaves `content` as it is.
pub fn refine(content: Content, head: &[u8], shown: &str, forced: Option<Codec>) -> Content {
    if forced.is_some() {
        return content;
    }
    let extension = shown.rsplit_once('.').map(|(_, extension)| extension).unwrap_or_default();
    match content {
        // Without the `documents` feature a page stays text: its markup is still worth reading.
        Content::Text(_) if cfg!(feature = "documents") && is_html_name(extension) => {
            Content::Document(DocumentKind::Html)
        }
        Content::Binary { .. } if head.starts_with(ZIP_MAGIC) => {
            let kind = stored_mimetype(head)
                .and_then(DocumentKind::from_media_type)
                .or_else(|| ooxml_by_content(head))
                .or_else(|| DocumentKind::from_zip_extension(extension));
            match kind {
                Some(kind) => Content::Document(kind),
                None => content,
            }
        }
        Content::Binary { .. } if head.starts_with(OLE_MAGIC) => match ole_kind(head, extension) {
            Some(Ole::Workbook) => Content::Document(DocumentKind::Xls),
            Some(Ole::Encrypted) => Content::Binary {
                description: "password-protected Office document (encrypted, in an OLE container)".to_string(),
                hint: Some("its text cannot be read without the password; ask the user for an unprotected copy".into()),
            },
            Some(Ole::Legacy(what)) => Content::Binary {
                description: format!("{what} (the binary 97-2003 format, which is not converted to text)"),
                hint: Some("ask the user for a DOCX, PPTX or PDF export of it; do not retry it".into()),
            },
            None => content,
        },
        other => other,
    }
}

fn is_html_name(extension: &str) -> bool {
    ["html", "htm", "xhtml"].iter().any(|html| extension.eq_ignore_ascii_case(html))
}

/// The Office Open XML kind `infer` tells from a zip's first parts.
fn ooxml_by_content(head: &[u8]) -> Option<DocumentKind> {
    match infer::get(head)?.extension() {
        "docx" => Some(DocumentKind::Docx),
        "xlsx" => Some(DocumentKind::Xlsx),
        "pptx" => Some(DocumentKind::Pptx),
        _ => None,
    }
}

/// The content of a zip's first entry when it is a stored (uncompressed) part named `mimetype`.
fn stored_mimetype(head: &[u8]) -> Option<&[u8]> {
    let u16_at = |at: usize| head.get(at..at + 2).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    let u32_at = |at: usize| head.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let (method, size, name_len, extra_len) = (u16_at(8)?, u32_at(18)?, u16_at(26)?, u16_at(28)?);
    if method != 0 || head.get(30..30 + name_len)? != b"mimetype" {
        return None;
    }
    let start = 30 + name_len + extra_len;
    head.get(start..start + size)
}

/// What an OLE compound file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ole {
    /// An Excel 97-2003 workbook.
    Workbook,
    /// An Office Open XML document encrypted with a password.
    Encrypted,
    /// A Word or PowerPoint 97-2003 file, named in words.
    Legacy(&'static str),
}

/// What the OLE compound file starting with `head` holds: from its directory's streams when the head holds the
/// directory, else from its name.
fn ole_kind(head: &[u8], extension: &str) -> Option<Ole> {
    ole_by_streams(head).or_else(|| match extension.to_ascii_lowercase().as_str() {
        "xls" | "xlt" => Some(Ole::Workbook),
        "doc" | "dot" => Some(Ole::Legacy("Word 97-2003 document (DOC)")),
        "ppt" | "pps" | "pot" => Some(Ole::Legacy("PowerPoint 97-2003 presentation (PPT)")),
        other => DocumentKind::from_zip_extension(other).map(|_| Ole::Encrypted),
    })
}

/// What the streams of the compound file in `head` say it is; `None` when its directory is not within `head`.
#[cfg(feature = "documents")]
fn ole_by_streams(head: &[u8]) -> Option<Ole> {
    let compound = cfb::CompoundFile::open(std::io::Cursor::new(head)).ok()?;
    let names: Vec<String> = compound.read_root_storage().map(|entry| entry.name().to_string()).collect();
    let has = |wanted: &str| names.iter().any(|name| name.eq_ignore_ascii_case(wanted));
    if has("EncryptedPackage") || has("EncryptionInfo") {
        Some(Ole::Encrypted)
    } else if has("Workbook") || has("Book") {
        Some(Ole::Workbook)
    } else if has("WordDocument") {
        Some(Ole::Legacy("Word 97-2003 document (DOC)"))
    } else if has("PowerPoint Document") {
        Some(Ole::Legacy("PowerPoint 97-2003 presentation (PPT)"))
    } else {
        None
    }
}

/// Without the `documents` feature the name alone tells (an XLS is then named and left unread).
#[cfg(not(feature = "documents"))]
fn ole_by_streams(_head: &[u8]) -> Option<Ole> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::classify;

    fn refined(head: &[u8], name: &str) -> Content {
        refine(classify(head, None), head, name, None)
    }

    #[test]
    fn names_and_magic_choose_the_document_kind() {
        let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00rest of a zip";
        assert_eq!(refined(zip, "report.DOCX"), Content::Document(DocumentKind::Docx));
        assert_eq!(refined(zip, "book.xlsx"), Content::Document(DocumentKind::Xlsx));
        assert_eq!(refined(zip, "deck.pptx"), Content::Document(DocumentKind::Pptx));
        assert!(matches!(refined(zip, "data.zip"), Content::Binary { .. }));
        assert_eq!(refined(b"<html><p>hi</p></html>\n", "page.htm"), Content::Document(DocumentKind::Html));
        assert!(matches!(refined(b"<html></html>\n", "page.txt"), Content::Text(_)));
        let forced = Some(Codec::Whatwg(encoding_rs::UTF_8));
        let html = b"<p>x</p>\n";
        assert!(matches!(refine(classify(html, forced), html, "a.html", forced), Content::Text(_)));
    }

    #[test]
    fn an_ole_container_named_like_ooxml_is_encrypted() {
        let mut ole = OLE_MAGIC.to_vec();
        ole.extend_from_slice(&[0; 504]);
        let Content::Binary { description, hint } = refined(&ole, "secret.xlsx") else { panic!("not binary") };
        assert!(description.contains("password-protected"), "{description}");
        assert!(hint.is_some_and(|hint| hint.contains("unprotected copy")));
        assert_eq!(refined(&ole, "old.XLS"), Content::Document(DocumentKind::Xls));
        let Content::Binary { description, .. } = refined(&ole, "memo.doc") else { panic!("not binary") };
        assert!(description.starts_with("Word 97-2003 document (DOC) (the binary"), "{description}");
    }

    #[cfg(feature = "documents")]
    #[test]
    fn a_stored_mimetype_first_names_opendocument_and_epub_whatever_the_name() {
        let zip_with = |media_type: &str| {
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
            zip.start_file("mimetype", stored).unwrap();
            std::io::Write::write_all(&mut zip, media_type.as_bytes()).unwrap();
            zip.start_file("content.xml", zip::write::SimpleFileOptions::default()).unwrap();
            zip.finish().unwrap().into_inner()
        };
        let odt = zip_with("application/vnd.oasis.opendocument.text");
        assert_eq!(refined(&odt, "renamed.zip"), Content::Document(DocumentKind::Odt));
        let ods = zip_with("application/vnd.oasis.opendocument.spreadsheet");
        assert_eq!(refined(&ods, "sheet"), Content::Document(DocumentKind::Ods));
        assert_eq!(refined(&zip_with("application/epub+zip"), "book.zip"), Content::Document(DocumentKind::Epub));
        let other = zip_with("application/vnd.oasis.opendocument.presentation");
        assert!(matches!(refined(&other, "slides.zip"), Content::Binary { .. }));
    }

    #[cfg(feature = "documents")]
    #[test]
    fn an_ole_container_is_told_by_its_streams() {
        let with_stream = |name: &str| {
            let mut compound = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).unwrap();
            std::io::Write::write_all(&mut compound.create_stream(name).unwrap(), b"data").unwrap();
            compound.flush().unwrap();
            compound.into_inner().into_inner()
        };
        assert_eq!(refined(&with_stream("/Workbook"), "export.bin"), Content::Document(DocumentKind::Xls));
        let Content::Binary { description, .. } = refined(&with_stream("/WordDocument"), "letter.xls") else {
            panic!("not binary")
        };
        assert!(description.contains("Word 97-2003"), "{description}");
        let Content::Binary { description, .. } = refined(&with_stream("/EncryptedPackage"), "a.xls") else {
            panic!("not binary")
        };
        assert!(description.contains("password-protected"), "{description}");
    }
}
