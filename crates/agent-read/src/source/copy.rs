//! A member copied into a file of its own, for the stages that read a file whole or by seeking (PDF extraction hands
//! the file to a worker process, images are decoded from it, documents and notebooks are read whole): an unnamed
//! temporary file, which the system deletes when the read closes it, never named and never left behind.
//!
//! Contract: at most `cap` bytes are copied (more is refused before the cap is passed), the time budget is checked
//! between chunks, and the copy is made in the system's temporary directory (`TMPDIR` on Unix).

use crate::budget::Budget;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Bytes copied per chunk.
const CHUNK: usize = 64 * 1024;

/// Why a copy was not made.
#[derive(Debug)]
pub enum CopyError {
    /// The bytes run past the cap.
    OverCap,
    /// Reading the member or writing the copy failed, or the budget ran out.
    Failed(io::Error),
}

/// Copies everything `from` yields into a new unnamed temporary file, refusing more than `cap` bytes; the file is
/// positioned at its start.
pub fn copy(mut from: impl Read, cap: u64, budget: &Budget) -> Result<File, CopyError> {
    let mut file = tempfile::tempfile().map_err(CopyError::Failed)?;
    let mut chunk = vec![0u8; CHUNK];
    let mut copied = 0u64;
    loop {
        budget.check().map_err(CopyError::Failed)?;
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Failed(e)),
        };
        copied += n as u64;
        if copied > cap {
            return Err(CopyError::OverCap);
        }
        file.write_all(&chunk[..n]).map_err(CopyError::Failed)?;
    }
    file.flush().map_err(CopyError::Failed)?;
    // Stages that read from the handle's own position (documents, notebooks) start where a file opened afresh does.
    file.seek(SeekFrom::Start(0)).map_err(CopyError::Failed)?;
    Ok(file)
}
