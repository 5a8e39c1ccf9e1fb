//! The engine: a [`Reader`] runs one request down the road every read travels —
//! request → resolve & open (roots, policy) → classify → window → render — and returns a plain [`ReadResult`].
//!
//! The engine knows nothing of the faces (command line, MCP): they hand it a request and print what it returns.

#[cfg(feature = "archives")]
mod archive;
#[cfg(feature = "compressed")]
mod compressed;
mod count;
mod directory;
#[cfg(feature = "documents")]
mod document;
mod file;
mod listings;
mod narrow;
pub mod observe;
mod table;

#[cfg(feature = "pdf")]
#[cfg(feature = "pdf")]
mod pdf;
mod target;
mod text;

use crate::audit::{self, AuditEntry, AuditLog};
use crate::budget::{Budget, Cancel};
use crate::classify::Codec;
use crate::config::Config;
use crate::config_error::ConfigError;
use crate::error::{ErrorCode, MAX_MESSAGE_BYTES, ReadError};
use crate::limits::{Limits, MIN_OUTPUT_BYTES};
use crate::panics;
use crate::policy::{Denial, Policy};
use crate::request::{ReadRequest, Window};
use crate::resolve::{Handle, Opened, Resolved, Roots};
use crate::result::ReadResult;
use crate::suggest;
use crate::window::index::disk::Folder;
use crate::window::index::store::LineIndexes;
use cap_std::fs::FileType;
pub use observe::Seen;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A configured, thread-safe reader. Build it once; call [`Reader::read`] (or [`Reader::read_many`]) from any thread.
#[derive(Debug)]
pub struct Reader {
    roots: Roots,
    limits: Limits,
    /// Shared with the readers narrowed from this one (see [`Reader::narrowed`]), like the fields below.
    policy: Arc<Policy>,
    audit: Option<Arc<AuditLog>>,
    media: Arc<file::Media>,
    /// Where big text files' lines start, learned by earlier reads.
    indexes: Arc<LineIndexes>,
    /// Sorted listings of big directories, for their later pages.
    listings: Arc<listings::Listings>,
}

/// Where a request got to, for the audit log (and for a session, what it read).
#[derive(Debug, Default)]
struct Trace {
    root: Option<usize>,
    shown: Option<String>,
    seen: Option<Seen>,
}

/// How one read (or `read_many` call) runs beyond what its request says. The default: not cancelled from elsewhere,
/// its time budget counting from when the read starts, within the configured output cap.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Stops the read with `CANCELLED` when given (keep a clone; [`Cancel::cancel`] from any thread), within one
    /// chunk's work (64 KiB) or a few thousand directory entries. Made with [`Cancel::arrived_at`], it also says when
    /// the request arrived: the time budget then counts from there, so a wait in a queue is spent from it.
    pub cancel: Cancel,
    /// A smaller output cap for this read; the configured cap still bounds it (and so does the minimum cap).
    pub max_output_bytes: Option<usize>,
}

impl ReadOptions {
    /// Options for a read that `cancel` can stop, everything else at its default.
    pub fn cancellable(cancel: &Cancel) -> ReadOptions {
        ReadOptions { cancel: cancel.clone(), ..ReadOptions::default() }
    }
}

/// A lookup of a content hash already known for a file as a read found it (same real path, identity, size and
/// times), which spares hashing it again; `None` from it means hash.
pub(crate) type KnownContent<'a> = dyn Fn(&Seen) -> Option<observe::ContentHash> + Sync + 'a;

impl Reader {
    /// Builds a reader that parses PDFs and documents in this process (PDF extraction in a thread, bounded but not
    /// isolated); fails if a root is missing or not a directory, a policy glob is malformed, the audit log cannot be
    /// opened, or the limits cannot be honoured.
    pub fn new(config: Config) -> Result<Reader, ConfigError> {
        let media = file::Media::in_process(config.pdf_as_document);
        Reader::with_media(config, media)
    }

    /// Builds a reader that parses PDFs and documents in child processes of `worker`, a program whose `main` is
    /// [`worker_main`](crate::worker_main) (the `agent-read-worker` binary), so that a hostile file cannot crash, hang
    /// or exhaust the caller, and the parsers are never mapped into the caller's process: a program that builds its
    /// readers with this alone links none of them. Fails as [`Reader::new`] does.
    pub fn with_worker(config: Config, worker: PathBuf) -> Result<Reader, ConfigError> {
        let media = file::Media::in_worker(worker, config.pdf_as_document);
        Reader::with_media(config, media)
    }

