//! Stage 3 of a read: decide from a file's first block whether it is text (and in which encoding) or binary.
//!
//! The order matters. A byte order mark is looked for first, so UTF-16 and UTF-32 text with a BOM is text even
//! though it is full of NUL bytes. A PDF is told by `%PDF-` at its start (see `is_pdf`). Then magic bytes name known
//! binary formats (`infer`) in a block that starts like binary data (text may begin with a magic number, in any
//! encoding), NUL bytes or a high share of control bytes mark unknown binary data, and what remains is text: valid
//! UTF-8 (or 7-bit ISO-2022-JP), or a legacy encoding guessed by `chardetng` when the guess is confident, or UTF-8
//! shown with replacement characters when it is not.

pub mod boundary;
pub mod codec;
pub mod document;

pub use codec::Codec;
use encoding_rs::{UTF_8, UTF_16BE, UTF_16LE};
use serde::Serialize;

/// Bytes from the start of a file that classification looks at.
pub const SNIFF_LEN: usize = 64 * 1024;

/// Share of control bytes (in thousandths) above which unrecognised content counts as binary.
const CONTROL_PER_MILLE_LIMIT: usize = 100;

/// How the encoding of a text file was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EncodingSource {
    /// A byte order mark named it.
    Bom,
    /// The content is valid in it (UTF-8).
    #[default]
    Detected,
    /// A detector guessed it with confidence.
    Guessed,
    /// No confident guess: shown as UTF-8 with replacement characters.
    Fallback,
    /// The request named it.
    Forced,
}

/// A text file's format: its codec, how the codec was chosen, and the BOM to skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextFormat {
    /// The codec that decodes the content.
    pub codec: Codec,
    /// How the codec was chosen.
    pub source: EncodingSource,
    /// Length of the byte order mark at the start of the file (0 when none).
    pub bom_len: usize,
}

/// What a file's first block says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text in the given format.
    Text(TextFormat),
    /// An image format models take as an attachment.
    Image(ImageType),
    /// A PDF document.
    Pdf,
    /// A document read as the text it converts to (DOCX, XLSX, PPTX, HTML); see [`document::refine`].
    Document(document::DocumentKind),
    /// Binary data; the string names the detected type (`ELF executable`, `PNG image`, …).
    Binary {
        /// The detected type.
        description: String,
        /// A next step when the data may be text after all (e.g. UTF-16 without a BOM).
        hint: Option<String>,
    },
}

/// An image format that models accept, told by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    /// Portable Network Graphics.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (first frame shown by models).
    Gif,
    /// WebP.
    WebP,
}

impl ImageType {
    /// The MIME type (`image/png`, …).
    pub fn mime(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Gif => "image/gif",
            ImageType::WebP => "image/webp",
        }
    }

    /// The short name used in descriptions (`PNG`, …).
    pub fn name(self) -> &'static str {
        match self {
            ImageType::Png => "PNG",
            ImageType::Jpeg => "JPEG",
            ImageType::Gif => "GIF",
            ImageType::WebP => "WebP",
        }
    }

    fn from_mime(mime: &str) -> Option<ImageType> {
        match mime {
            "image/png" => Some(ImageType::Png),
            "image/jpeg" => Some(ImageType::Jpeg),
            "image/gif" => Some(ImageType::Gif),
            "image/webp" => Some(ImageType::WebP),
            _ => None,
        }
    }
}

