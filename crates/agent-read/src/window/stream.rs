//! Text that can only be read forward (decompressed as it goes), windowed like a file.
//!
//! Contract: a [`Stream`] answers [`Source::read_at`](super::Source::read_at) at any offset of the text it yields,
//! in memory that does not grow with the text: it keeps one chunk of what it decoded last. A read inside that chunk
//! is copied; a read further on decodes forward to it (discarding what lies between); a read before it starts the
//! decoder afresh from the file's first byte. A forward pass (every line window) therefore decodes the text once;
//! the only backward reads a pass makes (whether the text ends with a line feed) fall inside the kept chunk.
//!
//! The text's length is unknown until a pass reaches its end: a stream's source ends at `u64::MAX`, and passes stop
//! where the decoder does.

use super::CHUNK_LEN;
use crate::budget::Budget;
use std::io::{self, Read};
use std::sync::Mutex;

/// What a decoder failed with when its input is damaged (corrupt or cut short), as opposed to the budget running
/// out or the file system failing.
#[derive(Debug)]
pub struct Damaged(pub String);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Damaged {}

/// Whether `error` says the stream's input is damaged, and how.
pub fn damage(error: &io::Error) -> Option<&str> {
    error.get_ref()?.downcast_ref::<Damaged>().map(|damaged| damaged.0.as_str())
}

/// Starts a decoder over the file from its first byte.
pub type Opener<'f> = dyn Fn() -> io::Result<Box<dyn Read + 'f>> + Sync + 'f;

/// Text read at any offset: what a [`Source`](super::Source) needs of a stream.
pub trait ReadAt: std::fmt::Debug {
    /// Reads at `offset` until `buf` is full or the text ends; returns the bytes read.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl ReadAt for Stream<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Stream::read_at(self, offset, buf)
    }
}

/// A forward-only text, read back at any offset (see the module's contract).
pub struct Stream<'f> {
    open: &'f Opener<'f>,
    /// Tells a decoder stopped by the budget (its input reader failed) from a damaged input.
    budget: Budget,
    state: Mutex<State<'f>>,
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").finish_non_exhaustive()
    }
}

struct State<'f> {
    decoder: Option<Box<dyn Read + 'f>>,
    /// The last bytes decoded, starting at `chunk_start`.
    chunk: Vec<u8>,
    chunk_start: u64,
    /// The decoder has ended: the text ends at `chunk_start + chunk.len()`.
    ended: bool,
    /// What the decoder failed with after the kept chunk: the bytes before the damage are read first.
    failed: Option<io::Error>,
}

impl<'f> Stream<'f> {
    /// A stream of the text `open` decodes within `budget`; nothing is decoded until the first read.
    pub fn new(open: &'f Opener<'f>, budget: Budget) -> Self {
        let state = State { decoder: None, chunk: Vec::new(), chunk_start: 0, ended: false, failed: None };
        Stream { open, budget, state: Mutex::new(state) }
    }

    /// Reads at `offset` until `buf` is full or the text ends; returns the bytes read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        // A thread that panicked mid-read left a state that is still well formed (at worst it restarts).
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if offset < state.chunk_start {
            *state = State { decoder: None, chunk: Vec::new(), chunk_start: 0, ended: false, failed: None };
        }
        let mut filled = 0;
        while filled < buf.len() {
            let at = offset + filled as u64;
            let chunk_end = state.chunk_start + state.chunk.len() as u64;
            if at < chunk_end {
                let from = (at - state.chunk_start) as usize;
                let n = (buf.len() - filled).min(state.chunk.len() - from);
                buf[filled..filled + n].copy_from_slice(&state.chunk[from..from + n]);
                filled += n;
            } else if state.ended {
                break;
            } else {
                match self.decode_next(&mut state) {
                    Ok(true) => {}
                    Ok(false) => break,
                    // What was read before the damage is answered first; the next read meets the error.
                    Err(e) if filled > 0 => {
                        state.failed = Some(e);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(filled)
    }

    /// Decodes the chunk after the kept one; `false` (keeping the old chunk, so the text's last bytes stay readable)
    /// when the text has ended.
    fn decode_next(&self, state: &mut State<'f>) -> io::Result<bool> {
        if let Some(error) = state.failed.take() {
            return Err(error);
        }
        if state.decoder.is_none() {
            state.decoder = Some((self.open)()?);
        }
        let Some(decoder) = state.decoder.as_mut() else { return Ok(false) };
        let mut next = vec![0u8; CHUNK_LEN];
        let mut len = 0;
        while len < next.len() {
            match decoder.read(&mut next[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if len == 0 => return Err(self.classified(e)),
                Err(e) => {
                    state.failed = Some(self.classified(e));
                    break;
                }
            }
        }
        if len < next.len() && state.failed.is_none() {
            state.ended = true;
        }
        if len == 0 {
            return Ok(false);
        }
        next.truncate(len);
        state.chunk_start += state.chunk.len() as u64;
        state.chunk = next;
        Ok(true)
    }
}

impl Stream<'_> {
    /// A decoder's error as the read reports it: the budget's own when it ran out (a decoder may wrap its reader's
    /// error), [`Damaged`] when the input does not decode, else the file system's error as it came.
    fn classified(&self, error: io::Error) -> io::Error {
        if let Err(stopped) = self.budget.check() {
            return stopped;
        }
        match error.kind() {
            io::ErrorKind::InvalidData
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::Other => io::Error::new(io::ErrorKind::InvalidData, Damaged(error.to_string())),
            _ => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unlimited() -> Budget {
        Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(3600), crate::budget::Cancel::new())
    }

    fn numbers() -> Vec<u8> {
        (0..200_000u32).flat_map(|n| n.to_le_bytes()).collect()
    }

    #[test]
    fn reads_forward_backward_and_past_the_end_agree_with_the_text() {
        let text = numbers();
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let open = || -> io::Result<Box<dyn Read + '_>> {
            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Box::new(&text[..]))
        };
        let stream = Stream::new(&open, unlimited());
        let read = |offset: u64, len: usize| {
            let mut buf = vec![0u8; len];
            let n = stream.read_at(offset, &mut buf).unwrap();
            buf.truncate(n);
            buf
        };
        let len = text.len() as u64;
        assert_eq!(read(0, 10), text[..10]);
        assert_eq!(read(300_000, 100_000), text[300_000..400_000]);
        assert_eq!(read(399_999, 1), text[399_999..400_000], "inside the kept chunk: no restart");
        assert_eq!(opened.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(read(len - 5, 100), text[text.len() - 5..]);
        assert_eq!(read(len - 1, 1), text[text.len() - 1..], "the last byte after the end was met");
        assert_eq!(read(len, 4), Vec::<u8>::new());
        assert_eq!(read(5, 3), text[5..8], "a read before the kept chunk starts over");
        assert_eq!(opened.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    #[test]
    fn a_decoder_error_is_returned_not_hidden() {
        struct Damaged(usize);
        impl Read for Damaged {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(b'a');
                self.0 -= n;
                Ok(n)
            }
        }
        let open = || -> io::Result<Box<dyn Read>> { Ok(Box::new(Damaged(100))) };
        let stream = Stream::new(&open, unlimited());
        let mut buf = [0u8; 150];
        assert_eq!(stream.read_at(0, &mut buf[..100]).unwrap(), 100, "the bytes before the damage");
        assert_eq!(stream.read_at(90, &mut buf).unwrap(), 10, "what is left before the damage");
        let error = stream.read_at(100, &mut buf).unwrap_err();
        assert_eq!(damage(&error), Some("corrupt"));
    }
}
