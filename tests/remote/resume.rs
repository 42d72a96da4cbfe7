//! Resumable downloads (issue 47 §2, docs/OBJECTS.md "Resuming a download"): a decrypt from an
//! object into a file that is cut (a connection lost for good, or SIGKILL) keeps its
//! authenticated part in `FILE.zseal-partial` with a journal; `--resume` fetches only the rest,
//! counted by the proxy, and checks the whole file; a replaced object, a damaged or shortened
//! partial file and a pending download without `--resume` are refused, each naming why.

use super::*;
use std::sync::atomic::Ordering;

/// The objects' plaintext: noise in 1 MiB chunks, stored raw; 24 MiB where the bytes fetched
/// are measured or a stall must find chunks written (they are, a window behind the reading), 12
/// MiB elsewhere (every MiB moto serves is CI time).
const MIB: usize = 1 << 20;
const BIG: usize = 24 * MIB;
const SMALL: usize = 12 * MIB;

/// One test's bucket, object, plaintext, work directory and state directory (the journals).
struct Setup {
    base: &'static str,
    url: String,
    plain: Vec<u8>,
    dir: tempfile::TempDir,
    state: tempfile::TempDir,
    /// How the key is given to decrypt.
    key: Vec<std::ffi::OsString>,
}

impl Setup {
    fn new(name: &str, size: usize) -> Option<Setup> {
        let base = moto()?;
        let b = bucket(base, name);
        let url = format!("s3://{b}/big.zseal");
        let plain = common::noise(size, 47);
        seal_into(base, &url, &plain, &["-c", "none", "--chunk-size", "1M"]);
        Some(Setup {
            base,
            url,
            plain,
            dir: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            key: vec!["--passphrase-file".into(), pw().into()],
        })
    }

    /// The same with an age file (compressed with `codec`) for the fixtures' age key.
    fn age(name: &str, codec: &str) -> Option<Setup> {
        let base = moto()?;
        let b = bucket(base, name);
        let url = format!("s3://{b}/big.age");
        let plain = common::noise(BIG, 49);
        let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
        zseal(base)
            .args([
                "encrypt",
                "--format",
                "age",
                "-c",
                codec,
                "--chunk-size",
                "1M",
            ])
            .args(["-q", "-r", public.trim(), "-o", &url])
            .write_stdin(plain.clone())
            .assert()
            .success();
        Some(Setup {
            base,
            url,
            plain,
            dir: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            key: vec!["-i".into(), common::keys().join("age.key").into()],
        })
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("big")
    }

    fn partial(&self) -> PathBuf {
        self.dir.path().join("big.zseal-partial")
    }

    /// `zseal decrypt URL -o OUT ARGS…` through the store at `endpoint`.
    fn decrypt(&self, endpoint: &str, args: &[&str]) -> Command {
        let mut c = zseal(self.base);
        c.env("AWS_ENDPOINT_URL", endpoint)
            .env("XDG_STATE_HOME", self.state.path())
            .args(["decrypt", &self.url, "-o"])
            .arg(self.out())
            .args(args)
            .args(&self.key);
        c
    }

    /// The one download journal, parsed.
    fn journal(&self) -> Option<serde_json::Value> {
        let dir = self.state.path().join("zseal");
        let found = std::fs::read_dir(dir).ok()?.flatten().find(|e| {
            let name = e.file_name();
            name.to_string_lossy().starts_with("download-")
        })?;
        serde_json::from_slice(&std::fs::read(found.path()).unwrap()).ok()
    }

    fn done(&self) -> u64 {
        self.journal().and_then(|j| j["done"].as_u64()).unwrap_or(0)
    }

    /// A first run through a proxy that loses the connection for good after `cut` bytes: it
    /// fails, saying how to go on, and keeps an authenticated prefix and its journal.
    fn cut_at(&self, cut: u64) {
        let p = proxy::start(
            self.base,
            proxy::Faults {
                cut_after: cut,
                ..proxy::Faults::default()
            },
        );
        self.decrypt(&p.url, &[])
            .env("ZSEAL_RETRY_TIMEOUT", "1")
            .env("ZSEAL_PARTS_IN_FLIGHT", "1")
            .assert()
            .code(1)
            .stderr(contains("run the same command with --resume"));
        self.check_kept();
    }

