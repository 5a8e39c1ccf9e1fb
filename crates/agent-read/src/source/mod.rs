//! The source stage: what bytes a path names. A path beneath the roots names a file, opened by `resolve`; a path
//! through an archive (`logs.zip/dir/b.log`) names a member of it, whose bytes [`archive`] reads without extracting
//! anything; a member that a later stage needs as a file of its own (a PDF, an image, a document, a nested archive)
//! is copied into an unnamed temporary file first ([`copy`]). Classify and every stage after it then read those
//! bytes as they read a file's, without knowing where they came from.

#[cfg(feature = "archives")]
pub mod archive;
#[cfg(feature = "archives")]
pub mod copy;
