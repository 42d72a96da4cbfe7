//! What a case runs. The pipeline cases drive the real `Encryptor`/`Decryptor`; the chunk engine
//! applies hash, compression and sealing per chunk in whatever order the case names, on a rayon
//! pool, with the same codec and cipher code as zseal and the same frame overhead (a 5-byte frame
//! header and a 16-byte tag per chunk), so only the order differs between its rows.

use std::io::{self, Write};

use rayon::prelude::*;
use sha2::Digest as _;

use super::{BenchHash, Case, Engine, Order};
use crate::codec::Codec;
use crate::crypto::aead::{stream_nonce, PayloadCipher, TAG_LEN};
use crate::error::{Error, Result};
use crate::format::frame::frame_header;
use crate::format::{FrameKind, FRAME_HEADER_LEN};
use crate::io::Counted;
use crate::pipeline::Sealer;
use crate::{
    Argon2Params, DecryptOptions, Decryptor, EncryptOptions, Encryptor, HashAlg, Passphrase,
};

/// At most this many records are timed per record case.
const MAX_RECORDS: usize = 50_000;

/// A case ready to run: its key, its pool, and what it wrote (the input of the decrypt runs).
/// From [`Case::prepare`]; the criterion benches time its `encrypt` and `decrypt`.
pub struct Prepared {
    case: Case,
    kind: Kind,
}

enum Kind {
    Pipeline {
        pw: Passphrase,
        sealed: Vec<u8>,
    },
    Chunks {
        pool: rayon::ThreadPool,
        cipher: Keyed,
        frames: Vec<Frame>,
        plain_len: u64,
    },
    Records {
        cipher: Keyed,
        frames: Vec<Frame>,
        plain_len: u64,
        grew: usize,
        forced_out: u64,
    },
}

/// One sealed chunk or record: its body (ciphertext and tag, possibly compressed afterwards),
/// whether the codec applies to it, and its plaintext length.
struct Frame {
    compressed: bool,
    body: Vec<u8>,
    plain_len: usize,
}

impl Frame {
    fn len(&self) -> u64 {
        (FRAME_HEADER_LEN + self.body.len()) as u64
    }
}

/// The bench key: the cipher's speed does not depend on it.
const KEY: [u8; 32] = [0x5a; 32];

/// A case's cipher under the bench key, and the engine's own sealer for the order zseal uses.
struct Keyed {
    cipher: PayloadCipher,
    sealer: Sealer,
}

impl Keyed {
    fn new(case: &Case) -> Keyed {
        let log2 = log2(case.chunk).max(10);
        Keyed {
            cipher: PayloadCipher::new(case.cipher, &KEY),
            sealer: Sealer::new(case.cipher, &KEY, case.codec, HashAlg::None, log2),
        }
    }
}

impl Prepared {
    pub(super) fn new(case: &Case, data: &[u8]) -> Result<Prepared> {
        let kind = match case.engine {
            Engine::Pipeline => {
                // Cheap Argon2: the key derivation is not part of throughput.
                let cheap = Argon2Params {
                    m_cost: 64,
                    t_cost: 1,
                    p_cost: 1,
                };
                let pw = Passphrase::with_params("zseal bench", cheap)?;
                let sealed = pipeline_encrypt(case, &pw, data, Vec::new())?;
                Kind::Pipeline { pw, sealed }
            }
            Engine::Chunks => {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(case.threads)
                    .build()
                    .map_err(|e| Error::InvalidOption(format!("cannot start threads: {e}")))?;
                let cipher = Keyed::new(case);
                let frames = pool.install(|| {
                    data.par_chunks(case.chunk)
                        .enumerate()
                        .map(|(i, c)| seal_chunk(case, &cipher, i as u64, c))
                        .collect::<Result<Vec<_>>>()
                })?;
                Kind::Chunks {
                    pool,
                    cipher,
                    frames,
                    plain_len: data.len() as u64,
                }
            }
            Engine::Records(size) => {
                let cipher = Keyed::new(case);
                let records = records(data, size);
                let mut frames = Vec::with_capacity(records.len());
                let (mut grew, mut forced_out) = (0, 0u64);
                for (i, r) in records.iter().enumerate() {
                    let f = seal_chunk(case, &cipher, i as u64, r)?;
                    let forced = forced_len(case.codec, r)?;
                    grew += usize::from(case.codec != Codec::None && forced >= r.len());
                    forced_out += (FRAME_HEADER_LEN + forced + TAG_LEN) as u64;
                    frames.push(f);
                }
                Kind::Records {
                    cipher,
                    frames,
                    plain_len: (records.len() * size) as u64,
                    grew,
                    forced_out,
                }
            }
        };
        Ok(Prepared {
            case: case.clone(),
            kind,
        })
    }

