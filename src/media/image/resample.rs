//! Area-averaging downscale fed row by row, so that a decoder never holds the full-size image.
//!
//! Every source pixel belongs to exactly one output pixel: output column `o` of `n` covers the source columns from
//! `ceil(o·w/n)` up to `ceil((o+1)·w/n)`, likewise for rows, and an output pixel is the rounded mean of its block,
//! each channel apart. That is the box filter of `image`'s `thumbnail` (computed here in exact integers rather than
//! `f32`), so a streamed downscale matches a full decode followed by `thumbnail` to within rounding.
//!
//! The resampler maps a source *region* onto the output; samples outside it are ignored. A whole-image read uses the
//! whole image as its region; a crop is the same pass over a smaller region. Samples never delivered count as zero
//! (a GIF frame smaller than its screen leaves the rest transparent black).

/// Width and height in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
}

impl Size {
    /// A size of `width` × `height`.
    pub fn new(width: u32, height: u32) -> Size {
        Size { width, height }
    }

    /// How many pixels: width × height.
    pub fn pixels(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// The longer side.
    pub fn longest_side(self) -> u32 {
        self.width.max(self.height)
    }

    /// This size scaled, aspect ratio kept, so that its longer side is at most `side`: unchanged when it already
    /// fits, else the dimensions `image`'s `thumbnail(side, side)` gives (each rounded, at least 1).
    pub fn fit_within(self, side: u32) -> Size {
        if self.longest_side() <= side {
            return self;
        }
        let ratio = (f64::from(side) / f64::from(self.width)).min(f64::from(side) / f64::from(self.height));
        let scaled = |length: u32| ((f64::from(length) * ratio).round() as u32).clamp(1, side);
        Size::new(scaled(self.width), scaled(self.height))
    }
}

/// A rectangle of a source image, in its pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width and height.
    pub size: Size,
}

impl Region {
    /// The whole of an image of `size`.
    pub fn whole(size: Size) -> Region {
        Region { x: 0, y: 0, size }
    }
}

/// The order rows arrive in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOrder {
    /// Top to bottom: one output row of sums is enough.
    TopDown,
    /// Any order (interlaced images): sums for every output pixel are kept until the end.
    Any,
}

/// Why a resampler cannot be made.
#[derive(Debug, PartialEq, Eq)]
pub enum ResampleError {
    /// The output is empty, larger than the region, or the region is empty.
    BadSize,
    /// One output pixel would average so many source pixels that its sums could overflow.
    BlockTooLarge,
}

/// Output pixels, built from source rows as they are decoded.
pub struct Resampler {
    region: Region,
    out: Size,
    channels: usize,
    /// Source column (from the region's left) where each output column starts; one more entry closes the last.
    column_starts: Vec<u32>,
    /// Source row (from the region's top) where each output row starts; likewise closed.
    row_starts: Vec<u32>,
    state: State,
}

enum State {
    /// Output = region: samples are placed as they come.
    Copy { pixels: Vec<u8> },
    /// Sums for the output row being built; rows above it are final.
    Rolling { pixels: Vec<u8>, sums: Vec<u32>, row: u32 },
    /// Sums for every output pixel, divided at the end.
    Scattered { sums: Vec<u32> },
}

impl Resampler {
    /// A resampler averaging `region` of a source into `out` pixels of `channels` 8-bit samples each.
    pub fn new(region: Region, out: Size, channels: usize, order: RowOrder) -> Result<Resampler, ResampleError> {
        let Region { size: source, .. } = region;
        if out.pixels() == 0 || out.width > source.width || out.height > source.height || channels == 0 {
            return Err(ResampleError::BadSize);
        }
        let column_starts = starts(source.width, out.width);
        let row_starts = starts(source.height, out.height);
        let block = u64::from(source.width.div_ceil(out.width)) * u64::from(source.height.div_ceil(out.height));
        if block.saturating_mul(255) > u64::from(u32::MAX) {
            return Err(ResampleError::BlockTooLarge);
        }
        let pixel_bytes = usize::try_from(out.pixels()).map_err(|_| ResampleError::BadSize)? * channels;
        let state = if out == source {
            State::Copy { pixels: vec![0; pixel_bytes] }
        } else if order == RowOrder::TopDown {
            let sums = vec![0; out.width as usize * channels];
            State::Rolling { pixels: vec![0; pixel_bytes], sums, row: 0 }
        } else {
            State::Scattered { sums: vec![0; pixel_bytes] }
        };
        Ok(Resampler { region, out, channels, column_starts, row_starts, state })
    }

