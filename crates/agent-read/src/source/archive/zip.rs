//! Zip archives: the catalog from the central directory (the `zip` crate parses it, through a reader that stops it at
//! [`MAX_DIRECTORY_BYTES`] and at the time budget), and a member's bytes read from where the crate found them, stored
//! or inflated, checked against the declared size and CRC-32.
//!
//! A member is read through our own reader rather than the crate's: the crate's borrows the archive for as long as it
//! reads, and a member's stream must be reopened from its first byte whenever a window looks back (see
//! [`crate::window::stream`]), which needs a reader owning nothing but the file.

use super::io::{Allowance, Exact, FileReader, is_over_allowance};
use super::names::{clean_path, shown_name};
use super::{
    Archive, ArchiveError, Catalog, Locator, Lookup, MAX_DEFLATE_RATIO, MAX_DIRECTORY_BYTES, Member, MemberKind, Stamp,
};
use std::io::{self, BufReader, Read};
use zip::result::ZipError;
use zip::{CompressionMethod, ZipArchive};

/// Opens the central directory of `archive`.
/// The central directory is read through a buffer: the crate reads each entry in a few small reads.
type Directory<'f> = ZipArchive<BufReader<FileReader<'f>>>;

fn open_directory<'f>(archive: &Archive<'f>) -> Result<Directory<'f>, ArchiveError> {
    let allowance = Allowance::new(MAX_DIRECTORY_BYTES);
    let reader = FileReader::new(archive.file, 0, archive.end, archive.budget.clone()).with_allowance(allowance);
    ZipArchive::new(BufReader::with_capacity(64 * 1024, reader)).map_err(|error| zip_error(error, archive))
}

/// Every member of `archive`, in the order of its central directory.
pub fn catalog(archive: &Archive<'_>) -> Result<Catalog, ArchiveError> {
    open_directory(archive).and_then(|zip| catalog_of(&zip, archive))
}

/// The first member stored under `path` (with where its data is, so that opening it reads the directory no more),
/// or the whole catalog when there is none.
pub fn lookup(archive: &Archive<'_>, path: &str) -> Result<Lookup, ArchiveError> {
    let mut zip = open_directory(archive)?;
    let mut catalog = catalog_of(&zip, archive)?;
    let Some(found) = catalog.members.iter().position(|member| member.path.as_deref() == Some(path)) else {
        return Ok(Lookup::Catalog(catalog));
    };
    let mut member = catalog.members.swap_remove(found);
    if let Locator::Zip { index } = member.at
        && member.kind == MemberKind::File
    {
        member.at = data_of(&mut zip, index, archive)?;
    }
    Ok(Lookup::Found(member))
}

fn catalog_of(zip: &Directory<'_>, archive: &Archive<'_>) -> Result<Catalog, ArchiveError> {
    let mut catalog = Catalog { duplicates_dropped: zip.has_duplicate_names(), ..Catalog::default() };
    for index in 0..zip.len() {
        if index % 4096 == 0 {
            archive.budget.check().map_err(ArchiveError::Stopped)?;
        }
        let entry = zip.by_index_data(index).map_err(|error| zip_error(error, archive))?;
        let raw = entry.name_raw();
        // Names are UTF-8 when the entry says so, else code page 437: the crate's text is what the archiver meant.
        let text = entry.name().map(|name| name.into_owned()).unwrap_or_else(|_| shown_name(raw));
        let kind = if entry.is_dir() {
            MemberKind::Dir
        } else if entry.is_symlink() {
            MemberKind::Symlink
        } else {
            MemberKind::File
        };
        catalog.members.push(Member {
            path: clean_path(text.as_bytes()),
            name: shown_name(text.as_bytes()),
            kind,
            size: entry.size(),
            compressed_size: Some(entry.compressed_size()),
            method: Some(method_name(entry.compression())),
            stamp: entry.last_modified().map(Stamp::Zip),
            encrypted: entry.encrypted(),
            sparse: false,
            at: Locator::Zip { index },
        });
    }
    Ok(catalog)
}

/// Where the data of the member at `index` is (its local header read for where its data starts), and how to
/// decode it.
fn data_of(zip: &mut Directory<'_>, index: usize, archive: &Archive<'_>) -> Result<Locator, ArchiveError> {
    let raw = zip.by_index_raw(index).map_err(|error| zip_error(error, archive))?;
    let start = raw.data_start().ok_or_else(|| ArchiveError::Damaged("a member without a data offset".into()))?;
    Ok(Locator::ZipData {
        start,
        compressed: raw.compressed_size(),
        deflated: raw.compression() == CompressionMethod::Deflated,
        crc: raw.crc32(),
    })
}

