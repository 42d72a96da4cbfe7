//! Post-quantum recipients (FORMAT.md §1.1, `mlkem768x25519`): `zseal keygen --pq`, both
//! formats, interoperability with typage (npm age-encryption, run by Node: the age of age 1.3's
//! hybrid recipients, scripts/test-all installs it into target/typage), and the refusals: a
//! classic recipient beside a post-quantum one, a cut or mistyped `age1pq1…`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::Command as Cmd;
use predicates::str::contains;

fn zseal() -> Cmd {
    Cmd::cargo_bin("zseal").unwrap()
}

/// typage's package directory, when Node and the package are there (required in CI).
fn typage() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/typage/node_modules/age-encryption");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if node && dir.join("dist/index.js").exists() {
        return Some(dir);
    }
    if std::env::var_os("ZSEAL_REQUIRE_PEERS").is_some() {
        panic!(
            "typage is not installed in {} (scripts/test-all installs it)",
            dir.display()
        );
    }
    None
}

/// Runs tests/peers/typage.mjs with `args`, `input` on its standard input; its output.
fn run_typage(dir: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/typage.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .args(args)
        .env("TYPAGE", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    assert!(out.status.success(), "typage {args:?} failed");
    out.stdout
}

/// `zseal keygen --pq` into `dir/name`: the file and its recipient.
fn pq_key(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    zseal()
        .args(["keygen", "--pq", "-o"])
        .arg(&key)
        .assert()
        .success();
    let out = zseal().arg("keygen").arg("-y").arg(&key).output().unwrap();
    let public = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(public.starts_with("age1pq1"), "{public}");
    (key, public)
}

#[test]
fn a_pq_key_seals_both_formats_and_nothing_classic_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = pq_key(dir.path(), "pq.key");
    let text = std::fs::read_to_string(&key).unwrap();
    assert!(text.contains("AGE-SECRET-KEY-PQ-1"));
    let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, &plain).unwrap();
    for (name, extra) in [
        ("a.zseal", &[][..]),
        ("b.age", &["--format", "age"][..]),
        ("c.age", &["--format", "age", "-c", "none"][..]),
    ] {
        let out = dir.path().join(name);
        zseal()
            .args(["encrypt", "-q", "-r", &public])
            .args(extra)
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let got = zseal()
            .args(["decrypt", "-i"])
            .arg(&key)
            .arg(&out)
            .output()
            .unwrap();
        assert!(got.status.success(), "{name}");
        assert_eq!(got.stdout, plain, "{name}");
    }
    // A recipients file holding the PQ key works; a classic key beside it is refused, naming
    // the rule, and writes nothing.
    let list = dir.path().join("list");
    std::fs::write(&list, format!("# team\n{public}\n")).unwrap();
    zseal()
        .args(["encrypt", "-q", "-R"])
        .arg(&list)
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("d.zseal"))
        .assert()
        .success();
    let (_, classic) = crate::common::keygen_file(dir.path(), "classic.key");
    let mixed = dir.path().join("mixed.zseal");
    zseal()
        .args(["encrypt", "-q", "-r", &public, "-r", &classic])
        .arg(&input)
        .arg("-o")
        .arg(&mixed)
        .assert()
        .failure()
        .stderr(contains("cannot be mixed with classic"));
    assert!(!mixed.exists());
    // rekey --add: a classic key into a PQ file is refused; a second PQ key is added.
    let (key2, public2) = pq_key(dir.path(), "pq2.key");
    let a = dir.path().join("a.zseal");
    zseal()
        .args(["rekey", "--add", "-i"])
        .arg(&key)
        .args(["-r", &classic, "-o"])
        .arg(dir.path().join("x.zseal"))
        .arg(&a)
        .assert()
        .failure()
        .stderr(contains("cannot be mixed with classic"));
    let two = dir.path().join("two.zseal");
    zseal()
        .args(["rekey", "--add", "-i"])
        .arg(&key)
        .args(["-r", &public2, "-o"])
        .arg(&two)
        .arg(&a)
        .assert()
        .success();
    let got = zseal()
        .args(["decrypt", "-i"])
        .arg(&key2)
        .arg(&two)
        .output()
        .unwrap();
    assert_eq!(got.stdout, plain);
    // A cut recipient, a mistyped one: named, with what to check.
    let mut typo = public.clone().into_bytes();
    typo[100] = if typo[100] == b'x' { b'y' } else { b'x' };
    let typo = String::from_utf8(typo).unwrap();
    for bad in [&public[..public.len() - 7], &typo[..]] {
        zseal()
            .args(["encrypt", "-q", "-r", bad])
            .arg(&input)
            .arg("-o")
            .arg(dir.path().join("bad.zseal"))
            .assert()
            .failure()
            .stderr(contains("invalid post-quantum recipient 'age1pq1"));
    }
}

#[test]
fn typage_and_zseal_read_each_other() {
    let Some(dir) = typage() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let plain: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
    // typage's key: typage seals, zseal opens.
    let line = String::from_utf8(run_typage(&dir, &["keygen"], b"")).unwrap();
    let (identity, recipient) = line.trim().split_once(' ').unwrap();
    let sealed = run_typage(&dir, &["encrypt", recipient], &plain);
    let file = tmp.path().join("t.age");
    std::fs::write(&file, &sealed).unwrap();
    let key = tmp.path().join("t.key");
    std::fs::write(&key, format!("{identity}\n")).unwrap();
    let got = zseal()
        .args(["decrypt", "-i"])
        .arg(&key)
        .arg(&file)
        .output()
        .unwrap();
    assert!(got.status.success());
    assert_eq!(got.stdout, plain);
    // zseal's key: zseal seals a plain age file, typage opens it.
    let (zkey, zpublic) = pq_key(tmp.path(), "z.key");
    let zfile = tmp.path().join("z.age");
    zseal()
        .args([
            "encrypt", "-q", "--format", "age", "-c", "none", "-r", &zpublic,
        ])
        .arg(tmp.path().join("t.age"))
        .arg("-o")
        .arg(&zfile)
        .assert()
        .success();
    let zidentity = std::fs::read_to_string(&zkey)
        .unwrap()
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY-PQ-1"))
        .unwrap()
        .to_string();
    let back = run_typage(
        &dir,
        &["decrypt", &zidentity],
        &std::fs::read(&zfile).unwrap(),
    );
    assert_eq!(back, sealed, "typage gives back what zseal sealed");
}
