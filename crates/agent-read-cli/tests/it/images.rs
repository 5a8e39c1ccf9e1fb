//! Process-level tests of image reads: the `agent-read` binary, run on fixtures these tests make themselves with the
//! `image` crate (or by hand, for the corrupt ones) in a temporary workspace.
//!
//! What is checked: images are told by their magic bytes (never the file name) and come back as one attachment whose
//! base64 `data` is the file's own bytes when within the limits, or a downscaled / re-encoded copy (with the scale in
//! `meta` and in the description) when not; corrupt or oversized images are clean, quick errors; plain-text mode
//! prints the description only. How the encoding is chosen: `encoding`; regions of an image: `regions`.

mod encoding;
mod regions;

use crate::common::{Bin, Ws};
use base64::Engine;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use serde_json::{Value, json};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A corrupt or refused image must be answered within this (debug build, loaded machine: generous).
const QUICK: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------------------------
// Helpers: a workspace, the binary, fixtures.
// ---------------------------------------------------------------------------------------------------------------

impl Ws {
    /// Writes a TOML configuration outside the root; returns its path.
    fn config_named(&self, name: &str, toml: &str) -> PathBuf {
        self.outside_file(name, toml)
    }

    /// `agent-read PATH --json [--config FILE]`: must exit 0 with one line of JSON; returns it and the time taken.
    fn json_with(&self, path: &str, config: Option<&Path>) -> (Value, Duration) {
        let mut cmd = self.cmd();
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        let started = Instant::now();
        let out = cmd.arg(path).arg("--json").output().expect("run");
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(0), "{path}: stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{path}: unexpected stderr: {}", String::from_utf8_lossy(&out.stderr));
        (parse_one_json(&out.stdout), took)
    }

    fn json(&self, path: &str) -> Value {
        self.json_with(path, None).0
    }

    /// One JSON request on standard input: must exit 0 with one line of JSON.
    fn request_value(&self, request: &Value) -> Value {
        let out = self.cmd().write_stdin(request.to_string()).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        parse_one_json(&out.stdout)
    }
}

fn parse_one_json(stdout: &[u8]) -> Value {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    assert_eq!(text.matches('\n').count(), 1, "exactly one line of JSON expected: {}", clip(text));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", clip(text)))
}

/// The start of a long text, for failure messages (base64 runs to megabytes).
fn clip(text: &str) -> String {
    text.chars().take(600).collect()
}

/// A value for a failure message with every attachment's `data` shortened.
fn shown(v: &Value) -> String {
    let mut v = v.clone();
    if let Some(list) = v.get_mut("attachments").and_then(Value::as_array_mut) {
        for a in list {
            if let Some(data) = a.get("data").and_then(Value::as_str) {
                a["data"] = json!(format!("<{} base64 chars>", data.len()));
            }
        }
    }
    v.to_string()
}

fn output(v: &Value) -> &str {
    v["output"].as_str().unwrap_or_else(|| panic!("no output in {}", shown(v)))
}

/// Asserts an attachment result with exactly one attachment; returns it.
fn attachment(v: &Value) -> &Value {
    assert_eq!(v["ok"], true, "expected success: {}", shown(v));
    assert_eq!(v["kind"], "attachment", "expected an attachment: {}", shown(v));
    let list = v["attachments"].as_array().unwrap_or_else(|| panic!("no attachments: {}", shown(v)));
    assert_eq!(list.len(), 1, "{}", shown(v));
    &list[0]
}

/// The attachment's bytes, base64-decoded (standard alphabet, padded), checked against its `size_bytes`.
fn data(attachment: &Value) -> Vec<u8> {
    let text = attachment["data"].as_str().expect("attachment data");
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).expect("data is standard padded base64");
    assert_eq!(attachment["size_bytes"], bytes.len() as u64, "size_bytes is the decoded length");
    bytes
}

/// Asserts an error result with `code`; returns its message.
fn error<'a>(v: &'a Value, code: &str) -> &'a str {
    assert_eq!(v["ok"], false, "expected an error: {}", shown(v));
    assert_eq!(v["kind"], "error", "{}", shown(v));
    assert_eq!(v["error_code"], code, "{}", shown(v));
    assert!(v.get("attachments").is_none(), "{}", shown(v));
    let message = v["error"].as_str().expect("error message");
    assert!(output(v).starts_with(&format!("{code}: {message}")), "{}", shown(v));
    message
}

/// A deterministic pseudo-random byte stream (xorshift64*).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u8 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// An opaque RGB gradient: red across, green down, blue from both.
fn gradient(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, ((x + y) % 256) as u8])
    }))
}

/// An opaque gradient with noise in the low bits: compresses poorly, but not to random-data size.
fn noisy_gradient(width: u32, height: u32, seed: u64) -> DynamicImage {
    let mut noise = Noise(seed);
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let n = noise.next();
        Rgb([(x * 255 / width) as u8 ^ (n & 0x1F), (y * 255 / height) as u8 ^ (n >> 3), n])
    }))
}

