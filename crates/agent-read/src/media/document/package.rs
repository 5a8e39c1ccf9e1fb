//! A zip package (DOCX, XLSX, PPTX, ODT, ODS, EPUB): opened from bytes in memory, its entries counted, its parts
//! inflated through a cap so that a part that lies about its size stops at the cap instead of filling memory, or
//! streamed with every single text or tag bounded ([`RunLimited`]).

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

    /// The entry of part `name`, not yet read; `None` when the package has none, an error when it is encrypted.
    fn entry(&mut self, name: &str) -> Result<Option<zip::read::ZipFile<'_, Cursor<&'a [u8]>>>, DocumentError> {
        let entry = match self.archive.by_name(name) {
            Ok(entry) => entry,
            Err(ZipError::FileNotFound) => return Ok(None),
            Err(error) => return Err(damaged(name, &error)),
        };
        if entry.encrypted() {
            return Err(DocumentError::Encrypted);
        }
        Ok(Some(entry))
    }

    /// The part `name` inflated whole, refused when it inflates past `cap` bytes (whatever size it declares).
    pub fn part_within(&mut self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, DocumentError> {
        let Some(entry) = self.entry(name)? else { return Ok(None) };
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
        let Some(mut stream) = self.stream(name, max_run)? else { return Ok(()) };
        let mut chunk = vec![0u8; 256 * 1024];
        for chunks in 1u32.. {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    return Err(match error.get_ref().and_then(|inner| inner.downcast_ref::<RunTooLong>()) {
                        Some(RunTooLong(reason)) => DocumentError::TooLarge(reason.clone()),
                        None => damaged(name, &error),
                    });
                }
            }
            if chunks.is_multiple_of(64) {
                check()?;
            }
        }
        Ok(())
    }

    /// The part `name` as a stream, inflated as it is read, each stretch between markup delimiters bounded by
    /// `max_run` (see [`RunLimited`]); `None` when the package has no such part.
    pub fn stream(&mut self, name: &str, max_run: usize) -> Result<Option<RunLimited<impl Read + '_>>, DocumentError> {
        let Some(entry) = self.entry(name)? else { return Ok(None) };
        Ok(Some(RunLimited { inner: entry, run: 0, max_run, part: name.to_string() }))
    }

    /// Opens a package whose `mimetype` part names `media_type` (as OpenDocument and EPUB packages say what they are).
    pub fn open_typed(bytes: &'a [u8], media_type: &str) -> Result<Package<'a>, DocumentError> {
        let mut package = Package::open(bytes)?;
        let named = package.part_within("mimetype", 256)?.unwrap_or_default();
        if named.trim_ascii() != media_type.as_bytes() {
            return Err(DocumentError::Damaged(format!(
                "its mimetype part does not say {media_type}: not the document its name says"
            )));
        }
        Ok(package)
    }

    /// Opens an OpenDocument package whose `mimetype` part names `media_type`; a package whose manifest says
    /// its `content` part is encrypted is refused as encrypted.
    pub fn open_odf(bytes: &'a [u8], media_type: &str, content: &str) -> Result<Package<'a>, DocumentError> {
        let mut package = Package::open_typed(bytes, media_type)?;
        if let Some(manifest) = package.part("META-INF/manifest.xml")? {
            super::xml::refuse_encrypted_entry(&manifest, content)?;
        }
        Ok(package)
    }

    /// The names of the package's parts (a name that is not valid text is left out: no part of a document has one).
    pub fn names(&self) -> Vec<String> {
        self.archive.file_names().filter_map(|name| name.ok().map(|name| name.into_owned())).collect()
    }
}

/// A part read as a stream, failing (with [`DocumentError::TooLarge`] inside the `io::Error`) as soon as a stretch
/// between two markup delimiters (`<`, `>`) grows past `max_run` bytes: an XML reader over it then holds at most that
/// much for one event (one text, one tag), however large the part.
pub struct RunLimited<R> {
    inner: R,
    run: usize,
    max_run: usize,
    part: String,
}

impl<R: Read> Read for RunLimited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        let data = &buf[..read];
        let mut last = None;
        for at in memchr::memchr2_iter(b'<', b'>', data) {
            self.run += at - last.map_or(0, |l: usize| l + 1);
            if self.run > self.max_run {
                break;
            }
            (self.run, last) = (0, Some(at));
        }
        self.run += read - last.map_or(0, |l| l + 1);
        if self.run > self.max_run {
            return Err(std::io::Error::other(RunTooLong(format!(
                "part {} holds a single text or tag over {} (a document too large to convert)",
                self.part,
                human_size(self.max_run as u64)
            ))));
        }
        Ok(read)
    }
}

/// What a [`RunLimited`] stream failed with.
#[derive(Debug)]
pub struct RunTooLong(pub String);

impl std::fmt::Display for RunTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunTooLong {}

/// An XML error met while streaming the part `part`: the bound a [`RunLimited`] stream met, the time budget or a
/// failed read as such, anything else as damage.
pub fn stream_error(part: &str, error: quick_xml::Error) -> DocumentError {
    if let quick_xml::Error::Io(io) = &error
        && let Some(RunTooLong(reason)) = io.get_ref().and_then(|inner| inner.downcast_ref::<RunTooLong>())
    {
        return DocumentError::TooLarge(reason.clone());
    }
    super::xml::damaged(part, &error)
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
