//! The encryption fast paths (issue 14): regular files read by the workers with positional reads
//! (`Encryptor::copy_from_file`) and the incompressible-chunk probe. Both must leave the bytes
//! exactly what the ordinary path writes.

use crate::common;

use std::io::{Seek, SeekFrom, Write};

use common::{data, frames, noise, open, pass};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{Codec, EncryptOptions, Encryptor, HashAlg};

const C: usize = 64 << 10;

fn via_file(plain: &[u8], skip: usize, opts: &EncryptOptions, seed: u64) -> Vec<u8> {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(plain).unwrap();
    f.seek(SeekFrom::Start(skip as u64)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(Vec::new(), &[&pass("pw")], opts, &mut rng).unwrap();
    let n = enc.copy_from_file(&f).unwrap();
    assert_eq!(n, (plain.len() - skip) as u64);
    // The file is left at its end, as a sequential read would leave it.
    assert_eq!(f.stream_position().unwrap(), plain.len() as u64);
    enc.finish().unwrap()
}

fn via_reader(plain: &[u8], opts: &EncryptOptions, seed: u64) -> Vec<u8> {
    common::seal(plain, &pass("pw"), opts, seed)
}

/// Alternating compressible and random chunks (so both frame kinds and both worker paths run).
fn mixed(n: usize) -> Vec<u8> {
    let (text, rand) = (data(n), noise(n, 7));
    (0..n)
        .map(|i| if (i / C) % 3 == 1 { rand[i] } else { text[i] })
        .collect()
}

/// Options for every kind of frame (zstd, lz4, raw, XXH3 with its raw chunks copied out,
/// padded), in chunks of `C` bytes on 1, 2 and 3 threads, each with its name.
fn every_kind() -> Vec<(String, usize, EncryptOptions)> {
    let mut all = Vec::new();
    for threads in [1, 2, 3] {
        for (codec, hash, pad) in [
            (Codec::Zstd(3), HashAlg::Blake3, false),
            (Codec::Lz4, HashAlg::Blake3, false),
            (Codec::Zstd(1), HashAlg::Xxh3, false),
            (Codec::None, HashAlg::None, false),
            (Codec::Zstd(3), HashAlg::Blake3, true),
        ] {
            let opts = EncryptOptions::default()
                .codec(codec)
                .hash(hash)
                .pad(pad)
                .chunk_size(C)
                .threads(threads);
            let name = format!("{codec:?} {hash:?} pad={pad} threads={threads}");
            all.push((name, threads, opts));
        }
    }
    all
}

#[test]
fn positional_reads_give_the_same_bytes_as_sequential_reads() {
    let plain = mixed(9 * C + 123);
    for (kind, _, opts) in every_kind() {
        for len in [0, 1, C - 1, C, C + 1, 3 * C, 9 * C + 123] {
            for skip in [0, 1, C].into_iter().filter(|&s| s <= len) {
                let p = &plain[..len];
                let file = via_file(p, skip, &opts, 5);
                let reader = via_reader(&p[skip..], &opts, 5);
                assert!(file == reader, "{kind} len={len} skip={skip}");
                if len == 9 * C + 123 && skip == 0 {
                    assert_eq!(open(&file, &pass("pw"), 2).unwrap(), p);
                }
            }
        }
    }
}

/// Chunk kinds of a container written with the default header (one passphrase stanza).
fn kinds(c: &[u8]) -> Vec<u8> {
    let header_len = zseal::Locked::read(c).unwrap().header_len() as usize;
    frames(c, header_len).iter().map(|&(at, _)| c[at]).collect()
}

#[test]
fn chunks_larger_than_a_read_piece_are_read_piece_by_piece_at_their_offsets() {
    // Workers read a chunk in 256 KiB pieces; 1 MiB chunks take four, and a start that is not
    // a piece boundary moves every piece.
    let c = 1 << 20;
    let plain = mixed(2 * c + 300_000);
    for codec in [Codec::Zstd(1), Codec::None] {
        for hash in [HashAlg::Blake3, HashAlg::Xxh3] {
            let opts = EncryptOptions::default()
                .codec(codec)
                .hash(hash)
                .chunk_size(c)
                .threads(2);
            for skip in [0, 1, 70_000] {
                let file = via_file(&plain, skip, &opts, 5);
                assert!(
                    file == via_reader(&plain[skip..], &opts, 5),
                    "{codec:?} {hash:?} skip={skip}"
                );
            }
        }
    }
}

#[test]
fn a_file_that_cannot_be_read_gives_its_own_error() {
    // A handle opened for writing only: the workers' positional reads fail with EBADF, which
    // must come through as it is, not as the "file became shorter" of an early end. More chunks
    // than the window holds, so the error comes back while chunks are still being submitted.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain");
    std::fs::write(&path, data(8 * C)).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let opts = EncryptOptions::default().chunk_size(C).threads(2);
    let mut enc = Encryptor::new(Vec::new(), &[&pass("pw")], &opts).unwrap();
    let e = enc.copy_from_file(&f).unwrap_err();
    let zseal::Error::Io(io) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(io.raw_os_error(), Some(9), "EBADF: {e}");
    assert!(!e.to_string().contains("shorter"), "{e}");
}

#[test]
fn incompressible_chunks_are_stored_raw_and_compressible_ones_after_them_compressed() {
    // random, random, text, random, text with a random stretch: the probe must not carry a
    // decision over from one chunk to the next.
    let c = 1 << 20;
    let mut plain = noise(2 * c, 1);
    plain.extend(data(c));
    plain.extend(noise(c, 2));
    let mut t = data(c);
    t[c / 4..c / 2].copy_from_slice(&noise(c / 4, 3));
    plain.extend(t);
    let opts = EncryptOptions::default().chunk_size(c).threads(2);
    let z = via_reader(&plain, &opts, 1);
    assert_eq!(kinds(&z), [1, 1, 0, 1, 0, 2]);
    assert_eq!(open(&z, &pass("pw"), 2).unwrap(), plain);
}

#[test]
fn random_bytes_with_text_in_one_sampled_slice_are_still_compressed() {
    // 1 MiB chunks are probed at 32 slices 32 KiB apart; a 4 KiB run of text over one slice is
    // enough for the chunk to be compressed (it then shrinks by a few KiB).
    let c = 1 << 20;
    let mut plain = noise(c, 9);
    plain[5 * (c / 32)..5 * (c / 32) + 4096].copy_from_slice(&data(4096));
    let opts = EncryptOptions::default().chunk_size(c).threads(1);
    let z = via_reader(&plain, &opts, 1);
    assert_eq!(kinds(&z), [0, 2]);
    assert!(z.len() < c);
}

#[test]
fn an_adaptive_range_is_checked_and_may_be_a_single_level() {
    let seal_with = |opts: &EncryptOptions| {
        Encryptor::new(Vec::new(), &[&pass("pw")], opts).map(|e| e.finish().unwrap())
    };
    let c = seal_with(&EncryptOptions::default().adapt(5, 5)).unwrap();
    let header = zseal::Locked::read(&c[..]).unwrap().header().clone();
    assert_eq!(header.codec, Codec::Zstd(5));
    for (opts, says) in [
        (EncryptOptions::default().adapt(9, 3), "range 9..3 is empty"),
        (EncryptOptions::default().adapt(1, 30), "level"),
        (EncryptOptions::default().adapt(0, 3), "level"),
        (
            EncryptOptions::default().codec(Codec::Lz4).adapt(1, 3),
            "needs the zstd codec",
        ),
    ] {
        let e = seal_with(&opts).unwrap_err();
        assert!(matches!(e, zseal::Error::InvalidOption(_)), "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// A writer that takes `delay` for every write: a slow network.
struct Slow(Vec<u8>, std::time::Duration);

impl Write for Slow {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.1);
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_adaptive_level_rises_for_a_slow_output_and_stays_low_for_a_fast_one() {
    let log = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/sample.log")).unwrap();
    let opts = EncryptOptions::default()
        .chunk_size(C)
        .threads(2)
        .adapt(1, 19);
    let seal_into = |w: Slow| {
        let mut enc = Encryptor::new(w, &[&pass("pw")], &opts).unwrap();
        enc.copy_from(&mut &log[..]).unwrap();
        enc.finish().unwrap().0
    };
    let fast = seal_into(Slow(Vec::new(), std::time::Duration::ZERO));
    let slow = seal_into(Slow(Vec::new(), std::time::Duration::from_millis(60)));
    let level1 = via_reader(
        &log,
        &EncryptOptions::default()
            .chunk_size(C)
            .codec(Codec::Zstd(1)),
        1,
    );
    for c in [&fast, &slow] {
        assert_eq!(open(c, &pass("pw"), 2).unwrap(), log);
        // The header records the highest level a chunk may have (FORMAT.md §1), and the chunk
        // size asked for: the options reached the stream.
        let header = zseal::Locked::read(&c[..]).unwrap().header().clone();
        assert_eq!(header.codec, Codec::Zstd(19));
        assert_eq!(header.chunk_size(), C);
    }
    // Fast: nothing holds the output back, the level stays at or near 1 (never above what a
    // blocked write would justify, so never larger than zstd:1). Slow: the level climbs, so the
    // output is smaller than at level 1 (4 to 5 % here; timing decides how far it climbs, so
    // the test asks only that it did).
    assert!(
        fast.len() <= level1.len(),
        "{} vs {}",
        fast.len(),
        level1.len()
    );
    assert!(
        slow.len() < level1.len(),
        "{} vs {}",
        slow.len(),
        level1.len()
    );
}

/// What decrypting `c` gives: the bytes released (to a writer, which keeps whatever came before
/// a failure) and the outcome. With `positional`, `c` is read from a file that starts with junk,
/// and the workers read the long frame bodies from a second handle to it by offset.
fn released(c: &[u8], threads: usize, positional: bool) -> (Vec<u8>, Result<u64, String>) {
    match positional {
        true => released_at(c, threads, 25),
        false => {
            let pw = pass("pw");
            let opts = zseal::DecryptOptions::default().threads(threads);
            let mut out = Vec::new();
            let r = zseal::Sealed::read(c)
                .and_then(|s| s.unlock(&[&pw], &opts))
                .and_then(|mut d| d.copy_to(&mut out));
            (out, r.map_err(|e| e.to_string()))
        }
    }
}

/// What decrypting `c` releases when it lies `skip` bytes into a file and the workers read its
/// long frame bodies from the file by offset.
fn released_at(c: &[u8], threads: usize, skip: usize) -> (Vec<u8>, Result<u64, String>) {
    use std::io::Write as _;
    let pw = pass("pw");
    let opts = zseal::DecryptOptions::default().threads(threads);
    let mut out = Vec::new();
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(&vec![b'j'; skip]).unwrap();
    f.write_all(c).unwrap();
    f.seek(SeekFrom::Start(skip as u64)).unwrap();
    let bodies = f.try_clone().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let r = zseal::Sealed::read(f)
        .and_then(|s| s.unlock(&[&pw], &opts))
        .and_then(|mut d| {
            d.read_bodies_from(bodies, Some(count.clone()))?;
            d.copy_to(&mut out)
        });
    (out, r.map_err(|e| e.to_string()))
}

/// Compressed and padded bodies of 2 MiB and more are read by the workers too, at a start that
/// their file offset decides (`aligned_at`): each kind of frame, in a plain and a padded file,
/// with the container at 0 to 70 bytes into its file, gives the plaintext a sequential read gives.
#[test]
fn compressed_and_padded_long_bodies_read_by_the_workers() {
    const BIG: usize = 4 << 20;
    // A chunk that compresses to about half (over 2 MiB), a raw one, a short last one.
    let mut plain = noise(BIG / 2, 5);
    plain.extend(vec![b'z'; BIG / 2]);
    plain.extend(noise(BIG, 6));
    plain.extend(data(1000));
    for pad in [false, true] {
        let opts = EncryptOptions::default()
            .chunk_size(BIG)
            .threads(2)
            .pad(pad);
        let c = common::seal(&plain, &pass("pw"), &opts, 11);
        let header_len = zseal::Locked::read(&c[..]).unwrap().header_len() as usize;
        let fr = frames(&c, header_len);
        assert!(fr[0].1 > 2 << 20 && fr[0].1 < 3 << 20, "{pad}: {:?}", fr[0]);
        assert!(fr[1].1 > BIG, "{pad}: {:?}", fr[1]);
        for threads in [1, 2] {
            for skip in [0, 1, 21, 59, 64, 70] {
                let got = released_at(&c, threads, skip);
                assert!(got.0 == plain, "pad {pad}, {threads} thread(s), at {skip}");
                assert_eq!(got.1, Ok(plain.len() as u64));
            }
        }
    }
}

/// Decryption's fast path: from a regular file, workers read frame bodies of 2 MiB and more
/// themselves by offset, and the calling thread only the headers. Whole or damaged, the file must
/// give exactly what a sequential read gives: the same bytes released before a failure and the
/// same error, on 1 and 2 threads, with the container at an offset of its file.
#[test]
fn frame_bodies_read_by_the_workers_give_what_a_sequential_read_gives() {
    const BIG: usize = 4 << 20;
    // Raw (random) chunks of 4 MiB, a compressed one between them, a short raw last one.
    let mut plain = noise(2 * BIG, 3);
    plain.extend(data(BIG));
    plain.extend(noise(BIG + 777, 4));
    let opts = EncryptOptions::default().chunk_size(BIG).threads(2);
    let c = common::seal(&plain, &pass("pw"), &opts, 9);
    let header_len = zseal::Locked::read(&c[..]).unwrap().header_len() as usize;
    let fr = frames(&c, header_len);
    // Frames 0, 1 and 3 are read by the workers; 2 (compressed) and 4 (777 bytes) are not.
    assert_eq!(fr.len(), 6, "5 data frames and the final frame");
    assert!(fr[2].1 < 2 << 20 && fr[4].1 < 2 << 20 && fr[3].1 > 2 << 20);
    let (body1, body4) = (fr[1].0 + 5, fr[3].0 + 5);
    let mut cases: Vec<(String, Vec<u8>)> = vec![("whole".into(), c.clone())];
    for cut in [
        body1 + 1000,
        fr[2].0 + 2,
        body4 + BIG / 2,
        c.len() - 30,
        c.len() - 1,
    ] {
        cases.push((format!("cut at {cut}"), c[..cut].to_vec()));
    }
    for flip in [body1 + 12345, body4 + 3, fr[3].0] {
        let mut d = c.clone();
        d[flip] ^= 0x20;
        cases.push((format!("bit flipped at {flip}"), d));
    }
    let mut longer = c.clone();
    longer.extend_from_slice(b"appended");
    cases.push(("junk appended".into(), longer));
    for (what, bytes) in &cases {
        for threads in [1, 2] {
            let expect = released(bytes, threads, false);
            let got = released(bytes, threads, true);
            assert!(
                got.0 == expect.0,
                "{what}, {threads} thread(s): released {} bytes, a sequential read {}",
                got.0.len(),
                expect.0.len()
            );
            assert_eq!(got.1, expect.1, "{what}, {threads} thread(s)");
            if what == "whole" {
                assert_eq!(got.0, plain);
                assert_eq!(got.1, Ok(plain.len() as u64));
            } else {
                assert!(got.1.is_err(), "{what}: {:?}", got.1);
            }
        }
    }
}

/// Encrypts `plain` (read by the workers from a file) into a file that holds `junk` first, with
/// the frames written by the workers by offset (`Encryptor::write_frames_to`); `append`: the
/// output is opened for appending. Returns the whole output file, the position its handle was
/// left at, and the bytes counted as written by the workers.
fn written_by_workers(
    plain: &[u8],
    junk: &[u8],
    append: bool,
    opts: &EncryptOptions,
    seed: u64,
) -> (Vec<u8>, u64, u64) {
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(plain).unwrap();
    input.rewind().unwrap();
    let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    std::fs::write(&path, junk).unwrap();
    let mut out = std::fs::OpenOptions::new();
    match append {
        true => out.append(true),
        false => out.write(true),
    };
    let mut out = out.open(&path).unwrap();
    out.seek(SeekFrom::End(0)).unwrap();
    let shared = out.try_clone().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(out, &[&pass("pw")], opts, &mut rng).unwrap();
    enc.write_frames_to(shared, Some(count.clone())).unwrap();
    enc.copy_from_file(&input).unwrap();
    let mut out = enc.finish().unwrap();
    let at = out.stream_position().unwrap();
    let written = count.load(std::sync::atomic::Ordering::Relaxed);
    (std::fs::read(&path).unwrap(), at, written)
}

/// Frames written by the workers into the output file, by offset, make the same container as
/// frames written in order by the calling thread, for every kind of frame (raw sealed in place,
/// compressed, padded with its padding frames, XXH3), on 1 to 3 threads, after bytes already in
/// the file; the file's position is left at the container's end, as a sequential write leaves
/// it, and the bytes the workers wrote are counted. A file opened for appending (where a
/// positional write would append instead) is written in order.
#[test]
fn frames_written_by_the_workers_make_the_same_container() {
    let plain = mixed(9 * C + 123);
    for (kind, threads, opts) in every_kind() {
        for len in [0, 1, C, 3 * C + 5, 9 * C + 123] {
            let p = &plain[..len];
            let want = via_reader(p, &opts, 5);
            let header = zseal::Locked::read(&want[..]).unwrap().header_len();
            for (junk, append) in [(&b""[..], false), (b"junk", false), (b"junk", true)] {
                let what = format!("{kind}, {len} bytes after {junk:?}, append {append}");
                let (got, at, counted) = written_by_workers(p, junk, append, &opts, 5);
                assert!(got[..junk.len()] == *junk, "{what}");
                assert!(got[junk.len()..] == want[..], "{what}");
                assert_eq!(at, got.len() as u64, "{what}");
                let by_workers = threads > 1 && !append;
                let expect = if by_workers {
                    want.len() as u64 - header
                } else {
                    0
                };
                assert_eq!(counted, expect, "{what}");
            }
        }
    }
}

/// Frames of 2 MiB and more are written by the workers, shorter ones by the calling thread (both
/// by offset): 4 MiB chunks raw (sealed in place, or copied out with XXH3), compressed to over
/// 2 MiB and to less, plain and padded, on 2 and 3 threads, make the same container.
#[test]
fn long_frames_written_by_the_workers_make_the_same_container() {
    const BIG: usize = 4 << 20;
    let mut plain = noise(BIG / 2, 8);
    plain.extend(vec![0u8; BIG / 2]);
    plain.extend(noise(2 * BIG, 8));
    plain.extend(data(BIG));
    plain.extend(noise(BIG / 2 + 3, 9));
    for (hash, pad) in [
        (HashAlg::Blake3, false),
        (HashAlg::Blake3, true),
        (HashAlg::Xxh3, false),
    ] {
        for threads in [2, 3] {
            let opts = EncryptOptions::default()
                .chunk_size(BIG)
                .hash(hash)
                .pad(pad)
                .threads(threads);
            let want = via_reader(&plain, &opts, 6);
            let header = zseal::Locked::read(&want[..]).unwrap().header_len();
            let fr = frames(&want, header as usize);
            let what = format!("{hash:?} pad {pad}, {threads} threads: {fr:?}");
            assert!(fr[0].1 > 2 << 20 && fr[0].1 < BIG, "{what}");
            assert!(fr[1].1 > BIG && fr[3].1 < 2 << 20, "{what}");
            let (got, at, counted) = written_by_workers(&plain, b"abc", false, &opts, 6);
            assert!(got[3..] == want[..], "{what}");
            let written = want.len() as u64 - header;
            assert_eq!((at, counted), (got.len() as u64, written), "{what}");
        }
    }
}

/// A frame the workers cannot write fails the stream: the error comes back from the writer
/// (here the handle given is read-only, and the frames are raw 4 MiB ones, written by the
/// workers), never a success, and never a panic.
#[test]
fn a_frame_the_workers_cannot_write_fails_the_stream() {
    const BIG: usize = 4 << 20;
    let plain = noise(3 * BIG, 10);
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(&plain).unwrap();
    input.rewind().unwrap();
    let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let out = std::fs::File::create(&path).unwrap();
    let read_only = std::fs::File::open(&path).unwrap();
    let opts = EncryptOptions::default().chunk_size(BIG).threads(2);
    let mut enc = Encryptor::new(out, &[&pass("pw")], &opts).unwrap();
    enc.write_frames_to(read_only, None).unwrap();
    let r = enc
        .copy_from_file(&input)
        .and_then(|_| enc.finish().map(|_| ()));
    let e = r.expect_err("a write into a read-only handle cannot succeed");
    // A worker's failed write is what comes back, before the trailer is written.
    let e = e.to_string();
    assert!(
        e.contains("(frame ") && e.contains("Bad file descriptor"),
        "{e}"
    );
}
