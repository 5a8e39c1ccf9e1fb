//! Decoders and their restart points on files made by the real tools (`gzip`, `pigz`, `zstd`, `pzstd`, `xz`,
//! `bzip2`, `pbzip2`; a missing tool fails the test).

use super::*;
use crate::budget::Cancel;
use crate::window::restarts::Restart;
use std::io::Write;

mod bzip2;

#[test]
fn magic_bytes_name_the_compression_and_text_has_none() {
    assert_eq!(Compression::sniff(&[0x1f, 0x8b, 0x08, 0, 0]), Some(Compression::Gzip));
    assert_eq!(Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0x24]), Some(Compression::Zstd));
    assert_eq!(Compression::sniff(&[0x50, 0x2a, 0x4d, 0x18, 4, 0]), Some(Compression::Zstd), "a skippable frame");
    assert_eq!(Compression::sniff(b"P*M is text"), None);
    assert_eq!(Compression::sniff(b"\xfd7zXZ\x00\x00\x04"), Some(Compression::Xz));
    assert_eq!(Compression::sniff(b"BZh91AY&SY\x00"), Some(Compression::Bzip2));
    assert_eq!(Compression::sniff(b"BZh9 is how a line of text may start"), None);
    assert_eq!(Compression::sniff(b"hello\n"), None);
    assert_eq!(Compression::sniff(&[0x1f]), None);
}

pub(super) fn unlimited() -> Budget {
    Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(3600), Cancel::new())
}

/// The number after `seed` in a xorshift sequence: test data and offsets that vary, the same on every run.
pub(super) fn next_random(mut seed: u64) -> u64 {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    seed
}

/// About `mib` MiB of log lines whose words vary, so that compressors write ordinary blocks.
pub(super) fn log_text(mib: usize) -> Vec<u8> {
    let words = ["GET", "POST", "/api/v1/items", "/login", "200", "404", "user=alice", "user=bob", "retry", "ok"];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut text = Vec::with_capacity(mib << 20);
    let mut n = 0u64;
    while text.len() < mib << 20 {
        n += 1;
        seed = next_random(seed);
        let pick = |shift: u32| words[((seed >> shift) % words.len() as u64) as usize];
        let line = format!(
            "2026-11-25T06:{:02}:{:02}Z req={n} {} {} took={}ms\n",
            n % 60,
            seed % 60,
            pick(8),
            pick(24),
            seed % 997
        );
        text.extend_from_slice(line.as_bytes());
    }
    text
}

/// `data` compressed by the real `tool` with `args`.
pub(super) fn compressed_by(tool: &str, args: &[&str], data: &[u8]) -> Vec<u8> {
    let mut child = std::process::Command::new(tool)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`{tool}` must be installed for these tests: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{tool} failed");
    out.stdout
}

pub(super) fn file_with(bytes: &[u8]) -> File {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file
}

/// The whole text a decoder yields, read 64 KiB at a time, asking for a restart point after every read; and the
/// points it made (all it hands out after each read).
pub(super) fn decode_all(mut decoder: Box<dyn Decoder + '_>) -> io::Result<(Vec<u8>, Vec<Restart>)> {
    let (mut text, mut points) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = decoder.read(&mut buf)?;
        // A decoder may hand out points only once it reached the end of what holds them (xz: a stream's index).
        points.extend(std::iter::from_fn(|| decoder.take_restart()));
        if n == 0 {
            return Ok((text, points));
        }
        text.extend_from_slice(&buf[..n]);
        decoder.want_restart();
    }
}

/// Checks that decoding resumed at each of `points` yields the text from there on (to the end for the last
/// point, and a stretch of 300 KiB for the others).
pub(super) fn assert_resumes_agree(compression: Compression, file: &File, text: &[u8], points: &[Restart]) {
    let end = file.metadata().unwrap().len();
    for (k, point) in points.iter().enumerate() {
        let mut decoder = compression.decoder_at(file, end, unlimited(), Some(point)).unwrap();
        let at = point.at as usize;
        let want = if k + 1 == points.len() { &text[at..] } else { &text[at..(at + (300 << 10)).min(text.len())] };
        let mut got = Vec::new();
        (&mut decoder).take(want.len() as u64 + 1).read_to_end(&mut got).unwrap();
        assert!(got.starts_with(want), "{compression:?}: resumed at text byte {at}, the text differs");
        if k + 1 == points.len() {
            assert_eq!(got.len(), want.len(), "{compression:?}: the last point reads to the end and no further");
        }
    }
}

