//! The per-chunk work of decryption, as pure functions of the key and the frame: authenticate,
//! decrypt, decompress, hash. Shared, immutable, run on the workers; knows nothing of streams.

use crate::crypto::aead::{stream_nonce, Cipher, PayloadCipher, TAG_LEN};
use crate::error::{Error, Result};
use crate::format::frame::{frame_header, pad_class, PAD_HEADER_LEN};
use crate::format::{FinalFrame, FrameKind, Header, FINAL_BODY_LEN};
use crate::hash::{ChunkHash, HashAlg};
use crate::pipeline::intake::ALIGN;
use crate::stats::{timed, ChunkTimes};

/// What every worker needs to open a chunk.
pub(crate) struct Opener {
    cipher: PayloadCipher,
    /// Shared by the openers of one file's keys (a pieced file has one a piece).
    pub(crate) header: std::sync::Arc<Header>,
}

/// A data frame as read, before a worker opens it.
pub(crate) struct DataFrame {
    pub(crate) index: u64,
    pub(crate) kind: FrameKind,
    /// Room for any frame of the stream; the frame's bytes are `body[start..start + body_len]`
    /// (`start` is 0 unless a worker read the body by offset: see
    /// [`aligned_at`](crate::pipeline::intake::aligned_at)).
    pub(crate) body: Vec<u8>,
    pub(crate) start: usize,
    pub(crate) body_len: usize,
    /// A pieced file's frame (FORMAT.md §14.2): its place in its piece. `index` is then the
    /// chunk's number in the file (where its plaintext and hash belong), and the opener the
    /// piece's.
    pub(crate) piece: Option<PieceNonce>,
}

/// Where a data frame of a pieced file stands in its piece: its number there, whether it is the
/// piece's last, and the last frame's tag the authenticated table lists, when it was read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PieceNonce {
    pub(crate) counter: u64,
    pub(crate) last: bool,
    /// The piece's id.
    pub(crate) id: [u8; 16],
    pub(crate) tag: Option<[u8; 16]>,
}

impl DataFrame {
    /// The frame's bytes.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        &mut self.body[self.start..self.start + self.body_len]
    }
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
    /// The id and last tag of the piece this chunk ends (FORMAT.md §14.3), for the check
    /// against the table.
    pub(crate) piece_end: Option<([u8; 16], [u8; 16])>,
}

/// A chunk opened straight into the caller's memory by [`Opener::open_chunk_into`].
pub(crate) struct Landed {
    /// Its plaintext length.
    pub(crate) len: usize,
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
    pub(crate) fn new(
        header: impl Into<std::sync::Arc<Header>>,
        cipher: Cipher,
        payload_key: &[u8; 32],
    ) -> Self {
        Opener {
            cipher: PayloadCipher::new(cipher, payload_key),
            header: header.into(),
        }
    }

    pub(crate) fn chunk_size(&self) -> usize {
        self.header.chunk_size()
    }

