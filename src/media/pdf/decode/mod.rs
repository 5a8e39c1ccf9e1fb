//! Bounded decoders of the filters lopdf decodes, written to measure streams before lopdf inflates them. Each keeps
//! at most `cap` bytes and fails with `Limit::Over` the moment more would come; where lopdf's decoder would stop at
//! an error, these stop too and return what was decoded, so they never yield less than lopdf would.

mod inflate;

use super::stop::Stop;

/// How often, in decoded bytes, the decoders look at the stop signal.
const STOP_CHECK_BYTES: usize = 1024 * 1024;

/// What a bounded decoder gives: the bytes, `None` where lopdf's decoder fails outright (pdf-extract then reads
/// the raw bytes), or why it gave up.
pub(super) type Decoded = Result<Option<Vec<u8>>, Limit>;

/// Why a bounded decoder gave up.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Limit {
    /// The output would pass the cap.
    Over,
    /// The stop signal was raised.
    Stopped,
}

/// FlateDecode as lopdf runs it: zlib, or raw DEFLATE after two bytes when that fails at once — which comes to
/// raw DEFLATE from the third byte either way (a zlib stream is a 2-byte header and raw DEFLATE; its checksum
/// only decides an error after all the data is out).
pub(super) fn flate(data: &[u8], cap: usize, stop: &Stop) -> Decoded {
    inflate::inflate(data.get(2..).unwrap_or_default(), cap, stop).map(Some)
}

/// LZWDecode (8-bit, most significant bit first, codes 256 clear and 257 end), with or without early change.
pub(super) fn lzw(data: &[u8], early_change: bool, cap: usize, stop: &Stop) -> Decoded {
    const CLEAR: usize = 256;
    const END: usize = 257;
    const FIRST: usize = 258;
    const SIZE: usize = 4096;
    let mut prefix = vec![0u16; SIZE];
    let mut last = vec![0u8; SIZE];
    let mut first = vec![0u8; SIZE];
    let mut length = vec![0u16; SIZE];
    for byte in 0..256 {
        last[byte] = byte as u8;
        first[byte] = byte as u8;
        length[byte] = 1;
    }
    let early = usize::from(early_change);
    let mut out = Vec::new();
    let mut next = FIRST;
    let mut width = 9u32;
    let mut previous: Option<usize> = None;
    let (mut at, mut buffer, mut count) = (0usize, 0u64, 0u32);
    let mut next_check = STOP_CHECK_BYTES;
    loop {
        while count < width {
            let Some(&byte) = data.get(at) else { return Ok(Some(out)) };
            at += 1;
            buffer = (buffer << 8) | u64::from(byte);
            count += 8;
        }
        let code = ((buffer >> (count - width)) & ((1 << width) - 1)) as usize;
        count -= width;
        buffer &= (1u64 << count) - 1;
        if code == CLEAR {
            next = FIRST;
            width = 9;
            previous = None;
            continue;
        }
        if code == END {
            break;
        }
        let (string, extra) = if code < next {
            (code, None)
        } else if let Some(previous) = previous.filter(|_| code == next) {
            (previous, Some(first[previous]))
        } else {
            break;
        };
        let size = usize::from(length[string]) + usize::from(extra.is_some());
        if out.len() + size > cap {
            return Err(Limit::Over);
        }
        let end = out.len() + usize::from(length[string]);
        out.resize(end, 0);
        let mut node = string;
        for slot in out[end - usize::from(length[string])..end].iter_mut().rev() {
            *slot = last[node];
            node = usize::from(prefix[node]);
        }
        out.extend(extra);
        let head = first[string];
        if let Some(previous) = previous {
            if next < SIZE {
                prefix[next] = previous as u16;
                last[next] = head;
                first[next] = first[previous];
                length[next] = length[previous] + 1;
                next += 1;
            }
        }
        previous = Some(code);
        if next + early >= (1 << width) && width < 12 {
            width += 1;
        }
        if out.len() >= next_check {
            if stop.is_raised() {
                return Err(Limit::Stopped);
            }
            next_check = out.len() + STOP_CHECK_BYTES;
        }
    }
    Ok(Some(out))
}

