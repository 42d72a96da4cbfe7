//! Where outputs go when the path is not a plain new file (README "Where outputs go"): FIFOs,
//! devices and descriptors are written in place and keep their type; a link's target is written
//! and the link kept; links to nothing, hard-linked files, directories and sockets are refused
//! with nothing written. Every command that writes follows the same rules.
#![cfg(unix)]

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::str::contains;

use crate::common;

fn zseal() -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.env_remove("ZSEAL_PASSPHRASE");
    c
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn sample() -> Vec<u8> {
    std::fs::read(fixtures().join("sample.log")).unwrap()
}

/// A container of fixtures/sample.log under the fixtures' passphrase, in `dir`.
fn sealed(dir: &Path) -> PathBuf {
    let out = dir.join("s.zseal");
    decrypt_like("encrypt", &fixtures().join("sample.log"), &out, &[])
        .assert()
        .success();
    out
}

/// `zseal VERB INPUT -o OUT --passphrase-file … -q EXTRA…`.
fn decrypt_like(verb: &str, input: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = zseal();
    c.arg(verb)
        .arg(input)
        .arg("-o")
        .arg(out)
        .arg("--passphrase-file")
        .arg(fixtures().join("passphrase.txt"))
        .arg("-q")
        .args(extra);
    c
}

/// Runs `BEFORE zseal ARGS --passphrase-file … AFTER` in a shell (redirections, a umask) and
/// checks that it succeeded.
fn in_shell(before: &str, args: &str, after: &str) {
    let script = format!(
        "{before} {} {args} --passphrase-file {} {after}",
        assert_cmd::cargo::cargo_bin("zseal").display(),
        fixtures().join("passphrase.txt").display(),
    );
    let ok = std::process::Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(ok.success(), "{script}");
}

/// The temporary outputs left in `dir`.
fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("zseal-partial"))
        .collect()
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", p.display());
}

/// A FIFO is opened and written, never replaced: the reader gets the whole plaintext and the
/// node is still a FIFO. It needs --force, as any existing output does.
#[test]
fn a_fifo_is_written_in_place_with_force() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    decrypt_like("decrypt", &src, &fifo, &[])
        .assert()
        .code(1)
        .stderr(contains(
            "already exists (a FIFO, which would be written into",
        ))
        .stderr(contains("use --force"));
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    decrypt_like("decrypt", &src, &fifo, &["--force"])
        .assert()
        .success();
    assert_eq!(reader.join().unwrap(), sample());
    let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(t.is_fifo(), "the FIFO is still a FIFO: {t:?}");
    // Encrypting into a FIFO gives the reader a whole container.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    decrypt_like("encrypt", &fixtures().join("sample.log"), &fifo, &["-f"])
        .assert()
        .success();
    let container = reader.join().unwrap();
    let back = d.path().join("back");
    std::fs::write(d.path().join("c.zseal"), &container).unwrap();
    decrypt_like("decrypt", &d.path().join("c.zseal"), &back, &[])
        .assert()
        .success();
    assert_eq!(std::fs::read(back).unwrap(), sample());
}

/// `/dev/null` takes the output without --force and stays a character device, for every command
/// that writes data.
#[test]
fn dev_null_needs_no_force_and_stays_a_device() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let null = Path::new("/dev/null");
    let before = std::fs::metadata(null).unwrap();
    decrypt_like("decrypt", &src, null, &[]).assert().success();
    decrypt_like("encrypt", &fixtures().join("sample.log"), null, &[])
        .assert()
        .success();
    zseal()
        .args(["rekey", "--new-passphrase-file"])
        .arg(fixtures().join("passphrase.txt"))
        .arg("--passphrase-file")
        .arg(fixtures().join("passphrase.txt"))
        .arg(&src)
        .arg("-o")
        .arg(null)
        .assert()
        .success();
    let after = std::fs::metadata(null).unwrap();
    assert!(after.file_type().is_char_device());
    assert_eq!((after.rdev(), after.ino()), (before.rdev(), before.ino()));
}

/// Device nodes made in a temporary directory (needs CAP_MKNOD, so skipped without it): a second
/// name of the null device behaves as /dev/null; another device (zero) needs --force and is
/// written into, keeping its type and number.
#[test]
fn device_nodes_are_written_in_place() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let (null, zero) = (d.path().join("null"), d.path().join("zero"));
    let made = |p: &Path, minor: &str| {
        std::process::Command::new("mknod")
            .arg(p)
            .args(["c", "1", minor])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !made(&null, "3") || !made(&zero, "5") {
        eprintln!("skipped: mknod needs the privilege to make device nodes");
        return;
    }
    decrypt_like("decrypt", &src, &null, &[]).assert().success();
    decrypt_like("decrypt", &src, &zero, &[])
        .assert()
        .code(1)
        .stderr(contains("(a character device, which would be written into"));
    decrypt_like("decrypt", &src, &zero, &["-f"])
        .assert()
        .success();
    for (p, minor) in [(&null, 3), (&zero, 5)] {
        let m = std::fs::symlink_metadata(p).unwrap();
        assert!(
            m.file_type().is_char_device(),
            "{} kept its type",
            p.display()
        );
        assert_eq!(m.rdev() & 0xff, minor, "{} kept its number", p.display());
    }
}

