//! The transfer layer: source → engine → sink, for every front end. A front end opens a
//! [`Source`] (a file, standard input, a stream of its own, an object) and hands it, with its
//! sink, to [`seal`] or to a [`ReadPlan`]; what the engine can do faster for that kind of source
//! and sink is chosen here, once, instead of by each front end:
//!
//! - sealing a regular file: the workers read their chunks from it by offset; into a regular
//!   file, they also write their output by offset ([`crate::Writer::write_frames_to`]);
//! - opening a regular file: the workers read long frame bodies from it by offset
//!   ([`crate::Reader::read_bodies_from`]); a seekable source reads what random access reads
//!   first ([`crate::Reader::use_index`]: an age file zseal wrote decodes its frames on every
//!   core) and serves a range from the index; a stream serves a range by reading through.
//!
//! Where the engine writes is a [`Sink`], opened the same way (a path, standard output, a
//! stream of the caller's, an object): a path follows [`crate::io::output`]'s rules (nothing
//! replaced without `overwrite`, a FIFO or a device written in place and never turned into a
//! file, a new or replaced file written under a temporary name and renamed into place by
//! [`Sink::commit`], removed when the sink is dropped without it), and a regular file lends
//! the workers a handle to write by offset ([`Sink::shared_handle`]).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::io::{named, Destination, OutputFile};
use crate::{ByteRange, Reader, Writer};

/// A stream that can seek, as a trait object.
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// Where the engine reads from, and its name for messages.
pub struct Source {
    kind: Kind,
    name: String,
    /// Counts the bytes read through `Read` (a progress display's).
    count: Option<Arc<AtomicU64>>,
}

enum Kind {
    /// A regular file: read by the workers by offset where that is faster.
    File(File),
    /// A file that is not a regular one (a FIFO, a terminal, a device): read in order.
    Special(File),
    /// Standard input as a pipe or terminal.
    Stdin(io::Stdin),
    /// A stream of the caller's, read in order.
    Stream(Box<dyn Read + Send>),
    /// A stream of the caller's that can seek.
    Seekable(Box<dyn ReadSeek + Send>),
    /// An object, read by ranged GETs.
    #[cfg(feature = "remote")]
    Object(crate::remote::RemoteReader),
}

impl Source {
    /// The file at `path`, named by it in messages ("cannot open NAME: reason").
    pub fn open(path: &Path) -> io::Result<Source> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| named(&e, "open", &name))?;
        Ok(Source::file(f, name))
    }

    /// An open file: a regular one is read by offset where that is faster.
    pub fn file(f: File, name: impl Into<String>) -> Source {
        let regular = f.metadata().is_ok_and(|m| m.is_file());
        let kind = match regular {
            true => Kind::File(f),
            false => Kind::Special(f),
        };
        Source::of(kind, name.into())
    }

    /// Standard input: when it is redirected from a regular file and positioned at its start,
    /// that file (read by offset, seekable); otherwise a stream.
    pub fn stdin() -> Source {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            let dup = io::stdin().as_fd().try_clone_to_owned().map(File::from);
            if let Ok(f) = dup {
                let at_start = (&f).stream_position().is_ok_and(|p| p == 0);
                if at_start && f.metadata().is_ok_and(|m| m.is_file()) {
                    return Source::of(Kind::File(f), "standard input".into());
                }
            }
        }
        Source::of(Kind::Stdin(io::stdin()), "standard input".into())
    }

    /// A stream of the caller's, read in order (its errors pass through as they are).
    pub fn stream(r: impl Read + Send + 'static, name: impl Into<String>) -> Source {
        Source::of(Kind::Stream(Box::new(r)), name.into())
    }

    /// A stream of the caller's that can seek (its errors pass through as they are).
    pub fn seekable(r: impl Read + Seek + Send + 'static, name: impl Into<String>) -> Source {
        Source::of(Kind::Seekable(Box::new(r)), name.into())
    }

    /// An object, named by its URL.
    #[cfg(feature = "remote")]
    pub fn object(r: crate::remote::RemoteReader) -> Source {
        let name = r.url().to_string();
        Source::of(Kind::Object(r), name)
    }

    fn of(kind: Kind, name: String) -> Source {
        Source {
            kind,
            name,
            count: None,
        }
    }

    /// Counts into `count` every byte read from the source, by the calling thread or by the
    /// workers.
    pub fn counting(mut self, count: Arc<AtomicU64>) -> Source {
        self.count = Some(count);
        self
    }

    /// The name messages use.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The size of a regular file or an object; `None` for streams.
    pub fn size(&self) -> Option<u64> {
        match &self.kind {
            Kind::File(f) => f.metadata().ok().map(|m| m.len()),
            #[cfg(feature = "remote")]
            Kind::Object(o) => Some(o.len()),
            _ => None,
        }
    }

    /// The strong ETag every read of an object is conditional on (the version it reads); `None`
    /// for other sources and for a store that gives none.
    pub fn etag(&self) -> Option<&str> {
        match &self.kind {
            #[cfg(feature = "remote")]
            Kind::Object(o) => o.etag(),
            _ => None,
        }
    }

    /// Tells an object which bytes will be read in order, `start..end`, so that it fetches them
    /// in parts with read-ahead and nothing past them; nothing for other sources.
    pub fn plan_span(&mut self, start: u64, end: u64) {
        #[cfg(feature = "remote")]
        if let Kind::Object(o) = &mut self.kind {
            o.plan_span(start, end);
        }
        let _ = (start, end);
    }

    /// True when the source can seek: a range is then read from the index.
    pub fn is_seekable(&self) -> bool {
        match &self.kind {
            Kind::File(_) | Kind::Seekable(_) => true,
            #[cfg(feature = "remote")]
            Kind::Object(_) => true,
            Kind::Special(_) | Kind::Stdin(_) | Kind::Stream(_) => false,
        }
    }

    /// True for standard input that is a pipe or a terminal (a passphrase cannot be asked for
    /// on it while the data comes from it).
    pub fn is_stdin_stream(&self) -> bool {
        matches!(self.kind, Kind::Stdin(_))
    }

    /// A second handle to the regular file read, for the workers' reads by offset.
    fn regular_file(&self) -> Option<File> {
        match &self.kind {
            Kind::File(f) => f.try_clone().ok(),
            _ => None,
        }
    }

    /// How the engine will read this source once a reader holds it (see [`ReadPlan`]).
    pub fn read_plan(&self) -> ReadPlan {
        ReadPlan {
            seekable: self.is_seekable(),
            bodies: self.regular_file(),
            count: self.count.clone(),
        }
    }
}

