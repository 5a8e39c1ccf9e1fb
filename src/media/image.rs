//! Images as attachments: PNG, JPEG, GIF and WebP, told by their magic bytes (never by the file name).
//!
//! The header gives the dimensions before anything is decoded, so an image whose pixels would not fit the decode
//! budget (a 20,000 × 20,000 header on a tiny file) is refused without allocating them. Every image is decoded once —
//! that is the only proof it is not truncated or corrupt, and a broken attachment makes model APIs reject every later
//! turn. An image within the limits goes out as its own bytes; a larger one is downscaled to the maximum side,
//! re-encoded, and its description gives the scale, so the model can map coordinates back to the original.

use crate::budget::Budget;
use crate::classify::ImageType;
use crate::config::Limits;
use crate::error::{ErrorCode, ReadError};
use crate::render::human_size;
use crate::result::{Attachment, AttachmentMeta, AttachmentResult};
use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader};
use std::io::{Cursor, Read};

/// Largest image file read, in bytes.
pub const MAX_IMAGE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Largest decode allowed, in bytes of pixel memory (RGBA, 8 bits a channel): a 9600 × 6000 photo needs 230 MB.
pub const MAX_DECODE_BYTES: u64 = 512 * 1024 * 1024;

/// Each retry when a re-encoded image is still over the byte limit shrinks it by this factor.
const SHRINK_STEP: f64 = 0.75;

/// An image file, opened and named.
pub struct ImageFile<'a> {
    /// The open file.
    pub file: &'a std::fs::File,
    /// Its type, from the magic bytes.
    pub kind: ImageType,
    /// Base envelope: path, size, mtime.
    pub meta: AttachmentMeta,
    /// When the read must stop.
    pub budget: &'a Budget,
}

/// Reads an image as one attachment, downscaled and re-encoded when over the limits; a corrupt image is an error.
pub fn read(image: ImageFile<'_>, limits: &Limits) -> Result<AttachmentResult, ReadError> {
    let ImageFile { file, kind, mut meta, budget } = image;
    let path = meta.path.clone();
    if meta.size_bytes > MAX_IMAGE_FILE_BYTES {
        return Err(too_large(
            &path,
            format!(
                "the file is {} (at most {} is read)",
                human_size(meta.size_bytes),
                human_size(MAX_IMAGE_FILE_BYTES)
            ),
        ));
    }
    let bytes = read_all(file, meta.size_bytes).map_err(|e| ReadError::from_io(&e, &path))?;
    let (width, height) = dimensions(&bytes).ok_or_else(|| corrupt(&path, kind, "its header gives no dimensions"))?;
    meta.original_width = Some(width);
    meta.original_height = Some(height);
    let pixels_bytes = u64::from(width) * u64::from(height) * 4;
    if pixels_bytes > MAX_DECODE_BYTES {
        return Err(too_large(
            &path,
            format!(
                "{width}×{height} pixels would take {} to decode (at most {})",
                human_size(pixels_bytes),
                human_size(MAX_DECODE_BYTES)
            ),
        ));
    }
    budget.check().map_err(|e| ReadError::from_io(&e, &path))?;
    if kind == ImageType::Jpeg && !jpeg_is_complete(&bytes) {
        return Err(corrupt(&path, kind, "its data ends before the end-of-image marker"));
    }
    let decoded = decode(&bytes, kind).map_err(|reason| corrupt(&path, kind, &reason))?;
    budget.check().map_err(|e| ReadError::from_io(&e, &path))?;
    let fits = width.max(height) <= limits.max_image_side && bytes.len() as u64 <= limits.max_image_bytes;
    let (attachment, scale) = if fits {
        (attachment(kind.mime(), &bytes, width, height), None)
    } else {
        let (encoded, mime, w, h) = shrink(&decoded, kind, limits, budget, &path)?;
        let scale = f64::from(w) / f64::from(width);
        meta.reencoded = true;
        (attachment(mime, &encoded, w, h), (w != width || h != height).then_some(scale))
    };
    meta.scale = scale.map(|s| (s * 10_000.0).round() / 10_000.0);
    let output = describe(kind, &meta, &attachment);
    Ok(AttachmentResult { output, attachments: vec![attachment], meta })
}

fn read_all(file: &std::fs::File, size: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_IMAGE_FILE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether an end-of-image marker follows the last start-of-scan marker. The JPEG decoder fills a truncated scan
/// with grey and calls it a success; inside entropy-coded data a 0xFF byte is always followed by 0x00 or a restart
/// marker, so neither marker can appear there by chance (an embedded thumbnail's markers come before the main scan).
fn jpeg_is_complete(bytes: &[u8]) -> bool {
    let Some(last_scan) = memchr::memmem::rfind(bytes, &[0xFF, 0xDA]) else { return false };
    memchr::memmem::find(&bytes[last_scan..], &[0xFF, 0xD9]).is_some()
}

/// Width and height from the header alone.
fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let size = imagesize::blob_size(bytes).ok()?;
    let width = u32::try_from(size.width).ok()?;
    let height = u32::try_from(size.height).ok()?;
    (width > 0 && height > 0).then_some((width, height))
}

