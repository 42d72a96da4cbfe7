//! The crypt4gh header (docs/FORMAT.md §13.1–13.3; spec "Header", "Header Packets",
//! "X25519_chacha20_ietf_poly1305 Encryption/Decryption", "Reading the header"; ref `header.py`
//! `parse`, `serialize`, `decrypt_packet`, `encrypt`, `partition_packets`).
//!
//! `magic ‖ version ‖ count ‖ packets`; each packet is `packet_length ‖ packet_encryption ‖ body`,
//! and for method 0 the body is `K_pw (32) ‖ nonce (12) ‖ ChaCha20-Poly1305(K_shared, plaintext)`.
//! A packet no key opens is another reader's and is skipped in silence.

use std::io::Read;

use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::edit::EditList;
use super::packet::{self, Content};
use super::segment::DataKey;
use super::{MAGIC, MAX_DATA_KEYS, MAX_HEADER_LEN, MAX_PACKETS, VERSION};
use crate::crypto::aead::{Cipher, PayloadCipher, NONCE_LEN, TAG_LEN};
use crate::crypto::c4gh::{PublicKey, SecretKey, KEY_LEN};
use crate::error::{Error, Result};

/// Header packet encryption method 0, the only one.
pub const X25519_CHACHA20_IETF_POLY1305: u32 = 0;
/// Bytes before the packets: magic, version, count.
pub const PREAMBLE_LEN: u64 = 16;
/// `packet_length` of a method-0 packet around `m` plaintext bytes is `PACKET_OVERHEAD + m`:
/// length 4, method 4, `K_pw` 32, nonce 12, MAC 16.
pub const PACKET_OVERHEAD: u64 = 68;

/// One header packet as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// `packet_encryption`.
    pub method: u32,
    /// The bytes after `packet_length` and `packet_encryption`.
    pub body: Vec<u8>,
}

impl Packet {
    /// `packet_length`: the whole packet, its 4 length bytes included.
    pub fn packet_length(&self) -> u64 {
        8 + self.body.len() as u64
    }

    /// The writer's public key `K_pw` of a method-0 packet.
    pub fn writer_key(&self) -> Option<PublicKey> {
        let k = self.body.get(..KEY_LEN)?;
        (self.method == X25519_CHACHA20_IETF_POLY1305).then(|| PublicKey(k.try_into().expect("32")))
    }

    /// Seals `plain` for `reader` under the writer key `writer` with a fresh nonce from `rng`.
    /// Refuses a reader key of low order (an all-zero `K_dh`, which anyone could derive).
    pub fn seal(
        plain: &[u8],
        writer: &SecretKey,
        reader: &PublicKey,
        rng: &mut (impl RngCore + CryptoRng + ?Sized),
    ) -> Result<Packet> {
        let key = writer.writer_shared_key(reader).ok_or_else(|| {
            Error::InvalidOption(
                "a crypt4gh recipient is not a usable X25519 public key (a point of low order, \
                 which would let anyone read the file): check the recipient's key file"
                    .into(),
            )
        })?;
        let mut nonce = [0u8; NONCE_LEN];
        rng.fill_bytes(&mut nonce);
        let mut body = Vec::with_capacity(KEY_LEN + NONCE_LEN + plain.len() + TAG_LEN);
        body.extend_from_slice(&writer.public().0);
        body.extend_from_slice(&nonce);
        body.extend_from_slice(plain);
        let at = KEY_LEN + NONCE_LEN;
        let tag =
            PayloadCipher::new(Cipher::ChaCha20Poly1305, &key.0).seal(&nonce, &[], &mut body[at..]);
        body.extend_from_slice(&tag);
        Ok(Packet {
            method: X25519_CHACHA20_IETF_POLY1305,
            body,
        })
    }

    /// The plaintext, when `key` opens this packet; `None` for another method, another reader,
    /// or a writer key of low order (as libsodium, §13.2).
    pub fn open(&self, key: &SecretKey) -> Option<Zeroizing<Vec<u8>>> {
        let writer = self.writer_key()?;
        let nonce: [u8; NONCE_LEN] = self
            .body
            .get(KEY_LEN..KEY_LEN + NONCE_LEN)?
            .try_into()
            .ok()?;
        let sealed = self.body.get(KEY_LEN + NONCE_LEN..)?;
        let plain_len = sealed.len().checked_sub(TAG_LEN)?;
        let shared = key.reader_shared_key(&writer)?;
        let mut out = Zeroizing::new(vec![0u8; plain_len]);
        PayloadCipher::new(Cipher::ChaCha20Poly1305, &shared.0)
            .open_to(&nonce, &[], sealed, &mut out)
            .ok()?;
        Some(out)
    }
}

