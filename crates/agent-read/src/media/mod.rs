//! Files that are not plain text but that a model can still use: images (attachments), PDFs (text per page) and
//! notebooks (cells rendered as text).
//!
//! Images and PDFs need heavy dependencies, so each sits behind a Cargo feature (`images`, `pdf`; the binary has
//! both). A build without one still recognises the format by its magic bytes and says the build cannot show it.

#[cfg(feature = "compressed")]
pub mod compressed;
#[cfg(feature = "images")]
pub mod image;
pub mod notebook;
#[cfg(feature = "pdf")]
pub mod pdf;
