//! Sealed records (docs/FORMAT.md §9): round trips at boundary sizes for every codec, cipher and
//! dictionary; every way a record can be damaged, moved or opened with the wrong key or
//! dictionary; an independent construction (RustCrypto's AES-GCM-SIV, the hkdf crate, a zstd
//! frame with its magic put back) that opens what zseal seals; and the committed vectors
//! (fixtures/records/, fixtures/README.md), which that construction makes with fixed nonces and
//! zseal must reproduce byte for byte. Regenerate with
//! `ZSEAL_REGENERATE_VECTORS=1 cargo test --release --test records` (only for a deliberate change).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use aes_gcm_siv::aead::{AeadInPlace, KeyInit};
use serde_json::{json, Value};
use zseal::records::{
    inspect, Dictionary, Opener, RecordCipher, RecordKey, Sealer, SealerOptions, MAX_RECORD_LEN,
};
use zseal::{Codec, ErrorKind};

const CIPHERS: [RecordCipher; 2] = [RecordCipher::Aes256GcmSiv, RecordCipher::XChaCha20Poly1305];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/records")
}

/// JSON-like records: what a document store holds (deterministic).
fn json_records(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let names = [
        "ada", "grace", "alan", "edsger", "barbara", "ken", "dennis", "linus",
    ];
    let cities = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Accra"];
    let noise = common::noise(n * 8, seed);
    (0..n)
        .map(|i| {
            let r = &noise[i * 8..i * 8 + 8];
            format!(
                r#"{{"id":{},"user":"{}{}","city":"{}","active":{},"score":{},"tags":["{}","{}"],"updated":"2026-11-{:02}T{:02}:{:02}:00Z"}}"#,
                100_000 + i * 7 + usize::from(r[0]),
                names[usize::from(r[1]) % names.len()],
                r[2],
                cities[usize::from(r[3]) % cities.len()],
                r[4].is_multiple_of(2),
                u32::from(r[5]) * 37 % 1000,
                names[usize::from(r[6]) % names.len()],
                cities[usize::from(r[7]) % cities.len()],
                1 + r[0] % 28,
                r[1] % 24,
                r[2] % 60,
            )
            .into_bytes()
        })
        .collect()
}

fn dictionary() -> Arc<Dictionary> {
    let bytes = std::fs::read(dir().join("json.dict")).expect("fixtures/records/json.dict");
    Arc::new(Dictionary::from_bytes(bytes).unwrap())
}

/// The committed dictionary with its id kept and one content byte changed: same id, other bytes.
fn same_id_other_dictionary() -> Arc<Dictionary> {
    let mut bytes = dictionary().as_bytes().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    Arc::new(Dictionary::from_bytes(bytes).unwrap())
}

fn key() -> RecordKey {
    RecordKey::from_bytes(*b"zseal record vector key, 32 byte")
}

fn sealer(codec: Codec, cipher: RecordCipher, dict: Option<Arc<Dictionary>>) -> Sealer {
    Sealer::new(
        &key(),
        SealerOptions {
            codec,
            cipher,
            dictionary: dict,
        },
    )
    .unwrap()
}

#[test]
fn round_trips_at_boundary_sizes_for_every_codec_cipher_and_dictionary() {
    let dict = dictionary();
    let mut opener = Opener::new(&key(), std::slice::from_ref(&dict)).unwrap();
    let text = common::data(MAX_RECORD_LEN);
    let random = common::noise(70_000, 3);
    for cipher in CIPHERS {
        for (codec, d) in [
            (Codec::None, None),
            (Codec::Zstd(3), None),
            (Codec::Zstd(19), None),
            (Codec::Zstd(3), Some(dict.clone())),
            (Codec::Lz4, None),
        ] {
            let with_dict = d.is_some();
            let mut s = sealer(codec, cipher, d);
            for len in [0, 1, 15, 16, 17, 200, 264, 4095, 4096, 65_536, 65_537] {
                for source in [&text[..len], &random[..len]] {
                    let ctx = format!("k:{len}");
                    let sealed = s.seal(source, ctx.as_bytes()).unwrap();
                    let info = inspect(&sealed).unwrap();
                    assert_eq!(info.cipher, cipher);
                    assert!(sealed.len() <= len + cipher.overhead() + 4 * usize::from(with_dict));
                    if info.codec == Codec::None {
                        assert_eq!(sealed.len(), len + cipher.overhead(), "stored raw exactly");
                        assert_eq!(info.dictionary, None);
                    } else {
                        assert!(
                            sealed.len() - info.body_offset - 16 < len,
                            "compressed smaller"
                        );
                    }
                    let back = opener.open(&sealed, ctx.as_bytes()).unwrap();
                    assert!(back == source, "{codec} {cipher} {len}");
                }
            }
        }
        // The largest record a sealed record holds, and one byte more.
        let mut s = sealer(Codec::Zstd(1), cipher, None);
        let sealed = s.seal(&text, b"").unwrap();
        assert_eq!(opener.open(&sealed, b"").unwrap(), text);
        let over = [&text[..], b"x"].concat();
        let e = s.seal(&over, b"").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.to_string().contains("container"), "{e}");
    }
}

