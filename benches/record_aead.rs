//! The measurement behind the record cipher (docs/FORMAT.md §9.5): one 200-byte record sealed
//! and opened with a fresh random nonce each time, for every construction considered.
//!
//! - AES-256-GCM, 96-bit random nonce (aws-lc-rs): what the store in issue 15 used; its
//!   per-key limit is 2^32 records (NIST SP 800-38D §8.3), and one repeated nonce reveals the
//!   authentication key.
//! - AES-256-GCM-SIV, 96-bit random nonce (aws-lc-rs, RFC 8452): a key per nonce; far higher
//!   limits, and a repeated nonce reveals only that two records were equal.
//! - XChaCha20-Poly1305, 192-bit random nonce (RustCrypto): no practical limit.
//! - ChaCha20-Poly1305, 96-bit (aws-lc-rs): the container's second cipher, for reference.
//!
//! Nonces come from aws-lc-rs's DRBG (`fill`), as the records module draws them; `nonce-only`
//! measures that alone. `cargo bench --bench record_aead`.

use aws_lc_rs::aead::{
    Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, AES_256_GCM_SIV, CHACHA20_POLY1305,
};
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const RECORD: usize = 200;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("record-200B");
    g.throughput(Throughput::Elements(1));
    let key = [7u8; 32];
    let record = [0x41u8; RECORD];
    let aad = b"user:123456";
    g.bench_function("nonce-only/24B", |b| {
        b.iter(|| {
            let mut n = [0u8; 24];
            aws_lc_rs::rand::fill(&mut n).unwrap();
            n
        })
    });
    g.bench_function("nonce-only/24B/getrandom", |b| {
        b.iter(|| {
            let mut n = [0u8; 24];
            rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut n);
            n
        })
    });
    let mut drbg = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_entropy();
    g.bench_function("nonce-only/24B/chacha20-drbg", |b| {
        b.iter(|| {
            let mut n = [0u8; 24];
            rand_core::RngCore::fill_bytes(&mut drbg, &mut n);
            n
        })
    });
    g.bench_function("getpid", |b| b.iter(std::process::id));
    for (name, alg) in [
        ("aes-256-gcm", &AES_256_GCM),
        ("aes-256-gcm-siv", &AES_256_GCM_SIV),
        ("chacha20-poly1305", &CHACHA20_POLY1305),
    ] {
        let k = LessSafeKey::new(UnboundKey::new(alg, &key).unwrap());
        g.bench_function(format!("{name}/seal+open"), |b| {
            b.iter(|| {
                let mut n = [0u8; 12];
                aws_lc_rs::rand::fill(&mut n).unwrap();
                let mut buf = record.to_vec();
                k.seal_in_place_append_tag(
                    Nonce::assume_unique_for_key(n),
                    Aad::from(aad),
                    &mut buf,
                )
                .unwrap();
                let out = k
                    .open_in_place(Nonce::assume_unique_for_key(n), Aad::from(aad), &mut buf)
                    .unwrap();
                out.len()
            })
        });
    }
    let x = chacha20poly1305::XChaCha20Poly1305::new(&key.into());
    g.bench_function("xchacha20-poly1305/seal+open", |b| {
        b.iter(|| {
            let mut n = [0u8; 24];
            aws_lc_rs::rand::fill(&mut n).unwrap();
            let mut buf = record.to_vec();
            let tag = x
                .encrypt_in_place_detached(&n.into(), aad, &mut buf)
                .unwrap();
            x.decrypt_in_place_detached(&n.into(), aad, &mut buf, &tag)
                .unwrap();
            buf.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
