//! The cross-reference data of a PDF — where each object lies — read without loading any object, so that a document
//! can be loaded an object at a time (`lazy`). Classic tables and cross-reference streams are read, newest section
//! first along the `/Prev` chain (and a hybrid file's `/XRefStm`), an older section never replacing a newer entry.
//!
//! Reading stops at the first thing out of the ordinary — no `startxref`, a section that does not parse, a loop in
//! the chain, an encrypted document — and the caller then loads the whole document with lopdf instead, which has its
//! own ways with damaged files and knows decryption. Objects themselves are parsed by lopdf's own `Reader`.

use super::PdfError;
use super::measure::measure_stream;
use super::stop::Stop;
use lopdf::xref::{Xref, XrefEntry, XrefType};
use lopdf::{Dictionary, Document, Object, ObjectId, Reader};
use std::collections::{BTreeMap, HashSet};

/// Sections of a `/Prev` chain read at most.
const MAX_SECTIONS: usize = 256;
/// Bytes after `trailer` read for the trailer dictionary.
const TRAILER_BYTES: usize = 64 * 1024;

/// A section's entries and its trailer (a cross-reference stream's dictionary).
type Section = (Vec<(u32, XrefEntry)>, Dictionary);

/// Where every object lies, and the newest trailer.
pub(super) struct Index {
    pub(super) xref: Xref,
    pub(super) trailer: Dictionary,
}

/// A reader of single objects of `data` (the PDF from its `%PDF-` header, as lopdf reads it) through `xref`.
pub(super) fn reader(data: &[u8], xref: Xref) -> Reader<'_> {
    let mut document = Document::new();
    document.reference_table = xref;
    Reader {
        buffer: data,
        document,
        encryption_state: None,
        raw_objects: BTreeMap::new(),
        password: None,
        strict: false,
    }
}

/// The cross-reference data of `data` (from its `%PDF-` header); `Ok(None)` when it cannot be read this way (the
/// whole document is then loaded instead). Cross-reference streams are measured before they are decoded.
pub(super) fn read_index(data: &[u8], stop: &Stop) -> Result<Option<Index>, PdfError> {
    let Some(mut next) = start_of_last_section(data) else { return Ok(None) };
    let mut xref = Xref::new(0, XrefType::CrossReferenceTable);
    let mut newest: Option<Dictionary> = None;
    let mut seen = HashSet::new();
    loop {
        stop.check()?;
        if !seen.insert(next) || seen.len() > MAX_SECTIONS {
            return Ok(None);
        }
        let Some((entries, trailer)) = read_section(data, next, stop)? else { return Ok(None) };
        let mut older = trailer.get(b"Prev").and_then(Object::as_i64).ok();
        // A hybrid file's cross-reference stream completes its table, whose entries stay first.
        let hybrid = trailer.get(b"XRefStm").and_then(Object::as_i64).ok();
        merge(&mut xref, entries);
        if let Some(offset) = hybrid.and_then(|offset| usize::try_from(offset).ok())
            && seen.insert(offset)
        {
            let Some((entries, _)) = read_section(data, offset, stop)? else { return Ok(None) };
            merge(&mut xref, entries);
        }
        if newest.is_none() {
            newest = Some(trailer);
        }
        match older.take().and_then(|offset| usize::try_from(offset).ok()) {
            Some(offset) => next = offset,
            None => break,
        }
    }
    let Some(mut trailer) = newest else { return Ok(None) };
    if trailer.has(b"Encrypt") || trailer.get(b"Root").and_then(Object::as_reference).is_err() {
        return Ok(None);
    }
    trailer.remove(b"Prev");
    trailer.remove(b"XRefStm");
    xref.size = xref.max_id().saturating_add(1);
    Ok(Some(Index { xref, trailer }))
}

/// Adds `entries` to `xref`, keeping the entries it has (they are newer).
fn merge(xref: &mut Xref, entries: Vec<(u32, XrefEntry)>) {
    for (id, entry) in entries {
        xref.entries.entry(id).or_insert(entry);
    }
}

/// The offset `startxref` names, near the end of the file.
fn start_of_last_section(data: &[u8]) -> Option<usize> {
    let tail = data.len().saturating_sub(2048);
    let found = tail + memchr::memmem::rfind(&data[tail..], b"startxref")?;
    let digits: Vec<u8> = data[found + b"startxref".len()..]
        .iter()
        .copied()
        .skip_while(|byte| byte.is_ascii_whitespace())
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok().filter(|&offset: &usize| offset < data.len())
}

/// The entries and trailer of the section at `offset`: a classic table or a cross-reference stream.
fn read_section(data: &[u8], offset: usize, stop: &Stop) -> Result<Option<Section>, PdfError> {
    let Some(rest) = data.get(offset..) else { return Ok(None) };
    let at = offset + rest.iter().take_while(|byte| byte.is_ascii_whitespace()).count();
    if data[at..].starts_with(b"xref") {
        return Ok(read_table(data, at + 4));
    }
    read_stream(data, at, stop)
}

