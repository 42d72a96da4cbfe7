//! Test vectors (fixtures/vectors/, format in fixtures/README.md): a fixed-seed generator and the
//! check that every committed vector gives its expected result, and that the committed files are
//! exactly what the generator makes. Regenerate with
//! `ZSEAL_REGENERATE_VECTORS=1 cargo test --release --test vectors` (only for a deliberate change).

use crate::common;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use base64::Engine;
use bech32::ToBase32;
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zseal::crypto::recipients::{self, AgeIdentity, KeyPassphrase};
use zseal::crypto::{AgeStanza, PassphraseKdf, Stanza, RECORD_TAG};
use zseal::{
    Argon2Params, Cipher, Codec, DecryptOptions, Decryptor, EncryptOptions, Encryptor, FileKey,
    HashAlg, Identity, Passphrase, Recipient,
};

const C: usize = 1024;
const PASS: &str = "vector passphrase";
const CHEAP: Argon2Params = Argon2Params {
    m_cost: 64,
    t_cost: 1,
    p_cost: 1,
};

/// What a vector holds: its container, the keys that open it, and what opening it must give.
struct Vector {
    name: String,
    comment: String,
    container: Vec<u8>,
    passphrase: Option<String>,
    identities: Vec<String>,
    /// `ok` or `error KIND` (KIND from `Error::kind`, with the chunk for chunk auth).
    expect: String,
    plaintext: Option<Vec<u8>>,
}

fn compressible(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| b"zseal test vector text "[i % 23] ^ ((i / 1000) as u8))
        .collect()
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// An X25519 recipient that draws its ephemeral key from the caller's RNG, so the generator is
/// deterministic. The stanza is age's (c2sp.org/age): the age crate unwraps it when decrypting.
struct SeededX25519([u8; 32]);

impl Recipient for SeededX25519 {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
        rng: &mut dyn RngCore,
    ) -> zseal::Result<Vec<AgeStanza>> {
        let mut e = [0u8; 32];
        rng.fill_bytes(&mut e);
        let e = x25519_dalek::StaticSecret::from(e);
        let share = x25519_dalek::PublicKey::from(&e);
        let shared = e.diffie_hellman(&x25519_dalek::PublicKey::from(self.0));
        let mut salt = share.as_bytes().to_vec();
        salt.extend_from_slice(&self.0);
        let mut wrap_key = [0u8; 32];
        hkdf::Hkdf::<sha2::Sha256>::new(Some(&salt), shared.as_bytes())
            .expand(b"age-encryption.org/v1/X25519", &mut wrap_key)
            .unwrap();
        let mut body = file_key.expose().to_vec();
        let tag = chacha20poly1305::ChaCha20Poly1305::new((&wrap_key).into())
            .encrypt_in_place_detached(&[0u8; 12].into(), b"", &mut body)
            .unwrap();
        body.extend_from_slice(&tag);
        let arg = base64::engine::general_purpose::STANDARD_NO_PAD.encode(share.as_bytes());
        let _ = kdf;
        Ok(vec![AgeStanza {
            tag: "X25519".into(),
            args: vec![arg],
            body,
        }])
    }
}

/// The same X25519 stanza in the type-03 form (FORMAT.md §1.1: 2-byte argument lengths), written
/// here from the spec rather than by zseal's encoder, preceded by a type-03 stanza of a recipient
/// type the age crate does not know (`mlkem768x25519`, a 1,494-character argument), which the
/// X25519 identity must pass over.
struct SeededX25519Long([u8; 32]);

impl Recipient for SeededX25519Long {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
        rng: &mut dyn RngCore,
    ) -> zseal::Result<Vec<AgeStanza>> {
        let short = SeededX25519(self.0).wrap_file_key(file_key, kdf, rng)?;
        let b = &Stanza::from_age(&short[0])?.body;
        // 02: tag_len, tag, argc, (len u8, arg)*, body. X25519 has one argument.
        let tag_end = 1 + b[0] as usize;
        assert_eq!(b[tag_end], 1, "one argument");
        let arg_len = b[tag_end + 1] as usize;
        let mut long = b[..=tag_end].to_vec();
        long.extend_from_slice(&(arg_len as u16).to_le_bytes());
        long.extend_from_slice(&b[tag_end + 2..]);
        let mut pq = vec![14u8];
        pq.extend_from_slice(b"mlkem768x25519");
        pq.push(1);
        pq.extend_from_slice(&1494u16.to_le_bytes());
        let mut arg = vec![0u8; 1494];
        rng.fill_bytes(&mut arg);
        pq.extend(arg.iter().map(|x| {
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x & 63) as usize]
        }));
        let mut body = vec![0u8; 32];
        rng.fill_bytes(&mut body);
        pq.extend_from_slice(&body);
        // Records of type 03 as written here, not as zseal's encoder would write them.
        let record = |body| AgeStanza {
            tag: RECORD_TAG.into(),
            args: vec!["03".into()],
            body,
        };
        Ok(vec![record(pq), record(long)])
    }
}

/// A seeded X25519 identity: (AGE-SECRET-KEY-1… string, public key bytes).
fn seeded_identity(rng: &mut ChaCha20Rng) -> (String, [u8; 32]) {
    let mut s = [0u8; 32];
    rng.fill_bytes(&mut s);
    let public = *x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(s)).as_bytes();
    let text = bech32::encode("age-secret-key-", s.to_base32(), bech32::Variant::Bech32)
        .unwrap()
        .to_uppercase();
    (text, public)
}

fn seal(plain: &[u8], opts: &EncryptOptions, to: &[&dyn Recipient], seed: u64) -> Vec<u8> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(Vec::new(), to, opts, &mut rng).unwrap();
    enc.copy_from(&mut &plain[..]).unwrap();
    enc.finish().unwrap()
}

fn options(codec: Codec, cipher: Cipher, hash: HashAlg) -> EncryptOptions {
    EncryptOptions::default()
        .codec(codec)
        .cipher(cipher)
        .hash(hash)
        .chunk_size(C)
        .threads(1)
}

fn ok(name: &str, comment: &str, plain: Vec<u8>, opts: EncryptOptions, seed: u64) -> Vector {
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    Vector {
        name: name.into(),
        comment: comment.into(),
        container: seal(&plain, &opts, &[&pw], seed),
        passphrase: Some(PASS.into()),
        identities: vec![],
        expect: "ok".into(),
        plaintext: Some(plain),
    }
}

/// A recipient that hands the file key to the generator as it wraps it (through `inner`, so the
/// container is the one `inner` alone makes): the key holder's view, needed to forge frames
/// that authenticate.
struct KeyHolder<'a> {
    inner: &'a dyn Recipient,
    key: std::sync::Mutex<Option<[u8; 16]>>,
}

impl Recipient for KeyHolder<'_> {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
        rng: &mut dyn RngCore,
    ) -> zseal::Result<Vec<AgeStanza>> {
        *self.key.lock().unwrap() = Some(*file_key.expose());
        self.inner.wrap_file_key(file_key, kdf, rng)
    }

    fn exclusive(&self) -> bool {
        self.inner.exclusive()
    }
}

/// A container and what its key holder knows: the payload key (FORMAT.md §2.2), where the final
/// frame and the index are, and the chunk count.
struct Forge {
    c: Vec<u8>,
    key: [u8; 32],
    fin_at: usize,
    n: usize,
}

