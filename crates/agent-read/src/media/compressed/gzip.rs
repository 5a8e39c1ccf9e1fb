//! gzip, member by member: headers parsed by flate2, deflate data inflated by miniz_oxide (the pure-Rust inflater
//! flate2 itself builds on), which can stop between deflate blocks.
//!
//! A restart point sits at such a boundary: the offset of the next compressed byte, the bits of the byte before it
//! that the next block still needs, and the last 32 KiB of text (as far back as deflate refers), kept compressed.
//! Every member's length is checked against its trailer, and its CRC-32 too unless the decoder resumed in its middle
//! (the CRC needs the member's whole text; what is checked there is that the compressed bytes are those the point was
//! made from, see [`super::Compression::decoder_at`]).

use super::{Input, check_at, damaged, input_offset};
use crate::budget::Budget;
use crate::window::restarts::Restart;
use crate::window::stream::{Decoder, Keepable};
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{BlockBoundaryState, DecompressorOxide, decompress, inflate_flags};
use std::io::{self, BufRead, Read};
use std::ops::Range;

/// Text deflate may refer back to.
const WINDOW: usize = 32 * 1024;
/// The ring the inflater writes into: a power of two, holding the window and the text decoded after it.
const RING: usize = 4 * WINDOW;

/// The text of a gzip file's members, from the file's start or from a restart point.
pub(super) struct Gzip {
    input: Input,
    inflater: Box<DecompressorOxide>,
    ring: Box<[u8]>,
    /// Where the inflater writes next in `ring`.
    write: usize,
    /// Decoded text not read yet: what the inflater wrote last.
    pending: Range<usize>,
    /// The member being inflated; `None` between members.
    member: Option<Member>,
    /// Text decoded so far: the text offset of `ring[write]`.
    text: u64,
    want_restart: bool,
    made: Option<Restart>,
}

struct Member {
    /// The text offset where the member's text starts.
    start: u64,
    /// The CRC-32 of its text so far; `None` when decoding resumed in its middle.
    crc: Option<crc32fast::Hasher>,
    /// Its deflate data has ended: its trailer is next, read once its last text has been read.
    inflated: bool,
}

impl Gzip {
    /// The members from `input`'s first byte, the start of a member.
    pub(super) fn new(input: Input) -> Self {
        Gzip {
            input,
            inflater: Box::default(),
            ring: vec![0u8; RING].into(),
            write: 0,
            pending: 0..0,
            member: None,
            text: 0,
            want_restart: false,
            made: None,
        }
    }

    /// The members from restart point `point` on, `input` starting at its compressed offset.
    pub(super) fn resume(input: Input, point: &Restart) -> io::Result<Self> {
        let invalid = || super::not_a_restart("its state is not a gzip restart point's");
        let [num_bits, bit_buf, rest @ ..] = &point.state[..] else { return Err(invalid()) };
        let (into_member, packed) = rest.split_first_chunk::<8>().ok_or_else(invalid)?;
        let into_member = u64::from_le_bytes(*into_member);
        let window_len = usize::try_from(into_member).unwrap_or(WINDOW).min(WINDOW);
        let window = miniz_oxide::inflate::decompress_to_vec_with_limit(packed, WINDOW).map_err(|_| invalid())?;
        if *num_bits > 7 || into_member > point.at || window.len() != window_len {
            return Err(invalid());
        }
        let mut gzip = Gzip::new(input);
        // The inflater finds the window just before where it writes.
        gzip.ring[WINDOW - window_len..WINDOW].copy_from_slice(&window);
        gzip.write = WINDOW;
        gzip.pending = WINDOW..WINDOW;
        let boundary = BlockBoundaryState { num_bits: *num_bits, bit_buf: *bit_buf, ..BlockBoundaryState::default() };
        gzip.inflater = Box::new(DecompressorOxide::from_block_boundary_state(&boundary));
        gzip.member = Some(Member { start: point.at - into_member, crc: None, inflated: false });
        gzip.text = point.at;
        Ok(gzip)
    }

    /// Decodes more text into `pending`, or reads a member's trailer or the next one's header; `false` at the end.
    fn advance(&mut self) -> io::Result<bool> {
        match &self.member {
            None => self.start_member(),
            Some(member) if member.inflated => self.finish_member().map(|()| true),
            Some(_) => self.inflate().map(|()| true),
        }
    }

