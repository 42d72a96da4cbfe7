//! One container sealed in pieces (FORMAT.md §11): the coordinator's header and trailer around
//! ranges sealed apart give, byte for byte, the container one writer makes from the same keys;
//! its digest is BLAKE3 of the plaintext; what cannot be merged or does not follow is refused.

use crate::common;

use std::io::Write;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{
    seal_range, Codec, DecryptOptions, Decryptor, EncryptOptions, Encryptor, HashAlg, RangeResult,
    SplitSeal, TaskKey, Threads,
};

const C: usize = 4096;

/// Seals `plain` in `tasks` pieces, each through the bytes a task would send back.
fn split(plain: &[u8], opts: &EncryptOptions, tasks: usize, seed: u64) -> Vec<u8> {
    let to = common::recipient("age.pub");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (coordinator, header) = SplitSeal::with_rng(&[&to], opts, &mut rng).unwrap();
    let key = TaskKey::from_bytes(&coordinator.task_key().to_bytes()).unwrap();
    let mut out = header;
    let mut results = Vec::new();
    let ranges = coordinator.ranges(plain.len() as u64, tasks);
    assert!(ranges.len() <= tasks.max(1));
    for (k, &(first, start, end)) in ranges.iter().enumerate() {
        let threads = Threads::Count(1 + k % 3);
        let mut w = seal_range(&key, first, Vec::new(), threads).unwrap();
        w.write_all(&plain[start as usize..end as usize]).unwrap();
        let (frames, result) = w.finish_range().unwrap();
        assert_eq!(
            result.stored_len(),
            frames.len() as u64,
            "what a part file must hold"
        );
        out.extend_from_slice(&frames);
        results.push(RangeResult::from_bytes(&result.to_bytes()).unwrap());
        assert_eq!(results[k], result);
    }
    // Written a frame at a time after the frames; the digest it records is BLAKE3 of the whole.
    let (out, digest) = coordinator.write_trailer(&results, out).unwrap();
    if let Some(d) = digest {
        assert_eq!(d, blake3::hash(plain).to_hex().to_string());
    }
    out
}

fn whole(plain: &[u8], opts: &EncryptOptions, seed: u64) -> Vec<u8> {
    let to = common::recipient("age.pub");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(Vec::new(), &[&to], opts, &mut rng).unwrap();
    enc.write_all(plain).unwrap();
    enc.finish().unwrap()
}

#[test]
fn pieces_make_the_container_one_writer_makes() {
    let text = common::data(9 * C + 5);
    let noise = common::noise(9 * C + 5, 3);
    let mixed: Vec<u8> = (0..text.len())
        .map(|i| {
            if (i / C).is_multiple_of(2) {
                text[i]
            } else {
                noise[i]
            }
        })
        .collect();
    let id = common::identity("age.key");
    for (codec, hash, pad) in [
        (Codec::Zstd(3), HashAlg::Blake3, false),
        (Codec::None, HashAlg::Blake3, false),
        (Codec::Lz4, HashAlg::None, false),
        (Codec::Zstd(1), HashAlg::Blake3, true),
    ] {
        let opts = EncryptOptions::default()
            .codec(codec)
            .hash(hash)
            .pad(pad)
            .chunk_size(C)
            .threads(2);
        for len in [0, 1, C - 1, C, C + 1, 4 * C, mixed.len()] {
            let plain = &mixed[..len];
            let one = whole(plain, &opts, 7);
            for tasks in [1, 2, 3, 7, 20] {
                let what = format!("{codec:?} {hash:?} pad={pad} len={len} tasks={tasks}");
                let pieces = split(plain, &opts, tasks, 7);
                // The same file key and salt (drawn first from the same seed): the same frames,
                // index and footer. The headers differ only in the X25519 stanza, whose
                // ephemeral key age draws itself.
                let h = Decryptor::new(&pieces[..], &[&id], &DecryptOptions::default())
                    .unwrap()
                    .header_len() as usize;
                assert_eq!(pieces.len(), one.len(), "{what}");
                assert!(
                    pieces[h..] == one[h..],
                    "{what}: other frames than one writer's"
                );
                let mut d =
                    Decryptor::new(&pieces[..], &[&id], &DecryptOptions::default()).unwrap();
                let mut got = Vec::new();
                d.copy_to(&mut got).unwrap();
                assert!(got == plain, "{what}");
            }
            let mut d = Decryptor::new(&one[..], &[&id], &DecryptOptions::default()).unwrap();
            let mut got = Vec::new();
            d.copy_to(&mut got).unwrap();
            assert!(got == plain);
            if hash == HashAlg::Blake3 {
                let b3sum = blake3::hash(plain).to_hex().to_string();
                assert_eq!(d.digest_hex().as_deref(), Some(b3sum.as_str()), "{len}");
            }
        }
    }
}

