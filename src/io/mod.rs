//! I/O helpers: full reads from pipes, a counting adapter (what a progress display reads), and
//! [`OutputFile`], the way every front end writes an output path: a regular file is never seen
//! half-written, and a FIFO, a device or a descriptor is written in place, never replaced.

mod output;

#[cfg(unix)]
pub use output::committed_mode;
pub use output::{AtomicFile, Destination, OutputFile, What};

use std::io::{self, Read, Write};

/// How a source will be read, which decides how far ahead an object's GETs are sent (a file or
/// a pipe reads the same either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// From the start to the end (decrypt, verify): `parts_in_flight` GETs of `part_size`
    /// bytes are kept in flight ahead of the reader.
    Sequential,
    /// By ranges and seeks (`--range`, inspect, random access): what is read is fetched, at
    /// least `remote::MIN_FETCH` (16 KiB) bytes at a time (a read near the end fetches the object's last
    /// 16 KiB: footer, final frame and index in one request). A run of sequential
    /// reads earns read-ahead of a tenth of its length (up to the sequential mode's), so a large
    /// range still downloads on several connections while the bytes fetched beyond what is read
    /// stay within 10 % plus one `MIN_FETCH` per seek.
    Random,
}

/// True when `s` names an object by URL (`scheme://…`: `s3://`, `gs://`, `https://`) rather
/// than a local path. Front ends built without object storage use it too, to say why they
/// refuse such an argument.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    })
}

/// Reads until `buf` is full or the input ends, retrying short reads and interruptions (pipes
/// deliver data in pieces). Returns how many bytes were read: `buf.len()` unless at end of input.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A reader or writer that counts the bytes through it into a shared counter, which another
/// thread (a progress display) may read at any time.
pub struct Counted<T> {
    inner: T,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<T> Counted<T> {
    /// Wraps `inner`, adding to `count`.
    pub fn new(inner: T, count: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        Counted { inner, count }
    }

    /// Bytes counted so far (by this adapter and any other sharing its counter).
    pub fn count(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The wrapped reader or writer.
    pub fn into_inner(self) -> T {
        self.inner
    }

    fn add(&self, n: usize) {
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.add(n);
        Ok(n)
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.add(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Seeking counts nothing: the counter tells how many bytes were actually read.
impl<S: io::Seek> io::Seek for Counted<S> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

/// The operating system's reason alone, without a path a library added to the message (tempfile
/// names its temporary file: "`<os error> at path <temporary>`"), so a front end can name the
/// user's file instead.
pub fn without_path(e: &io::Error) -> io::Error {
    if let Some(code) = e.raw_os_error() {
        return io::Error::from_raw_os_error(code);
    }
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((os, _)) => io::Error::new(e.kind(), os.to_string()),
        None => io::Error::new(e.kind(), text),
    }
}

/// `e` again, its message naming `verb` and `name` once ("cannot read NAME: reason"), the
/// operating system's reason without the path it may carry.
pub fn named(e: &io::Error, verb: &str, name: &str) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("cannot {verb} {name}: {}", without_path(e)),
    )
}

/// Writes all of `bytes` at `at` of `file` (a positional write: the file's position is left
/// alone).
#[cfg(unix)]
pub(crate) fn write_all_at(file: &std::fs::File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(not(unix))]
pub(crate) fn write_all_at(_: &std::fs::File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::Error::other("positional writes need a unix system"))
}

/// Where a stream's workers may write into `file` by offset: its position once `flush` has put
/// what was written before into it (a header). `None` when positional writes do not apply: not
/// a unix system, not a regular file, or a file opened for appending (where a positional write
/// appends instead).
pub(crate) fn positional_start(
    file: &std::fs::File,
    flush: impl FnOnce() -> io::Result<()>,
) -> io::Result<Option<u64>> {
    if !cfg!(unix) || !file.metadata()?.is_file() || appends(file)? {
        return Ok(None);
    }
    flush()?;
    io::Seek::stream_position(&mut &*file).map(Some)
}

#[cfg(unix)]
fn appends(file: &std::fs::File) -> io::Result<bool> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(file, FcntlArg::F_GETFL).map_err(io::Error::from)?;
    Ok(OFlag::from_bits_truncate(flags).contains(OFlag::O_APPEND))
}

#[cfg(not(unix))]
fn appends(_: &std::fs::File) -> io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most 3 bytes per call, like a slow pipe.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn fills_whole_buffers_from_short_reads() {
        let data: Vec<u8> = (0..20).collect();
        let mut r = Trickle(&data);
        let mut buf = [0u8; 8];
        assert_eq!(read_full(&mut r, &mut buf).unwrap(), 8);
        assert_eq!(buf, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(read_full(&mut r, &mut buf).unwrap(), 8);
        assert_eq!(read_full(&mut r, &mut buf).unwrap(), 4);
        assert_eq!(read_full(&mut r, &mut buf).unwrap(), 0);
    }
}
