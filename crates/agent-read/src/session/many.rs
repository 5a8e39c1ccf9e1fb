//! `read_many` in a session: each file shown is recorded in the ledger (so freshness knows the model saw it), and the
//! whole answer is counted against the budget and ends with the budget note, like any read. Its sections are never
//! replaced by repeat notices (a section is cut to its share of the cap). A later `read` of a file whose section showed
//! exactly what that read gives (a small file, shown whole) is a repeat like any other.

use super::{Session, cap_hit, capped, window_key};
use crate::budget::Cancel;
use crate::engine::observe::ContentHash;
use crate::engine::{ReadOptions, Reader};
use crate::error::ReadError;
use crate::many::{ReadManyRequest, ReadManyResult};
use crate::session::ledger::WindowRecord;
use std::sync::Arc;

impl Session {
    /// Runs one `read_many` call, recording every file it shows (see [`crate::Reader::read_many`]). Never panics; a
    /// rejected request is an `Error` result.
    pub fn read_many(&self, request: &ReadManyRequest, options: &ReadOptions) -> ReadManyResult {
        let run = || self.read_many_recorded(request, &options.cancel, options.max_output_bytes);
        crate::panics::caught(run)
            .unwrap_or_else(|internal| self.account_many(ReadManyResult::Error(internal), None, &self.reader()))
    }

    /// The answer to a `read_many` request refused before it ran (see [`crate::Reader::refuse_many`]), counted like
    /// any answer.
    pub fn refuse_many(&self, error: ReadError) -> ReadManyResult {
        let reader = self.reader();
        self.account_many(reader.refuse_many(error), None, &reader)
    }

    /// [`Session::read_many`] without its catch.
    fn read_many_recorded(&self, request: &ReadManyRequest, cancel: &Cancel, asked: Option<usize>) -> ReadManyResult {
        let reader = self.reader();
        let shrink = self.window_shrink(request.limit.is_some(), capped(&reader, asked));
        let mut result = reader.read_many_with(request, cancel, shrink.cap, true);
        let mut cut = false;
        if let ReadManyResult::Many(many) = &mut result {
            for file in &mut many.files {
                cut |= cap_hit(&file.result);
                let Some(seen) = file.seen.take() else { continue };
                let window = WindowRecord {
                    key: window_key(&request.file_request(&file.path)),
                    output: ContentHash::of(file.result.output().as_bytes()),
                    read_at: super::now(),
                };
                let lexical = reader.lexical_path(&file.path).ok();
                let mut state = self.lock();
                crate::panics::test_point("session", &file.path);
                state.ledger.record(seen, lexical, window, true);
            }
        }
        self.account_many(result, shrink.shrunk_to.filter(|_| cut), &reader)
    }

    fn account_many(&self, result: ReadManyResult, shrunk_to: Option<usize>, reader: &Arc<Reader>) -> ReadManyResult {
        // Images are listed, never attached, in a read_many answer: its text is all it costs.
        let result = match (self.charge(&result.output(), 0, shrunk_to, reader), result) {
            (Some(note), ReadManyResult::Many(mut many)) => {
                many.output = crate::render::session::add_note(&many.output, &note);
                many.meta.bytes = many.output.len();
                ReadManyResult::Many(many)
            }
            (Some(note), ReadManyResult::Error(mut error)) => {
                error.note = Some(note.into_boxed_str());
                ReadManyResult::Error(error)
            }
            (None, result) => result,
        };
        self.lock().usage.bytes += result.output().len() as u64;
        result
    }
}
