//! One container opened in pieces by many processes (FORMAT.md §11.4; `zseal.dask.verify` and
//! `decrypt`): the coordinator unwraps the file key once and hands each task an [`OpenKey`] (the
//! payload key and the header it belongs to, never the file key); a task opens its range of
//! whole chunks with [`open_range`], which authenticates every frame it reads and the index and
//! final frame against which it places them, and returns each chunk's BLAKE3 chaining value;
//! the coordinator merges those into the whole-plaintext digest and compares it with the final
//! frame's ([`merged_digest`]).

use std::io::{Read, Seek, Write};

use zeroize::Zeroizing;

use super::super::options::DecryptOptions;
use super::{Decryptor, Locked};
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::format::FinalFrame;
use crate::hash::{self, ChunkHash, Digest, HashAlg};

/// What a task needs to open one container's frames: the payload key, and a digest of the
/// header it was derived under (the task reads the header again and must find the same bytes).
/// With it a worker opens this file's frames; it cannot unwrap or rewrap the file key or forge
/// the header. Its `Debug` shows no key.
#[derive(Clone)]
pub struct OpenKey {
    header_digest: [u8; 32],
    payload_key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for OpenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenKey").finish_non_exhaustive()
    }
}

const OPEN_KEY_MAGIC: &[u8; 8] = b"zsOPEN\x00\x01";
const OPEN_KEY_LEN: usize = OPEN_KEY_MAGIC.len() + 64;

impl OpenKey {
    /// The key as bytes, to hand to a task in another process (wiped when dropped).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut b = Zeroizing::new(Vec::with_capacity(OPEN_KEY_LEN));
        b.extend_from_slice(OPEN_KEY_MAGIC);
        b.extend_from_slice(&self.header_digest);
        b.extend_from_slice(&*self.payload_key);
        b
    }

    /// A key from [`OpenKey::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let bad = || Error::InvalidOption("not a zseal open key".into());
        let rest = b.strip_prefix(OPEN_KEY_MAGIC.as_slice()).ok_or_else(bad)?;
        if rest.len() != 64 {
            return Err(bad());
        }
        let mut payload_key = Zeroizing::new([0u8; 32]);
        payload_key.copy_from_slice(&rest[32..]);
        Ok(OpenKey {
            header_digest: rest[..32].try_into().map_err(|_| bad())?,
            payload_key,
        })
    }
}

impl<R: Read> Locked<R> {
    /// The key a task opens this container's frames with ([`Locked::unlock_with_key`]): the
    /// file key is unwrapped by the first identity that opens a stanza and the header MAC
    /// verified, as [`Locked::unlock`] does.
    pub fn open_key(&self, identities: &[&dyn Identity]) -> Result<OpenKey> {
        let file_key = self.file_key(identities)?;
        let payload = file_key.payload_key(&self.header().payload_salt);
        Ok(OpenKey {
            header_digest: self.header_digest(),
            payload_key: Zeroizing::new(payload.0),
        })
    }

    /// The decrypting stream under `key`, when this header is the one the key was made for
    /// (byte for byte, MAC included); a different header fails as "the container changed".
    pub fn unlock_with_key(self, key: &OpenKey, opts: &DecryptOptions) -> Result<Decryptor<R>> {
        if self.header_digest() != key.header_digest {
            return Err(Error::InvalidHeader(
                "the header is not the one the open key was made for: the container changed \
                 since the job started"
                    .into(),
            ));
        }
        Ok(self.into_decryptor(&key.payload_key, opts))
    }
}

/// What a task returns: where its range starts, its plaintext length, and each chunk's BLAKE3
/// chaining value (chunk 0 also its root hash). No secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenedRange {
    /// Number of the range's first chunk.
    pub first_chunk: u64,
    /// Plaintext bytes opened.
    pub plaintext_len: u64,
    /// Each chunk's chaining value (empty unless the container's digest is BLAKE3).
    pub chaining_values: Vec<[u8; 32]>,
    /// Chunk 0's root hash, for a range that starts there.
    pub root_if_alone: Option<[u8; 32]>,
}

const OPENED_MAGIC: &[u8; 8] = b"zsOPENED";

impl OpenedRange {
    /// As bytes, for a task in another process to return.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + 32 * self.chaining_values.len());
        b.extend_from_slice(OPENED_MAGIC);
        b.extend_from_slice(&self.first_chunk.to_le_bytes());
        b.extend_from_slice(&self.plaintext_len.to_le_bytes());
        b.extend_from_slice(&self.root_if_alone.unwrap_or([0; 32]));
        b.push(u8::from(self.root_if_alone.is_some()));
        for cv in &self.chaining_values {
            b.extend_from_slice(cv);
        }
        b
    }

    /// A range from [`OpenedRange::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let bad = || Error::InvalidOption("not a zseal opened range".into());
        let r = b.strip_prefix(OPENED_MAGIC.as_slice()).ok_or_else(bad)?;
        if r.len() < 49 || (r.len() - 49) % 32 != 0 {
            return Err(bad());
        }
        let u = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap_or_default());
        let root: [u8; 32] = r[16..48].try_into().map_err(|_| bad())?;
        Ok(OpenedRange {
            first_chunk: u(0),
            plaintext_len: u(8),
            root_if_alone: match r[48] {
                0 => None,
                1 => Some(root),
                _ => return Err(bad()),
            },
            chaining_values: r[49..]
                .chunks_exact(32)
                .map(|c| c.try_into().unwrap_or_default())
                .collect(),
        })
    }
}

