//! Files that are not plain text but that a model can still use: images (attachments), PDFs (text per page),
//! documents (DOCX, XLSX, PPTX, HTML: converted to text, per sheet or slide) and notebooks (cells rendered as text).
//!
//! Images, PDFs and documents need heavy dependencies, so each sits behind a Cargo feature (`images`, `pdf`,
//! `documents`; the binary has all three). A build without one still recognises the format by its magic bytes and
//! says the build cannot show it.
//!
//! PDFs and documents may be parsed in a worker process (`child`: the parent's side every worker shares, and how a
//! worker is confined on each system); each format's module holds its own side of the worker, and the program's entry
//! is the crate's `worker_main`.

#[cfg(any(feature = "pdf", feature = "documents"))]
pub mod child;
#[cfg(feature = "compressed")]
pub mod compressed;
#[cfg(feature = "documents")]
pub mod document;
#[cfg(feature = "images")]
pub mod image;
#[cfg(any(feature = "images", feature = "compressed", feature = "documents", feature = "pdf"))]
pub mod memory;
pub mod notebook;
#[cfg(any(feature = "pdf", feature = "documents"))]
pub mod pages;
#[cfg(feature = "pdf")]
pub mod pdf;
