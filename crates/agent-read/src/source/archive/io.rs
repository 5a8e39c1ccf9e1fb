//! The readers an archive is read through: every one stops at the time budget, and the bytes a format's parser may
//! pull in one step (a central directory, one tar header with its long names) are capped, so no archive can make the
//! parser hold more than that.

use crate::budget::Budget;
use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::rc::Rc;

/// Bytes read per system call.
const READ_LEN: usize = 64 * 1024;

/// How many bytes a parser may still read before the next [`Allowance::grant`]; shared between the reader that
/// spends it and the loop that grants it.
#[derive(Debug, Clone)]
pub struct Allowance(Rc<Cell<u64>>);

impl Allowance {
    /// An allowance of `bytes`.
    pub fn new(bytes: u64) -> Allowance {
        Allowance(Rc::new(Cell::new(bytes)))
    }

    /// Sets what may be read from now on.
    pub fn grant(&self, bytes: u64) {
        self.0.set(bytes);
    }

    /// Takes `n` bytes from it; fails when fewer are left.
    fn spend(&self, n: usize) -> io::Result<()> {
        let left = self.0.get();
        match left.checked_sub(n as u64) {
            Some(rest) => {
                self.0.set(rest);
                Ok(())
            }
            None => Err(io::Error::other(OverAllowance)),
        }
    }
}

/// The error of a parser that read past its [`Allowance`].
#[derive(Debug)]
pub struct OverAllowance;

impl std::fmt::Display for OverAllowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("read past what an archive's index may take")
    }
}

impl std::error::Error for OverAllowance {}

/// Whether `error` is an [`OverAllowance`], or wraps one (a parser's own error holding the reader's).
pub fn is_over_allowance(error: &io::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = error.get_ref().map(|inner| inner as _);
    while let Some(inner) = current {
        if inner.is::<OverAllowance>() {
            return true;
        }
        current = match inner.downcast_ref::<io::Error>() {
            Some(wrapped) => wrapped.get_ref().map(|inner| inner as _),
            None => inner.source(),
        };
    }
    false
}

/// The error of input that ends before what it declares (a member's data, the skip to the next header).
pub fn cut_short(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, format!("{what} is cut short"))
}

/// A file's bytes from `start` to `end`, read with `pread` (the handle's own position is never moved) and seekable,
/// each read checked against the time budget and, when given, an allowance.
#[derive(Debug)]
pub struct FileReader<'f> {
    file: &'f File,
    start: u64,
    pos: u64,
    end: u64,
    budget: Budget,
    allowance: Option<Allowance>,
}

impl<'f> FileReader<'f> {
    /// The bytes of `file` in `start..end`, positioned at `start`.
    pub fn new(file: &'f File, start: u64, end: u64, budget: Budget) -> FileReader<'f> {
        FileReader { file, start, pos: start, end: end.max(start), budget, allowance: None }
    }

    /// The same reader, failing once it has read more than `allowance` grants.
    pub fn with_allowance(self, allowance: Allowance) -> FileReader<'f> {
        FileReader { allowance: Some(allowance), ..self }
    }
}

impl Read for FileReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.budget.check()?;
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left).min(READ_LEN);
        if want == 0 {
            return Ok(0);
        }
        if let Some(allowance) = &self.allowance {
            allowance.spend(want)?;
        }
        let n = crate::platform::read_at(self.file, &mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FileReader<'_> {
    /// Positions are relative to `start`; a position past the end is kept (reads there return nothing).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let length = self.end - self.start;
        let relative = self.pos - self.start;
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => length.checked_add_signed(delta),
            SeekFrom::Current(delta) => relative.checked_add_signed(delta),
        };
        let target = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.pos = self.start.saturating_add(target);
        Ok(target)
    }
}

/// A reader that can only go forward, made seekable forward: a seek ahead reads and discards what lies between
/// (without spending the allowance: nothing is kept), a seek back fails. What a tar parser needs to skip members it
/// does not want in a decompressed stream.
pub struct Forward<R> {
    inner: R,
    pos: u64,
    allowance: Allowance,
    budget: Budget,
    /// Where skipped bytes are read to (made at the first skip, kept for the others).
    scratch: Vec<u8>,
}

impl<R: Read> Forward<R> {
    /// `inner` from its first byte, reads spending `allowance`.
    pub fn new(inner: R, allowance: Allowance, budget: Budget) -> Forward<R> {
        Forward { inner, pos: 0, allowance, budget, scratch: Vec::new() }
    }

