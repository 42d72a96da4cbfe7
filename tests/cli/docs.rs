//! The documentation's shell examples, run as typed (issue 59, point 2): every ```sh block of
//! README.md and docs/*.md, line by line in order, in a scene of its own (a fresh directory that
//! is also `$HOME`), with `zseal` on `PATH`.
//!
//! What a reader would have to supply is supplied the way the examples assume, and nothing more:
//! - placeholders: `age1…` and `age1old…` are `me.key`'s recipient, `age1new…` another key's,
//!   `"ssh-ed25519 AAAA…"` the SSH key's public line;
//! - the files a line reads and no earlier line wrote are made just before it: plaintexts (a
//!   `.tar` is a real tar), `me.key`, `~/.ssh/id_ed25519`, recipient lists, passphrase files, and
//!   sealed inputs (`.zseal`, `.age`, `.c4gh`) sealed to the scene's keys by this zseal;
//! - sizes in ranges are scaled down (`10G` reads as `10K`, `64M` as `64`): a test has no 10 GB
//!   file.
//!
//! Each line writes its outputs (`-o`, `>`) anew, as on a machine where they do not exist yet:
//! the lines of a block are alternatives as often as steps, and that zseal refuses to overwrite
//! without `--force` is tests/cli/outputs.rs's subject, not the documents'.
//!
//! Lines that cannot run offline are skipped, each kind for a reason named in [`SKIPPED`]. A
//! line that fails fails the test, naming the file, the line and what zseal said.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// What makes a line unrunnable here, and why.
const SKIPPED: &[(&str, &str)] = &[
    (
        "s3://",
        "needs an object store (tests/remote.rs runs these against moto)",
    ),
    ("gs://", "needs an object store (tests/remote.rs)"),
    ("az://", "needs an object store (tests/remote.rs)"),
    ("https://", "needs a web server (tests/remote.rs)"),
    (
        "aws ",
        "needs the aws CLI and a gateway (python/tests/test_gateway.py)",
    ),
    ("cargo ", "builds the project: the suite is that build"),
    ("scripts/", "the suite itself"),
    ("pip ", "installs the Python package: scripts/test-all does"),
    (
        "age1yubikey",
        "needs a YubiKey (tests/age/plugin.rs runs a test plugin)",
    ),
    (
        "age1tpm",
        "needs a TPM (tests/age/plugin.rs runs a test plugin)",
    ),
    (
        "zseal serve",
        "a server: tests/cli/serve.rs and python/tests/test_gateway.py",
    ),
    (
        "export AWS_",
        "a gateway client's key pair: python/tests/test_gateway.py runs the quick start as typed",
    ),
    (
        "./vault/",
        "an object a gateway stored: python/tests/test_gateway.py runs the quick start as typed",
    ),
    (
        "yubikey",
        "needs a YubiKey (tests/age/plugin.rs runs a test plugin)",
    ),
];

/// The Markdown files whose examples run.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut rest: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    rest.sort();
    docs.extend(rest);
    docs
}

/// One command of a block: its first line's number and its text, continuation lines joined and
/// the comment after it dropped.
struct Example {
    line: usize,
    text: String,
}

/// The ```sh blocks of `markdown`, each a list of commands.
fn blocks(markdown: &str) -> Vec<Vec<Example>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<Example>> = None;
    let mut pending: Option<Example> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_end();
        if current.is_none() {
            if trimmed == "```sh" {
                current = Some(Vec::new());
            }
            continue;
        }
        if trimmed == "```" {
            out.extend(current.take());
            continue;
        }
        let block = current.as_mut().expect("inside a block");
        let code = strip_comment(trimmed);
        let (code, continued) = match code.strip_suffix('\\') {
            Some(c) => (c.trim_end().to_string(), true),
            None => (code.trim_end().to_string(), false),
        };
        let mut ex = match pending.take() {
            Some(mut p) => {
                p.text.push(' ');
                p.text.push_str(code.trim_start());
                p
            }
            None => Example {
                line: i + 1,
                text: code,
            },
        };
        if continued {
            pending = Some(ex);
        } else if !ex.text.trim().is_empty() {
            ex.text = ex.text.trim().to_string();
            block.push(ex);
        }
    }
    out
}

