//! PNG, decoded row by row straight into the output: the full-size image is never held, only a few raw rows. A
//! region keeps only its own columns' sums, and decoding stops after its last row.
//!
//! Rows come out of the `png` crate as 8-bit samples (palettes expanded, transparency as an alpha channel, low bit
//! depths widened, 16 bits cut to their high byte), so every colour type, bit depth and palette reaches the same
//! resampler. Interlaced (Adam7) images deliver every pixel in seven sparse passes; the resampler then keeps sums
//! for every output pixel instead of one row.

use super::decode::{
    Decode, Failure, Input, METADATA_BYTES, ROWS_BETWEEN_CHECKS, check, into_image, resampler_failure,
};
use super::resample::{Region, Resampler, RowOrder, Size};
use crate::budget::Budget;
use image::DynamicImage;
use png::{Adam7Info, ColorType, Decoder, DecodingError, InterlaceInfo, Transformations};

/// Adam7's passes: first column, column step, first row, row step.
const ADAM7: [(u32, u32, u32, u32); 7] =
    [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)];

/// Bytes the `png` crate holds beside its rows: the inflate window and its read-ahead.
const INFLATE_BYTES: u64 = 256 * 1024;

/// A PNG whose header has been read.
pub struct PngImage<'a> {
    decoder: Decoder<Input<'a>>,
    size: Size,
    interlaced: bool,
    /// Samples a pixel has in the file, and bits a sample.
    file_samples: u64,
    bit_depth: u64,
    /// Output channels at most (transparency chunks come after the header, so it may be one fewer).
    channels: usize,
}

impl<'a> PngImage<'a> {
    /// Reads the signature and the image header (IHDR) only.
    pub fn open(input: Input<'a>) -> Result<PngImage<'a>, Failure> {
        let mut decoder = Decoder::new_with_limits(input, png::Limits { bytes: METADATA_BYTES as usize });
        decoder.set_transformations(Transformations::EXPAND | Transformations::STRIP_16);
        decoder.set_ignore_text_chunk(true);
        decoder.set_ignore_iccp_chunk(true);
        let info = decoder.read_header_info().map_err(failure)?;
        let size = Size::new(info.width, info.height);
        let (interlaced, file_samples, bit_depth) =
            (info.interlaced, info.color_type.samples() as u64, info.bit_depth as u64);
        let channels = match info.color_type {
            ColorType::Grayscale | ColorType::GrayscaleAlpha => 2,
            ColorType::Rgb | ColorType::Indexed | ColorType::Rgba => 4,
        };
        Ok(PngImage { decoder, size, interlaced, file_samples, bit_depth, channels })
    }

    fn order(&self) -> RowOrder {
        if self.interlaced { RowOrder::Any } else { RowOrder::TopDown }
    }

    /// Bytes of one row as stored (filter byte included) and as output: the decoder holds a few of each.
    fn row_bytes(&self) -> (u64, u64) {
        let width = u64::from(self.size.width);
        let raw = 1 + (width * self.file_samples * self.bit_depth).div_ceil(8);
        (raw, width * self.channels as u64)
    }
}

impl Decode for PngImage<'_> {
    fn size(&self) -> Size {
        self.size
    }

    fn channels(&self) -> usize {
        self.channels
    }

    fn peak_bytes(&self, area: Region, out: Size) -> u64 {
        let (raw, output) = self.row_bytes();
        let resampler = Resampler::bytes_needed(area, out, self.channels, self.order());
        raw * 7 + output * 2 + INFLATE_BYTES + METADATA_BYTES + resampler
    }

    fn decode(mut self: Box<Self>, area: Region, out: Size, budget: &Budget) -> Result<DynamicImage, Failure> {
        let (_, output_row) = self.row_bytes();
        let limit = METADATA_BYTES + output_row;
        self.decoder.set_limits(png::Limits { bytes: usize::try_from(limit).unwrap_or(usize::MAX) });
        let order = self.order();
        let mut reader = self.decoder.read_info().map_err(failure)?;
        let channels = reader.output_color_type().0.samples();
        let mut resampler =
            Resampler::new(area, out, channels, order).map_err(|_| resampler_failure(area.size, out))?;
        if order == RowOrder::Any {
            interlaced_rows(&mut reader, &mut resampler, self.size, budget)?;
        } else {
            // Rows below a region are not needed: its pixels are all decoded by then.
            let mut y = 0;
            while y < area.bottom()
                && let Some(row) = reader.next_row().map_err(failure)?
            {
                resampler.add_row(y, 0, 1, row.data());
                y += 1;
                if y.is_multiple_of(ROWS_BETWEEN_CHECKS) {
                    check(budget)?;
                }
            }
        }
        into_image(resampler, channels)
    }
}

/// Feeds the seven Adam7 passes to the resampler, each row at its place in the image.
fn interlaced_rows(
    reader: &mut png::Reader<Input<'_>>,
    resampler: &mut Resampler,
    size: Size,
    budget: &Budget,
) -> Result<(), Failure> {
    let mut places = adam7_rows(size);
    let mut rows = 0u32;
    while let Some(row) = reader.next_interlaced_row().map_err(failure)? {
        let (pass, line) = places.next().ok_or_else(|| Failure::Corrupt("more interlaced rows than passes".into()))?;
        let InterlaceInfo::Adam7(info) = row.interlace() else {
            return Err(Failure::Corrupt("an interlaced image gave a plain row".into()));
        };
        if *info != Adam7Info::new(pass as u8 + 1, line, size.width) {
            return Err(Failure::Corrupt("interlaced rows came out of order".into()));
        }
        let (x0, dx, y0, dy) = ADAM7[pass];
        resampler.add_row(y0 + line * dy, x0, dx, row.data());
        rows += 1;
        if rows.is_multiple_of(ROWS_BETWEEN_CHECKS) {
            check(budget)?;
        }
    }
    Ok(())
}

/// The (pass, line within it) of every interlaced row in decoding order; passes without pixels have no rows.
fn adam7_rows(size: Size) -> impl Iterator<Item = (usize, u32)> {
    ADAM7.iter().enumerate().flat_map(move |(pass, &(x0, dx, y0, dy))| {
        let columns = size.width.saturating_sub(x0).div_ceil(dx);
        let lines = if columns == 0 { 0 } else { size.height.saturating_sub(y0).div_ceil(dy) };
        (0..lines).map(move |line| (pass, line))
    })
}

fn failure(error: DecodingError) -> Failure {
    match error {
        DecodingError::LimitsExceeded => Failure::TooLarge(format!(
            "its metadata chunks hold more than the {} MiB a read decodes beside the pixels",
            METADATA_BYTES >> 20
        )),
        other => Failure::from_decoder(other),
    }
}
