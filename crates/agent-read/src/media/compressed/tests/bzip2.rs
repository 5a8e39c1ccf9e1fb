//! bzip2's restart points at block starts, on files made by `bzip2` and `pbzip2`.

use super::*;
use crate::window::CHUNK_LEN;
use crate::window::restarts::Restarts;
use crate::window::stream::{ReadAt, Stream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The text of a bzip2 file decoded whole, and the restart points made on the way.
type Decoded = io::Result<(Vec<u8>, Vec<Restart>)>;

/// `packed` in a file, and what decoding it from the start gives.
fn decode(packed: &[u8]) -> (File, Decoded) {
    let file = file_with(packed);
    let decoded = decode_all(Compression::Bzip2.decoder(&file, packed.len() as u64, unlimited()).unwrap());
    (file, decoded)
}

#[test]
fn bzip2_resumes_at_every_block_start_with_the_text_from_the_start() {
    let text = log_text(12);
    let halves: Vec<&[u8]> = text.chunks(text.len() / 2 + 1).collect();
    let empty = compressed_by("bzip2", &["-c"], b"");
    assert_eq!(Compression::sniff(&empty), Some(Compression::Bzip2), "the compression of nothing");
    let streams =
        [compressed_by("bzip2", &["-c", "-1"], halves[0]), empty.clone(), compressed_by("bzip2", &["-c"], halves[1])]
            .concat();
    let files = [
        ("bzip2 -9", compressed_by("bzip2", &["-c", "-9"], &text), 10),
        ("bzip2 -1", compressed_by("bzip2", &["-c", "-1"], &text), 60),
        ("pbzip2", compressed_by("pbzip2", &["-c", "-p2"], &text), 10),
        ("two streams and an empty one between", streams, 10),
        ("an empty stream first", [&empty[..], &compressed_by("bzip2", &["-c", "-5"], &text)].concat(), 10),
    ];
    for (producer, packed, at_least) in files {
        let (file, decoded) = decode(&packed);
        let (decoded, points) = decoded.unwrap();
        assert!(decoded == text, "{producer}: the text from the start");
        assert!(points.len() >= at_least, "{producer}: only {} restart points", points.len());
        assert!(points.iter().all(|p| p.at > 0 && p.state.len() == 6), "{producer}");
        assert!(points.windows(2).all(|w| w[0].at < w[1].at && w[0].input < w[1].input), "{producer}");
        assert!(points.iter().any(|p| p.state[0] != 0), "{producer}: blocks start at any bit");
        assert_resumes_agree(Compression::Bzip2, &file, &text, &points);
    }
}

#[test]
fn the_compression_of_nothing_and_of_one_byte_decode() {
    for data in [&b""[..], b"x", b"\n"] {
        for (tool, args) in [("bzip2", &["-c"][..]), ("pbzip2", &["-c"][..])] {
            let (_, decoded) = decode(&compressed_by(tool, args, data));
            assert_eq!(decoded.unwrap().0, data, "{tool} {data:?}");
        }
    }
}

#[test]
fn windows_anywhere_read_through_the_restart_points_agree_with_the_text_and_decode_only_near_them() {
    let text = log_text(16);
    let packed = compressed_by("bzip2", &["-c", "-9"], &text);
    let file = file_with(&packed);
    let end = packed.len() as u64;
    let decoded = AtomicU64::new(0);
    let open = |from: Option<&Restart>| -> io::Result<Box<dyn Decoder + '_>> {
        let inner = Compression::Bzip2.decoder_at(&file, end, unlimited(), from)?;
        Ok(Box::new(Counted { inner, decoded: &decoded }))
    };
    let first = Stream::new(&open, unlimited());
    first.record_restarts();
    let mut offset = 0;
    while first.read_at(offset, &mut vec![0u8; CHUNK_LEN]).unwrap() > 0 {
        offset += CHUNK_LEN as u64;
    }
    let restarts: Arc<Restarts> = Arc::new(first.recorded());
    assert!(restarts.count() >= 3, "one about every MiB of text: {}", restarts.count());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..40 {
        seed = next_random(seed);
        let at = seed % text.len() as u64;
        let len = (seed >> 40) as usize % 200_000 + 1;
        let later = Stream::new(&open, unlimited());
        later.resume_from(restarts.clone());
        decoded.store(0, Ordering::Relaxed);
        let mut got = vec![0u8; len];
        let n = later.read_at(at, &mut got).unwrap();
        let want = &text[at as usize..(at as usize + len).min(text.len())];
        assert!(got[..n] == *want, "window at {at}, {len} bytes");
        let from = restarts.before(at).map_or(0, |point| point.at);
        let spent = decoded.load(Ordering::Relaxed);
        assert!(spent <= at - from + len as u64 + 2 * CHUNK_LEN as u64, "decoded {spent} for a window at {at}");
        assert!(!later.restart_failed());
    }
    let deep = text.len() as u64 * 9 / 10;
    let point = restarts.before(deep).unwrap();
    assert!(deep - point.at <= 5 << 20 && point.input > end / 2, "{point:?}");
}