    /// Room for any frame body (a padded one included) or a chunk, placed where the kernel
    /// copies into it fastest ([`ALIGN`]): the most a buffer of the stream grows to. Buffers keep
    /// the length they grew to when recycled, so a page is zeroed once, not per chunk.
    pub(crate) fn buffer_len(&self) -> usize {
        self.chunk_size() + PAD_HEADER_LEN + TAG_LEN + ALIGN
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

    /// Authenticates signature frame `index` (FORMAT.md §12.2) and parses its SSHSIG.
    pub(crate) fn open_signature(
        &self,
        index: u64,
        body: &mut [u8],
    ) -> Result<crate::crypto::sign::Signature> {
        let len = self.open_body(index, false, FrameKind::Signature, body)?;
        let blob = crate::format::frame::signature_blob(&body[..len])?;
        crate::crypto::sign::Signature::from_blob(blob)
    }

    /// Authenticates and decrypts a data frame in place: how its chunk is stored (raw or
    /// compressed) and where in `body` that content is.
    fn open_content(
        &self,
        index: u64,
        piece: Option<PieceNonce>,
        kind: FrameKind,
        body: &mut [u8],
        times: &mut ChunkTimes,
    ) -> Result<(FrameKind, std::ops::Range<usize>)> {
        let (counter, last) = piece.map_or((index, false), |p| (p.counter, p.last));
        let len = timed(&mut times.cipher, || {
            self.open_body(counter, last, kind, body)
        })
        .map_err(|e| match (e, piece) {
            // A piece's frame is named by its chunk's number in the file, not its nonce's.
            (Error::FinalAuth | Error::ChunkAuth(_), Some(_)) => Error::ChunkAuth(index),
            (e, _) => e,
        })?;
        match kind {
            FrameKind::Padded => self.unpad(index, &body[..len]),
            k => Ok((k, 0..len)),
        }
    }

    /// Decompresses chunk `index` from `src` into `out` (room for a whole chunk).
    fn decompress(
        &self,
        index: u64,
        src: &[u8],
        out: &mut [u8],
        times: &mut ChunkTimes,
    ) -> Result<usize> {
        let n = timed(&mut times.codec, || self.header.codec.decompress(src, out))
            .map_err(|what| Error::ChunkInvalid { index, what })?;
        if n == 0 {
            return Err(Error::ChunkInvalid {
                index,
                what: "decompresses to nothing".into(),
            });
        }
        Ok(n)
    }

    fn hash(&self, alg: HashAlg, index: u64, plain: &[u8], times: &mut ChunkTimes) -> ChunkHash {
        timed(&mut times.hash, || {
            ChunkHash::compute(alg, index, self.chunk_size(), plain)
        })
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
            start,
            body_len,
            piece,
        } = frame;
        let mut times = ChunkTimes::default();
        let piece_end = last_tag_of(index, piece, &body[start..start + body_len])?;
        let (stored, content) = self.open_content(
            index,
            piece,
            kind,
            &mut body[start..start + body_len],
            &mut times,
        )?;
        let content = start + content.start..start + content.end;
        let (plain, content, spare) = match stored {
            FrameKind::Raw => (body, content, spare),
            _ => {
                if spare.len() < self.chunk_size() {
                    // A new buffer comes zeroed from the allocator (fresh pages, zeroed by the
                    // kernel when first written), not written with zeros here first.
                    spare = vec![0; self.buffer_len()];
                }
                let out = &mut spare[..self.chunk_size()];
                let n = self.decompress(index, &body[content], out, &mut times)?;
                (spare, 0..n, body)
            }
        };
        let hash = self.hash(hash, index, &plain[content.clone()], &mut times);
        Ok(Opened {
            index,
            plain,
            content,
            spare,
            hash,
            times,
            piece_end,
        })
    }

    /// The per-chunk job of a read straight into the caller's memory: the chunk is
    /// authenticated in its frame buffer, then decompressed into `out` (a whole chunk's room) or,
    /// when stored raw, copied there. Returns its length and hash; `frame.body` is left for
    /// reuse.
    pub(crate) fn open_chunk_into(
        &self,
        frame: &mut DataFrame,
        hash: HashAlg,
        out: &mut [u8],
    ) -> Result<Landed> {
        let (index, kind, piece) = (frame.index, frame.kind, frame.piece);
        let mut times = ChunkTimes::default();
        let body = frame.bytes();
        last_tag_of(index, piece, body)?;
        let too_long = || Error::ChunkInvalid {
            index,
            what: "holds more than a chunk".into(),
        };
        // Every frame is authenticated in the stream's own buffer before a byte reaches `out`:
        // the caller's memory may be watched while the read runs (another Python thread), and
        // the AEAD writes plaintext before it has checked the tag. A raw chunk pays one copy.
        let (stored, content) = self.open_content(index, piece, kind, body, &mut times)?;
        let len = match stored {
            FrameKind::Raw => {
                let len = content.len();
                let dest = out.get_mut(..len).ok_or_else(too_long)?;
                dest.copy_from_slice(&body[content]);
                len
            }
            _ => self.decompress(index, &body[content], out, &mut times)?,
        };
        let hash = self.hash(hash, index, &out[..len], &mut times);
        Ok(Landed { len, hash, times })
    }
}

