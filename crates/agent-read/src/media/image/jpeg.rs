//! JPEG, decoded at reduced scale when it is downscaled anyway: the inverse DCT of each 8 × 8 block can produce
//! 4 × 4, 2 × 2 or 1 × 1 pixels instead of 64, so a 6000 × 4000 photo headed for 2000 pixels is decoded at 3000 ×
//! 2000 (scale 1/2) and only then averaged down to its exact size. Progressive JPEGs still hold every block's
//! coefficients until their last scan, whatever the scale: their bound says so.

use super::decode::{Decode, Failure, Input, METADATA_BYTES, check, into_image, resampler_failure};
use super::resample::{Region, Resampler, RowOrder, Size};
use crate::budget::Budget;
use image::DynamicImage;
use jpeg_decoder::{CodingProcess, Decoder, ImageInfo, PixelFormat};
use std::io::{self, Read, Seek, SeekFrom};

/// The scales the decoder offers, in eighths: 1/8, 1/4, 1/2.
const REDUCED_SCALES: [u32; 3] = [1, 2, 4];

/// A JPEG whose headers (up to its frame header) have been read.
pub struct JpegImage<'a> {
    decoder: Decoder<Input<'a>>,
    info: ImageInfo,
    /// The file's length: what its metadata segments (EXIF, ICC) can add up to at most.
    file_bytes: u64,
}

impl<'a> JpegImage<'a> {
    /// Reads the markers up to the frame header, which gives the size, the components and the coding process.
    pub fn open(mut input: Input<'a>, file_bytes: u64) -> Result<JpegImage<'a>, Failure> {
        check_profile_segments(&mut input)?;
        input.seek(SeekFrom::Start(0)).map_err(Failure::from_decoder)?;
        let mut decoder = Decoder::new(input);
        decoder.read_info().map_err(Failure::from_decoder)?;
        let info = decoder.info().ok_or_else(|| Failure::Corrupt("it has no frame header".into()))?;
        Ok(JpegImage { decoder, info, file_bytes })
    }

    fn components(&self) -> u64 {
        match self.info.pixel_format {
            PixelFormat::L8 | PixelFormat::L16 => 1,
            PixelFormat::RGB24 => 3,
            PixelFormat::CMYK32 => 4,
        }
    }

    /// The scale, in eighths, to decode at for `area` to become `out`: the smallest at which the area is still at
    /// least `out` on both sides.
    fn eighths(&self, area: Region, out: Size) -> u32 {
        if self.info.coding_process == CodingProcess::Lossless {
            return 8;
        }
        let fits = |eighths| {
            let decoded = scaled(area.size, eighths);
            decoded.width >= out.width && decoded.height >= out.height
        };
        REDUCED_SCALES.into_iter().find(|&eighths| fits(eighths)).unwrap_or(8)
    }
}

/// The decoder keeps every ICC profile segment it meets, and it meets those before the frame header while reading
/// only the header, that is, before the read has reserved memory: their total is checked first, walking the
/// segments (a marker and a length each) up to the frame header. Anything malformed is left to the decoder.
fn check_profile_segments(input: &mut Input<'_>) -> Result<(), Failure> {
    let profiles = profile_bytes_before_frame(input).map_err(Failure::from_decoder)?;
    if profiles <= METADATA_BYTES {
        return Ok(());
    }
    Err(Failure::TooLarge(format!(
        "its ICC profile segments hold more than the {} MiB a read decodes beside the pixels",
        METADATA_BYTES >> 20
    )))
}

/// Bytes of ICC profile segments (APP2 `ICC_PROFILE`) before the frame header; counting stops once past the limit.
fn profile_bytes_before_frame(input: &mut Input<'_>) -> io::Result<u64> {
    input.seek(SeekFrom::Start(0))?;
    let mut profiles = 0u64;
    let mut byte = [0u8; 1];
    while profiles <= METADATA_BYTES {
        // A marker: 0xFF (fill bytes repeat it), then its code.
        if input.read(&mut byte)? == 0 || byte[0] != 0xFF {
            return Ok(profiles);
        }
        let marker = loop {
            input.read_exact(&mut byte)?;
            if byte[0] != 0xFF {
                break byte[0];
            }
        };
        match marker {
            0xD8 | 0x01 | 0xD0..=0xD7 => continue,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => return Ok(profiles),
            0xDA | 0xD9 | 0x00 => return Ok(profiles),
            _ => {}
        }
        let mut length = [0u8; 2];
        input.read_exact(&mut length)?;
        let payload = u64::from(u16::from_be_bytes(length)).saturating_sub(2);
        let mut tag = [0u8; 12];
        let tagged = marker == 0xE2 && payload >= 12;
        if tagged {
            input.read_exact(&mut tag)?;
            if &tag == b"ICC_PROFILE\0" {
                profiles += payload;
            }
        }
        let rest = payload - if tagged { 12 } else { 0 };
        input.seek(SeekFrom::Current(rest as i64))?;
    }
    Ok(profiles)
}

/// `size` decoded at `eighths`/8, as the decoder rounds it (up).
fn scaled(size: Size, eighths: u32) -> Size {
    let scale = |length: u32| (u64::from(length) * u64::from(eighths)).div_ceil(8) as u32;
    Size::new(scale(size.width), scale(size.height))
}

/// `area` of the full-size image as it lies in the image decoded at `eighths`/8 (`decoded` pixels): its edges scaled,
/// outward, so that it covers every decoded pixel the area touches.
fn scaled_area(area: Region, eighths: u32, decoded: Size) -> Region {
    let down = |at: u32| (u64::from(at) * u64::from(eighths) / 8) as u32;
    let up = |at: u32| (u64::from(at) * u64::from(eighths)).div_ceil(8) as u32;
    let (x0, y0) = (down(area.x).min(decoded.width), down(area.y).min(decoded.height));
    let x1 = up(area.x.saturating_add(area.size.width)).clamp(x0, decoded.width);
    let y1 = up(area.bottom()).clamp(y0, decoded.height);
    Region { x: x0, y: y0, size: Size::new(x1 - x0, y1 - y0) }
}

/// Pixels of `size` rounded out to whole 32 × 32 blocks (the largest unit a component is stored in).
fn padded_pixels(size: Size) -> u64 {
    u64::from(size.width.div_ceil(32) * 32) * u64::from(size.height.div_ceil(32) * 32)
}

impl Decode for JpegImage<'_> {
    fn size(&self) -> Size {
        Size::new(u32::from(self.info.width), u32::from(self.info.height))
    }

