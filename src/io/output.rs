//! Where an output path leads, decided before a byte is written, and how it is written.
//!
//! The rules (docs/CLI.md "Where outputs go", the same for the command line and the Python package):
//! - nothing there: a new file, written under a hidden temporary name beside it and renamed into
//!   place only when complete ([`AtomicFile`]);
//! - a regular file: replaced the same way, and only when overwriting was asked for; a file with
//!   other hard links is refused, because the rename would leave the other names holding the old
//!   contents;
//! - a symbolic link: followed. Its target is written (replaced atomically, or written in place
//!   when it is not a regular file) and the link is kept, so that everyone who reads through the
//!   link sees the new contents. A link to nothing is refused (creating files through links is
//!   how a link planted in a shared directory redirects a write), and so is a link in a sticky,
//!   world-writable directory (`/tmp`) that belongs neither to this user nor to the directory's
//!   owner, the rule of Linux's `fs.protected_symlinks`;
//! - a FIFO, a character or block device: opened and written in place, never renamed over
//!   (overwriting must still be asked for, except for `/dev/null`); one in a sticky directory
//!   that is world- or group-writable and that belongs neither to this user nor to the
//!   directory's owner is refused, directly or through a link (the rule of
//!   `fs.protected_fifos=2`, which an open without `O_CREAT` sidesteps);
//! - a descriptor the process already holds (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
//!   `/proc/self/fd/N`): written in place like standard output, appending when it is a regular
//!   file so that nothing the shell or an earlier writer put there is overwritten;
//! - a directory or a socket: refused.
//!
//! The resolution and the write are two steps, so a path can change between them; the atomic
//! cases stay safe (a new file is linked into place without replacing anything that appeared
//! meanwhile, and a rename replaces a link or a file, never writes through one).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::without_path;

/// What an output path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// Nothing: a new file is created.
    Nothing,
    /// A regular file, with its number of hard links.
    File {
        /// Names the file has (1 for an ordinary file).
        links: u64,
    },
    /// `/dev/null` (or another name of the same device).
    Null,
    /// A descriptor this process already holds (`/dev/stdout`, `/dev/fd/N`, …), and whether it
    /// is a regular file.
    Descriptor {
        /// True when the descriptor leads to a regular file (appended to).
        regular: bool,
    },
    /// A FIFO, a character device or a block device, named for messages ("a FIFO").
    Special(&'static str),
}

/// An output path resolved: what it names and the path that is actually written (the target of
/// a symbolic link, or the path itself).
#[derive(Clone, Debug)]
pub struct Destination {
    given: PathBuf,
    real: PathBuf,
    what: What,
}

impl Destination {
    /// Looks at `path` without writing anything. Fails, with a message saying what to do, for a
    /// directory, a socket, a link to nothing and a link that may have been planted (see the
    /// module's rules); the message does not repeat the path.
    pub fn resolve(path: &Path) -> io::Result<Destination> {
        let at = |real: PathBuf, what| Destination {
            given: path.to_path_buf(),
            real,
            what,
        };
        if is_descriptor_alias(path) {
            let m = std::fs::metadata(path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "it names a descriptor this process does not have open ({})",
                        without_path(&e)
                    ),
                )
            })?;
            classify(&m)?;
            return Ok(at(
                path.to_path_buf(),
                What::Descriptor {
                    regular: m.is_file(),
                },
            ));
        }
        let link = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(at(path.to_path_buf(), What::Nothing))
            }
            Err(e) => return Err(without_path(&e)),
        };
        if !link.file_type().is_symlink() {
            let what = classify(&link)?;
            if let What::Special(kind) = what {
                refuse_planted(path, &link, kind)?;
            }
            return Ok(at(path.to_path_buf(), what));
        }
        refuse_planted(path, &link, "a symbolic link")?;
        let target = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "it is a symbolic link to a file that does not exist, and zseal does not \
                     create files through links: give the target's own path",
                ))
            }
            Err(e) => return Err(without_path(&e)),
        };
        let what = classify(&target)?;
        if let What::Special(kind) = what {
            let real = std::fs::canonicalize(path).map_err(|e| without_path(&e))?;
            refuse_planted(&real, &target, kind)?;
        }
        // A regular target is replaced by a rename, which must happen at the target's own path
        // (renaming over the link would replace the link). Anything else is opened through it.
        let real = match what {
            What::File { .. } => std::fs::canonicalize(path).map_err(|e| without_path(&e))?,
            _ => path.to_path_buf(),
        };
        Ok(at(real, what))
    }

    /// What the path names.
    pub fn what(&self) -> What {
        self.what
    }

    /// The path as the caller gave it.
    pub fn path(&self) -> &Path {
        &self.given
    }

    /// The path written: a link's target when the link leads to a regular file, else the path.
    pub fn real_path(&self) -> &Path {
        &self.real
    }

    /// True when writing it replaces or overwrites something, so that the caller must have been
    /// asked to (`--force`, `overwrite=True`): an existing regular file, FIFO or device. A new
    /// file, `/dev/null` and a descriptor the process holds need no such permission.
    pub fn needs_overwrite(&self) -> bool {
        matches!(self.what, What::File { .. } | What::Special(_))
    }

    /// A phrase for messages: "a FIFO", "a regular file", …
    pub fn describe(&self) -> &'static str {
        match self.what {
            What::Nothing => "nothing yet",
            What::File { .. } => "a file",
            What::Null => "the null device",
            What::Descriptor { .. } => "an open descriptor",
            What::Special(s) => s,
        }
    }
}