/// An opaque grey gradient (dark at the top, light at the bottom) with 4 bits of noise on every pixel.
fn noisy_gray(width: u32, height: u32, seed: u64) -> DynamicImage {
    // A prime-length tile of noise, cycled: no row repeats another within a deflate window.
    let tile: Vec<u8> = Noise(seed).bytes(65_521).into_iter().map(|n| n & 0x0F).collect();
    let (w, h) = (width as usize, height as usize);
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        let base = (y * 239 / h) as u8;
        let start = (y * w) % tile.len();
        let row = tile[start..].iter().chain(&tile[..start]).take(w);
        pixels.extend(row.map(|n| base + n));
    }
    DynamicImage::ImageLuma8(image::GrayImage::from_raw(width, height, pixels).expect("buffer size"))
}

/// A smooth opaque gradient with 3 bits of noise in every channel.
fn faint_noise(width: u32, height: u32, seed: u64) -> DynamicImage {
    let mut noise = Noise(seed);
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let base = [(x * 200 / width) as u8, (y * 200 / height) as u8, ((x + y) * 100 / (width + height)) as u8];
        Rgb(base.map(|c| c + (noise.next() & 0x07)))
    }))
}

/// RGBA made of `block`×`block` squares of random colour and alpha: it stays incompressible however it is
/// downscaled (until a square is smaller than a pixel) and, having alpha, may only be re-encoded as PNG.
fn random_blocks_rgba(width: u32, height: u32, block: u32, seed: u64) -> DynamicImage {
    let mut noise = Noise(seed);
    let (bw, bh) = (width.div_ceil(block), height.div_ceil(block));
    let colours: Vec<[u8; 4]> =
        (0..bw * bh).map(|_| [noise.next(), noise.next(), noise.next(), noise.next()]).collect();
    DynamicImage::ImageRgba8(RgbaImage::from_fn(width, height, |x, y| {
        Rgba(colours[((y / block) * bw + x / block) as usize])
    }))
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).expect("encode fixture");
    out.into_inner()
}

fn png(image: &DynamicImage) -> Vec<u8> {
    encode(image, ImageFormat::Png)
}

/// PNG with stored (uncompressed) deflate blocks and no filtering: large, but fast to write.
fn png_uncompressed(image: &DynamicImage) -> Vec<u8> {
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let mut out = Vec::new();
    image
        .write_with_encoder(PngEncoder::new_with_quality(&mut out, CompressionType::Uncompressed, FilterType::NoFilter))
        .expect("encode fixture");
    out
}

fn jpeg(image: &DynamicImage) -> Vec<u8> {
    encode(&DynamicImage::ImageRgb8(image.to_rgb8()), ImageFormat::Jpeg)
}

/// CRC-32 (IEEE), as PNG chunks need.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A PNG signature and a valid IHDR chunk claiming `width`×`height` (8-bit RGB), padded with zeros to `len` bytes:
/// a header with no pixel data behind it.
fn png_header_only(width: u32, height: u32, len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = b"IHDR".to_vec();
    chunk.extend_from_slice(&width.to_be_bytes());
    chunk.extend_from_slice(&height.to_be_bytes());
    chunk.extend_from_slice(&[8, 2, 0, 0, 0]);
    bytes.extend_from_slice(&13u32.to_be_bytes());
    bytes.extend_from_slice(&chunk);
    bytes.extend_from_slice(&crc32(&chunk).to_be_bytes());
    assert!(bytes.len() <= len);
    bytes.resize(len, 0);
    bytes
}

// ---------------------------------------------------------------------------------------------------------------
// Within the limits: the file's own bytes.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn small_png_is_attached_as_its_own_bytes() {
    let ws = Ws::new();
    let bytes = png(&gradient(120, 80));
    ws.file("chart.png", &bytes);
    let v = ws.json("chart.png");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/png");
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(120), Some(80)));
    assert_eq!(data(a), bytes, "data is exactly the file");
    let meta = &v["meta"];
    assert_eq!(meta["path"], "chart.png");
    assert_eq!(meta["mime"], "image/png");
    assert_eq!(meta["size_bytes"], bytes.len() as u64);
    assert_eq!((meta["original_width"].as_u64(), meta["original_height"].as_u64()), (Some(120), Some(80)));
    assert_eq!(meta["reencoded"], false);
    assert!(meta.get("scale").is_none(), "no scale when not downscaled: {meta}");
    assert!(meta["mtime"].as_str().is_some_and(|t| t.ends_with('Z')), "{meta}");
    let out = output(&v);
    assert!(out.starts_with("PNG image · 120×80 · "), "{out}");
    assert!(!out.contains("downscaled") && !out.contains("re-encoded"), "{out}");
    assert!(!out.contains(a["data"].as_str().unwrap()), "the description carries no base64");
}

