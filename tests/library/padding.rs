//! Padded files (FORMAT.md §3.3): round trips on both sides of every size-class boundary of the
//! file and of a chunk, lengths that are classes, every read path, and damage.

use crate::common;

use std::io::{Cursor, Read, Seek, SeekFrom};

use common::*;
use zseal::format::frame::{pad_class, padme};
use zseal::{Codec, DecryptOptions, Decryptor, EncryptOptions, Error, Locked};

const C: usize = 1024;

fn padded(codec: Codec) -> EncryptOptions {
    EncryptOptions::default()
        .chunk_size(C)
        .codec(codec)
        .pad(true)
        .threads(2)
}

/// The frames of a container: (kind, offset, body_len), the final frame last.
fn kinds(c: &[u8]) -> Vec<(u8, usize, usize)> {
    let at = Locked::read(c).unwrap().header_len() as usize;
    frames(c, at)
        .into_iter()
        .map(|(o, len)| (c[o], o, len - 5))
        .collect()
}

/// Checks what a padded container shows: a Padmé-class length, data frames of kind 03 with
/// class lengths, padding frames (04) only after them, the final frame last.
fn check_shape(c: &[u8], what: &str) {
    assert_eq!(
        padme(c.len() as u64),
        c.len() as u64,
        "{what}: {} bytes",
        c.len()
    );
    let fr = kinds(c);
    let (last, rest) = fr.split_last().unwrap();
    assert_eq!(last.0, 2, "{what}");
    let mut seen_padding = false;
    for &(kind, _, body) in rest {
        match kind {
            3 => {
                assert!(!seen_padding, "{what}: data after padding");
                let plain = body - 16;
                assert!(plain <= C + 5, "{what}");
                assert_eq!(
                    pad_class(plain, C),
                    plain,
                    "{what}: body {body} not a class"
                );
            }
            4 => seen_padding = true,
            k => panic!("{what}: kind {k} in a padded file"),
        }
    }
}

#[test]
fn round_trips_across_every_class_boundary_of_the_file() {
    let pw = pass("pad");
    // Raw (incompressible) and compressible data; sizes from 0 up across many chunks, densely
    // near the chunk boundaries, where the frame count and the file's class change.
    let mut sizes: Vec<usize> = (0..40).collect();
    for k in 1..=12 {
        sizes.extend([k * C - 1, k * C, k * C + 1]);
    }
    sizes.extend((100..200_000).step_by(4999));
    let mut classes = std::collections::BTreeSet::new();
    for codec in [Codec::None, Codec::Zstd(3)] {
        for &n in &sizes {
            let plain = if codec == Codec::None {
                noise(n, n as u64)
            } else {
                data(n)
            };
            let c = seal(&plain, &pw, &padded(codec), n as u64);
            check_shape(&c, &format!("{codec} {n}"));
            classes.insert(c.len());
            for threads in [1, 2] {
                assert_eq!(open(&c, &pw, threads).unwrap(), plain, "{codec} {n}");
            }
        }
    }
    // Far fewer lengths than containers: that is the point (unpadded, all would differ).
    let containers = 2 * sizes.len();
    assert!(classes.len() * 2 < containers, "{} classes", classes.len());
}

/// A chunk whose padded content ends exactly at a class, one byte below and one above, for the
/// raw cap (C + 5) and the compressed classes: every body is its class, every chunk round-trips.
#[test]
fn chunk_classes_hold_at_their_boundaries() {
    let pw = pass("pad");
    // Chunks of repeated bytes with a random tail compress to lengths that step through classes.
    let mut plain = Vec::new();
    for k in 0..60 {
        let mut chunk = vec![b'a'; C];
        let noisy = noise(k * 17, k as u64);
        chunk[C - noisy.len()..].copy_from_slice(&noisy);
        plain.extend(chunk);
    }
    let c = seal(&plain, &pw, &padded(Codec::Zstd(3)), 1);
    check_shape(&c, "steps");
    let bodies: std::collections::BTreeSet<usize> =
        kinds(&c).iter().filter(|f| f.0 == 3).map(|f| f.2).collect();
    assert!(bodies.len() > 5, "{bodies:?}");
    assert!(
        bodies.contains(&(C + 5 + 16)),
        "a raw chunk is capped at C + 5: {bodies:?}"
    );
    assert_eq!(open(&c, &pw, 2).unwrap(), plain);
}

