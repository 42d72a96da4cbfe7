//! What a crypt4gh file says without a key (docs/FORMAT.md §13.10, `inspect`): its packets, and
//! for a file its segments and stored plaintext length; and, in words, what an unsigned v1 file
//! cannot show.

use std::io::{Read, Seek, SeekFrom};

use super::header::{Header, X25519_CHACHA20_IETF_POLY1305};
use super::layout::Layout;
use super::SEGMENT_LEN;
use crate::error::{Error, Result};

/// What `inspect` says of every unsigned crypt4gh file (FORMAT.md §13.10).
pub const UNSIGNED_CAVEAT: &str = "an unsigned crypt4gh v1 file cannot show a cut at a segment \
     boundary, dropped or reordered segments, or an added header packet: only a signature \
     proves the file whole";

/// A crypt4gh file's public description.
#[derive(Clone, Debug)]
pub struct Info {
    /// Header packets.
    pub packets: usize,
    /// Of those, packets of another method than X25519_chacha20_ietf_poly1305 (no key opens
    /// them).
    pub other_methods: usize,
    /// Header length in bytes.
    pub header_len: u64,
    /// The file's length, when the input is a file.
    pub file_len: Option<u64>,
    /// Segments, from the file's length.
    pub segments: Option<u64>,
    /// Stored plaintext length (before an edit list, which only a reader can open): what the
    /// file's bytes say, not what was written.
    pub stored_len: Option<u64>,
    /// Why the file's length is not a valid layout (cut inside a segment).
    pub problem: Option<Error>,
}

impl Info {
    /// What `header` says.
    pub(crate) fn of(header: &Header) -> Info {
        Info {
            packets: header.packets.len(),
            other_methods: header
                .packets
                .iter()
                .filter(|p| p.method != X25519_CHACHA20_IETF_POLY1305)
                .count(),
            header_len: header.len(),
            file_len: None,
            segments: None,
            stored_len: None,
            problem: None,
        }
    }

    /// One JSON object, with `"format"` first.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "format": "crypt4gh",
            "version": super::VERSION,
            "packets": self.packets,
            "packets_other_method": self.other_methods,
            "header_len": self.header_len,
            "container_len": self.file_len,
            "segments": self.segments,
            "segment_size": SEGMENT_LEN,
            "stored_plaintext_len": self.stored_len,
            "truncation_detectable": false,
            "note": UNSIGNED_CAVEAT,
            "problem": self.problem.as_ref().map(Error::to_string),
            "problem_kind": self.problem.as_ref().map(|e| e.kind().name()),
        })
    }
}

/// Describes a crypt4gh file read from a pipe (its header only).
pub fn describe_stream(mut r: impl Read) -> Result<Info> {
    Ok(Info::of(&Header::read(&mut r)?))
}

/// Describes a crypt4gh file (its header and length). A length that cuts a segment inside its
/// nonce and MAC is described all the same, with [`Info::problem`] saying so.
pub fn describe_file(mut f: impl Read + Seek) -> Result<Info> {
    f.seek(SeekFrom::Start(0))?;
    let mut info = Info::of(&Header::read(&mut f)?);
    let len = f.seek(SeekFrom::End(0))?;
    info.file_len = Some(len);
    match Layout::new(info.header_len, len) {
        Ok(l) => (info.segments, info.stored_len) = (Some(l.segments()), Some(l.stored_len())),
        Err(e) => info.problem = Some(e),
    }
    Ok(info)
}
