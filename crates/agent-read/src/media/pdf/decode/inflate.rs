//! Raw DEFLATE (RFC 1951), the body of FlateDecode, decoded into at most `cap` bytes: a few megabytes of it can
//! inflate to gigabytes, and lopdf's own inflater has no cap. `flate2` decodes; this only feeds it in bounded steps.

use super::{Limit, STOP_CHECK_BYTES, Stop};
use flate2::{Decompress, FlushDecompress, Status};

/// Output gathered per decoding step.
const STEP: usize = 64 * 1024;

/// Raw DEFLATE (RFC 1951), up to the end of the final block or the first error (what came before an error is kept,
/// as lopdf keeps it).
pub(super) fn inflate(data: &[u8], cap: usize, stop: &Stop) -> Result<Vec<u8>, Limit> {
    let mut inflater = Decompress::new(false);
    let mut out: Vec<u8> = Vec::new();
    let mut next_check = STOP_CHECK_BYTES;
    loop {
        if out.len() > cap {
            return Err(Limit::Over);
        }
        if out.len() >= next_check {
            if stop.is_raised() {
                return Err(Limit::Stopped);
            }
            next_check += STOP_CHECK_BYTES;
        }
        let consumed = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX).min(data.len());
        out.reserve(STEP);
        let before = out.len();
        match inflater.decompress_vec(&data[consumed..], &mut out, FlushDecompress::None) {
            Ok(Status::StreamEnd) | Err(_) => break,
            // No input taken and no output given: the data ended early (truncated); keep what came.
            Ok(_) if out.len() == before && inflater.total_in() as usize == consumed => break,
            Ok(_) => {}
        }
    }
    if out.len() > cap { Err(Limit::Over) } else { Ok(out) }
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
