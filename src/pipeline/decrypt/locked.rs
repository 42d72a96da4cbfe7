//! A container whose header was read but not yet authenticated ([`Locked`]): what it needs
//! ([`KeyNeeded`](super::super::KeyNeeded)), and its unlocking into a [`Decryptor`].

use std::io::Read;
use std::sync::Arc;

use super::super::chunks::ChunkReader;
use super::super::drive::Drive;
use super::super::options::{DecryptOptions, KeyNeeded};
use super::super::window::Window;
use super::frames::Frames;
use super::opener::Opener;
use super::verify::Verifier;
use super::{ContainerChunks, Decryptor};
use crate::crypto::unwrap::{unwrap_file_key, KeyHeader};
use crate::crypto::{kind_names, AgeStanza, FileKey, Identity, Stanza};
use crate::error::{Error, Result};
use crate::format::Header;

/// A container whose header has been read but not yet authenticated: what `inspect` shows, and
/// the step where a caller learns what kind of key the file wants before asking for it.
pub struct Locked<R: Read> {
    inner: R,
    header: Header,
    raw: Vec<u8>,
    mac: [u8; 32],
}

impl<R: Read> Locked<R> {
    /// Reads and parses the header (bounded: at most 1 MiB).
    pub fn read(mut inner: R) -> Result<Self> {
        let mut head = [0u8; crate::format::MAGIC.len()];
        let n = crate::io::read_full(&mut inner, &mut head)?;
        if crate::format::age::looks_like_age(&head[..n]) {
            return Err(Error::InvalidOption(
                "this is an age file, and this needs a zseal container: decrypt, verify, \
                 inspect and ranges read age files; rekey, padding and digests are the \
                 container's (FORMAT.md §10.4)"
                    .into(),
            ));
        }
        Self::read_after(&head[..n], inner)
    }

    /// Reads the header when its first bytes, `head`, were already read from `inner`.
    pub(crate) fn read_after(head: &[u8], mut inner: R) -> Result<Self> {
        let (header, raw, mac) = Header::read_after(head, &mut inner)?;
        Ok(Locked {
            inner,
            header,
            raw,
            mac,
        })
    }

    /// The header as parsed. Not authenticated yet: use it for display and key selection only.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Length of the header in bytes.
    pub fn header_len(&self) -> u64 {
        (self.raw.len() + self.mac.len()) as u64
    }

    /// Which key the file needs.
    pub fn needs(&self) -> KeyNeeded {
        let stanzas = &self.header.stanzas;
        // An AWS KMS stanza names its key (its ARN is no secret, `inspect` shows it), so that
        // a front end can say which key to give.
        let kinds = stanzas
            .iter()
            .map(|s| match s.recipient_id() {
                Some(id) if id.kind == crate::crypto::recipients::KMS_TAG => s.describe(),
                _ => s.kind_name(),
            })
            .collect();
        if stanzas
            .iter()
            .any(|s| s.kind == crate::crypto::passphrase::STANZA_TYPE)
        {
            KeyNeeded::Passphrase
        } else if stanzas.iter().any(|s| s.is_known()) {
            KeyNeeded::Identity { kinds }
        } else {
            KeyNeeded::Unsupported { kinds }
        }
    }

    /// The file key, unwrapped with the first identity that opens a stanza, once the header MAC
    /// verifies under it (the one unwrap loop, [`unwrap_file_key`]).
    pub(crate) fn file_key(&self, identities: &[&dyn Identity]) -> Result<FileKey> {
        let keys = ContainerKeys {
            stanzas: self.header.stanzas.iter().map(Stanza::to_age).collect(),
            locked: self,
        };
        unwrap_file_key(&keys, identities)
    }

    /// The input, after the header.
    pub(crate) fn input(&self) -> &R {
        &self.inner
    }

    /// The reader (just after the header), the header, and its length.
    pub(crate) fn into_parts(self) -> (R, Header, u64) {
        let len = self.header_len();
        (self.inner, self.header, len)
    }

    /// Unwraps the file key with the first identity that opens a stanza, verifies the header MAC
    /// and returns the decrypting stream. No payload is read yet.
    pub fn unlock(
        self,
        identities: &[&dyn Identity],
        opts: &DecryptOptions,
    ) -> Result<Decryptor<R>> {
        let file_key = self.file_key(identities)?;
        let payload_key = file_key.payload_key(&self.header.payload_salt);
        Ok(self.into_decryptor(&payload_key.0, opts))
    }

    /// BLAKE3 of the header's bytes, MAC included: what names this header to a task.
    pub(crate) fn header_digest(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(&self.raw);
        h.update(&self.mac);
        *h.finalize().as_bytes()
    }

    /// The decrypting stream under the payload key of an authenticated header.
    pub(crate) fn into_decryptor(
        self,
        payload_key: &[u8; 32],
        opts: &DecryptOptions,
    ) -> Decryptor<R> {
        let header = self.header;
        let header_len = (self.raw.len() + self.mac.len()) as u64;
        let chunk_size = header.chunk_size();
        let hash = header.hash;
        ChunkReader::from_source(ContainerChunks {
            frames: Frames::new(self.inner, header_len, &header),
            opener: Arc::new(Opener::new(header.clone(), header.cipher, payload_key)),
            drive: Drive::new(Window::new(&opts.threads, chunk_size)),
            verifier: Verifier::new(chunk_size, hash).pieced(header.pieced),
            pieces: header
                .pieced
                .then(|| super::pieces::Pieces::new(&header, payload_key)),
            index: None,
            verified: None,
            kept: None,
            bodies: None,
            signed: super::signed::Signed::requiring(opts.signers.clone()),
        })
    }
}

/// A container's header as the unwrap loop reads it: its stanzas as keys see them, and its MAC
/// (FORMAT.md §2.3).
struct ContainerKeys<'a, R: Read> {
    stanzas: Vec<AgeStanza>,
    locked: &'a Locked<R>,
}

impl<R: Read> KeyHeader for ContainerKeys<'_, R> {
    fn stanzas(&self) -> &[AgeStanza] {
        &self.stanzas
    }

    fn kinds(&self) -> Vec<String> {
        kind_names(&self.locked.header.stanzas)
    }

    /// One answer for a passphrase file: "did not unwrap" and "unwrapped, but the header fails"
    /// must not be told apart (FORMAT.md §2.3).
    fn verify_mac(&self, key: &FileKey, by_passphrase: bool) -> Result<()> {
        let l = self.locked;
        key.verify_header_mac(&l.raw, &l.mac)
            .map_err(|e| match by_passphrase {
                true => Error::WrongPassphrase,
                false => e,
            })
    }
}
