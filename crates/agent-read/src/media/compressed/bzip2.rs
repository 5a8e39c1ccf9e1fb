//! bzip2, block by block: the bitstream framed here, each block decoded by the bzip2 crate (a port of libbzip2),
//! so that decoding can resume at any block's start.
//!
//! A bzip2 stream is a header (`BZh1`–`BZh9`), blocks that each start with a 48-bit marker and are independent of one
//! another, and a 48-bit end marker followed by the stream's combined CRC (of its blocks' CRCs). Blocks are not
//! byte-aligned: each starts at whatever bit the one before ended. The crate decodes only from a stream's first
//! byte and says nothing of where its blocks lie, so:
//!
//! - Where blocks start is found by scanning the compressed bits for the two markers at every bit offset. A marker's
//!   pattern can also occur by chance inside a block, so a candidate is never trusted on its looks. The decoder is
//!   given the stream's own bits up to the first candidate after the block's start (rounded up to a whole byte: at
//!   most 7 of the candidate's bits). Every symbol it decodes from them is the block's own, and it yields a block's
//!   text only once it has decoded the block's last symbol, which ends where the next real marker starts: so it
//!   yields text only when that marker starts before the bits it was given end, that is at the candidate (a real
//!   marker is itself a candidate, no earlier candidate exists, and the two patterns never overlap themselves or each
//!   other at a shift under 8 bits, which the tests check). When it yields none, the candidate lay inside the block,
//!   and the scan goes on from it. A block's start is thus where the decoder itself ended the block before, and its
//!   text offset the text counted so far: nothing is taken from what the file claims.
//! - One decoder decodes a whole stream, block after block, as the crate's own reader does: no decoder is set up per
//!   block, and nothing is decoded twice. Decoding each block through a made-up stream of its own would need the
//!   block's end first, and a chance pattern taken for it would show as text before the block's CRC refused it (a
//!   decoder yields a block's text before it checks its CRC).
//! - A restart point is a block's start: its bit in the file, the stream's level, and the combined CRC of the
//!   stream's blocks before it. Resuming gives a new decoder a header with that level followed by the stream's bits
//!   from that block on, shifted to byte alignment. The decoder checks every block's CRC against its text itself. It
//!   would also check the combined CRC at the stream's end against the blocks it saw, so it is given that value, and
//!   the stored one is checked here against all the stream's blocks (those before the restart point included): a
//!   damaged stream is refused whether it was decoded from its start or not.
//!
//! Memory stays bounded: the compressed bytes held are those read but not yet given to the decoder (a read of
//! 64 KiB, and a marker's length), and a block's text (up to 45 MiB for a block of one repeated byte) is yielded in
//! the pieces the reader asks for. Concatenated streams (`pbzip2`, `cat a.bz2 b.bz2`) are one text; bytes after the
//! last stream that are not another stream are damage (`bzcat` warns of them; a read reports them).

use super::{Input, check_at, damaged};
use crate::budget::Budget;
use crate::window::restarts::Restart;
use crate::window::stream::{Decoder, Keepable};
use ::bzip2::{Decompress, Status};
use std::io::{self, Read};

/// The marker a block starts with (π in binary-coded decimal).
const BLOCK_MARKER: u64 = 0x3141_5926_5359;
/// The marker a stream ends with (√π), followed by the stream's combined CRC.
const END_MARKER: u64 = 0x1772_4538_5090;
/// Bits in a marker.
const MARKER_BITS: u64 = 48;
/// Bits in a marker and the CRC after it.
const MARKER_AND_CRC_BITS: u64 = MARKER_BITS + 32;
/// Compressed bytes read at a time.
const READ_LEN: usize = 64 * 1024;

/// The text of a file's bzip2 streams, from the file's start or from a restart point.
pub(super) struct Bzip2 {
    bits: Bits,
    /// The stream being decoded; `None` between streams.
    stream: Option<Stream>,
    /// Where the next stream starts (a byte offset in the file) when there is none being decoded.
    next_stream: u64,
    /// Text yielded so far: the text offset of the next byte.
    text: u64,
    want_restart: bool,
    made: Option<Restart>,
}

impl Bzip2 {
    /// The streams from `input`'s first byte, the start of a stream.
    pub(super) fn new(input: Input) -> Self {
        let bits = Bits { input, bytes: Vec::new(), first: 0, ended: false };
        Bzip2 { bits, stream: None, next_stream: 0, text: 0, want_restart: false, made: None }
    }

