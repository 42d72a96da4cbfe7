//! The whole `zseal bench` matrix under criterion, with its HTML reports
//! (target/criterion/report/index.html): stage order, codecs and levels, ciphers, hashes
//! (SHA-256 as the reference), chunk sizes, thread counts and small records, each in both
//! directions, as `Throughput::Bytes` of the plaintext.
//!
//! Input: the first 32 MiB (ZSEAL_BENCH_BYTES) of text_100M.tar from
//! ../shared/corpus/make_corpus.sh, found in $ZSEAL_CORPUS or /tmp/zseal-corpus; without the
//! corpus, fixtures/sample.log. `ZSEAL_BENCH_QUICK=1` runs the quick subset of `zseal bench`.
//!
//! `cargo bench --bench matrix`, or one question: `cargo bench --bench matrix -- order/`.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zseal::bench::{Case, Engine, Plan};

fn input() -> (String, Vec<u8>) {
    let dir = std::env::var("ZSEAL_CORPUS").unwrap_or_else(|_| "/tmp/zseal-corpus".into());
    let limit: usize = std::env::var("ZSEAL_BENCH_BYTES")
        .ok()
        .and_then(|v| zseal::units::parse_size(&v).ok())
        .map_or(32 << 20, |v| v as usize);
    let corpus = Path::new(&dir).join("text_100M.tar");
    let path = if corpus.exists() {
        corpus
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.log")
    };
    let mut data = std::fs::read(&path).expect("bench input");
    data.truncate(limit);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    (name, data)
}

/// The parameter that varies within the case's question.
fn id(c: &Case) -> String {
    match c.group {
        "order" => c.order.name().to_string(),
        "codec" => c.codec.name(),
        "cipher" => c.cipher.name().to_string(),
        "hash" => c.hash.name().to_string(),
        "chunk" => zseal::units::human_bytes(c.chunk as u64).replace(' ', ""),
        "threads" => format!("{}t", c.threads),
        _ => match c.engine {
            Engine::Records(n) => format!("{n}B-{}", c.codec.name()),
            _ => c.label(),
        },
    }
}

fn matrix(cr: &mut Criterion) {
    let (name, data) = input();
    let quick = std::env::var_os("ZSEAL_BENCH_QUICK").is_some();
    let plan = Plan::new(!quick);
    let cases = plan.cases();
    let groups: Vec<&str> = {
        let mut g: Vec<&str> = cases.iter().map(|c| c.group).collect();
        g.dedup();
        g
    };
    for group in groups {
        for direction in ["encrypt", "decrypt"] {
            let mut g = cr.benchmark_group(format!("{group}/{direction}/{name}"));
            g.sample_size(10);
            for case in cases.iter().filter(|c| c.group == group) {
                let p = case.prepare(&data).expect("case set up");
                // Plaintext bytes in both directions, so that codecs compare on the data the
                // user has, whatever their ratio (`zseal bench` shows both sides).
                g.throughput(Throughput::Bytes(p.plain_len(&data)));
                g.bench_function(BenchmarkId::from_parameter(id(case)), |b| {
                    if direction == "encrypt" {
                        b.iter(|| p.encrypt(&data).unwrap())
                    } else {
                        b.iter(|| p.decrypt().unwrap())
                    }
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, matrix);
criterion_main!(benches);
