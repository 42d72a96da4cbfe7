//! Downloads that survive a cut (docs/OBJECTS.md, "Resuming a download"): a whole object
//! decrypted into a regular file is written into `DEST.zseal-partial`, with a journal of how much
//! of it is authenticated and on disk, so that a run that fails or is killed is continued by
//! `decrypt … --resume` (Python: `zseal.download(…, resume=True)`) instead of starting over.
//! The destination is replaced only by renaming the partial file onto it once the whole file is
//! checked. [`Download::plan`] decides and refuses before any key is asked for,
//! [`Download::start`] opens the partial file for an unlocked reader, and [`Partial::run`]
//! writes into it and ends the run either way.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(unix)]
use nix::fcntl::FlockArg;
use serde::{Deserialize, Serialize};

use super::journal::{self, Kind};
use crate::error::{Error, Result};
use crate::io::{named, Destination, What};
use crate::transfer::Source;

mod partial;
pub use partial::{Appender, Failed, Partial};

/// A refusal with `msg`: what was asked cannot be done (the caller's to change).
fn refused(msg: String) -> Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg).into()
}

/// A failure with `msg`.
fn failed(msg: String) -> Error {
    io::Error::other(msg).into()
}

/// What the journal of a download records (docs/OBJECTS.md: the table of fields).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    job: String,
    version: u32,
    url: String,
    etag: String,
    object_len: u64,
    format: String,
    /// Known once a resumed run read the trailer (a first run reads straight through).
    plaintext_len: Option<u64>,
    destination: PathBuf,
    partial: PathBuf,
    /// Plaintext bytes authenticated, written into the partial file and synced.
    done: u64,
}

const JOB: &str = "zseal-download";

/// What the caller asked for, as far as resuming goes.
pub struct Ask<'a> {
    /// The object's URL (`None`: a local input, never resumed).
    pub url: Option<&'a str>,
    /// The destination (`None` or `-`: standard output; a URL: an object).
    pub output: Option<&'a Path>,
    /// Continue a pending download (`--resume`).
    pub resume: bool,
    /// Replace the destination, and start a pending download over (`--force`).
    pub force: bool,
    /// A signer is required: the file is read from its first frame (FORMAT.md §12.4).
    pub signer: bool,
    /// Only a range of the plaintext is asked for.
    pub range: bool,
}

/// A download into a regular file that keeps a partial file and a journal, before the key is
/// unwrapped: what the object is, where it goes, and the pending journal it continues, if any.
pub struct Download {
    url: String,
    etag: String,
    object_len: u64,
    /// The destination as given, for messages.
    shown: String,
    dest: PathBuf,
    partial: PathBuf,
    key: String,
    pending: Option<Record>,
    force: bool,
}

