//! I/O helpers: full reads from pipes, a counting adapter (what a progress display reads), and
//! [`AtomicFile`], the way every front end writes a file that must never be seen half-written.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

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

/// A file written under a hidden temporary name beside its destination and renamed over it only
/// by [`AtomicFile::commit`]: a reader never sees a half-written file, and a failure (or a drop
/// without commit) leaves the destination as it was. While it is written the temporary file is
/// readable by its owner only (0600), whatever it holds; `commit` gives it the mode of the file it
/// replaces or, for a new file, the mode the umask gives (0666 & !umask), never wider.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
    overwrite: bool,
}

impl AtomicFile {
    /// Starts writing `dest`. Fails with `AlreadyExists` when it exists and `overwrite` is false.
    /// Errors carry the operating system's reason, not the temporary name.
    pub fn create(dest: &Path, overwrite: bool) -> io::Result<Self> {
        if !overwrite && dest.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "the file exists",
            ));
        }
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".zseal-partial");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o600));
        }
        let tmp = builder.tempfile_in(dir).map_err(|e| without_path(&e))?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            overwrite,
        })
    }

    /// The temporary file's path (for a registry that removes it on a signal).
    pub fn temporary_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Where the file goes.
    pub fn destination(&self) -> &Path {
        &self.dest
    }

    /// The open temporary file.
    pub fn as_file(&self) -> &std::fs::File {
        self.tmp.as_file()
    }

    /// Gives the file its final mode, syncs it to disk when `sync`, and renames it over the
    /// destination (beside it only, failing with `AlreadyExists`, when overwriting was not
    /// allowed and the destination appeared meanwhile); with `sync`, the directory is synced
    /// after the rename too, so that the new name is on disk when this returns.
    pub fn commit(mut self, sync: bool) -> io::Result<()> {
        self.tmp.flush()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = match std::fs::metadata(&self.dest) {
                Ok(m) if self.overwrite => m.permissions().mode() & 0o777,
                _ => 0o666 & !umask(),
            };
            self.tmp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        if sync {
            self.tmp.as_file().sync_all()?;
        }
        let placed = if self.overwrite {
            self.tmp.persist(&self.dest)
        } else {
            self.tmp.persist_noclobber(&self.dest)
        };
        placed.map(drop).map_err(|e| without_path(&e.error))?;
        #[cfg(unix)]
        if sync {
            let dir = match self.dest.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// The operating system's reason alone, without a path a library added to the message (tempfile
/// names its temporary file: "<os error> at path <temporary>"), so a front end can name the
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

/// The process's umask. Linux reports it in /proc without changing it; elsewhere it is read by
/// setting it and setting it back, which another thread creating a file at that instant could
/// see.
#[cfg(unix)]
fn umask() -> u32 {
    let from_proc = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        });
    from_proc.unwrap_or_else(|| {
        use nix::sys::stat::{umask, Mode};
        let old = umask(Mode::from_bits_truncate(0o077));
        umask(old);
        old.bits() as u32
    })
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
