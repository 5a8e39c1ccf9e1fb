//! The xz decoder and its restart points, on files made by the real `xz` tool (a missing tool fails the test).

use super::framing::{self, Event, Framing};
use super::*;
use crate::media::compressed::Compression;
use crate::media::compressed::tests::{
    Counted, assert_resumes_agree, assert_stops_at_budget, compressed_by, decode_all, file_with, log_text, next_random,
    unlimited,
};
use crate::window::stream::{ReadAt, Stream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every event of a walk over `bytes`, with the offset it stopped at.
fn walk(bytes: &[u8]) -> Vec<(usize, Event)> {
    let mut framing = Framing::new();
    let (mut at, mut events) = (0, Vec::new());
    while at < bytes.len() {
        let (n, event) = framing.advance(&bytes[at..]);
        at += n;
        events.extend(event.map(|event| (at, event)));
    }
    assert!(!framing.lost());
    events
}

/// `text` compressed in blocks of 1 MiB by `xz` with `args` added.
fn blocks(text: &[u8], args: &[&str]) -> Vec<u8> {
    let args: Vec<&str> = ["-c", "--block-size=1MiB"].iter().chain(args).copied().collect();
    compressed_by("xz", &args, text)
}

/// Three streams of `text`'s thirds, each written by `xz` with `args`, with `padding` zero bytes after the first.
fn streams(text: &[u8], args: &[&str], padding: usize) -> Vec<u8> {
    let mut joined = Vec::new();
    for (k, part) in text.chunks(text.len() / 3 + 1).enumerate() {
        joined.extend(compressed_by("xz", &[&["-c"], args].concat(), part));
        if k == 0 {
            joined.extend(std::iter::repeat_n(0u8, padding));
        }
    }
    joined
}

#[test]
fn each_block_is_given_the_memory_its_dictionary_needs_once_it_is_reserved() {
    // Two streams: a 4 MiB dictionary, then a 12 MiB one.
    let text = log_text(6);
    let (first, second) = text.split_at(text.len() / 2);
    let mut packed = compressed_by("xz", &["-c", "--lzma2=preset=1,dict=4MiB"], first);
    packed.extend(compressed_by("xz", &["-c", "--lzma2=preset=1,dict=12MiB"], second));
    let file = file_with(&packed);
    let mut xz = Xz::new(std::sync::Arc::new(file), packed.len() as u64, unlimited()).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    xz.read_exact(&mut buf).unwrap();
    let held = xz.memory.held();
    assert!((4 << 20..(4 << 20) + (512 << 10)).contains(&held), "{held} bytes held for a 4 MiB dictionary");
    assert_eq!(xz.decoder.memlimit(), held, "the decoder may take what is held, no more");
    let mut decoded = buf;
    xz.read_to_end(&mut decoded).unwrap();
    assert!(decoded == text);
    let held = xz.memory.held();
    assert!((12 << 20..(12 << 20) + (512 << 10)).contains(&held), "{held} bytes held for a 12 MiB dictionary");
    assert_eq!(xz.decoder.memlimit(), held);
}

#[test]
fn the_walk_finds_the_blocks_the_index_lists_and_the_streams_ends() {
    let text = log_text(5);
    for (producer, packed) in [
        ("xz -T2", blocks(&text, &["-T2"])),
        ("xz single-threaded", blocks(&text, &["-T1"])),
        ("three streams", streams(&text, &["--block-size=700KiB"], 8)),
    ] {
        let events = walk(&packed);
        let starts: Vec<usize> = events.iter().filter(|(_, e)| *e == Event::StreamStart).map(|(at, _)| *at).collect();
        assert_eq!(starts.len(), if producer == "three streams" { 3 } else { 1 }, "{producer}");
        let (mut block_starts, mut stream_blocks) = (Vec::new(), Vec::new());
        let (mut summed, mut index_at, mut text_len) = (0, 0, 0);
        for (at, event) in &events {
            match event {
                Event::StreamStart => {
                    summed = at + 12;
                    stream_blocks.clear();
                }
                Event::BlockStart => stream_blocks.push(*at),
                Event::IndexStart => index_at = *at,
                Event::Record { unpadded, uncompressed } => {
                    assert_eq!(stream_blocks.get(block_starts.len()), Some(&summed), "{producer}: a block's start");
                    block_starts.push(summed);
                    summed += framing::padded(*unpadded) as usize;
                    text_len += *uncompressed as usize;
                }
                Event::StreamEnd => {
                    assert_eq!(summed, index_at, "{producer}: the index follows the blocks");
                    assert_eq!(block_starts.len(), stream_blocks.len(), "{producer}: every block listed");
                    block_starts.clear();
                }
            }
        }
        assert_eq!(text_len, text.len(), "{producer}");
        let blocks = events.iter().filter(|(_, e)| *e == Event::BlockStart).count();
        assert!(blocks >= 6, "{producer}: {blocks} blocks");
        let last_end = events.iter().rev().find(|(_, e)| *e == Event::StreamEnd).unwrap().0;
        assert_eq!(last_end, packed.len(), "{producer}: the last stream ends the file");
    }
}

#[test]
fn written_index_and_footer_are_what_xz_writes() {
    let text = log_text(3);
    let packed = blocks(&text, &["-T2"]);
    let events = walk(&packed);
    let records: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Record { unpadded, uncompressed } => Some((*unpadded, *uncompressed)),
            _ => None,
        })
        .collect();
    let index_at = events.iter().find(|(_, e)| *e == Event::IndexStart).unwrap().0;
    assert_eq!(framing::index_and_footer(&records, packed[7]), packed[index_at..]);
    assert_eq!(index_records(&packed[index_at..packed.len() - 12]), Some(records));
    assert_eq!(index_records(&packed[index_at..packed.len() - 13]), None, "an index cut short does not read");
}

