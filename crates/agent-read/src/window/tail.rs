//! Backward search from the end of a file: where do its last `n` lines start?
//!
//! This lets a negative offset (`-100`: the last hundred lines) find its window by reading only the end of the file;
//! the forward pass that follows only has to count up to that byte.

use super::{CHUNK_LEN, Source, newlines};
use std::io;

/// Byte offset where the last `n` lines begin (the content start when the file has fewer lines).
pub fn start_of_last_lines(source: &Source<'_>, n: u64) -> io::Result<u64> {
    // Counting back from past the content's real end would take its final line feed for the start of a line.
    let source = &source.ending_at(source.real_end()?);
    let unit = source.layout.unit as u64;
    // Only whole code units can hold a line feed; a trailing partial unit is content of the last line.
    let mut pos = source.data_start + (source.end - source.data_start) / unit * unit;
    if source.ends_with_newline()? {
        // The final line feed ends the last line; it does not start another.
        pos -= unit;
    }
    let mut buf = vec![0u8; CHUNK_LEN];
    let mut seen = 0u64;
    while pos > source.data_start {
        // Chunks stay aligned to code units because CHUNK_LEN is a multiple of 4.
        let chunk_start = pos.saturating_sub(CHUNK_LEN as u64).max(source.data_start);
        let chunk_start = chunk_start + (unit - (chunk_start - source.data_start) % unit) % unit;
        let len = (pos - chunk_start) as usize;
        let read = source.read_at(chunk_start, &mut buf[..len])?;
        let chunk = &buf[..read];
        for nl in newlines(source.layout, chunk).rev() {
            seen += 1;
            if seen == n {
                return Ok(chunk_start + nl as u64 + unit);
            }
        }
        pos = chunk_start;
    }
    Ok(source.data_start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Codec;
    use std::io::Write;

    fn start(bytes: &[u8], codec: &str, data_start: u64, n: u64) -> u64 {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let layout = Codec::for_label(codec).unwrap().newline_layout();
        start_of_last_lines(&Source::new(&file, data_start, bytes.len() as u64, layout), n).unwrap()
    }

    #[test]
    fn a_file_shorter_than_its_stated_end_counts_back_from_its_real_end() {
        // A /proc file states size 0 and is read up to a cap; a sysfs file states a page.
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"a\nb\nc\n").unwrap();
        let layout = Codec::for_label("utf-8").unwrap().newline_layout();
        for stated_end in [7, 4096, 64 << 20] {
            let source = Source::new(&file, 0, stated_end, layout);
            assert_eq!(source.real_end().unwrap(), 6);
            assert_eq!(start_of_last_lines(&source, 1).unwrap(), 4, "stated end {stated_end}");
            assert_eq!(start_of_last_lines(&source, 3).unwrap(), 0, "stated end {stated_end}");
        }
    }

    #[test]
    fn finds_last_lines_with_and_without_final_newline() {
        assert_eq!(start(b"a\nb\nc\n", "utf-8", 0, 1), 4);
        assert_eq!(start(b"a\nb\nc", "utf-8", 0, 1), 4);
        assert_eq!(start(b"a\nb\nc", "utf-8", 0, 2), 2);
        assert_eq!(start(b"a\nb\nc", "utf-8", 0, 3), 0);
        assert_eq!(start(b"a\nb\nc", "utf-8", 0, 99), 0);
        assert_eq!(start(b"\n\n", "utf-8", 0, 1), 1);
    }

    #[test]
    fn spans_many_chunks() {
        let bytes: Vec<u8> = (0..200_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
        let at = start(&bytes, "utf-8", 0, 150_000) as usize;
        assert!(bytes[at..].starts_with(b"50000\n"));
    }

    #[test]
    fn utf16_after_bom() {
        let mut bytes = vec![0xFE, 0xFF];
        bytes.extend("x\ny\n".encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(start(&bytes, "utf-16be", 2, 1), 6);
        assert_eq!(start(&bytes, "utf-16be", 2, 5), 2);
    }
}