/// A decoder that counts the text it yields.
pub(super) struct Counted<'a> {
    pub(super) inner: Box<dyn Decoder + 'a>,
    pub(super) decoded: &'a std::sync::atomic::AtomicU64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.decoded.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

impl Decoder for Counted<'_> {
    fn want_restart(&mut self) {
        self.inner.want_restart();
    }

    fn take_restart(&mut self) -> Option<Restart> {
        self.inner.take_restart()
    }
}

#[test]
fn gzip_resumes_at_every_block_boundary_with_the_text_from_the_start() {
    let text = log_text(12);
    let thirds: Vec<&[u8]> = text.chunks(text.len() / 3 + 1).collect();
    let members: Vec<u8> = thirds.iter().flat_map(|part| compressed_by("gzip", &["-c", "-n"], part)).collect();
    let files = [
        ("gzip -6", compressed_by("gzip", &["-c"], &text)),
        ("gzip -1", compressed_by("gzip", &["-1", "-c"], &text)),
        ("gzip -9 with a name", compressed_by("gzip", &["-9", "-c", "-N"], &text)),
        ("pigz", compressed_by("pigz", &["-c", "-p", "2"], &text)),
        ("pigz -i (independent blocks)", compressed_by("pigz", &["-c", "-i", "-p", "2"], &text)),
        ("three members", members),
    ];
    for (producer, packed) in files {
        let file = file_with(&packed);
        let decoder = Compression::Gzip.decoder(&file, packed.len() as u64, unlimited()).unwrap();
        let (decoded, points) = decode_all(decoder).unwrap();
        assert!(decoded == text, "{producer}: the text from the start");
        assert!(points.len() >= 10, "{producer}: only {} restart points", points.len());
        assert!(points.iter().all(|p| p.state.len() < 32 * 1024), "{producer}: dictionaries are kept compressed");
        assert_resumes_agree(Compression::Gzip, &file, &text, &points);
    }
}

