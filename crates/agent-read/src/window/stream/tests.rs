//! The stream's contract: reads at any offset, restart points, and decoders parked between reads.
use super::*;
use std::sync::atomic::{AtomicU64, Ordering};

fn unlimited() -> Budget {
    Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(3600), crate::budget::Cancel::new())
}

fn numbers(count: u32) -> Vec<u8> {
    (0..count).flat_map(|n| n.to_le_bytes()).collect()
}

/// Text "decoded" from memory, counting what it yields; asked for a restart point, it makes one at the next
/// multiple of 1,000 bytes. From `fail_at` on, it fails as damaged input does.
struct Slice<'a> {
    text: &'a [u8],
    pos: usize,
    want: bool,
    made: Option<Restart>,
    decoded: &'a AtomicU64,
    fail_at: usize,
}

impl Read for Slice<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.fail_at {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
        }
        let n = buf.len().min(1000 - self.pos % 1000).min(self.text.len() - self.pos);
        buf[..n].copy_from_slice(&self.text[self.pos..self.pos + n]);
        self.pos += n;
        self.decoded.fetch_add(n as u64, Ordering::Relaxed);
        if self.want && self.pos.is_multiple_of(1000) {
            let at = self.pos as u64;
            self.made = Some(Restart { at, input: at, check: 7, state: Box::new([]) });
            self.want = false;
        }
        Ok(n)
    }
}

impl Decoder for Slice<'_> {
    fn want_restart(&mut self) {
        self.want = true;
    }

    fn take_restart(&mut self) -> Option<Restart> {
        self.made.take()
    }
}

/// What a test's opener decodes: `text`, refusing restart points whose check is not 7, and failing from `fail_at`
/// on when resumed.
struct Source<'a> {
    text: &'a [u8],
    decoded: &'a AtomicU64,
    fail_at: usize,
}

impl<'a> Source<'a> {
    fn open(&self, from: Option<&Restart>) -> io::Result<Box<dyn Decoder + 'a>> {
        if from.is_some_and(|point| point.check != 7) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the file changed"));
        }
        let fail_at = if from.is_some() { self.fail_at } else { usize::MAX };
        let pos = from.map_or(0, |point| point.at as usize);
        Ok(Box::new(Slice { text: self.text, pos, want: false, made: None, decoded: self.decoded, fail_at }))
    }
}

fn read(stream: &Stream<'_>, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let n = stream.read_at(offset, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn reads_forward_backward_and_past_the_end_agree_with_the_text() {
    let text = numbers(1_000_000);
    let decoded = AtomicU64::new(0);
    let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
    let open = |from: Option<&Restart>| source.open(from);
    let stream = Stream::new(&open, unlimited());
    let len = text.len() as u64;
    assert_eq!(read(&stream, 0, 10), text[..10]);
    assert_eq!(read(&stream, 300_000, 100_000), text[300_000..400_000]);
    let before = decoded.load(Ordering::Relaxed);
    assert_eq!(read(&stream, 399_999, 1), text[399_999..400_000], "inside the kept text: nothing decoded");
    assert_eq!(decoded.load(Ordering::Relaxed), before);
    assert_eq!(read(&stream, len - 5, 100), text[text.len() - 5..]);
    assert_eq!(read(&stream, len - 1, 1), text[text.len() - 1..], "the last byte after the end was met");
    assert_eq!(read(&stream, len, 4), Vec::<u8>::new());
    decoded.store(0, Ordering::Relaxed);
    assert_eq!(read(&stream, 5, 3), text[5..8], "a read before the kept text starts over");
    assert!(decoded.load(Ordering::Relaxed) <= CHUNK_LEN as u64);
}

