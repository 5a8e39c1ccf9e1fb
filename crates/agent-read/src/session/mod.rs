//! A session: the reads one model makes over one conversation, through one [`Reader`].
//!
//! On top of plain reads a session keeps a ledger of what it returned, and uses it three ways:
//! - **Freshness.** [`Session::freshness`] tells an edit tool whether a file changed since the model last read it.
//!   Content decides (a whole-file hash for files up to 8 MiB), so a file that was only touched is still fresh, and a
//!   change within the same clock tick is still caught.
//! - **Repeat-read stubs** (when enabled). An exact repeat of an earlier read gets a one-line notice instead of the
//!   content: same path, same window, and the file and the answer unchanged. `reread: true` in the request asks for
//!   the content anyway.
//! - **Budget** (when set). The session counts the bytes and tokens it returned (an image by what it costs a model,
//!   estimated from its size). With a token budget, every answer says in its footer what is left, and a read that
//!   asks for no particular window gets a smaller one as the budget runs out. Answers never stop, and the footer
//!   always says when a window was shrunk.
//!
//! A session can also carry one notice from its owner to the model ([`Session::notify`]): it ends the footer of the
//! next answer, once (the MCP server says so when a client's roots were refused).
//!
//! A session is thread-safe: reads run in parallel, and the ledger is locked only to look up and record.

mod ledger;
mod many;

use crate::config::SessionConfig;
use crate::engine::observe::ContentHash;
use crate::engine::{ReadOptions, Reader, Seen};
use crate::panics;
use crate::render::session as notes;
use crate::request::ReadRequest;
use crate::result::ReadResult;
pub use crate::tokens::TokenCounting;
use ledger::{Ledger, WindowRecord};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::SystemTime;

/// Files smaller than this are hashed on every session read; bigger ones reuse the hash of an identical version.
const REHASH_BELOW: u64 = 1024 * 1024;

/// How a session behaves. The default: no stubs, no budget, estimated token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSettings {
    /// Answer an exact repeat of an earlier read of an unchanged file with a one-line notice.
    pub repeat_read_stubs: bool,
    /// Tokens the session may return in all; every answer then says what is left.
    pub budget_tokens: Option<u64>,
    /// How tokens are counted.
    pub token_counting: TokenCounting,
}

// Beside the settings it gives, so that the configuration imports nothing of the session.
impl SessionConfig {
    /// The settings these values give, with `stubs_by_default` where `repeat_read_stubs` is not set.
    pub fn settings(&self, stubs_by_default: bool) -> SessionSettings {
        SessionSettings {
            repeat_read_stubs: self.repeat_read_stubs.unwrap_or(stubs_by_default),
            budget_tokens: self.budget_tokens,
            token_counting: self.token_counting.unwrap_or_default(),
        }
    }
}

/// What a session has returned so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Usage {
    /// Reads answered (stubs and errors included).
    pub reads: u64,
    /// Bytes of output returned.
    pub bytes: u64,
    /// Tokens of output returned (estimated or exact, per the settings).
    pub tokens: u64,
    /// Reads answered with an "unchanged" stub.
    pub stubs: u64,
    /// Bytes the stubs stood for, not sent again.
    pub bytes_saved: u64,
    /// The token budget, when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

impl Usage {
    /// Tokens left in the budget (0 when spent); `None` without a budget.
    pub fn tokens_left(&self) -> Option<u64> {
        self.budget_tokens.map(|budget| budget.saturating_sub(self.tokens))
    }
}

/// Whether a file changed since the session last read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Freshness {
    /// The session has not read it (or has forgotten it).
    Unread,
    /// The same as when the session last read it.
    Fresh {
        /// When the session last read it.
        #[serde(with = "humantime_serde_rfc3339")]
        read_at: SystemTime,
        /// `content` when whole-file hashes decided; `metadata` (identity, size, times) for files over 8 MiB.
        basis: Basis,
    },
    /// Different from when the session last read it.
    Changed {
        /// When the session last read it.
        #[serde(with = "humantime_serde_rfc3339")]
        read_at: SystemTime,
        /// How it changed, for the model or the person: "deleted", "content changed", …
        reason: String,
    },
}

/// What a freshness check compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Basis {
    /// Hashes of the whole content.
    Content,
    /// Identity, size and times (files too big to hash, directories).
    Metadata,
}

