//! EPUB → text, one unit per chapter: the package's spine, in its reading order (`META-INF/container.xml` names the
//! package document, whose spine lists the chapters), each chapter's XHTML converted as an HTML page is
//! ([`html`](super::html)). A chapter is titled as the book's table of contents names it (the EPUB 3 navigation
//! document, else the EPUB 2 NCX), else by its first heading, else by its `<title>`.
//!
//! A zip like the Office formats, with the same bounds: entries counted, every part inflated through the part cap. A
//! chapter encrypted by a DRM scheme (listed in `META-INF/encryption.xml`, other than the font obfuscation that
//! EPUB defines) is refused as encrypted.

use super::package::{Package, resolve_target};
use super::xml::{self, attr};
use super::{Check, DocumentError, Out, Outline};
use crate::media::memory::Growing;
use crate::media::pages::PageSelection;
use quick_xml::events::Event;
use std::collections::HashMap;

const MEDIA_TYPE: &str = "application/epub+zip";
const CONTAINER: &str = "META-INF/container.xml";
/// How fonts are obfuscated (not encrypted): the IDPF's algorithm and Adobe's.
const FONT_OBFUSCATION: [&str; 2] = ["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"];

/// Bytes of a chapter's title kept from its first heading: a title names a chapter, it does not hold it.
const MAX_TITLE_BYTES: usize = 400;

/// The chapters of an EPUB, by title. A part the spine lists more than once is read for its title once; the time
/// budget is checked between parts.
pub fn outline(bytes: &[u8], check: Check<'_>) -> Result<Outline, DocumentError> {
    let mut package = Package::open_typed(bytes, MEDIA_TYPE)?;
    let book = Book::read(&mut package)?;
    let mut headings: HashMap<&str, String> = HashMap::new();
    let mut names = Vec::with_capacity(book.chapters.len());
    for chapter in &book.chapters {
        if let Some(title) = book.titles.get(chapter) {
            names.push(title.clone());
            continue;
        }
        if !headings.contains_key(chapter.as_str()) {
            check()?;
            let heading = package.part(chapter)?.map(|xhtml| first_heading(&xhtml)).unwrap_or_default();
            headings.insert(chapter, heading);
        }
        names.push(headings.get(chapter.as_str()).cloned().unwrap_or_default());
    }
    Ok(Outline { about: book.about, ..Outline::named(names) })
}

/// Converts the chosen chapters of an EPUB into `out`, each titled as [`outline`] names it; a chapter's tree is held
/// in `memory` while it is converted.
pub fn convert(
    bytes: &[u8],
    selection: &PageSelection,
    out: &mut Out<'_>,
    check: Check<'_>,
    memory: &mut Growing,
) -> Result<(), DocumentError> {
    let mut package = Package::open_typed(bytes, MEDIA_TYPE)?;
    let book = Book::read(&mut package)?;
    // The book's file, reserved by the read: each chapter's tree is reserved on top of it.
    let base = memory.held();
    let count = u32::try_from(book.chapters.len()).unwrap_or(u32::MAX);
    for number in selection.pages(count) {
        let Some(chapter) = book.chapters.get(number as usize - 1) else { break };
        if out.stopped() {
            break;
        }
        check()?;
        let Some(xhtml) = package.part(chapter)? else {
            out.begin(number, book.titles.get(chapter).map(String::as_str), false);
            out.line("(the chapter's part is missing)");
            continue;
        };
        let title = book.titles.get(chapter).cloned().unwrap_or_else(|| first_heading(&xhtml));
        out.begin(number, Some(&title), false);
        super::html::convert(&String::from_utf8_lossy(&xhtml), out, check, memory, base)?;
    }
    Ok(())
}

