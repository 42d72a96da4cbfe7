//! What follows the data frames of a container (FORMAT.md §§3.3, 12.2): the signature frames,
//! then the padding frames, each sealed and listed in the index like a data frame.

use std::io::Write;

use super::{padding_plan, ContainerSink};
use crate::crypto::aead::TAG_LEN;
use crate::crypto::sign;
use crate::error::{Error, Result};
use crate::format::frame::PAD_HEADER_LEN;
use crate::format::{self, FrameKind, FRAME_HEADER_LEN};

impl<W: Write> ContainerSink<W> {
    /// A signature frame for each signing key after the last data frame (FORMAT.md §12.2), over
    /// the statement of the plaintext's length and its BLAKE3 `digest` (§12.1).
    pub(super) fn write_signatures(&mut self, digest: &[u8; 32]) -> Result<()> {
        let statement = sign::statement_of(self.tally.plaintext_len, digest);
        let sha = sign::sha512_of(statement.as_bytes())?;
        for key in std::mem::take(&mut self.tally.sign) {
            let plain = format::frame::signature_plaintext(&key.sign_blob(&sha)?);
            let mut frame = vec![0u8; FRAME_HEADER_LEN + plain.len() + TAG_LEN];
            frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + plain.len()].copy_from_slice(&plain);
            self.write_trailing(&mut frame, FrameKind::Signature, plain.len())?;
        }
        Ok(())
    }

    /// Seals the `len` bytes after the frame header in `frame` as the next frame, of `kind`,
    /// writes it out and lists it in the index: a signature or padding frame.
    fn write_trailing(&mut self, frame: &mut [u8], kind: FrameKind, len: usize) -> Result<()> {
        let index = self.tally.chunks;
        let n = self.sealer.seal_into(frame, index, false, kind, len);
        self.state.write_out(&frame[..n])?;
        let body_len = (n - FRAME_HEADER_LEN) as u32;
        self.tally.index.extend_from_slice(&body_len.to_le_bytes());
        self.tally.chunks += 1;
        Ok(())
    }

    /// Padding frames after the last data frame, so that the whole file's length is its Padmé
    /// class (FORMAT.md §3.3). They count as frames: the final frame's index follows them.
    pub(super) fn write_padding(&mut self) -> Result<()> {
        let c = 1usize << self.sealer.chunk_log2;
        // Every frame so far, and the end after the padding: a pieced file's (FORMAT.md §14.3)
        // lists the frames before its end frames too, and has its table and longer footer.
        let (before, after) = match &self.tally.pieced {
            Some(p) => (
                p.frames,
                (format::piece::PIECED_FOOTER_LEN + p.table.len()) as u64,
            ),
            None => (0, format::FOOTER_LEN as u64),
        };
        let n = before + self.tally.chunks;
        let unpadded = self.tally.written + format::FINAL_FRAME_LEN as u64 + after + 4 * n;
        let plan = padding_plan(unpadded, c);
        if n + plan.len() as u64 > format::MAX_CHUNKS {
            return Err(Error::Limit("more than 2^32-1 frames with padding".into()));
        }
        let mut frame = vec![0u8; FRAME_HEADER_LEN + c + PAD_HEADER_LEN + TAG_LEN];
        for x in plan {
            frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + x].fill(0);
            self.write_trailing(&mut frame, FrameKind::Padding, x)?;
        }
        Ok(())
    }
}
