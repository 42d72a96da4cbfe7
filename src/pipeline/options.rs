//! What a stream is asked to do, in either format: [`EncryptOptions`] (and what of it an age file
//! cannot hold), [`DecryptOptions`], and [`KeyNeeded`], the key a file asks for.

use super::threads::Threads;
use crate::codec::Codec;
use crate::crypto::aead::Cipher;
use crate::error::{Error, Result};
use crate::format;
use crate::hash::HashAlg;

/// How to encrypt: algorithms, chunk size and threads. Start from `default()` and change what
/// you need: `EncryptOptions::default().codec(Codec::Lz4).threads(2)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EncryptOptions {
    /// Chunk compression (default zstd:3).
    pub codec: Codec,
    /// Payload cipher (default AES-256-GCM).
    pub cipher: Cipher,
    /// Whole-plaintext hash (default BLAKE3).
    pub hash: HashAlg,
    /// Chunk size in bytes: a power of two from 1 KiB to 16 MiB (default 8 MiB). An age file
    /// without compression has no chunks: there it is the input each sealing job takes, 2 MiB
    /// unless set ([`EncryptOptions::chunk_size`], or this field to another value).
    pub chunk_size: usize,
    /// Where the chunk jobs run (default: a shared pool with one worker per core).
    pub threads: Threads,
    /// Pad chunks and the file to size classes (FORMAT.md §3.3; default off).
    pub pad: bool,
    /// Adapt the zstd level per chunk to what the output absorbs, between these levels
    /// (inclusive; default off). See [`EncryptOptions::adapt`].
    pub adapt: Option<(i32, i32)>,
    /// The file format [`super::Writer`] writes (default a zseal container; `Format::Age`: an
    /// age v1 file, FORMAT.md §10.3).
    pub format: super::super::Format,
    /// Sign the plaintext with these SSH keys (FORMAT.md §12): one signature frame each, in
    /// this order (default none). Needs the BLAKE3 hash; a zseal container only.
    pub sign: Vec<crate::crypto::sign::SigningKey>,
    /// Which of the cipher, the hash and the chunk size were chosen by name
    /// ([`EncryptOptions::cipher`], [`EncryptOptions::hash`], [`EncryptOptions::chunk_size`]),
    /// even when the default was named: an age file has neither of the first two, so naming one
    /// is refused for it, and has its own default for the third without compression.
    named: Named,
}

/// The most signing keys one file takes (each signs once, at the end of the stream).
pub const MAX_SIGNERS: usize = 16;

/// Options chosen by name, rather than left at their defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Named {
    pub(crate) cipher: bool,
    pub(crate) hash: bool,
    pub(crate) chunk_size: bool,
    pub(crate) codec: bool,
}

impl Default for EncryptOptions {
    fn default() -> Self {
        EncryptOptions {
            codec: Codec::default(),
            cipher: Cipher::default(),
            hash: HashAlg::default(),
            chunk_size: 1 << format::DEFAULT_CHUNK_LOG2,
            threads: Threads::Auto,
            pad: false,
            adapt: None,
            format: super::super::Format::Zseal,
            sign: Vec::new(),
            named: Named::default(),
        }
    }
}

