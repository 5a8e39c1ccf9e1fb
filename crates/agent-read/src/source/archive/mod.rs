//! Archives: which archive a file is (zip, or tar plain or inside a compression), its members as a catalog, and the
//! bytes of one member as a stream. Nothing is extracted: a listing reads the archive's index (a zip's central
//! directory, a tar's headers), and a member is read from its first byte each time it is opened.
//!
//! # Bounds
//!
//! - A zip's central directory is read whole by the `zip` crate: at most [`MAX_DIRECTORY_BYTES`] of it, so the
//!   catalog it builds stays bounded; a larger one is refused. Before the crate is given the archive, the member
//!   count its end records declare (a zip64 one included) is read: past [`MAX_MEMBERS`] it is refused, since the crate
//!   allocates for that count before reading an entry.
//! - A tar's headers are read one at a time; each may take at most [`MAX_HEADER_BYTES`] (long names and extended
//!   headers included). A catalog keeps at most [`MAX_MEMBERS`] members and [`MAX_NAME_BYTES`] of names; a tar
//!   listing stops there and says so.
//! - A member's bytes are exactly what its header declares: more is damage (a member that lies to look small), less
//!   is a member cut short. A zip member's CRC-32 is checked at its end, and a deflated member declaring more than
//!   deflate can expand ([`MAX_DEFLATE_RATIO`]) is refused before anything is inflated.
//! - Every read goes through the time budget; so does every skip over a tar member in a compressed stream.

mod io;
mod names;
mod tar;
mod zip;

use crate::budget::Budget;
use crate::media::compressed::Compression;
use std::fs::File;
use std::time::SystemTime;

/// Bytes of a zip's central directory read at most: room for [`MAX_MEMBERS`] entries (46 bytes each and its name)
/// with names of 88 bytes on average.
pub const MAX_DIRECTORY_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes one tar header may take, its GNU long names and PAX extended header included.
pub const MAX_HEADER_BYTES: u64 = 1024 * 1024;
/// Members a catalog keeps at most: a tar listing stops there, a zip declaring more is refused.
pub const MAX_MEMBERS: usize = 250_000;
/// Bytes of member names a catalog keeps at most.
pub const MAX_NAME_BYTES: usize = 32 * 1024 * 1024;
/// The most deflate can expand its input (1032:1, with room for headers): a member declaring more is forged.
pub const MAX_DEFLATE_RATIO: u64 = 1100;

/// What kind of archive a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A zip file.
    Zip,
    /// A tar file, plain or inside a compression.
    Tar(Option<Compression>),
}

impl Format {
    /// The archive `head` (a file's first bytes, of a file whose whole is `file` up to `end`) announces, if any. A tar
    /// inside a compression is told by decompressing its first header.
    pub fn sniff(file: &File, end: u64, head: &[u8], budget: &Budget) -> Option<Format> {
        if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
            return Some(Format::Zip);
        }
        if tar::is_header(head) {
            return Some(Format::Tar(None));
        }
        let compression = Compression::sniff(head)?;
        let mut first = [0u8; 512];
        let mut decoder = compression.decoder(file, end, budget.clone()).ok()?;
        let mut filled = 0;
        while filled < first.len() {
            match std::io::Read::read(&mut decoder, &mut first[filled..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => filled += n,
            }
        }
        tar::is_header(&first[..filled]).then_some(Format::Tar(Some(compression)))
    }

    /// Whether `head` starts like a zip or a plain tar (a compressed tar needs its file: see [`Format::sniff`]).
    pub fn is_archive_head(head: &[u8]) -> bool {
        head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") || tar::is_header(head)
    }

    /// How the model is told what it is: `zip`, `tar`, `tar.gz`, `tar.zst`, `tar.xz`, `tar.bz2`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Zip => "zip",
            Format::Tar(None) => "tar",
            Format::Tar(Some(Compression::Gzip)) => "tar.gz",
            Format::Tar(Some(Compression::Zstd)) => "tar.zst",
            Format::Tar(Some(Compression::Xz)) => "tar.xz",
            Format::Tar(Some(Compression::Bzip2)) => "tar.bz2",
        }
    }

    /// Whether reaching a member means decompressing everything before it.
    pub fn is_sequential(self) -> bool {
        matches!(self, Format::Tar(Some(_)))
    }
}

