//! A crypt4gh header rewritten for new recipients (docs/FORMAT.md §13.9 "rekey"; ref
//! `header.py` `reencrypt`): the packets the reader opens give the data keys and the edit list;
//! each new recipient gets, under a writer key of its own, one packet per data-key packet opened
//! and the edit list's packet if there is one. The data segments do not change: the data keys
//! are the same, so whoever moves the file copies every byte after the old header unchanged.

use rand_core::{CryptoRng, RngCore};

use super::header::{Header, Opened, Packet};
use super::layout::Layout;
use super::packet;
use crate::crypto::c4gh::{PublicKey, SecretKey};
use crate::error::{Error, Result};

/// Which old packets the new header keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// None: the new recipients replace the old set, the packets the reader could not open too
    /// (the ref's `reencrypt --trim`).
    Nothing,
    /// Every old packet as it is, the new ones after them (`--add`).
    Everything,
}

/// A header built by [`rekey_header`].
#[derive(Debug)]
pub struct Rekeyed {
    /// The new header.
    pub header: Header,
    /// Its bytes (checked against §13.11's limits).
    pub bytes: Vec<u8>,
    /// What the reader's keys opened in the old header.
    pub opened: Opened,
}

/// Opens `old` with `keys` and builds the header that gives its data keys and edit list to
/// `recipients`, after the old packets when `keep` says so. Refuses no recipient, a header no
/// key opens (§13.2), and a new header over §13.11's limits.
pub fn rekey_header(
    old: &Header,
    keys: &[SecretKey],
    recipients: &[PublicKey],
    keep: Keep,
    rng: &mut (impl RngCore + CryptoRng + ?Sized),
) -> Result<Rekeyed> {
    if recipients.is_empty() {
        return Err(Error::InvalidOption(
            "no new recipient to rekey the crypt4gh file to: give -r or -R".into(),
        ));
    }
    let opened = old.open(keys)?;
    let plains = opened_plaintexts(&opened);
    let mut packets = match keep {
        Keep::Nothing => Vec::new(),
        Keep::Everything => old.packets.clone(),
    };
    for reader in recipients {
        // One writer key per recipient, for all of its packets, then discarded (§13.2).
        let writer = SecretKey::generate(rng);
        for plain in &plains {
            packets.push(Packet::seal(plain, &writer, reader, rng)?);
        }
    }
    let header = Header { packets };
    let bytes = header.to_bytes()?;
    Ok(Rekeyed {
        header,
        bytes,
        opened,
    })
}

/// The plaintexts to seal for each recipient: one per data key opened, in header order, then
/// the edit list's.
fn opened_plaintexts(opened: &Opened) -> Vec<zeroize::Zeroizing<Vec<u8>>> {
    let mut out: Vec<_> = (opened.data_keys.iter())
        .map(packet::encode_data_key)
        .collect();
    if let Some(e) = &opened.edit_list {
        out.push(zeroize::Zeroizing::new(packet::encode_edit_list(e)));
    }
    out
}

/// Checks, from the lengths alone, that the data after a header of `header_len` bytes in a file
/// of `file_len` bytes is what the header describes: not cut inside a segment, and long enough
/// for the edit list (§13.5). So a rekey does not give a new header to a file already known to
/// be damaged; the segments themselves are copied, not opened.
pub fn check_data_len(opened: &Opened, header_len: u64, file_len: u64) -> Result<()> {
    let layout = Layout::new(header_len, file_len)?;
    layout.output_len(opened.edit_list.as_ref())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::crypt4gh::{seal_header, DataKey, EditList};

    fn key(i: u8) -> SecretKey {
        SecretKey::from_bytes([i; 32])
    }

    fn header_for(to: &[&SecretKey], edit: Option<&EditList>) -> Header {
        let pks: Vec<PublicKey> = to.iter().map(|k| k.public()).collect();
        let dk = DataKey::from_bytes([7; 32]);
        seal_header(&dk, &pks, edit, &mut rand_core::OsRng).unwrap()
    }

    /// Replacing: only the new recipient opens the new header, to the same data key and edit
    /// list, with its packets under one writer key; the old reader and a stranger's packet are
    /// gone.
    #[test]
    fn replace_gives_the_data_key_and_edit_list_to_the_new_recipients_only() {
        let (a, b, c, stranger) = (key(1), key(2), key(3), key(4));
        let edit = EditList::new(vec![10, 20]).unwrap();
        let old = header_for(&[&stranger, &a], Some(&edit));
        let pks = [b.public(), c.public()];
        let r = rekey_header(
            &old,
            std::slice::from_ref(&a),
            &pks,
            Keep::Nothing,
            &mut rand_core::OsRng,
        )
        .unwrap();
        assert_eq!(r.header.packets.len(), 4);
        assert_eq!(Header::parse(&r.bytes).unwrap(), r.header);
        assert_eq!(r.header.len(), 16 + 2 * (108 + 92));
        for k in [&b, &c] {
            let o = r.header.open(std::slice::from_ref(k)).unwrap();
            assert_eq!(o.data_keys[0].expose(), &[7; 32]);
            assert_eq!(o.edit_list.as_ref(), Some(&edit));
            assert_eq!(o.writer_keys.len(), 1);
        }
        for k in [&a, &stranger] {
            let e = r.header.open(std::slice::from_ref(k)).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::NoMatchingKey);
        }
    }

    /// `--add` keeps every old packet byte for byte, the unopened ones too, and appends.
    #[test]
    fn keep_everything_appends_after_the_old_packets() {
        let (a, b, stranger) = (key(1), key(2), key(4));
        let old = header_for(&[&stranger, &a], None);
        let r = rekey_header(
            &old,
            std::slice::from_ref(&a),
            &[b.public()],
            Keep::Everything,
            &mut rand_core::OsRng,
        )
        .unwrap();
        assert_eq!(r.header.packets[..2], old.packets[..]);
        assert_eq!(r.header.packets.len(), 3);
        for k in [&a, &b, &stranger] {
            assert!(r.header.open(std::slice::from_ref(k)).is_ok());
        }
    }

    #[test]
    fn no_recipient_or_no_opening_key_is_refused() {
        let (a, b) = (key(1), key(2));
        let old = header_for(&[&a], None);
        let rng = &mut rand_core::OsRng;
        let e = rekey_header(&old, std::slice::from_ref(&a), &[], Keep::Nothing, rng);
        assert!(e.unwrap_err().to_string().contains("no new recipient"));
        let e = rekey_header(
            &old,
            std::slice::from_ref(&b),
            &[b.public()],
            Keep::Nothing,
            rng,
        );
        assert_eq!(e.unwrap_err().kind(), crate::ErrorKind::NoMatchingKey);
    }

    /// A cut inside a segment, or an edit list longer than the data, is refused from the
    /// lengths alone.
    #[test]
    fn the_data_length_is_checked_against_the_header() {
        let a = key(1);
        let edit = EditList::new(vec![0, 100_000]).unwrap();
        let h = header_for(&[&a], Some(&edit));
        let o = h.open(std::slice::from_ref(&a)).unwrap();
        let hl = h.len();
        let two_segments = hl + 65_564 + 40_000;
        assert!(check_data_len(&o, hl, two_segments).is_ok());
        let e = check_data_len(&o, hl, hl + 65_564 + 20).unwrap_err();
        assert!(e.to_string().contains("cut inside a segment"), "{e}");
        let e = check_data_len(&o, hl, hl + 65_564).unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
    }
}
