//! The streaming decoders against the reference: `image`'s full decode followed by its `thumbnail`, on fixtures
//! made here for every PNG colour type and bit depth (palettes with transparency, Adam7), JPEG (baseline,
//! progressive, grey, CMYK, YCCK), GIF (frames off the screen's corner, interlaced) and WebP; then the bounds and
//! refusals a read reports.

use super::decode::{self, Input};
use super::resample::{Region, Size};
use super::{ImageFile, read_with};
use crate::budget::{Budget, Cancel};
use crate::classify::ImageType;
use crate::error::ErrorCode;
use crate::limits::Limits;
use crate::media::memory::Pool;
use crate::result::AttachmentMeta;
use image::{DynamicImage, GenericImageView, ImageFormat};
use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

pub(super) fn budget(seconds: f64) -> Budget {
    Budget::new(Instant::now() + Duration::from_secs_f64(seconds), Cancel::new())
}

/// A deterministic pseudo-random byte stream (xorshift64*); the resampler's tests use it too.
pub(super) fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// A smooth picture with a little grain, like a photograph: `samples` per pixel, 8 bits each. (Hard edges are where
/// a JPEG decoded at reduced scale differs most from a full decode averaged down; a photo has few.)
pub(super) fn picture(width: u32, height: u32, samples: usize, seed: u64) -> Vec<u8> {
    let grain = noise(seed, (width * height) as usize * samples);
    let mut pixels = Vec::with_capacity(grain.len());
    for y in 0..height {
        for x in 0..width {
            for s in 0..samples as u32 {
                let base = x * 80 / width + y * 60 / height + s * 20;
                pixels.push(base as u8 + grain[pixels.len()] % 16);
            }
        }
    }
    pixels
}

/// Our decode of `bytes`, averaged down to at most `side` pixels.
fn streamed(bytes: &[u8], kind: ImageType, side: u32) -> DynamicImage {
    let decoder = decode::open(kind, Input::Memory(Cursor::new(bytes)), bytes.len() as u64).unwrap();
    let size = decoder.size();
    decoder.decode(Region::whole(size), size.fit_within(side), &budget(120.0)).unwrap()
}

/// `image`'s full decode, then its `thumbnail` to the same size.
fn reference(bytes: &[u8], side: u32) -> DynamicImage {
    let full = image::load_from_memory(bytes).unwrap();
    let out = Size::new(full.width(), full.height()).fit_within(side);
    if (out.width, out.height) == full.dimensions() { full } else { full.thumbnail_exact(out.width, out.height) }
}

/// The largest and the mean absolute difference per sample, the reference first put in `ours`' layout.
pub(super) fn difference(ours: &DynamicImage, reference: &DynamicImage) -> (u8, f64) {
    assert_eq!(ours.dimensions(), reference.dimensions());
    let theirs = match ours {
        DynamicImage::ImageLuma8(_) => reference.to_luma8().into_raw(),
        DynamicImage::ImageLumaA8(_) => reference.to_luma_alpha8().into_raw(),
        DynamicImage::ImageRgb8(_) => reference.to_rgb8().into_raw(),
        _ => reference.to_rgba8().into_raw(),
    };
    let ours = ours.as_bytes();
    assert_eq!(ours.len(), theirs.len(), "same layout");
    let diffs = ours.iter().zip(&theirs).map(|(a, b)| a.abs_diff(*b));
    let (worst, total) = diffs.fold((0, 0u64), |(worst, total), d| (worst.max(d), total + u64::from(d)));
    (worst, total as f64 / ours.len() as f64)
}

/// Asserts our decode of `bytes` at `side` matches the reference within `worst` per sample.
fn assert_matches(name: &str, bytes: &[u8], kind: ImageType, side: u32, worst: u8, mean: f64) {
    let ours = streamed(bytes, kind, side);
    let (max, average) = difference(&ours, &reference(bytes, side));
    assert!(max <= worst && average <= mean, "{name} at {side}: max {max}, mean {average:.3}");
}

// ---------------------------------------------------------------------------------------------------------------
// PNG
// ---------------------------------------------------------------------------------------------------------------