#[test]
fn the_last_decoded_text_is_kept_so_a_tail_after_a_whole_pass_decodes_nothing() {
    let text = numbers(2_000_000);
    let len = text.len() as u64;
    let decoded = AtomicU64::new(0);
    let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
    let open = |from: Option<&Restart>| source.open(from);
    let stream = Stream::new(&open, unlimited());
    let mut offset = 0;
    while !read(&stream, offset, 50_000).is_empty() {
        offset += 50_000;
    }
    assert_eq!(decoded.load(Ordering::Relaxed), len, "one pass to the end");
    let tail = len - KEPT_TEXT as u64 + CHUNK_LEN as u64;
    let (from, to) = (tail as usize, tail as usize + 700_000);
    assert_eq!(read(&stream, tail, 700_000), text[from..to], "across several kept chunks");
    assert_eq!(read(&stream, len - 10, 100), text[text.len() - 10..]);
    assert_eq!(decoded.load(Ordering::Relaxed), len, "read from what is kept: nothing decoded again");
    let before_kept = len - KEPT_TEXT as u64 - CHUNK_LEN as u64;
    let (from, to) = (before_kept as usize, before_kept as usize + 10);
    assert_eq!(read(&stream, before_kept, 10), text[from..to]);
    assert!(decoded.load(Ordering::Relaxed) > len, "before what is kept: decoded from the start again");
}

#[test]
fn recorded_restart_points_let_a_later_read_decode_only_from_the_last_before_it() {
    let text = numbers(3 << 20);
    let decoded = AtomicU64::new(0);
    let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
    let open = |from: Option<&Restart>| source.open(from);
    let first = Stream::new(&open, unlimited());
    first.record_restarts();
    let mut offset = 0;
    while !read(&first, offset, CHUNK_LEN).is_empty() {
        offset += CHUNK_LEN as u64;
    }
    let restarts = Arc::new(first.recorded());
    assert!(restarts.count() >= 2, "{restarts:?}");
    let deep = text.len() as u64 - 1_000_000;
    let point = restarts.before(deep).unwrap().at;
    assert!(point > 4 << 20);
    decoded.store(0, Ordering::Relaxed);
    let later = Stream::new(&open, unlimited());
    assert_eq!(read(&later, 0, 16), text[..16], "the start is read from the start");
    later.resume_from(restarts.clone());
    assert_eq!(read(&later, deep, 100), text[deep as usize..deep as usize + 100]);
    assert!(decoded.load(Ordering::Relaxed) <= deep - point + 2 * CHUNK_LEN as u64, "decoded from the point on");
    assert_eq!(read(&later, 10, 10), text[10..20], "before the point: from the start again");
    assert!(!later.restart_failed());
}

#[test]
fn a_restart_point_refused_or_failing_falls_back_to_the_start_with_the_same_text() {
    let text = numbers(100_000);
    let decoded = AtomicU64::new(0);
    let point = |check| Restart { at: 200_000, input: 200_000, check, state: Box::new([]) };
    let mut refused = Restarts::new();
    refused.push(point(8));
    let mut failing = Restarts::new();
    failing.push(point(7));
    for (restarts, fail_at) in [(refused, usize::MAX), (failing, 250_000)] {
        let source = Source { text: &text, decoded: &decoded, fail_at };
        let open = |from: Option<&Restart>| source.open(from);
        let stream = Stream::new(&open, unlimited());
        stream.resume_from(Arc::new(restarts));
        assert_eq!(read(&stream, 240_000, 20_000), text[240_000..260_000]);
        assert!(stream.restart_failed());
        assert_eq!(read(&stream, 380_000, 20_000), text[380_000..], "no point is used again");
    }
}

#[test]
fn a_decoder_error_is_returned_not_hidden() {
    struct Damaged(usize);
    impl Read for Damaged {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(b'a');
            self.0 -= n;
            Ok(n)
        }
    }
    impl Decoder for Damaged {}
    let open = |_: Option<&Restart>| -> io::Result<Box<dyn Decoder>> { Ok(Box::new(Damaged(100))) };
    let stream = Stream::new(&open, unlimited());
    let mut buf = [0u8; 150];
    assert_eq!(stream.read_at(0, &mut buf[..100]).unwrap(), 100, "the bytes before the damage");
    assert_eq!(stream.read_at(90, &mut buf).unwrap(), 10, "what is left before the damage");
    let error = stream.read_at(100, &mut buf).unwrap_err();
    assert_eq!(damage(&error), Some("corrupt"));
}

/// Text "decoded" from memory by a decoder that can be kept between reads: it owns what it reads. It fails as
/// damaged input does from the offset `fail_from` holds (shared with the test, which moves it once parked).
struct Owned {
    text: Arc<Vec<u8>>,
    pos: usize,
    fail_from: Arc<AtomicU64>,
    budgets: Arc<AtomicU64>,
}

