//! The command line on a real terminal: each test runs zseal in a pseudo-terminal (rexpect) and
//! follows the transcript a person would see — the passphrase prompts, text printed and binary
//! refused, and the progress line, which must appear on a terminal and nowhere else.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::wait::WaitStatus;
use rexpect::session::{spawn_command, PtySession};

const TIMEOUT_MS: u64 = 30_000;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_zseal"))
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Runs `zseal ARGS` with stdin, stdout and stderr on a fresh pseudo-terminal.
fn on_terminal(args: &[&str]) -> PtySession {
    let mut c = Command::new(bin());
    c.args(args).env_remove("ZSEAL_PASSPHRASE");
    spawn_command(c, Some(TIMEOUT_MS)).expect("a pseudo-terminal")
}

/// Runs a shell line in a pseudo-terminal (for pipes into zseal while stderr is the terminal).
fn shell_on_terminal(line: &str) -> PtySession {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(line)
        .env("ZSEAL", bin())
        .env("FIXTURES", fixtures())
        .env_remove("ZSEAL_PASSPHRASE");
    spawn_command(c, Some(TIMEOUT_MS)).expect("a pseudo-terminal")
}

/// Reads everything up to the exit and returns (transcript, exit code).
fn finish(mut p: PtySession) -> (String, i32) {
    let rest = p.exp_eof().expect("the command ends");
    match p.process().wait().expect("wait") {
        WaitStatus::Exited(_, code) => (rest, code),
        other => panic!("zseal did not exit normally: {other:?}\n{rest}"),
    }
}

/// `zseal encrypt sample.log -o DIR/s.zseal` on a terminal, typing `first`, then `second` at
/// the confirmation prompt. Returns the session (to read on) and the output path.
fn encrypt_typing(dir: &Path, first: &str, second: &str) -> (PtySession, PathBuf) {
    let enc = dir.join("s.zseal");
    let sample = fixtures().join("sample.log");
    let mut p = on_terminal(&[
        "encrypt",
        sample.to_str().unwrap(),
        "-o",
        enc.to_str().unwrap(),
    ]);
    p.exp_string("Passphrase: ").unwrap();
    p.send_line(first).unwrap();
    p.exp_string("Confirm passphrase: ").unwrap();
    p.send_line(second).unwrap();
    (p, enc)
}

#[test]
fn encrypt_asks_twice_and_decrypt_once() {
    let d = tempfile::tempdir().unwrap();
    let typed = "a long enough terminal passphrase";
    let (p, enc) = encrypt_typing(d.path(), typed, typed);
    let (dec, sample) = (d.path().join("s.out"), fixtures().join("sample.log"));
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("warning"),
        "no weak-passphrase warning: {out}"
    );
    assert!(
        !out.contains("encrypting"),
        "no progress line for work that takes a moment: {out}"
    );
    assert!(
        !out.contains("terminal passphrase"),
        "the passphrase is not echoed: {out}"
    );

    let mut p = on_terminal(&[
        "decrypt",
        enc.to_str().unwrap(),
        "-o",
        dec.to_str().unwrap(),
    ]);
    p.exp_string("Passphrase: ").unwrap();
    p.send_line("a long enough terminal passphrase").unwrap();
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read(&dec).unwrap(),
        std::fs::read(&sample).unwrap()
    );
}

#[test]
fn mismatched_confirmation_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (p, _) = encrypt_typing(
        d.path(),
        "first passphrase typed",
        "second passphrase typed",
    );
    let (out, code) = finish(p);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("do not match"), "{out}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "no file");
}

#[test]
fn weak_passphrase_is_warned_about_on_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let (mut p, enc) = encrypt_typing(d.path(), "hunter2", "hunter2");
    p.exp_string("warning: the passphrase has only 7 characters")
        .unwrap();
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert!(enc.exists());
}

#[test]
fn wrong_passphrase_on_the_terminal_is_named() {
    let enc = fixtures().join("v1/default.zseal");
    let d = tempfile::tempdir().unwrap();
    let out_path = d.path().join("out");
    let mut p = on_terminal(&[
        "decrypt",
        enc.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    p.exp_string("Passphrase: ").unwrap();
    p.send_line("not the fixture passphrase").unwrap();
    let (out, code) = finish(p);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("passphrase"), "{out}");
    assert!(!out_path.exists());
}

#[test]
fn binary_is_never_written_to_the_terminal() {
    let pw = fixtures().join("passphrase.txt");
    let sample = fixtures().join("sample.log");
    let p = on_terminal(&[
        "encrypt",
        sample.to_str().unwrap(),
        "--passphrase-file",
        pw.to_str().unwrap(),
    ]);
    let (out, code) = finish(p);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("terminal"), "{out}");
    assert!(out.contains("-o"), "says what to do: {out}");
}

