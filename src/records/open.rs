//! Opening records: [`Opener`].

use std::collections::HashMap;
use std::sync::Arc;

use zstd::zstd_safe::{self, DCtx, DParameter, FrameFormat};

use crate::codec::Codec;
use crate::error::{Error, Result};

use super::*;

/// Opens records sealed under one key, with any of a set of dictionaries. Not `Sync`: one per
/// thread.
pub struct Opener {
    siv: Aead,
    xchacha: Aead,
    plain: DCtx<'static>,
    dictionaries: HashMap<u32, (Arc<Dictionary>, DCtx<'static>)>,
    scratch: Vec<u8>,
    aad: Vec<u8>,
}

fn magicless_dctx() -> Result<DCtx<'static>> {
    let mut d = DCtx::create();
    d.set_parameter(DParameter::Format(FrameFormat::Magicless))
        .map_err(zstd_err)?;
    Ok(d)
}

impl Opener {
    /// An opener for `key` that knows `dictionaries` (by id).
    pub fn new(key: &RecordKey, dictionaries: &[Arc<Dictionary>]) -> Result<Self> {
        let mut map = HashMap::new();
        for d in dictionaries {
            let mut dctx = magicless_dctx()?;
            dctx.load_dictionary(&d.bytes).map_err(zstd_err)?;
            if let Some((other, _)) = map.insert(d.id, (d.clone(), dctx)) {
                if other.hash != d.hash {
                    return Err(Error::InvalidOption(format!(
                        "two different dictionaries have the same id {}: give the one the \
                         records were sealed with",
                        d.id
                    )));
                }
            }
        }
        Ok(Opener {
            siv: key.aead(RecordCipher::Aes256GcmSiv),
            xchacha: key.aead(RecordCipher::XChaCha20Poly1305),
            plain: magicless_dctx()?,
            dictionaries: map,
            scratch: Vec::new(),
            aad: Vec::new(),
        })
    }

    /// Opens a record sealed with `context`; nothing is returned unless it authenticates.
    pub fn open(&mut self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.open_into(sealed, context, &mut out)?;
        Ok(out)
    }