#[test]
fn stdin_json_request_gives_the_same_attachment() {
    let ws = Ws::new();
    let bytes = png(&gradient(40, 30));
    ws.file("small.png", &bytes);
    let from_stdin = ws.request_value(&json!({"path": "small.png"}));
    assert_eq!(data(attachment(&from_stdin)), bytes);
    let mut from_flag = ws.json("small.png");
    let mut from_stdin = from_stdin;
    // mtime is the same file's; everything else must match too.
    from_flag["meta"].as_object_mut().unwrap().remove("mtime");
    from_stdin["meta"].as_object_mut().unwrap().remove("mtime");
    assert_eq!(from_stdin, from_flag);
}

#[test]
fn small_jpeg_is_attached_as_its_own_bytes() {
    let ws = Ws::new();
    let bytes = jpeg(&gradient(64, 48));
    ws.file("photo.jpg", &bytes);
    let v = ws.json("photo.jpg");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/jpeg");
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(64), Some(48)));
    assert_eq!(data(a), bytes);
    assert_eq!(v["meta"]["reencoded"], false);
    assert!(output(&v).starts_with("JPEG image · 64×48 · "), "{}", output(&v));
}

// ---------------------------------------------------------------------------------------------------------------
// The type comes from the magic bytes, never the file name.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn png_bytes_named_txt_are_an_image() {
    let ws = Ws::new();
    let bytes = png(&gradient(20, 10));
    ws.file("photo.txt", &bytes);
    let v = ws.json("photo.txt");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/png");
    assert_eq!(v["meta"]["mime"], "image/png");
    assert_eq!(data(a), bytes);
}

#[test]
fn json_text_named_png_is_text() {
    let ws = Ws::new();
    ws.file("fake.png", "{\"not\": \"an image\", \"n\": 1}\n");
    let v = ws.json("fake.png");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["kind"], "text", "{v}");
    assert!(v.get("attachments").is_none(), "{v}");
    assert_eq!(output(&v), "1: {\"not\": \"an image\", \"n\": 1}\n(lines 1-1 of 1 · 28 B · end of file)");
}

#[test]
fn jpeg_bytes_named_png_are_image_jpeg() {
    let ws = Ws::new();
    let bytes = jpeg(&gradient(32, 24));
    ws.file("x.png", &bytes);
    let v = ws.json("x.png");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/jpeg");
    assert_eq!(v["meta"]["mime"], "image/jpeg");
    assert_eq!(data(a), bytes);
    assert!(output(&v).starts_with("JPEG image · 32×24 · "), "{}", output(&v));
}

#[test]
fn svg_is_text() {
    let ws = Ws::new();
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"16\" height=\"16\">\n<circle cx=\"8\" cy=\"8\" r=\"7\"/>\n</svg>\n";
    ws.file("icon.svg", svg);
    let v = ws.json("icon.svg");
    assert_eq!(v["kind"], "text", "{v}");
    assert_eq!(v["meta"]["total_lines"], 3);
    assert!(output(&v).starts_with("1: <svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", output(&v));
    assert!(output(&v).contains("\n2: <circle cx=\"8\" cy=\"8\" r=\"7\"/>\n3: </svg>\n"), "{}", output(&v));
}

// ---------------------------------------------------------------------------------------------------------------
// Over the limits: downscaled and re-encoded, with the scale.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn large_png_is_downscaled_to_the_maximum_side() {
    let ws = Ws::new();
    // 3000×1500 opaque grey with noise on every pixel, stored without compression (quick to write in a debug build):
    // one byte a pixel keeps the decode and downscale cheap. Noise on every pixel is a photograph's texture, which
    // JPEG holds in far fewer bytes than PNG.
    let bytes = png_uncompressed(&noisy_gray(3000, 1500, 7));
    ws.file("big.png", &bytes);
    let v = ws.json("big.png");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/jpeg", "{}", shown(&v));
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(2000), Some(1000)), "{}", shown(&v));
    let meta = &v["meta"];
    assert_eq!((meta["original_width"].as_u64(), meta["original_height"].as_u64()), (Some(3000), Some(1500)));
    let scale = meta["scale"].as_f64().unwrap_or_else(|| panic!("meta.scale: {meta}"));
    assert!((scale - 2.0 / 3.0).abs() < 1e-3, "scale {scale}");
    assert_eq!(meta["reencoded"], true);
    assert_eq!(meta["mime"], "image/png");
    assert_eq!(meta["size_bytes"], bytes.len() as u64);
    let sent = data(a);
    assert!(sent.len() as u64 <= 3_750_000, "within the default byte limit: {}", sent.len());
    assert!(sent.len() > 100_000, "the noise survives downscaling: {} bytes", sent.len());
    assert_eq!(image::guess_format(&sent).ok(), Some(ImageFormat::Jpeg));
    let decoded = image::load_from_memory(&sent).expect("the attachment decodes");
    assert_eq!((decoded.width(), decoded.height()), (2000, 1000));
    let out = output(&v);
    assert!(out.starts_with("PNG image · 3000×1500 · 4.3 MiB → downscaled to 2000×1000, JPEG "), "{out}");
    assert!(
        out.contains(
            "× smaller than lossless PNG; scale 0.6667: divide coordinates in it by 0.6667 to map them to the original)"
        ),
        "{out}"
    );
}

