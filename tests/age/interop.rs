//! age files made by the real tools, read by `zseal`: Debian's `age` (Go) and `rage` (Rust;
//! `scripts/install-peers` installs it with cargo into target/peer-tools), binary and armored, at
//! every size around the 64 KiB STREAM chunk, to X25519, ssh-ed25519 and ssh-rsa keys. Each
//! decrypts to the same bytes on one thread and two, from a file and from a pipe, and ranges give
//! the same bytes as slicing the plaintext. Damaged, cut and extended files are refused with no
//! output file and nothing unauthenticated released. Missing tools skip these tests, unless
//! ZSEAL_REQUIRE_PEERS is set (CI), where they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::Command as Cmd;
use predicates::str::contains;

const C: usize = 64 * 1024;
/// Ciphertext of a full chunk.
const CT: usize = C + 16;

fn zseal() -> Cmd {
    Cmd::cargo_bin("zseal").unwrap()
}

fn tool(name: &str) -> Option<PathBuf> {
    common::peer_tool(name)
}

/// `tool -r/-R recipient [-a] -o out in`.
fn encrypt_with(tool: &Path, recipient: &str, armor: bool, input: &Path, out: &Path) {
    let flag = if recipient.starts_with("age1") {
        "-r"
    } else {
        "-R"
    };
    let mut c = Command::new(tool);
    c.arg(flag).arg(recipient);
    if armor {
        c.arg("-a");
    }
    let s = c.arg("-o").arg(out).arg(input).status().unwrap();
    assert!(s.success(), "{} failed", tool.display());
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    common::noise(n, seed)
}

#[test]
fn files_from_age_and_rage_decrypt_at_every_chunk_boundary() {
    let tools: Vec<PathBuf> = ["age", "rage"].iter().filter_map(|t| tool(t)).collect();
    if tools.is_empty() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let key = common::keys().join("age.key");
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let sizes = [0, 1, C - 1, C, C + 1, 3 * C, 3 * C + 1, 5 * 1024 * 1024 + 7];
    for t in &tools {
        for &n in &sizes {
            let plain = noise(n, n as u64);
            let p = d.path().join("p");
            std::fs::write(&p, &plain).unwrap();
            for armor in [false, true] {
                let f = d.path().join(format!("f{n}{armor}.age"));
                encrypt_with(t, public.trim(), armor, &p, &f);
                let what = format!("{} {n} bytes armor={armor}", t.display());
                for j in ["1", "2"] {
                    let out = zseal()
                        .args(["decrypt", "-j", j, "-i"])
                        .arg(&key)
                        .arg(&f)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{what}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert!(out.stdout == plain, "{what} -j {j}: different bytes");
                }
                let piped = zseal()
                    .args(["decrypt", "-i"])
                    .arg(&key)
                    .write_stdin(std::fs::read(&f).unwrap())
                    .output()
                    .unwrap();
                assert!(
                    piped.status.success() && piped.stdout == plain,
                    "{what}: from a pipe"
                );
                zseal()
                    .args(["verify", "-i"])
                    .arg(&key)
                    .arg(&f)
                    .assert()
                    .success()
                    .stderr(contains(format!("OK, {n} bytes")));
                for (a, b) in [
                    (0, 1),
                    (C - 1, C + 1),
                    (n / 2, n / 2 + 100),
                    (n.saturating_sub(3), n),
                ] {
                    let (a, b) = (a.min(n), b.min(n));
                    let out = zseal()
                        .args(["decrypt", "-i"])
                        .arg(&key)
                        .arg(&f)
                        .arg("--range")
                        .arg(format!("{a}..{b}"))
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{what} {a}..{b}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert!(out.stdout == plain[a..b], "{what}: range {a}..{b}");
                }
            }
        }
    }
}

#[test]
fn files_to_ssh_keys_decrypt() {
    let Some(age) = tool("age") else { return };
    let d = tempfile::tempdir().unwrap();
    let plain = noise(3 * C + 5, 9);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    for (public, private) in [("ed25519.pub", "ed25519"), ("rsa.pub", "rsa")] {
        let f = d.path().join(format!("{private}.age"));
        encrypt_with(
            &age,
            common::keys().join(public).to_str().unwrap(),
            false,
            &p,
            &f,
        );
        let out = zseal()
            .args(["decrypt", "-i"])
            .arg(common::keys().join(private))
            .arg(&f)
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout == plain, "{private}");
    }
}

