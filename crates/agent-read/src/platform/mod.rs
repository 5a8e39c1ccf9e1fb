//! What differs between operating systems, in one place, so that the stages of a read stay the same everywhere:
//! positional reads, a file's identity and times, opening without blocking, telling special files apart, and where
//! an open file really is ([`real_path`]).
//!
//! | piece | Linux | macOS | Windows |
//! | --- | --- | --- | --- |
//! | confined open | `openat2` + `RESOLVE_BENEATH` (through cap-std) | cap-std's own resolution | cap-std's own resolution |
//! | where a handle is | `/proc/self/fd` | `fcntl(F_GETPATH)` | `GetFinalPathNameByHandleW` |
//! | special files | `O_NONBLOCK`, then `fstat` | `O_NONBLOCK`, then `fstat` | the handle's type (`GetFileType`) |
//! | identity | device and inode | device and inode | creation time (see [`identity`]) |
//!
//! With the `portable-resolver` feature, Linux takes the portable road too: `openat2` is refused to the process
//! itself (see [`portable`]), so cap-std resolves path by path as it does on macOS and Windows, and `/proc` is never
//! asked where a handle is.

#[cfg(all(target_os = "linux", feature = "portable-resolver"))]
pub mod portable;
pub mod real_path;
#[cfg(windows)]
mod windows;
// Tested on every system; only Windows applies them.
#[cfg_attr(not(windows), allow(dead_code))]
pub mod windows_paths;

use std::fs::{File, Metadata};
use std::io;

/// Reads into `buf` from `offset` of `file`; the bytes read (0 at the end). On Windows the handle's own position moves
/// too, which no caller relies on: every read says where it starts.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, offset)
    }
}

/// Whether a positional read failed only because the handle cannot seek (a pipe): a worker's standard input.
#[cfg(any(feature = "pdf", feature = "documents"))]
pub fn is_unseekable(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ESPIPE)
    }
    #[cfg(windows)]
    {
        error.kind() == io::ErrorKind::NotSeekable
    }
}

/// Which file an open handle is: (device, inode) on Unix, (volume serial number, file index) on Windows. `metadata`
/// is the handle's own, which on Unix already holds both. When Windows cannot tell (a file system without file
/// indexes), the creation time stands in for the index: a file replaced by another (an editor's save) gets a new
/// one, and a file that kept it still has to match in size and times (see `FileVersion`).
pub fn identity(file: &File, metadata: &Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let _ = file;
        (metadata.dev(), metadata.ino())
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt as _;
        windows::file_id(file).unwrap_or((0, metadata.creation_time()))
    }
}

/// A file's modification time and status-change time, in nanoseconds since the epoch. Windows keeps no status-change
/// time the standard library offers: its last-write time stands in for both.
pub fn times_ns(metadata: &Metadata) -> (i128, i128) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let ns = |seconds: i64, nanos: i64| i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
        (ns(metadata.mtime(), metadata.mtime_nsec()), ns(metadata.ctime(), metadata.ctime_nsec()))
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt as _;
        // 100 ns ticks since 1601-01-01.
        const EPOCH_GAP_TICKS: i128 = 116_444_736_000_000_000;
        let written = (i128::from(metadata.last_write_time()) - EPOCH_GAP_TICKS) * 100;
        (written, written)
    }
}

/// Makes `options` (cap-std's, for opens beneath a root) open without blocking: a FIFO or a device opened for reading
/// must not wait for a writer or a carrier. Windows opens never wait so: named pipes and devices live outside any
/// directory a root can hold, and their names are refused before an open (see [`windows_paths`]). There the same
/// open must also accept a directory, which Windows opens only with `FILE_FLAG_BACKUP_SEMANTICS` (the handle's type
/// is told afterwards, as on Unix).
pub fn nonblocking(options: &mut cap_std::fs::OpenOptions) -> &mut cap_std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
    }
    #[cfg(windows)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(windows::FILE_FLAG_BACKUP_SEMANTICS)
    }
}

/// The same for an unconfined open (beneath a root of `/`, and the line-index cache).
pub fn nonblocking_std(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt as _;
        options.custom_flags(windows::FILE_FLAG_BACKUP_SEMANTICS)
    }
}

/// What an opened handle is when it is neither a regular file nor a directory (`None` when it is one of those): a FIFO,
/// a socket, a device. On Windows the handle's own type decides too, since a metadata query alone can call a device
/// a file.
pub fn special_kind(file: &File, metadata: &Metadata) -> Option<&'static str> {
    #[cfg(windows)]
    if let Some(kind) = windows::handle_kind(file) {
        return Some(kind);
    }
    #[cfg(unix)]
    let _ = file;
    if metadata.is_dir() || metadata.is_file() {
        return None;
    }
    Some(type_kind(&metadata.file_type()))
}

/// What a file type names when it is not a regular file, directory or symlink.
pub fn type_kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let t = file_type;
        special_name(t.is_fifo(), t.is_socket(), t.is_char_device(), t.is_block_device())
    }
    #[cfg(windows)]
    {
        let _ = file_type;
        "not a regular file"
    }
}

/// The same for cap-std's file type (a directory listing's entries).
pub fn cap_type_kind(file_type: &cap_std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt as _;
        let t = file_type;
        special_name(t.is_fifo(), t.is_socket(), t.is_char_device(), t.is_block_device())
    }
    #[cfg(windows)]
    {
        let _ = file_type;
        "not a regular file"
    }
}

/// What a special file is, from the four type tests Unix file types offer.
#[cfg(unix)]
fn special_name(fifo: bool, socket: bool, char_device: bool, block_device: bool) -> &'static str {
    match (fifo, socket, char_device, block_device) {
        (true, ..) => "a FIFO (named pipe)",
        (_, true, ..) => "a socket",
        (_, _, true, _) => "a character device",
        (.., true) => "a block device",
        _ => "not a regular file",
    }
}

/// Whether an open failed because the path does not exist (or a component on the way is not a directory).
pub fn is_missing(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))
    }
    #[cfg(windows)]
    {
        error.kind() == io::ErrorKind::NotFound || error.raw_os_error() == Some(windows::ERROR_DIRECTORY)
    }
}

/// Whether an open of a special file failed in a way that says what it is (opening a socket gives `ENXIO`).
pub fn is_special_open_failure(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ENXIO)
    }
    #[cfg(windows)]
    {
        let _ = error;
        false
    }
}

/// Whether an open failed on a symbolic link loop.
pub fn is_link_loop(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(windows)]
    {
        error.raw_os_error() == Some(windows::ERROR_CANT_RESOLVE_FILENAME)
    }
}

/// Whether the kernel refused an open because it would cross out of the directory it is beneath (`EXDEV` from
/// `openat2`).
pub fn is_cross_device(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::EXDEV)
    }
    #[cfg(windows)]
    {
        error.kind() == io::ErrorKind::CrossesDevices
    }
}
