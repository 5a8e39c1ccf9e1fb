//! Stage 4 of a read: find the window's bytes in the file without ever holding the file.
//!
//! All reads go through [`Source`], which reads fixed-size chunks at explicit offsets (`pread`), so memory stays
//! constant whatever the file's size. Lines are found with `memchr` over each chunk:
//! - [`scan`] makes one forward pass that counts every line (the cost floor, like `wc -l`) and hands the lines of
//!   the window to a sink as it passes them;
//! - [`tail`] walks backward from the end to find where a negative offset starts;
//! - [`bytes`] reads a byte range and moves its ends to character boundaries;
//! - [`block`] finds the indentation block around a line (block mode);
//! - [`lines`] runs a line window, through the file's line index when there is one;
//! - [`index`] remembers where lines start in big files, so a repeated deep read costs its window, not the file;
//! - [`stream`] reads text that can only be decoded forward (a compressed file's) at any offset, resuming its
//!   decoder at the [`restarts`] an earlier pass learned.
//!
//! A line is ended by a line feed code unit; a carriage return just before it belongs to the terminator (CRLF).
//! A lone carriage return is content, as in `wc -l`, and is counted in the line-ending statistics.

pub mod block;
pub mod bytes;
pub mod index;
pub mod lines;
// Restart points are made only by the `compressed` feature's decoders.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub mod restarts;
pub mod scan;
// Streams are made by the `compressed` and `documents` features' reads; only compressed text parks its decoders.
#[cfg_attr(not(feature = "compressed"), allow(dead_code))]
pub mod stream;
pub mod tail;

use crate::budget::Budget;
use crate::classify::codec::NewlineLayout;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;

/// Bytes a read counts past its window to learn the exact total: a pass whose rest is further than this stops after
/// the window (and a search after the matches it shows), and gives a lower bound. A full pass over this much costs
/// a few milliseconds from the page cache.
pub const COUNT_AHEAD: u64 = 64 << 20;

/// Bytes read per chunk. A multiple of 4, so chunks stay aligned to UTF-16 and UTF-32 code units. 64 KiB stays in
/// the L2 cache between the kernel's copy and the scans; larger buffers measured slower on our machines.
pub const CHUNK_LEN: usize = 64 * 1024;

