//! One door for every format the engine reads (FORMAT.md §10.1, §13): [`Sealed`] tells a zseal
//! container from an age or a crypt4gh file by its first bytes and reads its header; [`Reader`]
//! is the decrypting stream of any: the engine's reader over [`AnyChunks`], where the format is
//! dispatched on once. Front ends that decrypt use these; what only a zseal container has (its
//! header's algorithms, the whole-file digest, rekey) stays on [`Locked`] and
//! [`ContainerChunks`].

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

// The format traits' signatures name these types: the derived forwarding below needs them here.
use super::age::{AgeChunks, AgeLocked, AgeSink, ZstdChunks};
use super::chunks::{ByteRange, ChunkReader, Cursor};
use super::crypt4gh::{C4ghChunks, C4ghLocked, Crypt4ghSink, Crypt4ghWriter};
use super::decrypt::{ContainerChunks, Locked};
use super::encrypt::ContainerSink;
use super::options::{DecryptOptions, EncryptOptions, KeyNeeded};
use super::sink::{ambassador_impl_ChunkSink, ChunkSink, ChunkWriter, SealTo, SinkState};
use super::source::{ambassador_impl_ChunkSource, ambassador_impl_SeekSource};
use super::source::{ChunkSource, Promises, SeekSource};
use crate::crypto::{Identity, Keying};
use crate::error::Result;
use crate::format::MAGIC;
use crate::io::read_full;
use crate::stats::StreamStats;

/// Which format a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A zseal container (FORMAT.md §§1–8).
    Zseal,
    /// An age v1 file, binary or ASCII-armored (FORMAT.md §10).
    Age,
    /// A Crypt4GH v1 file (GA4GH; FORMAT.md §13), written by [`Writer::crypt4gh`].
    Crypt4gh,
}

impl std::str::FromStr for Format {
    type Err = crate::Error;

    /// `zseal`, `age` or `crypt4gh`, as the command line and the Python package name them.
    fn from_str(s: &str) -> Result<Format> {
        match s {
            "zseal" => Ok(Format::Zseal),
            "age" => Ok(Format::Age),
            "crypt4gh" => Ok(Format::Crypt4gh),
            _ => Err(crate::Error::InvalidOption(format!(
                "unknown format '{s}': use zseal, age or crypt4gh"
            ))),
        }
    }
}

impl Format {
    /// `zseal`, `age` or `crypt4gh`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Zseal => "zseal",
            Format::Age => "age",
            Format::Crypt4gh => "crypt4gh",
        }
    }
}

/// A file of either format whose header has been read, not yet authenticated.
pub enum Sealed<R: Read> {
    /// A zseal container.
    Zseal(Locked<R>),
    /// An age file.
    Age(AgeLocked<R>),
    /// A crypt4gh file.
    Crypt4gh(C4ghLocked<R>),
}

impl<R: Read> Sealed<R> {
    /// Reads the first bytes, tells the format, and reads the header (bounded: 1 MiB).
    pub fn read(mut inner: R) -> Result<Self> {
        let mut head = vec![0u8; MAGIC.len()];
        let n = read_full(&mut inner, &mut head)?;
        head.truncate(n);
        if n > 0 && MAGIC.starts_with(&head) {
            return Locked::read_after(&head, inner).map(Sealed::Zseal);
        }
        if crate::format::crypt4gh::is_crypt4gh(&head) {
            return C4ghLocked::read_after(&head, inner).map(Sealed::Crypt4gh);
        }
        AgeLocked::read_after(head, inner).map(Sealed::Age)
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        match self {
            Sealed::Zseal(_) => Format::Zseal,
            Sealed::Age(_) => Format::Age,
            Sealed::Crypt4gh(_) => Format::Crypt4gh,
        }
    }

    /// Which key the file needs.
    pub fn needs(&self) -> KeyNeeded {
        match self {
            Sealed::Zseal(l) => l.needs(),
            Sealed::Age(l) => l.needs(),
            Sealed::Crypt4gh(l) => l.needs(),
        }
    }

    /// Length of the header in bytes (of an armored age file: decoded).
    pub fn header_len(&self) -> u64 {
        match self {
            Sealed::Zseal(l) => l.header_len(),
            Sealed::Age(l) => l.header_len(),
            Sealed::Crypt4gh(l) => l.header_len(),
        }
    }

    /// Unwraps the file key with the first identity that opens a stanza, verifies the header
    /// MAC, and returns the decrypting stream.
    pub fn unlock(self, identities: &[&dyn Identity], opts: &DecryptOptions) -> Result<Reader<R>> {
        Ok(match self {
            Sealed::Zseal(l) => l.unlock(identities, opts)?.map_source(AnyChunks::Zseal),
            Sealed::Age(l) => {
                let mut r = l.unlock(identities, opts)?;
                // A failure here stays in the reader, for the first read to report in order.
                let marked = !opts.raw_age && r.peek_head().is_ok_and(ZstdChunks::<R>::is_marked);
                match marked {
                    true => ChunkReader::from_source(AnyChunks::AgeZstd(ZstdChunks::new(
                        r,
                        &opts.threads,
                    )?)),
                    false => r.map_source(AnyChunks::Age),
                }
            }
            Sealed::Crypt4gh(l) => l.unlock(identities, opts)?.map_source(AnyChunks::Crypt4gh),
        })
    }
}

