//! Images as attachments: PNG, JPEG, GIF and WebP, told by their magic bytes (never by the file name).
//!
//! Every image is decoded once — that is the only proof it is not truncated or corrupt, and a broken attachment
//! makes model APIs reject every later turn. An image within the limits goes out as its own bytes; a larger one is
//! downscaled to the maximum side and re-encoded as its pixels are best served ([`encode`]), and its description
//! gives the scale, so the model can map coordinates back to the original, and the call that zooms into a part of
//! it. A request's region is such a part: decoded alone where the format allows, and sent at full resolution unless
//! it is itself over the limits.
//!
//! Memory is bounded before any pixel is allocated, from the header alone:
//! - an image of more than [`MAX_DECODE_PIXELS`] pixels is refused (for a GIF, its first frame counts too);
//! - the decode averages down *while* decoding where the format allows — PNG row by row, JPEG at 1/2, 1/4 or 1/8
//!   scale, GIF line by line — so a huge image never holds its full-size pixels (WebP is decoded whole);
//! - each read reserves an upper bound of what it will hold from one budget the whole process shares
//!   ([`super::memory`]), waiting while other reads hold it, and is refused when it cannot have it.

mod decode;
mod encode;
mod gif;
mod jpeg;
mod png;
mod resample;
mod webp;

use self::decode::{Failure, Input};
use self::encode::Encoded;
use self::resample::{Region, Size};
use super::memory::{Pool, Refusal};
use crate::budget::Budget;
use crate::classify::ImageType;
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::render::attachment::{EncodingChoice, ImageShown, encoding_reason};
use crate::render::human_size;
use crate::request::PixelRegion;
use crate::result::{Attachment, AttachmentMeta, AttachmentResult};
use crate::tokens::ImageTokens;
use base64::Engine;
use image::DynamicImage;
use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};

/// Largest image file read, in bytes.
pub const MAX_IMAGE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Most pixels a read decodes (2^27: 11,585 × 11,585, or a 134-megapixel photo). Memory does not grow with the
/// pixels where the decode streams; time does.
pub const MAX_DECODE_PIXELS: u64 = 1 << 27;

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
    /// The part of the image the request asked for, if any.
    pub region: Option<PixelRegion>,
}

/// Reads an image as one attachment, downscaled and re-encoded when over the limits; a corrupt image is an error.
pub fn read(image: ImageFile<'_>, limits: &Limits) -> Result<AttachmentResult, ReadError> {
    read_with(image, limits, Pool::shared())
}

/// [`read`], reserving memory from `pool`.
fn read_with(image: ImageFile<'_>, limits: &Limits, pool: &Pool) -> Result<AttachmentResult, ReadError> {
    let ImageFile { file, kind, mut meta, budget, region } = image;
    let path = meta.path.clone();
    if meta.size_bytes > MAX_IMAGE_FILE_BYTES {
        let why = format!(
            "the file is {} (at most {} is read)",
            human_size(meta.size_bytes),
            human_size(MAX_IMAGE_FILE_BYTES)
        );
        return Err(too_large(&path, why));
    }
    // A file small enough to go out as its own bytes is read whole first, so that what is attached is what was
    // decoded; a larger one is decoded from the file as it is read.
    let held = if meta.size_bytes <= limits.max_image_bytes {
        Some(read_all(file, meta.size_bytes).map_err(|e| stopped(&e, &path))?)
    } else {
        None
    };
    let input = Input::new(file, held.as_deref()).map_err(|e| ReadError::from_io(&e, &path))?;
    let decoder = guarded(|| decode::open(kind, input, meta.size_bytes)).map_err(|f| failure(&path, kind, f))?;
    let size = decoder.size();
    (meta.original_width, meta.original_height) = (Some(size.width), Some(size.height));
    check_pixels(&path, decoder.decoded_size())?;
    let area = match region {
        Some(region) => area_of(&path, region, size)?,
        None => Region::whole(size),
    };
    let out = area.size.fit_within(limits.max_image_side);
    let held_bytes = held.as_ref().map_or(0, |bytes| bytes.len() as u64);
    let needed = decoder.peak_bytes(area, out) + encode_bytes(out, decoder.channels(), limits) + held_bytes;
    let _reservation = pool.reserve(needed, budget).map_err(|refusal| refused(&path, size, refusal))?;
    budget.check().map_err(|e| stopped(&e, &path))?;
    let decoded = guarded(|| decoder.decode(area, out, budget)).map_err(|f| failure(&path, kind, f))?;
    budget.check().map_err(|e| stopped(&e, &path))?;
    let (attachment, choice) = match held {
        Some(bytes) if region.is_none() && out == size => {
            (attachment(kind.mime(), &bytes, size.width, size.height), EncodingChoice::Original)
        }
        _ => {
            drop(held);
            let (encoded, w, h) = shrink(decoded, kind, limits, budget, &path)?;
            meta.reencoded = true;
            (attachment(encoded.mime, &encoded.bytes, w, h), encoded.choice)
        }
    };
    meta.region = region.map(|r| [r.x0, r.y0, r.x1, r.y1]);
    Ok(described(kind, meta, attachment, choice, area.size, limits))
}