/// A descriptor named by path is written like standard output: through a pipe, into the file the
/// shell opened (appending to what is there), and into bash's process substitution.
#[test]
fn descriptors_are_written_like_standard_output() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let out = decrypt_like("decrypt", &src, Path::new(name), &[])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        assert_eq!(out.stdout, sample(), "{name} through a pipe");
    }
    // `>> file`: what is there stays, the plaintext follows.
    let log = d.path().join("log");
    std::fs::write(&log, "before\n").unwrap();
    in_shell(
        "",
        &format!("decrypt {} -o /dev/stdout -q", src.display()),
        &format!(">> {}", log.display()),
    );
    let mut want = b"before\n".to_vec();
    want.extend(sample());
    assert_eq!(std::fs::read(&log).unwrap(), want);
    assert!(std::fs::symlink_metadata(&log).unwrap().is_file());
}

/// Standard output that is a regular file, and `-o` a new file: the workers write the frames
/// into it by offset, and the shared position is left after the container, so
/// that what the shell writes next follows it (`{ zseal …; echo tail; } > f`). Opened for
/// appending (`>>`), the container is written in order after what was there. Each container
/// decrypts to the input.
#[test]
fn encrypting_into_a_file_leaves_its_position_at_the_end() {
    let d = tempfile::tempdir().unwrap();
    let input = fixtures().join("sample.log");
    let args = format!("encrypt {} -j 2 --chunk-size 16K -q", input.display());
    let opens = |bytes: &[u8]| {
        let c = d.path().join("c.zseal");
        std::fs::write(&c, bytes).unwrap();
        let out = d.path().join("c.out");
        decrypt_like("decrypt", &c, &out, &["--force"])
            .assert()
            .success();
        std::fs::read(&out).unwrap() == sample()
    };
    let f = d.path().join("f");
    in_shell("{", &args, &format!("; echo tail; }} > {}", f.display()));
    let got = std::fs::read(&f).unwrap();
    let (container, tail) = got.split_at(got.len() - 5);
    assert_eq!(tail, b"tail\n");
    assert!(opens(container), "> f");
    let g = d.path().join("g");
    std::fs::write(&g, "head\n").unwrap();
    in_shell("", &args, &format!(">> {}", g.display()));
    let got = std::fs::read(&g).unwrap();
    assert_eq!(&got[..5], b"head\n");
    assert!(opens(&got[5..]), ">> g");
    let h = d.path().join("h.zseal");
    in_shell("", &format!("{args} -o {}", h.display()), "");
    assert!(opens(&std::fs::read(&h).unwrap()), "-o h");
    // Raw frames of 2 MiB and more, written by the workers themselves.
    let noise = d.path().join("noise");
    let bytes = common::noise((6 << 20) + 5, 1);
    std::fs::write(&noise, &bytes).unwrap();
    let k = d.path().join("k");
    let args = format!("encrypt {} -j 2 --chunk-size 2M -q", noise.display());
    in_shell("{", &args, &format!("; echo tail; }} > {}", k.display()));
    let got = std::fs::read(&k).unwrap();
    let (container, tail) = got.split_at(got.len() - 5);
    assert_eq!(tail, b"tail\n");
    let c = d.path().join("k.zseal");
    std::fs::write(&c, container).unwrap();
    let out = d.path().join("k.out");
    decrypt_like("decrypt", &c, &out, &[]).assert().success();
    assert!(std::fs::read(&out).unwrap() == bytes, "2 MiB frames");
}

/// A symbolic link is followed: the target is replaced and the link kept, so that what others
/// read through the link is the new file; its mode stays within the umask's.
#[test]
fn a_link_is_followed_and_kept() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    std::fs::create_dir(d.path().join("real")).unwrap();
    let target = d.path().join("real/plain");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink("real/plain", &link).unwrap();
    decrypt_like("decrypt", &src, &link, &[])
        .assert()
        .code(1)
        .stderr(contains("already exists: use --force"));
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    decrypt_like("decrypt", &src, &link, &["-f"])
        .assert()
        .success();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("real/plain"),
        "the link is unchanged"
    );
    assert_eq!(std::fs::read(&target).unwrap(), sample());
    let mode = std::fs::metadata(&target).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o640, "the target keeps its mode");
    // No temporary file is left beside the link or the target.
    for dir in [d.path(), &d.path().join("real")] {
        assert!(partials(dir).is_empty(), "{:?}", partials(dir));
    }
}

