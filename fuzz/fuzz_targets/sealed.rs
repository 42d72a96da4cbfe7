//! Frames, index and footer behind a valid header, every frame sealed with the file's real key
//! and nonce: the code after authentication (decompressing hostile but authentic chunks, padded
//! chunks, the final frame's records, the index, the footer), which random bytes stopped by the
//! header MAC or a frame tag never reach. The key comes from a stanza type of this target's own
//! (no Argon2, no X25519), so runs are cheap.
//!
//! Input: a byte choosing the header (codec, padding), a byte of flags (which parts are made
//! consistent and which are taken from the input), then frames, each `kind, length (2 bytes),
//! plaintext`, up to a `0xff`; then, when the flags say so, the final frame's 80 bytes, the index
//! and the footer from the input.
//!
//! Every container is also rekeyed, plainly and with `--rotate` (every frame re-sealed under a new
//! key): whatever rekey accepts must decrypt exactly as the original does, bytes or error kind.
#![no_main]
use std::io::Cursor;
use std::sync::OnceLock;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use hkdf::Hkdf;
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;
use zseal::format::Stanza;
use zseal::{
    Codec, DecryptOptions, Decryptor, EncryptOptions, FileKey, Identity, Locked, Recipient, RekeyOptions,
};

const C: usize = 1024;
const KIND: u8 = 0x7e;

/// Wraps the file key in clear in a stanza type of its own, and unwraps it.
struct Clear;

impl Recipient for Clear {
    fn wrap_file_key(&self, k: &FileKey, _: &mut dyn rand_core::RngCore) -> zseal::Result<Vec<Stanza>> {
        Ok(vec![Stanza { kind: KIND, body: k.expose().to_vec() }])
    }
}

impl Identity for Clear {
    fn unwrap_stanzas(&self, s: &[Stanza]) -> zseal::Result<Option<FileKey>> {
        Ok(s.iter()
            .find(|s| s.kind == KIND && s.body.len() == 16)
            .map(|s| FileKey::from_bytes(s.body[..].try_into().unwrap())))
    }
}

struct Base {
    header: Vec<u8>,
    key: [u8; 32],
}

fn bases() -> &'static [Base] {
    static B: OnceLock<Vec<Base>> = OnceLock::new();
    B.get_or_init(|| {
        let mut v = Vec::new();
        for codec in [Codec::Zstd(3), Codec::Lz4, Codec::Gzip(6), Codec::None] {
            for pad in [false, true] {
                let opts = EncryptOptions::default().codec(codec).chunk_size(C).pad(pad).threads(1);
                let c = zseal::encrypt_to_vec(b"", &[&Clear], &opts).unwrap();
                let header_len = 50 + 3 + 16 + 32;
                let mut key = [0u8; 32];
                Hkdf::<Sha256>::new(Some(&c[16..48]), &c[53..69]).expand(b"zseal v1 payload", &mut key).unwrap();
                v.push(Base { header: c[..header_len].to_vec(), key });
            }
        }
        v
    })
}