#[test]
fn padded_ranges_seeks_and_pipes_match_the_plaintext() {
    let pw = pass("pad");
    let plain = data(10 * C + 300);
    let c = seal(&plain, &pw, &padded(Codec::Zstd(3)), 2);
    assert!(
        kinds(&c).iter().any(|f| f.0 == 4),
        "this size gets padding frames"
    );
    let len = plain.len() as u64;
    let mut d = Decryptor::new(Cursor::new(&c[..]), &[&pw], &DecryptOptions::default()).unwrap();
    assert_eq!(d.plaintext_len().unwrap(), len);
    for (s, e) in [
        (0, len),
        (5, 2000),
        (C as u64, 3 * C as u64),
        (len - 10, len),
        (len, len),
    ] {
        let want = &plain[s as usize..e as usize];
        let mut out = Vec::new();
        d.copy_range_to(s, Some(e), &mut out).unwrap();
        assert_eq!(out, want, "file {s}..{e}");
        let mut piped = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default()).unwrap();
        let mut out = Vec::new();
        piped.copy_range_streaming(s, Some(e), &mut out).unwrap();
        assert_eq!(out, want, "pipe {s}..{e}");
    }
    // Past the end, and far past it (the padding frames are skipped on the way to the final
    // frame, which tells the length).
    for start in [1, 2, 3, 10].map(|k| len + 1 + (k - 1) * C as u64) {
        let mut piped = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default()).unwrap();
        let e = piped
            .copy_range_streaming(start, None, &mut Vec::new())
            .unwrap_err();
        assert!(
            matches!(e, Error::RangePastEnd { len: l, at, .. } if l == len && at == start),
            "{e}"
        );
    }
    d.seek(SeekFrom::End(-5)).unwrap();
    let mut tail = Vec::new();
    d.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, &plain[plain.len() - 5..]);
    // Read from the first byte to the end after a seek to 0: the digest is checked there too.
    d.seek(SeekFrom::Start(0)).unwrap();
    let mut all = Vec::new();
    d.read_to_end(&mut all).unwrap();
    assert_eq!(all, plain);
    assert!(d.verified().is_some());
}

/// Every flipped byte and every cut is detected, by the streaming and the seekable reader.
#[test]
fn every_flipped_byte_of_a_padded_file_is_detected() {
    let pw = pass("pad");
    let plain = data(3 * C + 100);
    let c = seal(&plain, &pw, &padded(Codec::Zstd(3)), 3);
    for at in 0..c.len() {
        let mut d = c.clone();
        d[at] ^= 0x10;
        assert!(open(&d, &pw, 2).is_err(), "byte {at} of {}", c.len());
    }
    for cut in (0..c.len()).step_by(7) {
        assert!(open(&c[..cut], &pw, 1).is_err(), "cut at {cut}");
    }
    // A padding frame moved before the last data frame, or dropped: refused.
    let fr = kinds(&c);
    let pads: Vec<_> = fr.iter().filter(|f| f.0 == 4).collect();
    assert!(!pads.is_empty());
    let fin = fr.last().unwrap().1;
    let first_pad = pads[0].1;
    let mut dropped = c[..first_pad].to_vec();
    dropped.extend_from_slice(&c[fin..]);
    assert!(open(&dropped, &pw, 2).is_err());
}

