//! A compressed file (gzip, zstd, xz, bzip2, found by its magic bytes): the text it holds, decompressed as it is
//! read and windowed by lines like any text file — same numbering, tails, encodings, output cap and time budget.
//!
//! Contract:
//! - Line windows count the decompressed text's lines. A first read decodes the whole text once (to count its lines,
//!   as for any file) and learns its [index](crate::window::index::streamed): the totals, line checkpoints and the
//!   decoder's restart points (gzip: between deflate blocks; zstd: at frame starts; bzip2: at block starts; xz: at
//!   block and stream starts). A later read of the unchanged file decodes only from the restart point before its
//!   window to the window's end; a first tail finds its lines in the text its counting pass kept. Constant memory
//!   either way (the index's own bounded).
//! - When a read ends its decoders are [parked](crate::window::index::parked) where they stopped, with the text they
//!   kept and the text held around a first read's window; the next read of the unchanged file goes on with whichever
//!   reaches its window soonest, so nearby windows decode little or nothing even where there is no restart point.
//! - `meta.compression` names the compression and `meta.size_bytes` stays the file's (compressed) size;
//!   `meta.decompressed_bytes` is the text's size once a pass reached its end, and absent otherwise (never guessed).
//! - Byte ranges address the file's raw bytes; those of a compressed file are not text, so a byte range is answered
//!   `BINARY` with the way to read the text by lines. Block mode needs to read backward and is refused likewise.
//! - Damaged input (corrupt, cut short) ends the read with `IO_ERROR` saying so, after the lines decoded before it.

use super::file::FileRequest;
use super::target::Target;
use super::{table, text};
use crate::classify::{self, Codec, Content, SNIFF_LEN};
use crate::error::{ErrorCode, ReadError};
use crate::limits::Limits;
use crate::media::compressed::Compression;
use crate::render::human_size;
use crate::request::{FindWindow, LineWindow, Window};
use crate::result::ReadResult;
use crate::window::Source;
use crate::window::index::parked::{ParkedText, StreamKey};
use crate::window::index::streamed::FileEnds;
use crate::window::index::{FileIdentity, FileVersion};
use crate::window::lines::Indexing;
use crate::window::stream::{self, Opener, Stream};

/// Reads the text of `target`, compressed with `compression`.
pub fn read(
    target: &Target<'_>,
    compression: Compression,
    request: FileRequest<'_>,
    limits: &Limits,
) -> Result<ReadResult, ReadError> {
    let window = match request.window {
        Window::Lines(lines) => Ok(lines),
        Window::Find(find) => Err(find),
        Window::Bytes { .. } => return Err(byte_range_refused(target, compression)),
        Window::Block(_) => return Err(block_refused(target, compression)),
        Window::Region(_) => {
            let what = format!("{}-compressed text", compression.name());
            return Err(super::target::region_needs_an_image(&target.shown, &what));
        }
    };
    if request.pages.is_some() {
        return Err(ReadError::invalid_param(format!(
            "{}: `pages` applies to PDFs only, and this is {}-compressed text",
            target.shown,
            compression.name()
        ))
        .with_hint("remove `pages`; page through its lines with offset and limit"));
    }
    let (file, end, budget) = (target.file, target.read_end(), target.budget.clone());
    let open: &Opener<'_> = &|from| compression.decoder_at(file, end, budget.clone(), from);
    let ends = FileEnds::of(target.file, end).map_err(|e| ReadError::from_io(&e, &target.shown))?;
    let key = StreamKey::of(target.file, target.metadata, ends);
    let (stream, head) = match target.indexes.parked().take(&key) {
        Some(parked) => (Stream::adopting(open, target.budget.clone(), parked.streams), parked.head),
        None => {
            let stream = Stream::new(open, target.budget.clone());
            let head = decompressed_head(&stream, &target.shown)?;
            (stream, head)
        }
    };
    let read = read_text(target, compression, (window, request.forced), limits, (&stream, &head, ends));
    // The decoders stay where they stopped, with the text they kept, for the next reads of the file to go on with.
    let streams = stream.park();
    if read.is_ok() && !streams.is_empty() {
        target.indexes.parked().park(key, ParkedText { head, streams });
    }
    read
}