/// The tag of a piece's last frame (its body's last 16 bytes, FORMAT.md §14.3), checked against
/// the authenticated table's where the reader has it; `None` for any other frame.
fn last_tag_of(
    index: u64,
    piece: Option<PieceNonce>,
    body: &[u8],
) -> Result<Option<([u8; 16], [u8; 16])>> {
    let Some(p) = piece.filter(|p| p.last) else {
        return Ok(None);
    };
    let tag: [u8; 16] = body
        .get(body.len().saturating_sub(TAG_LEN)..)
        .and_then(|t| t.try_into().ok())
        .ok_or(Error::ChunkAuth(index))?;
    match p.tag {
        Some(want) if want != tag => Err(Error::Damaged(format!(
            "chunk {index} ends its piece with another tag than the piece table lists"
        ))),
        _ => Ok(Some((p.id, tag))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;

    /// A padded chunk's plaintext (FORMAT.md §3.3): `stored || content_len || content || zeros`
    /// to `class_len` bytes.
    fn padded(stored: u8, content_len: u32, content: &[u8], class_len: usize) -> Vec<u8> {
        let mut p = vec![stored];
        p.extend_from_slice(&content_len.to_le_bytes());
        p.extend_from_slice(content);
        p.resize(class_len, 0);
        p
    }

    /// Every way an authentic padded chunk can break the canonical form is refused by name;
    /// the canonical ones give their content.
    /// A direct read never writes an unauthenticated byte into the caller's memory: a raw
    /// chunk whose tag fails leaves `out` exactly as it was (the AEAD decrypts before it
    /// checks, so the chunk is opened in the frame's own buffer first), and an authentic one
    /// lands whole.
    #[test]
    fn a_direct_read_writes_only_authenticated_bytes() {
        let header = Header {
            cipher: Cipher::Aes256Gcm,
            codec: Codec::Zstd(3),
            hash: HashAlg::Blake3,
            chunk_log2: 10,
            padded: false,
            signed: false,
            pieced: false,
            payload_salt: [0; 32],
            stanzas: Vec::new(),
        };
        let key = [3u8; 32];
        let o = Opener::new(header, Cipher::Aes256Gcm, &key);
        let plain: Vec<u8> = (0..1024u32).map(|i| (i * 7) as u8).collect();
        let mut body = plain.clone();
        let aad = frame_header(FrameKind::Raw, (plain.len() + TAG_LEN) as u32);
        let tag = PayloadCipher::new(Cipher::Aes256Gcm, &key).seal(
            &stream_nonce(4, false),
            &aad,
            &mut body,
        );
        body.extend_from_slice(&tag);
        let frame = |body: &[u8]| DataFrame {
            start: 0,
            index: 4,
            kind: FrameKind::Raw,
            body_len: body.len(),
            body: body.to_vec(),
            piece: None,
        };
        let mut tampered = body.clone();
        tampered[100] ^= 1;
        let mut out = vec![0xAA; 1024];
        assert!(matches!(
            o.open_chunk_into(&mut frame(&tampered), HashAlg::Blake3, &mut out),
            Err(Error::ChunkAuth(4))
        ));
        assert!(
            out.iter().all(|&b| b == 0xAA),
            "the caller's buffer was written"
        );
        let landed = o
            .open_chunk_into(&mut frame(&body), HashAlg::Blake3, &mut out)
            .unwrap();
        assert_eq!((landed.len, &out[..]), (1024, &plain[..]));
    }

    #[test]
    fn padded_chunks_must_be_canonical() {
        let header = Header {
            cipher: Cipher::Aes256Gcm,
            codec: Codec::Zstd(3),
            hash: HashAlg::Blake3,
            chunk_log2: 10,
            padded: true,
            signed: false,
            pieced: false,
            payload_salt: [0; 32],
            stanzas: Vec::new(),
        };
        let o = Opener::new(header, Cipher::Aes256Gcm, &[1; 32]);
        let class = |content: usize| pad_class(PAD_HEADER_LEN + content, 1024);
        let ok = |p: &[u8]| o.unpad(7, p).unwrap();
        let refused = |p: &[u8]| match o.unpad(7, p) {
            Err(Error::ChunkInvalid { index: 7, what }) => what,
            other => panic!("{other:?}"),
        };
        let abc = padded(0, 3, b"abc", class(3));
        assert_eq!(ok(&abc), (FrameKind::Compressed, 5..8));
        assert_eq!(ok(&padded(1, 3, b"abc", class(3))), (FrameKind::Raw, 5..8));
        let big = vec![9u8; 700];
        assert_eq!(
            ok(&padded(1, 700, &big, class(700))),
            (FrameKind::Raw, 5..705)
        );
        assert!(refused(&abc[..4]).contains("shorter than its header"));
        assert!(refused(&padded(2, 3, b"abc", class(3))).contains("unknown storage byte"));
        // No content, or more than the chunk holds: the length is out of bounds.
        assert!(refused(&padded(0, 0, b"", class(0))).contains("content length out of bounds"));
        let long = padded(0, class(3) as u32, b"abc", class(3));
        assert!(refused(&long).contains("content length out of bounds"));
        // The class length exactly, and zeros only.
        let not_class = padded(0, 3, b"abc", class(3) + 1);
        assert!(refused(&not_class).contains("not its size class of zeros"));
        let forty = padded(0, 40, &[b'x'; 40], class(40));
        assert_eq!(forty.len(), 48, "three bytes of padding");
        assert_eq!(ok(&forty), (FrameKind::Compressed, 5..45));
        let mut not_zero = forty.clone();
        not_zero[46] = 1;
        assert!(refused(&not_zero).contains("not its size class of zeros"));
    }
}