/// The decrypting stream of a file of either format: the engine's reader over either format's
/// chunks. `Read` (and `Seek` over a seekable input) whose end means the whole file was
/// authenticated.
pub type Reader<R> = ChunkReader<AnyChunks<R>>;

/// The chunks of a file of either format, for the engine's reader. Its public methods (the
/// format, the container's own accessors) are reached through [`Reader`].
// One per open file, moved a handful of times and never stored in bulk: boxing the larger
// variant would buy nothing.
#[allow(clippy::large_enum_variant)]
// The format traits reach the variant's own implementation: the one place the format is
// dispatched on.
#[derive(ambassador::Delegate)]
#[delegate(ChunkSource)]
#[delegate(SeekSource, where = "R: Seek")]
pub enum AnyChunks<R: Read> {
    /// A zseal container's.
    Zseal(ContainerChunks<R>),
    /// An age file's.
    Age(AgeChunks<R>),
    /// An age file zseal wrote with zstd: its decompressed bytes (FORMAT.md §10.3).
    AgeZstd(ZstdChunks<R>),
    /// A crypt4gh file's, through its edit list (FORMAT.md §13).
    Crypt4gh(C4ghChunks<R>),
}

impl<R: Read> AnyChunks<R> {
    /// The file's format.
    pub fn format(&self) -> Format {
        match self {
            AnyChunks::Zseal(_) => Format::Zseal,
            AnyChunks::Age(_) | AnyChunks::AgeZstd(_) => Format::Age,
            AnyChunks::Crypt4gh(_) => Format::Crypt4gh,
        }
    }

    /// The zseal container's chunks, for what only a container has (its header, digest).
    pub fn as_zseal(&self) -> Option<&ContainerChunks<R>> {
        match self {
            AnyChunks::Zseal(d) => Some(d),
            _ => None,
        }
    }

    /// The crypt4gh file's chunks, for what only it has (its writer keys, edit list, the
    /// statement of a signature kept beside it).
    pub fn as_crypt4gh(&self) -> Option<&C4ghChunks<R>> {
        match self {
            AnyChunks::Crypt4gh(d) => Some(d),
            _ => None,
        }
    }
}

impl<R: Read> ChunkReader<AnyChunks<R>> {
    /// See [`AnyChunks::as_crypt4gh`]; for its settings before the read (a signature to check,
    /// hashing for the statement).
    pub fn as_crypt4gh_mut(&mut self) -> Option<&mut C4ghChunks<R>> {
        match &mut self.source {
            AnyChunks::Crypt4gh(d) => Some(d),
            _ => None,
        }
    }
}

impl From<Format> for &'static str {
    fn from(f: Format) -> Self {
        f.name()
    }
}

/// The encrypting stream of either format, chosen by [`EncryptOptions::format`]: the engine's
/// writer over either format's sink. `Write`, then `finish`.
pub type Writer<W> = ChunkWriter<AnySink<W>>;

/// The sink of either format, for the engine's writer.
#[allow(clippy::large_enum_variant)] // one per file written, as `AnyChunks`
#[derive(ambassador::Delegate)]
#[delegate(ChunkSink)]
pub enum AnySink<W: Write> {
    /// A zseal container's.
    Zseal(ContainerSink<W>),
    /// An age file's.
    Age(AgeSink<W>),
    /// A crypt4gh file's.
    Crypt4gh(Crypt4ghSink<W>),
}

/// [`Writer::new`] and [`Writer::with_rng`]: the header of `opts.format`'s file.
impl<W: Write> SealTo for AnySink<W> {
    fn open(inner: W, keys: Keying<'_>, opts: &EncryptOptions) -> Result<Self> {
        Ok(match opts.format {
            Format::Zseal => AnySink::Zseal(ContainerSink::open(inner, keys, opts)?),
            Format::Age => AnySink::Age(AgeSink::open(inner, keys, opts)?),
            Format::Crypt4gh => {
                return Err(crate::Error::InvalidOption(
                    "a crypt4gh file is written to X25519 public keys: use Writer::crypt4gh".into(),
                ))
            }
        })
    }
}

impl<W: Write> ChunkWriter<AnySink<W>> {
    /// Writes a crypt4gh header for `recipients` into `inner` and returns the stream
    /// (`opts.format` is ignored; FORMAT.md §13.8).
    pub fn crypt4gh(
        inner: W,
        recipients: &[crate::crypto::c4gh::PublicKey],
        opts: &EncryptOptions,
    ) -> Result<Self> {
        let sink = Crypt4ghWriter::new(inner, recipients, opts)?.sink;
        Ok(ChunkWriter::from_sink(AnySink::Crypt4gh(sink)))
    }
}
