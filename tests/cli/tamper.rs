//! Exhaustive tamper test through the real binary: a container of three chunks with every byte
//! flipped and cut at every offset. Each must fail with a clear error, exit 1, and leave no
//! output file (nor a temporary one).

use crate::common;

use std::path::Path;
use std::process::Command;

use zseal::EncryptOptions;

fn run_decrypt(dir: &Path, container: &[u8], pass_file: &Path) -> (i32, String) {
    let input = dir.join("in.zseal");
    std::fs::write(&input, container).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_zseal"))
        .arg("decrypt")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .arg("--passphrase-file")
        .arg(pass_file)
        .env_remove("ZSEAL_PASSPHRASE")
        .output()
        .unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "in.zseal" && n != "pw" && !(n == "out" && o.status.success()))
        .collect();
    assert!(leftovers.is_empty(), "files left behind: {leftovers:?}");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_flipped_byte_and_every_cut_fails_cleanly_through_the_cli() {
    let d = tempfile::tempdir().unwrap();
    let pw = common::pass("cli tamper");
    let pass_file = d.path().join("pw");
    std::fs::write(&pass_file, "cli tamper\n").unwrap();
    let plain = common::data(3 * 1024 - 10);
    let sealed = common::seal(&plain, &pw, &EncryptOptions::default().chunk_size(1024), 77);
    assert!(
        sealed.len() < 2000,
        "keep the container small: {} bytes",
        sealed.len()
    );
    let (code, err) = run_decrypt(d.path(), &sealed, &pass_file);
    assert_eq!(
        (code, err.as_str()),
        (0, ""),
        "the intact container decrypts"
    );
    std::fs::remove_file(d.path().join("out")).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..sealed.len() {
        let mut c = sealed.clone();
        c[i] ^= 0x10;
        cases.push((format!("byte {i} flipped"), c));
    }
    for n in 0..sealed.len() {
        cases.push((format!("cut at {n}"), sealed[..n].to_vec()));
    }
    for (what, c) in cases {
        let (code, err) = run_decrypt(d.path(), &c, &pass_file);
        assert_eq!(code, 1, "{what}: exit code; stderr: {err}");
        assert!(
            err.starts_with("zseal: error: ") && err.lines().count() == 1,
            "{what}: unclear error: {err}"
        );
        assert!(
            [
                "damaged",
                "truncated",
                "authentication",
                "not a zseal, age or crypt4gh file",
                "passphrase",
                "version",
                "header",
                "limit",
                "no identity matched"
            ]
            .iter()
            .any(|w| err.contains(w)),
            "{what}: error names no cause: {err}"
        );
    }
}

/// Frames of 2 MiB and more are read by the workers from the input file itself: through the
/// command, a whole file decrypts to its plaintext, and damage in or around such a frame fails
/// as it does from a pipe (the same message), exits 1 and leaves no output.
#[test]
fn long_frames_read_by_the_workers_fail_as_from_a_pipe() {
    let d = tempfile::tempdir().unwrap();
    let pw = common::pass("cli tamper");
    let pass_file = d.path().join("pw");
    std::fs::write(&pass_file, "cli tamper\n").unwrap();
    let big = 4 << 20;
    let plain = common::noise(2 * big + 99, 5);
    let opts = EncryptOptions::default().chunk_size(big);
    let sealed = common::seal(&plain, &pw, &opts, 78);
    let (code, err) = run_decrypt(d.path(), &sealed, &pass_file);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(std::fs::read(d.path().join("out")).unwrap() == plain);
    std::fs::remove_file(d.path().join("out")).unwrap();
    let from_pipe = |c: &[u8]| {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_zseal"))
            .args(["decrypt", "--passphrase-file"])
            .arg(&pass_file)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader may stop at the damage before taking everything.
        let _ = child.stdin.take().unwrap().write_all(c);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (
            o.status.code().unwrap_or(-1),
            err.replace("standard input", "FILE"),
        )
    };
    let second_body = sealed.len() / 2;
    let mut cases = vec![
        sealed[..second_body].to_vec(),
        sealed[..sealed.len() - 40].to_vec(),
    ];
    let mut flipped = sealed.clone();
    flipped[second_body] ^= 1;
    cases.push(flipped);
    for c in cases {
        let (code, err) = run_decrypt(d.path(), &c, &pass_file);
        let err = err.replace(&d.path().join("in.zseal").display().to_string(), "FILE");
        assert_eq!(code, 1, "{err}");
        assert_eq!((code, err), from_pipe(&c), "{} bytes", c.len());
    }
}

