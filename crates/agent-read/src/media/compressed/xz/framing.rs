//! The framing of an xz file, walked without decoding: where streams, blocks and indexes start and end, which the
//! decoder (liblzma's stream decoder) does not report. A block's end is found from the sizes its LZMA2 chunks declare,
//! the same sizes the decoder goes by; nothing here is checked (no CRC, no decoding): the decoder checks every byte
//! it is fed, and [`super`] trusts a position from here only once the decoder has accepted what surrounds it.
//!
//! Also the two pieces of framing a resumed decoder is fed in place of the file's own (an index and a stream footer
//! for the blocks it decodes), written here with their CRC-32s.

/// Something the walk met, at the position it stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A stream's header starts here.
    StreamStart,
    /// A block's header starts here.
    BlockStart,
    /// The stream's index starts here.
    IndexStart,
    /// One record of the index, just read: a block's unpadded size and its text's size.
    Record { unpadded: u64, uncompressed: u64 },
    /// The stream's footer ended here.
    StreamEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first stream's header.
    Start,
    /// In a stream's header: its seventh byte names the check.
    StreamHeader {
        read: u8,
    },
    /// A block's header or the index is next.
    BlockOrIndex,
    BlockHeader {
        left: u32,
    },
    /// An LZMA2 chunk's control byte is next.
    ChunkControl,
    /// In an LZMA2 chunk's header (its sizes), `read` of `len` bytes read.
    ChunkHeader {
        control: u8,
        read: u8,
        len: u8,
        size: [u8; 4],
    },
    /// Bytes skipped, then `then`.
    Skip {
        left: u64,
        then: After,
    },
    IndexIndicator,
    IndexCount,
    IndexUnpadded,
    IndexUncompressed {
        unpadded: u64,
    },
    /// Zero bytes between streams (or at the end).
    StreamPadding {
        zeros: u64,
    },
    /// Not an xz file's framing: nothing more is told.
    Lost,
}

/// What comes after skipped bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    ChunkControl,
    BlockOrIndex,
    /// The stream's footer has been read.
    Footer,
    /// The index's padding and CRC-32 have been read: the footer is next.
    IndexEnd,
}

/// A walk over an xz file's bytes (or a resumed decoder's input), in order.
#[derive(Debug, Clone)]
pub(super) struct Framing {
    state: State,
    /// Size of the current stream's check, in bytes.
    check_len: u64,
    /// Bytes of the current block read so far (header and compressed data), for its padding.
    block_len: u64,
    /// Bytes of the current index read so far, for its padding.
    index_len: u64,
    /// Index records left to read.
    records_left: u64,
    /// A multibyte integer being read: its value so far and its bytes.
    vli: u64,
    vli_len: u32,
}

impl Framing {
    /// A walk from the start of an xz file.
    pub(super) fn new() -> Self {
        Framing { state: State::Start, check_len: 0, block_len: 0, index_len: 0, records_left: 0, vli: 0, vli_len: 0 }
    }

    /// A walk from the start of an index (its records are told as events; it ends before the footer).
    pub(super) fn at_index() -> Self {
        Framing { state: State::BlockOrIndex, ..Framing::new() }
    }

    /// Whether the walk has lost the framing (the decoder will fail on these bytes, or they are not xz).
    pub(super) fn lost(&self) -> bool {
        self.state == State::Lost
    }

    /// Whether the walk stands where a block's header or the index may start.
    pub(super) fn between_blocks(&self) -> bool {
        self.state == State::BlockOrIndex
    }

    /// Whether an index was read to its end, and the footer is next.
    pub(super) fn index_ended(&self) -> bool {
        self.state == (State::Skip { left: 12, then: After::Footer })
    }

    /// Walks `bytes` until the next event: the bytes walked, and the event met where the walk stopped. A start event
    /// stops the walk before the byte it names; the others after their last byte. Walks all of `bytes` when it meets
    /// none.
    pub(super) fn advance(&mut self, bytes: &[u8]) -> (usize, Option<Event>) {
        let mut at = 0;
        while at < bytes.len() {
            let (used, event) = self.step(&bytes[at..]);
            at += used;
            if event.is_some() {
                return (at, event);
            }
        }
        (at, None)
    }