    fn with_media(config: Config, media: file::Media) -> Result<Reader, ConfigError> {
        config.limits.validate()?;
        let audit = config.audit_log.as_deref().map(AuditLog::open).transpose()?.map(Arc::new);
        let indexes = match &config.index_cache {
            Some(dir) => LineIndexes::with_folder(
                Folder::open(dir)
                    .map_err(|e| ConfigError::IndexCache { path: dir.to_path_buf(), reason: e.to_string() })?,
            ),
            None => LineIndexes::in_memory(),
        };
        Ok(Reader {
            roots: Roots::new(&config.roots)?,
            limits: config.limits,
            policy: Arc::new(Policy::new(&config.policy)?),
            audit,
            media: Arc::new(media),
            indexes: Arc::new(indexes),
            listings: Arc::default(),
        })
    }

    /// The limits every read is bounded by.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Reads one request: the one way in. Never panics on any input; every failure is an `Error` result. It does
    /// blocking file I/O: from async code, call it on a blocking thread (`spawn_blocking`).
    ///
    /// A face holding untrusted JSON turns it into a request with [`ReadRequest::from_json`] (or
    /// [`ReadRequest::from_value`]) and answers a refusal with [`Reader::refuse`].
    pub fn read(&self, request: &ReadRequest, options: &ReadOptions) -> ReadResult {
        self.read_observed(request, options, None).0
    }

    /// Reads one request like [`Reader::read`]; with `known_content` (a session's ledger), also says what it read —
    /// the real path, identity, size, times and a content hash ([`Seen`]) — when the read got as far as opening its
    /// target.
    pub(crate) fn read_observed(
        &self,
        request: &ReadRequest,
        options: &ReadOptions,
        known_content: Option<&KnownContent<'_>>,
    ) -> (ReadResult, Option<Seen>) {
        let capped = self.capped_limits(options.max_output_bytes);
        let limits = capped.as_ref().unwrap_or(&self.limits);
        let observe = known_content.is_some();
        self.read_bounded(request, &options.cancel, &Bounds { limits, attachments: true, observe, known_content })
    }

    /// The reader's limits with a smaller output cap, when a read asks for one (never below the minimum cap).
    fn capped_limits(&self, max_output_bytes: Option<usize>) -> Option<Limits> {
        let cap = max_output_bytes?.min(self.limits.max_output_bytes).max(MIN_OUTPUT_BYTES);
        Some(Limits { max_output_bytes: cap, ..self.limits.clone() })
    }

    /// Reads one request under other bounds than the reader's own (`read_many` gives each file a share of the
    /// output cap and what is left of its time budget, and lists attachments instead of attaching them); returns what
    /// was read too when `bounds.observe` is set.
    pub(crate) fn read_bounded(
        &self,
        request: &ReadRequest,
        cancel: &Cancel,
        bounds: &Bounds<'_>,
    ) -> (ReadResult, Option<Seen>) {
        let mut trace = Trace::default();
        // A bug ends this read only (see `panics`); what the trace gathered before it still goes to the audit log.
        let tried = panics::caught(|| self.try_read(request, cancel, bounds, &mut trace));
        let result = match tried.and_then(|read| read) {
            Ok(result) => result,
            Err(error) => ReadResult::Error(clip(error, bounds.limits)),
        };
        self.audit(request, &trace, &result);
        (result, trace.seen)
    }

    /// Where `path` is, resolved against the roots lexically (`..` folded, symbolic links not followed), as an
    /// absolute path; `OUTSIDE_ROOT` and `INVALID_PARAM` as a read would give them.
    pub fn lexical_path(&self, path: &str) -> Result<std::path::PathBuf, ReadError> {
        let resolved = self.roots.resolve(path)?;
        Ok(self.roots.real_path(resolved.root).join(&resolved.relative))
    }

