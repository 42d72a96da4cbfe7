//! Crypt4GH's format and key layer (FORMAT.md §13) through the public API: the committed vectors
//! of fixtures/crypt4gh (made by the reference tool, crypt4gh 1.8.6, and by zseal's writer from a
//! fixed seed), with exact bytes; and in [`reference`], files and keys made by the reference
//! opened here, and files and keys made here opened by the reference.
//!
//! Every file is opened by [`open_file`] three ways (the engine from a file and from a pipe, and
//! the format layer serially), which must agree; [`engine`] has the reader's own tests.

mod engine;
mod reference;

use std::ops::Range;
use std::path::{Path, PathBuf};

use rand_chacha::rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zseal::crypto::c4gh::{self, file, PublicKey, SecretKey};
use zseal::crypto::recipients::KeyPassphrase;
use zseal::format::crypt4gh::{
    seal_header, DataKey, EditList, Header, Layout, SegmentOpener, SegmentSealer, SEGMENT_LEN,
};
use zseal::ErrorKind;

/// The passphrase of the protected fixture keys.
const FIXTURE_PASS: &str = "zseal fixture";

/// Answers a key's passphrase prompt with a fixed answer.
#[derive(Clone)]
struct Pass(&'static str);

impl KeyPassphrase for Pass {
    fn passphrase(&self, _: &str) -> Option<String> {
        Some(self.0.into())
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/crypt4gh")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap()
}

/// The secret keys of the key file at `path`, a protected one opened with `pass`.
fn secret(path: &Path, pass: &'static str) -> zseal::Result<Vec<SecretKey>> {
    c4gh::read_secret_keys(&std::fs::read(path).unwrap(), "key", &Pass(pass))
}

fn public(path: &Path) -> PublicKey {
    c4gh::read_public_key(&std::fs::read_to_string(path).unwrap(), "key").unwrap()
}

/// Opens a whole crypt4gh file (or `range` of its output) with `keys` through the engine
/// (`Sealed::read`, on two threads, [`engine::open`]) from a seekable input and from a pipe, and
/// with the format layer alone, one segment after another ([`open_serial`]): all three agree,
/// and the seekable engine's answer is returned, for the caller to check its error.
fn open_file(
    bytes: &[u8],
    keys: &[SecretKey],
    range: Option<Range<u64>>,
) -> zseal::Result<Vec<u8>> {
    let serial = open_serial(bytes, keys, range.clone());
    let piped = engine::open(bytes, keys, range.clone(), false);
    let seekable = engine::open(bytes, keys, range, true);
    match (&serial, &piped, &seekable) {
        (Ok(a), Ok(b), Ok(c)) => assert!(a == b && b == c, "the readers disagree"),
        (Err(_), Err(_), Err(_)) => {}
        _ => panic!("serial {serial:?}, piped {piped:?}, seekable {seekable:?}"),
    }
    seekable
}

/// Opens a whole crypt4gh file (or `range` of its output) with `keys`, one segment after
/// another, with the format layer alone: header, layout, pieces, segments.
fn open_serial(
    bytes: &[u8],
    keys: &[SecretKey],
    range: Option<Range<u64>>,
) -> zseal::Result<Vec<u8>> {
    let header = Header::parse(bytes)?;
    let opened = header.open(keys)?;
    let layout = Layout::new(header.len(), bytes.len() as u64)?;
    let edit = opened.edit_list.as_ref();
    let range = match range {
        Some(r) => r,
        None => 0..layout.output_len(edit)?,
    };
    let opener = SegmentOpener::new(&opened.data_keys)?;
    let (mut out, mut plain, mut held) = (Vec::new(), vec![0u8; SEGMENT_LEN], None);
    for piece in layout.pieces(edit, range)? {
        if held != Some(piece.segment) {
            let r = layout.segment_range(piece.segment);
            opener.open(
                piece.segment,
                &bytes[r.start as usize..r.end as usize],
                &mut plain,
            )?;
            held = Some(piece.segment);
        }
        out.extend_from_slice(&plain[piece.skip..piece.skip + piece.take]);
    }
    Ok(out)
}

/// A crypt4gh file of `plain` for `to`, with `edit` if given, as zseal's writer makes it.
fn seal_file(
    plain: &[u8],
    to: &[PublicKey],
    edit: Option<&EditList>,
    rng: &mut (impl RngCore + CryptoRng),
) -> Vec<u8> {
    let key = DataKey::generate(rng);
    let mut out = seal_header(&key, to, edit, rng)
        .unwrap()
        .to_bytes()
        .unwrap();
    let sealer = SegmentSealer::new(&key);
    for segment in plain.chunks(SEGMENT_LEN) {
        sealer.seal_random(segment, &mut out, rng).unwrap();
    }
    out
}

/// Plaintext whose every byte depends on its position (`i % 251`), so moved pieces show.
fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// `hello.c4gh` was written by `crypt4gh encrypt` to alice and bob (bob's key scrypt-protected):
/// both open it to `hello.txt`, byte for byte, with the header of two 108-byte packets.
#[test]
fn the_reference_fixture_opens_for_each_recipient() {
    let (file, plain) = (fixture("hello.c4gh"), fixture("hello.txt"));
    let header = Header::parse(&file).unwrap();
    assert_eq!((header.packets.len(), header.len()), (2, 16 + 2 * 108));
    assert_eq!(file.len(), 232 + 1008 + 28);
    let alice = secret(&fixtures().join("alice.sec"), "").unwrap();
    let bob = secret(&fixtures().join("bob.sec"), FIXTURE_PASS).unwrap();
    assert_eq!(alice[0].public(), public(&fixtures().join("alice.pub")));
    assert_eq!(bob[0].public(), public(&fixtures().join("bob.pub")));
    for keys in [&alice, &bob] {
        assert_eq!(open_file(&file, keys, None).unwrap(), plain);
        assert_eq!(
            open_file(&file, keys, Some(100..120)).unwrap(),
            &plain[100..120]
        );
    }
    let (a, b) = (header.open(&alice).unwrap(), header.open(&bob).unwrap());
    // The reference keeps its recipients in a set: bob's packet came first.
    assert_eq!((a.opened, b.opened), (vec![1], vec![0]));
    assert_eq!(a.data_keys[0].expose(), b.data_keys[0].expose());
    let e = secret(&fixtures().join("bob.sec"), "not it").unwrap_err();
    assert!(e.to_string().contains("wrong passphrase"), "{e}");
}

/// `hello-10-500.c4gh` is alice's `crypt4gh rearrange --range 10-500` of it: an edit list
/// [10, 489] (the reference keeps one byte less than its range says, FORMAT.md §13.5).
#[test]
fn the_rearranged_fixture_applies_its_edit_list() {
    let (file, plain) = (fixture("hello-10-500.c4gh"), fixture("hello.txt"));
    let alice = secret(&fixtures().join("alice.sec"), "").unwrap();
    let header = Header::parse(&file).unwrap();
    assert_eq!(header.len(), 16 + 108 + 92);
    let opened = header.open(&alice).unwrap();
    assert_eq!(opened.edit_list.unwrap().lengths(), &[10, 489]);
    assert_eq!(open_file(&file, &alice, None).unwrap(), &plain[10..499]);
    assert_eq!(
        open_file(&file, &alice, Some(5..7)).unwrap(),
        &plain[15..17]
    );
    // Bob's packet was dropped by rearrange (it re-encrypts only what alice opens).
    let bob = secret(&fixtures().join("bob.sec"), FIXTURE_PASS).unwrap();
    assert_eq!(
        open_file(&file, &bob, None).unwrap_err().kind(),
        ErrorKind::NoMatchingKey
    );
}

/// Every byte of the fixture flipped in turn. The reference wrote bob's packet first (it keeps
/// its recipients in a set): a flip there leaves alice's file whole, one in her packet hides it
/// from her, one in the segment fails it, one in a length or the preamble is a header error.
#[test]
fn flipped_bytes_of_the_fixture_are_refused() {
    let (file, plain) = (fixture("hello.c4gh"), fixture("hello.txt"));
    let alice = secret(&fixtures().join("alice.sec"), "").unwrap();
    let structure = [
        ErrorKind::InvalidHeader,
        ErrorKind::Limit,
        ErrorKind::Truncated,
        // The magic flipped: the engine tells formats by it (FORMAT.md §13.1).
        ErrorKind::NotZseal,
    ];
    for at in 0..file.len() {
        let mut bad = file.clone();
        bad[at] ^= 0x40;
        let got = open_file(&bad, &alice, None);
        let (whole_ok, want) = match at {
            0..=15 => (false, structure.to_vec()),
            16..=123 => (true, structure.to_vec()),
            124..=231 => (
                false,
                [&structure[..], &[ErrorKind::NoMatchingKey]].concat(),
            ),
            _ => (false, vec![ErrorKind::Damaged]),
        };
        match got {
            Ok(p) => assert!(whole_ok && p == plain, "byte {at} opened"),
            Err(e) => assert!(want.contains(&e.kind()), "byte {at}: {e}"),
        }
    }
    // Cut inside the segment's nonce and MAC, and cut at its start (a valid, empty file).
    let cut = open_file(&file[..232 + 28], &alice, None).unwrap_err();
    assert_eq!(cut.kind(), ErrorKind::Truncated);
    assert_eq!(open_file(&file[..232], &alice, None).unwrap(), b"");
}

/// `zseal.c4gh` is zseal's writer's output for `hello.txt` to alice and bob with a
/// ChaCha20 RNG seeded with 44 and the edit list [10, 489]: the committed bytes are exactly what
/// the writer makes (regenerate with ZSEAL_REGENERATE_VECTORS=1 only for a deliberate change).
#[test]
fn zseals_written_vector_is_reproduced_byte_for_byte() {
    let plain = fixture("hello.txt");
    let to = [
        public(&fixtures().join("alice.pub")),
        public(&fixtures().join("bob.pub")),
    ];
    let edit = EditList::new(vec![10, 489]).unwrap();
    let made = seal_file(
        &plain,
        &to,
        Some(&edit),
        &mut ChaCha20Rng::seed_from_u64(44),
    );
    let path = fixtures().join("zseal.c4gh");
    if std::env::var_os("ZSEAL_REGENERATE_VECTORS").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    assert_eq!(
        made,
        std::fs::read(&path).unwrap(),
        "fixtures/crypt4gh/zseal.c4gh is stale"
    );
    assert_eq!(made.len(), 16 + 2 * (108 + 92) + 1008 + 28);
    let bob = secret(&fixtures().join("bob.sec"), FIXTURE_PASS).unwrap();
    assert_eq!(open_file(&made, &bob, None).unwrap(), &plain[10..499]);
}

/// Several recipients, edit lists and ranges at segment boundaries, through zseal's own writer
/// and reader.
#[test]
fn zseal_round_trips_at_segment_boundaries() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let ids: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate(&mut rng)).collect();
    let to: Vec<PublicKey> = ids.iter().map(SecretKey::public).collect();
    let s = SEGMENT_LEN;
    for n in [0, 1, s - 1, s, s + 1, 3 * s + 17] {
        let plain = data(n);
        let file = seal_file(&plain, &to, None, &mut rng);
        for id in &ids {
            assert_eq!(
                open_file(&file, std::slice::from_ref(id), None).unwrap(),
                plain,
                "{n}"
            );
        }
        if n > s {
            let r = (s - 3) as u64..(s + 1) as u64;
            assert_eq!(
                open_file(&file, &ids[1..2], Some(r)).unwrap(),
                &plain[s - 3..s + 1]
            );
        }
    }
    let plain = data(3 * s + 17);
    let edit = EditList::new(vec![5, 10, (s + 100) as u64]).unwrap();
    let file = seal_file(&plain, &to[..1], Some(&edit), &mut rng);
    let want = [&plain[5..15], &plain[s + 115..]].concat();
    assert_eq!(open_file(&file, &ids[..1], None).unwrap(), want);
    assert_eq!(
        open_file(&file, &ids[..1], Some(8..12)).unwrap(),
        &want[8..12]
    );
    let past = EditList::new(vec![0, (3 * s + 18) as u64]).unwrap();
    let file = seal_file(&plain, &to[..1], Some(&past), &mut rng);
    let e = open_file(&file, &ids[..1], None).unwrap_err().to_string();
    assert!(e.contains("past the end"), "{e}");
}