/// A crypt4gh header: its packets, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The header packets.
    pub packets: Vec<Packet>,
}

/// What the packets a reader opens hold.
#[derive(Debug)]
pub struct Opened {
    /// The data keys, in header order.
    pub data_keys: Vec<DataKey>,
    /// The edit list, if one was opened.
    pub edit_list: Option<EditList>,
    /// The indexes of the packets that opened.
    pub opened: Vec<usize>,
    /// The distinct writer keys of those packets (more than one may mean an added packet,
    /// FORMAT.md §13.10).
    pub writer_keys: Vec<PublicKey>,
}

/// Fills `buf` from `r`; an input that ends first is a truncated header.
fn fill(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            Error::Truncated(format!("the crypt4gh header ends inside {what}"))
        }
        _ => Error::from(e),
    })
}

fn u32_le(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().expect("4 bytes"))
}

impl Header {
    /// Reads a header from the start of `r`, which is left at the first segment.
    pub fn read(r: &mut impl Read) -> Result<Header> {
        let mut pre = [0u8; PREAMBLE_LEN as usize];
        fill(r, &mut pre, "its first 16 bytes")?;
        if pre[..8] != MAGIC {
            return Err(Error::InvalidHeader(
                "not a crypt4gh file: it does not start with `crypt4gh`".into(),
            ));
        }
        let version = u32_le(&pre[8..12]);
        if version != VERSION {
            return Err(Error::InvalidHeader(format!(
                "unsupported crypt4gh version {version}: zseal reads version 1, the only one \
                 the standard defines"
            )));
        }
        let count = u32_le(&pre[12..16]);
        check_count(count as usize)?;
        let mut packets = Vec::with_capacity(count as usize);
        let mut len = PREAMBLE_LEN;
        for i in 0..count as usize {
            let p = read_packet(r, i, &mut len)?;
            packets.push(p);
        }
        Ok(Header { packets })
    }

    /// Reads a header from the start of `bytes` (which may go on with segments).
    pub fn parse(mut bytes: &[u8]) -> Result<Header> {
        Header::read(&mut bytes)
    }

    /// The header's length in bytes: where segment 0 starts.
    pub fn len(&self) -> u64 {
        PREAMBLE_LEN + self.packets.iter().map(Packet::packet_length).sum::<u64>()
    }

    /// True for a header without packets (never a valid one).
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The header's bytes. Refuses to write no packet, more than [`MAX_PACKETS`], or more than
    /// [`MAX_HEADER_LEN`] bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        check_count(self.packets.len())?;
        if self.len() > MAX_HEADER_LEN {
            return Err(too_long(self.len()));
        }
        let mut out = Vec::with_capacity(self.len() as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.packets.len() as u32).to_le_bytes());
        for p in &self.packets {
            out.extend_from_slice(&(p.packet_length() as u32).to_le_bytes());
            out.extend_from_slice(&p.method.to_le_bytes());
            out.extend_from_slice(&p.body);
        }
        Ok(out)
    }

    /// Opens the packets with `keys` (each packet with the first key that opens it) and reads
    /// them: the data keys and the edit list (§13.3).
    pub fn open(&self, keys: &[SecretKey]) -> Result<Opened> {
        let mut opened = Opened {
            data_keys: Vec::new(),
            edit_list: None,
            opened: Vec::new(),
            writer_keys: Vec::new(),
        };
        for (i, p) in self.packets.iter().enumerate() {
            let Some(plain) = keys.iter().find_map(|k| p.open(k)) else {
                continue;
            };
            opened.opened.push(i);
            let writer = p.writer_key().expect("an opened packet has method 0");
            if !opened.writer_keys.contains(&writer) {
                opened.writer_keys.push(writer);
            }
            match packet::decode(&plain, i)? {
                Content::DataKey(k) => opened.data_keys.push(k),
                Content::EditList(_) if opened.edit_list.is_some() => {
                    return Err(Error::InvalidHeader(format!(
                        "crypt4gh header packet {i} is a second edit list: a file has at most \
                         one (the standard says to reject it)"
                    )))
                }
                Content::EditList(e) => opened.edit_list = Some(e),
            }
        }
        self.check_opened(&opened)?;
        Ok(opened)
    }

    fn check_opened(&self, opened: &Opened) -> Result<()> {
        if opened.opened.is_empty() {
            return Err(Error::NoMatchingKey {
                stanzas: self.packets.len(),
                kinds: "crypt4gh X25519 header packets".into(),
            });
        }
        if opened.data_keys.is_empty() {
            return Err(Error::InvalidHeader(
                "the crypt4gh header packets this key opens hold no data key (only an edit \
                 list): the file is damaged or was altered"
                    .into(),
            ));
        }
        let mut distinct: Vec<&[u8; 32]> = opened.data_keys.iter().map(DataKey::expose).collect();
        distinct.sort();
        distinct.dedup();
        if distinct.len() > MAX_DATA_KEYS {
            return Err(Error::Limit(format!(
                "the crypt4gh header holds {} data keys for this reader, more than the \
                 {MAX_DATA_KEYS} zseal accepts",
                distinct.len()
            )));
        }
        Ok(())
    }
}

