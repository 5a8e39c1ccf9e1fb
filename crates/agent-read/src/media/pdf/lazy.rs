//! A document loaded an object at a time, so that reading a few pages of a long PDF costs what those pages cost: the
//! cross-reference data is read (`xref`), then only the objects the work needs are parsed — the catalog, the page
//! tree's nodes, and for each page read, the page, its parents and what its contents and resources reach (the
//! objects the guards and pdf-extract look at). lopdf's `Reader` parses each object; an object stream is measured
//! (bounded decoding) and unpacked once, when one of its objects is first wanted.
//!
//! The page count comes from the page tree's nodes: a node whose `/Count` equals its number of kids has only pages as
//! kids (each kid counts at least one page), so its kids need not be loaded to be counted — only the pages read are,
//! and each is checked to be a page. That is what stays proportional to the document: the cross-reference data, and
//! the page tree's nodes (for a tree of one node, the array of its kids).
//!
//! Whatever is out of the ordinary — a page that is not one, an object lopdf cannot parse, a loop in the tree — gives
//! up ([`Lazily::GiveUp`]): the caller then loads the whole document with lopdf, as it did for every document before.

use super::PdfError;
use super::extract::empty_if_textless;
use super::measure::measure_stream;
use super::stop::Stop;
use super::xref::{Index, reader};
use lopdf::xref::XrefEntry;
use lopdf::{Document, Object, ObjectId, ObjectStream, Reader};
use std::collections::{HashMap, HashSet};

/// Deepest page tree walked.
const MAX_TREE_DEPTH: usize = 256;
/// Keys of a page, and of its parents, whose values extraction reads.
const PAGE_KEYS: [&[u8]; 5] = [b"Resources", b"Contents", b"MediaBox", b"CropBox", b"ArtBox"];

/// Why loading a document an object at a time did not give a result.
pub(super) enum Lazily {
    /// The document is out of the ordinary: load it whole instead.
    GiveUp,
    /// A failure that loading it whole would meet too (a bomb, the stop signal).
    Failed(PdfError),
}

impl From<PdfError> for Lazily {
    fn from(err: PdfError) -> Lazily {
        Lazily::Failed(err)
    }
}

/// A node of the page tree: its kids, and how many pages each holds (`None`: every kid is a page).
struct Node {
    kids: Vec<ObjectId>,
    counts: Option<Vec<u32>>,
}

/// The document, loaded as the work needs it.
pub(super) struct Lazy<'a> {
    reader: Reader<'a>,
    /// Objects whose references were followed already.
    walked: HashSet<ObjectId>,
    /// The page tree's nodes, from its root.
    nodes: HashMap<ObjectId, Node>,
    root: ObjectId,
    page_count: u32,
}

impl<'a> Lazy<'a> {
    /// Opens the document of `data` (from its `%PDF-` header) through its `index`: a document holding the trailer and
    /// the catalog, and the page tree counted.
    pub(super) fn open(data: &'a [u8], index: Index, stop: &Stop) -> Result<(Lazy<'a>, Document), Lazily> {
        let mut doc = Document::new();
        doc.max_id = index.xref.max_id();
        doc.trailer = index.trailer;
        let mut lazy = Lazy {
            reader: reader(data, index.xref),
            walked: HashSet::new(),
            nodes: HashMap::new(),
            root: (0, 0),
            page_count: 0,
        };
        let catalog = doc.trailer.get(b"Root").and_then(Object::as_reference).map_err(|_| Lazily::GiveUp)?;
        lazy.load(&mut doc, catalog, stop)?;
        let root = doc.get_dictionary(catalog).and_then(|catalog| catalog.get(b"Pages")).and_then(Object::as_reference);
        lazy.root = root.map_err(|_| Lazily::GiveUp)?;
        lazy.page_count = lazy.count(&mut doc, lazy.root, &mut HashSet::new(), stop)?;
        if lazy.page_count == 0 {
            return Err(Lazily::GiveUp);
        }
        Ok((lazy, doc))
    }

    pub(super) fn page_count(&self) -> u32 {
        self.page_count
    }

    /// The page numbered `number` (from 1), checked to be a page.
    pub(super) fn find(&mut self, doc: &mut Document, number: u32, stop: &Stop) -> Result<ObjectId, Lazily> {
        let mut node_id = self.root;
        let mut left = number;
        for _ in 0..=MAX_TREE_DEPTH {
            let node = self.nodes.get(&node_id).ok_or(Lazily::GiveUp)?;
            let (kid, within) = match &node.counts {
                None => (*node.kids.get(left as usize - 1).ok_or(Lazily::GiveUp)?, None),
                Some(counts) => {
                    let mut found = None;
                    for (&kid, &count) in node.kids.iter().zip(counts) {
                        if left <= count {
                            found = Some((kid, count));
                            break;
                        }
                        left -= count;
                    }
                    let (kid, count) = found.ok_or(Lazily::GiveUp)?;
                    (kid, Some(count))
                }
            };
            self.load(doc, kid, stop)?;
            let kind = doc.get_dictionary(kid).ok().and_then(|dict| dict.get_type().ok().map(<[u8]>::to_vec));
            match (kind.as_deref(), within) {
                (Some(b"Page"), _) if left == 1 || within.is_none() => return Ok(kid),
                (Some(b"Pages"), Some(_)) => node_id = kid,
                _ => return Err(Lazily::GiveUp),
            }
        }
        Err(Lazily::GiveUp)
    }

