//! The age side of the engine (FORMAT.md §10.2): an age v1 file's payload is fixed-size STREAM
//! chunks, so it is read by the engine's segment reader ([`Segments`]); what age itself supplies
//! is [`AgeStream`]: the chunk sizes, how one chunk opens (ChaCha20-Poly1305, the payload AEAD
//! zseal already composes from aws-lc-rs, with STREAM's nonce and last-chunk flag), and the shape
//! a payload's length gives. A seek or a range first authenticates the final chunk, which fixes
//! the plaintext length, then opens only the chunks it covers.

mod input;
mod locked;
mod seekable;
mod write;

pub use locked::AgeLocked;
pub use seekable::{AgeZstd, ZstdChunks};
pub use write::{AgeSink, AgeWriter};

use input::AgeInput;

use super::chunks::ChunkReader;
pub(crate) use super::segments::GROUP;
use super::segments::{SegmentFormat, Segments};
use crate::crypto::aead::{stream_nonce, PayloadCipher};
use crate::error::{Error, Result};
use crate::format::age::{payload_shape, CHUNK, CHUNK_CT, TAG};

/// Decrypts an age v1 file read from `R`: the engine's reader over its STREAM chunks. Reaching
/// the end (a read returning 0) means every chunk was authenticated and the last one was the
/// final chunk.
pub type AgeReader<R> = ChunkReader<AgeChunks<R>>;

/// The authenticated STREAM chunks of an age file read from `R` (armored or not), for the
/// engine's reader.
pub type AgeChunks<R> = Segments<AgeInput<R>, AgeStream>;

/// Age's STREAM as a [`SegmentFormat`]: 64 KiB chunks sealed with a 16-byte tag under the
/// payload key, the final one flagged in its nonce (so a file cut at a chunk boundary is
/// refused).
pub struct AgeStream {
    cipher: PayloadCipher,
}

impl AgeStream {
    pub(crate) fn new(cipher: PayloadCipher) -> Self {
        AgeStream { cipher }
    }
}

impl SegmentFormat for AgeStream {
    const NAME: &'static str = "age";
    const SEGMENT: &'static str = "chunk";
    const PLAIN: usize = CHUNK;
    const OVERHEAD: usize = TAG;
    const MARKS_LAST: bool = true;

    fn open(&self, i: u64, sealed: &[u8], out: &mut [u8]) -> Result<(usize, bool)> {
        open_chunk(&self.cipher, i, sealed, out)
    }

    fn shape(len: u64) -> Result<(u64, u64)> {
        payload_shape(len)
    }
}

/// Opens chunk `i`, `sealed`, into `out`: its plaintext length, and whether it is the final
/// chunk. A full chunk is tried as a middle chunk first; a short one can only be the final one.
fn open_chunk(
    cipher: &PayloadCipher,
    i: u64,
    sealed: &[u8],
    out: &mut [u8],
) -> Result<(usize, bool)> {
    let len = sealed.len();
    if len < TAG {
        return Err(Error::Truncated(format!(
            "age chunk {i} is {len} bytes, shorter than its tag"
        )));
    }
    if len == CHUNK_CT {
        if let Ok(m) = cipher.open_to(&stream_nonce(i, false), b"", sealed, out) {
            return Ok((m, false));
        }
    }
    match cipher.open_to(&stream_nonce(i, true), b"", sealed, out) {
        Ok(0) if i > 0 => Err(Error::ChunkInvalid {
            index: i,
            what: "is an empty last chunk after others (age allows it only alone)".into(),
        }),
        Ok(m) => Ok((m, true)),
        Err(()) => Err(Error::ChunkAuth(i)),
    }
}