impl Forge {
    /// The plaintext of data frame `i` (kind and AEAD plaintext), opened with the payload key.
    fn open_frame(&self, at: usize, i: u64) -> (u8, Vec<u8>) {
        let len = u32::from_le_bytes(self.c[at + 1..at + 5].try_into().unwrap()) as usize;
        let (aad, body) = self.c[at..at + 5 + len].split_at(5);
        let (msg, tag) = body.split_at(len - 16);
        let mut p = msg.to_vec();
        aes_gcm::Aes256Gcm::new((&self.key).into())
            .decrypt_in_place_detached(&nonce(i, false).into(), aad, &mut p, tag.into())
            .unwrap();
        (aad[0], p)
    }

    /// A whole container after the header at `self.c[..header_len]`: `frames` (kind, AEAD
    /// plaintext) sealed in order with their nonces, then a final frame recording `plaintext_len`,
    /// the frame count, the digest of the index and `digest`, the index and the footer. Every
    /// part is consistent with the others except what the frames themselves say.
    fn assemble(
        &self,
        header_len: usize,
        frames: &[(u8, Vec<u8>)],
        len: u64,
        digest: [u8; 32],
    ) -> Vec<u8> {
        let mut c = self.c[..header_len].to_vec();
        let mut index = Vec::new();
        let aes = aes_gcm::Aes256Gcm::new((&self.key).into());
        let seal = |c: &mut Vec<u8>, i: u64, last: bool, kind: u8, p: &[u8]| {
            let body_len = (p.len() + 16) as u32;
            let mut aad = vec![kind];
            aad.extend_from_slice(&body_len.to_le_bytes());
            let mut body = p.to_vec();
            let tag = aes
                .encrypt_in_place_detached(&nonce(i, last).into(), &aad, &mut body)
                .unwrap();
            c.extend_from_slice(&aad);
            c.extend_from_slice(&body);
            c.extend_from_slice(&tag);
            body_len
        };
        for (i, (kind, p)) in frames.iter().enumerate() {
            let l = seal(&mut c, i as u64, false, *kind, p);
            index.extend_from_slice(&l.to_le_bytes());
        }
        let n = frames.len() as u64;
        let mut fin = len.to_le_bytes().to_vec();
        fin.extend_from_slice(&n.to_le_bytes());
        fin.extend_from_slice(blake3::hash(&index).as_bytes());
        fin.extend_from_slice(&digest);
        seal(&mut c, n, true, 2, &fin);
        c.extend_from_slice(&index);
        c.extend_from_slice(&n.to_le_bytes());
        c.extend_from_slice(b"ZSEALEND");
        c
    }

    /// The final frame's 80-byte plaintext (FORMAT.md §3.2), opened with the payload key.
    fn final_plaintext(&self) -> Vec<u8> {
        let (aad, body) = self.c[self.fin_at..self.fin_at + 101].split_at(5);
        let (msg, tag) = body.split_at(80);
        let mut p = msg.to_vec();
        aes_gcm::Aes256Gcm::new((&self.key).into())
            .decrypt_in_place_detached(&nonce(self.n as u64, true).into(), aad, &mut p, tag.into())
            .unwrap();
        p
    }

    /// The container with the final frame re-sealed around `p` (a correctly sealed final frame
    /// whose content is whatever the key holder chose).
    fn with_final(&self, p: &[u8]) -> Vec<u8> {
        let mut c = self.c.clone();
        let aad: [u8; 5] = c[self.fin_at..self.fin_at + 5].try_into().unwrap();
        let mut body = p.to_vec();
        let tag = aes_gcm::Aes256Gcm::new((&self.key).into())
            .encrypt_in_place_detached(&nonce(self.n as u64, true).into(), &aad, &mut body)
            .unwrap();
        body.extend_from_slice(&tag);
        c[self.fin_at + 5..self.fin_at + 101].copy_from_slice(&body);
        c
    }
}

fn nonce(i: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

/// Containers only a key holder (or a writer bug) can make: every frame authentic, the final
/// frame sealed with the right key and nonce, but its content disagreeing with the frames.
fn key_holder_scenarios() -> Vec<Vector> {
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    let holder = KeyHolder {
        inner: &pw,
        key: Default::default(),
    };
    let opts = options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3);
    let plain = compressible(3 * C - 100);
    let c = seal(&plain, &opts, &[&holder], 300);
    let file_key = holder.key.lock().unwrap().unwrap();
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(&c[16..48]), &file_key)
        .expand(b"zseal v1 payload", &mut key)
        .unwrap();
    let f = common::frames(&c, 50 + 3 + 60 + 32);
    let (n, fin_at) = (f.len() - 1, f[f.len() - 1].0);
    let forge = Forge { c, key, fin_at, n };
    let base = Vector {
        name: String::new(),
        comment: String::new(),
        container: forge.c.clone(),
        passphrase: Some(PASS.into()),
        identities: vec![],
        expect: String::new(),
        plaintext: None,
    };
    let p = forge.final_plaintext();
    let edit = |at: std::ops::Range<usize>, val: &[u8]| {
        let mut q = p.clone();
        q[at].copy_from_slice(val);
        forge.with_final(&q)
    };
    let u64le = |v: usize| (v as u64).to_le_bytes();
    let mut digest = p[48..80].to_vec();
    digest[0] ^= 1;
    let mut index_digest = p[16..48].to_vec();
    index_digest[31] ^= 1;
    // The index with two authentic entries swapped (chunk 1 is full, chunk 2 short, so their
    // lengths differ) and a final frame carrying the digest of that reordered index.
    let index_at = fin_at + 101;
    let mut reordered = forge.c.clone();
    let (e1, e2) = (index_at + 4..index_at + 8, index_at + 8..index_at + 12);
    let (l1, l2) = (forge.c[e1.clone()].to_vec(), forge.c[e2.clone()].to_vec());
    assert_ne!(l1, l2);
    reordered[e1].copy_from_slice(&l2);
    reordered[e2].copy_from_slice(&l1);
    let reordered_digest = *blake3::hash(&reordered[index_at..index_at + 4 * n]).as_bytes();
    let mut q = p.clone();
    q[16..48].copy_from_slice(&reordered_digest);
    let reordered = Forge {
        c: reordered,
        ..forge
    }
    .with_final(&q);
    // A short chunk in the middle (chunk 1 holds 100 bytes, chunk 2 a full chunk after it),
    // everything else consistent with that, digest included.
    let header_len = 50 + 3 + 60 + 32;
    let parts = [
        &plain[..C],
        &plain[C..C + 100],
        &plain[C + 100..2 * C + 100],
    ];
    let whole: Vec<u8> = parts.concat();
    let frames: Vec<(u8, Vec<u8>)> = parts.iter().map(|p| (1u8, p.to_vec())).collect();
    let short_in_middle = forge.assemble(
        header_len,
        &frames,
        whole.len() as u64,
        *blake3::hash(&whole).as_bytes(),
    );
    // A padded file whose data chunk comes after a padding frame (padding ends a file).
    let pw2 = Passphrase::with_params(PASS, CHEAP).unwrap();
    let holder2 = KeyHolder {
        inner: &pw2,
        key: Default::default(),
    };
    let padded_plain = compressible(C / 2);
    let pc = seal(&padded_plain, &opts.clone().pad(true), &[&holder2], 301);
    let mut key2 = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(&pc[16..48]), &holder2.key.lock().unwrap().unwrap())
        .expand(b"zseal v1 payload", &mut key2)
        .unwrap();
    let pf = common::frames(&pc, header_len);
    let padded = Forge {
        c: pc.clone(),
        key: key2,
        fin_at: pf[pf.len() - 1].0,
        n: pf.len() - 1,
    };
    let data0 = padded.open_frame(pf[0].0, 0);
    assert_eq!(data0.0, 3, "a padded data frame");
    let pad_frames = vec![(4u8, vec![0u8; 40]), data0];
    let data_after_padding = padded.assemble(
        header_len,
        &pad_frames,
        padded_plain.len() as u64,
        *blake3::hash(&padded_plain).as_bytes(),
    );
    vec![
        bad(
            &base,
            "kh-short-chunk-in-the-middle",
            "chunk 1 holds 100 bytes and chunk 2 follows it; index, length and digest agree with that",
            "chunk invalid",
            short_in_middle,
        ),
        bad(
            &base,
            "kh-data-after-padding",
            "padded file: a padding frame, then the data chunk; index, length and digest agree",
            "chunk invalid",
            data_after_padding,
        ),
        bad(
            &base,
            "kh-final-digest",
            "final frame sealed by the key holder with another whole-plaintext digest",
            "digest mismatch",
            edit(48..80, &digest),
        ),
        bad(
            &base,
            "kh-final-index-digest",
            "final frame sealed by the key holder with another index digest",
            "damaged",
            edit(16..48, &index_digest),
        ),
        bad(
            &base,
            "kh-final-plaintext-shorter",
            "final frame records one byte less than the chunks hold (same chunk count)",
            "damaged",
            edit(0..8, &u64le(plain.len() - 1)),
        ),
        bad(
            &base,
            "kh-final-plaintext-longer",
            "final frame records a chunk more of plaintext than the chunks hold",
            "damaged",
            edit(0..8, &u64le(plain.len() + C)),
        ),
        bad(
            &base,
            "kh-final-chunk-count",
            "final frame records 4 chunks; there are 3 (nonce and footer say 3)",
            "damaged",
            edit(8..16, &u64le(n + 1)),
        ),
        bad(
            &base,
            "kh-index-reordered",
            "index entries 1 and 2 swapped, final frame sealed with that index's digest",
            "damaged",
            reordered,
        ),
    ]
}

