//! The habits of age, zstd and rclone users (issue 48, point 10): `-a` for age output, `encrypt
//! -i KEY`, `zseal -d`, ranges from the end, size suffixes, several inputs in one command, and
//! messages that blame the right thing.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

fn zseal() -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.env_remove("ZSEAL_PASSPHRASE");
    c
}

fn keys() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys")
}

fn public(name: &str) -> String {
    std::fs::read_to_string(keys().join(name))
        .unwrap()
        .trim()
        .to_string()
}

/// `-a` makes an armored age file; a container has no armored form, and the refusal says what
/// to add, before any output is created.
#[test]
fn armor_without_format_age_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("x.zseal");
    zseal()
        .args(["encrypt", "-a", "-r", &public("age.pub"), "-o"])
        .arg(&out)
        .write_stdin("hello")
        .assert()
        .code(1)
        .stderr(contains("-a/--armor").and(contains("add --format age")));
    assert!(!out.exists());
}

/// `encrypt -i KEY` seals to the key's own recipient, as `age -e -i` does: an age identity
/// (X25519 and post-quantum) and an OpenSSH private key (an encrypted one too, with no
/// passphrase asked: its public part is in the clear). The same key opens the file, and the
/// header names the recipient's kind.
#[test]
fn encrypt_to_an_identity_seals_to_its_own_recipient() {
    let d = tempfile::tempdir().unwrap();
    let pq = d.path().join("pq.key");
    zseal()
        .args(["keygen", "--pq", "-o"])
        .arg(&pq)
        .assert()
        .success();
    let cases = [
        (keys().join("age.key"), "X25519"),
        (pq.clone(), "mlkem768x25519"),
        (keys().join("ed25519"), "ssh-ed25519"),
        (keys().join("ed25519-encrypted"), "ssh-ed25519"),
        (keys().join("rsa"), "ssh-rsa"),
    ];
    for (i, (key, kind)) in cases.iter().enumerate() {
        let f = d.path().join(format!("{i}.zseal"));
        zseal()
            .args(["encrypt", "-i"])
            .arg(key)
            .arg("-o")
            .arg(&f)
            .write_stdin("to myself")
            .assert()
            .success();
        zseal()
            .arg("inspect")
            .arg(&f)
            .assert()
            .success()
            .stdout(contains(*kind));
        if key.ends_with("ed25519-encrypted") {
            continue; // opening it asks for the key's passphrase on the terminal
        }
        zseal()
            .args(["decrypt", "-i"])
            .arg(key)
            .arg(&f)
            .assert()
            .success()
            .stdout("to myself");
    }
}

/// A public key given to `encrypt -i` is named as one, with the option that takes it.
#[test]
fn encrypt_to_a_public_key_file_given_as_identity_says_use_r() {
    zseal()
        .args(["encrypt", "-i"])
        .arg(keys().join("age.pub"))
        .args(["-o", "-"])
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("this is a public key").and(contains("give it with -r")));
}

fn pw() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/passphrase.txt")
}

/// A container of `text` sealed with the fixtures' passphrase.
fn sealed(text: &str) -> Vec<u8> {
    let out = zseal()
        .args(["encrypt", "--passphrase-file"])
        .arg(pw())
        .write_stdin(text)
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// `zseal -d FILE` and `zseal --decrypt FILE` decrypt, as `age -d` and `zstd -d` do, from a file
/// and from a pipe, and `zseal --help` says so.
#[test]
fn dash_d_decrypts_like_age_and_zstd() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("n.zseal");
    std::fs::write(&f, sealed("habit")).unwrap();
    for flag in ["-d", "--decrypt"] {
        zseal()
            .arg(flag)
            .arg("--passphrase-file")
            .arg(pw())
            .arg(&f)
            .assert()
            .success()
            .stdout("habit");
    }
    zseal()
        .args(["-d", "--passphrase-file"])
        .arg(pw())
        .pipe_stdin(&f)
        .unwrap()
        .assert()
        .success()
        .stdout("habit");
    zseal()
        .arg("--help")
        .assert()
        .success()
        .stdout(contains("-d, --decrypt").and(contains("zseal -d")));
}