#[test]
fn a_small_max_image_side_downscales_a_small_image() {
    let ws = Ws::new();
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 64\n");
    ws.file("chart.png", png(&gradient(120, 80)));
    let (v, _) = ws.json_with("chart.png", Some(&config));
    let a = attachment(&v);
    assert_eq!(a["width"], 64, "{}", shown(&v));
    let height = a["height"].as_u64().unwrap();
    assert!((42..=43).contains(&height), "aspect ratio kept: 64×{height}");
    let meta = &v["meta"];
    assert_eq!(meta["reencoded"], true);
    assert_eq!((meta["original_width"].as_u64(), meta["original_height"].as_u64()), (Some(120), Some(80)));
    let scale = meta["scale"].as_f64().expect("meta.scale");
    assert!((scale - 64.0 / 120.0).abs() < 1e-3, "scale {scale}");
    let decoded = image::load_from_memory(&data(a)).expect("the attachment decodes");
    assert_eq!((u64::from(decoded.width()), u64::from(decoded.height())), (64, height));
    let format = image::guess_format(&data(a)).expect("an image");
    assert_eq!(a["mime"], format.to_mime_type(), "the attachment's mime is its data's");
    assert!(output(&v).contains(&format!("downscaled to 64×{height}")), "{}", output(&v));
    assert!(output(&v).contains("scale 0.5333"), "{}", output(&v));
}

/// `[limits] max_image_bytes = LIMIT` in a configuration file.
fn byte_limit_config(ws: &Ws, limit: u64) -> PathBuf {
    ws.config_named("bytes.toml", &format!("[limits]\nmax_image_bytes = {limit}\n"))
}

#[test]
fn a_png_over_the_byte_limit_is_reencoded_as_jpeg_at_full_size_when_that_fits() {
    let ws = Ws::new();
    let limit = 20_000u64;
    let config = byte_limit_config(&ws, limit);
    // A smooth photo-like image with faint noise: PNG cannot squeeze the noise, JPEG drops it.
    let bytes = png(&faint_noise(200, 150, 21));
    assert!(bytes.len() as u64 > limit, "the fixture must be over the limit: {}", bytes.len());
    ws.file("photo.png", &bytes);
    let (v, _) = ws.json_with("photo.png", Some(&config));
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/jpeg", "{}", shown(&v));
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(200), Some(150)));
    let sent = data(a);
    assert!(sent.len() as u64 <= limit, "{} bytes sent, limit {limit}", sent.len());
    assert_eq!(image::guess_format(&sent).ok(), Some(ImageFormat::Jpeg));
    let decoded = image::load_from_memory(&sent).expect("the attachment decodes");
    assert_eq!((decoded.width(), decoded.height()), (200, 150));
    let meta = &v["meta"];
    assert_eq!(meta["reencoded"], true);
    assert!(meta.get("scale").is_none(), "not downscaled: no scale: {meta}");
    assert_eq!(meta["mime"], "image/png", "meta.mime is the file's type");
    assert_eq!(meta["size_bytes"], bytes.len() as u64, "meta.size_bytes is the file's");
    let out = output(&v);
    assert!(out.starts_with("PNG image · 200×150 · "), "{out}");
    assert!(out.contains(" → re-encoded to fit the size limit as JPEG "), "{out}");
    assert!(out.ends_with("× smaller than lossless PNG)"), "{out}");
    assert!(!out.contains("downscaled"), "{out}");
}

#[test]
fn a_png_whose_reencodings_are_over_the_byte_limit_is_downscaled_until_one_fits() {
    let ws = Ws::new();
    let limit = 20_000u64;
    let config = byte_limit_config(&ws, limit);
    // Strong noise: neither PNG nor JPEG of the full-size image fits in 20 KB.
    let bytes = png(&noisy_gradient(300, 200, 11));
    assert!(bytes.len() as u64 > 3 * limit, "the fixture must be well over the limit: {}", bytes.len());
    ws.file("noisy.png", &bytes);
    let (v, _) = ws.json_with("noisy.png", Some(&config));
    let a = attachment(&v);
    let sent = data(a);
    assert!(sent.len() as u64 <= limit, "{} bytes sent, limit {limit}", sent.len());
    let decoded = image::load_from_memory(&sent).expect("the attachment decodes");
    let (w, h) = (decoded.width(), decoded.height());
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(u64::from(w)), Some(u64::from(h))));
    assert!(w < 300 && h < 200, "downscaled: {w}×{h}");
    assert!((f64::from(w) / f64::from(h) - 1.5).abs() < 0.03, "aspect ratio kept: {w}×{h}");
    let meta = &v["meta"];
    assert_eq!(meta["reencoded"], true);
    assert_eq!((meta["original_width"].as_u64(), meta["original_height"].as_u64()), (Some(300), Some(200)));
    let scale = meta["scale"].as_f64().expect("meta.scale when downscaled");
    assert!((scale - f64::from(w) / 300.0).abs() < 1e-3, "scale {scale} for {w}×{h}");
    let out = output(&v);
    assert!(out.contains(&format!("downscaled to {w}×{h}")), "{out}");
    assert!(out.contains(&format!("; scale {scale}: ")), "{out}");
}

