//! What the model reads beside an attachment, or instead of one: the line describing an image as it was sent or a PDF
//! sent whole, an attachment described but not made, and the note that a window does not apply to a whole image.

use super::human_size;
#[cfg(feature = "images")]
use crate::classify::ImageType;
#[cfg(feature = "images")]
use crate::result::{Attachment, AttachmentMeta};

/// `PNG image · 9600×6000 · 12.3 MB → downscaled to 2000×1250 (scale 0.2083; …) · PNG 1.9 MB`.
#[cfg(feature = "images")]
pub fn image(kind: ImageType, meta: &AttachmentMeta, attachment: &Attachment) -> String {
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
