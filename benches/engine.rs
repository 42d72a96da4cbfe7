//! The engine against its peers in the same run, on the same bytes and the same libzstd:
//! encrypt (zstd:3, aes-256-gcm, blake3) against zstd level 3 on all cores, decrypt against
//! single-threaded zstd decompression, and the one-time Argon2 derivation on its own.
//!
//! Input: text_100M.tar from ../shared/corpus/make_corpus.sh (in $ZSEAL_CORPUS or
//! /tmp/zseal-corpus) when present, else fixtures/sample.log. `cargo bench --bench engine`.

use std::io::{self, Write};
use std::path::Path;

mod common;

use common::pw;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zseal::{DecryptOptions, Decryptor, EncryptOptions, Encryptor, HashAlg, Passphrase};

fn input() -> (String, Vec<u8>) {
    let dir = std::env::var("ZSEAL_CORPUS").unwrap_or_else(|_| "/tmp/zseal-corpus".into());
    let corpus = Path::new(&dir).join("text_100M.tar");
    let path = if corpus.exists() {
        corpus
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.log")
    };
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    (name, std::fs::read(&path).expect("bench input"))
}

fn seal(data: &[u8], threads: usize, hash: HashAlg) -> Vec<u8> {
    let opts = EncryptOptions::default().threads(threads).hash(hash);
    let mut enc = Encryptor::new(Vec::with_capacity(data.len() / 4), &[&pw()], &opts).unwrap();
    enc.copy_from(&mut &data[..]).unwrap();
    enc.finish().unwrap()
}

fn engine(c: &mut Criterion) {
    let (name, data) = input();
    let cores = zseal::pipeline::available_threads();
    let mut g = c.benchmark_group(format!("encrypt/{name}"));
    g.sample_size(10)
        .throughput(Throughput::Bytes(data.len() as u64));
    for threads in [1, cores] {
        g.bench_function(BenchmarkId::new("zseal", format!("{threads}t")), |b| {
            b.iter(|| {
                let opts = EncryptOptions::default().threads(threads);
                let mut enc = Encryptor::new(io::sink(), &[&pw()], &opts).unwrap();
                enc.copy_from(&mut &data[..]).unwrap();
                enc.finish().unwrap();
            })
        });
    }
    g.bench_function(BenchmarkId::new("zstd-3", format!("{cores}t")), |b| {
        b.iter(|| {
            let mut e = zstd::stream::Encoder::new(io::sink(), 3).unwrap();
            e.multithread(cores as u32).unwrap();
            e.write_all(&data).unwrap();
            e.finish().unwrap();
        })
    });
    g.finish();

    let zst = zstd::bulk::compress(&data, 3).unwrap();
    let mut g = c.benchmark_group(format!("decrypt/{name}"));
    g.sample_size(10)
        .throughput(Throughput::Bytes(data.len() as u64));
    // BLAKE3 verification is the largest cost after decompression: show each hash's share.
    for (hash, thread_counts) in [
        (HashAlg::Blake3, vec![1, cores]),
        (HashAlg::Xxh3, vec![cores]),
        (HashAlg::None, vec![cores]),
    ] {
        let sealed = seal(&data, cores, hash);
        for threads in thread_counts {
            let id = BenchmarkId::new(format!("zseal-{}", hash.name()), format!("{threads}t"));
            g.bench_function(id, |b| {
                b.iter(|| {
                    let mut d = Decryptor::new(
                        &sealed[..],
                        &[&pw()],
                        &DecryptOptions::default().threads(threads),
                    )
                    .unwrap();
                    d.copy_to(&mut io::sink()).unwrap();
                })
            });
        }
    }
    g.bench_function("zstd-d/1t", |b| {
        b.iter(|| zstd::stream::copy_decode(&zst[..], io::sink()).unwrap())
    });
    g.finish();
}

fn kdf(c: &mut Criterion) {
    let pw = Passphrase::new("bench").unwrap();
    let mut g = c.benchmark_group("kdf");
    g.sample_size(10);
    g.bench_function("argon2id-default-46MiB-t3", |b| {
        b.iter(|| {
            let enc = Encryptor::new(io::sink(), &[&pw], &EncryptOptions::default()).unwrap();
            enc.finish().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, engine, kdf);
criterion_main!(benches);
