//! The benchmark matrix behind `zseal bench` and `cargo bench --bench matrix`: the questions
//! people argue about, each answered by rows measured side by side on the same bytes.
//!
//! - `order`: compress→encrypt (what zseal writes) against encrypt→compress, and hashing the
//!   plaintext against hashing the ciphertext, on one chunk engine so that only the order differs.
//! - `codec`: zstd levels, lz4, gzip and none through the real zseal pipeline.
//! - `cipher` and `hash`: AES-256-GCM against ChaCha20-Poly1305; BLAKE3 against XXH3 and SHA-256
//!   (the common reference), with nothing else in the way (no compression).
//! - `chunk` and `threads`: the real pipeline at each chunk size and thread count.
//! - `records`: small records (200 and 264 bytes) sealed one by one: cost per record and what
//!   compression does to their size.
//!
//! Every case runs in both directions (encrypt, then decrypt of what it wrote). A row's `ratio`
//! is output bytes / input bytes in that direction.

mod engine;
pub mod records;

use std::time::Duration;

use serde::Serialize;

pub use engine::Prepared;

use crate::codec::Codec;
use crate::crypto::aead::Cipher;
use crate::error::Result;

/// The order of the stages in a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// hash(plaintext), compress, encrypt: what zseal does.
    CompressThenEncrypt,
    /// hash(plaintext), encrypt, then compress the ciphertext.
    EncryptThenCompress,
    /// compress, encrypt, then hash the ciphertext instead of the plaintext.
    HashCiphertext,
    /// Each small record compressed (or stored raw when that is smaller) and sealed on its own.
    PerRecord,
}

impl Order {
    /// The kebab-case name used in every output format.
    pub fn name(self) -> &'static str {
        match self {
            Order::CompressThenEncrypt => "compress-then-encrypt",
            Order::EncryptThenCompress => "encrypt-then-compress",
            Order::HashCiphertext => "hash-ciphertext",
            Order::PerRecord => "per-record",
        }
    }
}

/// Digests compared by the matrix: zseal's two, and SHA-256 as the common reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchHash {
    /// BLAKE3 (zseal's default).
    Blake3,
    /// XXH3-64.
    Xxh3,
    /// SHA-256 (not a zseal format option: the reference people know).
    Sha256,
    /// No hash.
    None,
}

impl BenchHash {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            BenchHash::Blake3 => "blake3",
            BenchHash::Xxh3 => "xxh3",
            BenchHash::Sha256 => "sha256",
            BenchHash::None => "none",
        }
    }
}

/// Which engine runs a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The real `Encryptor` / `Decryptor`.
    Pipeline,
    /// The chunk engine of this module, which can put the stages in any order.
    Chunks,
    /// One record at a time, on one thread.
    Records(usize),
}

/// One cell of the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The question it answers: order, codec, cipher, hash, chunk, threads or records.
    pub group: &'static str,
    /// Engine.
    pub engine: Engine,
    /// Stage order.
    pub order: Order,
    /// Compression.
    pub codec: Codec,
    /// Cipher.
    pub cipher: Cipher,
    /// Digest.
    pub hash: BenchHash,
    /// Chunk size in bytes (the record size for records).
    pub chunk: usize,
    /// Worker threads.
    pub threads: usize,
}

/// One measured row: a case in one direction.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The question the row belongs to.
    pub group: &'static str,
    /// Stage order, e.g. `compress-then-encrypt`.
    pub order: &'static str,
    /// `encrypt` or `decrypt`.
    pub direction: &'static str,
    /// Compression algorithm (`zstd`, `lz4`, `gzip`, `none`).
    pub codec: String,
    /// Compression level, for zstd and gzip.
    pub level: Option<i32>,
    /// Cipher.
    pub cipher: &'static str,
    /// Digest.
    pub hash: &'static str,
    /// Chunk (or record) size in bytes.
    pub chunk: usize,
    /// Worker threads.
    pub threads: usize,
    /// What was measured.
    #[serde(flatten)]
    pub measured: Measured,
    /// Anything the columns do not say (per-record cost, records that grew).
    pub note: String,
}