    /// Plaintext bytes one encrypt run reads.
    pub fn plain_len(&self, data: &[u8]) -> u64 {
        match &self.kind {
            Kind::Pipeline { .. } => data.len() as u64,
            Kind::Chunks { plain_len, .. } | Kind::Records { plain_len, .. } => *plain_len,
        }
    }

    /// Bytes one decrypt run reads.
    pub fn sealed_len(&self) -> u64 {
        match &self.kind {
            Kind::Pipeline { sealed, .. } => sealed.len() as u64,
            Kind::Chunks { frames, .. } | Kind::Records { frames, .. } => {
                frames.iter().map(Frame::len).sum()
            }
        }
    }

    /// One encrypt run of `data` (the data given to `prepare`); returns the bytes written.
    pub fn encrypt(&self, data: &[u8]) -> Result<u64> {
        let case = &self.case;
        match &self.kind {
            Kind::Pipeline { pw, .. } => {
                let sink = Counted::new(io::sink(), Default::default());
                Ok(pipeline_encrypt(case, pw, data, sink)?.count())
            }
            Kind::Chunks { pool, cipher, .. } => pool.install(|| {
                data.par_chunks(case.chunk)
                    .enumerate()
                    .map(|(i, c)| seal_chunk(case, cipher, i as u64, c).map(|f| f.len()))
                    .sum()
            }),
            Kind::Records { cipher, .. } => records(data, case.chunk)
                .iter()
                .enumerate()
                .map(|(i, r)| seal_chunk(case, cipher, i as u64, r).map(|f| f.len()))
                .sum(),
        }
    }

    /// One decrypt run of what `prepare` wrote; returns the plaintext bytes.
    pub fn decrypt(&self) -> Result<u64> {
        let case = &self.case;
        match &self.kind {
            Kind::Pipeline { pw, sealed } => {
                let opts = DecryptOptions::default().threads(case.threads);
                let mut d = Decryptor::new(&sealed[..], &[pw], &opts)?;
                d.copy_to(&mut io::sink())
            }
            Kind::Chunks {
                pool,
                cipher,
                frames,
                ..
            } => pool.install(|| {
                frames
                    .par_iter()
                    .enumerate()
                    .map(|(i, f)| open_chunk(case, cipher, i as u64, f))
                    .sum()
            }),
            Kind::Records { cipher, frames, .. } => frames
                .iter()
                .enumerate()
                .map(|(i, f)| open_chunk(case, cipher, i as u64, f))
                .sum(),
        }
    }

    /// What the columns do not say.
    pub(super) fn note(&self, direction: &str, wall: std::time::Duration) -> String {
        match &self.kind {
            Kind::Records {
                frames,
                grew,
                forced_out,
                ..
            } => {
                let ns = wall.as_nanos() as f64 / frames.len().max(1) as f64;
                if direction == "decrypt" || self.case.codec == Codec::None {
                    return format!("{ns:.0} ns/record");
                }
                let stored = self.sealed_len();
                format!(
                    "{ns:.0} ns/record; {grew} of {} records grew when compressed and were stored raw, saving {} bytes ({:.2}%)",
                    frames.len(),
                    forced_out.saturating_sub(stored),
                    100.0 * forced_out.saturating_sub(stored) as f64 / *forced_out.max(&1) as f64
                )
            }
            _ => String::new(),
        }
    }
}

fn records(data: &[u8], size: usize) -> Vec<&[u8]> {
    data.chunks_exact(size).take(MAX_RECORDS).collect()
}

fn pipeline_encrypt<W: Write>(case: &Case, pw: &Passphrase, data: &[u8], out: W) -> Result<W> {
    let hash = match case.hash {
        super::BenchHash::Blake3 => crate::HashAlg::Blake3,
        super::BenchHash::Xxh3 => crate::HashAlg::Xxh3,
        super::BenchHash::None => crate::HashAlg::None,
        super::BenchHash::Sha256 => {
            return Err(Error::InvalidOption(
                "sha256 is not a zseal digest: bench it with the chunk engine".into(),
            ))
        }
    };
    let opts = EncryptOptions::default()
        .codec(case.codec)
        .cipher(case.cipher)
        .hash(hash)
        .chunk_size(case.chunk)
        .threads(case.threads);
    let mut enc = Encryptor::new(out, &[pw], &opts)?;
    enc.copy_from(&mut &data[..])?;
    enc.finish()
}

fn digest(h: BenchHash, data: &[u8]) {
    match h {
        BenchHash::Blake3 => {
            std::hint::black_box(blake3::hash(data));
        }
        BenchHash::Xxh3 => {
            std::hint::black_box(xxhash_rust::xxh3::xxh3_64(data));
        }
        BenchHash::Sha256 => {
            std::hint::black_box(sha2::Sha256::digest(data));
        }
        BenchHash::None => {}
    }
}

