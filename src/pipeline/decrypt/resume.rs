//! A download resumed after a kept part (docs/OBJECTS.md, "Resuming a download"): the kept
//! plaintext is hashed again locally, chunk by chunk into the whole-plaintext digest, so that the
//! range fetched after it ends with the same check a whole read ends with.

use std::io::{Read, Seek};

use super::ContainerChunks;
use crate::error::{Error, Result};
use crate::hash::{ChunkHash, Digest, HashAlg};
use crate::pipeline::chunks::Cursor;
use crate::pipeline::source::{ChunkSource, SeekSource};

impl<R: Read + Seek> ContainerChunks<R> {
    /// Hashes the first `from` plaintext bytes, read from `kept`, into the whole-plaintext digest
    /// that the range starting at `from` then goes on with. `from` must be a whole number of
    /// chunks within the plaintext. Memory: one chunk.
    pub(crate) fn hash_kept_part(&mut self, from: u64, kept: &mut dyn Read) -> Result<()> {
        let c = self.resume_unit();
        let len = self.plaintext_len(&mut Cursor::new())?;
        if !from.is_multiple_of(c) || from > len {
            return Err(Error::InvalidOption(format!(
                "a download resumes at a whole chunk of {c} bytes within the plaintext's {len}, \
                 not at {from}"
            )));
        }
        let alg = self.verifier.alg();
        let mut digest = Digest::new(alg);
        if alg != HashAlg::None {
            let mut buf = vec![0u8; c as usize];
            for index in 0..from / c {
                kept.read_exact(&mut buf).map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => {
                        Error::InvalidOption(format!("the kept part ends before its {from} bytes"))
                    }
                    _ => Error::from(e),
                })?;
                digest.push(&buf, &ChunkHash::compute(alg, index, c as usize, &buf));
            }
        }
        self.verifier.prepare_resume(from / c, digest);
        Ok(())
    }
}
