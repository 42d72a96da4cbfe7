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
        .map(|i| if (i / C) % 2 == 0 { text[i] } else { noise[i] })
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
