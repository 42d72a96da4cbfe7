//! Every way a container can be damaged must fail with a clear error, and nothing but
//! authenticated plaintext may come out before the failure.

use crate::common;

use common::*;
use zseal::{DecryptOptions, Decryptor, EncryptOptions, Error, Passphrase};

const CHUNK: usize = 1024;
const HEADER_LEN: usize = 50 + 3 + 60 + 32;

fn small() -> (Vec<u8>, Vec<u8>, Passphrase) {
    sample("tamper", 3 * CHUNK + 100, CHUNK, 9)
}

/// Decrypts, returning what was released and the error; panics if it succeeds.
fn must_fail(container: &[u8], pw: &Passphrase, threads: usize, plain: &[u8], what: &str) -> Error {
    let mut out = Vec::new();
    let r = Decryptor::new(
        container,
        &[pw],
        &DecryptOptions::default().threads(threads),
    )
    .and_then(|mut d| d.copy_to(&mut out));
    match r {
        Ok(_) => panic!("{what}: damaged container decrypted without error"),
        Err(e) => {
            assert!(
                plain.starts_with(&out),
                "{what}: released bytes that are not the plaintext"
            );
            e
        }
    }
}

fn frames(c: &[u8]) -> Vec<(usize, usize)> {
    common::frames(c, HEADER_LEN)
}

#[test]
fn layout_is_as_format_md_says() {
    let (plain, sealed, _) = small();
    let f = frames(&sealed);
    assert_eq!(f.len(), 5, "4 data frames and the final frame");
    let (fin_at, fin_len) = f[4];
    assert_eq!(fin_len, 101);
    assert_eq!(sealed.len(), fin_at + 101 + 4 * 4 + 16);
    assert_eq!(&sealed[sealed.len() - 8..], b"ZSEALEND");
    assert_eq!(&sealed[..8], b"\x89ZSEAL\r\n");
    assert!(plain.len() > 3 * CHUNK);
}

