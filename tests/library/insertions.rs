//! Bytes inserted into a container (issue 16): at every structure boundary and at sampled
//! offsets, through the streaming path, the seekable range path and the piped range path, in the
//! library and the CLI. Every one is rejected, and nothing but authentic plaintext of the range
//! asked for comes out before the error.

use crate::common;

use std::io::Cursor;

use common::*;
use zseal::{DecryptOptions, Decryptor, Passphrase};

const C: usize = 1024;
const HEADER_LEN: usize = 50 + 3 + 60 + 32;

fn small() -> (Vec<u8>, Vec<u8>, Passphrase) {
    sample("insert", 3 * C + 100, C, 16)
}

/// Where to insert: after the header, between every two frames, before the final frame, before
/// the index, before the footer, and every 29th offset besides.
fn offsets(c: &[u8]) -> Vec<(String, usize)> {
    let f = frames(c, HEADER_LEN);
    let fin_at = f[f.len() - 1].0;
    let mut v = vec![("after the header".to_string(), HEADER_LEN)];
    for (i, &(at, _)) in f.iter().enumerate().skip(1) {
        v.push((format!("before frame {i}"), at));
    }
    v.push(("before the final frame".into(), fin_at));
    v.push(("before the index".into(), fin_at + 101));
    v.push(("before the footer".into(), c.len() - 16));
    v.extend((1..c.len()).step_by(29).map(|at| (format!("at {at}"), at)));
    v
}

const INSERTS: [&[u8]; 4] = [&[0], b"zseal", &[1, 0, 0, 0, 0], &[0; 21]];

fn inserted(c: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = c[..at].to_vec();
    v.extend_from_slice(bytes);
    v.extend_from_slice(&c[at..]);
    v
}

#[test]
fn insertions_fail_the_streaming_path_and_release_only_plaintext() {
    let (plain, c, pw) = small();
    for (what, at) in offsets(&c) {
        for bytes in INSERTS {
            let bad = inserted(&c, at, bytes);
            for threads in [1, 2] {
                let mut out = Vec::new();
                let r = Decryptor::new(
                    &bad[..],
                    &[&pw],
                    &DecryptOptions::default().threads(threads),
                )
                .and_then(|mut d| d.copy_to(&mut out));
                assert!(r.is_err(), "{what}, {} bytes: decrypted", bytes.len());
                assert!(plain.starts_with(&out), "{what}: released other bytes");
            }
        }
    }
}

#[test]
fn insertions_fail_seekable_ranges_before_releasing_anything() {
    let (plain, c, pw) = small();
    // The whole file, one chunk in the middle, and a few bytes of the last chunk.
    let ranges = [
        (0, None),
        (C as u64 + 3, Some(2 * C as u64)),
        (3 * C as u64 + 10, Some(3 * C as u64 + 20)),
    ];
    for (what, at) in offsets(&c) {
        for bytes in INSERTS {
            let bad = inserted(&c, at, bytes);
            for (start, end) in ranges {
                let mut out = Vec::new();
                let r = Decryptor::new(Cursor::new(&bad[..]), &[&pw], &DecryptOptions::default())
                    .and_then(|mut d| d.copy_range_to(start, end, &mut out));
                let what = format!("{what}, {} bytes, range {start}..{end:?}", bytes.len());
                assert!(r.is_err(), "{what}: decrypted");
                // The trailer is found from the end and must account for every byte between
                // the header and the final frame, so a range inside the file fails before its
                // first byte; the whole-file range streams, releasing authentic chunks first.
                if start > 0 {
                    assert!(out.is_empty(), "{what}: released {} bytes", out.len());
                } else {
                    assert!(plain.starts_with(&out), "{what}: released other bytes");
                }
            }
        }
    }
}

#[test]
fn insertions_fail_piped_ranges_that_reach_them() {
    let (plain, c, pw) = small();
    let chunk1_end = frames(&c, HEADER_LEN)[2].0;
    for (what, at) in offsets(&c) {
        for bytes in INSERTS {
            let bad = inserted(&c, at, bytes);
            let piped = |start, end, out: &mut Vec<u8>| {
                Decryptor::new(&bad[..], &[&pw], &DecryptOptions::default())
                    .and_then(|mut d| d.copy_range_streaming(start, end, out))
            };
            let mut out = Vec::new();
            assert!(
                piped(0, None, &mut out).is_err(),
                "{what}: whole file decrypted"
            );
            assert!(plain.starts_with(&out), "{what}: released other bytes");
            // A piped range stops reading where it ends: an insertion after chunk 1 is not seen
            // by a range within chunk 1, whose bytes are authentic all the same.
            let mut out = Vec::new();
            let r = piped(C as u64 + 3, Some(2 * C as u64), &mut out);
            if at < chunk1_end {
                assert!(r.is_err(), "{what}: range over chunk 1 decrypted");
                assert!(out.is_empty() || plain[C + 3..].starts_with(&out), "{what}");
            } else {
                assert_eq!(out, plain[C + 3..2 * C], "{what}");
            }
        }
    }
}

#[test]
fn insertions_fail_the_cli_with_no_output_left() {
    let (_, c, _) = small();
    let d = tempfile::tempdir().unwrap();
    let pwf = d.path().join("pw");
    std::fs::write(&pwf, "insert\n").unwrap();
    let f = frames(&c, HEADER_LEN);
    let fin_at = f[f.len() - 1].0;
    let points = [HEADER_LEN, f[1].0, fin_at, fin_at + 101, c.len() - 16];
    for at in points {
        let bad = d.path().join("bad.zseal");
        std::fs::write(&bad, inserted(&c, at, b"zseal")).unwrap();
        for range in [None, Some("1029..2048")] {
            let out = d.path().join("out");
            let mut cmd = assert_cmd::Command::cargo_bin("zseal").unwrap();
            cmd.arg("decrypt").arg(&bad).arg("-o").arg(&out);
            cmd.arg("--passphrase-file").arg(&pwf);
            if let Some(r) = range {
                cmd.args(["--range", r]);
            }
            let o = cmd.output().unwrap();
            assert_eq!(
                o.status.code(),
                Some(1),
                "insert at {at}, range {range:?}: {o:?}"
            );
            assert!(
                !out.exists(),
                "insert at {at}, range {range:?}: output left behind"
            );
            let names: Vec<_> = std::fs::read_dir(d.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(
                names.iter().all(|n| n == "pw" || n == "bad.zseal"),
                "{names:?}"
            );
        }
    }
}
