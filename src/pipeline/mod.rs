//! The engine: read chunks → (hash, compress, seal) on workers → write frames in order, and the
//! reverse. [`Encryptor`] and [`Decryptor`] are the `Write`/`Read` adapters over it.
//!
//! Parallelism is a parameter, not a second copy of the code: one ordered window of jobs serves
//! both directions, running its jobs on a pool or, with one thread, on the calling thread; both
//! paths share every line of the chunk logic. At most `threads + 2` chunks are in flight, so
//! memory is about `(threads + 2) × 2 × chunk size` plus one codec context per worker, whatever
//! the input size.

mod age;
mod any;
mod attach;
mod chunks;
mod crypt4gh;
mod decrypt;
mod drive;
mod emit;
mod encrypt;
mod intake;
mod offset;
mod options;
mod rekey;
mod segments;
mod sink;
mod source;
mod threads;
mod window;

pub use age::{AgeChunks, AgeLocked, AgeReader, AgeSink, AgeWriter, AgeZstd, ZstdChunks};
pub use any::{AnyChunks, AnySink, Format, Reader, Sealed, Writer};
pub use chunks::{ByteRange, ChunkReader, Cursor};
pub use crypt4gh::{
    C4ghChunks, C4ghLocked, C4ghReader, C4ghSegments, Crypt4ghSink, Crypt4ghWriter,
};
pub(crate) use decrypt::pieces::read_end as read_pieced_end;
pub(crate) use decrypt::seek::read_footer;
pub use decrypt::{
    final_frame, merged_digest, open_range, stored_span, ContainerChunks, Decryptor, Locked,
    OpenKey, OpenedRange,
};
#[cfg(feature = "bench")]
pub(crate) use encrypt::Sealer;
pub use encrypt::{
    seal_piece, seal_piece_with_rng, seal_pieces, seal_pieces_with_rng, seal_range, ContainerSink,
    Encryptor, PieceRef, RangeResult, RangeWriter, SplitSeal, TaskKey,
};
// A resumable upload's writer (`remote/resumable`).
#[cfg(feature = "remote")]
pub(crate) use encrypt::{seal_pieces_adapting, AdaptPlan};
pub use options::{DecryptOptions, EncryptOptions, KeyNeeded};
pub use rekey::{RekeyOptions, RekeyReport, Rekeyed, Rotation};
pub use sink::{ChunkSink, ChunkWriter, SealTo, SinkState};
pub use source::{ChunkSource, Promises, SeekBy, SeekSource};
pub use threads::{available_threads, Threads};

/// A passphrase with Argon2 costs low enough for unit tests.
#[cfg(test)]
pub(crate) fn cheap_passphrase() -> crate::Passphrase {
    crate::Passphrase::with_params("pw", crate::crypto::passphrase::CHEAP)
        .expect("valid test parameters")
}
