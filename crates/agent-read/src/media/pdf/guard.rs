//! Structure guards, checked before each page is extracted: what pdf-extract would recurse on without a bound (a page
//! tree that loops, a form XObject that draws itself, forms nested too deeply) overflows the stack — in a thread, an
//! abort of the whole process — and what it would inflate or parse without a bound exhausts memory. Each page's
//! streams are measured, and the forms it draws scanned, before pdf-extract touches them. (The page's own content
//! needs no such check: it reaches pdf-extract in bounded batches, see `batch`. A form's content is parsed whole, and
//! the forms drawn inside one another are all parsed at once: their sum is what is bounded.)

use super::PdfError;
use super::measure::measure_stream;
use super::scan::{Scanned, scan_content};
use super::stop::Stop;
use super::text::plain_content;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Most memory the parsed content of a chain of forms drawn inside one another may take (an estimate, see
/// [`Scanned::parsed_bytes`]).
const MAX_PARSED_BYTES: usize = 128 * 1024 * 1024;
/// Deepest chain of form XObjects drawn inside one another.
const MAX_FORM_DEPTH: usize = 32;
/// Longest chain of `/Parent` links from a page to the root of the page tree.
const MAX_TREE_DEPTH: usize = 256;

/// What was already checked in this document.
#[derive(Default)]
pub(super) struct Guard {
    /// Objects reached (and their streams measured) from the pages checked so far.
    reached: HashSet<ObjectId>,
    /// What each form's content holds (read once per form).
    scanned: HashMap<ObjectId, Rc<Scanned>>,
    /// Forms checked under given resources, with what drawing them takes: the height of the forms nested inside
    /// them, and the parsed size of the costliest chain of forms from them down.
    forms: HashMap<(ObjectId, Owner), Drawn>,
}

/// Which resources dictionary is meant, stable while the document gains objects (pages are loaded as they are read,
/// so addresses would not be): the object it is, or the object that holds it directly.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Itself(ObjectId),
    HeldBy(ObjectId),
}

/// The resources dictionary of `holder` (the object `holder_id`), with who owns it.
fn resources_of<'a>(doc: &'a Document, holder_id: ObjectId, holder: &'a Dictionary) -> Option<(&'a Dictionary, Owner)> {
    let value = holder.get(b"Resources").ok()?;
    let owner = match value {
        Object::Reference(id) => Owner::Itself(*id),
        _ => Owner::HeldBy(holder_id),
    };
    Some((dict_of(doc, Some(value))?, owner))
}

/// What drawing a form takes (see [`Guard::forms`]).
#[derive(Clone, Copy)]
struct Drawn {
    height: usize,
    parsed: usize,
}

/// The mark of a form being walked: meeting it again below it is a cycle.
const ON_PATH: Drawn = Drawn { height: usize::MAX, parsed: 0 };

impl Guard {
    /// A guard for a new document.
    pub(super) fn new() -> Guard {
        Guard::default()
    }

    /// Fails when extracting page `number` could exhaust memory (a stream that inflates too far, forms too large to
    /// parse) or the stack (a looping page tree, a form that draws itself, forms nested too deeply).
    pub(super) fn check_page(
        &mut self,
        doc: &Document,
        number: u32,
        page_id: ObjectId,
        stop: &Stop,
    ) -> Result<(), PdfError> {
        let Ok(page) = doc.get_dictionary(page_id) else { return Ok(()) };
        // The chain pdf-extract climbs for inherited keys (Resources, MediaBox).
        let mut chain = vec![(page_id, page)];
        let mut seen = HashSet::from([page_id]);
        let mut node = page;
        while let Ok(parent_id) = node.get(b"Parent").and_then(Object::as_reference) {
            let Ok(parent) = doc.get_dictionary(parent_id) else { break };
            if !seen.insert(parent_id) {
                return Err(PdfError::Malformed("its page tree loops back on itself".to_string()));
            }
            if chain.len() >= MAX_TREE_DEPTH {
                return Err(PdfError::Malformed("its page tree is nested too deeply".to_string()));
            }
            chain.push((parent_id, parent));
            node = parent;
        }
        let mut roots: Vec<&Object> = page.get(b"Contents").into_iter().collect();
        roots.extend(chain.iter().filter_map(|(_, dict)| dict.get(b"Resources").ok()));
        self.measure_reachable(doc, roots, stop)?;
        let resources = chain.iter().find_map(|&(id, dict)| resources_of(doc, id, dict));
        if let Some((resources, owner)) = resources
            && self.check_forms(doc, resources, owner, None, 0, stop)?.parsed > MAX_PARSED_BYTES
        {
            return Err(forms_too_large(number));
        }
        Ok(())
    }