/// Paths that name a descriptor of this process rather than a file.
fn is_descriptor_alias(path: &Path) -> bool {
    let named = |p: &Path| {
        p == Path::new("/dev/stdout")
            || p == Path::new("/dev/stderr")
            || p.starts_with("/dev/fd")
            || p.starts_with("/proc/self/fd")
            || p.starts_with("/proc/thread-self/fd")
    };
    named(path) || std::fs::read_link(path).is_ok_and(|t| named(&t))
}

/// What a (followed) file type means for an output, refusing what cannot be written.
fn classify(m: &std::fs::Metadata) -> io::Result<What> {
    let t = m.file_type();
    if t.is_file() {
        #[cfg(unix)]
        let links = std::os::unix::fs::MetadataExt::nlink(m);
        #[cfg(not(unix))]
        let links = 1;
        return Ok(What::File { links });
    }
    if t.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory: give a file name inside it",
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if t.is_char_device() {
            let null = std::fs::metadata("/dev/null").is_ok_and(|n| n.rdev() == m.rdev());
            return Ok(if null {
                What::Null
            } else {
                What::Special("a character device")
            });
        }
        if t.is_block_device() {
            return Ok(What::Special("a block device"));
        }
        if t.is_fifo() {
            return Ok(What::Special("a FIFO"));
        }
        if t.is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a socket, which cannot be opened as a file: write to standard output and \
                 pipe it to the program behind the socket",
            ));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "it is neither a file, a FIFO nor a device",
    ))
}