/// Classifies a file from its first block (the whole file when it is small); `forced` is the encoding the request
/// named, which skips detection (the caller asked for text). A character cut at the block's end is never held
/// against it: the block may end mid-file, and a file may be cut short.
pub fn classify(block: &[u8], forced: Option<Codec>) -> Content {
    let bom = sniff_bom(block);
    if let Some(codec) = forced {
        // A forced encoding keeps its BOM skipped only when the BOM belongs to that encoding.
        let bom_len = bom.filter(|(c, _)| *c == codec).map_or(0, |(_, len)| len);
        return Content::Text(TextFormat { codec, source: EncodingSource::Forced, bom_len });
    }
    if let Some((codec, bom_len)) = bom {
        return Content::Text(TextFormat { codec, source: EncodingSource::Bom, bom_len });
    }
    let utf8_ok = is_utf8_prefix(block);
    let controls = control_per_mille(block);
    let has_nul = memchr::memchr(0, block).is_some();
    let clean_text = utf8_ok && controls == 0 && !has_nul;
    if is_pdf(block, clean_text) {
        return Content::Pdf;
    }
    // A magic number counts only when the file starts like binary data: text, in any encoding, may well begin with
    // one ("BMI;Größe" is BMP's, "MZ" a Windows executable's, "GIF89a" a GIF's), while the formats it names all have
    // NUL or control bytes within their first bytes. Clean text, the common case, also skips the hundred-odd matchers.
    let magic = if clean_text || !starts_like_binary(block) {
        None
    } else {
        infer::get(block).filter(|t| t.matcher_type() != infer::MatcherType::Text && t.mime_type() != PDF_MIME)
    };
    if let Some(kind) = magic {
        return match ImageType::from_mime(kind.mime_type()) {
            Some(image) => Content::Image(image),
            None => Content::Binary { description: describe(&kind), hint: Some(known_format_hint(&kind)) },
        };
    }
    if has_nul || controls > CONTROL_PER_MILLE_LIMIT {
        let hint = if has_nul { utf16_without_bom_hint(block) } else { control_bytes_hint(block, utf8_ok, controls) };
        return Content::Binary { description: "binary data".to_string(), hint };
    }
    if utf8_ok && is_iso_2022_jp(block) {
        let codec = Codec::Whatwg(encoding_rs::ISO_2022_JP);
        return Content::Text(TextFormat { codec, source: EncodingSource::Guessed, bom_len: 0 });
    }
    if utf8_ok {
        return Content::Text(TextFormat { codec: Codec::Whatwg(UTF_8), source: EncodingSource::Detected, bom_len: 0 });
    }
    Content::Text(guess_legacy(block))
}

/// How a PDF file begins.
const PDF_HEADER: &[u8] = b"%PDF-";

/// PDF's media type, as `infer` names it.
const PDF_MIME: &str = "application/pdf";

/// How many bytes of a block tell whether it starts like binary data (see [`starts_like_binary`]).
const BINARY_START: usize = 64;

/// Whether the block is a PDF: `%PDF-` at its start (uncompressed PDFs are all ASCII, and still PDFs), or, in a block
/// that is not clean text, a line within the first KiB that begins `%PDF-` and a version (PDF readers accept the
/// header behind a preamble). A source file that merely names the header is text, in whatever encoding.
fn is_pdf(block: &[u8], clean_text: bool) -> bool {
    if block.starts_with(PDF_HEADER) {
        return true;
    }
    if clean_text {
        return false;
    }
    let head = &block[..block.len().min(1024)];
    memchr::memmem::find_iter(head, PDF_HEADER).any(|at| {
        let after = &head[at + PDF_HEADER.len()..];
        let at_line_start =
            at.checked_sub(1).and_then(|before| head.get(before)).is_some_and(|b| matches!(b, b'\n' | b'\r'));
        at_line_start && matches!(after, [major, b'.', minor, ..] if major.is_ascii_digit() && minor.is_ascii_digit())
    })
}

