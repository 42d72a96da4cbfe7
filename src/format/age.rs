//! age v1 files (FORMAT.md §10; c2sp.org/age is the normative spec): the header as bytes, the
//! STREAM layout of the payload, and the zstd seekable-format layout zseal writes inside the
//! plaintext. Knows nothing of keys or threads.

use std::io::BufRead;

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;

use crate::error::{Error, Result};
use crate::format::MAX_HEADER_LEN;

/// The version line of an age v1 header.
pub const AGE_MAGIC: &[u8] = b"age-encryption.org/v1\n";
/// What every age version line starts with (a different version is "unsupported", not "not age").
pub const AGE_PREFIX: &[u8] = b"age-encryption.org/";
/// The first line of an ASCII-armored age file.
pub const ARMOR_BEGIN: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";
/// Plaintext bytes per STREAM chunk.
pub const CHUNK: usize = 64 * 1024;
/// The Poly1305 tag after each chunk.
pub const TAG: usize = 16;
/// Ciphertext bytes per full chunk.
pub const CHUNK_CT: usize = CHUNK + TAG;
/// The payload nonce before the first chunk (the salt of the payload key).
pub const NONCE_LEN: usize = 16;
pub use crate::crypto::passphrase::MAX_SCRYPT_WORK_FACTOR;
/// Length of the header MAC line's base64 (32 bytes, no padding).
const MAC_B64_LEN: usize = 43;

/// A parsed age header. Not authenticated: the MAC is checked by whoever has the file key.
#[derive(Debug)]
pub struct AgeHeader {
    /// The recipient stanzas, in order.
    pub stanzas: Vec<age_core::format::Stanza>,
    /// The bytes the MAC covers: the header up to and including `---`.
    pub mac_input: Vec<u8>,
    /// The header MAC.
    pub mac: [u8; 32],
    /// Length of the header in bytes (the payload nonce follows).
    pub len: u64,
}

impl AgeHeader {
    /// Reads a header from `r` up to and including its MAC line, and no further. At most
    /// [`MAX_HEADER_LEN`] bytes.
    pub fn read(r: &mut impl BufRead) -> Result<AgeHeader> {
        let mut raw = Vec::new();
        let mut line = Vec::new();
        // The version line: short, so that a file of another kind is told apart quickly.
        let n = std::io::Read::take(&mut *r, 64).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(Error::Truncated(
                "the input is empty, not a zseal or age file".into(),
            ));
        }
        if !line.starts_with(AGE_PREFIX) {
            return Err(if AGE_PREFIX.starts_with(&line) {
                Error::Truncated("in the age header".into())
            } else {
                Error::NotZseal
            });
        }
        if line.last() != Some(&b'\n') {
            return Err(Error::Truncated("in the age header".into()));
        }
        if line != AGE_MAGIC {
            return Err(if line.starts_with(AGE_PREFIX) {
                Error::InvalidHeader(format!(
                    "unsupported age version '{}': zseal reads age v1",
                    String::from_utf8_lossy(&line[AGE_PREFIX.len()..]).trim_end()
                ))
            } else {
                Error::NotZseal
            });
        }
        raw.extend_from_slice(&line);
        // Stanza lines until the MAC line. No base64 line of a body starts with '-', and a
        // stanza's first line starts with "-> ", so "---" is the first line of the MAC.
        let stanzas_at = raw.len();
        loop {
            read_line(r, &mut line, raw.len())?;
            if line.starts_with(b"---") {
                break;
            }
            raw.extend_from_slice(&line);
        }
        let stanzas = parse_stanzas(&raw[stanzas_at..])?;
        // "--- " and the canonical base64 of the MAC.
        let mac_line = line
            .strip_prefix(b"--- ")
            .and_then(|l| l.strip_suffix(b"\n"))
            .filter(|l| l.len() == MAC_B64_LEN)
            .ok_or_else(|| Error::InvalidHeader("malformed MAC line".into()))?;
        let mac: [u8; 32] = STANDARD_NO_PAD
            .decode(mac_line)
            .ok()
            .and_then(|m| m.try_into().ok())
            .ok_or_else(|| Error::InvalidHeader("the MAC is not canonical base64".into()))?;
        let len = (raw.len() + line.len()) as u64;
        raw.extend_from_slice(b"---");
        Ok(AgeHeader {
            stanzas,
            mac_input: raw,
            mac,
            len,
        })
    }

    /// True when the file is encrypted to a passphrase (an `scrypt` stanza).
    pub fn has_scrypt(&self) -> bool {
        self.stanzas.iter().any(|s| s.tag == "scrypt")
    }
}

/// True when `head`, the first bytes of a file, start as an age file does (binary or armored).
pub fn looks_like_age(head: &[u8]) -> bool {
    let trimmed = match head.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => &head[i..],
        None => return false,
    };
    let n = trimmed.len().min(AGE_PREFIX.len());
    let m = trimmed.len().min(ARMOR_BEGIN.len());
    trimmed[..n] == AGE_PREFIX[..n] || trimmed[..m] == ARMOR_BEGIN[..m]
}

