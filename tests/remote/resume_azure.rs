//! Resumable uploads into Azure (docs/OBJECTS.md §7, "On Azure") against Azurite: an upload is
//! Put Block and Put Block List, a resume lists the blob's uncommitted blocks (Get Block List)
//! and matches them to the journal by block id. Cut (the store refusing every block after N) or
//! SIGKILLed, resumed through a proxy that counts the blocks sent: only the missing ones go
//! up, and the blob decrypts to the source; a changed source and blocks the store dropped (the
//! blob committed by another writer meanwhile) end the job, naming why; a rotation in place
//! resumes too.

use super::*;
use std::sync::atomic::Ordering;

const MIB: usize = 1 << 20;

/// One test's container, source file and state directory (the journals).
struct Az {
    base: &'static str,
    container: String,
    dir: tempfile::TempDir,
    src: PathBuf,
    plain: Vec<u8>,
}

impl Az {
    /// Container `name` and a source of `size` bytes of noise.
    fn new(name: &str, size: usize) -> Option<Az> {
        let base = azurite()?;
        azure_container(base, name);
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.bin");
        let plain = common::noise(size, 52);
        std::fs::write(&src, &plain).unwrap();
        Some(Az {
            base,
            container: name.to_string(),
            dir,
            src,
            plain,
        })
    }

