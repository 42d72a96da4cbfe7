//! Helpers shared by the integration tests.
#![allow(dead_code)]

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{Argon2Params, DecryptOptions, Decryptor, EncryptOptions, Encryptor, Passphrase};

/// Argon2 at its minimum so that tests spend their time on the engine.
pub const CHEAP: Argon2Params = Argon2Params {
    m_cost: 64,
    t_cost: 1,
    p_cost: 1,
};

pub fn pass(s: &str) -> Passphrase {
    Passphrase::with_params(s, CHEAP).unwrap()
}

/// `i % 251` with a slow drift: compressible, and swapped pieces change every digest.
pub fn data(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_add((i / 4093) as u8))
        .collect()
}

/// Incompressible bytes from a seeded RNG.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    use rand_chacha::rand_core::RngCore;
    let mut v = vec![0u8; n];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// Encrypts with a seeded RNG, so the same inputs give the same container.
pub fn seal(plain: &[u8], pw: &Passphrase, opts: &EncryptOptions, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut enc = Encryptor::with_rng(Vec::new(), &[pw], opts, &mut rng).unwrap();
    enc.copy_from(&mut &plain[..]).unwrap();
    enc.finish().unwrap()
}

/// `data(len)` sealed under the passphrase `pw` in chunks of `chunk` bytes on 2 threads: the
/// plaintext, the container and the passphrase (the damage suites' common starting point).
pub fn sample(pw: &str, len: usize, chunk: usize, seed: u64) -> (Vec<u8>, Vec<u8>, Passphrase) {
    let pw = pass(pw);
    let plain = data(len);
    let opts = EncryptOptions::default().chunk_size(chunk).threads(2);
    let sealed = seal(&plain, &pw, &opts, seed);
    (plain, sealed, pw)
}

pub fn open(container: &[u8], pw: &Passphrase, threads: usize) -> zseal::Result<Vec<u8>> {
    let mut dec = Decryptor::new(
        container,
        &[pw],
        &DecryptOptions::default().threads(threads),
    )?;
    let mut out = Vec::new();
    dec.copy_to(&mut out)?;
    Ok(out)
}

/// Frame boundaries of a container whose header is `header_len` bytes: (offset, frame length) of
/// every frame, the final one included.
pub fn frames(c: &[u8], header_len: usize) -> Vec<(usize, usize)> {
    let mut at = header_len;
    let mut v = Vec::new();
    loop {
        let len = u32::from_le_bytes(c[at + 1..at + 5].try_into().unwrap()) as usize;
        v.push((at, 5 + len));
        let last = c[at] == 2;
        at += 5 + len;
        if last {
            return v;
        }
    }
}

/// The fixture keys (fixtures/keys).
pub fn keys() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys")
}

/// Answers an encrypted SSH key's passphrase prompt with a fixed answer, or gives up.
#[derive(Clone)]
pub struct Fixed(pub Option<&'static str>);

impl zseal::crypto::recipients::KeyPassphrase for Fixed {
    fn passphrase(&self, _: &str) -> Option<String> {
        self.0.map(String::from)
    }
}

/// The first identity of fixture key file `name` (the encrypted SSH key's passphrase given).
pub fn identity(name: &str) -> zseal::AgeIdentity {
    let data = std::fs::read(keys().join(name)).unwrap();
    zseal::crypto::recipients::read_identities(&data, name, Fixed(Some("zseal fixture")))
        .unwrap()
        .remove(0)
}

/// The recipient in fixture file `name`.
pub fn recipient(name: &str) -> zseal::AgeRecipient {
    zseal::AgeRecipient::parse(&std::fs::read_to_string(keys().join(name)).unwrap()).unwrap()
}

/// A new identity file `name` in `dir` made by `zseal keygen`, and its public key.
pub fn keygen_file(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, String) {
    let key = dir.join(name);
    assert_cmd::Command::cargo_bin("zseal")
        .unwrap()
        .arg("keygen")
        .arg("-o")
        .arg(&key)
        .assert()
        .success();
    let text = std::fs::read_to_string(&key).unwrap();
    let public = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();
    (key, public)
}

/// A peer tool: where scripts/install-peers put it (target/peer-tools/bin: rage), or on the
/// PATH. Missing, `None`, unless ZSEAL_REQUIRE_PEERS is set (CI), where that fails the test.
pub fn peer_tool(name: &str) -> Option<std::path::PathBuf> {
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/peer-tools/bin")
        .join(name);
    if local.exists() {
        return Some(local);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.exists())
    });
    if found.is_none() && std::env::var_os("ZSEAL_REQUIRE_PEERS").is_some() {
        panic!("{name} is not installed (scripts/install-peers installs it)");
    }
    found
}

/// The directory holding the project's test age plugin, `age-plugin-zsealtest`
/// (tools/age-plugin-zsealtest): beside the zseal binary the tests run, where scripts/test-all
/// builds it (`cargo build --profile ci -p age-plugin-zsealtest`); built here when missing.
pub fn test_plugin_dir() -> std::path::PathBuf {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let zseal = std::path::PathBuf::from(env!("CARGO_BIN_EXE_zseal"));
    let dir = zseal.parent().expect("target/PROFILE").to_path_buf();
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !dir.join("age-plugin-zsealtest").exists() {
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        let built = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--profile", &profile])
            .args(["-p", "age-plugin-zsealtest"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(
            built.success(),
            "building tools/age-plugin-zsealtest failed"
        );
    }
    dir
}

/// `PATH` with `dirs` first (where age plugins are looked for).
pub fn path_with(dirs: &[&std::path::Path]) -> std::ffi::OsString {
    let old = std::env::var_os("PATH").unwrap_or_default();
    let all = dirs
        .iter()
        .map(|d| d.to_path_buf())
        .chain(std::env::split_paths(&old));
    std::env::join_paths(all).expect("PATH entries without ':'")
}

/// A new identity of the test plugin in `dir/name` (as the plugin prints it: `# created`,
/// `# recipient: age1zsealtest1…`, `AGE-PLUGIN-ZSEALTEST-1…`) and its recipient.
pub fn test_plugin_identity(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, String) {
    let out = std::process::Command::new(test_plugin_dir().join("age-plugin-zsealtest"))
        .arg("--generate")
        .output()
        .expect("age-plugin-zsealtest runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# recipient: "))
        .expect("a # recipient: line")
        .to_string();
    let path = dir.join(name);
    std::fs::write(&path, &text).unwrap();
    (path, recipient)
}

/// The directory holding the Crypt4GH reference's commands (`crypt4gh`, `crypt4gh-keygen`;
/// PyPI crypt4gh==1.8.6, pinned in python/requirements-test.txt): the active virtual
/// environment's or target/pyenv's. `None` (the test skips) without it, unless
/// ZSEAL_REQUIRE_PEERS is set (CI), where a missing reference fails.
pub fn crypt4gh_reference() -> Option<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    let venv = std::env::var_os("VIRTUAL_ENV").map(|v| PathBuf::from(v).join("bin"));
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin");
    let bin = [venv, Some(local)]
        .into_iter()
        .flatten()
        .find(|d| d.join("crypt4gh").is_file());
    if bin.is_none() {
        assert!(
            std::env::var_os("ZSEAL_REQUIRE_PEERS").is_none(),
            "crypt4gh (the reference, PyPI crypt4gh==1.8.6) is missing: run scripts/test-all"
        );
        eprintln!("skipped: no crypt4gh reference tool (scripts/test-all installs it)");
    }
    bin
}
