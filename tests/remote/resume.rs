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
            // Short, so that the run ends soon after the cut; not 1 s, which a loaded machine's
            // first attempt of a request can use up before the cut ("connection closed before
            // message completed" from a pooled connection, and no retry left).
            .env("ZSEAL_RETRY_TIMEOUT", "3")
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
    // `zseal resume` lists the pending download.
    let listed = zseal(s.base)
        .env("XDG_STATE_HOME", s.state.path())
        .arg("resume")
        .output()
        .unwrap();
    let text = String::from_utf8(listed.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "{}\t-> {}\tdownload: {done} bytes kept",
            s.url,
            s.out().display()
        )),
        "{text}"
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

/// A download journal edited to name another file as its partial file (issue 55 §3) is not
/// followed: the resume is refused, naming both, and the other file is left as it was (before,
/// it was cut and filled with plaintext); --force starts over, removing only the partial file
/// that -o names.
#[test]
fn an_edited_download_journal_is_not_followed() {
    let Some(s) = Setup::new("resume-edited", SMALL) else {
        return;
    };
    s.cut_at(s.object_len() / 2);
    let victim = s.dir.path().join("victim.txt");
    std::fs::write(&victim, b"not zseal's to touch").unwrap();
    let dir = s.state.path().join("zseal");
    let journal = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("download-")
        })
        .unwrap();
    let mut j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
    j["partial"] = serde_json::Value::String(victim.display().to_string());
    std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
    s.decrypt(s.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("names"))
        .stderr(contains("victim.txt"))
        .stderr(contains(
            "it was edited or is damaged, so it is not followed",
        ));
    assert_eq!(std::fs::read(&victim).unwrap(), b"not zseal's to touch");
    s.decrypt(s.base, &["--force"]).assert().success();
    assert!(std::fs::read(s.out()).unwrap() == s.plain);
    assert_eq!(std::fs::read(&victim).unwrap(), b"not zseal's to touch");
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
        // Three quarters in, not half: the cut must fall after the opening's reads. At half
        // way a loaded run's zstd case was cut before its first chunk was written (nothing
        // to resume): the opening's GETs and read-ahead (two 5 MiB parts in flight) had used
        // the budget.
        s.cut_at(s.object_len() * 3 / 4);
        s.decrypt(s.base, &["--resume"]).assert().success();
        assert!(std::fs::read(s.out()).unwrap() == s.plain, "{codec}");
        assert!(!s.partial().exists() && s.journal().is_none());
    }
}

/// Resumable rotations (docs/OBJECTS.md §7, "Resuming a rotating rekey"): one object sealed for
/// alice, rotated to bob alone in place.
mod rotation {
    use super::*;

    pub struct Rot {
        pub base: &'static str,
        pub b: String,
        pub url: String,
        pub plain: Vec<u8>,
        pub dir: tempfile::TempDir,
        pub alice: PathBuf,
        pub alice_pub: String,
        pub bob: PathBuf,
        pub bob_pub: String,
    }

    impl Rot {
        pub fn new(name: &str, key: &str, size: usize) -> Option<Rot> {
            let base = moto()?;
            let b = bucket(base, name);
            let dir = tempfile::tempdir().unwrap();
            let (alice, alice_pub) = common::keygen_file(dir.path(), "alice.key");
            let (bob, bob_pub) = common::keygen_file(dir.path(), "bob.key");
            let r = Rot {
                base,
                url: format!("s3://{b}/{key}"),
                b,
                plain: common::noise(size, 50),
                dir,
                alice,
                alice_pub,
                bob,
                bob_pub,
            };
            r.seal_for(&r.alice_pub, &r.plain);
            Some(r)
        }

        /// Replaces the object with `plain` sealed for `public`.
        pub fn seal_for(&self, public: &str, plain: &[u8]) {
            zseal(self.base)
                .args(["encrypt", "-q", "-f", "-c", "none", "--chunk-size", "1M"])
                .args(["-r", public, "-o", &self.url])
                .write_stdin(plain.to_vec())
                .assert()
                .success();
        }

        pub fn state(&self) -> PathBuf {
            self.dir.path().join("state")
        }

        /// `zseal rekey URL --rotate -r bob --force -i alice ARGS…` through `endpoint`.
        pub fn rotate(&self, endpoint: &str, args: &[&str]) -> Command {
            let mut c = resuming::zs(self.base, endpoint, &self.state());
            c.args([
                "rekey",
                &self.url,
                "--rotate",
                "--force",
                "-r",
                &self.bob_pub,
            ])
            .arg("-i")
            .arg(&self.alice)
            .args(args);
            c
        }

