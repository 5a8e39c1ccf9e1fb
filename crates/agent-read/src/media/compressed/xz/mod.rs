//! xz, decoded by liblzma's stream decoder (fed the file's bytes by hand, so that the feeding can stop where a block
//! starts), with restart points at the starts of blocks and of streams.
//!
//! Every block of an xz stream starts afresh (LZMA2 state and dictionary reset), so a block's start is a place to
//! resume: `xz -T0` (the default of xz 5.6 and later), `xz -T2`, `--block-size` and `pixz` write a block every few
//! MiB of text; each stream of a concatenation (`cat a.xz b.xz`) starts afresh too. A file of one block in one stream
//! (xz 5.4's default output) has no place to resume but its start.
//!
//! How a point is made, and why its offsets are never a number the file merely claims:
//! - Where blocks start in the compressed bytes is found by walking the file's framing ([`framing`]: block header
//!   sizes, LZMA2 chunk sizes, padding, check sizes), the same sizes the decoder goes by. The decoder is fed up to a
//!   block's start and no further, and has then yielded exactly the text before that block: the point's text offset
//!   is that count, what decoding really yielded.
//! - A point within a stream is handed out only once the decoder has read that stream to its end and accepted its
//!   index, which it checks against the blocks it decoded (their count, unpadded sizes and text sizes); and only if
//!   the walk found, in that same index, every point's block where the walk put it and the text before it that the
//!   decoder yielded. A stream the decoder refuses (a damaged block, an index that lies about a size) gives no point.
//! - Resuming at a block within a stream, the decoder is fed the stream's header (from the file), the file's bytes
//!   from that block to the stream's index, then an index and footer written for the blocks it decodes (their sizes
//!   taken from the file's index, so the decoder checks them against what it decodes), then the file's bytes after
//!   the stream. Every block header's CRC-32, every block's check (CRC-32, CRC-64 or SHA-256) and every size is thus
//!   checked by liblzma, as from the start. The text it yields up to the stream's index must be exactly the text
//!   the first pass counted there, and the walk must stand between blocks there; else the point is refused as damaged
//!   and the read decodes from the start (as it does when the compressed bytes where it resumes changed, see
//!   [`super::Compression::decoder_at`]).
//!
//! liblzma's own words for what it refuses are not the model's: [`refusal`] says what each means for the file.
//!
//! Memory: the decoder holds one block's dictionary (at most [`super::MAX_XZ_MEMORY`]), never a block's text;
//! the points waiting for their stream's end are bounded like the kept ones. The decoder's memory limit starts at
//! nothing, so liblzma stops at every block that needs more than it has been given; that need is then reserved
//! ([`crate::media::memory`]) and given as the new limit before the block is decoded ([`raise_memory_limit`]).

mod framing;

use super::{Input, MAX_XZ_MEMORY, check_at, cover, damaged, input_at, input_offset, not_a_restart};
use crate::budget::Budget;
use crate::media::memory::{Growing, Pool};
use crate::window::restarts::{MAX_POINTS, Restart};
use crate::window::stream::{Decoder, Keepable};
use framing::{Event, Framing};
use liblzma::stream::{Action, CONCATENATED, Error as LzmaError, Status, Stream};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::sync::Arc;

/// Largest stream index a point is made in (or resumed with): about a hundred thousand blocks.
const MAX_INDEX_LEN: u64 = 1 << 20;
/// Bytes of a stream's header, and of its footer.
const HEADER_LEN: u64 = 12;

/// The text of an xz file's streams, from its start or from a restart point.
pub(super) struct Xz {
    file: Arc<File>,
    end: u64,
    decoder: Stream,
    memory: Growing,
    /// The input still to feed, in order; the decoder reads the first.
    feed: VecDeque<Segment>,
    walk: Framing,
    /// How far into the input fed in order the walk has gone, and the event it stopped at.
    walked: u64,
    event: Option<(u64, Event)>,
    /// The text offset where the decoder's text starts.
    text_base: u64,
    stream: StreamWalk,
    /// The stream before the current one ended where the walk expected, as the decoder read it.
    in_sync: bool,
    /// The decoder was resumed within a stream: that stream makes no points.
    resumed_within: bool,
    want_restart: bool,
    made: VecDeque<Restart>,
    ended: bool,
}