    /// Finds `path` as a read would (same roots, same policy, same confined open) and says what is there now, content
    /// hash included; reads nothing into any answer. For checking whether a file changed since a session read it.
    pub fn observe(&self, path: &str) -> Result<Seen, ReadError> {
        let resolved = self.roots.resolve(path)?;
        let shown = self.roots.display_in(resolved.root, &resolved.relative);
        self.check_policy(resolved.root, &resolved.relative, &shown)?;
        let opened = match self.roots.open(&resolved, &shown) {
            Ok(opened) => opened,
            #[cfg(feature = "archives")]
            Err(missing) if missing.code == ErrorCode::NotFound => {
                return self.observe_through_archive(&resolved)?.ok_or(missing);
            }
            Err(error) => return Err(error),
        };
        self.check_policy(opened.root, &opened.real_relative, &shown)?;
        self.check_ignored(&opened, &shown)?;
        let real_path = self.roots.real_path(opened.root).join(&opened.real_relative);
        match &opened.handle {
            Handle::File(file, metadata) => {
                let mut seen = Seen::of(real_path, file, metadata);
                seen.content = observe::hash_file(file, metadata, &[]).map_err(|e| ReadError::from_io(&e, &shown))?;
                Ok(seen)
            }
            Handle::Directory(dir) => seen_directory(real_path, dir).map_err(|e| ReadError::from_io(&e, &shown)),
        }
    }

    /// The roots reads are confined to.
    pub(crate) fn roots(&self) -> &Roots {
        &self.roots
    }

    /// Whether the read policy refuses a root-relative path (deny and allow globs, and ignore files when respected),
    /// judged without opening it: `read_many` withholds such glob matches unnamed.
    pub(crate) fn refuses(&self, root: usize, relative: &Path, is_dir: bool) -> bool {
        self.check_policy(root, relative, "").is_err() || self.check_ignored_at(root, relative, is_dir, "").is_err()
    }

    /// Whether an entry of a directory being listed would be refused: the policy refuses it as named or, for a link,
    /// where it leads. The directory passed the policy when it was opened, so its ancestors need no second look.
    fn refuses_entry(&self, root: usize, relative: &Path, file_type: FileType) -> bool {
        let judged = self.roots.judged(root, relative);
        if self.policy.check_entry(&judged.relative, &judged.absolute).is_err()
            || self.check_ignored_at(root, relative, file_type.is_dir(), "").is_err()
        {
            return true;
        }
        let Some((real_root, real)) = file_type.is_symlink().then(|| self.roots.leads_to(root, relative)).flatten()
        else {
            return false;
        };
        let real_is_dir = self.roots.symlink_metadata(real_root, &real).is_ok_and(|m| m.is_dir());
        self.refuses(real_root, &real, real_is_dir)
    }

    /// The answer to a request refused before it could be read (it did not parse, or a face found it malformed: a key
    /// named twice in text only the face saw): `error` clipped like any read's, and audited as a rejected request.
    pub fn refuse(&self, error: ReadError) -> ReadResult {
        let result = ReadResult::Error(clip(error, &self.limits));
        self.audit(&ReadRequest::default(), &Trace::default(), &result);
        result
    }