impl Read for Owned {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos as u64 >= self.fail_from.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
        }
        let n = buf.len().min(self.text.len() - self.pos);
        buf[..n].copy_from_slice(&self.text[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Decoder for Owned {
    fn into_kept(self: Box<Self>) -> Option<Box<dyn Keepable>> {
        Some(self)
    }
}

impl Keepable for Owned {
    fn rebudget(&mut self, _: &Budget) {
        self.budgets.fetch_add(1, Ordering::Relaxed);
    }

    fn memory(&self) -> u64 {
        0
    }
}

/// An opener of [`Owned`] decoders over `text`; each fails from the offset the `Arc` it is given holds.
fn owned_opener(
    text: &Arc<Vec<u8>>,
    budgets: &Arc<AtomicU64>,
    fail_from: impl Fn() -> Arc<AtomicU64> + Sync + 'static,
) -> impl Fn(Option<&Restart>) -> io::Result<Box<dyn Decoder>> + Sync + 'static {
    let (text, budgets) = (text.clone(), budgets.clone());
    move |_| {
        let (text, budgets, fail_from) = (text.clone(), budgets.clone(), fail_from());
        Ok(Box::new(Owned { text, pos: 0, fail_from, budgets }) as Box<dyn Decoder>)
    }
}

/// Bytes the streams of this thread decode while `f` runs.
fn decoded_by<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = DECODED_HERE.with(|decoded| decoded.get());
    let value = f();
    (value, DECODED_HERE.with(|decoded| decoded.get()) - before)
}

#[test]
fn a_parked_stream_goes_on_where_its_read_stopped_with_the_next_reads_budget() {
    let text = Arc::new(numbers(2_000_000));
    let budgets = Arc::new(AtomicU64::new(0));
    let owned = owned_opener(&text, &budgets, || Arc::new(AtomicU64::new(u64::MAX)));
    let open: &Opener<'_> = &|from| owned(from);
    let first = Stream::new(open, unlimited());
    let (window, cost) = decoded_by(|| read(&first, 6_000_000, 100_000));
    assert_eq!(window, text[6_000_000..6_100_000]);
    assert!(cost >= 6_100_000, "the first read decodes the text before its window: {cost}");
    let parked = first.park();
    assert_eq!(parked.len(), 1, "a kept decoder is parked");
    assert_eq!(read(&first, 0, 4), text[..4], "the stream it was parked from starts afresh");

    let later = Stream::adopting(open, unlimited(), parked);
    assert_eq!(budgets.load(Ordering::Relaxed), 1, "the parked decoder is given the later read's budget");
    let (again, cost) = decoded_by(|| read(&later, 6_000_000, 100_000));
    assert_eq!(again, window);
    assert_eq!(cost, 0, "the same window again is in the text the stream kept");
    let (next, cost) = decoded_by(|| read(&later, 6_100_000, 100_000));
    assert_eq!(next, text[6_100_000..6_200_000]);
    assert!(cost <= 100_000 + CHUNK_LEN as u64, "the next window decodes only itself: {cost}");
    let (start, cost) = decoded_by(|| read(&later, 10, 10));
    assert_eq!(start, text[10..20], "before the kept text: from the start again");
    assert!(cost <= CHUNK_LEN as u64, "{cost}");
    let (back, cost) = decoded_by(|| read(&later, 6_150_000, 10));
    assert_eq!(back, text[6_150_000..6_150_010]);
    assert_eq!(cost, 0, "the decoder set aside for the start still has its text");
    let parked = later.park();
    assert_eq!(parked.len(), 2, "both decoders are parked");
    let third = Stream::adopting(open, unlimited(), parked);
    let (start, cost) = decoded_by(|| read(&third, 20, 10));
    assert_eq!((start, cost), (text[20..30].to_vec(), 0), "each read goes on with the decoder that has its text");
    let (deep, cost) = decoded_by(|| read(&third, 6_190_000, 10));
    assert_eq!((deep, cost), (text[6_190_000..6_190_010].to_vec(), 0));
}

