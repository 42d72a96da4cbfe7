//! The header (FORMAT.md §1): fixed fields, key stanzas, header MAC.

use std::io::Read;

use super::{MAGIC, MAX_HEADER_LEN, MAX_STANZAS, MAX_STANZA_BODY, VERSION};
use crate::codec::Codec;
use crate::crypto::aead::Cipher;
use crate::crypto::Stanza;
use crate::error::{Error, Result};
use crate::hash::HashAlg;

/// Length of the fixed part before the stanzas.
pub const FIXED_LEN: usize = 50;
/// Length of the header MAC.
pub const MAC_LEN: usize = 32;
/// Length of the payload salt.
pub const SALT_LEN: usize = 32;
/// Flag bit of a padded file (FORMAT.md §1, §3.3).
pub const FLAG_PADDED: u8 = 0x01;
/// Flag bit of a signed file: signature frames follow the data (FORMAT.md §1, §12.2).
pub const FLAG_SIGNED: u8 = 0x02;
/// Flag bit of a pieced file: runs of frames sealed apart under keys of their own (FORMAT.md
/// §14).
pub const FLAG_PIECED: u8 = 0x04;

/// Every header field but the MAC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Payload cipher.
    pub cipher: Cipher,
    /// Chunk codec.
    pub codec: Codec,
    /// Whole-plaintext hash.
    pub hash: HashAlg,
    /// `log2` of the chunk size.
    pub chunk_log2: u8,
    /// Padded file (FORMAT.md §3.3): chunk and file lengths fall into size classes.
    pub padded: bool,
    /// Signed file (FORMAT.md §12.2): signature frames follow the data frames.
    pub signed: bool,
    /// Pieced file (FORMAT.md §14): markers, pieces under keys of their own, an end marker.
    pub pieced: bool,
    /// Random salt of the payload key.
    pub payload_salt: [u8; SALT_LEN],
    /// Key stanzas.
    pub stanzas: Vec<Stanza>,
}

impl Header {
    /// Chunk size in bytes.
    pub fn chunk_size(&self) -> usize {
        1 << self.chunk_log2
    }

    /// The header bytes that the MAC covers (everything but the MAC).
    pub fn encode_unauthenticated(&self) -> Result<Vec<u8>> {
        check_chunk_log2(self.chunk_log2)?;
        if self.stanzas.is_empty() || self.stanzas.len() > MAX_STANZAS {
            return Err(Error::Limit(format!(
                "{} key stanzas (a file has 1..={MAX_STANZAS})",
                self.stanzas.len()
            )));
        }
        let mut b = Vec::with_capacity(FIXED_LEN + 128);
        b.extend_from_slice(&MAGIC);
        b.push(VERSION);
        b.push(self.cipher.id());
        b.push(self.codec.id());
        b.push(self.codec.level_byte() as u8);
        b.push(self.hash.id());
        b.push(self.chunk_log2);
        let flags = if self.padded { FLAG_PADDED } else { 0 }
            | if self.signed { FLAG_SIGNED } else { 0 }
            | if self.pieced { FLAG_PIECED } else { 0 };
        b.extend_from_slice(&[flags, 0]);
        b.extend_from_slice(&self.payload_salt);
        b.extend_from_slice(&(self.stanzas.len() as u16).to_le_bytes());
        for s in &self.stanzas {
            if s.body.len() > MAX_STANZA_BODY {
                return Err(Error::Limit(format!(
                    "stanza body of {} bytes",
                    s.body.len()
                )));
            }
            b.push(s.kind);
            b.extend_from_slice(&(s.body.len() as u16).to_le_bytes());
            b.extend_from_slice(&s.body);
        }
        if b.len() + MAC_LEN > MAX_HEADER_LEN {
            return Err(Error::Limit(
                "header over 1 MiB: too many recipients".into(),
            ));
        }
        Ok(b)
    }

    /// Reads a header from `r`. Returns the header, the bytes the MAC covers, and the MAC, which
    /// the caller verifies once it holds the file key.
    pub fn read(r: &mut impl Read) -> Result<(Header, Vec<u8>, [u8; MAC_LEN])> {
        Self::read_after(&[], r)
    }

