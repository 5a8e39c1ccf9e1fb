//! zstd, decoded by libzstd's streaming decoder: frame after frame, skippable frames skipped, each frame's checksum
//! (when it has one, as `zstd` writes by default) checked against its text by the library.
//!
//! A frame is decoded from its own start only (its blocks refer back up to its window, 128 MiB at most: see
//! [`MAX_WINDOW_LOG`]), so the restart points are the starts of frames: nothing to keep but the offsets. The decoder
//! says when a frame has ended and all its text has been handed out; the input it has not taken then starts the next
//! frame. A file of one frame (what `zstd` writes, with or without `-T`) has no point; files of many frames (`pzstd`,
//! the seekable format, `cat a.zst b.zst`) have one every few MiB of text.
//!
//! Memory: the decoder holds its window, sized by the frame's header, and a block; what libzstd says it holds is
//! reserved ([`crate::media::memory`]) after every call, before the next call decodes more than a block into it.

use super::{Input, check_at, cover, damaged, input_offset};
use crate::budget::Budget;
use crate::media::memory::{Growing, Pool};
use crate::window::restarts::Restart;
use crate::window::stream::{Decoder, Keepable};
use std::io::{self, BufRead, Read};
use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, get_error_name};

/// The largest window a frame may ask for, as a power of two: 128 MiB, libzstd's own default bound, which `zstd` stays
/// within at every level (`--ultra -22` and plain `--long` included; `--long=28` and above exceed it). A frame asking
/// for more is refused before it is allocated.
const MAX_WINDOW_LOG: u32 = 27;

/// libzstd's name for a frame whose window exceeds the bound (its words; a test pins them).
const WINDOW_TOO_LARGE: &str = "Frame requires too much memory for decoding";
/// libzstd's name for an allocation that failed (under an address-space limit, say).
const NO_MEMORY: &str = "Allocation error : not enough memory";

/// Every frame of a zstd stream in turn, from some frame's start.
pub(super) struct ZstdFrames {
    source: Input,
    decoder: DCtx<'static>,
    memory: Growing,
    /// Within a frame: the decoder has taken some of it and has not yet handed out all its text.
    in_frame: bool,
    /// Text yielded so far: the text offset of the next byte.
    text: u64,
    want_restart: bool,
    made: Option<Restart>,
}

impl ZstdFrames {
    /// The frames from `source`'s first byte (the start of a frame), whose text starts at text offset `text`.
    pub(super) fn new(source: Input, text: u64) -> io::Result<Self> {
        let mut decoder = DCtx::try_create()
            .ok_or_else(|| io::Error::new(io::ErrorKind::OutOfMemory, "no memory left to decode the zstd stream"))?;
        decoder.set_parameter(DParameter::WindowLogMax(MAX_WINDOW_LOG)).map_err(refusal)?;
        let memory = Growing::new(Pool::shared(), source.get_ref().budget.clone());
        Ok(ZstdFrames { source, decoder, memory, in_frame: false, text, want_restart: false, made: None })
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let ended = self.source.fill_buf()?.is_empty();
            if ended && !self.in_frame {
                return Ok(0);
            }
            if !self.in_frame && std::mem::take(&mut self.want_restart) {
                self.made = Some(self.restart_here()?);
            }
            let input = self.source.fill_buf()?;
            let mut taken = InBuffer::around(input);
            let mut written = OutBuffer::around(&mut *buf);
            // 0 once a frame has ended and all its text is out; else how much more input the frame wants.
            let wanted = self.decoder.decompress_stream(&mut written, &mut taken).map_err(refusal)?;
            let (consumed, produced) = (taken.pos(), written.pos());
            self.source.consume(consumed);
            cover(&mut self.memory, self.decoder.sizeof() as u64, "a zstd frame")?;
            self.in_frame = wanted != 0;
            if produced > 0 {
                self.text += produced as u64;
                return Ok(produced);
            }
            if ended && self.in_frame {
                return Err(damaged("the zstd stream is cut short"));
            }
            if !ended && consumed == 0 {
                return Err(damaged("the zstd decoder stopped making progress"));
            }
        }
    }
}

impl Decoder for ZstdFrames {
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

impl Keepable for ZstdFrames {
    fn rebudget(&mut self, budget: &Budget) {
        self.source.get_mut().budget = budget.clone();
        self.memory.set_budget(budget);
    }

    fn memory(&self) -> u64 {
        self.memory.held()
    }
}

impl ZstdFrames {
    /// The bytes of memory it holds reserved.
    #[cfg(test)]
    pub(super) fn memory_held(&self) -> u64 {
        self.memory.held()
    }

    /// A restart point at the next input byte, the start of a frame.
    fn restart_here(&self) -> io::Result<Restart> {
        let input = input_offset(&self.source);
        let raw = self.source.get_ref();
        let check = check_at(&raw.file, input, raw.end)?;
        Ok(Restart { at: self.text, input, check, state: Box::new([]) })
    }
}

/// What libzstd's refusal (its error's name) means for the file, in words the model can act on.
fn refusal(code: usize) -> io::Error {
    let name = get_error_name(code);
    if name == WINDOW_TOO_LARGE {
        let mib = (1u64 << MAX_WINDOW_LOG) >> 20;
        return io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("a zstd frame needs a window of more than {mib} MiB to decode, more than a read may take"),
        );
    }
    if name == NO_MEMORY {
        return io::Error::new(io::ErrorKind::OutOfMemory, "no memory left to decode the zstd stream");
    }
    damaged(format!("zstd: {}", name.trim_end_matches('.').to_lowercase()))
}
