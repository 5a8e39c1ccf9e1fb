//! `region`: a rectangle of an image in its own pixels, returned at full resolution (downscaled only when the region
//! itself is over the limits), from a flag, a JSON request or the footer's zoom call; refused, naming the image's
//! size, when it is empty or reaches past the image.

use super::*;
use crate::common::Bin;

/// A picture of flat areas and thousands of colours (lossless PNG whatever its size): every pixel of a tile its
/// own colour, tiles of 8 × 8 pixels.
fn tiles(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let (tx, ty) = (x / 8, y / 8);
        Rgb([(tx * 37 % 256) as u8, (ty * 53 % 256) as u8, ((tx + ty) * 11 % 256) as u8])
    }))
}

/// `agent-read PATH --region EDGES --json`: must exit 0.
fn region_json(ws: &Ws, path: &str, edges: &str) -> Value {
    let out = ws.cmd().arg(path).arg("--region").arg(edges).arg("--json").output().expect("run");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

#[test]
fn a_region_comes_back_at_full_resolution_pixel_for_pixel() {
    let ws = Ws::new();
    let picture = tiles(3000, 2000);
    ws.file("screen.png", png(&picture));
    let v = region_json(&ws, "screen.png", "1000,500,1600,900");
    let a = attachment(&v);
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(600), Some(400)), "{}", shown(&v));
    let sent = image::load_from_memory(&data(a)).expect("the attachment decodes").to_rgb8();
    let original = picture.crop_imm(1000, 500, 600, 400).to_rgb8();
    assert!(sent == original, "the region is the original's pixels, each one");
    let meta = &v["meta"];
    assert_eq!(meta["region"], json!([1000, 500, 1600, 900]));
    assert!(meta.get("scale").is_none(), "full resolution: no scale: {meta}");
    assert_eq!((meta["original_width"].as_u64(), meta["original_height"].as_u64()), (Some(3000), Some(2000)));
    let out = output(&v);
    assert!(
        out.starts_with("PNG image · 3000×2000 · ")
            && out.contains(" · region [1000,500,1600,900] at full resolution: 600×400, PNG "),
        "{out}"
    );
    assert!(out.contains("a point (x, y) in it is (1000 + x, 500 + y) in the original)"), "{out}");
    // The same request as JSON on standard input gives the same answer.
    let mut from_stdin = ws.request_value(&json!({"path": "screen.png", "region": [1000, 500, 1600, 900]}));
    let mut from_flag = v.clone();
    from_stdin["meta"].as_object_mut().unwrap().remove("mtime");
    from_flag["meta"].as_object_mut().unwrap().remove("mtime");
    assert_eq!(from_stdin, from_flag);
}

#[test]
fn a_region_of_a_jpeg_gif_and_webp_is_cut_from_the_decoded_image() {
    let ws = Ws::new();
    let picture = tiles(640, 480);
    let gif = encode(&DynamicImage::ImageRgba8(picture.to_rgba8()), ImageFormat::Gif);
    ws.file("anim.gif", &gif).file("pic.webp", encode(&picture, ImageFormat::WebP)).file("photo.jpg", jpeg(&picture));
    for name in ["anim.gif", "pic.webp", "photo.jpg"] {
        let v = region_json(&ws, name, "100,40,300,240");
        let a = attachment(&v);
        assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(200), Some(200)), "{name}: {}", shown(&v));
        let sent = image::load_from_memory(&data(a)).expect("decodes").to_rgb8();
        let file = std::fs::read(ws.root.join(name)).unwrap();
        let whole = image::load_from_memory(&file).expect("the fixture decodes").to_rgb8();
        let expected = image::imageops::crop_imm(&whole, 100, 40, 200, 200).to_image();
        let differences: Vec<u8> = sent.as_raw().iter().zip(expected.as_raw()).map(|(a, b)| a.abs_diff(*b)).collect();
        let mean = differences.iter().map(|&d| f64::from(d)).sum::<f64>() / differences.len() as f64;
        if name.ends_with(".jpg") {
            // Decoded by another decoder, and perhaps sent as JPEG again: close, not exact.
            assert!(mean < 4.0, "{name}: samples differ by {mean:.2} on average");
        } else {
            assert_eq!(differences.iter().max(), Some(&0), "{name}: lossless, each pixel");
        }
    }
}

#[test]
fn a_downscaled_image_gives_the_zoom_call_and_that_call_shows_full_resolution() {
    let ws = Ws::new();
    ws.file("screen.png", png(&tiles(2400, 1600)));
    let v = ws.json("screen.png");
    let out = output(&v);
    assert!(out.contains("downscaled to 2000×1333"), "{out}");
    let zoom = " · zoom: region=[0,0,1200,800] is the top-left 1200×800 at full resolution (x0,y0,x1,y1 in the original's pixels)";
    assert!(out.ends_with(zoom), "{out}");
    // The call as given: half of each side, natively.
    let zoomed = ws.request_value(&json!({"path": "screen.png", "region": [0, 0, 1200, 800]}));
    let a = attachment(&zoomed);
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(1200), Some(800)));
    assert!(zoomed["meta"].get("scale").is_none(), "{}", shown(&zoomed));
    assert!(!output(&zoomed).contains("zoom:"), "not downscaled: no zoom call: {}", output(&zoomed));
}

