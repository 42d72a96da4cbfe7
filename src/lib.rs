//! zseal: stream data through hash → compress → authenticated encryption, chunk by chunk, on
//! every core, into a framed, seekable container — and back.
//!
//! The container format is specified in `docs/FORMAT.md`; [`mod@format`] mirrors it. The engine
//! is in [`pipeline`]: [`Encryptor`] is an `io::Write` adapter (call [`Encryptor::finish`]) and
//! [`Decryptor`] an `io::Read` adapter (and `Seek`, over a seekable input) whose end-of-stream
//! means the whole file verified. [`Locked::needs`] tells a front end which key to ask for.
//! `docs/ARCHITECTURE.md` draws the modules and the data path.
//!
//! ```
//! use zseal::{decrypt_to_vec, encrypt_to_vec, Argon2Params, EncryptOptions, Passphrase};
//! // Cheap Argon2 parameters keep the example fast; use Passphrase::new for real files.
//! let cheap = Argon2Params { m_cost: 64, t_cost: 1, p_cost: 1 };
//! let pw = Passphrase::with_params("correct horse battery staple", cheap)?;
//! let sealed = encrypt_to_vec(b"hello", &[&pw], &EncryptOptions::default())?;
//! assert_eq!(decrypt_to_vec(&sealed, &[&pw])?, b"hello");
//! # Ok::<(), zseal::Error>(())
//! ```
// One module may use `unsafe`, with its reasons written there: `alloc`, the allocator that asks
// for huge pages (implementing `GlobalAlloc` is unsafe by definition).
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod alloc;
pub mod archive;
#[cfg(feature = "bench")]
pub mod bench;
pub mod codec;
pub mod crypto;
pub mod error;
pub mod format;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod hash;
pub mod inspect;
pub mod io;
pub mod pipeline;
pub mod records;
#[cfg(feature = "remote")]
pub mod remote;
pub mod resume;
pub mod stats;
pub mod transfer;
pub mod units;

pub use codec::Codec;
pub use crypto::aead::Cipher;
pub use crypto::passphrase::{Argon2Params, Passphrase};
pub use crypto::recipients::{AgeIdentity, AgeRecipient};
pub use crypto::{FileKey, Identity, Recipient};
pub use error::{Error, ErrorKind, Result};
pub use format::Header;
pub use hash::HashAlg;
pub use inspect::Info;
pub use pipeline::{
    final_frame, merged_digest, open_range, seal_piece, seal_piece_with_rng, seal_pieces,
    seal_pieces_with_rng, seal_range, stored_span, AgeLocked, AgeReader, AgeWriter, ByteRange,
    ChunkReader, ChunkSink, ChunkSource, ChunkWriter, Crypt4ghWriter, DecryptOptions, Decryptor,
    EncryptOptions, Encryptor, Format, KeyNeeded, Locked, OpenKey, OpenedRange, PieceRef, Promises,
    RangeResult, Reader, RekeyOptions, RekeyReport, Rekeyed, Rotation, Sealed, SeekBy, SeekSource,
    SplitSeal, TaskKey, Threads, Writer,
};

/// Encrypts `plaintext` in memory.
pub fn encrypt_to_vec(
    plaintext: &[u8],
    recipients: &[&dyn Recipient],
    opts: &EncryptOptions,
) -> Result<Vec<u8>> {
    let mut enc = Encryptor::new(Vec::new(), recipients, opts)?;
    enc.copy_from(&mut &plaintext[..])?;
    enc.finish()
}

/// Decrypts and fully verifies a container (or an age file) held in memory (on the calling thread
/// when it holds a single chunk).
pub fn decrypt_to_vec(container: &[u8], identities: &[&dyn Identity]) -> Result<Vec<u8>> {
    let mut dec = Sealed::read(container)?.unlock(identities, &DecryptOptions::default())?;
    let mut out = Vec::new();
    dec.copy_to(&mut out)?;
    Ok(out)
}
