//! PDF fixtures made with lopdf (or written by hand), shared by every test binary that needs PDFs: the integration
//! tests of both crates, and the library's unit tests, which mount this file in `src/media/pdf/fixtures.rs` (it uses
//! nothing but lopdf and flate2, so it compiles in both places).
#![allow(dead_code)] // Each test binary uses its own share of these.

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat, dictionary};

/// Builds test PDFs: pages share a Helvetica font (`/F1`).
pub struct Fixture {
    /// The document being built.
    pub doc: Document,
    /// The page tree's id.
    pub pages_id: ObjectId,
    /// The shared font.
    pub font: ObjectId,
    /// The pages, in order.
    pub kids: Vec<ObjectId>,
}

impl Fixture {
    /// An empty document with the shared font.
    pub fn new() -> Fixture {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        Fixture { doc, pages_id, font, kids: Vec::new() }
    }

    /// Adds a page drawing `contents`.
    pub fn page(&mut self, contents: Object) -> ObjectId {
        let page = self.doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => self.pages_id,
            "Contents" => contents,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => self.font } },
        });
        self.kids.push(page);
        page
    }

    /// Adds a page of these content bytes, with extra resources beside the font.
    pub fn page_with(&mut self, content: Vec<u8>, mut resources: Dictionary) -> ObjectId {
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

    /// Adds a page showing `text`, one line per line.
    pub fn text_page(&mut self, text: &str) -> ObjectId {
        self.page_with(show(text), Dictionary::new())
    }

    /// The saved PDF.
    pub fn bytes(mut self) -> Vec<u8> {
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
pub fn show(text: &str) -> Vec<u8> {
    let mut ops = String::from("BT /F1 12 Tf 14 TL 72 720 Td");
    for line in text.lines() {
        let escaped = line.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
        ops.push_str(&format!(" ({escaped}) Tj T*"));
    }
    ops.push_str(" ET");
    ops.into_bytes()
}

/// A PDF of one text page per item.
pub fn pdf_of<S: AsRef<str>>(pages: &[S]) -> Vec<u8> {
    let mut fixture = Fixture::new();
    for text in pages {
        fixture.text_page(text.as_ref());
    }
    fixture.bytes()
}

/// A zlib stream of `1 + 258 * copies` zero bytes, about `copies / 4` bytes long (one dynamic Huffman block in which
/// a length-258, distance-1 copy costs two bits).
pub fn zeros_zlib(copies: u64) -> Vec<u8> {
    let mut bits: Vec<(u64, u32)> = vec![(1, 1), (2, 2), (29, 5), (1, 5), (14, 4)];
    for symbol in [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1] {
        bits.push((
            match symbol {
                18 => 1,
                1 | 2 => 2,
                _ => 0,
            },
            3,
        ));
    }
    let code = |code: u64, length: u32| (0..length).rev().map(move |bit| ((code >> bit) & 1, 1));
    let mut header: Vec<(u64, u32)> = Vec::new();
    header.extend(code(0b11, 2));
    header.extend(code(0, 1));
    header.push((127, 7));
    header.extend(code(0, 1));
    header.push((106, 7));
    header.extend(code(0b11, 2));
    header.extend(code(0, 1));
    header.push((17, 7));
    header.extend(code(0b10, 2));
    header.extend(code(0b10, 2));
    header.extend(code(0b10, 2));
    header.extend(code(0b10, 2));
    bits.extend(header);
    let (mut bytes, mut pending, mut count) = (vec![0x78u8, 0x01], 0u64, 0u32);
    let mut put = |bytes: &mut Vec<u8>, value: u64, width: u32| {
        pending |= value << count;
        count += width;
        while count >= 8 {
            bytes.push(pending as u8);
            pending >>= 8;
            count -= 8;
        }
    };
    for (value, width) in bits {
        put(&mut bytes, value, width);
    }
    let mut zeros = 2 * copies;
    while zeros >= 32 {
        put(&mut bytes, 0, 32);
        zeros -= 32;
    }
    put(&mut bytes, 0, zeros as u32);
    put(&mut bytes, 1, 1);
    put(&mut bytes, 1, 1);
    put(&mut bytes, 0, 7);
    let total = 1 + 258 * copies;
    bytes.extend_from_slice(&((((total % 65521) << 16) | 1) as u32).to_be_bytes());
    bytes
}

/// A PDF whose first page opens only with `user_password` (RC4, 128 bits).
pub fn encrypted(user_password: &str) -> Vec<u8> {
    let mut fixture = Fixture::new();
    fixture.text_page("Secret page");
    let id = Object::String(b"0123456789abcdef".to_vec(), StringFormat::Hexadecimal);
    fixture.doc.trailer.set("ID", vec![id.clone(), id]);
    let mut doc = Document::load_mem(&fixture.bytes()).expect("the fixture loads");
    let version = lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password,
        key_length: 128,
        permissions: lopdf::Permissions::all(),
    };
    doc.encrypt(&lopdf::EncryptionState::try_from(version).expect("an encryption state")).expect("encrypts");
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).expect("the encrypted fixture saves");
    bytes
}

/// A PDF written by hand, with a classic cross-reference table, from the bodies of objects 1, 2, … (object 1 is the
/// catalog).
pub fn handmade<B: AsRef<[u8]>>(objects: &[B]) -> Vec<u8> {
    let mut pdf = b"%PDF-1.5\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (index, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n", index + 1).as_bytes());
        pdf.extend_from_slice(body.as_ref());
        pdf.extend_from_slice(b"\nendobj\n");
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

/// The body of a stream object: `dict`'s entries, its length, and `data`.
pub fn stream_object(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(b"\nendstream");
    body
}

/// The text of page `page` of [`long_pdf`].
pub fn long_pdf_text(page: u32) -> String {
    format!("Page {page} text")
}

/// A PDF of `pages` pages, page N showing [`long_pdf_text`]`(N)`, all of them kids of one page tree node (the shape
/// that makes a long document costliest to walk). Written directly, without lopdf, so that it is quick at any size.
pub fn long_pdf(pages: u32) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        Vec::new(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    let mut kids = String::new();
    for page in 1..=pages {
        let content = format!("BT /F1 12 Tf 72 720 Td ({}) Tj ET", long_pdf_text(page));
        objects.push(stream_object("", content.as_bytes()));
        let page_object = format!(
            "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            objects.len()
        );
        objects.push(page_object.into_bytes());
        kids.push_str(&format!("{} 0 R ", objects.len()));
    }
    objects[1] = format!("<< /Type /Pages /Kids [{kids}] /Count {pages} /MediaBox [0 0 612 792] >>").into_bytes();
    handmade(&objects)
}

/// A PDF of one page whose content shows `text` once per text-showing operator, `operators` times over, in one
/// FlateDecode stream (a few tens of kilobytes compressed for millions of operators), then "the end".
pub fn operator_flood(operators: usize, text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let operation = format!("({text}) Tj ");
    encoder.write_all(b"BT /F1 12 Tf 72 720 Td ").expect("compresses");
    let block = operation.repeat(4096);
    for _ in 0..operators / 4096 {
        encoder.write_all(block.as_bytes()).expect("compresses");
    }
    encoder.write_all(operation.repeat(operators % 4096).as_bytes()).expect("compresses");
    encoder.write_all(b"0 -20 Td (the end) Tj ET").expect("compresses");
    let content = encoder.finish().expect("compresses");
    handmade(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        stream_object("/Filter /FlateDecode", &content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ])
}
