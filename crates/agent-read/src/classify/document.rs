//! Documents converted to text: which kind a file is, from its first bytes and its name. A zip container is an Office
//! document when its first part names one (`infer` looks for `word/`, `xl/`, `ppt/`) or, failing that, when its name
//! ends in the document's extension; an HTML page is text whose name says so (converted only in builds with the
//! `documents` feature; without it a page is read as its markup). An OLE container named like an Office
//! Open XML file is one encrypted with a password (Office wraps the encrypted package in OLE).

use super::{Codec, Content};

/// A document kind that is read as its converted text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// Word (Office Open XML).
    Docx,
    /// Excel (Office Open XML).
    Xlsx,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// An HTML page (text in some encoding).
    Html,
}

impl DocumentKind {
    /// Its short name, as `meta.rendered_from` gives it (`docx`, …).
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Read only where documents are converted.
    pub fn name(self) -> &'static str {
        match self {
            DocumentKind::Docx => "docx",
            DocumentKind::Xlsx => "xlsx",
            DocumentKind::Pptx => "pptx",
            DocumentKind::Html => "html",
        }
    }

    /// What one of its units is called (`pages` chooses units), or `None` when it is one flow of text.
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Read only where documents are converted.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            DocumentKind::Xlsx => Some("sheet"),
            DocumentKind::Pptx => Some("slide"),
            DocumentKind::Docx | DocumentKind::Html => None,
        }
    }

    /// How the format is named in the tool's words (`Word document`, …).
    pub fn description(self) -> &'static str {
        match self {
            DocumentKind::Docx => "Word document (DOCX)",
            DocumentKind::Xlsx => "Excel workbook (XLSX)",
            DocumentKind::Pptx => "PowerPoint presentation (PPTX)",
            DocumentKind::Html => "HTML page",
        }
    }

    fn from_extension(extension: &str) -> Option<DocumentKind> {
        match extension.to_ascii_lowercase().as_str() {
            "docx" | "docm" | "dotx" | "dotm" => Some(DocumentKind::Docx),
            "xlsx" | "xlsm" | "xltx" | "xltm" => Some(DocumentKind::Xlsx),
            "pptx" | "pptm" | "potx" | "ppsx" => Some(DocumentKind::Pptx),
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
            match ooxml_by_content(head).or_else(|| DocumentKind::from_extension(extension)) {
                Some(kind) => Content::Document(kind),
                None => content,
            }
        }
        Content::Binary { .. } if head.starts_with(OLE_MAGIC) && DocumentKind::from_extension(extension).is_some() => {
            Content::Binary {
                description: "password-protected Office document (encrypted, in an OLE container)".to_string(),
                hint: Some("its text cannot be read without the password; ask the user for an unprotected copy".into()),
            }
        }
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
    }
}