#[test]
fn an_image_that_cannot_fit_the_byte_limit_is_too_large() {
    let ws = Ws::new();
    let config = ws.config_named("tight.toml", "[limits]\nmax_image_bytes = 16384\n");
    // Incompressible RGBA (PNG only): even after every shrinking step (~13% of the side) it is > 16 KiB.
    ws.file("blocks.png", png(&random_blocks_rgba(600, 600, 8, 3)));
    let (v, took) = ws.json_with("blocks.png", Some(&config));
    let message = error(&v, "TOO_LARGE");
    assert!(message.starts_with("blocks.png: image too large to return: "), "{message}");
    assert!(message.contains("no downscaled version fits in 16.0 KiB"), "{message}");
    assert!(v["hint"].as_str().is_some_and(|h| !h.is_empty()), "{v}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn image_limits_below_their_minimum_are_a_configuration_error() {
    let ws = Ws::new();
    ws.file("chart.png", png(&gradient(8, 8)));
    for (toml, field) in [
        ("[limits]\nmax_image_bytes = 1000\n", "max_image_bytes"),
        ("[limits]\nmax_image_side = 8\n", "max_image_side"),
    ] {
        let config = ws.config_named("bad.toml", toml);
        let out = ws.cmd().arg("--config").arg(&config).arg("chart.png").arg("--json").output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{toml}");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("limits.{field}")), "{stderr}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Corrupt images: clean, quick errors.
// ---------------------------------------------------------------------------------------------------------------

/// Reads `bytes` saved as `name`; asserts a quick `code` error and returns the message.
fn corrupt_error(name: &str, bytes: &[u8], code: &str) -> String {
    let ws = Ws::new();
    ws.file(name, bytes);
    let (v, took) = ws.json_with(name, None);
    assert!(took < QUICK, "{name}: took {took:?}");
    error(&v, code).to_string()
}

#[test]
fn a_truncated_png_cannot_be_decoded() {
    let full = png(&noisy_gradient(120, 80, 5));
    let message = corrupt_error("half.png", &full[..full.len() / 2], "BINARY");
    assert!(message.starts_with("half.png: a PNG image that cannot be decoded ("), "{message}");
    assert!(message.ends_with("it is truncated or corrupt"), "{message}");
}

/// Known failure: the JPEG decoder (zune-jpeg through `image`, not in strict mode) fills a truncated scan with grey
/// and reports success, so half a JPEG goes out as a valid attachment — the file's own broken bytes, `ok: true`.
#[test]
fn a_truncated_jpeg_cannot_be_decoded() {
    let full = jpeg(&noisy_gradient(120, 80, 5));
    let half = &full[..full.len() / 2];
    assert!(!half.ends_with(&[0xFF, 0xD9]), "the fixture has lost its end-of-image marker");
    let message = corrupt_error("half.jpg", half, "BINARY");
    assert!(message.starts_with("half.jpg: a JPEG image that cannot be decoded ("), "{message}");
}

#[test]
fn truncated_gif_and_webp_cannot_be_decoded() {
    let picture = noisy_gradient(120, 80, 5);
    let gif = encode(&DynamicImage::ImageRgba8(picture.to_rgba8()), ImageFormat::Gif);
    let message = corrupt_error("half.gif", &gif[..gif.len() / 2], "BINARY");
    assert!(message.starts_with("half.gif: a GIF image that cannot be decoded ("), "{message}");
    let webp = encode(&picture, ImageFormat::WebP);
    let message = corrupt_error("cut.webp", &webp[..webp.len() * 9 / 10], "BINARY");
    assert!(message.starts_with("cut.webp: a WebP image that cannot be decoded ("), "{message}");
}

#[test]
fn a_png_header_claiming_20000_square_is_too_large_to_decode() {
    let bytes = png_header_only(20_000, 20_000, 100);
    let message = corrupt_error("huge.png", &bytes, "TOO_LARGE");
    assert_eq!(
        message,
        "huge.png: image too large to return: 20000×20000 pixels (400000000) is more than the 134217728 pixels \
         (11585×11585) a read decodes"
    );
}

#[test]
fn a_png_header_claiming_5000_square_on_a_tiny_file_cannot_be_decoded() {
    let bytes = png_header_only(5000, 5000, 100);
    let message = corrupt_error("claims.png", &bytes, "BINARY");
    assert!(message.contains("a PNG image that cannot be decoded"), "{message}");
}

#[test]
fn random_bytes_after_a_jpeg_soi_cannot_be_decoded() {
    let mut bytes = vec![0xFF, 0xD8, 0xFF];
    bytes.extend(Noise(42).bytes(2000));
    let message = corrupt_error("noise.jpg", &bytes, "BINARY");
    assert!(message.contains("a JPEG image that cannot be decoded"), "{message}");
}

#[test]
fn a_gif_header_without_image_data_cannot_be_decoded() {
    // Header, a 16×16 logical screen with a 2-colour global palette, then the trailer: no image at all.
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend_from_slice(&[16, 0, 16, 0, 0x80, 0, 0]);
    bytes.extend_from_slice(&[0, 0, 0, 0xFF, 0xFF, 0xFF]);
    bytes.push(0x3B);
    let message = corrupt_error("empty.gif", &bytes, "BINARY");
    assert!(message.contains("a GIF image that cannot be decoded"), "{message}");
}

// ---------------------------------------------------------------------------------------------------------------
// GIF and WebP.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn a_small_gif_is_attached_and_says_first_frame() {
    let ws = Ws::new();
    let bytes = encode(&DynamicImage::ImageRgba8(gradient(24, 16).to_rgba8()), ImageFormat::Gif);
    ws.file("anim.gif", &bytes);
    let v = ws.json("anim.gif");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/gif");
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(24), Some(16)));
    assert_eq!(data(a), bytes);
    let out = output(&v);
    assert!(out.starts_with("GIF image · 24×16 · "), "{out}");
    assert!(out.contains("first frame"), "{out}");
}