impl Download {
    /// The resumable download `ask` makes of `input`, or `None` when it is not one (then the
    /// command decrypts as before); `--resume` with something that cannot be resumed, a pending
    /// download without `--resume` or `--force`, and an object that changed are refused here,
    /// before any key is asked for.
    pub fn plan(ask: &Ask, input: &Source) -> Result<Option<Download>> {
        let Some(url) = ask.url else {
            return refuse(ask, "is for a download from an object (s3://, gs://, az://, http(s)://): a local input is read again from its start anyway");
        };
        let Some(out) = ask
            .output
            .filter(|p| *p != Path::new("-") && !p.to_str().is_some_and(crate::io::is_url))
        else {
            return refuse(
                ask,
                "needs -o FILE: standard output or an object cannot be continued where it stopped",
            );
        };
        if ask.range {
            return refuse(ask, "continues a whole download, not a --range");
        }
        if ask.signer {
            return refuse(ask, "cannot check a signer: the check reads the file from its first frame (run `zseal verify --signer …` on the object first, then decrypt without --signer)");
        }
        let Some(etag) = input.etag() else {
            return refuse(ask, &format!("needs a store that gives the object's version (a strong ETag), so that a changed object is told apart; {url} has none: download it again without --resume"));
        };
        // Without a state directory (no HOME, or one not private), a download is not resumable
        // but still works, as before.
        if let Err(e) = journal::state_dir() {
            return match ask.resume {
                true => Err(e),
                false => Ok(None),
            };
        }
        let shown = out.display().to_string();
        let resolved = Destination::resolve(out).map_err(|e| {
            failed(format!(
                "cannot write {shown}: {}",
                crate::io::without_path(&e)
            ))
        })?;
        if !matches!(resolved.what(), What::Nothing | What::File { links: 1 }) {
            let why = format!(
                "writes a regular file, and {shown} is {}",
                resolved.describe()
            );
            return refuse(ask, &why);
        }
        if resolved.needs_overwrite() && !ask.force {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{shown} already exists: use --force to overwrite it, or choose another -o"
                ),
            )
            .into());
        }
        let dest = std::path::absolute(resolved.real_path())
            .map_err(|e| failed(format!("cannot write {shown}: {e}")))?;
        let mut name = dest.file_name().unwrap_or_default().to_os_string();
        name.push(".zseal-partial");
        let key = dest.to_string_lossy().into_owned();
        let mut d = Download {
            url: url.to_string(),
            etag: etag.to_string(),
            object_len: input.size().unwrap_or(0),
            partial: dest.with_file_name(name),
            shown,
            dest,
            pending: load(&key)?,
            key,
            force: ask.force,
        };
        d.settle_pending(ask.resume)?;
        Ok(Some(d))
    }

    /// A pending download: refused without --resume (unless --force starts over), refused when
    /// the object is not the one it was of.
    fn settle_pending(&mut self, resume: bool) -> Result<()> {
        let Some(r) = &self.pending else {
            return Ok(());
        };
        let (shown, partial) = (&self.shown, self.partial.display());
        if busy(&self.partial) {
            return Err(refused(format!(
                "another zseal is downloading into {shown} now (it writes {partial}): wait for it \
                 to end, or stop it first"
            )));
        }
        match (resume, self.force) {
            // Nothing was kept: starting over loses nothing.
            (false, _) if r.done == 0 => return self.discard(),
            (false, false) => {
                return Err(refused(format!(
                    "{shown}: a download of {} into it was cut short ({} bytes are kept in \
                 {partial}): add --resume to continue it, or --force to start over",
                    r.url, r.done
                )))
            }
            (false, true) => return self.discard(),
            (true, _) => {}
        }
        // The partial file is always the one -o names: a journal that names another (edited,
        // or damaged) is never followed, which would cut and fill a file it names.
        if r.partial != self.partial || r.destination != self.dest {
            return Err(refused(format!(
                "the journal of the download into {} names {} as its partial file, not {}: it \
                 was edited or is damaged, so it is not followed; run without --resume, with \
                 --force, to start over (that removes only {} and the journal)",
                self.shown,
                r.partial.display(),
                self.partial.display(),
                self.partial.display()
            )));
        }
        if r.url != self.url {
            return Err(refused(format!(
                "{shown}: the pending download into it is of {}, not {}: run without --resume, \
                 with --force, to start over",
                r.url, self.url
            )));
        }
        if r.etag != self.etag || r.object_len != self.object_len {
            return Err(refused(format!(
                "{} changed since the download into {shown} was cut (ETag {} and {} bytes then, \
                 {} and {} bytes now): it cannot be resumed; run without --resume, with --force, \
                 to download it again from the start",
                self.url, r.etag, r.object_len, self.etag, self.object_len
            )));
        }
        Ok(())
    }

    /// Ends the pending download: its partial file and its journal are removed.
    fn discard(&mut self) -> Result<()> {
        if self.pending.take().is_some() {
            remove_if_there(&self.partial)?;
        }
        journal::remove(Kind::Download, &self.key)
    }

    /// Opens the partial file for the unlocked `reader`: the pending one cut to what its
    /// journal vouches for (a whole chunk), or a new one; the journal is written before the
    /// first byte is.
    pub fn start(self, reader: &mut crate::Reader<Source>) -> Result<Partial> {
        // A resumed run reads by the index; a first run straight through, without the trailer.
        let plaintext_len = match self.pending {
            Some(_) => Some(reader.plaintext_len()?),
            None => None,
        };
        let format = reader.format().name().to_string();
        let unit = reader.resume_unit().max(1);
        let record = Record {
            job: JOB.into(),
            version: 1,
            url: self.url.clone(),
            etag: self.etag.clone(),
            object_len: self.object_len,
            format,
            plaintext_len,
            destination: self.dest.clone(),
            partial: self.partial.clone(),
            done: 0,
        };
        let (file, lock, from) = match &self.pending {
            Some(r) => self.reopen(r, &record, unit)?,
            None => {
                let f = self.create()?;
                let lock = lock(&f, &self.partial)?;
                (f, lock, 0)
            }
        };
        let record = Record {
            done: from,
            ..record
        };
        store(&self.key, &record)?;
        Ok(Partial {
            _lock: lock,
            file,
            from,
            record,
            key: self.key,
            shown: self.shown,
            force: self.force,
            written: Arc::default(),
        })
    }

    /// A new partial file (0600), never over one no journal names unless --force.
    fn create(&self) -> Result<File> {
        let p = &self.partial;
        match create_new(p) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.force => {
                remove_if_there(p)?;
                Ok(create_new(p).map_err(|e| named(&e, "create", &p.display().to_string()))?)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(refused(format!(
                "{} exists and no pending download names it: remove it, or use --force to \
                 replace it",
                p.display()
            ))),
            r => Ok(r.map_err(|e| named(&e, "create", &p.display().to_string()))?),
        }
    }

    /// The pending partial file, cut to the whole chunks its journal vouches for; a shorter
    /// one is refused (something other than zseal changed it).
    fn reopen(&self, r: &Record, now: &Record, unit: u64) -> Result<(File, Lock, u64)> {
        let len = now.plaintext_len.unwrap_or(0);
        let known = r.plaintext_len.is_none_or(|l| l == len);
        if r.format != now.format || !known || r.done > len {
            return Err(refused(format!(
                "{}: the pending download into {} does not match the object's contents: run \
                 without --resume, with --force, to start over",
                self.url, self.shown
            )));
        }
        let p = &self.partial;
        let name = p.display().to_string();
        let file = match open_partial(p) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && r.done == 0 => self.create()?,
            Err(e) => return Err(named(&e, "open", &name).into()),
        };
        // Locked before it is cut: another run that got here first keeps its file.
        let lock = lock(&file, p)?;
        let len = file.metadata().map_err(|e| named(&e, "read", &name))?.len();
        if len < r.done {
            return Err(refused(format!(
                "{name} holds {len} bytes, but its journal vouches for {} already written and \
                 synced: something other than zseal changed it, so it is not resumed; run \
                 without --resume, with --force, to start over",
                r.done
            )));
        }
        let from = r.done - r.done % unit;
        file.set_len(from).map_err(|e| named(&e, "write", &name))?;
        Ok((file, lock, from))
    }
}

