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
    Archive, ArchiveError, Catalog, CopyRead, Locator, Lookup, MAX_DEFLATE_RATIO, MAX_DIRECTORY_BYTES, MAX_MEMBERS,
    Member, MemberKind, Stamp,
};
use std::io::{self, BufReader, Read};
use zip::result::ZipError;
use zip::{CompressionMethod, ZipArchive};

/// The central directory is read through a buffer: the crate reads each entry in a few small reads.
type Directory<'f> = ZipArchive<BufReader<FileReader<'f>>>;

/// Opens the central directory of `archive`; one declaring more than [`MAX_MEMBERS`] members is refused first.
fn open_directory<'f>(archive: &Archive<'f>) -> Result<Directory<'f>, ArchiveError> {
    let declared = declared_members(archive)?;
    if declared > MAX_MEMBERS as u64 {
        return Err(too_many_members(declared));
    }
    let allowance = Allowance::new(MAX_DIRECTORY_BYTES);
    let reader = FileReader::new(archive.file, 0, archive.end, archive.budget.clone()).with_allowance(allowance);
    ZipArchive::new(BufReader::with_capacity(64 * 1024, reader)).map_err(|error| zip_error(error, archive))
}

/// Every member of `archive`, in the order of its central directory (a name stored twice exactly: once, as its
/// last copy, which the `zip` crate keeps).
pub fn catalog(archive: &Archive<'_>) -> Result<Catalog, ArchiveError> {
    open_directory(archive).and_then(|zip| catalog_of(&zip, archive))
}

/// The last member stored under `path` (with where its data is, so that opening it reads the directory no more),
/// or the whole catalog when there is none.
pub fn lookup(archive: &Archive<'_>, path: &str) -> Result<Lookup, ArchiveError> {
    let mut zip = open_directory(archive)?;
    let mut catalog = catalog_of(&zip, archive)?;
    let Some(found) = catalog.members.iter().rposition(|member| member.path.as_deref() == Some(path)) else {
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
    // The end records were read before the crate was; this holds whatever record the crate settled on.
    if zip.len() > MAX_MEMBERS {
        return Err(too_many_members(zip.len() as u64));
    }
    let mut catalog =
        Catalog { duplicates_dropped: zip.has_duplicate_names(), copy_read: CopyRead::Last, ..Catalog::default() };
    // Where each entry is in the central directory: the crate lists a name stored twice at its first copy's place
    // with its last copy's data, so its order is not the stored one.
    let mut stored: Vec<(u64, Member)> = Vec::with_capacity(zip.len());
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
        stored.push((
            entry.central_header_start(),
            Member {
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
            },
        ));
    }
    stored.sort_by_key(|(at, _)| *at);
    catalog.members = stored.into_iter().map(|(_, member)| member).collect();
    Ok(catalog)
}

/// Bytes of a zip's end of central directory record, without its comment.
const END_LEN: usize = 22;
/// Bytes of a zip64 end of central directory locator, which stands just before the end record.
const LOCATOR_LEN: usize = 20;
/// Bytes of a zip64 end of central directory record up to its two counts of members.
const END64_COUNTS_END: usize = 40;
/// The end record is looked for in the file's last bytes: the record, its comment of at most 64 KiB, and room for a
/// zip64 locator before it (more than the `zip` crate searches, so that every record it could take is seen).
const END_SEARCH_LEN: u64 = 65 * 1024 + 256;

/// The most members any end of central directory record of `archive` declares (every candidate the `zip` crate could
/// settle on, a zip64 one included), read before the crate is given the archive: it allocates for the count it finds
/// before reading a single entry. A plain record counts at most 65,535; only a zip64 record can declare more.
fn declared_members(archive: &Archive<'_>) -> Result<u64, ArchiveError> {
    let tail_start = archive.end.saturating_sub(END_SEARCH_LEN);
    let tail = read_span(archive, tail_start, archive.end).map_err(ArchiveError::Stopped)?;
    let mut most = 0u64;
    for at in signatures(&tail, b"PK\x05\x06") {
        let Some(end) = tail.get(at..at + END_LEN) else { continue };
        let members = u64::from(u16_at(end, 10));
        most = most.max(members);
        let may_be_zip64 = members == 0xFFFF || u32_at(end, 12) == u32::MAX || u32_at(end, 16) == u32::MAX;
        let Some(locator) = at.checked_sub(LOCATOR_LEN).and_then(|from| tail.get(from..at)) else { continue };
        if !may_be_zip64 || !locator.starts_with(b"PK\x06\x07") {
            continue;
        }
        most = most.max(zip64_declared(archive, u64_at(locator, 8), tail_start + (at - LOCATOR_LEN) as u64)?);
    }
    Ok(most)
}

/// The most members a zip64 end record between `from` (where a locator says it is) and the locator at `to`
/// declares. The crate looks there first, then at every record signature after it: so are they all looked at, over
/// as many bytes as the crate may read of a central directory.
fn zip64_declared(archive: &Archive<'_>, from: u64, to: u64) -> Result<u64, ArchiveError> {
    let mut most = 0u64;
    let mut chunk_start = from;
    let scan_end = to.min(from.saturating_add(MAX_DIRECTORY_BYTES));
    while chunk_start < scan_end {
        let chunk_end = scan_end.min(chunk_start + 1024 * 1024);
        // Read on past the chunk far enough for the counts of a record that starts in it.
        let span_end = to.min(chunk_end + END64_COUNTS_END as u64);
        let span = read_span(archive, chunk_start, span_end).map_err(ArchiveError::Stopped)?;
        let starts = (chunk_end - chunk_start) as usize;
        for at in signatures(&span, b"PK\x06\x06").take_while(|at| *at < starts) {
            if let Some(record) = span.get(at..at + END64_COUNTS_END) {
                most = most.max(u64_at(record, 24)).max(u64_at(record, 32));
            }
        }
        chunk_start = chunk_end;
    }
    Ok(most)
}

/// The bytes of `archive` in `start..end`.
fn read_span(archive: &Archive<'_>, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    FileReader::new(archive.file, start, end, archive.budget.clone()).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Where `signature` starts in `bytes`, first to last.
fn signatures<'b>(bytes: &'b [u8], signature: &'b [u8; 4]) -> impl Iterator<Item = usize> + 'b {
    bytes.windows(4).enumerate().filter(move |(_, window)| *window == signature).map(|(at, _)| at)
}

/// The little-endian number of `N` bytes at `at` of `bytes` (0 past their end: callers take records whole first).
fn le_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes.get(at..at + N).and_then(|field| field.try_into().ok()).unwrap_or([0; N])
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(le_at(bytes, at))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(le_at(bytes, at))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(le_at(bytes, at))
}

fn too_many_members(declared: u64) -> ArchiveError {
    ArchiveError::TooLarge(format!("it declares {declared} members, and a listing holds at most {MAX_MEMBERS}"))
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
