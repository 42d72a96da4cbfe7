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
                Error::not_encrypted(&line)
            });
        }
        if line.last() != Some(&b'\n') {
            return Err(match line.len() {
                64 => Error::InvalidHeader("an age version line over 64 bytes".into()),
                _ => Error::Truncated("in the age header".into()),
            });
        }
        if line.ends_with(b"\r\n") {
            return Err(Error::InvalidHeader(
                "the age header has CRLF line ends (age writes LF): was the file converted as text?"
                    .into(),
            ));
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
        self.stanzas
            .iter()
            .any(|s| s.tag == crate::crypto::passphrase::SCRYPT_TAG)
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

/// The header's bytes up to and including `---` (what the MAC covers) for `stanzas`, each as
/// the age spec writes it: `-> tag args…`, then the body in canonical base64 wrapped at 64
/// columns, its last line shorter (empty when the body fills whole lines).
pub fn encode_header(stanzas: &[age_core::format::Stanza]) -> Vec<u8> {
    let mut out = AGE_MAGIC.to_vec();
    for s in stanzas {
        out.extend_from_slice(b"->");
        for word in std::iter::once(&s.tag).chain(&s.args) {
            out.push(b' ');
            out.extend_from_slice(word.as_bytes());
        }
        out.push(b'\n');
        let body = STANDARD_NO_PAD.encode(&s.body);
        let mut lines = body.as_bytes().chunks(64).peekable();
        let mut last_full = body.is_empty();
        while let Some(line) = lines.next() {
            out.extend_from_slice(line);
            out.push(b'\n');
            last_full = lines.peek().is_none() && line.len() == 64;
        }
        if last_full {
            out.push(b'\n');
        }
    }
    out.extend_from_slice(b"---");
    out
}

/// The bytes of a stanza argument that must be the canonical base64 (unpadded, as the age spec
/// writes binary arguments) of exactly `len` bytes; `None` for any other argument, so that a
/// stanza has one encoding.
pub fn base64_arg(arg: &str, len: usize) -> Option<Vec<u8>> {
    let bytes = STANDARD_NO_PAD.decode(arg).ok()?;
    // Decoding and encoding again must give the argument back.
    (bytes.len() == len && STANDARD_NO_PAD.encode(&bytes) == arg).then_some(bytes)
}

/// The MAC line's end: ` base64(mac)\n`, after the `---` of [`encode_header`].
pub fn mac_line_end(mac: &[u8; 32]) -> Vec<u8> {
    let mut out = vec![b' '];
    out.extend_from_slice(STANDARD_NO_PAD.encode(mac).as_bytes());
    out.push(b'\n');
    out
}

/// The first frame of the plaintext of a compressed age file zseal writes (FORMAT.md §10.3): a
/// zstd skippable frame (magic `0x184D2A5A`, 16 bytes) that `zstd -d` skips.
pub const SEEKABLE_MARKER: [u8; 24] = *b"\x5A\x2A\x4D\x18\x10\x00\x00\x00zseal seekable\x00\x01";
/// The skippable-frame magic of the seek table (zstd `contrib/seekable_format`).
pub const SEEK_TABLE_MAGIC: u32 = 0x184D_2A5E;
/// The seek table footer's last field.
pub const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
/// The most frames (the marker included) a seek table may list, written or read: 2^24, that is
/// 16 TiB in 1 MiB frames, and at most 400 MiB of a reader's memory (FORMAT.md §10.3).
pub const MAX_FRAMES: u32 = 1 << 24;
/// The largest frame's content: the largest chunk.
pub const MAX_FRAME: usize = 1 << 24;
/// Length of the seek table's footer: frame count, descriptor, magic.
pub const SEEK_FOOTER_LEN: usize = 9;

/// The seek table for frames of `(compressed, decompressed)` sizes (FORMAT.md §10.3): a
/// skippable frame of the entries and the footer, no checksums.
pub fn seek_table(entries: &[(u32, u32)]) -> Vec<u8> {
    let body = entries.len() * 8 + SEEK_FOOTER_LEN;
    let mut out = Vec::with_capacity(8 + body);
    out.extend_from_slice(&SEEK_TABLE_MAGIC.to_le_bytes());
    out.extend_from_slice(&(body as u32).to_le_bytes());
    for &(c, d) in entries {
        out.extend_from_slice(&c.to_le_bytes());
        out.extend_from_slice(&d.to_le_bytes());
    }
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    out
}

/// From the last [`SEEK_FOOTER_LEN`] bytes of a plaintext: the frame count and the whole seek
/// table's length (skippable frame header included), if they are a seekable-format footer
/// (with or without checksums; the reserved bits must be zero).
pub fn parse_seek_footer(f: &[u8; SEEK_FOOTER_LEN]) -> Option<(u32, u64, bool)> {
    let n = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
    let descriptor = f[4];
    let magic = u32::from_le_bytes([f[5], f[6], f[7], f[8]]);
    if magic != SEEKABLE_MAGIC || descriptor & 0x7C != 0 {
        return None;
    }
    let checksums = descriptor & 0x80 != 0;
    let entry = if checksums { 12 } else { 8 };
    Some((
        n,
        8 + u64::from(n) * entry + SEEK_FOOTER_LEN as u64,
        checksums,
    ))
}

/// The seek table's entries, from the whole table (`table`, as long as `parse_seek_footer`
/// said): `(compressed, decompressed)` per frame.
pub fn parse_seek_table(table: &[u8], n: u32, checksums: bool) -> Result<Vec<(u32, u32)>> {
    let bad = |what: &str| Error::Damaged(format!("the zstd seek table {what}"));
    let entry = if checksums { 12 } else { 8 };
    let body = table.len().checked_sub(8).ok_or_else(|| bad("is cut"))?;
    if table[..4] != SEEK_TABLE_MAGIC.to_le_bytes()
        || table[4..8] != (body as u32).to_le_bytes()
        || body != n as usize * entry + SEEK_FOOTER_LEN
    {
        return Err(bad("has a wrong frame header or size"));
    }
    let word =
        |at: usize| u32::from_le_bytes([table[at], table[at + 1], table[at + 2], table[at + 3]]);
    Ok((0..n as usize)
        .map(|i| (word(8 + i * entry), word(12 + i * entry)))
        .collect())
}

/// Largest block of a zstd frame (RFC 8878 §3.1.1.2.3).
const ZSTD_BLOCK_MAX: usize = 128 << 10;

/// Length of the zstd frame [`raw_zstd_frame`] makes of `len` bytes.
pub fn raw_zstd_frame_len(len: usize) -> usize {
    9 + 3 * len.div_ceil(ZSTD_BLOCK_MAX).max(1) + len
}

/// The headers of the raw-block frame of `len` bytes ([`raw_zstd_frame`]): the frame header,
/// then each block's 3-byte header, which goes before that block's (up to 128 KiB of) bytes.
/// A writer can then send a chunk's bytes where they are, with these between them.
pub fn raw_zstd_headers(len: usize) -> (Vec<u8>, Vec<[u8; 3]>) {
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0xA0];
    frame.extend_from_slice(&(len as u32).to_le_bytes());
    let n = len.div_ceil(ZSTD_BLOCK_MAX).max(1);
    let blocks = (0..n)
        .map(|i| {
            let size = (len - i * ZSTD_BLOCK_MAX).min(ZSTD_BLOCK_MAX);
            let h = u32::from(i + 1 == n) | ((size as u32) << 3);
            let b = h.to_le_bytes();
            [b[0], b[1], b[2]]
        })
        .collect();
    (frame, blocks)
}

