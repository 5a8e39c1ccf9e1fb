//! Test fixtures shared by the submodules' tests: PDFs built with lopdf (pages of text, bombs), data for the decoders,
//! and shortcuts to run an extraction.

use super::extract::{Host, extract_bytes};
use super::stop::Stop;
use super::{Extracted, Isolation, PageSelection, PdfError, extract};
use crate::budget::Cancel;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};
use std::fs::File;
use std::io::Write;
use std::time::{Duration, Instant};

/// Builds test PDFs: pages share a Helvetica font (`/F1`) through the page tree's resources.
pub(super) struct Fixture {
    pub(super) doc: Document,
    pages_id: ObjectId,
    pub(super) font: ObjectId,
    kids: Vec<ObjectId>,
}

impl Fixture {
    /// A document with no pages yet, and the font.
    pub(super) fn new() -> Fixture {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        Fixture { doc, pages_id, font, kids: Vec::new() }
    }

    /// A page of these content bytes, with extra resources beside the font.
    pub(super) fn page_with(&mut self, content: Vec<u8>, mut resources: Dictionary) -> ObjectId {
        resources.set("Font", dictionary! { "F1" => self.font });
        let content = self.doc.add_object(Stream::new(dictionary! {}, content));
        let page = self.doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => self.pages_id,
            "Contents" => content,
            "Resources" => resources,
        });
        self.kids.push(page);
        page
    }

    /// A page showing `text`, one line per line.
    pub(super) fn text_page(&mut self, text: &str) -> ObjectId {
        self.page_with(show(text), Dictionary::new())
    }

    /// The PDF, saved.
    pub(super) fn bytes(mut self) -> Vec<u8> {
        let kids: Vec<Object> = self.kids.iter().map(|&id| id.into()).collect();
        let count = kids.len() as i64;
        self.doc.objects.insert(
            self.pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => kids,
                "Count" => count,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        let catalog = self.doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => self.pages_id });
        self.doc.trailer.set("Root", catalog);
        let mut bytes = Vec::new();
        self.doc.save_to(&mut bytes).expect("the fixture saves");
        bytes
    }
}

/// Content that shows `text` in `/F1`, a line per line.
pub(super) fn show(text: &str) -> Vec<u8> {
    let mut ops = String::from("BT /F1 12 Tf 14 TL 72 720 Td");
    for line in text.lines() {
        let escaped = line.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
        ops.push_str(&format!(" ({escaped}) Tj T*"));
    }
    ops.push_str(" ET");
    ops.into_bytes()
}

/// A PDF of one page per entry.
pub(crate) fn pdf_of(pages: &[&str]) -> Vec<u8> {
    let mut fixture = Fixture::new();
    for text in pages {
        fixture.text_page(text);
    }
    fixture.bytes()
}

