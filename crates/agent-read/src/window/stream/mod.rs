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
//!
//! Decoders that can be [kept](Keepable) outlive a position: a read that goes back before the kept text sets its
//! decoder aside (with the text it kept) rather than dropping it, and each read goes on with whichever decoder, or
//! text, reaches its offset soonest ([`State::place`]). When its read is over the stream is [parked](Stream::park):
//! those decoders where they stopped, and the text a pass was asked to hold around a window it went past. A later
//! read of the same file [goes on](Stream::adopting) with them, so a window within text kept or held decodes nothing
//! and a window further on decodes only the text between, even where the decoder has no restart points. A decoder
//! set aside that meets damaged input is dropped for one from the start, as a restart point is.

mod kept;

use super::CHUNK_LEN;
use super::restarts::{Restart, Restarts};
use crate::budget::Budget;
use kept::Kept;
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

    /// A restart point made and not taken yet, if any (the oldest first; a decoder may hand several out at once, when
    /// it can vouch for them only further on).
    fn take_restart(&mut self) -> Option<Restart> {
        None
    }

    /// This decoder, to keep for a later read, if it can be kept (see [`Keepable`]).
    fn into_kept(self: Box<Self>) -> Option<Box<dyn Keepable>> {
        None
    }
}

/// A decoder a later read of the same file can go on with: it owns what it reads (its own handle to the file), and
/// each read hands it that read's budget.
pub trait Keepable: Decoder + Send {
    /// From now on, stops at `budget` (and waits for memory no longer than it allows).
    fn rebudget(&mut self, budget: &Budget);

    /// Bytes it holds of the memory every read shares ([`crate::media::memory`]).
    fn memory(&self) -> u64;
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

    /// Keeps the text around `offset` (where a window starts, or a search's first match) when a pass goes on past
    /// it, to [park](Stream::park) with the decoders, so that a later read near it decodes nothing. Asked again for
    /// another offset, it holds around that one instead.
    fn hold_text_around(&self, offset: u64);
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

    fn hold_text_around(&self, offset: u64) {
        let half = KEPT_TEXT as u64 / 2;
        let hold = offset.saturating_sub(half)..offset.saturating_add(half);
        let mut state = self.lock();
        if state.hold.as_ref() != Some(&hold) {
            // Held around another offset before: that text is let go.
            state.held = Kept::empty_at(0);
            state.hold = Some(hold);
        }
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
    /// The decoder was set aside (by this read or an earlier one): damaged input drops it for one from the start.
    adopted: bool,
    /// The decoder failed or was stopped: it is neither set aside nor parked.
    faulted: bool,
    /// Decoders set aside, with the text each kept, the oldest first: a read may go on with one of them.
    spares: Vec<Parked>,
    /// The text to hold, and what of it the pass has left behind (parked as text alone).
    hold: Option<std::ops::Range<u64>>,
    held: Kept,
}

/// Most decoders a stream sets aside (beyond the one it decodes with).
const MAX_SPARES: usize = 3;
/// Most memory (of the budget every read shares) a decoder may hold and still be set aside or parked.
pub const MAX_KEPT_DECODER_MEMORY: u64 = 32 << 20;

/// A decoder set aside, where it stopped, with the text it kept, or held text alone (see [`Stream::park`]).
pub struct Parked {
    decoder: Option<Box<dyn Keepable>>,
    kept: Kept,
    ended: bool,
    resumed_at: Option<Restart>,
}

impl Parked {
    /// Bytes it holds: the text kept, and the decoder's share of the memory every read shares.
    pub fn memory(&self) -> u64 {
        self.kept.len as u64 + self.decoder.as_ref().map_or(0, |decoder| decoder.memory())
    }
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked").field("kept", &(self.kept.start..self.kept.end())).finish_non_exhaustive()
    }
}