    /// No output yet; the partial file (0600) holds only plaintext, as much as the journal
    /// vouches for.
    fn check_kept(&self) {
        use std::os::unix::fs::PermissionsExt;
        assert!(
            !self.out().exists(),
            "no output before the whole file is checked"
        );
        let kept = std::fs::read(self.partial()).unwrap();
        let mode = std::fs::metadata(self.partial())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let done = self.done() as usize;
        assert!((MIB..self.plain.len()).contains(&done), "kept {done}");
        assert!(kept.len() >= done);
        assert!(
            kept[..] == self.plain[..kept.len()],
            "only plaintext is kept"
        );
    }

    /// The object's size.
    fn object_len(&self) -> u64 {
        let (b, key) = self
            .url
            .trim_start_matches("s3://")
            .split_once('/')
            .unwrap();
        object(self.base, b, key).unwrap().len() as u64
    }
}

/// Cut at 60 %: a plain rerun is refused and says --resume; `--resume` (through a counting
/// proxy) fetches the container from the kept part on, plus no more than the header, the trailer
/// and one chunk, and the output is exact; the partial file and the journal are gone.
#[test]
fn a_cut_download_resumes_and_fetches_only_what_it_lacks() {
    let Some(s) = Setup::new("resume-cut", BIG) else {
        return;
    };
    let len = s.object_len();
    s.cut_at(len * 6 / 10);
    let done = s.done();
    let before = std::fs::read(s.partial()).unwrap();
    s.decrypt(s.base, &[])
        .assert()
        .code(1)
        .stderr(contains(
            "add --resume to continue it, or --force to start over",
        ))
        .stderr(contains(s.partial().display().to_string()));
    assert!(
        std::fs::read(s.partial()).unwrap() == before,
        "left as it was"
    );
    let p = proxy::start(s.base, proxy::Faults::default());
    s.decrypt(&p.url, &["--resume"]).assert().success();
    assert!(
        std::fs::read(s.out()).unwrap() == s.plain,
        "the output is exact"
    );
    assert!(!s.partial().exists() && s.journal().is_none());
    let sent = p.seen.body_bytes.load(Ordering::Relaxed);
    // The container bytes after the kept chunks, plus the header, the trailer and a chunk.
    let kept_frames = done / MIB as u64 * (MIB as u64 + 22);
    let lacked = len - kept_frames;
    assert!(
        sent <= lacked + MIB as u64 + 64 * 1024,
        "fetched {sent} for {lacked} lacking"
    );
    assert!(done >= 8 << 20, "kept only {done} of a cut at 60 %");
}