/// Whether the block is Japanese in ISO-2022-JP (old mail and news): 7-bit bytes, valid UTF-8 as far as UTF-8 can
/// tell, that switch to a Japanese character set with an escape sequence and decode without a malformed one.
fn is_iso_2022_jp(block: &[u8]) -> bool {
    const TO_JAPANESE: [&[u8]; 2] = [b"\x1b$B", b"\x1b$@"];
    // Checked up to the last line feed: a line ends back in ASCII, while a block may end inside a character.
    let lines = memchr::memrchr(b'\n', block).map_or(block, |end| &block[..=end]);
    memchr::memchr(0x1b, block).is_some()
        && TO_JAPANESE.iter().any(|escape| memchr::memmem::find(block, escape).is_some())
        && block.is_ascii()
        && Codec::Whatwg(encoding_rs::ISO_2022_JP).decode(lines, codec::DecodeLimit::NONE, true).invalid == 0
}

/// Whether the block's first [`BINARY_START`] bytes hold a NUL or a control byte that text does not use.
fn starts_like_binary(block: &[u8]) -> bool {
    let start = &block[..block.len().min(BINARY_START)];
    start.iter().any(|&b| b == 0 || is_control(b))
}

fn sniff_bom(block: &[u8]) -> Option<(Codec, usize)> {
    // UTF-32LE's BOM starts with UTF-16LE's, so it is checked first.
    if block.starts_with(&[0xFF, 0xFE, 0, 0]) {
        Some((Codec::Utf32Le, 4))
    } else if block.starts_with(&[0, 0, 0xFE, 0xFF]) {
        Some((Codec::Utf32Be, 4))
    } else if block.starts_with(&[0xEF, 0xBB, 0xBF]) {
        Some((Codec::Whatwg(UTF_8), 3))
    } else if block.starts_with(&[0xFF, 0xFE]) {
        Some((Codec::Whatwg(UTF_16LE), 2))
    } else if block.starts_with(&[0xFE, 0xFF]) {
        Some((Codec::Whatwg(UTF_16BE), 2))
    } else {
        None
    }
}

/// Valid UTF-8, allowing a character cut off at the end: of a block that is not the whole file, or of a file cut
/// short (`head -c`, a log being written), which is shown with a replacement character where the cut is.
fn is_utf8_prefix(block: &[u8]) -> bool {
    match std::str::from_utf8(block) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// Control bytes per thousand, not counting the ones text uses (tab, newlines, form feed, escape, backspace).
fn control_per_mille(block: &[u8]) -> usize {
    if block.is_empty() {
        return 0;
    }
    // Written as a branch-free sum over short chunks so that it compiles to vector code: a 64 KiB block is counted
    // on every read, and the `filter().count()` form took a sixth of a small file's whole read.
    let controls: usize = block
        .chunks(255)
        .map(|chunk| usize::from(chunk.iter().fold(0u8, |sum, &b| sum + u8::from(is_control(b)))))
        .sum();
    controls * 1000 / block.len()
}

/// A control byte that text does not use: not tab, newlines, form feed, escape or backspace (nor NUL, counted apart).
#[inline]
fn is_control(b: u8) -> bool {
    // `|`, not `||`: no branches, so that the count over a block compiles to vector code.
    (b.wrapping_sub(0x01) < 7) | (b.wrapping_sub(0x0E) < 13) | (b.wrapping_sub(0x1C) < 4) | (b == 0x7F)
}

/// Decides the encoding of content that is not valid UTF-8.
///
/// Mostly-valid UTF-8 (more well-formed multi-byte characters than invalid bytes) is damaged UTF-8, not a legacy
/// encoding: it is shown as UTF-8 with replacement characters. Otherwise `chardetng` guesses, and the guess is
/// trusted only if the block decodes in it without a single malformed sequence.
fn guess_legacy(block: &[u8]) -> TextFormat {
    let fallback = TextFormat { codec: Codec::Whatwg(UTF_8), source: EncodingSource::Fallback, bom_len: 0 };
    let (multibyte, invalid) = utf8_census(block);
    if multibyte >= invalid {
        return fallback;
    }
    // Fed as if more followed, even for a whole file: a file cut short (`head -c`) ends in half a character, which
    // would rule out every multi-byte encoding and leave a single-byte guess that garbles all the rest. The cut is
    // shown as a replacement character when the file is rendered.
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Allow);
    detector.feed(block, false);
    let codec = Codec::Whatwg(detector.guess(None, chardetng::Utf8Detection::Deny));
    if reads_well(&codec.decode(block, codec::DecodeLimit::NONE, false)) {
        TextFormat { codec, source: EncodingSource::Guessed, bom_len: 0 }
    } else {
        fallback
    }
}

