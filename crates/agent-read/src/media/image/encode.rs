//! The attachment's encoding, chosen by what the pixels are and by what each encoding makes of them.
//!
//! One pass over the pixels counts their colours (up to 257), finds whether any is translucent, and measures how
//! flat the image is (the share of pixels equal to their left neighbour: most of a screenshot, a diagram or a page
//! of text; almost none of a photograph). Then:
//! - at most 256 colours, or flat: lossless PNG — a palette with no row filter when there are few colours (what
//!   compresses such images best), otherwise adaptive row filters — since JPEG blurs text and thin lines;
//! - photographic (neither) and opaque: JPEG and a quick PNG are both made, and JPEG is sent only when it is at most
//!   half the PNG's size; otherwise the PNG, compressed properly;
//! - whatever was chosen, if it is over the byte limit and the image is opaque, JPEG is tried before giving up.

use crate::render::attachment::EncodingChoice;
use image::{DynamicImage, ImageEncoder};
use png::{BitDepth, ColorType, DeflateCompression, Filter};
use std::collections::HashMap;
use std::io::Write;

/// Share of pixels equal to their left neighbour from which an image is taken as flat (screenshot, diagram, text)
/// rather than photographic.
const FLAT_SHARE: f64 = 0.5;

/// JPEG is chosen for a photographic image only when the PNG is at least this many times its size.
const CLEARLY_SMALLER: f64 = 2.0;

/// JPEG quality: artefacts are hard to see at 85, and the file is far smaller than at 95.
const JPEG_QUALITY: u8 = 85;

/// The zlib level of the PNG sent: the default level, which compresses flat images within a few percent of the
/// best at a fraction of the time.
const PNG_LEVEL: u8 = 6;

/// Most colours a palette holds.
const PALETTE_COLOURS: usize = 256;

/// An encoded image and why it is encoded so.
pub struct Encoded {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Their MIME type.
    pub mime: &'static str,
    /// Why this encoding.
    pub choice: EncodingChoice,
}

/// Encodes `image` the way that serves it best (see the module's documentation), keeping under `max_bytes` when it
/// can; an encoding over it is still returned, for the caller to shrink the image and try again.
pub fn encode(image: &DynamicImage, max_bytes: u64) -> Result<Encoded, String> {
    let pixels = Pixels::of(image);
    let survey = survey(&pixels);
    let choice = if survey.palette.is_some() && pixels.colour {
        EncodingChoice::FewColours(survey.colours)
    } else if survey.flat_share >= FLAT_SHARE {
        EncodingChoice::FlatAreas
    } else if survey.translucent {
        EncodingChoice::Transparency
    } else {
        return photographic(&pixels, &survey, max_bytes);
    };
    let png = png_of(&pixels, &survey, DeflateCompression::Level(PNG_LEVEL))?;
    if png.len() as u64 <= max_bytes || survey.translucent {
        return Ok(Encoded { bytes: png, mime: "image/png", choice });
    }
    drop(png);
    let jpeg = jpeg_of(image)?;
    Ok(Encoded { bytes: jpeg, mime: "image/jpeg", choice: EncodingChoice::PngOverLimit { limit: max_bytes } })
}

/// An opaque image with many colours and few flat areas: JPEG when it is clearly smaller than a quickly made PNG,
/// else the PNG made properly. (Each encoding is dropped as soon as it is not needed: what a read reserves for its
/// re-encoding counts on it.)
fn photographic(pixels: &Pixels<'_>, survey: &Survey, max_bytes: u64) -> Result<Encoded, String> {
    let jpeg = jpeg_of(pixels.image)?;
    let quick = png_of(pixels, survey, DeflateCompression::FdeflateUltraFast)?.len();
    let times = quick as f64 / jpeg.len().max(1) as f64;
    if times >= CLEARLY_SMALLER {
        return Ok(Encoded { bytes: jpeg, mime: "image/jpeg", choice: EncodingChoice::Photographic { times } });
    }
    let png = png_of(pixels, survey, DeflateCompression::Level(PNG_LEVEL))?;
    if png.len() as u64 <= max_bytes {
        return Ok(Encoded { bytes: png, mime: "image/png", choice: EncodingChoice::JpegNotClearlySmaller });
    }
    Ok(Encoded { bytes: jpeg, mime: "image/jpeg", choice: EncodingChoice::PngOverLimit { limit: max_bytes } })
}