/// What the package document says: the chapters' parts in reading order, and their titles from the table of
/// contents.
struct Book {
    chapters: Vec<String>,
    titles: HashMap<String, String>,
    /// What the package document's metadata says of the book, as [`about`] reads it.
    about: Vec<(&'static str, Vec<String>)>,
}

impl Book {
    fn read(package: &mut Package<'_>) -> Result<Book, DocumentError> {
        let container = package.part(CONTAINER)?.ok_or_else(|| missing(CONTAINER))?;
        let opf_path = rootfile(&container)?;
        let opf = package.part(&opf_path)?.ok_or_else(|| missing(&opf_path))?;
        let manifest = Manifest::read(&opf, &opf_path)?;
        let chapters: Vec<String> =
            manifest.spine.iter().filter_map(|id| manifest.items.get(id)).map(|item| item.path.clone()).collect();
        if let Some(encryption) = package.part("META-INF/encryption.xml")? {
            refuse_encrypted_chapters(&encryption, &chapters)?;
        }
        let mut titles = HashMap::new();
        let ncx = manifest.ncx.as_ref().and_then(|id| manifest.items.get(id));
        let toc = manifest.items.values().find(|item| item.nav).or(ncx);
        if let Some(toc) = toc
            && let Some(xml) = package.part(&toc.path)?
        {
            for (target, title) in toc_entries(&xml, &toc.path, toc.nav) {
                titles.entry(target).or_insert(title);
            }
        }
        Ok(Book { chapters, titles, about: about(&opf) })
    }
}

/// The Dublin Core elements of a package's metadata shown in the footer, each with its label there and the most
/// values kept (a book has one title, but may have several authors).
const ABOUT: [(&str, &str, usize); 6] = [
    ("title", "title", 1),
    ("creator", "by", 4),
    ("language", "language", 1),
    ("publisher", "publisher", 1),
    ("date", "date", 1),
    ("identifier", "identifier", 1),
];

/// The label [`about`] gives, as this build spells it: how an outline sent by a worker gets its labels back.
pub(super) fn known_label(label: &str) -> Option<&'static str> {
    ABOUT.iter().map(|(_, known, _)| *known).find(|known| *known == label)
}

/// What the package document's `<metadata>` says of the book: its title, authors, language, publisher, date and
/// identifier as written there (each value on one line, cut as a title is), in [`ABOUT`]'s order; those it does not
/// give are left out. A damaged package document gives what was read before the damage.
fn about(opf: &[u8]) -> Vec<(&'static str, Vec<String>)> {
    let mut reader = xml::reader(opf);
    let mut found: Vec<Vec<String>> = vec![Vec::new(); ABOUT.len()];
    let (mut in_metadata, mut field, mut text) = (false, None::<usize>, String::new());
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) if e.local_name().as_ref() == "metadata" => in_metadata = true,
            Event::End(e) if e.local_name().as_ref() == "metadata" => break,
            Event::Start(e) if in_metadata && field.is_none() => {
                field = ABOUT.iter().position(|(element, ..)| e.local_name().as_ref() == *element);
                text.clear();
            }
            Event::Text(t) if field.is_some() => push_capped(&mut text, &xml::text(&t)),
            Event::GeneralRef(r) if field.is_some() => push_capped(&mut text, &xml::reference(&r)),
            Event::End(e) if field.is_some_and(|at| e.local_name().as_ref() == ABOUT[at].0) => {
                let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
                if let Some(at) = field.take()
                    && !value.is_empty()
                    && found[at].len() < ABOUT[at].2
                {
                    found[at].push(value);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    (ABOUT.iter().zip(found))
        .filter(|(_, values)| !values.is_empty())
        .map(|((_, label, _), values)| (*label, values))
        .collect()
}

/// An item of the package's manifest.
struct Item {
    /// Its part in the zip (resolved against the package document's folder, percent-decoded).
    path: String,
    /// It is the EPUB 3 navigation document.
    nav: bool,
}

/// The package document's manifest and spine.
struct Manifest {
    items: HashMap<String, Item>,
    spine: Vec<String>,
    /// The manifest id of the EPUB 2 NCX, when the spine names one.
    ncx: Option<String>,
}

impl Manifest {
    fn read(opf: &[u8], opf_path: &str) -> Result<Manifest, DocumentError> {
        let mut reader = xml::reader(opf);
        let (mut items, mut spine, mut ncx) = (HashMap::new(), Vec::new(), None);
        loop {
            match reader.read_event().map_err(|e| xml::damaged(opf_path, &e))? {
                Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                    "item" => {
                        if let (Some(id), Some(href)) = (attr(&e, "id"), attr(&e, "href")) {
                            let nav = attr(&e, "properties").is_some_and(|p| p.split_whitespace().any(|p| p == "nav"));
                            items.insert(id, Item { path: part_path(opf_path, &href), nav });
                        }
                    }
                    "spine" => ncx = attr(&e, "toc"),
                    "itemref" => spine.extend(attr(&e, "idref")),
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(Manifest { items, spine, ncx })
    }
}

/// The package document's path, from `META-INF/container.xml`.
fn rootfile(container: &[u8]) -> Result<String, DocumentError> {
    let mut reader = xml::reader(container);
    loop {
        match reader.read_event().map_err(|e| xml::damaged(CONTAINER, &e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "rootfile" => {
                if let Some(path) = attr(&e, "full-path") {
                    return Ok(path);
                }
            }
            Event::Eof => return Err(DocumentError::Damaged(format!("{CONTAINER} names no package document"))),
            _ => {}
        }
    }
}

/// The zip path of `href` (percent-encoded, maybe with a fragment) relative to the part `base`.
fn part_path(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or_default();
    let decoded = percent_encoding::percent_decode_str(href).decode_utf8_lossy();
    resolve_target(base, &decoded)
}

/// The entries of a table of contents: each target part and its title, in the book's order. `nav`: an EPUB 3
/// navigation document (the `a` elements inside its `toc` nav), else an EPUB 2 NCX (each `navPoint`'s label and
/// `content`). A damaged table of contents gives the entries read before the damage.
fn toc_entries(xml: &[u8], path: &str, nav: bool) -> Vec<(String, String)> {
    let mut reader = xml::reader(xml);
    let mut entries = Vec::new();
    let (mut in_toc, mut depth) = (!nav, 0usize);
    let (mut text, mut target, mut in_text) = (String::new(), None::<String>, false);
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) if nav && e.local_name().as_ref() == "nav" => {
                depth += 1;
                if attr(&e, "type").is_some_and(|t| t.split_whitespace().any(|t| t == "toc")) {
                    in_toc = true;
                }
            }
            Event::End(e) if nav && e.local_name().as_ref() == "nav" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    in_toc = false;
                }
            }
            Event::Start(e) if in_toc && nav && e.local_name().as_ref() == "a" => {
                (target, in_text) = (attr(&e, "href").map(|href| part_path(path, &href)), true);
                text.clear();
            }
            Event::End(e) if in_toc && nav && e.local_name().as_ref() == "a" => {
                in_text = false;
                push_entry(&mut entries, target.take(), &text);
            }
            Event::Start(e) if !nav && e.local_name().as_ref() == "text" => {
                in_text = true;
                text.clear();
            }
            Event::End(e) if !nav && e.local_name().as_ref() == "text" => in_text = false,
            Event::Start(e) | Event::Empty(e) if !nav && e.local_name().as_ref() == "content" => {
                push_entry(&mut entries, attr(&e, "src").map(|src| part_path(path, &src)), &text);
            }
            Event::Text(t) if in_text => text.push_str(&xml::text(&t)),
            Event::GeneralRef(r) if in_text => text.push_str(&xml::reference(&r)),
            Event::Eof => break,
            _ => {}
        }
    }
    entries
}

