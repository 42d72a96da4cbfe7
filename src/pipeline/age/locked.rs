//! An age file whose header was read but not yet authenticated ([`AgeLocked`]): which key it
//! needs, and its unlocking into an [`AgeReader`].

use std::io::{Read, Seek, SeekFrom};

use super::super::chunks::ChunkReader;
use super::super::options::{DecryptOptions, KeyNeeded};
use super::input::AgeInput;
use super::AgeChunks;
use super::{AgeReader, AgeStream};
use crate::crypto::aead::{Cipher, PayloadCipher};
use crate::crypto::unwrap::{unwrap_file_key, KeyHeader};
use crate::crypto::{AgeStanza, FileKey, Identity};
use crate::error::{Error, Result};
use crate::format::age::{payload_shape, AgeHeader, NONCE_LEN};
use crate::io::read_full;

/// An age file whose header has been read but not authenticated (FORMAT.md §10.2).
pub struct AgeLocked<R: Read> {
    input: AgeInput<R>,
    header: AgeHeader,
    armored: bool,
}

impl<R: Read> AgeLocked<R> {
    /// Reads the header of an age file whose first bytes, `head`, were already read from
    /// `inner` (positioned just after them).
    pub(crate) fn read_after(head: Vec<u8>, inner: R) -> Result<Self> {
        let mut input = AgeInput::new(head, inner)?;
        let armored = matches!(input, AgeInput::Armored(_));
        let header = AgeHeader::read(&mut input)?;
        Ok(AgeLocked {
            header,
            input,
            armored,
        })
    }

    /// The stanza tags, in header order.
    pub fn kinds(&self) -> Vec<String> {
        self.header.stanzas.iter().map(|s| s.tag.clone()).collect()
    }

    /// What each stanza tells of its recipient, in header order, as a container's stanzas say
    /// it ([`crate::crypto::Stanza::describe`]); `passphrase (scrypt)` for age's passphrase.
    pub fn recipient_details(&self) -> Vec<String> {
        let describe = |s: &AgeStanza| match s.tag.as_str() {
            crate::crypto::passphrase::SCRYPT_TAG => "passphrase (scrypt)".to_string(),
            _ => crate::crypto::recipients::encode(s)
                .map(|z| z.describe())
                .unwrap_or_else(|_| s.tag.clone()),
        };
        self.header.stanzas.iter().map(describe).collect()
    }

    /// True for an ASCII-armored file.
    pub fn armored(&self) -> bool {
        self.armored
    }

    /// Length of the (decoded) header in bytes.
    pub fn header_len(&self) -> u64 {
        self.header.len
    }

    /// Which key the file needs.
    pub fn needs(&self) -> KeyNeeded {
        let kinds = self.kinds();
        if self.header.has_scrypt() {
            KeyNeeded::Passphrase
        } else {
            // A stanza of none of age's own types is an age plugin's (FORMAT.md §1.1): an
            // identity of that plugin opens it.
            KeyNeeded::Identity { kinds }
        }
    }

    /// The file key, unwrapped by the first identity that opens a stanza, once the header MAC
    /// verifies under it (the one unwrap loop, [`unwrap_file_key`]).
    fn file_key(&self, identities: &[&dyn Identity]) -> Result<FileKey> {
        unwrap_file_key(self, identities)
    }

    /// Unwraps the file key, verifies the header MAC, reads the payload nonce and returns the
    /// decrypting stream. No chunk is read yet.
    pub fn unlock(
        mut self,
        identities: &[&dyn Identity],
        opts: &DecryptOptions,
    ) -> Result<AgeReader<R>> {
        if opts.signers.is_required() {
            return Err(Error::InvalidOption(
                "an age file holds no signature: check the signature beside it (OUT.sig \
                 of `encrypt --format age --sign`) with `ssh-keygen -Y verify -n zseal`"
                    .into(),
            ));
        }
        let key = self.file_key(identities)?;
        let mut nonce = [0u8; NONCE_LEN];
        if read_full(&mut self.input, &mut nonce)? != NONCE_LEN {
            return Err(Error::Truncated("in the age payload nonce".into()));
        }
        let payload_key = key.age_payload_key(&nonce);
        let cipher = PayloadCipher::new(Cipher::ChaCha20Poly1305, &payload_key.0);
        let at = (self.header.len, self.header.len + NONCE_LEN as u64);
        let chunks = AgeChunks::new(self.input, AgeStream::new(cipher), at, &opts.threads);
        Ok(ChunkReader::from_source(chunks))
    }
}

impl<R: Read + Seek> AgeLocked<R> {
    /// The decoded file's length, and the chunk count and plaintext length that length makes
    /// (FORMAT.md §10.2); read from the length alone, not authenticated.
    pub fn shape(&mut self) -> Result<(u64, (u64, u64))> {
        let here = self.input.stream_position()?;
        let end = self.input.seek(SeekFrom::End(0))?;
        self.input.seek(SeekFrom::Start(here))?;
        let p = end
            .checked_sub(self.header.len + NONCE_LEN as u64)
            .ok_or_else(|| Error::Truncated("in the age payload nonce".into()))?;
        Ok((end, payload_shape(p)?))
    }
}

/// An age header as the unwrap loop reads it: its stanzas, and age's header MAC (FORMAT.md
/// §10.2).
impl<R: Read> KeyHeader for AgeLocked<R> {
    fn stanzas(&self) -> &[AgeStanza] {
        &self.header.stanzas
    }

    fn kinds(&self) -> Vec<String> {
        AgeLocked::kinds(self)
    }

    fn verify_mac(&self, key: &FileKey, _by_passphrase: bool) -> Result<()> {
        key.verify_age_header_mac(&self.header.mac_input, &self.header.mac)
    }
}