    /// One read down the whole road: the request's fields, the confined open, then the file's window or the
    /// directory's listing.
    fn try_read(
        &self,
        request: &ReadRequest,
        cancel: &Cancel,
        bounds: &Bounds<'_>,
        trace: &mut Trace,
    ) -> Result<ReadResult, ReadError> {
        let limits = bounds.limits;
        let timeout = Duration::from_millis(limits.timeout_ms);
        if let Some(waited) = cancel.waited_past(timeout) {
            return Err(ReadError::waited_out(waited, limits.timeout_ms));
        }
        let budget = Budget::new(cancel.budget_start() + timeout, cancel.clone());
        // Every field's own validity (INVALID_PARAM) before how the fields relate (INVALID_RANGE).
        let forced = request.encoding.as_deref().map(parse_encoding).transpose()?;
        let window = request.window(limits)?;
        let (opened, shown) = match self.open_confined(&request.path, &budget, trace) {
            Ok(found) => found,
            #[cfg(feature = "archives")]
            Err(missing) if missing.code == ErrorCode::NotFound => {
                let resolved = self.roots.resolve(&request.path)?;
                let pages = request.pages.as_deref();
                let asked = file::FileRequest { window, forced, pages, attachments: bounds.attachments };
                let asked_shown = trace.shown.clone();
                return match self.read_through_archive(&resolved, asked, (&budget, limits, bounds.observe), trace)? {
                    Some(result) => Ok(result),
                    None => {
                        trace.shown = asked_shown;
                        Err(missing)
                    }
                };
            }
            Err(error) => return Err(error),
        };
        let real_path = self.roots.real_path(opened.root).join(&opened.real_relative);
        match opened.handle {
            Handle::File(file, metadata) => {
                let head = file::read_head(&file, &metadata, &shown)?;
                let indexes = &self.indexes;
                let target = target::Target { file: &file, metadata: &metadata, head: &head, shown, budget, indexes };
                let pages = request.pages.as_deref();
                let request = file::FileRequest { window, forced, pages, attachments: bounds.attachments };
                let result = self.read_file(&target, request, bounds.limits, (opened.root, &opened.real_relative))?;
                if bounds.observe {
                    trace.seen = Some(observe_file(real_path, &target, bounds.known_content));
                }
                Ok(result)
            }
            Handle::Directory(_) if matches!(window, Window::Block(_)) => Err(ReadError::invalid_param(format!(
                "{shown} is a directory; block mode (`mode` \"block\") applies to text files only"
            ))
            .with_hint("remove `mode` and `anchor_line`, and page the listing with offset and limit")),
            Handle::Directory(_) if matches!(window, Window::Find(_)) => Err(ReadError::invalid_param(format!(
                "{shown} is a directory; `find` searches one file's text"
            ))
            .with_hint("search the files in it with read_many and `find` (a glob such as \"dir/**/*.rs\"), or read one file with `find`")),
            Handle::Directory(_) if matches!(window, Window::Region(_)) => {
                Err(target::region_needs_an_image(&shown, "a directory"))
            }
            Handle::Directory(_) if request.pages.is_some() => Err(ReadError::invalid_param(format!(
                "{shown} is a directory; `pages` applies to PDFs, workbooks, presentations and books only"
            ))
            .with_hint("page a directory with offset and limit")),
            Handle::Directory(dir) => {
                if bounds.observe {
                    trace.seen = seen_directory(real_path, &dir).ok();
                }
                let refuses =
                    |relative: &Path, file_type: FileType| self.refuses_entry(opened.root, relative, file_type);
                let first_root_itself = opened.root == 0 && opened.real_relative.as_os_str().is_empty();
                let other_roots = (first_root_itself && self.roots.several()).then(|| self.roots.named_from(1));
                let relative = &opened.real_relative;
                let listings = &self.listings;
                let listing =
                    directory::Listing { dir: &dir, relative, refuses: &refuses, shown, budget, other_roots, listings };
                directory::list(&listing, window, limits).map(ReadResult::Directory)
            }
        }
    }

    /// Resolves `path` beneath the roots, checks it against policy and opens it; returns what was opened and the name
    /// results give it.
    fn open_confined(&self, path: &str, budget: &Budget, trace: &mut Trace) -> Result<(Opened, String), ReadError> {
        let resolved = self.roots.resolve(path)?;
        let shown = self.roots.display_in(resolved.root, &resolved.relative);
        trace.root = Some(resolved.root);
        trace.shown = Some(shown.clone());
        self.check_policy(resolved.root, &resolved.relative, &shown)?;
        let (resolved, shown, opened) = match self.roots.open(&resolved, &shown) {
            Ok(opened) => (resolved, shown, opened),
            Err(error) if error.code == ErrorCode::NotFound => match self.open_in_later_roots(&resolved)? {
                Some((resolved, shown, opened)) => (resolved, shown, opened),
                None => return Err(self.with_near_misses(error, &resolved, budget)),
            },
            Err(error) => return Err(error),
        };
        trace.root = Some(resolved.root);
        // The file really opened may differ from the path asked (symlinks): policy sees both. When it is the path
        // asked, that path was judged and named already.
        let moved = (opened.root, &opened.real_relative) != (resolved.root, &resolved.relative);
        if moved {
            self.check_policy(opened.root, &opened.real_relative, &shown)?;
        }
        self.check_ignored(&opened, &shown)?;
        // Results name the file as resolved (symlinks and `..` followed), relative to its root.
        let shown = if moved { self.roots.display_in(opened.root, &opened.real_relative) } else { shown };
        trace.shown = Some(shown.clone());
        Ok((opened, shown))
    }

    /// Reads an opened file (whose real path is `at`, for an archive's members to be judged beneath): an archive's
    /// listing, or its content's window.
    fn read_file(
        &self,
        target: &target::Target<'_>,
        request: file::FileRequest<'_>,
        limits: &Limits,
        at: (usize, &Path),
    ) -> Result<ReadResult, ReadError> {
        panics::test_point("read", &target.shown);
        // Byte ranges address the archive's raw file, as they address any file's.
        #[cfg(feature = "archives")]
        if !matches!(request.window, Window::Bytes { .. })
            && let Some(format) = archive::sniff(target, &request)
        {
            return self.read_archive_file(target, format, request, limits, at);
        }
        let _ = at;
        self.read_content(target, request, limits)
    }