    fn url(&self, key: &str) -> String {
        format!("az://{}/{key}", self.container)
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `zseal` against Azurite through `endpoint`, with this test's journals.
    fn zs(&self, endpoint: &str) -> Command {
        let mut c = zseal(self.base);
        c.env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", endpoint)
            .env("XDG_STATE_HOME", self.state())
            // Long enough for a loaded machine's hiccups: the cuts are 403s, not retried.
            .env("ZSEAL_RETRY_TIMEOUT", "20");
        c
    }

    /// `encrypt SRC -o URL` as the S3 tests seal, with `extra`, through `endpoint`.
    fn encrypt(&self, endpoint: &str, url: &str, extra: &[&str]) -> Command {
        let mut c = self.zs(endpoint);
        c.arg("encrypt")
            .args(resuming::SEAL)
            .arg(pw())
            .args(["-o", url])
            .args(extra)
            .arg(&self.src);
        c
    }

    /// A first run whose blocks after the first `blocks` are refused: kept, journaling those.
    fn cut_after(&self, url: &str, blocks: u64) {
        let faults = proxy::Faults {
            drop_parts_after: blocks,
            refuse_dropped: true,
            ..Default::default()
        };
        let p = proxy::start(self.base, faults);
        let out = self
            .encrypt(&p.url, url, &[])
            .env("ZSEAL_PARTS_IN_FLIGHT", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("run the same command with --resume"), "{err}");
        assert!(
            err.contains(&format!("zseal resume --abort {url}")),
            "{err}"
        );
        let journaled = resuming::journaled_parts(&self.state());
        assert_eq!(journaled, Some(blocks as usize), "{err}");
    }

    /// Resumes through a counting proxy: the blocks sent.
    fn resume(&self, url: &str) -> u64 {
        let p = proxy::start(self.base, proxy::Faults::default());
        let out = self.encrypt(&p.url, url, &["--resume"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(resuming::journaled_parts(&self.state()), None, "{err}");
        p.seen.upload_parts.load(Ordering::SeqCst)
    }

    /// The blob's plaintext, or `None` when there is no blob (or it does not open).
    fn plaintext(&self, url: &str) -> Option<Vec<u8>> {
        let out = self
            .zs(self.base)
            .args(["decrypt", url, "--passphrase-file"])
            .arg(pw())
            .output()
            .unwrap();
        out.status.success().then_some(out.stdout)
    }
}

/// Cut after 2 blocks, then SIGKILLed once the journal held a block: each resume sends exactly
/// the blocks of an uninterrupted upload of the same file less those kept, and the blob
/// decrypts to the source; no journal is left.
#[test]
fn an_azure_upload_resumes_sending_only_the_missing_blocks() {
    let Some(az) = Az::new("resumes", 20 * MIB) else {
        return;
    };
    let p = proxy::start(az.base, proxy::Faults::default());
    az.encrypt(&p.url, &az.url("whole"), &[]).assert().success();
    let blocks = p.seen.upload_parts.load(Ordering::SeqCst);
    assert!(blocks >= 4, "{blocks} blocks");

    let cut = az.url("cut");
    az.cut_after(&cut, 2);
    assert!(
        az.plaintext(&cut).is_none(),
        "no blob before the completion"
    );
    assert_eq!(az.resume(&cut), blocks - 2);
    assert!(az.plaintext(&cut) == Some(az.plain.clone()));

    // SIGKILL once the journal holds a block (a slow link: half a second a block).
    let killed = az.url("killed");
    let slow = proxy::start(
        az.base,
        proxy::Faults {
            part_delay: Duration::from_millis(500),
            ..Default::default()
        },
    );
    let endpoint = ("AZURITE_BLOB_STORAGE_URL", slow.url.as_str());
    let kept = resuming::kill_once_journaled(az.base, endpoint, &az.state(), (&az.src, &killed), 1);
    assert!(kept >= 1 && kept < blocks, "{kept} of {blocks}");
    assert_eq!(az.resume(&killed), blocks - kept);
    assert!(az.plaintext(&killed) == Some(az.plain.clone()));
}

/// A resume is refused and the job ended (journal removed, nothing committed), naming why: the
/// bytes of a sent block changed under the same size and mtime; a journaled block the store
/// does not list (Azure drops uncommitted blocks after a week); the blob committed by another
/// writer meanwhile (Azure drops the uncommitted blocks then, Azurite keeps them and the
/// completion finds the blob), whose blob is left alone.
#[test]
fn an_azure_resume_is_refused_when_the_source_changed_or_the_blocks_are_gone() {
    let Some(az) = Az::new("refusals", 12 * MIB) else {
        return;
    };
    let url = az.url("k");
    az.cut_after(&url, 1);
    let mtime = std::fs::metadata(&az.src).unwrap().modified().unwrap();
    let mut changed = az.plain.clone();
    changed[1000] ^= 1;
    std::fs::write(&az.src, &changed).unwrap();
    let f = std::fs::File::options().write(true).open(&az.src).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    az.encrypt(az.base, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("(sent in part 1) are not what was sent"))
        .stderr(contains("run the command again without --resume"));
    assert_eq!(resuming::journaled_parts(&az.state()), None);
    assert!(az.plaintext(&url).is_none());

    // The journal names a block the store does not hold.
    std::fs::write(&az.src, &az.plain).unwrap();
    az.cut_after(&url, 2);
    let journal = resuming::journal_file(&az.state()).unwrap();
    let mut j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
    j["parts"][1]["etag"] = serde_json::Value::String("0".repeat(32));
    std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
    az.encrypt(az.base, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("the store no longer holds part 2"));
    assert_eq!(resuming::journaled_parts(&az.state()), None);
    assert!(az.plaintext(&url).is_none());

    az.cut_after(&url, 1);
    let theirs = tempfile::tempdir().unwrap();
    az.zs(az.base)
        .env("XDG_STATE_HOME", theirs.path())
        // --force: Azurite refuses `If-None-Match: *` on a blob with uncommitted blocks.
        .args(["encrypt", "-q", "-f", "-o", &url, "--passphrase-file"])
        .arg(pw())
        .write_stdin("another writer's blob")
        .assert()
        .success();
    az.encrypt(az.base, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("no longer holds part 1").or(contains(format!("{url} already exists"))));
    assert_eq!(resuming::journaled_parts(&az.state()), None);
    assert_eq!(
        az.plaintext(&url).as_deref(),
        Some(&b"another writer's blob"[..])
    );
}

/// `zseal resume --list` shows a pending az:// upload and `--abort` ends it: Azure has no abort,
/// so it says the blocks stay uncommitted until they expire, removes the journal, and no blob
/// appears; a new upload into the same name then commits its own blocks only and decrypts to
/// the source.
#[test]
fn an_azure_upload_is_listed_and_ended() {
    let Some(az) = Az::new("ends", 12 * MIB) else {
        return;
    };
    let url = az.url("k");
    az.cut_after(&url, 1);
    let listed = az.zs(az.base).args(["resume", "--list"]).output().unwrap();
    let text = String::from_utf8(listed.stdout).unwrap();
    assert!(
        text.starts_with(&format!("{url}\t")) && text.contains("1 parts"),
        "{text}"
    );
    az.zs(az.base)
        .args(["resume", "--abort", &url])
        .assert()
        .success()
        .stderr(contains("Azure has no abort"))
        .stderr(contains("the journal is removed"));
    assert_eq!(resuming::journaled_parts(&az.state()), None);
    az.zs(az.base)
        .args(["resume", "--list"])
        .assert()
        .success()
        .stdout("");
    assert!(az.plaintext(&url).is_none());
    // --force: Azurite refuses `If-None-Match: *` on a blob with uncommitted blocks.
    az.encrypt(az.base, &url, &["-f"]).assert().success();
    assert_eq!(az.plaintext(&url).as_deref(), Some(&az.plain[..]));
}

/// `rekey az://… --rotate` in place, cut after one block, resumes: the rest of the blocks sent,
/// the blob opens for the new key only, to the plaintext.
#[test]
fn an_azure_rotation_resumes() {
    let Some(az) = Az::new("rotation", 12 * MIB) else {
        return;
    };
    let (alice, alice_pub) = common::keygen_file(az.dir.path(), "alice.key");
    let (bob, bob_pub) = common::keygen_file(az.dir.path(), "bob.key");
    let url = az.url("r.zseal");
    az.zs(az.base)
        .args(["encrypt", "-q", "-c", "none", "--chunk-size", "1M"])
        .args(["-r", &alice_pub, "-o", &url])
        .arg(&az.src)
        .assert()
        .success();
    let zs = |endpoint: &str| az.zs(endpoint);
    let who = (alice.as_path(), bob_pub.as_str(), bob.as_path());
    let sent = resuming::rotation_resumes(az.base, zs, &az.state(), &url, &az.plain, who);
    assert!(sent >= 1, "{sent} blocks sent");
}