fn bad(base: &Vector, name: &str, comment: &str, expect: &str, container: Vec<u8>) -> Vector {
    Vector {
        name: name.into(),
        comment: comment.into(),
        container,
        passphrase: base.passphrase.clone(),
        identities: base.identities.clone(),
        expect: format!("error {expect}"),
        plaintext: None,
    }
}

/// Every scenario. Success first, then one failure per way to damage the base container.
fn scenarios() -> Vec<Vector> {
    let mut v = Vec::new();
    let codecs = [
        ("zstd", Codec::Zstd(3)),
        ("lz4", Codec::Lz4),
        ("gzip", Codec::Gzip(6)),
        ("none", Codec::None),
    ];
    let ciphers = [
        ("aes", Cipher::Aes256Gcm),
        ("chacha", Cipher::ChaCha20Poly1305),
    ];
    let hashes = [
        ("blake3", HashAlg::Blake3),
        ("xxh3", HashAlg::Xxh3),
        ("none", HashAlg::None),
    ];
    let mut seed = 1;
    for (cn, codec) in codecs {
        for (kn, cipher) in ciphers {
            for (hn, hash) in hashes {
                let name = format!("ok-{cn}-{kn}-{hn}");
                v.push(ok(
                    &name,
                    "2.5 chunks of text",
                    compressible(2 * C + C / 2),
                    options(codec, cipher, hash),
                    seed,
                ));
                seed += 1;
            }
        }
    }
    let def = || options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3);
    v.push(ok("ok-empty", "no data frames", vec![], def(), 100));
    v.push(ok(
        "ok-one-byte",
        "a single short chunk",
        vec![42],
        def(),
        101,
    ));
    v.push(ok(
        "ok-exact-3-chunks",
        "a multiple of the chunk size: no short chunk",
        compressible(3 * C),
        def(),
        102,
    ));
    v.push(ok(
        "ok-stored-raw",
        "incompressible: every chunk stored raw (kind 01)",
        noise(3 * C - 7, 1),
        def(),
        103,
    ));
    let mut mixed = compressible(C);
    mixed.extend(noise(C, 2));
    mixed.extend(compressible(500));
    v.push(ok(
        "ok-mixed-raw-compressed",
        "chunk 1 raw, chunks 0 and 2 compressed",
        mixed,
        def(),
        104,
    ));
    // Three X25519 recipients; any one identity opens the file.
    let mut rng = ChaCha20Rng::seed_from_u64(105);
    let ids: Vec<(String, [u8; 32])> = (0..3).map(|_| seeded_identity(&mut rng)).collect();
    let rs: Vec<SeededX25519> = ids.iter().map(|(_, p)| SeededX25519(*p)).collect();
    let to: Vec<&dyn Recipient> = rs.iter().map(|r| r as &dyn Recipient).collect();
    let plain = compressible(2 * C + 1);
    v.push(Vector {
        name: "ok-three-recipients".into(),
        comment: "three X25519 recipients (age stanzas); each identity alone opens it".into(),
        container: seal(&plain, &def(), &to, 106),
        passphrase: None,
        identities: ids.iter().map(|(s, _)| s.clone()).collect(),
        expect: "ok".into(),
        plaintext: Some(plain),
    });

    let mut rng = ChaCha20Rng::seed_from_u64(107);
    let (id, public) = seeded_identity(&mut rng);
    let plain = compressible(C + 9);
    v.push(Vector {
        name: "ok-stanza-type-03".into(),
        comment: "type-03 stanzas (2-byte argument lengths): an mlkem768x25519 stanza with a \
                  1,494-character argument, which no identity here opens, then the X25519 \
                  stanza of the identity"
            .into(),
        container: seal(&plain, &def(), &[&SeededX25519Long(public)], 108),
        passphrase: None,
        identities: vec![id],
        expect: "ok".into(),
        plaintext: Some(plain),
    });

    let pad = || def().pad(true);
    let mut mixed = compressible(C);
    mixed.extend(noise(C, 3));
    mixed.extend(compressible(300));
    v.push(ok(
        "ok-padded",
        "padded (FORMAT.md 3.3): chunks 0 and 2 compressed, chunk 1 raw, all kind 03, then \
         padding frames (kind 04) to the file's Padme class",
        mixed,
        pad(),
        109,
    ));
    v.push(ok(
        "ok-padded-empty",
        "padded, no data: padding frames only",
        vec![],
        pad(),
        110,
    ));

    // The base of every failure: passphrase, zstd, AES-GCM, BLAKE3, 1 KiB chunks, 3 chunks.
    let base = ok("base", "", compressible(3 * C - 100), def(), 200);
    let b = &base.container;
    let h = 50 + 3 + 60 + 32;
    let f = common::frames(b, h);
    let (fin_at, _) = f[3];
    let index_at = fin_at + 101;
    let footer_at = index_at + 12;
    let fr = |i: usize| f[i].0..f[i].0 + f[i].1;
    let set = |at: usize, val: u8| {
        let mut c = b.clone();
        c[at] = val;
        c
    };
    let flip = |at: usize| {
        let mut c = b.clone();
        c[at] ^= 1;
        c
    };
    let join = |parts: &[std::ops::Range<usize>]| -> Vec<u8> {
        parts.iter().flat_map(|r| b[r.clone()].to_vec()).collect()
    };
    let le32 = |at: usize, val: u32| {
        let mut c = b.clone();
        c[at..at + 4].copy_from_slice(&val.to_le_bytes());
        c
    };
    let head = 0..h;
    let tail = fin_at..b.len();
    let mut add = |name: &str, comment: &str, expect: &str, c: Vec<u8>| {
        v.push(bad(&base, name, comment, expect, c))
    };
    add(
        "bad-header-magic",
        "bit flipped in the magic",
        "not zseal",
        flip(1),
    );
    add(
        "bad-header-version",
        "version 2",
        "unsupported version",
        set(8, 2),
    );
    add(
        "bad-header-cipher",
        "cipher id changed to ChaCha20-Poly1305",
        "wrong passphrase",
        set(9, 2),
    );
    add(
        "bad-header-codec",
        "codec id changed from zstd to gzip (level 3 is valid for both)",
        "wrong passphrase",
        set(10, 3),
    );
    add(
        "bad-header-codec-level",
        "zstd level byte 0: not a zstd level, so the header is not canonical",
        "invalid header",
        set(11, 0),
    );
    add(
        "bad-header-level",
        "level byte changed",
        "wrong passphrase",
        flip(11),
    );
    add(
        "bad-header-hash",
        "hash id changed to xxh3",
        "wrong passphrase",
        set(12, 2),
    );
    add(
        "bad-header-chunk-size",
        "chunk size 2 KiB instead of 1 KiB",
        "wrong passphrase",
        set(13, 11),
    );
    add(
        "bad-header-chunk-size-over-limit",
        "chunk size 2^25, over the 16 MiB limit",
        "invalid header",
        set(13, 25),
    );
    add(
        "bad-header-reserved",
        "reserved byte 15 set",
        "invalid header",
        set(15, 1),
    );
    add(
        "bad-header-flags",
        "unknown flag bit 3 set (bit 1 is the signed flag, FORMAT.md §12.2; bit 2 the pieced \
         flag, §14.3)",
        "invalid header",
        set(14, 8),
    );
    add(
        "bad-header-pieced-flag",
        "pieced flag set on a version-1 file: the flag is covered by the header MAC",
        "wrong passphrase",
        set(14, 4),
    );
    add(
        "bad-header-signed-flag",
        "signed flag set on an unsigned file: the flag is covered by the header MAC",
        "wrong passphrase",
        set(14, 2),
    );
    add(
        "bad-header-padded-flag",
        "padded flag set on an unpadded file: the flag is covered by the header MAC",
        "wrong passphrase",
        set(14, 1),
    );
    add(
        "bad-header-salt",
        "bit flipped in the payload salt",
        "wrong passphrase",
        flip(20),
    );
    add(
        "bad-header-mac",
        "bit flipped in the header MAC",
        "wrong passphrase",
        flip(120),
    );
    add(
        "bad-stanza-type",
        "stanza type 7f, unknown: skipped, so nothing opens the file",
        "no matching key",
        set(50, 0x7f),
    );
    add(
        "bad-stanza-salt",
        "bit flipped in the Argon2 salt",
        "wrong passphrase",
        flip(55),
    );
    add(
        "bad-stanza-wrapped-key",
        "bit flipped in the wrapped file key",
        "wrong passphrase",
        flip(90),
    );
    add(
        "bad-stanza-kdf-memory-over-cap",
        "Argon2 memory 2 GiB: refused before any work",
        "limit",
        le32(69, 2 << 20),
    );
    add(
        "bad-stanza-kdf-passes-over-cap",
        "Argon2 passes 100: refused before any work",
        "limit",
        le32(73, 100),
    );
    add(
        "bad-frame-kind",
        "chunk 0 kind changed from compressed to raw (authenticated as AAD)",
        "chunk auth 0",
        set(h, 1),
    );
    add(
        "bad-frame-kind-unknown",
        "chunk 0 kind 07",
        "damaged",
        set(h, 7),
    );
    add(
        "bad-frame-length",
        "bit flipped in chunk 0's length",
        "chunk auth 0",
        flip(h + 1),
    );
    add(
        "bad-frame-length-huge",
        "chunk 0 declares 4 GiB: rejected before reading or allocating",
        "damaged",
        le32(h + 1, u32::MAX),
    );
    add(
        "bad-frame-body",
        "bit flipped in chunk 1's ciphertext",
        "chunk auth 1",
        flip(f[1].0 + 10),
    );
    add(
        "bad-frame-tag",
        "bit flipped in chunk 2's tag",
        "chunk auth 2",
        flip(f[2].0 + f[2].1 - 1),
    );
    add(
        "bad-final-kind",
        "final frame's kind changed to compressed: it no longer authenticates as chunk 3",
        "chunk auth 3",
        set(fin_at, 0),
    );
    add(
        "bad-final-body",
        "bit flipped in the final frame",
        "final auth",
        flip(fin_at + 30),
    );
    add(
        "bad-index-entry",
        "bit flipped in the index",
        "damaged",
        flip(index_at + 4),
    );
    add(
        "bad-footer-count",
        "bit flipped in the footer's chunk count",
        "damaged",
        flip(footer_at),
    );
    add(
        "bad-footer-magic",
        "bit flipped in the end magic",
        "damaged",
        flip(footer_at + 9),
    );
    add(
        "bad-dropped-chunk",
        "chunk 1 removed",
        "chunk auth 1",
        join(&[head.clone(), fr(0), fr(2), tail.clone()]),
    );
    add(
        "bad-duplicated-chunk",
        "chunk 1 twice",
        "chunk auth 2",
        join(&[head.clone(), fr(0), fr(1), fr(1), fr(2), tail.clone()]),
    );
    add(
        "bad-reordered-chunks",
        "chunks 1 and 2 swapped",
        "chunk auth 1",
        join(&[head.clone(), fr(0), fr(2), fr(1), tail.clone()]),
    );
    add(
        "bad-appended-chunk",
        "chunk 2 again before the final frame",
        "chunk auth 3",
        join(&[head.clone(), fr(0), fr(1), fr(2), fr(2), tail.clone()]),
    );
    add(
        "bad-dropped-last-chunk",
        "the last chunk removed: the final frame was sealed as frame 3",
        "final auth",
        join(&[head.clone(), fr(0), fr(1), tail.clone()]),
    );
    add(
        "bad-final-frame-appended",
        "a second final frame after the footer",
        "trailing data",
        join(&[0..b.len(), fin_at..fin_at + 101]),
    );
    let mut trailing = b.clone();
    trailing.push(0);
    add(
        "bad-trailing-garbage",
        "one byte after the footer",
        "trailing data",
        trailing,
    );
    let cuts = [
        ("empty", 0),
        ("mid-magic", 4),
        ("mid-fixed-header", 30),
        ("in-stanza", 60),
        ("in-header-mac", 130),
        ("after-header", h),
        ("mid-frame-header", h + 2),
        ("mid-frame-body", h + 20),
        ("after-chunk-0", f[1].0),
        ("before-final-frame", fin_at),
        ("mid-final-frame", fin_at + 50),
        ("after-final-frame", index_at),
        ("mid-index", index_at + 6),
        ("before-footer", footer_at),
        ("mid-footer", footer_at + 8),
    ];
    for (what, n) in cuts {
        add(
            &format!("bad-truncated-{what}"),
            &format!("cut after {n} bytes"),
            "truncated",
            b[..n].to_vec(),
        );
    }
    let mut wrong = bad(
        &base,
        "bad-wrong-passphrase",
        "opened with another passphrase",
        "wrong passphrase",
        b.clone(),
    );
    wrong.passphrase = Some("not the passphrase".into());
    v.push(wrong);
    v.extend(key_holder_scenarios());
    v.extend(signed_scenarios());
    v.extend(pieced_scenarios());
    v
}