/// ASCII85Decode as lopdf runs it; `None` where lopdf fails (a `z` inside a group, a group past 2^32).
pub(super) fn ascii85(data: &[u8], cap: usize) -> Decoded {
    let mut out = Vec::new();
    let (mut group, mut count) = (0u32, 0usize);
    for &byte in data {
        if byte == b'z' {
            if count != 0 {
                return Ok(None);
            }
            if out.len() + 4 > cap {
                return Err(Limit::Over);
            }
            out.extend_from_slice(&[0; 4]);
            continue;
        }
        if byte.is_ascii_whitespace() {
            continue;
        }
        if !(b'!'..=b'u').contains(&byte) {
            break;
        }
        let Some(next) = group.checked_mul(85).and_then(|group| group.checked_add(u32::from(byte - b'!'))) else {
            return Ok(None);
        };
        group = next;
        count += 1;
        if count == 5 {
            if out.len() + 4 > cap {
                return Err(Limit::Over);
            }
            out.extend_from_slice(&group.to_be_bytes());
            group = 0;
            count = 0;
        }
    }
    if count > 0 {
        for _ in count..5 {
            let Some(next) = group.checked_mul(85).and_then(|group| group.checked_add(84)) else { return Ok(None) };
            group = next;
        }
        out.extend_from_slice(&group.to_be_bytes()[..count - 1]);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use crate::media::pdf::decode;
    use crate::media::pdf::fixtures::{lopdf_decoded, sample};
    use crate::media::pdf::stop::Stop;
    use lopdf::{Stream, dictionary};
    use std::collections::HashMap;

    /// LZW as PDF writers encode it (early change), to check the decoder against lopdf's.
    fn lzw_encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut buffer, mut count) = (0u64, 0u32);
        let mut put = |code: u64, width: u32| {
            buffer = (buffer << width) | code;
            count += width;
            while count >= 8 {
                out.push((buffer >> (count - 8)) as u8);
                count -= 8;
            }
        };
        let mut table: HashMap<Vec<u8>, u64> = (0..256u64).map(|b| (vec![b as u8], b)).collect();
        let (mut next, mut width) = (258u64, 9u32);
        put(256, width);
        let mut current: Vec<u8> = Vec::new();
        for &byte in data {
            let mut longer = current.clone();
            longer.push(byte);
            if table.contains_key(&longer) {
                current = longer;
                continue;
            }
            put(table[&current], width);
            table.insert(longer, next);
            next += 1;
            if next >= 1 << width {
                if width == 12 {
                    put(256, width);
                    table.retain(|_, code| *code < 256);
                    next = 258;
                    width = 9;
                } else {
                    width += 1;
                }
            }
            current = vec![byte];
        }
        if !current.is_empty() {
            put(table[&current], width);
        }
        put(257, width);
        put(0, 7);
        out
    }

    #[test]
    fn lzw_decodes_what_lopdf_decodes() {
        let stop = Stop::never();
        for data in [b"TOBEORNOTTOBEORTOBEORNOT".to_vec(), sample(20_000), vec![0u8; 100_000], sample(200_000)] {
            let encoded = lzw_encode(&data);
            assert_eq!(lopdf_decoded("LZWDecode", encoded.clone()), data, "lopdf, {} bytes", data.len());
            assert_eq!(decode::lzw(&encoded, true, usize::MAX, &stop).unwrap().unwrap(), data);
        }
        let encoded = lzw_encode(&vec![0u8; 100_000]);
        assert_eq!(decode::lzw(&encoded, true, 50_000, &stop), Err(decode::Limit::Over));
    }

    #[test]
    fn ascii85_decodes_what_lopdf_decodes() {
        for text in [&b"87cURD]i,\"Ebo80~>"[..], b"z!!!!!~>", b"9jqo^BlbD-BleB1DJ+*+F(f,q", b"", b"!!"] {
            let ours = decode::ascii85(text, usize::MAX).unwrap();
            let theirs = Stream::new(dictionary! { "Filter" => "ASCII85Decode" }, text.to_vec()).decompressed_content();
            assert_eq!(ours, theirs.ok(), "{:?}", String::from_utf8_lossy(text));
        }
        assert_eq!(decode::ascii85(b"87cURD]i,\"Ebo80~>", usize::MAX).unwrap().unwrap(), b"Hello World!");
        assert_eq!(decode::ascii85(b"!!z", usize::MAX), Ok(None));
        assert_eq!(decode::ascii85(&[b'z'; 100], 10), Err(decode::Limit::Over));
    }
}
