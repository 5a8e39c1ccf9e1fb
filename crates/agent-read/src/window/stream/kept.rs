//! The text a stream keeps: the last chunks its decoder yielded, and text held around a window (see the parent
//! module's contract).

use super::KEPT_TEXT;
use std::collections::VecDeque;
use std::ops::Range;

/// The last chunks a decoder yielded, in order, at most [`KEPT_TEXT`] bytes (and always the last chunk).
pub(super) struct Kept {
    chunks: VecDeque<Vec<u8>>,
    /// Text offset of the first kept byte.
    pub(super) start: u64,
    pub(super) len: usize,
}

impl Kept {
    /// Nothing kept; the next chunk decoded starts at `start`.
    pub(super) fn empty_at(start: u64) -> Kept {
        Kept { chunks: VecDeque::new(), start, len: 0 }
    }

    /// Text offset just past the last kept byte.
    pub(super) fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    /// Keeps `chunk`, the text right after what is kept, handing the oldest chunks beyond [`KEPT_TEXT`] to `dropped`
    /// with their offsets.
    pub(super) fn push(&mut self, chunk: Vec<u8>, mut dropped: impl FnMut(u64, Vec<u8>)) {
        self.len += chunk.len();
        self.chunks.push_back(chunk);
        while self.len > KEPT_TEXT && self.chunks.len() > 1 {
            if let Some(oldest) = self.chunks.pop_front() {
                self.len -= oldest.len();
                let start = self.start;
                self.start += oldest.len() as u64;
                dropped(start, oldest);
            }
        }
    }

    /// Holds `chunk`, text at `start` dropped from a stream's kept text, when it meets `hold` and follows what is held.
    pub(super) fn hold(&mut self, hold: &Range<u64>, start: u64, chunk: Vec<u8>) {
        let meets = start < hold.end && start + chunk.len() as u64 > hold.start;
        if !meets || (self.len > 0 && self.end() != start) {
            return;
        }
        if self.len == 0 {
            self.start = start;
        }
        self.len += chunk.len();
        self.chunks.push_back(chunk);
    }

    /// Copies kept text from `at` (within what is kept) into `buf`, as far as one chunk goes; returns the bytes copied.
    pub(super) fn copy_at(&self, at: u64, buf: &mut [u8]) -> usize {
        let mut skip = usize::try_from(at.saturating_sub(self.start)).unwrap_or(usize::MAX);
        for chunk in &self.chunks {
            if skip < chunk.len() {
                let n = buf.len().min(chunk.len() - skip);
                buf[..n].copy_from_slice(&chunk[skip..skip + n]);
                return n;
            }
            skip -= chunk.len();
        }
        0
    }
}