/// `--resume` refused for `why`; without `--resume`, not a resumable download.
fn refuse(ask: &Ask, why: &str) -> Result<Option<Download>> {
    match ask.resume {
        true => Err(refused(format!("--resume {why}"))),
        false => Ok(None),
    }
}

fn load(key: &str) -> Result<Option<Record>> {
    let Some(bytes) = journal::load(Kind::Download, key)? else {
        return Ok(None);
    };
    let path = journal::path_for(Kind::Download, key)?;
    match serde_json::from_slice::<Record>(&bytes) {
        Ok(r) if r.job == JOB && r.version == 1 => Ok(Some(r)),
        _ => Err(refused(format!(
            "{} is not a download journal this zseal reads: remove it to start over",
            path.display()
        ))),
    }
}

/// A download left pending, as `zseal resume` lists it.
pub struct PendingDownload {
    /// The object.
    pub url: String,
    /// Where it goes (the partial file is beside it).
    pub destination: PathBuf,
    /// Plaintext bytes kept in the partial file.
    pub done: u64,
    /// The object's length.
    pub object_len: u64,
    /// When the journal was last written (Unix seconds).
    pub updated: u64,
}

/// Every pending download of this user, in journal order; a journal this zseal cannot read is
/// shown by its path.
pub fn pending_downloads() -> Result<Vec<PendingDownload>> {
    let mut found = Vec::new();
    for (path, bytes) in journal::list(Kind::Download)? {
        let updated = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        found.push(match serde_json::from_slice::<Record>(&bytes) {
            Ok(r) if r.job == JOB => PendingDownload {
                url: r.url,
                destination: r.destination,
                done: r.done,
                object_len: r.object_len,
                updated,
            },
            _ => PendingDownload {
                url: format!("(a journal this zseal cannot read: {})", path.display()),
                destination: PathBuf::new(),
                done: 0,
                object_len: 0,
                updated,
            },
        });
    }
    Ok(found)
}

fn store(key: &str, record: &Record) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| failed(e.to_string()))?;
    journal::store(Kind::Download, key, &bytes)?;
    Ok(())
}

/// An exclusive lock on a partial file (`flock`), held while a run writes it.
#[cfg(unix)]
type Lock = nix::fcntl::Flock<File>;
#[cfg(not(unix))]
type Lock = ();

/// Takes the lock on the partial file `f` (at `p`), or says who holds it.
#[cfg(unix)]
fn lock(f: &File, p: &Path) -> Result<Lock> {
    let name = p.display();
    let dup = f
        .try_clone()
        .map_err(|e| failed(format!("cannot lock {name}: {e}")))?;
    nix::fcntl::Flock::lock(dup, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| match e {
        nix::errno::Errno::EWOULDBLOCK => io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!("another zseal is writing {name} now: wait for it to end, or stop it first"),
        )
        .into(),
        e => failed(format!("cannot lock {name}: {e}")),
    })
}

#[cfg(not(unix))]
fn lock(_: &File, _: &Path) -> Result<Lock> {
    Ok(())
}

/// True when another process holds the lock on the partial file at `p` (it is downloading).
#[cfg(unix)]
fn busy(p: &Path) -> bool {
    let Ok(f) = open_partial(p) else {
        return false;
    };
    matches!(
        nix::fcntl::Flock::lock(f, FlockArg::LockExclusiveNonblock),
        Err((_, nix::errno::Errno::EWOULDBLOCK))
    )
}

#[cfg(not(unix))]
fn busy(_: &Path) -> bool {
    false
}

/// A new file at `p`, 0600, that was not there.
fn create_new(p: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(p)
}

/// The pending partial file, never through a link, and only a regular file.
fn open_partial(p: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits());
    }
    let f = o.open(p)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    Ok(f)
}

fn remove_if_there(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(named(&e, "remove", &p.display().to_string()).into())
        }
        _ => Ok(()),
    }
}

/// Renames `from` onto `to`; without `replace`, never over a file that is there (a hard link
/// then the removal of the old name: the link fails when `to` exists).
fn place(from: &Path, to: &Path, replace: bool) -> io::Result<()> {
    if replace {
        return std::fs::rename(from, to);
    }
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // A file system without hard links: the rename, after a last look.
        Err(_) if !to.exists() => std::fs::rename(from, to),
        Err(e) => Err(e),
    }
}
