//! The fallback for the blocks [`Xz`] cannot decode: lzma-rust2's push decoder takes at most one filter besides
//! LZMA2 in a block (a delta filter before a BCJ one, say, it refuses as not supported), while its reader takes any
//! chain the format allows. A file read from its start that the push decoder refuses so is read again by the reader
//! from its start, past the text already yielded, so such a file is read whole as before (without restart points
//! after the block refused). Anything else the push decoder fails with (damage) is reported as it is: the reader
//! checks less (not the sizes an index gives), so it never stands in for a failed check.

use super::Xz;
use crate::budget::Budget;
use crate::media::compressed::{Input, MAX_XZ_MEMORY_KIB, input_at};
use crate::window::restarts::Restart;
use crate::window::stream::Decoder;
use lzma_rust2::XzReader;
use std::fs::File;
use std::io::{self, Read};

/// An xz file's text from its first byte: block by block, or whole once a block is refused.
pub(in crate::media::compressed) struct XzText<'f> {
    decoding: Decoding<'f>,
    file: &'f File,
    end: u64,
    budget: Budget,
    /// Text yielded so far.
    text: u64,
}

enum Decoding<'f> {
    Blocks(Box<Xz<'f>>),
    Whole(Box<XzReader<Input<'f>>>),
}

impl<'f> XzText<'f> {
    pub(in crate::media::compressed) fn new(file: &'f File, end: u64, budget: Budget) -> Self {
        let decoding = Decoding::Blocks(Box::new(Xz::new(file, end, budget.clone())));
        XzText { decoding, file, end, budget, text: 0 }
    }

    /// The reader from the file's start, past the text already yielded.
    fn whole(&self) -> io::Result<XzReader<Input<'f>>> {
        let input = input_at(self.file, 0, self.end, self.budget.clone());
        let mut reader = XzReader::new_mem_limit(input, true, MAX_XZ_MEMORY_KIB);
        let skipped = io::copy(&mut (&mut reader).take(self.text), &mut io::sink())?;
        if skipped < self.text {
            return Err(super::damaged("the xz stream ends earlier when read again"));
        }
        Ok(reader)
    }
}

impl Read for XzText<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.decoding {
            Decoding::Whole(reader) => reader.read(buf)?,
            Decoding::Blocks(xz) => match xz.read(buf) {
                Ok(n) => n,
                Err(error) if refused_chain(&error) => {
                    let mut reader = self.whole()?;
                    let n = reader.read(buf)?;
                    self.decoding = Decoding::Whole(Box::new(reader));
                    n
                }
                Err(error) => return Err(error),
            },
        };
        self.text += n as u64;
        Ok(n)
    }
}

impl Decoder for XzText<'_> {
    fn want_restart(&mut self) {
        if let Decoding::Blocks(xz) = &mut self.decoding {
            xz.want_restart();
        }
    }

    fn take_restart(&mut self) -> Option<Restart> {
        match &mut self.decoding {
            Decoding::Blocks(xz) => xz.take_restart(),
            Decoding::Whole(_) => None,
        }
    }
}

/// Whether the push decoder refused a block's filter chain as one it does not support (its words; a test pins them).
fn refused_chain(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::Unsupported || error.to_string().contains("not supported")
}
