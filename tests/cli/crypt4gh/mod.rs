//! Crypt4GH end to end through the command (FORMAT.md §13), checked with the reference tool
//! (PyPI `crypt4gh==1.8.6`, pinned in python/requirements-test.txt, in target/pyenv or the active
//! virtual environment): `encrypt --format crypt4gh` (write.rs) and `rekey` (rekey.rs). Without
//! the reference the tests that need it are skipped, unless ZSEAL_REQUIRE_PEERS is set (CI),
//! where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};

use assert_cmd::Command;

use crate::common::crypt4gh_reference as reference;

mod rekey;
mod write;

fn zseal() -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.env_remove("ZSEAL_PASSPHRASE");
    c
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Runs the reference's `tool args` in `dir` with `input` (a file) on standard input: its
/// standard output, or its error text.
fn run(bin: &Path, dir: &Path, tool: &str, args: &[&str], input: &Path) -> Result<Vec<u8>, String> {
    let out = Std::new(bin.join(tool))
        .args(args)
        .current_dir(dir)
        .env_remove("C4GH_SECRET_KEY")
        .env_remove("C4GH_PASSPHRASE")
        .stdin(Stdio::from(std::fs::File::open(input).unwrap()))
        .output()
        .unwrap();
    match out.status.success() {
        true => Ok(out.stdout),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}