/// A pieced file (FORMAT.md §14) of `plain` cut at `cuts`, under the vectors' passphrase, ids
/// and keys drawn from `seed`: the file, and each piece's bytes (marker and frames) in order.
fn pieced(
    plain: &[u8],
    cuts: &[usize],
    opts: &EncryptOptions,
    seed: u64,
) -> (Vec<u8>, Vec<Vec<u8>>) {
    use std::io::Write;
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (coordinator, header) = zseal::SplitSeal::pieced_with_rng(&[&pw], opts, &mut rng).unwrap();
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(plain.len());
    let (mut file, mut pieces, mut results) = (header, Vec::new(), Vec::new());
    for w in bounds.windows(2).filter(|w| w[0] < w[1]) {
        let key = coordinator.task_key();
        let (first, len) = ((w[0] / C) as u64, (w[1] - w[0]) as u64);
        let mut writer = zseal::seal_piece_with_rng(
            key,
            first,
            len,
            Vec::new(),
            zseal::Threads::Count(1),
            &mut rng,
        )
        .unwrap();
        writer.write_all(&plain[w[0]..w[1]]).unwrap();
        let (bytes, result) = writer.finish_range().unwrap();
        file.extend_from_slice(&bytes);
        pieces.push(bytes);
        results.push(result);
    }
    let (file, _) = coordinator
        .write_trailer_with_rng(&results, file, &mut rng)
        .unwrap();
    (file, pieces)
}

