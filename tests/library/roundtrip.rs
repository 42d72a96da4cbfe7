//! Round trips at boundary sizes through every codec, cipher and hash, in both adapters' modes.

use crate::common;

use std::io::{Read, Write};

use rand_chacha::rand_core::SeedableRng;

use common::*;
use zseal::{Cipher, Codec, DecryptOptions, Decryptor, EncryptOptions, Encryptor, HashAlg};

const CHUNK: usize = 4096;

fn sizes() -> Vec<usize> {
    vec![
        0,
        1,
        CHUNK - 1,
        CHUNK,
        CHUNK + 1,
        2 * CHUNK,
        7 * CHUNK + 123,
    ]
}

#[test]
fn every_codec_cipher_hash_at_boundary_sizes() {
    let pw = pass("pw");
    let codecs = ["zstd:3", "zstd:-5", "lz4", "gzip:6", "none"];
    for codec in codecs {
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            for hash in [HashAlg::Blake3, HashAlg::Xxh3, HashAlg::None] {
                let opts = EncryptOptions::default()
                    .codec(codec.parse().unwrap())
                    .cipher(cipher)
                    .hash(hash)
                    .chunk_size(CHUNK)
                    .threads(2);
                for n in sizes() {
                    let plain = data(n);
                    let sealed = seal(&plain, &pw, &opts, n as u64);
                    let back =
                        open(&sealed, &pw, 2).unwrap_or_else(|e| panic!("{opts:?} n={n}: {e}"));
                    assert!(back == plain, "{opts:?} n={n}: round trip differs");
                }
            }
        }
    }
}

#[test]
fn serial_and_parallel_give_identical_containers() {
    let pw = pass("pw");
    let plain = data(37 * CHUNK + 5);
    for codec in ["zstd:3", "lz4", "gzip:1"] {
        let mut outs = Vec::new();
        for threads in [1, 2, 3, 8] {
            let opts = EncryptOptions::default()
                .codec(codec.parse().unwrap())
                .chunk_size(CHUNK)
                .threads(threads);
            outs.push(seal(&plain, &pw, &opts, 42));
        }
        assert!(
            outs.windows(2).all(|w| w[0] == w[1]),
            "{codec}: containers differ by thread count"
        );
        for threads in [1, 2, 8] {
            assert_eq!(open(&outs[0], &pw, threads).unwrap(), plain);
        }
    }
}

#[test]
fn different_seeds_give_different_containers() {
    let pw = pass("pw");
    let opts = EncryptOptions::default().chunk_size(CHUNK);
    let plain = data(3 * CHUNK);
    assert_ne!(seal(&plain, &pw, &opts, 1), seal(&plain, &pw, &opts, 2));
}

#[test]
fn incompressible_chunks_are_stored_raw_with_fixed_overhead() {
    let pw = pass("pw");
    let n = 10 * CHUNK;
    let plain = noise(n, 7);
    for codec in ["zstd:3", "lz4", "gzip:6", "none"] {
        let opts = EncryptOptions::default()
            .codec(codec.parse().unwrap())
            .chunk_size(CHUNK);
        let sealed = seal(&plain, &pw, &opts, 1);
        let header = 50 + 3 + 60 + 32;
        // Per chunk: 5-byte frame header, 16-byte tag, 4-byte index entry; final frame 101, footer 16.
        let expected = header + n + 10 * (5 + 16 + 4) + 101 + 16;
        assert_eq!(sealed.len(), expected, "{codec}");
        assert_eq!(open(&sealed, &pw, 2).unwrap(), plain);
    }
}

#[test]
fn compressible_data_shrinks() {
    let pw = pass("pw");
    let plain = b"the same line again and again\n".repeat(10_000);
    let opts = EncryptOptions::default().chunk_size(1 << 16);
    let sealed = seal(&plain, &pw, &opts, 1);
    assert!(
        sealed.len() * 20 < plain.len(),
        "{} vs {}",
        sealed.len(),
        plain.len()
    );
}

#[test]
fn write_and_read_adapters_with_odd_sized_calls() {
    let pw = pass("pw");
    let plain = data(5 * CHUNK + 17);
    let opts = EncryptOptions::default().chunk_size(CHUNK).threads(2);
    let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
    for piece in plain.chunks(1000) {
        enc.write_all(piece).unwrap();
    }
    let sealed = enc.finish().unwrap();
    let mut dec =
        Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default().threads(2)).unwrap();
    let mut back = Vec::new();
    let mut buf = [0u8; 333];
    loop {
        let n = dec.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        back.extend_from_slice(&buf[..n]);
    }
    assert_eq!(back, plain);
}

