//! Text that can only be read forward (decompressed, or converted from a document, as it goes), windowed like a file.
//!
//! Contract: a [`Stream`] answers [`Source::read_at`](super::Source::read_at) at any offset of the text it yields,
//! in memory that does not grow with the text: it keeps the last [`KEPT_TEXT`] bytes it decoded. A read inside them
//! is copied; a read further on decodes forward to it (discarding what lies between); a read before them starts the
//! decoder afresh. A forward pass (every line window) therefore decodes the text once; the backward reads a pass
//! makes (whether the text ends with a line feed) fall inside what is kept, and so does a tail read right after the
//! pass that counted the text's lines, when its window and the line checkpoint before it are that close to the end:
//! a first tail decodes the text once, whether or not its decoder can resume anywhere.
//!
//! Once it is given the text's [restart points](super::restarts) (learned by an earlier pass over the same file), a
//! read starts the decoder at the last point before it, rather than at the file's first byte, whenever that point
//! lies beyond what was decoded: the decoder then yields the text from that point on. A restart point the decoder
//! cannot resume at (its fingerprint no longer matches the file) or that fails to decode is never trusted further:
//! the stream drops every point and decodes from the file's start, so the text read is the same either way (and
//! [`ReadAt::restart_failed`] tells the index to forget them). A pass may also ask the stream to record the points
//! its decoder passes.
//!
//! The text's length is unknown until a pass reaches its end: a stream's source ends at `u64::MAX`, and passes stop
//! where the decoder does.

use super::CHUNK_LEN;
use super::restarts::{Restart, Restarts};
use crate::budget::Budget;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};

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

/// A decoder of a streamed text: the text, read forward, and the restart points it can make on the way.
pub trait Decoder: Read {
    /// Asks for a restart point at the next place the decoder can make one, at or after what it has decoded.
    fn want_restart(&mut self) {}

    /// The restart point made since the last call, if any.
    fn take_restart(&mut self) -> Option<Restart> {
        None
    }
}

/// Starts a decoder over the file: from its first byte (`None`), or resuming at a restart point it made earlier.
pub type Opener<'f> = dyn Fn(Option<&Restart>) -> io::Result<Box<dyn Decoder + 'f>> + Sync + 'f;

/// Text read at any offset: what a [`Source`](super::Source) needs of a stream.
pub trait ReadAt: std::fmt::Debug {
    /// Reads at `offset` until `buf` is full or the text ends; returns the bytes read.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// From now on, reads may resume the decoder at `restarts` (learned by an earlier pass over the same file).
    fn resume_from(&self, restarts: Arc<Restarts>);

    /// From now on, keeps the restart points the decoder passes.
    fn record_restarts(&self);

    /// The restart points kept since [`Self::record_restarts`].
    fn recorded(&self) -> Restarts;

    /// Whether a restart point failed (so the text was decoded from the start instead): whatever offered it is wrong.
    fn restart_failed(&self) -> bool;
}

impl ReadAt for Stream<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Stream::read_at(self, offset, buf)
    }

    fn resume_from(&self, restarts: Arc<Restarts>) {
        let mut state = self.lock();
        if !state.restart_failed {
            state.restarts = Some(restarts);
        }
    }

    fn record_restarts(&self) {
        self.lock().recording.get_or_insert_with(Restarts::new);
    }

    fn recorded(&self) -> Restarts {
        self.lock().recording.clone().unwrap_or_default()
    }

    fn restart_failed(&self) -> bool {
        self.lock().restart_failed
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
    decoder: Option<Box<dyn Decoder + 'f>>,
    /// The last bytes decoded.
    kept: Kept,
    /// The decoder has ended: the text ends at `kept.end()`.
    ended: bool,
    /// What the decoder failed with after the kept text: the bytes before the damage are read first.
    failed: Option<io::Error>,
    /// The restart point the decoder began at, if it did not begin at the text's start.
    resumed_at: Option<Restart>,
    /// Where the decoder may resume.
    restarts: Option<Arc<Restarts>>,
    /// The restart points the decoder passed, when asked to keep them.
    recording: Option<Restarts>,
    /// A restart point failed: none is used again.
    restart_failed: bool,
}

/// Most decoded text a stream keeps: a tail window, and the line checkpoint before it, read right after a pass
/// to the text's end are found here rather than decoded again.
pub const KEPT_TEXT: usize = 2 << 20;

