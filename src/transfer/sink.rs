//! Where the engine writes: [`Sink`], opened the same way for every front end (see the
//! module above): the command's `-o` (with age's ASCII armor around it when asked), Python's
//! writers and whole-file functions, and Dask's tasks (a piece file, a range of a shared file
//! written in place, a task's parts of one upload).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use age::armor::{ArmoredWriter, Format as ArmorFormat};

use crate::io::{named, Destination, OutputFile};

/// Where the engine writes to, and its name for messages: the one sink every front end opens
/// (the command's `-o`, Python's writers and `encrypt_file`/`decrypt_file`). The front end
/// only chooses; the rules are here and in [`crate::io::output`].
pub struct Sink {
    kind: SinkKind,
    name: String,
    /// Counts the bytes that reach the destination (a progress display's).
    count: Option<Arc<AtomicU64>>,
    /// The SHA-512 of the bytes that reach the destination, in order ([`Sink::hashing`]).
    sha512: Option<Box<sha2::Sha512>>,
}

enum SinkKind {
    /// A path, by [`crate::io::output`]'s rules: a new or replaced regular file (renamed into
    /// place by [`Sink::commit`]), or a FIFO, a device or a descriptor written in place.
    File(OutputFile),
    /// Standard output.
    Stdout(io::Stdout),
    /// A stream of the caller's, written in order.
    Stream(Box<dyn Write + Send>),
    /// An object, uploaded in parts; it appears only on commit.
    #[cfg(feature = "remote")]
    Object(Box<crate::remote::RemoteWriter>),
    /// A region of an existing file, written in place from an offset: nothing created,
    /// nothing renamed (a Dask task's range of the plaintext, the coordinator's trailer).
    Region(File),
    /// One task's parts of an upload many tasks write (`remote::PartWriter`): what it uploaded
    /// is [`Sink::commit_parts`]'s, for the coordinator's completion.
    #[cfg(feature = "remote")]
    Parts(Box<crate::remote::PartWriter>),
    /// Age's ASCII armor (`age::armor`) around another sink, written by the calling thread;
    /// its last line and end marker are written by [`Sink::finish`].
    Armored(Box<ArmoredWriter<Sink>>, Beneath),
}

/// What the sink beneath armor is (the armor writer does not lend it out).
struct Beneath {
    streams: bool,
    object: bool,
    stdout: bool,
    temporary: Option<std::path::PathBuf>,
}

impl Sink {
    /// The path `path`, or the object its URL names (`s3://…`, `gs://…`, `az://…`, `https://…`;
    /// `size_hint`: the bytes to come, for sizing an upload's parts). What is there is
    /// replaced only when `overwrite`: else the error's kind is `AlreadyExists`, which front
    /// ends turn into their own advice; other errors carry the reason without the path.
    pub fn create(path: &Path, overwrite: bool, size_hint: Option<u64>) -> io::Result<Sink> {
        match path.to_str().filter(|s| crate::io::is_url(s)) {
            Some(url) => Sink::create_object(url, overwrite, size_hint),
            None => Sink::create_file(&Destination::resolve(path)?, overwrite, false),
        }
    }

    /// The resolved path `dest` ([`OutputFile::create`]: `private` makes a new or replaced
    /// file 0600), for a front end that looked at what it names first.
    pub fn create_file(dest: &Destination, overwrite: bool, private: bool) -> io::Result<Sink> {
        let file = OutputFile::create(dest, overwrite, private)?;
        let name = file.destination().display().to_string();
        Ok(Sink::of(SinkKind::File(file), name))
    }

    /// The object at `url`, refused before anything is uploaded when it exists and not
    /// `overwrite` (conditional completion refuses one that appears meanwhile).
    #[cfg(feature = "remote")]
    pub fn create_object(url: &str, overwrite: bool, size_hint: Option<u64>) -> io::Result<Sink> {
        let w = crate::remote::Remote::from_env(url)?.writer(overwrite, size_hint)?;
        Ok(Sink::object(w))
    }

