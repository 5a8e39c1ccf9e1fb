//! A region decoded alone against the reference: `image`'s full decode, cropped, then averaged down with its
//! `thumbnail` — for PNG (plain and interlaced), JPEG (at full and at reduced scale), GIF and WebP.

use super::decode::{self, Input};
use super::resample::{Region, Size};
use super::tests::{PngExtra, adam7_png, budget, difference, gif_file, image_jpeg, picture, png_file};
use crate::classify::ImageType;
use image::{DynamicImage, GenericImageView, ImageFormat};
use std::io::Cursor;

/// Our decode of `area` of `bytes`, averaged down to at most `side` pixels.
fn region(bytes: &[u8], kind: ImageType, area: Region, side: u32) -> DynamicImage {
    let decoder = decode::open(kind, Input::Memory(Cursor::new(bytes)), bytes.len() as u64).unwrap();
    decoder.decode(area, area.size.fit_within(side), &budget(120.0)).unwrap()
}

/// The reference: the full decode cropped to `area`, then `thumbnail` to the same size.
fn reference(bytes: &[u8], area: Region, side: u32) -> DynamicImage {
    let crop = image::load_from_memory(bytes).unwrap().crop_imm(area.x, area.y, area.size.width, area.size.height);
    let out = area.size.fit_within(side);
    if (out.width, out.height) == crop.dimensions() { crop } else { crop.thumbnail_exact(out.width, out.height) }
}

fn assert_region_matches(name: &str, bytes: &[u8], kind: ImageType, area: Region, side: u32, worst: u8, mean: f64) {
    let ours = region(bytes, kind, area, side);
    let (max, average) = difference(&ours, &reference(bytes, area, side));
    assert!(max <= worst && average <= mean, "{name} {area:?} at {side}: max {max}, mean {average:.3}");
}

fn area(x: u32, y: u32, width: u32, height: u32) -> Region {
    Region { x, y, size: Size::new(width, height) }
}

#[test]
fn a_png_region_matches_the_crop_of_a_full_decode() {
    let size = Size::new(403, 301);
    let rgb = picture(size.width, size.height, 3, 21);
    let plain = png_file(size, png::ColorType::Rgb, png::BitDepth::Eight, &rgb, PngExtra::default());
    let interlaced = adam7_png(size, 2, 8, 3, &rgb);
    for (name, bytes) in [("plain", &plain), ("interlaced", &interlaced)] {
        for (region, side) in [
            (area(37, 11, 200, 150), 200),
            (area(37, 11, 200, 150), 64),
            (area(0, 300, 403, 1), 403),
            (area(402, 0, 1, 301), 9),
        ] {
            assert_region_matches(name, bytes, ImageType::Png, region, side, 0, 0.0);
        }
    }
}

#[test]
fn a_jpeg_region_matches_the_crop_of_a_full_decode_at_full_and_reduced_scale() {
    let image = DynamicImage::ImageRgb8(image::RgbImage::from_raw(640, 480, picture(640, 480, 3, 8)).unwrap());
    let bytes = image_jpeg(&image);
    // At full resolution; then 320 × 240 down to 80 (decoded at 1/4) and to 150 (at 1/2): the region's edges fall
    // inside 8 × 8 blocks, so a reduced-scale decode rounds them outward by a pixel or so.
    assert_region_matches("jpeg", &bytes, ImageType::Jpeg, area(100, 60, 200, 120), 200, 16, 1.5);
    assert_region_matches("jpeg 1/4", &bytes, ImageType::Jpeg, area(160, 120, 320, 240), 80, 24, 3.0);
    assert_region_matches("jpeg 1/2", &bytes, ImageType::Jpeg, area(163, 121, 320, 240), 150, 24, 3.0);
}

#[test]
fn gif_and_webp_regions_match_the_crop_of_a_full_decode() {
    for interlaced in [false, true] {
        let gif = gif_file(interlaced);
        // The frame covers (30, 20) to (90, 60) of a 120 × 90 screen: a region across its edge and one outside it.
        for region in [area(20, 10, 50, 40), area(95, 65, 20, 20)] {
            assert_region_matches("gif", &gif, ImageType::Gif, region, 120, 0, 0.0);
        }
    }
    let image = DynamicImage::ImageRgba8(image::RgbaImage::from_raw(200, 100, picture(200, 100, 4, 6)).unwrap());
    let mut webp = Cursor::new(Vec::new());
    image.write_to(&mut webp, ImageFormat::WebP).unwrap();
    for side in [30, 200] {
        assert_region_matches("webp", webp.get_ref(), ImageType::WebP, area(50, 25, 120, 60), side, 0, 0.0);
    }
}
