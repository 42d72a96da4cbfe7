//! Crypt4GH through the engine's one read pipeline (issue 44 §2, FORMAT.md §13.9–13.11):
//! `Sealed::read` recognises the magic, the identities' X25519 keys open the header, segments
//! are opened on the workers, the edit list applied on release, ranges read by segment
//! arithmetic; and what §13.11 refuses is refused with nothing released.

use std::io::{Cursor, Read};
use std::ops::Range;

use zseal::crypto::c4gh::SecretKey;
use zseal::crypto::recipients::{load_identities, IdentitySource};
use zseal::pipeline::{DecryptOptions, Sealed};
use zseal::Identity;

use super::*;

/// X25519 keys as an identity, as `-i` gives them.
struct Keys(Vec<SecretKey>);

impl Identity for Keys {
    fn unwrap_stanzas(
        &self,
        _: &[zseal::crypto::AgeStanza],
    ) -> zseal::Result<Option<zseal::FileKey>> {
        Ok(None)
    }

    fn x25519_keys(&self) -> zseal::Result<Vec<SecretKey>> {
        Ok(self.0.clone())
    }
}

/// Opens `bytes` (or `range` of its output) with `keys` through the engine on two threads:
/// over a seekable input as the command line reads a file (whole: its end checked first), or
/// over a pipe.
pub(super) fn open(
    bytes: &[u8],
    keys: &[SecretKey],
    range: Option<Range<u64>>,
    seekable: bool,
) -> zseal::Result<Vec<u8>> {
    let ids = Keys(keys.to_vec());
    let opts = DecryptOptions::default().threads(2);
    let mut out = Vec::new();
    if seekable {
        let mut r = Sealed::read(Cursor::new(bytes))?.unlock(&[&ids], &opts)?;
        match range {
            Some(r2) => r.copy_range_to(r2.start, Some(r2.end), &mut out)?,
            None => {
                r.use_index()?;
                r.copy_to(&mut out)?
            }
        };
        return Ok(out);
    }
    let mut r = Sealed::read(bytes)?.unlock(&[&ids], &opts)?;
    match range {
        Some(r2) => r.copy_range_streaming(r2.start, Some(r2.end), &mut out)?,
        None => r.copy_to(&mut out)?,
    };
    Ok(out)
}

/// A header for `to` with `plaintexts` sealed as its packets, one writer key for all, followed
/// by `plain` in segments under `key`: what a writer that adds packets of its choice makes.
fn handmade(
    to: &SecretKey,
    plaintexts: &[Vec<u8>],
    key: &DataKey,
    plain: &[u8],
    rng: &mut ChaCha20Rng,
) -> Vec<u8> {
    let writer = SecretKey::generate(rng);
    let packets = plaintexts
        .iter()
        .map(|p| zseal::format::crypt4gh::Packet::seal(p, &writer, &to.public(), rng).unwrap())
        .collect();
    let mut out = Header { packets }.to_bytes().unwrap();
    let sealer = SegmentSealer::new(key);
    for s in plain.chunks(SEGMENT_LEN) {
        sealer.seal_random(s, &mut out, rng).unwrap();
    }
    out
}

fn data_key_packet(key: &DataKey, method: u32) -> Vec<u8> {
    [&0u32.to_le_bytes()[..], &method.to_le_bytes(), key.expose()].concat()
}

fn edit_packet(lengths: &[u64]) -> Vec<u8> {
    let mut p = [1u32.to_le_bytes(), (lengths.len() as u32).to_le_bytes()].concat();
    for l in lengths {
        p.extend_from_slice(&l.to_le_bytes());
    }
    p
}

/// What the seekable engine releases before its error (as the command line reads a file: its
/// end first), and the error.
fn released_before_error(bytes: &[u8], keys: &[SecretKey]) -> (Vec<u8>, zseal::Error) {
    let ids = Keys(keys.to_vec());
    let opts = DecryptOptions::default().threads(2);
    let mut out = Vec::new();
    let e = Sealed::read(Cursor::new(bytes))
        .and_then(|s| s.unlock(&[&ids], &opts))
        .and_then(|mut r| {
            r.use_index()?;
            r.copy_to(&mut out)
        })
        .expect_err("refused");
    (out, e)
}