impl EncryptOptions {
    /// Sets the chunk codec.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self.named.codec = true;
        self
    }

    /// Sets the payload cipher.
    pub fn cipher(mut self, cipher: Cipher) -> Self {
        self.cipher = cipher;
        self.named.cipher = true;
        self
    }

    /// Sets the whole-plaintext hash.
    pub fn hash(mut self, hash: HashAlg) -> Self {
        self.hash = hash;
        self.named.hash = true;
        self
    }

    /// Sets the chunk size (checked when the stream starts). An age file without compression
    /// has no chunks of its own: there it is the input each job seals, by default 2 MiB rather than
    /// 8 MiB.
    pub fn chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes;
        self.named.chunk_size = true;
        self
    }

    /// Sets where the jobs run: a thread count (0 = one per core, 1 = the calling thread) or a
    /// [`Threads`] value with the caller's own pool.
    pub fn threads(mut self, threads: impl Into<Threads>) -> Self {
        self.threads = threads.into();
        self
    }

    /// Pads every chunk and the whole file to Padmé size classes (FORMAT.md §3.3), so that
    /// neither the plaintext length nor each chunk's compressibility shows exactly.
    pub fn pad(mut self, pad: bool) -> Self {
        self.pad = pad;
        self
    }

    /// Sets the format [`super::Writer`] writes: a zseal container or an age v1 file.
    pub fn format(mut self, format: super::super::Format) -> Self {
        self.format = format;
        self
    }

    /// Signs the plaintext with `key` too (FORMAT.md §12): a signature frame over its length
    /// and BLAKE3 digest, made once the last chunk is hashed.
    pub fn sign(mut self, key: crate::crypto::sign::SigningKey) -> Self {
        self.sign.push(key);
        self
    }

    /// Lets the zstd level of each chunk follow what the output can absorb, between `min` and
    /// `max`: when writing the output is what holds the stream back (a slow pipe or network),
    /// the level goes up, spending idle CPU on a smaller output; when the workers are what holds
    /// it back, the level goes down. Starts at `min`, the fastest, so that output flows at once;
    /// the header records `max` (FORMAT.md §1). Needs the zstd codec (its level is not used).
    pub fn adapt(mut self, min: i32, max: i32) -> Self {
        self.adapt = Some((min, max));
        self
    }

    /// The codec a container's header records: with an adaptive level the highest level a chunk
    /// may have, else [`EncryptOptions::codec`].
    pub(crate) fn header_codec(&self) -> Codec {
        self.adapt.map_or(self.codec, |(_, max)| Codec::Zstd(max))
    }

    /// The one set of checks of these options, for every format and front end: the writers run
    /// it before they write anything, and a front end may run it first (before it asks for a
    /// passphrase). The messages name the option in words, not a front end's flag.
    pub fn check(&self) -> Result<()> {
        self.check_for(self.format)
    }

    /// [`EncryptOptions::check`] for a file of `format` (a writer of one format is given
    /// options whose `format` it ignores).
    pub(crate) fn check_for(&self, format: super::super::Format) -> Result<()> {
        format::chunk_log2_of(self.chunk_size)?;
        if let Some((min, max)) = self.adapt {
            if !matches!(self.codec, Codec::Zstd(_)) {
                return Err(Error::InvalidOption(format!(
                    "the adaptive level needs the zstd codec, not {}",
                    self.codec
                )));
            }
            for l in [min, max] {
                Codec::Zstd(l).check_level()?;
            }
            if min > max {
                return Err(Error::InvalidOption(format!(
                    "adaptive level range {min}..{max} is empty: give MIN..MAX with MIN <= MAX"
                )));
            }
        }
        if format == super::super::Format::Age {
            self.check_age()?;
        }
        if format == super::super::Format::Crypt4gh {
            self.check_crypt4gh()?;
        }
        if !self.sign.is_empty() && self.hash != HashAlg::Blake3 {
            return Err(Error::InvalidOption(format!(
                "a signature is made over the BLAKE3 digest of the plaintext (FORMAT.md §12.1): \
                 the hash {} cannot carry one; keep the default hash, blake3",
                self.hash
            )));
        }
        if self.sign.len() > MAX_SIGNERS {
            return Err(Error::Limit(format!(
                "{} signing keys: a file holds at most {MAX_SIGNERS} signatures",
                self.sign.len()
            )));
        }
        Ok(())
    }

    /// True when the chunk size was chosen ([`EncryptOptions::chunk_size`], or the field set to
    /// another value than the default): an uncompressed age file then seals that much a job.
    pub(super) fn names_chunk_size(&self) -> bool {
        self.named.chunk_size || self.chunk_size != 1 << format::DEFAULT_CHUNK_LOG2
    }

    /// What a crypt4gh file cannot hold (FORMAT.md §13.8): it has no codec (a compression other
    /// than none, named, is refused; the default is ignored), its segments are ChaCha20-Poly1305
    /// of 64 KiB, and it has no padding, adaptive level or signature inside; its one digest is the
    /// BLAKE3 a detached signature is made over.
    fn check_crypt4gh(&self) -> Result<()> {
        let other = match () {
            _ if self.named.codec && self.codec != Codec::None => Some(format!(
                "compression ({}: the format has no codec; give -c none or leave it out)",
                self.codec
            )),
            _ if self.named.cipher && self.cipher != Cipher::ChaCha20Poly1305 => Some(format!(
                "the cipher {} (crypt4gh segments are ChaCha20-Poly1305)",
                self.cipher
            )),
            _ if self.hash == HashAlg::Xxh3 => {
                Some("the hash xxh3 (only BLAKE3, for a signature beside the file)".into())
            }
            _ if self.named.chunk_size => {
                Some("a chunk size (crypt4gh segments are 64 KiB by the format)".into())
            }
            _ if self.pad => Some("padding".into()),
            _ if self.adapt.is_some() => Some("an adaptive level".into()),
            _ => None,
        };
        match other {
            Some(what) => Err(Error::InvalidOption(format!(
                "{what} is not for crypt4gh files (FORMAT.md §13.8): drop it, or write a zseal \
                 container"
            ))),
            None => Ok(()),
        }
    }

    /// What an age file cannot hold (FORMAT.md §10.4).
    fn check_age(&self) -> Result<()> {
        let container_only = match () {
            _ if self.named.cipher || self.cipher != Cipher::default() => {
                Some("a cipher (an age file is sealed with ChaCha20-Poly1305)")
            }
            _ if self.named.hash => Some("a hash (an age file records no whole-file digest)"),
            _ if self.pad => Some("padding"),
            _ if self.adapt.is_some() => Some("an adaptive level"),
            _ if !self.sign.is_empty() => {
                Some("a signature inside the file (sign the age file itself: a detached signature)")
            }
            _ => None,
        };
        if let Some(what) = container_only {
            return Err(Error::InvalidOption(format!(
                "{what} is an option of zseal containers, not of age files (FORMAT.md §10.4): \
                 drop it, or write a zseal container"
            )));
        }
        match self.codec {
            Codec::Zstd(_) => Ok(()),
            Codec::None if self.chunk_size.is_multiple_of(crate::format::age::CHUNK) => Ok(()),
            Codec::None => Err(Error::InvalidOption(format!(
                "without compression an age file's input is sealed in chunks of the chunk size, \
                 which must be a multiple of age's 64 KiB STREAM chunk: {} is not (use 64K or \
                 more)",
                self.chunk_size
            ))),
            other => Err(Error::InvalidOption(format!(
                "an age file holds zstd (a seekable zstd stream inside) or nothing: {other} is for \
                 zseal containers"
            ))),
        }
    }
}