#[test]
fn a_parked_decoder_that_meets_damage_gives_way_to_one_from_the_start() {
    let text = Arc::new(numbers(1_000_000));
    let budgets = Arc::new(AtomicU64::new(0));
    let parked_fails = Arc::new(AtomicU64::new(u64::MAX));
    let first_made = std::sync::atomic::AtomicBool::new(false);
    let first_fail = parked_fails.clone();
    let owned = owned_opener(&text, &budgets, move || {
        // The first decoder made is the one parked; those made after it never fail.
        if first_made.swap(true, Ordering::Relaxed) { Arc::new(AtomicU64::new(u64::MAX)) } else { first_fail.clone() }
    });
    let open: &Opener<'_> = &|from| owned(from);
    let first = Stream::new(open, unlimited());
    assert_eq!(read(&first, 1_000_000, 1000), text[1_000_000..1_001_000]);
    let parked = first.park();
    parked_fails.store(2_000_000, Ordering::Relaxed);
    let later = Stream::adopting(open, unlimited(), parked);
    let (window, cost) = decoded_by(|| read(&later, 3_000_000, 1000));
    assert_eq!(window, text[3_000_000..3_001_000], "the same text, decoded from the start");
    assert!(cost >= 3_000_000, "{cost}");
    assert!(!later.restart_failed(), "no restart point was wrong");
    assert_eq!(later.park().len(), 1, "the failed decoder is dropped, the one from the start parked");
}

#[test]
fn a_decoder_that_failed_or_cannot_be_kept_is_not_parked() {
    let text = Arc::new(numbers(100_000));
    let budgets = Arc::new(AtomicU64::new(0));
    let owned = owned_opener(&text, &budgets, || Arc::new(AtomicU64::new(200_000)));
    let open: &Opener<'_> = &|from| owned(from);
    let failing = Stream::new(open, unlimited());
    assert_eq!(read(&failing, 0, 100_000), text[..100_000]);
    assert!(failing.read_at(300_000, &mut [0u8; 16]).is_err());
    assert!(failing.park().is_empty(), "a decoder that failed");
    let owned = owned_opener(&text, &budgets, || Arc::new(AtomicU64::new(u64::MAX)));
    let open: &Opener<'_> = &|from| owned(from);
    let fresh = Stream::new(open, unlimited());
    assert!(fresh.park().is_empty(), "no decoder yet");
    let decoded = AtomicU64::new(0);
    let source = Source { text: &text, decoded: &decoded, fail_at: usize::MAX };
    let borrowed = |from: Option<&Restart>| source.open(from);
    let stream = Stream::new(&borrowed, unlimited());
    assert_eq!(read(&stream, 0, 10), text[..10]);
    assert!(stream.park().is_empty(), "a decoder that borrows what only its read holds");
}

#[test]
fn text_held_around_a_window_is_parked_and_a_read_past_it_decodes_the_rest() {
    let text = Arc::new(numbers(2_000_000));
    let budgets = Arc::new(AtomicU64::new(0));
    let owned = owned_opener(&text, &budgets, || Arc::new(AtomicU64::new(u64::MAX)));
    let open: &Opener<'_> = &|from| owned(from);
    let pass = Stream::new(open, unlimited());
    pass.hold_text_around(3_000_000);
    let mut offset = 0;
    while !read(&pass, offset, CHUNK_LEN).is_empty() {
        offset += CHUNK_LEN as u64;
    }
    let parked = pass.park();
    assert_eq!(parked.len(), 2, "the held text and the decoder at the end");
    let held = parked[0].kept.start..parked[0].kept.end();
    assert!(held.start <= 3_000_000 - KEPT_TEXT as u64 / 2 + CHUNK_LEN as u64, "{held:?}");
    assert!(held.end >= 3_000_000 + KEPT_TEXT as u64 / 2, "{held:?}");
    let later = Stream::adopting(open, unlimited(), parked);
    let (window, cost) = decoded_by(|| read(&later, 3_000_000, 1000));
    assert_eq!((window, cost), (text[3_000_000..3_001_000].to_vec(), 0));
    let across = held.end - 10;
    let (past, cost) = decoded_by(|| read(&later, across, 100_000));
    assert_eq!(past, text[across as usize..across as usize + 100_000], "across the end of the held text");
    assert!(cost >= held.end, "past the held text: decoded from the start ({cost})");
    let (tail, cost) = decoded_by(|| read(&later, text.len() as u64 - 10, 10));
    assert_eq!((tail, cost), (text[text.len() - 10..].to_vec(), 0), "the end, from the decoder parked there");
}