    /// Classifies opened content (a file's, or an archive member's copy) and reads the window asked of it.
    fn read_content(
        &self,
        target: &target::Target<'_>,
        request: file::FileRequest<'_>,
        limits: &Limits,
    ) -> Result<ReadResult, ReadError> {
        #[cfg(feature = "compressed")]
        if let Some(compression) = crate::media::compressed::Compression::sniff(target.head) {
            return compressed::read(target, compression, request, limits);
        }
        let content = file::classify(target, &request)?;
        file::read_classified(target, content, request, limits, &self.media)
    }

    /// Checks a root-relative path against the policy, judged from its anchor (see [`Roots::judged`]), so neither
    /// the order of overlapping roots nor a narrowed root changes which rules match. A root itself may always be
    /// listed unless a deny rule matches it.
    fn check_policy(&self, root: usize, relative: &Path, shown: &str) -> Result<(), ReadError> {
        let judged = self.roots.judged(root, relative);
        let is_root = relative.as_os_str().is_empty();
        self.policy.check_at(&judged.relative, &judged.absolute, is_root).map_err(|denial| denied(shown, &denial))
    }

    fn check_ignored(&self, opened: &Opened, shown: &str) -> Result<(), ReadError> {
        let is_dir = matches!(opened.handle, Handle::Directory(_));
        self.check_ignored_at(opened.root, &opened.real_relative, is_dir, shown)
    }

    /// Checks a root-relative path against the ignore files from its anchor down, when they are respected.
    fn check_ignored_at(&self, root: usize, relative: &Path, is_dir: bool, shown: &str) -> Result<(), ReadError> {
        if !self.policy.respects_ignore_files() {
            return Ok(());
        }
        let judged = self.roots.judged(root, relative);
        let read = |path: &Path| self.roots.read_ignore_file(judged.anchor, path);
        self.policy.check_ignored(&judged.relative, is_dir, read).map_err(|denial| denied(shown, &denial))
    }