/// How to decrypt. Start from `default()`: `DecryptOptions::default().threads(2)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecryptOptions {
    /// Where the chunk jobs run (default: a shared pool with one worker per core).
    pub threads: Threads,
    /// For an age file whose plaintext is zseal's seekable zstd stream (FORMAT.md §10.3): give
    /// that plaintext as `age -d` does instead of its decompressed bytes (default false).
    pub raw_age: bool,
    /// Require a good signature by one of these (FORMAT.md §12.4; default none): the read
    /// fails at its end otherwise, and must be of the whole file, in order (no seek, no range).
    pub signers: crate::crypto::sign::Signers,
}

impl DecryptOptions {
    /// Sets where the jobs run: a thread count (0 = one per core, 1 = the calling thread) or a
    /// [`Threads`] value with the caller's own pool.
    pub fn threads(mut self, threads: impl Into<Threads>) -> Self {
        self.threads = threads.into();
        self
    }

    /// See [`DecryptOptions::raw_age`].
    pub fn raw_age(mut self, raw: bool) -> Self {
        self.raw_age = raw;
        self
    }

    /// See [`DecryptOptions::signers`].
    pub fn signers(mut self, signers: crate::crypto::sign::Signers) -> Self {
        self.signers = signers;
        self
    }
}

/// Which key a file needs, decided from its (not yet authenticated) header: what a front end
/// asks its user for before calling `unlock` ([`super::Locked::unlock`], [`super::AgeLocked::unlock`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyNeeded {
    /// A passphrase (the file has a passphrase stanza, which is then its only stanza).
    Passphrase,
    /// An identity matching one of the recipients, whose kinds (`X25519`, `ssh-ed25519`, …)
    /// are listed in header order.
    Identity {
        /// The recipients' kinds.
        kinds: Vec<String>,
    },
    /// No stanza of a type this build can unwrap: a damaged file, or a newer zseal's.
    Unsupported {
        /// The stanzas' kinds.
        kinds: Vec<String>,
    },
}
