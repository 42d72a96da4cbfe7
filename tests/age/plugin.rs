//! age plugins (FORMAT.md §1.1, "Plugin recipients"): the project's test plugin
//! (tools/age-plugin-zsealtest, which misbehaves on request) and a real third-party one from
//! crates.io, age-plugin-xwing (scripts/install-peers), exchanged with stock `age` both ways, in
//! both formats, through encrypt, decrypt, verify, inspect and rekey. A plugin that dies,
//! refuses, prints garbage, is missing or asks what nobody can answer fails the command with its
//! name and nothing written. Missing peers skip, unless ZSEAL_REQUIRE_PEERS is set (CI).

use crate::common;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::Command as Cmd;
use predicates::str::contains;

/// zseal with `PATH` as given and the test plugin told nothing.
fn zseal(path: &OsStr) -> Cmd {
    let mut c = Cmd::cargo_bin("zseal").unwrap();
    c.env("PATH", path).env_remove("ZSEALTEST");
    c
}

/// `PATH` with the test plugin on it.
fn with_test_plugin() -> OsString {
    common::path_with(&[&common::test_plugin_dir()])
}

/// An input of `n` bytes in `dir`.
fn input(dir: &Path, n: usize) -> (PathBuf, Vec<u8>) {
    let bytes = common::noise(n, n as u64);
    let path = dir.join("in.bin");
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

/// `zseal decrypt -i ID FILE` gives `want`.
fn opens(path: &OsStr, id: &Path, file: &Path, want: &[u8]) {
    let out = file.with_extension("out");
    let _ = std::fs::remove_file(&out);
    zseal(path)
        .args(["decrypt", "-q", "-i"])
        .args([id, file])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert!(std::fs::read(&out).unwrap() == want, "{}", file.display());
}

/// Stock `age -d -i ID FILE` gives `want`.
fn age_opens(age: &Path, path: &OsStr, id: &Path, file: &Path, want: &[u8]) {
    let out = Command::new(age)
        .env("PATH", path)
        .args([OsStr::new("-d"), OsStr::new("-i"), id.as_os_str()])
        .arg(file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "age -d {}: {err}", file.display());
    assert!(out.stdout == want, "age -d {}", file.display());
}

#[test]
fn the_test_plugin_seals_and_opens_in_both_formats_and_with_stock_age() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (id, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (plain, bytes) = input(d.path(), 200_000);
    let age = common::peer_tool("age");
    let shown = [
        ("zseal", "c.zseal", "zsealtest (age plugin stanza)"),
        ("age", "c.age", "recipients:  1 (zsealtest)"),
    ];
    for (format, name, kind) in shown {
        let file = d.path().join(name);
        zseal(&path)
            .args(["encrypt", "-q", "--format", format, "-c", "none", "-r", &r])
            .arg(&plain)
            .arg("-o")
            .arg(&file)
            .assert()
            .success();
        opens(&path, &id, &file, &bytes);
        zseal(&path)
            .args(["verify", "-q", "-i"])
            .args([&id, &file])
            .assert()
            .success();
        // No key needed to see who it is for.
        zseal(&path)
            .arg("inspect")
            .arg(&file)
            .assert()
            .success()
            .stdout(contains(kind));
        if let (Some(age), "age") = (&age, format) {
            age_opens(age, &path, &id, &file, &bytes);
        }
    }
    // Stock age seals to the plugin, zseal opens: also an identity file with other keys in it.
    let Some(age) = age else { return };
    let file = d.path().join("by-age.age");
    let s = Command::new(&age)
        .env("PATH", &path)
        .args(["-r", &r, "-o"])
        .arg(&file)
        .arg(&plain)
        .status()
        .unwrap();
    assert!(s.success());
    let (other, _) = common::keygen_file(d.path(), "other.key");
    let both = d.path().join("both.key");
    let text = std::fs::read_to_string(&other).unwrap() + &std::fs::read_to_string(&id).unwrap();
    std::fs::write(&both, text).unwrap();
    opens(&path, &both, &file, &bytes);
}

/// age-plugin-xwing, installed from crates.io: a new identity file (as it prints it) and its
/// recipient; `None` (a skip) without it.
fn xwing_identity(dir: &Path) -> Option<(PathBuf, String, OsString)> {
    let plugin = common::peer_tool("age-plugin-xwing")?;
    let out = Command::new(&plugin).output().unwrap();
    assert!(out.status.success(), "age-plugin-xwing makes an identity");
    let text = String::from_utf8(out.stdout).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# recipient: "))
        .expect("a # recipient: line")
        .to_string();
    let id = dir.join("xwing.key");
    std::fs::write(&id, &text).unwrap();
    Some((
        id,
        recipient,
        common::path_with(&[plugin.parent().unwrap()]),
    ))
}

#[test]
fn a_third_party_plugin_exchanges_files_with_stock_age_both_ways() {
    let d = tempfile::tempdir().unwrap();
    let Some((id, r, path)) = xwing_identity(d.path()) else {
        return;
    };
    let Some(age) = common::peer_tool("age") else {
        return;
    };
    let (plain, bytes) = input(d.path(), 150_000);
    // age seals, zseal opens.
    let by_age = d.path().join("by-age.age");
    let s = Command::new(&age)
        .env("PATH", &path)
        .args(["-r", &r, "-o"])
        .arg(&by_age)
        .arg(&plain)
        .status()
        .unwrap();
    assert!(s.success());
    opens(&path, &id, &by_age, &bytes);
    // zseal seals (both formats), age opens the age file and zseal both.
    for (format, name) in [("zseal", "c.zseal"), ("age", "c.age")] {
        let file = d.path().join(name);
        zseal(&path)
            .args(["encrypt", "-q", "--format", format, "-c", "none", "-r", &r])
            .arg(&plain)
            .arg("-o")
            .arg(&file)
            .assert()
            .success();
        opens(&path, &id, &file, &bytes);
        if format == "age" {
            age_opens(&age, &path, &id, &file, &bytes);
        }
    }
}

#[test]
fn rekey_adds_and_replaces_a_plugin_recipient_in_the_header_only() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (id, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (me, my_r) = common::keygen_file(d.path(), "me.key");
    let (plain, bytes) = input(d.path(), 300_000);
    let file = d.path().join("c.zseal");
    zseal(&path)
        .args(["encrypt", "-q", "-r", &my_r])
        .arg(&plain)
        .arg("-o")
        .arg(&file)
        .assert()
        .success();
    let before = std::fs::read(&file).unwrap();
    zseal(&path)
        .args(["rekey", "-q", "-i"])
        .args([&me, &file])
        .args(["--add", "-r", &r])
        .assert()
        .success();
    let after = std::fs::read(&file).unwrap();
    // Header only: the payload after the header is the same bytes.
    let grown = after.len() - before.len();
    assert!(grown > 0 && grown < 400, "{grown}");
    let header_end = before.len() - 100_000; // well inside the payload
    assert_eq!(&after[header_end + grown..], &before[header_end..]);
    opens(&path, &id, &file, &bytes);
    opens(&path, &me, &file, &bytes);
    // Opened by the plugin, a rekey --add runs it once: checking that the new header still
    // opens does not ask for the PIN or the touch again.
    let (_, other_r) = common::keygen_file(d.path(), "other.key");
    let added = zseal(&path)
        .env("ZSEALTEST", "msg")
        .args(["rekey", "-q", "-i"])
        .args([&id, &file])
        .args(["--add", "-r", &other_r])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&added.get_output().stderr).to_string();
    assert_eq!(err.matches("unwrapping the file key").count(), 1, "{err}");
    // Replace: the plugin's key alone, opened by the plugin to rekey.
    zseal(&path)
        .args(["rekey", "-q", "-f", "-i"])
        .args([&id, &file])
        .args(["-r", &other_r])
        .assert()
        .success();
    zseal(&path)
        .args(["decrypt", "-i"])
        .args([&id, &file])
        .args(["-o", "-"])
        .assert()
        .failure()
        .stderr(contains("no identity matched"));
    // An xwing recipient added to a file of X25519 keys (it declares no labels: classic).
    let Some((xid, xr, xpath)) = xwing_identity(d.path()) else {
        return;
    };
    let file2 = d.path().join("c2.zseal");
    zseal(&xpath)
        .args(["encrypt", "-q", "-r", &my_r])
        .arg(&plain)
        .arg("-o")
        .arg(&file2)
        .assert()
        .success();
    zseal(&xpath)
        .args(["rekey", "-q", "-i"])
        .args([&me, &file2])
        .args(["--add", "-r", &xr])
        .assert()
        .success();
    opens(&xpath, &xid, &file2, &bytes);
}