#[test]
fn zstd_resumes_at_frame_starts_and_a_single_frame_has_none() {
    let text = log_text(20);
    let halves: Vec<&[u8]> = text.chunks(text.len() / 2 + 1).collect();
    let frames: Vec<u8> = halves.iter().flat_map(|part| compressed_by("zstd", &["-c", "-q"], part)).collect();
    let pzstd = compressed_by("pzstd", &["-c", "-q", "-p", "2"], &text);
    assert_eq!(Compression::sniff(&pzstd), Some(Compression::Zstd), "pzstd starts with a skippable frame");
    for (producer, packed, at_least) in [("pzstd", pzstd, 2), ("two frames", frames, 1)] {
        let file = file_with(&packed);
        let (decoded, points) =
            decode_all(Compression::Zstd.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap();
        assert!(decoded == text, "{producer}: the text from the start");
        assert!(points.len() >= at_least, "{producer}: {} restart points", points.len());
        assert!(points.iter().all(|p| p.at > 0 && p.state.is_empty()), "{producer}");
        assert_resumes_agree(Compression::Zstd, &file, &text, &points);
    }
    let single = compressed_by("zstd", &["-c", "-q", "-T2"], &text);
    let file = file_with(&single);
    let (_, points) = decode_all(Compression::Zstd.decoder(&file, single.len() as u64, unlimited()).unwrap()).unwrap();
    assert_eq!(points, Vec::new(), "one frame: nowhere to resume but its start");
}

#[test]
fn a_zstd_decoder_reserves_its_frames_window_before_filling_it() {
    // A 16 MiB window (`--long=24`) over 20 MiB of text: the window is full long before the end.
    let text = log_text(20);
    let packed = compressed_by("zstd", &["-c", "-q", "-1", "--long=24"], &text);
    let file = file_with(&packed);
    let mut decoder =
        zstd::ZstdFrames::new(input_at(&std::sync::Arc::new(file), 0, packed.len() as u64, unlimited()), 0).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    decoder.read_exact(&mut buf).unwrap();
    let held = decoder.memory_held();
    assert!((16 << 20..17 << 20).contains(&held), "{held} bytes held for a 16 MiB window");
    std::io::copy(&mut decoder, &mut std::io::sink()).unwrap();
    assert_eq!(decoder.memory_held(), held, "one frame: what it held at its start");
}

#[test]
fn a_decoder_short_of_memory_waits_only_while_it_holds_none_and_one_needing_more_than_the_pool_is_too_large() {
    use crate::error::{ErrorCode, ReadError};
    use crate::media::memory::Pool;
    let pool: &'static Pool = Box::leak(Box::new(Pool::new(100 << 20)));
    let others = pool.reserve(90 << 20, &unlimited()).unwrap();
    let short = Budget::new(std::time::Instant::now() + std::time::Duration::from_millis(400), Cancel::new());
    let mut memory = Growing::new(pool, short);
    let started = std::time::Instant::now();
    let busy = cover(&mut memory, 20 << 20, "an xz block").unwrap_err();
    assert!(started.elapsed() >= std::time::Duration::from_millis(150), "holding nothing, it waited for memory");
    assert_eq!(busy.kind(), io::ErrorKind::ResourceBusy);
    let error = ReadError::from_io(&busy, "big.log.xz");
    assert_eq!(error.code, ErrorCode::TooLarge);
    let says = "big.log.xz: not decoded now: the server is busy with other reads (an xz block needs 20.0 MiB of memory \
                to decode; other reads hold 90.0 MiB of the 100.0 MiB they share";
    assert!(error.message.starts_with(says), "{}", error.message);
    assert!(error.hint.as_deref().is_some_and(|hint| hint.contains("read it again once the other")), "{error:?}");
    let alone = cover(&mut memory, 101 << 20, "a zstd frame").unwrap_err();
    assert_eq!(alone.kind(), io::ErrorKind::OutOfMemory);
    let error = ReadError::from_io(&alone, "big.log.zst");
    assert_eq!(error.code, ErrorCode::TooLarge);
    let says = "big.log.zst: a zstd frame needs 101.0 MiB of memory to decode, more than the 100.0 MiB all reads share";
    assert_eq!(error.message, says);
    cover(&mut memory, 8 << 20, "an xz block").unwrap();
    let started = std::time::Instant::now();
    let busy = cover(&mut memory, 20 << 20, "an xz block").unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_millis(150), "holding some, it does not wait for more");
    assert_eq!(busy.kind(), io::ErrorKind::ResourceBusy);
    drop(others);
    cover(&mut memory, 20 << 20, "an xz block").unwrap();
    assert_eq!(pool.held(), 20 << 20);
    drop(memory);
    assert_eq!(pool.held(), 0, "given back with the decoder");
}