/// Reads the text of `target`, decoded by `stream`, whose first bytes are `head` and whose compressed file ends as
/// `ends` says.
fn read_text(
    target: &Target<'_>,
    compression: Compression,
    (window, forced): (Result<LineWindow, FindWindow>, Option<Codec>),
    limits: &Limits,
    (stream, head, ends): (&Stream<'_>, &[u8], FileEnds),
) -> Result<ReadResult, ReadError> {
    let format = match classify::classify(head, forced) {
        Content::Text(format) => format,
        Content::Binary { description, .. } => return Err(binary_inside(target, compression, &description)),
        Content::Image(kind) => return Err(binary_inside(target, compression, &format!("{} image", kind.name()))),
        Content::Pdf => return Err(binary_inside(target, compression, "PDF document")),
        Content::Document(kind) => return Err(binary_inside(target, compression, kind.description())),
    };
    let source = Source::streamed(stream, format.bom_len as u64, format.codec.newline_layout())
        .with_budget(target.budget.clone());
    let layout = format.codec.newline_layout();
    let indexing = Indexing {
        indexes: target.indexes,
        identity: FileIdentity::of(target.file, target.metadata, format.bom_len as u64, layout),
        version: FileVersion::of(target.metadata),
        ends: Some(ends),
    };
    let meta = text::base_meta(target, &format);
    let notices = |decoded: Option<u64>, meta: &mut crate::result::TextMeta| {
        meta.compression = Some(compression.name());
        meta.decompressed_bytes = decoded;
        let text = decoded.map_or("size of its text unknown until read to the end".to_string(), |size| {
            format!("{} of text", human_size(size))
        });
        vec![format!("{}-compressed, {text}", compression.name())]
    };
    let window = match window {
        Ok(lines) => lines,
        Err(find) => {
            let notices = vec![format!("{}-compressed", compression.name())];
            let meta = crate::result::TextMeta { compression: Some(compression.name()), ..meta };
            return text::find_streamed(&source, indexing, &format, &find, meta, limits, notices)
                .map(ReadResult::Text)
                .map_err(|error| with_stream_hint(error, compression));
        }
    };
    // A compressed table (`people.csv.gz`) is judged by the name it has without its compression's extension.
    let name = target.shown.rsplit_once('.').map_or(target.shown.as_str(), |(stem, _)| stem);
    let whole = head.len() < SNIFF_LEN;
    let table =
        format.codec.is_utf8().then(|| table::sniff(name, head.get(format.bom_len..).unwrap_or_default(), whole));
    table::read_with(table.flatten(), limits, |limits| {
        text::read_streamed_lines(&source, Some(indexing), &format, window, meta, limits, notices)
    })
    .map(ReadResult::Text)
    .map_err(|error| with_stream_hint(error, compression))
}

/// The text's first bytes (what classifying it needs), or the error that stopped the decoder before them.
fn decompressed_head(stream: &Stream<'_>, shown: &str) -> Result<Vec<u8>, ReadError> {
    let mut head = vec![0u8; SNIFF_LEN];
    let n = stream.read_at(0, &mut head).map_err(|e| match stream::damage(&e) {
        Some(damage) => ReadError::new(
            ErrorCode::IoError,
            format!("{shown}: the compressed stream is damaged ({damage}); no text could be decoded from it"),
        )
        .with_hint("the file is corrupt or cut short, or not really compressed; nothing in it can be read as text"),
        None => ReadError::from_io(&e, shown),
    })?;
    head.truncate(n);
    Ok(head)
}

/// A timeout's way around for decompressed text: byte ranges do not reach into it, a window near the top is cheaper.
fn with_stream_hint(error: ReadError, compression: Compression) -> ReadError {
    if error.code != ErrorCode::Timeout {
        return error;
    }
    error.with_hint(format!(
        "a first read of {}-compressed text decodes all of it to count its lines: read a window nearer the top, or \
         ask for a longer time budget",
        compression.name()
    ))
}

fn byte_range_refused(target: &Target<'_>, compression: Compression) -> ReadError {
    ReadError::new(
        ErrorCode::Binary,
        format!(
            "{}: {}-compressed text ({}); byte ranges address the file's raw compressed bytes, which are not text",
            target.shown,
            compression.name(),
            human_size(target.metadata.len())
        ),
    )
    .with_hint("read its text by lines: remove start_byte/end_byte and use offset and limit (offset=-100 for the end)")
}

fn block_refused(target: &Target<'_>, compression: Compression) -> ReadError {
    ReadError::invalid_param(format!(
        "{} is {}-compressed text; block mode (`mode` \"block\") applies to uncompressed text files only",
        target.shown,
        compression.name()
    ))
    .with_hint("remove `mode` and `anchor_line`, and read the lines around it with offset and limit")
}

fn binary_inside(target: &Target<'_>, compression: Compression, description: &str) -> ReadError {
    ReadError::new(
        ErrorCode::Binary,
        format!(
            "{}: {}-compressed {description} ({} compressed); not shown as text",
            target.shown,
            compression.name(),
            human_size(target.metadata.len())
        ),
    )
    .with_hint("what it holds is binary; if it really is text in a legacy encoding, retry with encoding=\"<label>\"")
}

#[cfg(test)]
mod tests {
    use crate::budget::Cancel;
    use crate::config::Config;
    use crate::engine::{ReadOptions, Reader};
    use crate::error::ErrorCode;
    use crate::request::ReadRequest;
    use crate::result::ReadResult;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn a_cancelled_read_of_a_compressed_bomb_stops_mid_stream() {
        let dir = tempfile::tempdir().unwrap();
        let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        member.write_all(&vec![b'\n'; 1 << 20]).unwrap();
        let member = member.finish().unwrap();
        // 16,384 members of 1 MiB of line feeds each: 16 GiB of text from a file of a few MiB.
        let bomb: Vec<u8> = std::iter::repeat_n(member.as_slice(), 16_384).flatten().copied().collect();
        std::fs::write(dir.path().join("bomb.log.gz"), bomb).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let cancel = Cancel::new();
        let started = Instant::now();
        let request = ReadRequest { offset: Some(-1), ..ReadRequest::new("bomb.log.gz") };
        let result = std::thread::scope(|scope| {
            let read = scope.spawn(|| reader.read(&request, &ReadOptions::cancellable(&cancel)));
            std::thread::sleep(Duration::from_millis(200));
            cancel.cancel();
            read.join().unwrap()
        });
        let ReadResult::Error(error) = result else { panic!("the read was not stopped: {}", result.output()) };
        assert_eq!(error.code, ErrorCode::Cancelled, "{}", error.message);
        assert!(started.elapsed() < Duration::from_secs(10), "stopped only after {:?}", started.elapsed());
    }

    #[test]
    fn a_repeat_deep_read_matches_the_first_and_a_file_damaged_since_is_refused_not_misread() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=300_000).map(|i| format!("line {i} of the log, {}\n", i % 977)).collect();
        let mut packed = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        packed.write_all(text.as_bytes()).unwrap();
        let mut packed = packed.finish().unwrap();
        let path = dir.path().join("app.log.gz");
        std::fs::write(&path, &packed).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let read = |offset: i64| {
            reader.read(
                &ReadRequest { offset: Some(offset), limit: Some(2), ..ReadRequest::new("app.log.gz") },
                &ReadOptions::default(),
            )
        };
        let first = read(290_001).output().into_owned();
        assert!(first.starts_with("290001: line 290001 of the log"), "{first}");
        assert_eq!(read(290_001).output().into_owned(), first, "the repeat read, through the restart points");
        let tail = read(-2).output().into_owned();
        assert!(tail.starts_with("299999: line 299999 "), "{tail}");
        assert_eq!(read(-2).output().into_owned(), tail);
        // One byte of the compressed data flipped, the size kept: the index is not used, and the damage is reported.
        let middle = packed.len() / 2;
        packed[middle] ^= 0xff;
        std::fs::write(&path, &packed).unwrap();
        let ReadResult::Error(error) = read(290_001) else { panic!("a damaged file was read") };
        assert_eq!(error.code, ErrorCode::IoError, "{}", error.message);
        assert!(error.message.contains("damaged"), "{}", error.message);
    }

    #[test]
    fn a_repeat_deep_read_decodes_only_from_the_restart_point_before_its_window() {
        use crate::classify::Codec;
        use crate::media::compressed::Compression;
        use crate::window::Source;
        use crate::window::index::store::LineIndexes;
        use crate::window::index::streamed::FileEnds;
        use crate::window::index::{FileIdentity, FileVersion};
        use crate::window::lines::{Indexing, Walk, scan_lines};
        use crate::window::restarts::Restart;
        use crate::window::scan::Flow;
        use crate::window::stream::{Decoder, Stream};
        use std::io::Read;
        use std::sync::atomic::{AtomicU64, Ordering};

        /// A decoder that counts the text it yields.
        struct Counted<'a>(Box<dyn Decoder + 'a>, &'a AtomicU64);
        impl Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
        }
        impl Decoder for Counted<'_> {
            fn want_restart(&mut self) {
                self.0.want_restart();
            }
            fn take_restart(&mut self) -> Option<Restart> {
                self.0.take_restart()
            }
        }

        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=800_000).map(|i| format!("line {i} of the log, took {} ms\n", i % 977)).collect();
        let path = dir.path().join("app.log");
        std::fs::write(&path, &text).unwrap();
        assert!(std::process::Command::new("gzip").arg(&path).status().unwrap().success(), "gzip must be installed");
        let file = std::fs::File::open(dir.path().join("app.log.gz")).unwrap();
        let metadata = file.metadata().unwrap();
        let end = metadata.len();
        let layout = Codec::for_label("utf-8").unwrap().newline_layout();
        let indexes = LineIndexes::in_memory();
        let indexing = Indexing {
            indexes: &indexes,
            identity: FileIdentity::of(&file, &metadata, 0, layout),
            version: FileVersion::of(&metadata),
            ends: Some(FileEnds::of(&file, end).unwrap()),
        };
        let budget = crate::budget::Budget::new(Instant::now() + Duration::from_secs(600), Cancel::new());
        let decoded = AtomicU64::new(0);
        let open = |from: Option<&Restart>| -> std::io::Result<Box<dyn Decoder + '_>> {
            Ok(Box::new(Counted(Compression::Gzip.decoder_at(&file, end, budget.clone(), from)?, &decoded)))
        };
        let read = |offset: i64| {
            let stream = Stream::new(&open, budget.clone());
            let source = Source::streamed(&stream, 0, layout);
            let mut lines = Vec::new();
            decoded.store(0, Ordering::Relaxed);
            scan_lines(&source, Some(indexing), &Walk::counting_all(offset, 2, 200), |line| {
                lines.push(String::from_utf8_lossy(line.kept).into_owned());
                Flow::More
            })
            .unwrap();
            (lines, decoded.load(Ordering::Relaxed))
        };
        let whole = text.len() as u64;
        let (first, cost) = read(700_001);
        assert_eq!(first, ["line 700001 of the log, took 469 ms", "line 700002 of the log, took 470 ms"]);
        assert_eq!(cost, whole, "the first read decodes the whole text");
        let (again, cost) = read(700_001);
        assert_eq!(again, first);
        assert!(cost < 6 << 20, "a repeat decodes from a restart point: {cost} of {whole} bytes");
        let (tail, cost) = read(-2);
        assert_eq!(tail, ["line 799999 of the log, took 813 ms", "line 800000 of the log, took 814 ms"]);
        assert!(cost < 6 << 20, "so does a tail: {cost} of {whole} bytes");
    }

    #[test]
    fn reads_of_a_one_frame_zstd_file_go_on_from_where_the_last_one_stopped() {
        use crate::window::stream::DECODED_HERE;
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=800_000).map(|i| format!("line {i} of the log, took {} ms\n", i % 977)).collect();
        let path = dir.path().join("app.log");
        std::fs::write(&path, &text).unwrap();
        let zstd = std::process::Command::new("zstd").args(["-q", "--rm"]).arg(&path).status();
        assert!(zstd.unwrap().success(), "zstd must be installed");
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let read = |offset: i64| {
            let before = DECODED_HERE.with(|decoded| decoded.get());
            let request = ReadRequest { offset: Some(offset), limit: Some(2), ..ReadRequest::new("app.log.zst") };
            let output = reader.read(&request, &ReadOptions::default()).output().into_owned();
            (output, DECODED_HERE.with(|decoded| decoded.get()) - before)
        };
        let whole = text.len() as u64;
        let (first, cost) = read(400_001);
        assert!(first.starts_with("400001: line 400001 of the log, took 408 ms\n400002: "), "{first}");
        assert!(cost >= whole, "a first read counts every line: {cost}");
        assert_eq!(read(400_001), (first.clone(), 0), "the text around the window was held when the pass went on");
        let (next, cost) = read(400_003);
        assert!(next.starts_with("400003: line 400003 of the log"), "{next}");
        assert_eq!(cost, 0, "so was the text after it");
        let (tail, cost) = read(-2);
        assert!(tail.starts_with("799999: line 799999 of the log"), "{tail}");
        assert_eq!(cost, 0, "the decoder that reached the end kept the end");
        let (far, cost) = read(700_001);
        assert!(far.starts_with("700001: line 700001 of the log"), "{far}");
        assert!(cost < whole, "one frame has no restart point: decoded from the top to the window ({cost})");
        let (further, cost) = read(705_001);
        assert!(further.starts_with("705001: line 705001 of the log"), "{further}");
        assert!(cost < 400_000, "a window further on decodes only the text between: {cost}");
        assert_eq!(read(400_001), (first, 0), "the held text is still there");
        // Rewritten since: what was parked from the file as it was is not used.
        let changed: String = text.replace("of the log", "of the new log");
        std::fs::write(dir.path().join("new.log"), &changed).unwrap();
        let packed = std::process::Command::new("zstd").args(["-q", "-c"]).arg(dir.path().join("new.log")).output();
        let packed = packed.unwrap().stdout;
        std::fs::write(dir.path().join("app.log.zst"), packed).unwrap();
        let (new, _) = read(700_001);
        assert!(new.starts_with("700001: line 700001 of the new log"), "{new}");
    }

    #[test]
    fn a_search_of_a_one_frame_zstd_file_leaves_its_index_and_its_first_match_for_the_reads_after_it() {
        use crate::window::stream::DECODED_HERE;
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=800_000)
            .map(|i| if i == 612_345 { "the one ERROR of the log\n".to_string() } else { format!("line {i} ok\n") })
            .collect();
        std::fs::write(dir.path().join("app.log"), &text).unwrap();
        let zstd = std::process::Command::new("zstd").args(["-q", "--rm"]).arg(dir.path().join("app.log")).status();
        assert!(zstd.unwrap().success(), "zstd must be installed");
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let read = |request: ReadRequest| {
            let before = DECODED_HERE.with(|decoded| decoded.get());
            let output = reader.read(&request, &ReadOptions::default()).output().into_owned();
            (output, DECODED_HERE.with(|decoded| decoded.get()) - before)
        };
        let (found, cost) = read(ReadRequest { find: Some("ERROR".into()), ..ReadRequest::new("app.log.zst") });
        assert!(found.contains("612345: the one ERROR of the log"), "{found}");
        assert!(cost >= text.len() as u64, "a first search reads the whole text: {cost}");
        let around = ReadRequest { offset: Some(612_340), limit: Some(10), ..ReadRequest::new("app.log.zst") };
        let (window, cost) = read(around);
        assert!(window.contains("612345: the one ERROR of the log"), "{window}");
        assert!(window.contains("of 800000"), "the total is known from the search: {window}");
        assert_eq!(cost, 0, "the text around the first match was held by the search");
        let again =
            ReadRequest { find: Some("ERROR".into()), offset: Some(700_001), ..ReadRequest::new("app.log.zst") };
        let (none, cost) = read(again);
        assert!(none.contains("no match"), "{none}");
        assert!(cost < text.len() as u64, "a search from a line starts where the index places it: {cost}");
    }
}
