//! Property tests (proptest): round trips over arbitrary data and options, and damaged input that
//! never panics and never yields anything but the true plaintext.

use crate::common;

use proptest::prelude::*;
use zseal::{Cipher, Codec, EncryptOptions, HashAlg};

fn opts() -> impl Strategy<Value = EncryptOptions> {
    (
        prop_oneof![
            Just(Codec::Zstd(3)),
            Just(Codec::Zstd(-3)),
            Just(Codec::Lz4),
            Just(Codec::Gzip(1)),
            Just(Codec::None)
        ],
        prop_oneof![Just(Cipher::Aes256Gcm), Just(Cipher::ChaCha20Poly1305)],
        prop_oneof![
            Just(HashAlg::Blake3),
            Just(HashAlg::Xxh3),
            Just(HashAlg::None)
        ],
        10u8..=12,
        1usize..=3,
    )
        .prop_map(|(codec, cipher, hash, log2, threads)| {
            EncryptOptions::default()
                .codec(codec)
                .cipher(cipher)
                .hash(hash)
                .chunk_size(1 << log2)
                .threads(threads)
        })
}

/// Arbitrary bytes, half of them made compressible by repeating a short pattern.
fn plaintext() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..9000),
        (proptest::collection::vec(any::<u8>(), 1..40), 0usize..9000).prop_map(|(pat, n)| pat
            .iter()
            .cycle()
            .take(n)
            .copied()
            .collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(plain in plaintext(), opts in opts(), seed in any::<u64>(), threads in 1usize..=3) {
        let pw = common::pass("prop");
        let sealed = common::seal(&plain, &pw, &opts, seed);
        prop_assert_eq!(common::open(&sealed, &pw, threads).unwrap(), plain);
    }

    #[test]
    fn damaged_input_never_panics_and_never_lies(
        plain in plaintext(),
        opts in opts(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        threads in 1usize..=3,
    ) {
        let pw = common::pass("prop");
        let mut c = common::seal(&plain, &pw, &opts, 1);
        for (at, x) in &edits {
            let i = at.index(c.len());
            c[i] ^= x;
        }
        if let Some(at) = cut {
            c.truncate(at.index(c.len()));
        }
        let damaged = !edits.is_empty() || cut.is_some();
        match common::open(&c, &pw, threads) {
            Ok(out) => {
                prop_assert!(!damaged, "a damaged container decrypted");
                prop_assert_eq!(out, plain);
            }
            Err(e) => prop_assert!(damaged, "an intact container failed: {}", e),
        }
    }
}
