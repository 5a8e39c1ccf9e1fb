//! WebP: decoded whole (its decoder has no row-by-row or reduced-scale output), so its bound is the full canvas —
//! for the first frame of an animation too — and the decode is averaged down afterwards.
//!
//! An extended WebP states its canvas size in its own header, and each lossy (VP8) bitstream states its size again.
//! The decoder allocates for the bitstream's size before comparing the two, so a tiny canvas over a bitstream that
//! claims 16383 × 16383 would allocate hundreds of megabytes: the sizes are compared here first, before decoding.

use super::decode::{Decode, Failure, Input, METADATA_BYTES, check, into_image, resampler_failure};
use super::resample::{Region, Resampler, RowOrder, Size};
use crate::budget::Budget;
use image::DynamicImage;
use image_webp::WebPDecoder;
use std::io::{self, Read, Seek, SeekFrom};

/// How many chunks of an extended WebP are looked through for its first bitstream.
const MAX_CHUNKS: usize = 1024;

/// A WebP whose chunk headers have been read.
pub struct WebPImage<'a> {
    decoder: WebPDecoder<Input<'a>>,
    size: Size,
    alpha: bool,
    lossy: bool,
    animated: bool,
}

impl<'a> WebPImage<'a> {
    /// Checks the first bitstream's size against the header's, then reads the chunk headers.
    pub fn open(mut input: Input<'a>) -> Result<WebPImage<'a>, Failure> {
        check_first_bitstream(&mut input)?;
        input.seek(SeekFrom::Start(0)).map_err(Failure::from_decoder)?;
        let mut decoder = WebPDecoder::new(input).map_err(Failure::from_decoder)?;
        let (width, height) = decoder.dimensions();
        let (alpha, lossy, animated) = (decoder.has_alpha(), decoder.is_lossy(), decoder.is_animated());
        Ok(WebPImage { decoder, size: Size::new(width, height), alpha, lossy, animated })
    }
}

impl Decode for WebPImage<'_> {
    fn size(&self) -> Size {
        self.size
    }

    fn channels(&self) -> usize {
        if self.alpha { 4 } else { 3 }
    }

    fn peak_bytes(&self, area: Region, out: Size) -> u64 {
        let pixels = self.size.pixels();
        let macroblocks = u64::from(self.size.width.div_ceil(16) * 16) * u64::from(self.size.height.div_ceil(16) * 16);
        // Luma and two quarter-size chroma planes for a lossy frame; an alpha plane decoded as 32-bit pixels, then
        // kept as 8; a lossless frame decoded straight into the output when it has alpha, else as 32-bit pixels
        // first (and a margin for its transforms' small images); an animation's frame and canvas beside them.
        let lossy = macroblocks * 3 / 2;
        let decoder = match (self.animated, self.lossy, self.alpha) {
            (true, _, _) => lossy + pixels * 13,
            (false, true, true) => lossy + pixels * 5,
            (false, true, false) => lossy,
            (false, false, true) => pixels,
            (false, false, false) => pixels * 5,
        };
        let full = pixels * self.channels() as u64;
        let resampler = Resampler::bytes_needed(area, out, self.channels(), RowOrder::TopDown);
        full + decoder + resampler + METADATA_BYTES
    }

    fn decode(mut self: Box<Self>, area: Region, out: Size, budget: &Budget) -> Result<DynamicImage, Failure> {
        let bytes =
            self.decoder.output_buffer_size().ok_or_else(|| Failure::TooLarge("its canvas is too large".into()))?;
        let mut pixels = vec![0u8; bytes];
        self.decoder.read_image(&mut pixels).map_err(Failure::from_decoder)?;
        check(budget)?;
        let channels = self.channels();
        let mut resampler =
            Resampler::new(area, out, channels, RowOrder::TopDown).map_err(|_| resampler_failure(area.size, out))?;
        let rows = pixels.chunks_exact(self.size.width as usize * channels).enumerate();
        for (y, row) in rows.skip(area.y as usize).take(area.size.height as usize) {
            resampler.add_row(y as u32, 0, 1, row);
        }
        drop(pixels);
        into_image(resampler, channels)
    }
}

