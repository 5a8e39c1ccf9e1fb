//! agent-read: the file read tool an AI agent harness hands to its model.
//!
//! It gives a model bounded, navigable, honest views of files and directories: a window of numbered lines with an
//! explicit envelope (what it shows, what it left out, the exact next call), errors that say what to do next, and
//! constant memory on a file of any size. One engine serves every face: this library, the `agent-read` command
//! line, and (later) an MCP server.
//!
//! A read travels one road, one module per stage:
//! [`request`] → [`resolve`] (roots, confined open) + [`policy`] → [`classify`] (text or binary, encoding) → [`window`] (find the bytes)
//! → [`render`] (what the model sees), driven by the [`Reader`] in [`engine`]. [`many`] reads several files in one
//! call (`Reader::read_many`), each down that same road with its fair share of one output cap.
//!
//! ```no_run
//! use agent_read::{Config, ReadRequest, Reader};
//!
//! let reader = Reader::new(Config::with_roots(["/work/project"])).expect("valid roots");
//! let result = reader.read(&ReadRequest { offset: Some(-20), ..ReadRequest::new("logs/app.log") });
//! println!("{}", result.output());
//! ```

#![warn(missing_docs)]

pub mod audit;
pub mod budget;
pub mod classify;
pub mod config;
pub mod engine;
pub mod error;
pub mod many;
pub mod media;
pub mod panics;
pub mod policy;
pub mod render;
pub mod request;
pub mod resolve;
pub mod result;
pub mod session;
pub mod suggest;
#[cfg(test)]
mod test_mount;
pub mod tool;
pub mod window;

pub use budget::Cancel;
pub use config::{Config, ConfigError, Limits};
pub use engine::Reader;
pub use error::{ErrorCode, ReadError};
pub use many::{ReadManyRequest, ReadManyResult};
pub use request::ReadRequest;
pub use result::ReadResult;
pub use session::{Freshness, Session, SessionSettings};