/// Opens plaintext bytes `start..end` of the container `dec` was opened on into `w` (a task's
/// work): `start` must be a multiple of the chunk size and `end` too unless it is the end of
/// the plaintext. Every frame read is authenticated, and placed by the index the final frame
/// authenticates; on failure nothing unauthenticated has reached `w`. Returns the range's
/// chunk hashes (BLAKE3 containers; others return none).
pub fn open_range<R: Read + Seek, W: Write>(
    dec: &mut Decryptor<R>,
    start: u64,
    end: u64,
    mut w: W,
) -> Result<(W, OpenedRange)> {
    let c = dec.header().chunk_size() as u64;
    let len = dec.plaintext_len()?;
    if !start.is_multiple_of(c)
        || (!end.is_multiple_of(c) && end != len)
        || start > end
        || end > len
    {
        return Err(Error::InvalidOption(format!(
            "the range {start}..{end} is not whole chunks of {c} bytes within the plaintext's \
             {len}"
        )));
    }
    // The workers hash each chunk as they open it; the verifier keeps the hashes in order.
    dec.source.verifier.collect_hashes();
    let n = if start < end {
        dec.copy_range_to(start, Some(end), &mut w)?
    } else {
        0
    };
    let hashes = dec.source.verifier.take_hashes();
    Ok((
        w,
        OpenedRange {
            first_chunk: start / c,
            plaintext_len: n,
            root_if_alone: hashes.first().and_then(|h| h.root_if_alone()),
            chaining_values: hashes.iter().filter_map(|h| h.cv()).collect(),
        },
    ))
}

/// The whole-plaintext digest merged from the tasks' ranges (in order), checked against the
/// final frame's: its hex (`b3sum`'s), `None` for a container without a BLAKE3 digest (an XXH3
/// digest cannot be merged: its frames and index are still all authenticated), or an error when
/// the ranges do not cover the plaintext or the digest differs.
pub fn merged_digest(
    alg: HashAlg,
    fin: &FinalFrame,
    chunk_size: usize,
    ranges: &[OpenedRange],
) -> Result<Option<String>> {
    let c = chunk_size as u64;
    let mut at = 0u64;
    let mut chunks = 0u64;
    let merges = alg.merges_chunks();
    let mut digest = Digest::new(if merges { alg } else { HashAlg::None });
    for (k, r) in ranges.iter().enumerate() {
        let n = r.plaintext_len.div_ceil(c);
        let cvs_ok = !merges || r.chaining_values.len() as u64 == n;
        if r.first_chunk != chunks || at != r.first_chunk * c || !cvs_ok {
            return Err(Error::InvalidOption(format!(
                "opened range {k} (from chunk {}, {} bytes) does not follow the ranges before it",
                r.first_chunk, r.plaintext_len
            )));
        }
        for cv in &r.chaining_values {
            let root = (chunks == 0).then_some(r.root_if_alone).flatten();
            digest.push(&[], &ChunkHash::from_parts(*cv, root));
            chunks += 1;
        }
        if !merges {
            chunks += n;
        }
        at += r.plaintext_len;
    }
    if at != fin.plaintext_len {
        return Err(Error::InvalidOption(format!(
            "the opened ranges hold {at} bytes of the plaintext's {}",
            fin.plaintext_len
        )));
    }
    if !merges {
        return Ok(None);
    }
    let got = digest.finish();
    if got != fin.digest {
        return Err(Error::DigestMismatch);
    }
    Ok(Some(hash::to_hex(alg, &got)))
}

/// The container bytes `[from, to)` that [`open_range`] of plaintext `start..end` reads (`to`
/// is `u64::MAX` for a range that reaches the end: the trailer is read too), for a source that
/// fetches what it is told it will read ([`crate::remote::RemoteReader::plan_span`]), and the
/// source itself.
pub fn stored_span<R: Read + Seek>(
    dec: &mut Decryptor<R>,
    start: u64,
    end: u64,
) -> Result<((u64, u64), &mut R)> {
    let span = dec.source.stored_span(start, end)?;
    Ok((span, &mut dec.source.frames.inner))
}

/// The final frame of the container `dec` reads (read with the index, authenticated).
pub fn final_frame<R: Read + Seek>(dec: &mut Decryptor<R>) -> Result<FinalFrame> {
    Ok(dec.source.load_index()?.fin.clone())
}