/// A classic table from `at` (just past `xref`), and the trailer after it.
fn read_table(data: &[u8], mut at: usize) -> Option<Section> {
    let mut entries = Vec::new();
    loop {
        at += data.get(at..)?.iter().take_while(|byte| byte.is_ascii_whitespace()).count();
        if data[at..].starts_with(b"trailer") {
            at += b"trailer".len();
            break;
        }
        let mut words = Words { data, at: &mut at };
        let first: u32 = number(words.next()?)?;
        let count: usize = number(words.next()?)?;
        if count > data.len() / 18 {
            return None;
        }
        for index in 0..count {
            let offset: u32 = number(words.next()?)?;
            let generation: u16 = number(words.next()?)?;
            let id = first.checked_add(u32::try_from(index).ok()?)?;
            let entry = match words.next()? {
                b"n" => XrefEntry::Normal { offset, generation },
                b"f" => XrefEntry::Free,
                _ => return None,
            };
            entries.push((id, entry));
        }
    }
    let end = data.len().min(at + TRAILER_BYTES);
    let mut wrapped = b"1 0 obj\n".to_vec();
    wrapped.extend_from_slice(&data[at..end]);
    let trailer = object_at(&wrapped, 0, (1, 0))?.as_dict().ok()?.clone();
    Some((entries, trailer))
}

/// A cross-reference stream at `at`: its entries, and its dictionary (which is the trailer).
fn read_stream(data: &[u8], at: usize, stop: &Stop) -> Result<Option<Section>, PdfError> {
    let mut at_header = at;
    let mut words = Words { data, at: &mut at_header };
    let header = (words.next().and_then(number::<u32>), words.next().and_then(number::<u16>), words.next());
    let (Some(id), Some(generation), Some(b"obj")) = header else { return Ok(None) };
    let Some(Object::Stream(stream)) = object_at(data, at, (id, generation)) else { return Ok(None) };
    if !stream.dict.has_type(b"XRef") {
        return Ok(None);
    }
    measure_stream(&stream, stop)?;
    let Ok(content) = stream.decompressed_content() else { return Ok(None) };
    Ok(stream_entries(&stream.dict, &content).map(|entries| (entries, stream.dict)))
}

/// The entries of a cross-reference stream, from its `/W` and `/Index`.
fn stream_entries(dict: &Dictionary, content: &[u8]) -> Option<Vec<(u32, XrefEntry)>> {
    let widths: Vec<usize> = dict
        .get(b"W")
        .and_then(Object::as_array)
        .ok()?
        .iter()
        .map(|width| width.as_i64().ok().and_then(|width| usize::try_from(width).ok()).filter(|&width| width <= 8))
        .collect::<Option<_>>()?;
    let [type_width, offset_width, last_width] = widths[..] else { return None };
    let row = type_width + offset_width + last_width;
    let size = dict.get(b"Size").and_then(Object::as_i64).ok()?;
    let index = match dict.get(b"Index").and_then(Object::as_array) {
        Ok(index) => index.iter().map(|n| n.as_i64().ok()).collect::<Option<Vec<i64>>>()?,
        Err(_) => vec![0, size],
    };
    let mut rows = content.chunks_exact(row.max(1));
    let mut entries = Vec::new();
    for pair in index.chunks_exact(2) {
        let (first, count) = (u32::try_from(pair[0]).ok()?, usize::try_from(pair[1]).ok()?);
        if count > content.len() / row.max(1) {
            return None;
        }
        for index in 0..count {
            let fields = rows.next()?;
            let field =
                |from: usize, width: usize| fields[from..from + width].iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
            let kind = if type_width == 0 { 1 } else { field(0, type_width) };
            let (second, third) = (field(type_width, offset_width), field(type_width + offset_width, last_width));
            let id = first.checked_add(u32::try_from(index).ok()?)?;
            let entry = match kind {
                0 => XrefEntry::Free,
                1 => XrefEntry::Normal { offset: u32::try_from(second).ok()?, generation: u16::try_from(third).ok()? },
                2 => {
                    XrefEntry::Compressed { container: u32::try_from(second).ok()?, index: u16::try_from(third).ok()? }
                }
                _ => continue,
            };
            entries.push((id, entry));
        }
    }
    Some(entries)
}

/// The object `id` at `offset` of `data`, parsed by lopdf.
fn object_at(data: &[u8], offset: usize, id: ObjectId) -> Option<Object> {
    let mut xref = Xref::new(0, XrefType::CrossReferenceTable);
    xref.insert(id.0, XrefEntry::Normal { offset: u32::try_from(offset).ok()?, generation: id.1 });
    reader(data, xref).get_object(id, &mut HashSet::new()).ok()
}

/// A number word.
fn number<T: std::str::FromStr>(word: &[u8]) -> Option<T> {
    std::str::from_utf8(word).ok()?.parse().ok()
}

/// The white-space separated words of `data` from `at` (which follows them).
struct Words<'a, 'b> {
    data: &'a [u8],
    at: &'b mut usize,
}

impl<'a> Words<'a, '_> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let data = self.data;
        while data.get(*self.at).is_some_and(u8::is_ascii_whitespace) {
            *self.at += 1;
        }
        let start = *self.at;
        while data.get(*self.at).is_some_and(|byte| !byte.is_ascii_whitespace()) {
            *self.at += 1;
        }
        (*self.at > start).then(|| &data[start..*self.at])
    }
}

#[cfg(test)]
mod tests;