/// `--range -LEN` gives the last LEN bytes (as `tail -c`), `..END` the first END bytes, from a
/// container and from an age file; more than the file gives all of it. From a pipe, `-LEN` is
/// refused (its length is known only at its end), naming `tail -c`.
#[test]
fn ranges_from_the_end_and_from_the_start() {
    let d = tempfile::tempdir().unwrap();
    let plain: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    for format in ["zseal", "age"] {
        let f = d.path().join(format!("p.{format}"));
        zseal()
            .args(["encrypt", "--chunk-size", "64K", "--format", format, "-r"])
            .arg(public("age.pub"))
            .arg(&p)
            .arg("-o")
            .arg(&f)
            .assert()
            .success();
        let range = |r: &[&str]| {
            let out = zseal()
                .args(["decrypt", "-i"])
                .arg(keys().join("age.key"))
                .args(r)
                .arg(&f)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{r:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        let n = plain.len();
        assert!(
            range(&["--range", "-1000"]) == plain[n - 1000..],
            "{format}"
        );
        assert!(
            range(&["--range=-100K"]) == plain[n - 102_400..],
            "{format}"
        );
        assert!(range(&["--range", "-0"]).is_empty(), "{format}");
        let n_str = format!("-{n}");
        assert!(range(&["--range", &n_str]) == plain, "{format}");
        // Longer than the plaintext: refused, as a range past its end is (one rule).
        zseal()
            .args(["decrypt", "--range", "-10M", "-i"])
            .arg(keys().join("age.key"))
            .arg(&f)
            .assert()
            .code(1)
            .stderr(contains(format!(
                "the range -10485760 (the last 10485760 bytes) is longer than the plaintext ({n} bytes)"
            )));
        assert!(
            range(&["--range", "..70000"]) == plain[..70_000],
            "{format}"
        );
        zseal()
            .args(["decrypt", "--range", "-10", "-i"])
            .arg(keys().join("age.key"))
            .pipe_stdin(&f)
            .unwrap()
            .assert()
            .code(1)
            .stderr(contains("a pipe's length is known only at its end").and(contains("tail -c")));
    }
}

/// Sizes are binary whatever the spelling, as zstd reads them: `--chunk-size 1MB`, `1MiB`, `1M`
/// and `1048576` all make 1 MiB chunks (never 1,000,000 bytes, which is no power of two), and
/// `zseal --help` says so.
#[test]
fn one_mb_is_one_mib_and_help_says_so() {
    for size in ["1MB", "1MiB", "1M", "1m", "1048576"] {
        let out = zseal()
            .args(["encrypt", "--chunk-size", size, "--passphrase-file"])
            .arg(pw())
            .write_stdin("x")
            .output()
            .unwrap();
        assert!(out.status.success(), "{size}");
        zseal()
            .arg("inspect")
            .write_stdin(out.stdout)
            .assert()
            .success()
            .stdout(contains("chunk size:  1.0 MiB"));
    }
    zseal()
        .args(["encrypt", "--chunk-size", "1.5M"])
        .assert()
        .code(2)
        .stderr(contains("powers of 1024: 1M = 1MiB = 1MB"));
    zseal()
        .arg("--help")
        .assert()
        .success()
        .stdout(contains("1M = 1MiB = 1MB = 1,048,576 bytes"));
}

/// `zseal encrypt a.csv b.csv` seals each beside it (`--format age`: `.age`), `zseal decrypt
/// a.csv.zseal b.csv.zseal` writes `a.csv`, `b.csv`. Refused before anything is written: -o,
/// `-` among them, an existing output without --force (all named), a name without
/// .zseal/.age. A failing input leaves the others done, is named, and exits 1.
#[test]
fn several_inputs_each_to_its_own_output() {
    let d = tempfile::tempdir().unwrap();
    let at = |n: &str| d.path().join(n);
    std::fs::write(at("a.csv"), "1,2\n").unwrap();
    std::fs::write(at("b.csv"), "3,4\n").unwrap();
    let encrypt = |args: &[&str]| {
        let mut c = zseal();
        c.current_dir(d.path())
            .args(["encrypt", "-r", &public("age.pub")])
            .args(args);
        c
    };
    let decrypt = |args: &[&str]| {
        let mut c = zseal();
        c.current_dir(d.path())
            .args(["decrypt", "-i"])
            .arg(keys().join("age.key"))
            .args(args);
        c
    };
    encrypt(&["a.csv", "b.csv", "-o", "x"])
        .assert()
        .code(1)
        .stderr(contains("-o x names one output, but 2 inputs"));
    encrypt(&["a.csv", "-"])
        .assert()
        .code(1)
        .stderr(contains("cannot be one of several inputs"));
    encrypt(&["a.csv", "b.csv"]).assert().success();
    encrypt(&["--format", "age", "a.csv", "b.csv"])
        .assert()
        .success();
    for n in ["a.csv.zseal", "b.csv.zseal", "a.csv.age", "b.csv.age"] {
        assert!(at(n).exists(), "{n}");
    }
    encrypt(&["a.csv", "b.csv"])
        .assert()
        .code(1)
        .stderr(contains("a.csv.zseal, b.csv.zseal already exist").and(contains("--force")));
    encrypt(&["-f", "a.csv", "b.csv"]).assert().success();
    // Every output checked before any is written: b.csv exists, so a.csv is not written either.
    std::fs::remove_file(at("a.csv")).unwrap();
    decrypt(&["a.csv.zseal", "b.csv.zseal"])
        .assert()
        .code(1)
        .stderr(contains("b.csv already exists"));
    assert!(!at("a.csv").exists());
    std::fs::remove_file(at("b.csv")).unwrap();
    decrypt(&["a.csv.zseal", "b.csv.age"]).assert().success();
    assert_eq!(std::fs::read(at("a.csv")).unwrap(), b"1,2\n");
    assert_eq!(std::fs::read(at("b.csv")).unwrap(), b"3,4\n");
    decrypt(&["a.csv.zseal", "b.csv"])
        .assert()
        .code(1)
        .stderr(contains("does not end in .zseal, .age or .c4gh"));
    // One fails, the other is done; the failure is named and the exit status is 1.
    std::fs::write(at("junk.zseal"), "not sealed").unwrap();
    std::fs::remove_file(at("a.csv")).unwrap();
    decrypt(&["junk.zseal", "a.csv.zseal"])
        .assert()
        .code(1)
        .stderr(contains("junk.zseal: reading").and(contains("1 of 2 inputs failed (junk.zseal)")));
    assert!(at("a.csv").exists() && !at("junk").exists());
    // A missing input is named before anything is written (issue 59 §3).
    encrypt(&["-f", "c.csv", "a.csv"])
        .assert()
        .code(1)
        .stderr(contains("c.csv does not exist (nothing was written)"));
    assert!(at("a.csv.zseal").exists());
}

/// Several inputs with a passphrase file: asked (read) for each, and each opens.
#[test]
fn several_inputs_with_a_passphrase() {
    let d = tempfile::tempdir().unwrap();
    for n in ["x", "y"] {
        std::fs::write(d.path().join(n), n).unwrap();
    }
    let run = |sub: &str, files: &[&str]| {
        zseal()
            .current_dir(d.path())
            .arg(sub)
            .args(files)
            .arg("--passphrase-file")
            .arg(pw())
            .assert()
            .success();
    };
    run("encrypt", &["x", "y"]);
    for n in ["x", "y"] {
        std::fs::remove_file(d.path().join(n)).unwrap();
    }
    run("decrypt", &["x.zseal", "y.zseal"]);
    assert_eq!(std::fs::read(d.path().join("y")).unwrap(), b"y");
    zseal()
        .current_dir(d.path())
        .args(["decrypt", "x.zseal", "y.zseal", "--passphrase-file", "-"])
        .write_stdin("pw\n")
        .assert()
        .code(1)
        .stderr(contains("cannot give the key of several inputs"));
}

/// A flipped byte in the first data chunk, after a header that verified: decrypt, verify and a
/// range say the chunk failed authentication (damaged or tampered) and never blame the key.
#[test]
fn a_damaged_chunk_is_not_blamed_on_the_key() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p");
    std::fs::write(&p, vec![7u8; 200_000]).unwrap();
    let f = d.path().join("c.zseal");
    zseal()
        .args([
            "encrypt",
            "-c",
            "none",
            "--chunk-size",
            "64K",
            "-r",
            &public("age.pub"),
        ])
        .arg(&p)
        .arg("-o")
        .arg(&f)
        .assert()
        .success();
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[1000] ^= 1; // inside chunk 0 (the header is ~200 bytes)
    std::fs::write(&f, &bytes).unwrap();
    for args in [
        &["decrypt", "-o", "out"][..],
        &["verify"][..],
        &["decrypt", "--range", "0..10", "-o", "out"][..],
    ] {
        let out = zseal()
            .current_dir(d.path())
            .args(args)
            .arg("-i")
            .arg(keys().join("age.key"))
            .arg(&f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("chunk 0 failed authentication: it is damaged or was tampered with"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("key is wrong") && !err.contains("wrong key"),
            "{err}"
        );
    }
    assert!(!d.path().join("out").exists());
}

/// Other tools' flags are answered with zseal's names (issue 59 §3), exit 2, nothing written;
/// `-e` encrypts as `-d` decrypts.
#[test]
fn other_tools_flags_are_named_and_dash_e_encrypts() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("big.bin");
    std::fs::write(&input, b"some bytes").unwrap();
    let input = input.to_str().unwrap();
    for (args, want) in [
        (
            &["encrypt", "-p", input][..],
            "a passphrase is zseal's default",
        ),
        (&["-e", "--symmetric", input], "--passphrase-file FILE"),
        (&["encrypt", "-k", input], "never removes its input"),
        (&["encrypt", "--rm", input], "never removes its input"),
        (&["encrypt", "-T0", input], "-j 0, the default"),
        (&["encrypt", "-19", input], "-c zstd:19"),
        (&["encrypt", "-c", input], "zseal's -c is the compression"),
    ] {
        zseal()
            .args(args)
            .current_dir(d.path())
            .assert()
            .code(2)
            .stderr(contains(want));
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{args:?} wrote something");
    }
    let out = d.path().join("big.bin.zseal");
    zseal()
        .args(["-e", "--passphrase-file"])
        .arg(pw())
        .args([input, "-o"])
        .arg(&out)
        .assert()
        .success();
    zseal()
        .args(["-d", "--passphrase-file"])
        .arg(pw())
        .arg(&out)
        .assert()
        .success()
        .stdout("some bytes");
}

/// `zseal encrypt IN OUT`, as `cp` or `gpg -o` users type it, is refused before anything is
/// written, suggesting -o (issue 59 §3); so is any missing input of several.
#[test]
fn a_missing_second_input_is_taken_for_an_output() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("report.log");
    std::fs::write(&input, b"log lines").unwrap();
    zseal()
        .args(["encrypt", "--passphrase-file"])
        .arg(pw())
        .arg(&input)
        .arg(d.path().join("report.log.enc"))
        .assert()
        .code(1)
        .stderr(contains("report.log.enc does not exist: did you mean -o"));
    zseal()
        .args(["encrypt", "--passphrase-file"])
        .arg(pw())
        .arg(d.path().join("gone.log"))
        .arg(&input)
        .assert()
        .code(1)
        .stderr(contains("gone.log does not exist (nothing was written)"));
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing was written");
    // Every input failing says that none was written.
    for junk in ["x.zseal", "y.zseal"] {
        std::fs::write(d.path().join(junk), "not sealed").unwrap();
    }
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(pw())
        .args(["x.zseal", "y.zseal"])
        .current_dir(d.path())
        .assert()
        .code(1)
        .stderr(contains(
            "2 of 2 inputs failed (x.zseal, y.zseal); none was written",
        ));
}

