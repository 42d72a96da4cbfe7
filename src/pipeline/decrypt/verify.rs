//! What is verified beyond each chunk's own tag: that chunks come in an order only a writer could
//! produce (full chunks, then at most one short one), that the frame lengths read match the
//! authenticated index, and, when every chunk from the first went through, the whole-plaintext
//! digest; at the end, that the final frame's counts match what was read.

use crate::error::{Error, Result};
use crate::format::{FinalFrame, FrameKind, MAX_PLAINTEXT};
use crate::hash::{ChunkHash, Digest, HashAlg};

pub(crate) struct Verifier {
    chunk_size: u64,
    /// Chunks accepted (released, or skipped by a streamed range) from the first.
    pub(crate) chunks: u64,
    /// Their plaintext bytes (a skipped chunk counted full).
    pub(crate) plaintext: u64,
    /// The last data chunk so far was skipped unopened: it may be the short last one.
    last_skipped: bool,
    /// Padding frames accepted (after every data frame, FORMAT.md §3.3).
    padding: u64,
    /// Signature frames accepted (after every data frame, before any padding, §12.2).
    signatures: u64,
    /// Markers and the end marker of a pieced file read (§14.3): frames, listed in the index.
    pub(crate) markers: u64,
    /// A pieced file: its index digest covers the piece table too, checked with the trailer.
    pieced: bool,
    /// The frame lengths read in sequence, for the index digest.
    lengths: blake3::Hasher,
    /// The whole-plaintext digest, while every chunk from the first was accepted in order.
    digest: Option<Digest>,
    /// The hash of each chunk accepted since the last restart, when a caller collects them (a
    /// range opened in pieces, FORMAT.md §11.4): the workers compute them, as for the digest.
    collected: Option<Vec<ChunkHash>>,
    /// The digest of a resumed download's kept part and the chunk it ends before
    /// ([`Verifier::prepare_resume`]), taken by the restart at that chunk.
    prepared: Option<(u64, Digest)>,
    /// The digest was resumed after a kept part: the frame lengths before it were not read.
    resumed: bool,
    alg: HashAlg,
}

impl Verifier {
    pub(crate) fn new(chunk_size: usize, alg: HashAlg) -> Self {
        Verifier {
            chunk_size: chunk_size as u64,
            chunks: 0,
            plaintext: 0,
            last_skipped: false,
            padding: 0,
            signatures: 0,
            markers: 0,
            pieced: false,
            lengths: blake3::Hasher::new(),
            digest: Some(Digest::new(alg)),
            collected: None,
            prepared: None,
            resumed: false,
            alg,
        }
    }

    /// The verifier of a pieced file (FORMAT.md §14).
    pub(crate) fn pieced(mut self, pieced: bool) -> Self {
        self.pieced = pieced;
        self
    }

    /// BLAKE3 of the frame lengths read from the first frame, for the index; `None` after a
    /// resumed start, which did not read them all.
    pub(crate) fn lengths_digest(&self) -> Option<[u8; 32]> {
        (!self.resumed).then(|| *self.lengths.finalize().as_bytes())
    }

    /// The whole-plaintext digest's algorithm.
    pub(crate) fn alg(&self) -> HashAlg {
        self.alg
    }

    /// Holds `digest`, computed over chunks `0..chunk` of a download's kept part, for the restart
    /// at `chunk` (the resumed range's first): the digest then goes on from it instead of being
    /// dropped, and is checked at the end as a whole read's is.
    pub(crate) fn prepare_resume(&mut self, chunk: u64, digest: Digest) {
        self.prepared = Some((chunk, digest));
    }

    /// The digest goes on from a kept part ([`Verifier::prepare_resume`]).
    pub(crate) fn is_resumed(&self) -> bool {
        self.resumed
    }

    /// From now on, keeps each accepted chunk's hash (cleared at every restart).
    pub(crate) fn collect_hashes(&mut self) {
        self.collected = Some(Vec::new());
    }

    /// The hashes kept since the last restart.
    pub(crate) fn take_hashes(&mut self) -> Vec<ChunkHash> {
        self.collected.take().unwrap_or_default()
    }

    /// Starts over at chunk `chunk` (after a seek); the digest is kept only from the first.
    pub(crate) fn restart(&mut self, chunk: u64) {
        self.chunks = chunk;
        self.plaintext = chunk * self.chunk_size;
        self.last_skipped = false;
        self.padding = 0;
        self.signatures = 0;
        self.markers = 0;
        self.lengths = blake3::Hasher::new();
        self.digest = (chunk == 0).then(|| Digest::new(self.alg));
        self.resumed = false;
        if let Some((at, d)) = self.prepared.take() {
            if at == chunk {
                self.digest = Some(d);
                self.resumed = at > 0;
            }
        }
        if let Some(c) = self.collected.as_mut() {
            c.clear();
        }
    }

    /// Every chunk from the first went through (the digest is being computed).
    pub(crate) fn has_digest(&self) -> bool {
        self.digest.is_some()
    }

    /// Stops computing the digest (a range that does not start at the first byte).
    pub(crate) fn drop_digest(&mut self) {
        self.digest = None;
    }

    /// The hash the workers must compute for each chunk: none once the digest is not checked
    /// and no one collects the chunks' hashes.
    pub(crate) fn chunk_hash(&self) -> HashAlg {
        if self.digest.is_some() || self.collected.is_some() {
            self.alg
        } else {
            HashAlg::None
        }
    }

    /// A data frame of `body_len` bytes was read.
    pub(crate) fn frame_read(&mut self, body_len: usize) {
        self.lengths.update(&(body_len as u32).to_le_bytes());
    }

    /// Frames accepted so far, data, signature and padding: the index of the next frame.
    pub(crate) fn frames(&self) -> u64 {
        self.chunks + self.signatures + self.padding + self.markers
    }

