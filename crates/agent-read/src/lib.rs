//! agent-read: the file read tool an AI agent harness hands to its model.
//!
//! It gives a model bounded, navigable, honest views of files and directories: a window of numbered lines with an
//! explicit envelope (what it shows, what it left out, the exact next call), errors that say what to do next, and
//! constant memory on a file of any size. This crate is the engine, to embed in a harness; the `agent-read` command
//! line and MCP server (crate `agent-read-cli`) are thin faces on top of it.
//!
//! A read travels one road, one module per stage: the request is checked, its path resolved beneath the roots and
//! opened there (the read policy refuses secrets), the bytes classified (text or binary, which encoding), a window
//! chosen (lines, a byte range, a block, the tail) and rendered into what the model sees. A [`Reader`] drives it;
//! [`Reader::read_many`] reads several files in one answer, each down the same road with its fair share of one
//! output cap; a [`Session`] remembers what one conversation read (repeats, freshness, a token budget).
//!
//! ```no_run
//! use agent_read::{Config, ReadOptions, ReadRequest, Reader};
//!
//! let reader = Reader::new(Config::with_roots(["/work/project"])).expect("valid roots");
//! let request = ReadRequest { offset: Some(-20), ..ReadRequest::new("logs/app.log") };
//! let result = reader.read(&request, &ReadOptions::default());
//! println!("{}", result.output());
//! ```
//!
//! The tool's definition for a model (name, description, JSON Schemas, in each provider's format) comes from
//! [`tool_definition`] and its siblings, so that what the model is told matches what the reader accepts.
//!
//! Features: `images` and `pdf` (on by default) read images as attachments and PDFs as text per page; `tiktoken`
//! counts session budgets in exact tokens. None brings an async runtime, a server or an argument parser.

#![deny(missing_docs)]

mod audit;
mod budget;
mod classify;
mod config;
mod config_error;
mod engine;
mod error;
mod escape;
#[cfg(test)]
mod fuzz_tests;
mod limits;
mod many;
mod media;
mod panics;
mod platform;
mod policy;
mod render;
mod request;
mod resolve;
mod result;
mod session;
mod source;
mod suggest;
mod tokens;
mod tool;
mod window;
mod worker;

pub use audit::{Refused, RootsChange, Who, now as audit_timestamp};
pub use budget::Cancel;
pub use config::{Config, HttpConfig, OAuthConfig, SessionConfig};
pub use config_error::{ConfigError, GlobList, GlobProblem, RootProblem, ValueBound};
pub use engine::{ReadOptions, Reader};
pub use error::{ErrorCode, MAX_MESSAGE_BYTES, ReadError};
pub use escape::shown as escape_for_model;
pub use limits::{Limits, MIN_OUTPUT_BYTES};
pub use many::{
    DEFAULT_MAX_FILES, MAX_FILES, MAX_PATHS, ManyFile, ManyMeta, ManyResult, ReadManyRequest, ReadManyResult, Skipped,
};
pub use panics::internal as internal_error;
#[doc(hidden)]
pub use panics::test_point;
/// Windows' spelling of a client root's `file:` URI and back (`/C:/work` is `C:\work`): what the MCP face needs on
/// Windows, pure functions on text everywhere.
pub use platform::windows_paths::{from_uri_path as windows_path_of_uri_path, to_uri_path as uri_path_of_windows_path};
pub use policy::PolicyConfig;
pub use request::duplicates::{DuplicateKey, Duplicates, scan as duplicate_keys};
pub use request::{MAX_PATH_BYTES, ReadMode, ReadRequest};
pub use result::{
    Attachment, AttachmentMeta, AttachmentResult, DirEntry, DirectoryMeta, DirectoryResult, EntryKind, Flagged,
    ReadResult, TextMeta, TextResult, UnchangedMeta, UnchangedResult,
};
pub use session::{Basis, Freshness, Session, SessionSettings, TokenCounting, Usage};
pub use tokens::ImageTokens;
pub use tool::{
    DESCRIPTION as TOOL_DESCRIPTION, MANY_DESCRIPTION, MANY_NAME, NAME as TOOL_NAME, SchemaFormat, Served,
    definition as tool_definition, definition_for as tool_definition_for, description_for as tool_description_for,
    many_definition, many_output_schema, many_parameters_schema, output_schema, parameters_schema,
    parameters_schema_for,
};
pub use worker::worker_main;