/// Every way the file can be damaged: the output file never appears, and what reaches a pipe is
/// whole authenticated chunks before the damage.
#[test]
fn damaged_cut_and_extended_age_files_are_refused_with_no_output() {
    let Some(age) = tool("age") else { return };
    let d = tempfile::tempdir().unwrap();
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let plain = noise(3 * C + 100, 11);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    let f = d.path().join("good.age");
    encrypt_with(&age, public.trim(), false, &p, &f);
    let good = std::fs::read(&f).unwrap();
    let payload = good.len() - (3 * CT + 100 + 16);
    let flip = |at: usize| {
        let mut b = good.clone();
        b[at] ^= 0x40;
        b
    };
    // A different (valid base64) first character of the header MAC.
    let mac_at = good.windows(4).position(|w| w == b"--- ").unwrap() + 4;
    let mut bad_mac = good.clone();
    bad_mac[mac_at] = if good[mac_at] == b'A' { b'B' } else { b'A' };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("header MAC", bad_mac, "header failed authentication"),
        ("nonce", flip(payload - 3), "chunk 0 failed authentication"),
        (
            "chunk 1",
            flip(payload + CT + 10),
            "chunk 1 failed authentication",
        ),
        (
            "last chunk",
            flip(good.len() - 1),
            "chunk 3 failed authentication",
        ),
        (
            "cut at a chunk boundary",
            good[..payload + 2 * CT].to_vec(),
            "not its last chunk",
        ),
        (
            "cut inside a chunk",
            good[..payload + CT + 500].to_vec(),
            "chunk 1 failed authentication",
        ),
        (
            "cut in the nonce",
            good[..payload - 5].to_vec(),
            "truncated",
        ),
        (
            "extended",
            [&good[..], b"junk"].concat(),
            "chunk 3 failed authentication",
        ),
    ];
    for (what, bytes, says) in cases {
        assert_refused(d.path(), &bytes, &plain, says, what);
    }
}

/// `bytes` fails to decrypt saying `says`: no output file is left, what reaches a pipe is whole
/// authenticated chunks of `plain` from before the damage, and `verify` fails.
fn assert_refused(dir: &Path, bytes: &[u8], plain: &[u8], says: &str, what: &str) {
    let key = common::keys().join("age.key");
    let bad = dir.join("bad.age");
    std::fs::write(&bad, bytes).unwrap();
    let out = dir.join("out");
    zseal()
        .args(["decrypt", "-i"])
        .arg(&key)
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(contains(says));
    assert!(!out.exists(), "{what}: an output file was left");
    let piped = zseal()
        .args(["decrypt", "-i"])
        .arg(&key)
        .write_stdin(bytes.to_vec())
        .output()
        .unwrap();
    assert!(!piped.status.success(), "{what}: accepted from a pipe");
    let n = piped.stdout.len();
    assert!(
        n.is_multiple_of(C) && piped.stdout == plain[..n],
        "{what}: {n} bytes released"
    );
    zseal()
        .args(["verify", "-i"])
        .arg(&key)
        .arg(&bad)
        .assert()
        .code(1);
}

/// A full final chunk followed by more bytes: every chunk authenticates and is released (as age
/// does), then the bytes after the final chunk fail the file; no output file.
#[test]
fn bytes_after_a_full_final_chunk_fail_the_file() {
    let Some(age) = tool("age") else { return };
    let d = tempfile::tempdir().unwrap();
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let plain = noise(2 * C, 12);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    let f = d.path().join("full.age");
    encrypt_with(&age, public.trim(), false, &p, &f);
    let bytes = [std::fs::read(&f).unwrap(), b"more".to_vec()].concat();
    // Every chunk authenticates, so all of them reach a pipe before the failure.
    assert_refused(
        d.path(),
        &bytes,
        &plain,
        "unexpected data after the end",
        "bytes after",
    );
    let piped = zseal()
        .args(["decrypt", "-i"])
        .arg(common::keys().join("age.key"))
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert!(piped.stdout == plain);
}

/// The bad inputs of the issue, each with one message saying what the file needs.
#[test]
fn wrong_keys_and_foreign_files_say_what_the_file_needs() {
    let Some(age) = tool("age") else { return };
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p");
    std::fs::write(&p, b"hello").unwrap();
    let f = d.path().join("x.age");
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    encrypt_with(&age, public.trim(), false, &p, &f);
    // Recipients match no identity.
    zseal()
        .args(["decrypt", "-i"])
        .arg(common::keys().join("zseal.key"))
        .arg(&f)
        .assert()
        .code(1)
        .stderr(contains(
            "no identity matched any of the 1 recipient(s) of this file (X25519)",
        ));
    // A passphrase file for a file encrypted to a key.
    let pw = d.path().join("pw");
    std::fs::write(&pw, "secret\n").unwrap();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&pw)
        .arg(&f)
        .assert()
        .code(1)
        .stderr(contains(
            "not to a passphrase: drop --passphrase-file and pass an identity file with -i",
        ));
    // Neither format.
    zseal()
        .args(["decrypt", "-i"])
        .arg(common::keys().join("age.key"))
        .arg(&p)
        .assert()
        .code(1)
        .stderr(contains("not a zseal, age or crypt4gh file"));
    // rekey is the container's.
    zseal()
        .args(["rekey", "-i"])
        .arg(common::keys().join("age.key"))
        .arg("-r")
        .arg(public.trim())
        .arg(&f)
        .assert()
        .code(1)
        .stderr(contains("this is an age file"));
}