/// The result for `attachment`, made of `shown` pixels of the image: the envelope completed (scale, encoding,
/// tokens) and the line describing it.
fn described(
    kind: ImageType,
    mut meta: AttachmentMeta,
    attachment: Attachment,
    choice: EncodingChoice,
    shown: Size,
    limits: &Limits,
) -> AttachmentResult {
    let (w, h) = (attachment.width.unwrap_or(0), attachment.height.unwrap_or(0));
    let scale = f64::from(w) / f64::from(shown.width);
    meta.scale = (w != shown.width || h != shown.height).then_some((scale * 10_000.0).round() / 10_000.0);
    meta.encoding = Some(encoding_reason(choice));
    meta.estimated_tokens = Some(ImageTokens::of(w, h));
    let described = ImageShown { kind, meta: &meta, attachment: &attachment, choice, max_side: limits.max_image_side };
    let output = crate::render::attachment::image(&described);
    AttachmentResult { output, attachments: vec![attachment], meta }
}

/// The region asked for, as an area of an image of `size`: refused (`INVALID_RANGE`, naming the image's size) when
/// it is empty or reaches past the image.
fn area_of(path: &str, region: PixelRegion, size: Size) -> Result<Region, ReadError> {
    let (w, h) = (size.width, size.height);
    let asked = region.list();
    let problem = if region.is_empty() {
        Some(format!(
            "region {asked} is empty: x1 must be greater than x0 and y1 greater than y0 (x1 and y1 are excluded); {path} is {w}×{h} pixels"
        ))
    } else if region.x1 > w || region.y1 > h {
        Some(format!(
            "region {asked} reaches past the image: {path} is {w}×{h} pixels, so x1 can be at most {w} and y1 at most {h}"
        ))
    } else {
        None
    };
    if let Some(problem) = problem {
        let example = PixelRegion { x0: 0, y0: 0, x1: w.div_ceil(2), y1: h.div_ceil(2) };
        return Err(ReadError::invalid_range(problem).with_hint(format!(
            "send a region within [0,0,{w},{h}] (left, top, right, bottom in the image's pixels), e.g. {} for its top-left quarter",
            example.call()
        )));
    }
    Ok(Region { x: region.x0, y: region.y0, size: Size::new(region.width(), region.height()) })
}

/// Runs a decoder's step. Decoders are other projects' code reading hostile bytes: should one panic, that is this
/// image's failure, reported as such, not the read's or the process's.
fn guarded<T>(step: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step))
        .unwrap_or_else(|_| Err(Failure::Corrupt("its decoder failed on it".into())))
}

