//! The file a read is about, as every content road (text, notebooks, images, PDFs) receives it. A leaf among the
//! engine's parts: each road imports it, and it imports none of them.

use crate::budget::Budget;
use crate::classify::SNIFF_LEN;
use crate::error::ReadError;
use crate::request::Window;
use crate::result::AttachmentMeta;
use crate::window::index::store::LineIndexes;
use std::fs::{File, Metadata};

/// Files that report size 0 (like `/proc` files) are read up to this many bytes.
const ZERO_SIZE_READ_CAP: u64 = 64 * 1024 * 1024;

/// Where reading a file with this metadata stops: its size when opened, or a cap for files that report size 0.
pub fn read_end_of(metadata: &Metadata) -> u64 {
    match metadata.len() {
        0 => ZERO_SIZE_READ_CAP,
        size => size,
    }
}

/// An open regular file and how to name it to the model.
pub struct Target<'a> {
    /// The open file.
    pub file: &'a File,
    /// Its metadata, taken from the open handle.
    pub metadata: &'a Metadata,
    /// Its first bytes (up to [`SNIFF_LEN`]), read once by [`read_head`](super::file::read_head): the whole of a small file.
    pub head: &'a [u8],
    /// The path as shown to the model.
    pub shown: String,
    /// When the read must stop.
    pub budget: Budget,
    /// The reader's line indexes, for big text files.
    pub indexes: &'a LineIndexes,
}

impl Target<'_> {
    /// Where reading stops: the size when opened; for a file that reports size 0, the end of its head when the head
    /// holds all of it (see [`read_head`](super::file::read_head)), else a cap.
    pub fn read_end(&self) -> u64 {
        match self.metadata.len() {
            0 if self.head.len() < SNIFF_LEN => self.head.len() as u64,
            _ => read_end_of(self.metadata),
        }
    }

    pub fn attachment_meta(&self, mime: &str) -> AttachmentMeta {
        AttachmentMeta {
            path: self.shown.clone(),
            size_bytes: self.metadata.len(),
            mtime: self.metadata.modified().ok().and_then(crate::render::rfc3339_seconds),
            mime: mime.to_string(),
            ..AttachmentMeta::default()
        }
    }
}

/// Whether the request named a window (an offset, a limit or a byte range) rather than the default.
pub fn is_windowed(window: &Window) -> bool {
    match window {
        Window::Lines(lines) => lines.offset != 1 || lines.explicit_limit,
        Window::Bytes { .. } | Window::Block(_) | Window::Find(_) | Window::Region(_) => true,
    }
}

/// `region` asked of something that is not an image (`what`: "text", "a PDF", "a directory", …).
pub fn region_needs_an_image(shown: &str, what: &str) -> ReadError {
    ReadError::invalid_param(format!("{shown} is {what}; `region` chooses a part of an image (PNG, JPEG, GIF, WebP)"))
        .with_hint("remove `region`; page through other files with offset and limit")
}
