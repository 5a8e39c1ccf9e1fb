//! The Windows calls behind [`super`]: where a handle really is, and what kind of object it is.

use std::ffi::OsString;
use std::fs::File;
use std::os::windows::ffi::OsStringExt as _;
use std::os::windows::io::AsRawHandle as _;
use std::path::PathBuf;
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_NAME_NORMALIZED, FILE_TYPE_CHAR, FILE_TYPE_DISK, FILE_TYPE_PIPE,
    GetFileInformationByHandle, GetFileType, GetFinalPathNameByHandleW, VOLUME_NAME_DOS,
};

/// Lets an open accept a directory as well as a file.
pub(super) const FILE_FLAG_BACKUP_SEMANTICS: u32 = windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS;
/// `ERROR_DIRECTORY`: a component on the way is not a directory.
pub(super) const ERROR_DIRECTORY: i32 = windows_sys::Win32::Foundation::ERROR_DIRECTORY as i32;
/// `ERROR_CANT_RESOLVE_FILENAME`: too many reparse points (a link loop).
pub(super) const ERROR_CANT_RESOLVE_FILENAME: i32 = windows_sys::Win32::Foundation::ERROR_CANT_RESOLVE_FILENAME as i32;

/// The handle's final path (`GetFinalPathNameByHandleW`), every link and junction resolved, in its plain form
/// (`C:\work\a.txt`, `\\server\share\a.txt`: see [`super::windows_paths::plain`]).
pub(super) fn final_path(file: &File) -> Option<PathBuf> {
    let handle = file.as_raw_handle();
    let mut buffer = vec![0u16; 512];
    loop {
        let capacity = u32::try_from(buffer.len()).ok()?;
        // SAFETY: the handle is open for the call (borrowed from `file`); the call writes at most `capacity` UTF-16
        // units into the buffer, which holds that many, and returns the length written, or the length needed
        // (its NUL included) when the buffer is too small, or 0 on failure.
        let written = unsafe {
            GetFinalPathNameByHandleW(handle, buffer.as_mut_ptr(), capacity, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS)
        } as usize;
        if written == 0 {
            return None;
        }
        if written < buffer.len() {
            buffer.truncate(written);
            let path = OsString::from_wide(&buffer);
            return Some(PathBuf::from(super::windows_paths::plain(&path.to_string_lossy())));
        }
        buffer.resize(written, 0);
    }
}

/// The handle's (volume serial number, file index): together they name one file on the machine, as (device, inode)
/// do on Unix. `None` when the call fails or the file system keeps no index (it reports 0).
pub(super) fn file_id(file: &File) -> Option<(u64, u64)> {
    // SAFETY: all-zero bytes are a valid value of this plain C struct of integers and FILETIMEs.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open for the call (borrowed from `file`); the call only writes into `info`, which is
    // the structure it expects.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return None;
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    (index != 0).then_some((u64::from(info.dwVolumeSerialNumber), index))
}

/// What the handle is when it is not a file on a disk: a console or other character device, or a pipe.
pub(super) fn handle_kind(file: &File) -> Option<&'static str> {
    // SAFETY: the handle is open for the call (borrowed from `file`); GetFileType only reads its type.
    match unsafe { GetFileType(file.as_raw_handle()) } {
        FILE_TYPE_DISK => None,
        FILE_TYPE_CHAR => Some("a character device"),
        FILE_TYPE_PIPE => Some("a pipe"),
        _ => Some("not a regular file"),
    }
}