    /// Loads what extracting the page `page_id` reads: the page, its parents, and all their contents and resources
    /// reach (not through `/Parent` or `/P` links).
    pub(super) fn prepare(&mut self, doc: &mut Document, page_id: ObjectId, stop: &Stop) -> Result<(), Lazily> {
        let mut pending = Vec::new();
        let mut node = page_id;
        let mut chain = HashSet::new();
        while chain.insert(node) && chain.len() <= MAX_TREE_DEPTH {
            self.load(doc, node, stop)?;
            let Ok(dict) = doc.get_dictionary(node) else { break };
            for key in PAGE_KEYS {
                references(dict.get(key).ok(), &mut pending);
            }
            match dict.get(b"Parent").and_then(Object::as_reference) {
                Ok(parent) => node = parent,
                Err(_) => break,
            }
        }
        let mut steps = 0u32;
        while let Some(id) = pending.pop() {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(4096) {
                stop.check()?;
            }
            if !self.walked.insert(id) {
                continue;
            }
            self.load(doc, id, stop)?;
            references(doc.objects.get(&id), &mut pending);
        }
        Ok(())
    }

    /// Counts the pages under the node `id` (recording the nodes), failing on a loop or too deep a tree.
    fn count(
        &mut self,
        doc: &mut Document,
        id: ObjectId,
        path: &mut HashSet<ObjectId>,
        stop: &Stop,
    ) -> Result<u32, Lazily> {
        stop.check()?;
        if !path.insert(id) || path.len() > MAX_TREE_DEPTH {
            return Err(Lazily::GiveUp);
        }
        self.load(doc, id, stop)?;
        let node = doc.get_dictionary(id).map_err(|_| Lazily::GiveUp)?;
        let kids_value = node.get(b"Kids").map_err(|_| Lazily::GiveUp)?.clone();
        let declared = node.get(b"Count").and_then(Object::as_i64).ok();
        if let Object::Reference(kids_id) = kids_value {
            self.load(doc, kids_id, stop)?;
        }
        let kids: Vec<ObjectId> = match doc.dereference(&kids_value) {
            Ok((_, Object::Array(kids))) => kids.iter().filter_map(|kid| kid.as_reference().ok()).collect(),
            _ => return Err(Lazily::GiveUp),
        };
        let total = if declared == i64::try_from(kids.len()).ok() {
            self.nodes.insert(id, Node { counts: None, kids });
            u32::try_from(declared.unwrap_or(0)).map_err(|_| Lazily::GiveUp)?
        } else {
            let mut counts = Vec::with_capacity(kids.len());
            for &kid in &kids {
                self.load(doc, kid, stop)?;
                let kind = doc.get_dictionary(kid).ok().and_then(|dict| dict.get_type().ok().map(<[u8]>::to_vec));
                counts.push(match kind.as_deref() {
                    Some(b"Page") => 1,
                    Some(b"Pages") => self.count(doc, kid, path, stop)?,
                    _ => 0,
                });
            }
            let total = counts.iter().try_fold(0u32, |sum, &count| sum.checked_add(count)).ok_or(Lazily::GiveUp)?;
            self.nodes.insert(id, Node { counts: Some(counts), kids });
            total
        };
        path.remove(&id);
        Ok(total)
    }

    /// Loads the object `id` into `doc` (an object with no entry stays missing, as lopdf leaves it).
    fn load(&mut self, doc: &mut Document, id: ObjectId, stop: &Stop) -> Result<(), Lazily> {
        if doc.objects.contains_key(&id) {
            return Ok(());
        }
        match self.reader.document.reference_table.get(id.0) {
            Some(XrefEntry::Normal { .. }) => {
                let mut object = self.reader.get_object(id, &mut HashSet::new()).map_err(|_| Lazily::GiveUp)?;
                empty_if_textless(&mut object);
                doc.objects.insert(id, object);
            }
            Some(&XrefEntry::Compressed { container, .. }) => self.unpack(doc, container, stop)?,
            _ => {}
        }
        Ok(())
    }

    /// Unpacks the object stream `container` (measured first): its objects that the cross-reference data places
    /// there go into `doc`.
    fn unpack(&mut self, doc: &mut Document, container: u32, stop: &Stop) -> Result<(), Lazily> {
        let object = self.reader.get_object((container, 0), &mut HashSet::new()).map_err(|_| Lazily::GiveUp)?;
        let Object::Stream(mut stream) = object else { return Err(Lazily::GiveUp) };
        measure_stream(&stream, stop)?;
        let unpacked = ObjectStream::new(&mut stream).map_err(|_| Lazily::GiveUp)?;
        let table = &self.reader.document.reference_table;
        for (id, mut object) in unpacked.objects {
            let placed_here =
                matches!(table.get(id.0), Some(&XrefEntry::Compressed { container: c, .. }) if c == container);
            if placed_here && !doc.objects.contains_key(&id) {
                empty_if_textless(&mut object);
                doc.objects.insert(id, object);
            }
        }
        Ok(())
    }
}

/// Adds the references `object` holds (not through `/Parent` or `/P` links) to `out`.
fn references(object: Option<&Object>, out: &mut Vec<ObjectId>) {
    let mut pending: Vec<&Object> = object.into_iter().collect();
    while let Some(object) = pending.pop() {
        match object {
            Object::Reference(id) => out.push(*id),
            Object::Array(items) => pending.extend(items),
            Object::Dictionary(dict) => pending.extend(followed(dict)),
            Object::Stream(stream) => pending.extend(followed(&stream.dict)),
            _ => {}
        }
    }
}

/// The values of a dictionary the walk follows: all but the links back up.
fn followed(dict: &lopdf::Dictionary) -> impl Iterator<Item = &Object> {
    dict.iter().filter(|(key, _)| key.as_slice() != b"Parent" && key.as_slice() != b"P").map(|(_, value)| value)
}

#[cfg(test)]
mod tests;
