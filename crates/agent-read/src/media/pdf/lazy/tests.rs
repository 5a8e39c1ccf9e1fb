use super::*;
use crate::media::pdf::fixtures::{run_bytes, texts, tree_pdf};
use crate::media::pdf::xref::read_index;

/// The sum of the kids' page counts: a true /Count.
fn true_count(counts: &[u32]) -> u32 {
    counts.iter().sum()
}

/// Opens `bytes` lazily, then finds and prepares the pages `numbers`; returns their ids and the objects loaded.
fn open_and_read(bytes: &[u8], numbers: &[u32]) -> Result<(u32, Vec<ObjectId>, usize), ()> {
    open_and_read_into(bytes, numbers).map(|(count, ids, doc)| (count, ids, doc.objects.len()))
}

/// [`open_and_read`], with the document as loaded.
fn open_and_read_into(bytes: &[u8], numbers: &[u32]) -> Result<(u32, Vec<ObjectId>, Document), ()> {
    let stop = Stop::never();
    let index = read_index(bytes, &stop).ok().flatten().ok_or(())?;
    let (mut lazy, mut doc) = Lazy::open(bytes, index, &stop).map_err(|_| ())?;
    let mut ids = Vec::new();
    for &number in numbers {
        let id = lazy.find(&mut doc, number, &stop).map_err(|_| ())?;
        lazy.prepare(&mut doc, id, &stop).map_err(|_| ())?;
        ids.push(id);
    }
    Ok((lazy.page_count(), ids, doc))
}

#[test]
fn reading_a_few_pages_of_a_long_flat_document_loads_only_them() {
    // 20,000 pages, all kids of one node: the node, the catalog, then each page read with its content and font.
    let bytes = tree_pdf(20_000, 20_000, true_count);
    let numbers = [1, 2, 19_999];
    let (count, ids, doc) = open_and_read_into(&bytes, &numbers).unwrap();
    assert_eq!(count, 20_000);
    // (The whole document is 40,003 objects.)
    assert!(doc.objects.len() <= 2 + 1 + 3 * 2, "{} objects loaded", doc.objects.len());
    for (number, id) in numbers.iter().zip(ids) {
        let content = doc.get_page_content(id).unwrap();
        let shown = format!("(Page {number} text)");
        assert!(memchr::memmem::find(&content, shown.as_bytes()).is_some(), "page {number}");
    }
}

#[test]
fn a_deep_tree_is_counted_from_its_nodes_and_walked_to_the_page_asked_for() {
    let bytes = tree_pdf(1000, 7, true_count);
    let whole = Document::load_mem(&bytes).unwrap().get_pages();
    let numbers = [1, 7, 8, 500, 999, 1000];
    let (count, ids, loaded) = open_and_read(&bytes, &numbers).unwrap();
    assert_eq!(count, 1000);
    assert_eq!(ids, numbers.map(|number| whole[&number]));
    // The nodes (1000 / 7 + 1000 / 49 + …, about 170), and the pages read: not the other pages.
    assert!(loaded < 400, "{loaded} objects loaded");
    let extracted = run_bytes(&bytes, "999-", 1000).unwrap();
    assert_eq!(texts(&extracted), [(999, "Page 999 text"), (1000, "Page 1000 text")]);
}

#[test]
fn a_tree_whose_counts_lie_is_left_to_the_whole_load() {
    // Every node claims as many pages as it has kids, though its kids are nodes: taken for a node of pages, the first
    // kid read is found to be a node, and the whole document is loaded instead — with lopdf's page numbering.
    let claims_kids = |counts: &[u32]| counts.len() as u32;
    let bytes = tree_pdf(50, 5, claims_kids);
    assert!(open_and_read(&bytes, &[1]).is_err());
    let extracted = run_bytes(&bytes, "1,49-", 1000).unwrap();
    assert_eq!(extracted.page_count, 50);
    assert_eq!(texts(&extracted), [(1, "Page 1 text"), (49, "Page 49 text"), (50, "Page 50 text")]);
}

#[test]
fn a_tree_that_loops_is_left_to_the_whole_load() {
    let bytes = tree_pdf(3, 2, true_count);
    // The root (object 11, over the nodes 9 and 10) is made a kid of itself.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let root = text.find("/Kids [9 0 R 10 0 R]").expect("the root");
    let mut looped = bytes.clone();
    looped[root..root + 20].copy_from_slice(b"/Kids [9 0 R 11 0 R]");
    assert!(open_and_read(&looped, &[3]).is_err());
    assert!(run_bytes(&looped, "1", 100).is_ok());
}