    /// Without feature `remote`: the refusal, saying so.
    #[cfg(not(feature = "remote"))]
    pub fn create_object(url: &str, _: bool, _: Option<u64>) -> io::Result<Sink> {
        Err(io::Error::other(format!(
            "{url}: this zseal was built without object storage (cargo feature `remote`)"
        )))
    }

    /// An upload already started.
    #[cfg(feature = "remote")]
    pub fn object(w: crate::remote::RemoteWriter) -> Sink {
        let name = w.url().to_string();
        Sink::of(SinkKind::Object(Box::new(w)), name)
    }

    /// Standard output.
    pub fn stdout() -> Sink {
        Sink::of(SinkKind::Stdout(io::stdout()), "standard output".into())
    }

    /// A stream of the caller's (a Python file object), written in order.
    pub fn stream(w: impl Write + Send + 'static, name: impl Into<String>) -> Sink {
        Sink::of(SinkKind::Stream(Box::new(w)), name.into())
    }

    /// The existing file at `path`, written in place from `at` (`SeekFrom::End(0)`: appended
    /// to): nothing is created, truncated or renamed, and [`Sink::commit`] syncs its data. For
    /// writers that share one file, each its own region (Dask's tasks and coordinator).
    pub fn region(path: &Path, at: SeekFrom) -> io::Result<Sink> {
        let name = path.display().to_string();
        let open = || -> io::Result<File> {
            let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
            f.seek(at)?;
            Ok(f)
        };
        let f = open().map_err(|e| named(&e, "write", &name))?;
        Ok(Sink::of(SinkKind::Region(f), name))
    }

    /// A task's parts of an upload many tasks write; [`Sink::commit_parts`] ends them.
    #[cfg(feature = "remote")]
    pub fn parts(w: crate::remote::PartWriter, name: impl Into<String>) -> Sink {
        Sink::of(SinkKind::Parts(Box::new(w)), name.into())
    }

    /// This sink behind age's ASCII armor ("-----BEGIN AGE ENCRYPTED FILE-----", base64 in
    /// lines of 64 columns): a streaming transform, so nothing is written by offset
    /// ([`Sink::shared_handle`] is `None`) and [`Sink::finish`] writes its end. Bytes are
    /// counted as they reach the sink beneath, armored.
    pub fn armored(self) -> io::Result<Sink> {
        let name = self.name.clone();
        let beneath = Beneath {
            streams: self.streams(),
            object: self.is_object(),
            stdout: self.is_stdout(),
            temporary: self.temporary_path().map(Path::to_path_buf),
        };
        let w = ArmoredWriter::wrap_output(self, ArmorFormat::AsciiArmor)?;
        Ok(Sink::of(SinkKind::Armored(Box::new(w), beneath), name))
    }

    /// Writes what a transform holds back (the armor's last line and end marker) and returns
    /// the sink beneath it; any other sink as it is. [`Sink::commit`] does it too: a caller
    /// calls it first only to read the finished output before the commit (a signature over an
    /// armored age file).
    pub fn finish(self) -> io::Result<Sink> {
        match self.kind {
            SinkKind::Armored(w, _) => w.finish()?.finish(),
            kind => Ok(Sink {
                kind,
                name: self.name,
                count: self.count,
                sha512: self.sha512,
            }),
        }
    }

    fn of(kind: SinkKind, name: String) -> Sink {
        Sink {
            kind,
            name,
            count: None,
            sha512: None,
        }
    }

    /// Counts into `count` every byte that reaches the destination through this sink (an
    /// armored sink's armored bytes: count the sink beneath before [`Sink::armored`]).
    pub fn counting(mut self, count: Arc<AtomicU64>) -> Sink {
        self.count = Some(count);
        self
    }

