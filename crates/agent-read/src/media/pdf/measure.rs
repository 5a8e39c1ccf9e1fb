//! Streams measured before lopdf inflates them, which it does into memory without a bound: each is decoded by the
//! bounded decoders of `decode` exactly as lopdf will (filter chain, PNG predictors and their row size included), and
//! one that passes 64 MiB is refused. In the thread mode, which has no memory limit to fall back on, the raw file is
//! probed too before lopdf loads it, blind to dictionaries, so that object streams cannot hide a bomb.

use super::PdfError;
use super::decode;
use super::stop::Stop;
use lopdf::{Dictionary, Object, Stream};

/// Largest decoded stream: past it a stream is a decompression bomb (`TooLarge`).
pub(super) const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// How many decodings deep the pre-load probe follows a stream (FlateDecode inside FlateDecode …).
const PROBE_DEPTH: usize = 4;
/// What the deepest probed decoding may still yield: more means yet another stage is hidden inside.
const PROBE_DEEPEST_BYTES: usize = 1024 * 1024;

/// The error of a stream that inflates past [`MAX_STREAM_BYTES`].
fn stream_too_large() -> PdfError {
    PdfError::TooLarge(format!(
        "a stream in the PDF inflates past {} MiB (a decompression bomb?); its text was not extracted",
        MAX_STREAM_BYTES / (1024 * 1024)
    ))
}

/// Decodes `stream` as lopdf will (its filter chain and predictors), within MAX_STREAM_BYTES a stage; a filter lopdf
/// cannot decode ends the chain (pdf-extract then reads the raw bytes, which are in memory already).
pub(super) fn measure_stream(stream: &Stream, stop: &Stop) -> Result<(), PdfError> {
    let Ok(filters) = stream.filters() else { return Ok(()) };
    let params = stream.dict.get(b"DecodeParms").and_then(Object::as_dict).ok();
    let mut data = std::borrow::Cow::Borrowed(stream.content.as_slice());
    for filter in filters {
        let decoded = match filter {
            b"FlateDecode" => decode::flate(&data, MAX_STREAM_BYTES, stop),
            b"LZWDecode" => decode::lzw(&data, early_change(params), MAX_STREAM_BYTES, stop),
            b"ASCII85Decode" => decode::ascii85(&data, MAX_STREAM_BYTES),
            _ => return Ok(()),
        };
        let decoded = match decoded {
            Ok(Some(decoded)) => decoded,
            Ok(None) => return Ok(()),
            Err(decode::Limit::Over) => return Err(stream_too_large()),
            Err(decode::Limit::Stopped) => return Err(PdfError::Timeout),
        };
        let decoded = if filter == b"ASCII85Decode" { Some(decoded) } else { unpredict(decoded, params)? };
        match decoded {
            Some(decoded) => data = std::borrow::Cow::Owned(decoded),
            None => return Ok(()),
        }
    }
    Ok(())
}

/// lopdf's `EarlyChange` reading: on unless the parameters say 0.
fn early_change(params: Option<&Dictionary>) -> bool {
    params.and_then(|p| p.get(b"EarlyChange").and_then(Object::as_i64).ok()).is_none_or(|value| value != 0)
}

/// Undoes a PNG predictor as lopdf does (none when `params` ask for none); `None` where lopdf fails. Rows past
/// MAX_STREAM_BYTES are refused: lopdf would allocate two of them before reading a byte.
fn unpredict(data: Vec<u8>, params: Option<&Dictionary>) -> Result<Option<Vec<u8>>, PdfError> {
    let Some(params) = params else { return Ok(Some(data)) };
    let number =
        |key: &[u8], default: i64, least: i64| params.get(key).and_then(Object::as_i64).unwrap_or(default).max(least);
    if !(10..=15).contains(&number(b"Predictor", 1, i64::MIN)) {
        return Ok(Some(data));
    }
    let as_size = |value: i64| usize::try_from(value).unwrap_or(usize::MAX);
    let (columns, colors, bits) = (
        as_size(number(b"Columns", 1, 1)),
        as_size(number(b"Colors", 1, 1)),
        as_size(number(b"BitsPerComponent", 8, 8)),
    );
    let bytes_per_pixel = colors.checked_mul(bits).map(|bits| bits / 8);
    let row = bytes_per_pixel.and_then(|bytes| bytes.checked_mul(columns));
    match (bytes_per_pixel, row) {
        (Some(bytes_per_pixel), Some(row)) if row <= MAX_STREAM_BYTES => {
            Ok(lopdf::filters::png::decode_frame(&data, bytes_per_pixel, columns).ok())
        }
        _ => Err(PdfError::TooLarge(format!(
            "a stream in the PDF asks for predictor rows over {} MiB; its text was not extracted",
            MAX_STREAM_BYTES / (1024 * 1024)
        ))),
    }
}