    /// Opens many records; `contexts`: one per record, or `None` for records without one.
    pub fn open_many<R: AsRef<[u8]>, C: AsRef<[u8]>>(
        &mut self,
        sealed: &[R],
        contexts: Option<&[C]>,
    ) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(sealed.len());
        self.open_many_into(sealed, contexts, &mut out)?;
        Ok(out)
    }

    /// Opens many records, appending each to `out`; at an error, `out.len()` (less its length
    /// before) is the index of the record that failed.
    pub fn open_many_into<R: AsRef<[u8]>, C: AsRef<[u8]>>(
        &mut self,
        sealed: &[R],
        contexts: Option<&[C]>,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        check_contexts(sealed.len(), contexts)?;
        for (i, s) in sealed.iter().enumerate() {
            out.push(self.open(s.as_ref(), context_at(contexts, i))?);
        }
        Ok(())
    }

    /// Opens into `out` (cleared first). On error `out` is left empty.
    pub fn open_into(&mut self, sealed: &[u8], context: &[u8], out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let info = inspect(sealed)?;
        let header_len = info.body_offset - info.cipher.nonce_len();
        if let Some(id) = info.dictionary {
            if !self.dictionaries.contains_key(&id) {
                let mut have: Vec<u32> = self.dictionaries.keys().copied().collect();
                have.sort_unstable();
                return Err(Error::DictionaryMissing { id, have });
            }
        }
        let dict = info
            .dictionary
            .and_then(|id| self.dictionaries.get_mut(&id));
        self.aad.clear();
        self.aad.extend_from_slice(&sealed[..header_len]);
        if let Some((d, _)) = &dict {
            self.aad.extend_from_slice(&d.hash);
        }
        self.aad.extend_from_slice(context);
        // A stored record is decrypted where it is returned; a compressed one in `scratch`.
        let buf = match info.codec {
            Codec::None => &mut *out,
            _ => &mut self.scratch,
        };
        buf.clear();
        buf.extend_from_slice(&sealed[info.body_offset..]);
        let aead = match info.cipher {
            RecordCipher::Aes256GcmSiv => &self.siv,
            RecordCipher::XChaCha20Poly1305 => &self.xchacha,
        };
        let opened = aead.open(&sealed[header_len..info.body_offset], &self.aad, buf);
        let len = match opened {
            Ok(len) => len,
            Err(e) => {
                buf.clear(); // nothing unauthenticated is left behind
                return Err(e);
            }
        };
        let invalid = |what: String| Error::RecordInvalid(what);
        if info.codec == Codec::None {
            out.truncate(len);
            if len > MAX_RECORD_LEN {
                out.clear();
                return Err(invalid("a stored record over 16 MiB".into()));
            }
            return Ok(());
        }
        let payload = &self.scratch[..len];
        match info.codec {
            Codec::Lz4 => {
                let (len, block) = payload
                    .split_first_chunk::<4>()
                    .ok_or_else(|| invalid("an LZ4 payload without its length".into()))?;
                let len = u32::from_le_bytes(*len) as usize;
                if len > MAX_RECORD_LEN {
                    return Err(invalid(format!(
                        "a declared length of {len} bytes, over 16 MiB"
                    )));
                }
                out.resize(len, 0);
                match lz4_flex::block::decompress_into(block, out) {
                    Ok(n) if n == len => {}
                    _ => {
                        out.clear();
                        return Err(invalid(
                            "its LZ4 block does not decode to its length".into(),
                        ));
                    }
                }
            }
            _ => {
                let dctx = match dict {
                    Some((_, dctx)) => dctx,
                    None => &mut self.plain,
                };
                let declared = magicless_content_size(payload).map_err(invalid)?;
                out.reserve_exact(declared);
                // One frame, decoded as a stream so that where it ends is known: the payload
                // must be exactly that frame (FORMAT.md §9.1), where a one-shot decompression
                // would go on into any frame that follows.
                dctx.reset(zstd_safe::ResetDirective::SessionOnly)
                    .map_err(zstd_err)?;
                let mut input = zstd_safe::InBuffer::around(payload);
                let mut output = zstd_safe::OutBuffer::around(&mut *out);
                let r = dctx.decompress_stream(&mut output, &mut input);
                let n = output.pos();
                let failure = match r {
                    Ok(0) if n == declared && input.pos == payload.len() => None,
                    Ok(0) if n != declared => Some(format!(
                        "its zstd frame gives {n} bytes where it declares {declared}"
                    )),
                    Ok(0) => Some(format!(
                        "{} bytes follow its zstd frame",
                        payload.len() - input.pos
                    )),
                    Ok(_) => Some("its zstd frame is cut short".into()),
                    Err(code) => Some(format!(
                        "its zstd frame does not decode: {}",
                        zstd_safe::get_error_name(code)
                    )),
                };
                if let Some(why) = failure {
                    out.clear();
                    return Err(invalid(why));
                }
            }
        }
        Ok(())
    }
}

/// `Frame_Content_Size` of a magicless zstd frame: the header is parsed by libzstd, with the
/// magic number put back in front of its first bytes (a frame header is at most 18 bytes with
/// the magic).
pub(super) fn magicless_content_size(frame: &[u8]) -> std::result::Result<usize, String> {
    let mut head = [0u8; 18];
    head[..4].copy_from_slice(&ZSTD_MAGIC);
    let n = frame.len().min(14);
    head[4..4 + n].copy_from_slice(&frame[..n]);
    match zstd_safe::get_frame_content_size(&head[..4 + n]) {
        Ok(Some(size)) if size <= MAX_RECORD_LEN as u64 => Ok(size as usize),
        Ok(Some(size)) => Err(format!("a declared length of {size} bytes, over 16 MiB")),
        Ok(None) => Err("its zstd frame does not declare its length".into()),
        Err(_) => Err("its zstd frame header is invalid".into()),
    }
}
