//! Where the reader is in the plaintext: one position, and the authenticated chunk that holds
//! it. The offset inside the chunk is derived from the position, never stored twice.

use std::ops::Range;

/// An authenticated chunk: its bytes are `buf[bytes]`, the plaintext from offset `start`.
pub(crate) struct Chunk {
    pub(crate) buf: Vec<u8>,
    pub(crate) bytes: Range<usize>,
    pub(crate) start: u64,
}

impl Chunk {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// True when plaintext offset `position` is in this chunk.
    pub(crate) fn holds(&self, position: u64) -> bool {
        position >= self.start && position < self.start + self.len()
    }
}

pub(crate) struct Cursor {
    /// Plaintext offset of the next byte a read returns.
    pub(crate) position: u64,
    /// The current chunk (`bytes` empty when there is none).
    chunk: Chunk,
}

impl Cursor {
    pub(crate) fn new() -> Self {
        Cursor {
            position: 0,
            chunk: Chunk {
                buf: Vec::new(),
                bytes: 0..0,
                start: 0,
            },
        }
    }

    /// The bytes from the position to the end of the current chunk (empty when the position is
    /// not inside it).
    pub(crate) fn available(&self) -> &[u8] {
        if !self.chunk.holds(self.position) {
            return &[];
        }
        let from = self.chunk.bytes.start + (self.position - self.chunk.start) as usize;
        &self.chunk.buf[from..self.chunk.bytes.end]
    }

    pub(crate) fn advance(&mut self, n: usize) {
        self.position += n as u64;
    }

    /// Makes `chunk` current; returns the buffer it replaces, for reuse.
    pub(crate) fn load(&mut self, chunk: Chunk) -> Vec<u8> {
        std::mem::replace(&mut self.chunk, chunk).buf
    }

    /// True when `position` is inside the current chunk: moving there needs no frame.
    pub(crate) fn holds(&self, position: u64) -> bool {
        self.chunk.holds(position)
    }

    /// Takes the current chunk out, leaving none; `None` when no chunk is current.
    pub(crate) fn take(&mut self) -> Option<Chunk> {
        (!self.chunk.bytes.is_empty()).then(|| {
            let buf = std::mem::take(&mut self.chunk.buf);
            Chunk {
                buf,
                bytes: std::mem::replace(&mut self.chunk.bytes, 0..0),
                start: self.chunk.start,
            }
        })
    }

    /// Forgets the current chunk and moves to `position`.
    pub(crate) fn reset(&mut self, position: u64) {
        self.chunk.bytes = 0..0;
        self.position = position;
    }
}