/// A PNG of `data` (rows packed as the colour type and depth say), written by the `png` crate.
pub(super) fn png_file(
    size: Size,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
    extra: PngExtra,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, size.width, size.height);
    encoder.set_color(color);
    encoder.set_depth(depth);
    if let Some(palette) = extra.palette {
        encoder.set_palette(palette);
    }
    if let Some(trns) = extra.trns {
        encoder.set_trns(trns);
    }
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(data).unwrap();
    writer.finish().unwrap();
    out
}

#[derive(Default)]
pub(super) struct PngExtra {
    pub palette: Option<Vec<u8>>,
    pub trns: Option<Vec<u8>>,
}

/// Rows of `size` with `bits` a pixel: noise, which any colour type and depth accepts.
fn packed(size: Size, bits: u32, seed: u64) -> Vec<u8> {
    noise(seed, ((size.width * bits).div_ceil(8) * size.height) as usize)
}

#[test]
fn png_of_every_colour_type_and_depth_matches_a_full_decode() {
    use png::{BitDepth as D, ColorType as C};
    // 400 × 300 to 100 × 75: a ratio `thumbnail`'s f32 spans hold exactly, so only 16-bit rounding may differ.
    let size = Size::new(400, 300);
    let palette: Vec<u8> = (0..=255u8).flat_map(|i| [i, 255 - i, i / 2]).collect();
    let cases: [(&str, C, D, u32); 13] = [
        ("grey 1", C::Grayscale, D::One, 1),
        ("grey 2", C::Grayscale, D::Two, 2),
        ("grey 4", C::Grayscale, D::Four, 4),
        ("grey 8", C::Grayscale, D::Eight, 8),
        ("grey 16", C::Grayscale, D::Sixteen, 16),
        ("grey+alpha 8", C::GrayscaleAlpha, D::Eight, 16),
        ("grey+alpha 16", C::GrayscaleAlpha, D::Sixteen, 32),
        ("rgb 8", C::Rgb, D::Eight, 24),
        ("rgb 16", C::Rgb, D::Sixteen, 48),
        ("rgba 8", C::Rgba, D::Eight, 32),
        ("rgba 16", C::Rgba, D::Sixteen, 64),
        ("palette 4", C::Indexed, D::Four, 4),
        ("palette 8", C::Indexed, D::Eight, 8),
    ];
    for (seed, (name, color, depth, bits)) in cases.into_iter().enumerate() {
        let extra = PngExtra { palette: (color == C::Indexed).then(|| palette.clone()), trns: None };
        let bytes = png_file(size, color, depth, &packed(size, bits, seed as u64), extra);
        let tolerance = if depth == D::Sixteen { 1 } else { 0 };
        assert_matches(name, &bytes, ImageType::Png, 100, tolerance, 0.5);
        assert_matches(name, &bytes, ImageType::Png, 400, tolerance, 0.5);
    }
}

#[test]
fn png_transparency_chunks_become_alpha_as_in_a_full_decode() {
    use png::{BitDepth as D, ColorType as C};
    let size = Size::new(400, 300);
    let palette: Vec<u8> = (0..16u8).flat_map(|i| [i * 16, 255 - i * 16, 7 * i]).collect();
    let alphas: Vec<u8> = (0..10u8).map(|i| i * 25).collect();
    let cases = [
        ("palette 4 + tRNS", C::Indexed, D::Four, 4, PngExtra { palette: Some(palette.clone()), trns: Some(alphas) }),
        ("palette 2 + tRNS", C::Indexed, D::Two, 2, PngExtra { palette: Some(palette), trns: Some(vec![0, 128]) }),
        ("grey 8 + tRNS", C::Grayscale, D::Eight, 8, PngExtra { palette: None, trns: Some(vec![0, 7]) }),
        ("rgb 8 + tRNS", C::Rgb, D::Eight, 24, PngExtra { palette: None, trns: Some(vec![0, 9, 0, 9, 0, 9]) }),
    ];
    for (seed, (name, color, depth, bits, extra)) in cases.into_iter().enumerate() {
        let mut data = packed(size, bits, seed as u64 + 40);
        if color != C::Indexed {
            // Some pixels exactly the transparent colour (9 in every sample, or 7 for grey).
            data.iter_mut().step_by(5).for_each(|b| *b = if bits == 8 { 7 } else { 9 });
        }
        let bytes = png_file(size, color, depth, &data, extra);
        let ours = streamed(&bytes, ImageType::Png, 100);
        assert!(ours.color().has_alpha(), "{name}: transparency becomes an alpha channel");
        let (max, mean) = difference(&ours, &reference(&bytes, 100));
        assert!(max == 0 && mean == 0.0, "{name}: max {max}, mean {mean}");
    }
}

