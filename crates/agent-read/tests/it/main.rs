//! The library's integration tests, in one binary (one link instead of one per file): what a harness sees through
//! the public API. Tests of internals are unit tests beside the code.

#[path = "../common/mod.rs"]
mod common;

mod paging;
mod session;