fn pieced_ok(
    name: &str,
    comment: &str,
    plain: Vec<u8>,
    cuts: &[usize],
    opts: EncryptOptions,
    seed: u64,
) -> Vector {
    Vector {
        name: name.into(),
        comment: comment.into(),
        container: pieced(&plain, cuts, &opts, seed).0,
        passphrase: Some(PASS.into()),
        identities: vec![],
        expect: "ok".into(),
        plaintext: Some(plain),
    }
}

/// Pieced files (FORMAT.md §14): pieces under keys of their own, and every way to move, drop,
/// repeat or splice a piece, or change a marker, the table or the footer.
fn pieced_scenarios() -> Vec<Vector> {
    let def = || options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3);
    let plain = compressible(5 * C + C / 2);
    let cuts = [C, 4 * C];
    let mut v = vec![
        pieced_ok(
            "ok-pieced-3-pieces",
            "5.5 chunks in pieces of 1, 3 and 1.5 chunks",
            plain.clone(),
            &cuts,
            def(),
            400,
        ),
        pieced_ok(
            "ok-pieced-padded-chacha-lz4",
            "a padded pieced file: padding frames under the end key",
            plain.clone(),
            &cuts,
            options(Codec::Lz4, Cipher::ChaCha20Poly1305, HashAlg::None).pad(true),
            401,
        ),
        pieced_ok(
            "ok-pieced-empty",
            "no piece: the end marker and the end alone",
            vec![],
            &[],
            def(),
            402,
        ),
        pieced_ok(
            "ok-pieced-one-byte",
            "one piece of one byte",
            vec![42],
            &[],
            def(),
            403,
        ),
    ];
    let base = &v[0];
    let (file, pieces) = pieced(&plain, &cuts, &def(), 400);
    assert!(file == base.container, "the generator is deterministic");
    let end_marker = trailer_at(&file, &pieces);
    let header_len = end_marker - pieces.iter().map(Vec::len).sum::<usize>();
    let head = file[..header_len].to_vec();
    let tail = file[end_marker..].to_vec();
    let with = |order: &[usize]| -> Vec<u8> {
        let mut f = head.clone();
        for &p in order {
            f.extend_from_slice(&pieces[p]);
        }
        f.extend_from_slice(&tail);
        f
    };
    let (_, other) = pieced(&plain, &cuts, &def(), 499);
    let mut spliced = head.clone();
    spliced.extend_from_slice(&pieces[0]);
    spliced.extend_from_slice(&other[1]);
    spliced.extend_from_slice(&pieces[2]);
    spliced.extend_from_slice(&tail);
    let flip = |at: usize| {
        let mut f = file.clone();
        f[at] ^= 0x01;
        f
    };
    let table = file.len() - 36 - 3 * 44;
    for (name, comment, expect, container) in [
        (
            "bad-pieced-swapped",
            "pieces 0 and 1 in each other's place",
            "damaged",
            with(&[1, 0, 2]),
        ),
        (
            "bad-pieced-dropped",
            "piece 1 left out",
            "damaged",
            with(&[0, 2]),
        ),
        (
            "bad-pieced-duplicated",
            "piece 1 twice",
            "damaged",
            with(&[0, 1, 1, 2]),
        ),
        (
            "bad-pieced-spliced",
            "piece 1 from another file under another key",
            "chunk auth 1",
            spliced,
        ),
        (
            "bad-pieced-marker-id",
            "a bit of piece 1's marker id flipped",
            "chunk auth 1",
            flip(header_len + pieces[0].len() + 5),
        ),
        (
            "bad-pieced-marker-kind",
            "piece 1's marker made a data frame's kind",
            "damaged",
            {
                let mut f = file.clone();
                f[header_len + pieces[0].len()] = 0;
                f
            },
        ),
        (
            "bad-pieced-end-marker-id",
            "a bit of the end marker's id flipped",
            "final auth",
            flip(end_marker + 5),
        ),
        (
            "bad-pieced-table-tag",
            "a bit of piece 2's last tag in the table flipped",
            "damaged",
            flip(table + 2 * 44 + 30),
        ),
        (
            "bad-pieced-table-id",
            "a bit of piece 0's id in the table flipped",
            "damaged",
            flip(table + 3),
        ),
        (
            "bad-pieced-footer-end-id",
            "a bit of the footer's end id flipped",
            "damaged",
            flip(file.len() - 20),
        ),
        (
            "bad-pieced-truncated-piece",
            "cut inside piece 1",
            "truncated",
            file[..header_len + pieces[0].len() + 30].to_vec(),
        ),
    ] {
        v.push(bad(&v[0], name, comment, expect, container));
    }
    v
}

/// Where the end marker of a pieced file with `pieces` starts: after the header and them.
fn trailer_at(file: &[u8], pieces: &[Vec<u8>]) -> usize {
    // The header is everything before the first marker, whose kind byte 06 and length 16 begin
    // the first piece: found by the pieces' bytes, which follow each other.
    let all: Vec<u8> = pieces.concat();
    let start = file
        .windows(all.len().max(1))
        .position(|w| w == &all[..])
        .expect("the pieces are in the file");
    start + all.len()
}

