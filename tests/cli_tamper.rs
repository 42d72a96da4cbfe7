//! Exhaustive tamper test through the real binary: a container of three chunks with every byte
//! flipped and cut at every offset. Each must fail with a clear error, exit 1, and leave no
//! output file (nor a temporary one).

mod common;

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
                "not a zseal or age file",
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