#[test]
fn a_small_webp_is_attached() {
    let ws = Ws::new();
    let bytes = encode(&gradient(30, 20), ImageFormat::WebP);
    ws.file("pic.webp", &bytes);
    let v = ws.json("pic.webp");
    let a = attachment(&v);
    assert_eq!(a["mime"], "image/webp");
    assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(30), Some(20)));
    assert_eq!(data(a), bytes);
    assert!(output(&v).starts_with("WebP image · 30×20 · "), "{}", output(&v));
    assert!(!output(&v).contains("first frame"), "{}", output(&v));
}

#[test]
fn downscaled_gif_and_webp_go_out_as_png_with_a_matching_mime() {
    let ws = Ws::new();
    let config = ws.config_named("side.toml", "[limits]\nmax_image_side = 16\n");
    let picture = DynamicImage::ImageRgba8(gradient(48, 32).to_rgba8());
    ws.file("anim.gif", encode(&picture, ImageFormat::Gif));
    ws.file("pic.webp", encode(&gradient(48, 32), ImageFormat::WebP));
    for (name, file_mime, kind) in [("anim.gif", "image/gif", "GIF"), ("pic.webp", "image/webp", "WebP")] {
        let (v, _) = ws.json_with(name, Some(&config));
        let a = attachment(&v);
        let sent = data(a);
        assert_eq!(image::guess_format(&sent).ok(), Some(ImageFormat::Png), "{name}: re-encoded as PNG");
        assert_eq!(a["mime"], "image/png", "{name}: the attachment's mime is its data's: {}", shown(&v));
        assert_eq!(v["meta"]["mime"], file_mime, "{name}: meta.mime is the file's");
        assert_eq!((a["width"].as_u64(), a["height"].as_u64()), (Some(16), Some(11)), "{name}");
        let decoded = image::load_from_memory(&sent).expect("the attachment decodes");
        assert_eq!((decoded.width(), decoded.height()), (16, 11), "{name}");
        let out = output(&v);
        assert!(out.starts_with(&format!("{kind} image · 48×32 · ")), "{out}");
        assert!(out.contains("downscaled to 16×11, PNG "), "{out}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Plain-text mode: the description only.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn plain_mode_prints_the_description_and_never_base64() {
    let ws = Ws::new();
    let bytes = png(&gradient(120, 80));
    ws.file("chart.png", &bytes);
    let v = ws.json("chart.png");
    let out = ws.cmd().arg("chart.png").output().expect("run");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty());
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(stdout, format!("{}\n", output(&v)));
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    assert!(!stdout.contains(&b64[..16]), "no base64 in plain mode: {stdout}");
    assert!(stdout.len() < 200, "{stdout}");
}

#[test]
fn plain_mode_corrupt_image_fails_with_exit_1_and_the_error_on_stderr() {
    let ws = Ws::new();
    let full = png(&noisy_gradient(60, 40, 9));
    ws.file("half.png", &full[..full.len() / 2]);
    let out = ws.cmd().arg("half.png").output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("BINARY: half.png: a PNG image that cannot be decoded ("), "{stderr}");
    assert!(stderr.contains("\nNext: "), "{stderr}");
}