/// The fixture key signed vectors are signed with (Ed25519 signs deterministically).
fn signing_key() -> zseal::crypto::sign::SigningKey {
    zseal::crypto::sign::SigningKey::read(&common::keys().join("ed25519"), &common::Fixed(None))
        .unwrap()
}

/// `plain` sealed with `opts` under the vectors' passphrase by the key holder, who keeps the
/// payload key: the container as a [`Forge`], and its header's length.
fn forge_of(plain: &[u8], opts: &EncryptOptions, seed: u64) -> (Forge, usize) {
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    let holder = KeyHolder {
        inner: &pw,
        key: Default::default(),
    };
    let c = seal(plain, opts, &[&holder], seed);
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(&c[16..48]), &holder.key.lock().unwrap().unwrap())
        .expand(b"zseal v1 payload", &mut key)
        .unwrap();
    let header_len = 50 + 3 + 60 + 32;
    let f = common::frames(&c, header_len);
    let (n, fin_at) = (f.len() - 1, f[f.len() - 1].0);
    (Forge { c, key, fin_at, n }, header_len)
}

/// Signed containers (FORMAT.md §12.2): two good ones, and what a key holder (or a writer bug)
/// could make of a signed file's frames.
fn signed_scenarios() -> Vec<Vector> {
    use zseal::format::frame::signature_plaintext;
    let opts = options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3).sign(signing_key());
    let plain = compressible(2 * C + 10);
    let padded_plain = compressible(C / 2);
    let good = ok(
        "signed-ed25519",
        "signed by fixtures/keys/ed25519: three data frames, a signature frame, the final frame",
        plain.clone(),
        opts.clone(),
        400,
    );
    let padded = ok(
        "signed-padded",
        "padded and signed: a data frame, a signature frame, padding frames, the final frame",
        padded_plain.clone(),
        opts.clone().pad(true),
        401,
    );
    let (forge, hl) = forge_of(&plain, &opts, 402);
    let at = common::frames(&forge.c, hl);
    let frames: Vec<(u8, Vec<u8>)> = (0..forge.n)
        .map(|i| forge.open_frame(at[i].0, i as u64))
        .collect();
    assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), [0, 0, 1, 5]);
    let (data, sig) = (&frames[..3], frames[3].clone());
    let digest = *blake3::hash(&plain).as_bytes();
    let with = |f: &Forge, hl, frames: &[(u8, Vec<u8>)]| {
        f.assemble(hl, frames, plain.len() as u64, digest)
    };
    let then = |extra: Vec<(u8, Vec<u8>)>| [data.to_vec(), extra].concat();
    let mut long_len = sig.1.clone();
    long_len[0] += 1;
    // A good SSHSIG by the same key in another namespace.
    let key = ssh_key::PrivateKey::read_openssh_file(&common::keys().join("ed25519")).unwrap();
    let git = ssh_key::SshSig::sign(&key, "git", ssh_key::HashAlg::Sha512, b"anything").unwrap();
    let mut git_blob = Vec::new();
    ssh_encoding::Encode::encode(&git, &mut git_blob).unwrap();
    let unsigned = options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3);
    let (plain_forge, plain_hl) = forge_of(&plain, &unsigned, 403);
    let (pad_forge, pad_hl) = forge_of(&padded_plain, &opts.clone().pad(true), 404);
    let pat = common::frames(&pad_forge.c, pad_hl);
    let mut pad_frames: Vec<(u8, Vec<u8>)> = (0..pad_forge.n)
        .map(|i| pad_forge.open_frame(pat[i].0, i as u64))
        .collect();
    assert_eq!(
        &pad_frames[..3].iter().map(|f| f.0).collect::<Vec<_>>(),
        &[3, 5, 4]
    );
    let moved = pad_frames.remove(1);
    pad_frames.push(moved);
    let base = bad(&good, "", "", "", Vec::new());
    let kh = |name: &str, comment: &str, expect: &str, c| bad(&base, name, comment, expect, c);
    vec![
        good,
        padded,
        kh(
            "kh-signed-without-signature",
            "the header says signed; the signature frame was stripped, index and final frame agree",
            "damaged",
            with(&forge, hl, data),
        ),
        kh(
            "kh-signature-before-data",
            "the signature frame first, then the three data frames",
            "chunk invalid",
            with(&forge, hl, &[vec![sig.clone()], data.to_vec()].concat()),
        ),
        kh(
            "kh-signature-length-field",
            "a signature frame whose sig_len counts one byte more than its blob",
            "damaged",
            with(&forge, hl, &then(vec![(5, long_len)])),
        ),
        kh(
            "kh-signature-not-sshsig",
            "a signature frame holding bytes that are not an SSHSIG",
            "damaged",
            with(
                &forge,
                hl,
                &then(vec![(5, signature_plaintext(b"not an SSHSIG"))]),
            ),
        ),
        kh(
            "kh-signature-other-namespace",
            "a signature frame holding a good SSHSIG in the namespace git, not zseal",
            "damaged",
            with(&forge, hl, &then(vec![(5, signature_plaintext(&git_blob))])),
        ),
        kh(
            "kh-signature-in-unsigned-file",
            "a signature frame in a file whose header does not say signed",
            "damaged",
            plain_forge.assemble(plain_hl, &then(vec![sig]), plain.len() as u64, digest),
        ),
        kh(
            "kh-signature-after-padding",
            "padded and signed: the signature frame after the padding frames",
            "chunk invalid",
            pad_forge.assemble(
                pad_hl,
                &pad_frames,
                padded_plain.len() as u64,
                *blake3::hash(&padded_plain).as_bytes(),
            ),
        ),
    ]
}

#[derive(Clone)]
struct NoPrompt;
impl KeyPassphrase for NoPrompt {
    fn passphrase(&self, _: &str) -> Option<String> {
        None
    }
}

/// A failure as the vectors' `expect` field names it.
fn describe(e: zseal::Error) -> String {
    match e {
        zseal::Error::ChunkAuth(i) => format!("error chunk auth {i}"),
        e => format!("error {}", e.kind()),
    }
}

/// Opens a vector with one key (the passphrase, or one identity) and describes the outcome.
fn outcome(container: &[u8], key: &dyn Identity) -> std::result::Result<Vec<u8>, String> {
    let mut d = Decryptor::new(container, &[key], &DecryptOptions::default().threads(2))
        .map_err(describe)?;
    let mut out = Vec::new();
    d.copy_to(&mut out).map_err(describe)?;
    Ok(out)
}

fn keys_of(v: &Vector) -> Vec<Box<dyn Identity>> {
    let mut keys: Vec<Box<dyn Identity>> = Vec::new();
    if let Some(p) = &v.passphrase {
        keys.push(Box::new(Passphrase::with_params(p.clone(), CHEAP).unwrap()));
    }
    for id in &v.identities {
        let parsed: Vec<AgeIdentity> =
            recipients::read_identities(id.as_bytes(), &v.name, NoPrompt).unwrap();
        keys.extend(parsed.into_iter().map(|i| Box::new(i) as Box<dyn Identity>));
    }
    keys
}