/// `e` again, its message naming `verb` and `name` once.
impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("seekable", &self.is_seekable())
            .finish_non_exhaustive()
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.kind {
            Kind::File(f) | Kind::Special(f) => {
                f.read(buf).map_err(|e| named(&e, "read", &self.name))
            }
            Kind::Stdin(s) => s.read(buf).map_err(|e| named(&e, "read", &self.name)),
            Kind::Stream(r) => r.read(buf),
            Kind::Seekable(r) => r.read(buf),
            #[cfg(feature = "remote")]
            Kind::Object(o) => o.read(buf),
        }?;
        if let Some(c) = &self.count {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

impl Seek for Source {
    /// Fails for a stream that cannot seek: callers ask [`Source::is_seekable`] first.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match &mut self.kind {
            Kind::File(f) => f.seek(to).map_err(|e| named(&e, "seek in", &self.name)),
            Kind::Seekable(r) => r.seek(to),
            #[cfg(feature = "remote")]
            Kind::Object(o) => o.seek(to),
            Kind::Special(_) | Kind::Stdin(_) | Kind::Stream(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("cannot seek in {}: it is a stream", self.name),
            )),
        }
    }
}

/// Counters a progress display reads while a transfer runs on other threads.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Plaintext bytes sealed (when the workers read a regular file) or read.
    pub input: Arc<AtomicU64>,
    /// Bytes written by the workers into a regular file by offset (bytes written through the
    /// sink are the sink's to count).
    pub output: Arc<AtomicU64>,
}

/// Seals all of `source` into `enc` with every fast path the pair allows: the workers read a
/// regular file themselves, and, when `out_file` is another handle to the regular file `enc`
/// writes (sharing its position), write their output into it by offset. Without `progress`
/// nothing is counted. Returns the plaintext bytes read; `finish` is the caller's.
pub fn seal<W: Write>(
    enc: &mut Writer<W>,
    source: &mut Source,
    out_file: Option<File>,
    progress: Option<&Progress>,
) -> Result<u64> {
    let Some(f) = source.regular_file() else {
        if let Some(p) = progress {
            // What arrives is counted, so that a slow producer still shows movement.
            let mut counted = crate::io::Counted::new(&mut *source, p.input.clone());
            return enc.copy_from(&mut counted);
        }
        return enc.copy_from(source);
    };
    if let Some(p) = progress {
        enc.progress(p.input.clone());
    }
    if let Some(out) = out_file {
        enc.write_frames_to(out, progress.map(|p| p.output.clone()))?;
    }
    enc.copy_from_file(&f)
}

