//! Raw DEFLATE (RFC 1951), the body of FlateDecode, decoded into at most `cap` bytes: a few megabytes of it can
//! inflate to gigabytes, and lopdf's own inflater has no cap.

use super::{Limit, STOP_CHECK_BYTES, Stop};

/// Raw DEFLATE (RFC 1951), up to the end of the final block or the first error.
pub(super) fn inflate(data: &[u8], cap: usize, stop: &Stop) -> Result<Vec<u8>, Limit> {
    let mut out = Vec::new();
    let mut bits = Bits { data, at: 0, buffer: 0, count: 0 };
    let fixed = fixed_tables();
    let mut blocks = 0u32;
    loop {
        blocks = blocks.wrapping_add(1);
        if blocks % 256 == 0 && stop.is_raised() {
            return Err(Limit::Stopped);
        }
        let (Some(last), Some(kind)) = (bits.take(1), bits.take(2)) else { break };
        let went_on = match kind {
            0 => stored(&mut bits, &mut out, cap)?,
            1 => match &fixed {
                Some((literals, distances)) => codes(&mut bits, &mut out, literals, distances, cap, stop)?,
                None => false,
            },
            2 => match dynamic_tables(&mut bits) {
                Some((literals, distances)) => codes(&mut bits, &mut out, &literals, &distances, cap, stop)?,
                None => false,
            },
            _ => false,
        };
        if !went_on || last == 1 {
            break;
        }
    }
    Ok(out)
}

/// Bits of a DEFLATE stream, least significant first.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
    buffer: u64,
    count: u32,
}

impl Bits<'_> {
    fn take(&mut self, n: u32) -> Option<u32> {
        while self.count < n {
            let byte = *self.data.get(self.at)?;
            self.at += 1;
            self.buffer |= u64::from(byte) << self.count;
            self.count += 8;
        }
        let value = (self.buffer & ((1u64 << n) - 1)) as u32;
        self.buffer >>= n;
        self.count -= n;
        Some(value)
    }

    fn align(&mut self) {
        let drop = self.count % 8;
        self.buffer >>= drop;
        self.count -= drop;
    }
}