/// Reads one line (through `\n`) into `line`; `so_far` header bytes were read before it.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>, so_far: usize) -> Result<()> {
    line.clear();
    let room = (MAX_HEADER_LEN - so_far.min(MAX_HEADER_LEN)) as u64;
    let n = std::io::Read::take(&mut *r, room + 1).read_until(b'\n', line)?;
    if n as u64 > room {
        return Err(Error::Limit("an age header over 1 MiB".into()));
    }
    if line.last() != Some(&b'\n') {
        return Err(Error::Truncated("in the age header".into()));
    }
    Ok(())
}

/// The stanzas of a header, parsed by age-core: each `-> tag args…` line, then its body of
/// canonical base64 wrapped at 64 columns. A header has at least one.
fn parse_stanzas(mut input: &[u8]) -> Result<Vec<age_core::format::Stanza>> {
    let mut stanzas = Vec::new();
    while !input.is_empty() {
        let (rest, s) = age_core::format::read::age_stanza(input)
            .map_err(|_| Error::InvalidHeader(format!("malformed stanza {}", stanzas.len() + 1)))?;
        stanzas.push(age_core::format::Stanza::from(s));
        input = rest;
    }
    if stanzas.is_empty() {
        return Err(Error::InvalidHeader("an age header without stanzas".into()));
    }
    Ok(stanzas)
}

/// Where STREAM chunk `i` starts, counted from the first byte after the payload nonce.
pub fn chunk_offset(i: u64) -> u64 {
    i * CHUNK_CT as u64
}

/// The chunk count and plaintext length of a payload of `p` bytes after the nonce, if that many
/// bytes can be a STREAM payload: at least one chunk, each at least a tag long, only the first
/// may be empty.
pub fn payload_shape(p: u64) -> Result<(u64, u64)> {
    let n = p.div_ceil(CHUNK_CT as u64).max(1);
    let last = p.saturating_sub(chunk_offset(n - 1));
    if last < TAG as u64 {
        return Err(Error::Truncated(match p {
            0 => "the age payload has no chunk".into(),
            _ => format!("age chunk {} is shorter than its tag", n - 1),
        }));
    }
    let len = (n - 1) * CHUNK as u64 + last - TAG as u64;
    if n > 1 && last == TAG as u64 {
        return Err(Error::ChunkInvalid {
            index: n - 1,
            what: "is an empty last chunk after others (age allows it only alone)".into(),
        });
    }
    Ok((n, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Result<AgeHeader> {
        AgeHeader::read(&mut text.as_bytes())
    }

    const MAC: &str = "--- Vn+54jqiiUCE+WZcEVY3f1sqHjlu/z1LCQ/T7Xm7qI0\n";

    #[test]
    fn a_header_parses_up_to_its_mac_line_and_no_further() {
        let text = format!("age-encryption.org/v1\n-> X25519 abc\nAAAA\n{MAC}PAYLOAD");
        let mut r = text.as_bytes();
        let h = AgeHeader::read(&mut r).unwrap();
        assert_eq!(r, b"PAYLOAD");
        assert_eq!(h.stanzas.len(), 1);
        assert_eq!(
            (h.stanzas[0].tag.as_str(), h.stanzas[0].body.len()),
            ("X25519", 3)
        );
        assert!(h.mac_input.ends_with(b"AAAA\n---"));
        assert_eq!(h.len as usize, text.len() - "PAYLOAD".len());
        assert!(!h.has_scrypt());
    }

    #[test]
    fn malformed_headers_are_refused_by_name() {
        let e = |t: &str| header(t).unwrap_err().to_string();
        assert!(e("age-encryption.org/v2\n").contains("unsupported age version 'v2'"));
        assert!(e("hello world, this is text\n").contains("not"));
        assert!(e(&format!("age-encryption.org/v1\n{MAC}")).contains("without stanzas"));
        assert!(e("age-encryption.org/v1\n-> X25519 abc\nAAAA\n").contains("truncated"));
        let bad_mac = "age-encryption.org/v1\n-> X25519 abc\nAAAA\n--- short\n";
        assert!(e(bad_mac).contains("malformed MAC line"));
        let no_body = format!("age-encryption.org/v1\n-> X25519 abc\n{MAC}");
        assert!(e(&no_body).contains("malformed stanza 1"));
    }

    #[test]
    fn payload_shapes_follow_stream_rules_at_every_edge() {
        let c = CHUNK_CT as u64;
        assert_eq!(payload_shape(16).unwrap(), (1, 0));
        assert_eq!(payload_shape(17).unwrap(), (1, 1));
        assert_eq!(payload_shape(c).unwrap(), (1, CHUNK as u64));
        assert_eq!(payload_shape(c + 17).unwrap(), (2, CHUNK as u64 + 1));
        assert!(payload_shape(0).is_err());
        assert!(payload_shape(15).is_err());
        assert!(
            payload_shape(c + 15).is_err(),
            "a second chunk shorter than a tag"
        );
        assert!(
            payload_shape(c + 16).is_err(),
            "an empty last chunk after a full one"
        );
    }
}