    /// A relative path missing beneath the first root, looked for beneath the others in turn: the first one holding it
    /// (and whose policy allows it) opens it, shown by its absolute path so the answer says where it was found.
    fn open_in_later_roots(&self, resolved: &Resolved) -> Result<Option<(Resolved, String, Opened)>, ReadError> {
        for later in self.roots.beneath_later_roots(resolved) {
            let shown = self.roots.display_in(later.root, &later.relative);
            if self.check_policy(later.root, &later.relative, &shown).is_err() {
                continue;
            }
            match self.roots.open(&later, &shown) {
                Ok(opened) => return Ok(Some((later, shown, opened))),
                Err(error) if error.code == ErrorCode::NotFound => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }

    fn with_near_misses(&self, error: ReadError, resolved: &Resolved, budget: &Budget) -> ReadError {
        let is_link = self.roots.symlink_metadata(resolved.root, &resolved.relative).is_ok_and(|m| m.is_symlink());
        if is_link {
            // Where it points is not named: a link's text can name places outside the roots.
            let shown = self.roots.display_in(resolved.root, &resolved.relative);
            return ReadError::new(
                ErrorCode::NotFound,
                format!("{shown}: a symbolic link whose destination does not exist (a broken link)"),
            )
            .with_hint(
                "the link itself exists but leads nowhere; read the file it was meant to point to by its own path",
            );
        }
        let refuses = |root: usize, relative: &Path, is_dir: bool| self.refuses(root, relative, is_dir);
        let search = suggest::Search { roots: &self.roots, refuses: &refuses, budget };
        let mut miss = suggest::near_misses(&search, resolved);
        for later in self.roots.beneath_later_roots(resolved) {
            miss.merge(suggest::near_misses(&search, &later));
        }
        let mut hint = match &miss.existing_parent {
            Some(parent) => format!("list the directory to see what exists: path={parent}"),
            None => "check the path; list the root with path=.".to_string(),
        };
        if resolved.in_any_root && self.roots.several() {
            hint.push_str(&format!("; it was looked for beneath each root: {}", self.roots.named()));
        }
        error.with_suggestions(miss.suggestions).with_hint(hint)
    }

    fn audit(&self, request: &ReadRequest, trace: &Trace, result: &ReadResult) {
        let Some(log) = &self.audit else { return };
        let (outcome, kind) = match result {
            ReadResult::Text(_) => ("ok", "text"),
            ReadResult::Directory(_) => ("ok", "directory"),
            ReadResult::Attachment(_) => ("ok", "attachment"),
            ReadResult::Unchanged(_) => ("ok", "unchanged"),
            ReadResult::Error(e) => (e.code.as_str(), "error"),
        };
        log.record(&AuditEntry {
            time: audit::now(),
            root: trace.root.map(|r| self.roots.real_path(r)),
            path: &request.path,
            resolved: trace.shown.as_deref(),
            outcome,
            kind,
            bytes: result.output().len(),
        });
    }
}

/// The bounds one read runs under: normally the reader's own limits, with attachments.
#[derive(Clone, Copy)]
pub(crate) struct Bounds<'a> {
    /// Output cap, time budget and the rest.
    pub limits: &'a Limits,
    /// Whether images (and PDFs as documents) are attached; when not, they come back as an attachment result
    /// without attachments, so the caller can list them instead of paying for their decoding.
    pub attachments: bool,
    /// Whether to report what was read ([`Seen`]) for a session's ledger.
    pub observe: bool,
    /// A content hash already known for the file as seen, when observing (see [`KnownContent`]).
    pub known_content: Option<&'a KnownContent<'a>>,
}

/// What a read of a regular file saw: where it is, its identity and times, and its content hash (known already, or
/// taken now; none for a file that cannot be hashed, which is then compared by metadata: stricter, never wrong).
fn observe_file(real_path: PathBuf, target: &target::Target<'_>, known: Option<&KnownContent<'_>>) -> Seen {
    let mut seen = Seen::of(real_path, target.file, target.metadata);
    seen.content = known.and_then(|known| known(&seen));
    if seen.content.is_none() {
        seen.content = observe::hash_file(target.file, target.metadata, target.head).ok().flatten();
    }
    seen
}

/// A directory's metadata in the standard library's form (through a duplicate of its handle).
/// What an open directory is, for a freshness check.
fn seen_directory(real_path: PathBuf, dir: &cap_std::fs::Dir) -> std::io::Result<Seen> {
    let file = dir.try_clone()?.into_std_file();
    let metadata = file.metadata()?;
    Ok(Seen::of(real_path, &file, &metadata))
}

/// Errors stay well inside the output cap whatever the input echoed in them.
fn clip(error: ReadError, limits: &Limits) -> ReadError {
    error.clipped(MAX_MESSAGE_BYTES.min(limits.max_output_bytes / 4))
}

fn denied(shown: &str, denial: &Denial) -> ReadError {
    ReadError::new(ErrorCode::Denied, format!("{shown}: denied by the read policy (rule `{}`)", denial.rule))
        .with_hint("this path is protected in this workspace; do not try to reach it another way")
}

fn parse_encoding(label: &str) -> Result<Codec, ReadError> {
    Codec::for_label(label).ok_or_else(|| {
        ReadError::invalid_param(format!("unknown encoding `{label}`"))
            .with_hint("use a WHATWG label such as utf-8, utf-16le, utf-16be, utf-32le, windows-1252, iso-8859-2, shift_jis, euc-jp, gbk, big5, euc-kr, or omit `encoding` to detect it")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn reader_is_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Reader>();
    }

    #[test]
    fn a_request_that_waited_its_whole_budget_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        let mut config = Config::with_roots([dir.path()]);
        config.limits.timeout_ms = 2_000;
        let reader = Reader::new(config).unwrap();
        let long_ago = Cancel::arrived_at(Instant::now() - Duration::from_secs(3));
        let ReadResult::Error(error) = reader.read(&ReadRequest::new("a.txt"), &ReadOptions::cancellable(&long_ago))
        else {
            panic!("a request past its budget was read")
        };
        assert_eq!(error.code, ErrorCode::Timeout);
        assert!(error.message.contains("past its whole 2 s time budget"), "{}", error.message);
        let just_now = Cancel::arrived_at(Instant::now() - Duration::from_millis(500));
        let read = reader.read(&ReadRequest::new("a.txt"), &ReadOptions::cancellable(&just_now));
        assert!(read.output().starts_with("1: alpha"), "{}", read.output());
    }

    #[test]
    fn a_cancelled_read_stops_mid_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.log");
        // Text up front (so it classifies as text), then a 64 GiB hole: scanning it all takes many seconds, and a
        // window past the text's lines must scan it all to find where it starts.
        std::fs::write(&path, "line\n".repeat(20_000)).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_len(64 << 30).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let cancel = Cancel::new();
        let started = Instant::now();
        let request = ReadRequest { offset: Some(30_000), ..ReadRequest::new("huge.log") };
        let result = std::thread::scope(|scope| {
            let read = scope.spawn(|| reader.read(&request, &ReadOptions::cancellable(&cancel)));
            std::thread::sleep(Duration::from_millis(100));
            cancel.cancel();
            read.join().unwrap()
        });
        let ReadResult::Error(error) = result else { panic!("the read was not stopped: {}", result.output()) };
        assert_eq!(error.code, ErrorCode::Cancelled, "{}", error.message);
        assert!(started.elapsed() < Duration::from_secs(20), "stopped only after {:?}", started.elapsed());
    }