/// A PDF of `count` pages, page N saying "Page N text".
pub(super) fn numbered(count: u32) -> Vec<u8> {
    let texts: Vec<String> = (1..=count).map(|n| format!("Page {n} text")).collect();
    pdf_of(&texts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Extracts `pages` from `bytes` in this thread, as the thread mode does.
pub(super) fn run_bytes(bytes: &[u8], pages: &str, max_chars: usize) -> Result<Extracted, PdfError> {
    let selection = PageSelection::parse(pages).expect("a valid selection");
    extract_bytes(bytes, &selection, max_chars, &Stop::until(Instant::now() + Duration::from_secs(60)), Host::Thread)
}

/// A temporary file holding `bytes`.
pub(super) fn as_file(bytes: &[u8]) -> File {
    let mut file = tempfile::tempfile().expect("a temporary file");
    file.write_all(bytes).expect("the fixture is written");
    file
}

/// Extracts `pages` from `bytes` through [`extract`] in the thread mode.
pub(super) fn run_thread(bytes: &[u8], pages: &str, max_chars: usize, budget: Duration) -> Result<Extracted, PdfError> {
    let selection = PageSelection::parse(pages).expect("a valid selection");
    let file = as_file(bytes);
    extract(&file, &selection, max_chars, Instant::now() + budget, &Cancel::new(), &Isolation::Thread)
}

/// The pages extracted, as (number, text).
pub(super) fn texts(extracted: &Extracted) -> Vec<(u32, &str)> {
    extracted.pages.iter().map(|page| (page.number, page.text.as_str())).collect()
}

/// A zlib stream of `1 + 258 * copies` zero bytes, about `copies / 4` bytes long: one dynamic Huffman block in
/// which a literal 0 is followed by `copies` length-258, distance-1 copies of two bits each.
pub(super) fn zeros_zlib(copies: u64) -> Vec<u8> {
    #[derive(Default)]
    pub(super) struct BitWriter {
        bytes: Vec<u8>,
        pending: u64,
        count: u32,
    }
    impl BitWriter {
        fn bits(&mut self, value: u64, count: u32) {
            self.pending |= value << self.count;
            self.count += count;
            while self.count >= 8 {
                self.bytes.push(self.pending as u8);
                self.pending >>= 8;
                self.count -= 8;
            }
        }
        /// A Huffman code, most significant bit first.
        fn code(&mut self, code: u64, length: u32) {
            for bit in (0..length).rev() {
                self.bits((code >> bit) & 1, 1);
            }
        }
        fn zeros(&mut self, mut count: u64) {
            while count > 0 && self.count != 0 {
                self.bits(0, 1);
                count -= 1;
            }
            self.bytes.resize(self.bytes.len() + (count / 8) as usize, 0);
            self.bits(0, (count % 8) as u32);
        }
    }
    let mut w = BitWriter::default();
    w.bits(1, 1); // final block
    w.bits(2, 2); // dynamic Huffman codes
    w.bits(29, 5); // 286 literal/length codes
    w.bits(1, 5); // 2 distance codes
    w.bits(14, 4); // 18 code length codes
    for symbol in [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1] {
        w.bits(
            match symbol {
                18 => 1,
                1 | 2 => 2,
                _ => 0,
            },
            3,
        );
    }
    // Code length codes: 18 -> 0, 1 -> 10, 2 -> 11.
    w.code(0b11, 2); // literal 0: length 2
    w.code(0, 1);
    w.bits(127, 7); // literals 1..=138: 0
    w.code(0, 1);
    w.bits(106, 7); // literals 139..=255: 0
    w.code(0b11, 2); // 256 (end of block): length 2
    w.code(0, 1);
    w.bits(17, 7); // 257..=284: 0
    w.code(0b10, 2); // 285 (length 258): length 1
    w.code(0b10, 2); // distance 0: length 1
    w.code(0b10, 2); // distance 1: length 1
    // Literal/length codes: 285 -> 0, 0 -> 10, 256 -> 11; distance codes: 0 -> 0, 1 -> 1.
    w.code(0b10, 2);
    w.zeros(2 * copies);
    w.code(0b11, 2);
    w.bits(0, (8 - w.count % 8) % 8);
    let total = 1 + 258 * copies;
    let adler = ((total % 65521) << 16) | 1;
    let mut zlib = vec![0x78, 0x01];
    zlib.extend_from_slice(&w.bytes);
    zlib.extend_from_slice(&(adler as u32).to_be_bytes());
    zlib
}

/// A PDF whose only page draws text, then (content stream) `bomb` zero bytes compressed with FlateDecode.
pub(super) fn bomb_pdf(copies: u64) -> Vec<u8> {
    let mut fixture = Fixture::new();
    let page = fixture.text_page("Before the bomb");
    let bomb = fixture.doc.add_object(Stream::new(dictionary! { "Filter" => "FlateDecode" }, zeros_zlib(copies)));
    let first = fixture.doc.get_dictionary(page).and_then(|page| page.get(b"Contents")).cloned().expect("contents");
    let page = fixture.doc.get_object_mut(page).and_then(Object::as_dict_mut).expect("the page");
    page.set("Contents", vec![first, bomb.into()]);
    fixture.bytes()
}

/// `content` decoded by lopdf through `filter`.
pub(super) fn lopdf_decoded(filter: &str, content: Vec<u8>) -> Vec<u8> {
    Stream::new(dictionary! { "Filter" => filter }, content).decompressed_content().unwrap()
}

/// `data` compressed by lopdf (zlib).
pub(super) fn zlib(data: &[u8]) -> Vec<u8> {
    let mut stream = Stream::new(dictionary! {}, data.to_vec());
    stream.compress().unwrap();
    stream.content
}

/// `len` bytes of test data: text-like with repeats, plus bytes of every value.
pub(super) fn sample(len: usize) -> Vec<u8> {
    let words = ["stream ", "the ", "quick ", "brown ", "fox ", "BT ", "(x) Tj ", "\n", "\u{e9}t\u{e9} "];
    let mut out = Vec::new();
    let mut seed = 12345u32;
    while out.len() < len {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        if seed.is_multiple_of(7) {
            out.push((seed >> 16) as u8);
        } else {
            out.extend_from_slice(words[(seed >> 16) as usize % words.len()].as_bytes());
        }
    }
    out.truncate(len);
    out
}

/// A PDF written by hand, with a classic cross-reference table, from the bodies of objects 1, 2, … (object 1 is the
/// catalog).
pub(super) fn handmade(objects: &[String]) -> Vec<u8> {
    let mut pdf = b"%PDF-1.5\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (index, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", index + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    let trailer = format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1);
    pdf.extend_from_slice(trailer.as_bytes());
    pdf
}

/// A PDF of `pages` pages, page N saying "Page N text", its page tree balanced with at most `fanout` kids a node
/// (written by hand: quick at any size). `count` gives each node's /Count from its kids' page counts.
pub(super) fn tree_pdf(pages: u32, fanout: usize, count: fn(&[u32]) -> u32) -> Vec<u8> {
    let mut objects = vec![String::new(), "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string()];
    let mut level = Vec::new();
    for page in 1..=pages {
        let content = format!("BT /F1 12 Tf 72 720 Td (Page {page} text) Tj ET");
        objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()));
        let page = format!(
            "<< /Type /Page /Parent PARENT /Resources << /Font << /F1 2 0 R >> >> /Contents {} 0 R >>",
            objects.len()
        );
        objects.push(page);
        level.push((objects.len(), 1u32));
    }
    loop {
        let mut parents = Vec::new();
        for group in level.chunks(fanout) {
            let id = objects.len() + 1;
            let kids: Vec<String> = group.iter().map(|(kid, _)| format!("{kid} 0 R")).collect();
            let counts: Vec<u32> = group.iter().map(|(_, pages)| *pages).collect();
            for (kid, _) in group {
                objects[kid - 1] = objects[kid - 1].replace("/Parent PARENT", &format!("/Parent {id} 0 R"));
            }
            objects.push(format!(
                "<< /Type /Pages /Parent PARENT /Kids [{}] /Count {} /MediaBox [0 0 612 792] >>",
                kids.join(" "),
                count(&counts)
            ));
            parents.push((id, counts.iter().sum()));
        }
        level = parents;
        if level.len() == 1 {
            break;
        }
    }
    let root = level[0].0;
    objects[root - 1] = objects[root - 1].replace("/Parent PARENT ", "");
    objects[0] = format!("<< /Type /Catalog /Pages {root} 0 R >>");
    handmade(&objects)
}
