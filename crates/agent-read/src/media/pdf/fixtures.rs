//! Test fixtures shared by the submodules' tests: PDFs built with lopdf (pages of text, bombs), data for the decoders,
//! and shortcuts to run an extraction. The PDF builders the integration tests use too are theirs
//! (`tests/common/pdf.rs`), mounted here once for this test binary.

use super::extract::{Host, extract_bytes};
use super::stop::Stop;
use super::{Extracted, Isolation, PageSelection, PdfError, extract};
use crate::budget::Cancel;
use crate::media::child::testing::as_file;
use lopdf::{Object, Stream, dictionary};
use std::time::{Duration, Instant};

#[path = "../../../tests/common/pdf.rs"]
mod common_pdf;

pub(crate) use common_pdf::pdf_of;
pub(super) use common_pdf::{Fixture, encrypted, handmade, show, stream_object, zeros_zlib};

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

/// Extracts `pages` from `bytes` through [`extract`] in the thread mode.
pub(super) fn run_thread(bytes: &[u8], pages: &str, max_chars: usize, budget: Duration) -> Result<Extracted, PdfError> {
    let selection = PageSelection::parse(pages).expect("a valid selection");
    let file = as_file(bytes);
    extract(&file, &selection, max_chars, Instant::now() + budget, &Cancel::new(), &Isolation::thread())
}

/// The pages extracted, as (number, text).
pub(super) fn texts(extracted: &Extracted) -> Vec<(u32, &str)> {
    extracted.pages.iter().map(|page| (page.number, page.text.as_str())).collect()
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

/// The most memory this process has held, in bytes (0 where unknown).
pub(super) fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).unwrap_or(0) * 1024
}