#[test]
fn a_single_xz_block_makes_no_restart_point_and_a_point_elsewhere_is_refused() {
    let text = log_text(1);
    let packed = compressed_by("xz", &["-c"], &text);
    let file = file_with(&packed);
    let (decoded, points) =
        decode_all(Compression::Xz.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap();
    assert!(decoded == text && points.is_empty());
    let point =
        Restart { at: 10, input: 10, check: check_at(&file, 10, packed.len() as u64).unwrap(), state: Box::new([]) };
    assert!(Compression::Xz.decoder_at(&file, packed.len() as u64, unlimited(), Some(&point)).is_err());
}

#[test]
fn a_restart_point_whose_bytes_changed_or_whose_state_is_foreign_is_refused() {
    let text = log_text(6);
    let mut packed = compressed_by("gzip", &["-c"], &text);
    let file = file_with(&packed);
    let end = packed.len() as u64;
    let (_, points) = decode_all(Compression::Gzip.decoder(&file, end, unlimited()).unwrap()).unwrap();
    let point = points[points.len() / 2].clone();
    assert!(Compression::Gzip.decoder_at(&file, end, unlimited(), Some(&point)).is_ok());
    let foreign = [
        Restart { state: Box::new([9]), ..point.clone() },
        Restart { state: point.state[..20].into(), ..point.clone() },
        Restart { state: [&[8u8][..], &point.state[1..]].concat().into(), ..point.clone() },
        Restart { at: 5, ..point.clone() },
    ];
    for wrong in foreign {
        assert!(
            Compression::Gzip.decoder_at(&file, end, unlimited(), Some(&wrong)).is_err(),
            "{:?}",
            &wrong.state[..2]
        );
    }
    assert!(Compression::Zstd.decoder_at(&file, end, unlimited(), Some(&point)).is_err(), "not a zstd point");
    packed[point.input as usize + 10] ^= 0x55;
    let changed = file_with(&packed);
    let error = Compression::Gzip.decoder_at(&changed, end, unlimited(), Some(&point)).map(|_| ()).unwrap_err();
    assert!(error.to_string().contains("changed"), "{error}");
}

#[test]
fn gzip_damage_is_reported_not_hidden() {
    let text = log_text(1);
    let packed = compressed_by("gzip", &["-c"], &text);
    let mut crc_wrong = packed.clone();
    let at = crc_wrong.len() - 8;
    crc_wrong[at] ^= 1;
    let mut length_wrong = packed.clone();
    let at = length_wrong.len() - 2;
    length_wrong[at] ^= 1;
    let cases = [
        ("CRC", crc_wrong, "CRC-32"),
        ("length", length_wrong, "length"),
        ("cut short", packed[..packed.len() / 2].to_vec(), "cut short"),
        ("cut in the trailer", packed[..packed.len() - 3].to_vec(), "trailer"),
        ("short garbage after", [&packed[..], b"not gzip"].concat(), "header"),
        ("garbage after", [&packed[..], b"this is not another gzip member"].concat(), "header"),
    ];
    for (case, bytes, says) in cases {
        let file = file_with(&bytes);
        let error = decode_all(Compression::Gzip.decoder(&file, bytes.len() as u64, unlimited()).unwrap()).unwrap_err();
        assert!(error.to_string().contains(says), "{case}: {error}");
    }
}

#[test]
fn a_decoder_resumed_at_a_restart_point_stops_at_its_budget_too() {
    let text = log_text(6);
    let packed = compressed_by("gzip", &["-c"], &text);
    let file = file_with(&packed);
    let (_, points) = decode_all(Compression::Gzip.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap();
    assert_stops_at_budget(Compression::Gzip, &file, points.last());
}

/// Checks that a decoder of `compression` resumed at `point` in `file` stops once cancelled, and that one started
/// with its time already spent stops at once.
pub(super) fn assert_stops_at_budget(compression: Compression, file: &File, point: Option<&Restart>) {
    let end = file.metadata().unwrap().len();
    let cancel = Cancel::new();
    let budget = Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(3600), cancel.clone());
    let mut decoder = compression.decoder_at(file, end, budget, point).unwrap();
    assert!(decoder.read(&mut [0u8; 1024]).unwrap() > 0);
    cancel.cancel();
    let error = decoder.read_to_end(&mut Vec::new()).unwrap_err();
    assert!(budget_error(&error), "{compression:?}: {error}");
    let spent = Budget::new(std::time::Instant::now(), Cancel::new());
    let error = compression.decoder(file, end, spent).unwrap().read(&mut [0u8; 16]).unwrap_err();
    assert!(budget_error(&error), "{compression:?}: {error}");
}

/// Whether `error` is the budget's (ran out or cancelled), passed up through the decoder.
pub(super) fn budget_error(error: &io::Error) -> bool {
    let spent = Budget::new(std::time::Instant::now(), Cancel::new()).check().unwrap_err();
    let cancelled = {
        let cancel = Cancel::new();
        cancel.cancel();
        Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(60), cancel).check().unwrap_err()
    };
    [spent, cancelled].iter().any(|known| known.kind() == error.kind() && known.to_string() == error.to_string())
}