/// Where a source's bytes live.
#[derive(Debug, Clone, Copy)]
enum Backing<'f> {
    /// An open file, read with `pread`.
    File(&'f File),
    /// Text rendered in memory (a notebook, a PDF's pages), windowed like a file.
    Memory(&'f [u8]),
    /// Text read forward only (decompressed or converted as it goes), of a length known only at its end.
    #[cfg_attr(not(any(feature = "compressed", feature = "documents")), allow(dead_code))]
    Stream(&'f dyn stream::ReadAt),
}

/// The text content of an open file (or of rendered text): where it starts (after any BOM) and where reading stops.
#[derive(Debug)]
pub struct Source<'f> {
    backing: Backing<'f>,
    /// The file's first bytes, already read: reads within them cost no system call.
    head: &'f [u8],
    /// First byte of the text (after the byte order mark).
    pub data_start: u64,
    /// Reading stops here even if the file grows meanwhile: its size when opened.
    pub end: u64,
    /// How newlines look in the content's encoding.
    pub layout: NewlineLayout,
    /// Once it runs out (or is cancelled) every read fails, so no scan outlives its time budget or its caller.
    pub budget: Option<Budget>,
}

impl<'f> Source<'f> {
    /// Describes the text in `file` between `data_start` and `end`.
    pub fn new(file: &'f File, data_start: u64, end: u64, layout: NewlineLayout) -> Self {
        Source { backing: Backing::File(file), head: &[], data_start, end: end.max(data_start), layout, budget: None }
    }

    /// Describes text already in memory, so rendered documents are windowed exactly like files.
    pub fn in_memory(text: &'f [u8], layout: NewlineLayout) -> Self {
        Source {
            backing: Backing::Memory(text),
            head: &[],
            data_start: 0,
            end: text.len() as u64,
            layout,
            budget: None,
        }
    }

    /// Describes text that can only be read forward (see [`stream`]): it starts at `data_start` (after a byte order
    /// mark) and ends where the stream does.
    #[cfg_attr(not(any(feature = "compressed", feature = "documents")), allow(dead_code))]
    pub fn streamed(stream: &'f dyn stream::ReadAt, data_start: u64, layout: NewlineLayout) -> Self {
        Source { backing: Backing::Stream(stream), head: &[], data_start, end: u64::MAX, layout, budget: None }
    }

    /// The same source, knowing the file's first bytes (offsets `0..head.len()`, read from the same open file):
    /// reads that fall within them are copied from memory. A small file's head is the whole file, so its window
    /// needs no second read.
    pub fn with_head(self, head: &'f [u8]) -> Self {
        Source { head, ..self }
    }

    /// The same source, bounded in time by `budget`.
    pub fn with_budget(self, budget: Budget) -> Self {
        Source { budget: Some(budget), ..self }
    }

    /// The same source without its time budget or cancel signal: only for a few bytes' work that must be done even
    /// after they ran out (the fingerprints of the index a stopped pass leaves behind).
    pub fn without_budget(&self) -> Source<'f> {
        Source { budget: None, ..*self }
    }

    /// Whether the text is rendered in memory rather than read from a file.
    pub fn is_in_memory(&self) -> bool {
        matches!(self.backing, Backing::Memory(_))
    }

    /// The stream the text is read from, when it can only be read forward: a window from the end needs its line
    /// count first.
    pub fn stream(&self) -> Option<&'f dyn stream::ReadAt> {
        match self.backing {
            Backing::Stream(stream) => Some(stream),
            _ => None,
        }
    }

    /// Reads at `offset` until `buf` is full or the file ends; returns the bytes read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(budget) = &self.budget {
            budget.check()?;
        }
        let file = match self.backing {
            Backing::File(file) => file,
            Backing::Memory(text) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
                let n = buf.len().min(text.len() - start);
                buf[..n].copy_from_slice(&text[start..start + n]);
                return Ok(n);
            }
            Backing::Stream(stream) => return stream.read_at(offset, buf),
        };
        let cached = usize::try_from(offset).ok().and_then(|start| self.head.get(start..)).unwrap_or_default();
        let mut filled = cached.len().min(buf.len());
        buf[..filled].copy_from_slice(&cached[..filled]);
        while filled < buf.len() {
            match crate::platform::read_at(file, &mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// Where the content really ends: [`Self::end`], unless the file holds less than its size said (a `/proc` file
    /// reports 0 and is read up to a cap, a sysfs file reports a page, a file can shrink after it was opened), which
    /// one byte read at `end - 1` tells; the end is then found by reading forward, at most to `end`.
    pub fn real_end(&self) -> io::Result<u64> {
        if self.end == self.data_start || self.read_at(self.end - 1, &mut [0u8; 1])? == 1 {
            return Ok(self.end);
        }
        let mut buf = vec![0u8; CHUNK_LEN];
        let mut pos = self.data_start;
        while pos < self.end {
            let want = usize::try_from(self.end - pos).unwrap_or(CHUNK_LEN).min(CHUNK_LEN);
            let read = self.read_at(pos, &mut buf[..want])?;
            pos += read as u64;
            if read < want {
                break;
            }
        }
        Ok(pos)
    }

    /// The same source, ending at `end` (which must not be past [`Self::end`]).
    pub fn ending_at(&self, end: u64) -> Source<'f> {
        Source { end: end.clamp(self.data_start, self.end), budget: self.budget.clone(), ..*self }
    }

    /// Whether the content ends with a line feed.
    pub fn ends_with_newline(&self) -> io::Result<bool> {
        let unit = self.layout.unit as u64;
        // A trailing partial code unit cannot be a line feed.
        if self.end < self.data_start + unit || !(self.end - self.data_start).is_multiple_of(unit) {
            return Ok(false);
        }
        let mut last = [0u8; 4];
        let n = self.read_at(self.end - unit, &mut last[..self.layout.unit])?;
        Ok(n == self.layout.unit && last[..n] == *self.layout.lf_unit())
    }
}