    /// The streams from restart point `point` on, `input` starting at its compressed offset.
    pub(super) fn resume(input: Input, point: &Restart) -> io::Result<Self> {
        let invalid = || super::not_a_restart("its state is not a bzip2 restart point's");
        let [bit, level, c0, c1, c2, c3] = point.state[..] else { return Err(invalid()) };
        if bit > 7 || !(b'1'..=b'9').contains(&level) || point.input < 4 {
            return Err(invalid());
        }
        let start = point.input * 8 + u64::from(bit);
        let mut stream = Stream::new(level, start, Phase::Marker(start));
        stream.combined = u32::from_le_bytes([c0, c1, c2, c3]);
        // The decoder reads a stream's header first; what follows it is this block and the rest of the stream.
        stream.pending.extend_from_slice(&[b'B', b'Z', b'h', level]);
        let bits = Bits { input, bytes: Vec::new(), first: point.input, ended: false };
        Ok(Bzip2 { bits, stream: Some(stream), next_stream: 0, text: point.at, want_restart: false, made: None })
    }

    /// Moves the framing on once the decoder has decoded all it was given: the next marker, more of a block, or the
    /// next stream. `false` when the file has ended after a stream.
    fn advance(&mut self) -> io::Result<bool> {
        let Some(stream) = &mut self.stream else { return self.start_stream() };
        match stream.phase {
            Phase::Marker(at) => self.read_marker(at)?,
            Phase::Block { scan, candidate } => self.frame_block(scan, candidate)?,
            Phase::End(next) => {
                if !stream.ended {
                    return Err(damaged("a bzip2 stream does not end at its end marker"));
                }
                self.stream = None;
                self.next_stream = next;
            }
        }
        Ok(true)
    }

    /// Reads the header of the stream at `next_stream`; `false` when the file ends there instead.
    fn start_stream(&mut self) -> io::Result<bool> {
        let at = self.next_stream;
        self.bits.forget_before(at);
        if !self.bits.reach(at + 1)? {
            return Ok(false);
        }
        if !self.bits.reach(at + 4)? {
            return Err(damaged("the bzip2 data after a stream is cut short or not another stream"));
        }
        let header = self.bits.bits(at * 8, 32).to_be_bytes();
        let level = match header[4..] {
            [b'B', b'Z', b'h', level @ b'1'..=b'9'] => level,
            _ => return Err(damaged("the data after a bzip2 stream is not another stream (bz2 header missing)")),
        };
        self.stream = Some(Stream::new(level, at * 8, Phase::Marker(at * 8 + 32)));
        Ok(true)
    }

    /// At a marker (everything before it decoded): a block's start, where a restart point may be made, or the
    /// stream's end, whose combined CRC is checked and given to the decoder.
    fn read_marker(&mut self, at: u64) -> io::Result<()> {
        if !self.bits.reach((at + MARKER_AND_CRC_BITS).div_ceil(8))? {
            return Err(damaged("the bzip2 stream is cut short"));
        }
        let (marker, crc) = (self.bits.bits(at, 48), self.bits.bits(at + MARKER_BITS, 32) as u32);
        let Some(stream) = &mut self.stream else { return Ok(()) };
        match marker {
            BLOCK_MARKER => {
                if self.want_restart {
                    self.want_restart = false;
                    let input = at / 8;
                    let raw = self.bits.input.get_ref();
                    let check = check_at(&raw.file, input, raw.end)?;
                    let [c0, c1, c2, c3] = stream.combined.to_le_bytes();
                    let state = Box::new([(at % 8) as u8, stream.level, c0, c1, c2, c3]);
                    self.made = Some(Restart { at: self.text, input, check, state });
                }
                stream.block_crc = crc;
                stream.block_text = 0;
                stream.phase = Phase::Block { scan: at + MARKER_BITS, candidate: None };
            }
            END_MARKER => {
                if crc != stream.combined {
                    return Err(damaged("a bzip2 stream's combined CRC does not match its blocks"));
                }
                let mut tail = BitWriter::default();
                for bit in stream.fed..at + MARKER_BITS {
                    tail.push(self.bits.bits(bit, 1), 1);
                }
                tail.push(u64::from(stream.decoded_combined), 32);
                stream.pending.extend_from_slice(&tail.finish());
                stream.fed = at + MARKER_AND_CRC_BITS;
                stream.phase = Phase::End((at + MARKER_AND_CRC_BITS).div_ceil(8));
            }
            _ => return Err(damaged("a bzip2 block's start marker is damaged")),
        }
        Ok(())
    }