/// What one row measured: sizes, ratio, throughput and times.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// Bytes in.
    pub bytes_in: u64,
    /// Bytes out.
    pub bytes_out: u64,
    /// Output bytes / input bytes.
    pub ratio: f64,
    /// Input throughput, MB/s (10^6 bytes).
    pub mb_s_in: f64,
    /// Output throughput, MB/s.
    pub mb_s_out: f64,
    /// Median wall time of one run, seconds.
    pub wall_s: f64,
    /// CPU time (user + system, all threads) of that run, seconds.
    pub cpu_s: f64,
}

/// How much to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The subset (`false`) or the whole matrix (`true`).
    pub full: bool,
    /// Cores to go up to.
    pub max_threads: usize,
    /// Timed runs per row; the median is reported.
    pub runs: usize,
}

impl Plan {
    /// The quick subset on all cores, or the full matrix.
    pub fn new(full: bool) -> Plan {
        Plan {
            full,
            max_threads: crate::pipeline::available_threads(),
            runs: if full { 3 } else { 1 },
        }
    }

    /// Every case of the plan, in the order they are run and printed.
    pub fn cases(&self) -> Vec<Case> {
        let all = self.max_threads;
        let base = Case {
            group: "",
            engine: Engine::Chunks,
            order: Order::CompressThenEncrypt,
            codec: Codec::Zstd(3),
            cipher: Cipher::Aes256Gcm,
            hash: BenchHash::Blake3,
            chunk: 4 << 20,
            threads: all,
        };
        let mut out = Vec::new();
        for order in [
            Order::CompressThenEncrypt,
            Order::EncryptThenCompress,
            Order::HashCiphertext,
        ] {
            out.push(Case {
                group: "order",
                order,
                ..base.clone()
            });
        }
        let codecs: Vec<Codec> = if self.full {
            vec![
                Codec::Zstd(-5),
                Codec::Zstd(1),
                Codec::Zstd(3),
                Codec::Zstd(9),
                Codec::Zstd(19),
                Codec::Lz4,
                Codec::Gzip(1),
                Codec::Gzip(6),
                Codec::None,
            ]
        } else {
            vec![
                Codec::Zstd(1),
                Codec::Zstd(3),
                Codec::Zstd(9),
                Codec::Lz4,
                Codec::Gzip(6),
                Codec::None,
            ]
        };
        let pipeline = Case {
            engine: Engine::Pipeline,
            ..base.clone()
        };
        for codec in codecs {
            out.push(Case {
                group: "codec",
                codec,
                ..pipeline.clone()
            });
        }
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            out.push(Case {
                group: "cipher",
                codec: Codec::None,
                hash: BenchHash::None,
                cipher,
                ..base.clone()
            });
        }
        for hash in [BenchHash::Blake3, BenchHash::Xxh3, BenchHash::Sha256] {
            out.push(Case {
                group: "hash",
                codec: Codec::None,
                hash,
                ..base.clone()
            });
        }
        let chunks: &[usize] = if self.full {
            &[64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]
        } else {
            &[256 << 10, 1 << 20, 4 << 20]
        };
        for &chunk in chunks {
            out.push(Case {
                group: "chunk",
                chunk,
                ..pipeline.clone()
            });
        }
        for threads in thread_counts(all, self.full) {
            out.push(Case {
                group: "threads",
                threads,
                ..pipeline.clone()
            });
        }
        let record_codecs: Vec<Codec> = if self.full {
            vec![
                Codec::None,
                Codec::Lz4,
                Codec::Zstd(1),
                Codec::Zstd(3),
                Codec::Gzip(6),
            ]
        } else {
            vec![Codec::None, Codec::Lz4, Codec::Zstd(3)]
        };
        for size in [200, 264] {
            for &codec in &record_codecs {
                out.push(Case {
                    group: "records",
                    engine: Engine::Records(size),
                    order: Order::PerRecord,
                    codec,
                    hash: BenchHash::None,
                    chunk: size,
                    threads: 1,
                    ..base.clone()
                });
            }
        }
        out
    }
}