/// The padded flag is authenticated; a file without it may not hold padded kinds, nor a padded
/// file plain ones; an unknown flag is refused by name.
#[test]
fn the_flag_and_the_kinds_agree() {
    let pw = pass("pad");
    let plain = data(2 * C);
    let c = seal(&plain, &pw, &padded(Codec::Zstd(3)), 4);
    let mut flag_off = c.clone();
    flag_off[14] = 0;
    assert!(matches!(
        open(&flag_off, &pw, 1).unwrap_err(),
        Error::WrongPassphrase
    ));
    let mut unknown = c.clone();
    unknown[14] = 0x09;
    let e = open(&unknown, &pw, 1).unwrap_err();
    assert!(e.to_string().contains("unknown flags"), "{e}");
    let first = kinds(&c)[0].1;
    let mut plain_kind = c.clone();
    plain_kind[first] = 0;
    let e = open(&plain_kind, &pw, 1).unwrap_err();
    assert!(e.to_string().contains("padded file does not use"), "{e}");
}

/// Cost on real data: the kernel-source sample and incompressible bytes, as the README quotes.
#[test]
fn the_overhead_is_within_padme_bounds() {
    let pw = pass("pad");
    let text = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/sample.log")).unwrap();
    for (what, plain) in [("text", text), ("noise", noise(300_000, 9))] {
        let opts = EncryptOptions::default().chunk_size(16 * C);
        let bare = seal(&plain, &pw, &opts, 5).len() as f64;
        let pad = seal(&plain, &pw, &opts.pad(true), 5).len() as f64;
        let over = pad / bare - 1.0;
        assert!((0.0..0.25).contains(&over), "{what}: {over}");
    }
}

/// Exactly what `--pad` hides from someone without a key, as FORMAT.md §3.3, the README and
/// `encrypt --help` state it, measured on containers (1 MiB chunks, zstd):
/// - hidden: a chunk's stored size within its class (two raw chunks of 1,000 and 1,010 bytes
///   give frames of one length), and raw against compressed (every data frame has kind 03);
/// - shown: the frame kinds, so the padding frames can be stripped and the file's class adds
///   nothing; the number of data frames (the plaintext length within one chunk); each chunk's
///   class, so compressibility (text and random chunks of 1 MiB differ about eightfold); and a
///   small last chunk almost exactly (3 MiB + 1 and 3 MiB + 2 bytes: last frames of 22 and 23
///   bytes in containers of one length).
#[test]
fn what_padding_hides_and_what_it_does_not() {
    let mib = 1 << 20;
    let opts = EncryptOptions::default()
        .chunk_size(mib)
        .codec(Codec::Zstd(3))
        .pad(true)
        .threads(2);
    let pw = pass("pad");
    let seal = |plain: &[u8]| common::seal(plain, &pw, &opts, 1);
    let data_frames = |c: &[u8]| -> Vec<usize> {
        kinds(c)
            .into_iter()
            .filter(|(k, _, _)| *k == 0x03)
            .map(|(_, _, len)| len)
            .collect()
    };
    // Hidden: sizes within a class, and raw against compressed.
    let (a, b) = (noise(1000, 1), noise(1010, 2));
    assert_eq!(data_frames(&seal(&a)), data_frames(&seal(&b)));
    assert!(kinds(&seal(&data(3 * mib)))
        .iter()
        .all(|(k, _, _)| matches!(k, 0x02..=0x04)));
    // Shown: a small last chunk, to the byte, though the files have one length.
    let (x, y) = (seal(&noise(3 * mib + 1, 3)), seal(&noise(3 * mib + 2, 3)));
    assert_eq!(x.len(), y.len(), "the file's class hides the total");
    let (dx, dy) = (data_frames(&x), data_frames(&y));
    assert_eq!(
        (dx.len(), dy.len()),
        (4, 4),
        "the number of data frames shows"
    );
    assert_eq!((dx[3], dy[3]), (22, 23), "the last chunk shows exactly");
    // Shown: the padding frames (kind 04), which can be subtracted from the file's length.
    let padding: usize = kinds(&x)
        .iter()
        .filter(|(k, _, _)| *k == 0x04)
        .map(|(_, _, len)| len + 5 + 4)
        .sum();
    assert!(padding > 0);
    // Shown: compressibility, chunk by chunk.
    let text = seal(&data(mib));
    let random = seal(&noise(mib, 4));
    let (t, r) = (data_frames(&text)[0], data_frames(&random)[0]);
    assert!(r > 6 * t, "text {t} bytes, random {r} bytes");
}
