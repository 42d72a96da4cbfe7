//! `zseal ls` (FORMAT.md §15, issue 57 §2): an archive's members as GNU `tar t` prints them in a
//! UTF-8 locale (odd names included), `--json` with each member's fields, and nothing printed
//! from a damaged container or a plaintext that is not a tar.

use std::path::Path;
use std::process::{Command, Stdio};

use assert_cmd::Command as Cmd;
use predicates::str::contains;

fn zseal() -> Cmd {
    Cmd::cargo_bin("zseal").unwrap()
}

/// A tree with names tar quotes: a backslash, a tab, a newline, a non-ASCII letter.
fn tree(root: &Path) {
    for (name, bytes) in [
        ("plain.txt", &b"plain\n"[..]),
        ("back\\slash", b"b"),
        ("tab\there", b"t"),
        ("new\nline", b"n"),
        ("caf\u{e9}/na\u{ef}ve.txt", b"accents"),
        ("empty", b""),
    ] {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink("plain.txt", root.join("link")).unwrap();
    // A hard link, and sizes that widen tar tv's owner/size column as it goes.
    std::fs::hard_link(root.join("plain.txt"), root.join("z-hard")).unwrap();
    std::fs::write(root.join("z-big"), vec![7u8; 12_345_678]).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let exe = root.join("z-setuid");
        std::fs::write(&exe, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4754)).unwrap();
    }
}

fn gnu(args: &[&str], dir: &Path, stdin: Option<&[u8]>) -> Vec<u8> {
    let mut c = Command::new("tar")
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("GNU tar");
    // Fed from a thread: tar's output may fill its pipe before it has read all its input.
    let mut input = c.stdin.take().unwrap();
    let data = stdin.map(<[u8]>::to_vec);
    let feeder = std::thread::spawn(move || {
        if let Some(b) = data {
            let _ = std::io::Write::write_all(&mut input, &b);
        }
    });
    let out = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// The tree of [`tree`] under `d/tree`, a key in `d/me.key`: (the tree, the key, its recipient).
fn scene(d: &Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let root = d.join("tree");
    std::fs::create_dir(&root).unwrap();
    tree(&root);
    let (key, recipient) = crate::common::keygen_file(d, "me.key");
    (root, key, recipient)
}

/// `tar` sealed into `d/NAME` for `recipient`, in chunks of 4 KiB.
fn seal(d: &Path, name: &str, recipient: &str, tar: &[u8]) -> std::path::PathBuf {
    let sealed = d.join(name);
    zseal()
        .args(["encrypt", "-q", "--chunk-size", "4K", "-r", recipient, "-o"])
        .arg(&sealed)
        .write_stdin(tar.to_vec())
        .assert()
        .success();
    sealed
}

#[test]
fn ls_prints_what_tar_t_prints() {
    let d = tempfile::tempdir().unwrap();
    let (root, key, recipient) = scene(d.path());
    for format in ["pax", "gnu"] {
        let tar = gnu(
            &[
                "--sort=name",
                &format!("--format={format}"),
                "-cf",
                "-",
                ".",
            ],
            &root,
            None,
        );
        let sealed = seal(d.path(), &format!("{format}.tar.zseal"), &recipient, &tar);
        let want = gnu(&["-tf", "-"], d.path(), Some(&tar));
        // Whether this machine's tar has a UTF-8 locale decides how it prints é: zseal prints it
        // as one does.
        if !String::from_utf8_lossy(&want).contains("caf\u{e9}") {
            eprintln!("no C.UTF-8 locale here: tar t prints é escaped; comparing the rest");
        }
        let out = zseal()
            .arg("ls")
            .arg(&sealed)
            .arg("-i")
            .arg(&key)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).unwrap();
        let want = String::from_utf8_lossy(&want).to_string();
        match want.contains("caf\u{e9}") {
            true => assert_eq!(got, want, "{format}"),
            false => assert_eq!(
                got.lines().filter(|l| l.is_ascii()).collect::<Vec<_>>(),
                want.lines()
                    .filter(|l| !l.contains("caf"))
                    .collect::<Vec<_>>(),
                "{format}"
            ),
        }
        // --long is tar tv, in the same time zone.
        let want_long = {
            let mut c = Command::new("tar")
                .args(["-tvf", "-"])
                .env("LC_ALL", "C.UTF-8")
                .env("TZ", "UTC")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(&mut c.stdin.take().unwrap(), &tar).unwrap();
            String::from_utf8_lossy(&c.wait_with_output().unwrap().stdout).to_string()
        };
        let long = zseal()
            .args(["ls", "-l", "-i"])
            .arg(&key)
            .arg(&sealed)
            .env("TZ", "UTC")
            .output()
            .unwrap();
        assert!(long.status.success());
        if want.contains("caf\u{e9}") {
            assert_eq!(
                String::from_utf8(long.stdout).unwrap(),
                want_long,
                "{format}"
            );
        }
        let json = zseal()
            .args(["ls", "--json", "-i"])
            .arg(&key)
            .arg(&sealed)
            .output()
            .unwrap();
        assert!(json.status.success());
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let by = |p: &str| {
            v.as_array()
                .unwrap()
                .iter()
                .find(|m| m["path"] == p)
                .unwrap_or_else(|| panic!("{format}: {p}"))
                .clone()
        };
        let plain = by("./plain.txt");
        assert_eq!(
            (plain["type"].as_str(), plain["size"].as_u64()),
            (Some("file"), Some(6))
        );
        assert_eq!(by("./link")["link"], "plain.txt");
        assert_eq!(by("./link")["type"], "symlink");
        assert_eq!(by("./empty")["size"], 0);
        assert_eq!(by("./caf\u{e9}/")["type"], "directory");
        assert_eq!(by("./new\nline")["size"], 1);
    }
}