/// Runs `zseal ARGS` with `ZSEALTEST=mode` and expects a failure saying `says`, and no `out`.
fn fails(path: &OsStr, mode: &str, args: &[&OsStr], out: &Path, says: &[&str]) {
    let assert = zseal(path)
        .env("ZSEALTEST", mode)
        .args(args)
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    for s in says {
        assert!(err.contains(s), "{mode}: {err}");
    }
    assert!(!out.exists(), "{mode}: {} was written", out.display());
}

#[test]
fn a_plugin_that_dies_refuses_or_prints_garbage_fails_with_nothing_written() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (id, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (plain, _) = input(d.path(), 1000);
    let sealed = d.path().join("c.zseal");
    zseal(&path)
        .args(["encrypt", "-q", "-r", &r])
        .arg(&plain)
        .arg("-o")
        .arg(&sealed)
        .assert()
        .success();
    let out = d.path().join("out");
    let name = "age-plugin-zsealtest";
    let cases = [
        ("crash", vec![name, "unexpectedly died"]),
        ("refuse", vec![name, "zsealtest refuses"]),
        ("garbage", vec![name, "broke the age-plugin protocol"]),
    ];
    for (how, says) in &cases {
        for format in ["zseal", "age"] {
            let args = ["encrypt", "--format", format, "-r", &r, "-o"].map(OsStr::new);
            let args = [&args[..], &[out.as_os_str(), plain.as_os_str()]].concat();
            fails(&path, &format!("{how}-wrap"), &args, &out, says);
        }
        let args = ["decrypt", "-i"].map(OsStr::new);
        let args = [&args[..], &[id.as_os_str(), sealed.as_os_str()]].concat();
        let args = [&args[..], &[OsStr::new("-o"), out.as_os_str()]].concat();
        fails(&path, &format!("{how}-unwrap"), &args, &out, says);
    }
}