/// A part of the input: bytes of the file, or framing written for a resumed decoder.
struct Segment {
    bytes: Bytes,
    /// Leaving it, the decoder must have yielded the text up to this offset and no further.
    text_at_end: Option<u64>,
    /// Leaving it, the walk must stand between blocks (the resumed stream's blocks end there).
    blocks_end: bool,
}

impl Segment {
    fn file(input: Input) -> Self {
        Segment { bytes: Bytes::File(input), text_at_end: None, blocks_end: false }
    }
}

enum Bytes {
    File(Input),
    Written(Vec<u8>, usize),
}

/// What the walk learned of the current stream.
#[derive(Default)]
struct StreamWalk {
    /// Where its header starts in the file, and the text offset its text starts at.
    start: Option<u64>,
    text_start: u64,
    /// Blocks started so far.
    blocks: u64,
    /// Whether points are made in it.
    making: bool,
    /// Points made in it, waiting for its index and end.
    pending: Vec<Pending>,
    /// Where its index starts in the file.
    index_at: Option<u64>,
    /// Reading its index: the records read, the block position and text offset they add up to, and the pending
    /// points checked so far.
    records: u64,
    summed_input: u64,
    summed_text: u64,
    checked: usize,
    /// Something did not add up: no point of this stream is handed out.
    mismatch: bool,
}

/// A point at the start of the stream's block `block`, waiting for the stream's end.
struct Pending {
    block: u64,
    point: Restart,
}

impl Xz {
    /// The file's text from its first byte.
    pub(super) fn new(file: Arc<File>, end: u64, budget: Budget) -> io::Result<Self> {
        let feed = VecDeque::from([Segment::file(input_at(&file, 0, end, budget.clone()))]);
        Xz::over(file, end, budget, feed, 0, false)
    }

    /// The text from restart point `point` on (its compressed bytes already checked against the file).
    pub(super) fn resume(file: Arc<File>, end: u64, budget: Budget, point: &Restart) -> io::Result<Self> {
        if point.state.is_empty() {
            if read_exact_at(&file, point.input, 6)? != b"\xfd7zXZ\x00" {
                return Err(not_a_restart("no xz stream starts there"));
            }
            let feed = VecDeque::from([Segment::file(input_at(&file, point.input, end, budget.clone()))]);
            return Xz::over(file, end, budget, feed, point.at, false);
        }
        let within = Within::decode(&point.state, point, end)?;
        let header = read_exact_at(&file, within.stream, HEADER_LEN)?;
        let index = read_exact_at(&file, within.index, within.stream_end - HEADER_LEN - within.index)?;
        let records = index_records(&index).ok_or_else(|| not_a_restart("its stream's index does not read"))?;
        let (before, rest) = records.split_at(usize::try_from(within.block).unwrap_or(usize::MAX).min(records.len()));
        let block_at =
            before.iter().fold(within.stream + HEADER_LEN, |at, &(unpadded, _)| at + framing::padded(unpadded));
        if rest.is_empty() || block_at != point.input {
            return Err(not_a_restart("its stream's index does not put a block there"));
        }
        let written = framing::index_and_footer(rest, header[7]);
        let part = |from, to| Segment::file(input_at(&file, from, to, budget.clone()));
        let feed = VecDeque::from([
            part(within.stream, within.stream + HEADER_LEN),
            Segment { text_at_end: Some(within.text_end), blocks_end: true, ..part(point.input, within.index) },
            Segment { bytes: Bytes::Written(written, 0), text_at_end: Some(within.text_end), blocks_end: false },
            part(within.stream_end, end),
        ]);
        Xz::over(file, end, budget, feed, point.at, true)
    }

    fn over(
        file: Arc<File>,
        end: u64,
        budget: Budget,
        feed: VecDeque<Segment>,
        text_base: u64,
        resumed_within: bool,
    ) -> io::Result<Self> {
        // Every stream of a concatenation, and the padding between them, as `xzcat` reads them.
        let decoder = Stream::new_stream_decoder(0, CONCATENATED).map_err(refusal)?;
        Ok(Xz {
            file,
            end,
            decoder,
            memory: Growing::new(Pool::shared(), budget),
            feed,
            walk: Framing::new(),
            walked: 0,
            event: None,
            text_base,
            stream: StreamWalk::default(),
            in_sync: true,
            resumed_within,
            want_restart: false,
            made: VecDeque::new(),
            ended: false,
        })
    }

    /// Bytes fed to the decoder so far.
    fn fed(&self) -> u64 {
        self.decoder.total_in()
    }

