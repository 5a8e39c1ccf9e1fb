//! The Windows Job Object that holds a worker (see the parent module): made by the parent under a name no other
//! process can have taken first, the worker assigned to it as soon as it starts, and the worker waiting to find itself
//! inside it before it reads its input.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io;
use std::os::windows::io::AsRawHandle as _;
use std::process::Child;
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{CloseHandle, ERROR_ALREADY_EXISTS, GetLastError, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob, JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
    JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOB_OBJECT_LIMIT_PROCESS_MEMORY,
    JOB_OBJECT_LIMIT_PROCESS_TIME, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    OpenJobObjectW, SetInformationJobObject,
};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

/// The access right to ask whether a process is in a job (`JOB_OBJECT_QUERY` in winnt.h).
const JOB_OBJECT_QUERY: u32 = 0x0004;
/// How long a worker waits to be put in its job before it gives up.
const ASSIGN_WAIT: Duration = Duration::from_secs(10);

/// A job, closed (and its processes with it) when dropped.
pub(crate) struct Job {
    handle: HANDLE,
    /// Its name, which the worker is given.
    pub(crate) name: String,
}

// SAFETY: a job handle may be used and closed from any thread.
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

impl Job {
    /// A new job under a fresh name, with the worker's limits.
    pub(crate) fn new(memory: u64, cpu_seconds: u64) -> io::Result<Job> {
        let mut random = RandomState::new().build_hasher();
        random.write_u32(std::process::id());
        let name = format!("Local\\agent-read-worker-{}-{:016x}", std::process::id(), random.finish());
        let wide = wide(&name);
        // SAFETY: no security attributes (null); the name is a NUL-terminated UTF-16 string that lives for the call.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), wide.as_ptr()) };
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        let job = Job { handle, name };
        // SAFETY: reads the calling thread's last error, set by CreateJobObjectW just now.
        if unsafe { GetLastError() } == ERROR_ALREADY_EXISTS {
            return Err(io::Error::other("another process holds a job of a worker's name"));
        }
        job.limit(memory, cpu_seconds)?;
        Ok(job)
    }

    fn limit(&self, memory: u64, cpu_seconds: u64) -> io::Result<()> {
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        let basic = &mut limits.BasicLimitInformation;
        basic.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
            | JOB_OBJECT_LIMIT_PROCESS_MEMORY
            | JOB_OBJECT_LIMIT_PROCESS_TIME
            | JOB_OBJECT_LIMIT_ACTIVE_PROCESS
            | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        // CPU time in 100 ns ticks.
        basic.PerProcessUserTimeLimit = i64::try_from(cpu_seconds.saturating_mul(10_000_000)).unwrap_or(i64::MAX);
        basic.ActiveProcessLimit = 1;
        limits.ProcessMemoryLimit = usize::try_from(memory).unwrap_or(usize::MAX);
        let size = std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32;
        // SAFETY: the job handle is open; the struct is the one this information class takes, of the size given,
        // and lives for the call.
        let set = unsafe {
            SetInformationJobObject(self.handle, JobObjectExtendedLimitInformation, (&raw const limits).cast(), size)
        };
        if set == 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Puts the started worker in the job.
    pub(crate) fn assign(&self, child: &Child) -> io::Result<()> {
        // SAFETY: both handles are open for the call (the child's is borrowed from `child`).
        if unsafe { AssignProcessToJobObject(self.handle, child.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the handle is open and closed only here.
        unsafe { CloseHandle(self.handle) };
    }
}

/// The worker's side: returns once this process is inside the job called `name`, or fails after [`ASSIGN_WAIT`].
pub(crate) fn wait_to_be_inside(name: &str) -> io::Result<()> {
    let wide = wide(name);
    // SAFETY: the name is a NUL-terminated UTF-16 string that lives for the call.
    let handle = unsafe { OpenJobObjectW(JOB_OBJECT_QUERY, 0, wide.as_ptr()) };
    if handle.is_null() {
        return Err(io::Error::last_os_error());
    }
    let job = Job { handle, name: name.to_string() };
    let started = Instant::now();
    loop {
        let mut inside = 0;
        // SAFETY: both handles are open for the call; the result is written to a BOOL that lives for it.
        if unsafe { IsProcessInJob(GetCurrentProcess(), job.handle, &mut inside) } == 0 {
            return Err(io::Error::last_os_error());
        }
        if inside != 0 {
            return Ok(());
        }
        if started.elapsed() > ASSIGN_WAIT {
            return Err(io::Error::other("the worker was never put in its job"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(std::iter::once(0)).collect()
}