fn log2(n: usize) -> u8 {
    n.next_power_of_two().trailing_zeros() as u8
}

/// Compresses `input` with `codec`; `None` when that does not make it smaller (stored raw).
fn compress(codec: Codec, input: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut out = vec![0u8; codec.out_len(input.len())];
    Ok(codec
        .compress(input, &mut out, log2(input.len()).max(10))?
        .map(|n| {
            out.truncate(n);
            out
        }))
}

fn seal(cipher: &PayloadCipher, i: u64, mut body: Vec<u8>) -> Vec<u8> {
    let tag = cipher.seal(&stream_nonce(i, false), &[], &mut body);
    body.extend_from_slice(&tag);
    body
}

fn seal_chunk(case: &Case, keyed: &Keyed, i: u64, plain: &[u8]) -> Result<Frame> {
    let cipher = &keyed.cipher;
    let frame = |compressed, body| Frame {
        compressed,
        body,
        plain_len: plain.len(),
    };
    Ok(match case.order {
        Order::CompressThenEncrypt | Order::PerRecord => {
            // What zseal writes: the engine's own per-chunk job (its frame, its raw fallback).
            digest(case.hash, plain);
            let s = keyed.sealer.seal_chunk(i, plain)?;
            let bytes = s.bytes();
            frame(
                bytes[0] == FrameKind::Compressed.byte(),
                bytes[FRAME_HEADER_LEN..].to_vec(),
            )
        }
        Order::EncryptThenCompress => {
            digest(case.hash, plain);
            let sealed = seal(cipher, i, plain.to_vec());
            match compress(case.codec, &sealed)? {
                Some(c) => frame(true, c),
                None => frame(false, sealed),
            }
        }
        Order::HashCiphertext => {
            let f = match compress(case.codec, plain)? {
                Some(c) => frame(true, seal(cipher, i, c)),
                None => frame(false, seal(cipher, i, plain.to_vec())),
            };
            digest(case.hash, &f.body);
            f
        }
    })
}

fn open(cipher: &PayloadCipher, i: u64, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>> {
    let mut buf = sealed.to_vec();
    let n = cipher
        .open(&stream_nonce(i, false), aad, &mut buf)
        .map_err(|()| Error::ChunkAuth(i))?;
    buf.truncate(n);
    Ok(buf)
}

fn decompress(codec: Codec, input: &[u8], len: usize, i: u64) -> Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    let n = codec
        .decompress(input, &mut out)
        .map_err(|what| Error::ChunkInvalid { index: i, what })?;
    out.truncate(n);
    Ok(out)
}

/// Opens one frame in the reverse order of its case and returns its plaintext length.
fn open_chunk(case: &Case, keyed: &Keyed, i: u64, f: &Frame) -> Result<u64> {
    let cipher = &keyed.cipher;
    let plain = match case.order {
        Order::CompressThenEncrypt | Order::PerRecord | Order::HashCiphertext => {
            if case.order == Order::HashCiphertext {
                digest(case.hash, &f.body);
            }
            // The engine's frames authenticate their frame header; the other orders' do not.
            let aad = if case.order == Order::HashCiphertext {
                Vec::new()
            } else {
                let kind = if f.compressed {
                    FrameKind::Compressed
                } else {
                    FrameKind::Raw
                };
                frame_header(kind, f.body.len() as u32).to_vec()
            };
            let opened = open(cipher, i, &f.body, &aad)?;
            let plain = if f.compressed {
                decompress(case.codec, &opened, f.plain_len, i)?
            } else {
                opened
            };
            if case.order != Order::HashCiphertext {
                digest(case.hash, &plain);
            }
            plain
        }
        Order::EncryptThenCompress => {
            let sealed = if f.compressed {
                decompress(case.codec, &f.body, f.plain_len + TAG_LEN, i)?
            } else {
                f.body.clone()
            };
            let plain = open(cipher, i, &sealed, &[])?;
            digest(case.hash, &plain);
            plain
        }
    };
    if plain.len() != f.plain_len {
        return Err(Error::ChunkInvalid {
            index: i,
            what: "bench round trip changed the length".into(),
        });
    }
    Ok(plain.len() as u64)
}

/// The size `codec` gives `record` even when that is larger than the record.
fn forced_len(codec: Codec, record: &[u8]) -> Result<usize> {
    Ok(match codec {
        Codec::None => record.len(),
        Codec::Zstd(l) => zstd::bulk::compress(record, l)?.len(),
        Codec::Lz4 => lz4_flex::block::compress(record).len(),
        Codec::Gzip(l) => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(l));
            e.write_all(record)?;
            e.finish()?.len()
        }
    })
}
