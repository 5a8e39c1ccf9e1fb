use super::*;
use crate::media::pdf::fixtures::{Fixture, numbered, run_bytes, texts};
use lopdf::SaveOptions;

fn index_of(bytes: &[u8]) -> Option<Index> {
    read_index(bytes, &Stop::never()).unwrap()
}

/// `numbered(count)` saved with object streams and a cross-reference stream.
fn modern(count: u32) -> Vec<u8> {
    let mut doc = Document::load_mem(&numbered(count)).unwrap();
    let options = SaveOptions::builder().use_object_streams(true).use_xref_streams(true).build();
    let mut bytes = Vec::new();
    doc.save_with_options(&mut bytes, options).unwrap();
    bytes
}

#[test]
fn a_classic_table_is_read_with_its_trailer() {
    let bytes = numbered(3);
    let index = index_of(&bytes).expect("a plain table");
    assert!(index.trailer.get(b"Root").and_then(Object::as_reference).is_ok());
    let normal = index.xref.entries.values().filter(|entry| entry.is_normal()).count();
    assert_eq!(normal, Document::load_mem(&bytes).unwrap().objects.len());
}

#[test]
fn a_cross_reference_stream_and_object_streams_are_read() {
    let bytes = modern(5);
    let index = index_of(&bytes).expect("a cross-reference stream");
    assert!(index.xref.entries.values().any(XrefEntry::is_compressed), "{:?}", index.xref.entries);
    let extracted = run_bytes(&bytes, "2,5", 1000).unwrap();
    assert_eq!(texts(&extracted), [(2, "Page 2 text"), (5, "Page 5 text")]);
}

#[test]
fn an_update_replaces_objects_through_the_prev_chain() {
    // The first page's content replaced by an incremental update: a new object, a new table naming the old one.
    let mut bytes = numbered(2);
    let doc = Document::load_mem(&bytes).unwrap();
    let first = doc.get_pages()[&1];
    let content = doc.get_page_contents(first)[0];
    let previous = start_of_last_section(&bytes).unwrap();
    let size = doc.max_id + 1;
    let offset = bytes.len();
    let body = b"BT /F1 12 Tf 72 720 Td (Updated text) Tj ET";
    bytes.extend(format!("{} 0 obj\n<< /Length {} >>\nstream\n", content.0, body.len()).as_bytes());
    bytes.extend(body);
    bytes.extend(b"\nendstream\nendobj\n");
    let table = bytes.len();
    bytes.extend(format!("xref\n{} 1\n{offset:010} 00000 n \n", content.0).as_bytes());
    let root = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
    bytes.extend(
        format!("trailer\n<< /Size {size} /Root {} 0 R /Prev {previous} >>\nstartxref\n{table}\n%%EOF\n", root.0)
            .as_bytes(),
    );
    let index = index_of(&bytes).expect("an updated table");
    assert!(
        matches!(index.xref.get(content.0), Some(XrefEntry::Normal { offset: found, .. }) if *found as usize == offset)
    );
    assert!(!index.trailer.has(b"Prev"));
    assert_eq!(texts(&run_bytes(&bytes, "1-", 1000).unwrap()), [(1, "Updated text"), (2, "Page 2 text")]);
}

#[test]
fn what_is_out_of_the_ordinary_is_left_to_the_whole_load() {
    let bytes = numbered(2);
    // No startxref, a startxref pointing at nothing, a loop in the chain.
    let cut = &bytes[..bytes.len() - 30];
    assert!(index_of(cut).is_none());
    let mut wrong = bytes.clone();
    let at = memchr::memmem::rfind(&wrong, b"startxref").unwrap();
    wrong.truncate(at);
    wrong.extend(b"startxref\n9\n%%EOF\n");
    assert!(index_of(&wrong).is_none());
    // A section whose /Prev names itself.
    let mut looping = bytes.clone();
    let own = looping.len();
    let section = format!("xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 9 /Root 1 0 R /Prev {own} >>\n");
    looping.extend(format!("{section}startxref\n{own}\n%%EOF\n").as_bytes());
    assert!(index_of(&looping).is_none());
    let mut fixture = Fixture::new();
    fixture.text_page("kept");
    assert!(index_of(&fixture.bytes()).is_some());
}