/// How a reader over a [`Source`] reads it, taken before the source is moved into the reader:
/// whether it can seek, and the regular file its workers may read by offset.
pub struct ReadPlan {
    seekable: bool,
    bodies: Option<File>,
    count: Option<Arc<AtomicU64>>,
}

impl ReadPlan {
    /// True when the source can seek.
    pub fn is_seekable(&self) -> bool {
        self.seekable
    }

    /// True when the workers read long frame bodies from the source themselves (a regular file).
    pub fn workers_read(&self) -> bool {
        self.bodies.is_some()
    }

    /// Writes the plaintext, all of it or `range`, from `reader` (over the source this plan was
    /// taken from) to `w`, verifying what it writes: a range of a seekable source reads only the
    /// frames that cover it; of a stream, the stream up to it. A whole read of a seekable source
    /// reads its index first (an age file zseal wrote then decodes on every core) and a regular
    /// file's long frame bodies are read by the workers. Returns the bytes written.
    pub fn copy(
        self,
        reader: &mut Reader<Source>,
        range: Option<ByteRange>,
        w: impl Write,
    ) -> Result<u64> {
        // A signer check reads the whole file in order (FORMAT.md §12.4): its range is the
        // streamed one, which reads every frame and writes the range.
        let signer = reader.requires_signer();
        match range {
            Some(r) if self.seekable && !signer => reader.copy_range_to(r.start, r.end, w),
            Some(r) => {
                self.read_bodies(reader)?;
                reader.copy_range_streaming(r.start, r.end, w)
            }
            None => {
                if self.seekable {
                    reader.use_index()?;
                }
                self.read_bodies(reader)?;
                reader.copy_to(w)
            }
        }
    }

    /// Lets the workers read long frame bodies of a regular file by offset.
    fn read_bodies(self, reader: &mut Reader<Source>) -> Result<()> {
        match self.bodies {
            Some(f) => reader.read_bodies_from(f, self.count),
            None => Ok(()),
        }
    }
}

/// Where the engine writes to, and its name for messages: the one sink every front end opens
/// (the command's `-o`, Python's writers and `encrypt_file`/`decrypt_file`). The front end
/// only chooses; the rules are here and in [`crate::io::output`].
pub struct Sink {
    kind: SinkKind,
    name: String,
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

    fn of(kind: SinkKind, name: String) -> Sink {
        Sink { kind, name }
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
            #[cfg(feature = "remote")]
            SinkKind::Object(_) => false,
        }
    }

    /// The file written, when the sink is one (the temporary file, or the FIFO, device or
    /// descriptor written in place).
    pub fn as_file(&self) -> Option<&File> {
        match &self.kind {
            SinkKind::File(f) => Some(f.as_file()),
            _ => None,
        }
    }

    /// True for standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.kind, SinkKind::Stdout(_))
    }

    /// The temporary file's path while a new or replaced file is written (for a registry that
    /// removes it on a signal); `None` otherwise.
    pub fn temporary_path(&self) -> Option<&Path> {
        match &self.kind {
            SinkKind::File(f) => f.temporary_path(),
            _ => None,
        }
    }

    /// Another handle to the file written, sharing its position, for the workers' writes by
    /// offset ([`seal`]: used only when it is a regular file): the file, or what standard
    /// output is. `None` for a stream or an object.
    pub fn shared_handle(&self) -> Option<File> {
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
    pub fn commit(self, sync: bool) -> io::Result<()> {
        match self.kind {
            SinkKind::File(f) => f.commit(sync),
            SinkKind::Stdout(mut s) => s.flush(),
            SinkKind::Stream(mut w) => w.flush(),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => w.commit(),
        }
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        #[cfg(feature = "remote")]
        return matches!(self.kind, SinkKind::Object(_));
        #[cfg(not(feature = "remote"))]
        false
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match &mut self.kind {
            SinkKind::File(f) => f.write(buf),
            SinkKind::Stdout(s) => s.write(buf),
            // A stream and an object name their own errors.
            SinkKind::Stream(w) => return w.write(buf),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => return w.write(buf),
        };
        r.map_err(|e| named(&e, "write", &self.name))
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match &mut self.kind {
            SinkKind::File(f) => f.flush(),
            SinkKind::Stdout(s) => s.flush(),
            SinkKind::Stream(w) => return w.flush(),
            #[cfg(feature = "remote")]
            SinkKind::Object(w) => return w.flush(),
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
