//! Where resumable jobs keep their journals (issue 47 §2): one file per pending job in the user's
//! state directory, `$XDG_STATE_HOME/zseal` (else `~/.local/state/zseal`), as the XDG base
//! directory specification places state that outlives a run but is not worth a backup.
//!
//! A journal may hold a file key, so the directory is created 0700 and refused when another user
//! owns it or others may write to it; each journal is 0600 and replaced whole (written to a
//! temporary file in the same directory, synced, renamed), so a kill at any moment leaves the
//! previous journal or the new one, never half of one.
//!
//! A journal is named by its kind and the BLAKE3 of the job's key (the destination's URL or
//! path), so one destination has at most one pending job of each kind. What a journal holds is the
//! job's business (JSON by convention); this module only stores, lists and removes bytes.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The kinds of job that keep a journal. The kind is the journal's file-name prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A sealed upload into an object (`encrypt … -o s3://…`, `rekey --rotate`).
    Upload,
    /// A download into a file (`decrypt s3://… -o FILE`).
    Download,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Upload => "upload-",
            Kind::Download => "download-",
        }
    }
}

/// The journals' directory, created (0700) if missing; refused when it is not the user's own
/// private directory.
pub fn state_dir() -> Result<PathBuf> {
    let dir = base_dir()?.join("zseal");
    create_private_dir(&dir)?;
    Ok(dir)
}

fn base_dir() -> Result<PathBuf> {
    // The XDG rules: an empty or relative $XDG_STATE_HOME is ignored.
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from) {
        if state.is_absolute() {
            return Ok(state);
        }
    }
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(".local").join("state")),
        _ => Err(Error::InvalidOption(
            "cannot place the resume journal: neither XDG_STATE_HOME nor HOME names an absolute \
             directory; set XDG_STATE_HOME"
                .into(),
        )),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let made = fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    made.map_err(|e| Error::from(crate::io::named(&e, "create", &dir.display().to_string())))?;
    let meta = fs::symlink_metadata(dir)
        .map_err(|e| Error::from(crate::io::named(&e, "read", &dir.display().to_string())))?;
    let mine = meta.uid() == nix::unistd::geteuid().as_raw();
    if !meta.is_dir() || !mine || meta.mode() & 0o022 != 0 {
        return Err(Error::InvalidOption(format!(
            "{} is not a private directory of this user (it must be a directory owned by you that \
             others cannot write to): fix its owner or mode, or set XDG_STATE_HOME elsewhere",
            dir.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir)
        .map_err(|e| Error::from(crate::io::named(&e, "create", &dir.display().to_string())))
}

/// The path of the journal of `kind` for the job keyed by `key` (a URL or a path).
pub fn path_for(kind: Kind, key: &str) -> Result<PathBuf> {
    Ok(state_dir()?.join(file_name(kind, key)))
}

fn file_name(kind: Kind, key: &str) -> String {
    let hash = blake3::hash(key.as_bytes()).to_hex();
    format!("{}{}.json", kind.prefix(), &hash[..32])
}

/// The path of the append-only log kept beside the journal of `kind` for `key` ([`append`]).
pub fn log_path_for(kind: Kind, key: &str) -> Result<PathBuf> {
    let mut path = path_for(kind, key)?;
    path.set_extension("log");
    Ok(path)
}

/// Appends `line` (a newline is added) to the log beside the journal of `kind` for `key`,
/// creating it (0600), and makes it durable before returning: a job writes here what it is
/// about to do, before it does it (a write-ahead log), so that the record survives a kill at
/// any moment after this returns. A kill during the append leaves at most a last line without
/// its newline, which [`load_log`] leaves out (what it announced was not done).
pub fn append(kind: Kind, key: &str, line: &str) -> Result<()> {
    let path = log_path_for(kind, key)?;
    let named =
        |e: io::Error| Error::from(crate::io::named(&e, "write", &path.display().to_string()));
    let mut opts = fs::OpenOptions::new();
    opts.create(true).append(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let existed = path.exists();
    let mut f = opts.open(&path).map_err(named)?;
    // A line torn by a kill during an earlier append is cut off first, or this one would be
    // joined to it.
    let len = f.metadata().map_err(named)?.len();
    if len > 0 && last_byte(&f, len).map_err(named)? != b'\n' {
        let kept = fs::read(&path).map_err(named)?;
        let end = kept.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        f.set_len(end as u64).map_err(named)?;
    }
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    f.write_all(&bytes).map_err(named)?;
    f.sync_data().map_err(named)?;
    if !existed {
        sync_dir(path.parent().unwrap_or(Path::new(".")));
    }
    Ok(())
}

/// A job's hold on its journal: while it lives, no other process can take the same job's
/// ([`lock`]). Released when dropped, or when the process ends however it ends.
#[cfg(unix)]
pub struct JobLock(#[allow(dead_code)] nix::fcntl::Flock<fs::File>);

/// A job's hold on its journal (no locking on this system).
#[cfg(not(unix))]
pub struct JobLock;

/// Takes the job of `kind` for `key`: an exclusive lock (`flock`) on a file beside its journal
/// (`….lock`, 0600, kept empty), refused at once when another process holds it, naming the job,
/// so that two runs of one job (a resume started while the first run still sends) never
/// interleave their parts or journals.
#[cfg(unix)]
pub fn lock(kind: Kind, key: &str) -> Result<JobLock> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut path = path_for(kind, key)?;
    path.set_extension("lock");
    let named =
        |e: io::Error| Error::from(crate::io::named(&e, "open", &path.display().to_string()));
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(named)?;
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => Ok(JobLock(l)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(Error::InvalidOption(format!(
            "another zseal is running the same job on {key} now: wait for it to end (or stop \
             it), then run the command again"
        ))),
        Err((_, e)) => Err(named(io::Error::from(e))),
    }
}

/// Takes the job of `kind` for `key` (no locking on this system).
#[cfg(not(unix))]
pub fn lock(_: Kind, _: &str) -> Result<JobLock> {
    Ok(JobLock)
}

/// The byte at `len - 1` of `f`.
fn last_byte(f: &fs::File, len: u64) -> io::Result<u8> {
    let mut b = [0u8; 1];
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(f, &mut b, len - 1)?;
    #[cfg(windows)]
    std::os::windows::fs::FileExt::seek_read(f, &mut b, len - 1)?;
    Ok(b[0])
}

/// The complete lines of the log beside the journal of `kind` for `key` (none when there is no
/// log); a last line without its newline (a kill during [`append`]) is left out.
pub fn load_log(kind: Kind, key: &str) -> Result<Option<Vec<String>>> {
    let path = log_path_for(kind, key)?;
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::from(crate::io::named(
                &e,
                "read",
                &path.display().to_string(),
            )))
        }
    };
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..end],
        None => &[][..],
    };
    let text = String::from_utf8_lossy(complete);
    Ok(Some(
        text.split('\n')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    ))
}