    /// One step over the start of `bytes` (never empty): the bytes used and the event met, if any.
    fn step(&mut self, bytes: &[u8]) -> (usize, Option<Event>) {
        let byte = bytes[0];
        match self.state {
            State::Lost => (bytes.len(), None),
            State::Start => {
                self.state = State::StreamHeader { read: 0 };
                (0, Some(Event::StreamStart))
            }
            State::StreamHeader { read } => {
                if read == 7 {
                    self.check_len = check_len(byte & 0x0f);
                }
                self.state = if read == 11 { State::BlockOrIndex } else { State::StreamHeader { read: read + 1 } };
                (1, None)
            }
            State::BlockOrIndex if byte == 0 => {
                self.state = State::IndexIndicator;
                (0, Some(Event::IndexStart))
            }
            State::BlockOrIndex => {
                let header_len = (u32::from(byte) + 1) * 4;
                self.block_len = 0;
                self.state = State::BlockHeader { left: header_len };
                (0, Some(Event::BlockStart))
            }
            State::BlockHeader { left } => {
                let used = (left as usize).min(bytes.len());
                self.block_len += used as u64;
                let left = left - used as u32;
                self.state = if left == 0 { State::ChunkControl } else { State::BlockHeader { left } };
                (used, None)
            }
            State::ChunkControl => {
                self.block_len += 1;
                self.state = match byte {
                    // The end of the block's data: its padding to four bytes, then its check.
                    0 => match (4 - self.block_len % 4) % 4 + self.check_len {
                        0 => State::BlockOrIndex,
                        left => State::Skip { left, then: After::BlockOrIndex },
                    },
                    // Uncompressed: two bytes of size; LZMA: three of sizes, two of packed size, and a properties
                    // byte when the control byte resets them.
                    1 | 2 => State::ChunkHeader { control: byte, read: 0, len: 2, size: [0; 4] },
                    0x80..=0xbf => State::ChunkHeader { control: byte, read: 0, len: 4, size: [0; 4] },
                    0xc0..=0xff => State::ChunkHeader { control: byte, read: 0, len: 5, size: [0; 4] },
                    _ => State::Lost,
                };
                (1, None)
            }
            State::ChunkHeader { control, read, len, mut size } => {
                self.block_len += 1;
                if usize::from(read) < size.len() {
                    size[usize::from(read)] = byte;
                }
                let read = read + 1;
                if read < len {
                    self.state = State::ChunkHeader { control, read, len, size };
                    return (1, None);
                }
                let data = if control < 0x80 {
                    u64::from(u16::from_be_bytes([size[0], size[1]])) + 1
                } else {
                    u64::from(u16::from_be_bytes([size[2], size[3]])) + 1
                };
                self.state = State::Skip { left: data, then: After::ChunkControl };
                (1, None)
            }
            State::Skip { left, then } => {
                let used = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                let left = left - used as u64;
                if then == After::ChunkControl {
                    self.block_len += used as u64;
                }
                if left > 0 {
                    self.state = State::Skip { left, then };
                    return (used, None);
                }
                self.state = match then {
                    After::ChunkControl => State::ChunkControl,
                    After::BlockOrIndex => State::BlockOrIndex,
                    After::IndexEnd => State::Skip { left: 12, then: After::Footer },
                    After::Footer => State::StreamPadding { zeros: 0 },
                };
                (used, (then == After::Footer).then_some(Event::StreamEnd))
            }
            State::IndexIndicator => {
                self.index_len = 1;
                self.state = State::IndexCount;
                (1, None)
            }
            State::IndexCount | State::IndexUnpadded | State::IndexUncompressed { .. } => self.index_integer(byte),
            State::StreamPadding { zeros } if byte == 0 => {
                self.state = State::StreamPadding { zeros: zeros + 1 };
                (1, None)
            }
            State::StreamPadding { zeros } => {
                if zeros % 4 != 0 {
                    self.state = State::Lost;
                    return (0, None);
                }
                self.state = State::StreamHeader { read: 0 };
                (0, Some(Event::StreamStart))
            }
        }
    }

    /// One byte of a multibyte integer of the index; the record it completes, if any.
    fn index_integer(&mut self, byte: u8) -> (usize, Option<Event>) {
        self.index_len += 1;
        if self.vli_len >= 9 {
            self.state = State::Lost;
            return (1, None);
        }
        self.vli |= u64::from(byte & 0x7f) << (7 * self.vli_len);
        self.vli_len += 1;
        if byte & 0x80 != 0 {
            return (1, None);
        }
        let value = std::mem::take(&mut self.vli);
        self.vli_len = 0;
        let mut event = None;
        self.state = match self.state {
            State::IndexCount => {
                self.records_left = value;
                State::IndexUnpadded
            }
            State::IndexUnpadded => State::IndexUncompressed { unpadded: value },
            State::IndexUncompressed { unpadded } => {
                self.records_left -= 1;
                event = Some(Event::Record { unpadded, uncompressed: value });
                State::IndexUnpadded
            }
            state => state,
        };
        if self.state == State::IndexUnpadded && self.records_left == 0 {
            let padding = (4 - self.index_len % 4) % 4;
            self.state = State::Skip { left: padding + 4, then: After::IndexEnd };
        }
        (1, event)
    }
}

/// The size of the check a stream's flags name (the xz format reserves a size for every check, known or not).
fn check_len(id: u8) -> u64 {
    match id {
        0 => 0,
        1..=3 => 4,
        4..=6 => 8,
        7..=9 => 16,
        10..=12 => 32,
        _ => 64,
    }
}

/// A block's size in its stream: its unpadded size padded to four bytes.
pub(super) fn padded(unpadded: u64) -> u64 {
    unpadded.saturating_add(3) & !3
}

/// An index listing `records` (unpadded and text sizes), then a stream footer for it, for a stream whose flags'
/// second byte is `check`: what a decoder resumed at the first of those blocks is fed after them.
pub(super) fn index_and_footer(records: &[(u64, u64)], check: u8) -> Vec<u8> {
    let mut index = vec![0u8];
    write_integer(&mut index, records.len() as u64);
    for &(unpadded, uncompressed) in records {
        write_integer(&mut index, unpadded);
        write_integer(&mut index, uncompressed);
    }
    index.resize(index.len().next_multiple_of(4), 0);
    index.extend_from_slice(&crc32fast::hash(&index).to_le_bytes());
    let backward = u32::try_from(index.len() / 4 - 1).unwrap_or(u32::MAX);
    let mut flagged = backward.to_le_bytes().to_vec();
    flagged.extend_from_slice(&[0, check]);
    index.extend_from_slice(&crc32fast::hash(&flagged).to_le_bytes());
    index.extend_from_slice(&flagged);
    index.extend_from_slice(b"YZ");
    index
}

fn write_integer(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