/// Adam7's passes: first column, column step, first row, row step.
const ADAM7: [(u32, u32, u32, u32); 7] =
    [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)];

/// An interlaced (Adam7) PNG of whole-byte pixels, written here since the `png` crate writes none: the passes'
/// rows unfiltered, in stored deflate blocks.
pub(super) fn adam7_png(size: Size, color_type: u8, depth: u8, pixel_bytes: usize, pixels: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    for (x0, dx, y0, dy) in ADAM7 {
        if size.width <= x0 {
            continue;
        }
        for y in (y0..size.height).step_by(dy as usize) {
            raw.push(0);
            for x in (x0..size.width).step_by(dx as usize) {
                raw.extend_from_slice(&pixels[(y * size.width + x) as usize * pixel_bytes..][..pixel_bytes]);
            }
        }
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut header = size.width.to_be_bytes().to_vec();
    header.extend_from_slice(&size.height.to_be_bytes());
    header.extend_from_slice(&[depth, color_type, 0, 0, 1]);
    let mut file = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], &header[..]), (b"IDAT", &zlib), (b"IEND", &[])] {
        file.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        file.extend_from_slice(kind);
        file.extend_from_slice(data);
        file.extend_from_slice(&crc.finalize().to_be_bytes());
    }
    file
}

#[test]
fn interlaced_png_matches_a_full_decode() {
    // Odd sizes, so that some passes are short or empty at the edges; one too small for passes 2 and 3.
    for (size, side) in [(Size::new(403, 301), 100), (Size::new(403, 301), 403), (Size::new(3, 7), 2)] {
        let rgb = picture(size.width, size.height, 3, 1);
        let bytes = adam7_png(size, 2, 8, 3, &rgb);
        assert_matches("interlaced rgb 8", &bytes, ImageType::Png, side, 0, 0.0);
        let grey_alpha_16 = noise(2, size.pixels() as usize * 4);
        let bytes = adam7_png(size, 4, 16, 4, &grey_alpha_16);
        assert_matches("interlaced grey+alpha 16", &bytes, ImageType::Png, side, 1, 0.5);
    }
    // The same pixels interlaced or not average to the same output.
    let size = Size::new(400, 300);
    let rgb = picture(size.width, size.height, 3, 3);
    let plain = png_file(size, png::ColorType::Rgb, png::BitDepth::Eight, &rgb, PngExtra::default());
    let interlaced = adam7_png(size, 2, 8, 3, &rgb);
    let (a, b) = (streamed(&plain, ImageType::Png, 100), streamed(&interlaced, ImageType::Png, 100));
    assert_eq!(a.as_bytes(), b.as_bytes());
}

#[test]
fn png_bounds_hold_rows_not_the_full_image() {
    // An 8 × 8 PNG whose header is made to claim 11,000 × 11,000 (with its CRC fixed): the attack's shape.
    let size = Size::new(11_000, 11_000);
    let mut plain =
        png_file(Size::new(8, 8), png::ColorType::Rgb, png::BitDepth::Eight, &[0; 192], PngExtra::default());
    plain[16..24].copy_from_slice(&[size.width.to_be_bytes(), size.height.to_be_bytes()].concat());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&plain[12..29]);
    plain[29..33].copy_from_slice(&crc.finalize().to_be_bytes());
    let decoder = decode::open(ImageType::Png, Input::Memory(Cursor::new(&plain)), plain.len() as u64).unwrap();
    assert_eq!(decoder.size(), size);
    let out = size.fit_within(2000);
    let bound = decoder.peak_bytes(Region::whole(size), out);
    assert!(bound < 25_000_000, "the output (2000² × 4) and a few rows: {bound}");
    let full = size.pixels() * 3;
    assert!(bound * 10 < full, "far below the full-size pixels ({full}): {bound}");
}

// ---------------------------------------------------------------------------------------------------------------
// JPEG
// ---------------------------------------------------------------------------------------------------------------

pub(super) fn image_jpeg(image: &DynamicImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 92)).unwrap();
    out.into_inner()
}