/// The file's `size` bytes from its start (no more, should it have grown since: the reservation counted `size`).
fn read_all(mut file: &std::fs::File, size: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.seek(SeekFrom::Start(0))?;
    file.take(size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An upper bound of what re-encoding an `out`-sized image holds beside it: an RGB copy (a JPEG of an image with an
/// alpha channel), the encodings being compared (a JPEG and a PNG, each dropped when not needed; a PNG is written
/// from the pixels a row at a time), the bytes sent and their base64, and copies smaller still when a retry shrinks
/// it.
fn encode_bytes(out: Size, channels: usize, limits: &Limits) -> u64 {
    out.pixels() * (channels as u64 + 3) + limits.max_image_bytes * 2
}

/// Refuses an image with more pixels than a read decodes.
fn check_pixels(path: &str, decoded: Size) -> Result<(), ReadError> {
    let pixels = decoded.pixels();
    if pixels <= MAX_DECODE_PIXELS {
        return Ok(());
    }
    let why = format!(
        "{}×{} pixels ({pixels}) is more than the {MAX_DECODE_PIXELS} pixels (11585×11585) a read decodes",
        decoded.width, decoded.height
    );
    Err(ReadError::new(ErrorCode::TooLarge, format!("{path}: image too large to return: {why}")).with_hint(format!(
        "this image cannot be attached; ask the user for a copy of at most {MAX_DECODE_PIXELS} pixels, or describe it from its name"
    )))
}

/// The error for memory that could not be reserved: too much for the whole budget, or held by other reads.
fn refused(path: &str, size: Size, refusal: Refusal) -> ReadError {
    let pixels = format!("{}×{} pixels", size.width, size.height);
    match refusal {
        Refusal::TooLargeAlone { needed, capacity } => too_large(
            path,
            format!(
                "{pixels} need {} of memory to decode and re-encode, more than the {} all reads share",
                human_size(needed),
                human_size(capacity)
            ),
        )
        .with_hint("this image cannot be attached; ask the user for a copy with fewer pixels, or describe it from its name"),
        Refusal::Busy { needed, held, capacity, waited } => ReadError::new(
            ErrorCode::TooLarge,
            format!(
                "{path}: image not decoded now: the server is busy with other reads ({pixels} need {} of memory; other reads hold {} of the {} they share, and it waited {:.1} s)",
                human_size(needed),
                human_size(held),
                human_size(capacity),
                waited.as_secs_f64()
            ),
        )
        .with_hint("the image alone fits: read it again once the other reads have finished"),
        Refusal::Stopped(error) => stopped(&error, path),
    }
}

/// A read of the image that stopped: past the time budget (a byte range, which a text read would be pointed to,
/// shows nothing of an image), cancelled, or failed reading the file.
fn stopped(error: &std::io::Error, path: &str) -> ReadError {
    let mapped = ReadError::from_io(error, path);
    if mapped.code != ErrorCode::Timeout {
        return mapped;
    }
    mapped.with_hint("decoding the image did not finish within the time budget; retry once when the server is less busy, and if it stops again the image is too large to show")
}

fn failure(path: &str, kind: ImageType, failure: Failure) -> ReadError {
    match failure {
        Failure::Corrupt(reason) => corrupt(path, kind, &reason),
        Failure::TooLarge(why) => too_large(path, why),
        Failure::Stopped(error) => stopped(&error, path),
    }
}

/// Encodes the decoded image ([`encode`]), shrinking it further (from the decoded pixels each time) until the bytes
/// fit; returns the encoding and its size.
fn shrink(
    decoded: DynamicImage,
    kind: ImageType,
    limits: &Limits,
    budget: &Budget,
    path: &str,
) -> Result<(Encoded, u32, u32), ReadError> {
    let longest = decoded.width().max(decoded.height());
    let mut side = longest;
    for _ in 0..8 {
        budget.check().map_err(|e| stopped(&e, path))?;
        let scaled = if side < longest { Cow::Owned(decoded.thumbnail(side, side)) } else { Cow::Borrowed(&decoded) };
        let encoded = encode::encode(&scaled, limits.max_image_bytes).map_err(|e| corrupt(path, kind, &e))?;
        if encoded.bytes.len() as u64 <= limits.max_image_bytes {
            return Ok((encoded, scaled.width(), scaled.height()));
        }
        side = ((f64::from(side) * SHRINK_STEP) as u32).max(1);
    }
    Err(too_large(path, format!("no downscaled version fits in {}", human_size(limits.max_image_bytes))))
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod region_tests;
