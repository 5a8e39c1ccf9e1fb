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

    /// One past its last row.
    pub fn bottom(&self) -> u32 {
        self.y.saturating_add(self.size.height)
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
    /// The output is empty or larger than the region, or pixels are not of 1 to 4 samples.
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
    /// For the output row being built, each source column's sums down the rows seen so far; rows above it are
    /// final. Summing down first keeps the per-row work one add a sample; across is summed once an output row.
    Rolling { pixels: Vec<u8>, columns: Vec<u32>, row: u32 },
    /// Sums for every output pixel, divided at the end.
    Scattered { sums: Vec<u32> },
}

impl Resampler {
    /// A resampler averaging `region` of a source into `out` pixels of `channels` 8-bit samples each.
    pub fn new(region: Region, out: Size, channels: usize, order: RowOrder) -> Result<Resampler, ResampleError> {
        let Region { size: source, .. } = region;
        if out.pixels() == 0 || out.width > source.width || out.height > source.height || !(1..=4).contains(&channels) {
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
            let columns = vec![0; source.width as usize * channels];
            State::Rolling { pixels: vec![0; pixel_bytes], columns, row: 0 }
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
            RowOrder::TopDown => u64::from(region.size.width) * channels * 4,
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
        let width = self.out.width as usize * channels;
        let step = step.max(1);
        let (first, skip) = first_inside(x0, step, self.region.x);
        let samples = samples.get(skip * channels..).unwrap_or_default();
        let run = Run { x: first, step, limit: self.region.size.width, channels };
        match &mut self.state {
            State::Copy { pixels } => place(&mut pixels[row as usize * width..][..width], run, samples),
            State::Rolling { pixels, columns, row: current } => {
                if out_row > *current {
                    finish_row(columns, pixels, *current, &self.column_starts, &self.row_starts, channels);
                    *current = out_row;
                }
                if out_row == *current {
                    add_down(columns, run, samples);
                }
            }
            State::Scattered { sums } => {
                let line = &mut sums[out_row as usize * width..][..width];
                accumulate(line, &self.column_starts, run, samples);
            }
        }
    }

    /// The output pixels, row after row, `channels` samples each.
    pub fn finish(self) -> Vec<u8> {
        let channels = self.channels;
        match self.state {
            State::Copy { pixels } => pixels,
            State::Rolling { mut pixels, mut columns, row } => {
                finish_row(&mut columns, &mut pixels, row, &self.column_starts, &self.row_starts, channels);
                pixels
            }
            State::Scattered { sums } => {
                let width = self.out.width as usize * channels;
                let mut pixels = vec![0; sums.len()];
                for (row, (sums, line)) in sums.chunks_exact(width).zip(pixels.chunks_exact_mut(width)).enumerate() {
                    let rows = span(&self.row_starts, row);
                    for (o, (sums, pixel)) in
                        sums.chunks_exact(channels).zip(line.chunks_exact_mut(channels)).enumerate()
                    {
                        let count = u64::from(span(&self.column_starts, o)) * u64::from(rows);
                        for (value, &sum) in pixel.iter_mut().zip(sums) {
                            *value = mean(u64::from(sum), count);
                        }
                    }
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

/// The source columns `x`, `x + step`, … (relative to the region, below `limit`) a row's samples belong to.
#[derive(Clone, Copy)]
struct Run {
    x: u32,
    step: u32,
    limit: u32,
    channels: usize,
}

impl Run {
    /// How many of the row's pixels fall inside the region.
    fn count(self, samples: &[u8]) -> usize {
        let inside = self.limit.saturating_sub(self.x).div_ceil(self.step) as usize;
        inside.min(samples.len() / self.channels)
    }
}

/// Copies a row's pixels to their columns of `line` (one sample per column and channel).
fn place(line: &mut [u8], run: Run, samples: &[u8]) {
    let (count, channels) = (run.count(samples), run.channels);
    if count == 0 {
        return;
    }
    let start = run.x as usize * channels;
    if run.step == 1 {
        line[start..start + count * channels].copy_from_slice(&samples[..count * channels]);
        return;
    }
    let stride = run.step as usize * channels;
    for (index, pixel) in samples.chunks_exact(channels).take(count).enumerate() {
        line[start + index * stride..][..channels].copy_from_slice(pixel);
    }
}

/// Adds a row's samples to the sums of their columns (one sum per column and channel).
fn add_down(columns: &mut [u32], run: Run, samples: &[u8]) {
    let (count, channels) = (run.count(samples), run.channels);
    if count == 0 {
        return;
    }
    let start = run.x as usize * channels;
    if run.step == 1 {
        // Every decoded sample passes here once: plain indexing keeps it cheap in unoptimised (test) builds too,
        // where iterator adapters are not inlined; optimised, it vectorises the same.
        let (columns, samples) = (&mut columns[start..start + count * channels], &samples[..count * channels]);
        let mut index = 0;
        while index < samples.len() {
            columns[index] += u32::from(samples[index]);
            index += 1;
        }
        return;
    }
    let stride = run.step as usize * channels;
    for (index, pixel) in samples.chunks_exact(channels).take(count).enumerate() {
        for (sum, &sample) in columns[start + index * stride..][..channels].iter_mut().zip(pixel) {
            *sum += u32::from(sample);
        }
    }
}

/// Adds each of a row's pixels to the sums of its output column, walking the output columns alongside.
fn accumulate(sums: &mut [u32], column_starts: &[u32], run: Run, samples: &[u8]) {
    let (count, channels) = (run.count(samples), run.channels);
    if count == 0 {
        return;
    }
    let mut out = owner(column_starts, run.x) as usize;
    for (index, pixel) in samples.chunks_exact(channels).take(count).enumerate() {
        let x = run.x + index as u32 * run.step;
        while x >= column_starts[out + 1] {
            out += 1;
        }
        for (sum, &sample) in sums[out * channels..][..channels].iter_mut().zip(pixel) {
            *sum += u32::from(sample);
        }
    }
}

/// Writes output row `row` from its columns' sums, and clears them for the next.
fn finish_row(columns: &mut [u32], pixels: &mut [u8], row: u32, column_starts: &[u32], rows: &[u32], channels: usize) {
    let width = (column_starts.len() - 1) * channels;
    let line = &mut pixels[row as usize * width..][..width];
    let rows = u64::from(span(rows, row as usize));
    for (o, pixel) in line.chunks_exact_mut(channels).enumerate() {
        let (first, end) = (column_starts[o] as usize * channels, column_starts[o + 1] as usize * channels);
        let count = (end - first) as u64 / channels as u64 * rows;
        // Indexed for the same reason as in `add_down`: this reads every column sum once an output row.
        let mut sums = [0u64; 4];
        let mut index = first;
        while index < end {
            let mut channel = 0;
            while channel < channels {
                sums[channel] += u64::from(columns[index + channel]);
                channel += 1;
            }
            index += channels;
        }
        for (value, &sum) in pixel.iter_mut().zip(&sums) {
            *value = mean(sum, count);
        }
    }
    columns.fill(0);
}

/// The rounded mean of `count` samples adding up to `sum`.
fn mean(sum: u64, count: u64) -> u8 {
    ((sum + count / 2) / count).min(255) as u8
}

#[cfg(test)]
#[path = "resample_tests.rs"]
mod tests;