    /// The text offset of the next byte the decoder yields.
    fn text(&self) -> u64 {
        self.text_base + self.decoder.total_out()
    }

    /// The file offset of the next byte of input, when it comes from the file.
    fn file_offset(&self) -> Option<u64> {
        match &self.feed.front()?.bytes {
            Bytes::File(input) => Some(input_offset(input)),
            Bytes::Written(..) => None,
        }
    }

    /// Feeds `input` (or nothing, to drain the decoder's output); the bytes it took, those it wrote and whether the
    /// file's last stream ended.
    fn process(&mut self, input: &[u8], buf: &mut [u8], action: Action) -> io::Result<(usize, usize, bool)> {
        decode(&mut self.decoder, &mut self.memory, input, buf, action)
    }

    /// Leaves the first segment, used up: checks what it must end with (after the decoder yielded what it still
    /// holds, which is returned first), or finishes the decoding after the last. `Some` text to return, or `None` to
    /// go on.
    fn leave_segment(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if self.feed.len() == 1 {
            let (_, produced, ended) = self.process(&[], buf, Action::Finish)?;
            if produced == 0 && !ended {
                return Err(damaged("the xz stream is cut short"));
            }
            self.ended = produced == 0;
            return Ok(Some(produced));
        }
        let (_, produced, _) = self.process(&[], buf, Action::Run)?;
        if produced > 0 {
            return Ok(Some(produced));
        }
        let Some(left) = self.feed.pop_front() else { return Ok(None) };
        let text_fits = left.text_at_end.is_none_or(|text_end| text_end == self.text());
        if !text_fits || left.blocks_end && !self.walk.between_blocks() {
            return Err(damaged("the restart point does not fit the file: its stream's blocks end elsewhere"));
        }
        Ok(None)
    }
}

impl Read for Xz {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while !self.ended {
            if let Some((at, event)) = self.event
                && at == self.fed()
            {
                // The decoder has taken the input up to the event: what it still holds goes out first.
                let (_, produced, _) = self.process(&[], buf, Action::Run)?;
                if produced > 0 {
                    return Ok(produced);
                }
                self.event = None;
                self.on_event(event)?;
                continue;
            }
            let fed = self.fed();
            let Some(front) = self.feed.front_mut() else { return Ok(0) };
            let input: &[u8] = match &mut front.bytes {
                Bytes::File(input) => input.fill_buf()?,
                Bytes::Written(bytes, pos) => &bytes[*pos..],
            };
            if input.is_empty() {
                if let Some(n) = self.leave_segment(buf)? {
                    return Ok(n);
                }
                continue;
            }
            if self.event.is_none() {
                let walked = (self.walked - fed) as usize;
                let (n, event) = self.walk.advance(&input[walked.min(input.len())..]);
                self.walked += n as u64;
                self.event = event.map(|event| (self.walked, event));
            }
            let ready = ((self.walked - fed) as usize).min(input.len());
            if ready == 0 {
                continue;
            }
            let (consumed, produced, _) =
                decode(&mut self.decoder, &mut self.memory, &input[..ready], buf, Action::Run)?;
            match &mut front.bytes {
                Bytes::File(input) => input.consume(consumed),
                Bytes::Written(_, pos) => *pos += consumed,
            }
            if produced > 0 {
                return Ok(produced);
            }
            if consumed == 0 {
                return Err(damaged("the xz decoder stopped making progress"));
            }
        }
        Ok(0)
    }
}

impl Decoder for Xz {
    fn want_restart(&mut self) {
        self.want_restart = true;
    }

    fn take_restart(&mut self) -> Option<Restart> {
        self.made.pop_front()
    }

    fn into_kept(self: Box<Self>) -> Option<Box<dyn Keepable>> {
        Some(self)
    }
}

impl Keepable for Xz {
    fn rebudget(&mut self, budget: &Budget) {
        for segment in &mut self.feed {
            if let Bytes::File(input) = &mut segment.bytes {
                input.get_mut().budget = budget.clone();
            }
        }
        self.memory.set_budget(budget);
    }

    fn memory(&self) -> u64 {
        self.memory.held()
    }
}

impl Xz {
    fn on_event(&mut self, event: Event) -> io::Result<()> {
        match event {
            Event::StreamStart => self.stream_started()?,
            Event::BlockStart => self.block_started()?,
            Event::IndexStart => {
                let index_at = self.file_offset();
                let stream = &mut self.stream;
                stream.index_at = index_at;
                stream.summed_input = stream.start.map_or(0, |start| start + HEADER_LEN);
                stream.summed_text = stream.text_start;
            }
            Event::Record { unpadded, uncompressed } => self.stream.record(unpadded, uncompressed),
            Event::StreamEnd => self.stream_ended(),
        }
        Ok(())
    }

