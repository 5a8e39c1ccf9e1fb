//! A panic (a bug) ends the one request it hits, as an `INTERNAL` error that names nothing of it, and never the
//! reader, the session or the server.
//!
//! Every request boundary catches: [`Reader::read`](crate::Reader::read) and its siblings (each file of a `read_many`
//! on its own), `read_many` as a whole, and a [`Session`](crate::Session)'s reads; the command line and the MCP
//! server catch around their own code too. The answer says only that an internal error ended the request: a panic's
//! message can quote anything (a path, bytes of a file, a glob), and the model must not see it.
//!
//! Unwind safety: the state a read shares with later reads is behind locks that are taken for one small update at a
//! time and used again when poisoned (the line-index store, a session's ledger and usage, the audit log), or in
//! atomics; a panic leaves each of them as well formed as before it. So the closures are asserted unwind-safe.
//!
//! The panic hook still runs: the command line and the server set one that prints a single line on standard error
//! (for the operator); a library user keeps whatever hook they set.

use crate::error::{ErrorCode, ReadError};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `work`, turning a panic into [`internal`]'s error.
pub fn caught<T>(work: impl FnOnce() -> T) -> Result<T, ReadError> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|_| internal())
}

/// The error that stands for a caught panic: it says what happened and what to do, and nothing of the panic.
pub fn internal() -> ReadError {
    ReadError::new(ErrorCode::Internal, "an internal error (a bug in agent-read) ended this request; nothing was read")
        .with_hint("retry once; if it fails again, read another way (a smaller window, a byte range) or another file")
}

/// The environment variable that makes a debug build panic on purpose, for the tests of the catching above:
/// `POINT:SUFFIX` panics at the point named `POINT` for a request whose subject (a path, usually) ends with `SUFFIX`.
/// Release builds have no such code: the function below is empty there.
#[cfg(debug_assertions)]
pub const TEST_PANIC_VAR: &str = "AGENT_READ_TEST_PANIC";

/// Panics when [`TEST_PANIC_VAR`] names `point` and `subject` ends with its suffix (debug builds only: an operator's
/// environment switches it on, never a request).
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn test_point(point: &str, subject: &str) {
    #[cfg(test)]
    if armed::at(point, subject) {
        panic!("test panic at {point} for {subject}");
    }
    let Some(wanted) = std::env::var_os(TEST_PANIC_VAR) else { return };
    let Some((at, suffix)) = wanted.to_str().and_then(|wanted| wanted.split_once(':')) else { return };
    if at == point && !suffix.is_empty() && subject.ends_with(suffix) {
        panic!("test panic at {point} for {subject}");
    }
}

/// Nothing: the test panics exist in debug builds only.
#[cfg(not(debug_assertions))]
#[doc(hidden)]
#[inline(always)]
pub fn test_point(_point: &str, _subject: &str) {}

/// The unit tests' switch for [`test_point`]: one test thread's own, so that tests running beside it never panic.
#[cfg(test)]
pub(crate) mod armed {
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<Option<(&'static str, &'static str)>> = const { Cell::new(None) };
    }

    /// Panics at `point` for subjects ending with `suffix`, on this thread, until the guard is dropped.
    pub fn arm(point: &'static str, suffix: &'static str) -> Armed {
        ARMED.set(Some((point, suffix)));
        Armed
    }

    pub(super) fn at(point: &str, subject: &str) -> bool {
        ARMED.get().is_some_and(|(at, suffix)| at == point && subject.ends_with(suffix))
    }

    /// Disarms when dropped.
    pub struct Armed;

    impl Drop for Armed {
        fn drop(&mut self) {
            ARMED.set(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, ReadManyRequest, ReadOptions, ReadRequest, Reader, Session, SessionSettings};
    use std::sync::Arc;

    fn workspace() -> (tempfile::TempDir, Reader) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.path().join("boom.txt"), "TOKEN=secret\n").unwrap();
        let reader = Reader::new(Config::with_roots([dir.path()])).unwrap();
        (dir, reader)
    }

    fn assert_internal(output: &str) {
        assert!(output.starts_with("INTERNAL: an internal error (a bug in agent-read) ended this request"), "{output}");
        assert!(!output.contains("test panic") && !output.contains("secret"), "{output}");
    }

    #[test]
    fn a_panic_in_a_read_ends_that_read_only() {
        let (_dir, reader) = workspace();
        let _armed = armed::arm("read", "boom.txt");
        let result = reader.read(&ReadRequest::new("boom.txt"), &ReadOptions::default());
        assert_eq!(result.error().map(|e| e.code), Some(ErrorCode::Internal));
        assert_internal(&result.output());
        assert_eq!(
            reader.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output(),
            "1: alpha\n(lines 1-1 of 1 · 6 B · end of file)"
        );
        let many = reader
            .read_many(&ReadManyRequest::new(["boom.txt", "a.txt"]), &ReadOptions::default())
            .output()
            .into_owned();
        assert!(many.contains("==> boom.txt <==\nINTERNAL: an internal error"), "{many}");
        assert!(many.contains("==> a.txt <==\n1: alpha\n"), "{many}");
        assert!(!many.contains("secret"), "{many}");
    }

    #[test]
    fn a_panic_elsewhere_in_read_many_ends_the_call_as_an_internal_error() {
        let (_dir, reader) = workspace();
        let _armed = armed::arm("many", "a.txt");
        let many = reader.read_many(&ReadManyRequest::new(["a.txt"]), &ReadOptions::default());
        assert_eq!(many.error().map(|e| e.code), Some(ErrorCode::Internal));
        assert_internal(&many.output());
        drop(_armed);
        assert!(reader.read_many(&ReadManyRequest::new(["a.txt"]), &ReadOptions::default()).is_ok());
    }

    #[test]
    fn a_panic_while_the_session_ledger_is_locked_leaves_the_session_serving() {
        let (_dir, reader) = workspace();
        let settings = SessionSettings { repeat_read_stubs: true, ..SessionSettings::default() };
        let session = Session::new(Arc::new(reader), settings).unwrap();
        assert!(session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).is_ok());
        let armed = armed::arm("session", "boom.txt");
        let failed = session.read(&ReadRequest::new("boom.txt"), &ReadOptions::default());
        assert_internal(&failed.output());
        let many =
            session.read_many(&ReadManyRequest::new(["boom.txt"]), &ReadOptions::default()).output().into_owned();
        assert_internal(&many);
        drop(armed);
        // The lock the panic poisoned is used again, and the ledger still knows the first read.
        let repeat = session.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output().into_owned();
        assert!(repeat.starts_with("(unchanged since your read at "), "{repeat}");
        assert!(session.read(&ReadRequest::new("boom.txt"), &ReadOptions::default()).is_ok());
        assert_eq!(session.usage().reads, 5, "{:?}", session.usage());
        assert!(matches!(session.freshness("a.txt"), crate::Freshness::Fresh { .. }));
    }

    #[test]
    fn a_caught_panic_is_an_internal_error_that_says_nothing_of_it() {
        let error = caught(|| -> u8 { panic!("secret bytes: TOKEN=abc") }).unwrap_err();
        assert_eq!(error.code, ErrorCode::Internal);
        assert!(!error.message.contains("TOKEN") && !error.message.contains("secret"), "{error:?}");
        assert_eq!(caught(|| 7).unwrap(), 7);
    }
}
