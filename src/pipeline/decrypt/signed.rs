//! A signed container's signatures as the reader meets them (FORMAT.md §12): kept as their
//! frames authenticate, and checked against the signers a caller requires once the whole
//! plaintext's digest was.

use std::io::Read;

use super::ContainerChunks;
use crate::crypto::sign::{statement_of, Signature, Signers};
use crate::error::{Error, Result};
use crate::format::FinalFrame;
use crate::hash::HashAlg;

/// A signed file's signatures (FORMAT.md §12) and the signers a caller requires.
#[derive(Default)]
pub(crate) struct Signed {
    /// The signature frames read, authenticated, in order.
    pub(super) found: Vec<crate::crypto::sign::Signature>,
    /// Who must have signed (none: nothing is required).
    pub(super) required: crate::crypto::sign::Signers,
    /// Which of `found` is good, and who made it, once checked.
    pub(super) by: Option<(usize, String)>,
}

impl Signed {
    pub(crate) fn requiring(required: crate::crypto::sign::Signers) -> Self {
        Signed {
            required,
            ..Signed::default()
        }
    }
}

impl<R: Read> ContainerChunks<R> {
    /// The signatures of a signed file (FORMAT.md §12.2), authenticated as frames of the file,
    /// once the whole container was read and verified; empty before, and for an unsigned file.
    /// Whether one is good is only known against a signer ([`DecryptOptions::signers`](super::DecryptOptions::signers)).
    pub fn signatures(&self) -> &[crate::crypto::sign::Signature] {
        match self.verified {
            Some(_) => &self.signed.found,
            None => &[],
        }
    }

    /// Who signed, when signers were required and the read ended with a good signature by one
    /// of them: the signer's name and fingerprint.
    pub fn signer(&self) -> Option<&str> {
        self.signed.by.as_ref().map(|(_, who)| who.as_str())
    }

    /// The good signature by a required signer, once checked ([`Self::signer`]).
    pub fn good_signature(&self) -> Option<&crate::crypto::sign::Signature> {
        let (i, _) = self.signed.by.as_ref()?;
        self.signed.found.get(*i)
    }

    /// The statement a signature of this plaintext is made over (FORMAT.md §12.1), once the
    /// whole container was read and its BLAKE3 digest checked; `None` before, and for a file
    /// whose hash is not BLAKE3.
    pub fn statement(&self) -> Option<String> {
        self.verified
            .as_ref()
            .and_then(|fin| self.statement_of(fin))
    }

    fn statement_of(&self, fin: &FinalFrame) -> Option<String> {
        (self.opener.header.hash == HashAlg::Blake3)
            .then(|| statement_of(fin.plaintext_len, &fin.digest))
    }

    /// Checks `signature`, one made apart from the file (`ssh-keygen -Y sign -n zseal` over
    /// [`Self::statement`]), against `signers` once the whole container was verified: who made
    /// it, or why it is not good.
    pub fn check_detached(&self, signers: &Signers, signature: &Signature) -> Result<String> {
        let fin = self.verified.as_ref().ok_or_else(not_whole)?;
        let text = self.statement_of(fin).ok_or_else(no_statement)?;
        signers.check_signature(text.as_bytes(), signature)
    }

    /// After the digest of the whole plaintext was checked against the final frame: a signed
    /// file holds a signature frame, and a required signer signed (FORMAT.md §12.4).
    pub(super) fn check_signed(&mut self, fin: &FinalFrame) -> Result<()> {
        if self.opener.header.signed && self.signed.found.is_empty() {
            return Err(Error::Damaged(
                "the header says the file is signed, but it holds no signature frame".into(),
            ));
        }
        if !self.signed.required.is_required() {
            return Ok(());
        }
        let text = self.statement_of(fin).ok_or_else(no_statement)?;
        let by = (self.signed.required).check_statement(&text, &self.signed.found)?;
        self.signed.by = Some(by);
        Ok(())
    }
}

/// A file whose hash is not BLAKE3 has no statement, so no signature can be over it.
fn no_statement() -> Error {
    Error::Signature(
        "the file is not signed (a signature is over the BLAKE3 digest, and this file records \
         another or none), and a signer was required"
            .into(),
    )
}

/// A required signer asks for the whole file read in order (FORMAT.md §12.4).
pub(crate) fn not_whole() -> Error {
    Error::InvalidOption(
        "a signer check reads the whole file from its first byte to its end, in order: read \
         it whole (a range is then written from the whole read)"
            .into(),
    )
}