/// FORMAT.md §13.11, one error each, and nothing released: a data key of method 1, a second
/// edit list, an edit list past the end, no packet for the identity, a cut inside a segment, a
/// flipped byte in the last segment.
#[test]
fn each_refusal_is_one_clear_error_with_nothing_released() {
    let mut rng = ChaCha20Rng::seed_from_u64(13);
    let me = SecretKey::generate(&mut rng);
    let key = DataKey::generate(&mut rng);
    let plain = data(3 * SEGMENT_LEN + 100);
    let good = handmade(&me, &[data_key_packet(&key, 0)], &key, &plain, &mut rng);
    assert_eq!(
        open_file(&good, std::slice::from_ref(&me), None).unwrap(),
        plain
    );
    let mut flipped = good.clone();
    let at = flipped.len() - 50;
    flipped[at] ^= 1;
    let cases: Vec<(Vec<u8>, Vec<SecretKey>, ErrorKind, &str)> = vec![
        (
            handmade(&me, &[data_key_packet(&key, 1)], &key, &plain, &mut rng),
            vec![me.clone()],
            ErrorKind::InvalidHeader,
            "unsupported crypt4gh data encryption method 1",
        ),
        (
            handmade(
                &me,
                &[
                    data_key_packet(&key, 0),
                    edit_packet(&[1, 2]),
                    edit_packet(&[3]),
                ],
                &key,
                &plain,
                &mut rng,
            ),
            vec![me.clone()],
            ErrorKind::InvalidHeader,
            "second edit list",
        ),
        (
            handmade(
                &me,
                &[
                    data_key_packet(&key, 0),
                    edit_packet(&[10, plain.len() as u64]),
                ],
                &key,
                &plain,
                &mut rng,
            ),
            vec![me.clone()],
            ErrorKind::Damaged,
            "edit list runs past the end of the data",
        ),
        (
            good.clone(),
            vec![SecretKey::generate(&mut rng)],
            ErrorKind::NoMatchingKey,
            "",
        ),
        (
            good[..good.len() - 100].to_vec(),
            vec![me.clone()],
            ErrorKind::Truncated,
            "cut inside a segment",
        ),
        (
            flipped,
            vec![me.clone()],
            ErrorKind::Damaged,
            "segment 3 failed authentication",
        ),
    ];
    for (n, (file, keys, kind, words)) in cases.into_iter().enumerate() {
        let (out, e) = released_before_error(&file, &keys);
        assert_eq!((n, e.kind()), (n, kind), "{e}");
        assert!(e.to_string().contains(words), "{n}: {e}");
        assert!(out.is_empty(), "{n}: {} bytes released", out.len());
        assert!(open_file(&file, &keys, None).is_err(), "{n}");
    }
}

/// Forty segments (several jobs of the workers) through an edit list of three runs, one inside a
/// segment, one across segments, one to the end: whole, by ranges across the runs, and from a
/// pipe whose segment 20 is flipped, where exactly the kept bytes before it come out.
#[test]
fn many_segments_through_an_edit_list_whole_by_range_and_cut_by_a_flip() {
    let mut rng = ChaCha20Rng::seed_from_u64(14);
    let me = SecretKey::generate(&mut rng);
    let key = DataKey::generate(&mut rng);
    let s = SEGMENT_LEN as u64;
    let plain = data(40 * SEGMENT_LEN - 7);
    let lengths = [100, 50, 5 * s, 18 * s + 3, 2 * s];
    let file = handmade(
        &me,
        &[data_key_packet(&key, 0), edit_packet(&lengths)],
        &key,
        &plain,
        &mut rng,
    );
    let p = |r: Range<u64>| plain[r.start as usize..r.end as usize].to_vec();
    let (a, b) = (100..150, 150 + 5 * s..150 + 5 * s + 18 * s + 3);
    let c = b.end + 2 * s..plain.len() as u64;
    let want = [p(a), p(b), p(c)].concat();
    let keys = [me.clone()];
    assert_eq!(open_file(&file, &keys, None).unwrap(), want);
    let n = want.len() as u64;
    for r in [
        0..1,
        40..60,
        49..51,
        49..(18 * s),
        18 * s..n,
        n - 1..n,
        7..7,
    ] {
        let got = open_file(&file, &keys, Some(r.clone())).unwrap();
        assert_eq!(got, want[r.start as usize..r.end as usize], "{r:?}");
    }
    // From a pipe, segment 20 flipped: the kept bytes of segments 0 to 19, then the error.
    let header_len = Header::parse(&file).unwrap().len() as usize;
    let mut bad = file.clone();
    bad[header_len + 20 * SEALED + 40] ^= 1;
    let ids = Keys(keys.to_vec());
    let opts = DecryptOptions::default().threads(2);
    let mut r = Sealed::read(&bad[..])
        .unwrap()
        .unlock(&[&ids], &opts)
        .unwrap();
    let mut out = Vec::new();
    let e = r.read_to_end(&mut out).unwrap_err();
    assert!(e.to_string().contains("segment 20"), "{e}");
    let kept_before = 50 + (20 * s - (150 + 5 * s)) as usize;
    assert_eq!(out, want[..kept_before]);
}

const SEALED: usize = SEGMENT_LEN + 28;

