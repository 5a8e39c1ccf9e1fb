//! zstd, frame by frame with ruzstd (whose own streaming decoder reads one frame), skippable frames skipped.
//!
//! Each frame's checksum, when it has one (`zstd` writes one by default), is checked against its text at the
//! frame's end. A frame is decoded from its own start only (its blocks refer back up to its window, as large as
//! 128 MiB), so the restart points are the starts of frames: nothing to keep but the offsets. A file of one frame (what `zstd` writes,
//! with or without `-T`) has none; files of many frames (`pzstd`, the seekable format, `cat a.zst b.zst`) have
//! one every few MiB of text.

use super::{Input, check_at, damaged, input_offset};
use crate::window::restarts::Restart;
use crate::window::stream::Decoder;
use ruzstd::decoding::FrameDecoder;
use std::io::{self, BufRead, Read};

/// Every frame of a zstd stream in turn, from some frame's start.
pub(super) struct ZstdFrames<'f> {
    source: Input<'f>,
    /// The frame being decoded; `None` between frames.
    frame: Option<FrameDecoder>,
    /// Text yielded so far: the text offset of the next byte.
    text: u64,
    want_restart: bool,
    made: Option<Restart>,
}

impl<'f> ZstdFrames<'f> {
    /// The frames from `source`'s first byte (the start of a frame), whose text starts at text offset `text`.
    pub(super) fn new(source: Input<'f>, text: u64) -> Self {
        ZstdFrames { source, frame: None, text, want_restart: false, made: None }
    }
}

impl Read for ZstdFrames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        loop {
            if let Some(frame) = self.frame.as_mut() {
                if frame.can_collect() > 0 {
                    let n = frame.read(buf)?;
                    self.text += n as u64;
                    return Ok(n);
                }
                if !frame.is_finished() {
                    frame.decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1)).map_err(damaged)?;
                    continue;
                }
                // ruzstd computes a frame's checksum but leaves comparing it to the caller.
                if let (Some(stored), Some(computed)) =
                    (frame.get_checksum_from_data(), frame.get_calculated_checksum())
                    && stored != computed
                {
                    return Err(damaged("a zstd frame's checksum does not match its text"));
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

impl Decoder for ZstdFrames<'_> {
    fn want_restart(&mut self) {
        self.want_restart = true;
    }

    fn take_restart(&mut self) -> Option<Restart> {
        self.made.take()
    }
}

impl ZstdFrames<'_> {
    /// Reads the next frame's header: a frame to decode, or a skippable frame passed over. A restart point is made
    /// at its start when one is wanted.
    fn start_frame(&mut self) -> io::Result<()> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        if self.want_restart {
            let input = input_offset(&self.source);
            let raw = self.source.get_ref();
            let check = check_at(raw.file, input, raw.end)?;
            self.made = Some(Restart { at: self.text, input, check, state: Box::new([]) });
            self.want_restart = false;
        }
        let mut frame = FrameDecoder::new();
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