/// Whether a guessed encoding reads a block well enough to be trusted: without a malformed sequence, or with at most
/// one invalid byte per [`GUESS_CHARS_PER_INVALID_BYTE`] characters it decodes beyond ASCII. A stray bad byte (a
/// damaged sector, two files spliced) then shows as U+FFFD in text that reads right, rather than sending the whole
/// file to the UTF-8 fallback, where every character of a legacy encoding is garbled; a wrong guess leaves far more.
fn reads_well(decoded: &codec::Decoded) -> bool {
    if decoded.invalid == 0 {
        return true;
    }
    let beyond_ascii = decoded.text.chars().filter(|c| !c.is_ascii() && *c != char::REPLACEMENT_CHARACTER).count();
    decoded.invalid.saturating_mul(GUESS_CHARS_PER_INVALID_BYTE) <= beyond_ascii as u64
}

/// Characters beyond ASCII a guessed encoding must decode for each invalid byte it meets (see [`reads_well`]).
const GUESS_CHARS_PER_INVALID_BYTE: u64 = 100;

/// Well-formed multi-byte UTF-8 characters, and invalid bytes, in `block`.
fn utf8_census(block: &[u8]) -> (usize, usize) {
    block.utf8_chunks().fold((0, 0), |(multibyte, invalid), chunk| {
        let wide = chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        (multibyte + wide, invalid + chunk.invalid().len())
    })
}

/// UTF-16 text without a BOM has NUL bytes (the high byte of every ASCII character, a newline, a space) mostly on one
/// side of each pair; say so, so the model can force the encoding. That side gives the byte order, and the hint is
/// given only when the sample then decodes as text: no unpaired surrogate, no control character but tab, newlines,
/// form feed and escape. Text in any script passes (Chinese as well as English); binary data, which has NUL pairs and
/// stray surrogates, does not.
fn utf16_without_bom_hint(block: &[u8]) -> Option<String> {
    let sample = &block[..block.len().min(4096) & !1];
    if sample.len() < 8 {
        return None;
    }
    let even_nul = sample.iter().step_by(2).filter(|b| **b == 0).count();
    let odd_nul = sample.iter().skip(1).step_by(2).filter(|b| **b == 0).count();
    let (encoding, label) = match odd_nul.cmp(&even_nul) {
        std::cmp::Ordering::Greater => (UTF_16LE, "utf-16le"),
        std::cmp::Ordering::Less => (UTF_16BE, "utf-16be"),
        std::cmp::Ordering::Equal => return None,
    };
    // Decoded as if more followed: the sample may end inside a surrogate pair.
    let decoded = Codec::Whatwg(encoding).decode(sample, codec::DecodeLimit::NONE, false);
    let text_controls_only = |c: char| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b');
    if decoded.invalid > 0 || !decoded.text.chars().all(text_controls_only) {
        return None;
    }
    Some(format!("this looks like UTF-16 text without a byte order mark: retry with encoding=\"{label}\""))
}