fn decode(bytes: &[u8], kind: ImageType) -> Result<DynamicImage, String> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format_of(kind));
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader.decode().map_err(|e| e.to_string())
}

fn format_of(kind: ImageType) -> ImageFormat {
    match kind {
        ImageType::Png => ImageFormat::Png,
        ImageType::Jpeg => ImageFormat::Jpeg,
        ImageType::Gif => ImageFormat::Gif,
        ImageType::WebP => ImageFormat::WebP,
    }
}

/// Downscales to the maximum side and re-encodes, shrinking further until the bytes fit.
fn shrink(
    image: &DynamicImage,
    kind: ImageType,
    limits: &Limits,
    budget: &Budget,
    path: &str,
) -> Result<(Vec<u8>, &'static str, u32, u32), ReadError> {
    let (width, height) = (image.width(), image.height());
    let mut side = limits.max_image_side.min(width.max(height));
    for _ in 0..8 {
        budget.check().map_err(|e| ReadError::from_io(&e, path))?;
        let scaled = if side < width.max(height) { image.thumbnail(side, side) } else { image.clone() };
        for format in encodings(kind, &scaled) {
            let (encoded, mime) = encode(&scaled, format).map_err(|e| corrupt(path, kind, &e))?;
            if encoded.len() as u64 <= limits.max_image_bytes {
                return Ok((encoded, mime, scaled.width(), scaled.height()));
            }
        }
        side = ((f64::from(side) * SHRINK_STEP) as u32).max(1);
    }
    Err(too_large(path, format!("no downscaled version fits in {}", human_size(limits.max_image_bytes))))
}

/// The encodings to try, best first: JPEG stays JPEG; others go out as PNG (transparency, sharp edges), then — when
/// opaque and the PNG is still too big — as JPEG, which is far smaller for photographs.
fn encodings(kind: ImageType, image: &DynamicImage) -> Vec<ImageFormat> {
    match kind {
        ImageType::Jpeg => vec![ImageFormat::Jpeg],
        _ if image.color().has_alpha() => vec![ImageFormat::Png],
        _ => vec![ImageFormat::Png, ImageFormat::Jpeg],
    }
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Result<(Vec<u8>, &'static str), String> {
    let mut out = Cursor::new(Vec::new());
    if format == ImageFormat::Jpeg {
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        rgb.write_with_encoder(encoder).map_err(|e| e.to_string())?;
        return Ok((out.into_inner(), "image/jpeg"));
    }
    image.write_to(&mut out, ImageFormat::Png).map_err(|e| e.to_string())?;
    Ok((out.into_inner(), "image/png"))
}

fn attachment(mime: &str, bytes: &[u8], width: u32, height: u32) -> Attachment {
    Attachment {
        mime: mime.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
        width: Some(width),
        height: Some(height),
        size_bytes: bytes.len() as u64,
    }
}

/// `PNG image · 9600×6000 · 12.3 MB → downscaled to 2000×1250 (scale 0.2083; …) · PNG 1.9 MB`.
fn describe(kind: ImageType, meta: &AttachmentMeta, attachment: &Attachment) -> String {
    let (w, h) = (meta.original_width.unwrap_or(0), meta.original_height.unwrap_or(0));
    let mut text = format!("{} image · {w}×{h} · {}", kind.name(), human_size(meta.size_bytes));
    let (aw, ah) = (attachment.width.unwrap_or(0), attachment.height.unwrap_or(0));
    let sent = human_size(attachment.size_bytes);
    let sent_type = if attachment.mime == "image/jpeg" { "JPEG" } else { "PNG" };
    match meta.scale {
        Some(scale) => text.push_str(&format!(
            " → downscaled to {aw}×{ah}, {sent_type} {sent} (scale {scale}: divide coordinates in it by {scale} to map them to the original)"
        )),
        None if meta.reencoded => text.push_str(&format!(" → re-encoded as {sent_type} {sent} to fit the size limit")),
        None => {}
    }
    if kind == ImageType::Gif {
        text.push_str(" · animated GIFs show their first frame");
    }
    text
}

fn corrupt(path: &str, kind: ImageType, reason: &str) -> ReadError {
    ReadError::new(
        ErrorCode::Binary,
        format!("{path}: a {} image that cannot be decoded ({reason}); it is truncated or corrupt", kind.name()),
    )
    .with_hint("the file is not a usable image; do not retry it")
}

fn too_large(path: &str, why: String) -> ReadError {
    ReadError::new(ErrorCode::TooLarge, format!("{path}: image too large to return: {why}"))
        .with_hint("this image cannot be attached; describe it from its name or ask the user for a smaller copy")
}