/// From a regular file with a second handle given (`Reader::read_bodies_from`, as the command
/// line's reads of a file do), the workers read the segments by offset: the same bytes as the
/// serial reader, whole and by range, every stored byte after the header counted once by the
/// workers; a segment flipped in the middle fails with the segment named and nothing of it out.
#[test]
fn segments_read_by_offset_from_a_regular_file() {
    let mut rng = ChaCha20Rng::seed_from_u64(15);
    let me = SecretKey::generate(&mut rng);
    let plain = data(37 * SEGMENT_LEN + 11);
    let file = seal_file(&plain, &[me.public()], None, &mut rng);
    let header_len = Header::parse(&file).unwrap().len();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.c4gh");
    let ids = Keys(vec![me.clone()]);
    let opts = DecryptOptions::default().threads(2);
    let read = |bytes: &[u8], range: Option<Range<u64>>| {
        std::fs::write(&path, bytes).unwrap();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let f = std::fs::File::open(&path).unwrap();
        let mut r = Sealed::read(f).unwrap().unlock(&[&ids], &opts).unwrap();
        let second = std::fs::File::open(&path).unwrap();
        r.read_bodies_from(second, Some(count.clone())).unwrap();
        let mut out = Vec::new();
        let done = match range {
            Some(g) => r.copy_range_to(g.start, Some(g.end), &mut out).map(|_| ()),
            None => r.use_index().and_then(|_| r.copy_to(&mut out)).map(|_| ()),
        };
        (done, out, count.load(std::sync::atomic::Ordering::Relaxed))
    };
    let (done, out, counted) = read(&file, None);
    done.unwrap();
    assert_eq!(out, plain);
    assert_eq!(counted, file.len() as u64 - header_len);
    let s = SEGMENT_LEN as u64;
    let (done, out, _) = read(&file, Some(5 * s - 3..30 * s + 9));
    done.unwrap();
    assert_eq!(out, plain[5 * SEGMENT_LEN - 3..30 * SEGMENT_LEN + 9]);
    let mut bad = file.clone();
    bad[header_len as usize + 20 * SEALED + 40] ^= 1;
    let (done, out, _) = read(&bad, None);
    let e = done.unwrap_err();
    assert!(e.to_string().contains("segment 20"), "{e}");
    assert!(out.len() <= 20 * SEGMENT_LEN && plain.starts_with(&out));
}

/// `-i` files as every front end reads them: a crypt4gh key file (a protected one asks for its
/// passphrase), an OpenSSH ed25519 key (asked only when a crypt4gh file needs it) and an age
/// identity file give the X25519 keys that open a crypt4gh file sealed to their public keys.
#[test]
fn identity_files_of_every_kind_open_crypt4gh_files() {
    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
    let c4gh_dir = fixtures();
    let cases = [
        (c4gh_dir.join("alice.sec"), c4gh_dir.join("alice.pub"), ""),
        (
            c4gh_dir.join("bob.sec"),
            c4gh_dir.join("bob.pub"),
            FIXTURE_PASS,
        ),
        (keys.join("ed25519"), keys.join("ed25519.pub"), ""),
        (
            keys.join("ed25519-encrypted"),
            keys.join("ed25519-encrypted.pub"),
            FIXTURE_PASS,
        ),
        (keys.join("age.key"), keys.join("age.pub"), ""),
    ];
    let mut rng = ChaCha20Rng::seed_from_u64(15);
    for (sk, pk, pass) in cases {
        let ids = load_identities(&[IdentitySource::File(sk.clone())], Pass(pass)).unwrap();
        let refs: Vec<&dyn Identity> = ids.iter().map(|i| i as &dyn Identity).collect();
        let to = public(&pk);
        let file = seal_file(b"opened by -i", &[to], None, &mut rng);
        let mut r = Sealed::read(&file[..])
            .unwrap()
            .unlock(&refs, &DecryptOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", sk.display()));
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"opened by -i", "{}", sk.display());
    }
    // A wrong passphrase for the crypt4gh key is its error, not "no match".
    let e = load_identities(
        &[IdentitySource::File(c4gh_dir.join("bob.sec"))],
        Pass("no"),
    )
    .err()
    .expect("refused");
    assert!(e.to_string().contains("wrong passphrase"), "{e}");
}

/// Packets this reader opens from two writer keys (an added data key, FORMAT.md §13.10): read,
/// with a warning to show; from one writer key, none.
#[test]
fn packets_from_two_writer_keys_are_read_with_a_warning() {
    use zseal::format::crypt4gh::Packet;
    let mut rng = ChaCha20Rng::seed_from_u64(16);
    let me = SecretKey::generate(&mut rng);
    let (key, added) = (DataKey::generate(&mut rng), DataKey::generate(&mut rng));
    let one = handmade(&me, &[data_key_packet(&key, 0)], &key, b"x", &mut rng);
    let mut header = Header::parse(&one).unwrap();
    let stranger = SecretKey::generate(&mut rng);
    let p = Packet::seal(
        &data_key_packet(&added, 0),
        &stranger,
        &me.public(),
        &mut rng,
    );
    header.packets.push(p.unwrap());
    let old_len = Header::parse(&one).unwrap().len() as usize;
    let two = [header.to_bytes().unwrap(), one[old_len..].to_vec()].concat();
    let ids = Keys(vec![me]);
    let warning = |file: &[u8]| {
        let r = Sealed::read(file).unwrap();
        r.unlock(&[&ids], &DecryptOptions::default())
            .unwrap()
            .header_warning()
    };
    assert_eq!(warning(&one), None);
    let w = warning(&two).expect("a warning");
    assert!(w.contains("2 different writer keys"), "{w}");
}