    /// Reads the next member's header; `false` when the input has ended instead.
    fn start_member(&mut self) -> io::Result<bool> {
        if self.input.fill_buf()?.is_empty() {
            return Ok(false);
        }
        let mut header = flate2::bufread::GzDecoder::new(&mut self.input);
        if header.header().is_none() {
            // The parser keeps what stopped it, and answers it to the first read.
            let stopped = header.read(&mut [0u8; 1]).err();
            return Err(match stopped {
                Some(e) if !matches!(e.kind(), io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof) => e,
                Some(e) => damaged(format!("a gzip member's header is damaged or cut short ({e})")),
                None => damaged("a gzip member's header is damaged"),
            });
        }
        *self.inflater = DecompressorOxide::new();
        self.member = Some(Member { start: self.text, crc: Some(crc32fast::Hasher::new()), inflated: false });
        Ok(true)
    }

    fn inflate(&mut self) -> io::Result<()> {
        let input = self.input.fill_buf()?;
        let ended = input.is_empty();
        let mut flags = if ended { 0 } else { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT };
        if self.want_restart {
            flags |= inflate_flags::TINFL_FLAG_STOP_ON_BLOCK_BOUNDARY;
        }
        let (status, used, wrote) = decompress(&mut self.inflater, input, &mut self.ring, self.write, flags);
        self.input.consume(used);
        let written = self.write..self.write + wrote;
        let Some(member) = &mut self.member else { return Ok(()) };
        if let Some(crc) = &mut member.crc {
            crc.update(&self.ring[written.clone()]);
        }
        self.write = written.end % RING;
        self.pending = written;
        self.text += wrote as u64;
        match status {
            TINFLStatus::Done => {
                member.inflated = true;
                Ok(())
            }
            TINFLStatus::BlockBoundary => {
                self.make_restart()?;
                Ok(())
            }
            TINFLStatus::HasMoreOutput => Ok(()),
            TINFLStatus::NeedsMoreInput if !ended && used + wrote > 0 => Ok(()),
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                Err(damaged("the gzip stream is cut short"))
            }
            status => Err(damaged(format!("the deflate data is corrupt ({status:?})"))),
        }
    }

    /// Checks the trailer of the member that just ended against its text.
    fn finish_member(&mut self) -> io::Result<()> {
        let mut trailer = [0u8; 8];
        self.input.read_exact(&mut trailer).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => damaged("the gzip stream is cut short in a member's trailer"),
            _ => e,
        })?;
        let Some(member) = self.member.take() else { return Ok(()) };
        let [c0, c1, c2, c3, s0, s1, s2, s3] = trailer;
        if let Some(crc) = member.crc
            && crc.finalize() != u32::from_le_bytes([c0, c1, c2, c3])
        {
            return Err(damaged("a gzip member's CRC-32 does not match its text"));
        }
        // The trailer holds the length modulo 2^32.
        if (self.text - member.start) as u32 != u32::from_le_bytes([s0, s1, s2, s3]) {
            return Err(damaged("a gzip member's length does not match its trailer"));
        }
        Ok(())
    }

    /// Makes a restart point where the inflater stopped, between two deflate blocks.
    fn make_restart(&mut self) -> io::Result<()> {
        self.want_restart = false;
        let (Some(boundary), Some(member)) = (self.inflater.block_boundary_state(), &self.member) else {
            return Ok(());
        };
        let into_member = self.text - member.start;
        let window_len = usize::try_from(into_member).unwrap_or(WINDOW).min(WINDOW);
        let from = (self.write + RING - window_len) % RING;
        let mut window = Vec::with_capacity(window_len);
        if window_len > 0 && from >= self.write {
            window.extend_from_slice(&self.ring[from..]);
            window.extend_from_slice(&self.ring[..self.write]);
        } else {
            window.extend_from_slice(&self.ring[from..self.write]);
        }
        let packed = miniz_oxide::deflate::compress_to_vec(&window, 1);
        let mut state = Vec::with_capacity(10 + packed.len());
        state.extend_from_slice(&[boundary.num_bits, boundary.bit_buf]);
        state.extend_from_slice(&into_member.to_le_bytes());
        state.extend_from_slice(&packed);
        let input = input_offset(&self.input);
        let raw = self.input.get_ref();
        let check = check_at(&raw.file, input, raw.end)?;
        self.made = Some(Restart { at: self.text, input, check, state: state.into() });
        Ok(())
    }
}

impl Read for Gzip {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pending.is_empty() {
            if !self.advance()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.ring[self.pending.start..self.pending.start + n]);
        self.pending.start += n;
        Ok(n)
    }
}

impl Decoder for Gzip {
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

impl Keepable for Gzip {
    fn rebudget(&mut self, budget: &Budget) {
        self.input.get_mut().budget = budget.clone();
    }

    fn memory(&self) -> u64 {
        0
    }
}