    /// A frame after the data was accepted, of `kind` signature or padding: signatures come
    /// first (FORMAT.md §12.2).
    pub(crate) fn trailing(&mut self, kind: FrameKind) -> Result<()> {
        match kind {
            FrameKind::Signature if self.padding > 0 => Err(Error::ChunkInvalid {
                index: self.frames(),
                what: "is a signature frame after a padding frame (signatures come first)".into(),
            }),
            FrameKind::Signature => {
                self.signatures += 1;
                Ok(())
            }
            _ => {
                self.padding += 1;
                Ok(())
            }
        }
    }

    /// A streamed range read past a data frame without opening it: a full chunk, unless it
    /// was the last (see [`Verifier::check_end`]).
    pub(crate) fn skipped(&mut self) {
        self.chunks += 1;
        self.plaintext += self.chunk_size;
        self.last_skipped = true;
    }

    /// Checks chunk `index`, the next in order, whose plaintext is `bytes` and whose hash the
    /// worker computed; `want` is its length by the index, when one is loaded.
    pub(crate) fn accept(
        &mut self,
        index: u64,
        bytes: &[u8],
        hash: &ChunkHash,
        want: Option<u64>,
    ) -> Result<()> {
        let invalid = |what: String| Error::ChunkInvalid { index, what };
        debug_assert!(
            index == self.frames() || (self.pieced && index == self.chunks),
            "chunks come back in order"
        );
        if self.padding > 0 {
            return Err(invalid(
                "follows a padding frame (padding ends a file)".into(),
            ));
        }
        if self.signatures > 0 {
            return Err(invalid(
                "follows a signature frame (signatures follow the data)".into(),
            ));
        }
        let len = bytes.len() as u64;
        if let Some(want) = want.filter(|&w| w != len) {
            return Err(invalid(format!("holds {len} bytes, the index says {want}")));
        }
        if self.plaintext < self.chunks * self.chunk_size {
            return Err(invalid(
                "follows a short chunk (only the last chunk may be short)".into(),
            ));
        }
        if self.plaintext + len > MAX_PLAINTEXT {
            return Err(Error::Limit(
                "more than 16 TiB of plaintext in one file".into(),
            ));
        }
        if let Some(d) = self.digest.as_mut() {
            d.push(bytes, hash);
        }
        if let Some(c) = self.collected.as_mut() {
            c.push(*hash);
        }
        self.chunks += 1;
        self.plaintext += len;
        self.last_skipped = false;
        Ok(())
    }

    /// At the final frame of a sequential read: its counts against what was read, and the frame
    /// lengths read against the authenticated index digest. When the last data chunk was skipped
    /// unopened (a streamed range that starts past the end), its length is unknown: the final
    /// frame's must then end inside it, and becomes the plaintext length.
    pub(crate) fn check_end(&mut self, fin: &FinalFrame) -> Result<()> {
        let len_ok = match self.last_skipped {
            true => {
                (self.plaintext - self.chunk_size + 1..=self.plaintext).contains(&fin.plaintext_len)
            }
            false => fin.plaintext_len == self.plaintext,
        };
        if fin.chunk_count != self.frames() || !len_ok {
            return Err(Error::Damaged(format!(
                "the final frame records {} bytes in {} chunks, but {} bytes in {} chunks were read",
                fin.plaintext_len,
                fin.chunk_count,
                self.plaintext,
                self.frames()
            )));
        }
        // A resumed read hashed the lengths of the frames it read only; each was placed by the
        // authenticated index all the same.
        if !self.resumed && !self.pieced && *self.lengths.finalize().as_bytes() != fin.index_digest
        {
            return Err(Error::Damaged(
                "the frame lengths do not match the authenticated index".into(),
            ));
        }
        self.plaintext = fin.plaintext_len;
        Ok(())
    }

    /// After the last chunk: the whole-plaintext digest against the final frame's. True when
    /// it was checked (every chunk from the first went through), false when it could not be.
    pub(crate) fn check_digest(&mut self, fin: &FinalFrame) -> Result<bool> {
        match self.digest.take().map(|d| d.finish() == fin.digest) {
            Some(false) => Err(Error::DigestMismatch),
            Some(true) => Ok(true),
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workers hash a chunk only while the whole-plaintext digest is being computed: a range
    /// that skips the start drops it, and from then on the chunks cost no hashing. (The output
    /// would be the same either way; this is the work saved, found by cargo-mutants.)
    #[test]
    fn chunks_are_hashed_only_while_the_digest_is_computed() {
        for alg in [HashAlg::Blake3, HashAlg::Xxh3] {
            let mut v = Verifier::new(1024, alg);
            assert_eq!(v.chunk_hash(), alg);
            v.drop_digest();
            assert_eq!(v.chunk_hash(), HashAlg::None);
        }
        assert_eq!(
            Verifier::new(1024, HashAlg::None).chunk_hash(),
            HashAlg::None
        );
    }

    /// The 16 TiB bound (FORMAT.md §7) at its edge: a stream may reach it exactly, not pass it.
    /// Files that large are out of reach of a test, so the count is set just below it.
    #[test]
    fn plaintext_stops_at_the_format_limit() {
        let c = 1024u64;
        let mut v = Verifier::new(c as usize, HashAlg::None);
        v.chunks = MAX_PLAINTEXT / c - 1;
        v.plaintext = v.chunks * c;
        let none = ChunkHash::default();
        v.accept(v.chunks, &[0; 1024], &none, None).unwrap();
        assert_eq!(v.plaintext, MAX_PLAINTEXT);
        let e = v.accept(v.chunks, &[0], &none, None).unwrap_err();
        assert!(matches!(e, Error::Limit(_)), "{e}");
    }
}
