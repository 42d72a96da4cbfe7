//! Random access costs what the range costs: 1 MiB from the middle of a 4 GiB container (text.tar
//! from the corpus, four times over) against a full decrypt of the same container. Without the
//! corpus, a 64 MiB container of generated text stands in. The container is built once and kept
//! in target/ across runs. `cargo bench --bench range`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

mod common;

use common::pw;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zseal::{DecryptOptions, Decryptor, EncryptOptions, Encryptor};

/// Builds (once) the container and returns its path and plaintext size.
fn container() -> (PathBuf, u64) {
    let dir = std::env::var("ZSEAL_CORPUS").unwrap_or_else(|_| "/tmp/zseal-corpus".into());
    let corpus = Path::new(&dir).join("text.tar");
    let (name, copies) = if corpus.exists() {
        ("range-4GiB.zseal", 4)
    } else {
        ("range-64MiB.zseal", 1)
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(name);
    let mut src: Vec<u8> = Vec::new();
    if corpus.exists() {
        File::open(&corpus).unwrap().read_to_end(&mut src).unwrap();
    } else {
        src = (0..64u32 << 20)
            .map(|i| b"random access in zseal "[(i % 23) as usize] ^ (i >> 20) as u8)
            .collect();
    }
    let size = src.len() as u64 * copies;
    if !path.exists() {
        let tmp = path.with_extension("tmp");
        let mut enc = Encryptor::new(
            io::BufWriter::new(File::create(&tmp).unwrap()),
            &[&pw()],
            &EncryptOptions::default(),
        )
        .unwrap();
        for _ in 0..copies {
            enc.write_all(&src).unwrap();
        }
        enc.finish().unwrap().flush().unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    (path, size)
}

fn range(c: &mut Criterion) {
    let (path, size) = container();
    let mut g = c.benchmark_group(format!(
        "range/{}",
        path.file_name().unwrap().to_string_lossy()
    ));
    g.sample_size(10);
    let mid = size / 2 + 12345;
    for mib in [1u64, 64] {
        g.throughput(Throughput::Bytes(mib << 20));
        g.bench_function(format!("{mib}MiB-from-the-middle"), |b| {
            b.iter(|| {
                let file = File::open(&path).unwrap();
                let mut d = Decryptor::new(file, &[&pw()], &DecryptOptions::default()).unwrap();
                let range = Some(mid + (mib << 20));
                assert_eq!(
                    d.copy_range_to(mid, range, &mut io::sink()).unwrap(),
                    mib << 20
                );
            })
        });
    }
    g.throughput(Throughput::Bytes(size));
    g.bench_function("full-decrypt", |b| {
        b.iter(|| {
            let mut d = Decryptor::new(
                File::open(&path).unwrap(),
                &[&pw()],
                &DecryptOptions::default(),
            )
            .unwrap();
            assert_eq!(d.copy_to(&mut io::sink()).unwrap(), size);
        })
    });
    g.finish();
}

criterion_group!(benches, range);
criterion_main!(benches);