#[test]
fn a_windowed_request_for_an_image_says_the_window_does_not_apply() {
    let ws = Ws::new();
    let bytes = png(&gradient(40, 30));
    ws.file("chart.png", &bytes);
    let windowed = ws.request_value(&serde_json::json!({"path": "chart.png", "offset": 5, "limit": 10}));
    assert_eq!(data(attachment(&windowed)), bytes, "the whole image is attached");
    assert!(
        output(&windowed).ends_with("do not apply to images: the whole image is attached"),
        "{}",
        output(&windowed)
    );
    let plain = ws.request_value(&serde_json::json!({"path": "chart.png"}));
    assert!(!output(&plain).contains("do not apply"), "{}", output(&plain));
}

// ---------------------------------------------------------------------------------------------------------------
// Memory: a pixel limit from the header, for every format; one budget shared by concurrent reads; downscaling
// while decoding, checked under a hard limit on the child's address space.
// ---------------------------------------------------------------------------------------------------------------

/// The pixel limit as messages state it.
const PIXEL_LIMIT: &str = "is more than the 134217728 pixels (11585×11585) a read decodes";

/// A PNG of `width` × `height` RGB pixels, each row one colour from `colour(y)`, written a row at a time (the
/// test never holds it whole either; whole-row fills keep an unoptimised build quick).
#[cfg(target_os = "linux")]
fn streamed_png(width: u32, height: u32, colour: impl Fn(u32) -> [u8; 3]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().expect("header");
    let mut stream = writer.stream_writer().expect("stream");
    for y in 0..height {
        stream.write_all(&colour(y).repeat(width as usize)).expect("row");
    }
    stream.finish().expect("finish");
    writer.finish().expect("finish");
    out
}

/// A lossless WebP header (`VP8L`) claiming `width` × `height`, with no image data behind it.
fn webp_header_only(width: u32, height: u32) -> Vec<u8> {
    let bits = (width - 1) | (height - 1) << 14;
    let mut vp8l = vec![0x2F];
    vp8l.extend_from_slice(&bits.to_le_bytes());
    vp8l.extend_from_slice(&[0; 11]);
    let mut file = b"RIFF".to_vec();
    file.extend_from_slice(&(4 + 8 + vp8l.len() as u32).to_le_bytes());
    file.extend_from_slice(b"WEBPVP8L");
    file.extend_from_slice(&(vp8l.len() as u32).to_le_bytes());
    file.extend_from_slice(&vp8l);
    file
}

/// A GIF whose logical screen is `screen` but whose first frame's descriptor claims `frame`, with a 2-colour
/// palette and a few bytes of image data.
fn gif_claiming(screen: (u16, u16), frame: (u16, u16)) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend_from_slice(&screen.0.to_le_bytes());
    bytes.extend_from_slice(&screen.1.to_le_bytes());
    bytes.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF]);
    bytes.extend_from_slice(&[0x2C, 0, 0, 0, 0]);
    bytes.extend_from_slice(&frame.0.to_le_bytes());
    bytes.extend_from_slice(&frame.1.to_le_bytes());
    bytes.extend_from_slice(&[0, 2, 2, 0x4C, 0x01, 0, 0x3B]);
    bytes
}

/// A JPEG whose frame header is made to claim `width` × `height`.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = jpeg(&gradient(16, 16));
    let sof = bytes.windows(2).position(|m| m == [0xFF, 0xC0]).expect("baseline frame header");
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

#[test]
fn every_format_is_refused_past_the_pixel_limit_from_its_header_naming_pixels_and_limit() {
    let cases = [
        ("wide.png", png_header_only(60_000, 3_000, 100), "60000×3000 pixels (180000000)"),
        ("huge.jpg", jpeg_claiming(65_000, 65_000), "65000×65000 pixels (4225000000)"),
        ("huge.webp", webp_header_only(16_383, 16_383), "16383×16383 pixels (268402689)"),
        ("huge.gif", gif_claiming((65_535, 65_535), (1, 1)), "65535×65535 pixels (4294836225)"),
        // A 1 × 1 screen whose first frame claims 60,000 × 60,000: the frame is what would be decoded.
        ("frame.gif", gif_claiming((1, 1), (60_000, 60_000)), "60000×60000 pixels (3600000000)"),
    ];
    for (name, bytes, pixels) in cases {
        let message = corrupt_error(name, &bytes, "TOO_LARGE");
        assert_eq!(message, format!("{name}: image too large to return: {pixels} {PIXEL_LIMIT}"));
    }
}

#[test]
fn an_image_whose_decode_alone_needs_more_than_all_image_reads_share_is_too_large() {
    // 11,000² is within the pixel limit, but WebP is decoded whole: 11,000² × 4 bytes and the decoder's own.
    let ws = Ws::new();
    ws.file("wide.webp", webp_header_only(11_000, 11_000));
    let (v, took) = ws.json_with("wide.webp", None);
    assert!(took < QUICK, "refused from the header, without decoding: {took:?}");
    let message = error(&v, "TOO_LARGE");
    assert!(message.starts_with("wide.webp: image too large to return: 11000×11000 pixels need "), "{message}");
    assert!(message.ends_with(", more than the 384.0 MiB all reads share"), "{message}");
    assert!(v["hint"].as_str().is_some_and(|h| h.contains("fewer pixels")), "{v}");
}