fn check_count(count: usize) -> Result<()> {
    if count == 0 {
        return Err(Error::InvalidHeader(
            "the crypt4gh header has no packet, so no reader can open it".into(),
        ));
    }
    if count > MAX_PACKETS as usize {
        return Err(Error::Limit(format!(
            "a crypt4gh header of {count} packets (zseal reads and writes at most {MAX_PACKETS})"
        )));
    }
    Ok(())
}

fn too_long(len: u64) -> Error {
    Error::Limit(format!(
        "a crypt4gh header of {len} bytes or more (zseal reads and writes at most \
         {MAX_HEADER_LEN})"
    ))
}

/// Reads packet `i`; `len` is the header's length so far.
fn read_packet(r: &mut impl Read, i: usize, len: &mut u64) -> Result<Packet> {
    let mut head = [0u8; 8];
    fill(r, &mut head[..4], &format!("packet {i}"))?;
    let packet_length = u32_le(&head[..4]);
    if packet_length < 8 {
        return Err(Error::InvalidHeader(format!(
            "crypt4gh header packet {i} has length {packet_length}, less than its own 8-byte \
             start: the header is damaged"
        )));
    }
    *len += u64::from(packet_length);
    if *len > MAX_HEADER_LEN {
        return Err(too_long(*len));
    }
    fill(r, &mut head[4..], &format!("packet {i}"))?;
    let method = u32_le(&head[4..]);
    if method == X25519_CHACHA20_IETF_POLY1305 && u64::from(packet_length) < PACKET_OVERHEAD + 4 {
        return Err(Error::InvalidHeader(format!(
            "crypt4gh header packet {i} is damaged: {packet_length} bytes leave no room for a \
             writer key, nonce, packet type and MAC (at least 72)"
        )));
    }
    let mut body = vec![0u8; packet_length as usize - 8];
    fill(r, &mut body, &format!("packet {i}"))?;
    Ok(Packet { method, body })
}