#[test]
fn a_plugin_missing_from_path_is_named_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let (id, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (plain, _) = input(d.path(), 1000);
    let sealed = d.path().join("c.zseal");
    zseal(&with_test_plugin())
        .args(["encrypt", "-q", "-r", &r])
        .arg(&plain)
        .arg("-o")
        .arg(&sealed)
        .assert()
        .success();
    // PATH without the plugin (the zseal binary is run by its full path).
    let bare = OsString::from("/usr/bin:/bin");
    let out = d.path().join("out");
    let says = ["age-plugin-zsealtest is not on PATH"];
    let enc = ["encrypt", "-r", &r, "-o"].map(OsStr::new);
    let enc = [&enc[..], &[out.as_os_str(), plain.as_os_str()]].concat();
    fails(&bare, "", &enc, &out, &says);
    let dec = ["decrypt", "-i"].map(OsStr::new);
    let dec = [
        &dec[..],
        &[id.as_os_str(), sealed.as_os_str(), OsStr::new("-o")],
    ]
    .concat();
    let dec = [&dec[..], &[out.as_os_str()]].concat();
    fails(&bare, "", &dec, &out, &says);
}

#[test]
fn a_question_with_no_terminal_fails_saying_what_was_asked() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (id, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (plain, _) = input(d.path(), 1000);
    let sealed = d.path().join("c.zseal");
    zseal(&path)
        .args(["encrypt", "-q", "-r", &r])
        .arg(&plain)
        .arg("-o")
        .arg(&sealed)
        .assert()
        .success();
    let out = d.path().join("out");
    // setsid: a new session has no controlling terminal, so /dev/tty cannot be opened.
    let run = |mode: &str| {
        Command::new("setsid")
            .arg(env!("CARGO_BIN_EXE_zseal"))
            .args([OsStr::new("decrypt"), OsStr::new("-i"), id.as_os_str()])
            .arg(&sealed)
            .arg("-o")
            .arg(&out)
            .env("PATH", &path)
            .env("ZSEALTEST", mode)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    for (mode, asked) in [
        ("msg,pin", "zsealtest PIN"),
        ("confirm", "Use the zsealtest key?"),
    ] {
        let o = run(mode);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{mode}: {err}");
        assert!(err.contains(&format!("asked \"{asked}\"")), "{mode}: {err}");
        assert!(err.contains("no terminal"), "{mode}: {err}");
        assert!(!out.exists(), "{mode}");
    }
    // The message reached standard error even so.
    assert!(String::from_utf8_lossy(&run("msg,pin").stderr).contains("unwrapping the file key"));
}

#[test]
fn a_post_quantum_plugin_is_not_mixed_with_classic_recipients() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (_, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (_, classic) = common::keygen_file(d.path(), "me.key");
    let (plain, _) = input(d.path(), 1000);
    let out = d.path().join("out");
    for format in ["zseal", "age"] {
        let args = [
            "encrypt", "--format", format, "-r", &r, "-r", &classic, "-o",
        ]
        .map(OsStr::new);
        let args = [&args[..], &[out.as_os_str(), plain.as_os_str()]].concat();
        fails(
            &path,
            "pq",
            &args,
            &out,
            &["post-quantum", "cannot be mixed"],
        );
        // Alone, or without the label, it seals.
        zseal(&path)
            .env("ZSEALTEST", "pq")
            .args(["encrypt", "-q", "--format", format, "-r", &r])
            .arg(&plain)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        std::fs::remove_file(&out).unwrap();
    }
    zseal(&path)
        .args(["encrypt", "-q", "-r", &r, "-r", &classic])
        .arg(&plain)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
}

/// A plugin is given the caller's environment without zseal's own variables (issue 58 §5,
/// vendor/README.md): no `ZSEAL_PASSPHRASE` nor any other `ZSEAL_*`, as zseal's AWS
/// credential_process; the rest (`PATH`, `HOME`, the plugin's own settings) as age gives it.
#[test]
fn a_plugin_is_given_no_variable_of_zseals() {
    let d = tempfile::tempdir().unwrap();
    let path = with_test_plugin();
    let (_, r) = common::test_plugin_identity(d.path(), "plugin.key");
    let (plain, _) = input(d.path(), 1000);
    let names = d.path().join("env.txt");
    zseal(&path)
        .env("ZSEALTEST", "env")
        .env("ZSEALTEST_ENV_FILE", &names)
        .env("ZSEAL_PASSPHRASE", "not for plugins")
        .env("ZSEAL_PARTS_IN_FLIGHT", "2")
        .env("HOME", d.path())
        .args(["encrypt", "-q", "-r", &r])
        .arg(&plain)
        .arg("-o")
        .arg(d.path().join("c.zseal"))
        .assert()
        .success();
    let given = std::fs::read_to_string(&names).unwrap();
    let given: Vec<&str> = given.lines().collect();
    assert!(
        given.contains(&"PATH") && given.contains(&"HOME"),
        "{given:?}"
    );
    assert!(given.contains(&"ZSEALTEST_ENV_FILE"), "{given:?}");
    let zseals: Vec<&&str> = given.iter().filter(|n| n.starts_with("ZSEAL_")).collect();
    assert!(zseals.is_empty(), "the plugin was given {zseals:?}");
}