/// The same through `Read::read` with a buffer of `size` bytes, from a stream or a seekable
/// source: buffers of whole chunks are filled straight by the workers, smaller ones through the
/// window. The bytes returned before a failure are kept, as a caller would have them.
fn read_outcome(
    container: &[u8],
    key: &dyn Identity,
    threads: usize,
    size: usize,
    seekable: bool,
) -> std::result::Result<Vec<u8>, String> {
    let opts = DecryptOptions::default().threads(threads);
    let mut d: Box<dyn Read> = if seekable {
        let mut d =
            Decryptor::new(std::io::Cursor::new(container), &[key], &opts).map_err(describe)?;
        d.seek(SeekFrom::Start(0)).map_err(|e| describe(e.into()))?;
        Box::new(d)
    } else {
        Box::new(Decryptor::new(container, &[key], &opts).map_err(describe)?)
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; size];
    loop {
        match d.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err(describe(e.into())),
        }
    }
}

fn check(v: &Vector) {
    for key in keys_of(v) {
        let copied = outcome(&v.container, key.as_ref());
        for (threads, size, seekable) in [
            (1, 3 * C + 7, false),
            (2, 3 * C + 7, false),
            (2, 2 * C, true),
            (4, 64 * C, false),
            (2, C / 2 + 1, false),
        ] {
            let read = read_outcome(&v.container, key.as_ref(), threads, size, seekable);
            // A seekable read of a file whose index is damaged fails where a stream would not
            // look; every other failure and every success is the same on each path.
            if !(seekable && read.is_err() && copied.is_ok()) {
                assert_eq!(
                    read.as_ref().err(),
                    copied.as_ref().err(),
                    "{}: threads {threads}, reads of {size}, seekable {seekable}",
                    v.name
                );
            }
            if let (Ok(r), Ok(c)) = (&read, &copied) {
                assert!(r == c, "{}: reads of {size} differ", v.name);
            }
        }
        match (copied, v.expect.as_str()) {
            (Ok(p), "ok") => assert!(
                Some(&p) == v.plaintext.as_ref(),
                "{}: wrong plaintext",
                v.name
            ),
            (Ok(_), want) => panic!("{}: decrypted, but {want} was expected", v.name),
            (Err(got), want) => assert_eq!(got, want, "{}", v.name),
        }
    }
}

fn serialize(v: &Vector) -> Vec<u8> {
    let mut t = format!(
        "zseal test vector\nname: {}\nexpect: {}\n",
        v.name, v.expect
    );
    if let Some(p) = &v.passphrase {
        t += &format!("passphrase: {p}\n");
    }
    for id in &v.identities {
        t += &format!("identity: {id}\n");
    }
    if let Some(p) = &v.plaintext {
        t += &format!(
            "plaintext-length: {}\nplaintext-blake3: {}\n",
            p.len(),
            blake3::hash(p).to_hex()
        );
    }
    t += &format!("comment: {}\n\n", v.comment);
    let mut out = t.into_bytes();
    out.extend_from_slice(&v.container);
    out
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vectors")
}

#[test]
fn every_scenario_gives_its_expected_result() {
    for v in scenarios() {
        check(&v);
    }
}

#[test]
fn committed_vectors_are_what_the_generator_makes() {
    let vectors = scenarios();
    if std::env::var_os("ZSEAL_REGENERATE_VECTORS").is_some() {
        std::fs::create_dir_all(dir()).unwrap();
        for old in std::fs::read_dir(dir()).unwrap() {
            std::fs::remove_file(old.unwrap().path()).unwrap();
        }
        for v in &vectors {
            std::fs::write(dir().join(&v.name), serialize(v)).unwrap();
        }
    }
    let mut committed: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    let mut made: Vec<String> = vectors.iter().map(|v| v.name.clone()).collect();
    made.sort();
    assert_eq!(
        committed, made,
        "fixtures/vectors holds other scenarios than the generator makes"
    );
    for v in &vectors {
        let file = std::fs::read(dir().join(&v.name)).unwrap();
        assert!(
            file == serialize(v),
            "{}: the committed vector differs from what the generator makes",
            v.name
        );
    }
}

/// Reads a vector file the way another implementation would: header lines, a blank line, the
/// container. Checks every committed file against its own `expect:` line.
#[test]
fn committed_vectors_parse_and_hold_their_expectations() {
    for e in std::fs::read_dir(dir()).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        let split = bytes.windows(2).position(|w| w == b"\n\n").unwrap();
        let text = std::str::from_utf8(&bytes[..split]).unwrap();
        let field = |k: &str| {
            text.lines()
                .filter_map(|l| l.strip_prefix(k))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let digest = field("plaintext-blake3: ").pop();
        let v = Vector {
            name: field("name: ").pop().unwrap(),
            comment: String::new(),
            container: bytes[split + 2..].to_vec(),
            passphrase: field("passphrase: ").pop(),
            identities: field("identity: "),
            expect: field("expect: ").pop().unwrap(),
            plaintext: None,
        };
        for key in keys_of(&v) {
            match outcome(&v.container, key.as_ref()) {
                Ok(p) => {
                    assert_eq!(v.expect, "ok", "{}", v.name);
                    assert_eq!(
                        Some(blake3::hash(&p).to_hex().to_string()),
                        digest,
                        "{}",
                        v.name
                    );
                }
                Err(got) => assert_eq!(got, v.expect, "{}", v.name),
            }
        }
    }
}

