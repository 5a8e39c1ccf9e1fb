//! What the model reads beside an attachment, or instead of one: the line describing an image as it was sent (its
//! size, what was done to it, why it is encoded so, how to map its coordinates and how to zoom in) or a PDF sent
//! whole, an attachment described but not made, and the note that a window does not apply to a whole image.

use super::human_size;
#[cfg(feature = "images")]
use crate::classify::ImageType;
#[cfg(feature = "images")]
use crate::result::{Attachment, AttachmentMeta};

/// Why an image went out in the encoding it did: the facts `media/image/` found, worded by [`encoding_reason`].
#[cfg(feature = "images")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EncodingChoice {
    /// The file's own bytes: it is within the limits.
    Original,
    /// Lossless PNG: the pixels hold this many colours at most (256 or fewer).
    FewColours(usize),
    /// Lossless PNG: large flat areas, as screenshots, diagrams and text have.
    FlatAreas,
    /// Lossless PNG: it has transparency, which JPEG cannot hold.
    Transparency,
    /// Lossless PNG: photographic, but JPEG was not clearly smaller.
    JpegNotClearlySmaller,
    /// JPEG: photographic, and this many times smaller than lossless PNG.
    Photographic {
        /// PNG bytes ÷ JPEG bytes.
        times: f64,
    },
    /// JPEG: the lossless PNG was over the byte limit.
    PngOverLimit {
        /// The byte limit.
        limit: u64,
    },
}

/// The few words that say why an image went out in its encoding (`meta.encoding`, and the description's).
#[cfg(feature = "images")]
pub fn encoding_reason(choice: EncodingChoice) -> String {
    match choice {
        EncodingChoice::Original => "the file's own bytes".to_string(),
        EncodingChoice::FewColours(1) => "lossless: 1 colour".to_string(),
        EncodingChoice::FewColours(colours) => format!("lossless: {colours} colours"),
        EncodingChoice::FlatAreas => "lossless: flat areas, as in screenshots, diagrams and text".to_string(),
        EncodingChoice::Transparency => "lossless: it has transparency".to_string(),
        EncodingChoice::JpegNotClearlySmaller => "lossless: JPEG was not clearly smaller".to_string(),
        EncodingChoice::Photographic { times } => format!("photographic: {times:.1}× smaller than lossless PNG"),
        EncodingChoice::PngOverLimit { limit } => format!("lossless PNG was over the {} limit", human_size(limit)),
    }
}

/// What an image read did, for its description.
#[cfg(feature = "images")]
pub struct ImageShown<'a> {
    /// The file's type.
    pub kind: ImageType,
    /// The envelope: the original's size and dimensions, the region and the scale.
    pub meta: &'a AttachmentMeta,
    /// What is attached.
    pub attachment: &'a Attachment,
    /// Why it is encoded as it is.
    pub choice: EncodingChoice,
    /// The longest side an attachment may have: a zoom call stays within it.
    pub max_side: u32,
}

/// The line describing an image as it was sent:
/// - within the limits: `PNG image · 120×80 · 1.2 KiB`;
/// - re-encoded only: `… → re-encoded to fit the size limit as JPEG 402.1 KiB (photographic: …)`;
/// - downscaled: `… → downscaled to 2000×1000, PNG 33.6 KiB (lossless: …; scale 0.8333: …) · zoom: region=[…] …`;
/// - a region: `… · region [100,50,900,650] at full resolution: 800×600, PNG 12.0 KiB (…; a point (x, y) in it is
///   (100 + x, 50 + y) in the original)`.
#[cfg(feature = "images")]
pub fn image(shown: &ImageShown<'_>) -> String {
    let ImageShown { kind, meta, attachment, choice, max_side } = *shown;
    let (w, h) = (meta.original_width.unwrap_or(0), meta.original_height.unwrap_or(0));
    let mut text = format!("{} image · {w}×{h} · {}", kind.name(), human_size(meta.size_bytes));
    let (aw, ah) = (attachment.width.unwrap_or(0), attachment.height.unwrap_or(0));
    let sent = format!(
        "{} {}",
        if attachment.mime == "image/jpeg" { "JPEG" } else { "PNG" },
        human_size(attachment.size_bytes)
    );
    let why = encoding_reason(choice);
    let shown_area = meta.region.unwrap_or([0, 0, w, h]);
    match (meta.region, meta.scale) {
        (Some([x0, y0, x1, y1]), None) => text.push_str(&format!(
            " · region [{x0},{y0},{x1},{y1}] at full resolution: {aw}×{ah}, {sent} ({why}; a point (x, y) in it is ({x0} + x, {y0} + y) in the original)"
        )),
        (Some([x0, y0, x1, y1]), Some(scale)) => text.push_str(&format!(
            " · region [{x0},{y0},{x1},{y1}] ({}×{}) downscaled to {aw}×{ah}, {sent} ({why}; scale {scale}: a point (x, y) in it is ({x0} + x ÷ {scale}, {y0} + y ÷ {scale}) in the original)",
            x1 - x0,
            y1 - y0
        )),
        (None, Some(scale)) => text.push_str(&format!(
            " → downscaled to {aw}×{ah}, {sent} ({why}; scale {scale}: divide coordinates in it by {scale} to map them to the original)"
        )),
        (None, None) if meta.reencoded => text.push_str(&format!(" → re-encoded to fit the size limit as {sent} ({why})")),
        (None, None) => {}
    }
    if meta.scale.is_some() {
        text.push_str(&zoom(shown_area, max_side));
    }
    if kind == ImageType::Gif {
        text.push_str(" · animated GIFs show their first frame");
    }
    text
}

/// ` · zoom: region=[0,0,1200,600] is the top-left 1200×600 at full resolution (…)`: the call that shows the
/// top-left part of `area` (the whole image, or the region shown), half of it each way or what fits `max_side`.
#[cfg(feature = "images")]
fn zoom([x0, y0, x1, y1]: [u32; 4], max_side: u32) -> String {
    let part = |length: u32| length.div_ceil(2).min(max_side).max(1);
    let (w, h) = (part(x1 - x0), part(y1 - y0));
    format!(
        " · zoom: region=[{x0},{y0},{},{}] is the top-left {w}×{h} at full resolution (x0,y0,x1,y1 in the original's pixels)",
        x0 + w,
        y0 + h
    )
}

/// `PDF document · 12 page(s) · 1.2 MiB, attached whole (…)`: a PDF sent whole, and how to read its text instead.
#[cfg(feature = "pdf")]
pub fn pdf_document(page_count: u32, size_bytes: u64) -> String {
    format!(
        "PDF document · {page_count} page(s) · {}, attached whole (read its text with pages=\"1-5\")",
        human_size(size_bytes)
    )
}

/// An attachment described but not made (no bytes, nothing decoded): what it is (`PNG image`) and its size.
pub fn not_attached(description: &str, size_bytes: u64) -> String {
    format!("{description} ({})", human_size(size_bytes))
}

/// Appends to an image's description that the window the request asked for does not apply: an image is always
/// whole, and a silent ignore would mislead.
pub fn note_window_ignored(output: &mut String) {
    output.push_str(" · offset/limit and byte ranges do not apply to images: the whole image is attached");
}
