//! The plaintext of a header packet (docs/FORMAT.md §13.3; spec "Header packet encrypted payload";
//! ref `header.py` `partition_packets`, `parse_enc_packet`, `parse_edit_list_packet`): a u32 type,
//! then a data key (type 0) or an edit list (type 1). Padding after the content is ignored.

use zeroize::Zeroizing;

use super::edit::EditList;
use super::segment::DataKey;
use super::MAX_EDIT_LENGTHS;
use crate::error::{Error, Result};

/// Packet type 0: data encryption parameters.
pub const DATA_ENCRYPTION_PARAMETERS: u32 = 0;
/// Packet type 1: data edit list.
pub const DATA_EDIT_LIST: u32 = 1;
/// Data encryption method 0, the only one: chacha20_ietf_poly1305 with empty AAD.
pub const CHACHA20_IETF_POLY1305: u32 = 0;
/// Plaintext length of a data-key packet: type, method, key.
pub const DATA_KEY_PLAINTEXT_LEN: usize = 40;

/// What an opened packet holds.
pub enum Content {
    /// A data key (method 0).
    DataKey(DataKey),
    /// An edit list.
    EditList(EditList),
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at + 4)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// The plaintext of a data-key packet: type 0, method 0, the key (40 bytes).
pub fn encode_data_key(key: &DataKey) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(DATA_KEY_PLAINTEXT_LEN));
    out.extend_from_slice(&DATA_ENCRYPTION_PARAMETERS.to_le_bytes());
    out.extend_from_slice(&CHACHA20_IETF_POLY1305.to_le_bytes());
    out.extend_from_slice(key.expose());
    out
}

/// The plaintext of an edit-list packet: type 1, the count, the lengths (u64 each).
pub fn encode_edit_list(list: &EditList) -> Vec<u8> {
    let lengths = list.lengths();
    let count = u32::try_from(lengths.len()).expect("EditList::new bounds the count");
    let mut out = Vec::with_capacity(8 + 8 * lengths.len());
    out.extend_from_slice(&DATA_EDIT_LIST.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    for l in lengths {
        out.extend_from_slice(&l.to_le_bytes());
    }
    out
}

/// Reads the plaintext of packet `index` (its number in the header, for messages).
pub fn decode(plain: &[u8], index: usize) -> Result<Content> {
    let damaged = |what: &str| {
        Error::InvalidHeader(format!("crypt4gh header packet {index} is damaged: {what}"))
    };
    match u32_at(plain, 0).ok_or_else(|| damaged("no room for its type"))? {
        DATA_ENCRYPTION_PARAMETERS => {
            let method = u32_at(plain, 4).ok_or_else(|| damaged("data-key packet too short"))?;
            if method != CHACHA20_IETF_POLY1305 {
                return Err(unsupported_method(method));
            }
            let key: [u8; 32] = plain
                .get(8..DATA_KEY_PLAINTEXT_LEN)
                .and_then(|k| k.try_into().ok())
                .ok_or_else(|| damaged("data-key packet too short for a 32-byte key"))?;
            Ok(Content::DataKey(DataKey::from_bytes(key)))
        }
        DATA_EDIT_LIST => {
            let count = u32_at(plain, 4).ok_or_else(|| damaged("edit list without a count"))?;
            if count > MAX_EDIT_LENGTHS {
                return Err(Error::InvalidHeader(format!(
                    "crypt4gh edit list with {count} lengths (zseal reads at most {MAX_EDIT_LENGTHS})"
                )));
            }
            let body = plain
                .get(8..8 + 8 * count as usize)
                .ok_or_else(|| damaged(&format!("edit list of {count} lengths is cut short")))?;
            let lengths = body
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
                .collect();
            Ok(Content::EditList(EditList::new(lengths)?))
        }
        other => Err(Error::InvalidHeader(format!(
            "unknown crypt4gh packet type {other} (the format defines 0, data key, and 1, edit \
             list): the file was written by a newer tool, or the packet is damaged"
        ))),
    }
}

fn unsupported_method(method: u32) -> Error {
    let what = match method {
        1 => "method 1 (chacha20_ietf_poly1305_with_AEAD, a proposed extension, hts-specs PR #736)"
            .to_string(),
        m => format!("method {m}"),
    };
    Error::InvalidHeader(format!(
        "unsupported crypt4gh data encryption {what}: zseal reads method 0 \
         (chacha20_ietf_poly1305), as the reference tool does"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_keys_and_edit_lists_round_trip_and_padding_is_ignored() {
        let key = DataKey::from_bytes([7; 32]);
        let mut plain = encode_data_key(&key).to_vec();
        assert_eq!(plain.len(), DATA_KEY_PLAINTEXT_LEN);
        assert_eq!(&plain[..8], &[0, 0, 0, 0, 0, 0, 0, 0]);
        plain.extend_from_slice(&[0; 9]);
        match decode(&plain, 0).unwrap() {
            Content::DataKey(k) => assert_eq!(k.expose(), key.expose()),
            Content::EditList(_) => panic!("a data key"),
        }
        let list = EditList::new(vec![4464, 10_000]).unwrap();
        let mut plain = encode_edit_list(&list);
        assert_eq!(plain.len(), 8 + 16);
        plain.push(0xff);
        match decode(&plain, 1).unwrap() {
            Content::EditList(l) => assert_eq!(l.lengths(), &[4464, 10_000]),
            Content::DataKey(_) => panic!("an edit list"),
        }
    }

    #[test]
    fn other_methods_types_and_short_plaintexts_are_refused_by_name() {
        let with = |ty: u32, rest: &[u8]| [&ty.to_le_bytes()[..], rest].concat();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0, 0], "no room for its type"),
            (with(0, &[1, 0, 0, 0]), "chacha20_ietf_poly1305_with_AEAD"),
            (with(0, &[7, 0, 0, 0]), "encryption method 7"),
            (with(0, &[0, 0, 0, 0, 1, 2]), "too short for a 32-byte key"),
            (with(2, &[]), "unknown crypt4gh packet type 2"),
            (with(1, &[2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]), "cut short"),
            (with(1, &65_537u32.to_le_bytes()), "65537 lengths"),
        ];
        for (plain, want) in cases {
            let e = decode(&plain, 3).err().expect(want).to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
