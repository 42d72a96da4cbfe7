//! The per-chunk work of decryption, as pure functions of the key and the frame: authenticate,
//! decrypt, decompress, hash. Shared, immutable, run on the workers; knows nothing of streams.

use crate::crypto::aead::{stream_nonce, Cipher, PayloadCipher, TAG_LEN};
use crate::error::{Error, Result};
use crate::format::frame::{frame_header, pad_class, PAD_HEADER_LEN};
use crate::format::{FinalFrame, FrameKind, Header, FINAL_BODY_LEN};
use crate::hash::{ChunkHash, HashAlg};
use crate::stats::{timed, ChunkTimes};

/// What every worker needs to open a chunk.
pub(crate) struct Opener {
    cipher: PayloadCipher,
    pub(crate) header: Header,
}

/// A data frame as read, before a worker opens it.
pub(crate) struct DataFrame {
    pub(crate) index: u64,
    pub(crate) kind: FrameKind,
    /// Room for any frame of the stream; the frame's bytes are `body[..body_len]`.
    pub(crate) body: Vec<u8>,
    pub(crate) body_len: usize,
}

/// One opened chunk, back from a worker, with the buffer it no longer needs.
pub(crate) struct Opened {
    pub(crate) index: u64,
    /// The chunk's bytes are `plain[content]` (a raw padded chunk stays where it was decrypted).
    pub(crate) plain: Vec<u8>,
    pub(crate) content: std::ops::Range<usize>,
    pub(crate) spare: Vec<u8>,
    pub(crate) hash: ChunkHash,
    pub(crate) times: ChunkTimes,
}

impl Opened {
    /// The chunk's plaintext.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.plain[self.content.clone()]
    }
}

impl Opener {
    pub(crate) fn new(header: Header, cipher: Cipher, payload_key: &[u8; 32]) -> Self {
        Opener {
            cipher: PayloadCipher::new(cipher, payload_key),
            header,
        }
    }

    pub(crate) fn chunk_size(&self) -> usize {
        self.header.chunk_size()
    }

    /// Length of every buffer of the stream: room for any frame body (a padded one included)
    /// or a chunk. Buffers are recycled at this length, so no chunk pays for zeroing memory.
    pub(crate) fn buffer_len(&self) -> usize {
        self.chunk_size() + PAD_HEADER_LEN + TAG_LEN
    }

    /// Authenticates and decrypts frame `index` in place. On failure nothing of it is released.
    pub(crate) fn open_body(
        &self,
        index: u64,
        last: bool,
        kind: FrameKind,
        body: &mut [u8],
    ) -> Result<usize> {
        let aad = frame_header(kind, body.len() as u32);
        match self.cipher.open(&stream_nonce(index, last), &aad, body) {
            Ok(len) => Ok(len),
            Err(()) if last => Err(Error::FinalAuth),
            Err(()) => Err(Error::ChunkAuth(index)),
        }
    }

    /// Opens the final frame's body as the frame after `chunks` data frames (the nonce binds the
    /// count, so a final frame moved or cut away fails here).
    pub(crate) fn open_final(&self, chunks: u64, body: &mut [u8]) -> Result<FinalFrame> {
        if body.len() != FINAL_BODY_LEN {
            return Err(Error::Damaged("final frame of the wrong size".into()));
        }
        let len = self.open_body(chunks, true, FrameKind::Final, body)?;
        FinalFrame::decode(&body[..len])
    }

    /// The content of an authenticated padded chunk (FORMAT.md §3.3) and how it is stored; the
    /// padding must be the canonical one, all zeros.
    fn unpad(&self, index: u64, p: &[u8]) -> Result<(FrameKind, std::ops::Range<usize>)> {
        let invalid = |what: &str| Error::ChunkInvalid {
            index,
            what: what.into(),
        };
        let head = p
            .get(..PAD_HEADER_LEN)
            .ok_or_else(|| invalid("padded chunk shorter than its header"))?;
        let stored = match head[0] {
            0 => FrameKind::Compressed,
            1 => FrameKind::Raw,
            _ => return Err(invalid("padded chunk with an unknown storage byte")),
        };
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let end = PAD_HEADER_LEN
            .checked_add(len)
            .filter(|&e| e <= p.len() && len > 0)
            .ok_or_else(|| invalid("padded chunk content length out of bounds"))?;
        if p.len() != pad_class(end, self.chunk_size()) || p[end..].iter().any(|&b| b != 0) {
            return Err(invalid("padding that is not its size class of zeros"));
        }
        Ok((stored, PAD_HEADER_LEN..end))
    }

    /// Authenticates padding frame `index` and checks that it holds zeros only.
    pub(crate) fn open_padding(&self, index: u64, body: &mut [u8]) -> Result<()> {
        let len = self.open_body(index, false, FrameKind::Padding, body)?;
        if body[..len].iter().any(|&b| b != 0) {
            return Err(Error::ChunkInvalid {
                index,
                what: "padding frame that is not all zeros".into(),
            });
        }
        Ok(())
    }

    /// The whole per-chunk job: authenticate, decompress (unless raw), hash with `hash`.
    pub(crate) fn open_chunk(
        &self,
        frame: DataFrame,
        hash: HashAlg,
        mut spare: Vec<u8>,
    ) -> Result<Opened> {
        let DataFrame {
            index,
            kind,
            mut body,
            body_len,
        } = frame;
        let mut times = ChunkTimes::default();
        let len = timed(&mut times.cipher, || {
            self.open_body(index, false, kind, &mut body[..body_len])
        })?;
        let (stored, content) = match kind {
            FrameKind::Padded => self.unpad(index, &body[..len])?,
            k => (k, 0..len),
        };
        let (plain, content, spare) = match stored {
            FrameKind::Raw => (body, content, spare),
            _ => {
                spare.resize(self.buffer_len(), 0);
                let out = &mut spare[..self.chunk_size()];
                let n = timed(&mut times.codec, || {
                    self.header.codec.decompress(&body[content], out)
                })
                .map_err(|what| Error::ChunkInvalid { index, what })?;
                if n == 0 {
                    return Err(Error::ChunkInvalid {
                        index,
                        what: "decompresses to nothing".into(),
                    });
                }
                (spare, 0..n, body)
            }
        };
        let hash = timed(&mut times.hash, || {
            ChunkHash::compute(hash, index, self.chunk_size(), &plain[content.clone()])
        });
        Ok(Opened {
            index,
            plain,
            content,
            spare,
            hash,
            times,
        })
    }
}