/// What cannot be written as asked is refused before anything is written, the path left as it
/// was: a link to nothing, a file with other hard links, a directory, a socket.
#[test]
fn unwritable_destinations_are_refused_untouched() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let dangling = d.path().join("dangling");
    std::os::unix::fs::symlink("nowhere", &dangling).unwrap();
    decrypt_like("decrypt", &src, &dangling, &["-f"])
        .assert()
        .code(1)
        .stderr(contains("symbolic link to a file that does not exist"));
    assert!(!d.path().join("nowhere").exists());
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());

    let (one, two) = (d.path().join("one"), d.path().join("two"));
    std::fs::write(&one, "shared").unwrap();
    std::fs::hard_link(&one, &two).unwrap();
    decrypt_like("decrypt", &src, &one, &["-f"])
        .assert()
        .code(1)
        .stderr(contains("has 2 hard links"));
    assert_eq!(std::fs::read(&one).unwrap(), b"shared");
    assert_eq!(std::fs::metadata(&one).unwrap().nlink(), 2);

    decrypt_like("decrypt", &src, d.path(), &["-f"])
        .assert()
        .code(1)
        .stderr(contains("is a directory"));

    let sock = d.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    decrypt_like("decrypt", &src, &sock, &["-f"])
        .assert()
        .code(1)
        .stderr(contains("it is a socket"));
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
    assert!(partials(d.path()).is_empty(), "{:?}", partials(d.path()));
}

/// A replaced file never gets a mode wider than a new file would (0666 & !umask): a planted
/// world-writable file does not make the plaintext world-readable.
#[test]
fn a_replaced_file_is_no_wider_than_the_umask_allows() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let planted = d.path().join("planted");
    std::fs::write(&planted, "x").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    in_shell(
        "umask 077; exec",
        &format!("decrypt -f -q {} -o {}", src.display(), planted.display()),
        "",
    );
    assert_eq!(std::fs::metadata(&planted).unwrap().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read(&planted).unwrap(), sample());
}

/// In-place rekey through a link changes the file the link leads to (the revoked key no longer
/// opens it) and keeps the link; through a file with another hard link it is refused, because
/// the other name would go on opening with the revoked key.
#[test]
fn rekey_in_place_follows_links_and_refuses_hard_links() {
    let d = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = common::keygen_file(d.path(), "alice.key");
    let (bob, bob_pub) = common::keygen_file(d.path(), "bob.key");
    std::fs::create_dir(d.path().join("data")).unwrap();
    std::fs::create_dir(d.path().join("links")).unwrap();
    let real = d.path().join("data/real.zseal");
    zseal()
        .arg("encrypt")
        .arg(fixtures().join("sample.log"))
        .args(["-r", &alice_pub, "-r", &bob_pub, "-q", "-o"])
        .arg(&real)
        .assert()
        .success();
    let link = d.path().join("links/shared.zseal");
    std::os::unix::fs::symlink("../data/real.zseal", &link).unwrap();
    let opens = |key: &Path, file: &Path| {
        zseal()
            .arg("decrypt")
            .arg("-i")
            .arg(key)
            .arg(file)
            .args(["-o", "/dev/null"])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(opens(&bob, &real));
    zseal()
        .arg("rekey")
        .arg(&link)
        .arg("-i")
        .arg(&alice)
        .args(["-r", &alice_pub])
        .assert()
        .success()
        .stderr(contains("now has 1 key stanza(s)"));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(
        !opens(&bob, &real),
        "bob's key was revoked on the real file"
    );
    assert!(opens(&alice, &link));

    let other = d.path().join("data/other-name.zseal");
    std::fs::hard_link(&real, &other).unwrap();
    let before = std::fs::read(&real).unwrap();
    zseal()
        .arg("rekey")
        .arg(&real)
        .arg("-i")
        .arg(&alice)
        .args(["-r", &bob_pub])
        .assert()
        .code(1)
        .stderr(contains("has 2 hard links"));
    assert_eq!(std::fs::read(&real).unwrap(), before);
    assert_eq!(std::fs::read(&other).unwrap(), before);
}

/// keygen and dict train follow the same rules: a key is never written over an existing file or
/// through a link to nothing, and lands with mode 0600 through a link; a dictionary written
/// through a link keeps the link.
#[test]
fn keygen_and_dict_follow_the_same_rules() {
    let d = tempfile::tempdir().unwrap();
    let dangling = d.path().join("key-link");
    std::os::unix::fs::symlink("elsewhere.key", &dangling).unwrap();
    zseal()
        .arg("keygen")
        .arg("-o")
        .arg(&dangling)
        .assert()
        .code(1)
        .stderr(contains("symbolic link to a file that does not exist"));
    assert!(!d.path().join("elsewhere.key").exists());
    let (key, _) = common::keygen_file(d.path(), "me.key");
    assert_eq!(std::fs::metadata(&key).unwrap().mode() & 0o777, 0o600);
    let before = std::fs::read(&key).unwrap();
    zseal()
        .arg("keygen")
        .arg("-o")
        .arg(&key)
        .assert()
        .code(1)
        .stderr(contains("a key file is never overwritten"));
    assert_eq!(std::fs::read(&key).unwrap(), before);
    let out = zseal()
        .args(["keygen", "-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("AGE-SECRET-KEY-1"));

    // dict train through a link to an existing file, with --force.
    // One sample a line (the records' own test corpus shape).
    let samples = d.path().join("samples.ndjson");
    let lines: String = (0..3000)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"user\":\"user{}\",\"event\":\"login\",\"ok\":true}}\n",
                i % 97
            )
        })
        .collect();
    std::fs::write(&samples, lines).unwrap();
    let dict = d.path().join("real.dict");
    std::fs::write(&dict, "old").unwrap();
    let link = d.path().join("dict-link");
    std::os::unix::fs::symlink("real.dict", &link).unwrap();
    zseal()
        .args(["dict", "train", "--size", "4K"])
        .arg(&samples)
        .arg("-o")
        .arg(&link)
        .arg("-f")
        .assert()
        .success();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_ne!(std::fs::read(&dict).unwrap(), b"old");
}