    /// Takes the SHA-512 of every byte that reaches the destination through this sink, in
    /// order, for a signature over the file as stored (an age file's, FORMAT.md §12): nothing
    /// is then written by offset ([`Sink::shared_handle`] is `None`), so the file is not read
    /// back once written. Behind armor, hash the sink beneath before [`Sink::armored`].
    pub fn hashing(mut self) -> Sink {
        use sha2::Digest as _;
        self.sha512 = Some(Box::new(sha2::Sha512::new()));
        self
    }

    /// The SHA-512 of what was written so far, when [`Sink::hashing`] asked for it.
    pub fn sha512(&self) -> Option<[u8; 64]> {
        use sha2::Digest as _;
        self.sha512
            .as_ref()
            .map(|h| (**h).clone().finalize().into())
    }

    /// The name messages use: the path as given, the URL, `standard output`, the stream's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when what is written reaches a reader at once (standard output, a stream, a FIFO,
    /// a device other than /dev/null): nothing can be held back until a check at the end.
    pub fn streams(&self) -> bool {
        match &self.kind {
            SinkKind::Stdout(_) | SinkKind::Stream(_) => true,
            SinkKind::File(f) => {
                f.temporary_path().is_none() && f.destination() != Path::new("/dev/null")
            }
            SinkKind::Armored(_, b) => b.streams,
            SinkKind::Region(_) => false,
            #[cfg(feature = "remote")]
            SinkKind::Object(_) | SinkKind::Parts(_) => false,
        }
    }

    /// The file written, when the sink is one (the temporary file, or the FIFO, device or
    /// descriptor written in place; not behind armor, where the bytes written are not the bytes
    /// stored: [`Sink::finish`] gives the sink beneath).
    pub fn as_file(&self) -> Option<&File> {
        match &self.kind {
            SinkKind::File(f) => Some(f.as_file()),
            _ => None,
        }
    }

    /// True for standard output (armored or not).
    pub fn is_stdout(&self) -> bool {
        match &self.kind {
            SinkKind::Stdout(_) => true,
            SinkKind::Armored(_, b) => b.stdout,
            _ => false,
        }
    }

    /// The temporary file's path while a new or replaced file is written (for a registry that
    /// removes it on a signal); `None` otherwise.
    pub fn temporary_path(&self) -> Option<&Path> {
        match &self.kind {
            SinkKind::File(f) => f.temporary_path(),
            SinkKind::Armored(_, b) => b.temporary.as_deref(),
            _ => None,
        }
    }

    /// Another handle to the file written, sharing its position, for the workers' writes by
    /// offset ([`super::seal`]: used only when it is a regular file): the file, or what standard
    /// output is. `None` for a stream, an object, behind armor (the bytes written are not the
    /// bytes stored), or while the bytes are hashed in order ([`Sink::hashing`]).
    pub fn shared_handle(&self) -> Option<File> {
        if self.sha512.is_some() {
            return None;
        }
        match &self.kind {
            #[cfg(unix)]
            SinkKind::Stdout(_) => {
                use std::os::fd::AsFd;
                let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
                Some(File::from(fd))
            }
            SinkKind::File(f) => f.as_file().try_clone().ok(),
            _ => None,
        }
    }

    /// Completes the output: a new or replaced file is synced (when `sync`) and renamed into
    /// place, what is written in place flushed, an upload completed (its error's kind is
    /// `AlreadyExists` when the object appeared meanwhile and overwriting was not asked for:
    /// the upload is aborted). Errors give the reason, without the temporary file's name: the
    /// front end names the output ([`Sink::name`]) in its own words.
    /// A region of a file is synced (its data, when `sync`); an armored sink's end is
    /// written first ([`Sink::finish`]); a task's parts are ended by [`Sink::commit_parts`].
    pub fn commit(self, sync: bool) -> io::Result<()> {
        match self.kind {
            SinkKind::File(f) => f.commit(sync),
            SinkKind::Stdout(mut s) => s.flush(),
            SinkKind::Stream(mut w) => w.flush(),
            SinkKind::Region(mut f) => {
                f.flush()?;
                match sync {
                    true => f.sync_data(),
                    false => Ok(()),
                }
            }
            SinkKind::Armored(w, _) => w.finish()?.commit(sync),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => w.commit(),
            #[cfg(feature = "remote")]
            SinkKind::Parts(w) => w.finish().map(drop),
        }
    }