#[test]
fn ranges_cut_on_chunks_and_cover_the_plaintext() {
    let to = common::recipient("age.pub");
    let opts = EncryptOptions::default().chunk_size(C);
    let (s, _) = SplitSeal::new(&[&to], &opts).unwrap();
    for (len, tasks) in [(0u64, 4), (1, 4), (10 * C as u64 + 3, 4), (3 * C as u64, 5)] {
        let r = s.ranges(len, tasks);
        assert_eq!(r.first().map(|x| (x.0, x.1)), Some((0, 0)));
        assert_eq!(r.last().map(|x| x.2), Some(len));
        for w in r.windows(2) {
            assert_eq!(w[0].2, w[1].1, "contiguous");
            assert_eq!(w[1].1, w[1].0 * C as u64, "on a chunk boundary");
            assert!(w[0].2 > w[0].1, "not empty");
        }
    }
    assert_eq!(
        s.ranges(3 * C as u64, 5).len(),
        3,
        "no more ranges than chunks"
    );
}

#[test]
fn what_cannot_be_merged_or_does_not_follow_is_refused() {
    let to = common::recipient("age.pub");
    let xxh3 = EncryptOptions::default().hash(HashAlg::Xxh3);
    let e = SplitSeal::new(&[&to], &xxh3).unwrap_err().to_string();
    assert!(e.contains("XXH3 of the whole file cannot be merged"), "{e}");
    let adapt = EncryptOptions::default().adapt(1, 5);
    assert!(SplitSeal::new(&[&to], &adapt).is_err());

    let opts = EncryptOptions::default().chunk_size(C);
    let (s, _) = SplitSeal::new(&[&to], &opts).unwrap();
    let seal = |first: u64, data: &[u8]| {
        let mut w = seal_range(s.task_key(), first, Vec::new(), Threads::Count(1)).unwrap();
        w.write_all(data).unwrap();
        w.finish_range().unwrap().1
    };
    let plain = common::data(3 * C);
    let a = seal(0, &plain[..C]);
    let b = seal(1, &plain[C..2 * C]);
    let short = seal(1, &plain[C..2 * C - 1]);
    let c = seal(2, &plain[2 * C..]);
    assert!(s.trailer(&[a.clone(), b.clone(), c.clone()]).is_ok());
    for (bad, what) in [
        (vec![a.clone(), c.clone(), b.clone()], "out of order"),
        (vec![a.clone(), c.clone()], "a range missing"),
        (
            vec![a.clone(), short, c.clone()],
            "a middle range short of a chunk",
        ),
    ] {
        let e = s.trailer(&bad).unwrap_err().to_string();
        assert!(
            e.contains("does not follow the ranges before it"),
            "{what}: {e}"
        );
    }
    assert!(RangeResult::from_bytes(b"not a result").is_err());
    let mut cut = a.to_bytes();
    cut.pop();
    assert!(RangeResult::from_bytes(&cut).is_err());
    // A whole container's writer has no range to finish, and the task key shows no key.
    let enc = Encryptor::new(Vec::new(), &[&to], &opts).unwrap();
    assert!(enc.finish_range().is_err());
    let key = s.task_key();
    let shown = format!("{key:?} {s:?}");
    let secret = &key.to_bytes()[key.to_bytes().len() - 32..];
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        !shown.contains(&hex) && !shown.contains(&format!("{secret:?}")),
        "{shown}"
    );
    assert!(TaskKey::from_bytes(&key.to_bytes()[1..]).is_err());
}

