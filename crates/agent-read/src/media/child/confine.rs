//! How a worker is held, on each system: a CPU-time budget, a memory bound, no files written, no processes started,
//! and death with its parent.
//!
//! - Linux: resource limits the worker sets on itself before it reads a byte (`RLIMIT_CPU`, `RLIMIT_AS` sized to the
//!   input, `RLIMIT_CORE`, `RLIMIT_FSIZE`, `RLIMIT_NOFILE`, `RLIMIT_NPROC`), and `PR_SET_PDEATHSIG`.
//! - macOS: the same limits through `setrlimit`; the kernel does not enforce the address-space one, so the worker also
//!   runs every memory check the parsers run in this process (PDF extraction as in a thread; a document's conversion
//!   reserves what it grows, as always). A watcher thread ends the worker when its parent is gone (it is then handed
//!   to launchd).
//! - Windows: a Job Object the parent makes before the worker reads anything: a per-process memory limit, a CPU-time
//!   limit, one active process (none started), and `KILL_ON_JOB_CLOSE`, so the worker dies with the parent's handle —
//!   when the parent ends, however it ends. The worker waits to be inside that very job (named, and checked by name)
//!   before it reads its input.

use std::fs::File;
use std::io;
use std::process::{Child, ExitStatus};

/// Whether the system bounds the worker's address space ([`limit_memory`]): not macOS, whose kernel does not enforce
/// it, so a worker there runs the checks a parser in this process would.
#[cfg(feature = "pdf")]
pub(crate) const MEMORY_BOUNDED: bool = !cfg!(target_os = "macos");

/// The worker's standard input (the file it reads) as a file.
pub(crate) fn standard_input() -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        io::stdin().as_fd().try_clone_to_owned().map(File::from)
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle as _;
        io::stdin().as_handle().try_clone_to_owned().map(File::from)
    }
}

/// Descriptors the worker may hold (it needs its three standard streams).
#[cfg(unix)]
const WORKER_MAX_FILES: u64 = 16;

/// The worker's own limits, set before it reads anything; `confinement` is what the parent passed (on Windows, the
/// name of the job to wait for).
pub(crate) fn limit_worker(cpu_seconds: u64, confinement: &str) -> io::Result<()> {
    #[cfg(unix)]
    {
        let _ = confinement;
        die_with_parent()?;
        lower_limit(libc::RLIMIT_CPU, cpu_seconds, cpu_seconds.saturating_add(1))?;
        lower_limit(libc::RLIMIT_CORE, 0, 0)?;
        lower_limit(libc::RLIMIT_FSIZE, 0, 0)?;
        lower_limit(libc::RLIMIT_NOFILE, WORKER_MAX_FILES, WORKER_MAX_FILES)?;
        // One process: it never forks nor spawns (the kernel does not hold root to this one).
        lower_limit(libc::RLIMIT_NPROC, 0, 0)
    }
    #[cfg(windows)]
    {
        let _ = cpu_seconds;
        job::wait_to_be_inside(confinement)
    }
}

/// Bounds the worker's address space once its input's size is known. On Windows the parent's job holds that bound.
pub(crate) fn limit_memory(bytes: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        lower_limit(libc::RLIMIT_AS, bytes, bytes)
    }
    #[cfg(target_os = "macos")]
    {
        // Accepted or not, it is not enforced there (see the module's documentation): the extractor's checks are.
        let _ = lower_limit(libc::RLIMIT_AS, bytes, bytes);
        Ok(())
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = bytes;
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn die_with_parent() -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes one integer argument (the signal); the others are ignored.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Without a parent-death signal, a thread watches the parent: once the worker is handed to another parent, the one
/// that started it is gone, and the worker ends within a tenth of a second.
#[cfg(all(unix, not(target_os = "linux")))]
fn die_with_parent() -> io::Result<()> {
    let parent = std::os::unix::process::parent_id();
    std::thread::Builder::new().name("worker-parent".to_string()).spawn(move || {
        loop {
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(1);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    })?;
    Ok(())
}

/// The type of a resource of `getrlimit`/`setrlimit` on this platform.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(all(unix, not(all(target_os = "linux", target_env = "gnu"))))]
type Resource = libc::c_int;

/// Lowers a resource limit of this process to `soft`/`hard` (never raises it above the current hard limit).
#[cfg(unix)]
fn lower_limit(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` into the struct it is given, which lives for the call.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let hard = (hard as libc::rlim_t).min(current.rlim_max);
    let wanted = libc::rlimit { rlim_cur: (soft as libc::rlim_t).min(hard), rlim_max: hard };
    // SAFETY: setrlimit reads one `rlimit` from the struct it is given, which lives for the call.
    if unsafe { libc::setrlimit(resource, &wanted) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What holds a running worker from the parent's side: on Windows its job (closing it ends the worker); nothing
/// elsewhere, where the worker limits itself.
pub(crate) struct Confinement {
    #[cfg(windows)]
    job: job::Job,
}

impl Confinement {
    /// Made before the worker starts; `memory` is its memory bound in bytes, `cpu_seconds` its CPU time.
    pub(crate) fn new(memory: u64, cpu_seconds: u64) -> io::Result<Confinement> {
        #[cfg(unix)]
        {
            let _ = (memory, cpu_seconds);
            Ok(Confinement {})
        }
        #[cfg(windows)]
        {
            Ok(Confinement { job: job::Job::new(memory, cpu_seconds)? })
        }
    }

    /// What the worker is told of it (its last argument): the job's name on Windows, `-` elsewhere.
    pub(crate) fn argument(&self) -> String {
        #[cfg(unix)]
        {
            "-".to_string()
        }
        #[cfg(windows)]
        {
            self.job.name.clone()
        }
    }

    /// Puts the started worker inside (on Windows, into the job).
    pub(crate) fn hold(&self, child: &Child) -> io::Result<()> {
        #[cfg(unix)]
        {
            let _ = child;
            Ok(())
        }
        #[cfg(windows)]
        {
            self.job.assign(child)
        }
    }
}

/// How a worker was ended by the system, when its exit status says so.
pub(crate) enum Ended {
    /// It used up its CPU time.
    OutOfTime,
    /// It was killed; why, in words.
    #[cfg_attr(windows, expect(dead_code, reason = "Windows tells a kill apart from an exit by nothing"))]
    Killed(String),
}

/// How a worker ended by the system, when that says why: its CPU limit, or a kill (`because`: what its standard
/// error said, to end the words with).
pub(crate) fn ended_by_system(status: &ExitStatus, because: &str) -> Option<Ended> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        let signal = status.signal()?;
        Some(match signal {
            libc::SIGXCPU => Ended::OutOfTime,
            libc::SIGKILL => Ended::Killed(format!(
                "the worker was killed (SIGKILL: its CPU limit, or the system's out-of-memory killer){because}"
            )),
            _ => Ended::Killed(format!("the worker was killed by signal {signal}{because}")),
        })
    }
    #[cfg(windows)]
    {
        // A job ends a process past its CPU time with ERROR_NOT_ENOUGH_QUOTA as its exit code.
        let quota = windows_sys::Win32::Foundation::ERROR_NOT_ENOUGH_QUOTA as i32;
        let _ = because;
        (status.code() == Some(quota)).then_some(Ended::OutOfTime)
    }
}

#[cfg(windows)]
mod job;