    fn stream_started(&mut self) -> io::Result<()> {
        let start = self.file_offset();
        let text = self.text();
        if let Some(input) = start
            && text > 0
            && self.in_sync
            && !self.resumed_within
            && std::mem::take(&mut self.want_restart)
        {
            let check = check_at(&self.file, input, self.end)?;
            self.made.push_back(Restart { at: text, input, check, state: Box::new([]) });
        }
        let making = start.is_some() && !std::mem::take(&mut self.resumed_within);
        self.stream = StreamWalk { start, text_start: text, making, ..StreamWalk::default() };
        Ok(())
    }

    fn block_started(&mut self) -> io::Result<()> {
        let block = self.stream.blocks;
        self.stream.blocks += 1;
        let Some(input) = self.file_offset() else { return Ok(()) };
        if block == 0 || !self.stream.making || self.walk.lost() || !std::mem::take(&mut self.want_restart) {
            return Ok(());
        }
        let check = check_at(&self.file, input, self.end)?;
        let at = self.text();
        let pending = &mut self.stream.pending;
        pending.push(Pending { block, point: Restart { at, input, check, state: Box::new([]) } });
        if pending.len() > MAX_POINTS {
            let mut keep = false;
            pending.retain(|_| {
                keep = !keep;
                keep
            });
        }
        Ok(())
    }

    /// The stream's footer has been read: the decoder accepted its index. Its points are handed out if the index
    /// put every one where the walk did.
    fn stream_ended(&mut self) {
        let end = self.file_offset();
        let text_end = self.text();
        let stream = std::mem::take(&mut self.stream);
        let agrees = !stream.mismatch
            && !self.walk.lost()
            && stream.records == stream.blocks
            && stream.checked == stream.pending.len()
            && stream.index_at.is_some_and(|index| index == stream.summed_input)
            && stream.summed_text == text_end;
        self.in_sync = agrees || !stream.making;
        let (Some(start), Some(index), Some(end)) = (stream.start, stream.index_at, end) else { return };
        if !stream.making || !agrees || end.saturating_sub(HEADER_LEN + index) > MAX_INDEX_LEN {
            return;
        }
        for Pending { block, point } in stream.pending {
            let within = Within { stream: start, block, index, stream_end: end, text_end };
            self.made.push_back(Restart { state: within.encode(), ..point });
        }
    }
}

impl StreamWalk {
    /// One record of the stream's index: the pending points of its block must be where it says.
    fn record(&mut self, unpadded: u64, uncompressed: u64) {
        while let Some(pending) = self.pending.get(self.checked)
            && pending.block == self.records
        {
            if pending.point.input != self.summed_input || pending.point.at != self.summed_text {
                self.mismatch = true;
            }
            self.checked += 1;
        }
        self.records += 1;
        self.summed_input = self.summed_input.saturating_add(framing::padded(unpadded));
        self.summed_text = self.summed_text.saturating_add(uncompressed);
    }
}

/// What resuming at a block within a stream needs beyond the point's offsets.
struct Within {
    /// Where the stream's header starts.
    stream: u64,
    /// The block's number in its stream.
    block: u64,
    /// Where the stream's index starts, and where its footer ends.
    index: u64,
    stream_end: u64,
    /// The text offset where the stream's text ends.
    text_end: u64,
}

impl Within {
    const LEN: usize = 40;

    fn encode(&self) -> Box<[u8]> {
        [self.stream, self.block, self.index, self.stream_end, self.text_end]
            .iter()
            .flat_map(|n| n.to_le_bytes())
            .collect()
    }

    fn decode(state: &[u8], point: &Restart, end: u64) -> io::Result<Self> {
        let invalid = || not_a_restart("its state is not an xz restart point's");
        if state.len() != Within::LEN {
            return Err(invalid());
        }
        let word = |k: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&state[k * 8..k * 8 + 8]);
            u64::from_le_bytes(bytes)
        };
        let within = Within { stream: word(0), block: word(1), index: word(2), stream_end: word(3), text_end: word(4) };
        let fits = within.block > 0
            && within.stream.saturating_add(HEADER_LEN) < point.input
            && point.input < within.index
            && within.index.saturating_add(HEADER_LEN) < within.stream_end
            && within.stream_end <= end
            && within.stream_end - HEADER_LEN - within.index <= MAX_INDEX_LEN
            && within.text_end >= point.at;
        if fits { Ok(within) } else { Err(invalid()) }
    }
}

