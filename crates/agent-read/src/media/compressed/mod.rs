//! Compressed text: which compression a file's first bytes announce, and a decoder that yields its text as a stream.
//!
//! Contract: the compression is found by content (magic bytes), never by name alone, so a renamed `.gz` is still
//! read and a `.gz` that is really plain text is read as text. Every decoder reads the file from its first byte
//! through [`RawReader`], which stops at the time budget (and on cancellation) between reads of at most 64 KiB of
//! compressed input; the stream above it ([`crate::window::stream`]) stops it between chunks of decoded text. So no
//! input, a decompression bomb included, keeps a read past its budget. Multi-member gzip, concatenated zstd frames
//! (skippable frames skipped), multi-stream xz and multi-stream bzip2 are each one text, as `zcat`, `zstdcat`,
//! `xzcat` and `bzcat` show them.
//!
//! A decoder can also resume at a [restart point](crate::window::restarts) it made during an earlier pass over the
//! same file: gzip at the boundaries between deflate blocks ([`gzip`]), zstd at the start of every frame
//! ([`zstd`]), bzip2 at the start of every block ([`bzip2`], which frames the bitstream itself to find them), xz at
//! the start of every block and stream ([`xz`]; a file of one block has none). Before resuming, a decoder checks that
//! the compressed bytes where it resumes are those it saw; a point that fails the check is refused, and the read
//! decodes from the start.
//!
//! Memory: a gzip or bzip2 decoder holds a few MiB whatever the file says. A zstd frame's window and an xz block's
//! dictionary are as large as the file asks, up to their bounds ([`zstd`], [`MAX_XZ_MEMORY`]), and a small file can
//! ask for the most; so their decoders reserve what they hold from the budget every read in the process shares
//! ([`crate::media::memory`]) before they fill it, and a read that cannot have it stops.

mod bzip2;
mod gzip;
mod xz;
mod zstd;

use crate::budget::Budget;
use crate::media::memory::{Growing, Refusal, busy_error};
use crate::render::human_size;
use crate::window::restarts::Restart;
use crate::window::stream::Decoder;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::sync::Arc;

/// A compression a text file can be stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip (RFC 1952): `gzip`, `pigz`, log rotation.
    Gzip,
    /// Zstandard (RFC 8878).
    Zstd,
    /// xz (LZMA2).
    Xz,
    /// bzip2.
    Bzip2,
}

impl Compression {
    /// The compression `head` (a file's first bytes) announces, if any.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        match head {
            [0x1f, 0x8b, 0x08, ..] => Some(Compression::Gzip),
            // A frame, or a skippable frame (`pzstd` starts with one, holding the sizes of its frames).
            [0x28, 0xb5, 0x2f, 0xfd, ..] | [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..] => Some(Compression::Zstd),
            [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Some(Compression::Xz),
            // A block, or the end of the stream at once (the compression of nothing).
            [b'B', b'Z', b'h', b'1'..=b'9', 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, ..]
            | [b'B', b'Z', b'h', b'1'..=b'9', 0x17, 0x72, 0x45, 0x38, 0x50, 0x90, ..] => Some(Compression::Bzip2),
            _ => None,
        }
    }

    /// The name the envelope and the footer give it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Bzip2 => "bzip2",
        }
    }

    /// A decoder of `file`'s text from its first byte, reading no further than `end` and stopping at `budget`.
    /// Fails only when the decoder cannot be set up (no memory for its state, no handle left to read the file).
    ///
    /// The decoder reads through its own handle to the file (a duplicate of `file`'s), so it can be
    /// [kept](crate::window::stream::Decoder::into_kept) after the read for a later read of the same file.
    pub fn decoder(self, file: &File, end: u64, budget: Budget) -> io::Result<Box<dyn Decoder>> {
        let file = own_handle(file)?;
        Ok(match self {
            Compression::Gzip => Box::new(gzip::Gzip::new(input_at(&file, 0, end, budget))),
            Compression::Zstd => Box::new(zstd::ZstdFrames::new(input_at(&file, 0, end, budget), 0)?),
            Compression::Xz => Box::new(xz::Xz::new(file, end, budget)?),
            Compression::Bzip2 => Box::new(bzip2::Bzip2::new(input_at(&file, 0, end, budget))),
        })
    }

    /// A decoder of `file`'s text from `from` (a restart point a decoder of the same file made), or from its first
    /// byte. Fails when the point does not fit the file any more (the bytes it resumes at changed) or this
    /// compression makes no restart points.
    pub fn decoder_at(
        self,
        file: &File,
        end: u64,
        budget: Budget,
        from: Option<&Restart>,
    ) -> io::Result<Box<dyn Decoder>> {
        let Some(point) = from else { return self.decoder(file, end, budget) };
        if check_at(file, point.input, end)? != point.check {
            return Err(not_a_restart("the compressed bytes where it resumes have changed"));
        }
        let file = own_handle(file)?;
        if self == Compression::Xz {
            return Ok(Box::new(xz::Xz::resume(file, end, budget, point)?));
        }
        let input = input_at(&file, point.input, end, budget);
        match self {
            Compression::Gzip => Ok(Box::new(gzip::Gzip::resume(input, point)?)),
            Compression::Zstd if point.state.is_empty() => Ok(Box::new(zstd::ZstdFrames::new(input, point.at)?)),
            Compression::Bzip2 => Ok(Box::new(bzip2::Bzip2::resume(input, point)?)),
            _ => Err(not_a_restart("this compression makes none")),
        }
    }
}

