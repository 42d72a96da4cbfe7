//! The bytes of an age file as the reader sees them: the bytes the format detection already read
//! put back in front of the input, and the ASCII armor (when there is one) decoded by the `age`
//! crate's `ArmoredReader`, which also maps positions for `Seek`. A binary file does not go
//! through `ArmoredReader`, whose `SeekFrom::End` reads the whole input to learn its length.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use age::armor::ArmoredReader;

use crate::error::{Error, Result};
use crate::format::age::ARMOR_BEGIN;

/// Whitespace allowed before the armor (as Go age allows), at most.
const MAX_LEADING_SPACE: usize = 1024;

/// The decoded age file: binary bytes as they are, armored ones decoded. (Public only because
/// [`super::AgeChunks`] names it; made inside the crate.)
pub enum AgeInput<R> {
    Binary(BufReader<Prefixed<R>>),
    Armored(ArmoredReader<BufReader<Prefixed<R>>>),
}

impl<R: Read> AgeInput<R> {
    /// The input after its first bytes, `head`, were read: armored when its first line after
    /// any whitespace starts with `-----` (and then that line must be the armor's exact begin
    /// line), binary otherwise.
    pub(crate) fn new(mut head: Vec<u8>, mut inner: R) -> Result<Self> {
        let space = |h: &[u8]| h.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let candidate = |h: &[u8]| h.get(space(h)).is_none_or(|&b| b == b'-');
        if !candidate(&head) {
            return Ok(AgeInput::Binary(BufReader::new(Prefixed::new(head, inner))));
        }
        // Read on to the end of the first line after the whitespace.
        while candidate(&head)
            && !head[space(&head)..].contains(&b'\n')
            && head.len() <= MAX_LEADING_SPACE + ARMOR_BEGIN.len() + 2
        {
            let mut b = [0u8; 1];
            if inner.read(&mut b)? == 0 {
                break;
            }
            head.push(b[0]);
        }
        let skip = space(&head);
        let line = &head[skip..];
        if line.is_empty() || !candidate(&head) {
            return Ok(AgeInput::Binary(BufReader::new(Prefixed::new(head, inner))));
        }
        let end = line
            .iter()
            .position(|&b| b == b'\n')
            .map_or(line.len(), |i| i + 1);
        let first = line[..end]
            .strip_suffix(b"\n")
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        if first != Some(ARMOR_BEGIN) || skip > MAX_LEADING_SPACE {
            return Err(Error::Armor(format!(
                "the first line is '{}', not '{}'",
                String::from_utf8_lossy(&line[..end]).trim_end(),
                String::from_utf8_lossy(ARMOR_BEGIN)
            )));
        }
        let mut p = Prefixed::new(head, inner);
        p.at = skip;
        Ok(AgeInput::Armored(ArmoredReader::new(p)))
    }
}

impl<R: Read> Read for AgeInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            AgeInput::Binary(r) => r.read(buf),
            AgeInput::Armored(r) => r.read(buf),
        }
    }
}

impl<R: Read> BufRead for AgeInput<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            AgeInput::Binary(r) => r.fill_buf(),
            AgeInput::Armored(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            AgeInput::Binary(r) => r.consume(n),
            AgeInput::Armored(r) => r.consume(n),
        }
    }
}

impl<R: Read + Seek> Seek for AgeInput<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            AgeInput::Binary(r) => r.seek(to),
            AgeInput::Armored(r) => r.seek(to),
        }
    }
}

/// An input whose first bytes were already read (to tell the formats apart): they are read again
/// first. Positions are those of the whole input, whose first byte is offset 0.
pub struct Prefixed<R> {
    head: Vec<u8>,
    /// Position inside `head` while it is being read again; `head.len()` once past it.
    at: usize,
    pub(crate) inner: R,
}

impl<R> Prefixed<R> {
    pub(crate) fn new(head: Vec<u8>, inner: R) -> Self {
        Prefixed { head, at: 0, inner }
    }
}

impl<R: Read> Read for Prefixed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at < self.head.len() {
            let n = buf.len().min(self.head.len() - self.at);
            buf[..n].copy_from_slice(&self.head[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl<R: Seek> Seek for Prefixed<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let h = self.head.len() as u64;
        let target = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::Current(d) => {
                let here = match self.at < self.head.len() {
                    true => self.at as u64,
                    false => self.inner.stream_position()?,
                };
                here.checked_add_signed(d).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "seek before the start")
                })?
            }
            SeekFrom::End(d) => self.inner.seek(SeekFrom::End(d))?,
        };
        // The inner reader stays past the head; positions inside it are served from `head`.
        self.inner.seek(SeekFrom::Start(target.max(h)))?;
        self.at = target.min(h) as usize;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// The head is read again first; seeks anywhere (inside the head or past it) land on the
    /// byte of the whole input at that offset.
    #[test]
    fn a_prefixed_input_reads_and_seeks_as_the_whole_input() {
        let whole: Vec<u8> = (0..100u8).collect();
        let mut inner = Cursor::new(whole.clone());
        inner.set_position(8);
        let mut p = Prefixed::new(whole[..8].to_vec(), inner);
        let mut all = Vec::new();
        p.read_to_end(&mut all).unwrap();
        assert_eq!(all, whole);
        for at in [0u64, 3, 7, 8, 9, 99, 100] {
            assert_eq!(p.seek(SeekFrom::Start(at)).unwrap(), at);
            let mut rest = Vec::new();
            p.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, &whole[at as usize..], "from {at}");
        }
        assert_eq!(p.seek(SeekFrom::End(-95)).unwrap(), 5);
        assert_eq!(p.seek(SeekFrom::Current(2)).unwrap(), 7);
        let mut two = [0u8; 2];
        p.read_exact(&mut two).unwrap();
        assert_eq!(two, [7, 8]);
    }
}