/// The points a first pass makes over `packed`, checked to be those of the text `text`.
fn points_of(packed: &[u8], text: &[u8]) -> (File, Vec<Restart>) {
    let file = file_with(packed);
    let (decoded, points) =
        decode_all(Compression::Xz.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap();
    assert!(decoded == text, "the text from the start");
    (file, points)
}

#[test]
fn xz_resumes_at_block_and_stream_starts_with_the_text_from_the_start() {
    let text = log_text(8);
    let files = [
        ("xz -T2 (sizes in block headers)", blocks(&text, &["-T2"]), 6),
        ("xz --block-size single-threaded (no sizes)", blocks(&text, &["-T1"]), 6),
        ("CRC-32 checks", blocks(&text, &["-T2", "-C", "crc32"]), 6),
        ("SHA-256 checks", blocks(&text, &["-T2", "-C", "sha256"]), 6),
        ("no checks", blocks(&text, &["-T2", "-C", "none"]), 6),
        ("three single-block streams", streams(&text, &[], 0), 2),
        ("three streams, padded", streams(&text, &["--block-size=1MiB"], 12), 6),
    ];
    for (producer, packed, at_least) in files {
        let (file, points) = points_of(&packed, &text);
        assert!(points.len() >= at_least, "{producer}: {} restart points", points.len());
        let ats: Vec<u64> = points.iter().map(|p| p.at).collect();
        assert!(ats.windows(2).all(|w| w[0] < w[1]) && ats[0] > 0, "{producer}: {ats:?}");
        assert_resumes_agree(Compression::Xz, &file, &text, &points);
    }
}

/// `packed` (one stream) with its index's first record saying `delta` more bytes of text, the index's CRC-32 fixed
/// up so that only the size lies.
fn lying_index(packed: &[u8], delta: u8) -> Vec<u8> {
    let events = walk(packed);
    let index_at = events.iter().find(|(_, e)| *e == Event::IndexStart).unwrap().0;
    let mut lying = packed.to_vec();
    // Indicator, count, first unpadded size: then the first text size, whose first byte is bumped.
    let mut at = index_at + 1;
    for _ in 0..2 {
        while lying[at] & 0x80 != 0 {
            at += 1;
        }
        at += 1;
    }
    assert!(lying[at] & 0x7f < 0x7f - delta, "the bump stays in the byte");
    lying[at] += delta;
    let crc_at = packed.len() - 12 - 4;
    let crc = crc32fast::hash(&lying[index_at..crc_at]).to_le_bytes();
    lying[crc_at..crc_at + 4].copy_from_slice(&crc);
    lying
}

#[test]
fn an_index_that_lies_about_a_size_is_damage_and_gives_no_point() {
    let text = log_text(6);
    let packed = blocks(&text, &["-T2"]);
    let lying = lying_index(&packed, 1);
    let file = file_with(&lying);
    let mut decoder = Compression::Xz.decoder(&file, lying.len() as u64, unlimited()).unwrap();
    let (mut decoded, mut buf) = (Vec::new(), vec![0u8; 64 * 1024]);
    let error = loop {
        match decoder.read(&mut buf) {
            Ok(0) => panic!("the lie went unnoticed"),
            Ok(n) => decoded.extend_from_slice(&buf[..n]),
            Err(e) => break e,
        }
        assert_eq!(decoder.take_restart(), None, "no point before the index is accepted");
        decoder.want_restart();
    };
    assert!(error.to_string().contains("size"), "{error}");
    assert!(text.starts_with(&decoded), "the text before the damage is the text");
    assert_eq!(decoder.take_restart(), None);
    // Points learned from the honest file, used on the lying one (the same bytes but the index): the text read
    // through each is the true text, or the point is refused as damaged; never text at other offsets.
    let (_, points) = points_of(&packed, &text);
    for point in &points {
        let decoder = Compression::Xz.decoder_at(&file, lying.len() as u64, unlimited(), Some(point)).unwrap();
        match decode_all(decoder) {
            Ok((got, _)) => assert!(got == text[point.at as usize..], "resumed at {}", point.at),
            Err(e) => assert!(e.kind() == io::ErrorKind::InvalidData, "{e}"),
        }
    }
}

#[test]
fn a_point_whose_bytes_changed_or_whose_state_is_foreign_is_refused() {
    let text = log_text(6);
    let mut packed = blocks(&text, &["-T2"]);
    let (file, points) = points_of(&packed, &text);
    let end = packed.len() as u64;
    let point = points[points.len() / 2].clone();
    assert!(Compression::Xz.decoder_at(&file, end, unlimited(), Some(&point)).is_ok());
    let foreign = [
        Restart { state: Box::new([9]), ..point.clone() },
        Restart { state: point.state[..39].into(), ..point.clone() },
        Restart { at: point.at + 1, state: Within { text_end: point.at, ..within(&point) }.encode(), ..point.clone() },
        Restart { state: Within { block: 0, ..within(&point) }.encode(), ..point.clone() },
        // One block further than its state says: the index puts that block elsewhere.
        Restart { state: Within { block: within(&point).block + 1, ..within(&point) }.encode(), ..point.clone() },
        Restart { state: Within { stream_end: end + 4, ..within(&point) }.encode(), ..point.clone() },
        Restart { input: 10, state: Box::new([]), ..point.clone() },
    ];
    for wrong in foreign {
        assert!(Compression::Xz.decoder_at(&file, end, unlimited(), Some(&wrong)).is_err(), "{wrong:?}");
    }
    // A point whose stream's text ends elsewhere than its state says: refused once its blocks are decoded.
    let text_end = within(&point).text_end + 1;
    let shifted = Restart { state: Within { text_end, ..within(&point) }.encode(), ..point.clone() };
    let error = decode_all(Compression::Xz.decoder_at(&file, end, unlimited(), Some(&shifted)).unwrap()).unwrap_err();
    assert!(error.to_string().contains("does not fit"), "{error}");
    packed[point.input as usize + 10] ^= 0x55;
    let changed = file_with(&packed);
    let error = Compression::Xz.decoder_at(&changed, end, unlimited(), Some(&point)).map(|_| ()).unwrap_err();
    assert!(error.to_string().contains("changed"), "{error}");
}

fn within(point: &Restart) -> Within {
    Within::decode(&point.state, point, u64::MAX).unwrap()
}

#[test]
fn damage_is_reported_from_the_start_and_from_a_point() {
    let text = log_text(6);
    let packed = blocks(&text, &["-T2"]);
    let (_, points) = points_of(&packed, &text);
    let middle = &points[points.len() / 2];
    let mut in_a_block = packed.clone();
    in_a_block[middle.input as usize + 5000] ^= 0x40;
    let cut = packed[..packed.len() * 3 / 4].to_vec();
    let before_cut = points.iter().rev().find(|p| (p.input as usize) < cut.len() - 100).unwrap();
    for (case, bytes, point) in [("a damaged block", in_a_block, middle), ("cut short", cut.clone(), before_cut)] {
        let file = file_with(&bytes);
        let end = bytes.len() as u64;
        let error = decode_all(Compression::Xz.decoder(&file, end, unlimited()).unwrap()).unwrap_err();
        assert!(damage(&error), "{case}: {error}");
        let resumed = Compression::Xz.decoder_at(&file, end, unlimited(), Some(point));
        let error = resumed.and_then(decode_all).unwrap_err();
        assert!(damage(&error), "{case}: {error}");
    }
}

/// Whether `error` is one the stream above takes for damaged input (and so retries from the start when resumed).
fn damage(error: &io::Error) -> bool {
    use io::ErrorKind::{InvalidData, InvalidInput, Other, UnexpectedEof};
    matches!(error.kind(), InvalidData | InvalidInput | UnexpectedEof | Other)
}

#[test]
fn a_resumed_decoder_stops_at_its_budget() {
    let text = log_text(6);
    let (file, points) = points_of(&blocks(&text, &["-T2"]), &text);
    assert_stops_at_budget(Compression::Xz, &file, points.first());
}

/// Windows at random offsets, read through a stream that learned the points of a first pass, are the text's; a deep
/// one decodes little more than the text from the point before it.
#[test]
fn windows_through_learned_points_are_the_text_and_a_deep_one_decodes_from_near_it() {
    let text = log_text(12);
    let packed = blocks(&text, &["-T2"]);
    let file = file_with(&packed);
    let end = packed.len() as u64;
    let decoded = AtomicU64::new(0);
    let open = |from: Option<&Restart>| -> io::Result<Box<dyn crate::window::stream::Decoder + '_>> {
        let inner = Compression::Xz.decoder_at(&file, end, unlimited(), from)?;
        Ok(Box::new(Counted { inner, decoded: &decoded }))
    };
    let first = Stream::new(&open, unlimited());
    first.record_restarts();
    let mut offset = 0;
    let mut buf = vec![0u8; 64 * 1024];
    while first.read_at(offset, &mut buf).unwrap() > 0 {
        offset += buf.len() as u64;
    }
    let restarts = Arc::new(first.recorded());
    assert!(restarts.count() >= 3, "{restarts:?}");
    let later = Stream::new(&open, unlimited());
    later.resume_from(restarts.clone());
    let deep = text.len() as u64 - 300_000;
    decoded.store(0, Ordering::Relaxed);
    let mut window = vec![0u8; 1000];
    assert_eq!(later.read_at(deep, &mut window).unwrap(), 1000);
    assert!(window == text[deep as usize..deep as usize + 1000]);
    let point = restarts.before(deep).unwrap().at;
    assert!(point > text.len() as u64 / 2, "a point in the second half: {point}");
    let spent = decoded.load(Ordering::Relaxed);
    assert!(
        spent <= deep - point + 2 * 64 * 1024,
        "decoded {spent} bytes for a window {} past its point",
        deep - point
    );
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..40 {
        seed = next_random(seed);
        let at = seed % text.len() as u64;
        let n = later.read_at(at, &mut window).unwrap();
        assert!(window[..n] == text[at as usize..(at as usize + 1000).min(text.len())], "window at {at}");
    }
    assert!(!later.restart_failed());
}

