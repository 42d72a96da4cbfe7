//! `zseal encrypt --format crypt4gh` (FORMAT.md §13.8, §13.9): files written by the workers by
//! offset and pipes, at the segment boundaries, on one thread and on two, opened by the
//! reference for each of several recipients of each kind; the signature beside the output; and
//! what is refused.

use std::path::{Path, PathBuf};

use predicates::str::contains;
use zseal::crypto::c4gh::file::{private_key_file, public_key_file, Protection};
use zseal::crypto::c4gh::SecretKey;

use super::{reference, run, zseal};
use crate::common;

/// `crypt4gh decrypt --sk key < file`: the plaintext, or the reference's error text.
fn ref_decrypt(bin: &Path, file: &Path, key: &Path) -> Result<Vec<u8>, String> {
    let key = key.to_str().unwrap();
    run(
        bin,
        file.parent().unwrap(),
        "crypt4gh",
        &["decrypt", "--sk", key],
        file,
    )
}

/// One recipient of each kind the command takes, with the private key the reference opens the
/// file with: a crypt4gh key pair (`-R` its public key file), an OpenSSH ed25519 key (`-r` its
/// public line; the reference reads the OpenSSH private key), and an age X25519 identity (`-r
/// age1…`; the reference is given the same scalar as a crypt4gh private key file, FORMAT.md
/// §13.7). Returns the recipient arguments and the reference's key files.
fn recipients(dir: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let mut rng = rand_core::OsRng;
    let c4 = SecretKey::generate(&mut rng);
    std::fs::write(dir.join("c4.pub"), public_key_file(&c4.public())).unwrap();
    let c4_sec = dir.join("c4.sec");
    let text = private_key_file(&c4, Protection::None, None, &mut rng).unwrap();
    std::fs::write(&c4_sec, text.as_bytes()).unwrap();

    let ssh = ssh_key::PrivateKey::random(&mut rng, ssh_key::Algorithm::Ed25519).unwrap();
    let ssh_sec = dir.join("id_ed25519");
    let pem = ssh.to_openssh(ssh_key::LineEnding::LF).unwrap();
    std::fs::write(&ssh_sec, pem.as_bytes()).unwrap();
    let ssh_pub = ssh.public_key().to_openssh().unwrap();

    let (age_id, age_pub) = common::keygen_file(dir, "age.key");
    let age_text = std::fs::read_to_string(age_id).unwrap();
    let scalar = zseal::crypto::c4gh::read_secret_keys(
        age_text.as_bytes(),
        "age.key",
        &zseal::crypto::recipients::NoPrompt,
    )
    .unwrap();
    let age_sec = dir.join("age.sec");
    let text = private_key_file(&scalar[0], Protection::None, None, &mut rng).unwrap();
    std::fs::write(&age_sec, text.as_bytes()).unwrap();

    let args = vec![
        "-R".into(),
        dir.join("c4.pub").display().to_string(),
        "-r".into(),
        ssh_pub,
        "-r".into(),
        age_pub,
    ];
    (args, vec![c4_sec, ssh_sec, age_sec])
}

/// Every boundary size, from a regular file into a regular file (the workers read and write by
/// offset) on two threads and through pipes on one, opens in the reference byte for byte; the
/// largest for each of the three recipients.
#[test]
fn files_and_pipes_open_in_the_reference_for_each_recipient() {
    let Some(tool) = reference() else { return };
    let d = tempfile::tempdir().unwrap();
    let (to, keys) = recipients(d.path());
    let s = 65_536;
    for n in [0, 1, s - 1, s, s + 1, 16 * s + 1, 40 * s + 7] {
        let plain = common::noise(n, n as u64);
        let src = d.path().join(format!("p{n}"));
        std::fs::write(&src, &plain).unwrap();
        let (file_out, pipe_out) = (
            d.path().join(format!("f{n}.c4gh")),
            d.path().join(format!("s{n}.c4gh")),
        );
        zseal()
            .args(["encrypt", "--format", "crypt4gh", "-q", "-j", "2"])
            .args(&to)
            .arg(&src)
            .arg("-o")
            .arg(&file_out)
            .assert()
            .success();
        let piped = zseal()
            .args(["encrypt", "--format", "crypt4gh", "-q", "-j", "1"])
            .args(&to)
            .write_stdin(plain.clone())
            .output()
            .unwrap();
        assert!(piped.status.success(), "{piped:?}");
        std::fs::write(&pipe_out, &piped.stdout).unwrap();
        // The same length either way: the header's three packets, then the segments.
        let len = std::fs::metadata(&file_out).unwrap().len();
        assert_eq!(len, piped.stdout.len() as u64, "{n}");
        let segments = n.div_ceil(s) as u64;
        assert_eq!(len, 16 + 3 * 108 + n as u64 + 28 * segments, "{n}");
        let which: &[PathBuf] = if n == 40 * s + 7 { &keys } else { &keys[..1] };
        for key in which {
            for f in [&file_out, &pipe_out] {
                let got = ref_decrypt(&tool, f, key).unwrap();
                assert!(
                    got == plain,
                    "{n} bytes, {}, {}",
                    f.display(),
                    key.display()
                );
            }
        }
        // A flipped byte in the last segment: the reference refuses the file.
        if n > 0 {
            let mut bad = std::fs::read(&file_out).unwrap();
            let at = bad.len() - 3;
            bad[at] ^= 1;
            let bad_path = d.path().join("bad.c4gh");
            std::fs::write(&bad_path, bad).unwrap();
            assert!(ref_decrypt(&tool, &bad_path, &keys[0]).is_err(), "{n}");
        }
    }
}