/// 1, 2, 4, … up to `all`, and `all` itself; the quick plan takes 1 and `all` only.
fn thread_counts(all: usize, full: bool) -> Vec<usize> {
    let mut v = vec![1];
    if full {
        let mut t = 2;
        while t < all {
            v.push(t);
            t *= 2;
        }
    }
    if all > 1 {
        v.push(all);
    }
    v
}

impl Case {
    /// A short label: `zstd:3 aes-256-gcm blake3 4M ×2`.
    pub fn label(&self) -> String {
        format!(
            "{} {} {} {} {} x{}",
            self.group,
            self.order.name(),
            self.codec.name(),
            self.cipher.name(),
            self.hash.name(),
            self.threads
        )
    }

    /// Sets the case up on `data` (keys, pool) and encrypts it once, untimed, so that decrypt
    /// runs have their input.
    pub fn prepare(&self, data: &[u8]) -> Result<Prepared> {
        Prepared::new(self, data)
    }

    /// Runs the case on `data` in both directions, `runs` timed runs each (the median is
    /// kept), and returns the encrypt row and the decrypt row.
    pub fn measure(&self, data: &[u8], runs: usize) -> Result<[Row; 2]> {
        let prepared = self.prepare(data)?;
        let enc = time_runs(runs, || prepared.encrypt(data))?;
        let dec = time_runs(runs, || prepared.decrypt())?;
        Ok([
            self.row("encrypt", prepared.plain_len(data), enc, &prepared),
            self.row("decrypt", prepared.sealed_len(), dec, &prepared),
        ])
    }

    fn row(&self, direction: &'static str, bytes_in: u64, t: Timed, p: &engine::Prepared) -> Row {
        let wall = t.wall.as_secs_f64().max(1e-9);
        let level = match self.codec {
            Codec::Zstd(l) => Some(l),
            Codec::Gzip(l) => Some(l as i32),
            _ => None,
        };
        Row {
            group: self.group,
            order: self.order.name(),
            direction,
            codec: self
                .codec
                .name()
                .split(':')
                .next()
                .unwrap_or("")
                .to_string(),
            level,
            cipher: self.cipher.name(),
            hash: self.hash.name(),
            chunk: self.chunk,
            threads: self.threads,
            measured: Measured {
                bytes_in,
                bytes_out: t.bytes_out,
                ratio: t.bytes_out as f64 / bytes_in.max(1) as f64,
                mb_s_in: bytes_in as f64 / wall / 1e6,
                mb_s_out: t.bytes_out as f64 / wall / 1e6,
                wall_s: wall,
                cpu_s: t.cpu.as_secs_f64(),
            },
            note: p.note(direction, t.wall),
        }
    }
}

/// Wall and CPU time of one run and its output size.
#[derive(Clone, Copy, Debug)]
struct Timed {
    wall: Duration,
    cpu: Duration,
    bytes_out: u64,
}

/// Runs `f` `runs` times (at least once) and keeps the run of median wall time.
fn time_runs(runs: usize, mut f: impl FnMut() -> Result<u64>) -> Result<Timed> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        let watch = crate::stats::Stopwatch::start();
        let bytes_out = f()?;
        all.push(Timed {
            wall: watch.wall(),
            cpu: watch.cpu().map_or(Duration::ZERO, |(u, s)| u + s),
            bytes_out,
        });
    }
    all.sort_by_key(|t| t.wall);
    Ok(all[all.len() / 2])
}

/// Runs every case of `plan` on `data`, calling `progress(done, total, case)` before each.
pub fn run(
    plan: &Plan,
    data: &[u8],
    mut progress: impl FnMut(usize, usize, &Case),
) -> Result<Vec<Row>> {
    let cases = plan.cases();
    let mut rows = Vec::with_capacity(cases.len() * 2);
    for (i, case) in cases.iter().enumerate() {
        progress(i, cases.len(), case);
        rows.extend(case.measure(data, plan.runs)?);
    }
    progress(cases.len(), cases.len(), &cases[cases.len() - 1]);
    Ok(rows)
}

