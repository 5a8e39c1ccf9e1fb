//! The `portable-resolver` test mode on Linux: the process refuses `openat2` to itself, as a kernel without it would,
//! so that cap-std resolves every path beneath a root name by name — the resolution it always uses on macOS and
//! Windows — and the tests that run in this mode test that road.
//!
//! The refusal is a seccomp filter on every thread of the process, answering `openat2` with `ENOSYS` (which cap-std
//! takes to mean "no such call here", and remembers). It is set once, when the first roots are opened, before any
//! open beneath them (`crate::resolve`, whose tests check it).

use std::sync::OnceLock;

/// Makes `openat2` fail with `ENOSYS` for every thread of this process, from now on; an error says why it could not.
pub fn refuse_openat2() -> Result<(), String> {
    static SET: OnceLock<Result<(), String>> = OnceLock::new();
    SET.get_or_init(|| install().map_err(|e| e.to_string())).clone()
}

fn install() -> Result<(), Box<dyn std::error::Error>> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let filter = SeccompFilter::new(
        [(libc::SYS_openat2, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH.try_into()?,
    )?;
    let program: BpfProgram = filter.try_into()?;
    seccompiler::apply_filter_all_threads(&program)?;
    Ok(())
}
