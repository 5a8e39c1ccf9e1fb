//! Bounded decoding of the filters lopdf decodes, to measure streams before lopdf inflates them: `flate2` and `weezl`
//! do the decoding, fed in bounded steps; ASCII85 is a few lines. Each keeps
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

/// LZWDecode (8-bit, most significant bit first, codes 256 clear and 257 end), with or without early change;
/// `weezl` decodes, fed in bounded steps. Like lopdf, a decoding error ends the data (what came before is kept).
pub(super) fn lzw(data: &[u8], early_change: bool, cap: usize, stop: &Stop) -> Decoded {
    use weezl::{BitOrder, LzwStatus, decode::Decoder};
    // PDF's EarlyChange 1 (the default) is TIFF's early size switch.
    let mut decoder =
        if early_change { Decoder::with_tiff_size_switch(BitOrder::Msb, 8) } else { Decoder::new(BitOrder::Msb, 8) };
    let mut out = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut input = data;
    let mut next_check = STOP_CHECK_BYTES;
    loop {
        let result = decoder.decode_bytes(input, &mut buffer);
        input = &input[result.consumed_in.min(input.len())..];
        if out.len() + result.consumed_out > cap {
            return Err(Limit::Over);
        }
        out.extend_from_slice(&buffer[..result.consumed_out]);
        if out.len() >= next_check {
            if stop.is_raised() {
                return Err(Limit::Stopped);
            }
            next_check = out.len() + STOP_CHECK_BYTES;
        }
        match result.status {
            Ok(LzwStatus::Ok) if result.consumed_in > 0 || result.consumed_out > 0 => {}
            Ok(LzwStatus::Ok | LzwStatus::NoProgress | LzwStatus::Done) | Err(_) => break,
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
