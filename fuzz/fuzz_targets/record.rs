//! Sealed records (docs/FORMAT.md §9), three ways per input:
//! 1. the input opened as a record: an error or a record, never a panic;
//! 2. the input's tail sealed as an **authentic** record with the flags its first byte picks
//!    (stored, zstd, LZ4, dictionary, either cipher), as a record key holder could: opening gives
//!    the payload itself (stored), a record, or `record invalid`; never `record auth`, never a
//!    panic, never more than 16 MiB;
//! 3. the tail sealed by zseal's Sealer with the codec the first byte picks: it opens to itself.
#![no_main]
use std::sync::{Arc, OnceLock};

use aes_gcm_siv::aead::{AeadInPlace, KeyInit};
use hkdf::Hkdf;
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;
use zseal::records::{Dictionary, Opener, RecordCipher, RecordKey, Sealer, SealerOptions};
use zseal::{Codec, ErrorKind};

const KEY: [u8; 32] = [0x42; 32];

fn dictionary() -> &'static Arc<Dictionary> {
    static D: OnceLock<Arc<Dictionary>> = OnceLock::new();
    D.get_or_init(|| {
        let bytes = include_bytes!("../../fixtures/records/json.dict").to_vec();
        Arc::new(Dictionary::from_bytes(bytes).expect("the fixture dictionary"))
    })
}

fn aead_key(cipher: RecordCipher) -> [u8; 32] {
    let mut k = [0u8; 32];
    Hkdf::<Sha256>::new(Some(&[]), &KEY)
        .expand(format!("zseal v1 record {}", cipher.name()).as_bytes(), &mut k)
        .expect("32 bytes");
    k
}

fn forge(flags: u8, payload: &[u8]) -> Vec<u8> {
    let cipher = if flags & 8 != 0 {
        RecordCipher::XChaCha20Poly1305
    } else {
        RecordCipher::Aes256GcmSiv
    };
    let dict = flags & 4 != 0;
    let mut out = vec![1, flags];
    if dict {
        out.extend_from_slice(&dictionary().id().to_le_bytes());
    }
    let mut aad = out.clone();
    if dict {
        aad.extend_from_slice(blake3::hash(dictionary().as_bytes()).as_bytes());
    }
    aad.extend_from_slice(b"ctx");
    let nonce = vec![7u8; cipher.nonce_len()];
    out.extend_from_slice(&nonce);
    let mut body = payload.to_vec();
    let k = aead_key(cipher);
    let tag = match cipher {
        RecordCipher::Aes256GcmSiv => aes_gcm_siv::Aes256GcmSiv::new(&k.into())
            .encrypt_in_place_detached(nonce[..].into(), &aad, &mut body)
            .expect("seal")
            .to_vec(),
        _ => chacha20poly1305::XChaCha20Poly1305::new(&k.into())
            .encrypt_in_place_detached(nonce[..].into(), &aad, &mut body)
            .expect("seal")
            .to_vec(),
    };
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    out
}

fuzz_target!(|data: &[u8]| {
    let key = RecordKey::from_bytes(KEY);
    let mut opener = Opener::new(&key, &[dictionary().clone()]).expect("opener");
    // 1. Anything at all.
    let _ = opener.open(data, b"ctx");
    let Some((&sel, tail)) = data.split_first() else {
        return;
    };
    // 2. Authentic, hostile payloads (only the valid flag combinations; the others are refused
    //    before decryption, which 1. covers).
    let flags = match sel % 8 {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 5,
        4 => 8,
        5 => 9,
        6 => 10,
        _ => 13,
    };
    match opener.open(&forge(flags, tail), b"ctx") {
        Ok(plain) => {
            assert!(plain.len() <= zseal::records::MAX_RECORD_LEN);
            if flags & 3 == 0 {
                assert_eq!(plain, tail, "a stored record opens to its payload");
            }
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::RecordInvalid, "{e}"),
    }
    // 3. zseal's own records open to themselves.
    let codec = match sel >> 5 {
        0 => Codec::None,
        1 | 2 => Codec::Lz4,
        _ => Codec::Zstd(1 + i32::from(sel & 3)),
    };
    let dict = (matches!(codec, Codec::Zstd(_)) && sel & 16 != 0).then(|| dictionary().clone());
    let cipher = if sel & 8 != 0 {
        RecordCipher::XChaCha20Poly1305
    } else {
        RecordCipher::Aes256GcmSiv
    };
    let mut sealer = Sealer::new(&key, SealerOptions { codec, cipher, dictionary: dict })
        .expect("sealer");
    let sealed = sealer.seal(tail, b"ctx").expect("seal");
    assert_eq!(opener.open(&sealed, b"ctx").expect("open"), tail);
});