/// A built-in sample for `zseal bench` without a file: text-like data (log lines), so that the
/// compressors have something to do. Deterministic.
pub fn builtin_sample(len: usize) -> Vec<u8> {
    let words = [
        "GET",
        "POST",
        "/api/v1/items",
        "/static/app.js",
        "200",
        "304",
        "404",
        "user=",
        "alice",
        "bob",
        "carol",
        "latency_ms=",
        "bytes=",
        "cache=hit",
        "cache=miss",
        "region=eu-west-1",
    ];
    let mut out = Vec::with_capacity(len);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut line = 0u64;
    while out.len() < len {
        line += 1;
        out.extend_from_slice(
            format!("2026-11-22T10:{:02}:{:02}Z ", line / 60 % 60, line % 60).as_bytes(),
        );
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(words[(x % words.len() as u64) as usize].as_bytes());
            out.extend_from_slice(format!("{} ", x % 1000).as_bytes());
        }
        out.push(b'\n');
    }
    out.truncate(len);
    out
}

/// The machine, for the heading of a report: CPU model and cores.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!(
        "{model}, {} cores available",
        crate::pipeline::available_threads()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(plan: &Plan) -> Vec<Case> {
        // The same cases on a small chunk so that a 256 KiB sample has several chunks.
        plan.cases()
            .into_iter()
            .map(|mut c| {
                if c.engine != Engine::Records(200) && c.engine != Engine::Records(264) {
                    c.chunk = c.chunk.min(64 << 10);
                }
                c
            })
            .collect()
    }

    #[test]
    fn full_plan_covers_every_question() {
        let plan = Plan {
            full: true,
            max_threads: 4,
            runs: 1,
        };
        let cases = plan.cases();
        let levels: Vec<String> = cases
            .iter()
            .filter(|c| c.group == "codec")
            .map(|c| c.codec.name())
            .collect();
        for want in [
            "zstd:-5", "zstd:1", "zstd:3", "zstd:9", "zstd:19", "lz4", "gzip:1", "gzip:6",
        ] {
            assert!(levels.iter().any(|l| l == want), "{want} in {levels:?}");
        }
        let chunks: Vec<usize> = cases
            .iter()
            .filter(|c| c.group == "chunk")
            .map(|c| c.chunk)
            .collect();
        assert_eq!(chunks, [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]);
        let threads: Vec<usize> = cases
            .iter()
            .filter(|c| c.group == "threads")
            .map(|c| c.threads)
            .collect();
        assert_eq!(threads, [1, 2, 4]);
        for size in [200, 264] {
            assert!(cases.iter().any(|c| c.engine == Engine::Records(size)));
        }
        let hashes: Vec<BenchHash> = cases
            .iter()
            .filter(|c| c.group == "hash")
            .map(|c| c.hash)
            .collect();
        assert_eq!(
            hashes,
            [BenchHash::Blake3, BenchHash::Xxh3, BenchHash::Sha256]
        );
        assert!(Plan::new(false).cases().len() < cases.len());
    }

    #[test]
    fn every_case_round_trips_and_orders_differ_as_expected() {
        let data = builtin_sample(256 << 10);
        let plan = Plan {
            full: true,
            max_threads: 2,
            runs: 1,
        };
        let mut rows = Vec::new();
        for case in small(&plan) {
            let [enc, dec] = case.measure(&data, 1).unwrap();
            assert_eq!(
                enc.measured.bytes_in,
                dec.measured.bytes_out,
                "{}",
                case.label()
            );
            assert_eq!(
                enc.measured.bytes_out,
                dec.measured.bytes_in,
                "{}",
                case.label()
            );
            assert!((enc.measured.ratio * dec.measured.ratio - 1.0).abs() < 1e-9);
            rows.push(enc);
        }
        let ratio = |order: &str| {
            rows.iter()
                .find(|r| r.group == "order" && r.order == order)
                .unwrap()
                .measured
                .ratio
        };
        // Log lines compress well; their ciphertext does not compress at all.
        assert!(ratio("compress-then-encrypt") < 0.5);
        assert!(ratio("encrypt-then-compress") > 1.0);
        assert_eq!(ratio("hash-ciphertext"), ratio("compress-then-encrypt"));
    }
}