/// A JPEG written by `jpeg-encoder`: progressive or not, any of its colour types.
fn encoder_jpeg(data: &[u8], size: Size, color: jpeg_encoder::ColorType, progressive: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 92);
    encoder.set_progressive(progressive);
    encoder.encode(data, size.width as u16, size.height as u16, color).unwrap();
    out
}

#[test]
fn jpeg_decoded_at_reduced_scale_matches_a_full_decode() {
    let size = Size::new(320, 240);
    let rgb = picture(size.width, size.height, 3, 7);
    let grey = picture(size.width, size.height, 1, 8);
    let cmyk = picture(size.width, size.height, 4, 9);
    let rgb_image = DynamicImage::ImageRgb8(image::RgbImage::from_raw(320, 240, rgb.clone()).unwrap());
    let grey_image = DynamicImage::ImageLuma8(image::GrayImage::from_raw(320, 240, grey).unwrap());
    use jpeg_encoder::ColorType as C;
    let cases = [
        ("baseline", image_jpeg(&rgb_image)),
        ("grey", image_jpeg(&grey_image)),
        ("progressive", encoder_jpeg(&rgb, size, C::Rgb, true)),
        ("cmyk", encoder_jpeg(&cmyk, size, C::Cmyk, false)),
        ("ycck", encoder_jpeg(&cmyk, size, C::CmykAsYcck, true)),
    ];
    // 40: decoded at 1/8; 75: at 1/4, then averaged; 160: at 1/2; 300: whole, then averaged; 320: whole. The
    // scaled inverse DCT is not exactly a box average, nor this decoder's rounding zune-jpeg's: a few levels apart.
    for (name, bytes) in &cases {
        for side in [40, 75, 160, 300, 320] {
            assert_matches(name, bytes, ImageType::Jpeg, side, 16, 1.5);
        }
    }
}

/// `jpeg` with its frame header made to claim `size` (the decoders read no further for a bound).
fn claiming(mut jpeg: Vec<u8>, size: Size) -> Vec<u8> {
    let sof = jpeg.windows(2).position(|m| m[0] == 0xFF && (m[1] == 0xC0 || m[1] == 0xC2)).unwrap();
    jpeg[sof + 5..sof + 7].copy_from_slice(&(size.height as u16).to_be_bytes());
    jpeg[sof + 7..sof + 9].copy_from_slice(&(size.width as u16).to_be_bytes());
    jpeg
}

#[test]
fn a_jpeg_is_decoded_at_the_smallest_scale_that_covers_its_output() {
    let size = Size::new(6000, 4000);
    let small = DynamicImage::ImageRgb8(image::RgbImage::new(16, 16));
    let bytes = claiming(image_jpeg(&small), size);
    let bound = |bytes: &[u8], side| {
        let decoder = decode::open(ImageType::Jpeg, Input::Memory(Cursor::new(bytes)), 0).unwrap();
        assert_eq!(decoder.size(), size);
        decoder.peak_bytes(Region::whole(size), size.fit_within(side))
    };
    // 2000 px wide needs 1/2 (3000 × 2000); 700 needs 1/8 (750 × 500); the whole image needs every pixel.
    let (half, eighth, whole) = (bound(&bytes, 2000), bound(&bytes, 700), bound(&bytes, 6000));
    assert!(whole > 140_000_000, "{whole}");
    assert!(half < whole / 2, "{half} vs {whole}");
    assert!(eighth < half / 3, "{eighth} vs {half}");
    let progressive =
        claiming(encoder_jpeg(&[128; 16 * 16 * 3], Size::new(16, 16), jpeg_encoder::ColorType::Rgb, true), size);
    let coefficients = size.pixels() * 3 * 2;
    assert!(bound(&progressive, 700) > coefficients, "a progressive JPEG holds its coefficients, whatever the scale");
}

// ---------------------------------------------------------------------------------------------------------------
// GIF and WebP
// ---------------------------------------------------------------------------------------------------------------

