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