#[test]
fn random_data_is_stored_and_text_compressed_as_expected() {
    let mut s = sealer(Codec::Zstd(3), RecordCipher::default(), None);
    let sealed = s.seal(&common::noise(200, 9), b"").unwrap();
    assert_eq!(inspect(&sealed).unwrap().codec, Codec::None);
    assert_eq!(sealed.len(), 230);
    let sealed = s.seal(&[b'a'; 200], b"").unwrap();
    assert_eq!(inspect(&sealed).unwrap().codec, Codec::Zstd(0));
    assert!(sealed.len() < 60, "{}", sealed.len());
}

#[test]
fn seal_many_equals_seal_one_by_one_and_nonces_never_repeat() {
    let records = json_records(600, 1);
    let contexts: Vec<String> = (0..600).map(|i| format!("row:{i}")).collect();
    let mut s = sealer(Codec::Zstd(3), RecordCipher::default(), Some(dictionary()));
    let many = s.seal_many(&records, Some(&contexts[..])).unwrap();
    let mut o = Opener::new(&key(), &[dictionary()]).unwrap();
    let back = o.open_many(&many, Some(&contexts[..])).unwrap();
    assert_eq!(back, records);
    let mut nonces: Vec<&[u8]> = many.iter().map(|r| &r[6..18]).collect();
    nonces.sort_unstable();
    nonces.dedup();
    assert_eq!(nonces.len(), 600);
    // Apart from the nonce and what it changes, one by one gives the same sizes.
    for (r, m) in records.iter().zip(&many).take(50) {
        assert_eq!(s.seal(r, b"x").unwrap().len(), m.len());
    }
    let e = s.seal_many(&records, Some(&contexts[..3])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOption);
}

#[test]
fn a_record_opens_only_with_its_key_context_and_dictionary() {
    let dict = dictionary();
    let record = &json_records(1, 5)[0];
    for cipher in CIPHERS {
        let mut s = sealer(Codec::Zstd(3), cipher, Some(dict.clone()));
        let sealed = s.seal(record, b"user:1").unwrap();
        assert!(inspect(&sealed).unwrap().dictionary.is_some());
        let mut good = Opener::new(&key(), std::slice::from_ref(&dict)).unwrap();
        assert_eq!(&good.open(&sealed, b"user:1").unwrap(), record);
        for ctx in [&b"user:2"[..], b"", b"user:1 ", b"user:"] {
            let e = good.open(&sealed, ctx).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::RecordAuth, "{e}");
        }
        let other = RecordKey::generate().unwrap();
        let e = Opener::new(&other, std::slice::from_ref(&dict))
            .unwrap()
            .open(&sealed, b"user:1")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RecordAuth);
        assert!(e.to_string().contains("context"), "{e}");
        // No dictionary: an error naming the id, not garbage.
        let e = Opener::new(&key(), &[])
            .unwrap()
            .open(&sealed, b"user:1")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DictionaryMissing);
        assert!(e.to_string().contains(&dict.id().to_string()), "{e}");
        // Another dictionary with the same id: authentication fails, nothing is returned.
        let e = Opener::new(&key(), &[same_id_other_dictionary()])
            .unwrap()
            .open(&sealed, b"user:1")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RecordAuth);
    }
    let e = Opener::new(&key(), &[dict, same_id_other_dictionary()]).err();
    assert_eq!(e.map(|e| e.kind()), Some(ErrorKind::InvalidOption));
}