/// An age file with zstd inside says so when written (issue 59 §1): its recipient's `age -d`
/// alone gives a zstd stream; `-c none` writes a plain file, without the note; -q silences it.
#[test]
fn an_age_file_with_zstd_inside_says_how_it_is_read() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r.age");
    let run = |extra: &[&str]| {
        zseal()
            .args([
                "encrypt",
                "--format",
                "age",
                "-r",
                &public("age.pub"),
                "-f",
                "-o",
            ])
            .arg(&out)
            .args(extra)
            .write_stdin("a,b\n1,2\n")
            .output()
            .unwrap()
    };
    let note = "its recipient reads it with `age -d … | zstd -d`";
    let err = |o: std::process::Output| String::from_utf8(o.stderr).unwrap();
    assert!(err(run(&[])).contains(note));
    assert!(!err(run(&["-c", "none"])).contains(note));
    assert!(!err(run(&["-q"])).contains(note));
}

/// A compressed file given to decrypt is named as one, with its decompressor (issue 59 §6).
#[test]
fn a_compressed_file_is_not_called_damaged() {
    let d = tempfile::tempdir().unwrap();
    let zst = d.path().join("notes.txt.zst");
    std::fs::write(&zst, b"\x28\xb5\x2f\xfd\x04\x58\x41\x00\x00hello\n").unwrap();
    let gz = d.path().join("notes.txt.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xcb, 0x48]).unwrap();
    for (file, want) in [
        (&zst, "this is zstd data"),
        (&gz, "decompress it with `gzip -d`"),
    ] {
        zseal()
            .args(["decrypt", "--passphrase-file"])
            .arg(pw())
            .arg(file)
            .assert()
            .code(1)
            .stderr(contains(want));
    }
}
