//! `encrypt --format age --sign KEY` (FORMAT.md §12.4): a detached OUT.sig, an SSHSIG over the
//! age file (namespace zseal), that the real `ssh-keygen -Y verify` checks as is; for an Ed25519
//! key, the very signature `ssh-keygen -Y sign` makes of the same file (Ed25519 is
//! deterministic). What cannot be signed, or where, is refused before anything is written.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::Command as Cmd;
use base64::Engine;
use predicates::str::contains;

fn zseal() -> Cmd {
    Cmd::cargo_bin("zseal").unwrap()
}

/// A new unencrypted OpenSSH key of `kind` (`ed25519`, `ecdsa`, `rsa`) in `dir`.
fn ssh_key(ssh_keygen: &Path, dir: &Path, kind: &str) -> PathBuf {
    let key = dir.join(format!("id_{kind}"));
    let mut c = Command::new(ssh_keygen);
    c.args(["-q", "-t", kind, "-N", "", "-C", "alice@example", "-f"])
        .arg(&key);
    if kind == "rsa" {
        c.args(["-b", "2048"]);
    }
    assert!(c.status().unwrap().success());
    key
}

/// `ssh-keygen -Y verify` of `file` against `sig`, with `key` as alice's allowed signer.
fn ssh_verifies(ssh_keygen: &Path, key: &Path, file: &Path, sig: &Path, namespace: &str) -> bool {
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = key.with_extension("allowed");
    std::fs::write(&allowed, format!("alice@example {public}")).unwrap();
    Command::new(ssh_keygen)
        .args(["-Y", "verify", "-f"])
        .arg(&allowed)
        .args(["-I", "alice@example", "-n", namespace, "-s"])
        .arg(sig)
        .stdin(std::fs::File::open(file).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The SSHSIG blob inside an armored signature.
fn blob(armored: &str) -> Vec<u8> {
    let body: String = armored
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// What a signing test starts from: ssh-keygen (absent: the test is skipped), a directory, an
/// age identity and its recipient, and 300,000 bytes of input.
fn signing() -> Option<(PathBuf, tempfile::TempDir, (PathBuf, String), PathBuf)> {
    let ssh_keygen = common::peer_tool("ssh-keygen")?;
    let dir = tempfile::tempdir().unwrap();
    let keys = common::keygen_file(dir.path(), "me.key");
    let input = dir.path().join("in.bin");
    std::fs::write(&input, common::data(300_000)).unwrap();
    Some((ssh_keygen, dir, keys, input))
}

/// `zseal decrypt -i ID OUT` gives [`signing`]'s input.
fn decrypts_to_the_input(id: &Path, out: &Path) {
    zseal()
        .args(["decrypt", "-i"])
        .arg(id)
        .arg(out)
        .assert()
        .success()
        .stdout(common::data(300_000));
}

#[test]
fn ssh_keygen_checks_the_signature_of_an_age_file() {
    let Some((ssh_keygen, dir, (id, public), input)) = signing() else {
        return;
    };
    for kind in ["ed25519", "ecdsa", "rsa"] {
        let key = ssh_key(&ssh_keygen, dir.path(), kind);
        let out = dir.path().join(format!("{kind}.age"));
        let sig = dir.path().join(format!("{kind}.age.sig"));
        zseal()
            .args(["encrypt", "--format", "age", "-q", "-r", &public, "--sign"])
            .arg(&key)
            .arg("-o")
            .arg(&out)
            .arg(&input)
            .assert()
            .success();
        let armored = std::fs::read_to_string(&sig).unwrap();
        assert!(
            armored.starts_with("-----BEGIN SSH SIGNATURE-----\n"),
            "{kind}"
        );
        assert!(
            ssh_verifies(&ssh_keygen, &key, &out, &sig, "zseal"),
            "{kind}"
        );
        // Another namespace, or one changed byte of the file, and ssh-keygen refuses it.
        assert!(
            !ssh_verifies(&ssh_keygen, &key, &out, &sig, "file"),
            "{kind}"
        );
        let mut bytes = std::fs::read(&out).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let changed = dir.path().join("changed.age");
        std::fs::write(&changed, &bytes).unwrap();
        assert!(
            !ssh_verifies(&ssh_keygen, &key, &changed, &sig, "zseal"),
            "{kind}"
        );
        // The age file itself is unchanged by signing: it decrypts as ever.
        decrypts_to_the_input(&id, &out);
        if kind == "ed25519" {
            // Ed25519 signs deterministically: ssh-keygen -Y sign of the same file gives the
            // same SSHSIG.
            let copy = dir.path().join("copy.age");
            std::fs::copy(&out, &copy).unwrap();
            let status = Command::new(&ssh_keygen)
                .args(["-Y", "sign", "-n", "zseal", "-f"])
                .arg(&key)
                .arg(&copy)
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            let theirs = std::fs::read_to_string(dir.path().join("copy.age.sig")).unwrap();
            assert_eq!(blob(&armored), blob(&theirs));
        }
    }
}

/// `-a --sign`: the signature is over the armored file as stored (its end line included), and
/// the report counts the armored bytes that reached the file.
#[test]
fn an_armored_age_file_is_signed_as_stored() {
    let Some((ssh_keygen, dir, (id, public), input)) = signing() else {
        return;
    };
    let key = ssh_key(&ssh_keygen, dir.path(), "ed25519");
    let (out, sig) = (dir.path().join("a.age"), dir.path().join("a.age.sig"));
    let run = zseal()
        .args([
            "encrypt", "--format", "age", "-a", "--json", "-r", &public, "--sign",
        ])
        .arg(&key)
        .arg("-o")
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.ends_with("-----END AGE ENCRYPTED FILE-----\n"),
        "{text}"
    );
    let report: serde_json::Value = serde_json::from_slice(&run.stderr).unwrap();
    assert_eq!(report["bytes_out"], text.len() as u64);
    assert!(ssh_verifies(&ssh_keygen, &key, &out, &sig, "zseal"));
    decrypts_to_the_input(&id, &out);
}

#[test]
fn what_cannot_be_signed_is_refused_before_anything_is_written() {
    let Some(ssh_keygen) = common::peer_tool("ssh-keygen") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_, public) = common::keygen_file(dir.path(), "me.key");
    let key = ssh_key(&ssh_keygen, dir.path(), "ed25519");
    let input = dir.path().join("in.bin");
    std::fs::write(&input, b"signed bytes").unwrap();
    let out = dir.path().join("out");
    let run = |extra: &[&str]| {
        let mut c = zseal();
        c.args(["encrypt", "-q", "-r", &public, "--sign"]).arg(&key);
        c.args(extra).arg(&input);
        c.assert().failure()
    };
    // A container whose hash cannot carry a signature (it is made over BLAKE3).
    run(&["--hash", "xxh3", "-o", out.to_str().unwrap()]).stderr(contains("BLAKE3"));
    assert!(!out.exists());
    // An age file to standard output: the signature has nowhere to go.
    run(&["--format", "age"]).stderr(contains("give -o FILE"));
    // Two keys for one detached signature file.
    run(&[
        "--format",
        "age",
        "--sign",
        key.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .stderr(contains("one key"));
    // An existing OUT.sig is kept without --force, and no OUT appears.
    std::fs::write(dir.path().join("out.sig"), b"keep").unwrap();
    run(&["--format", "age", "-o", out.to_str().unwrap()]).stderr(contains("out.sig"));
    assert_eq!(std::fs::read(dir.path().join("out.sig")).unwrap(), b"keep");
    assert!(!out.exists());
    // Not a private key: named.
    let mut c = zseal();
    c.args(["encrypt", "--format", "age", "-q", "-r", &public, "--sign"])
        .arg(key.with_extension("pub"))
        .arg("-o")
        .arg(dir.path().join("other"))
        .arg(&input);
    c.assert()
        .failure()
        .stderr(contains("not an OpenSSH private key"));
    assert!(!dir.path().join("other").exists());
}

/// The passphrase a test gives, or none.
#[derive(Clone)]
struct Given(Option<&'static str>);

impl zseal::crypto::recipients::KeyPassphrase for Given {
    fn passphrase(&self, _: &str) -> Option<String> {
        self.0.map(str::to_string)
    }
}

#[test]
fn an_encrypted_key_signs_once_its_passphrase_unlocks_it() {
    use zseal::crypto::sign::{sha512_of, SigningKey};
    let Some(ssh_keygen) = common::peer_tool("ssh-keygen") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id_locked");
    let status = Command::new(&ssh_keygen)
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "open sesame",
            "-C",
            "alice@example",
            "-f",
        ])
        .arg(&key)
        .status()
        .unwrap();
    assert!(status.success());
    for (given, why) in [(None, "no passphrase"), (Some("wrong"), "wrong passphrase")] {
        let e = SigningKey::read(&key, &Given(given))
            .unwrap_err()
            .to_string();
        assert!(e.contains(why) && e.contains("id_locked"), "{e}");
    }
    let signer = SigningKey::read(&key, &Given(Some("open sesame"))).unwrap();
    assert!(signer.fingerprint().starts_with("SHA256:"));
    assert!(format!("{signer:?}").contains(&signer.fingerprint()));
    // A message signed by its SHA-512 alone, checked by ssh-keygen over the message itself.
    let message = dir.path().join("message");
    std::fs::write(&message, common::noise(1 << 20, 9)).unwrap();
    let digest = sha512_of(std::fs::File::open(&message).unwrap()).unwrap();
    let sig = dir.path().join("message.sig");
    std::fs::write(&sig, signer.sign_sha512(&digest).unwrap()).unwrap();
    assert!(ssh_verifies(&ssh_keygen, &key, &message, &sig, "zseal"));
    assert!(signer.public_key().starts_with("ssh-ed25519 "));
}

#[test]
fn a_statement_ssh_keygen_signed_is_checked_against_keys_and_allowed_signers() {
    use zseal::crypto::sign::{statement, Signers};
    let Some(ssh_keygen) = common::peer_tool("ssh-keygen") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let alice = ssh_key(&ssh_keygen, dir.path(), "ed25519");
    let bob = ssh_key(&ssh_keygen, dir.path(), "ecdsa");
    let text = statement(1 << 30, &blake3::hash(b"the plaintext").to_hex());
    let stmt = dir.path().join("stmt");
    std::fs::write(&stmt, &text).unwrap();
    let sign = |key: &Path, namespace: &str| {
        let _ = std::fs::remove_file(dir.path().join("stmt.sig"));
        let ok = Command::new(&ssh_keygen)
            .args(["-Y", "sign", "-n", namespace, "-f"])
            .arg(key)
            .arg(&stmt)
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::fs::read_to_string(dir.path().join("stmt.sig")).unwrap()
    };
    let by_alice = sign(&alice, "zseal");
    let alice_pub = std::fs::read_to_string(alice.with_extension("pub")).unwrap();
    // By key file, by key text, and by an allowed_signers entry for the namespace.
    let mut s = Signers::default();
    s.add_key(alice.with_extension("pub").to_str().unwrap())
        .unwrap();
    assert!(s
        .check(text.as_bytes(), &by_alice)
        .unwrap()
        .contains("SHA256:"));
    let mut s = Signers::default();
    s.add_key(alice_pub.trim()).unwrap();
    s.check(text.as_bytes(), &by_alice).unwrap();
    let allowed = dir.path().join("allowed_signers");
    let bob_pub = std::fs::read_to_string(bob.with_extension("pub")).unwrap();
    std::fs::write(
        &allowed,
        format!(
            "# who may sign\nalice@example namespaces=\"git,zs*\" {alice_pub}\nbob@example {bob_pub}"
        ),
    )
    .unwrap();
    let mut s = Signers::default();
    s.add_allowed_signers(&allowed).unwrap();
    assert!(s
        .check(text.as_bytes(), &by_alice)
        .unwrap()
        .starts_with("alice@example"));
    // Other content, another namespace, a key not allowed for zseal, a key not listed.
    let other = statement(1 << 30, &blake3::hash(b"other bytes").to_hex());
    let e = s
        .check(other.as_bytes(), &by_alice)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not over this content"), "{e}");
    let e = s
        .check(text.as_bytes(), &sign(&alice, "file"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("namespace 'file'"), "{e}");
    std::fs::write(
        &allowed,
        format!("alice@example namespaces=\"git\" {alice_pub}"),
    )
    .unwrap();
    // A file that leaves no key for zseal would require a signature no one can make: refused.
    let e = Signers::default()
        .add_allowed_signers(&allowed)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no entry allows the namespace 'zseal'"), "{e}");
    let mut s = Signers::default();
    s.add_key(bob_pub.trim()).unwrap();
    let e = s.check(text.as_bytes(), &by_alice).unwrap_err().to_string();
    assert!(e.contains("none of the signers"), "{e}");
    // What zseal does not check is refused, naming the line.
    std::fs::write(&allowed, format!("\nca@example cert-authority {alice_pub}")).unwrap();
    let e = Signers::default()
        .add_allowed_signers(&allowed)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("allowed_signers:2") && e.contains("cert-authority"),
        "{e}"
    );
    // zseal's own signature of the statement checks the same way.
    let key = zseal::crypto::sign::SigningKey::read(&bob, &Given(None)).unwrap();
    let digest = zseal::crypto::sign::sha512_of(text.as_bytes()).unwrap();
    let mut s = Signers::default();
    s.add_key(bob_pub.trim()).unwrap();
    s.check(text.as_bytes(), &key.sign_sha512(&digest).unwrap())
        .unwrap();
}