#[test]
fn every_flip_cut_and_insertion_is_refused() {
    let dict = dictionary();
    let record = &json_records(1, 6)[0];
    for cipher in CIPHERS {
        for (codec, d) in [
            (Codec::Zstd(3), Some(dict.clone())),
            (Codec::Lz4, None),
            (Codec::None, None),
        ] {
            let mut s = sealer(codec, cipher, d);
            let sealed = s.seal(record, b"ctx").unwrap();
            let mut o = Opener::new(&key(), std::slice::from_ref(&dict)).unwrap();
            let mut out = vec![1u8];
            for i in 0..sealed.len() {
                for bit in [0x01u8, 0x80] {
                    let mut bad = sealed.clone();
                    bad[i] ^= bit;
                    let e = o.open_into(&bad, b"ctx", &mut out).unwrap_err();
                    assert!(out.is_empty(), "nothing is released");
                    assert!(
                        matches!(
                            e.kind(),
                            ErrorKind::RecordAuth
                                | ErrorKind::NotRecord
                                | ErrorKind::DictionaryMissing
                        ),
                        "byte {i}: {e}"
                    );
                }
            }
            for cut in 0..sealed.len() {
                assert!(o.open(&sealed[..cut], b"ctx").is_err(), "cut at {cut}");
            }
            for at in 0..=sealed.len() {
                let bad = [&sealed[..at], &b"\0"[..], &sealed[at..]].concat();
                assert!(o.open(&bad, b"ctx").is_err(), "insertion at {at}");
            }
        }
    }
}

#[test]
fn damaged_or_foreign_dictionaries_and_bad_options_are_refused() {
    for bad in [Vec::new(), b"not a dictionary at all".to_vec(), {
        let mut d = dictionary().as_bytes().to_vec();
        d[4..8].copy_from_slice(&[0; 4]);
        d
    }] {
        assert_eq!(
            Dictionary::from_bytes(bad).unwrap_err().kind(),
            ErrorKind::InvalidOption
        );
    }
    let e = Dictionary::train(&json_records(3, 1), 4096).unwrap_err();
    assert!(e.to_string().contains("too few samples"), "{e}");
    let opts = SealerOptions {
        codec: Codec::Lz4,
        cipher: RecordCipher::default(),
        dictionary: Some(dictionary()),
    };
    assert!(Sealer::new(&key(), opts).is_err());
    let opts = SealerOptions {
        codec: Codec::Gzip(6),
        ..SealerOptions::default()
    };
    assert!(Sealer::new(&key(), opts).is_err());
}

#[test]
fn a_trained_dictionary_shrinks_small_json_records_well_below_their_size() {
    let train = json_records(2000, 11);
    let dict = Arc::new(Dictionary::train(&train, 8 * 1024).unwrap());
    let test = json_records(1000, 12);
    let input: usize = test.iter().map(Vec::len).sum();
    let mut with = sealer(Codec::Zstd(3), RecordCipher::default(), Some(dict.clone()));
    let mut without = sealer(Codec::Zstd(3), RecordCipher::default(), None);
    let out_with: usize = test.iter().map(|r| with.seal(r, b"").unwrap().len()).sum();
    let out_without: usize = test
        .iter()
        .map(|r| without.seal(r, b"").unwrap().len())
        .sum();
    // Every byte counted: header, nonce, tag, dictionary id.
    assert!(out_with * 10 < input * 7, "{out_with} of {input}");
    assert!(
        out_without > input,
        "without a dictionary they grow: {out_without} of {input}"
    );
    let mut o = Opener::new(&key(), &[dict]).unwrap();
    for r in &test[..20] {
        let s = with.seal(r, b"").unwrap();
        assert_eq!(&o.open(&s, b"").unwrap(), r);
    }
}