    /// Reads and discards up to `target`; fails when the input ends first.
    fn skip_to(&mut self, target: u64) -> io::Result<()> {
        if self.pos < target && self.scratch.is_empty() {
            self.scratch = vec![0u8; READ_LEN];
        }
        while self.pos < target {
            self.budget.check()?;
            let want = usize::try_from(target - self.pos).unwrap_or(usize::MAX).min(READ_LEN);
            let n = match self.inner.read(&mut self.scratch[..want]) {
                Ok(0) => return Err(cut_short("the archive")),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.pos += n as u64;
        }
        Ok(())
    }
}

impl<R: Read> Read for Forward<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.budget.check()?;
        let want = buf.len().min(READ_LEN);
        self.allowance.spend(want)?;
        let n = self.inner.read(&mut buf[..want])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read> Seek for Forward<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
            SeekFrom::End(_) => None,
        };
        match target {
            Some(target) if target >= self.pos => {
                self.skip_to(target)?;
                Ok(self.pos)
            }
            _ => Err(io::Error::new(io::ErrorKind::Unsupported, "a decompressed archive is read forward only")),
        }
    }
}

/// What judges a member's bytes: fed each run of them (`Some`), then told of the end (`None`), when it may fail.
pub type Check = Box<dyn FnMut(Option<&[u8]>) -> io::Result<()>>;

/// Exactly `size` bytes of `inner`: more is damage (a member that inflates past what it declares), and so is less.
/// `check` sees every byte and judges the whole at the end (a CRC). Both are judged by the read that yields the last
/// byte, so a reader that stops at the declared size (a window over a member whose size is known) still meets them.
pub struct Exact<R> {
    inner: R,
    left: u64,
    check: Option<Check>,
}

impl<R: Read> Exact<R> {
    /// `size` bytes of `inner`.
    pub fn new(inner: R, size: u64) -> Exact<R> {
        Exact { inner, left: size, check: None }
    }

    /// The same, with `check` fed every byte (`Some`) and told of the end (`None`).
    pub fn checked(self, check: Check) -> Exact<R> {
        Exact { check: Some(check), ..self }
    }

    /// Judges the whole once its declared size was read: nothing may follow, and the check must pass.
    fn finish(&mut self) -> io::Result<()> {
        // One byte more than declared is enough to tell a member that lies about its size.
        let mut probe = [0u8; 1];
        loop {
            match self.inner.read(&mut probe) {
                Ok(0) => break,
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the member holds more than its declared size",
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        match self.check.as_mut() {
            Some(check) => check(None),
            None => Ok(()),
        }
    }
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.left == 0 {
            return Ok(0);
        }
        let want = usize::try_from(self.left).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(cut_short("the member's data"));
        }
        if let Some(check) = self.check.as_mut() {
            check(Some(&buf[..n]))?;
        }
        self.left -= n as u64;
        if self.left == 0 {
            self.finish()?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unlimited() -> Budget {
        Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(60), crate::budget::Cancel::new())
    }

    #[test]
    fn an_exact_reader_refuses_more_and_less_than_declared() {
        let read = |data: &[u8], size: u64| {
            let mut out = Vec::new();
            Exact::new(data, size).read_to_end(&mut out).map(|_| out)
        };
        assert_eq!(read(b"abc", 3).unwrap(), b"abc");
        assert!(read(b"abcd", 3).unwrap_err().to_string().contains("more than its declared size"));
        assert_eq!(read(b"ab", 3).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_forward_reader_skips_ahead_but_not_back_and_reads_within_its_allowance() {
        let data: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        let allowance = Allowance::new(10);
        let mut forward = Forward::new(&data[..], allowance.clone(), unlimited());
        forward.seek(SeekFrom::Current(200_000)).unwrap();
        let mut buf = [0u8; 4];
        forward.read_exact(&mut buf).unwrap();
        assert_eq!(buf, data[200_000..200_004]);
        assert!(forward.seek(SeekFrom::Start(5)).is_err());
        let error = forward.read_exact(&mut [0u8; 7]).unwrap_err();
        assert!(is_over_allowance(&error), "{error}");
        allowance.grant(100);
        assert!(forward.seek(SeekFrom::Current(1_000_000)).unwrap_err().to_string().contains("cut short"));
    }
}