/// The last chunks a decoder yielded, in order, at most [`KEPT_TEXT`] bytes (and always the last chunk).
struct Kept {
    chunks: VecDeque<Vec<u8>>,
    /// Text offset of the first kept byte.
    start: u64,
    len: usize,
}

impl Kept {
    /// Nothing kept; the next chunk decoded starts at `start`.
    fn empty_at(start: u64) -> Kept {
        Kept { chunks: VecDeque::new(), start, len: 0 }
    }

    /// Text offset just past the last kept byte.
    fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    /// Keeps `chunk`, the text right after what is kept, dropping the oldest chunks beyond [`KEPT_TEXT`].
    fn push(&mut self, chunk: Vec<u8>) {
        self.len += chunk.len();
        self.chunks.push_back(chunk);
        while self.len > KEPT_TEXT && self.chunks.len() > 1 {
            if let Some(oldest) = self.chunks.pop_front() {
                self.len -= oldest.len();
                self.start += oldest.len() as u64;
            }
        }
    }

    /// Copies kept text from `at` (within what is kept) into `buf`, as far as one chunk goes; returns the bytes copied.
    fn copy_at(&self, at: u64, buf: &mut [u8]) -> usize {
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

impl<'f> State<'f> {
    /// Forgets what was decoded: the next read starts a decoder at `from` (the text's start when `None`).
    fn restart(&mut self, from: Option<Restart>) {
        self.decoder = None;
        self.kept = Kept::empty_at(from.as_ref().map_or(0, |point| point.at));
        self.ended = false;
        self.failed = None;
        self.resumed_at = from;
    }

    /// The restart point a read at `offset` should start the decoder at: the last one before `offset`, when the
    /// kept text is after `offset` or ends before that point.
    fn restart_for(&self, offset: u64) -> Option<Restart> {
        let point = self.restarts.as_ref()?.before(offset)?;
        let useful = offset < self.kept.start || point.at > self.kept.end();
        useful.then(|| point.clone())
    }

    /// A restart point proved wrong: drop them all, and decode from the start.
    fn abandon_restarts(&mut self) {
        self.restart_failed = true;
        self.restarts = None;
        self.restart(None);
    }
}

impl<'f> Stream<'f> {
    /// A stream of the text `open` decodes within `budget`; nothing is decoded until the first read.
    pub fn new(open: &'f Opener<'f>, budget: Budget) -> Self {
        let state = State {
            decoder: None,
            kept: Kept::empty_at(0),
            ended: false,
            failed: None,
            resumed_at: None,
            restarts: None,
            recording: None,
            restart_failed: false,
        };
        Stream { open, budget, state: Mutex::new(state) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<'f>> {
        // A thread that panicked mid-read left a state that is still well formed (at worst it restarts).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads at `offset` until `buf` is full or the text ends; returns the bytes read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut state = self.lock();
        if let Some(point) = state.restart_for(offset) {
            state.restart(Some(point));
        } else if offset < state.kept.start {
            state.restart(None);
        }
        let mut filled = 0;
        while filled < buf.len() {
            let at = offset + filled as u64;
            if at < state.kept.end() {
                match state.kept.copy_at(at, &mut buf[filled..]) {
                    // Unreachable (what is kept holds `at`); stopping beats spinning.
                    0 => break,
                    n => filled += n,
                }
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

    /// Decodes the chunk after the kept text; `false` (so the text's last bytes stay readable) when the text has
    /// ended. A decoder that began at a restart point and fails is replaced by one from the start (`true`: nothing is
    /// kept then, and the next call decodes from the start).
    fn decode_next(&self, state: &mut State<'f>) -> io::Result<bool> {
        match self.decode_chunk(state) {
            Err(e) if state.resumed_at.is_some() && damage(&e).is_some() => {
                state.abandon_restarts();
                Ok(true)
            }
            decoded => decoded,
        }
    }

    fn decode_chunk(&self, state: &mut State<'f>) -> io::Result<bool> {
        if let Some(error) = state.failed.take() {
            return Err(error);
        }
        if state.decoder.is_none() {
            state.decoder = Some(self.open_decoder(state)?);
        }
        let State { decoder: Some(decoder), recording, .. } = state else { return Ok(false) };
        let mut next = vec![0u8; CHUNK_LEN];
        let mut len = 0;
        let mut failed = None;
        while len < next.len() {
            match decoder.read(&mut next[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if len == 0 => return Err(self.classified(e)),
                Err(e) => {
                    failed = Some(self.classified(e));
                    break;
                }
            }
        }
        let decoded_to = state.kept.end() + len as u64;
        if let Some(recording) = recording {
            if let Some(point) = decoder.take_restart() {
                recording.push(point);
            }
            if decoded_to >= recording.next_wanted() {
                decoder.want_restart();
            }
        }
        state.failed = failed;
        if len < next.len() && state.failed.is_none() {
            state.ended = true;
        }
        if len == 0 {
            return Ok(false);
        }
        next.truncate(len);
        state.kept.push(next);
        Ok(true)
    }

    /// A decoder from where the state says: a restart point, or the start. A restart point the decoder refuses is
    /// abandoned for the start.
    fn open_decoder(&self, state: &mut State<'f>) -> io::Result<Box<dyn Decoder + 'f>> {
        if let Some(point) = &state.resumed_at {
            match (self.open)(Some(point)) {
                Ok(decoder) => return Ok(decoder),
                Err(_) if self.budget.check().is_ok() => state.abandon_restarts(),
                Err(e) => return Err(self.classified(e)),
            }
        }
        (self.open)(None)
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
    use std::sync::atomic::{AtomicU64, Ordering};

    fn unlimited() -> Budget {
        Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(3600), crate::budget::Cancel::new())
    }

    fn numbers(count: u32) -> Vec<u8> {
        (0..count).flat_map(|n| n.to_le_bytes()).collect()
    }

    /// Text "decoded" from memory, counting what it yields; asked for a restart point, it makes one at the next
    /// multiple of 1,000 bytes. From `fail_at` on, it fails as damaged input does.
    struct Slice<'a> {
        text: &'a [u8],
        pos: usize,
        want: bool,
        made: Option<Restart>,
        decoded: &'a AtomicU64,
        fail_at: usize,
    }

    impl Read for Slice<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.pos >= self.fail_at {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
            }
            let n = buf.len().min(1000 - self.pos % 1000).min(self.text.len() - self.pos);
            buf[..n].copy_from_slice(&self.text[self.pos..self.pos + n]);
            self.pos += n;
            self.decoded.fetch_add(n as u64, Ordering::Relaxed);
            if self.want && self.pos.is_multiple_of(1000) {
                let at = self.pos as u64;
                self.made = Some(Restart { at, input: at, check: 7, state: Box::new([]) });
                self.want = false;
            }
            Ok(n)
        }
    }

    impl Decoder for Slice<'_> {
        fn want_restart(&mut self) {
            self.want = true;
        }

        fn take_restart(&mut self) -> Option<Restart> {
            self.made.take()
        }
    }

    /// What a test's opener decodes: `text`, refusing restart points whose check is not 7, and failing from `fail_at`
    /// on when resumed.
    struct Source<'a> {
        text: &'a [u8],
        decoded: &'a AtomicU64,
        fail_at: usize,
    }

    impl<'a> Source<'a> {
        fn open(&self, from: Option<&Restart>) -> io::Result<Box<dyn Decoder + 'a>> {
            if from.is_some_and(|point| point.check != 7) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "the file changed"));
            }
            let fail_at = if from.is_some() { self.fail_at } else { usize::MAX };
            let pos = from.map_or(0, |point| point.at as usize);
            Ok(Box::new(Slice { text: self.text, pos, want: false, made: None, decoded: self.decoded, fail_at }))
        }
    }

    fn read(stream: &Stream<'_>, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let n = stream.read_at(offset, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn reads_forward_backward_and_past_the_end_agree_with_the_text() {
        let text = numbers(1_000_000);
        let decoded = AtomicU64::new(0);
        let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
        let open = |from: Option<&Restart>| source.open(from);
        let stream = Stream::new(&open, unlimited());
        let len = text.len() as u64;
        assert_eq!(read(&stream, 0, 10), text[..10]);
        assert_eq!(read(&stream, 300_000, 100_000), text[300_000..400_000]);
        let before = decoded.load(Ordering::Relaxed);
        assert_eq!(read(&stream, 399_999, 1), text[399_999..400_000], "inside the kept text: nothing decoded");
        assert_eq!(decoded.load(Ordering::Relaxed), before);
        assert_eq!(read(&stream, len - 5, 100), text[text.len() - 5..]);
        assert_eq!(read(&stream, len - 1, 1), text[text.len() - 1..], "the last byte after the end was met");
        assert_eq!(read(&stream, len, 4), Vec::<u8>::new());
        decoded.store(0, Ordering::Relaxed);
        assert_eq!(read(&stream, 5, 3), text[5..8], "a read before the kept text starts over");
        assert!(decoded.load(Ordering::Relaxed) <= CHUNK_LEN as u64);
    }

    #[test]
    fn the_last_decoded_text_is_kept_so_a_tail_after_a_whole_pass_decodes_nothing() {
        let text = numbers(2_000_000);
        let len = text.len() as u64;
        let decoded = AtomicU64::new(0);
        let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
        let open = |from: Option<&Restart>| source.open(from);
        let stream = Stream::new(&open, unlimited());
        let mut offset = 0;
        while !read(&stream, offset, 50_000).is_empty() {
            offset += 50_000;
        }
        assert_eq!(decoded.load(Ordering::Relaxed), len, "one pass to the end");
        let tail = len - KEPT_TEXT as u64 + CHUNK_LEN as u64;
        let (from, to) = (tail as usize, tail as usize + 700_000);
        assert_eq!(read(&stream, tail, 700_000), text[from..to], "across several kept chunks");
        assert_eq!(read(&stream, len - 10, 100), text[text.len() - 10..]);
        assert_eq!(decoded.load(Ordering::Relaxed), len, "read from what is kept: nothing decoded again");
        let before_kept = len - KEPT_TEXT as u64 - CHUNK_LEN as u64;
        let (from, to) = (before_kept as usize, before_kept as usize + 10);
        assert_eq!(read(&stream, before_kept, 10), text[from..to]);
        assert!(decoded.load(Ordering::Relaxed) > len, "before what is kept: decoded from the start again");
    }

    #[test]
    fn recorded_restart_points_let_a_later_read_decode_only_from_the_last_before_it() {
        let text = numbers(3 << 20);
        let decoded = AtomicU64::new(0);
        let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
        let open = |from: Option<&Restart>| source.open(from);
        let first = Stream::new(&open, unlimited());
        first.record_restarts();
        let mut offset = 0;
        while !read(&first, offset, CHUNK_LEN).is_empty() {
            offset += CHUNK_LEN as u64;
        }
        let restarts = Arc::new(first.recorded());
        assert!(restarts.count() >= 2, "{restarts:?}");
        let deep = text.len() as u64 - 1_000_000;
        let point = restarts.before(deep).unwrap().at;
        assert!(point > 4 << 20);
        decoded.store(0, Ordering::Relaxed);
        let later = Stream::new(&open, unlimited());
        assert_eq!(read(&later, 0, 16), text[..16], "the start is read from the start");
        later.resume_from(restarts.clone());
        assert_eq!(read(&later, deep, 100), text[deep as usize..deep as usize + 100]);
        assert!(decoded.load(Ordering::Relaxed) <= deep - point + 2 * CHUNK_LEN as u64, "decoded from the point on");
        assert_eq!(read(&later, 10, 10), text[10..20], "before the point: from the start again");
        assert!(!later.restart_failed());
    }

    #[test]
    fn a_restart_point_refused_or_failing_falls_back_to_the_start_with_the_same_text() {
        let text = numbers(100_000);
        let decoded = AtomicU64::new(0);
        let point = |check| Restart { at: 200_000, input: 200_000, check, state: Box::new([]) };
        let mut refused = Restarts::new();
        refused.push(point(8));
        let mut failing = Restarts::new();
        failing.push(point(7));
        for (restarts, fail_at) in [(refused, usize::MAX), (failing, 250_000)] {
            let source = Source { text: &text, decoded: &decoded, fail_at };
            let open = |from: Option<&Restart>| source.open(from);
            let stream = Stream::new(&open, unlimited());
            stream.resume_from(Arc::new(restarts));
            assert_eq!(read(&stream, 240_000, 20_000), text[240_000..260_000]);
            assert!(stream.restart_failed());
            assert_eq!(read(&stream, 380_000, 20_000), text[380_000..], "no point is used again");
        }
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
        impl Decoder for Damaged {}
        let open = |_: Option<&Restart>| -> io::Result<Box<dyn Decoder>> { Ok(Box::new(Damaged(100))) };
        let stream = Stream::new(&open, unlimited());
        let mut buf = [0u8; 150];
        assert_eq!(stream.read_at(0, &mut buf[..100]).unwrap(), 100, "the bytes before the damage");
        assert_eq!(stream.read_at(90, &mut buf).unwrap(), 10, "what is left before the damage");
        let error = stream.read_at(100, &mut buf).unwrap_err();
        assert_eq!(damage(&error), Some("corrupt"));
    }
}