/// A file's compressed bytes from some offset on, read through a buffer.
type Input = BufReader<RawReader>;

/// A decoder's own handle to `file` (the same open file, so no path is resolved again).
fn own_handle(file: &File) -> io::Result<Arc<File>> {
    file.try_clone().map(Arc::new)
}

/// The compressed bytes of `file` from `at` to `end`, each read checked against `budget`.
fn input_at(file: &Arc<File>, at: u64, end: u64, budget: Budget) -> Input {
    BufReader::with_capacity(RAW_READ_LEN, RawReader { file: file.clone(), pos: at, end, budget })
}

/// The offset in the file of the next byte `input` yields.
fn input_offset(input: &Input) -> u64 {
    input.get_ref().pos - input.buffer().len() as u64
}

/// The fingerprint of the compressed bytes where a decoder resumes at `offset`: the byte before it (which may hold
/// bits the decoder still needs) and the 63 after.
fn check_at(file: &File, offset: u64, end: u64) -> io::Result<u32> {
    let from = offset.saturating_sub(1);
    let mut bytes = [0u8; 64];
    let len = usize::try_from(end.saturating_sub(from)).unwrap_or(bytes.len()).min(bytes.len());
    let mut filled = 0;
    while filled < len {
        match crate::platform::read_at(file, &mut bytes[filled..len], from + filled as u64)? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(crc32fast::hash(&bytes[..filled]))
}

/// Why a restart point cannot be used.
fn not_a_restart(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("not a restart point of this file: {why}"))
}

/// Compressed bytes read per system call.
const RAW_READ_LEN: usize = 64 * 1024;
/// Most memory an xz stream's decoder may take (dictionary and state), in bytes: more than twice what `xz -9` needs.
/// The xz format allows dictionaries of up to 1.5 GiB (and `xz -9` writes 64 MiB); a block needing more is refused
/// rather than allocated.
const MAX_XZ_MEMORY: u64 = 160 << 20;

/// A file's bytes from 0 to `end`, read with `pread` (the handle's own position is never moved), each read
/// checked against the time budget.
struct RawReader {
    file: Arc<File>,
    pos: u64,
    end: u64,
    budget: Budget,
}

impl Read for RawReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.budget.check()?;
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = crate::platform::read_at(&self.file, &mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Holds `bytes` of `memory` in all, what a decoder now holds for `what` (a zstd frame, an xz block). Fails when the
/// pool cannot give them: the whole pool is too little (`OutOfMemory`), or other reads hold it (`ResourceBusy`).
fn cover(memory: &mut Growing, bytes: u64, what: &str) -> io::Result<()> {
    memory.cover(bytes).map_err(|refusal| memory_refused(refusal, what))
}

/// Why a decoder cannot have the memory `what` needs, as the read reports it ([`crate::ReadError::from_io`] maps the
/// kinds).
fn memory_refused(refusal: Refusal, what: &str) -> io::Error {
    match refusal {
        Refusal::TooLargeAlone { needed, capacity } => io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "{what} needs {} of memory to decode, more than the {} all reads share",
                human_size(needed),
                human_size(capacity)
            ),
        ),
        Refusal::Busy { needed, held, capacity, waited } => {
            let need = format!("{what} needs {} of memory to decode", human_size(needed));
            busy_error("decoded", &need, held, capacity, waited)
        }
        Refusal::Stopped(error) => error,
    }
}

/// The error a decoder fails with on input that does not decode.
fn damaged(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.to_string())
}

#[cfg(test)]
mod tests;