/// Refuses a link, FIFO or device (`kind`, with its metadata `m`) that belongs neither to this
/// user nor to the directory's owner, in a sticky directory others can write to: world-writable
/// (`/tmp`) for a link, world- or group-writable (a team's mode 1770 directory) for a FIFO or
/// a device. Someone else may have planted it to redirect the write or to read what is written
/// into it. These are the rules Linux applies to opens when `fs.protected_symlinks` is 1 and
/// `fs.protected_fifos` (`protected_regular` for devices' sake) is 2, its strictest; a writer
/// that follows links itself, or opens without `O_CREAT`, must apply them itself.
#[cfg(unix)]
fn refuse_planted(path: &Path, m: &std::fs::Metadata, kind: &str) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(d) = std::fs::metadata(dir) else {
        return Ok(());
    };
    // fs.protected_symlinks covers world-writable sticky directories; fs.protected_fifos=2
    // (and protected_regular=2) group-writable ones too (a team's 1770 directory).
    let others = match kind {
        "a symbolic link" => 0o002,
        _ => 0o022,
    };
    let shared = d.mode() & 0o1000 != 0 && d.mode() & others != 0;
    let me = nix::unistd::geteuid().as_raw();
    if shared && m.uid() != me && m.uid() != d.uid() {
        let what = if kind == "a symbolic link" {
            "which zseal does not follow: give the target's own path"
        } else {
            "which zseal does not write into: write to a path in a directory of your own"
        };
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is {kind} owned by another user in a shared directory (sticky and \
                 writable by others), {what}"
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn refuse_planted(_: &Path, _: &std::fs::Metadata, _: &str) -> io::Result<()> {
    Ok(())
}

/// An output being written: a new or replaced regular file ([`AtomicFile`], committed by a
/// rename) or something written in place (a FIFO, a device, a descriptor).
pub enum OutputFile {
    /// A temporary file renamed over the destination by [`OutputFile::commit`].
    Atomic(AtomicFile),
    /// A FIFO, a device or a descriptor, opened for writing; what is written is there at once.
    InPlace {
        /// The open file.
        file: File,
        /// The path it was opened by.
        path: PathBuf,
    },
}

impl OutputFile {
    /// Starts writing `dest` by the module's rules. Fails with `AlreadyExists` when it holds
    /// something and `overwrite` is false ([`Destination::needs_overwrite`]: the one check, so
    /// front ends map that kind to their own advice), and with another kind when a replaced
    /// file has other hard links (overwriting would not help). `private` gives a new or
    /// replaced file mode 0600 whatever the umask (key files).
    pub fn create(dest: &Destination, overwrite: bool, private: bool) -> io::Result<Self> {
        if dest.needs_overwrite() && !overwrite {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("it exists ({})", dest.describe()),
            ));
        }
        match dest.what {
            What::Nothing => AtomicFile::create(&dest.real, false).map(|f| f.private(private)),
            What::File { links } if links > 1 => Err(io::Error::other(format!(
                "the file has {links} hard links, and replacing it would leave the other \
                     names with the old contents: remove the other links first, or write to \
                     another path"
            ))),
            What::File { .. } => AtomicFile::create(&dest.real, true).map(|f| f.private(private)),
            What::Null | What::Special(_) | What::Descriptor { .. } => {
                let mut opts = std::fs::OpenOptions::new();
                opts.write(true);
                if let What::Descriptor { regular: true } = dest.what {
                    opts.append(true);
                }
                let file = opts.open(&dest.real).map_err(|e| without_path(&e))?;
                return Ok(OutputFile::InPlace {
                    file,
                    path: dest.given.clone(),
                });
            }
        }
        .map(OutputFile::Atomic)
    }

    /// Opens `path` by the module's rules: [`Destination::resolve`] then [`OutputFile::create`].
    pub fn open(path: &Path, overwrite: bool) -> io::Result<Self> {
        OutputFile::create(&Destination::resolve(path)?, overwrite, false)
    }

    /// Completes the output: a file is given its mode, synced when `sync` and renamed into
    /// place; something written in place is flushed (and synced when it is a regular file).
    pub fn commit(self, sync: bool) -> io::Result<()> {
        match self {
            OutputFile::Atomic(f) => f.commit(sync),
            OutputFile::InPlace { mut file, .. } => {
                file.flush()?;
                if sync && file.metadata().is_ok_and(|m| m.is_file()) {
                    file.sync_all()?;
                }
                Ok(())
            }
        }
    }

    /// The open file being written (the temporary file, or the FIFO, device or descriptor).
    pub fn as_file(&self) -> &File {
        match self {
            OutputFile::Atomic(f) => f.as_file(),
            OutputFile::InPlace { file, .. } => file,
        }
    }

    /// The temporary file's path, for a registry that removes it on a signal (none when written
    /// in place).
    pub fn temporary_path(&self) -> Option<&Path> {
        match self {
            OutputFile::Atomic(f) => Some(f.temporary_path()),
            OutputFile::InPlace { .. } => None,
        }
    }

    /// Where the output goes, as given (a link's target for a replaced file behind a link).
    pub fn destination(&self) -> &Path {
        match self {
            OutputFile::Atomic(f) => f.destination(),
            OutputFile::InPlace { path, .. } => path,
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            OutputFile::Atomic(f) => f.write(buf),
            OutputFile::InPlace { file, .. } => file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            OutputFile::Atomic(f) => f.flush(),
            OutputFile::InPlace { file, .. } => file.flush(),
        }
    }
}
/// A file written under a hidden temporary name beside its destination and renamed over it only
/// by [`AtomicFile::commit`]: a reader never sees a half-written file, and a failure (or a drop
/// without commit) leaves the destination as it was. While it is written the temporary file is
/// readable by its owner only (0600), whatever it holds; `commit` gives a new file the mode the
/// umask gives (0666 & !umask) and a replaced file its old mode within that, never wider (a
/// planted 0666 file does not make secret plaintext world-readable), or 0600 when
/// [`AtomicFile::private`]. It writes `dest` itself: [`OutputFile`] follows links first.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
    overwrite: bool,
    private: bool,
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
            private: false,
        })
    }

    /// With `true`, the committed file keeps mode 0600 whatever the umask (a key file).
    pub fn private(mut self, private: bool) -> Self {
        self.private = private;
        self
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
            let mode = committed_mode(&self.dest, self.overwrite, self.private);
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

/// The mode a file written beside `dest` takes when it is renamed onto it (see [`AtomicFile`]):
/// what the umask gives a new file, a replaced file's old mode within that (when `overwrite`),
/// or 0600 when `private`. Also for a resumed download's partial file (docs/OBJECTS.md).
#[cfg(unix)]
pub fn committed_mode(dest: &Path, overwrite: bool, private: bool) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let allowed = if private { 0o600 } else { 0o666 & !umask() };
    match std::fs::symlink_metadata(dest) {
        Ok(m) if overwrite && m.is_file() => m.permissions().mode() & allowed,
        _ => allowed,
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
