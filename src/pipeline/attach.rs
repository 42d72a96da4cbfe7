//! Attaching a signature to a sealed container (FORMAT.md §12.1): a signature `ssh-keygen -Y
//! sign -n zseal` made over the file's statement becomes one more signature frame, after the
//! data and any signature frames already there, before the padding. A key holder does it: the
//! header gets the signed flag (a new MAC), the data and signature frames are copied unchanged
//! (their numbers do not move), the padding frames after the new one are sealed again one
//! number on, and the final frame, the index and the footer count one frame more. Nothing is
//! recompressed; a padded file's length is no longer a Padmé value (as after a rekey).

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::decrypt::frames::{read_index, Frames};
use super::decrypt::opener::Opener;
use super::decrypt::seek::read_trailer;
use super::encrypt::{sealed_header, Sealer};
use super::rekey::RekeyReport;
use super::Locked;
use crate::crypto::aead::TAG_LEN;
use crate::crypto::sign::{statement_of, Signature};
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::format::frame::{footer, signature_plaintext, FINAL_PLAIN_LEN};
use crate::format::{FinalFrame, FrameKind, Header, FOOTER_LEN, FRAME_HEADER_LEN};
use crate::hash::HashAlg;

impl<R: Read + Seek> Locked<R> {
    /// Writes to `output` this container with `signature` attached as a signature frame, once
    /// the trailer authenticates under the file key `identities` unwrap and the signature is
    /// over this file's statement (its length and recorded BLAKE3) by the key it names. Whether
    /// that key is trusted is the reader's question (`--signer`).
    pub fn add_signature<W: Write>(
        self,
        identities: &[&dyn Identity],
        signature: &Signature,
        mut output: W,
    ) -> Result<RekeyReport> {
        let file_key = self.file_key(identities)?;
        let (mut input, old, old_header_len) = self.into_parts();
        if old.hash != HashAlg::Blake3 {
            return Err(Error::InvalidOption(format!(
                "a signature is over the BLAKE3 digest of the plaintext, and this file's hash is \
                 {}: it cannot carry one",
                old.hash
            )));
        }
        let key = file_key.payload_key(&old.payload_salt);
        let opener = Opener::new(old.clone(), old.cipher, &key.0);
        let sealer = Sealer::new(old.cipher, &key.0, old.codec, old.hash, old.chunk_log2);
        let mut frames = Frames::new(&mut input, old_header_len, &old);
        let mut ix = read_trailer(&mut frames, &opener)?;
        let fin = ix.final_frame().clone();
        signature.check_own(statement_of(fin.plaintext_len, &fin.digest).as_bytes())?;
        let n = fin.chunk_count;
        // Where the new frame goes: after the data frames and the signature frames already
        // there, where the padding (or the final frame) starts.
        let d = ix.data_frames(old.chunk_size());
        let mut k = d;
        let at_d = ix.frame_offset(d, &mut frames.inner)?;
        frames.seek_to(d, at_d)?;
        while k < n {
            let (kind, body_len) = frames.read_header()?;
            if kind != FrameKind::Signature {
                break;
            }
            frames.skip_body(body_len)?;
            k += 1;
        }
        let plain = signature_plaintext(&signature.to_blob());
        let sig_len = (plain.len() + TAG_LEN) as u32;
        // The new index's digest, from the old index with the new entry at k.
        let index_at = ix.index_at();
        let mut digest = blake3::Hasher::new();
        each_entry(&mut frames.inner, index_at, n, &fin, k, sig_len, |e| {
            digest.update(e);
            Ok(())
        })?;
        let header = Header {
            signed: true,
            ..old.clone()
        };
        let bytes = sealed_header(&header, &file_key)?;
        output.write_all(&bytes)?;
        let at_k = ix.frame_offset(k, &mut frames.inner)?;
        frames.inner.seek(SeekFrom::Start(old_header_len))?;
        let copied = io::copy(
            &mut (&mut frames.inner).take(at_k - old_header_len),
            &mut output,
        )?;
        if copied != at_k - old_header_len {
            return Err(Error::Truncated("inside the frames".into()));
        }
        let room = crate::format::frame::body_len_bounds(FrameKind::Padding, old.chunk_size());
        let mut buf = vec![0u8; FRAME_HEADER_LEN + (*room.end()).max(plain.len() + TAG_LEN)];
        buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + plain.len()].copy_from_slice(&plain);
        let len = sealer.seal_into(&mut buf, k, false, FrameKind::Signature, plain.len());
        output.write_all(&buf[..len])?;
        let mut written = copied + len as u64;
        // The padding frames, one number on.
        frames.seek_to(k, at_k)?;
        for i in k..n {
            let (_, body_len) = frames.read_header()?;
            let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
            frames.read_body(body)?;
            opener.open_padding(i, body)?;
            let len = sealer.seal_into(
                &mut buf,
                i + 1,
                false,
                FrameKind::Padding,
                body_len - TAG_LEN,
            );
            output.write_all(&buf[..len])?;
            written += len as u64;
        }
        let new_fin = FinalFrame {
            chunk_count: n + 1,
            index_digest: *digest.finalize().as_bytes(),
            ..fin.clone()
        };
        buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + FINAL_PLAIN_LEN]
            .copy_from_slice(&new_fin.encode());
        let len = sealer.seal_into(&mut buf, n + 1, true, FrameKind::Final, FINAL_PLAIN_LEN);
        output.write_all(&buf[..len])?;
        each_entry(&mut frames.inner, index_at, n, &fin, k, sig_len, |e| {
            output.write_all(e).map_err(Error::from)
        })?;
        output.write_all(&footer(n + 1))?;
        output.flush()?;
        Ok(RekeyReport {
            old_header_len,
            new_header_len: bytes.len() as u64,
            payload_len: written + len as u64 + 4 * (n + 1) + FOOTER_LEN as u64,
            stanzas: header.stanzas.len(),
        })
    }
}

/// The entries of the index of `n` frames at `index_at` (checked against `fin`'s digest), with
/// `new` inserted as entry `k`, each handed to `each` as its 4 bytes.
fn each_entry<R: Read + Seek>(
    input: &mut R,
    index_at: u64,
    n: u64,
    fin: &FinalFrame,
    k: u64,
    new: u32,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    input.seek(SeekFrom::Start(index_at))?;
    let mut i = 0u64;
    read_index(input, n, &fin.index_digest, |e| {
        if i == k {
            each(&new.to_le_bytes())?;
        }
        i += 1;
        each(&e.to_le_bytes())
    })?;
    if k == n {
        each(&new.to_le_bytes())?;
    }
    Ok(())
}