    /// Inside a block, the decoder idle: either the block ended at the candidate it was given, or the candidate lay
    /// inside the block, or no candidate was found yet. Gives the decoder more of the block.
    fn frame_block(&mut self, scan: u64, candidate: Option<u64>) -> io::Result<()> {
        let Some(stream) = &mut self.stream else { return Ok(()) };
        if stream.block_text > 0 {
            let end = candidate.ok_or_else(|| damaged("a bzip2 block ends where no marker follows"))?;
            stream.end_block();
            stream.phase = Phase::Marker(end);
            return Ok(());
        }
        let scan = candidate.map_or(scan, |inside| inside + 1);
        let bits = &mut self.bits;
        bits.forget_before((stream.fed / 8).saturating_sub(1).min(scan / 8));
        let (found, scanned) = bits.find_marker(scan);
        let to = match found {
            // The whole byte the candidate starts in: at most 7 bits past it, all of them the marker's.
            Some(at) => stream.fed + at.saturating_sub(stream.fed).div_ceil(8) * 8,
            None => stream.fed + scanned.saturating_sub(stream.fed) / 8 * 8,
        };
        stream.phase = Phase::Block { scan: scanned, candidate: found };
        if found.is_none() && to == stream.fed && !bits.more()? {
            return Err(damaged("the bzip2 stream is cut short"));
        }
        stream.feed(bits, to);
        Ok(())
    }
}

impl Read for Bzip2 {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(stream) = &mut self.stream {
                let n = stream.decode(buf)?;
                if n > 0 {
                    self.text += n as u64;
                    return Ok(n);
                }
            }
            if !self.advance()? {
                return Ok(0);
            }
        }
    }
}

impl Decoder for Bzip2 {
    fn want_restart(&mut self) {
        self.want_restart = true;
    }

    fn take_restart(&mut self) -> Option<Restart> {
        self.made.take()
    }

    fn into_kept(self: Box<Self>) -> Option<Box<dyn Keepable>> {
        Some(self)
    }
}

impl Keepable for Bzip2 {
    fn rebudget(&mut self, budget: &Budget) {
        self.bits.input.get_mut().budget = budget.clone();
    }

    fn memory(&self) -> u64 {
        0
    }
}

/// Where the framing of a stream stands, the decoder having decoded all it was given.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// A marker (a block's start or the stream's end) starts at this bit of the file.
    Marker(u64),
    /// Inside a block: the first marker-shaped bits at or after `scan` that are unchecked; `candidate`, the first
    /// found, which the decoder was given the bits up to.
    Block { scan: u64, candidate: Option<u64> },
    /// The stream's end was given to the decoder; the next stream may start at this byte.
    End(u64),
}

/// One stream's decoder and what it was given.
struct Stream {
    decoder: Decompress,
    /// `b'1'`–`b'9'`: the block size, in 100 kB, of the stream's header.
    level: u8,
    /// Bytes for the decoder, not yet consumed from `pending_at` on.
    pending: Vec<u8>,
    pending_at: usize,
    /// The bit of the file before which every bit has been put in `pending`.
    fed: u64,
    phase: Phase,
    /// The combined CRC of the stream's blocks before the current one, and of those this decoder decoded.
    combined: u32,
    decoded_combined: u32,
    /// The CRC stored at the current block's start.
    block_crc: u32,
    /// Text the current block has yielded so far.
    block_text: u64,
    /// The decoder has met the stream's end.
    ended: bool,
}

impl Stream {
    fn new(level: u8, fed: u64, phase: Phase) -> Self {
        Stream {
            decoder: Decompress::new(false),
            level,
            pending: Vec::with_capacity(READ_LEN + 16),
            pending_at: 0,
            fed,
            phase,
            combined: 0,
            decoded_combined: 0,
            block_crc: 0,
            block_text: 0,
            ended: false,
        }
    }