    /// Ends a task's parts ([`Sink::parts`]): what it uploaded, for the coordinator's
    /// completion. Any other sink is refused, saying so.
    #[cfg(feature = "remote")]
    pub fn commit_parts(self) -> io::Result<crate::remote::TaskParts> {
        match self.kind {
            SinkKind::Parts(w) => w.finish(),
            _ => Err(io::Error::other(format!(
                "{}: not a task's parts of an upload: commit it with Sink::commit",
                self.name
            ))),
        }
    }

    /// True for an object (armored or not).
    pub fn is_object(&self) -> bool {
        match &self.kind {
            #[cfg(feature = "remote")]
            SinkKind::Object(_) => true,
            SinkKind::Armored(_, b) => b.object,
            _ => false,
        }
    }
}

impl Sink {
    /// One write to the destination, its error naming the sink once.
    fn write_through(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match &mut self.kind {
            SinkKind::File(f) => f.write(buf),
            SinkKind::Stdout(s) => s.write(buf),
            SinkKind::Region(f) => f.write(buf),
            // A stream, an object and the sink beneath armor name their own errors.
            SinkKind::Stream(w) => return w.write(buf),
            SinkKind::Armored(w, _) => return w.write(buf),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => return w.write(buf),
            #[cfg(feature = "remote")]
            SinkKind::Parts(w) => return w.write(buf),
        };
        r.map_err(|e| named(&e, "write", &self.name))
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.write_through(buf)?;
        if let Some(c) = &self.count {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
        if let Some(h) = &mut self.sha512 {
            sha2::Digest::update(&mut **h, &buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match &mut self.kind {
            SinkKind::File(f) => f.flush(),
            SinkKind::Stdout(s) => s.flush(),
            SinkKind::Region(f) => f.flush(),
            SinkKind::Stream(w) => return w.flush(),
            SinkKind::Armored(w, _) => return w.flush(),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => return w.flush(),
            #[cfg(feature = "remote")]
            SinkKind::Parts(w) => return w.flush(),
        };
        r.map_err(|e| named(&e, "write", &self.name))
    }
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("name", &self.name).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path's sink: nothing replaced without `overwrite`; the old contents stay until the
    /// commit renames the new file into place; a sink dropped without one leaves no file.
    #[test]
    fn a_path_sink_replaces_only_when_asked_and_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        std::fs::write(&dest, b"old").unwrap();
        let e = Sink::create(&dest, false, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        let mut sink = Sink::create(&dest, true, None).unwrap();
        assert!(sink.temporary_path().is_some() && !sink.streams());
        assert!(
            sink.shared_handle().is_some(),
            "a regular file is written by offset"
        );
        sink.write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        sink.commit(false).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        let fresh = dir.path().join("fresh");
        let mut dropped = Sink::create(&fresh, false, None).unwrap();
        dropped.write_all(b"half").unwrap();
        drop(dropped);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only `out`: {left:?}");
    }

    /// A region of an existing file is written in place from its offset: nothing before or
    /// after it changes, nothing is created.
    #[test]
    fn a_region_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("shared");
        std::fs::write(&f, b"0123456789").unwrap();
        let mut sink = Sink::region(&f, SeekFrom::Start(3)).unwrap();
        sink.write_all(b"abc").unwrap();
        sink.commit(true).unwrap();
        let mut end = Sink::region(&f, SeekFrom::End(0)).unwrap();
        end.write_all(b"!").unwrap();
        end.commit(false).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"012abc6789!");
        let e = Sink::region(&dir.path().join("none"), SeekFrom::Start(0)).unwrap_err();
        assert!(e.to_string().contains("none"), "{e}");
    }

    /// A hashing sink takes the SHA-512 of exactly what reaches the file, in order, and lends no
    /// handle to write by offset (bytes written there would not be hashed); beneath armor, the
    /// hash is the armored file's as stored.
    #[test]
    fn a_hashing_sink_hashes_what_is_stored() {
        use sha2::Digest as _;
        let dir = tempfile::tempdir().unwrap();
        let (plain, armored_dest) = (dir.path().join("p"), dir.path().join("a"));
        let mut sink = Sink::create(&plain, false, None).unwrap().hashing();
        assert!(sink.shared_handle().is_none());
        assert_eq!(
            sink.sha512().unwrap(),
            <[u8; 64]>::from(sha2::Sha512::digest(b""))
        );
        sink.write_all(b"abc").unwrap();
        sink.write_all(&[9u8; 70_000]).unwrap();
        let digest = sink.sha512().unwrap();
        sink.commit(false).unwrap();
        let stored = std::fs::read(&plain).unwrap();
        assert_eq!(digest, <[u8; 64]>::from(sha2::Sha512::digest(&stored)));
        let sink = Sink::create(&armored_dest, false, None).unwrap();
        let mut armored = sink.hashing().armored().unwrap();
        armored.write_all(&[7u8; 1000]).unwrap();
        let beneath = armored.finish().unwrap();
        let digest = beneath.sha512().unwrap();
        beneath.commit(false).unwrap();
        let stored = std::fs::read(&armored_dest).unwrap();
        assert!(stored.ends_with(b"-----END AGE ENCRYPTED FILE-----\n"));
        assert_eq!(digest, <[u8; 64]>::from(sha2::Sha512::digest(&stored)));
    }

    /// Armor around a file: no handle to write by offset, the count is of the armored bytes
    /// stored, and the end marker is written by `finish` (or by the commit).
    #[test]
    fn an_armored_sink_counts_and_ends_what_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a.age");
        let count = Arc::new(AtomicU64::new(0));
        let sink = Sink::create(&dest, false, None).unwrap();
        let mut armored = sink.counting(count.clone()).armored().unwrap();
        assert!(armored.shared_handle().is_none() && armored.temporary_path().is_some());
        armored.write_all(&[7u8; 1000]).unwrap();
        let beneath = armored.finish().unwrap();
        assert!(beneath.shared_handle().is_some(), "the file beneath, again");
        beneath.commit(false).unwrap();
        let text = std::fs::read_to_string(&dest).unwrap();
        assert!(text.starts_with("-----BEGIN AGE ENCRYPTED FILE-----\n"));
        assert!(
            text.ends_with("-----END AGE ENCRYPTED FILE-----\n"),
            "{text}"
        );
        assert_eq!(count.load(Ordering::Relaxed), text.len() as u64);
        #[cfg(feature = "remote")]
        {
            let e = Sink::stream(Vec::new(), "s").commit_parts().unwrap_err();
            assert!(e.to_string().contains("not a task's parts"), "{e}");
        }
    }

    /// A device is written in place, never turned into a file: /dev/null takes no overwrite,
    /// has no temporary file, and keeps nothing back.
    #[cfg(unix)]
    #[test]
    fn a_device_is_written_in_place() {
        let mut sink = Sink::create(Path::new("/dev/null"), false, None).unwrap();
        assert!(sink.temporary_path().is_none());
        sink.write_all(b"gone").unwrap();
        sink.commit(true).unwrap();
        assert!(Path::new("/dev/null").exists());
        let stream = Sink::stream(Vec::new(), "a buffer");
        assert!(stream.streams() && stream.shared_handle().is_none());
        assert_eq!(stream.name(), "a buffer");
    }
}
