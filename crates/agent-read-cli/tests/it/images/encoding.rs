//! The encoding an image goes out in, chosen by its content: screenshots, diagrams and text stay lossless PNG (a
//! palette when they hold few colours), photographs go out as JPEG when it is clearly smaller, and an image within
//! the limits is its own bytes. Each answer says which and why.

use super::*;

/// Asserts the attachment is `mime` and says why in `meta.encoding`; returns its decoded pixels.
fn sent_as(v: &Value, mime: &str, why: &str) -> DynamicImage {
    let a = attachment(v);
    assert_eq!(a["mime"], mime, "{}", shown(v));
    let encoding = v["meta"]["encoding"].as_str().unwrap_or_else(|| panic!("meta.encoding: {}", shown(v)));
    assert!(encoding.starts_with(why), "{encoding}");
    assert!(output(v).contains(&format!("({encoding}; scale ")), "the description says it too: {}", output(v));
    image::load_from_memory(&data(a)).expect("the attachment decodes")
}

/// A screen: a dark side bar and a light editor, lines of "text" (strokes of a few anti-aliased shades in several
/// colours), and a small photo-like icon: thousands of colours, mostly in flat areas.
fn screenshot(width: u32, height: u32) -> DynamicImage {
    let mut noise = Noise(5);
    let inks = [[198, 120, 221], [97, 175, 239], [152, 195, 121], [229, 192, 123], [40, 44, 52]];
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let n = noise.next();
        if x < 80 && y < 80 {
            return Rgb([n, n / 2 + x as u8, 255 - n]);
        }
        let background = if x < width / 5 { [33, 37, 43] } else { [250, 250, 252] };
        let (line, column) = (y / 20, x / 9);
        let in_glyph = y % 20 >= 5 && y % 20 < 15 && (column * 7 + line * 3) % 11 > 2 && (x % 9) < 6;
        if !in_glyph {
            return Rgb(background);
        }
        let ink = inks[((column / 6 + line) % 5) as usize];
        // Anti-aliased edges: the glyph's outer columns are blended halfway into the background.
        let edge = x % 9 == 0 || x % 9 == 5;
        Rgb([0, 1, 2].map(|i| if edge { ((u16::from(ink[i]) + u16::from(background[i])) / 2) as u8 } else { ink[i] }))
    }))
}

/// A diagram: boxes and lines in six colours, aligned on even pixels so that halving it makes no new colour.
fn diagram(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let (bx, by) = (x / 200, y / 160);
        let inside = x % 200 >= 40 && x % 200 < 160 && y % 160 >= 40 && y % 160 < 120;
        let border = inside && (x % 200 < 44 || x % 200 >= 156 || y % 160 < 44 || y % 160 >= 116);
        let wire = y % 160 == 80 || y % 160 == 81;
        match (border, inside, wire) {
            (true, _, _) => Rgb([30, 30, 30]),
            (_, true, _) => {
                [Rgb([220, 235, 255]), Rgb([255, 230, 200]), Rgb([210, 250, 210])][((bx + by) % 3) as usize]
            }
            (_, _, true) => Rgb([120, 120, 120]),
            _ => Rgb([255, 255, 255]),
        }
    }))
}

/// A scanned page of text: black strokes on white, grey.
fn text_page(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageLuma8(image::GrayImage::from_fn(width, height, |x, y| {
        let stroke = y % 24 >= 8 && y % 24 < 18 && (x / 5 + y / 24 * 3) % 7 > 1 && x % 5 < 3;
        let edge = x % 5 == 2;
        image::Luma([if !stroke {
            255
        } else if edge {
            128
        } else {
            10
        }])
    }))
}

#[test]
fn a_screenshot_stays_lossless_png() {
    let ws = Ws::new();
    let picture = screenshot(1600, 1000);
    ws.file("screen.png", png(&picture));
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 800\n");
    let (v, _) = ws.json_with("screen.png", Some(&config));
    let sent = sent_as(&v, "image/png", "lossless: flat areas, as in screenshots, diagrams and text");
    assert_eq!((sent.width(), sent.height()), (800, 500));
}

#[test]
fn a_diagram_of_few_colours_goes_out_as_a_palette_and_loses_nothing() {
    let ws = Ws::new();
    let picture = diagram(1600, 960);
    ws.file("diagram.png", png(&picture));
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 800\n");
    let (v, _) = ws.json_with("diagram.png", Some(&config));
    let sent = sent_as(&v, "image/png", "lossless: 6 colours");
    // Halved exactly, each 2 × 2 block is one colour: the attachment is the diagram, pixel for pixel.
    let halved = picture.resize_exact(800, 480, image::imageops::FilterType::Nearest);
    assert_eq!(sent.to_rgb8(), halved.to_rgb8());
}

#[test]
fn a_photograph_goes_out_as_jpeg_clearly_smaller_than_png() {
    let ws = Ws::new();
    ws.file("photo.png", png(&faint_noise(1200, 800, 3)));
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 600\n");
    let (v, _) = ws.json_with("photo.png", Some(&config));
    sent_as(&v, "image/jpeg", "photographic: ");
    let times: f64 = v["meta"]["encoding"].as_str().unwrap()["photographic: ".len()..]
        .split('×')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("how many times smaller");
    assert!(times >= 2.0, "clearly smaller: {times}");
}

#[test]
fn a_page_of_text_stays_lossless_grey() {
    let ws = Ws::new();
    let page = text_page(1240, 1754);
    ws.file("page.png", png(&page));
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 877\n");
    let (v, _) = ws.json_with("page.png", Some(&config));
    let sent = sent_as(&v, "image/png", "lossless: flat areas");
    assert!(matches!(sent, DynamicImage::ImageLuma8(_)), "grey stays grey: {:?}", sent.color());
}

#[test]
fn bands_of_a_few_hundred_colours_are_a_small_png_not_a_large_jpeg() {
    // Diagonal bands of a few hundred colours: a filtered PNG keeps them exact and small, where a JPEG would be large.
    let ws = Ws::new();
    let bands = DynamicImage::ImageRgb8(RgbImage::from_fn(2400, 1800, |x, y| {
        let band = (x + y) / 40 % 300;
        Rgb([(band * 7 % 256) as u8, (band * 13 % 256) as u8, (band * 29 % 256) as u8])
    }));
    ws.file("bands.png", png(&bands));
    let v = ws.json("bands.png");
    sent_as(&v, "image/png", "lossless: ");
    assert!(attachment(&v)["size_bytes"].as_u64().unwrap() < 200_000, "{}", shown(&v));
}

#[test]
fn an_image_within_the_limits_is_its_own_bytes_and_says_so() {
    let ws = Ws::new();
    let bytes = jpeg(&faint_noise(300, 200, 4));
    ws.file("small.jpg", &bytes);
    let v = ws.json("small.jpg");
    assert_eq!(data(attachment(&v)), bytes);
    assert_eq!(v["meta"]["encoding"], "the file's own bytes");
    let tokens = &v["meta"]["estimated_tokens"];
    // 300 × 200: 80 tokens for Claude (60,000 ÷ 750), one 512 tile for OpenAI (255), one 768 tile for Gemini.
    assert_eq!(
        (tokens["anthropic"].as_u64(), tokens["openai"].as_u64(), tokens["gemini"].as_u64()),
        (Some(80), Some(255), Some(258))
    );
}
