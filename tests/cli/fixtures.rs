//! Containers written by zseal 0.1 (format v1), committed under fixtures/v1. Every later version
//! must keep decrypting them. Regenerate (only when adding cases, never to "fix" an old one) with
//! `ZSEAL_REGENERATE_FIXTURES=1 cargo test --release --test fixtures`.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};

use common::CHEAP;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{Argon2Params, DecryptOptions, Decryptor, EncryptOptions, Encryptor, Passphrase};

struct Case {
    name: &'static str,
    opts: &'static str,
    empty: bool,
    argon: Argon2Params,
}

const CASES: &[Case] = &[
    Case {
        name: "default",
        opts: "zstd:3 aes-256-gcm blake3 64K",
        empty: false,
        argon: Argon2Params {
            m_cost: 47104,
            t_cost: 3,
            p_cost: 1,
        },
    },
    Case {
        name: "lz4-chacha-xxh3",
        opts: "lz4 chacha20-poly1305 xxh3 64K",
        empty: false,
        argon: CHEAP,
    },
    Case {
        name: "gzip-aes-none",
        opts: "gzip:6 aes-256-gcm none 128K",
        empty: false,
        argon: CHEAP,
    },
    Case {
        name: "zstd-neg-chacha-blake3",
        opts: "zstd:-5 chacha20-poly1305 blake3 1K",
        empty: false,
        argon: CHEAP,
    },
    Case {
        name: "none-aes-blake3",
        opts: "none aes-256-gcm blake3 256K",
        empty: false,
        argon: CHEAP,
    },
    Case {
        name: "empty",
        opts: "zstd:3 aes-256-gcm blake3 4M",
        empty: true,
        argon: CHEAP,
    },
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn passphrase() -> Vec<u8> {
    let text = std::fs::read(dir().join("passphrase.txt")).unwrap();
    text.split(|&b| b == b'\n').next().unwrap().to_vec()
}

fn plaintext(c: &Case) -> Vec<u8> {
    if c.empty {
        Vec::new()
    } else {
        std::fs::read(dir().join("sample.log")).unwrap()
    }
}

fn options(spec: &str) -> EncryptOptions {
    let p: Vec<&str> = spec.split(' ').collect();
    EncryptOptions::default()
        .codec(p[0].parse().unwrap())
        .cipher(p[1].parse().unwrap())
        .hash(p[2].parse().unwrap())
        .chunk_size(zseal::units::parse_size(p[3]).unwrap() as usize)
        .threads(2)
}

/// What the generator writes for a case: a fixed seed per case, so the bytes are reproducible.
fn generate(c: &Case) -> Vec<u8> {
    let pw = Passphrase::with_params(passphrase(), c.argon).unwrap();
    let seed = c
        .name
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(Vec::new(), &[&pw], &options(c.opts), &mut rng).unwrap();
    enc.copy_from(&mut &plaintext(c)[..]).unwrap();
    enc.finish().unwrap()
}

fn path(c: &Case) -> PathBuf {
    dir().join("v1").join(format!("{}.zseal", c.name))
}

#[test]
fn v1_fixtures_still_decrypt() {
    if std::env::var_os("ZSEAL_REGENERATE_FIXTURES").is_some() {
        std::fs::create_dir_all(dir().join("v1")).unwrap();
        for c in CASES {
            std::fs::write(path(c), generate(c)).unwrap();
        }
    }
    let pw = Passphrase::new(passphrase()).unwrap();
    for c in CASES {
        let container =
            std::fs::read(path(c)).unwrap_or_else(|e| panic!("{}: {e}", path(c).display()));
        let mut dec = Decryptor::new(&container[..], &[&pw], &DecryptOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let mut out = Vec::new();
        dec.copy_to(&mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert!(out == plaintext(c), "{}: plaintext differs", c.name);
        // Through one read of it all, which decrypts every whole chunk straight into the buffer,
        // on a seekable source, and to a verified end.
        let mut seekable = Decryptor::new(
            std::io::Cursor::new(&container[..]),
            &[&pw],
            &DecryptOptions::default(),
        )
        .unwrap();
        let mut all = vec![0u8; out.len()];
        seekable
            .read_exact(&mut all)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(seekable.read(&mut [0u8; 1]).unwrap(), 0, "{}", c.name);
        assert!(all == out, "{}: one read differs", c.name);
        assert!(seekable.verified().is_some(), "{}: not verified", c.name);
        let want = options(c.opts);
        assert_eq!(dec.header().codec.id(), want.codec.id(), "{}", c.name);
        assert_eq!(dec.header().cipher, want.cipher, "{}", c.name);
        assert_eq!(dec.header().chunk_size(), want.chunk_size, "{}", c.name);
    }
}

/// For codecs whose output zseal controls (none), the container bytes are a pure function of the
/// format and the seed: a change here is a format change and needs a new version.
#[test]
fn writer_reproduces_codec_independent_fixtures_exactly() {
    for c in CASES
        .iter()
        .filter(|c| c.opts.starts_with("none") || c.empty)
    {
        let committed = std::fs::read(path(c)).unwrap();
        assert!(
            generate(c) == committed,
            "{}: the writer no longer produces the committed bytes",
            c.name
        );
    }
}