/// `xz -c`'s output for `text` with its first block header changed by `change` (given the header from its size byte
/// on), and the header's CRC-32 fixed up after.
fn with_block_header(text: &[u8], change: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut packed = compressed_by("xz", &["-c"], text);
    // The block header of `xz -c`: its size, no flags, one filter (LZMA2) with one byte of properties, the
    // dictionary size; padding, then its CRC-32.
    let header_len = (usize::from(packed[12]) + 1) * 4;
    assert_eq!(packed[13..16], [0x00, 0x21, 0x01]);
    let crc_at = 12 + header_len - 4;
    change(&mut packed[12..crc_at]);
    let crc = crc32fast::hash(&packed[12..crc_at]).to_le_bytes();
    packed[crc_at..crc_at + 4].copy_from_slice(&crc);
    packed
}

#[test]
fn a_block_asking_for_more_memory_than_the_limit_is_refused_before_any_is_taken() {
    // A dictionary of 4 GiB.
    let packed = with_block_header(&log_text(1), |header| header[4] = 40);
    let file = file_with(&packed);
    let error = decode_all(Compression::Xz.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::OutOfMemory, "{error}");
    assert!(error.to_string().contains("more than 160 MiB of memory"), "{error}");
}

#[test]
fn a_block_with_a_filter_xz_does_not_define_is_refused_in_words_that_say_so() {
    // Filter 0x20, which no xz writes, in place of LZMA2.
    let packed = with_block_header(&log_text(1), |header| header[2] = 0x20);
    let file = file_with(&packed);
    let error = decode_all(Compression::Xz.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
    assert!(error.to_string().contains("a filter or an option this xz decoder does not support"), "{error}");
}

#[test]
fn blocks_with_several_filters_before_lzma2_are_read_and_resumed() {
    let text = log_text(3);
    let half = text.len() / 2;
    let mut packed = blocks(&text[..half], &["-T2"]);
    // A second stream whose blocks have two filters before LZMA2.
    packed.extend(compressed_by("xz", &["-c", "--delta=dist=1", "--x86", "--lzma2"], &text[half..]));
    let file = file_with(&packed);
    let end = packed.len() as u64;
    let mut decoder = Compression::Xz.decoder(&file, end, unlimited()).unwrap();
    decoder.want_restart();
    let (decoded, points) = decode_all(decoder).unwrap();
    assert!(decoded == text, "the whole text, the first stream's and the second's");
    assert!(points.iter().any(|point| point.at == half as u64), "a point at the second stream: {points:?}");
    assert_resumes_agree(Compression::Xz, &file, &text, &points);
    let mut damaged = packed.clone();
    damaged[end as usize - 2000] ^= 0x40;
    let file = file_with(&damaged);
    let error = decode_all(Compression::Xz.decoder(&file, end, unlimited()).unwrap()).unwrap_err();
    assert!(damage(&error), "damage in a block with several filters is damage: {error}");
}

#[test]
fn the_walk_ends_on_any_bytes_and_an_index_of_noise_reads_as_none_or_some() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed = next_random(seed);
        seed
    };
    for round in 0..2000 {
        let len = (next() % 300) as usize;
        // Half the inputs of small values (what indexes and sizes are made of), half of any byte.
        let byte = |value: u64| {
            if round % 2 == 0 { ((value % 4) as u8 * 0x40) | ((value >> 8) as u8 % 3) } else { value as u8 }
        };
        let bytes: Vec<u8> = (0..len).map(|_| byte(next())).collect();
        index_records(&bytes);
        let mut framing = Framing::new();
        let mut at = 0;
        let mut steps = 0;
        while at < bytes.len() {
            at += framing.advance(&bytes[at..]).0;
            steps += 1;
            assert!(steps <= 2 * bytes.len() + 2, "the walk stands still on {bytes:?}");
        }
    }
}
