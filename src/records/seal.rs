//! Sealing records: [`Sealer`] and its options.

use std::sync::Arc;

use zstd::zstd_safe::{self, CCtx, CParameter, FrameFormat};

use crate::codec::Codec;
use crate::error::{Error, Result};

use super::*;

/// How a [`Sealer`] seals.
#[derive(Clone, Debug)]
pub struct SealerOptions {
    /// `Codec::Zstd(level)` (default 3), `Codec::Lz4` or `Codec::None`.
    pub codec: Codec,
    /// The AEAD.
    pub cipher: RecordCipher,
    /// A dictionary for zstd (`None`: no dictionary).
    pub dictionary: Option<Arc<Dictionary>>,
}

impl Default for SealerOptions {
    fn default() -> Self {
        SealerOptions {
            codec: Codec::Zstd(3),
            cipher: RecordCipher::default(),
            dictionary: None,
        }
    }
}

/// Seals records under one key with one set of options. Not `Sync`: one per thread.
pub struct Sealer {
    aead: Aead,
    cipher: RecordCipher,
    codec: Codec,
    dictionary: Option<Arc<Dictionary>>,
    cctx: Option<CCtx<'static>>,
    pub(super) scratch: Vec<u8>,
    aad: Vec<u8>,
}

impl Sealer {
    /// A sealer for `key`.
    pub fn new(key: &RecordKey, opts: SealerOptions) -> Result<Self> {
        let cctx = match opts.codec {
            Codec::Zstd(level) => {
                opts.codec.check_level()?;
                let mut c = CCtx::create();
                for p in [
                    CParameter::CompressionLevel(level),
                    CParameter::Format(FrameFormat::Magicless),
                    CParameter::ContentSizeFlag(true),
                    CParameter::ChecksumFlag(false),
                    CParameter::DictIdFlag(false),
                ] {
                    c.set_parameter(p).map_err(zstd_err)?;
                }
                if let Some(d) = &opts.dictionary {
                    c.load_dictionary(&d.bytes).map_err(zstd_err)?;
                }
                Some(c)
            }
            Codec::Lz4 | Codec::None if opts.dictionary.is_some() => {
                return Err(Error::InvalidOption(format!(
                    "a dictionary works with zstd only, not with {}",
                    opts.codec
                )))
            }
            Codec::Lz4 | Codec::None => None,
            _ => {
                return Err(Error::InvalidOption(format!(
                    "{} is not a record codec: use zstd, lz4 or none",
                    opts.codec
                )))
            }
        };
        Ok(Sealer {
            aead: key.aead(opts.cipher),
            cipher: opts.cipher,
            codec: opts.codec,
            dictionary: opts.dictionary,
            cctx,
            scratch: Vec::new(),
            aad: Vec::new(),
        })
    }

    /// Seals one record, authenticating `context` with it (FORMAT.md §9.3).
    pub fn seal(&mut self, record: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.seal_into(record, context, &mut out)?;
        Ok(out)
    }

    /// Seals one record into `out` (cleared first), reusing its allocation.
    pub fn seal_into(&mut self, record: &[u8], context: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let mut nonce = [0u8; 24];
        let nonce = &mut nonce[..self.cipher.nonce_len()];
        fill_random(nonce)?;
        self.seal_with_nonce(record, context, nonce, out)
    }

    /// Seals many records, drawing their nonces in batches (one `getrandom` call per 256
    /// records). `contexts`: one per record, or `None` for records without a context.
    pub fn seal_many<R: AsRef<[u8]>, C: AsRef<[u8]>>(
        &mut self,
        records: &[R],
        contexts: Option<&[C]>,
    ) -> Result<Vec<Vec<u8>>> {
        check_contexts(records.len(), contexts)?;
        let n = self.cipher.nonce_len();
        let mut nonces = [0u8; 24 * NONCE_BATCH];
        let mut out = Vec::with_capacity(records.len());
        for (b, batch) in records.chunks(NONCE_BATCH).enumerate() {
            let nonces = &mut nonces[..n * batch.len()];
            fill_random(nonces)?;
            for (i, record) in batch.iter().enumerate() {
                let context = context_at(contexts, b * NONCE_BATCH + i);
                let mut sealed = Vec::new();
                self.seal_with_nonce(
                    record.as_ref(),
                    context,
                    &nonces[i * n..(i + 1) * n],
                    &mut sealed,
                )?;
                out.push(sealed);
            }
        }
        Ok(out)
    }

