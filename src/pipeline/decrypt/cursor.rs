//! Where the reader is in the plaintext: one position, and the authenticated chunk that holds
//! it. The offset inside the chunk is derived from the position, never stored twice.

pub(crate) struct Cursor {
    /// Plaintext offset of the next byte a read returns.
    pub(crate) position: u64,
    chunk: Vec<u8>,
    len: usize,
    /// Plaintext offset of the chunk's first byte.
    start: u64,
}

impl Cursor {
    pub(crate) fn new() -> Self {
        Cursor {
            position: 0,
            chunk: Vec::new(),
            len: 0,
            start: 0,
        }
    }

    /// The bytes from the position to the end of the current chunk (empty when the position is
    /// not inside it).
    pub(crate) fn available(&self) -> &[u8] {
        let end = self.start + self.len as u64;
        if self.position < self.start || self.position >= end {
            return &[];
        }
        &self.chunk[(self.position - self.start) as usize..self.len]
    }

    pub(crate) fn advance(&mut self, n: usize) {
        self.position += n as u64;
    }

    /// Makes `chunk[..len]`, starting at plaintext offset `start`, current; returns the buffer
    /// it replaces, for reuse.
    pub(crate) fn load(&mut self, chunk: Vec<u8>, len: usize, start: u64) -> Vec<u8> {
        self.len = len;
        self.start = start;
        std::mem::replace(&mut self.chunk, chunk)
    }

    /// True when `position` is inside the current chunk: moving there needs no frame.
    pub(crate) fn holds(&self, position: u64) -> bool {
        position >= self.start && position < self.start + self.len as u64
    }

    /// Takes the current chunk out, as (buffer, length, start), leaving none; `None` when no chunk
    /// is current.
    pub(crate) fn take(&mut self) -> Option<(Vec<u8>, usize, u64)> {
        (self.len > 0).then(|| {
            let len = std::mem::take(&mut self.len);
            (std::mem::take(&mut self.chunk), len, self.start)
        })
    }

    /// Forgets the current chunk and moves to `position`.
    pub(crate) fn reset(&mut self, position: u64) {
        self.len = 0;
        self.position = position;
    }
}