    /// As [`Header::read`], when the first bytes, `head` (at most the magic's length), were
    /// already read from `r` (to tell the formats apart).
    pub fn read_after(head: &[u8], r: &mut impl Read) -> Result<(Header, Vec<u8>, [u8; MAC_LEN])> {
        let mut raw = vec![0u8; FIXED_LEN];
        raw[..head.len()].copy_from_slice(head);
        read_header_bytes(r, &mut raw[head.len()..], head.is_empty())?;
        if raw[..8] != MAGIC {
            return Err(Error::not_encrypted(&raw));
        }
        if raw[8] != VERSION {
            return Err(Error::UnsupportedVersion(raw[8]));
        }
        let cipher = Cipher::from_id(raw[9])?;
        let codec = Codec::from_header(raw[10], raw[11] as i8)?;
        let pieced_flag = raw[14] & FLAG_PIECED != 0;
        if pieced_flag && raw[12] == 3 {
            return Err(Error::InvalidHeader(
                "hash 03, BLAKE3 of pieces (FORMAT.md §14.5: a file whose pieces end between \
                 chunks, as a gateway's do), is read by a later zseal"
                    .into(),
            ));
        }
        let hash = HashAlg::from_id(raw[12])?;
        if pieced_flag && hash == HashAlg::Xxh3 {
            return Err(Error::InvalidHeader(
                "a pieced file with an XXH3 digest, which cannot be merged from pieces \
                 (FORMAT.md §14.5)"
                    .into(),
            ));
        }
        let chunk_log2 = raw[13];
        check_chunk_log2(chunk_log2)?;
        if raw[14] & !(FLAG_PADDED | FLAG_SIGNED | FLAG_PIECED) != 0 {
            return Err(Error::InvalidHeader(format!(
                "unknown flags {:#04x} (a newer zseal's file?)",
                raw[14]
            )));
        }
        if raw[15] != 0 {
            return Err(Error::InvalidHeader("the reserved byte is not zero".into()));
        }
        let padded = raw[14] & FLAG_PADDED != 0;
        let signed = raw[14] & FLAG_SIGNED != 0;
        let pieced = raw[14] & FLAG_PIECED != 0;
        let mut payload_salt = [0u8; SALT_LEN];
        payload_salt.copy_from_slice(&raw[16..48]);
        let count = u16::from_le_bytes([raw[48], raw[49]]) as usize;
        if count == 0 || count > MAX_STANZAS {
            return Err(Error::InvalidHeader(format!(
                "{count} key stanzas (a file has 1..={MAX_STANZAS})"
            )));
        }
        let mut stanzas = Vec::with_capacity(count);
        for _ in 0..count {
            let at = raw.len();
            raw.resize(at + 3, 0);
            read_header_bytes(r, &mut raw[at..], false)?;
            let len = u16::from_le_bytes([raw[at + 1], raw[at + 2]]) as usize;
            if len > MAX_STANZA_BODY || raw.len() + len + MAC_LEN > MAX_HEADER_LEN {
                return Err(Error::InvalidHeader(format!(
                    "stanza of {len} bytes is over the limit"
                )));
            }
            raw.resize(at + 3 + len, 0);
            read_header_bytes(r, &mut raw[at + 3..], false)?;
            stanzas.push(Stanza {
                kind: raw[at],
                body: raw[at + 3..].to_vec(),
            });
        }
        let mut mac = [0u8; MAC_LEN];
        read_header_bytes(r, &mut mac, false)?;
        let header = Header {
            cipher,
            codec,
            hash,
            chunk_log2,
            padded,
            signed,
            pieced,
            payload_salt,
            stanzas,
        };
        Ok((header, raw, mac))
    }
}

fn check_chunk_log2(log2: u8) -> Result<()> {
    if super::chunk_log2_in_range(log2) {
        Ok(())
    } else {
        Err(Error::InvalidHeader(format!(
            "chunk size 2^{log2} outside 1 KiB..16 MiB"
        )))
    }
}

