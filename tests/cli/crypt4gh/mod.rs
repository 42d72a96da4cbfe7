//! Crypt4GH end to end through the command (FORMAT.md §13), checked with the reference tool
//! (PyPI `crypt4gh==1.8.6`, pinned in python/requirements-test.txt, in target/pyenv or the active
//! virtual environment): `encrypt --format crypt4gh` (write.rs) and `rekey` (rekey.rs). Without
//! the reference the tests that need it are skipped, unless ZSEAL_REQUIRE_PEERS is set (CI),
//! where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};

use assert_cmd::Command;

use crate::common::crypt4gh_reference as reference;

mod rekey;
mod write;

fn zseal() -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.env_remove("ZSEAL_PASSPHRASE");
    c
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Runs the reference's `tool args` in `dir` with `input` (a file) on standard input: its
/// standard output, or its error text.
fn run(bin: &Path, dir: &Path, tool: &str, args: &[&str], input: &Path) -> Result<Vec<u8>, String> {
    let out = Std::new(bin.join(tool))
        .args(args)
        .current_dir(dir)
        .env_remove("C4GH_SECRET_KEY")
        .env_remove("C4GH_PASSPHRASE")
        .stdin(Stdio::from(std::fs::File::open(input).unwrap()))
        .output()
        .unwrap();
    match out.status.success() {
        true => Ok(out.stdout),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// The reference tool's variables work as its users expect (issue 59 §4): `C4GH_SECRET_KEY`
/// names the secret key when no -i is given, `C4GH_PASSPHRASE` opens a protected one, and
/// without either the error names them.
#[test]
fn the_reference_tools_variables_are_read() {
    let d = tempfile::tempdir().unwrap();
    let plain = std::fs::read(fixture("crypt4gh/hello.txt")).unwrap();
    let sealed = d.path().join("b.c4gh");
    zseal()
        .args(["encrypt", "--format", "crypt4gh", "-R"])
        .arg(fixture("crypt4gh/bob.pub"))
        .arg("-o")
        .arg(&sealed)
        .arg(fixture("crypt4gh/hello.txt"))
        .assert()
        .success();
    let decrypt = || {
        let mut c = zseal();
        c.env_remove("C4GH_SECRET_KEY")
            .env_remove("C4GH_PASSPHRASE")
            .arg("decrypt")
            .arg(&sealed);
        c
    };
    decrypt()
        .env("C4GH_SECRET_KEY", fixture("crypt4gh/bob.sec"))
        .env("C4GH_PASSPHRASE", "zseal fixture")
        .assert()
        .success()
        .stdout(plain.clone());
    let out = decrypt().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("or set C4GH_SECRET_KEY"),
        "{err}"
    );
    let out = decrypt()
        .env("C4GH_SECRET_KEY", fixture("crypt4gh/bob.sec"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("set C4GH_PASSPHRASE"),
        "{err}"
    );
    // Alice's key is not protected: the variable alone opens the fixture made for her.
    let mut c = zseal();
    c.env("C4GH_SECRET_KEY", fixture("crypt4gh/alice.sec"))
        .arg("decrypt")
        .arg(fixture("crypt4gh/hello.c4gh"))
        .assert()
        .success()
        .stdout(plain);
}

/// A crypt4gh key where another kind is expected names crypt4gh (issue 59 §4): its public key
/// given to the container format is refused saying what it is for, and `keygen -y` prints a
/// private key's public key file, byte for byte what crypt4gh-keygen wrote beside it.
#[test]
fn crypt4gh_keys_elsewhere_are_named() {
    let d = tempfile::tempdir().unwrap();
    zseal()
        .args(["encrypt", "--passphrase-file"])
        .arg(fixture("passphrase.txt"))
        .arg("-R")
        .arg(fixture("crypt4gh/alice.pub"))
        .arg("-o")
        .arg(d.path().join("x.zseal"))
        .arg(fixture("crypt4gh/hello.txt"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "a crypt4gh public key (crypt4gh-keygen's) seals crypt4gh files",
        ));
    assert!(!d.path().join("x.zseal").exists());
    let public = std::fs::read(fixture("crypt4gh/alice.pub")).unwrap();
    zseal()
        .args(["keygen", "-y"])
        .arg(fixture("crypt4gh/alice.sec"))
        .assert()
        .success()
        .stdout(public);
    let bob = std::fs::read(fixture("crypt4gh/bob.pub")).unwrap();
    zseal()
        .env("C4GH_PASSPHRASE", "zseal fixture")
        .args(["keygen", "-y"])
        .arg(fixture("crypt4gh/bob.sec"))
        .assert()
        .success()
        .stdout(bob);
}

/// decrypt says what an unsigned crypt4gh v1 file cannot promise each time it releases one, as
/// verify does (issue 59 §4): a file cut at a segment boundary decrypts with exit 0.
#[test]
fn decrypt_says_what_an_unsigned_file_cannot_promise() {
    let d = tempfile::tempdir().unwrap();
    let plain: Vec<u8> = (0..4 * 65536).map(|i| (i % 251) as u8).collect();
    let src = d.path().join("src");
    std::fs::write(&src, &plain).unwrap();
    let sealed = d.path().join("f.c4gh");
    zseal()
        .args(["encrypt", "--format", "crypt4gh", "-R"])
        .arg(fixture("crypt4gh/alice.pub"))
        .arg("-o")
        .arg(&sealed)
        .arg(&src)
        .assert()
        .success();
    let whole = std::fs::read(&sealed).unwrap();
    let cut = d.path().join("cut.c4gh");
    std::fs::write(&cut, &whole[..whole.len() - 2 * (65536 + 28)]).unwrap();
    for (file, len) in [(&sealed, plain.len()), (&cut, 2 * 65536)] {
        zseal()
            .arg("decrypt")
            .arg("-i")
            .arg(fixture("crypt4gh/alice.sec"))
            .arg(file)
            .assert()
            .success()
            .stdout(plain[..len].to_vec())
            .stderr(predicates::str::contains(
                "cannot show a cut at a segment boundary",
            ));
    }
}