#[test]
fn record_key_containers_round_trip_and_refuse_other_plaintext() {
    let pw = common::pass("record key pass");
    let k = RecordKey::generate().unwrap();
    let c = k.to_container(&[&pw]).unwrap();
    let back = RecordKey::from_container(&c[..], &[&pw]).unwrap();
    assert_eq!(back.expose(), k.expose());
    let other = zseal::encrypt_to_vec(b"hello", &[&pw], &Default::default()).unwrap();
    let e = RecordKey::from_container(&other[..], &[&pw]).unwrap_err();
    assert!(e.to_string().contains("not a zseal record key"), "{e}");
    let mut text = k.to_text().as_bytes().to_vec();
    text.extend_from_slice(b"more");
    let longer = zseal::encrypt_to_vec(&text, &[&pw], &Default::default()).unwrap();
    assert!(RecordKey::from_container(&longer[..], &[&pw]).is_err());
}

// ---- the independent construction and the vectors ----

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn peer_key(cipher: RecordCipher) -> [u8; 32] {
    let mut k = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(&[]), key().expose())
        .expand(
            format!("zseal v1 record {}", cipher.name()).as_bytes(),
            &mut k,
        )
        .unwrap();
    k
}

/// FORMAT.md §9 written out by hand: `flags` and `payload` as given, the AEAD from RustCrypto.
fn peer_seal(
    cipher: RecordCipher,
    flags: u8,
    dict: Option<&Dictionary>,
    nonce: &[u8],
    payload: &[u8],
    context: &[u8],
) -> Vec<u8> {
    let mut out = vec![1u8, flags];
    if let Some(d) = dict {
        out.extend_from_slice(&d.id().to_le_bytes());
    }
    let mut aad = out.clone();
    if let Some(d) = dict {
        aad.extend_from_slice(blake3::hash(d.as_bytes()).as_bytes());
    }
    aad.extend_from_slice(context);
    out.extend_from_slice(nonce);
    let mut body = payload.to_vec();
    let k = peer_key(cipher);
    let tag = match cipher {
        RecordCipher::Aes256GcmSiv => aes_gcm_siv::Aes256GcmSiv::new(&k.into())
            .encrypt_in_place_detached(nonce.into(), &aad, &mut body)
            .unwrap()
            .to_vec(),
        _ => chacha20poly1305::XChaCha20Poly1305::new(&k.into())
            .encrypt_in_place_detached(nonce.into(), &aad, &mut body)
            .unwrap()
            .to_vec(),
    };
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    out
}

/// Opens with the independent construction and decodes the payload with the ordinary zstd
/// decoder (magic put back) or lz4.
fn peer_open(sealed: &[u8], context: &[u8], dict: Option<&Dictionary>) -> Option<Vec<u8>> {
    let flags = sealed[1];
    let cipher = if flags & 8 != 0 {
        RecordCipher::XChaCha20Poly1305
    } else {
        RecordCipher::Aes256GcmSiv
    };
    let head = if flags & 4 != 0 { 6 } else { 2 };
    let n = cipher.nonce_len();
    let mut aad = sealed[..head].to_vec();
    if flags & 4 != 0 {
        aad.extend_from_slice(blake3::hash(dict?.as_bytes()).as_bytes());
    }
    aad.extend_from_slice(context);
    let nonce = &sealed[head..head + n];
    let (body, tag) = sealed[head + n..].split_at(sealed.len() - head - n - 16);
    let mut body = body.to_vec();
    let k = peer_key(cipher);
    match cipher {
        RecordCipher::Aes256GcmSiv => aes_gcm_siv::Aes256GcmSiv::new(&k.into())
            .decrypt_in_place_detached(nonce.into(), &aad, &mut body, tag.into())
            .ok()?,
        _ => chacha20poly1305::XChaCha20Poly1305::new(&k.into())
            .decrypt_in_place_detached(nonce.into(), &aad, &mut body, tag.into())
            .ok()?,
    }
    match flags & 3 {
        0 => Some(body),
        1 => {
            let frame = [&0xFD2FB528u32.to_le_bytes()[..], &body].concat();
            let mut d = match dict.filter(|_| flags & 4 != 0) {
                Some(d) => zstd::bulk::Decompressor::with_dictionary(d.as_bytes()).unwrap(),
                None => zstd::bulk::Decompressor::new().unwrap(),
            };
            d.decompress(&frame, MAX_RECORD_LEN).ok()
        }
        _ => lz4_flex::block::decompress_size_prepended(&body).ok(),
    }
}