#[test]
fn writes_then_reads_then_writes_give_the_container_of_one_read() {
    // The Write adapter and copy_from share the chunk being filled: a partial chunk written
    // first is continued by copy_from (and by copy_from_file, whose positional reads must then
    // wait for it), and writes after them continue where they ended.
    let pw = pass("pw");
    let plain = data(6 * CHUNK + 1234);
    let (a, b) = (1000, 4 * CHUNK + 999);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&plain[a..b]).unwrap();
    for threads in [1, 2] {
        let opts = EncryptOptions::default().chunk_size(CHUNK).threads(threads);
        let whole = seal(&plain, &pw, &opts, 8);
        for from_file in [false, true] {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
            let mut enc = Encryptor::with_rng(Vec::new(), &[&pw], &opts, &mut rng).unwrap();
            enc.write_all(&plain[..a]).unwrap();
            let n = if from_file {
                let f = std::fs::File::open(file.path()).unwrap();
                enc.copy_from_file(&f).unwrap()
            } else {
                enc.copy_from(&mut &plain[a..b]).unwrap()
            };
            assert_eq!(n, (b - a) as u64);
            enc.write_all(&plain[b..]).unwrap();
            let (sealed, stats) = enc.finish_with_stats().unwrap();
            assert!(sealed == whole, "threads={threads} from_file={from_file}");
            assert_eq!((stats.chunks, stats.frames_opened), (7, 7));
            assert_eq!(stats.threads, threads);
        }
    }
}

#[test]
fn the_encryptor_counts_its_chunks_and_progress_as_they_are_written_out() {
    let pw = pass("pw");
    let plain = data(3 * CHUNK + 100);
    let opts = EncryptOptions::default().chunk_size(CHUNK).threads(2);
    let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    enc.progress(counter.clone());
    enc.write_all(&plain).unwrap();
    // Three full chunks are submitted; the partial fourth waits for more input or finish.
    let s = enc.stats();
    assert_eq!((s.chunks, s.frames_opened, s.threads), (3, 3, 2));
    let (sealed, s) = enc.finish_with_stats().unwrap();
    assert_eq!((s.chunks, s.frames_opened, s.threads), (4, 4, 2));
    assert!(s.stages.codec > std::time::Duration::ZERO, "{s:?}");
    assert!(s.stages.cipher > std::time::Duration::ZERO, "{s:?}");
    assert_eq!(
        counter.load(std::sync::atomic::Ordering::Relaxed),
        plain.len() as u64
    );
    assert_eq!(open(&sealed, &pw, 2).unwrap(), plain);
}

/// A writer whose bytes the test can watch while the encryptor owns it.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn flush_writes_out_the_chunks_already_sealed() {
    let pw = pass("pw");
    let plain = data(3 * CHUNK);
    let opts = EncryptOptions::default().chunk_size(CHUNK).threads(2);
    let out = Shared::default();
    let mut enc = Encryptor::new(out.clone(), &[&pw], &opts).unwrap();
    let header_len = out.0.lock().unwrap().len();
    enc.write_all(&plain).unwrap();
    // The three chunks are sealed on the workers; flush writes out those that are done,
    // without waiting for the others.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while out.0.lock().unwrap().len() < header_len + 3 * 21 {
        assert!(std::time::Instant::now() < deadline, "flush wrote no frame");
        enc.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    enc.finish().unwrap();
    let sealed = out.0.lock().unwrap().clone();
    assert_eq!(open(&sealed, &pw, 2).unwrap(), plain);
}

/// Fails its `fail_at`th write once, then works again: a transient error.
struct FailsOnce {
    out: Vec<u8>,
    writes: usize,
    fail_at: usize,
}

