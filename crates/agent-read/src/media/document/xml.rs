//! What the OOXML walkers share: a streaming reader over a part, text of text and reference events (character
//! references and XML's five predefined entities resolved, any other entity shown as written, never expanded), and
//! attributes by local name (prefixes vary between producers), and an element skipped whole.

use super::DocumentError;
use quick_xml::Reader;
use quick_xml::events::{BytesRef, BytesStart, BytesText, Event};
use std::collections::HashMap;

/// An element being skipped whole (a drawing, an annotation, a sheet not chosen): its events pass unread, counted
/// by depth until its end.
#[derive(Debug, Default)]
pub struct Skipping(usize);

impl Skipping {
    /// Skips the element just opened.
    pub fn begin(&mut self) {
        self.0 = 1;
    }

    /// Whether an element is being skipped.
    pub fn active(&self) -> bool {
        self.0 > 0
    }

    /// Whether `event` belongs to the element being skipped (and is taken here); the end of the input never does,
    /// so the caller sees it.
    pub fn takes(&mut self, event: &Event<'_>) -> bool {
        if self.0 == 0 || matches!(event, Event::Eof) {
            return false;
        }
        match event {
            Event::Start(_) => self.0 += 1,
            Event::End(_) => self.0 -= 1,
            _ => {}
        }
        true
    }
}

/// A streaming reader over one part's XML.
pub fn reader(xml: &[u8]) -> Reader<&[u8]> {
    Reader::from_reader(xml)
}

/// The text of a text event, line endings normalised.
pub fn text(event: &BytesText<'_>) -> String {
    event.xml10_content().into_owned()
}

/// The text a reference stands for: a character reference's character, a predefined entity's text, or any other
/// reference as written (a document cannot make the reader expand an entity of its own).
pub fn reference(event: &BytesRef<'_>) -> String {
    if let Ok(Some(c)) = event.resolve_char_ref() {
        return c.to_string();
    }
    let name = event.xml10_content();
    match quick_xml::escape::resolve_predefined_entity(&name) {
        Some(text) => text.to_string(),
        None => format!("&{name};"),
    }
}

/// The value of the attribute whose local name is `local` (`w:val` and `val` alike). An attribute given twice is
/// not looked for (its first value counts): the check would cost every lookup a pass over all the others.
pub fn attr(element: &BytesStart<'_>, local: &str) -> Option<String> {
    element
        .attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|value| value.into_owned()))
}

/// The relationship id of an element: its `r:id` (an attribute `id` with a prefix; a slide's `sldId` also has a
/// plain `id` of its own).
pub fn relationship_id(element: &BytesStart<'_>) -> Option<String> {
    element
        .attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == "id" && a.key.prefix().is_some())
        .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|value| value.into_owned()))
}

/// An XML error in the part `part`, as a damaged document.
pub fn damaged(part: &str, error: &quick_xml::Error) -> DocumentError {
    DocumentError::Damaged(format!("{part}: {error}"))
}

/// A relationships part: relationship id → target (`rId3` → `slides/slide1.xml`, or a hyperlink's URL).
pub fn relationships(xml: &[u8]) -> Result<HashMap<String, String>, DocumentError> {
    use quick_xml::events::Event;
    let mut reader = reader(xml);
    let mut map = HashMap::new();
    loop {
        match reader.read_event().map_err(|e| damaged("relationships", &e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "Relationship" => {
                if let (Some(id), Some(target)) = (attr(&e, "Id"), attr(&e, "Target")) {
                    map.insert(id, target);
                }
            }
            Event::Eof => return Ok(map),
            _ => {}
        }
    }
}

/// Refuses an OpenDocument package whose manifest (`META-INF/manifest.xml`) gives the part `content` encryption data:
/// it was saved with a password.
pub fn refuse_encrypted_entry(manifest: &[u8], content: &str) -> Result<(), DocumentError> {
    use quick_xml::events::Event;
    let mut reader = reader(manifest);
    let mut in_content = false;
    loop {
        match reader.read_event().map_err(|e| damaged("META-INF/manifest.xml", &e))? {
            Event::Start(e) if e.local_name().as_ref() == "file-entry" => {
                in_content = attr(&e, "full-path").as_deref() == Some(content);
            }
            Event::Start(e) | Event::Empty(e) if in_content && e.local_name().as_ref() == "encryption-data" => {
                return Err(DocumentError::Encrypted);
            }
            Event::End(e) if e.local_name().as_ref() == "file-entry" => in_content = false,
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}
