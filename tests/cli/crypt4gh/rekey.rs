//! `zseal rekey` of crypt4gh files (FORMAT.md §13.9): the new recipients decrypt with the
//! reference's `crypt4gh decrypt`, the dropped ones cannot, the segments are the old bytes.

use std::path::Path;

use assert_cmd::Command;
use predicates::str::contains;
use zseal::crypto::c4gh::read_secret_keys;
use zseal::format::crypt4gh::Header;

use super::{fixture, reference, run, zseal};

/// The bytes after a crypt4gh file's header.
fn data_of(file: &[u8]) -> &[u8] {
    &file[Header::parse(file).unwrap().len() as usize..]
}

fn rekey(file: &Path, args: &[&str]) -> Command {
    let mut c = zseal();
    c.arg("rekey").arg(file).args(args);
    c
}

/// A reference file for `a` rekeyed to `b` (in place, replacing), then `--add` of `c`, then to
/// a new file with -o: each time the new recipients decrypt it with the reference, the dropped
/// one cannot, the old one stays with `--add`, and the data after the header is the old bytes.
/// In place keeps the file's mode.
#[test]
fn rekey_hands_a_reference_file_to_new_recipients() {
    let Some(bin) = reference() else { return };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    for k in ["a", "b", "c"] {
        let args = ["--sk", &format!("{k}.sec"), "--pk", &format!("{k}.pub")];
        let args = [&args[..], &["--nocrypt", "-f"]].concat();
        run(&bin, dir, "crypt4gh-keygen", &args, Path::new("/dev/null")).unwrap();
    }
    let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("plain"), &plain).unwrap();
    let enc = ["encrypt", "--recipient_pk", "a.pub"];
    let first = run(&bin, dir, "crypt4gh", &enc, &dir.join("plain")).unwrap();
    let file = dir.join("f.c4gh");
    std::fs::write(&file, &first).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let decrypt = |f: &Path, k: &str| {
        run(
            &bin,
            dir,
            "crypt4gh",
            &["decrypt", "--sk", &format!("{k}.sec")],
            f,
        )
    };

    rekey(&file, &["-i", "a.sec", "-R", "b.pub", "--force"])
        .current_dir(dir)
        .assert()
        .success()
        .stderr(contains(
            "now has 1 crypt4gh header packet(s); header 124 -> 124 bytes",
        ));
    let second = std::fs::read(&file).unwrap();
    assert!(
        data_of(&second) == data_of(&first),
        "the segments are the old bytes"
    );
    assert_ne!(second[..124], first[..124]);
    assert_eq!(decrypt(&file, "b").unwrap(), plain);
    assert!(decrypt(&file, "a").is_err(), "a was dropped");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);

    rekey(&file, &["-i", "b.sec", "--add", "-R", "c.pub", "-q"])
        .current_dir(dir)
        .assert()
        .success();
    let third = std::fs::read(&file).unwrap();
    assert_eq!(
        third[16..124],
        second[16..124],
        "--add keeps the old packet as it is"
    );
    assert!(data_of(&third) == data_of(&first));
    for k in ["b", "c"] {
        assert_eq!(decrypt(&file, k).unwrap(), plain, "{k}");
    }

    let out = dir.join("for-a.c4gh");
    rekey(&file, &["-i", "c.sec", "-R", "a.pub", "-q", "-o"])
        .arg(&out)
        .current_dir(dir)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        third,
        "-o leaves the input alone"
    );
    assert_eq!(decrypt(&out, "a").unwrap(), plain);
    assert!(decrypt(&out, "b").is_err());
}

/// An edit list (the reference's `rearrange`) survives a rekey: the new recipient's header
/// carries it, and the reference decrypts to the same slice.
#[test]
fn rekey_keeps_the_edit_list() {
    let Some(bin) = reference() else { return };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    for k in ["a", "b"] {
        let args = ["--sk", &format!("{k}.sec"), "--pk", &format!("{k}.pub")];
        let args = [&args[..], &["--nocrypt", "-f"]].concat();
        run(&bin, dir, "crypt4gh-keygen", &args, Path::new("/dev/null")).unwrap();
    }
    let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("plain"), &plain).unwrap();
    let whole = run(
        &bin,
        dir,
        "crypt4gh",
        &["encrypt", "--recipient_pk", "a.pub"],
        &dir.join("plain"),
    );
    std::fs::write(dir.join("whole.c4gh"), whole.unwrap()).unwrap();
    let args = ["rearrange", "--sk", "a.sec", "--range", "70000-80001"];
    let cut = run(&bin, dir, "crypt4gh", &args, &dir.join("whole.c4gh")).unwrap();
    let file = dir.join("cut.c4gh");
    std::fs::write(&file, &cut).unwrap();
    rekey(&file, &["-i", "a.sec", "-R", "b.pub", "--force", "-q"])
        .current_dir(dir)
        .assert()
        .success();
    let after = std::fs::read(&file).unwrap();
    assert!(data_of(&after) == data_of(&cut));
    let b = read_secret_keys(&std::fs::read(dir.join("b.sec")).unwrap(), "b", &NoAsk).unwrap();
    let opened = Header::parse(&after).unwrap().open(&b).unwrap();
    assert_eq!(opened.edit_list.unwrap().lengths(), &[4464, 10_000]);
    let got = run(&bin, dir, "crypt4gh", &["decrypt", "--sk", "b.sec"], &file).unwrap();
    assert_eq!(got, &plain[70_000..80_000]);
}

