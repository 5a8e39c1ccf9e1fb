//! The worker program's entry: what `agent-read-worker` runs in a child process for a reader built with
//! [`Reader::with_worker`](crate::Reader::with_worker) — a PDF's text, or a document's outline or converted text. Its
//! first argument names the mode; the rest, and the file on standard input, are as each mode's parent passes them.

#[cfg(any(feature = "pdf", feature = "documents"))]
use crate::media::child::EXIT_USAGE;
use std::io::Write as _;

/// Exit code of a worker given arguments it does not know (a build without parsers knows none).
#[cfg(not(any(feature = "pdf", feature = "documents")))]
const EXIT_USAGE: i32 = 2;

/// The worker program's main: runs the mode its first argument names with the arguments after it, and returns the
/// process's exit code. Meant to run as its own process, started by a reader (it sets limits on its own process,
/// installs a silent panic hook and may not write files): not for a person to run by hand.
pub fn worker_main(args: &[String]) -> i32 {
    let Some((mode, rest)) = args.split_first() else { return unknown("") };
    let _ = rest;
    match mode.as_str() {
        #[cfg(feature = "pdf")]
        crate::media::pdf::WORKER_MODE => crate::media::pdf::worker_main(rest),
        #[cfg(feature = "documents")]
        crate::media::document::OUTLINE_MODE => crate::media::document::outline_main(rest),
        #[cfg(feature = "documents")]
        crate::media::document::CONVERT_MODE => crate::media::document::convert_main(rest),
        other => unknown(other),
    }
}

fn unknown(mode: &str) -> i32 {
    let _ = writeln!(
        std::io::stderr(),
        "agent-read-worker: unknown mode {mode:?}: it is started by agent-read for PDFs and documents, not by hand"
    );
    EXIT_USAGE
}
