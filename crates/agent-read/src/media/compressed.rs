//! Compressed text: which compression a file's first bytes announce, and a decoder that yields its text as a stream.
//!
//! Contract: the compression is found by content (magic bytes), never by name alone, so a renamed `.gz` is still
//! read and a `.gz` that is really plain text is read as text. Every decoder reads the file from its first byte
//! through [`RawReader`], which stops at the time budget (and on cancellation) between reads of at most 64 KiB of
//! compressed input; the stream above it ([`crate::window::stream`]) stops it between chunks of decoded text. So no
//! input, a decompression bomb included, keeps a read past its budget. Multi-member gzip, concatenated zstd frames
//! (skippable frames skipped), multi-stream xz and multi-stream bzip2 are each one text, as `zcat`, `zstdcat`,
//! `xzcat` and `bzcat` show them.

use crate::budget::Budget;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

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
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Compression::Zstd),
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
    pub fn decoder<'f>(self, file: &'f File, end: u64, budget: Budget) -> Box<dyn Read + 'f> {
        let raw = BufReader::with_capacity(RAW_READ_LEN, RawReader { file, pos: 0, end, budget });
        match self {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
            Compression::Zstd => Box::new(ZstdFrames { source: raw, frame: None }),
            // No memory limit beyond the format's own: a dictionary is at most 1.5 GiB by the xz format, and `xz -9`
            // writes 64 MiB; a larger one is refused rather than allocated.
            Compression::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(raw, true, MAX_XZ_MEMORY_KIB)),
            Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        }
    }
}

/// Compressed bytes read per system call.
const RAW_READ_LEN: usize = 64 * 1024;
/// Most memory one xz block's decoder may take (dictionary and state), in KiB: twice what `xz -9` needs.
const MAX_XZ_MEMORY_KIB: u32 = 160 * 1024;

/// A file's bytes from 0 to `end`, read with `pread` (the handle's own position is never moved), each read
/// checked against the time budget.
struct RawReader<'f> {
    file: &'f File,
    pos: u64,
    end: u64,
    budget: Budget,
}

impl Read for RawReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.budget.check()?;
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = crate::platform::read_at(self.file, &mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Every frame of a zstd stream in turn, skippable frames skipped (ruzstd's own streaming decoder reads one frame).
struct ZstdFrames<R> {
    source: R,
    /// The frame being decoded; `None` between frames.
    frame: Option<ruzstd::decoding::FrameDecoder>,
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        loop {
            if let Some(frame) = self.frame.as_mut() {
                if frame.can_collect() > 0 {
                    return frame.read(buf);
                }
                if !frame.is_finished() {
                    frame.decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1)).map_err(damaged)?;
                    continue;
                }
                self.frame = None;
            }
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.start_frame()?;
        }
    }
}

impl<R: BufRead> ZstdFrames<R> {
    /// Reads the next frame's header: a frame to decode, or a skippable frame passed over.
    fn start_frame(&mut self) -> io::Result<()> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        let mut frame = ruzstd::decoding::FrameDecoder::new();
        match frame.reset(&mut self.source) {
            Ok(()) => {
                self.frame = Some(frame);
                Ok(())
            }
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame { length, .. })) => {
                let skipped = io::copy(&mut (&mut self.source).take(u64::from(length)), &mut io::sink())?;
                if skipped < u64::from(length) {
                    return Err(damaged("a skippable frame is cut short"));
                }
                Ok(())
            }
            Err(e) => Err(damaged(e)),
        }
    }
}

fn damaged(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_name_the_compression_and_text_has_none() {
        assert_eq!(Compression::sniff(&[0x1f, 0x8b, 0x08, 0, 0]), Some(Compression::Gzip));
        assert_eq!(Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0x24]), Some(Compression::Zstd));
        assert_eq!(Compression::sniff(b"\xfd7zXZ\x00\x00\x04"), Some(Compression::Xz));
        assert_eq!(Compression::sniff(b"BZh91AY&SY\x00"), Some(Compression::Bzip2));
        assert_eq!(Compression::sniff(b"BZh9 is how a line of text may start"), None);
        assert_eq!(Compression::sniff(b"hello\n"), None);
        assert_eq!(Compression::sniff(&[0x1f]), None);
    }
}
