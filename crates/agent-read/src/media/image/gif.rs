//! GIF: the first frame, decoded a line at a time straight into the output, placed on the logical screen as the
//! `image` crate places it (where the frame does not cover the screen, the screen is transparent black).
//!
//! The frame's own size comes from its image descriptor, read before any of its pixels: a frame larger than its
//! screen is decoded (and clipped), so the pixel limit applies to the larger of the two.

use super::decode::{
    Decode, Failure, Input, METADATA_BYTES, ROWS_BETWEEN_CHECKS, check, into_image, resampler_failure,
};
use super::resample::{Region, Resampler, RowOrder, Size};
use crate::budget::Budget;
use gif::{ColorOutput, DecodeOptions, Decoder, MemoryLimit};
use image::DynamicImage;
use std::num::NonZeroU64;

/// What the decoder may spend on extensions (XMP, ICC) beside the pixels.
const METADATA_LIMIT: NonZeroU64 = match NonZeroU64::new(METADATA_BYTES) {
    Some(bytes) => bytes,
    None => NonZeroU64::MIN,
};

/// GIF output is always RGBA.
const CHANNELS: usize = 4;

/// The rows of an interlaced frame in the order they are stored: every 8th from 0, every 8th from 4, every 4th
/// from 2, every 2nd from 1.
const INTERLACE: [(u32, u32); 4] = [(0, 8), (4, 8), (2, 4), (1, 2)];

/// A GIF whose header and first frame's descriptor have been read.
pub struct GifImage<'a> {
    decoder: Decoder<Input<'a>>,
    screen: Size,
    frame: Frame,
}

/// Where the first frame sits on the screen.
struct Frame {
    left: u32,
    top: u32,
    size: Size,
    interlaced: bool,
}

impl<'a> GifImage<'a> {
    /// Reads the header, the logical screen and the first frame's descriptor; a GIF without a frame is corrupt.
    pub fn open(input: Input<'a>) -> Result<GifImage<'a>, Failure> {
        let mut options = DecodeOptions::new();
        options.set_color_output(ColorOutput::RGBA);
        options.set_memory_limit(MemoryLimit::Bytes(METADATA_LIMIT));
        let mut decoder = options.read_info(input).map_err(Failure::from_decoder)?;
        let screen = Size::new(u32::from(decoder.width()), u32::from(decoder.height()));
        let first = decoder.next_frame_info().map_err(Failure::from_decoder)?;
        let first = first.ok_or_else(|| Failure::Corrupt("it holds no image".into()))?;
        let frame = Frame {
            left: u32::from(first.left),
            top: u32::from(first.top),
            size: Size::new(u32::from(first.width), u32::from(first.height)),
            interlaced: first.interlaced,
        };
        Ok(GifImage { decoder, screen, frame })
    }

    fn order(&self) -> RowOrder {
        if self.frame.interlaced { RowOrder::Any } else { RowOrder::TopDown }
    }
}

impl Decode for GifImage<'_> {
    fn size(&self) -> Size {
        self.screen
    }

    fn decoded_size(&self) -> Size {
        if self.frame.size.pixels() > self.screen.pixels() { self.frame.size } else { self.screen }
    }

    fn channels(&self) -> usize {
        CHANNELS
    }

    fn peak_bytes(&self, area: Region, out: Size) -> u64 {
        // One frame line as palette indices and as RGBA, and the decoder's tables and metadata.
        let line = u64::from(self.frame.size.width) * (1 + CHANNELS as u64);
        let resampler = Resampler::bytes_needed(area, out, CHANNELS, self.order());
        line + resampler + METADATA_BYTES
    }

    fn decode(mut self: Box<Self>, area: Region, out: Size, budget: &Budget) -> Result<DynamicImage, Failure> {
        let mut resampler =
            Resampler::new(area, out, CHANNELS, self.order()).map_err(|_| resampler_failure(area.size, out))?;
        let Frame { left, top, size, interlaced } = self.frame;
        let mut line = vec![0u8; size.width as usize * CHANNELS];
        if line.is_empty() {
            return into_image(resampler, CHANNELS);
        }
        let rows: Box<dyn Iterator<Item = u32>> = if interlaced {
            Box::new(INTERLACE.into_iter().flat_map(move |(first, step)| (first..size.height).step_by(step as usize)))
        } else {
            Box::new(0..size.height)
        };
        for (count, row) in rows.enumerate() {
            // A palette index past the palette's end leaves its pixel as it was: transparent black.
            line.fill(0);
            if !self.decoder.fill_buffer(&mut line).map_err(Failure::from_decoder)? {
                return Err(Failure::Corrupt("its image data ends before the frame's last row".into()));
            }
            resampler.add_row(top + row, left, 1, &line);
            if (count as u32 + 1).is_multiple_of(ROWS_BETWEEN_CHECKS) {
                check(budget)?;
            }
        }
        into_image(resampler, CHANNELS)
    }
}