/// `zseal encrypt FILE -o DIR/NAME --passphrase-file …` off the terminal.
fn seal_file(plain: &Path, sealed: &Path) {
    let status = Command::new(bin())
        .arg("encrypt")
        .arg(plain)
        .arg("-o")
        .arg(sealed)
        .arg("--passphrase-file")
        .arg(fixtures().join("passphrase.txt"))
        .status()
        .unwrap();
    assert!(status.success());
}

/// Issue 48, point 5: `zseal decrypt note.zseal` on a terminal refused to print plaintext that
/// is text; age, `gzip -dc` and `zstd -dc` print it.
#[test]
fn text_plaintext_is_printed_on_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let (note, sealed) = (d.path().join("note.txt"), d.path().join("note.txt.zseal"));
    std::fs::write(&note, "Dear reader,\nthe keys are under the mat ✓\n").unwrap();
    seal_file(&note, &sealed);
    let pw = fixtures().join("passphrase.txt");
    let mut p = on_terminal(&[
        "decrypt",
        "--passphrase-file",
        pw.to_str().unwrap(),
        sealed.to_str().unwrap(),
    ]);
    // (rexpect shows the bytes as Latin-1: the ✓, UTF-8 that counts as text, is not matched.)
    p.exp_string("Dear reader,\r\nthe keys are under the mat")
        .unwrap();
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("refusing"), "{out}");
}

/// Issue 48, point 5: binary plaintext is refused before any of it reaches the terminal, and
/// the refusal names the output to use, the input's name without `.zseal`, as `zstd -d` would.
#[test]
fn binary_plaintext_is_refused_with_the_output_name_to_use() {
    let d = tempfile::tempdir().unwrap();
    let (tar, sealed) = (d.path().join("x.tar"), d.path().join("x.tar.zseal"));
    // Text first, so that printing any of it would show; a NUL a few bytes in.
    let mut data = b"VISIBLE-MARKER-START\0".to_vec();
    data.extend((0..20_000u32).map(|i| (i % 251) as u8));
    std::fs::write(&tar, &data).unwrap();
    seal_file(&tar, &sealed);
    let pw = fixtures().join("passphrase.txt");
    let p = on_terminal(&[
        "decrypt",
        "--passphrase-file",
        pw.to_str().unwrap(),
        sealed.to_str().unwrap(),
    ]);
    let (out, code) = finish(p);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("binary data to the terminal"), "{out}");
    assert!(
        out.contains(&format!("use -o {}", tar.display())),
        "suggests the output name: {out}"
    );
    assert!(!out.contains("VISIBLE-MARKER"), "nothing printed: {out}");
}