/// Opens `container` in `tasks` ranges the way zseal.dask does: one open key from the
/// coordinator, each range opened from its own reader of the file, then the digest merged.
fn open_in_pieces(container: &[u8], tasks: u64) -> zseal::Result<(Vec<u8>, Option<String>)> {
    use std::io::Cursor;
    let id = common::identity("age.key");
    let locked = zseal::Locked::read(Cursor::new(container))?;
    let key = zseal::OpenKey::from_bytes(&locked.open_key(&[&id])?.to_bytes())?;
    let mut coordinator = locked.unlock_with_key(&key, &DecryptOptions::default())?;
    let fin = zseal::final_frame(&mut coordinator)?;
    let (alg, c) = (
        coordinator.header().hash,
        coordinator.header().chunk_size() as u64,
    );
    let chunks = fin.plaintext_len.div_ceil(c);
    let mut plain = Vec::new();
    let mut ranges = Vec::new();
    for k in 0..tasks {
        let (a, b) = (chunks * k / tasks, chunks * (k + 1) / tasks);
        let mut dec = zseal::Locked::read(Cursor::new(container))?
            .unlock_with_key(&key, &DecryptOptions::default().threads(1 + k as usize % 2))?;
        let (out, r) = zseal::open_range(
            &mut dec,
            (a * c).min(fin.plaintext_len),
            (b * c).min(fin.plaintext_len),
            Vec::new(),
        )?;
        plain.extend_from_slice(&out);
        ranges.push(zseal::OpenedRange::from_bytes(&r.to_bytes())?);
        assert_eq!(ranges.last(), Some(&r));
    }
    let digest = zseal::merged_digest(alg, &fin, c as usize, &ranges)?;
    Ok((plain, digest))
}

#[test]
fn a_container_opened_in_pieces_gives_its_plaintext_and_digest() {
    for len in [0, 1, C - 1, C, C + 1, 9 * C + 5] {
        let plain = common::noise(len, len as u64);
        let opts = EncryptOptions::default().chunk_size(C);
        let container = whole(&plain, &opts, 1);
        for tasks in [1, 2, 3, 7] {
            let (got, digest) = open_in_pieces(&container, tasks).unwrap();
            assert_eq!(got, plain, "{len} bytes in {tasks} tasks");
            assert_eq!(digest.unwrap(), blake3::hash(&plain).to_hex().to_string());
        }
        // Padded, and with digests that do not merge (the frames are still all opened).
        let padded = whole(&plain, &opts.clone().pad(true), 2);
        assert_eq!(open_in_pieces(&padded, 3).unwrap().0, plain);
        for alg in [HashAlg::Xxh3, HashAlg::None] {
            let c = whole(&plain, &opts.clone().hash(alg), 3);
            assert_eq!(
                open_in_pieces(&c, 3).unwrap(),
                (plain.clone(), None),
                "{alg}"
            );
        }
    }
}