#[derive(Clone)]
struct NoAsk;

impl zseal::crypto::recipients::KeyPassphrase for NoAsk {
    fn passphrase(&self, _: &str) -> Option<String> {
        None
    }
}

/// What a crypt4gh rekey refuses, each with its reason, the file untouched: a key that opens no
/// packet, keys of another kind (-i and -r), --rotate, no -i, an output that exists without
/// --force, and handing the file away in place without --force (fine with -o).
#[test]
fn rekey_of_a_crypt4gh_file_refuses_what_it_cannot_do() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("hello.c4gh");
    let original = std::fs::read(fixture("crypt4gh/hello.c4gh")).unwrap();
    std::fs::write(&file, &original).unwrap();
    let alice = fixture("crypt4gh/alice.sec");
    let bob_pub = fixture("crypt4gh/bob.pub");
    let rsa_pub = std::fs::read_to_string(fixture("keys/rsa.pub")).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let exists = d.path().join("exists.c4gh");
    std::fs::write(&exists, b"keep").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "-i".into(),
                s(&fixture("keys/age.key")),
                "-R".into(),
                s(&bob_pub),
            ],
            "no identity matched any of the 2 recipient(s)",
        ),
        (
            vec![
                "-i".into(),
                s(&fixture("keys/rsa")),
                "-R".into(),
                s(&bob_pub),
            ],
            "crypt4gh takes ssh-ed25519 keys only",
        ),
        (
            vec!["-i".into(), s(&alice), "-r".into(), rsa_pub.trim().into()],
            "crypt4gh takes ssh-ed25519 keys only",
        ),
        (
            vec!["-i".into(), s(&alice), "-r".into(), s(&bob_pub)],
            "give a key file with -R",
        ),
        (
            vec![
                "-i".into(),
                s(&alice),
                "-R".into(),
                s(&bob_pub),
                "--rotate".into(),
            ],
            "--rotate is not available for crypt4gh",
        ),
        (
            vec!["-R".into(), s(&bob_pub)],
            "pass the key that opens it with -i",
        ),
        (
            vec![
                "-i".into(),
                s(&alice),
                "-R".into(),
                s(&bob_pub),
                "-o".into(),
                s(&exists),
            ],
            "already exists: use --force",
        ),
        (
            vec!["-i".into(), s(&alice), "-R".into(), s(&bob_pub)],
            "leave out the key that opened the file",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rekey(&file, &args).assert().code(1).stderr(contains(want));
        assert_eq!(std::fs::read(&file).unwrap(), original, "{want}");
    }
    assert_eq!(std::fs::read(&exists).unwrap(), b"keep");
    // To another file, giving it away is fine: the original stays.
    let out = d.path().join("for-bob.c4gh");
    rekey(
        &file,
        &["-i", &s(&alice), "-R", &s(&bob_pub), "-q", "-o", &s(&out)],
    )
    .assert()
    .success();
    let bob_key = std::fs::read(fixture("crypt4gh/bob.sec")).unwrap();
    let bob = read_secret_keys(&bob_key, "bob", &Pass).unwrap();
    let got = std::fs::read(&out).unwrap();
    assert!(Header::parse(&got).unwrap().open(&bob).is_ok());
    assert!(data_of(&got) == data_of(&original));
}

/// The fixture bob.sec's passphrase.
const FIXTURE_PASS: &str = "zseal fixture";

#[derive(Clone)]
struct Pass;

impl zseal::crypto::recipients::KeyPassphrase for Pass {
    fn passphrase(&self, _: &str) -> Option<String> {
        Some(FIXTURE_PASS.into())
    }
}
