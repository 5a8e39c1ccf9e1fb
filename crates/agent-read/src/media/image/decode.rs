//! What every format's decoder offers: its header, read first; an upper bound of the memory its decode will hold,
//! worked out from that header; and the decode itself, averaged down to the output size while decoding wherever the
//! format allows, so that a huge image never holds its full-size pixels.

use super::resample::{Region, Resampler, Size};
use crate::budget::Budget;
use crate::classify::ImageType;
use image::{DynamicImage, ImageBuffer};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek, SeekFrom};

/// Bytes a decoder may spend on metadata (palettes, profiles, EXIF, chunk buffers) beside its pixels.
pub const METADATA_BYTES: u64 = 4 * 1024 * 1024;

/// How many rows a decoder decodes between two looks at the read's deadline and cancel signal.
pub const ROWS_BETWEEN_CHECKS: u32 = 64;

/// Where an image's bytes come from: held in memory (a file small enough to be attached as it is), or read from the
/// file as the decoder goes.
pub enum Input<'a> {
    /// The whole file, already read.
    Memory(Cursor<&'a [u8]>),
    /// The open file, read through a buffer.
    File(BufReader<&'a File>),
}

impl<'a> Input<'a> {
    /// The image's bytes: `held` when the file was read whole, else `file` from its start.
    pub fn new(file: &'a File, held: Option<&'a [u8]>) -> io::Result<Input<'a>> {
        Ok(match held {
            Some(bytes) => Input::Memory(Cursor::new(bytes)),
            None => {
                let mut reader = BufReader::new(file);
                reader.seek(SeekFrom::Start(0))?;
                Input::File(reader)
            }
        })
    }
}

impl Read for Input<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Memory(cursor) => cursor.read(buf),
            Input::File(reader) => reader.read(buf),
        }
    }
}

impl BufRead for Input<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Input::Memory(cursor) => cursor.fill_buf(),
            Input::File(reader) => reader.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            Input::Memory(cursor) => cursor.consume(amount),
            Input::File(reader) => reader.consume(amount),
        }
    }
}

impl Seek for Input<'_> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        match self {
            Input::Memory(cursor) => cursor.seek(position),
            Input::File(reader) => reader.seek(position),
        }
    }
}

/// Why a decode failed.
#[derive(Debug)]
pub enum Failure {
    /// The data is not a valid image of its type (truncated, corrupt, or a variant the decoder does not support).
    Corrupt(String),
    /// The image needs more than a read may spend: the reason, for the model.
    TooLarge(String),
    /// The read was cancelled or ran out of time.
    Stopped(io::Error),
}

impl Failure {
    /// A decoder's own error: the data is bad (a file that ends early reaches the decoder as an I/O error too).
    pub fn from_decoder(error: impl std::fmt::Display) -> Failure {
        Failure::Corrupt(error.to_string())
    }
}

/// An image whose header has been read, ready to decode.
pub trait Decode {
    /// The image's size: what the attachment shows (for a GIF, its logical screen).
    fn size(&self) -> Size;

    /// The largest pixel area it decodes on the way, which the pixel limit applies to (a GIF's first frame may be
    /// larger than its screen).
    fn decoded_size(&self) -> Size {
        self.size()
    }

    /// Samples in each output pixel: 1 grey, 2 grey and alpha, 3 RGB, 4 RGBA (an upper bound before decoding).
    fn channels(&self) -> usize;

    /// An upper bound of the bytes held at once while decoding `area` (within [`Decode::size`]) to `out`, the
    /// output included.
    fn peak_bytes(&self, area: Region, out: Size) -> u64;

    /// Decodes `area` of the image (all of it, or a region within [`Decode::size`]), averaged down to `out` (at most
    /// the area's size), checking `budget` as it goes.
    fn decode(self: Box<Self>, area: Region, out: Size, budget: &Budget) -> Result<DynamicImage, Failure>;
}

/// Reads the header of an image of type `kind`, from a file of `file_bytes` bytes.
pub fn open<'a>(kind: ImageType, input: Input<'a>, file_bytes: u64) -> Result<Box<dyn Decode + 'a>, Failure> {
    let decoder: Box<dyn Decode + 'a> = match kind {
        ImageType::Png => Box::new(super::png::PngImage::open(input)?),
        ImageType::Jpeg => Box::new(super::jpeg::JpegImage::open(input, file_bytes)?),
        ImageType::Gif => Box::new(super::gif::GifImage::open(input)?),
        ImageType::WebP => Box::new(super::webp::WebPImage::open(input)?),
    };
    let size = decoder.size();
    if size.pixels() == 0 {
        return Err(Failure::Corrupt("its header gives no dimensions".into()));
    }
    Ok(decoder)
}

/// Stops the decode when the read was cancelled or ran out of time.
pub fn check(budget: &Budget) -> Result<(), Failure> {
    budget.check().map_err(Failure::Stopped)
}

/// A resampler that cannot be made for these sizes: the output is too small for so large an image.
pub fn resampler_failure(size: Size, out: Size) -> Failure {
    Failure::TooLarge(format!(
        "{}×{} pixels cannot be averaged down to {}×{}",
        size.width, size.height, out.width, out.height
    ))
}

/// The output pixels of a resampler as an image of its channel count.
pub fn into_image(resampler: Resampler, channels: usize) -> Result<DynamicImage, Failure> {
    let Size { width, height } = resampler.out();
    let pixels = resampler.finish();
    let image = match channels {
        1 => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageLuma8),
        2 => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageLumaA8),
        3 => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageRgb8),
        4 => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageRgba8),
        _ => None,
    };
    image.ok_or_else(|| Failure::Corrupt(format!("the decoder gave pixels of {channels} samples")))
}