/// Issue 48, point 6: a file cut short said "truncated" to a whole decrypt and verify, but
/// "the footer's end magic is wrong" to `--range` (which reads the end first) and "no valid
/// footer" to `inspect`, which showed nothing. Cut inside the header, a frame, the final frame,
/// the index and the footer, every path now says "truncated … fetch it again" and exits 1, and
/// `inspect` (text and JSON) still shows the header of a file cut after it.
#[test]
fn a_cut_file_is_truncated_on_every_path() {
    let d = tempfile::tempdir().unwrap();
    let pw = common::pass("cli tamper");
    let pass_file = d.path().join("pw");
    std::fs::write(&pass_file, "cli tamper\n").unwrap();
    let plain = common::data(3 * 1024 - 10);
    let sealed = common::seal(&plain, &pw, &EncryptOptions::default().chunk_size(1024), 79);
    let info = zseal::inspect::inspect_file(std::io::Cursor::new(&sealed)).unwrap();
    let (h, len) = (info.header_len as usize, sealed.len());
    let index_at = len - 16 - 4 * info.chunks.unwrap() as usize;
    let f = common::frames(&sealed, h);
    let input = d.path().join("in.zseal");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_zseal"))
            .args(args)
            .arg(&input)
            .env_remove("ZSEAL_PASSPHRASE")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code().unwrap_or(-1), out, err)
    };
    let pw_arg = pass_file.to_str().unwrap();
    let out = d.path().join("out");
    let out_arg = out.to_str().unwrap();
    for (what, cut) in [
        ("in the header", 30),
        ("in frame 0", h + 20),
        ("after frame 0", f[1].0),
        ("in frame 1", f[1].0 + 10),
        ("in the final frame", index_at - 50),
        ("in the index", index_at + 2),
        ("before the footer", len - 16),
        ("in the footer", len - 5),
        ("one byte short", len - 1),
    ] {
        std::fs::write(&input, &sealed[..cut]).unwrap();
        let decrypting = [
            vec!["decrypt", "--passphrase-file", pw_arg, "-o", out_arg],
            vec![
                "decrypt",
                "--passphrase-file",
                pw_arg,
                "--range",
                "0..10",
                "-o",
                out_arg,
            ],
            vec![
                "decrypt",
                "--passphrase-file",
                pw_arg,
                "--range",
                "1500..",
                "-o",
                out_arg,
            ],
            vec!["verify", "--passphrase-file", pw_arg],
        ];
        for args in decrypting {
            let (code, _, err) = run(&args);
            assert_eq!(code, 1, "{what}: {args:?}: {err}");
            assert!(
                err.contains("the file is truncated") && err.contains("fetch it again"),
                "{what}: {args:?}: {err}"
            );
            assert!(!out.exists(), "{what}: {args:?}: an output was left");
        }
        let (code, text, err) = run(&["inspect"]);
        assert_eq!(code, 1, "{what}: inspect: {text}{err}");
        assert!(err.contains("the file is truncated"), "{what}: {err}");
        let (code, json, err) = run(&["inspect", "--json"]);
        assert_eq!(code, 1, "{what}: inspect --json: {err}");
        if cut < h {
            assert!(
                text.is_empty() && json.is_empty(),
                "{what}: no header to show"
            );
            continue;
        }
        assert!(
            text.contains("cipher:      aes-256-gcm")
                && text.contains(&format!("container:   {cut} bytes"))
                && text.contains("cut short"),
            "{what}: inspect shows the header and the cut: {text}"
        );
        let j: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(j["problem_kind"], "truncated", "{what}: {json}");
        assert_eq!(j["header_len"], h, "{what}: {json}");
        assert!(j["chunks"].is_null(), "{what}: {json}");
    }
    // Damage, not a cut, keeps its own word: a flipped byte of the end magic, and a byte added.
    let mut flipped = sealed.clone();
    flipped[len - 3] ^= 1;
    std::fs::write(&input, &flipped).unwrap();
    let (code, _, err) = run(&["decrypt", "--passphrase-file", pw_arg, "--range", "0..10"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("end magic is wrong"), "{err}");
    std::fs::write(&input, [&sealed[..], b"\n"].concat()).unwrap();
    let (code, text, err) = run(&["inspect"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        text.contains("extended") && err.contains("after the end"),
        "{text}{err}"
    );
}