/// A GIF with a 120 × 90 screen and one 60 × 40 frame at (30, 20), its rows stored interlaced or not.
pub(super) fn gif_file(interlaced: bool) -> Vec<u8> {
    let palette: Vec<u8> = (0..=255u8).flat_map(|i| [i, i / 2, 255 - i]).collect();
    let indices = picture(60, 40, 1, 11);
    let rows: Vec<u32> = if interlaced {
        [(0, 8), (4, 8), (2, 4), (1, 2)].into_iter().flat_map(|(first, step)| (first..40).step_by(step)).collect()
    } else {
        (0..40).collect()
    };
    let stored: Vec<u8> = rows.iter().flat_map(|&y| indices[y as usize * 60..][..60].to_vec()).collect();
    let mut out = Vec::new();
    let mut encoder = gif::Encoder::new(&mut out, 120, 90, &palette).unwrap();
    let frame = gif::Frame {
        left: 30,
        top: 20,
        width: 60,
        height: 40,
        interlaced,
        transparent: Some(3),
        buffer: std::borrow::Cow::Owned(stored),
        ..gif::Frame::default()
    };
    encoder.write_frame(&frame).unwrap();
    drop(encoder);
    out
}

#[test]
fn gif_first_frame_on_its_screen_matches_a_full_decode() {
    for interlaced in [false, true] {
        let bytes = gif_file(interlaced);
        for side in [40, 120] {
            assert_matches(&format!("gif interlaced={interlaced}"), &bytes, ImageType::Gif, side, 0, 0.0);
        }
    }
}

#[test]
fn webp_matches_a_full_decode() {
    for image in [
        DynamicImage::ImageRgb8(image::RgbImage::from_raw(200, 100, picture(200, 100, 3, 5)).unwrap()),
        DynamicImage::ImageRgba8(image::RgbaImage::from_raw(200, 100, picture(200, 100, 4, 6)).unwrap()),
    ] {
        let mut bytes = Cursor::new(Vec::new());
        image.write_to(&mut bytes, ImageFormat::WebP).unwrap();
        for side in [50, 200] {
            assert_matches("webp", bytes.get_ref(), ImageType::WebP, side, 0, 0.0);
        }
    }
}

#[test]
fn an_extended_webp_whose_bitstream_outgrows_its_canvas_is_refused_before_decoding() {
    // VP8X canvas 16 × 16; its VP8 bitstream's frame header claims 16000 × 16000.
    let mut vp8 = vec![0x50, 0x02, 0x00, 0x9D, 0x01, 0x2A];
    vp8.extend_from_slice(&16_000u16.to_le_bytes());
    vp8.extend_from_slice(&16_000u16.to_le_bytes());
    vp8.extend_from_slice(&[0; 20]);
    let mut body = b"WEBPVP8X".to_vec();
    body.extend_from_slice(&10u32.to_le_bytes());
    body.extend_from_slice(&[0, 0, 0, 0, 15, 0, 0, 15, 0, 0]);
    body.extend_from_slice(b"VP8 ");
    body.extend_from_slice(&(vp8.len() as u32).to_le_bytes());
    body.extend_from_slice(&vp8);
    let mut file = b"RIFF".to_vec();
    file.extend_from_slice(&(body.len() as u32).to_le_bytes());
    file.extend_from_slice(&body);
    let refused = decode::open(ImageType::WebP, Input::Memory(Cursor::new(&file)), file.len() as u64).err();
    let Some(decode::Failure::Corrupt(reason)) = refused else { panic!("{refused:?}") };
    assert_eq!(reason, "its VP8 bitstream is 16000×16000 but its header says 16×16");
}

// ---------------------------------------------------------------------------------------------------------------
// A read's refusals: too much memory for the whole budget, or the budget held by others.
// ---------------------------------------------------------------------------------------------------------------

/// Reads `bytes` as a PNG file through `pool`, with `seconds` of time.
fn read_png(
    bytes: &[u8],
    pool: &Pool,
    seconds: f64,
) -> Result<crate::result::AttachmentResult, crate::error::ReadError> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    let meta = AttachmentMeta {
        path: "chart.png".into(),
        size_bytes: bytes.len() as u64,
        mime: "image/png".into(),
        ..AttachmentMeta::default()
    };
    let budget = budget(seconds);
    let image = ImageFile { file: &file, kind: ImageType::Png, meta, budget: &budget, region: None };
    read_with(image, &Limits::default(), pool)
}

#[test]
fn a_read_that_needs_more_than_the_whole_budget_is_refused_as_too_large() {
    let size = Size::new(400, 300);
    let bytes =
        png_file(size, png::ColorType::Rgb, png::BitDepth::Eight, &picture(400, 300, 3, 1), PngExtra::default());
    let pool = Pool::new(1024 * 1024);
    let error = read_png(&bytes, &pool, 30.0).err().unwrap();
    assert_eq!(error.code, ErrorCode::TooLarge);
    assert!(
        error.message.starts_with("chart.png: image too large to return: 400×300 pixels need "),
        "{}",
        error.message
    );
    assert!(error.message.ends_with(", more than the 1.0 MiB all reads share"), "{}", error.message);
}

