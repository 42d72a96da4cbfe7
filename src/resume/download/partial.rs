//! The partial file of a download while a run writes it (docs/OBJECTS.md, "Resuming a
//! download"): the engine's output, the checkpoints that advance the journal once a second, and
//! the two ends of a run: renamed into place once checked, or kept with its journal.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::super::journal::{self, Kind};
use super::{failed, place, remove_if_there, store, Lock, Record};
use crate::error::{Error, Result};
use crate::io::named;

/// How often, at most, the journal is advanced while data arrives: what a kill can lose.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The partial file being written, and what its journal says.
pub struct Partial {
    /// Held while this run writes the partial file: a second run into the same destination is
    /// refused instead of removing or cutting it.
    pub(super) _lock: Lock,
    pub(super) file: File,
    pub(super) from: u64,
    pub(super) record: Record,
    pub(super) key: String,
    pub(super) shown: String,
    pub(super) force: bool,
    /// Bytes written after `from` (the checkpoints read it).
    pub(super) written: Arc<AtomicU64>,
}

impl Partial {
    /// Where the fetched plaintext starts.
    pub fn from(&self) -> u64 {
        self.from
    }

    /// The kept part, to be hashed again (its first `from` bytes).
    pub fn kept(&self) -> Result<impl Read> {
        let name = self.record.partial.display().to_string();
        let f = File::open(&self.record.partial).map_err(|e| named(&e, "open", &name))?;
        Ok(io::BufReader::with_capacity(1 << 20, f).take(self.from))
    }

    /// Runs `copy` into the partial file (appended after the kept part) while a checkpoint
    /// advances the journal once a second; then completes (`sync`: fsync before the rename) or
    /// keeps what it has and says how to go on ([`Failed::kept`]).
    pub fn run<T>(
        mut self,
        sync: bool,
        copy: impl FnOnce(&mut Appender) -> Result<T>,
    ) -> std::result::Result<T, Failed> {
        let name = self.record.partial.display().to_string();
        let setup = |p: &mut Partial| -> Result<(Ticker, Appender)> {
            p.file
                .seek(SeekFrom::Start(p.from))
                .map_err(|e| named(&e, "write", &name))?;
            let ticker = Ticker::start(p)?;
            let out = Appender {
                file: p.file.try_clone().map_err(|e| named(&e, "write", &name))?,
                written: p.written.clone(),
            };
            Ok((ticker, out))
        };
        let (ticker, mut out) = setup(&mut self).map_err(Failed::from)?;
        let result = copy(&mut out);
        ticker.stop();
        match result {
            Ok(t) => self.complete(sync).map(|()| t).map_err(Failed::from),
            Err(e) => Err(self.keep(e)),
        }
    }

    /// The whole file checked: synced, given its mode, renamed into place, the journal removed.
    fn complete(self, sync: bool) -> Result<()> {
        let r = &self.record;
        let name = r.partial.display().to_string();
        let fail = |e: io::Error| {
            failed(format!(
                "cannot write {}: {}",
                self.shown,
                crate::io::without_path(&e)
            ))
        };
        if sync {
            self.file
                .sync_all()
                .map_err(|e| named(&e, "write", &name))?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = crate::io::committed_mode(&r.destination, self.force, false);
            let perms = std::fs::Permissions::from_mode(mode);
            self.file.set_permissions(perms).map_err(fail)?;
        }
        place(&r.partial, &r.destination, self.force).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Error::from(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} appeared while it was being downloaded: use --force to replace it (with \
                     --resume: nothing is fetched again), or choose another -o",
                    self.shown
                ),
            )),
            _ => fail(e),
        })?;
        if sync {
            if let Some(dir) = r.destination.parent() {
                File::open(dir).and_then(|d| d.sync_all()).map_err(fail)?;
            }
        }
        journal::remove(Kind::Download, &self.key)
    }

    /// A failed run: the journal vouches for all that was written; a resumed run whose digest
    /// failed had a damaged kept part, which is removed. Returns the error to report, with what
    /// was kept.
    fn keep(mut self, e: Error) -> Failed {
        let r = &self.record;
        if matches!(e, Error::DigestMismatch) {
            // Nothing in the partial file can be vouched for: it goes.
            let _ = remove_if_there(&r.partial);
            let _ = journal::remove(Kind::Download, &self.key);
            if self.from == 0 {
                return Failed::from(e);
            }
            return Failed::from(Error::Damaged(format!(
                "the whole-file digest does not match: the {} bytes kept in {} since the earlier \
                 run were changed or damaged since (everything fetched now was authenticated). \
                 The partial file was removed: run the command again, without --resume, to \
                 download it all",
                self.from,
                r.partial.display()
            )));
        }
        let done = self.from + self.written.load(Ordering::Acquire);
        let kept = checkpoint(&self.file, &mut self.record, &self.key, done);
        let r = &self.record;
        Failed {
            error: e,
            kept: (kept.is_ok() && r.done > 0).then(|| {
                format!(
                    "{} bytes of the plaintext of {} are kept in {}: run the same command with \
                     --resume to fetch the rest",
                    r.done,
                    r.url,
                    r.partial.display()
                )
            }),
        }
    }
}

/// A download that failed: the error, and what is kept for a resume (a sentence to show the
/// user beside the error), if anything.
#[derive(Debug)]
pub struct Failed {
    /// What went wrong.
    pub error: Error,
    /// What is kept and how to go on, when anything is.
    pub kept: Option<String>,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Failed { error, kept: None }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kept {
            Some(k) => write!(f, "{}. {k}", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for Failed {}

/// The partial file as the engine's output: counts what it writes, for the checkpoints.
pub struct Appender {
    file: File,
    written: Arc<AtomicU64>,
}

impl Write for Appender {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written.fetch_add(n as u64, Ordering::Release);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Syncs the partial file, then records `done` in the journal: the journal never vouches for
/// bytes a power loss could take back.
fn checkpoint(file: &File, record: &mut Record, key: &str, done: u64) -> Result<()> {
    if done == record.done {
        return Ok(());
    }
    file.sync_data()?;
    record.done = done;
    store(key, record)
}

/// The thread that advances the journal once a second while the download runs (so a stalled
/// connection's bytes are recorded too, and a kill loses at most a second's work).
struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

impl Ticker {
    fn start(p: &Partial) -> Result<Ticker> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let file = p.file.try_clone()?;
        let (mut record, key, from) = (p.record.clone(), p.key.clone(), p.from);
        let (written, flag) = (p.written.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*flag;
            let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !*stopped {
                stopped = match wake.wait_timeout(stopped, CHECKPOINT_EVERY) {
                    Ok((g, _)) => g,
                    Err(e) => e.into_inner().0,
                };
                if !*stopped {
                    // A failed checkpoint leaves the last one: the next may succeed.
                    let done = from + written.load(Ordering::Acquire);
                    let _ = checkpoint(&file, &mut record, &key, done);
                }
            }
        });
        Ok(Ticker { stop, thread })
    }

    /// Stops the thread and waits for it (a checkpoint in progress completes first).
    fn stop(self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        let _ = self.thread.join();
    }
}
