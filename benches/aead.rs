//! Why the payload AEAD comes from aws-lc-rs: the same 4 MiB frame sealed by aws-lc-rs (what
//! zseal uses) and by RustCrypto (what it used before, and the independent implementation the
//! tests check frames against), both ciphers, in the same run. Two cases per implementation:
//! `hot` seals one buffer again and again (it stays in cache); `streaming` seals a different
//! buffer of a 256 MiB set each time, as the engine does with chunks read from a file.
//! `cargo bench --bench aead`.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const FRAME: usize = 4 << 20;
const SET: usize = 64;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("aead-4MiB");
    g.throughput(Throughput::Bytes(FRAME as u64));
    g.sample_size(20);
    let key = [7u8; 32];
    let mut bufs: Vec<Vec<u8>> = (0..SET).map(|i| vec![i as u8; FRAME]).collect();
    for (name, alg) in [
        ("aes-256-gcm", &AES_256_GCM),
        ("chacha20-poly1305", &CHACHA20_POLY1305),
    ] {
        let k = LessSafeKey::new(UnboundKey::new(alg, &key).unwrap());
        for (case, set) in [("hot", 1), ("streaming", SET)] {
            let mut i = 0;
            g.bench_function(format!("{name}/aws-lc-rs/{case}"), |b| {
                b.iter(|| {
                    i = (i + 1) % set;
                    k.seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key([0; 12]),
                        Aad::empty(),
                        &mut bufs[i],
                    )
                    .unwrap()
                })
            });
        }
    }
    let aes = aes_gcm::Aes256Gcm::new(&key.into());
    let chacha = chacha20poly1305::ChaCha20Poly1305::new(&key.into());
    for (case, set) in [("hot", 1), ("streaming", SET)] {
        let mut i = 0;
        g.bench_function(format!("aes-256-gcm/rustcrypto/{case}"), |b| {
            b.iter(|| {
                i = (i + 1) % set;
                aes.encrypt_in_place_detached(&[0; 12].into(), b"", &mut bufs[i])
                    .unwrap()
            })
        });
        g.bench_function(format!("chacha20-poly1305/rustcrypto/{case}"), |b| {
            b.iter(|| {
                i = (i + 1) % set;
                chacha
                    .encrypt_in_place_detached(&[0; 12].into(), b"", &mut bufs[i])
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