impl Write for FailsOnce {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.writes += 1;
        if self.writes == self.fail_at {
            return Err(std::io::Error::other("disk on fire"));
        }
        self.out.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn after_a_failed_write_the_encryptor_refuses_everything() {
    // A frame that was not written cannot be written later: every call after the failure,
    // finish included, returns the same error instead of sealing a container with a hole.
    let pw = pass("pw");
    let plain = data(8 * CHUNK);
    for threads in [1, 2] {
        let opts = EncryptOptions::default().chunk_size(CHUNK).threads(threads);
        let out = FailsOnce {
            out: Vec::new(),
            writes: 0,
            fail_at: 3,
        };
        let mut enc = Encryptor::new(out, &[&pw], &opts).unwrap();
        let mut failed = None;
        for piece in plain.chunks(CHUNK) {
            if let Err(e) = enc.write_all(piece) {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("the third write fails");
        assert!(e.to_string().contains("disk on fire"), "{e}");
        let again = [
            enc.write(b"x").unwrap_err().to_string(),
            enc.flush().unwrap_err().to_string(),
            enc.copy_from(&mut &plain[..]).unwrap_err().to_string(),
        ];
        for e in again {
            assert!(e.contains("disk on fire"), "threads={threads}: {e}");
        }
        let e = enc.finish().err().expect("finish fails too");
        assert!(e.to_string().contains("disk on fire"), "{e}");
    }
}

/// Gives `good` bytes, then fails: an input that breaks (a disk error, a dropped connection).
struct BreaksAfter {
    left: usize,
}

impl Read for BreaksAfter {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("the input broke"));
        }
        let n = b.len().min(self.left).min(1000);
        b[..n].fill(7);
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn after_a_failed_read_the_writer_refuses_everything() {
    // The bytes read before the error in the same chunk are lost, so the stream must stay
    // failed: a caller that retries with another reader, writes on or finishes gets the read
    // error, never a container (or age file) with a hole. Both formats, on 1 and 2 threads.
    let pw = pass("pw");
    for format in [zseal::Format::Zseal, zseal::Format::Age] {
        for threads in [1, 2] {
            let opts = EncryptOptions::default()
                .chunk_size(CHUNK)
                .threads(threads)
                .format(format);
            let mut w = zseal::Writer::new(Vec::new(), &[&pw], &opts).unwrap();
            // Two whole chunks, then half of the third.
            let e = w
                .copy_from(&mut BreaksAfter {
                    left: 2 * CHUNK + CHUNK / 2,
                })
                .unwrap_err();
            assert!(e.to_string().contains("the input broke"), "{e}");
            let plain = data(CHUNK);
            let again = [
                w.copy_from(&mut &plain[..]).unwrap_err().to_string(),
                w.write(b"x").unwrap_err().to_string(),
            ];
            for e in again {
                assert!(e.contains("the input broke"), "{format:?} {threads}: {e}");
            }
            let e = w.finish().expect_err("finish fails too");
            assert!(
                e.to_string().contains("the input broke"),
                "{format:?} {threads}: {e}"
            );
        }
    }
}

#[test]
fn digest_is_blake3_or_xxh3_of_the_plaintext() {
    let pw = pass("pw");
    for n in [0, 1, CHUNK, 9 * CHUNK + 1] {
        let plain = data(n);
        for (hash, want) in [
            (HashAlg::Blake3, blake3::hash(&plain).to_hex().to_string()),
            (
                HashAlg::Xxh3,
                format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&plain)),
            ),
        ] {
            let opts = EncryptOptions::default()
                .hash(hash)
                .chunk_size(CHUNK)
                .codec(Codec::Lz4);
            let sealed = seal(&plain, &pw, &opts, 3);
            let mut dec =
                Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default().threads(2)).unwrap();
            assert_eq!(dec.digest_hex(), None, "not before the end");
            dec.copy_to(&mut std::io::sink()).unwrap();
            assert_eq!(
                dec.digest_hex().as_deref(),
                Some(want.as_str()),
                "{hash:?} n={n}"
            );
            assert_eq!(dec.verified().unwrap().plaintext_len, n as u64);
        }
        // A file written without a digest has none to show, even fully verified.
        let opts = EncryptOptions::default()
            .hash(HashAlg::None)
            .chunk_size(CHUNK);
        let sealed = seal(&plain, &pw, &opts, 4);
        let mut dec = Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default()).unwrap();
        dec.copy_to(&mut std::io::sink()).unwrap();
        assert!(dec.verified().is_some());
        assert_eq!(dec.digest_hex(), None, "n={n}");
    }
}

#[test]
fn bad_chunk_sizes_are_refused() {
    let pw = pass("pw");
    for c in [0usize, 512, 3000, 1 << 25] {
        let opts = EncryptOptions::default().chunk_size(c);
        let err = Encryptor::new(Vec::new(), &[&pw], &opts)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("power of two"), "{err}");
    }
}

#[test]
fn one_shot_helpers() {
    let pw = pass("pw");
    let sealed = zseal::encrypt_to_vec(b"abc", &[&pw], &EncryptOptions::default()).unwrap();
    assert_eq!(zseal::decrypt_to_vec(&sealed, &[&pw]).unwrap(), b"abc");
}

/// `finish_with_digest` returns the digest a decrypt returns (b3sum's or xxhsum -H3's hex), and
/// `None` for hash none and for an age file (Python's `encrypt_file` returns it).
#[test]
fn the_writer_returns_the_digest_the_reader_returns() {
    let pw = pass("pw");
    let plain = data(3 * CHUNK + 5);
    for hash in [HashAlg::Blake3, HashAlg::Xxh3, HashAlg::None] {
        let opts = EncryptOptions::default()
            .chunk_size(CHUNK)
            .threads(2)
            .hash(hash);
        let mut enc =
            zseal::Writer::new(Vec::new(), &[&pw as &dyn zseal::Recipient], &opts).unwrap();
        enc.write_all(&plain).unwrap();
        let (sealed, digest) = enc.finish_with_digest().unwrap();
        let mut dec = Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default()).unwrap();
        dec.copy_to(&mut Vec::new()).unwrap();
        assert_eq!(digest, dec.digest_hex(), "{hash:?}");
        match hash {
            HashAlg::Blake3 => assert_eq!(digest, Some(blake3::hash(&plain).to_hex().to_string())),
            HashAlg::None => assert_eq!(digest, None),
            _ => assert_eq!(digest.map(|d| d.len()), Some(16)),
        }
    }
    let age = EncryptOptions::default().format(zseal::Format::Age);
    let mut enc = zseal::Writer::new(Vec::new(), &[&pw as &dyn zseal::Recipient], &age).unwrap();
    enc.write_all(b"x").unwrap();
    assert_eq!(enc.finish_with_digest().unwrap().1, None);
}
