//! The container layout of docs/FORMAT.md, section by section: [`header`] (§1), [`frame`] (§3–5);
//! the age (§10) and [`crypt4gh`] (§13) formats zseal also reads and writes.
//! This module only encodes and decodes bytes; keys and the pipeline live elsewhere.

pub mod age;
pub mod crypt4gh;
pub mod frame;
pub mod header;
pub mod piece;

pub use crate::crypto::Stanza;
pub use frame::{
    FinalFrame, FrameKind, FINAL_BODY_LEN, FINAL_FRAME_LEN, FOOTER_LEN, FRAME_HEADER_LEN,
};
pub use header::Header;

/// File magic (§1).
pub const MAGIC: [u8; 8] = *b"\x89ZSEAL\r\n";
/// End magic (§5).
pub const END_MAGIC: [u8; 8] = *b"ZSEALEND";
/// The only version this build reads and writes.
pub const VERSION: u8 = 1;
/// Smallest chunk: 1 KiB, one BLAKE3 chunk.
pub const MIN_CHUNK_LOG2: u8 = 10;
/// Largest chunk: 16 MiB.
pub const MAX_CHUNK_LOG2: u8 = 24;
/// Default chunk: 8 MiB (FORMAT.md §8 and README, "chunk size", have the measurements behind
/// the choice).
pub const DEFAULT_CHUNK_LOG2: u8 = 23;
/// Most data frames a file may have (u32 index entries).
pub const MAX_CHUNKS: u64 = u32::MAX as u64;
/// Most plaintext bytes per file (the AES-GCM data bound, §8).
pub const MAX_PLAINTEXT: u64 = 1 << 44;
/// Largest header.
pub const MAX_HEADER_LEN: usize = 1 << 20;
/// Most stanzas in a header.
pub const MAX_STANZAS: usize = 1024;
/// Largest stanza body (owned by `crypto`, which makes and reads stanzas; §1.1 states it).
pub use crate::crypto::MAX_STANZA_BODY;

/// The chunk-size rule of §7 on the header's `log2` byte: 1 KiB to 16 MiB.
pub(crate) fn chunk_log2_in_range(log2: u8) -> bool {
    (MIN_CHUNK_LOG2..=MAX_CHUNK_LOG2).contains(&log2)
}

/// `log2` of a chunk size, which must be a power of two from 1 KiB to 16 MiB (§7).
pub fn chunk_log2_of(size: usize) -> crate::Result<u8> {
    let log2 = size.trailing_zeros() as u8;
    if size.is_power_of_two() && chunk_log2_in_range(log2) {
        Ok(log2)
    } else {
        Err(crate::Error::InvalidOption(format!(
            "chunk size {size} is not a power of two from 1K to 16M (e.g. 64K, 1M, 4M)"
        )))
    }
}
