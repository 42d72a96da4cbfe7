//! One door for every format the engine reads (FORMAT.md §10.1, §13): [`Sealed`] tells a zseal
//! container from an age or a crypt4gh file by its first bytes and reads its header; [`Reader`]
//! is the decrypting stream of any: the engine's reader over [`AnyChunks`], where the format is
//! dispatched on once. Front ends that decrypt use these; what only a zseal container has (its
//! header's algorithms, the whole-file digest, rekey) stays on [`Locked`] and
//! [`ContainerChunks`].

use std::io::{Read, Seek, Write};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use super::age::{AgeChunks, AgeLocked, AgeSink, ZstdChunks};
use super::chunks::{ByteRange, ChunkReader, Cursor};
use super::crypt4gh::{C4ghChunks, C4ghLocked, Crypt4ghSink, Crypt4ghWriter};
use super::decrypt::{ContainerChunks, Locked};
use super::encrypt::ContainerSink;
use super::options::{DecryptOptions, EncryptOptions, KeyNeeded};
use super::sink::{ChunkSink, ChunkWriter, SealTo, SinkState};
use super::source::{ChunkSource, Promises, SeekSource};
use crate::crypto::{Identity, Recipient};
use crate::error::Result;
use crate::format::MAGIC;
use crate::io::read_full;
use crate::stats::StreamStats;
use rand_core::{CryptoRng, RngCore};

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

    /// The one place the format is dispatched on.
    fn chunks(&mut self) -> &mut dyn ChunkSource {
        match self {
            AnyChunks::Zseal(d) => d,
            AnyChunks::Age(d) => d,
            AnyChunks::AgeZstd(d) => d,
            AnyChunks::Crypt4gh(d) => d,
        }
    }

    fn chunks_ref(&self) -> &dyn ChunkSource {
        match self {
            AnyChunks::Zseal(d) => d,
            AnyChunks::Age(d) => d,
            AnyChunks::AgeZstd(d) => d,
            AnyChunks::Crypt4gh(d) => d,
        }
    }
}

impl<R: Read + Seek> AnyChunks<R> {
    /// [`AnyChunks::chunks`] over a seekable input.
    fn seekable(&mut self) -> &mut dyn SeekSource {
        match self {
            AnyChunks::Zseal(d) => d,
            AnyChunks::Age(d) => d,
            AnyChunks::AgeZstd(d) => d,
            AnyChunks::Crypt4gh(d) => d,
        }
    }
}

impl<R: Read> ChunkSource for AnyChunks<R> {
    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        self.chunks().advance(cursor)
    }

    fn read_direct(&mut self, cursor: &mut Cursor, buf: &mut [u8]) -> Result<Option<usize>> {
        self.chunks().read_direct(cursor, buf)
    }

    fn write_time(&mut self) -> &mut Duration {
        self.chunks().write_time()
    }

    fn stats(&self) -> StreamStats {
        self.chunks_ref().stats()
    }

    fn header_len(&self) -> u64 {
        self.chunks_ref().header_len()
    }

    fn promises(&self) -> Promises {
        self.chunks_ref().promises()
    }

    fn verified_len(&self, cursor: &Cursor) -> Option<u64> {
        self.chunks_ref().verified_len(cursor)
    }

    fn verified_chunks(&self) -> Option<u64> {
        self.chunks_ref().verified_chunks()
    }

    fn digest_hex(&self) -> Option<String> {
        self.chunks_ref().digest_hex()
    }

    fn requires_signer(&self) -> bool {
        self.chunks_ref().requires_signer()
    }

    fn header_warning(&self) -> Option<String> {
        self.chunks_ref().header_warning()
    }

    fn resume_unit(&self) -> u64 {
        self.chunks_ref().resume_unit()
    }

    fn copy_range_streaming(
        &mut self,
        cursor: &mut Cursor,
        range: ByteRange,
        w: &mut dyn Write,
    ) -> Result<u64> {
        self.chunks().copy_range_streaming(cursor, range, w)
    }
}

impl<R: Read + Seek> SeekSource for AnyChunks<R> {
    fn plaintext_len(&mut self, cursor: &mut Cursor) -> Result<u64> {
        self.seekable().plaintext_len(cursor)
    }

    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        self.seekable().reposition(cursor, pos)
    }

    fn limit_read_ahead(&mut self, cursor: &mut Cursor, end: Option<u64>) -> Result<()> {
        self.seekable().limit_read_ahead(cursor, end)
    }

    fn begin_range(&mut self, cursor: &mut Cursor, start: u64, end: u64) -> Result<()> {
        self.seekable().begin_range(cursor, start, end)
    }

    fn end_range(&mut self, cursor: &mut Cursor, to_end: bool) -> Result<bool> {
        self.seekable().end_range(cursor, to_end)
    }

    fn use_index(&mut self, cursor: &mut Cursor) -> Result<()> {
        self.seekable().use_index(cursor)
    }

    fn hash_kept(&mut self, from: u64, kept: &mut dyn Read) -> Result<()> {
        self.seekable().hash_kept(from, kept)
    }

    fn read_bodies_from(
        &mut self,
        file: std::fs::File,
        count: Option<Arc<AtomicU64>>,
    ) -> Result<()> {
        self.seekable().read_bodies_from(file, count)
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
    fn open(
        inner: W,
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<Self> {
        Ok(match opts.format {
            Format::Zseal => AnySink::Zseal(ContainerSink::open(inner, recipients, opts, rng)?),
            Format::Age => AnySink::Age(AgeSink::open(inner, recipients, opts, rng)?),
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

impl<W: Write> AnySink<W> {
    /// The one place the format is dispatched on.
    fn sink(&mut self) -> &mut dyn ChunkSink<Inner = W> {
        match self {
            AnySink::Zseal(s) => s,
            AnySink::Age(s) => s,
            AnySink::Crypt4gh(s) => s,
        }
    }

    fn sink_ref(&self) -> &dyn ChunkSink<Inner = W> {
        match self {
            AnySink::Zseal(s) => s,
            AnySink::Age(s) => s,
            AnySink::Crypt4gh(s) => s,
        }
    }
}

impl<W: Write> ChunkSink for AnySink<W> {
    type Inner = W;

    fn state(&mut self) -> &mut SinkState<W> {
        self.sink().state()
    }

    fn submit(&mut self) -> Result<()> {
        self.sink().submit()
    }

    fn submit_at(&mut self, file: &Arc<std::fs::File>, offset: u64) -> Result<()> {
        self.sink().submit_at(file, offset)
    }

    fn threads(&self) -> usize {
        self.sink_ref().threads()
    }

    fn writes_by_offset(&self) -> bool {
        self.sink_ref().writes_by_offset()
    }

    fn write_by_offset(&mut self, file: std::fs::File, at: u64, count: Option<Arc<AtomicU64>>) {
        self.sink().write_by_offset(file, at, count)
    }

    fn flush_sealed(&mut self) -> Result<()> {
        self.sink().flush_sealed()
    }

    fn end(&mut self) -> Result<()> {
        self.sink().end()
    }

    fn stats(&self) -> StreamStats {
        self.sink_ref().stats()
    }

    fn digest_hex(&self) -> Option<String> {
        self.sink_ref().digest_hex()
    }

    fn signatures(&self) -> Vec<String> {
        self.sink_ref().signatures()
    }

    fn into_state(self) -> SinkState<W> {
        match self {
            AnySink::Zseal(s) => s.into_state(),
            AnySink::Age(s) => s.into_state(),
            AnySink::Crypt4gh(s) => s.into_state(),
        }
    }
}
