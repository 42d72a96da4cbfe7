//! Interop with the reference implementation (PyPI `crypt4gh==1.8.6`, pinned in
//! python/requirements-test.txt; scripts/test-all installs it into target/pyenv): its files and
//! keys open here, this writer's files and keys open there. Without it the tests are skipped,
//! unless ZSEAL_REQUIRE_PEERS is set (CI), where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::*;

const PASS: &str = "zseal interop";

/// The reference's commands (`crypt4gh`, `crypt4gh-keygen`) and its Python.
struct Reference {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

impl Reference {
    /// The reference in the active virtual environment or in target/pyenv.
    fn find() -> Option<Reference> {
        let bin = crate::common::crypt4gh_reference();
        let dir = tempfile::tempdir().unwrap();
        bin.map(|bin| Reference { bin, dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `tool args` with `input` on standard input and `pass` as C4GH_PASSPHRASE; its
    /// standard output, or its error text.
    fn run(
        &self,
        tool: &str,
        args: &[&str],
        input: &[u8],
        pass: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        let stdin = self.path("stdin");
        std::fs::write(&stdin, input).unwrap();
        let mut cmd = Command::new(self.bin.join(tool));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_remove("C4GH_SECRET_KEY")
            .env_remove("C4GH_PASSPHRASE")
            .stdin(Stdio::from(std::fs::File::open(&stdin).unwrap()));
        if let Some(p) = pass {
            cmd.env("C4GH_PASSPHRASE", p);
        }
        let out = cmd.output().unwrap();
        match out.status.success() {
            true => Ok(out.stdout),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }

    /// A key pair `name.sec`/`name.pub` made by `crypt4gh-keygen --nocrypt`.
    fn keygen(&self, name: &str) -> (Vec<SecretKey>, PublicKey) {
        let (sk, pk) = (format!("{name}.sec"), format!("{name}.pub"));
        self.run(
            "crypt4gh-keygen",
            &["--sk", &sk, "--pk", &pk, "--nocrypt", "-f"],
            b"",
            None,
        )
        .unwrap();
        (
            secret(&self.path(&sk), "").unwrap(),
            public(&self.path(&pk)),
        )
    }

    fn encrypt(&self, plain: &[u8], to: &[&str]) -> Vec<u8> {
        let mut args = vec!["encrypt"];
        for r in to {
            args.extend(["--recipient_pk", r]);
        }
        self.run("crypt4gh", &args, plain, None).unwrap()
    }

    fn decrypt(&self, file: &[u8], key: &str, pass: Option<&str>) -> Result<Vec<u8>, String> {
        self.run("crypt4gh", &["decrypt", "--sk", key], file, pass)
    }
}

/// Three recipients of one `crypt4gh encrypt`: each opens the file whole and by range, and a
/// flipped byte in a segment or a cut inside one is refused.
#[test]
fn reference_files_open_for_each_recipient() {
    let Some(r) = Reference::find() else { return };
    let keys: Vec<_> = ["a", "b", "c"].iter().map(|n| r.keygen(n).0).collect();
    let s = SEGMENT_LEN;
    let plain = data(3 * s + 17);
    let file = r.encrypt(&plain, &["a.pub", "b.pub", "c.pub"]);
    assert_eq!(Header::parse(&file).unwrap().len(), 16 + 3 * 108);
    for k in &keys {
        assert_eq!(open_file(&file, k, None).unwrap(), plain);
        let range = (2 * s - 5) as u64..(3 * s + 2) as u64;
        assert_eq!(
            open_file(&file, k, Some(range)).unwrap(),
            &plain[2 * s - 5..3 * s + 2]
        );
    }
    let seg2 = 16 + 3 * 108 + 2 * (s + 28);
    let mut bad = file.clone();
    bad[seg2 + 100] ^= 1;
    let e = open_file(&bad, &keys[0], None).unwrap_err().to_string();
    assert!(e.contains("segment 2 failed authentication"), "{e}");
    let e = open_file(&file[..file.len() - 17 - 1], &keys[1], None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
}

/// Private keys protected with each KDF of the key format: scrypt and bcrypt written by the
/// reference's own `c4gh.generate` (bcrypt when it believes scrypt missing), PBKDF2 (which it
/// reads but never writes) assembled from its own functions; each read back by the reference
/// before zseal opens a file with it.
#[test]
fn reference_keys_of_each_kdf_open_with_their_passphrase() {
    let Some(r) = Reference::find() else { return };
    let script = format!(
        r#"
import os
from base64 import b64encode
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from crypt4gh import sodium
from crypt4gh.keys import c4gh, kdf, get_private_key
pw = {PASS:?}
c4gh.generate('scrypt.sec', 'scrypt.pub', pw.encode(), b'scrypt key')
c4gh.scrypt_supported = False
c4gh.generate('bcrypt.sec', 'bcrypt.pub', pw.encode(), None)
sk, name = os.urandom(32), b'pbkdf2_hmac_sha256'
saltsize, rounds = kdf.get_kdf(name)
salt, nonce = os.urandom(saltsize), os.urandom(12)
sealed = ChaCha20Poly1305(kdf.derive_key(name, pw.encode(), salt, rounds)).encrypt(nonce, sk, None)
blob = (c4gh.MAGIC_WORD + c4gh.encode_string(name) + c4gh.encode_string(rounds.to_bytes(4, 'big') + salt)
        + c4gh.encode_string(b'chacha20_poly1305') + c4gh.encode_string(nonce + sealed))
open('pbkdf2.sec', 'wb').write(b'-----BEGIN CRYPT4GH PRIVATE KEY-----\n' + b64encode(blob) + b'\n-----END CRYPT4GH PRIVATE KEY-----\n')
open('pbkdf2.pub', 'wb').write(b'-----BEGIN CRYPT4GH PUBLIC KEY-----\n' + b64encode(sodium.derive_pk(sk)) + b'\n-----END CRYPT4GH PUBLIC KEY-----\n')
for k in ('scrypt', 'bcrypt', 'pbkdf2'):
    assert len(get_private_key(k + '.sec', lambda: pw)) == 32
"#
    );
    r.run("python", &["-c", &script], b"", None).unwrap();
    let plain = data(1000);
    for kdf in ["scrypt", "bcrypt", "pbkdf2"] {
        let file = r.encrypt(&plain, &[&format!("{kdf}.pub")]);
        let key = secret(&r.path(&format!("{kdf}.sec")), PASS).unwrap();
        assert_eq!(
            key[0].public(),
            public(&r.path(&format!("{kdf}.pub"))),
            "{kdf}"
        );
        assert_eq!(open_file(&file, &key, None).unwrap(), plain, "{kdf}");
        let e = secret(&r.path(&format!("{kdf}.sec")), "wrong")
            .unwrap_err()
            .to_string();
        assert!(e.contains("wrong passphrase"), "{kdf}: {e}");
    }
}

/// `crypt4gh rearrange` writes an edit list; zseal applies it, by range too. A range past the
/// end of the plaintext gives a list zseal refuses (the reference silently stops short).
/// `crypt4gh reencrypt` re-wraps the header for another recipient.
#[test]
fn reference_edit_lists_and_reencrypted_headers_open() {
    let Some(r) = Reference::find() else { return };
    let (a, _) = r.keygen("a");
    let (b, _) = r.keygen("b");
    let plain = data(200_000);
    let file = r.encrypt(&plain, &["a.pub"]);
    let rearrange = |range: &str| {
        r.run(
            "crypt4gh",
            &["rearrange", "--sk", "a.sec", "--range", range],
            &file,
            None,
        )
        .unwrap()
    };
    let cut = rearrange("70000-80001");
    assert_eq!(cut.len(), 216 + 65_564);
    let opened = Header::parse(&cut).unwrap().open(&a).unwrap();
    assert_eq!(opened.edit_list.unwrap().lengths(), &[4464, 10_000]);
    assert_eq!(open_file(&cut, &a, None).unwrap(), &plain[70_000..80_000]);
    assert_eq!(
        open_file(&cut, &a, Some(9_000..9_010)).unwrap(),
        &plain[79_000..79_010]
    );
    assert_eq!(
        r.decrypt(&cut, "a.sec", None).unwrap(),
        &plain[70_000..80_000]
    );

    // The CLI refuses an open range (`cli.py` `parse_range` takes a missing end for an empty
    // span), so its library writes the one-length list [4464] ("keep the rest").
    let script = "import sys\nfrom crypt4gh import lib, sodium\nfrom crypt4gh.keys import get_private_key\n\
                  sk = get_private_key('a.sec', None)\n\
                  lib.rearrange([(0, sk, sodium.derive_pk(sk))], sys.stdin.buffer, sys.stdout.buffer, offset=70000)";
    let tail = r.run("python", &["-c", script], &file, None).unwrap();
    let opened = Header::parse(&tail).unwrap().open(&a).unwrap();
    assert_eq!(opened.edit_list.unwrap().lengths(), &[4464]);
    assert_eq!(open_file(&tail, &a, None).unwrap(), &plain[70_000..]);

    let past = rearrange("150000-250001");
    assert_eq!(r.decrypt(&past, "a.sec", None).unwrap(), &plain[150_000..]);
    let e = open_file(&past, &a, None).unwrap_err().to_string();
    assert!(e.contains("past the end of the data"), "{e}");

    let args = ["reencrypt", "--sk", "a.sec", "--recipient_pk", "b.pub"];
    let moved = r.run("crypt4gh", &args, &cut, None).unwrap();
    assert_eq!(open_file(&moved, &b, None).unwrap(), &plain[70_000..80_000]);
    assert_eq!(
        open_file(&moved, &a, None).unwrap_err().kind(),
        ErrorKind::NoMatchingKey
    );
}

/// Files the reference encrypts to the fixture OpenSSH ed25519 keys open with their private
/// keys here (the encrypted one with its passphrase), and the other way round.
#[test]
fn openssh_ed25519_keys_work_both_ways() {
    let Some(r) = Reference::find() else { return };
    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
    let plain = data(70_000);
    for (name, pass) in [("ed25519", None), ("ed25519-encrypted", Some(FIXTURE_PASS))] {
        let (sk, pk) = (keys.join(name), keys.join(format!("{name}.pub")));
        let theirs = r.encrypt(&plain, &[pk.to_str().unwrap()]);
        let ours = secret(&sk, pass.unwrap_or("")).unwrap();
        assert_eq!(open_file(&theirs, &ours, None).unwrap(), plain, "{name}");
        let mine = seal_file(
            &plain,
            &[public(&pk)],
            None,
            &mut ChaCha20Rng::seed_from_u64(3),
        );
        assert_eq!(
            r.decrypt(&mine, sk.to_str().unwrap(), pass).unwrap(),
            plain,
            "{name}"
        );
    }
}

/// zseal's files open in the reference: several recipients, sizes at segment boundaries, an
/// edit list, and keys zseal writes (each KDF, none, and an age identity's key).
#[test]
fn zseal_files_and_keys_open_in_the_reference() {
    let Some(r) = Reference::find() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    r.keygen("a");
    r.keygen("b");
    let to = [public(&r.path("a.pub")), public(&r.path("b.pub"))];
    let s = SEGMENT_LEN;
    for n in [0, 1, s, 2 * s + 1] {
        let plain = data(n);
        let file = seal_file(&plain, &to, None, &mut rng);
        for key in ["a.sec", "b.sec"] {
            assert_eq!(
                r.decrypt(&file, key, None).unwrap(),
                plain,
                "{n} bytes, {key}"
            );
        }
    }
    let plain = data(2 * s + 1);
    let edit = EditList::new(vec![5, 10, (s + 100) as u64]).unwrap();
    let file = seal_file(&plain, &to, Some(&edit), &mut rng);
    let want = [&plain[5..15], &plain[s + 115..]].concat();
    assert_eq!(r.decrypt(&file, "b.sec", None).unwrap(), want);

    let (age_secret, age_public) = zseal::crypto::recipients::generate();
    let age_key = c4gh::read_secret_keys(age_secret.as_bytes(), "age", &Pass("")).unwrap();
    let age_to = c4gh::read_public_key(&age_public, "age").unwrap();
    let file = seal_file(&plain, &[age_to], None, &mut rng);
    let cases = [
        ("none.sec", file::Protection::None, None),
        (
            "scrypt.sec",
            file::Protection::Passphrase(file::Kdf::Scrypt, PASS),
            Some(PASS),
        ),
        (
            "bcrypt.sec",
            file::Protection::Passphrase(file::Kdf::Bcrypt(16), PASS),
            Some(PASS),
        ),
        (
            "pbkdf2.sec",
            file::Protection::Passphrase(file::Kdf::Pbkdf2HmacSha256(1000), PASS),
            Some(PASS),
        ),
    ];
    for (name, protection, pass) in cases {
        let text =
            file::private_key_file(&age_key[0], protection, Some("zseal"), &mut rng).unwrap();
        std::fs::write(r.path(name), text.as_bytes()).unwrap();
        assert_eq!(r.decrypt(&file, name, pass).unwrap(), plain, "{name}");
    }
    std::fs::write(r.path("age.pub"), file::public_key_file(&age_to)).unwrap();
    let theirs = r.encrypt(b"to an age key", &["age.pub"]);
    assert_eq!(
        open_file(&theirs, &age_key, None).unwrap(),
        b"to an age key"
    );
}