#[cfg(test)]
thread_local! {
    /// Text decoded by the streams of this thread (for tests of what a read decodes).
    pub static DECODED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Most decoded text a stream keeps: a tail window, and the line checkpoint before it, read right after a pass
/// to the text's end are found here rather than decoded again.
pub const KEPT_TEXT: usize = 2 << 20;

impl<'f> State<'f> {
    /// Forgets what was decoded: the next read starts a decoder at `from` (the text's start when `None`). The
    /// decoder it had is set aside when it is sound.
    fn restart(&mut self, from: Option<Restart>) {
        self.set_aside();
        self.kept = Kept::empty_at(from.as_ref().map_or(0, |point| point.at));
        self.ended = false;
        self.resumed_at = from;
    }

    /// Moves the decoder, and the text it kept, to the spares when it is sound and can be kept (the oldest spare
    /// goes when there are too many); drops it otherwise.
    fn set_aside(&mut self) {
        let text_only = self.text_only();
        let decoder = self.decoder.take();
        let kept = std::mem::replace(&mut self.kept, Kept::empty_at(0));
        let sound = !self.faulted && self.failed.is_none();
        (self.adopted, self.faulted, self.failed) = (false, false, None);
        let decoder = match decoder.filter(|_| sound).map(|decoder| decoder.into_kept()) {
            Some(Some(decoder)) if decoder.memory() <= MAX_KEPT_DECODER_MEMORY => Some(decoder),
            _ if text_only => None,
            _ => return,
        };
        let spare = Parked { decoder, kept, ended: self.ended, resumed_at: self.resumed_at.take() };
        self.spare(spare);
    }

    /// Adds `spare` to the spares, the oldest going when there are too many.
    fn spare(&mut self, spare: Parked) {
        self.spares.push(spare);
        if self.spares.len() > MAX_SPARES {
            self.spares.remove(0);
        }
    }

    /// Whether the current text is held text with no decoder to go on with (reading past it starts one): only held
    /// text is kept without a decoder, a decoder about to start keeps nothing yet.
    fn text_only(&self) -> bool {
        self.decoder.is_none() && self.kept.len > 0
    }

    /// Goes on with spare `index`, setting the current decoder aside.
    fn take_spare(&mut self, index: usize) {
        let Parked { decoder, kept, ended, resumed_at } = self.spares.remove(index);
        self.set_aside();
        self.decoder = decoder.map(|decoder| -> Box<dyn Decoder + 'f> { decoder });
        (self.kept, self.ended, self.resumed_at, self.adopted) = (kept, ended, resumed_at, true);
    }

    /// Readies the decoder that reaches `offset` soonest: the current one (when it has `offset` kept or is before
    /// it, and nothing is nearer), a spare, a fresh one at the last restart point before `offset`, or one from the
    /// start.
    fn place(&mut self, offset: u64) {
        let here = reach(&self.kept, self.ended, !self.text_only(), offset);
        let spare = (self.spares.iter().enumerate())
            .filter_map(|(index, spare)| {
                Some((reach(&spare.kept, spare.ended, spare.decoder.is_some(), offset)?, index))
            })
            .min();
        let point = self.restarts.as_ref().and_then(|restarts| restarts.before(offset)).cloned();
        let from_point = point.as_ref().map_or(offset, |point| offset.saturating_sub(point.at));
        let elsewhere = spare.map_or(from_point, |(distance, _)| distance.min(from_point));
        match (here, spare) {
            (Some(distance), _) if distance <= elsewhere => {}
            (_, Some((distance, index))) if distance <= from_point => self.take_spare(index),
            _ => self.restart(point),
        }
    }

    /// A restart point proved wrong: drop them all, and decode from the start.
    fn abandon_restarts(&mut self) {
        self.restart_failed = true;
        self.restarts = None;
        self.restart(None);
    }
}

/// How much text a decoder that kept `kept` (and has `ended`, or not) must decode before it yields `offset`: none
/// when `offset` is kept (or past the end of a text that has ended), `None` when it has gone past `offset`, or when
/// `offset` is beyond held text that no decoder (`decodes` false) can go on from.
fn reach(kept: &Kept, ended: bool, decodes: bool, offset: u64) -> Option<u64> {
    if offset < kept.start {
        return None;
    }
    if offset < kept.end() || ended {
        return Some(0);
    }
    decodes.then(|| offset - kept.end())
}

impl<'f> Stream<'f> {
    /// A stream of the text `open` decodes within `budget`; nothing is decoded until the first read.
    pub fn new(open: &'f Opener<'f>, budget: Budget) -> Self {
        Stream::adopting(open, budget, Vec::new())
    }

    /// A stream of the same text as the streams `parked` was taken from, which goes on with one of their decoders
    /// whenever that reaches a read sooner than a fresh one (see [`State::place`]), within `budget`. `open` must
    /// decode the text they decoded.
    pub fn adopting(open: &'f Opener<'f>, budget: Budget, mut parked: Vec<Parked>) -> Self {
        for decoder in parked.iter_mut().filter_map(|spare| spare.decoder.as_mut()) {
            decoder.rebudget(&budget);
        }
        let state = State {
            decoder: None,
            kept: Kept::empty_at(0),
            ended: false,
            failed: None,
            resumed_at: None,
            restarts: None,
            recording: None,
            restart_failed: false,
            adopted: false,
            faulted: false,
            spares: parked,
            hold: None,
            held: Kept::empty_at(0),
        };
        Stream { open, budget, state: Mutex::new(state) }
    }

    /// Takes the decoders, where they stopped, with the text each kept, for a later read of the same text to
    /// [go on with](Self::adopting); the stream starts afresh after. Only sound decoders are parked: not one that
    /// failed or was stopped by the budget, nor one that cannot be kept or holds more than
    /// [`MAX_KEPT_DECODER_MEMORY`]; none after a restart point proved wrong.
    pub fn park(&self) -> Vec<Parked> {
        let mut state = self.lock();
        state.restart(None);
        let held = std::mem::replace(&mut state.held, Kept::empty_at(0));
        state.hold = None;
        let mut parked = std::mem::take(&mut state.spares);
        if held.len > 0 {
            parked.insert(0, Parked { decoder: None, kept: held, ended: false, resumed_at: None });
        }
        if state.restart_failed { Vec::new() } else { parked }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<'f>> {
        // A thread that panicked mid-read left a state that is still well formed (at worst it restarts).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads at `offset` until `buf` is full or the text ends; returns the bytes read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut state = self.lock();
        state.place(offset);
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
            } else if state.text_only() {
                // Past the held text: a decoder that reaches it (the current text is set aside).
                state.place(at);
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
    /// ended. A decoder set aside earlier, or one that began at a restart point, that fails on damaged input is
    /// replaced by one from the start (`true`: nothing is kept then, and the next call decodes from the start).
    fn decode_next(&self, state: &mut State<'f>) -> io::Result<bool> {
        let decoded = self.decode_chunk(state);
        if decoded.is_err() {
            state.faulted = true;
        }
        match decoded {
            Err(e) if state.adopted && damage(&e).is_some() => {
                state.restart(None);
                Ok(true)
            }
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
        #[cfg(test)]
        DECODED_HERE.with(|decoded| decoded.set(decoded.get() + len as u64));
        let decoded_to = state.kept.end() + len as u64;
        if let Some(recording) = recording {
            while let Some(point) = decoder.take_restart() {
                recording.push(point);
            }
            if decoded_to >= recording.next_wanted() {
                decoder.want_restart();
            }
        }
        state.faulted |= failed.is_some();
        state.failed = failed;
        if len < next.len() && state.failed.is_none() {
            state.ended = true;
        }
        if len == 0 {
            return Ok(false);
        }
        next.truncate(len);
        let State { kept, hold, held, .. } = state;
        kept.push(next, |start, chunk| {
            if let Some(hold) = hold {
                held.hold(hold, start, chunk);
            }
        });
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
mod tests;
