//! Tar archives, plain or inside a compression: headers read one at a time by the `tar` crate, the members' data
//! skipped (a seek in a plain tar, a decode-and-discard in a compressed one), each header within
//! [`MAX_HEADER_BYTES`]. A member's bytes start where its header ends.

use super::io::{Allowance, Exact, FileReader, Forward, cut_short, is_over_allowance};
use super::names::{clean_path, shown_name};
use super::{
    Archive, ArchiveError, Catalog, Format, Locator, Lookup, MAX_HEADER_BYTES, MAX_MEMBERS, MAX_NAME_BYTES, Member,
    MemberKind, Stamp,
};
use crate::escape::quoted;
use crate::media::compressed::Compression;
use std::io::{self, Read, Seek, SeekFrom};

/// Where a tar header's magic is, and what it says (POSIX `ustar\0`, GNU `ustar  \0`: both start so).
const MAGIC_AT: usize = 257;
const MAGIC: &[u8] = b"ustar";

/// Whether `head` starts with a tar header.
pub fn is_header(head: &[u8]) -> bool {
    head.len() >= 512 && head.get(MAGIC_AT..MAGIC_AT + MAGIC.len()) == Some(MAGIC)
}

/// Reads the headers of `archive` in order: up to the first member stored under `wanted` when given, else to the end
/// (the catalog stops growing at its bounds; a search goes on past them).
pub fn scan(
    archive: &Archive<'_>,
    compression: Option<Compression>,
    wanted: Option<&str>,
) -> Result<Lookup, ArchiveError> {
    let allowance = Allowance::new(MAX_HEADER_BYTES);
    let budget = archive.budget.clone();
    match compression {
        None => {
            let reader = FileReader::new(archive.file, 0, archive.end, budget).with_allowance(allowance.clone());
            walk(tar::Archive::new(reader), &allowance, archive, wanted)
        }
        Some(compression) => {
            let decoder =
                compression.decoder(archive.file, archive.end, budget.clone()).map_err(ArchiveError::Stopped)?;
            walk(tar::Archive::new(Forward::new(decoder, allowance.clone(), budget)), &allowance, archive, wanted)
        }
    }
}

fn walk<R: Read + Seek>(
    mut tar: tar::Archive<R>,
    allowance: &Allowance,
    archive: &Archive<'_>,
    wanted: Option<&str>,
) -> Result<Lookup, ArchiveError> {
    let mut entries = tar.entries_with_seek().map_err(|error| tar_error(error, archive, None))?;
    let mut catalog = Catalog::default();
    let mut name_bytes = 0usize;
    // The name of the last member read, to say where damage was met.
    let mut last: Option<String> = None;
    loop {
        allowance.grant(MAX_HEADER_BYTES);
        let Some(entry) = entries.next() else { break };
        let entry = entry.map_err(|error| tar_error(error, archive, last.as_deref()))?;
        let Some(member) = member_of(&entry, archive)? else { continue };
        last = Some(member.name.clone());
        if wanted.is_some() && member.path.as_deref() == wanted {
            return Ok(Lookup::Found(member));
        }
        if catalog.stopped_at.is_some() {
            continue;
        }
        name_bytes += member.name.len();
        if catalog.members.len() == MAX_MEMBERS || name_bytes > MAX_NAME_BYTES {
            catalog.stopped_at = Some(catalog.members.len());
            if wanted.is_none() {
                break;
            }
            continue;
        }
        catalog.members.push(member);
    }
    Ok(Lookup::Catalog(catalog))
}

/// The member a header describes; `None` for headers that describe no member (a PAX global header, a volume label).
fn member_of<R: Read>(entry: &tar::Entry<'_, R>, archive: &Archive<'_>) -> Result<Option<Member>, ArchiveError> {
    let header = entry.header();
    let kind = header.entry_type();
    let kind = if kind.is_file() || kind.is_contiguous() || kind.is_gnu_sparse() {
        MemberKind::File
    } else if kind.is_dir() {
        MemberKind::Dir
    } else if kind.is_symlink() {
        MemberKind::Symlink
    } else if kind.is_hard_link() {
        MemberKind::HardLink
    } else if kind.is_character_special() || kind.is_block_special() || kind.is_fifo() {
        MemberKind::Special
    } else {
        return Ok(None);
    };
    let raw = entry.path_bytes();
    let data_start = entry.raw_file_position();
    let size = entry.size();
    // A plain tar's end is known: a member whose data runs past it is cut short (a compressed one finds out when the
    // skip over it meets the end of the stream).
    if archive.format == Format::Tar(None) && data_start.saturating_add(size) > archive.end {
        return Err(ArchiveError::Damaged(format!("member {} is cut short", quoted(&shown_name(&raw)))));
    }
    let stamp = header.mtime().ok().map(Stamp::Unix);
    Ok(Some(Member {
        name: shown_name(&raw),
        path: clean_path(&raw),
        kind,
        size,
        compressed_size: None,
        method: None,
        stamp,
        encrypted: false,
        sparse: header.entry_type().is_gnu_sparse(),
        at: Locator::Tar { data_start },
    }))
}

/// The `size` bytes of a member whose data starts at `data_start` of the (decompressed) tar stream.
pub fn open<'f>(archive: &Archive<'f>, data_start: u64, size: u64) -> io::Result<Box<dyn Read + 'f>> {
    let budget = archive.budget.clone();
    match archive.format {
        Format::Tar(Some(compression)) => {
            let decoder = compression.decoder(archive.file, archive.end, budget.clone())?;
            let mut forward = Forward::new(decoder, Allowance::new(u64::MAX), budget);
            forward.seek(SeekFrom::Start(data_start))?;
            Ok(Box::new(Exact::new(forward.take(size), size)))
        }
        _ => {
            let end = data_start.saturating_add(size);
            if end > archive.end {
                return Err(cut_short("the member's data"));
            }
            Ok(Box::new(Exact::new(FileReader::new(archive.file, data_start, end, budget), size)))
        }
    }
}

/// A tar error as an archive error: the budget's and the allowance's own, else damage, said in our words with where
/// it was met (after the member named `after`, quoted; `None`: at the first header). The `tar` crate's own text is
/// never passed on: it names members unquoted ("… when getting size for <name>"), where a name reads as part of the
/// sentence.
fn tar_error(error: io::Error, archive: &Archive<'_>, after: Option<&str>) -> ArchiveError {
    if let Err(stopped) = archive.budget.check() {
        return ArchiveError::Stopped(stopped);
    }
    if is_over_allowance(&error) {
        return ArchiveError::TooLarge(format!(
            "a header (with its long names and extended attributes) is over {} MiB",
            MAX_HEADER_BYTES / (1024 * 1024)
        ));
    }
    let place = match after {
        Some(name) => format!("after member {}", quoted(name)),
        None => "at its first header".to_string(),
    };
    match error.kind() {
        io::ErrorKind::UnexpectedEof => ArchiveError::Damaged(format!("it is cut short {place}")),
        io::ErrorKind::InvalidData | io::ErrorKind::Other | io::ErrorKind::InvalidInput => {
            ArchiveError::Damaged(match archive.format {
                Format::Tar(Some(_)) => {
                    format!("a header {place} is malformed, or the {} stream is damaged there", archive.format.name())
                }
                _ => format!("a header {place} is malformed"),
            })
        }
        _ => ArchiveError::Stopped(error),
    }
}