/// Probes the data after every `stream` keyword in the raw file, whatever its dictionary says, for a stream that
/// inflates past MAX_STREAM_BYTES — at any of PROBE_DEPTH nested decodings.
pub(super) fn probe_raw_streams(data: &[u8], stop: &Stop) -> Result<(), PdfError> {
    for found in memchr::memmem::find_iter(data, b"stream") {
        if found >= 3 && &data[found - 3..found] == b"end" {
            continue;
        }
        let mut at = found + b"stream".len();
        while matches!(data.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        match (data.get(at), data.get(at + 1)) {
            (Some(b'\r'), Some(b'\n')) => at += 2,
            (Some(b'\r' | b'\n'), _) => at += 1,
            _ => continue,
        }
        probe(&data[at..], 1, stop)?;
    }
    Ok(())
}

/// Decodes `data` every way lopdf could, and what that gives again, down to PROBE_DEPTH decodings.
fn probe(data: &[u8], depth: usize, stop: &Stop) -> Result<(), PdfError> {
    let decoders: [fn(&[u8], &Stop) -> decode::Decoded; 4] = [
        |data, stop| decode::flate(data, MAX_STREAM_BYTES, stop),
        |data, stop| decode::lzw(data, true, MAX_STREAM_BYTES, stop),
        |data, stop| decode::lzw(data, false, MAX_STREAM_BYTES, stop),
        |data, _| decode::ascii85(data, MAX_STREAM_BYTES),
    ];
    for decoder in decoders {
        let decoded = match decoder(data, stop) {
            Ok(Some(decoded)) => decoded,
            Ok(None) => continue,
            Err(decode::Limit::Over) => return Err(stream_too_large()),
            Err(decode::Limit::Stopped) => return Err(PdfError::Timeout),
        };
        if decoded.is_empty() {
            continue;
        }
        if depth < PROBE_DEPTH {
            probe(&decoded, depth + 1, stop)?;
        } else if decoded.len() > PROBE_DEEPEST_BYTES {
            return Err(PdfError::TooLarge(format!(
                "a stream in the PDF is compressed more than {PROBE_DEPTH} times over (a decompression bomb?)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::pdf::fixtures::{
        bomb_pdf, handmade, peak_rss_bytes, run_thread, sample, stream_object, texts, zeros_zlib, zlib,
    };
    use lopdf::dictionary;
    use std::time::{Duration, Instant};

    #[test]
    fn a_decompression_bomb_fails_cleanly_with_bounded_memory_in_a_thread() {
        // 2 GiB of zeros in 2 MiB of FlateDecode, as the page's second content stream.
        let bytes = bomb_pdf((2u64 << 30) / 258);
        assert!(bytes.len() < 3 << 20, "{}", bytes.len());
        let started = Instant::now();
        let err = run_thread(&bytes, "1", 10_000, Duration::from_secs(30)).unwrap_err();
        let took = started.elapsed();
        eprintln!("thread mode: the 2 GiB bomb failed in {took:?}: {err}");
        assert!(matches!(&err, PdfError::TooLarge(reason) if reason.contains("64 MiB")), "{err:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
        assert!(peak_rss_bytes() < 1 << 30, "peak RSS {} bytes", peak_rss_bytes());
    }

    /// One page of text, and an object stream that lopdf unpacks while loading: 2 GiB of zeros.
    fn object_stream_bomb() -> Vec<u8> {
        handmade(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
            stream_object("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
            stream_object("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &zeros_zlib((2u64 << 30) / 258)),
        ])
    }

    #[test]
    fn the_raw_probe_stops_an_object_stream_bomb_before_lopdf_loads_it() {
        let plain = handmade(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
            stream_object("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        ]);
        assert_eq!(texts(&run_thread(&plain, "1", 100, Duration::from_secs(30)).unwrap()), [(1, "Hello")]);
        let started = Instant::now();
        let err = run_thread(&object_stream_bomb(), "1", 100, Duration::from_secs(30)).unwrap_err();
        assert!(matches!(err, PdfError::TooLarge(_)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
        assert!(peak_rss_bytes() < 1 << 30, "peak RSS {} bytes", peak_rss_bytes());
    }

    #[test]
    fn the_raw_probe_finds_bombs_nested_and_behind_any_dictionary() {
        let stop = Stop::never();
        let nested = zlib(&zeros_zlib(300_000)); // 77 MB, compressed twice
        let mut file = b"%PDF-1.7\n1 0 obj\n<< /Type /Obj#53tm /Length 99999 >>\nstream\r\n".to_vec();
        file.extend_from_slice(&nested);
        file.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(matches!(probe_raw_streams(&file, &stop), Err(PdfError::TooLarge(_))));
        let mut harmless = b"%PDF-1.7\n1 0 obj\n<< /Length 9 >>\nstream\n".to_vec();
        harmless.extend_from_slice(&zlib(&sample(100_000)));
        harmless.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(probe_raw_streams(&harmless, &stop).is_ok());
    }

    #[test]
    fn predictor_rows_are_bounded_and_undone_as_lopdf_does() {
        let huge = dictionary! { "Predictor" => 12, "Columns" => 1_000_000_000i64, "Colors" => 3 };
        assert!(matches!(unpredict(vec![0; 10], Some(&huge)), Err(PdfError::TooLarge(_))));
        let rows = dictionary! { "Predictor" => 12, "Columns" => 3 };
        // Two rows with the "Up" filter (2): the second adds the first.
        let data = vec![2, 1, 2, 3, 2, 1, 1, 1];
        assert_eq!(unpredict(data, Some(&rows)).unwrap(), Some(vec![1, 2, 3, 2, 3, 4]));
        assert_eq!(unpredict(vec![9, 9], None).unwrap(), Some(vec![9, 9]));
    }
}