/// An archive file open for reading.
#[derive(Debug, Clone)]
pub struct Archive<'f> {
    /// The archive file.
    pub file: &'f File,
    /// Where reading it stops (its size when opened).
    pub end: u64,
    /// Its format.
    pub format: Format,
    /// When reading must stop.
    pub budget: Budget,
}

/// What a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// A file with content.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A tar hard link to an earlier member (never followed).
    HardLink,
    /// A device or a FIFO (tar).
    Special,
}

/// One member of an archive, as its header declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The stored name as text, without a trailing `/` (for listings; escaped when shown).
    pub name: String,
    /// The path a request spells for it (see [`names::clean_path`]), `None` when no request can.
    pub path: Option<String>,
    /// What it is.
    pub kind: MemberKind,
    /// Its size, as declared.
    pub size: u64,
    /// Its size inside the archive (zip; a tar stores members as they are).
    pub compressed_size: Option<u64>,
    /// How it is compressed inside the archive (zip: `stored`, `deflate`, …).
    pub method: Option<&'static str>,
    /// When it was last modified, as declared (turned into a time only for the members a read shows).
    stamp: Option<Stamp>,
    /// Whether it is encrypted (zip).
    pub encrypted: bool,
    /// A GNU sparse file (tar): its data is not stored in one run.
    pub sparse: bool,
    /// Where its data is.
    at: Locator,
}

/// A member's time as its header stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    /// Seconds since 1970 (tar).
    Unix(u64),
    /// A zip's date and time, the archiver's local time without a zone.
    Zip(::zip::DateTime),
}

impl Member {
    /// When it was last modified, as declared (a zip's local time read as UTC).
    pub fn modified(&self) -> Option<SystemTime> {
        match self.stamp? {
            Stamp::Unix(seconds) => std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(seconds)),
            Stamp::Zip(time) => zip::system_time(time),
        }
    }
}

/// Where a member's data is in its archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Locator {
    /// The member at this index of the zip's central directory.
    Zip { index: usize },
    /// A zip member's data: where it starts, its size in the archive, whether it is deflated (else stored), and the
    /// CRC-32 of what it holds.
    ZipData { start: u64, compressed: u64, deflated: bool, crc: u32 },
    /// The data starts at this offset of the (decompressed) tar stream.
    Tar { data_start: u64 },
}

/// The members of an archive, in the order it stores them.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The members kept.
    pub members: Vec<Member>,
    /// The catalog stopped at this many members (or at [`MAX_NAME_BYTES`] of names) before the archive's end.
    pub stopped_at: Option<usize>,
    /// Some names are stored more than once, and only the last of each is in the catalog (zip).
    pub duplicates_dropped: bool,
    /// Which of several members stored under one path is read (see [`Catalog::read_copy`]).
    pub copy_read: CopyRead,
}

/// Which of several members stored under one path a read reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyRead {
    /// The first stored (tar: a lookup stops at the first header with that path).
    #[default]
    First,
    /// The last stored (zip: the `zip` crate keeps the last entry of a name stored twice, so a read of any other
    /// copy could not be had for a name stored twice exactly; every duplicate path is read so, alike).
    Last,
}

impl Catalog {
    /// The member a read of `path` reaches: the first or the last stored under it, as [`Catalog::copy_read`] says.
    pub fn read_copy(&self, path: &str) -> Option<&Member> {
        let is_path = |member: &&Member| member.path.as_deref() == Some(path);
        match self.copy_read {
            CopyRead::First => self.members.iter().find(is_path),
            CopyRead::Last => self.members.iter().rev().find(is_path),
        }
    }
}

/// The result of looking for one member by path.
#[derive(Debug)]
pub enum Lookup {
    /// The member a read of that path reaches (see [`Catalog::read_copy`]).
    Found(Member),
    /// No member has that path: the whole catalog, to tell a directory, a nested archive or a near miss.
    Catalog(Catalog),
}