/// A `pre_exec` hook limiting the child's address space to `bytes` (Linux): an allocation past it fails and the
/// process aborts — a bound a memory test can rely on, unlike timing.
#[cfg(target_os = "linux")]
fn address_space_limit(bytes: u64) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    move || {
        let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
        // SAFETY: setrlimit only reads the struct it is given; it is async-signal-safe, as a pre-exec hook must be.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Runs `cmd` under [`address_space_limit`].
#[cfg(target_os = "linux")]
fn limit_address_space(cmd: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec and calls only setrlimit.
    unsafe { cmd.pre_exec(address_space_limit(bytes)) };
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn six_concurrent_mcp_reads_of_a_small_png_claiming_11000_square_stay_within_1_gib() {
    // The finding: six such reads took the server to 2.8 GB (363 MB of RGB each, decoded whole). Under a 1 GiB
    // address space (threads' reserved stacks and arenas included) the server must answer all six and go on.
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let ws = Ws::new();
    let claim = streamed_png(11_000, 11_000, |_| [0, 0, 0]);
    assert!(claim.len() < 1_000_000, "a small file: {} bytes", claim.len());
    for i in 1..=6 {
        ws.file(&format!("huge-{i}.png"), &claim);
    }
    ws.file("notes.txt", "still here\n");
    // Six 121-megapixel decodes at once are slow in a debug build on a busy machine: time is not what is tested.
    let config = ws.config_named("slow.toml", "[limits]\ntimeout_ms = 600000\n");
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-read")).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(&ws.root).arg("--config").arg(&config);
        // SAFETY: as in `limit_address_space`.
        unsafe { cmd.pre_exec(address_space_limit(1 << 30)) };
    });
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("initialize");
    let mut reads = tokio::task::JoinSet::new();
    for i in 1..=6 {
        let peer = client.peer().clone();
        let Value::Object(arguments) = json!({"path": format!("huge-{i}.png")}) else { unreachable!() };
        reads.spawn(async move { peer.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await });
    }
    while let Some(answer) = reads.join_next().await {
        let result = answer.expect("task").expect("the server answers (it did not run out of memory)");
        let text = crate::common::mcp::text_of(&result);
        assert_eq!(result.is_error, Some(false), "{text}");
        assert!(text.starts_with("PNG image · 11000×11000 · "), "{text}");
        assert!(text.contains(" → downscaled to 2000×2000, PNG "), "{text}");
    }
    let after = crate::common::mcp::call(&client, json!({"path": "notes.txt"})).await;
    assert_eq!(after.is_error, Some(false), "the server goes on answering");
    client.cancel().await.expect("shut down");
}

#[cfg(target_os = "linux")]
#[test]
fn an_8000_by_6000_png_and_a_6000_by_4000_jpeg_are_read_in_a_fraction_of_their_full_size_pixels() {
    // Their pixels alone are 144 MB and 72 MB; read within a 160 MiB address space (code, threads and the
    // downscaled output included), they must be decoded downscaled.
    let ws = Ws::new();
    ws.file("photo.png", streamed_png(8000, 6000, |y| [(y / 24) as u8, 40, 200]));
    let mut rows = vec![0u8; 6000 * 4000 * 3];
    for (y, row) in rows.chunks_exact_mut(6000 * 3).enumerate() {
        row.fill((y / 16) as u8);
    }
    ws.file("photo.jpg", jpeg(&DynamicImage::ImageRgb8(RgbImage::from_raw(6000, 4000, rows).expect("size"))));
    let config = ws.config_named("slow.toml", "[limits]\ntimeout_ms = 300000\n");
    for (name, kind, size) in [("photo.png", "PNG", "8000×6000"), ("photo.jpg", "JPEG", "6000×4000")] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
        cmd.current_dir(&ws.root).arg("--root").arg(&ws.root).arg("--config").arg(&config).arg(name).arg("--json");
        limit_address_space(&mut cmd, 160 << 20);
        // glibc reserves 64 MiB of address space for each thread's malloc arena when it can, which under this limit
        // would leave the decoders' threads less room than the memory they use: one arena measures what is used.
        cmd.env("MALLOC_ARENA_MAX", "1");
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{name}: stderr: {}", String::from_utf8_lossy(&out.stderr));
        let v = parse_one_json(&out.stdout);
        let a = attachment(&v);
        assert!(output(&v).starts_with(&format!("{kind} image · {size} · ")), "{}", shown(&v));
        assert_eq!(a["width"], 2000, "{}", shown(&v));
    }
}