/// Text in UTF-8 that uses a control byte as a separator (a FIX log's SOH, 0x01; a terminal capture) has too many of
/// them to pass for text, yet every other byte is text: say which byte it is and how to read the file anyway.
fn control_bytes_hint(block: &[u8], utf8_ok: bool, controls_per_mille: usize) -> Option<String> {
    if !utf8_ok {
        return None;
    }
    // Every control byte is ASCII.
    let mut counts = [0usize; 128];
    for &b in block.iter().filter(|&&b| is_control(b)) {
        counts[usize::from(b & 0x7f)] += 1;
    }
    let most = (0..counts.len()).max_by_key(|&byte| (counts[byte], std::cmp::Reverse(byte)))?;
    Some(format!(
        "it is valid UTF-8, but {}.{}% of its bytes are control bytes (most often {most:#04x}); if it is text that uses \
         them, such as a FIX log, read it with encoding=\"utf-8\"",
        controls_per_mille / 10,
        controls_per_mille % 10
    ))
}

/// A short human name for a detected binary type.
/// The hint for a file whose format its magic number names: the format holds no text an encoding would show, so the
/// legacy-encoding hint of unnamed binary data would send the model the wrong way.
fn known_format_hint(kind: &infer::Type) -> String {
    let what = match kind.matcher_type() {
        infer::MatcherType::Archive => "an archive or compressed file: its contents are not shown through it",
        infer::MatcherType::App => "a program or compiled code: it holds no text to show",
        infer::MatcherType::Audio | infer::MatcherType::Video => "audio or video: it holds no text to show",
        infer::MatcherType::Font => "a font: it holds no text to show",
        _ => "a binary format: it holds no text to show",
    };
    format!("this is {what}; a different encoding= will not help, so do not retry it")
}