#[test]
fn a_region_over_the_limits_is_downscaled_and_says_its_scale_and_zoom() {
    let ws = Ws::new();
    ws.file("screen.png", png(&tiles(3000, 2000)));
    let v = region_json(&ws, "screen.png", "0,0,3000,2000");
    let a = attachment(&v);
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(2000), Some(1333)), "{}", shown(&v));
    assert_eq!(v["meta"]["scale"], 0.6667);
    let out = output(&v);
    assert!(out.contains(" · region [0,0,3000,2000] (3000×2000) downscaled to 2000×1333, PNG "), "{out}");
    assert!(
        out.contains("scale 0.6667: a point (x, y) in it is (0 + x ÷ 0.6667, 0 + y ÷ 0.6667) in the original)"),
        "{out}"
    );
    assert!(out.ends_with(" · zoom: region=[0,0,1500,1000] is the top-left 1500×1000 at full resolution (x0,y0,x1,y1 in the original's pixels)"), "{out}");
}

#[test]
fn a_region_past_the_image_or_empty_is_invalid_range_naming_its_size() {
    let ws = Ws::new();
    ws.file("screen.png", png(&tiles(640, 480)));
    for (edges, says) in [
        (
            json!([600, 0, 700, 100]),
            "region [600,0,700,100] reaches past the image: screen.png is 640×480 pixels, so x1 can be at most 640 and y1 at most 480",
        ),
        (json!([0, 100, 640, 481]), "region [0,100,640,481] reaches past the image: screen.png is 640×480 pixels"),
        (
            json!([50, 50, 50, 90]),
            "region [50,50,50,90] is empty: x1 must be greater than x0 and y1 greater than y0 (x1 and y1 are excluded); screen.png is 640×480 pixels",
        ),
        (json!([90, 50, 40, 90]), "region [90,50,40,90] is empty"),
    ] {
        let v = ws.request_value(&json!({"path": "screen.png", "region": edges}));
        let message = error(&v, "INVALID_RANGE");
        assert!(message.starts_with(says), "{message}");
        assert_eq!(
            v["hint"],
            "send a region within [0,0,640,480] (left, top, right, bottom in the image's pixels), e.g. region=[0,0,320,240] for its top-left quarter"
        );
    }
    // From flags, the refusal speaks in flags; a region past the image is the file's fault: exit 1.
    let out = ws.cmd().arg("screen.png").arg("--region").arg("0,0,641,10").output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.ends_with("e.g. --region 0,0,320,240 for its top-left quarter\n"), "{stderr}");
}

#[test]
fn a_region_of_anything_but_an_image_or_mixed_with_a_window_is_invalid_param() {
    let ws = Ws::new();
    ws.file("notes.txt", "one\ntwo\n").file("screen.png", png(&tiles(64, 48)));
    std::fs::create_dir(ws.root.join("dir")).unwrap();
    for (request, says) in [
        (
            json!({"path": "notes.txt", "region": [0, 0, 1, 1]}),
            "notes.txt is text; `region` chooses a part of an image (PNG, JPEG, GIF, WebP)",
        ),
        (json!({"path": "dir", "region": [0, 0, 1, 1]}), "dir is a directory; `region` chooses a part of an image"),
        (
            json!({"path": "screen.png", "region": [0, 0, 1, 1], "offset": 2}),
            "`offset` cannot be combined with `region`",
        ),
        (
            json!({"path": "screen.png", "region": [0, 0, 1]}),
            "`region` must hold four integers [x0, y0, x1, y1], not 3",
        ),
        (json!({"path": "screen.png", "region": [0, -1, 5, 5]}), "`region` edges must be 0 or more, not -1"),
    ] {
        let v = ws.request_value(&request);
        let message = error(&v, "INVALID_PARAM");
        assert!(message.starts_with(says), "{request}: {message}");
    }
    let out = ws.cmd().arg("screen.png").arg("--region").arg("0,0,ten,5").output().expect("run");
    assert_eq!(out.status.code(), Some(2), "a malformed flag is a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("INVALID_PARAM: `--region` must be an integer, not the string \"ten\""), "{stderr}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_region_near_the_end_of_a_huge_png_is_read_without_its_full_size_pixels() {
    // 8000 × 6000 RGB is 144 MB of pixels; a region at its bottom right, read under a 160 MiB address space, must
    // be decoded a row at a time, keeping only the region's columns.
    let ws = Ws::new();
    ws.file("photo.png", streamed_png(8000, 6000, |y| [(y / 24) as u8, 40, 200]));
    let config = ws.config_named("slow.toml", "[limits]\ntimeout_ms = 300000\n");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
    cmd.current_dir(&ws.root).arg("--root").arg(&ws.root).arg("--config").arg(&config);
    cmd.args(["photo.png", "--region", "6000,5000,8000,6000", "--json"]);
    limit_address_space(&mut cmd, 160 << 20);
    let out = cmd.output().expect("run");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v = parse_one_json(&out.stdout);
    let sent = image::load_from_memory(&data(attachment(&v))).expect("decodes").to_rgb8();
    assert_eq!(sent.dimensions(), (2000, 1000));
    assert_eq!(sent.get_pixel(0, 0).0, [(5000 / 24) as u8, 40, 200], "row 5000's colour");
    assert_eq!(sent.get_pixel(1999, 999).0, [(5999 / 24) as u8, 40, 200], "row 5999's colour");
}
