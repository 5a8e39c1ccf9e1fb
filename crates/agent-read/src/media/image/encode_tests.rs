//! The encoding chosen for each kind of picture, and that the lossless ones are lossless.

use super::*;
use image::{GrayImage, Luma, Rgb, RgbImage, Rgba, RgbaImage};

/// Decodes an encoding back to RGBA pixels.
fn decoded(encoded: &Encoded) -> RgbaImage {
    image::load_from_memory(&encoded.bytes).unwrap().to_rgba8()
}

/// Diagonal bands of 300 colours, 20 pixels wide, with averaged pixels on their edges (as a downscale makes them).
fn bands(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let band = (x + y) / 20 % 300;
        let colour = |band: u32| [(band * 7 % 256) as u8, (band * 13 % 256) as u8, (band * 29 % 256) as u8];
        if (x + y) % 20 == 0 {
            let (a, b) = (colour(band), colour((band + 299) % 300));
            Rgb([0, 1, 2].map(|i| ((u16::from(a[i]) + u16::from(b[i])) / 2) as u8))
        } else {
            Rgb(colour(band))
        }
    }))
}

/// Smooth gradients with grain on every pixel, like a photograph.
fn photo(width: u32, height: u32) -> DynamicImage {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let grain = (seed % 24) as u32;
        Rgb([(x * 200 / width + grain) as u8, (y * 180 / height + grain) as u8, ((x + y) % 160 + grain) as u8])
    }))
}

#[test]
fn few_colours_go_out_as_a_palette_png_pixel_for_pixel() {
    let image = DynamicImage::ImageRgb8(RgbImage::from_fn(600, 400, |x, y| {
        [Rgb([255, 255, 255]), Rgb([20, 20, 20]), Rgb([200, 30, 30])][((x / 7 + y / 5) % 3) as usize]
    }));
    let encoded = encode(&image, u64::MAX).unwrap();
    assert_eq!((encoded.mime, encoded.choice), ("image/png", EncodingChoice::FewColours(3)));
    assert_eq!(decoded(&encoded), image.to_rgba8(), "lossless");
    assert!(encoded.bytes.len() < 20_000, "a palette: {} bytes", encoded.bytes.len());
}

#[test]
fn translucent_colours_keep_their_alpha_in_the_palette() {
    let image = DynamicImage::ImageRgba8(RgbaImage::from_fn(64, 64, |x, y| {
        if (x + y) % 2 == 0 { Rgba([10, 200, 30, 128]) } else { Rgba([0, 0, 0, 0]) }
    }));
    let encoded = encode(&image, u64::MAX).unwrap();
    assert_eq!(encoded.choice, EncodingChoice::FewColours(2));
    assert_eq!(decoded(&encoded), image.to_rgba8());
}

#[test]
fn flat_areas_with_many_colours_stay_lossless() {
    let image = bands(2000, 1500);
    let encoded = encode(&image, u64::MAX).unwrap();
    assert_eq!((encoded.mime, encoded.choice), ("image/png", EncodingChoice::FlatAreas));
    assert_eq!(decoded(&encoded), image.to_rgba8(), "lossless");
    assert!(encoded.bytes.len() < 400_000, "well compressed: {} bytes", encoded.bytes.len());
}

#[test]
fn a_photograph_goes_out_as_jpeg_when_it_is_clearly_smaller() {
    let encoded = encode(&photo(800, 600), u64::MAX).unwrap();
    assert_eq!(encoded.mime, "image/jpeg");
    let EncodingChoice::Photographic { times } = encoded.choice else { panic!("{:?}", encoded.choice) };
    assert!(times >= CLEARLY_SMALLER, "{times}");
}

#[test]
fn a_photograph_with_transparency_stays_png() {
    let mut image = photo(300, 200).to_rgba8();
    image.get_pixel_mut(5, 5).0[3] = 100;
    let image = DynamicImage::ImageRgba8(image);
    let encoded = encode(&image, u64::MAX).unwrap();
    assert_eq!((encoded.mime, encoded.choice), ("image/png", EncodingChoice::Transparency));
    assert_eq!(decoded(&encoded), image.to_rgba8());
}

#[test]
fn grey_text_on_white_is_lossless_grey() {
    let page = DynamicImage::ImageLuma8(GrayImage::from_fn(1000, 1400, |x, y| {
        let ink = y % 24 < 12 && (x / 6 + y / 3) % 5 != 0;
        Luma([if ink { 20 } else { 255 }])
    }));
    let encoded = encode(&page, u64::MAX).unwrap();
    assert_eq!((encoded.mime, encoded.choice), ("image/png", EncodingChoice::FlatAreas));
    assert_eq!(image::load_from_memory(&encoded.bytes).unwrap().to_luma8(), page.to_luma8());
}

#[test]
fn a_png_over_the_byte_limit_becomes_jpeg_when_opaque() {
    let image = bands(1000, 800);
    let png = encode(&image, u64::MAX).unwrap();
    let limit = png.bytes.len() as u64 - 1;
    let encoded = encode(&image, limit).unwrap();
    assert_eq!((encoded.mime, encoded.choice), ("image/jpeg", EncodingChoice::PngOverLimit { limit }));
}

#[test]
fn the_survey_counts_colours_up_to_the_palette_and_measures_flatness() {
    let image = DynamicImage::ImageRgb8(RgbImage::from_fn(300, 10, |x, _| Rgb([x as u8, 0, (x / 256) as u8])));
    let survey = survey(&Pixels::of(&image));
    assert_eq!((survey.palette.is_none(), survey.colours, survey.translucent), (true, 257, false));
    assert_eq!(survey.flat_share, 0.0);
    let flat = DynamicImage::ImageRgb8(RgbImage::from_pixel(10, 10, Rgb([1, 2, 3])));
    let survey = survey_of(&flat);
    assert_eq!((survey.colours, survey.flat_share), (1, 0.9));
}

fn survey_of(image: &DynamicImage) -> Survey {
    survey(&Pixels::of(image))
}