/// Largest block of a raw-block frame: the bytes between two block headers.
pub const RAW_BLOCK: usize = ZSTD_BLOCK_MAX;

/// `input` as one zstd frame of raw (stored) blocks (RFC 8878): the frame zseal writes for a
/// chunk that does not compress, as fast as a copy. Single-segment, with its content size, no
/// checksum. Returns the frame's length in `out` (at least [`raw_zstd_frame_len`] long).
pub fn raw_zstd_frame(input: &[u8], out: &mut [u8]) -> usize {
    out[..4].copy_from_slice(&[0x28, 0xB5, 0x2F, 0xFD]);
    // Frame header descriptor: 4-byte content size, single segment.
    out[4] = 0xA0;
    out[5..9].copy_from_slice(&(input.len() as u32).to_le_bytes());
    let mut at = 9;
    let mut blocks = input.chunks(ZSTD_BLOCK_MAX).peekable();
    if input.is_empty() {
        out[at..at + 3].copy_from_slice(&[1, 0, 0]);
        return at + 3;
    }
    while let Some(b) = blocks.next() {
        let last = u32::from(blocks.peek().is_none());
        let h = last | ((b.len() as u32) << 3);
        out[at..at + 3].copy_from_slice(&h.to_le_bytes()[..3]);
        out[at + 3..at + 3 + b.len()].copy_from_slice(b);
        at += 3 + b.len();
    }
    at
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
    fn a_base64_argument_is_canonical_unpadded_and_of_its_length() {
        assert_eq!(base64_arg("AAEC", 3), Some(vec![0, 1, 2]));
        assert_eq!(base64_arg("AAE", 2), Some(vec![0, 1]));
        assert_eq!(base64_arg("AAEC", 4), None, "3 bytes where 4 are due");
        assert_eq!(base64_arg("AAE=", 2), None, "padded");
        assert_eq!(base64_arg("AAF", 2), None, "non-zero trailing bits");
        assert_eq!(base64_arg("AA-C", 3), None, "not the standard alphabet");
    }

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

    /// Headers zseal writes parse back to the same stanzas at every body length around a full
    /// base64 line (48 bytes), the empty body included.
    #[test]
    fn encoded_headers_parse_back() {
        for len in [0usize, 1, 32, 47, 48, 49, 95, 96, 97, 200] {
            let s = age_core::format::Stanza {
                tag: "X25519".into(),
                args: vec!["abc".into(), "d".into()],
                body: (0..len as u8).collect(),
            };
            let mut bytes = encode_header(&[s]);
            bytes.extend_from_slice(&mac_line_end(&[7; 32]));
            let h = AgeHeader::read(&mut &bytes[..]).unwrap();
            assert_eq!(h.stanzas[0].body.len(), len);
            assert_eq!(h.stanzas[0].args, ["abc", "d"]);
            assert_eq!(h.mac, [7; 32]);
            assert_eq!(h.len as usize, bytes.len());
        }
    }

    /// A raw-block frame decodes with zstd to its input, around the 128 KiB block size.
    #[test]
    fn raw_zstd_frames_decode_to_their_input() {
        for len in [
            0usize,
            1,
            ZSTD_BLOCK_MAX - 1,
            ZSTD_BLOCK_MAX,
            ZSTD_BLOCK_MAX + 1,
            1 << 20,
        ] {
            let input: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut out = vec![0u8; raw_zstd_frame_len(len)];
            let n = raw_zstd_frame(&input, &mut out);
            assert_eq!(n, out.len(), "{len}");
            assert_eq!(zstd::stream::decode_all(&out[..]).unwrap(), input, "{len}");
        }
    }

    /// The headers a writer sends between a chunk's bytes make exactly the raw-block frame.
    #[test]
    fn raw_frame_headers_interleave_to_the_frame() {
        for len in [0usize, 5, RAW_BLOCK, RAW_BLOCK + 7, 3 * RAW_BLOCK] {
            let input: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            let (frame, blocks) = raw_zstd_headers(len);
            let mut joined = frame;
            for (i, h) in blocks.iter().enumerate() {
                joined.extend_from_slice(h);
                let from = (i * RAW_BLOCK).min(len);
                joined.extend_from_slice(&input[from..(from + RAW_BLOCK).min(len)]);
            }
            let mut out = vec![0u8; raw_zstd_frame_len(len)];
            let n = raw_zstd_frame(&input, &mut out);
            assert_eq!(joined, &out[..n], "{len}");
        }
    }

    #[test]
    fn seek_tables_round_trip() {
        let entries = [(24, 0), (100, 1 << 20), (7, 5)];
        let t = seek_table(&entries);
        let foot: [u8; SEEK_FOOTER_LEN] = t[t.len() - SEEK_FOOTER_LEN..].try_into().unwrap();
        let (n, len, sums) = parse_seek_footer(&foot).unwrap();
        assert_eq!((n, len as usize, sums), (3, t.len(), false));
        assert_eq!(parse_seek_table(&t, n, sums).unwrap(), entries);
        let mut bad = foot;
        bad[4] = 0x04;
        assert!(parse_seek_footer(&bad).is_none(), "reserved bits");
        assert!(parse_seek_table(&t[1..], n, sums).is_err());
        // zstd skips the marker and the table: frames around them decode as their content.
        let mut stream = SEEKABLE_MARKER.to_vec();
        stream.extend(zstd::bulk::compress(b"hello", 3).unwrap());
        stream.extend(seek_table(&[(24, 0), (18, 5)]));
        assert_eq!(zstd::stream::decode_all(&stream[..]).unwrap(), b"hello");
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