/// Why an archive could not be read.
#[derive(Debug)]
pub enum ArchiveError {
    /// Not a readable archive: damaged, cut short, or not what its first bytes say.
    Damaged(String),
    /// Larger than a bound (its index, one header).
    TooLarge(String),
    /// Reading stopped: the time budget ran out, the read was cancelled, or the file could not be read.
    Stopped(std::io::Error),
}

impl Archive<'_> {
    /// Every member (up to the catalog's bounds).
    pub fn catalog(&self) -> Result<Catalog, ArchiveError> {
        match self.format {
            Format::Zip => zip::catalog(self),
            Format::Tar(compression) => tar::scan(self, compression, None).map(|found| match found {
                Lookup::Catalog(catalog) => catalog,
                Lookup::Found(_) => Catalog::default(),
            }),
        }
    }

    /// The member a read of `path` reaches (a tar's first stored under it, a zip's last: see [`CopyRead`]), or the
    /// whole catalog when there is none. A tar is read only as far as that member.
    pub fn lookup(&self, path: &str) -> Result<Lookup, ArchiveError> {
        match self.format {
            Format::Zip => zip::lookup(self, path),
            Format::Tar(compression) => tar::scan(self, compression, Some(path)),
        }
    }

    /// A reader of `member`'s bytes from its first, exactly its declared size (see the module's bounds).
    pub fn open(&self, member: &Member) -> std::io::Result<Box<dyn std::io::Read + '_>> {
        match member.at {
            at @ (Locator::Zip { .. } | Locator::ZipData { .. }) => zip::open(self, at, member),
            Locator::Tar { data_start } => tar::open(self, data_start, member.size),
        }
    }
}

/// The members of `catalog` that lie directly in the directory `dir` (`""` for the archive's top), each once and
/// sorted by name: stored members, and directories only implied by deeper names (`a/b.txt` implies `a/`). Names no
/// request can spell are listed at the top, after the others.
pub fn children<'c>(catalog: &'c Catalog, dir: &str) -> Vec<Child<'c>> {
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let mut seen: std::collections::BTreeMap<&str, Child<'c>> = std::collections::BTreeMap::new();
    let mut unspellable = Vec::new();
    for member in &catalog.members {
        let Some(path) = member.path.as_deref() else {
            if dir.is_empty() {
                unspellable.push(Child { name: member.name.clone(), member: Some(member), copies: 1 });
            }
            continue;
        };
        let Some(rest) = path.strip_prefix(prefix.as_str()).filter(|rest| !rest.is_empty()) else { continue };
        let (name, deeper) = match rest.split_once('/') {
            Some((name, _)) => (name, true),
            None => (rest, false),
        };
        let entry = seen.entry(name).or_insert(Child { name: name.to_string(), member: None, copies: 0 });
        if !deeper {
            if entry.member.is_none() || catalog.copy_read == CopyRead::Last {
                entry.member = Some(member);
            }
            entry.copies += 1;
        }
    }
    let mut out: Vec<Child<'c>> = seen.into_values().collect();
    out.extend(unspellable);
    out
}

/// One name in an archive's directory.
#[derive(Debug, Clone)]
pub struct Child<'c> {
    /// Its name within the directory (or, for a member no request can spell, its whole stored name).
    pub name: String,
    /// The member stored under it (when several are, the one a read reaches: see [`Catalog::read_copy`]); `None` for
    /// a directory only implied by deeper names.
    pub member: Option<&'c Member>,
    /// How many members are stored under exactly this name.
    pub copies: usize,
}

impl Child<'_> {
    /// Whether it is a directory (stored as one, or implied).
    pub fn is_dir(&self) -> bool {
        self.member.is_none_or(|member| member.kind == MemberKind::Dir)
    }
}

/// Whether `catalog` has members beneath the directory `dir`.
pub fn is_directory(catalog: &Catalog, dir: &str) -> bool {
    let prefix = format!("{dir}/");
    catalog.members.iter().any(|member| {
        member
            .path
            .as_deref()
            .is_some_and(|path| path.starts_with(&prefix) || (path == dir && member.kind == MemberKind::Dir))
    })
}

#[cfg(test)]
mod tests;