/// The bytes of a member whose data `at` locates, stored or inflated, checked against its size and CRC-32.
pub fn open<'f>(archive: &Archive<'f>, at: Locator, member: &Member) -> io::Result<Box<dyn Read + 'f>> {
    if member.encrypted {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "the member is encrypted"));
    }
    if member.method.is_some_and(|method| !matches!(method, "stored" | "deflate")) {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "the member's compression method is not read"));
    }
    let Locator::ZipData { start, compressed, deflated, crc } = (match at {
        Locator::Zip { index } => {
            let mut zip = open_directory(archive).map_err(|error| match error {
                ArchiveError::Stopped(error) => error,
                other => io::Error::new(io::ErrorKind::InvalidData, describe(&other)),
            })?;
            data_of(&mut zip, index, archive).map_err(|error| match error {
                ArchiveError::Stopped(error) => error,
                other => io::Error::new(io::ErrorKind::InvalidData, describe(&other)),
            })?
        }
        at => at,
    }) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a zip member"));
    };
    let end = start.checked_add(compressed).filter(|end| *end <= archive.end).ok_or_else(|| {
        io::Error::new(io::ErrorKind::UnexpectedEof, "the member's compressed data runs past the end of the archive")
    })?;
    let data = BufReader::with_capacity(64 * 1024, FileReader::new(archive.file, start, end, archive.budget.clone()));
    let inflated: Box<dyn Read + 'f> = if !deflated {
        if compressed != member.size {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a stored member whose sizes disagree"));
        }
        Box::new(data)
    } else if member.size / MAX_DEFLATE_RATIO > compressed.max(1) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the member declares it inflates further than deflate can (a forged header)",
        ));
    } else {
        Box::new(flate2::bufread::DeflateDecoder::new(data))
    };
    let mut hasher = crc32fast::Hasher::new();
    let check = Box::new(move |bytes: Option<&[u8]>| match bytes {
        Some(bytes) => {
            hasher.update(bytes);
            Ok(())
        }
        None if hasher.clone().finalize() == crc => Ok(()),
        None => Err(io::Error::new(io::ErrorKind::InvalidData, "the member's CRC-32 does not match its data")),
    });
    Ok(Box::new(Exact::new(inflated, member.size).checked(check)))
}

/// How a compression method is named.
fn method_name(method: CompressionMethod) -> &'static str {
    match method {
        CompressionMethod::Stored => "stored",
        CompressionMethod::Deflated => "deflate",
        _ => match format!("{method:?}").as_str() {
            "Deflate64" => "deflate64",
            "Bzip2" => "bzip2",
            "Zstd" => "zstd",
            "Lzma" => "lzma",
            "Xz" => "xz",
            "Ppmd" => "ppmd",
            "Aes" => "aes",
            _ => "an unknown method",
        },
    }
}

/// A zip timestamp (the archiver's local time, no zone) as a time, read as UTC.
pub(super) fn system_time(time: zip::DateTime) -> Option<std::time::SystemTime> {
    let text = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        time.year(),
        time.month(),
        time.day(),
        time.hour(),
        time.minute(),
        time.second()
    );
    humantime::parse_rfc3339(&text).ok()
}

/// A zip error as an archive error: the budget's and the allowance's own, else damage.
fn zip_error(error: ZipError, archive: &Archive<'_>) -> ArchiveError {
    if let Err(stopped) = archive.budget.check() {
        return ArchiveError::Stopped(stopped);
    }
    match error {
        ZipError::Io(error) if is_over_allowance(&error) => ArchiveError::TooLarge(format!(
            "its central directory is over {} MiB (more members than a listing holds)",
            MAX_DIRECTORY_BYTES / (1024 * 1024)
        )),
        ZipError::Io(error)
            if error.kind() != io::ErrorKind::UnexpectedEof && error.kind() != io::ErrorKind::InvalidData =>
        {
            ArchiveError::Stopped(error)
        }
        other => ArchiveError::Damaged(other.to_string()),
    }
}

/// An archive error as text, for a member's reader.
fn describe(error: &ArchiveError) -> String {
    match error {
        ArchiveError::Damaged(reason) | ArchiveError::TooLarge(reason) => reason.clone(),
        ArchiveError::Stopped(error) => error.to_string(),
    }
}