    /// Measures every stream reachable from `roots` (not through `/Parent` or `/P` links), once per document.
    fn measure_reachable<'a>(
        &mut self,
        doc: &'a Document,
        roots: Vec<&'a Object>,
        stop: &Stop,
    ) -> Result<(), PdfError> {
        let mut pending = roots;
        let mut steps = 0u32;
        while let Some(object) = pending.pop() {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(4096) {
                stop.check()?;
            }
            match object {
                Object::Reference(id) if self.reached.insert(*id) => pending.extend(doc.objects.get(id)),
                Object::Array(items) => pending.extend(items),
                Object::Dictionary(dict) => pending.extend(children(dict)),
                Object::Stream(stream) => {
                    measure_stream(stream, stop)?;
                    pending.extend(children(&stream.dict));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Walks the form XObjects reachable from `resources` — all of them, or only those named in `names` (what a
    /// form's content invokes) — as pdf-extract will draw them, failing on a cycle or too deep a nesting. Returns the
    /// height of the deepest nesting below, and the parsed size of the costliest chain.
    fn check_forms(
        &mut self,
        doc: &Document,
        resources: &Dictionary,
        owner: Owner,
        names: Option<&HashSet<Vec<u8>>>,
        depth: usize,
        stop: &Stop,
    ) -> Result<Drawn, PdfError> {
        stop.check()?;
        let mut drawn = Drawn { height: 0, parsed: 0 };
        let Some(xobjects) = dict_of(doc, resources.get(b"XObject").ok()) else { return Ok(drawn) };
        let too_deep = || PdfError::Malformed(format!("its form XObjects are nested more than {MAX_FORM_DEPTH} deep"));
        for (name, value) in xobjects.iter() {
            if names.is_some_and(|names| !names.contains(name)) {
                continue;
            }
            let Ok((Some(id), Object::Stream(form))) = doc.dereference(value) else { continue };
            let (inner, inner_owner) = resources_of(doc, id, &form.dict).unwrap_or((resources, owner));
            let key = (id, inner_owner);
            let below = match self.forms.get(&key) {
                Some(&below) => below,
                None => {
                    self.forms.insert(key, ON_PATH);
                    let scanned = self.scan_form(id, form);
                    let nested = if scanned.invoked.is_empty() {
                        Drawn { height: 0, parsed: 0 }
                    } else if depth + 1 >= MAX_FORM_DEPTH {
                        return Err(too_deep());
                    } else {
                        self.check_forms(doc, inner, inner_owner, Some(&scanned.invoked), depth + 1, stop)?
                    };
                    let below =
                        Drawn { height: nested.height, parsed: nested.parsed.saturating_add(scanned.parsed_bytes()) };
                    self.forms.insert(key, below);
                    below
                }
            };
            if below.height == usize::MAX {
                return Err(PdfError::Malformed("a form XObject in it draws itself".to_string()));
            }
            if depth + 1 + below.height > MAX_FORM_DEPTH {
                return Err(too_deep());
            }
            drawn.height = drawn.height.max(below.height + 1);
            drawn.parsed = drawn.parsed.max(below.parsed);
        }
        Ok(drawn)
    }

    /// What a form's content holds (read once per form; the stream was measured already, so this is bounded).
    fn scan_form(&mut self, id: ObjectId, form: &Stream) -> Rc<Scanned> {
        Rc::clone(self.scanned.entry(id).or_insert_with(|| Rc::new(scan_content(&plain_content(form)))))
    }
}

/// The error of forms whose parsing would pass [`MAX_PARSED_BYTES`].
fn forms_too_large(number: u32) -> PdfError {
    PdfError::TooLarge(format!(
        "the form XObjects drawn on page {number} are too large to parse (their operations would take over {} MiB)",
        MAX_PARSED_BYTES / (1024 * 1024)
    ))
}

/// The values of a dictionary the walk follows: all but the links back up (`/Parent`, an annotation's `/P`).
fn children(dict: &Dictionary) -> impl Iterator<Item = &Object> {
    dict.iter().filter(|(key, _)| key.as_slice() != b"Parent" && key.as_slice() != b"P").map(|(_, value)| value)
}

/// The dictionary `value` is or refers to, as pdf-extract looks it up.
fn dict_of<'a>(doc: &'a Document, value: Option<&'a Object>) -> Option<&'a Dictionary> {
    let (_, object) = doc.dereference(value?).ok()?;
    object.as_dict().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::pdf::PageSelection;
    use crate::media::pdf::extract::{Host, extract_bytes};
    use crate::media::pdf::fixtures::{Fixture, bomb_pdf, run_bytes, run_thread, show, texts};
    use lopdf::dictionary;
    use std::time::{Duration, Instant};

    #[test]
    fn a_form_that_draws_itself_is_refused_instead_of_overflowing_the_stack() {
        let mut fixture = Fixture::new();
        let form_id = fixture.doc.new_object_id();
        let form = Stream::new(
            dictionary! {
                "Type" => "XObject",
                "Subtype" => "Form",
                "BBox" => vec![0.into(), 0.into(), 10.into(), 10.into()],
                "Resources" => dictionary! { "XObject" => dictionary! { "Fm1" => form_id } },
            },
            b"/F#6d1 Do".to_vec(),
        );
        fixture.doc.objects.insert(form_id, Object::Stream(form));
        fixture.page_with(b"/Fm1 Do".to_vec(), dictionary! { "XObject" => dictionary! { "Fm1" => form_id } });
        let err = run_thread(&fixture.bytes(), "1", 1000, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("draws itself")), "{err:?}");
    }

    #[test]
    fn forms_shared_and_nested_within_bounds_are_read() {
        let mut fixture = Fixture::new();
        let font = fixture.font;
        let leaf = fixture.doc.add_object(Stream::new(
            dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } } },
            show("in the form"),
        ));
        let mut inner = leaf;
        // A chain of 10 forms, each drawing the next twice: a DAG with 2^10 paths, walked once per form.
        for _ in 0..10 {
            inner = fixture.doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do /X Do".to_vec(),
            ));
        }
        fixture.page_with(b"/Top Do".to_vec(), dictionary! { "XObject" => dictionary! { "Top" => inner } });
        let started = Instant::now();
        let extracted = run_bytes(&fixture.bytes(), "1", 100).unwrap();
        assert!(extracted.pages[0].text.starts_with("in the formin the form"), "{:?}", extracted.pages);
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn forms_nested_too_deeply_are_refused() {
        let mut fixture = Fixture::new();
        let mut inner = fixture.doc.add_object(Stream::new(dictionary! { "Subtype" => "Form" }, show("deep")));
        for _ in 0..MAX_FORM_DEPTH + 2 {
            inner = fixture.doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do".to_vec(),
            ));
        }
        fixture.page_with(b"/Top Do".to_vec(), dictionary! { "XObject" => dictionary! { "Top" => inner } });
        let err = run_bytes(&fixture.bytes(), "1", 10).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("nested")), "{err:?}");
    }

    #[test]
    fn a_page_tree_that_loops_is_refused() {
        let mut fixture = Fixture::new();
        let page = fixture.text_page("looping");
        // The page's parent is a node whose parent is the page: pdf-extract would climb forever for a MediaBox.
        let node = fixture.doc.add_object(dictionary! { "Type" => "Pages", "Parent" => page });
        let dict = fixture.doc.get_object_mut(page).and_then(Object::as_dict_mut).unwrap();
        dict.set("Parent", node);
        let err = run_thread(&fixture.bytes(), "1", 1000, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(&err, PdfError::Malformed(reason) if reason.contains("loops")), "{err:?}");
    }

    #[test]
    fn the_per_page_check_stops_a_bomb_the_raw_probe_missed() {
        // The worker skips the raw probe (its memory limit backs it up); the page check still measures the streams.
        let bytes = bomb_pdf(1_000_000); // 258 MB of zeros
        let err = extract_bytes(&bytes, &PageSelection::all(), 1000, &Stop::never(), Host::Worker).unwrap_err();
        assert!(matches!(err, PdfError::TooLarge(_)), "{err:?}");
    }

    #[test]
    fn a_page_of_many_operators_is_read_in_both_modes() {
        let mut fixture = Fixture::new();
        // 80,000 operators (several batches), then text.
        let mut content = "q Q ".repeat(40_000).into_bytes();
        content.extend(show("after the drawing"));
        fixture.page_with(content, Dictionary::new());
        let bytes = fixture.bytes();
        assert_eq!(texts(&run_bytes(&bytes, "1", 100).unwrap()), [(1, "after the drawing")]);
        let extracted = extract_bytes(&bytes, &PageSelection::all(), 100, &Stop::never(), Host::Worker).unwrap();
        assert_eq!(texts(&extracted), [(1, "after the drawing")]);
    }

    #[test]
    fn forms_too_large_to_parse_together_are_refused_in_both_modes() {
        // Two forms, one drawing the other, of 150,000 operators each: 75 MiB apiece once parsed, parsed at once.
        let mut fixture = Fixture::new();
        let drawing = "q Q ".repeat(75_000);
        let inner =
            fixture.doc.add_object(Stream::new(dictionary! { "Subtype" => "Form" }, drawing.clone().into_bytes()));
        let outer = fixture.doc.add_object(Stream::new(
            dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "In" => inner } } },
            format!("{drawing} /In Do").into_bytes(),
        ));
        fixture.page_with(b"/Out Do".to_vec(), dictionary! { "XObject" => dictionary! { "Out" => outer } });
        let bytes = fixture.bytes();
        for host in [Host::Thread, Host::Worker] {
            let err = extract_bytes(&bytes, &PageSelection::all(), 100, &Stop::never(), host).unwrap_err();
            assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("page 1")), "{host:?}: {err:?}");
        }
        // Either form alone is within the bound.
        let mut fixture = Fixture::new();
        let alone = fixture.doc.add_object(Stream::new(dictionary! { "Subtype" => "Form" }, drawing.into_bytes()));
        fixture.page_with(b"/In Do".to_vec(), dictionary! { "XObject" => dictionary! { "In" => alone } });
        let extracted = extract_bytes(&fixture.bytes(), &PageSelection::all(), 100, &Stop::never(), Host::Worker);
        assert_eq!(texts(&extracted.unwrap()), [(1, "")]);
    }
}