/// `line` without a comment: a `#` after whitespace, outside quotes.
fn strip_comment(line: &str) -> String {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return line[..i].to_string();
            }
            _ => {}
        }
        prev = c;
    }
    line.to_string()
}

/// The words of a command, quotes removed, split at whitespace and at pipes and redirections.
fn words(command: &str) -> Vec<String> {
    let spaced = command
        .replace(">>", " >> ")
        .replace(['|', '<'], " ")
        .replace("&&", " ");
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in spaced.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            (_, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The flags after which a word names something a line writes, not reads.
const WRITES: &[&str] = &["-o", ">", ">>", "--export-signature", "-C"];

/// A directory where a block's examples run, made up as they need it.
struct Scene {
    dir: tempfile::TempDir,
    /// The block is about Crypt4GH: `alice.pub`/`alice.sec` are crypt4gh-keygen's keys, not
    /// SSH keys.
    crypt4gh: bool,
    /// The line being prepared opens its input with a passphrase: sealed inputs are sealed
    /// with the scene's ("correct horse", in every passphrase file it makes).
    passphrase: std::cell::Cell<bool>,
}

impl Scene {
    fn new(crypt4gh: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Scene {
            dir,
            crypt4gh,
            passphrase: std::cell::Cell::new(false),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    /// `zseal ARGS` in the scene; panics unless it succeeds.
    fn zseal(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new(env!("CARGO_BIN_EXE_zseal"))
            .args(args)
            .current_dir(self.path())
            .env("HOME", self.path())
            .env("ZSEAL_PASSPHRASE", "correct horse")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "setting the scene: zseal {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// The public line of the key file `name` (made if missing).
    fn recipient_of(&self, name: &str) -> String {
        self.provide(name);
        let text = std::fs::read_to_string(self.path().join(name)).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("# public key: "))
            .unwrap_or_else(|| panic!("{name} names no public key"))
            .to_string()
    }

    fn ssh_public(&self) -> String {
        let key = std::fs::read_to_string(Self::fixture("keys/ed25519.pub")).unwrap();
        key.trim().to_string()
    }

    /// `command` with its placeholders filled in and its sizes scaled down.
    fn fill(&self, command: &str) -> String {
        let mut c = command.to_string();
        if c.contains("age1new…") {
            c = c.replace("age1new…", &self.recipient_of("new.key"));
        }
        if c.contains("age1old…") || c.contains("age1…") {
            let me = self.recipient_of("me.key");
            c = c.replace("age1old…", &me).replace("age1…", &me);
        }
        c = c.replace("ssh-ed25519 AAAA…", &self.ssh_public());
        scale_sizes(&c)
    }

    /// Makes `name` if the scene lacks it, as the examples assume it to be.
    fn provide(&self, name: &str) {
        let name = name.strip_prefix("~/").unwrap_or(name);
        let path = self.path().join(name);
        if path.exists() || name.starts_with('-') || name.contains('=') {
            return;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        let copy = |from: &str| {
            std::fs::copy(Self::fixture(from), &path).unwrap();
        };
        let base = Path::new(name)
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or(name);
        match base {
            "me.key" | "key.txt" => copy("keys/age.key"),
            "new.key" => {
                self.zseal(&["keygen", "-o", name]);
            }
            "id_ed25519" => {
                copy("keys/ed25519");
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
            "alice.pub" | "me.pub" | "partner.pub" | "team.pub" if self.crypt4gh => {
                copy("crypt4gh/alice.pub")
            }
            "alice.sec" | "me.sec" if self.crypt4gh => copy("crypt4gh/alice.sec"),
            "alice.pub" | "bob.pub" => copy("keys/ed25519.pub"),
            "team.txt" | "team-2027.txt" | "team.keys" => {
                let lines = format!(
                    "# the team\n{}\n{}\n",
                    self.recipient_of("me.key"),
                    self.ssh_public()
                );
                std::fs::write(&path, lines).unwrap();
            }
            "allowed_signers" => {
                let line = format!("alice@example namespaces=\"zseal\" {}\n", self.ssh_public());
                std::fs::write(&path, line).unwrap();
            }
            "pw" | "old" | "new" | "passphrase.txt" => {
                std::fs::write(&path, "correct horse\n").unwrap()
            }
            "dir" => {
                std::fs::create_dir_all(path.join("sub")).unwrap();
                std::fs::write(path.join("a.txt"), "a\n").unwrap();
                std::fs::write(path.join("sub/b.txt"), b"b".repeat(5000)).unwrap();
            }
            _ => self.provide_data(name, base, &path),
        }
    }

    /// Plaintexts by their suffix, and sealed files sealed to the scene's keys.
    fn provide_data(&self, name: &str, base: &str, path: &Path) {
        for (suffix, format) in [
            (".zseal", None),
            (".age", Some("age")),
            (".c4gh", Some("crypt4gh")),
        ] {
            let Some(plain) = name.strip_suffix(suffix) else {
                continue;
            };
            let plain = if Path::new(plain).extension().is_some() {
                plain.to_string()
            } else {
                format!("{plain}.bin")
            };
            self.provide(&plain);
            if self.passphrase.get() {
                let mut args = vec!["encrypt", plain.as_str(), "-o", name];
                if let Some(f) = format {
                    args.extend(["--format", f]);
                }
                self.zseal(&args);
                return;
            }
            let me = self.recipient_of("me.key");
            let ssh = self.ssh_public();
            let mut args = vec!["encrypt", "-r", &me, "-r", &ssh];
            let alice = self.path().join("alice.pub");
            let alice = alice.to_str().unwrap().to_string();
            if format == Some("crypt4gh") && self.crypt4gh {
                self.provide("alice.pub");
                args.extend(["-R", &alice]);
            }
            if let Some(f) = format {
                args.extend(["--format", f]);
            }
            args.extend([plain.as_str(), "-o", name]);
            self.zseal(&args);
            return;
        }
        let ext = Path::new(base).extension().and_then(|e| e.to_str());
        match ext {
            Some("tar") => {
                self.provide("dir");
                let ok = Command::new("tar")
                    .args(["cf", name, "dir"])
                    .current_dir(self.path())
                    .status()
                    .unwrap();
                assert!(ok.success(), "tar cf {name}");
            }
            // What ranges in the examples read: big files are bigger than the ranges' offsets
            // (scaled, and the 50 MiB of "resume a broken copy").
            Some("bin" | "log" | "csv" | "txt" | "bam")
                if base.starts_with("big") || base.starts_with("reads") =>
            {
                std::fs::write(path, common::data(51 << 20)).unwrap()
            }
            Some("ndjson") => {
                let lines: String = (0..5000)
                    .map(|i| {
                        format!(
                            "{{\"id\":{i},\"name\":\"user {}\",\"active\":{}}}\n",
                            i * 7,
                            i % 3 == 0
                        )
                    })
                    .collect();
                std::fs::write(path, lines).unwrap()
            }
            Some("bin" | "log" | "csv" | "txt" | "bam") => {
                std::fs::write(path, common::data(100_000)).unwrap()
            }
            // Anything else (a signature, a dictionary) is what an earlier line writes: a line
            // that reads it before then fails, as it would for a reader.
            _ => {}
        }
    }
}

/// `10G` → `10K`, `64M` → `64` in `--range` arguments: the scene's files are small.
fn scale_sizes(command: &str) -> String {
    let mut out = Vec::new();
    let mut range_next = false;
    for w in command.split(' ') {
        if range_next {
            out.push(w.replace('G', "K").replace('M', ""));
        } else {
            out.push(w.to_string());
        }
        range_next = w == "--range";
    }
    out.join(" ")
}

/// The programs a line runs, besides zseal and the shell's own.
fn programs(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at_start = true;
    for w in command.split_whitespace() {
        let assignment = w.contains('=') && !w.starts_with('-');
        if at_start && !assignment {
            out.push(w.to_string());
        }
        at_start = matches!(w, "|" | "&&" | ";") || (at_start && assignment);
    }
    out
}

/// Runs every block of `doc`; returns how many lines ran and the failures.
fn run_document(doc: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(doc).unwrap();
    let name = doc.file_name().unwrap().to_string_lossy().to_string();
    let zseal_dir = Path::new(env!("CARGO_BIN_EXE_zseal")).parent().unwrap();
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin");
    let path = std::env::join_paths([zseal_dir.to_path_buf(), venv].into_iter().chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let (mut ran, mut failed) = (0, Vec::new());
    for block in blocks(&text) {
        let crypt4gh = block
            .iter()
            .any(|e| e.text.contains("c4gh") || e.text.contains("crypt4gh"));
        let scene = Scene::new(crypt4gh);
        for ex in &block {
            if let Some((_, why)) = SKIPPED.iter().find(|(k, _)| ex.text.contains(k)) {
                eprintln!("{name}:{}: skipped ({why}): {}", ex.line, ex.text);
                continue;
            }
            let missing: Vec<String> = programs(&ex.text)
                .into_iter()
                .filter(|p| !["zseal", "tar", "cmp", "echo"].contains(&p.as_str()))
                .filter(|p| {
                    common::peer_tool(p).is_none()
                        && !std::env::split_paths(&path).any(|d| d.join(p).exists())
                })
                .collect();
            if !missing.is_empty() {
                eprintln!("{name}:{}: skipped, {missing:?} not installed", ex.line);
                continue;
            }
            let command = scene.fill(&ex.text);
            let ws = words(&command);
            scene.passphrase.set(command.contains("--passphrase-file"));
            // What the line writes is removed first and never made up: it is the line's.
            let outputs: Vec<&String> = (1..ws.len())
                .filter(|&i| WRITES.contains(&ws[i - 1].as_str()))
                .map(|i| &ws[i])
                .collect();
            for (i, w) in ws.iter().enumerate() {
                if outputs.contains(&w) {
                    continue;
                }
                let after = |flags: &[&str]| i > 0 && flags.contains(&ws[i - 1].as_str());
                if after(&["-r", "--range", "-I", "-n"]) {
                    continue;
                }
                let writes = after(WRITES);
                let looks_like_file = w.contains('.')
                    || w.starts_with("~/")
                    || ["dir", "pw", "old", "new", "allowed_signers"].contains(&w.as_str());
                if !writes && looks_like_file && !w.starts_with('-') && !w.contains("://") {
                    scene.provide(w);
                }
            }
            for w in outputs {
                let out = scene.path().join(w.strip_prefix("~/").unwrap_or(w));
                if out.is_file() {
                    std::fs::remove_file(out).unwrap();
                }
            }
            eprintln!("{name}:{}: {command}", ex.line);
            let out = Command::new("timeout")
                .args(["120", "bash", "-o", "pipefail", "-c", &command])
                .current_dir(scene.path())
                .env("HOME", scene.path())
                .env("PATH", &path)
                .env("ZSEAL_PASSPHRASE", "correct horse")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .output()
                .unwrap();
            ran += 1;
            if !out.status.success() {
                failed.push(format!(
                    "{name}:{}: `{}` failed ({}):\n{}",
                    ex.line,
                    ex.text,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    (ran, failed)
}

/// Every runnable shell example of README.md and docs/*.md succeeds as typed.
#[test]
fn the_documented_commands_work_as_typed() {
    let (mut ran, mut failed) = (0, Vec::new());
    for doc in documents() {
        let (r, f) = run_document(&doc);
        ran += r;
        failed.extend(f);
    }
    assert!(
        failed.is_empty(),
        "{} of {ran} examples failed:\n\n{}",
        failed.len(),
        failed.join("\n\n")
    );
    // The documents hold about seventy runnable examples: a parser that found none would pass.
    assert!(ran >= 50, "only {ran} examples found");
}

/// The parser's rules on a block written for it: continuations, comments, quotes, placeholders
/// and scaled ranges.
#[test]
fn examples_are_read_as_a_shell_reads_them() {
    let md = "text\n```sh\nzseal a \"x # y\" # a comment\nzseal b \\\n  --c d   # more\n\n```\n```python\nnot run\n```\n";
    let b = blocks(md);
    assert_eq!(b.len(), 1);
    let texts: Vec<&str> = b[0].iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["zseal a \"x # y\"", "zseal b --c d"]);
    assert_eq!(b[0][1].line, 4);
    assert_eq!(
        words("zseal decrypt -i me.key < a.zseal | tar x >> out.bin"),
        ["zseal", "decrypt", "-i", "me.key", "a.zseal", "tar", "x", ">>", "out.bin"]
    );
    assert_eq!(
        scale_sizes("zseal decrypt --range 10G..10G+64M big.zseal"),
        "zseal decrypt --range 10K..10K+64 big.zseal"
    );
    assert_eq!(
        programs("A=1 age -d x | zstd -d && tar x"),
        ["age", "zstd", "tar"]
    );
}