    /// Decodes into `buf` what the decoder was given; 0 once it needs more input (or the stream has ended).
    fn decode(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while !self.ended {
            let (read_before, wrote_before) = (self.decoder.total_in(), self.decoder.total_out());
            let status = self
                .decoder
                .decompress(&self.pending[self.pending_at..], buf)
                .map_err(|e| damaged(format!("a bzip2 block is corrupt ({e})")))?;
            let read = (self.decoder.total_in() - read_before) as usize;
            let wrote = (self.decoder.total_out() - wrote_before) as usize;
            self.pending_at += read;
            match status {
                Status::StreamEnd => self.ended = true,
                Status::MemNeeded => {
                    return Err(io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        "no memory left to decode the bzip2 stream",
                    ));
                }
                _ => {}
            }
            if wrote > 0 {
                self.block_text += wrote as u64;
                return Ok(wrote);
            }
            if self.pending_at == self.pending.len() {
                break;
            }
            if read == 0 && !self.ended {
                return Err(damaged("the bzip2 decoder stopped making progress"));
            }
        }
        self.pending.clear();
        self.pending_at = 0;
        Ok(0)
    }

    /// Gives the decoder the file's bits from `fed` to `to` (a whole number of bytes after `fed`), shifted to the
    /// decoder's byte alignment.
    fn feed(&mut self, bits: &Bits, to: u64) {
        let (from, shift) = ((self.fed / 8 - bits.first) as usize, self.fed % 8);
        let count = ((to - self.fed) / 8) as usize;
        if shift == 0 {
            self.pending.extend_from_slice(&bits.bytes[from..from + count]);
        } else {
            let pairs = bits.bytes[from..].windows(2).take(count);
            self.pending.extend(pairs.map(|pair| (pair[0] << shift) | (pair[1] >> (8 - shift))));
        }
        self.fed = to;
    }

    /// The current block has been decoded whole (the decoder checked its CRC): counts it in the combined CRCs.
    fn end_block(&mut self) {
        self.combined = self.combined.rotate_left(1) ^ self.block_crc;
        self.decoded_combined = self.decoded_combined.rotate_left(1) ^ self.block_crc;
    }
}

/// The file's compressed bytes read but not yet given to the decoder (and a few before), from `first` on.
struct Bits {
    input: Input,
    bytes: Vec<u8>,
    /// The file offset of `bytes[0]`.
    first: u64,
    /// The input has ended after `bytes`.
    ended: bool,
}

impl Bits {
    /// The file offset after the bytes held.
    fn end(&self) -> u64 {
        self.first + self.bytes.len() as u64
    }

    /// Reads more of the input; `false` when it has ended.
    fn more(&mut self) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        let held = self.bytes.len();
        self.bytes.resize(held + READ_LEN, 0);
        let read = loop {
            match self.input.read(&mut self.bytes[held..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => break read,
            }
        };
        self.bytes.truncate(held + *read.as_ref().unwrap_or(&0));
        self.ended = matches!(read, Ok(0));
        read.map(|n| n > 0)
    }

    /// Holds the bytes before file offset `end`; `false` when the input ends before it.
    fn reach(&mut self, end: u64) -> io::Result<bool> {
        while self.end() < end {
            if !self.more()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Forgets the bytes before file offset `at`.
    fn forget_before(&mut self, at: u64) {
        let n = usize::try_from(at.saturating_sub(self.first)).unwrap_or(usize::MAX).min(self.bytes.len());
        self.bytes.drain(..n);
        self.first += n as u64;
    }

    /// `n` (at most 57) bits from bit `at` of the file, as a number; bits not held read as zeros.
    fn bits(&self, at: u64, n: u32) -> u64 {
        let from = usize::try_from((at / 8).saturating_sub(self.first)).unwrap_or(usize::MAX).min(self.bytes.len());
        let mut word = [0u8; 8];
        let held = &self.bytes[from..(from + 8).min(self.bytes.len())];
        word[..held.len()].copy_from_slice(held);
        (u64::from_be_bytes(word) << (at % 8)) >> (64 - n)
    }

    /// The first bit at or after `from` where either marker's pattern starts, among the bytes held; else `None`,
    /// and the bit before which every start has been checked.
    fn find_marker(&self, from: u64) -> (Option<u64>, u64) {
        let held_bits = self.end() * 8;
        if held_bits < from + MARKER_BITS {
            return (None, from);
        }
        let limit = held_bits - MARKER_BITS + 1;
        let mut byte = from / 8;
        while byte * 8 < limit {
            // A marker starting in `byte` fills the byte after it with one of 16 values.
            let next = usize::try_from(byte + 1 - self.first).unwrap_or(usize::MAX);
            let mut shapes = self.bytes.get(next).map_or(0, |&value| MARKER_SHAPES[usize::from(value)]);
            while shapes != 0 {
                let shape = shapes.trailing_zeros();
                shapes &= shapes - 1;
                let at = byte * 8 + u64::from(shape % 8);
                let marker = if shape < 8 { BLOCK_MARKER } else { END_MARKER };
                if at >= from && at < limit && self.bits(at, 48) == marker {
                    return (Some(at), at);
                }
            }
            byte += 1;
        }
        (None, limit)
    }
}

/// For each byte value, the markers (bit `shift` for the block marker, `8 + shift` for the end marker) that, starting
/// `shift` bits into a byte, fill the next byte with it.
const MARKER_SHAPES: [u16; 256] = {
    let mut shapes = [0u16; 256];
    let mut shift = 0;
    while shift < 8 {
        shapes[((BLOCK_MARKER >> (32 + shift)) & 0xff) as usize] |= 1 << shift;
        shapes[((END_MARKER >> (32 + shift)) & 0xff) as usize] |= 1 << (8 + shift);
        shift += 1;
    }
    shapes
};

/// Bits written most significant first, into bytes.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    word: u64,
    len: u32,
}

impl BitWriter {
    /// Appends the low `n` (at most 32) bits of `value`.
    fn push(&mut self, value: u64, n: u32) {
        self.word = (self.word << n) | (value & ((1 << n) - 1));
        self.len += n;
        while self.len >= 8 {
            self.len -= 8;
            self.bytes.push((self.word >> self.len) as u8);
        }
    }

