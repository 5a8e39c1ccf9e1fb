//! Writes the image benchmark's files (bench/images.sh): photo-like pictures that compress as photographs do, and
//! the small PNG of the finding that declares 11,000 × 11,000 pixels.
//!
//! Usage: cargo run --example bench_images -- DIR
//! Writes DIR/photo-8000x6000.png, DIR/photo-6000x4000.jpg and DIR/claims-11000x11000.png, each unless present.

use image::codecs::jpeg::JpegEncoder;
use image::{ExtendedColorType, ImageEncoder};
use std::io::{BufWriter, Write};
use std::path::Path;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: bench_images DIR");
        std::process::exit(2);
    };
    let dir = Path::new(&dir);
    let files: [(&str, Writer); 3] = [
        ("photo-8000x6000.png", |path| write_png(path, 8000, 6000, photo_row)),
        ("photo-6000x4000.jpg", write_jpeg),
        ("claims-11000x11000.png", |path| write_png(path, 11_000, 11_000, |_, _, row| row.fill(0))),
    ];
    for (name, write) in files {
        let path = dir.join(name);
        if path.exists() {
            continue;
        }
        eprintln!("writing {}", path.display());
        let partial = dir.join(format!("{name}.part"));
        if let Err(e) = write(&partial).and_then(|()| std::fs::rename(&partial, &path)) {
            eprintln!("bench_images: {name}: {e}");
            std::process::exit(1);
        }
    }
}

/// Writes one benchmark file at the path given.
type Writer = fn(&Path) -> std::io::Result<()>;

/// Row `y` of a `width`-wide photo-like RGB picture: smooth gradients with a few bits of grain.
fn photo_row(width: u32, y: u32, row: &mut [u8]) {
    let mut seed = u64::from(y).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for (x, rgb) in row.chunks_exact_mut(3).enumerate() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let grain = (seed & 0x0F) as u32;
        let x = x as u32;
        rgb[0] = (x * 200 / width + grain) as u8;
        rgb[1] = ((y / 30) % 200 + grain) as u8;
        rgb[2] = ((x + y) % 180 + grain) as u8;
    }
}

fn write_png(path: &Path, width: u32, height: u32, row: fn(u32, u32, &mut [u8])) -> std::io::Result<()> {
    let file = BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    let mut stream = writer.stream_writer().map_err(std::io::Error::other)?;
    let mut line = vec![0u8; width as usize * 3];
    for y in 0..height {
        row(width, y, &mut line);
        stream.write_all(&line)?;
    }
    stream.finish().map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

fn write_jpeg(path: &Path) -> std::io::Result<()> {
    let (width, height) = (6000, 4000);
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    for (y, line) in pixels.chunks_exact_mut(width as usize * 3).enumerate() {
        photo_row(width, y as u32, line);
    }
    let file = BufWriter::new(std::fs::File::create(path)?);
    JpegEncoder::new_with_quality(file, 90)
        .write_image(&pixels, width, height, ExtendedColorType::Rgb8)
        .map_err(std::io::Error::other)
}