/// Text whose every block holds, among the byte values 16 to 63, exactly those whose bits spell `marker`: bzip2
/// writes which byte values a block uses as a bitmap in the block's header, so the marker's pattern appears there,
/// inside the block, where no block starts.
fn text_spelling(marker: u64) -> Vec<u8> {
    let spelled: Vec<u8> = (0..48u8).filter(|k| (marker >> (47 - k)) & 1 == 1).map(|k| 16 + k).collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut text = Vec::with_capacity(3 << 20);
    while text.len() < 3 << 20 {
        seed = next_random(seed);
        let word = (seed % 7) as usize + 2;
        text.extend((0..word).map(|k| b'a' + ((seed >> (8 + 4 * k)) % 26) as u8));
        text.push(if seed.is_multiple_of(9) { b'\n' } else { b'_' });
        if seed.is_multiple_of(50) {
            text.extend_from_slice(&spelled);
        }
    }
    text
}

#[test]
fn a_markers_pattern_inside_a_block_is_not_taken_for_a_block_start() {
    for (name, marker) in [("block start", 0x3141_5926_5359u64), ("stream end", 0x1772_4538_5090)] {
        let text = text_spelling(marker);
        let packed = compressed_by("bzip2", &["-c", "-1"], &text);
        let (file, decoded) = decode(&packed);
        let (decoded, points) = decoded.unwrap();
        assert!(decoded == text, "{name}: the text from the start");
        let candidates = super::super::bzip2::tests::marker_candidates(&packed);
        // The bitmap of a block starting at bit `b` spells the marker from bit `b + 137` (after the block's marker,
        // CRC, origin pointer, the map of which sixteenths are used and the first sixteenth's).
        let inside = candidates.iter().filter(|&&at| at >= 137 && candidates.binary_search(&(at - 137)).is_ok());
        let inside: Vec<u64> = inside.copied().collect();
        assert!(inside.len() > 20, "{name}: {} markers inside blocks", inside.len());
        assert!(inside.iter().all(|&at| packed_bits(&packed, at) == marker), "{name}");
        assert!(inside.iter().any(|&at| at % 8 != 0), "{name}: at bit offsets within a byte");
        assert!(points.len() > 20, "{name}: {} restart points", points.len());
        assert_resumes_agree(Compression::Bzip2, &file, &text, &points);
    }
}

/// The 48 bits of `packed` from bit `at`.
fn packed_bits(packed: &[u8], at: u64) -> u64 {
    let mut word = [0u8; 8];
    let from = (at / 8) as usize;
    let held = &packed[from..(from + 8).min(packed.len())];
    word[..held.len()].copy_from_slice(held);
    (u64::from_be_bytes(word) << (at % 8)) >> 16
}

#[test]
fn bzip2_damage_is_reported_not_hidden_from_the_start_or_from_a_restart_point() {
    let text = log_text(3);
    let packed = compressed_by("bzip2", &["-c", "-1"], &text);
    let mut block_crc = packed.clone();
    block_crc[11] ^= 0x10; // the first block's CRC: bytes 10 to 13, after `BZh1` and the block's marker
    let mut combined = packed.clone();
    let at = combined.len() - 2;
    combined[at] ^= 0x01;
    let mut marker = packed.clone();
    marker[5] ^= 0x01;
    let cases = [
        ("block CRC", block_crc, "block is corrupt"),
        ("combined CRC", combined.clone(), "combined CRC"),
        ("a block's marker", marker, "marker"),
        ("cut short", packed[..packed.len() * 3 / 4].to_vec(), "cut short"),
        ("cut in the combined CRC", packed[..packed.len() - 3].to_vec(), "cut short"),
        ("garbage after", [&packed[..], b"this is not another stream"].concat(), "not another stream"),
        ("short garbage after", [&packed[..], b"\n"].concat(), "not another stream"),
        ("a header alone after", [&packed[..], b"BZh9"].concat(), "cut short"),
    ];
    for (case, bytes, says) in cases {
        let (_, decoded) = decode(&bytes);
        let error = decoded.unwrap_err();
        assert!(error.to_string().contains(says), "{case}: {error}");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{case}");
    }
    // The combined CRC is checked against every block's, those before the restart point included.
    let (_, decoded) = decode(&packed);
    let points = decoded.unwrap().1;
    let file = file_with(&combined);
    let mut resumed = Compression::Bzip2.decoder_at(&file, combined.len() as u64, unlimited(), points.last()).unwrap();
    let error = resumed.read_to_end(&mut Vec::new()).unwrap_err();
    assert!(error.to_string().contains("combined CRC"), "{error}");
}