fn describe(kind: &infer::Type) -> String {
    let named = match kind.extension() {
        "elf" => "ELF executable",
        "exe" | "dll" => "Windows executable",
        "mach" => "Mach-O executable",
        "class" => "Java class file",
        "wasm" => "WebAssembly module",
        "png" => "PNG image",
        "jpg" => "JPEG image",
        "gif" => "GIF image",
        "webp" => "WebP image",
        "pdf" => "PDF document",
        "zip" => "ZIP archive",
        "gz" => "gzip archive",
        "sqlite" => "SQLite database",
        _ => "",
    };
    if named.is_empty() {
        format!("{} data ({})", kind.extension().to_ascii_uppercase(), kind.mime_type())
    } else {
        named.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_codec(block: &[u8]) -> (Codec, EncodingSource, usize) {
        match classify(block, None) {
            Content::Text(f) => (f.codec, f.source, f.bom_len),
            other => panic!("expected text, got {other:?}"),
        }
    }

    fn binary_description(block: &[u8]) -> String {
        match classify(block, None) {
            Content::Binary { description, .. } => description,
            other => panic!("expected binary, got {other:?}"),
        }
    }

    #[test]
    fn plain_and_cjk_utf8_is_text() {
        assert_eq!(text_codec("hello\n".as_bytes()).0, Codec::Whatwg(UTF_8));
        assert_eq!(text_codec("日本語のテキスト\n中文\n".as_bytes()).1, EncodingSource::Detected);
    }

    #[test]
    fn boms_are_recognised_and_measured() {
        assert_eq!(text_codec(b"\xEF\xBB\xBFhi"), (Codec::Whatwg(UTF_8), EncodingSource::Bom, 3));
        assert_eq!(text_codec(b"\xFF\xFEh\0i\0"), (Codec::Whatwg(UTF_16LE), EncodingSource::Bom, 2));
        assert_eq!(text_codec(b"\xFE\xFF\0h\0i"), (Codec::Whatwg(UTF_16BE), EncodingSource::Bom, 2));
        assert_eq!(text_codec(b"\xFF\xFE\0\0h\0\0\0"), (Codec::Utf32Le, EncodingSource::Bom, 4));
        assert_eq!(text_codec(b"\0\0\xFE\xFF\0\0\0h"), (Codec::Utf32Be, EncodingSource::Bom, 4));
    }

    #[test]
    fn magic_bytes_name_the_type() {
        let mut elf = b"\x7fELF\x02\x01\x01\0".to_vec();
        elf.resize(64, 0);
        assert_eq!(binary_description(&elf), "ELF executable");
        let mut zip = b"PK\x03\x04".to_vec();
        zip.resize(64, 0);
        assert_eq!(binary_description(&zip), "ZIP archive");
    }

    #[test]
    fn images_and_pdfs_are_told_by_their_magic_bytes() {
        assert_eq!(classify(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", None), Content::Image(ImageType::Png));
        assert_eq!(classify(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0", None), Content::Image(ImageType::Jpeg));
        assert_eq!(classify(b"GIF89a\x01\0\x01\0\x80\0\0", None), Content::Image(ImageType::Gif));
        assert_eq!(classify(b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0", None), Content::Image(ImageType::WebP));
        // Uncompressed PDFs are all ASCII: still PDFs.
        assert_eq!(classify(b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", None), Content::Pdf);
        // A forced encoding asks for text.
        assert!(matches!(classify(b"\x89PNG\r\n\x1a\n\0", Some(Codec::Whatwg(UTF_8))), Content::Text(_)));
        // A note that starts with GIF's magic but is clean text stays text.
        assert!(matches!(classify(b"GIF89a is the format's name\n", None), Content::Text(_)));
    }

    #[test]
    fn text_that_names_the_pdf_header_is_text_and_a_binary_preamble_before_it_is_a_pdf() {
        let script = b"def is_pdf(data):\n    return data.startswith(b\"%PDF-\")\n";
        assert_eq!(text_codec(script).0, Codec::Whatwg(UTF_8));
        // In any encoding, and with a control byte in it: text that is not clean UTF-8 is still text.
        let latin1 = b"# Pr\xFCfung der Datei\ndef is_pdf(data):\n    return data.startswith(b\"%PDF-1.4\")\n";
        assert_eq!(text_codec(latin1).1, EncodingSource::Guessed);
        let terminal_log = b"\x1b]0;title\x07$ grep -c %PDF-1.7 *.txt\n3\n";
        assert_eq!(text_codec(terminal_log).0, Codec::Whatwg(UTF_8));
        // PDF readers accept the header anywhere in the first KiB: behind bytes that are not text, it is a PDF.
        let mut preamble = b"\x01\x02junk\x03\n".to_vec();
        preamble.extend_from_slice(b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj\n");
        assert_eq!(classify(&preamble, None), Content::Pdf);
    }

    #[test]
    fn legacy_text_that_starts_like_a_magic_number_is_still_text() {
        for text in [
            &b"BMI;Gr\xF6\xDFe;Gewicht\n22,5;180;73\n"[..],
            b"MZ ist die Abk\xFCrzung\n",
            b"GIF89a vs PNG: \xE9t\xE9\n",
        ] {
            assert_eq!(text_codec(text).1, EncodingSource::Guessed, "{}", String::from_utf8_lossy(text));
        }
        // One control byte later in the text does not make its start a magic number either.
        assert_eq!(
            text_codec(&[&b"BM stands for bitmap. "[..], &[b'x'; 64], b"\x7f\n"].concat()).0,
            Codec::Whatwg(UTF_8)
        );
    }

    #[test]
    fn text_that_starts_like_a_magic_number_is_still_text() {
        assert_eq!(text_codec(b"MZ is how this note starts\n").0, Codec::Whatwg(UTF_8));
        assert_eq!(text_codec(b"<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n").0, Codec::Whatwg(UTF_8));
    }

    #[test]
    fn nul_or_many_controls_is_binary() {
        assert_eq!(binary_description(b"abc\0def"), "binary data");
        assert_eq!(binary_description(&[1, 2, 3, 4, 5, b'a', 6, 7, 8, 9]), "binary data");
    }

    #[test]
    fn utf8_with_many_control_bytes_is_binary_with_a_hint_naming_the_byte_and_the_way_to_read_it() {
        let fix: Vec<u8> = b"8=FIX.4.2\x019=65\x0135=A\x0149=S\x0156=T\x0110=123\x01\n".repeat(50);
        let Content::Binary { hint: Some(hint), .. } = classify(&fix, None) else {
            panic!("{:?}", classify(&fix, None));
        };
        assert!(hint.contains("of its bytes are control bytes (most often 0x01)"), "{hint}");
        assert!(hint.ends_with("read it with encoding=\"utf-8\""), "{hint}");
        // Not valid UTF-8: no such hint, the general one stands.
        let latin = [&fix[..], b"\xff\xfe\xfd"].concat();
        assert!(matches!(classify(&latin, None), Content::Binary { hint: None, .. }));
    }

    #[test]
    fn control_bytes_are_exactly_the_ones_text_does_not_use() {
        for byte in 0..=u8::MAX {
            let expected = matches!(byte, 0x01..=0x07 | 0x0E..=0x1A | 0x1C..=0x1F | 0x7F);
            // Long enough to span several counting chunks, with a remainder.
            let block = vec![byte; 1000];
            assert_eq!(control_per_mille(&block), if expected { 1000 } else { 0 }, "byte {byte:#04x}");
        }
        let mixed: Vec<u8> = (0..3000).map(|i| if i % 4 == 0 { 0x01 } else { b'a' }).collect();
        assert_eq!(control_per_mille(&mixed), 250);
    }

    #[test]
    fn utf16_without_bom_gets_a_hint() {
        let block: Vec<u8> = "hello world, this is utf-16".encode_utf16().flat_map(u16::to_le_bytes).collect();
        match classify(&block, None) {
            Content::Binary { hint: Some(h), .. } => assert!(h.contains("utf-16le"), "{h}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn utf16_without_bom_in_any_script_gets_a_hint_with_its_byte_order_and_binary_data_none() {
        let text = "你好，世界！这是一个测试文件。\n第一行 one\n".repeat(20);
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for (bytes, label) in [(le, "utf-16le"), (be, "utf-16be")] {
            match classify(&bytes, None) {
                Content::Binary { hint: Some(h), .. } => assert!(h.contains(label), "{h}"),
                other => panic!("{label}: {other:?}"),
            }
        }
        // Little-endian integers: NUL bytes on one side, but NUL pairs and controls when read as UTF-16.
        let numbers: Vec<u8> = (0u32..2000).flat_map(|n| (n * 7).to_le_bytes()).collect();
        assert!(matches!(classify(&numbers, None), Content::Binary { hint: None, .. }));
    }

    #[test]
    fn iso_2022_jp_is_told_from_ascii_and_ansi_colours_are_not_it() {
        let (bytes, _, _) = encoding_rs::ISO_2022_JP.encode("こんにちは、世界！\nこれはテストです。\n");
        assert_eq!(text_codec(&bytes), (Codec::Whatwg(encoding_rs::ISO_2022_JP), EncodingSource::Guessed, 0));
        // A block that ends inside a character (the first 64 KiB of a larger file) is told too.
        let text = "これはテストです。\n".repeat(5000);
        let (long, _, _) = encoding_rs::ISO_2022_JP.encode(&text);
        assert_eq!(text_codec(&long[..SNIFF_LEN]).0, Codec::Whatwg(encoding_rs::ISO_2022_JP));
        let coloured = b"\x1b[31merror\x1b[0m: $B is not set\n";
        assert_eq!(text_codec(coloured), (Codec::Whatwg(UTF_8), EncodingSource::Detected, 0));
    }

    #[test]
    fn windows_1252_is_guessed() {
        let text = "Le caf\u{e9} est tr\u{e8}s bon, na\u{ef}ve fa\u{e7}ade, d\u{e9}j\u{e0} vu \u{2014} \u{201c}quoted\u{201d}\n"
            .repeat(4);
        let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&text);
        let (codec, source, _) = text_codec(&bytes);
        assert_eq!(source, EncodingSource::Guessed);
        assert_eq!(codec, Codec::Whatwg(encoding_rs::WINDOWS_1252));
    }

    #[test]
    fn cjk_text_cut_in_the_middle_of_a_character_keeps_its_encoding() {
        let text = "你好，世界！这是一个测试文件。\n".repeat(30);
        for encoding in [encoding_rs::GBK, encoding_rs::SHIFT_JIS] {
            let (bytes, _, _) = encoding.encode(&text);
            // As `head -c` leaves a file: the last character's second byte is gone.
            let cut = &bytes[..bytes.len() - 2];
            assert_eq!(text_codec(cut), (Codec::Whatwg(encoding), EncodingSource::Guessed, 0), "{}", encoding.name());
        }
    }

    #[test]
    fn cjk_text_with_a_stray_bad_byte_keeps_its_guessed_encoding() {
        let text = "你好，世界！这是一个测试文件，里面有很多汉字。\n".repeat(20);
        for encoding in [encoding_rs::GBK, encoding_rs::EUC_KR, encoding_rs::SHIFT_JIS, encoding_rs::BIG5] {
            let korean = "안녕하세요, 세계! 이것은 테스트 파일입니다.\n".repeat(20);
            let text = if encoding == encoding_rs::EUC_KR { &korean } else { &text };
            let (bytes, _, _) = encoding.encode(text);
            let mut damaged = bytes.to_vec();
            damaged.insert(bytes.len() / 2, 0xFF);
            assert_eq!(
                text_codec(&damaged),
                (Codec::Whatwg(encoding), EncodingSource::Guessed, 0),
                "{}",
                encoding.name()
            );
        }
        // A bad byte for every few characters is no longer text in that encoding.
        let decoded = |text: &str, invalid| codec::Decoded { text: text.to_string(), invalid, ..Default::default() };
        assert!(reads_well(&decoded(&"字".repeat(100), 1)));
        assert!(!reads_well(&decoded(&"字".repeat(199), 2)));
        assert!(!reads_well(&decoded(&"\u{FFFD}".repeat(500), 1)), "replacements are not characters read");
        assert!(reads_well(&decoded("ascii only", 0)));
    }

    #[test]
    fn mostly_valid_utf8_with_a_stray_byte_is_utf8_with_replacements() {
        let mut block = "h\u{e9}llo w\u{f6}rld caf\u{e9}\n".repeat(5).into_bytes();
        block.extend_from_slice(b"one bad byte: \xff here\n");
        assert_eq!(text_codec(&block), (Codec::Whatwg(UTF_8), EncodingSource::Fallback, 0));
    }

    #[test]
    fn shift_jis_is_guessed() {
        let text =
            "\u{65e5}\u{672c}\u{8a9e}\u{306e}\u{30c6}\u{30ad}\u{30b9}\u{30c8}\u{3067}\u{3059}\u{3002}\n".repeat(8);
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&text);
        assert_eq!(text_codec(&bytes), (Codec::Whatwg(encoding_rs::SHIFT_JIS), EncodingSource::Guessed, 0));
    }

    #[test]
    fn forced_encoding_skips_detection() {
        let block = b"h\0i\0";
        match classify(block, Some(Codec::Whatwg(UTF_16LE))) {
            Content::Text(f) => assert_eq!((f.source, f.bom_len), (EncodingSource::Forced, 0)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_character_cut_at_the_end_is_not_invalid_in_a_block_or_in_a_whole_file() {
        let bytes = "step 2 done ✅".as_bytes();
        let cut = &bytes[..bytes.len() - 1];
        assert!(is_utf8_prefix(cut));
        // A file cut short (`head -c`, a log being written) is still UTF-8, not a legacy encoding's guess.
        assert_eq!(text_codec(cut), (Codec::Whatwg(UTF_8), EncodingSource::Detected, 0));
        assert!(!is_utf8_prefix(b"ab\xE2\x82cd"), "a cut character before the end is invalid");
    }
}
