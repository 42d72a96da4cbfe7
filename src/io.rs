//! I/O helpers: full reads from pipes, and the input and output ends of the command line with
//! their safety rules (no clobbering, no half-written files, no binary on a terminal).

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Reads until `buf` is full or the input ends, retrying short reads and interruptions (pipes
/// deliver data in pieces). Returns how many bytes were read: `buf.len()` unless at end of input.
pub fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
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

/// Where data comes from: a file, or standard input for `None` and `-`.
pub enum Input {
    /// Standard input.
    Stdin(io::StdinLock<'static>),
    /// A file.
    File(File),
}

impl Input {
    /// Opens `path` (`None` or `-` for stdin); the error names the file.
    pub fn open(path: Option<&Path>) -> Result<Self> {
        match path {
            None => Ok(Input::Stdin(io::stdin().lock())),
            Some(p) if p == Path::new("-") => Ok(Input::Stdin(io::stdin().lock())),
            Some(p) => File::open(p).map(Input::File).map_err(|e| {
                Error::Io(io::Error::new(
                    e.kind(),
                    format!("cannot open {}: {e}", p.display()),
                ))
            }),
        }
    }

    /// The input's size when it is a regular file.
    pub fn file_size(&self) -> Option<u64> {
        match self {
            Input::File(f) => f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()),
            Input::Stdin(_) => None,
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(s) => s.read(buf),
            Input::File(f) => f.read(buf),
        }
    }
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

/// Temporary outputs not yet committed, so that an interrupt (Ctrl-C) can remove them: a
/// signal handler cannot run destructors.
static PARTIAL: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every temporary output that is still being written. For signal handlers, which then
/// exit: the process must not go on writing to them.
pub fn remove_partial_outputs() {
    let paths = match PARTIAL.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

/// Registers a temporary output for [`remove_partial_outputs`] while it lives.
pub struct PartialGuard(PathBuf);

impl PartialGuard {
    fn new(path: &Path) -> Self {
        if let Ok(mut p) = PARTIAL.lock() {
            p.push(path.to_path_buf());
        }
        PartialGuard(path.to_path_buf())
    }
}

impl Drop for PartialGuard {
    fn drop(&mut self) {
        if let Ok(mut p) = PARTIAL.lock() {
            p.retain(|q| *q != self.0);
        }
    }
}

/// Where data goes: standard output, or a temporary file beside the destination that is renamed
/// over it only by [`Output::commit`]. Dropped without a commit, the temporary file is removed,
/// so a failure never leaves a half-written output.
pub enum Output {
    /// Standard output.
    Stdout(io::StdoutLock<'static>),
    /// A temporary file and where it goes.
    File {
        /// The temporary file in the destination's directory.
        tmp: tempfile::NamedTempFile,
        /// The destination.
        dest: PathBuf,
        /// Whether an existing destination may be replaced.
        force: bool,
        /// Keeps the temporary file registered for removal on Ctrl-C.
        guard: PartialGuard,
    },
}

impl Output {
    /// Prepares `path` (`None` or `-` for stdout) for writing, checking first that it would not
    /// overwrite a file without `force`, would not be the input itself, and would not put binary
    /// on a terminal.
    pub fn create(path: Option<&Path>, force: bool, input: Option<&Path>) -> Result<Self> {
        let path = path.filter(|p| *p != Path::new("-"));
        let Some(dest) = path else {
            if io::stdout().is_terminal() {
                return Err(Error::InvalidOption(
                    "refusing to write binary data to the terminal: use -o FILE or redirect the output (> FILE, | program)".into(),
                ));
            }
            return Ok(Output::Stdout(io::stdout().lock()));
        };
        if let Some(input) = input.filter(|p| *p != Path::new("-")) {
            if same_file(input, dest) {
                return Err(Error::InvalidOption(format!(
                    "{} is both the input and the output: write to another file",
                    dest.display()
                )));
            }
        }
        if dest.exists() && !force {
            return Err(Error::InvalidOption(format!(
                "{} already exists: use --force to overwrite it, or choose another -o",
                dest.display()
            )));
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
        builder.permissions(default_permissions());
        let tmp = builder.tempfile_in(dir).map_err(|e| {
            Error::Io(io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {e}", dir.display()),
            ))
        })?;
        let guard = PartialGuard::new(tmp.path());
        Ok(Output::File {
            tmp,
            dest: dest.to_path_buf(),
            force,
            guard,
        })
    }

    /// Flushes and, for a file, syncs it and renames it into place.
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut s) => Ok(s.flush()?),
            Output::File {
                mut tmp,
                dest,
                force,
                guard: _guard,
            } => {
                tmp.flush()?;
                tmp.as_file().sync_all()?;
                let placed = if force {
                    tmp.persist(&dest)
                } else {
                    tmp.persist_noclobber(&dest)
                };
                placed.map(drop).map_err(|e| {
                    Error::Io(io::Error::new(
                        e.error.kind(),
                        format!("cannot write {}: {}", dest.display(), e.error),
                    ))
                })
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(s) => s.write(buf),
            Output::File { tmp, .. } => tmp.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(s) => s.write_all(buf),
            Output::File { tmp, .. } => tmp.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(s) => s.flush(),
            Output::File { tmp, .. } => tmp.flush(),
        }
    }
}

/// What a newly created file gets from the umask, as with any other tool (tempfile would
/// otherwise leave it readable by its owner only).
#[cfg(unix)]
fn default_permissions() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o666)
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
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
