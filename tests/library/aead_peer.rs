//! zseal seals frames with aws-lc-rs; this test opens every frame of containers it writes with an
//! independent implementation (RustCrypto's aes-gcm and chacha20poly1305), from FORMAT.md alone:
//! key schedule (§2.2), frame layout and nonces (§3), and seals frames with RustCrypto for zseal to
//! open. Together with the committed vectors (byte-identical output) this shows the AEAD swap left
//! the bytes on disk unchanged.

use std::sync::Mutex;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use hkdf::Hkdf;
use rand_core::RngCore;
use sha2::Sha256;
use zseal::crypto::{AgeStanza, PassphraseKdf, RECORD_TAG};
use zseal::{Cipher, Codec, EncryptOptions, FileKey, Identity, Recipient, Threads};

/// A recipient that keeps the file key (so the test can derive the payload key itself) and an
/// identity that hands it back.
#[derive(Default)]
struct Keep(Mutex<Option<[u8; 16]>>);

impl Recipient for Keep {
    /// A container record of type `7f`, a type zseal does not know.
    fn wrap_file_key(
        &self,
        key: &FileKey,
        _: PassphraseKdf,
        _: &mut dyn RngCore,
    ) -> zseal::Result<Vec<AgeStanza>> {
        *self.0.lock().unwrap() = Some(*key.expose());
        Ok(vec![AgeStanza {
            tag: RECORD_TAG.into(),
            args: vec!["7f".into()],
            body: key.expose().to_vec(),
        }])
    }
}

impl Identity for Keep {
    fn unwrap_stanzas(&self, stanzas: &[AgeStanza]) -> zseal::Result<Option<FileKey>> {
        Ok(stanzas
            .iter()
            .find(|s| s.tag == RECORD_TAG && s.args == ["7f"])
            .map(|s| FileKey::from_bytes(s.body[..16].try_into().unwrap())))
    }
}

fn peer_open(cipher: Cipher, key: &[u8; 32], nonce: &[u8; 12], aad: &[u8], body: &[u8]) -> Vec<u8> {
    let (msg, tag) = body.split_at(body.len() - 16);
    let mut buf = msg.to_vec();
    let r = match cipher {
        Cipher::Aes256Gcm => aes_gcm::Aes256Gcm::new(key.into()).decrypt_in_place_detached(
            nonce.into(),
            aad,
            &mut buf,
            tag.into(),
        ),
        _ => chacha20poly1305::ChaCha20Poly1305::new(key.into()).decrypt_in_place_detached(
            nonce.into(),
            aad,
            &mut buf,
            tag.into(),
        ),
    };
    r.expect("the independent implementation opens zseal's frame");
    buf
}

fn peer_seal(cipher: Cipher, key: &[u8; 32], nonce: &[u8; 12], aad: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut buf = msg.to_vec();
    let tag = match cipher {
        Cipher::Aes256Gcm => aes_gcm::Aes256Gcm::new(key.into())
            .encrypt_in_place_detached(nonce.into(), aad, &mut buf)
            .unwrap(),
        _ => chacha20poly1305::ChaCha20Poly1305::new(key.into())
            .encrypt_in_place_detached(nonce.into(), aad, &mut buf)
            .unwrap(),
    };
    buf.extend_from_slice(&tag);
    buf
}

fn nonce(i: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&i.to_be_bytes());
    n[11] = last as u8;
    n
}

/// Plaintext with compressible and incompressible stretches, so both frame kinds occur.
fn plaintext(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            if (i / 8192) % 2 == 0 {
                (i % 251) as u8
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }
        })
        .collect()
}

#[test]
fn every_frame_opens_with_rustcrypto_and_rustcrypto_frames_open_with_zseal() {
    for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
        for &len in &[0usize, 1, 4095, 4096, 20_000, 65_536] {
            let keep = Keep::default();
            let opts = EncryptOptions::default()
                .codec(Codec::Zstd(3))
                .cipher(cipher)
                .chunk_size(4096)
                .threads(Threads::Count(2));
            let plain = plaintext(len);
            let mut c = zseal::encrypt_to_vec(&plain, &[&keep], &opts).unwrap();
            let file_key = keep.0.lock().unwrap().unwrap();

            // §2.2: payload_key from the file key and the payload salt at offset 16.
            let mut key = [0u8; 32];
            Hkdf::<Sha256>::new(Some(&c[16..48]), &file_key)
                .expand(b"zseal v1 payload", &mut key)
                .unwrap();
            // §1: header length from the stanza list.
            let count = u16::from_le_bytes([c[48], c[49]]) as usize;
            let mut at = 50;
            for _ in 0..count {
                at += 3 + u16::from_le_bytes([c[at + 1], c[at + 2]]) as usize;
            }
            at += 32;

            // §3: every frame, in order, with the STREAM nonce; rebuild the plaintext.
            let (mut i, mut out, mut kinds) = (0u64, Vec::new(), Vec::new());
            loop {
                let kind = c[at];
                let body_len = u32::from_le_bytes(c[at + 1..at + 5].try_into().unwrap()) as usize;
                let last = kind == 2;
                let range = at + 5..at + 5 + body_len;
                let msg = peer_open(cipher, &key, &nonce(i, last), &c[at..at + 5], &c[range]);
                // zseal opens what RustCrypto seals: reseal the frame with the peer and put it
                // back; the whole container must still decrypt below.
                let resealed = peer_seal(cipher, &key, &nonce(i, last), &c[at..at + 5], &msg);
                c[at + 5..at + 5 + body_len].copy_from_slice(&resealed);
                kinds.push(kind);
                at += 5 + body_len;
                if last {
                    assert_eq!(u64::from_le_bytes(msg[..8].try_into().unwrap()), len as u64);
                    break;
                }
                out.extend(match kind {
                    0 => zstd::bulk::decompress(&msg, 4096).unwrap(),
                    1 => msg,
                    k => panic!("unexpected frame kind {k}"),
                });
                i += 1;
            }
            assert_eq!(out, plain, "{cipher} {len}");
            if len >= 20_000 {
                assert!(kinds.contains(&0) && kinds.contains(&1), "{kinds:?}");
            }
            assert_eq!(zseal::decrypt_to_vec(&c, &[&keep]).unwrap(), plain);
        }
    }
}