/// The header of a new file: for each recipient, under a fresh writer key of its own, a packet
/// with `data_key` and, when given, one with `edit` (§13.2 "Writing").
pub fn seal_header(
    data_key: &DataKey,
    recipients: &[PublicKey],
    edit: Option<&EditList>,
    rng: &mut (impl RngCore + CryptoRng + ?Sized),
) -> Result<Header> {
    if recipients.is_empty() {
        return Err(Error::InvalidOption(
            "no recipient to encrypt the crypt4gh file to".into(),
        ));
    }
    let key_plain = packet::encode_data_key(data_key);
    let edit_plain = edit.map(packet::encode_edit_list);
    let mut packets = Vec::new();
    for reader in recipients {
        let writer = SecretKey::generate(rng);
        packets.push(Packet::seal(&key_plain, &writer, reader, rng)?);
        if let Some(plain) = &edit_plain {
            packets.push(Packet::seal(plain, &writer, reader, rng)?);
        }
    }
    let header = Header { packets };
    check_count(header.packets.len())?;
    if header.len() > MAX_HEADER_LEN {
        return Err(too_long(header.len()));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u8) -> Vec<SecretKey> {
        (1..=n).map(|i| SecretKey::from_bytes([i; 32])).collect()
    }

    fn sealed(data_key: &DataKey, to: &[SecretKey], edit: Option<&EditList>) -> (Header, Vec<u8>) {
        let pks: Vec<PublicKey> = to.iter().map(SecretKey::public).collect();
        let h = seal_header(data_key, &pks, edit, &mut rand_core::OsRng).unwrap();
        let bytes = h.to_bytes().unwrap();
        (h, bytes)
    }

    /// Each recipient opens its own packet; the sizes are FORMAT.md §13.2's and §13.5's.
    #[test]
    fn several_recipients_each_open_the_data_key_and_the_edit_list() {
        let ids = keys(3);
        let dk = DataKey::from_bytes([0xaa; 32]);
        let edit = EditList::new(vec![4464, 10_000]).unwrap();
        let (h, bytes) = sealed(&dk, &ids, Some(&edit));
        assert_eq!(bytes.len() as u64, h.len());
        assert_eq!(h.len(), 16 + 3 * (108 + 92));
        assert_eq!(Header::parse(&bytes).unwrap(), h);
        for (n, id) in ids.iter().enumerate() {
            let o = h.open(std::slice::from_ref(id)).unwrap();
            assert_eq!(o.opened, vec![2 * n, 2 * n + 1]);
            assert_eq!(o.data_keys[0].expose(), dk.expose());
            assert_eq!(o.edit_list.as_ref(), Some(&edit));
            assert_eq!(o.writer_keys.len(), 1);
        }
        // One writer key per recipient, not per file.
        let writers: Vec<_> = h
            .packets
            .iter()
            .step_by(2)
            .map(|p| p.writer_key())
            .collect();
        assert!(writers[0] != writers[1] && writers[1] != writers[2]);
        let stranger = h.open(&[SecretKey::from_bytes([9; 32])]).unwrap_err();
        assert_eq!(stranger.kind(), crate::ErrorKind::NoMatchingKey);
    }

    #[test]
    fn packets_of_other_methods_and_flipped_packets_are_skipped() {
        let ids = keys(2);
        let (mut h, _) = sealed(&DataKey::from_bytes([1; 32]), &ids, None);
        h.packets.insert(
            0,
            Packet {
                method: 7,
                body: vec![0; 3],
            },
        );
        h.packets[2].body[50] ^= 1; // the second recipient's packet
        assert_eq!(h.open(&ids[..1]).unwrap().opened, vec![1]);
        assert!(h.open(&ids[1..]).is_err());
    }

    #[test]
    fn a_second_edit_list_or_no_data_key_is_refused() {
        let id = keys(1);
        let edit = EditList::new(vec![1]).unwrap();
        let (mut h, _) = sealed(&DataKey::from_bytes([1; 32]), &id, Some(&edit));
        let mut rng = rand_core::OsRng;
        let w = SecretKey::generate(&mut rng);
        let again = Packet::seal(
            &packet::encode_edit_list(&edit),
            &w,
            &id[0].public(),
            &mut rng,
        );
        h.packets.push(again.unwrap());
        let e = h.open(&id).unwrap_err().to_string();
        assert!(e.contains("second edit list"), "{e}");
        let e = Header {
            packets: h.packets[1..2].to_vec(),
        }
        .open(&id)
        .unwrap_err()
        .to_string();
        assert!(e.contains("no data key"), "{e}");
    }

    #[test]
    fn a_low_order_recipient_is_refused_when_writing() {
        let e = seal_header(
            &DataKey::from_bytes([1; 32]),
            &[PublicKey([0; 32])],
            None,
            &mut rand_core::OsRng,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("low order"), "{e}");
    }

    /// One error each for what §13.11 lists about the header's structure.
    #[test]
    fn malformed_headers_get_one_error_each() {
        let (_, good) = sealed(&DataKey::from_bytes([1; 32]), &keys(1), None);
        let with = |at: usize, b: &[u8]| {
            let mut v = good.clone();
            v[at..at + b.len()].copy_from_slice(b);
            v
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with(0, b"crypt5gh"), "not a crypt4gh file"),
            (
                with(8, &2u32.to_le_bytes()),
                "unsupported crypt4gh version 2",
            ),
            (with(12, &0u32.to_le_bytes()), "no packet"),
            (with(12, &1025u32.to_le_bytes()), "1025 packets"),
            (with(12, &2u32.to_le_bytes()), "ends inside packet 1"),
            (with(16, &7u32.to_le_bytes()), "length 7"),
            (with(16, &71u32.to_le_bytes()), "at least 72"),
            (with(16, &(2u32 << 20).to_le_bytes()), "at most 1048576"),
            (good[..100].to_vec(), "ends inside packet 0"),
            (good[..10].to_vec(), "first 16 bytes"),
        ];
        for (bytes, want) in cases {
            let e = Header::parse(&bytes).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        // A method-1 packet of 8 bytes is another method's, not damaged: it is skipped.
        let mut other = good.clone();
        other.splice(12..16, 2u32.to_le_bytes());
        other.extend_from_slice(&8u32.to_le_bytes());
        other.extend_from_slice(&1u32.to_le_bytes());
        let h = Header::parse(&other).unwrap();
        assert_eq!(h.open(&keys(1)).unwrap().opened, vec![0]);
    }
}