/// Positions (unit starts) of the line feeds in `chunk`, which must start on a code unit boundary.
pub fn newlines(layout: NewlineLayout, chunk: &[u8]) -> impl DoubleEndedIterator<Item = usize> + '_ {
    let unit = layout.unit;
    let lf_index = layout.lf_byte_index();
    memchr::memchr_iter(b'\n', chunk).filter_map(move |hit| {
        if unit == 1 {
            return Some(hit);
        }
        let start = hit.checked_sub(lf_index)?;
        let is_unit = start % unit == 0 && chunk.get(start..start + unit) == Some(layout.lf_unit());
        is_unit.then_some(start)
    })
}

/// Number of line feeds in `chunk` (which starts on a code unit boundary).
pub fn count_newlines(layout: NewlineLayout, chunk: &[u8]) -> u64 {
    if layout.unit == 1 {
        // memchr's count is vectorised: this is the cost floor of every full scan.
        memchr::memchr_iter(b'\n', chunk).count() as u64
    } else {
        newlines(layout, chunk).count() as u64
    }
}

/// Counts of line terminators seen in the content, for `line_ending`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineEndings {
    /// Line feeds (every line break).
    pub lf: u64,
    /// Line feeds preceded by a carriage return.
    pub crlf: u64,
    /// Carriage returns not followed by a line feed.
    pub lone_cr: u64,
}

impl LineEndings {
    /// `lf`, `crlf`, `cr`, `mixed`, or `none` when the content has no line break at all.
    pub fn describe(&self) -> &'static str {
        match (self.lf, self.crlf, self.lone_cr) {
            (0, _, 0) => "none",
            (0, _, _) => "cr",
            (lf, crlf, 0) if crlf == lf => "crlf",
            (_, 0, 0) => "lf",
            _ => "mixed",
        }
    }

    /// The counts of two parts of one content, which may overlap: sums, whose [`LineEndings::describe`] is that of
    /// the whole (each style is told from which kinds of ending occur, and whether every line feed has its CR).
    pub fn merged(self, other: LineEndings) -> LineEndings {
        LineEndings { lf: self.lf + other.lf, crlf: self.crlf + other.crlf, lone_cr: self.lone_cr + other.lone_cr }
    }
}

/// Feeds chunks to the line-ending statistics, carrying the last code unit across chunk borders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndingCounter {
    layout: NewlineLayout,
    counts: LineEndings,
    carriage_returns: u64,
    prev_was_cr: bool,
}

impl EndingCounter {
    /// A counter for content in `layout`.
    pub fn new(layout: NewlineLayout) -> Self {
        EndingCounter { layout, counts: LineEndings::default(), carriage_returns: 0, prev_was_cr: false }
    }

    /// Adds one chunk whose line feed count is already known (`lf`); says whether the chunk holds a carriage return
    /// not followed by a line feed within it (one at its very end counts), as far as its layout lets it tell (any
    /// carriage return counts in UTF-16 and UTF-32).
    pub fn feed(&mut self, chunk: &[u8], lf: u64) -> bool {
        self.counts.lf += lf;
        let unit = self.layout.unit;
        let starts_with_lf = chunk.get(..unit) == Some(self.layout.lf_unit());
        if self.prev_was_cr && starts_with_lf {
            self.counts.crlf += 1;
        }
        let whole = chunk.len() - chunk.len() % unit;
        self.prev_was_cr = whole >= unit && chunk[whole - unit..whole] == *self.layout.cr_unit();
        if memchr::memchr(b'\r', chunk).is_none() {
            return false;
        }
        if unit == 1 {
            let carriage_returns = memchr::memchr_iter(b'\r', chunk).count() as u64;
            let crlf = memchr::memmem::find_iter(chunk, b"\r\n").count() as u64;
            self.carriage_returns += carriage_returns;
            self.counts.crlf += crlf;
            carriage_returns > crlf
        } else {
            self.count_wide(chunk);
            true
        }
    }