fn push_entry(entries: &mut Vec<(String, String)>, target: Option<String>, text: &str) {
    let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(target) = target.filter(|_| !title.is_empty()) {
        entries.push((target, title));
    }
}

/// A chapter's first heading (`h1`–`h6`), else its `<title>`, as one line; empty when it has neither.
fn first_heading(xhtml: &[u8]) -> String {
    let mut reader = xml::reader(xhtml);
    let (mut title, mut text, mut inside) = (String::new(), String::new(), None::<String>);
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_ascii_lowercase();
                if inside.is_none() && (name == "title" || is_heading(&name)) {
                    (inside, text) = (Some(name), String::new());
                }
            }
            Event::Text(t) if inside.is_some() => push_capped(&mut text, &xml::text(&t)),
            Event::GeneralRef(r) if inside.is_some() => push_capped(&mut text, &xml::reference(&r)),
            Event::End(e) if inside.as_deref() == Some(&e.local_name().as_ref().to_ascii_lowercase()) => {
                let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
                match inside.take() {
                    Some(name) if is_heading(&name) && !line.is_empty() => return line,
                    Some(_) if title.is_empty() => title = line,
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    title
}

/// Adds `more` to a title being read, which keeps [`MAX_TITLE_BYTES`] at most (cut at a character, then `…`).
fn push_capped(title: &mut String, more: &str) {
    let mark = '…'.len_utf8();
    let room = MAX_TITLE_BYTES.saturating_sub(title.len());
    if room <= mark {
        return;
    }
    if more.len() <= room {
        title.push_str(more);
        return;
    }
    let mut end = room - mark;
    while !more.is_char_boundary(end) {
        end -= 1;
    }
    title.push_str(&more[..end]);
    title.push('…');
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Refuses a book whose `META-INF/encryption.xml` encrypts one of its chapters (font obfuscation is not encryption).
fn refuse_encrypted_chapters(encryption: &[u8], chapters: &[String]) -> Result<(), DocumentError> {
    let chapters: std::collections::HashSet<&str> = chapters.iter().map(String::as_str).collect();
    let mut reader = xml::reader(encryption);
    let mut obfuscation = false;
    loop {
        match reader.read_event().map_err(|e| xml::damaged("META-INF/encryption.xml", &e))? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                "EncryptedData" => obfuscation = false,
                "EncryptionMethod" => {
                    obfuscation = attr(&e, "Algorithm").is_some_and(|a| FONT_OBFUSCATION.contains(&a.as_str()));
                }
                "CipherReference" if !obfuscation => {
                    let uri = attr(&e, "URI").unwrap_or_default();
                    if chapters.contains(part_path("", &uri).as_str()) {
                        return Err(DocumentError::Encrypted);
                    }
                }
                _ => {}
            },
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

fn missing(part: &str) -> DocumentError {
    DocumentError::Damaged(format!("no {part}: this zip is not an EPUB book"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_against_their_part_percent_decoded_without_fragment() {
        assert_eq!(part_path("OEBPS/content.opf", "text/chapter%201.xhtml#start"), "OEBPS/text/chapter 1.xhtml");
        assert_eq!(part_path("OEBPS/nav/toc.xhtml", "../ch2.xhtml"), "OEBPS/ch2.xhtml");
    }

    #[test]
    fn a_chapter_is_titled_by_its_first_heading_else_its_title() {
        let page = b"<html><head><title>Page</title></head><body><p>x</p><h2>Second <em>part</em></h2></body></html>";
        assert_eq!(first_heading(page), "Second part");
        assert_eq!(first_heading(b"<html><head><title> Only  title </title></head><body/></html>"), "Only title");
        let long = format!("<html><body><h1>{}</h1></body></html>", "word ".repeat(1 << 20));
        let title = first_heading(long.as_bytes());
        assert!(title.len() <= MAX_TITLE_BYTES && title.ends_with('…'), "{} bytes", title.len());
    }

    #[test]
    fn a_chapter_the_spine_lists_many_times_is_read_once_for_its_title_within_the_time_budget() {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        let mut add = |name: &str, text: &str| {
            zip.start_file(name, options).unwrap();
            std::io::Write::write_all(&mut zip, text.as_bytes()).unwrap();
        };
        add("mimetype", MEDIA_TYPE);
        add(CONTAINER, r#"<container><rootfiles><rootfile full-path="book.opf"/></rootfiles></container>"#);
        let spine = r#"<itemref idref="c"/>"#.repeat(2000);
        add(
            "book.opf",
            &format!(
                r#"<package><manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest>
            <spine>{spine}</spine></package>"#
            ),
        );
        add("c.xhtml", "<html><body><h1>Only</h1><p>text</p></body></html>");
        let book = zip.finish().unwrap().into_inner();
        let mut checks = 0;
        let outline = outline(&book, &mut || {
            checks += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((outline.unit_count, outline.names[1999].as_str(), checks), (2000, "Only", 1));
    }

    #[test]
    fn the_metadata_gives_title_authors_and_the_rest_in_order_each_on_one_line() {
        let opf = br#"<package xmlns:dc="http://purl.org/dc/elements/1.1/"><metadata>
            <dc:identifier id="uid">urn:isbn:9780000000001</dc:identifier><dc:title>Field
              Guide</dc:title><dc:title>A subtitle</dc:title><dc:language>en</dc:language>
            <dc:creator>Ada Lovelace</dc:creator><dc:creator>Bob &amp; Co</dc:creator><dc:creator>  </dc:creator>
            <dc:creator>C</dc:creator><dc:creator>D</dc:creator><dc:creator>E</dc:creator>
            <meta property="dcterms:modified">2026-01-01T00:00:00Z</meta></metadata>
            <manifest><item id="title" href="t.xhtml"/></manifest></package>"#;
        let by = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        assert_eq!(
            about(opf),
            [
                ("title", by(&["Field Guide"])),
                ("by", by(&["Ada Lovelace", "Bob & Co", "C", "D"])),
                ("language", by(&["en"])),
                ("identifier", by(&["urn:isbn:9780000000001"])),
            ]
        );
        assert_eq!(about(b"<package><manifest/></package>"), []);
        let long = format!("<package><metadata><dc:title>{}</dc:title></metadata></package>", "word ".repeat(1 << 20));
        let title = &about(long.as_bytes())[0].1[0];
        assert!(title.len() <= MAX_TITLE_BYTES && title.ends_with('…'), "{} bytes", title.len());
    }

    #[test]
    fn a_table_of_contents_gives_titles_by_part() {
        let nav = br#"<html xmlns:epub="e"><body><nav epub:type="landmarks"><ol><li><a href="x.xhtml">Skip</a></li></ol></nav>
            <nav epub:type="toc"><ol><li><a href="c1.xhtml#a">One</a><ol><li><a href="c1.xhtml#b">Sub</a></li></ol></li>
            <li><a href="c2.xhtml">Two</a></li></ol></nav></body></html>"#;
        let entries = toc_entries(nav, "OEBPS/nav.xhtml", true);
        assert_eq!(entries[0], ("OEBPS/c1.xhtml".to_string(), "One".to_string()));
        assert_eq!(entries.len(), 3);
        let ncx = br#"<ncx><navMap><navPoint><navLabel><text>First</text></navLabel><content src="a.html"/></navPoint></navMap></ncx>"#;
        assert_eq!(toc_entries(ncx, "toc.ncx", false), [("a.html".to_string(), "First".to_string())]);
    }
}