    /// Bytes a resampler for these sizes holds: an upper bound, for memory reservations made before it exists.
    pub fn bytes_needed(region: Region, out: Size, channels: usize, order: RowOrder) -> u64 {
        let channels = channels as u64;
        let pixels = out.pixels() * channels;
        let sums = match order {
            _ if out == region.size => 0,
            RowOrder::TopDown => u64::from(out.width) * channels * 4,
            RowOrder::Any => pixels * 4,
        };
        pixels + sums + (u64::from(out.width) + u64::from(out.height) + 2) * 4
    }

    /// The output size.
    pub fn out(&self) -> Size {
        self.out
    }

    /// Adds one source row: `samples` holds pixels of `channels` samples for source columns `x0`, `x0 + step`,
    /// `x0 + 2·step`, … of source row `y`. With [`RowOrder::TopDown`], `y` never decreases from call to call.
    pub fn add_row(&mut self, y: u32, x0: u32, step: u32, samples: &[u8]) {
        let Some(row) = y.checked_sub(self.region.y).filter(|&row| row < self.region.size.height) else { return };
        let out_row = owner(&self.row_starts, row);
        let channels = self.channels;
        let width = self.out.width as usize;
        let (first, skip) = first_inside(x0, step.max(1), self.region.x);
        let samples = samples.get(skip * channels..).unwrap_or_default();
        let columns = ColumnWalk { starts: &self.column_starts, x: first, step: step.max(1), limit: self.region.size.width };
        match &mut self.state {
            State::Copy { pixels } => {
                let line = &mut pixels[row as usize * width * channels..][..width * channels];
                place(line, columns, samples, channels);
            }
            State::Rolling { pixels, sums, row: current } => {
                if out_row > *current {
                    finish_row(sums, pixels, *current, &self.column_starts, &self.row_starts, channels);
                    *current = out_row;
                }
                if out_row == *current {
                    accumulate(sums, columns, samples, channels);
                }
            }
            State::Scattered { sums } => {
                let line = &mut sums[out_row as usize * width * channels..][..width * channels];
                accumulate(line, columns, samples, channels);
            }
        }
    }

    /// The output pixels, row after row, `channels` samples each.
    pub fn finish(self) -> Vec<u8> {
        let channels = self.channels;
        match self.state {
            State::Copy { pixels } => pixels,
            State::Rolling { mut pixels, mut sums, row } => {
                finish_row(&mut sums, &mut pixels, row, &self.column_starts, &self.row_starts, channels);
                pixels
            }
            State::Scattered { sums } => {
                let width = self.out.width as usize * channels;
                let mut pixels = vec![0; sums.len()];
                for (row, (sums, line)) in sums.chunks_exact(width).zip(pixels.chunks_exact_mut(width)).enumerate() {
                    let rows = span(&self.row_starts, row);
                    divide(sums, line, &self.column_starts, rows, channels);
                }
                pixels
            }
        }
    }
}

/// Where each of `out` output spans starts over `source` inputs: `ceil(o·source/out)`, then `source` to close.
fn starts(source: u32, out: u32) -> Vec<u32> {
    (0..=u64::from(out)).map(|o| (o * u64::from(source)).div_ceil(u64::from(out)) as u32).collect()
}

/// The span (output index) that holds input `index`.
fn owner(starts: &[u32], index: u32) -> u32 {
    (starts.partition_point(|&start| start <= index) - 1) as u32
}

/// How many inputs span `o` covers.
fn span(starts: &[u32], o: usize) -> u32 {
    starts[o + 1] - starts[o]
}