/// Feeds `input` to `decoder` (or nothing, to drain its output): the bytes it took, those it wrote and whether the
/// file's last stream ended. A block that needs more memory than the decoder has is given it from `memory` first.
fn decode(
    decoder: &mut Stream,
    memory: &mut Growing,
    input: &[u8],
    buf: &mut [u8],
    action: Action,
) -> io::Result<(usize, usize, bool)> {
    let (taken, written) = (decoder.total_in(), decoder.total_out());
    let count = |now: u64, before: u64| usize::try_from(now - before).unwrap_or(usize::MAX);
    loop {
        let (consumed, produced) = (count(decoder.total_in(), taken), count(decoder.total_out(), written));
        let (input, buf) = (input.get(consumed..).unwrap_or_default(), buf.get_mut(produced..).unwrap_or_default());
        match decoder.process(input, buf, action) {
            Ok(status) => {
                let ended = status == Status::StreamEnd;
                return Ok((count(decoder.total_in(), taken), count(decoder.total_out(), written), ended));
            }
            // liblzma stopped before the block's filters were set up, and resumes there (its documented contract).
            Err(LzmaError::MemLimit) => raise_memory_limit(decoder, memory)?,
            Err(error) => return Err(refusal(error)),
        }
    }
}

/// Gives `decoder` the memory the block it stopped at needs, reserved from `memory` first. liblzma tells that need
/// only by accepting a limit at least as high (the crate has no call for it), so it is found by bisection to 64 KiB.
fn raise_memory_limit(decoder: &mut Stream, memory: &mut Growing) -> io::Result<()> {
    const STEP: u64 = 64 << 10;
    let before = decoder.memlimit();
    let mut refused = before;
    if decoder.set_memlimit(MAX_XZ_MEMORY).is_err() {
        return Err(refusal(LzmaError::MemLimit));
    }
    let mut accepted = MAX_XZ_MEMORY;
    while accepted - refused > STEP {
        let middle = refused + (accepted - refused) / 2;
        match decoder.set_memlimit(middle) {
            Ok(()) => accepted = middle,
            Err(_) => refused = middle,
        }
    }
    if accepted <= before {
        // Stopped for memory while it had what it needs: no retry would get further.
        return Err(io::Error::other("the xz decoder stopped for memory it already had"));
    }
    // The limit is the last one accepted; a refused one leaves it as it was.
    cover(memory, accepted, "an xz block")
}

/// What liblzma's refusal means for the file, in words the model can act on.
fn refusal(error: LzmaError) -> io::Error {
    match error {
        LzmaError::Data => damaged("a check, a size or the compressed data of the xz stream does not hold"),
        LzmaError::Format => damaged("the bytes where an xz stream should start are not one"),
        LzmaError::Options => damaged("an xz header names a filter or an option this xz decoder does not support"),
        LzmaError::MemLimit => io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "an xz block needs more than {} MiB of memory to decode (its dictionary), more than a read may take",
                super::MAX_XZ_MEMORY >> 20
            ),
        ),
        LzmaError::Mem => io::Error::new(io::ErrorKind::OutOfMemory, "no memory left to decode the xz stream"),
        LzmaError::Program | LzmaError::NoCheck | LzmaError::UnsupportedCheck => {
            io::Error::other(format!("the xz decoder failed ({error})"))
        }
    }
}

/// The records (unpadded and text sizes) of the index `bytes` holds whole, if it reads as one.
fn index_records(bytes: &[u8]) -> Option<Vec<(u64, u64)>> {
    let mut walk = Framing::at_index();
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (n, event) = walk.advance(&bytes[at..]);
        at += n;
        if let Some(Event::Record { unpadded, uncompressed }) = event {
            records.push((unpadded, uncompressed));
        }
    }
    walk.index_ended().then_some(records)
}

/// `len` bytes of `file` from `offset`; fails when the file ends before.
fn read_exact_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| not_a_restart("its stream's index is too large"))?;
    let mut bytes = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match crate::platform::read_at(file, &mut bytes[filled..], offset + filled as u64)? {
            0 => return Err(not_a_restart("the file ends before its stream does")),
            n => filled += n,
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