/// A session over a reader. Cheap to create; one per conversation (the MCP server makes one per connection).
#[derive(Debug)]
pub struct Session {
    reader: RwLock<Arc<Reader>>,
    settings: SessionSettings,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    ledger: Ledger,
    usage: Usage,
    /// A notice for the next answer's footer (see [`Session::notify`]).
    notice: Option<Notice>,
}

/// A notice waiting for its answer, and the reader whose answers may carry it: one about new roots must not ride on
/// an answer read under the old ones.
#[derive(Debug)]
struct Notice {
    text: String,
    for_reader: Option<Arc<Reader>>,
}

/// Longest notice a session carries; a longer one is cut, marked with `…`.
pub const MAX_NOTICE_BYTES: usize = 512;

impl Session {
    /// A session reading through `reader`; fails when the settings ask for exact token counts this build cannot make.
    pub fn new(reader: Arc<Reader>, settings: SessionSettings) -> Result<Session, String> {
        settings.token_counting.available()?;
        let usage = Usage { budget_tokens: settings.budget_tokens, ..Usage::default() };
        Ok(Session { reader: RwLock::new(reader), settings, state: Mutex::new(State { usage, ..State::default() }) })
    }

    /// The reader reads go through.
    pub fn reader(&self) -> Arc<Reader> {
        self.reader.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Reads through another reader from now on (the client's roots changed); the ledger and usage are kept.
    pub fn replace_reader(&self, reader: Arc<Reader>) {
        *self.reader.write().unwrap_or_else(PoisonError::into_inner) = reader;
    }

    /// [`Session::replace_reader`], and [`Session::notify`] with `notice` about the change, which only an answer read
    /// through the new reader carries: a read already under way under the old one does not take it.
    pub fn replace_reader_and_notify(&self, reader: Arc<Reader>, notice: &str) {
        let text = notes::clipped(notice, MAX_NOTICE_BYTES);
        self.lock().notice = Some(Notice { text, for_reader: Some(Arc::clone(&reader)) });
        self.replace_reader(reader);
    }

    /// Ends the footer of the next answer (whatever it is) with `notice`, once; a later notice replaces one not yet
    /// given. It is cut to `MAX_NOTICE_BYTES` (512), and the next answer's window leaves room for it.
    pub fn notify(&self, notice: &str) {
        self.lock().notice = Some(Notice { text: notes::clipped(notice, MAX_NOTICE_BYTES), for_reader: None });
    }

    /// The settings the session was made with.
    pub fn settings(&self) -> SessionSettings {
        self.settings
    }

    /// Reads one request, recording it (see [`Reader::read`]; the session's cap, when its budget runs low, and
    /// `options.max_output_bytes` both bound it). Never panics; every failure is an `Error` result.
    pub fn read(&self, request: &ReadRequest, options: &ReadOptions) -> ReadResult {
        let read = || {
            let reader = self.reader();
            let shrink = self.shrink_for(request, &reader, options.max_output_bytes);
            let known = |seen: &Seen| self.known_content(seen);
            let capped = ReadOptions { max_output_bytes: Some(shrink.cap), ..options.clone() };
            let read = reader.read_observed(request, &capped, Some(&known));
            self.record(request, &reader, &shrink, read)
        };
        // The reader catches its own panics; this catches the session's (see `panics`).
        panics::caught(read).unwrap_or_else(|internal| self.refuse(internal))
    }

    /// The answer to a request refused before it could be read (see [`Reader::refuse`]), counted like any answer.
    pub fn refuse(&self, error: crate::error::ReadError) -> ReadResult {
        let reader = self.reader();
        self.account(reader.refuse(error), None, &reader)
    }

    /// The output cap a request gets from this session: smaller than the reader's (or the caller's, `asked`) when the
    /// budget runs low.
    fn shrink_for(&self, request: &ReadRequest, reader: &Reader, asked: Option<usize>) -> Shrink {
        let asks_for_a_window = request.limit.is_some() || request.start_byte.is_some() || request.end_byte.is_some();
        self.window_shrink(asks_for_a_window, capped(reader, asked))
    }

    /// Records what a read returned in the ledger (a stub when it repeats an earlier read) and in the usage.
    fn record(
        &self,
        request: &ReadRequest,
        reader: &Arc<Reader>,
        shrink: &Shrink,
        (result, seen): (ReadResult, Option<Seen>),
    ) -> ReadResult {
        let result = match seen {
            Some(seen) if result.is_ok() => {
                let lexical = reader.lexical_path(&request.path).ok();
                self.remember(request, result, seen, lexical)
            }
            _ => result,
        };
        // Say the window was shrunk only when the smaller cap did end it early.
        let shrunk_to = shrink.shrunk_to.filter(|_| cap_hit(&result));
        self.account(result, shrunk_to, reader)
    }

    /// Whether the file at `path` (resolved like a read) changed since this session last read it.
    pub fn freshness(&self, path: &str) -> Freshness {
        let reader = self.reader();
        match reader.observe(path) {
            Ok(now) => {
                let state = self.lock();
                let Some(record) = state.ledger.file(&now.real_path) else { return Freshness::Unread };
                let basis = if record.seen.content.is_some() && now.content.is_some() {
                    Basis::Content
                } else {
                    Basis::Metadata
                };
                if record.seen.same_content_as(&now) {
                    Freshness::Fresh { read_at: record.read_at, basis }
                } else {
                    Freshness::Changed {
                        read_at: record.read_at,
                        reason: notes::change_reason(record.seen.change_to(&now)),
                    }
                }
            }
            Err(error) => {
                let Ok(lexical) = reader.lexical_path(path) else { return Freshness::Unread };
                let state = self.lock();
                let record = state.ledger.file(&lexical).or_else(|| state.ledger.file_by_alias(&lexical));
                match record {
                    Some(record) => {
                        Freshness::Changed { read_at: record.read_at, reason: notes::gone_reason(error.code) }
                    }
                    None => Freshness::Unread,
                }
            }
        }
    }

    /// Forgets what the session read of `path` (its next read sends the content, and it reads as unread).
    pub fn forget(&self, path: &str) {
        let reader = self.reader();
        let real = reader.observe(path).map(|seen| seen.real_path).or_else(|_| reader.lexical_path(path));
        if let Ok(real) = real {
            self.lock().ledger.forget(&real);
        }
    }

    /// Forgets every read (for a harness that cleared or compacted the model's context); usage is kept.
    pub fn forget_all(&self) {
        self.lock().ledger.clear();
    }

    /// What the session has returned so far.
    pub fn usage(&self) -> Usage {
        self.lock().usage
    }

    /// Files the ledger remembers (at most 4,096; the least recently read are forgotten first).
    pub fn files_remembered(&self) -> usize {
        self.lock().ledger.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the ledger half-written (each update is a few assignments): keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The content hash the ledger holds for a big file found exactly as recorded (identity, size, times), so that a
    /// repeated read of an unchanged 1–8 MiB file costs its window, not a hash of the whole file. Small files are
    /// always hashed afresh: it is cheap, and exact even where timestamps are as coarse as a clock tick.
    fn known_content(&self, seen: &Seen) -> Option<ContentHash> {
        if seen.version.size < REHASH_BELOW {
            return None;
        }
        let state = self.lock();
        let record = state.ledger.file(&seen.real_path)?;
        let same =
            record.seen.device == seen.device && record.seen.inode == seen.inode && record.seen.version == seen.version;
        same.then_some(record.seen.content).flatten()
    }

    /// Records a successful read, and turns it into a stub when it repeats an earlier one exactly.
    fn remember(
        &self,
        request: &ReadRequest,
        result: ReadResult,
        seen: Seen,
        lexical: Option<std::path::PathBuf>,
    ) -> ReadResult {
        let output = result.output();
        let window =
            WindowRecord { key: window_key(request), output: ContentHash::of(output.as_bytes()), read_at: now() };
        let mut state = self.lock();
        panics::test_point("session", &request.path);
        let earlier = (self.settings.repeat_read_stubs && !request.reread)
            .then(|| state.ledger.repeat_of(&seen, window.key, window.output).map(|earlier| earlier.read_at))
            .flatten();
        state.ledger.record(seen, lexical, window, earlier.is_none());
        match earlier {
            Some(read_at) => {
                state.usage.stubs += 1;
                state.usage.bytes_saved += output.len() as u64;
                ReadResult::Unchanged(notes::stub(&result, &output, read_at))
            }
            None => result,
        }
    }

    /// Counts what is returned (an image by what it costs a model, not by its bytes), and says in the footer what
    /// the budget has left.
    fn account(&self, result: ReadResult, shrunk_to: Option<usize>, reader: &Arc<Reader>) -> ReadResult {
        let images = image_tokens(&result);
        let result = match self.charge(&result.output(), images, shrunk_to, reader) {
            Some(note) => notes::with_note(result, note),
            None => result,
        };
        self.lock().usage.bytes += result.output().len() as u64;
        result
    }

    /// Counts one answer's tokens (its text, `images` for what it attaches, and its budget note) and returns the
    /// note to add, when there is a budget. The caller adds the note, then the answer's final bytes to
    /// `usage.bytes`.
    fn charge(&self, output: &str, images: u64, shrunk_to: Option<usize>, reader: &Arc<Reader>) -> Option<String> {
        let counting = self.settings.token_counting;
        // Counted before taking the lock: exact counts of a 50 KiB answer take milliseconds.
        let answer_tokens = counting.count(output) + images;
        let mut state = self.lock();
        let ours =
            |notice: &Notice| notice.for_reader.as_ref().is_none_or(|for_reader| Arc::ptr_eq(for_reader, reader));
        let notice = state.notice.take_if(|notice| ours(notice)).map(|notice| notice.text);
        let with_notice = |note: String| match &notice {
            Some(notice) => notes::notice_then(notice, &note),
            None => note,
        };
        let (note, tokens) = match state.usage.budget_tokens {
            Some(budget) => {
                // The note's own tokens are counted from a first draft (the number in it barely changes its
                // length), plus one for the separator, so that "left" already includes this whole answer.
                let spent = state.usage.tokens + answer_tokens;
                let draft = with_notice(notes::budget_note(budget.saturating_sub(spent), budget, shrunk_to));
                let note_tokens = counting.count(&draft) + 1;
                let left = budget.saturating_sub(spent + note_tokens);
                (Some(with_notice(notes::budget_note(left, budget, shrunk_to))), answer_tokens + note_tokens)
            }
            None => {
                let note_tokens = notice.as_deref().map_or(0, |notice| counting.count(notice) + 1);
                (notice, answer_tokens + note_tokens)
            }
        };
        state.usage.reads += 1;
        state.usage.tokens += tokens;
        note
    }

    /// The output cap for this read: the configured one, or a smaller one when a budget is running out and the
    /// request asked for no particular window.
    fn window_shrink(&self, asks_for_a_window: bool, configured: usize) -> Shrink {
        let state = self.lock();
        // Room for a pending notice and its separator, so that the answer with it still fits the configured cap.
        let configured = configured.saturating_sub(state.notice.as_ref().map_or(0, |notice| notice.text.len() + 3));
        // Room for the budget note, likewise.
        let configured_with_note = configured.saturating_sub(notes::BUDGET_NOTE_RESERVE);
        let Some(left) = state.usage.tokens_left() else {
            return Shrink { cap: configured, shrunk_to: None };
        };
        drop(state);
        let affordable = usize::try_from(self.settings.token_counting.bytes_for(left)).unwrap_or(usize::MAX);
        if asks_for_a_window || affordable >= configured_with_note {
            return Shrink { cap: configured_with_note, shrunk_to: None };
        }
        let cap = affordable.max(crate::limits::MIN_OUTPUT_BYTES);
        Shrink { cap, shrunk_to: Some(cap) }
    }
}

/// The reader's output cap, or the smaller one a caller asked for.
fn capped(reader: &Reader, asked: Option<usize>) -> usize {
    let configured = reader.limits().max_output_bytes;
    asked.map_or(configured, |asked| asked.min(configured))
}

/// The output cap chosen for one read.
struct Shrink {
    cap: usize,
    /// The smaller cap, when the budget made the window smaller than the configured one.
    shrunk_to: Option<usize>,
}

/// Identifies a read's window: the request with its path and `reread` left out.
fn window_key(request: &ReadRequest) -> ContentHash {
    let window = ReadRequest { path: String::new(), reread: false, ..request.clone() };
    ContentHash::of(serde_json::to_string(&window).unwrap_or_default().as_bytes())
}

/// What the images an answer attaches cost a model: for each, the largest estimate of the model families (the
/// session does not know which model reads it).
fn image_tokens(result: &ReadResult) -> u64 {
    match result {
        ReadResult::Attachment(attached) => attached.meta.estimated_tokens.map_or(0, |tokens| tokens.most()),
        _ => 0,
    }
}

/// Whether the output cap ended the answer's window early.
fn cap_hit(result: &ReadResult) -> bool {
    match result {
        ReadResult::Text(text) => text.meta.byte_cap_hit,
        ReadResult::Directory(listing) => listing.meta.byte_cap_hit,
        _ => false,
    }
}

fn now() -> SystemTime {
    SystemTime::now()
}

/// `SystemTime` as RFC 3339 (UTC, seconds) in JSON.
mod humantime_serde_rfc3339 {
    use serde::Serializer;
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
        match crate::render::rfc3339_seconds(*time) {
            Some(text) => serializer.serialize_str(&text),
            None => Err(serde::ser::Error::custom("a time before 1970 or after 9999")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn a_notice_ends_the_next_answer_once_and_leaves_room_for_itself() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x".repeat(3000)).unwrap();
        let mut config = Config::with_roots([dir.path()]);
        config.limits.max_output_bytes = 2048;
        let session = Session::new(Arc::new(Reader::new(config).unwrap()), SessionSettings::default()).unwrap();
        session.notify(&format!("roots: {}", "r".repeat(1000)));
        let first = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned();
        assert!(first.len() <= 2048, "{} bytes", first.len());
        assert!(first.ends_with(&format!("{}…)", "r".repeat(400))), "{first}");
        let second = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned();
        assert!(!second.contains("roots:"), "{second}");
        session.notify("roots: refused");
        let error = session.read(&ReadRequest::new("missing.txt"), &ReadOptions::default());
        assert!(error.output().contains("roots: refused"), "{}", error.output());
    }

    #[test]
    fn a_notice_about_new_roots_rides_only_on_an_answer_read_under_them() {
        let (old_root, new_root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(old_root.path().join("a.txt"), "old\n").unwrap();
        std::fs::write(new_root.path().join("a.txt"), "new\n").unwrap();
        let reader = |root: &std::path::Path| Arc::new(Reader::new(Config::with_roots([root])).unwrap());
        let session = Session::new(reader(old_root.path()), SessionSettings::default()).unwrap();
        // A read under the old roots is under way when the roots change; it finishes after the change.
        let under_way = session.reader();
        let (answer, seen) = under_way.read_observed(&ReadRequest::new("a.txt"), &ReadOptions::default(), None);
        session.replace_reader_and_notify(reader(new_root.path()), "client roots refused");
        let shrink = Shrink { cap: 50 * 1024, shrunk_to: None };
        let late = session.record(&ReadRequest::new("a.txt"), &under_way, &shrink, (answer, seen));
        assert!(late.output().starts_with("1: old") && !late.output().contains("refused"), "{}", late.output());
        let next = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default());
        assert!(
            next.output().starts_with("1: new") && next.output().contains("client roots refused"),
            "{}",
            next.output()
        );
    }

    #[test]
    fn only_a_big_file_found_exactly_as_recorded_reuses_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let big = "line of a big log\n".repeat(70_000);
        std::fs::write(dir.path().join("big.log"), &big).unwrap();
        std::fs::write(dir.path().join("small.txt"), "small\n").unwrap();
        let reader = Arc::new(Reader::new(Config::with_roots([dir.path()])).unwrap());
        let session = Session::new(reader.clone(), SessionSettings::default()).unwrap();
        for path in ["big.log", "small.txt"] {
            assert!(
                session
                    .read(&ReadRequest { offset: Some(-1), ..ReadRequest::new(path) }, &ReadOptions::default())
                    .is_ok()
            );
        }
        let big_now = reader.observe("big.log").unwrap();
        assert_eq!(session.known_content(&big_now), Some(ContentHash::of(big.as_bytes())));
        assert_eq!(session.known_content(&reader.observe("small.txt").unwrap()), None, "small files: hash again");
        let mut touched = big_now.clone();
        touched.version.changed_ns += 1;
        assert_eq!(session.known_content(&touched), None, "another version: hash again");
    }

    #[test]
    fn a_known_hash_spares_the_engine_hashing_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let stand_in = ContentHash(7);
        let known = |_: &crate::engine::Seen| Some(stand_in);
        let request = ReadRequest::new("a.txt");
        let (_, seen) = reader.read_observed(&request, &ReadOptions::default(), Some(&known));
        assert_eq!(seen.unwrap().content, Some(stand_in));
        let (_, seen) = reader.read_observed(&request, &ReadOptions::default(), Some(&|_: &Seen| None));
        assert_eq!(seen.unwrap().content, Some(ContentHash::of(b"one\n")));
    }
}