/// Damage an attacker might craft, done at random: every compression, from its start and from one of its restart
/// points, on files with a few bits flipped, cut short, or followed by noise. Each read ends (never a panic, never a
/// hang), with an error or with text that is the file's true text: the whole of it after flipped bits (which every
/// format's checks catch), a beginning of it when cut, all of it before the noise; from a restart point, the same
/// from that point's offset. Never text at another offset.
#[test]
fn mutated_files_of_every_compression_end_with_text_or_an_error() {
    let text = log_text(2);
    let files = [
        (Compression::Gzip, compressed_by("gzip", &["-c"], &text)),
        (Compression::Zstd, compressed_by("pzstd", &["-c", "-p", "2", "-q"], &text)),
        (Compression::Bzip2, compressed_by("bzip2", &["-c", "-1"], &text)),
        (Compression::Xz, compressed_by("xz", &["-c", "-T2", "--block-size=256KiB"], &text)),
    ];
    let mut seed = 0x853c_49e6_748f_ea9bu64;
    let mut next = move || {
        seed = next_random(seed);
        seed
    };
    for (compression, packed) in files {
        let file = file_with(&packed);
        let mut decoder = compression.decoder(&file, packed.len() as u64, unlimited()).unwrap();
        decoder.want_restart();
        let (decoded, points) = decode_all(decoder).unwrap();
        assert!(decoded == text && !points.is_empty(), "{compression:?}: {} points", points.len());
        for round in 0..40 {
            let mut bytes = packed.clone();
            match round % 4 {
                0 => bytes.truncate((next() % packed.len() as u64) as usize),
                1 => bytes.extend((0..next() % 200).map(|_| next() as u8)),
                _ => {
                    for _ in 0..1 + next() % 3 {
                        let at = (next() % bytes.len() as u64) as usize;
                        bytes[at] ^= 1 << (next() % 8);
                    }
                }
            }
            let file = file_with(&bytes);
            let end = bytes.len() as u64;
            let true_text = |decoded: &[u8], from: usize| match round % 4 {
                0 => text[from..].starts_with(decoded),
                1 => decoded.starts_with(&text[from..]),
                _ => decoded == &text[from..],
            };
            if let Ok((decoded, _)) = decode_all(compression.decoder(&file, end, unlimited()).unwrap()) {
                assert!(true_text(&decoded, 0), "{compression:?} round {round}: {} bytes", decoded.len());
            }
            let point = &points[(next() % points.len() as u64) as usize];
            let resumed = compression.decoder_at(&file, end, unlimited(), Some(point)).and_then(decode_all);
            // A gzip member resumed in its middle cannot check its CRC-32 (docs/formats.md says so): a flipped bit
            // after the point shows as what the damaged deflate data decodes to. Every other check holds.
            let unchecked = compression == Compression::Gzip && round % 4 > 1;
            if let Ok((decoded, _)) = resumed.as_ref()
                && !unchecked
            {
                assert!(true_text(decoded, point.at as usize), "{compression:?} round {round} from {}", point.at);
            }
        }
    }
}

#[test]
fn a_zstd_frame_whose_checksum_does_not_match_its_text_is_damage() {
    let text = log_text(1);
    let mut packed = compressed_by("zstd", &["-c", "-q"], &text);
    let last = packed.len() - 1;
    packed[last] ^= 1;
    let file = file_with(&packed);
    let error = decode_all(Compression::Zstd.decoder(&file, packed.len() as u64, unlimited()).unwrap()).unwrap_err();
    assert!(error.to_string().contains("checksum"), "{error}");
}

#[test]
fn a_kept_decoder_stops_at_the_budget_of_the_read_that_goes_on_with_it_and_only_that() {
    let text = log_text(6);
    let hour = || std::time::Instant::now() + std::time::Duration::from_secs(3600);
    for (compression, tool, args) in [
        (Compression::Gzip, "gzip", &["-c"][..]),
        (Compression::Zstd, "zstd", &["-c", "-q"][..]),
        (Compression::Xz, "xz", &["-c", "-1"][..]),
        (Compression::Bzip2, "bzip2", &["-c", "-1"][..]),
    ] {
        let packed = compressed_by(tool, args, &text);
        let file = file_with(&packed);
        let first_read = Cancel::new();
        let mut decoder =
            compression.decoder(&file, packed.len() as u64, Budget::new(hour(), first_read.clone())).unwrap();
        let mut start = vec![0u8; 100_000];
        decoder.read_exact(&mut start).unwrap();
        let mut kept = decoder.into_kept().expect("every compression's decoder can be kept");
        drop(file);
        // The first read ends (cancelled, say): the read that goes on with the decoder is not stopped by it, and the
        // decoder reads on through its own handle to the file.
        kept.rebudget(&Budget::new(hour(), Cancel::new()));
        first_read.cancel();
        let mut next = vec![0u8; 3 << 20];
        kept.read_exact(&mut next).unwrap();
        assert!(next == text[100_000..100_000 + (3 << 20)], "{compression:?}: the text goes on where it stopped");
        // A read whose time is spent: it stops at its own budget (a timeout, not the first read's cancellation).
        kept.rebudget(&Budget::new(std::time::Instant::now(), Cancel::new()));
        let error = kept.read_to_end(&mut Vec::new()).unwrap_err();
        let spent = Budget::new(std::time::Instant::now(), Cancel::new()).check().unwrap_err();
        assert_eq!(error.to_string(), spent.to_string(), "{compression:?}");
    }
}