    #[test]
    fn a_read_cancelled_before_it_starts_opens_nothing_long() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let cancel = Cancel::new();
        cancel.cancel();
        let result = reader.read(&ReadRequest::new("a.txt"), &ReadOptions::cancellable(&cancel));
        assert_eq!(result.output(), "CANCELLED: a.txt: the read was cancelled by its caller");
        // Cancelling one read does not touch the next.
        assert_eq!(
            reader.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output(),
            "1: one\n(lines 1-1 of 1 · 4 B · end of file)"
        );
    }

    #[cfg(feature = "pdf")]
    #[test]
    fn a_library_reader_without_a_worker_extracts_pdfs_in_a_thread() {
        let dir = tempfile::tempdir().unwrap();
        let pdf = crate::media::pdf::fixtures::pdf_of(&["First words", "Second words"]);
        std::fs::write(dir.path().join("doc.pdf"), pdf).unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        let result = reader
            .read(&ReadRequest { pages: Some("2".into()), ..ReadRequest::new("doc.pdf") }, &ReadOptions::default());
        assert_eq!(result.output(), "── page 2 of 2 ──\n│ Second words\n(pages 2 of 2 · 753 B · end of document)");
    }

    /// Read system calls this thread has made so far (Linux counts them per thread).
    #[cfg(target_os = "linux")]
    fn reads_made_by_this_thread() -> u64 {
        use std::io::Read;
        // One read call: the counter is short.
        let mut io = [0u8; 4096];
        let n = std::fs::File::open("/proc/thread-self/io").unwrap().read(&mut io).unwrap();
        let io = std::str::from_utf8(&io[..n]).unwrap();
        let line = io.lines().find_map(|line| line.strip_prefix("syscr: ")).unwrap();
        line.trim().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_stating_size_zero_is_read_once_forward_so_each_answer_shows_one_rendering_of_it() {
        // A /proc file renders its content anew at a read at an offset, so a read that probed its end, then read
        // its tail, could join two renderings. Every part of an answer must come from one pass over the file.
        let reader = Reader::new(Config::with_roots(["/proc/self"])).unwrap();
        let calls_of = |request: ReadRequest| {
            let before = reads_made_by_this_thread();
            let result = reader.read(&request, &ReadOptions::default());
            let during = reads_made_by_this_thread() - before;
            // Reading the counter itself is one call.
            (result.output().into_owned(), during - 1)
        };
        let (whole, calls) = calls_of(ReadRequest::new("status"));
        assert!(whole.starts_with("1: Name:"), "{whole}");
        assert_eq!(calls, 2, "the whole file: its text, then the end");
        let (tail, calls) = calls_of(ReadRequest { offset: Some(-2), ..ReadRequest::new("status") });
        assert!(tail.contains("nonvoluntary_ctxt_switches:"), "{tail}");
        assert_eq!(calls, 2, "its last lines come from the same single pass: {tail}");
        let bytes = ReadRequest { start_byte: Some(0), end_byte: Some(5), ..ReadRequest::new("status") };
        let (range, calls) = calls_of(bytes);
        assert!(range.starts_with("@0: Name:\n"), "{range}");
        assert_eq!(calls, 2, "a byte range too: {range}");
    }

    #[test]
    fn concurrent_reads_from_many_threads_agree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        let out =
                            reader.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned();
                        assert_eq!(out, "1: one\n2: two\n(lines 1-2 of 2 · 8 B · end of file)");
                    }
                });
            }
        });
    }
}