/// Writes the journal of `kind` for `key` whole, replacing the previous one atomically (0600).
pub fn store(kind: Kind, key: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = path_for(kind, key)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let named =
        |e: io::Error| Error::from(crate::io::named(&e, "write", &path.display().to_string()));
    // tempfile creates its files 0600 on Unix.
    let mut tmp = tempfile::Builder::new()
        .prefix(".journal-")
        .tempfile_in(dir)
        .map_err(named)?;
    tmp.write_all(bytes).map_err(named)?;
    tmp.as_file().sync_all().map_err(named)?;
    tmp.persist(&path).map_err(|e| named(e.error))?;
    sync_dir(dir);
    Ok(path)
}

/// The journal of `kind` for `key`, or `None` when there is none.
pub fn load(kind: Kind, key: &str) -> Result<Option<Vec<u8>>> {
    let path = path_for(kind, key)?;
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::from(crate::io::named(
            &e,
            "read",
            &path.display().to_string(),
        ))),
    }
}

/// Removes the journal of `kind` for `key`, and the log beside it; one that is already gone is
/// not an error.
pub fn remove(kind: Kind, key: &str) -> Result<()> {
    // The journal first: a kill between the two leaves a log without a journal (nothing to
    // resume), never a journal without its log (which a resume would take for nothing sent).
    let path = path_for(kind, key)?;
    let removed = match fs::remove_file(&path) {
        Ok(()) => {
            sync_dir(path.parent().unwrap_or(Path::new(".")));
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::from(crate::io::named(
            &e,
            "remove",
            &path.display().to_string(),
        ))),
    };
    if removed.is_ok() {
        if let Ok(log) = log_path_for(kind, key) {
            let _ = fs::remove_file(log);
        }
    }
    removed
}