/// `read_exact` that reports a short read as a truncated header (or, at the very start, as an
/// input that is too short to be a zseal file).
fn read_header_bytes(r: &mut impl Read, buf: &mut [u8], at_start: bool) -> Result<()> {
    let n = crate::io::read_full(r, buf)?;
    // A short start that matches the magic so far is a cut zseal file, not another format.
    let m = n.min(MAGIC.len());
    match n {
        n if n == buf.len() => Ok(()),
        0 if at_start => Err(Error::Truncated(
            "the input is empty, not a zseal or age file".into(),
        )),
        _ if at_start && buf[..m] != MAGIC[..m] => Err(Error::not_encrypted(&buf[..n])),
        _ => Err(Error::Truncated("in the header".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(stanzas: Vec<Stanza>) -> Header {
        Header {
            cipher: Cipher::Aes256Gcm,
            codec: Codec::Lz4,
            hash: HashAlg::Blake3,
            chunk_log2: 20,
            padded: true,
            signed: false,
            pieced: false,
            payload_salt: [7; SALT_LEN],
            stanzas,
        }
    }

    fn stanza(body: usize) -> Stanza {
        Stanza {
            kind: 1,
            body: vec![9; body],
        }
    }

    /// The writer keeps the limits the reader enforces (FORMAT.md §1), each at its edge: 1 to
    /// 1,024 stanzas, bodies of at most 8,192 bytes, and 1 MiB for the whole header with its
    /// MAC. A header at every limit at once reads back as written.
    #[test]
    fn the_writer_keeps_the_header_limits_at_their_edges() {
        assert!(
            header(vec![]).encode_unauthenticated().is_err(),
            "no stanza"
        );
        assert!(header(vec![stanza(1); 1024])
            .encode_unauthenticated()
            .is_ok());
        assert!(header(vec![stanza(1); 1025])
            .encode_unauthenticated()
            .is_err());
        assert!(header(vec![stanza(8192)]).encode_unauthenticated().is_ok());
        assert!(header(vec![stanza(8193)]).encode_unauthenticated().is_err());
        // 127 full stanzas (3 + 8,192 bytes each) and one that fills the header to 1 MiB.
        let room = MAX_HEADER_LEN - MAC_LEN - FIXED_LEN - 127 * (3 + 8192) - 3;
        let mut full = vec![stanza(8192); 127];
        full.push(stanza(room));
        let h = header(full.clone());
        let raw = h.encode_unauthenticated().unwrap();
        assert_eq!(raw.len() + MAC_LEN, MAX_HEADER_LEN);
        assert_eq!(raw[14], FLAG_PADDED, "the flags byte");
        let mut file = raw.clone();
        file.extend_from_slice(&[3; MAC_LEN]);
        let (back, back_raw, mac) = Header::read(&mut &file[..]).unwrap();
        assert_eq!((back, back_raw, mac), (h, raw, [3; MAC_LEN]));
        full.last_mut().unwrap().body.push(0);
        assert!(header(full).encode_unauthenticated().is_err(), "1 MiB + 1");

        // The reader, on the same edges, with a header written by hand.
        let refused = |bytes: &[u8], what: &str| {
            let e = Header::read(&mut &bytes[..]).unwrap_err();
            assert!(matches!(e, Error::InvalidHeader(_)), "{what}: {e}");
        };
        let mut one_more = file.clone();
        let last = MAX_HEADER_LEN - MAC_LEN - room - 3;
        one_more[last + 1..last + 3].copy_from_slice(&(room as u16 + 1).to_le_bytes());
        one_more.insert(last + 3, 0);
        refused(&one_more, "1 MiB + 1");
        let small = header(vec![stanza(4)]).encode_unauthenticated().unwrap();
        let with_count = |n: u16| {
            let mut b = small.clone();
            b[48..50].copy_from_slice(&n.to_le_bytes());
            b.extend(std::iter::repeat_n([1u8, 0, 0], n as usize).flatten());
            b.extend_from_slice(&[0; MAC_LEN]);
            b
        };
        refused(&with_count(0)[..FIXED_LEN + MAC_LEN], "no stanza");
        refused(&with_count(1025), "1,025 stanzas");
        assert_eq!(
            Header::read(&mut &with_count(1024)[..])
                .unwrap()
                .0
                .stanzas
                .len(),
            1024
        );
        let mut long = small.clone();
        long[FIXED_LEN + 1..FIXED_LEN + 3].copy_from_slice(&8193u16.to_le_bytes());
        long.extend(vec![0; 8193 + MAC_LEN]);
        refused(&long, "a stanza of 8,193 bytes");
    }

    /// A short input is told apart by where it ends: nothing at all, something that is not a
    /// zseal file, the start of one, or a header cut between two of its reads.
    #[test]
    fn short_inputs_are_named_by_where_they_end() {
        let kind = |bytes: &[u8]| Header::read(&mut &bytes[..]).unwrap_err();
        let e = kind(b"");
        assert!(
            matches!(&e, Error::Truncated(m) if m.contains("empty")),
            "{e}"
        );
        assert!(matches!(kind(b"PK\x03\x04"), Error::NotZseal));
        // A compressed file is named as one, short or long.
        for (head, what) in [
            (&b"\x28\xb5\x2f\xfd\x04\x00"[..], "zstd"),
            (&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3][..], "gzip"),
            (
                &[
                    0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                ][..],
                "gzip",
            ),
        ] {
            let e = kind(head);
            assert!(
                matches!(e, Error::Compressed { what: w, .. } if w == what),
                "{e}"
            );
        }
        let e = kind(&MAGIC[..5]);
        assert!(
            matches!(&e, Error::Truncated(m) if m == "in the header"),
            "{e}"
        );
        let whole = header(vec![stanza(4)]).encode_unauthenticated().unwrap();
        for cut in [FIXED_LEN, FIXED_LEN + 3, whole.len()] {
            let e = kind(&whole[..cut]);
            assert!(
                matches!(&e, Error::Truncated(m) if m == "in the header"),
                "{cut}: {e}"
            );
        }
    }
}