/// A link in a sticky, world-writable directory that belongs to another user is not followed
/// (it may have been planted there to redirect the write); needs root to make such a link.
#[test]
fn a_planted_link_in_a_shared_directory_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let shared = d.path().join("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = shared.join("out");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let chowned = std::process::Command::new("chown")
        .args(["-h", "54321"])
        .arg(&link)
        .status()
        .is_ok_and(|s| s.success());
    if !chowned {
        eprintln!("skipped: giving the link to another user needs root");
        return;
    }
    decrypt_like("decrypt", &src, &link, &["-f"])
        .assert()
        .code(1)
        .stderr(contains("owned by another user in a shared directory"));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    // The same link in a private directory is followed.
    let private = d.path().join("mine");
    std::fs::create_dir(&private).unwrap();
    std::fs::rename(&link, private.join("out")).unwrap();
    decrypt_like("decrypt", &src, &private.join("out"), &["-f"])
        .assert()
        .success();
    assert_eq!(std::fs::read(&victim).unwrap(), sample());
}

/// A FIFO another user made in a sticky directory others can write to, world-writable (/tmp)
/// or group-writable (a team's 1770 directory, review 4 finding 5), is not written into, even
/// with -f and through a link of this user's (it may have been planted to read the plaintext);
/// the same FIFO of this user's own is. Needs root to give the FIFO away.
#[test]
fn a_planted_fifo_in_a_shared_directory_is_not_written() {
    for mode in [0o1777, 0o1770] {
        a_planted_fifo_is_not_written(mode);
    }
}

fn a_planted_fifo_is_not_written(mode: u32) {
    let d = tempfile::tempdir().unwrap();
    let src = sealed(d.path());
    let shared = d.path().join("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).unwrap();
    let fifo = shared.join("out");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    let chowned = std::process::Command::new("chown")
        .arg("54321")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !chowned {
        eprintln!("skipped: giving the FIFO to another user needs root");
        return;
    }
    let mine = d.path().join("link-to-fifo");
    std::os::unix::fs::symlink(&fifo, &mine).unwrap();
    for out in [&fifo, &mine] {
        // Nothing reads the FIFO: a write into it would block, so a pass here means refused.
        decrypt_like("decrypt", &src, out, &["-f"])
            .timeout(std::time::Duration::from_secs(30))
            .assert()
            .code(1)
            .stderr(contains(
                "it is a FIFO owned by another user in a shared directory (sticky and \
                 writable by others), which zseal does not write into",
            ));
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // Given back to this user, it is written in place.
    std::os::unix::fs::chown(&fifo, Some(nix::unistd::geteuid().as_raw()), None).unwrap();
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::read(fifo).unwrap()
    });
    decrypt_like("decrypt", &src, &fifo, &["-f"])
        .assert()
        .success();
    assert_eq!(reader.join().unwrap(), sample());
}