    fn count_wide(&mut self, chunk: &[u8]) {
        let unit = self.layout.unit;
        let cr = self.layout.cr_unit();
        for start in (0..chunk.len().saturating_sub(unit - 1)).step_by(unit) {
            if chunk[start..start + unit] == *cr {
                self.carriage_returns += 1;
                if chunk.get(start + unit..start + 2 * unit) == Some(self.layout.lf_unit()) {
                    self.counts.crlf += 1;
                }
            }
        }
    }

    /// The layout the counter reads.
    pub fn layout(&self) -> NewlineLayout {
        self.layout
    }

    /// The totals so far.
    pub fn finish(&self) -> LineEndings {
        LineEndings { lone_cr: self.carriage_returns.saturating_sub(self.counts.crlf), ..self.counts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Codec;

    fn utf8() -> NewlineLayout {
        Codec::for_label("utf-8").unwrap().newline_layout()
    }

    #[test]
    fn reads_within_the_head_come_from_memory_and_the_rest_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "abcdefgh").unwrap();
        let file = File::open(&path).unwrap();
        // A head that differs from the file shows where each byte came from (a real head is the file's own bytes).
        let source = Source::new(&file, 0, 8, utf8()).with_head(b"ABC");
        let read = |offset: u64, len: usize| {
            let mut buf = vec![0u8; len];
            let n = source.read_at(offset, &mut buf).unwrap();
            String::from_utf8(buf[..n].to_vec()).unwrap()
        };
        assert_eq!(read(0, 8), "ABCdefgh");
        assert_eq!(read(1, 2), "BC");
        assert_eq!(read(2, 3), "Cde");
        assert_eq!(read(5, 10), "fgh");
        assert_eq!(read(8, 4), "");
    }

    #[test]
    fn endings_are_classified() {
        let describe = |chunks: &[&[u8]]| {
            let mut c = EndingCounter::new(utf8());
            for chunk in chunks {
                c.feed(chunk, count_newlines(utf8(), chunk));
            }
            c.finish().describe()
        };
        assert_eq!(describe(&[b"a\nb\n"]), "lf");
        assert_eq!(describe(&[b"a\r\nb\r\n"]), "crlf");
        assert_eq!(describe(&[b"a\r", b"\nb\r\n"]), "crlf");
        assert_eq!(describe(&[b"a\rb\r"]), "cr");
        assert_eq!(describe(&[b"a\r\nb\n"]), "mixed");
        assert_eq!(describe(&[b"abc"]), "none");
    }

    #[test]
    fn utf16_newlines_need_alignment_and_zero_partner() {
        let layout = Codec::for_label("utf-16le").unwrap().newline_layout();
        // U+0A0A is not a newline; "\n" is.
        let bytes: Vec<u8> = "\u{0A0A}x\ny".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(newlines(layout, &bytes).collect::<Vec<_>>(), vec![4]);
        assert_eq!(count_newlines(layout, &bytes), 1);
    }

    #[test]
    fn utf16_endings_count_crlf() {
        let layout = Codec::for_label("utf-16be").unwrap().newline_layout();
        let bytes: Vec<u8> = "a\r\nb\rc\n".encode_utf16().flat_map(u16::to_be_bytes).collect();
        let mut c = EndingCounter::new(layout);
        c.feed(&bytes, count_newlines(layout, &bytes));
        assert_eq!(c.finish(), LineEndings { lf: 2, crlf: 1, lone_cr: 1 });
    }
}