/// The key-holder vectors through every reading path, not only the streaming decrypt that
/// `check` runs: `verify` (the whole file into nothing), a seekable whole-file range and a range
/// inside the file (chunk 1 only), and the same two through a stream that cannot seek.
///
/// The seekable reader authenticates the trailer before it releases a byte, and checks the frame
/// it seeks to against the index, so a range inside the file fails with nothing released, except
/// where what is wrong is outside it: the whole-plaintext digest (a range does not hash the rest)
/// and a plaintext length off by less than a chunk (only the last chunk's length shows it). A
/// piped range stops reading where the range ends, so only one that reaches the end of the file
/// sees the trailer; inside the file it returns its chunks, each of them authentic.
#[test]
fn key_holder_vectors_fail_on_every_path() {
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    let plain = compressible(3 * C - 100);
    let chunk1 = &plain[C + 5..2 * C];
    let describe = |e: zseal::Error| format!("error {}", e.kind());
    // name: (the seekable whole-file range, the range inside the file: None = succeeds)
    let seekable = [
        ("kh-final-digest", "digest mismatch", None),
        ("kh-final-index-digest", "damaged", Some("damaged")),
        ("kh-final-plaintext-shorter", "chunk invalid", None),
        ("kh-final-plaintext-longer", "damaged", Some("damaged")),
        ("kh-final-chunk-count", "damaged", Some("damaged")),
        ("kh-index-reordered", "damaged", Some("damaged")),
    ];
    let vectors = key_holder_scenarios();
    // The first two break the order of the frames themselves (a short chunk in the middle, data
    // after padding): every path fails, nothing inside a range is released.
    let (order, vectors) = vectors.split_at(2);
    for v in order {
        let opts = DecryptOptions::default().threads(2);
        let seekable = || Decryptor::new(std::io::Cursor::new(&v.container[..]), &[&pw], &opts);
        let r = seekable().and_then(|mut d| d.copy_to(&mut std::io::sink()));
        assert_eq!(
            r.map_err(describe).unwrap_err(),
            v.expect,
            "{}: verify",
            v.name
        );
        for (start, end) in [(0, None), (C as u64 + 5, Some(2 * C as u64))] {
            let mut out = Vec::new();
            let r = seekable().and_then(|mut d| d.copy_range_to(start, end, &mut out));
            assert!(r.is_err(), "{} {start}: seekable range", v.name);
            assert!(
                start == 0 || out.is_empty(),
                "{}: released {}",
                v.name,
                out.len()
            );
            let mut out = Vec::new();
            let r = Decryptor::new(&v.container[..], &[&pw], &DecryptOptions::default())
                .and_then(|mut d| d.copy_range_streaming(start, end, &mut out));
            assert!(r.is_err(), "{} {start}: piped range", v.name);
        }
    }
    assert_eq!(vectors.len(), seekable.len());
    for (v, (name, whole, inside)) in vectors.iter().zip(seekable) {
        assert_eq!(v.name, name);
        let opts = DecryptOptions::default().threads(2);
        let open = || Decryptor::new(std::io::Cursor::new(&v.container[..]), &[&pw], &opts);
        let r = open().unwrap().copy_to(&mut std::io::sink());
        assert_eq!(r.map_err(describe).unwrap_err(), v.expect, "{name}: verify");

        let mut out = Vec::new();
        let r = open().and_then(|mut d| d.copy_range_to(0, None, &mut out));
        assert_eq!(
            r.map_err(describe).unwrap_err(),
            format!("error {whole}"),
            "{name}"
        );
        let mut out = Vec::new();
        let r =
            open().and_then(|mut d| d.copy_range_to(C as u64 + 5, Some(2 * C as u64), &mut out));
        match inside {
            Some(kind) => {
                assert_eq!(
                    r.map_err(describe).unwrap_err(),
                    format!("error {kind}"),
                    "{name}"
                );
                assert!(out.is_empty(), "{name}: released {} bytes", out.len());
            }
            None => assert_eq!(out, chunk1, "{name}: range inside"),
        }

        let piped = |start, end, out: &mut Vec<u8>| {
            Decryptor::new(&v.container[..], &[&pw], &DecryptOptions::default())
                .and_then(|mut d| d.copy_range_streaming(start, end, out))
        };
        assert!(
            piped(0, None, &mut Vec::new()).is_err(),
            "{name}: piped whole"
        );
        let mut out = Vec::new();
        piped(C as u64 + 5, Some(2 * C as u64), &mut out).unwrap();
        assert_eq!(out, chunk1, "{name}: piped inside");
    }
}

/// A signer check (FORMAT.md §12.4) on what a key holder can seal: the signed vector passes
/// with its signer and fails with another; a signature frame moved in from a file of other
/// bytes (a good signature, over another statement) fails as "not over this content"; the
/// stripped one as damaged; an unsigned file as "not signed". The check also needs the whole
/// file: a seek or a range is refused.
#[test]
fn a_required_signer_is_checked_against_what_the_frames_hold() {
    use zseal::crypto::sign::Signers;
    let pw = Passphrase::with_params(PASS, CHEAP).unwrap();
    let public = std::fs::read_to_string(common::keys().join("ed25519.pub")).unwrap();
    let mut alice = Signers::default();
    alice.add_key(public.trim()).unwrap();
    let mut other = Signers::default();
    other
        .add_key(&std::fs::read_to_string(common::keys().join("rsa.pub")).unwrap())
        .unwrap();
    let read = |c: &[u8], who: &Signers| -> std::result::Result<Vec<u8>, String> {
        let opts = DecryptOptions::default().threads(2).signers(who.clone());
        let mut out = Vec::new();
        Decryptor::new(std::io::Cursor::new(c), &[&pw], &opts)
            .and_then(|mut d| d.copy_to(&mut out).map(|_| out))
            .map_err(|e| format!("{} {e}", e.kind()))
    };
    let opts = options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3).sign(signing_key());
    let plain = compressible(2 * C + 10);
    let (forge, hl) = forge_of(&plain, &opts, 410);
    assert_eq!(read(&forge.c, &alice).unwrap(), plain);
    let e = read(&forge.c, &other).unwrap_err();
    assert!(
        e.starts_with("signature ") && e.contains("none of the signers given"),
        "{e}"
    );
    // The signature frame of a file of other bytes, sealed into this one by a key holder.
    let elsewhere = compressible(C + 3);
    let (donor, dhl) = forge_of(&elsewhere, &opts, 411);
    let dat = common::frames(&donor.c, dhl);
    let donated = donor.open_frame(dat[2].0, 2);
    assert_eq!(donated.0, 5);
    let at = common::frames(&forge.c, hl);
    let mut frames: Vec<(u8, Vec<u8>)> = (0..forge.n)
        .map(|i| forge.open_frame(at[i].0, i as u64))
        .collect();
    let digest = *blake3::hash(&plain).as_bytes();
    let mut swapped = frames.clone();
    swapped[3] = donated;
    let c = forge.assemble(hl, &swapped, plain.len() as u64, digest);
    // Without a signer the file is intact: the frame is authentic and holds a good SSHSIG.
    assert_eq!(read(&c, &Signers::default()).unwrap(), plain);
    let e = read(&c, &alice).unwrap_err();
    assert!(e.contains("not over this content"), "{e}");
    frames.pop();
    let stripped = forge.assemble(hl, &frames, plain.len() as u64, digest);
    let e = read(&stripped, &alice).unwrap_err();
    assert!(
        e.starts_with("damaged") && e.contains("no signature frame"),
        "{e}"
    );
    let unsigned = options(Codec::Zstd(3), Cipher::Aes256Gcm, HashAlg::Blake3);
    let u = seal(&plain, &unsigned, &[&pw], 412);
    let e = read(&u, &alice).unwrap_err();
    assert!(e.contains("not signed"), "{e}");
    // Review 4, finding 1: a requirement left with no key accepts nothing, signed or not.
    let mut nobody = Signers::default();
    nobody.require();
    let e = read(&u, &nobody).unwrap_err();
    assert!(e.contains("not signed"), "{e}");
    let e = read(&forge.c, &nobody).unwrap_err();
    assert!(e.contains("no signer key was given"), "{e}");
    // In order, whole: no range, no seek.
    let o = DecryptOptions::default().signers(alice.clone());
    let mut d = Decryptor::new(std::io::Cursor::new(&forge.c[..]), &[&pw], &o).unwrap();
    let e = d.copy_range_to(10, Some(20), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("whole file"), "{e}");
    let mut d = Decryptor::new(std::io::Cursor::new(&forge.c[..]), &[&pw], &o).unwrap();
    assert!(std::io::Seek::seek(&mut d, SeekFrom::Start(C as u64)).is_err());
    // A streamed range reads every frame and writes the range (FORMAT.md §12.4): it succeeds
    // only once the signature was checked, and fails for another signer.
    let mut d = Decryptor::new(&forge.c[..], &[&pw], &o).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        d.copy_range_streaming(5, Some(C as u64 + 9), &mut out)
            .unwrap(),
        C as u64 + 4
    );
    assert_eq!(out, plain[5..C + 9]);
    assert!(d.signer().is_some_and(|who| who.contains("SHA256:")));
    let o = DecryptOptions::default().signers(other.clone());
    let mut d = Decryptor::new(&forge.c[..], &[&pw], &o).unwrap();
    let e = d
        .copy_range_streaming(0, Some(5), &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("none of the signers given"), "{e}");
}