#[test]
fn every_flipped_byte_is_detected() {
    let (plain, sealed, pw) = small();
    for i in 0..sealed.len() {
        for mask in [0x01u8, 0x80] {
            let mut c = sealed.clone();
            c[i] ^= mask;
            must_fail(&c, &pw, 1 + i % 2, &plain, &format!("byte {i} ^ {mask:#x}"));
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    let (plain, sealed, pw) = small();
    for n in 0..sealed.len() {
        let e = must_fail(&sealed[..n], &pw, 2, &plain, &format!("truncated to {n}"));
        let msg = e.to_string();
        assert!(
            msg.contains("truncated")
                || msg.contains("not a zseal, age or crypt4gh file")
                || msg.contains("damaged"),
            "truncated to {n}: unclear error: {msg}"
        );
    }
}

#[test]
fn flipped_chunk_names_the_chunk() {
    let (plain, sealed, pw) = small();
    let f = frames(&sealed);
    let mut c = sealed.clone();
    c[f[2].0 + 20] ^= 1;
    let e = must_fail(&c, &pw, 2, &plain, "chunk 2 body");
    assert!(matches!(e, Error::ChunkAuth(2)), "{e}");
    assert_eq!(
        e.to_string(),
        "chunk 2 failed authentication: it is damaged or was tampered with (the key is right: the header verified with it); fetch the file again or restore it from a copy"
    );
}

fn splice(c: &[u8], parts: &[std::ops::Range<usize>]) -> Vec<u8> {
    parts
        .iter()
        .flat_map(|r| c[r.clone()].iter().copied())
        .collect()
}

#[test]
fn dropped_duplicated_reordered_and_foreign_chunks_are_detected() {
    let (plain, sealed, pw) = small();
    let f = frames(&sealed);
    let fr = |i: usize| f[i].0..f[i].0 + f[i].1;
    let head = 0..HEADER_LEN;
    let tail = f[4].0..sealed.len();
    let cases = [
        (
            "dropped chunk 1",
            splice(&sealed, &[head.clone(), fr(0), fr(2), fr(3), tail.clone()]),
        ),
        (
            "duplicated chunk 1",
            splice(
                &sealed,
                &[
                    head.clone(),
                    fr(0),
                    fr(1),
                    fr(1),
                    fr(2),
                    fr(3),
                    tail.clone(),
                ],
            ),
        ),
        (
            "swapped chunks 1 and 2",
            splice(
                &sealed,
                &[head.clone(), fr(0), fr(2), fr(1), fr(3), tail.clone()],
            ),
        ),
        (
            "dropped last chunk",
            splice(&sealed, &[head.clone(), fr(0), fr(1), fr(2), tail.clone()]),
        ),
        (
            "no final frame",
            splice(&sealed, &[head.clone(), fr(0), fr(1), fr(2), fr(3)]),
        ),
        (
            "final frame twice",
            splice(&sealed, &[0..sealed.len(), tail.clone()]),
        ),
        (
            "appended chunk",
            splice(
                &sealed,
                &[
                    head.clone(),
                    fr(0),
                    fr(1),
                    fr(2),
                    fr(3),
                    fr(3),
                    tail.clone(),
                ],
            ),
        ),
    ];
    for (what, c) in cases {
        must_fail(&c, &pw, 2, &plain, what);
    }
    // A chunk from another file with the same passphrase: another file key, so it cannot open.
    let other = seal(
        &plain,
        &pw,
        &EncryptOptions::default().chunk_size(CHUNK),
        10,
    );
    let g = frames(&other);
    let mut c = sealed[..f[1].0].to_vec();
    c.extend_from_slice(&other[g[1].0..g[1].0 + g[1].1]);
    c.extend_from_slice(&sealed[f[2].0..]);
    let e = must_fail(&c, &pw, 2, &plain, "foreign chunk");
    assert!(matches!(e, Error::ChunkAuth(1)), "{e}");
}

#[test]
fn trailing_data_is_rejected() {
    let (plain, sealed, pw) = small();
    let mut c = sealed.clone();
    c.push(0);
    let e = must_fail(&c, &pw, 2, &plain, "one trailing byte");
    assert!(matches!(e, Error::TrailingData), "{e}");
}

#[test]
fn wrong_passphrase_says_so() {
    let (plain, sealed, _) = small();
    let e = must_fail(&sealed, &pass("not it"), 2, &plain, "wrong passphrase");
    assert!(matches!(e, Error::WrongPassphrase), "{e}");
}

#[test]
fn header_fields_are_authenticated() {
    let (plain, sealed, pw) = small();
    // cipher, codec, level, hash, payload salt: each changed value must fail the header MAC.
    for at in [9usize, 10, 11, 12, 16, 47] {
        let mut c = sealed.clone();
        // Ids become another valid id (so parsing succeeds), other bytes are flipped.
        c[at] = match at {
            10 => 3, // zstd -> gzip: level 3 is valid for both
            9 | 12 => 2,
            _ => c[at] ^ 4,
        };
        let e = must_fail(&c, &pw, 2, &plain, &format!("header byte {at}"));
        // A passphrase file gives one answer: a changed header reads as a wrong passphrase.
        assert!(matches!(e, Error::WrongPassphrase), "header byte {at}: {e}");
    }
}

/// The review's oracle: with a passphrase, "the stanza did not unwrap" and "it unwrapped but the
/// header MAC failed" must be one and the same answer, message and kind.
#[test]
fn a_passphrase_file_gives_one_answer_for_wrong_key_and_changed_header() {
    let (plain, sealed, pw) = small();
    let wrong = must_fail(&sealed, &pass("not it"), 1, &plain, "wrong passphrase");
    let mut c = sealed.clone();
    c[20] ^= 1; // the payload salt: covered by the MAC, not by the stanza
    let changed = must_fail(&c, &pw, 1, &plain, "changed header");
    assert_eq!(wrong.to_string(), changed.to_string());
    assert_eq!(wrong.kind(), changed.kind());
}

#[test]
fn not_a_container_and_other_versions() {
    let (_, sealed, pw) = small();
    let e = Decryptor::new(
        &b"hello world, this is plain text and not zseal at all......."[..],
        &[&pw],
        &DecryptOptions::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, Error::NotZseal), "{e}");
    let mut c = sealed.clone();
    c[8] = 2;
    let e = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("version 2"), "{e}");
}

#[test]
fn oversized_frame_length_is_rejected_before_allocating() {
    let (plain, sealed, pw) = small();
    let f = frames(&sealed);
    let mut c = sealed.clone();
    c[f[0].0 + 1..f[0].0 + 5].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = must_fail(&c, &pw, 2, &plain, "huge frame length");
    assert!(e.to_string().contains("declares"), "{e}");
}