#[test]
fn a_bzip2_restart_point_whose_bytes_changed_or_whose_state_is_foreign_is_refused() {
    let text = log_text(6);
    let mut packed = compressed_by("bzip2", &["-c", "-1"], &text);
    let (file, decoded) = decode(&packed);
    let end = packed.len() as u64;
    let points = decoded.unwrap().1;
    let point = points[points.len() / 2].clone();
    assert!(Compression::Bzip2.decoder_at(&file, end, unlimited(), Some(&point)).is_ok());
    let foreign = [
        Restart { state: Box::new([]), ..point.clone() },
        Restart { state: [&[8u8][..], &point.state[1..]].concat().into(), ..point.clone() },
        Restart { state: [&point.state[..1], &[b'0'][..], &point.state[2..]].concat().into(), ..point.clone() },
        Restart { input: 2, ..point.clone() },
    ];
    for wrong in foreign {
        assert!(Compression::Bzip2.decoder_at(&file, end, unlimited(), Some(&wrong)).is_err(), "{wrong:?}");
    }
    // A point at the wrong bit passes the check of the bytes but not the decoder's: it is damage there.
    let shifted = [&[(point.state[0] + 1) % 8][..], &point.state[1..]].concat().into();
    let wrong_bit = Restart { state: shifted, ..point.clone() };
    let mut decoder = Compression::Bzip2.decoder_at(&file, end, unlimited(), Some(&wrong_bit)).unwrap();
    assert_eq!(decoder.read(&mut [0u8; 64]).unwrap_err().kind(), io::ErrorKind::InvalidData);
    assert!(Compression::Gzip.decoder_at(&file, end, unlimited(), Some(&point)).is_err(), "not a gzip point");
    packed[point.input as usize + 10] ^= 0x55;
    let changed = file_with(&packed);
    let error = Compression::Bzip2.decoder_at(&changed, end, unlimited(), Some(&point)).map(|_| ()).unwrap_err();
    assert!(error.to_string().contains("changed"), "{error}");
    // Rewritten with other text: a read offered the old point decodes the new file from its start.
    let other: Vec<u8> = text.iter().map(|&b| if b == b'o' { b'0' } else { b }).collect();
    let rewritten = compressed_by("bzip2", &["-c", "-1"], &other);
    let file = file_with(&rewritten);
    let end = rewritten.len() as u64;
    let open = |from: Option<&Restart>| Compression::Bzip2.decoder_at(&file, end, unlimited(), from);
    let stream = Stream::new(&open, unlimited());
    let mut restarts = Restarts::new();
    restarts.push(point.clone());
    stream.resume_from(Arc::new(restarts));
    let mut buf = vec![0u8; 1000];
    let n = stream.read_at(point.at + 10, &mut buf).unwrap();
    assert!(buf[..n] == other[point.at as usize + 10..][..n] && n == buf.len());
    assert!(stream.restart_failed());
}

#[test]
fn a_bzip2_decoder_resumed_at_a_restart_point_stops_at_its_budget_too() {
    let packed = compressed_by("bzip2", &["-c", "-1"], &log_text(4));
    let (file, decoded) = decode(&packed);
    assert_stops_at_budget(Compression::Bzip2, &file, decoded.unwrap().1.first());
}

#[test]
fn a_block_of_one_repeated_byte_is_yielded_in_the_pieces_asked_for() {
    // 40 MiB of one byte is one block of `bzip2 -9` (runs are shortened before the block is sorted).
    let text = vec![b'a'; 40 << 20];
    let packed = compressed_by("bzip2", &["-c", "-9"], &text);
    assert!(packed.len() < 1000, "{}", packed.len());
    let file = file_with(&packed);
    let mut decoder = Compression::Bzip2.decoder(&file, packed.len() as u64, unlimited()).unwrap();
    let mut buf = vec![0u8; 4096];
    let (mut total, mut reads) = (0usize, 0usize);
    loop {
        let n = decoder.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(buf[..n].iter().all(|&b| b == b'a'));
        total += n;
        reads += 1;
    }
    assert_eq!(total, text.len());
    assert!(reads >= text.len() / buf.len(), "{reads}");
}