        /// A first run whose connection dies after `parts` UploadParts: kept for --resume.
        pub fn cut_after(&self, parts: u64) {
            let p = proxy::start(
                self.base,
                proxy::Faults {
                    drop_parts_after: parts,
                    ..Default::default()
                },
            );
            self.rotate(&p.url, &[])
                .env("ZSEAL_PARTS_IN_FLIGHT", "1")
                .assert()
                .code(1)
                .stderr(contains("run the same command with --resume"));
            assert_eq!(
                resuming::journaled_parts(&self.state()),
                Some(parts as usize)
            );
        }

        pub fn bytes(&self) -> Vec<u8> {
            let key = self.url.rsplit('/').next().unwrap();
            object(self.base, &self.b, key).unwrap()
        }

        /// The object's plaintext with `key`, or `None` when it does not open.
        pub fn opens(&self, key: &Path) -> Option<Vec<u8>> {
            let out = zseal(self.base)
                .args(["decrypt", &self.url, "-i"])
                .arg(key)
                .output()
                .unwrap();
            out.status.success().then_some(out.stdout)
        }
    }
}

/// A rotation of an object in place, SIGKILLed once its journal holds two parts: a rerun
/// without --resume is refused before anything is sent; `--resume` (through a counting proxy)
/// sends exactly the parts of an uninterrupted rotation less those kept, and the object opens
/// for bob only, to the plaintext, every frame as long as before (rotation re-seals, it does
/// not recompress). No upload and no journal are left.
#[test]
fn a_killed_rotation_resumes_sending_only_the_missing_parts() {
    let Some(r) = rotation::Rot::new("rotate-resume", "r.zseal", BIG) else {
        return;
    };
    // Uninterrupted, on a copy: how many parts a rotation of this object makes.
    let whole = rotation::Rot {
        url: format!("s3://{}/whole.zseal", r.b),
        b: r.b.clone(),
        plain: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
        alice: r.alice.clone(),
        alice_pub: r.alice_pub.clone(),
        bob: r.bob.clone(),
        bob_pub: r.bob_pub.clone(),
        base: r.base,
    };
    whole.seal_for(&r.alice_pub, &r.plain);
    let before = r.bytes();
    let p = proxy::start(r.base, proxy::Faults::default());
    whole
        .rotate(&p.url, &[])
        .assert()
        .success()
        .stderr(contains("part(s) sent, 0 kept"));
    let parts = p.seen.upload_parts.load(Ordering::SeqCst);
    assert!(parts >= 5, "{parts} parts");
    assert_eq!(resuming::journaled_parts(&whole.state()), None);
    assert!(whole.opens(&r.bob) == Some(r.plain.clone()));

    // A slow link, a second a part: the journal (written at most once a second) holds two
    // parts a second or more before the last of the 5 is acknowledged and the upload
    // completed, so the kill lands before that.
    let slow = proxy::start(
        r.base,
        proxy::Faults {
            part_delay: Duration::from_millis(1000),
            ..Default::default()
        },
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"))
        .args([
            "rekey", &r.url, "--rotate", "--force", "-r", &r.bob_pub, "-i",
        ])
        .arg(&r.alice)
        .envs(zseal_env(r.base))
        .env("AWS_ENDPOINT_URL", &slow.url)
        .env("XDG_STATE_HOME", r.state())
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while resuming::journaled_parts(&r.state()).unwrap_or(0) < 2 {
        assert!(
            Instant::now() < deadline,
            "the journal never held two parts"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let kept = resuming::journaled_parts(&r.state()).unwrap() as u64;
    assert!(kept >= 2 && kept < parts, "{kept} of {parts}");
    assert!(
        r.bytes() == before,
        "the object is as it was until completion"
    );

    // Without --resume: refused, nothing sent.
    let p = proxy::start(r.base, proxy::Faults::default());
    r.rotate(&p.url, &[])
        .assert()
        .code(1)
        .stderr(contains("has a pending resumable upload"))
        .stderr(contains("add --resume to continue it"));
    assert_eq!(p.seen.requests.load(Ordering::SeqCst), 0);

    let p = proxy::start(r.base, proxy::Faults::default());
    r.rotate(&p.url, &["--resume"])
        .assert()
        .success()
        .stderr(contains(format!(
            "{} part(s) sent, {kept} kept from before",
            parts - kept
        )));
    assert_eq!(p.seen.upload_parts.load(Ordering::SeqCst), parts - kept);
    assert_eq!(resuming::journaled_parts(&r.state()), None);
    assert_eq!(uploads_in_progress(r.base, &r.b), 0);
    assert!(r.opens(&r.bob) == Some(r.plain.clone()), "bob opens it");
    assert!(r.opens(&r.alice).is_none(), "alice was rotated out");
    let after = r.bytes();
    let old_header = zseal::Locked::read(&before[..]).unwrap().header_len() as usize;
    let new_header = zseal::Locked::read(&after[..]).unwrap().header_len() as usize;
    assert_eq!(after.len() - new_header, before.len() - old_header);
    resuming::zs(r.base, r.base, &r.state())
        .args(["verify", &r.url, "-i"])
        .arg(&r.bob)
        .assert()
        .success();
}

/// A resumed rotation is refused, naming why, and the job ended (upload aborted, journal
/// removed): a kept part that does not re-seal to what the journal says was sent; the object
/// replaced since the rotation began (named, with both ETags). --resume with nothing pending,
/// or on a local file, says so.
#[test]
fn a_resumed_rotation_is_refused_when_the_object_or_a_kept_part_changed() {
    let Some(r) = rotation::Rot::new("rotate-refused", "r.zseal", SMALL) else {
        return;
    };
    r.rotate(r.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("there is no pending rotation of"));

    // A kept part whose hash in the journal is not what re-sealing the object gives.
    r.cut_after(1);
    let journal = resuming::journal_file(&r.state()).unwrap();
    let mut j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
    j["parts"][0]["sealed_blake3"] = serde_json::Value::String("00".repeat(32));
    std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
    r.rotate(r.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(
            "part 1 made again from the object is not what was sent",
        ))
        .stderr(contains("run the command again without --resume"));
    assert_eq!(resuming::journaled_parts(&r.state()), None);
    assert_eq!(uploads_in_progress(r.base, &r.b), 0);

    // The object replaced between the runs.
    r.cut_after(1);
    let other = common::noise(8 * MIB, 51);
    r.seal_for(&r.alice_pub, &other);
    r.rotate(r.base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(format!(
            "{} was replaced since the rotation began (ETag",
            r.url
        )));
    assert_eq!(resuming::journaled_parts(&r.state()), None);
    assert_eq!(uploads_in_progress(r.base, &r.b), 0);
    assert!(
        r.opens(&r.alice) == Some(other),
        "the replacement is untouched"
    );
}

/// A signed container (`--sign`) into an object is a resumable upload. Cut after one part, a
/// resume without the key is refused as other options (the journal names the signing keys: the
/// header sent says the file is signed); with it, the rest is sent and the trailer holds the
/// signature over the merged digest, which `verify --signer` finds good. (Regression first:
/// the keys must be in the options the route decides by, else the container went up unsigned.)
#[test]
fn a_signed_container_into_an_object_is_signed_and_resumes() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "signed-upload");
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let keys = common::keys();
    let src = d.path().join("plain");
    std::fs::write(&src, common::noise(SMALL, 51)).unwrap();
    let url = format!("s3://{b}/signed.zseal");
    let recipient = std::fs::read_to_string(keys.join("age.pub")).unwrap();
    let encrypt = |endpoint: &str, extra: &[&str]| {
        let mut c = resuming::zs(base, endpoint, &state);
        c.args(["encrypt", "-q", "-r", recipient.trim(), "-o", &url])
            .args(extra)
            .arg(&src);
        c
    };
    let sign = keys.join("ed25519");
    let sign = sign.to_str().unwrap();
    let cut = proxy::start(
        base,
        proxy::Faults {
            drop_parts_after: 1,
            ..Default::default()
        },
    );
    encrypt(&cut.url, &["--sign", sign])
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .assert()
        .code(1)
        .stderr(contains("run the same command with --resume"));
    assert_eq!(resuming::journaled_parts(&state), Some(1));
    encrypt(base, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("signed by SHA256:"));
    assert_eq!(resuming::journaled_parts(&state), Some(1), "still pending");
    let p = proxy::start(base, proxy::Faults::default());
    encrypt(&p.url, &["--sign", sign, "--resume"])
        .assert()
        .success();
    assert!(p.seen.upload_parts.load(Ordering::SeqCst) >= 1);
    assert_eq!(resuming::journaled_parts(&state), None);
    zseal(base)
        .args(["verify", &url, "--signer"])
        .arg(keys.join("ed25519.pub"))
        .arg("-i")
        .arg(keys.join("age.key"))
        .assert()
        .success()
        .stderr(contains("good signature by"));
}