/// `--sign KEY` writes OUT.sig: an SSHSIG over the statement of the plaintext's length and
/// BLAKE3 (§13.9), made as the input was read; an existing OUT.sig stays without --force (and
/// nothing is written), standard output has no place for one.
#[test]
fn sign_writes_the_statements_signature_beside_the_output() {
    let d = tempfile::tempdir().unwrap();
    let (to, _) = recipients(d.path());
    let signer = d.path().join("id_ed25519");
    let plain = common::noise(3 * 65_536 + 99, 7);
    let src = d.path().join("p");
    std::fs::write(&src, &plain).unwrap();
    let out = d.path().join("p.c4gh");
    let encrypt = |extra: &[&str]| {
        let mut c = zseal();
        c.args(["encrypt", "--format", "crypt4gh", "-q", "--sign"])
            .arg(&signer)
            .args(&to)
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .args(extra);
        c
    };
    encrypt(&[]).assert().success();
    let sig = std::fs::read_to_string(d.path().join("p.c4gh.sig")).unwrap();
    let hex = blake3::hash(&plain).to_hex().to_string();
    let statement = zseal::crypto::sign::statement(plain.len() as u64, &hex);
    let public = ssh_key::PrivateKey::read_openssh_file(&signer).unwrap();
    let mut signers = zseal::crypto::sign::Signers::default();
    signers
        .add_key_text(&public.public_key().to_openssh().unwrap(), "signer")
        .unwrap();
    signers.check(statement.as_bytes(), &sig).unwrap();
    let wrong = zseal::crypto::sign::statement(plain.len() as u64 - 1, &hex);
    assert!(signers.check(wrong.as_bytes(), &sig).is_err());

    // Again: OUT.sig exists, so nothing is written; with --force both are replaced.
    std::fs::remove_file(&out).unwrap();
    encrypt(&[])
        .assert()
        .failure()
        .stderr(contains("p.c4gh.sig"));
    assert!(
        !out.exists(),
        "no output when the signature cannot be written"
    );
    encrypt(&["--force"]).assert().success();
    assert_ne!(
        std::fs::read_to_string(d.path().join("p.c4gh.sig")).unwrap(),
        ""
    );

    zseal()
        .args(["encrypt", "--format", "crypt4gh", "-q", "--sign"])
        .arg(&signer)
        .args(&to)
        .write_stdin(plain)
        .assert()
        .failure()
        .stderr(contains("give -o FILE"));
}

/// What a crypt4gh file cannot hold or be written to is refused by name, before any output.
#[test]
fn what_crypt4gh_cannot_hold_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (to, _) = recipients(d.path());
    let (_, pq) = {
        let out = zseal()
            .args(["keygen", "--pq", "-o"])
            .arg(d.path().join("pq.key"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = std::fs::read_to_string(d.path().join("pq.key")).unwrap();
        let public = text
            .lines()
            .find_map(|l| l.strip_prefix("# public key: "))
            .unwrap()
            .to_string();
        ((), public)
    };
    let out = d.path().join("x.c4gh");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["-c".into(), "zstd".into()], "compression"),
        (
            vec!["--cipher".into(), "aes-256-gcm".into()],
            "ChaCha20-Poly1305",
        ),
        (vec!["--pad".into()], "padding"),
        (vec!["--chunk-size".into(), "1M".into()], "64 KiB"),
        (vec!["-a".into()], "--format age"),
        (vec!["-r".into(), pq], "post-quantum"),
        (
            vec!["-r".into(), "age1yubikey1qqqqqqqqqqqqqqqqqqqqqqq".into()],
            "plugin",
        ),
        (
            vec![
                "-r".into(),
                "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDB".into(),
            ],
            "-r ssh-rsa",
        ),
    ];
    for (extra, says) in cases {
        zseal()
            .args(["encrypt", "--format", "crypt4gh", "-q"])
            .args(&to)
            .args(&extra)
            .arg("-o")
            .arg(&out)
            .write_stdin("x")
            .assert()
            .failure()
            .stderr(contains(says));
        assert!(!out.exists(), "{extra:?}");
    }
    zseal()
        .args(["encrypt", "--format", "crypt4gh", "-q", "-o"])
        .arg(&out)
        .write_stdin("x")
        .assert()
        .failure()
        .stderr(contains("needs a recipient"));
    assert!(!out.exists());
}
