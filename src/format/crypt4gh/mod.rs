//! Crypt4GH files (the GA4GH File Encryption Standard v1), as docs/FORMAT.md §13 specifies them:
//! the [`header`] and its packets (§13.1–13.2), the packets' plaintexts ([`packet`], §13.3),
//! the data [`segment`]s (§13.4), their offsets ([`layout`], §13.4) and [`edit`] lists (§13.5).
//!
//! Everything here is pure: bytes and keys in, bytes or plaintext out. The driving loop (reading
//! the input, opening segments on workers, releasing in order) is the engine's; what it calls is:
//!
//! - header in: [`header::Header::read`], then [`header::Header::open`] with the reader's keys
//!   (data keys and edit list), then [`layout::Layout::new`] with the file's length and
//!   [`layout::Layout::pieces`] for the segments a range needs and what of each to keep;
//! - per segment: [`segment::SegmentOpener::open`] (segment `i`'s stored bytes → its plaintext);
//! - header out: [`header::seal_header`] and [`header::Header::to_bytes`];
//! - per segment: [`segment::SegmentSealer::seal`];
//! - rekey: [`rekey::rekey_header`] (the segments are copied unchanged, §13.9).
//!
//! Keys (crypt4gh key files, OpenSSH ed25519 and age X25519 keys) are `crate::crypto::c4gh`.

pub mod describe;
pub mod edit;
pub mod header;
pub mod layout;
pub mod packet;
pub mod rekey;
pub mod segment;

pub use edit::EditList;
pub use header::{seal_header, Header, Opened, Packet};
pub use layout::{Layout, Piece};
pub use segment::{DataKey, SegmentOpener, SegmentSealer};

/// The file's first 8 bytes (§13.1).
pub const MAGIC: [u8; 8] = *b"crypt4gh";
/// The only version there is.
pub const VERSION: u32 = 1;
/// Plaintext bytes in every segment but the last (§13.4).
pub const SEGMENT_LEN: usize = 65_536;
/// Nonce and MAC around each segment's ciphertext.
pub const SEGMENT_OVERHEAD: usize = 28;
/// Stored bytes of a full segment.
pub const SEALED_SEGMENT_LEN: usize = SEGMENT_LEN + SEGMENT_OVERHEAD;
/// Most header packets read or written (§13.11).
pub const MAX_PACKETS: u32 = 1024;
/// Largest header read or written (§13.11).
pub const MAX_HEADER_LEN: u64 = 1 << 20;
/// Most distinct data keys a reader accepts (§13.11).
pub const MAX_DATA_KEYS: usize = 16;
/// Most lengths in an edit list (§13.11).
pub const MAX_EDIT_LENGTHS: u32 = 65_536;

/// True when `first` (a file's first bytes, at least 8) starts with the crypt4gh magic.
pub fn is_crypt4gh(first: &[u8]) -> bool {
    first.starts_with(&MAGIC)
}
