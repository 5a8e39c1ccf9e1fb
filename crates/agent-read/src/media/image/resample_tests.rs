use super::*;
use crate::media::image::tests::noise;
use image::{DynamicImage, GenericImageView, ImageBuffer, Luma, Rgb, Rgba};

/// Feeds every row of `pixels` (`size`, `channels` a pixel) top to bottom; returns the output.
fn streamed(pixels: &[u8], size: Size, out: Size, channels: usize, order: RowOrder) -> Vec<u8> {
    let mut resampler = Resampler::new(Region::whole(size), out, channels, order).unwrap();
    let stride = size.width as usize * channels;
    for (y, row) in pixels.chunks_exact(stride).enumerate() {
        resampler.add_row(y as u32, 0, 1, row);
    }
    resampler.finish()
}

/// `image`'s own `thumbnail` of the same pixels.
fn thumbnail(pixels: &[u8], size: Size, out: Size, channels: usize) -> Vec<u8> {
    let (w, h, v) = (size.width, size.height, pixels.to_vec());
    let image = match channels {
        1 => DynamicImage::ImageLuma8(ImageBuffer::<Luma<u8>, _>::from_raw(w, h, v).unwrap()),
        2 => DynamicImage::ImageLumaA8(ImageBuffer::from_raw(w, h, v).unwrap()),
        3 => DynamicImage::ImageRgb8(ImageBuffer::<Rgb<u8>, _>::from_raw(w, h, v).unwrap()),
        _ => DynamicImage::ImageRgba8(ImageBuffer::<Rgba<u8>, _>::from_raw(w, h, v).unwrap()),
    };
    let small = image.thumbnail_exact(out.width, out.height);
    assert_eq!(small.dimensions(), (out.width, out.height));
    small.into_bytes()
}

#[test]
fn fit_within_gives_the_dimensions_thumbnail_gives() {
    for (w, h, side) in [(3000, 1500, 2000), (120, 80, 64), (1100, 1000, 333), (48, 32, 16), (7, 20_000, 16)] {
        let image = DynamicImage::new_luma8(w, h);
        let expected = if w.max(h) <= side { (w, h) } else { image.thumbnail(side, side).dimensions() };
        let fitted = Size::new(w, h).fit_within(side);
        assert_eq!((fitted.width, fitted.height), expected, "{w}×{h} within {side}");
    }
    assert_eq!(Size::new(100, 50).fit_within(100), Size::new(100, 50), "a size that fits is kept");
}

#[test]
fn streaming_equals_thumbnail_where_its_float_spans_are_exact() {
    // Ratios exact in f32 (1.5, 1.875, 2.75, 4, 5.5): `thumbnail`'s spans are the exact ones.
    for (w, h, ow, oh) in [(3000, 150, 2000, 100), (120, 80, 64, 42), (11, 22, 4, 8), (64, 48, 16, 12), (55, 11, 10, 2)]
    {
        for channels in 1..=4 {
            let (size, out) = (Size::new(w, h), Size::new(ow, oh));
            let pixels = noise(u64::from(w * 31 + h) + channels as u64, (w * h) as usize * channels);
            let expected = thumbnail(&pixels, size, out, channels);
            assert_eq!(
                streamed(&pixels, size, out, channels, RowOrder::TopDown),
                expected,
                "{w}×{h}→{ow}×{oh}×{channels}"
            );
            assert_eq!(streamed(&pixels, size, out, channels, RowOrder::Any), expected, "{w}×{h}→{ow}×{oh}×{channels}");
        }
    }
}

#[test]
fn streaming_stays_within_rounding_of_thumbnail_for_any_ratio() {
    for (w, h, side) in [(1000, 700, 333), (999, 1001, 257), (640, 1, 17), (37, 1999, 100)] {
        let size = Size::new(w, h);
        let out = size.fit_within(side);
        // A smooth gradient: a block that differs from `thumbnail`'s by one edge pixel moves the mean by little.
        let pixels: Vec<u8> =
            (0..h).flat_map(|y| (0..w).map(move |x| ((x * 255 / w + y * 255 / h) / 2) as u8)).collect();
        let ours = streamed(&pixels, size, out, 1, RowOrder::TopDown);
        let theirs = thumbnail(&pixels, size, out, 1);
        let worst = ours.iter().zip(&theirs).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
        assert!(worst <= 2, "{w}×{h}→{out:?}: off by {worst}");
    }
}

