//! The engine: a [`Reader`] runs one request down the road every read travels —
//! request → resolve & open → classify → window → render — and returns a plain [`ReadResult`].
//!
//! The engine knows nothing of the faces (command line, MCP): they hand it a request and print what it returns.

mod directory;
mod text;

use crate::classify::Codec;
use crate::config::{Config, ConfigError, Limits};
use crate::error::{ErrorCode, ReadError};
use crate::request::ReadRequest;
use crate::resolve::{Opened, Roots};
use crate::result::ReadResult;
use crate::suggest;
use serde_json::Value;

/// A configured, thread-safe reader. Build it once; call [`Reader::read`] from any thread.
#[derive(Debug, Clone)]
pub struct Reader {
    roots: Roots,
    limits: Limits,
}

impl Reader {
    /// Builds a reader; fails if a root is missing or not a directory, or the limits cannot be honoured.
    pub fn new(config: Config) -> Result<Reader, ConfigError> {
        config.limits.validate()?;
        Ok(Reader { roots: Roots::new(&config.roots)?, limits: config.limits })
    }

    /// The limits every read is bounded by.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Reads one request. Never panics on any input; every failure is an `Error` result.
    pub fn read(&self, request: &ReadRequest) -> ReadResult {
        match self.try_read(request) {
            Ok(result) => result,
            Err(error) => ReadResult::Error(error),
        }
    }

    /// Parses an untrusted JSON request and reads it.
    pub fn read_json(&self, request: &Value) -> ReadResult {
        match ReadRequest::from_json(request) {
            Ok(request) => self.read(&request),
            Err(error) => ReadResult::Error(error),
        }
    }

    /// Parses untrusted JSON text and reads it.
    pub fn read_json_str(&self, request: &str) -> ReadResult {
        match ReadRequest::from_json_str(request) {
            Ok(request) => self.read(&request),
            Err(error) => ReadResult::Error(error),
        }
    }

    fn try_read(&self, request: &ReadRequest) -> Result<ReadResult, ReadError> {
        let window = request.window(&self.limits)?;
        let forced = request.encoding.as_deref().map(parse_encoding).transpose()?;
        let resolved = self.roots.resolve(&request.path)?;
        let shown = self.roots.display(&resolved);
        match self.roots.open(&resolved, &shown) {
            Ok(Opened::File(file, metadata)) => {
                let target = text::Target { file: &file, metadata: &metadata, shown };
                text::read(&target, window, forced, &self.limits).map(ReadResult::Text)
            }
            Ok(Opened::Directory) => {
                directory::list(&resolved.absolute, shown, window, &self.limits).map(ReadResult::Directory)
            }
            Err(error) if error.code == ErrorCode::NotFound => Err(with_near_misses(error, &self.roots, &resolved)),
            Err(error) => Err(error),
        }
    }
}

fn with_near_misses(error: ReadError, roots: &Roots, resolved: &crate::resolve::Resolved) -> ReadError {
    let miss = suggest::near_misses(roots, resolved);
    let hint = match &miss.existing_parent {
        Some(parent) => format!("list the directory to see what exists: path={parent}"),
        None => "check the path; list the root with path=.".to_string(),
    };
    error.with_suggestions(miss.suggestions).with_hint(hint)
}

fn parse_encoding(label: &str) -> Result<Codec, ReadError> {
    Codec::for_label(label).ok_or_else(|| {
        ReadError::invalid_param(format!("unknown encoding `{label}`"))
            .with_hint("use a WHATWG label such as utf-8, utf-16le, utf-16be, utf-32le, windows-1252, iso-8859-2, shift_jis, euc-jp, gbk, big5, euc-kr, or omit `encoding` to detect it")
    })
}
