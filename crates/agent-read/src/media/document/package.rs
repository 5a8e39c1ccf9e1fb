//! A zip package (DOCX, XLSX, PPTX): opened from bytes in memory, its entries counted, its parts inflated through a
//! cap so that a part that lies about its size stops at the cap instead of filling memory.

use super::{Check, DocumentError};
use crate::render::human_size;
use std::io::{Cursor, Read};
use zip::ZipArchive;
use zip::result::ZipError;

/// Entries a package may have (Office writes tens; a zip of millions of entries costs memory to list).
pub const MAX_ENTRIES: usize = 20_000;
/// Bytes one part may inflate to when it is read whole.
pub const MAX_PART_BYTES: u64 = 32 * 1024 * 1024;

/// An open package.
pub struct Package<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
}

impl<'a> Package<'a> {
    /// Opens the zip in `bytes`; a truncated or damaged zip, or one with too many entries, is refused.
    pub fn open(bytes: &'a [u8]) -> Result<Package<'a>, DocumentError> {
        let archive = ZipArchive::new(Cursor::new(bytes)).map_err(|error| damaged("the zip container", &error))?;
        if archive.len() > MAX_ENTRIES {
            return Err(DocumentError::TooLarge(format!(
                "the zip container has {} entries, over the {MAX_ENTRIES} a document may have",
                archive.len()
            )));
        }
        Ok(Package { archive })
    }

    /// The part `name` inflated whole (at most [`MAX_PART_BYTES`]), or `None` when the package has no such part.
    pub fn part(&mut self, name: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        self.part_within(name, MAX_PART_BYTES)
    }

    /// The part `name` inflated whole, refused when it inflates past `cap` bytes (whatever size it declares).
    pub fn part_within(&mut self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, DocumentError> {
        let entry = match self.archive.by_name(name) {
            Ok(entry) => entry,
            Err(ZipError::FileNotFound) => return Ok(None),
            Err(error) => return Err(damaged(name, &error)),
        };
        if entry.encrypted() {
            return Err(DocumentError::Encrypted);
        }
        let mut data = Vec::with_capacity(usize::try_from(entry.size().min(cap)).unwrap_or(0));
        entry.take(cap + 1).read_to_end(&mut data).map_err(|error| damaged(name, &error))?;
        if data.len() as u64 > cap {
            return Err(over_cap(name, cap));
        }
        Ok(Some(data))
    }

    /// Streams the part `name` (nothing kept) and refuses it when a stretch of it between two markup delimiters (`<`,
    /// `>`) is longer than `max_run` bytes: whoever reads the part's XML event by event then holds at most that much
    /// for one event (one text, one tag), however large the part.
    pub fn check_runs(&mut self, name: &str, max_run: usize, check: Check<'_>) -> Result<(), DocumentError> {
        let mut entry = match self.archive.by_name(name) {
            Ok(entry) => entry,
            Err(ZipError::FileNotFound) => return Ok(()),
            Err(error) => return Err(damaged(name, &error)),
        };
        let mut chunk = vec![0u8; 256 * 1024];
        let (mut run, mut chunks) = (0usize, 0u32);
        loop {
            let read = entry.read(&mut chunk).map_err(|e| damaged(name, &e))?;
            if read == 0 {
                return Ok(());
            }
            chunks += 1;
            if chunks.is_multiple_of(64) {
                check()?;
            }
            let data = &chunk[..read];
            let mut last = None;
            for at in memchr::memchr2_iter(b'<', b'>', data) {
                run += at - last.map_or(0, |l: usize| l + 1);
                if run > max_run {
                    break;
                }
                (run, last) = (0, Some(at));
            }
            run += read - last.map_or(0, |l| l + 1);
            if run > max_run {
                return Err(DocumentError::TooLarge(format!(
                    "part {name} holds a single text or tag over {} (a document too large to convert)",
                    human_size(max_run as u64)
                )));
            }
        }
    }

    /// The names of the package's parts (a name that is not valid text is left out: no part of a document has one).
    pub fn names(&self) -> Vec<String> {
        self.archive.file_names().filter_map(|name| name.ok().map(|name| name.into_owned())).collect()
    }
}

fn damaged(what: &str, error: &dyn std::fmt::Display) -> DocumentError {
    DocumentError::Damaged(format!("{what}: {error}"))
}

fn over_cap(name: &str, cap: u64) -> DocumentError {
    DocumentError::TooLarge(format!(
        "part {name} inflates past {} (a zip bomb, or a document too large to convert)",
        human_size(cap)
    ))
}

/// The path of a relationship's target `target`, relative to the part `base` (`word/document.xml` + `media/a.png`
/// → `word/media/a.png`; `../notesSlides/n1.xml` climbs; a leading `/` starts at the package's root).
pub fn resolve_target(base: &str, target: &str) -> String {
    if let Some(absolute) = target.strip_prefix('/') {
        return absolute.to_string();
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for piece in target.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The relationships part of `part` (`word/document.xml` → `word/_rels/document.xml.rels`).
pub fn rels_of(part: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{part}.rels"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relationship_targets_resolve_against_their_part() {
        assert_eq!(resolve_target("ppt/slides/slide1.xml", "../notesSlides/n1.xml"), "ppt/notesSlides/n1.xml");
        assert_eq!(resolve_target("ppt/presentation.xml", "slides/slide2.xml"), "ppt/slides/slide2.xml");
        assert_eq!(resolve_target("word/document.xml", "/word/x.xml"), "word/x.xml");
        assert_eq!(rels_of("word/document.xml"), "word/_rels/document.xml.rels");
    }

    #[test]
    fn a_long_run_between_delimiters_is_refused_and_short_ones_pass() {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        let parts = [("ok.xml", format!("<a>{}</a>", "x".repeat(1000)).repeat(1000)), ("long.xml", "y".repeat(5000))];
        for (name, body) in &parts {
            zip.start_file(*name, options).unwrap();
            std::io::Write::write_all(&mut zip, body.as_bytes()).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        let mut package = Package::open(&bytes).unwrap();
        assert!(package.check_runs("ok.xml", 1000, &mut || Ok(())).is_ok());
        let error = package.check_runs("long.xml", 4999, &mut || Ok(())).err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("single text or tag over")));
        assert!(package.check_runs("long.xml", 5000, &mut || Ok(())).is_ok());
    }

    #[test]
    fn a_truncated_zip_is_damaged() {
        let err = Package::open(b"PK\x03\x04 not really a zip").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("damaged") && err.contains("zip container"), "{err}");
    }
}