#[test]
fn ls_of_a_damaged_container_or_of_no_tar_prints_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (root, key, recipient) = scene(d.path());
    let tar = gnu(&["--format=pax", "-cf", "-", "."], &root, None);
    let sealed = seal(d.path(), "a.tar.zseal", &recipient, &tar);
    // A byte of the last chunk changed: the list would be whole, and is not printed.
    let mut bytes = std::fs::read(&sealed).unwrap();
    let at = bytes.len() - 400;
    bytes[at] ^= 1;
    let damaged = d.path().join("damaged.zseal");
    std::fs::write(&damaged, &bytes).unwrap();
    zseal()
        .args(["ls", "-i"])
        .arg(&key)
        .arg(&damaged)
        .assert()
        .failure()
        .stdout("");
    // A container of something else.
    let other = d.path().join("other.zseal");
    zseal()
        .args(["encrypt", "-q", "-r", &recipient, "-o"])
        .arg(&other)
        .write_stdin(crate::common::noise(10_000, 4))
        .assert()
        .success();
    zseal()
        .args(["ls", "-i"])
        .arg(&key)
        .arg(&other)
        .assert()
        .failure()
        .stdout("")
        .stderr(contains("not a tar archive"));
}

/// `zseal cat A MEMBER` writes what `tar xO` writes; a directory, a link and a missing name are
/// refused by name; a container damaged after the member keeps no output file.
#[test]
fn cat_writes_one_member_as_tar_xo_does() {
    let d = tempfile::tempdir().unwrap();
    let (root, key, recipient) = scene(d.path());
    let tar = gnu(
        &["--sort=name", "--format=pax", "-cf", "-", "."],
        &root,
        None,
    );
    let sealed = seal(d.path(), "a.tar.zseal", &recipient, &tar);
    for name in [
        "./caf\u{e9}/na\u{ef}ve.txt",
        "caf\u{e9}/na\u{ef}ve.txt",
        "z-big",
        "empty",
    ] {
        let want = gnu(
            &["-xOf", "-", &format!("./{}", name.trim_start_matches("./"))],
            d.path(),
            Some(&tar),
        );
        let got = zseal()
            .args(["cat", "-i"])
            .arg(&key)
            .arg(&sealed)
            .arg(name)
            .output()
            .unwrap();
        assert!(
            got.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&got.stderr)
        );
        assert!(got.stdout == want, "{name}");
    }
    for (name, says) in [
        ("caf\u{e9}", "is a directory"),
        ("link", "no bytes of its own"),
        ("missing", "holds no member missing"),
    ] {
        zseal()
            .args(["cat", "-i"])
            .arg(&key)
            .arg(&sealed)
            .arg(name)
            .assert()
            .failure()
            .stderr(contains(says));
    }
    // Damaged after the member it writes: the end does not authenticate, and -o keeps nothing.
    let mut bytes = std::fs::read(&sealed).unwrap();
    let at = bytes.len() - 300;
    bytes[at] ^= 1;
    let damaged = d.path().join("damaged.zseal");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = d.path().join("out.txt");
    zseal()
        .args(["cat", "-i"])
        .arg(&key)
        .arg(&damaged)
        .arg("plain.txt")
        .arg("-o")
        .arg(&out)
        .assert()
        .failure();
    assert!(!out.exists(), "a damaged archive left its output");
    zseal()
        .args(["cat", "-i"])
        .arg(&key)
        .arg(&sealed)
        .arg("plain.txt")
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(std::fs::read(&out).unwrap(), b"plain\n");
}
