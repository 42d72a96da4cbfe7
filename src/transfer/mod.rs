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
use crate::io::named;
use crate::{ByteRange, Reader, Writer};

mod beside;
mod sink;
pub use beside::{read_signature, signature_beside};
pub use sink::Sink;

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
    Object(Box<crate::remote::RemoteReader>),
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
        Source::of(Kind::Object(Box::new(r)), name)
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
            Some(r) if self.seekable && !signer => {
                plan_span(reader, r.start, r.end)?;
                reader.copy_range_to(r.start, r.end, w)
            }
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

/// Tells an object the container bytes a range of a zseal container reads in order (its
/// frames, from the index), so that it fetches them in parts and nothing past them: without it
/// a range read in random mode sent read-ahead for the bytes after the range, which were
/// fetched (and counted) or not as the process's exit raced them.
fn plan_span(reader: &mut Reader<Source>, start: u64, end: Option<u64>) -> Result<()> {
    let crate::pipeline::AnyChunks::Zseal(z) = &mut reader.source else {
        return Ok(());
    };
    let Some(object_len) = z.get_ref().size() else {
        return Ok(());
    };
    let end = match end {
        Some(e) => e,
        None => z.load_index()?.final_frame().plaintext_len,
    };
    if start >= end {
        return Ok(());
    }
    let (from, to) = z.stored_span(start, end)?;
    z.inner_mut().plan_span(from, to.min(object_len));
    Ok(())
}
