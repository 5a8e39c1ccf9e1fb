//! Counting in the background: after a `read` whose total was a lower bound (a big file whose rest was too far to
//! count within the read, or a tail whose count ran out of time), the server counts the file's remaining lines on
//! the blocking pool, so that a later read gives the exact total without a pass (`Reader::count_lines`).
//!
//! Bounded whatever a client asks: one count runs at a time, at most [`MAX_WAITING`] more wait (each file once), and
//! further ones are dropped (a later read asks again). Each round runs within the read time budget and goes on from
//! where the last stopped, for at most [`MAX_ROUNDS`] rounds; [`Counting::stop`] (the server shutting down) cancels
//! the round in progress at its next chunk and drops the rest.

use agent_read::{Cancel, ErrorCode, ReadOptions, ReadRequest, ReadResult, Reader};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// Counts waiting their turn at most.
const MAX_WAITING: usize = 8;

/// Time budgets one count may spend, each a round that goes on from the last (a 10 GiB file on a slow disk needs a
/// few at the default 30 s).
const MAX_ROUNDS: u32 = 20;

/// The server's background counts: shared by every client.
#[derive(Debug, Default)]
pub struct Counting {
    state: Mutex<State>,
    cancel: Cancel,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a worker is running on the blocking pool.
    running: bool,
    /// Counts waiting: the reader (the client's roots) and the file, as its read named it.
    waiting: VecDeque<(Arc<Reader>, ReadRequest)>,
}

impl Counting {
    /// Counts the lines of the file `request` read through `reader` when `result` gave only a lower bound of them.
    /// Call it from the async runtime or its blocking pool.
    pub fn after(self: &Arc<Self>, reader: &Arc<Reader>, request: &ReadRequest, result: &ReadResult) {
        let ReadResult::Text(text) = result else { return };
        if text.meta.total_lines_at_least.is_none() || self.cancel.is_cancelled() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let file = ReadRequest { encoding: request.encoding.clone(), ..ReadRequest::new(&request.path) };
        let start = {
            let mut state = self.lock();
            let known = state.waiting.iter().any(|(_, waiting)| same_file(waiting, &file));
            if known || state.waiting.len() >= MAX_WAITING {
                return;
            }
            state.waiting.push_back((reader.clone(), file));
            !std::mem::replace(&mut state.running, true)
        };
        if start {
            let counting = self.clone();
            drop(runtime.spawn_blocking(move || counting.work()));
        }
    }

    /// Cancels the count in progress and drops those waiting; nothing starts after.
    pub fn stop(&self) {
        self.cancel.cancel();
        self.lock().waiting.clear();
    }

    /// Counts the files waiting, one after the other, until none is left.
    fn work(&self) {
        loop {
            let next = {
                let mut state = self.lock();
                let next = state.waiting.pop_front();
                state.running = next.is_some();
                next
            };
            let Some((reader, request)) = next else { return };
            self.count(&reader, &request);
        }
    }

    /// Counts one file: round after round while its time budget runs out, each going on from the last.
    fn count(&self, reader: &Reader, request: &ReadRequest) {
        for _ in 0..MAX_ROUNDS {
            if self.cancel.is_cancelled() {
                return;
            }
            let options = ReadOptions::cancellable(&self.cancel);
            match reader.count_lines(request, &options) {
                Err(error) if error.code == ErrorCode::Timeout => continue,
                _ => return,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a flag and a queue, well formed between any two statements: keep using it after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn same_file(a: &ReadRequest, b: &ReadRequest) -> bool {
    a.path == b.path && a.encoding == b.encoding
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_read::{Config, TextMeta, TextResult};

    /// A read's result that gave only a lower bound of its file's lines.
    fn lower_bound() -> ReadResult {
        let meta = TextMeta { total_lines_at_least: Some(2), ..TextMeta::default() };
        ReadResult::Text(TextResult { output: String::new(), meta })
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn however_many_reads_ask_one_count_runs_and_a_few_wait() {
        let dir = tempfile::tempdir().unwrap();
        // Text up front, then a 64 GiB hole: counting it takes far longer than the test.
        let huge = dir.path().join("huge.log");
        std::fs::write(&huge, "line\n".repeat(20_000)).unwrap();
        std::fs::File::options().write(true).open(&huge).unwrap().set_len(64 << 30).unwrap();
        let reader = Arc::new(Reader::new(Config::with_roots([dir.path()])).unwrap());
        let counting = Arc::new(Counting::default());
        counting.after(&reader, &ReadRequest::new("huge.log"), &lower_bound());
        // A read that gave an exact total, or no text, asks for nothing.
        let exact = ReadResult::Text(TextResult { output: String::new(), meta: TextMeta::default() });
        counting.after(&reader, &ReadRequest::new("other.log"), &exact);
        assert!(counting.lock().running);
        for n in 0..100 {
            counting.after(&reader, &ReadRequest::new(format!("log-{n}.log")), &lower_bound());
            counting.after(&reader, &ReadRequest::new("log-0.log"), &lower_bound());
        }
        let waiting: Vec<String> = counting.lock().waiting.iter().map(|(_, request)| request.path.clone()).collect();
        counting.stop();
        assert!(waiting.len() <= MAX_WAITING, "{waiting:?}");
        assert_eq!(waiting.iter().filter(|path| *path == "log-0.log").count(), 1, "each file waits once: {waiting:?}");
        assert!(!waiting.iter().any(|path| path == "other.log"), "{waiting:?}");
        assert!(counting.lock().waiting.is_empty());
        counting.after(&reader, &ReadRequest::new("late.log"), &lower_bound());
        assert!(counting.lock().waiting.is_empty(), "nothing starts once stopped");
    }
}