/// Every journal of `kind`, as (path, bytes), in file-name order. A journal that vanishes while
/// it is listed (its job ended) is left out.
pub fn list(kind: Kind) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let dir = state_dir()?;
    let entries = fs::read_dir(&dir)
        .map_err(|e| Error::from(crate::io::named(&e, "read", &dir.display().to_string())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| is_journal(p, kind))
        .collect();
    paths.sort();
    let mut found = Vec::with_capacity(paths.len());
    for path in paths {
        match fs::read(&path) {
            Ok(bytes) => found.push((path, bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::from(crate::io::named(
                    &e,
                    "read",
                    &path.display().to_string(),
                )))
            }
        }
    }
    Ok(found)
}

fn is_journal(path: &Path, kind: Kind) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with(kind.prefix()) && name.ends_with(".json")
}

/// Makes a rename or removal in `dir` durable; best effort (not every file system syncs
/// directories).
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The environment is process-wide: these tests run under one lock.
    static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn with_state<T>(f: impl FnOnce(&Path) -> T) -> T {
        let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().expect("tempdir");
        let old = std::env::var_os("XDG_STATE_HOME");
        std::env::set_var("XDG_STATE_HOME", dir.path());
        let out = f(dir.path());
        match old {
            Some(v) => std::env::set_var("XDG_STATE_HOME", v),
            None => std::env::remove_var("XDG_STATE_HOME"),
        }
        out
    }

    #[test]
    fn a_journal_is_stored_private_listed_by_kind_and_removed() {
        with_state(|base| {
            let path = store(Kind::Upload, "s3://b/k", b"{\"a\":1}").expect("store");
            assert_eq!(path.parent(), Some(base.join("zseal").as_path()));
            store(Kind::Upload, "s3://b/k", b"{\"a\":2}").expect("replace");
            store(Kind::Download, "/tmp/out", b"{}").expect("store");
            assert_eq!(
                load(Kind::Upload, "s3://b/k").expect("load"),
                Some(b"{\"a\":2}".to_vec())
            );
            assert_eq!(load(Kind::Upload, "s3://b/other").expect("load"), None);
            let uploads = list(Kind::Upload).expect("list");
            assert_eq!(uploads.len(), 1);
            assert_eq!(uploads[0].1, b"{\"a\":2}");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
                assert_eq!(mode(&path), 0o600);
                assert_eq!(mode(&base.join("zseal")), 0o700);
            }
            remove(Kind::Upload, "s3://b/k").expect("remove");
            remove(Kind::Upload, "s3://b/k").expect("removing twice is fine");
            assert!(list(Kind::Upload).expect("list").is_empty());
            assert_eq!(list(Kind::Download).expect("list").len(), 1);
        });
    }

    #[test]
    fn a_log_keeps_complete_lines_and_goes_with_its_journal() {
        with_state(|base| {
            assert_eq!(load_log(Kind::Upload, "s3://b/k").expect("load"), None);
            append(Kind::Upload, "s3://b/k", "one").expect("append");
            append(Kind::Upload, "s3://b/k", "two").expect("append");
            let log = log_path_for(Kind::Upload, "s3://b/k").expect("path");
            assert_eq!(log.parent(), Some(base.join("zseal").as_path()));
            // A kill during an append: the torn line is not read.
            let mut f = fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("open");
            f.write_all(b"thr").expect("write");
            drop(f);
            assert_eq!(
                load_log(Kind::Upload, "s3://b/k").expect("load"),
                Some(vec!["one".to_string(), "two".to_string()])
            );
            // The next append cuts the torn line off instead of joining it.
            append(Kind::Upload, "s3://b/k", "three").expect("append");
            assert_eq!(
                load_log(Kind::Upload, "s3://b/k").expect("load"),
                Some(vec![
                    "one".to_string(),
                    "two".to_string(),
                    "three".to_string()
                ])
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = fs::metadata(&log).expect("meta").permissions().mode() & 0o777;
                assert_eq!(mode, 0o600);
            }
            store(Kind::Upload, "s3://b/k", b"{}").expect("store");
            assert_eq!(
                list(Kind::Upload).expect("list").len(),
                1,
                "the log is no journal"
            );
            remove(Kind::Upload, "s3://b/k").expect("remove");
            assert!(!log.exists(), "removed with its journal");
        });
    }

    #[cfg(unix)]
    #[test]
    fn a_state_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        with_state(|base| {
            let dir = base.join("zseal");
            fs::create_dir(&dir).expect("mkdir");
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
            let err = store(Kind::Upload, "s3://b/k", b"{}").expect_err("refused");
            assert!(err.to_string().contains("not a private directory"), "{err}");
        });
    }
}