/// An image's samples as the encoders take them.
struct Pixels<'a> {
    image: &'a DynamicImage,
    /// Samples a pixel: 1 grey, 2 grey and alpha, 3 RGB, 4 RGBA.
    channels: usize,
    /// Whether the samples are colour (RGB) rather than grey.
    colour: bool,
}

impl<'a> Pixels<'a> {
    fn of(image: &'a DynamicImage) -> Pixels<'a> {
        let channels = usize::from(image.color().channel_count());
        Pixels { image, channels, colour: channels >= 3 }
    }

    fn samples(&self) -> &[u8] {
        self.image.as_bytes()
    }
}

/// What one pass over the pixels found.
struct Survey {
    /// The colours in order of first appearance, when there are at most [`PALETTE_COLOURS`].
    palette: Option<Vec<u32>>,
    /// How many colours were counted (at most one past the palette's size).
    colours: usize,
    /// Whether any pixel is not fully opaque.
    translucent: bool,
    /// Share of pixels equal to the one on their left.
    flat_share: f64,
}

/// Counts colours, finds translucency and measures flatness, in one pass.
fn survey(pixels: &Pixels<'_>) -> Survey {
    let (channels, width) = (pixels.channels, pixels.image.width() as usize);
    let mut indexes: HashMap<u32, u8> = HashMap::with_capacity(PALETTE_COLOURS + 1);
    let mut palette = Some(Vec::with_capacity(PALETTE_COLOURS));
    let (mut flat, mut translucent) = (0u64, false);
    for row in pixels.samples().chunks_exact(width.max(1) * channels) {
        let mut left = None;
        for pixel in row.chunks_exact(channels) {
            let packed = pack(pixel);
            if left == Some(packed) {
                flat += 1;
                continue;
            }
            left = Some(packed);
            translucent |= channels % 2 == 0 && pixel[channels - 1] != u8::MAX;
            if let Some(colours) = &mut palette
                && !indexes.contains_key(&packed)
            {
                if colours.len() == PALETTE_COLOURS {
                    palette = None;
                    continue;
                }
                indexes.insert(packed, colours.len() as u8);
                colours.push(packed);
            }
        }
    }
    let total = pixels.image.width() as f64 * pixels.image.height() as f64;
    let colours = palette.as_ref().map_or(PALETTE_COLOURS + 1, Vec::len);
    Survey { palette, colours, translucent, flat_share: flat as f64 / total.max(1.0) }
}

/// A pixel of 1 to 4 samples as one number: grey as equal red, green and blue; alpha last (opaque when absent).
fn pack(pixel: &[u8]) -> u32 {
    let [r, g, b, a] = match *pixel {
        [v] => [v, v, v, u8::MAX],
        [v, a] => [v, v, v, a],
        [r, g, b] => [r, g, b, u8::MAX],
        [r, g, b, a, ..] => [r, g, b, a],
        [] => [0, 0, 0, u8::MAX],
    };
    u32::from_be_bytes([r, g, b, a])
}

/// A PNG of the pixels: indexed when a colour image has a palette (no row filter: none compresses such images
/// better), else grey or RGB with adaptive row filters, alpha kept only when some pixel is translucent. Rows are
/// converted and written one at a time: no second copy of the image is made.
fn png_of(pixels: &Pixels<'_>, survey: &Survey, compression: DeflateCompression) -> Result<Vec<u8>, String> {
    let image = pixels.image;
    let (width, height) = (image.width(), image.height());
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_depth(BitDepth::Eight);
    encoder.set_deflate_compression(compression);
    let layout = match &survey.palette {
        Some(palette) if pixels.colour => {
            let (rgb, alpha) = palette_chunks(palette);
            encoder.set_palette(rgb);
            if let Some(alpha) = alpha {
                encoder.set_trns(alpha);
            }
            encoder.set_filter(Filter::NoFilter);
            Layout::Indexed(palette.iter().enumerate().map(|(index, &colour)| (colour, index as u8)).collect())
        }
        _ => {
            // Few grey levels in flat areas (a page of text): as a palette, unfiltered rows compress best.
            let few_levels = survey.palette.is_some() && survey.flat_share >= FLAT_SHARE;
            encoder.set_filter(if few_levels { Filter::NoFilter } else { Filter::Adaptive });
            // An alpha channel no pixel uses is left out.
            let keep = match pixels.channels {
                2 | 4 if !survey.translucent => pixels.channels - 1,
                all => all,
            };
            Layout::Samples { keep }
        }
    };
    encoder.set_color(layout.color_type());
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    let mut stream = writer.stream_writer().map_err(|e| e.to_string())?;
    let mut row = Vec::with_capacity(width as usize * pixels.channels);
    for samples in pixels.samples().chunks_exact(width.max(1) as usize * pixels.channels) {
        row.clear();
        layout.convert(samples, pixels.channels, &mut row);
        stream.write_all(&row).map_err(|e| e.to_string())?;
    }
    stream.finish().map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// How a row of samples becomes a row of a PNG.
enum Layout {
    /// Each pixel's index in the palette, found from its packed colour.
    Indexed(HashMap<u32, u8>),
    /// The first `keep` samples of each pixel: all of them, or all but an alpha channel no pixel uses.
    Samples { keep: usize },
}

impl Layout {
    fn color_type(&self) -> ColorType {
        match self {
            Layout::Indexed(_) => ColorType::Indexed,
            Layout::Samples { keep: 1 } => ColorType::Grayscale,
            Layout::Samples { keep: 2 } => ColorType::GrayscaleAlpha,
            Layout::Samples { keep: 3 } => ColorType::Rgb,
            Layout::Samples { .. } => ColorType::Rgba,
        }
    }

    fn convert(&self, samples: &[u8], channels: usize, row: &mut Vec<u8>) {
        match self {
            Layout::Samples { keep } if *keep == channels => row.extend_from_slice(samples),
            Layout::Samples { keep } => {
                samples.chunks_exact(channels).for_each(|pixel| row.extend_from_slice(&pixel[..*keep]));
            }
            Layout::Indexed(indexes) => {
                let mut last = (u32::MAX, 0u8);
                for pixel in samples.chunks_exact(channels) {
                    let packed = pack(pixel);
                    if packed != last.0 {
                        last = (packed, indexes.get(&packed).copied().unwrap_or(0));
                    }
                    row.push(last.1);
                }
            }
        }
    }
}

/// The palette's RGB entries, and its alpha entries when any is translucent (up to the last translucent one).
fn palette_chunks(palette: &[u32]) -> (Vec<u8>, Option<Vec<u8>>) {
    let rgb = palette.iter().flat_map(|colour| colour.to_be_bytes()[..3].to_vec()).collect();
    let alpha: Vec<u8> = palette.iter().map(|colour| colour.to_be_bytes()[3]).collect();
    let last = alpha.iter().rposition(|&a| a != u8::MAX);
    (rgb, last.map(|last| alpha[..=last].to_vec()))
}

/// A JPEG of the image (grey stays grey; alpha, which JPEG cannot hold, is dropped).
fn jpeg_of(image: &DynamicImage) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
    let result = match image {
        DynamicImage::ImageLuma8(grey) => {
            encoder.write_image(grey.as_raw(), grey.width(), grey.height(), image::ExtendedColorType::L8)
        }
        DynamicImage::ImageRgb8(rgb) => {
            encoder.write_image(rgb.as_raw(), rgb.width(), rgb.height(), image::ExtendedColorType::Rgb8)
        }
        DynamicImage::ImageLumaA8(_) => {
            let grey = image.to_luma8();
            encoder.write_image(grey.as_raw(), grey.width(), grey.height(), image::ExtendedColorType::L8)
        }
        _ => {
            let rgb = image.to_rgb8();
            encoder.write_image(rgb.as_raw(), rgb.width(), rgb.height(), image::ExtendedColorType::Rgb8)
        }
    };
    result.map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