/// The first of `x0`, `x0 + step`, … at or right of `left`, relative to `left`, and how many were skipped.
fn first_inside(x0: u32, step: u32, left: u32) -> (u32, usize) {
    if x0 >= left {
        return (x0 - left, 0);
    }
    let skipped = (left - x0).div_ceil(step);
    (x0 + skipped * step - left, skipped as usize)
}

/// A source column (relative to the region) and the output column holding it.
struct Column {
    source: u32,
    out: u32,
}

/// The columns `x`, `x + step`, … inside the region, with their output columns, found without dividing.
struct ColumnWalk<'a> {
    starts: &'a [u32],
    x: u32,
    step: u32,
    limit: u32,
}

impl Iterator for ColumnWalk<'_> {
    type Item = Column;

    fn next(&mut self) -> Option<Column> {
        if self.x >= self.limit {
            return None;
        }
        let source = self.x;
        let out = owner(self.starts, source);
        self.x = self.x.saturating_add(self.step);
        Some(Column { source, out })
    }
}

/// Copies each delivered pixel to its place in an output row (output = region).
fn place(line: &mut [u8], columns: ColumnWalk<'_>, samples: &[u8], channels: usize) {
    if columns.step == 1 {
        let fit = (columns.limit.saturating_sub(columns.x) as usize).min(samples.len() / channels) * channels;
        if fit == 0 {
            return;
        }
        line[columns.x as usize * channels..][..fit].copy_from_slice(&samples[..fit]);
        return;
    }
    for (column, pixel) in columns.zip(samples.chunks_exact(channels)) {
        line[column.source as usize * channels..][..channels].copy_from_slice(pixel);
    }
}

/// Adds each delivered pixel's samples to its output column's sums.
fn accumulate(sums: &mut [u32], columns: ColumnWalk<'_>, samples: &[u8], channels: usize) {
    if columns.step == 1 {
        return accumulate_contiguous(sums, columns, samples, channels);
    }
    for (column, pixel) in columns.zip(samples.chunks_exact(channels)) {
        let sums = &mut sums[column.out as usize * channels..][..channels];
        for (sum, &sample) in sums.iter_mut().zip(pixel) {
            *sum += u32::from(sample);
        }
    }
}

/// [`accumulate`] for a run of adjacent pixels: each output column sums one slice.
fn accumulate_contiguous(sums: &mut [u32], columns: ColumnWalk<'_>, samples: &[u8], channels: usize) {
    let pixels = samples.len() / channels;
    let end = columns.x.saturating_add(u32::try_from(pixels).unwrap_or(u32::MAX)).min(columns.limit);
    let mut x = columns.x;
    while x < end {
        let out = owner(columns.starts, x) as usize;
        let stop = columns.starts[out + 1].min(end);
        let slice = &samples[(x - columns.x) as usize * channels..(stop - columns.x) as usize * channels];
        let sums = &mut sums[out * channels..][..channels];
        for pixel in slice.chunks_exact(channels) {
            for (sum, &sample) in sums.iter_mut().zip(pixel) {
                *sum += u32::from(sample);
            }
        }
        x = stop;
    }
}

/// Writes output row `row` from its sums and clears them.
fn finish_row(sums: &mut [u32], pixels: &mut [u8], row: u32, columns: &[u32], rows: &[u32], channels: usize) {
    let width = sums.len();
    let line = &mut pixels[row as usize * width..][..width];
    divide(sums, line, columns, span(rows, row as usize), channels);
    sums.fill(0);
}

/// Rounded means: each sum divided by the number of source pixels in its block.
fn divide(sums: &[u32], line: &mut [u8], columns: &[u32], rows: u32, channels: usize) {
    for (o, (sums, pixel)) in sums.chunks_exact(channels).zip(line.chunks_exact_mut(channels)).enumerate() {
        let count = u64::from(span(columns, o)) * u64::from(rows);
        for (value, &sum) in pixel.iter_mut().zip(sums) {
            *value = ((u64::from(sum) + count / 2) / count).min(255) as u8;
        }
    }
}

#[cfg(test)]
#[path = "resample_tests.rs"]
mod tests;