#[test]
fn the_independent_construction_opens_what_zseal_seals() {
    let dict = dictionary();
    let records = json_records(40, 21);
    for cipher in CIPHERS {
        for (codec, d) in [
            (Codec::None, None),
            (Codec::Zstd(3), None),
            (Codec::Zstd(3), Some(dict.clone())),
            (Codec::Lz4, None),
        ] {
            let mut s = sealer(codec, cipher, d);
            for (i, r) in records.iter().enumerate() {
                let record = if i % 10 == 9 {
                    common::noise(i * 7, i as u64)
                } else {
                    r.repeat(1 + i % 3)
                };
                let sealed = s.seal(&record, b"ctx").unwrap();
                let back = peer_open(&sealed, b"ctx", Some(&dict));
                assert_eq!(back.as_deref(), Some(&record[..]), "{codec} {cipher} {i}");
                assert_eq!(peer_open(&sealed, b"ctX", Some(&dict)), None);
            }
        }
    }
}

/// The vectors: each made by the independent construction with a fixed nonce.
fn vectors() -> Vec<Value> {
    let dict = dictionary();
    let siv = RecordCipher::Aes256GcmSiv;
    let xc = RecordCipher::XChaCha20Poly1305;
    let n12: Vec<u8> = (0..12).collect();
    let n24: Vec<u8> = (100..124).collect();
    let json = json_records(1, 77).remove(0);
    let text = common::data(300);
    let zstd_frame = |record: &[u8], d: Option<&Dictionary>| {
        let mut c = match d {
            Some(d) => zstd::bulk::Compressor::with_dictionary(3, d.as_bytes()).unwrap(),
            None => zstd::bulk::Compressor::new(3).unwrap(),
        };
        c.set_parameter(zstd::stream::raw::CParameter::DictIdFlag(false))
            .unwrap();
        c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(false))
            .unwrap();
        let f = c.compress(record).unwrap();
        assert_eq!(f[..4], 0xFD2FB528u32.to_le_bytes());
        f[4..].to_vec()
    };
    let lz4 = |record: &[u8]| lz4_flex::block::compress_prepend_size(record);
    let mut v = Vec::new();
    let mut add = |name: &str,
                   comment: &str,
                   record: Vec<u8>,
                   context: &[u8],
                   open_with: &str,
                   expect: &str,
                   plaintext: Option<&[u8]>| {
        v.push(json!({
            "name": name,
            "comment": comment,
            "record": hex(&record),
            "context": hex(context),
            "dictionary": open_with,
            "expect": expect,
            "plaintext": plaintext.map(hex),
        }));
    };
    let d = Some(&*dict);
    let ok = "ok";
    add(
        "ok-stored",
        "stored raw, AES-256-GCM-SIV",
        peer_seal(siv, 0, None, &n12, b"hi", b"user:1"),
        b"user:1",
        "",
        ok,
        Some(b"hi"),
    );
    add(
        "ok-empty",
        "an empty record and an empty context",
        peer_seal(siv, 0, None, &n12, b"", b""),
        b"",
        "",
        ok,
        Some(b""),
    );
    add(
        "ok-zstd",
        "zstd, magicless frame",
        peer_seal(siv, 1, None, &n12, &zstd_frame(&text, None), b"k"),
        b"k",
        "",
        ok,
        Some(&text),
    );
    add(
        "ok-zstd-dict",
        "zstd with json.dict",
        peer_seal(siv, 5, d, &n12, &zstd_frame(&json, d), b"row:7"),
        b"row:7",
        "json.dict",
        ok,
        Some(&json),
    );
    add(
        "ok-lz4",
        "LZ4 block after its u32 length",
        peer_seal(siv, 2, None, &n12, &lz4(&text), b"k"),
        b"k",
        "",
        ok,
        Some(&text),
    );
    add(
        "ok-xchacha-stored",
        "stored raw, XChaCha20-Poly1305",
        peer_seal(xc, 8, None, &n24, b"hi", b"user:1"),
        b"user:1",
        "",
        ok,
        Some(b"hi"),
    );
    add(
        "ok-xchacha-zstd-dict",
        "XChaCha20-Poly1305, zstd with json.dict",
        peer_seal(xc, 13, d, &n24, &zstd_frame(&json, d), b"row:7"),
        b"row:7",
        "json.dict",
        ok,
        Some(&json),
    );
    let good = peer_seal(siv, 5, d, &n12, &zstd_frame(&json, d), b"row:7");
    add(
        "bad-context",
        "opened under another name",
        good.clone(),
        b"row:8",
        "json.dict",
        "error record auth",
        None,
    );
    let mut b = good.clone();
    let last = b.len() - 1;
    b[last] ^= 1;
    add(
        "bad-tag",
        "last tag byte flipped",
        b,
        b"row:7",
        "json.dict",
        "error record auth",
        None,
    );
    let mut b = good.clone();
    b[2] ^= 1;
    add(
        "bad-dict-id",
        "the dictionary id changed",
        b,
        b"row:7",
        "json.dict",
        "error dictionary missing",
        None,
    );
    add(
        "bad-same-id-dictionary",
        "opened with another dictionary that has the same id",
        good.clone(),
        b"row:7",
        "json-same-id.dict",
        "error record auth",
        None,
    );
    add(
        "bad-no-dictionary",
        "opened without the dictionary",
        good.clone(),
        b"row:7",
        "",
        "error dictionary missing",
        None,
    );
    let zs = peer_seal(siv, 1, None, &n12, &zstd_frame(&text, None), b"k");
    let mut b = zs.clone();
    b[1] = 0;
    add(
        "bad-codec-bits",
        "zstd relabelled as stored",
        b,
        b"k",
        "",
        "error record auth",
        None,
    );
    let mut b = zs.clone();
    b[1] = 9;
    add(
        "bad-cipher-bit",
        "relabelled XChaCha20-Poly1305",
        b,
        b"k",
        "",
        "error record auth",
        None,
    );
    let mut b = zs.clone();
    b[0] = 2;
    add(
        "bad-version",
        "version 2",
        b,
        b"k",
        "",
        "error not record",
        None,
    );
    let mut b = zs.clone();
    b[1] |= 0x40;
    add(
        "bad-reserved-flag",
        "a reserved flag bit",
        b,
        b"k",
        "",
        "error not record",
        None,
    );
    add(
        "bad-short",
        "shorter than header, nonce and tag",
        zs[..29].to_vec(),
        b"k",
        "",
        "error not record",
        None,
    );
    add(
        "bad-codec-3",
        "codec 3",
        peer_seal(siv, 3, None, &n12, b"x", b"k"),
        b"k",
        "",
        "error not record",
        None,
    );
    add(
        "bad-dict-without-zstd",
        "dictionary flag with LZ4",
        peer_seal(siv, 6, d, &n12, &lz4(&json), b"k"),
        b"k",
        "json.dict",
        "error not record",
        None,
    );
    // Key holders (or writer bugs): authentic, inconsistent payloads.
    let big = zstd_frame(&vec![0u8; MAX_RECORD_LEN + 1], None);
    add(
        "kh-zstd-over-limit",
        "a zstd frame declaring 16 MiB + 1",
        peer_seal(siv, 1, None, &n12, &big, b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    let f = zstd_frame(&text, None);
    add(
        "kh-zstd-cut",
        "a zstd frame cut short",
        peer_seal(siv, 1, None, &n12, &f[..f.len() - 3], b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    let trailing = [&f[..], &f[..]].concat();
    add(
        "kh-zstd-two-frames",
        "two frames where one is allowed",
        peer_seal(siv, 1, None, &n12, &trailing, b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    let mut l = lz4(&text);
    l[0] = l[0].wrapping_add(1);
    add(
        "kh-lz4-length",
        "an LZ4 length one more than the block gives",
        peer_seal(siv, 2, None, &n12, &l, b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    add(
        "kh-lz4-no-length",
        "an LZ4 payload of 3 bytes",
        peer_seal(siv, 2, None, &n12, b"abc", b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    let nodecl = {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut e, &text).unwrap();
        e.finish().unwrap()[4..].to_vec()
    };
    add(
        "kh-zstd-no-length",
        "a zstd frame without Frame_Content_Size",
        peer_seal(siv, 1, None, &n12, &nodecl, b"k"),
        b"k",
        "",
        "error record invalid",
        None,
    );
    v
}

fn opener_for(name: &str) -> Opener {
    let dicts = match name {
        "json.dict" => vec![dictionary()],
        "json-same-id.dict" => vec![same_id_other_dictionary()],
        _ => vec![],
    };
    Opener::new(&key(), &dicts).unwrap()
}

#[test]
fn committed_vectors_give_their_results_and_zseal_seals_them_byte_for_byte() {
    let generated = serde_json::to_string_pretty(&vectors()).unwrap() + "\n";
    let path = dir().join("vectors.json");
    if std::env::var_os("ZSEAL_REGENERATE_VECTORS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == generated,
        "vectors.json differs from the generator"
    );
    let list: Vec<Value> = serde_json::from_str(&committed).unwrap();
    assert!(list.len() >= 25);
    for v in &list {
        let name = v["name"].as_str().unwrap();
        let record = unhex(v["record"].as_str().unwrap());
        let context = unhex(v["context"].as_str().unwrap());
        let mut o = opener_for(v["dictionary"].as_str().unwrap());
        let got = o.open(&record, &context);
        match v["expect"].as_str().unwrap() {
            "ok" => {
                let plain = unhex(v["plaintext"].as_str().unwrap());
                assert_eq!(got.as_ref().ok(), Some(&plain), "{name}");
                // zseal's sealer, given the vector's nonce, writes exactly the vector's bytes.
                let info = inspect(&record).unwrap();
                let n = info.cipher.nonce_len();
                let nonce = &record[info.body_offset - n..info.body_offset];
                let codec = match info.codec {
                    Codec::None => Codec::None,
                    Codec::Lz4 => Codec::Lz4,
                    _ => Codec::Zstd(3),
                };
                let d = info.dictionary.map(|_| dictionary());
                let mut s = sealer(codec, info.cipher, d);
                let mut out = Vec::new();
                s.seal_with_nonce(&plain, &context, nonce, &mut out)
                    .unwrap();
                assert_eq!(hex(&out), hex(&record), "{name}: zseal seals other bytes");
            }
            e => {
                let kind = e.strip_prefix("error ").unwrap();
                let err = got.expect_err(name);
                assert_eq!(err.kind().name(), kind, "{name}: {err}");
            }
        }
    }
}

#[test]
fn the_committed_dictionary_is_what_training_makes() {
    let trained = Dictionary::train(&json_records(3000, 1234), 4096).unwrap();
    let path = dir().join("json.dict");
    if std::env::var_os("ZSEAL_REGENERATE_VECTORS").is_some() {
        std::fs::create_dir_all(dir()).unwrap();
        std::fs::write(&path, trained.as_bytes()).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == trained.as_bytes());
}

/// FORMAT.md §9.1: the payload of a zstd record is exactly one magicless frame. A key holder's
/// record whose payload continues after the frame (an empty frame, a second frame, junk) is
/// refused; the frame alone opens.
#[test]
fn nothing_may_follow_the_zstd_frame() {
    let record = b"{\"id\":1,\"user\":\"alice\"}".repeat(20);
    // A magicless frame of `data`, as zseal writes it (content size in the header).
    let frame = |data: &[u8]| {
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.include_contentsize(true).unwrap();
        c.compress(data).unwrap()[4..].to_vec()
    };
    let opener = || Opener::new(&key(), &[]).unwrap();
    let one = frame(&record);
    let nonce = [7u8; 12];
    let sealed = peer_seal(RecordCipher::Aes256GcmSiv, 1, None, &nonce, &one, b"ctx");
    assert_eq!(opener().open(&sealed, b"ctx").unwrap(), record);
    for (what, tail) in [
        ("an empty frame", frame(b"")),
        ("a second frame", frame(b"more")),
        ("junk", vec![0u8; 3]),
    ] {
        // The following frame keeps its magic, as a concatenation of two frames would.
        let tail = match what {
            "junk" => tail,
            _ => [&0xFD2FB528u32.to_le_bytes()[..], &tail].concat(),
        };
        let payload = [&one[..], &tail].concat();
        let sealed = peer_seal(
            RecordCipher::Aes256GcmSiv,
            1,
            None,
            &nonce,
            &payload,
            b"ctx",
        );
        let e = opener().open(&sealed, b"ctx").unwrap_err().to_string();
        assert!(e.contains("follow its zstd frame"), "{what}: {e}");
    }
}