    fn channels(&self) -> usize {
        if self.components() == 1 { 1 } else { 3 }
    }

    fn peak_bytes(&self, area: Region, out: Size) -> u64 {
        let components = self.components();
        let decoded = scaled(self.size(), self.eighths(area, out));
        let full = padded_pixels(self.size());
        let held = match self.info.coding_process {
            // 16-bit samples a component, then the interleaved output.
            CodingProcess::Lossless => full * components * 4,
            // Every block's coefficients (16 bits each), kept until the last scan.
            CodingProcess::DctProgressive => full * components * 2 + padded_pixels(decoded) * components * 2,
            // Each component's plane at the decoded scale, then the interleaved output.
            CodingProcess::DctSequential => padded_pixels(decoded) * components * 2,
        };
        let resampler = Resampler::bytes_needed(area, out, self.channels(), RowOrder::TopDown);
        held + resampler + self.file_bytes + METADATA_BYTES
    }

    fn decode(mut self: Box<Self>, area: Region, out: Size, budget: &Budget) -> Result<DynamicImage, Failure> {
        let eighths = self.eighths(area, out);
        if eighths < 8 {
            let target = scaled(self.size(), eighths);
            let (width, height) = (target.width as u16, target.height as u16);
            let (width, height) = self.decoder.scale(width, height).map_err(Failure::from_decoder)?;
            if u32::from(width) < out.width || u32::from(height) < out.height {
                // The decoder picks a scale where one side reaches the request; for tiny sides both need to.
                self.decoder.scale(u16::MAX, u16::MAX).map_err(Failure::from_decoder)?;
            }
        }
        let pixels = self.decoder.decode().map_err(Failure::from_decoder)?;
        check(budget)?;
        let info = self.decoder.info().ok_or_else(|| Failure::Corrupt("it has no frame header".into()))?;
        let decoded = Size::new(u32::from(info.width), u32::from(info.height));
        let (pixels, channels) = to_8_bit_channels(pixels, info.pixel_format, decoded)?;
        let area = if decoded == self.size() { area } else { scaled_area(area, eighths, decoded) };
        let out = Size::new(out.width.min(area.size.width), out.height.min(area.size.height));
        let mut resampler =
            Resampler::new(area, out, channels, RowOrder::TopDown).map_err(|_| resampler_failure(area.size, out))?;
        let rows = pixels.chunks_exact(decoded.width as usize * channels).enumerate();
        for (y, row) in rows.skip(area.y as usize).take(area.size.height as usize) {
            resampler.add_row(y as u32, 0, 1, row);
        }
        into_image(resampler, channels)
    }
}

/// The decoder's pixels as grey or RGB samples of 8 bits: CMYK (and YCCK) turned into RGB in place.
fn to_8_bit_channels(mut pixels: Vec<u8>, format: PixelFormat, size: Size) -> Result<(Vec<u8>, usize), Failure> {
    let components = match format {
        PixelFormat::L8 | PixelFormat::L16 => 1,
        PixelFormat::RGB24 => 3,
        PixelFormat::CMYK32 => 4,
    };
    if pixels.len() as u64 != size.pixels() * components {
        // Lossless JPEGs of more than 8 bits a sample come out 16 bits wide.
        return Err(Failure::Corrupt("samples of more than 8 bits are not supported".into()));
    }
    if format != PixelFormat::CMYK32 {
        return Ok((pixels, components as usize));
    }
    let count = pixels.len() / 4;
    for index in 0..count {
        let [c, m, y, k] = [0, 1, 2, 3].map(|channel| pixels[index * 4 + channel]);
        // The decoder gives ink amounts (255 = full ink); light is what the inks leave, darkened by black.
        let light = |ink: u8| multiply(255 - ink, 255 - k);
        pixels[index * 3..index * 3 + 3].copy_from_slice(&[light(c), light(m), light(y)]);
    }
    pixels.truncate(count * 3);
    Ok((pixels, 3))
}

/// `a × b / 255`, rounded, in integers.
fn multiply(a: u8, b: u8) -> u8 {
    let t = u32::from(a) * u32::from(b) + 128;
    (((t >> 8) + t) >> 8) as u8
}