/// The same key in three encodings (an age identity, its crypt4gh key file, and the fixture
/// OpenSSH key for which `ssh-ed25519` gives the public half) opens what its public form seals.
#[test]
fn age_and_openssh_keys_are_crypt4gh_keys() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let (age_secret, age_public) = zseal::crypto::recipients::generate();
    let age_id = c4gh::read_secret_keys(age_secret.as_bytes(), "age", &Pass("")).unwrap();
    let to = c4gh::read_public_key(&age_public, "age").unwrap();
    let file = seal_file(b"same curve", &[to], None, &mut rng);
    assert_eq!(open_file(&file, &age_id, None).unwrap(), b"same curve");
    let text = file::private_key_file(&age_id[0], file::Protection::None, None, &mut rng).unwrap();
    let back = c4gh::read_secret_keys(text.as_bytes(), "c4gh", &Pass("")).unwrap();
    assert_eq!(open_file(&file, &back, None).unwrap(), b"same curve");

    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
    for (name, pass) in [("ed25519", ""), ("ed25519-encrypted", FIXTURE_PASS)] {
        let pk = public(&keys.join(format!("{name}.pub")));
        let sk = secret(&keys.join(name), pass).unwrap();
        assert_eq!(sk[0].public(), pk, "{name}");
    }
    let e = secret(&keys.join("ed25519-encrypted"), "wrong")
        .unwrap_err()
        .to_string();
    assert!(e.contains("wrong passphrase"), "{e}");
    let rsa = c4gh::read_public_key(
        &std::fs::read_to_string(keys.join("rsa.pub")).unwrap(),
        "rsa",
    );
    assert!(rsa
        .unwrap_err()
        .to_string()
        .contains("ssh-ed25519 keys only"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Hostile bytes after a valid preamble, and hostile plaintexts in packets the reader opens
    /// (a writer who knows its public key can make any): an error or a file, never a panic.
    #[test]
    fn hostile_headers_and_packets_never_panic(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        plains in proptest::collection::vec(
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..60), 1..4),
        count in 0u32..4,
        tail in 0usize..200,
    ) {
        let key = SecretKey::from_bytes([1; 32]);
        let mut bytes = [&b"crypt4gh\x01\0\0\0"[..], &count.to_le_bytes(), &body].concat();
        let _ = open_file(&bytes, std::slice::from_ref(&key), None);
        let mut rng = ChaCha20Rng::seed_from_u64(tail as u64);
        let writer = SecretKey::generate(&mut rng);
        let mut packets = Vec::new();
        for (i, p) in plains.iter().enumerate() {
            // Some start with a valid type, so the decoder's inner paths run.
            let typed = [&(i as u32 % 2).to_le_bytes()[..], p].concat();
            let plain = if i % 3 == 2 { p.clone() } else { typed };
            packets.push(zseal::format::crypt4gh::Packet::seal(&plain, &writer, &key.public(), &mut rng).unwrap());
        }
        bytes = Header { packets }.to_bytes().unwrap();
        bytes.extend(std::iter::repeat_n(7u8, tail));
        let _ = open_file(&bytes, std::slice::from_ref(&key), None);
    }
}