/// Issue 48, point 5: `zseal encrypt` with no input on a terminal read the keyboard, under a
/// spinner, until Ctrl-D; it now refuses at once.
#[test]
fn encrypt_refuses_to_read_the_terminal() {
    let pw = fixtures().join("passphrase.txt");
    let d = tempfile::tempdir().unwrap();
    let out_path = d.path().join("typed.zseal");
    let p = on_terminal(&[
        "encrypt",
        "--passphrase-file",
        pw.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let (out, code) = finish(p);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("stdin is a terminal: give a file, or pipe the data in"),
        "{out}"
    );
    assert!(!out_path.exists());
}

/// A producer that takes about 1.5 s, so the work lasts more than a moment whatever the
/// machine's speed: 1 MiB, a pause, 1 MiB.
const SLOW: &str = "{ head -c 1048576 \"$FIXTURES/sample.log\"; sleep 1.5; head -c 1048576 \"$FIXTURES/sample.log\"; }";

#[test]
fn progress_line_appears_on_a_terminal_when_work_lasts() {
    let d = tempfile::tempdir().unwrap();
    let line = format!(
        "{SLOW} | \"$ZSEAL\" encrypt --passphrase-file \"$FIXTURES/passphrase.txt\" -j 2 -o '{}'",
        d.path().join("s.zseal").display()
    );
    let mut p = shell_on_terminal(&line);
    // The unknown-size form: bytes so far, rate, ratio.
    p.exp_regex(r"encrypting .*MiB in .*/s, ratio")
        .expect("a progress line on the terminal");
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn progress_line_shows_eta_when_the_size_is_known() {
    let d = tempfile::tempdir().unwrap();
    // A file input (size known), decrypted slowly because its reader is a slow consumer.
    let enc = d.path().join("s.zseal");
    let big = d.path().join("big");
    std::fs::write(&big, vec![7u8; 64 << 20]).unwrap();
    let status = Command::new(bin())
        .args(["encrypt", "--chunk-size", "64K", "-c", "none"])
        .arg(&big)
        .arg("-o")
        .arg(&enc)
        .arg("--passphrase-file")
        .arg(fixtures().join("passphrase.txt"))
        .status()
        .unwrap();
    assert!(status.success());
    let line = format!(
        "\"$ZSEAL\" decrypt --passphrase-file \"$FIXTURES/passphrase.txt\" '{}' | {{ sleep 1.5; cat > /dev/null; }}",
        enc.display()
    );
    let mut p = shell_on_terminal(&line);
    p.exp_regex(r"decrypting .*/.*\[.*\].*ratio .*ETA")
        .expect("a bar with an ETA");
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn quiet_and_redirected_stderr_show_no_progress() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("stderr.log");
    let line = format!(
        "{SLOW} | \"$ZSEAL\" encrypt -q --passphrase-file \"$FIXTURES/passphrase.txt\" -o '{}'; \
         {SLOW} | \"$ZSEAL\" encrypt --passphrase-file \"$FIXTURES/passphrase.txt\" -o '{}' 2>'{}'; echo done",
        d.path().join("a.zseal").display(),
        d.path().join("b.zseal").display(),
        log.display()
    );
    let p = shell_on_terminal(&line);
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("done"), "{out}");
    assert!(!out.contains("encrypting"), "-q: no progress: {out}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        !logged.contains("encrypting"),
        "stderr to a file: no progress unless --progress: {logged}"
    );
}

#[test]
fn forced_progress_reaches_a_log_file() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("stderr.log");
    let line = format!(
        "{SLOW} | \"$ZSEAL\" encrypt --progress --passphrase-file \"$FIXTURES/passphrase.txt\" -o '{}' 2>'{}'",
        d.path().join("a.zseal").display(),
        log.display()
    );
    let (out, code) = finish(shell_on_terminal(&line));
    assert_eq!(code, 0, "{out}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("encrypting"), "{logged}");
    assert!(logged.contains("ratio"), "{logged}");
}

/// `zseal decrypt -i ID FILE -o OUT` on a terminal with the test age plugin on PATH, told
/// `mode` (tools/age-plugin-zsealtest).
fn plugin_decrypt_on_terminal(mode: &str, id: &Path, file: &Path, out: &Path) -> PtySession {
    let path = crate::common::path_with(&[&crate::common::test_plugin_dir()]);
    let mut c = Command::new(bin());
    c.args(["decrypt", "-i"])
        .args([id, file])
        .arg("-o")
        .arg(out)
        .env("PATH", path)
        .env("ZSEALTEST", mode);
    spawn_command(c, Some(TIMEOUT_MS)).expect("a pseudo-terminal")
}

#[test]
fn an_age_plugin_shows_its_message_and_asks_its_pin_and_confirmation_on_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let (id, r) = crate::common::test_plugin_identity(d.path(), "plugin.key");
    let (sample, enc) = (fixtures().join("sample.log"), d.path().join("s.zseal"));
    let s = Command::new(bin())
        .env(
            "PATH",
            crate::common::path_with(&[&crate::common::test_plugin_dir()]),
        )
        .args(["encrypt", "-q", "-r", &r])
        .arg(&sample)
        .arg("-o")
        .arg(&enc)
        .status()
        .unwrap();
    assert!(s.success());
    let dec = d.path().join("s.out");
    let mut p = plugin_decrypt_on_terminal("msg,pin,confirm", &id, &enc, &dec);
    p.exp_string("zsealtest: unwrapping the file key").unwrap();
    p.exp_string("zsealtest PIN: ").unwrap();
    p.send_line("1234").unwrap();
    p.exp_string("Use the zsealtest key? [Yes/No]: ").unwrap();
    p.send_line("y").unwrap();
    let (out, code) = finish(p);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read(&dec).unwrap(),
        std::fs::read(&sample).unwrap()
    );
    // A wrong PIN, or "no": the plugin's refusal, named, and nothing written.
    for (mode, answer, says) in [("pin", "0000", "wrong PIN"), ("confirm", "No", "declined")] {
        let dec = d.path().join(format!("{mode}.out"));
        let mut p = plugin_decrypt_on_terminal(mode, &id, &enc, &dec);
        p.exp_string(if mode == "pin" { "PIN: " } else { "[Yes/No]: " })
            .unwrap();
        p.send_line(answer).unwrap();
        let (out, code) = finish(p);
        assert_ne!(code, 0, "{out}");
        assert!(
            out.contains("age-plugin-zsealtest") && out.contains(says),
            "{out}"
        );
        assert!(!dec.exists(), "{mode}");
    }
}
