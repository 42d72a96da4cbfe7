//! A crypt4gh file's signature beside it (FORMAT.md §13.9): the BLAKE3 of the plaintext released
//! (after the edit list) while a read goes on from the first byte, §12.1's statement of it at
//! the verified end, and, when signers are required, the check of the detached signature over
//! that statement. The statement and the SSHSIG checks are `crypto::sign`'s, as for containers.

use crate::crypto::sign::{self, Signature, Signers};
use crate::error::{Error, Result};

/// What a read does for a signature.
#[derive(Default)]
pub(super) struct Signed {
    /// The hash of what was released, while the read goes on from the first byte.
    hash: Option<blake3::Hasher>,
    /// The statement, once the whole file was read from its first byte.
    statement: Option<String>,
    /// Who must have signed, and the signature to check at the end.
    required: Option<(Signers, Option<Signature>)>,
    /// The good signature and who made it, once checked.
    by: Option<(Signature, String)>,
}

impl Signed {
    /// Hashes what is released when `signers` are required (or when asked, [`Self::hash`]).
    pub(super) fn new(signers: &Signers) -> Signed {
        let required = signers.is_required().then(|| (signers.clone(), None));
        Signed {
            hash: required.is_some().then(blake3::Hasher::new),
            required,
            ..Signed::default()
        }
    }

    /// Hashes what is released from now on (before anything was read).
    pub(super) fn hash(&mut self) {
        self.hash.get_or_insert_with(blake3::Hasher::new);
    }

    /// The signature to check at the end against the required signers.
    pub(super) fn set_signature(&mut self, signature: Signature) -> Result<()> {
        match &mut self.required {
            Some((_, s)) => {
                *s = Some(signature);
                Ok(())
            }
            None => Err(Error::InvalidOption(
                "a signature to check needs a signer (--signer or --allowed-signers)".into(),
            )),
        }
    }

    pub(super) fn update(&mut self, released: &[u8]) {
        if let Some(h) = &mut self.hash {
            h.update(released);
        }
    }

    /// A seek: what is released next is not the file from its start.
    pub(super) fn forget(&mut self) {
        self.hash = None;
    }

    /// True when a signer is required (a range then reads the whole file, in order).
    pub(super) fn is_required(&self) -> bool {
        self.required.is_some()
    }

    /// At the verified end of a read from the first byte, `len` bytes released: the statement,
    /// and the required signature checked against it.
    pub(super) fn end(&mut self, len: Option<u64>) -> Result<()> {
        if let (Some(h), Some(len)) = (self.hash.take(), len) {
            self.statement = Some(sign::statement(len, &h.finalize().to_hex()));
        }
        let Some((signers, signature)) = &self.required else {
            return Ok(());
        };
        let text = self.statement.as_ref().ok_or_else(|| {
            Error::Signature(
                "a signer check reads the whole crypt4gh file from its first byte".into(),
            )
        })?;
        let signature = signature.as_ref().ok_or_else(|| {
            Error::Signature(
                "a crypt4gh file keeps its signature beside it (FILE.c4gh.sig) and none was \
                 given: give it with --signature SIG"
                    .into(),
            )
        })?;
        let who = signers.check_signature(text.as_bytes(), signature)?;
        self.by = Some((signature.clone(), who));
        Ok(())
    }

    /// §12.1's statement of the plaintext, once the whole file was read from its first byte
    /// with hashing on.
    pub(super) fn statement(&self) -> Option<&str> {
        self.statement.as_deref()
    }

    /// The good signature and who made it, once checked.
    pub(super) fn by(&self) -> Option<&(Signature, String)> {
        self.by.as_ref()
    }

    /// Checks `signature` (made apart, over the statement) against `signers`.
    pub(super) fn check_detached(
        &self,
        signers: &Signers,
        signature: &Signature,
    ) -> Result<String> {
        let text = self.statement.as_ref().ok_or_else(|| {
            Error::Signature("the crypt4gh file was not read whole, so it has no statement".into())
        })?;
        signers.check_signature(text.as_bytes(), signature)
    }
}