/// Passphrase (scrypt) age files: CCTV's `scrypt` vector (passphrase "password") and its work
/// factor 23 twin. An identity for a passphrase file, and a work factor over the cap, are named.
#[test]
fn scrypt_files_need_the_passphrase_and_a_bounded_work_factor() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cctv-age/testdata");
    if !dir.is_dir() {
        assert!(
            std::env::var_os("ZSEAL_REQUIRE_PEERS").is_none(),
            "run scripts/fetch-cctv"
        );
        return;
    }
    let age_part = |name: &str| {
        let raw = std::fs::read(dir.join(name)).unwrap();
        let at = raw.windows(2).position(|w| w == b"\n\n").unwrap();
        raw[at + 2..].to_vec()
    };
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.age");
    std::fs::write(&f, age_part("scrypt")).unwrap();
    let pw = d.path().join("pw");
    std::fs::write(&pw, "password\n").unwrap();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&pw)
        .arg(&f)
        .assert()
        .success();
    let wrong = d.path().join("wrong");
    std::fs::write(&wrong, "not it\n").unwrap();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&wrong)
        .arg(&f)
        .assert()
        .code(1)
        .stderr(contains("wrong passphrase"));
    zseal()
        .args(["decrypt", "-i"])
        .arg(common::keys().join("age.key"))
        .arg(&f)
        .assert()
        .code(1)
        .stderr(contains(
            "protected by a passphrase, not encrypted to a key",
        ));
    let w23 = d.path().join("w23.age");
    std::fs::write(&w23, age_part("scrypt_work_factor_23")).unwrap();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&pw)
        .arg(&w23)
        .assert()
        .code(1)
        .stderr(contains("work factor 23 is over 22"))
        .stderr(contains("8192 MiB of memory per attempt"));
    // A lower limit, set by the reader: the vector's factor 10 is refused under 9, before any
    // work (the wrong passphrase gets the same answer), and opens at 10.
    for key in [&pw, &wrong] {
        zseal()
            .args(["decrypt", "--max-work-factor", "9", "--passphrase-file"])
            .arg(key)
            .arg(&f)
            .assert()
            .code(1)
            .stderr(contains(
                "the scrypt work factor 10 is over the limit 9: trying a passphrase on this \
                 file takes 1 MiB of memory",
            ));
    }
    zseal()
        .args(["decrypt", "--max-work-factor", "10", "--passphrase-file"])
        .arg(&pw)
        .arg(&f)
        .assert()
        .success();
    zseal()
        .args(["decrypt", "--max-work-factor", "23", "--passphrase-file"])
        .arg(&pw)
        .arg(&f)
        .assert()
        .code(2)
        .stderr(contains("23 is not in 1..=22"));
}

/// `--passphrase-file` reads a FIFO (`<(pass show x)`) and takes its first line; a first line
/// over 64 KiB is refused rather than read into ever larger buffers.
#[test]
fn a_passphrase_comes_from_a_fifo_and_its_first_line_is_bounded() {
    let d = tempfile::tempdir().unwrap();
    let plain = b"through a FIFO".to_vec();
    let pw = d.path().join("pw");
    std::fs::write(&pw, "fifo passphrase\nsecond line\n").unwrap();
    let sealed = d.path().join("x.age");
    zseal()
        .args(["encrypt", "--format", "age", "-q", "--passphrase-file"])
        .arg(&pw)
        .arg("-o")
        .arg(&sealed)
        .write_stdin(plain.clone())
        .assert()
        .success();
    let fifo = d.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::write(fifo, "fifo passphrase\r\n")
    });
    let out = zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&fifo)
        .arg(&sealed)
        .output()
        .unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, plain);
    let long = d.path().join("long");
    std::fs::write(&long, vec![b'a'; 65 << 10]).unwrap();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&long)
        .arg(&sealed)
        .assert()
        .code(1)
        .stderr(contains("longer than 64 KiB"));
}