fn nonce(i: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

fn frame(out: &mut Vec<u8>, key: &[u8; 32], i: u64, last: bool, kind: u8, plain: &[u8]) -> u32 {
    let body_len = (plain.len() + 16) as u32;
    let mut aad = vec![kind];
    aad.extend_from_slice(&body_len.to_le_bytes());
    let mut body = plain.to_vec();
    let tag = aes_gcm::Aes256Gcm::new(key.into())
        .encrypt_in_place_detached(&nonce(i, last).into(), &aad, &mut body)
        .unwrap();
    out.extend_from_slice(&aad);
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    body_len
}

fuzz_target!(|data: &[u8]| {
    let mut it = data.iter().copied();
    let (Some(pick), Some(flags)) = (it.next(), it.next()) else { return };
    let base = &bases()[pick as usize % bases().len()];
    let mut c = base.header.clone();
    let mut index = Vec::new();
    let mut raw_len = 0u64;
    let mut n = 0u64;
    let rest: Vec<u8> = it.collect();
    let mut at = 0;
    while at + 3 <= rest.len() && rest[at] != 0xff && n < 64 {
        let kind = rest[at] & 7;
        let len = (u16::from_le_bytes([rest[at + 1], rest[at + 2]]) as usize) % (C + 64);
        let end = (at + 3 + len).min(rest.len());
        let plain = &rest[at + 3..end];
        raw_len += plain.len() as u64;
        let l = frame(&mut c, &base.key, n, false, kind, plain);
        index.extend_from_slice(&l.to_le_bytes());
        n += 1;
        at = end;
    }
    at += 1;
    let mut take = |k: usize| {
        let s = rest.get(at..at + k).map(|s| s.to_vec());
        at += k;
        s
    };
    // The final frame: its records either consistent with the frames (the plaintext length as
    // if every chunk were raw) or the input's 80 bytes.
    let mut fin = Vec::with_capacity(80);
    match (flags & 1 == 0, take(80)) {
        (false, Some(f)) => fin = f,
        _ => {
            fin.extend_from_slice(&raw_len.to_le_bytes());
            fin.extend_from_slice(&n.to_le_bytes());
            fin.extend_from_slice(blake3::hash(&index).as_bytes());
            fin.extend_from_slice(&[0u8; 32]);
        }
    }
    frame(&mut c, &base.key, n, true, 2, &fin);
    match (flags & 2 == 0, take(4 * n as usize)) {
        (false, Some(ix)) => c.extend_from_slice(&ix),
        _ => c.extend_from_slice(&index),
    }
    match (flags & 4 == 0, take(16)) {
        (false, Some(f)) => c.extend_from_slice(&f),
        _ => {
            c.extend_from_slice(&n.to_le_bytes());
            c.extend_from_slice(b"ZSEALEND");
        }
    }
    if flags & 8 != 0 {
        // Bytes after the footer, or an inserted byte somewhere in the payload.
        let p = (raw_len as usize) % (c.len() - base.header.len() + 1) + base.header.len();
        c.insert(p.min(c.len()), flags);
    }

    let mut outs = Vec::new();
    for threads in [1, 2] {
        let r = Decryptor::new(&c[..], &[&Clear], &DecryptOptions::default().threads(threads)).and_then(|mut d| {
            let mut out = Vec::new();
            d.copy_to(&mut out).map(|_| out)
        });
        outs.push(r.map_err(|e| e.kind()));
    }
    assert_eq!(outs[0], outs[1], "one and two threads disagree");
    if let Ok(mut d) = Decryptor::new(Cursor::new(&c[..]), &[&Clear], &DecryptOptions::default().threads(2)) {
        if let Ok(len) = d.plaintext_len() {
            let mut slice = Vec::new();
            if d.copy_range_to(len / 3, Some(len / 2), &mut slice).is_ok() {
                if let Ok(full) = &outs[0] {
                    assert_eq!(&slice[..], &full[(len / 3) as usize..(len / 2) as usize]);
                }
            }
        }
    }
    for rotate in [false, true] {
        let mut out = Vec::new();
        let opts = RekeyOptions::default().rotate(rotate);
        let rekeyed = Locked::read(&c[..]).and_then(|l| l.rekey(&[&Clear], &[&Clear], &opts, &mut out));
        if rekeyed.is_ok() {
            let again = Decryptor::new(&out[..], &[&Clear], &DecryptOptions::default().threads(2)).and_then(|mut d| {
                let mut o = Vec::new();
                d.copy_to(&mut o).map(|_| o)
            });
            assert_eq!(again.map_err(|e| e.kind()), outs[0], "rekey (rotate: {rotate}) changed the outcome");
        }
    }
    let mut piped = Vec::new();
    if let Ok(mut d) = Decryptor::new(&c[..], &[&Clear], &DecryptOptions::default()) {
        if d.copy_range_streaming(1, None, &mut piped).is_ok() {
            // A piped range that reached the end saw every check the full decrypt did, but the
            // whole-plaintext digest when it did not start at byte 0.
            let digest = Err(zseal::ErrorKind::DigestMismatch);
            assert!(outs[0].is_ok() || outs[0] == digest, "piped range accepted what decrypt refused: {:?}", outs[0]);
        }
    }
});