#[test]
fn a_damaged_container_fails_when_opened_in_pieces() {
    let plain = common::noise(9 * C + 5, 7);
    let opts = EncryptOptions::default().chunk_size(C);
    let container = whole(&plain, &opts, 4);
    let header_len = zseal::Locked::read(std::io::Cursor::new(&container[..]))
        .unwrap()
        .header_len() as usize;
    // A flipped bit in the header, in every frame region, in the index and in the footer.
    for at in [
        10,
        header_len + 7,
        header_len + 3 * C,
        container.len() / 2,
        container.len() - 30,
        container.len() - 3,
    ] {
        let mut bad = container.clone();
        bad[at] ^= 0x04;
        assert!(open_in_pieces(&bad, 3).is_err(), "flipped byte {at}");
    }
    // A key for another header (another file) is refused by the task's reader.
    let other = whole(&plain, &opts, 5);
    let id = common::identity("age.key");
    let key = zseal::Locked::read(std::io::Cursor::new(&other[..]))
        .unwrap()
        .open_key(&[&id])
        .unwrap();
    let e = zseal::Locked::read(std::io::Cursor::new(&container[..]))
        .unwrap()
        .unlock_with_key(&key, &DecryptOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("container changed"), "{e}");
    assert!(!format!("{key:?}").contains(&format!("{:?}", &key.to_bytes()[8..12])));
    // Ranges that leave a gap are refused before any digest is compared.
    let mut dec = zseal::Locked::read(std::io::Cursor::new(&container[..]))
        .unwrap()
        .unlock(&[&id], &DecryptOptions::default())
        .unwrap();
    let fin = zseal::final_frame(&mut dec).unwrap();
    let (_, r) = zseal::open_range(&mut dec, C as u64, 2 * C as u64, Vec::new()).unwrap();
    assert!(zseal::merged_digest(HashAlg::Blake3, &fin, C, &[r]).is_err());
    assert!(zseal::open_range(&mut dec, 5, 2 * C as u64, Vec::new()).is_err());
}

/// `SplitSeal::join` makes the container from the tasks' part files, byte for byte what the
/// header, the pieces and the trailer make in memory, and it opens; a part file that does not hold what its task sealed (cut short, or
/// rewritten by another attempt of the task) fails the join, naming it, before anything is written;
/// part files and results must pair up.
#[test]
fn join_writes_the_part_files_checked_against_their_tasks() {
    let plain = common::noise(7 * C + 11, 8);
    let opts = EncryptOptions::default()
        .codec(Codec::None)
        .hash(HashAlg::Blake3)
        .chunk_size(C);
    let to = common::recipient("age.pub");
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let (coordinator, header) = SplitSeal::with_rng(&[&to], &opts, &mut rng).unwrap();
    let key = TaskKey::from_bytes(&coordinator.task_key().to_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut parts, mut results, mut pieces) = (Vec::new(), Vec::new(), header.clone());
    for (k, &(first, start, end)) in coordinator.ranges(plain.len() as u64, 3).iter().enumerate() {
        let mut w = seal_range(&key, first, Vec::new(), Threads::Count(1)).unwrap();
        w.write_all(&plain[start as usize..end as usize]).unwrap();
        let (frames, result) = w.finish_range().unwrap();
        let path = dir.path().join(format!("{k:06}"));
        std::fs::write(&path, &frames).unwrap();
        pieces.extend_from_slice(&frames);
        parts.push(path);
        results.push(result);
    }
    assert_eq!(parts.len(), 3);
    let (joined, digest) = coordinator
        .join(&header, &parts, &results, Vec::new())
        .unwrap();
    assert_eq!(digest, Some(blake3::hash(&plain).to_hex().to_string()));
    let (pieces, _) = coordinator.write_trailer(&results, pieces).unwrap();
    let differ = joined.iter().zip(&pieces).position(|(a, b)| a != b);
    assert!(
        joined.len() == pieces.len() && differ.is_none(),
        "the same container as the pieces in memory: {} and {} bytes, first differing at {differ:?}",
        joined.len(),
        pieces.len()
    );
    let mut dec = Decryptor::new(
        &joined[..],
        &[&common::identity("age.key")],
        &DecryptOptions::default(),
    )
    .unwrap();
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut dec, &mut back).unwrap();
    assert!(back == plain);

    let held = std::fs::metadata(&parts[1]).unwrap().len();
    let f = std::fs::File::options()
        .write(true)
        .open(&parts[1])
        .unwrap();
    f.set_len(held - 100).unwrap();
    let mut out = Vec::new();
    let e = coordinator
        .join(&header, &parts, &results, &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("000001: the part file holds"), "{e}");
    assert!(e.contains(&format!("and its task sealed {held}")), "{e}");
    assert!(
        out.is_empty(),
        "every part is checked before anything is written"
    );

    let e = coordinator
        .join(&header, &parts[..2], &results, Vec::new())
        .unwrap_err();
    assert!(
        e.to_string().contains("2 part files for 3 task results"),
        "{e}"
    );
}