/// In an extended WebP, the first lossy bitstream (still, or in the first animation frame) must be the size its
/// header gives; a simple WebP's size comes from its bitstream, so it is consistent by construction.
fn check_first_bitstream(input: &mut Input<'_>) -> Result<(), Failure> {
    let Some(canvas) = extended_canvas(input).map_err(Failure::from_decoder)? else { return Ok(()) };
    for _ in 0..MAX_CHUNKS {
        let Some((fourcc, size)) = chunk_header(input).map_err(Failure::from_decoder)? else { return Ok(()) };
        match &fourcc {
            b"VP8 " => return compare(lossy_size(input).map_err(Failure::from_decoder)?, canvas),
            b"VP8L" => return Ok(()),
            b"ANMF" => return check_first_frame(input, size),
            _ => skip(input, size).map_err(Failure::from_decoder)?,
        }
    }
    Ok(())
}

/// The canvas of an extended WebP (`RIFF…WEBPVP8X`), positioned after its VP8X chunk; `None` for other layouts.
fn extended_canvas(input: &mut Input<'_>) -> io::Result<Option<Size>> {
    let mut head = [0u8; 30];
    input.seek(SeekFrom::Start(0))?;
    if input.read_exact(&mut head).is_err() || &head[12..16] != b"VP8X" {
        return Ok(None);
    }
    let width = u24(&head[24..27]) + 1;
    let height = u24(&head[27..30]) + 1;
    let vp8x_size = u64::from(u32::from_le_bytes([head[16], head[17], head[18], head[19]]));
    input.seek(SeekFrom::Start(20 + vp8x_size + (vp8x_size & 1)))?;
    Ok(Some(Size::new(width, height)))
}

/// The first frame of an animation: its lossy bitstream must be the size of the frame.
fn check_first_frame(input: &mut Input<'_>, anmf_size: u64) -> Result<(), Failure> {
    let mut head = [0u8; 16];
    input.read_exact(&mut head).map_err(Failure::from_decoder)?;
    let frame = Size::new(u24(&head[6..9]) + 1, u24(&head[9..12]) + 1);
    let mut left = anmf_size.saturating_sub(16);
    while left >= 8 {
        let Some((fourcc, size)) = chunk_header(input).map_err(Failure::from_decoder)? else { return Ok(()) };
        match &fourcc {
            b"VP8 " => return compare(lossy_size(input).map_err(Failure::from_decoder)?, frame),
            b"VP8L" => return Ok(()),
            _ => skip(input, size).map_err(Failure::from_decoder)?,
        }
        left = left.saturating_sub(8 + size + (size & 1));
    }
    Ok(())
}

fn compare(bitstream: Size, header: Size) -> Result<(), Failure> {
    if bitstream == header {
        return Ok(());
    }
    Err(Failure::Corrupt(format!(
        "its VP8 bitstream is {}×{} but its header says {}×{}",
        bitstream.width, bitstream.height, header.width, header.height
    )))
}

/// A chunk's four-character code and payload length; `None` at the end of the file.
fn chunk_header(input: &mut Input<'_>) -> io::Result<Option<([u8; 4], u64)>> {
    let mut head = [0u8; 8];
    if input.read_exact(&mut head).is_err() {
        return Ok(None);
    }
    let fourcc = [head[0], head[1], head[2], head[3]];
    Ok(Some((fourcc, u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]])))))
}

/// The size a VP8 key frame states: after a 3-byte frame tag and the start code, 14 bits each.
fn lossy_size(input: &mut Input<'_>) -> io::Result<Size> {
    let mut head = [0u8; 10];
    input.read_exact(&mut head)?;
    let width = u32::from(u16::from_le_bytes([head[6], head[7]]) & 0x3FFF);
    let height = u32::from(u16::from_le_bytes([head[8], head[9]]) & 0x3FFF);
    Ok(Size::new(width, height))
}

/// Skips a chunk's payload (padded to an even length).
fn skip(input: &mut Input<'_>, size: u64) -> io::Result<()> {
    let padded = i64::try_from(size + (size & 1)).map_err(io::Error::other)?;
    input.seek(SeekFrom::Current(padded)).map(|_| ())
}

fn u24(bytes: &[u8]) -> u32 {
    u32::from(bytes[0]) | u32::from(bytes[1]) << 8 | u32::from(bytes[2]) << 16
}