/// An image read past its time budget is TIMEOUT with a hint that fits an image: a byte range, which a text read past
/// its budget is pointed to, shows nothing of one.
#[test]
fn an_image_past_its_time_budget_is_a_timeout_whose_hint_fits_an_image() {
    let size = Size::new(400, 300);
    let bytes =
        png_file(size, png::ColorType::Rgb, png::BitDepth::Eight, &picture(400, 300, 3, 1), PngExtra::default());
    let error = read_png(&bytes, &Pool::new(1 << 30), 0.0).err().unwrap();
    assert_eq!(error.code, ErrorCode::Timeout, "{error:?}");
    let hint = error.hint.unwrap_or_default();
    assert!(hint.starts_with("decoding the image did not finish within the time budget"), "{hint}");
    assert!(!hint.contains("byte"), "{hint}");
}

#[test]
fn a_read_waiting_on_memory_other_reads_hold_is_refused_as_busy_and_then_goes_through() {
    let bytes =
        png_file(Size::new(400, 300), png::ColorType::Rgb, png::BitDepth::Eight, &[9; 360_000], PngExtra::default());
    let pool = Pool::new(64 * 1024 * 1024);
    let held = pool.reserve(60 * 1024 * 1024, &budget(60.0)).unwrap();
    let started = Instant::now();
    let error = read_png(&bytes, &pool, 0.6).err().unwrap();
    assert!(started.elapsed() < Duration::from_millis(590), "half its time, not all of it");
    assert_eq!(error.code, ErrorCode::TooLarge);
    assert!(
        error
            .message
            .starts_with("chart.png: image not decoded now: the server is busy with other reads (400×300 pixels need "),
        "{}",
        error.message
    );
    assert!(error.message.contains("other reads hold 60.0 MiB of the 64.0 MiB they share"), "{}", error.message);
    assert!(error.hint.as_deref().is_some_and(|h| h.contains("read it again")), "{:?}", error.hint);
    drop(held);
    let read = read_png(&bytes, &pool, 30.0).unwrap();
    assert_eq!(read.meta.original_width, Some(400));
    assert_eq!(pool.held(), 0, "the read gave its memory back");
}

#[test]
fn a_decoder_that_panics_fails_the_image_not_the_read() {
    let failed = super::guarded::<()>(|| panic!("a decoder bug reached by hostile bytes"));
    let Err(decode::Failure::Corrupt(reason)) = failed else { panic!("{failed:?}") };
    assert_eq!(reason, "its decoder failed on it");
}

#[test]
fn icc_profile_segments_past_the_metadata_bound_are_refused_before_the_decoder_keeps_them() {
    // The decoder keeps every ICC segment while reading the header alone: 100 of 60 KB (6 MB) before the frame.
    let small = image_jpeg(&DynamicImage::ImageRgb8(image::RgbImage::new(16, 16)));
    let segment: Vec<u8> = [&[0xFF, 0xE2, 0xEA, 0x62][..], b"ICC_PROFILE\0", &[1, 100], &[0; 60_000 - 14]].concat();
    assert_eq!(segment.len() - 2, 0xEA62);
    let mut bytes = small[..2].to_vec();
    for _ in 0..100 {
        bytes.extend_from_slice(&segment);
    }
    bytes.extend_from_slice(&small[2..]);
    let refused = decode::open(ImageType::Jpeg, Input::Memory(Cursor::new(&bytes)), bytes.len() as u64).err();
    let Some(decode::Failure::TooLarge(why)) = refused else { panic!("{refused:?}") };
    assert_eq!(why, "its ICC profile segments hold more than the 4 MiB a read decodes beside the pixels");
    // Ten of them (600 KB) are a large but ordinary profile: read.
    let mut bytes = small[..2].to_vec();
    for _ in 0..10 {
        bytes.extend_from_slice(&segment);
    }
    bytes.extend_from_slice(&small[2..]);
    assert_eq!(streamed(&bytes, ImageType::Jpeg, 16).dimensions(), (16, 16));
}