    /// The size this sealer's codec alone gives `record` (no overhead), even when that is larger
    /// than the record; for benchmarks that count records that would have grown.
    pub fn compressed_len(&mut self, record: &[u8]) -> Result<usize> {
        Ok(match self.compress(record)? {
            CODEC_STORED => record.len(),
            _ => self.scratch.len(),
        })
    }

    /// Compresses `record` into `scratch` with the sealer's codec; `CODEC_STORED` (scratch
    /// untouched) for codec none.
    pub(super) fn compress(&mut self, record: &[u8]) -> Result<u8> {
        if record.len() > MAX_RECORD_LEN {
            return Err(Error::Limit(format!(
                "a record of {} bytes is over the 16 MiB a sealed record holds; put data this \
                 large in a container",
                record.len()
            )));
        }
        self.scratch.clear();
        match (self.codec, &mut self.cctx) {
            (Codec::Zstd(_), Some(c)) => {
                self.scratch
                    .reserve(zstd_safe::compress_bound(record.len()));
                c.compress2(&mut self.scratch, record).map_err(zstd_err)?;
                Ok(CODEC_ZSTD)
            }
            (Codec::Lz4, _) => {
                // At most MAX_RECORD_LEN (checked above), so it fits.
                let len = record.len() as u32;
                self.scratch.extend_from_slice(&len.to_le_bytes());
                self.scratch.resize(
                    4 + lz4_flex::block::get_maximum_output_size(record.len()),
                    0,
                );
                let n = lz4_flex::block::compress_into(record, &mut self.scratch[4..])
                    .map_err(|e| Error::Codec(e.to_string()))?;
                self.scratch.truncate(4 + n);
                Ok(CODEC_LZ4)
            }
            _ => Ok(CODEC_STORED),
        }
    }

    /// Seals with a caller-chosen nonce. Only for test vectors and the fuzzer: a nonce MUST be
    /// random and fresh for every record (FORMAT.md §9.2).
    #[doc(hidden)]
    pub fn seal_with_nonce(
        &mut self,
        record: &[u8],
        context: &[u8],
        nonce: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if nonce.len() != self.cipher.nonce_len() {
            return Err(Error::Bug(format!("nonce of {} bytes", nonce.len())));
        }
        let mut codec = self.compress(record)?;
        let compressed = codec != CODEC_STORED && self.scratch.len() < record.len();
        if !compressed {
            codec = CODEC_STORED;
        }
        let dict = match (&self.dictionary, codec) {
            (Some(d), CODEC_ZSTD) => Some(d),
            _ => None,
        };
        let mut flags = codec;
        if dict.is_some() {
            flags |= FLAG_DICT;
        }
        if self.cipher == RecordCipher::XChaCha20Poly1305 {
            flags |= FLAG_XCHACHA;
        }
        let payload = if compressed {
            &self.scratch[..]
        } else {
            record
        };
        out.clear();
        // One allocation for the whole record, not one per field.
        out.reserve(6 + nonce.len() + payload.len() + TAG_LEN);
        out.push(VERSION);
        out.push(flags);
        if let Some(d) = dict {
            out.extend_from_slice(&d.id.to_le_bytes());
        }
        let header_len = out.len();
        out.extend_from_slice(nonce);
        let body = out.len();
        out.extend_from_slice(payload);
        self.aad.clear();
        self.aad.extend_from_slice(&out[..header_len]);
        if let Some(d) = dict {
            self.aad.extend_from_slice(&d.hash);
        }
        self.aad.extend_from_slice(context);
        let (head, payload) = out.split_at_mut(body);
        let tag = self.aead.seal(&head[header_len..], &self.aad, payload);
        out.extend_from_slice(&tag);
        Ok(())
    }
}