/// SIGKILL while the transfer stalls: the journal written before the kill (at most a second
/// old) is enough for `--resume` to finish the file exactly.
#[test]
fn a_killed_download_resumes() {
    let Some(s) = Setup::new("resume-kill", BIG) else {
        return;
    };
    let p = proxy::start(
        s.base,
        proxy::Faults {
            stall_after: 10 << 20,
            ..proxy::Faults::default()
        },
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"))
        .envs(zseal_env(s.base))
        .env("AWS_ENDPOINT_URL", &p.url)
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .env("XDG_STATE_HOME", s.state.path())
        .args(["decrypt", &s.url, "-o"])
        .arg(s.out())
        .args(&s.key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // The engine writes a chunk once it is opened, while the reading thread can still read:
    // a stalled read holds back the chunks in flight behind it.
    while s.done() < 4 << 20 {
        assert!(Instant::now() < deadline, "no checkpoint");
        std::thread::sleep(Duration::from_millis(50));
    }
    s.decrypt(s.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("another zseal is downloading into"));
    child.kill().unwrap();
    child.wait().unwrap();
    s.check_kept();
    s.decrypt(s.base, &["--resume"]).assert().success();
    assert!(std::fs::read(s.out()).unwrap() == s.plain);
    assert!(!s.partial().exists() && s.journal().is_none());
}

/// An object replaced since the cut is refused by name (its ETag changed), and the kept part is
/// left; `--force` starts over and gives the new object's plaintext.
#[test]
fn a_replaced_object_is_not_resumed() {
    let Some(s) = Setup::new("resume-replaced", SMALL) else {
        return;
    };
    s.cut_at(s.object_len() / 2);
    let other = common::noise(SMALL, 48);
    zseal(s.base)
        .args(["encrypt", "-q", "-f", "-c", "none", "-o", &s.url])
        .arg("--passphrase-file")
        .arg(pw())
        .write_stdin(other.clone())
        .assert()
        .success();
    s.decrypt(s.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(format!("{} changed since the download", s.url)));
    assert!(!s.out().exists() && s.partial().exists());
    s.decrypt(s.base, &["--force"]).assert().success();
    assert!(std::fs::read(s.out()).unwrap() == other);
    assert!(!s.partial().exists() && s.journal().is_none());
}

/// A byte flipped in the kept part is caught by the whole-file digest at the end (the fetched
/// rest is authenticated; the kept part is hashed again): no output, the partial file and the
/// journal removed, and a plain rerun works. A partial file shorter than its journal vouches
/// for is refused, not silently restarted.
#[test]
fn a_damaged_or_shortened_partial_file_is_refused() {
    let Some(s) = Setup::new("resume-damaged", SMALL) else {
        return;
    };
    s.cut_at(s.object_len() / 2);
    let mut kept = std::fs::read(s.partial()).unwrap();
    kept[MIB / 2 + 7] ^= 0x40;
    std::fs::write(s.partial(), &kept).unwrap();
    s.decrypt(s.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("were changed or damaged since"));
    assert!(!s.out().exists() && !s.partial().exists() && s.journal().is_none());

    s.cut_at(s.object_len() / 2);
    let done = s.done();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(s.partial())
        .unwrap();
    f.set_len(done - 1).unwrap();
    s.decrypt(s.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(format!("but its journal vouches for {done}")));
    assert!(
        s.partial().exists() && s.journal().is_some(),
        "left for the user"
    );
    s.decrypt(s.base, &["--force"]).assert().success();
    assert!(std::fs::read(s.out()).unwrap() == s.plain);
}

/// `--resume` where nothing can be resumed says why: standard output, a range (clap), a local
/// input. With no pending download, `--resume` simply downloads.
#[test]
fn resume_is_refused_where_it_cannot_work() {
    let Some(s) = Setup::new("resume-refused", SMALL) else {
        return;
    };
    zseal(s.base)
        .env("XDG_STATE_HOME", s.state.path())
        .args(["decrypt", &s.url, "--resume", "--passphrase-file"])
        .arg(pw())
        .assert()
        .code(1)
        .stderr(contains("--resume needs -o FILE"));
    s.decrypt(s.base, &["--resume", "--range", "0..10"])
        .assert()
        .code(2);
    let local = s.dir.path().join("local.zseal");
    std::fs::write(&local, b"not read").unwrap();
    zseal(s.base)
        .args(["decrypt", "--resume", "-o"])
        .arg(s.dir.path().join("x"))
        .arg(&local)
        .arg("--passphrase-file")
        .arg(pw())
        .assert()
        .code(1)
        .stderr(contains("--resume is for a download from an object"));
    // Without a state directory a download still works, not resumable; --resume says why.
    let nowhere = |c: &mut Command| {
        c.env_remove("XDG_STATE_HOME").env("HOME", "relative");
    };
    let mut c = s.decrypt(s.base, &["--resume"]);
    nowhere(&mut c);
    c.assert()
        .code(1)
        .stderr(contains("cannot place the resume journal"));
    let mut c = s.decrypt(s.base, &[]);
    nowhere(&mut c);
    c.assert().success();
    assert!(std::fs::read(s.out()).unwrap() == s.plain);
    std::fs::remove_file(s.out()).unwrap();
    s.decrypt(s.base, &["--resume"]).assert().success();
    assert!(std::fs::read(s.out()).unwrap() == s.plain);
    assert!(s.journal().is_none());
}

/// An age file resumes too, stored and compressed (its seekable zstd): each chunk fetched is
/// authenticated and the last chunk ends it (age has no whole-file digest, docs/OBJECTS.md).
#[test]
fn an_age_download_resumes() {
    for codec in ["none", "zstd"] {
        let Some(s) = Setup::age(&format!("resume-age-{codec}"), codec) else {
            return;
        };
        s.cut_at(s.object_len() / 2);
        s.decrypt(s.base, &["--resume"]).assert().success();
        assert!(std::fs::read(s.out()).unwrap() == s.plain, "{codec}");
        assert!(!s.partial().exists() && s.journal().is_none());
    }
}