/// A canonical Huffman code, decoded a bit at a time.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    /// The code of these code lengths (0: unused); `None` when over-subscribed. Incomplete codes are accepted.
    fn new(lengths: &[u8]) -> Option<Huffman> {
        let mut counts = [0u16; 16];
        for &length in lengths {
            counts[usize::from(length & 15)] += 1;
        }
        counts[0] = 0;
        let mut left = 1i32;
        for &count in &counts[1..] {
            left = (left << 1) - i32::from(count);
            if left < 0 {
                return None;
            }
        }
        let mut offsets = [0u16; 16];
        for length in 1..15 {
            offsets[length + 1] = offsets[length] + counts[length];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (symbol, &length) in lengths.iter().enumerate() {
            if length != 0 {
                let slot = &mut offsets[usize::from(length & 15)];
                symbols[usize::from(*slot)] = symbol as u16;
                *slot += 1;
            }
        }
        Some(Huffman { counts, symbols })
    }

    fn decode(&self, bits: &mut Bits<'_>) -> Option<u16> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for &count in &self.counts[1..] {
            code |= bits.take(1)? as i32;
            let count = i32::from(count);
            if code - count < first {
                return self.symbols.get(usize::try_from(index + code - first).ok()?).copied();
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        None
    }
}

const LENGTH_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u32; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order code length code lengths come in.
const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

fn fixed_tables() -> Option<(Huffman, Huffman)> {
    let mut lengths = [8u8; 288];
    lengths[144..256].fill(9);
    lengths[256..280].fill(7);
    Some((Huffman::new(&lengths)?, Huffman::new(&[5u8; 30])?))
}

fn dynamic_tables(bits: &mut Bits<'_>) -> Option<(Huffman, Huffman)> {
    let literals = bits.take(5)? as usize + 257;
    let distances = bits.take(5)? as usize + 1;
    let code_lengths = bits.take(4)? as usize + 4;
    if literals > 286 || distances > 30 {
        return None;
    }
    let mut lengths = [0u8; 19];
    for &symbol in &CODE_LENGTH_ORDER[..code_lengths] {
        lengths[symbol] = bits.take(3)? as u8;
    }
    let code = Huffman::new(&lengths)?;
    let mut all = vec![0u8; literals + distances];
    let mut filled = 0;
    while filled < all.len() {
        let symbol = code.decode(bits)?;
        let (value, repeat) = match symbol {
            0..=15 => (symbol as u8, 1),
            16 => (*all.get(filled.checked_sub(1)?)?, 3 + bits.take(2)? as usize),
            17 => (0, 3 + bits.take(3)? as usize),
            _ => (0, 11 + bits.take(7)? as usize),
        };
        all.get_mut(filled..filled + repeat)?.fill(value);
        filled += repeat;
    }
    if all[256] == 0 {
        return None;
    }
    Some((Huffman::new(&all[..literals])?, Huffman::new(&all[literals..])?))
}

/// A stored block; `Ok(false)` when the stream ends or breaks inside it.
fn stored(bits: &mut Bits<'_>, out: &mut Vec<u8>, cap: usize) -> Result<bool, Limit> {
    bits.align();
    let (Some(length), Some(complement)) = (bits.take(16), bits.take(16)) else { return Ok(false) };
    if length != !complement & 0xFFFF {
        return Ok(false);
    }
    if out.len() + length as usize > cap {
        return Err(Limit::Over);
    }
    for _ in 0..length {
        match bits.take(8) {
            Some(byte) => out.push(byte as u8),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// The codes of a compressed block; `Ok(false)` when the stream ends or breaks inside it.
fn codes(
    bits: &mut Bits<'_>,
    out: &mut Vec<u8>,
    literals: &Huffman,
    distances: &Huffman,
    cap: usize,
    stop: &Stop,
) -> Result<bool, Limit> {
    let mut next_check = out.len() + STOP_CHECK_BYTES;
    loop {
        let Some(symbol) = literals.decode(bits) else { return Ok(false) };
        match symbol {
            0..=255 => {
                if out.len() >= cap {
                    return Err(Limit::Over);
                }
                out.push(symbol as u8);
            }
            256 => return Ok(true),
            257..=285 => {
                let index = usize::from(symbol - 257);
                let Some(extra) = bits.take(LENGTH_EXTRA[index]) else { return Ok(false) };
                let length = usize::from(LENGTH_BASE[index]) + extra as usize;
                let Some(code) = distances.decode(bits).map(usize::from).filter(|&code| code < 30) else {
                    return Ok(false);
                };
                let Some(extra) = bits.take(DISTANCE_EXTRA[code]) else { return Ok(false) };
                let distance = usize::from(DISTANCE_BASE[code]) + extra as usize;
                if distance > out.len() {
                    return Ok(false);
                }
                if out.len() + length > cap {
                    return Err(Limit::Over);
                }
                copy_back(out, distance, length);
            }
            _ => return Ok(false),
        }
        if out.len() >= next_check {
            if stop.is_raised() {
                return Err(Limit::Stopped);
            }
            next_check = out.len() + STOP_CHECK_BYTES;
        }
    }
}

/// Appends `length` bytes copied from `distance` back (the source may overlap what is appended).
fn copy_back(out: &mut Vec<u8>, distance: usize, length: usize) {
    let start = out.len() - distance;
    let mut left = length;
    while left > 0 {
        // out[start..] repeats with period `distance`, so its whole length so far can be copied at once.
        let chunk = left.min(out.len() - start);
        out.extend_from_within(start..start + chunk);
        left -= chunk;
    }
}

#[cfg(test)]
mod tests {
    use crate::media::pdf::decode;
    use crate::media::pdf::fixtures::{lopdf_decoded, sample, zeros_zlib, zlib};
    use crate::media::pdf::stop::Stop;

    #[test]
    fn inflate_decodes_what_flate2_encodes() {
        let stop = Stop::never();
        for data in [sample(100), sample(300_000), vec![0u8; 1_000_000], vec![7u8; 70_000], b"ab".repeat(40)] {
            let compressed = zlib(&data);
            assert_ne!(compressed, data, "flate2 compressed it");
            assert_eq!(decode::flate(&compressed, usize::MAX, &stop).unwrap().unwrap(), data, "{} bytes", data.len());
        }
        // The empty zlib stream (a fixed block holding only its end), and a stored block.
        assert_eq!(decode::flate(&[0x78, 0x9c, 0x03, 0x00, 0, 0, 0, 1], usize::MAX, &stop), Ok(Some(Vec::new())));
        let stored = [0x78, 0x01, 0x01, 0x03, 0x00, 0xfc, 0xff, b'a', b'b', b'c'];
        assert_eq!(decode::flate(&stored, usize::MAX, &stop), Ok(Some(b"abc".to_vec())));
        let bomb = zeros_zlib(5000);
        let decoded = decode::flate(&bomb, usize::MAX, &stop).unwrap().unwrap();
        assert_eq!(decoded, lopdf_decoded("FlateDecode", bomb));
        assert_eq!(decoded.len(), 1 + 258 * 5000);
        assert!(decoded.iter().all(|&b| b == 0));
    }

    #[test]
    fn inflate_stops_at_its_cap_and_at_broken_data() {
        let stop = Stop::never();
        assert_eq!(decode::flate(&zeros_zlib(100_000), 1_000_000, &stop), Err(decode::Limit::Over));
        assert_eq!(decode::flate(&zeros_zlib(100), 1_000_000, &stop).unwrap().unwrap().len(), 25_801);
        let whole = zlib(&sample(50_000));
        let part = decode::flate(&whole[..whole.len() / 2], usize::MAX, &stop).unwrap().unwrap();
        assert!(!part.is_empty() && sample(50_000).starts_with(&part));
        assert_eq!(decode::flate(b"\xff\xff\xff\xff", usize::MAX, &stop), Ok(Some(Vec::new())));
        let raised = Stop::never();
        raised.raise();
        assert_eq!(decode::flate(&zeros_zlib(100_000), usize::MAX, &raised), Err(decode::Limit::Stopped));
    }
}