#[test]
fn rows_in_any_order_give_the_same_pixels() {
    let (size, out, channels) = (Size::new(97, 61), Size::new(40, 25), 3);
    let pixels = noise(5, 97 * 61 * 3);
    let expected = streamed(&pixels, size, out, channels, RowOrder::TopDown);
    // Adam7's passes deliver rows (and every other pixel of them) out of order.
    let mut resampler = Resampler::new(Region::whole(size), out, channels, RowOrder::Any).unwrap();
    let passes = [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)];
    for (x0, dx, y0, dy) in passes {
        for y in (y0..61).step_by(dy) {
            let row: Vec<u8> = (x0..97).step_by(dx).flat_map(|x| pixels[(y * 97 + x) * 3..][..3].to_vec()).collect();
            resampler.add_row(y as u32, x0 as u32, dx as u32, &row);
        }
    }
    assert_eq!(resampler.finish(), expected);
}

#[test]
fn a_region_is_the_thumbnail_of_the_crop() {
    let channels = 2;
    let pixels = noise(9, 90 * 70 * 2);
    let region = Region { x: 10, y: 20, size: Size::new(60, 40) };
    let out = Size::new(20, 16);
    let crop: Vec<u8> = (20..60).flat_map(|y| pixels[(y * 90 + 10) * 2..][..60 * 2].to_vec()).collect();
    let expected = thumbnail(&crop, region.size, out, channels);
    for order in [RowOrder::TopDown, RowOrder::Any] {
        let mut resampler = Resampler::new(region, out, channels, order).unwrap();
        for (y, row) in pixels.chunks_exact(90 * 2).enumerate() {
            resampler.add_row(y as u32, 0, 1, row);
        }
        assert_eq!(resampler.finish(), expected, "{order:?}");
    }
    // Sparse rows starting left of the region skip to its first column.
    let mut resampler = Resampler::new(region, region.size, channels, RowOrder::Any).unwrap();
    for y in 0..70u32 {
        let row: Vec<u8> = (1..90).step_by(4).flat_map(|x| pixels[(y as usize * 90 + x) * 2..][..2].to_vec()).collect();
        resampler.add_row(y, 1, 4, &row);
    }
    let copied = resampler.finish();
    for y in 0..40usize {
        for x in 0..60usize {
            let sample = &copied[(y * 60 + x) * 2..][..2];
            let expected =
                if (x + 10 - 1) % 4 == 0 { &pixels[((y + 20) * 90 + x + 10) * 2..][..2] } else { &[0, 0][..] };
            assert_eq!(sample, expected, "({x}, {y})");
        }
    }
}

#[test]
fn undelivered_rows_and_columns_count_as_transparent_black() {
    // A 4×4 frame at (2, 2) on an 8×8 screen, averaged to 2×2: only the bottom-right block has it.
    let mut resampler = Resampler::new(Region::whole(Size::new(8, 8)), Size::new(2, 2), 1, RowOrder::TopDown).unwrap();
    for y in 2..6 {
        resampler.add_row(y, 2, 1, &[200; 4]);
    }
    // Blocks are 4×4 = 16 pixels: top-left holds 2×2 of the frame, the others 2×2, 2×2 and 2×2 too.
    assert_eq!(resampler.finish(), vec![50, 50, 50, 50]);
}

#[test]
fn a_same_size_output_copies_and_bad_sizes_are_refused() {
    let size = Size::new(5, 3);
    let pixels = noise(3, 15 * 4);
    assert_eq!(streamed(&pixels, size, size, 4, RowOrder::TopDown), pixels);
    let whole = Region::whole(size);
    assert_eq!(Resampler::new(whole, Size::new(6, 3), 4, RowOrder::TopDown).err(), Some(ResampleError::BadSize));
    assert_eq!(Resampler::new(whole, Size::new(0, 3), 4, RowOrder::TopDown).err(), Some(ResampleError::BadSize));
    let huge = Region::whole(Size::new(1 << 20, 1 << 12));
    assert_eq!(Resampler::new(huge, Size::new(1, 1), 1, RowOrder::Any).err(), Some(ResampleError::BlockTooLarge));
}

#[test]
fn bytes_needed_bounds_what_a_resampler_holds() {
    let region = Region::whole(Size::new(11_000, 11_000));
    let out = Size::new(2000, 2000);
    let rolling = Resampler::bytes_needed(region, out, 3, RowOrder::TopDown);
    assert!(rolling < 12_200_000, "one row of sums beside the output: {rolling}");
    let scattered = Resampler::bytes_needed(region, out, 3, RowOrder::Any);
    assert!(scattered > 60_000_000, "sums for every output pixel: {scattered}");
    assert_eq!(Resampler::bytes_needed(Region::whole(out), out, 3, RowOrder::Any) / 1000, 12_016);
}