    /// The bytes written, the last padded with zeros.
    fn finish(mut self) -> Vec<u8> {
        if self.len > 0 {
            self.bytes.push((self.word << (8 - self.len)) as u8);
        }
        self.bytes
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `bytes` held as the framing holds a file's, from file offset `first`.
    fn held(file: &std::fs::File, bytes: Vec<u8>, first: u64) -> Bits {
        let budget = crate::budget::Budget::new(
            std::time::Instant::now() + std::time::Duration::from_secs(60),
            crate::budget::Cancel::new(),
        );
        let input = super::super::input_at(&super::super::own_handle(file).unwrap(), 0, 0, budget);
        Bits { input, bytes, first, ended: true }
    }

    /// Every bit of `packed` where a marker's pattern starts, in or out of a block.
    pub(in crate::media::compressed) fn marker_candidates(packed: &[u8]) -> Vec<u64> {
        let file = tempfile::tempfile().unwrap();
        let bits = held(&file, packed.to_vec(), 0);
        let (mut found, mut from) = (Vec::new(), 0);
        while let (Some(at), _) = bits.find_marker(from) {
            found.push(at);
            from = at + 1;
        }
        found
    }

    /// The argument that a block ends exactly at the candidate the decoder was given the bits up to (and at most 7
    /// past) needs the markers never to overlap one another, or themselves, at a shift of 1 to 7 bits.
    #[test]
    fn the_markers_never_overlap_at_any_shift() {
        let mask = (1u64 << 48) - 1;
        for (a, b) in [
            (BLOCK_MARKER, BLOCK_MARKER),
            (BLOCK_MARKER, END_MARKER),
            (END_MARKER, BLOCK_MARKER),
            (END_MARKER, END_MARKER),
        ] {
            for shift in 1..8 {
                // `b` starting `shift` bits after `a`: their common bits agree only if they overlap.
                let tail_of_a = a & (mask >> shift);
                let head_of_b = b >> shift;
                assert_ne!(tail_of_a, head_of_b, "{a:x} and {b:x} overlap at {shift}");
            }
        }
        assert_ne!(BLOCK_MARKER, END_MARKER);
    }

    #[test]
    fn markers_are_found_at_every_bit_offset_and_bits_are_read_back() {
        for shift in 0..8u64 {
            for marker in [BLOCK_MARKER, END_MARKER] {
                let mut writer = BitWriter::default();
                writer.push(0x5a5a, 16);
                writer.push(0, shift as u32);
                writer.push(marker >> 24, 24);
                writer.push(marker & 0xff_ffff, 24);
                writer.push(0xdead_beef, 32);
                let bytes = writer.finish();
                let file = tempfile::tempfile().unwrap();
                let bits = held(&file, bytes, 10);
                let at = 80 + 16 + shift;
                assert_eq!(bits.find_marker(80), (Some(at), at), "shift {shift}");
                assert_eq!(bits.bits(at + 48, 32), 0xdead_beef);
                assert_eq!(bits.find_marker(at + 1).0, None, "no other");
            }
        }
    }
}
