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
use predicates::str::contains;

mod common;

/// The running server's base URL (`http://127.0.0.1:PORT`), or `None` to skip.
fn moto() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(start_moto).as_deref()
}

fn start_moto() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        std::env::var_os("ZSEAL_MOTO_SERVER").map(PathBuf::from),
        Some(root.join("target/pyenv/bin/moto_server")),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find(|p| p.exists())
        .or_else(|| {
            let out = Std::new("sh")
                .args(["-c", "command -v moto_server"])
                .output()
                .ok()?;
            let p = String::from_utf8(out.stdout).ok()?.trim().to_string();
            (!p.is_empty()).then(|| PathBuf::from(p))
        });
    let Some(server) = found else {
        assert!(
            std::env::var_os("ZSEAL_REQUIRE_PEERS").is_none(),
            "moto_server is missing (ZSEAL_REQUIRE_PEERS is set): run scripts/test-all"
        );
        eprintln!("skipped: no moto_server (scripts/test-all installs it into target/pyenv)");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A watchdog shell: the server lives while this test process does, and no longer.
    let script = format!(
        "'{}' -H 127.0.0.1 -p {port} >/dev/null 2>&1 & m=$!; trap 'kill $m' EXIT; \
         while kill -0 {} 2>/dev/null; do sleep 0.5; done",
        server.display(),
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
    while raw(&url, "GET", "/moto-api/", b"").map_or(true, |(s, _)| s != 200) {
        assert!(Instant::now() < deadline, "moto_server did not start");
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
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n{extra}\
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
    c.env_remove("ZSEAL_PASSPHRASE")
        .env_remove("AWS_PROFILE")
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

/// A range fetches the header, the trailer and the frames it covers, within 10 % (the bytes
/// the server sent, as the reader counts them); a whole decrypt fetches the object once.
#[test]
fn a_range_fetches_only_its_frames() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "ranges");
    const C: u64 = 1 << 20;
    let plain = common::noise(40 << 20, 9);
    let url = format!("s3://{b}/r.zseal");
    zseal(base)
        .args([
            "encrypt",
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
        .success();
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
        assert!(
            fetched * 10 <= needed * 11,
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
    zseal(base)
        .args([
            "encrypt",
            "-c",
            "none",
            "-q",
            "--force",
            "-o",
            &format!("s3://{b}/kept"),
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin(big.clone())
        .assert()
        .success();
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
    // 24 MiB sealed in 1 MiB chunks; chunk 17's body damaged: 17 chunks of plaintext (three
    // 5 MiB parts) go up before the failure.
    let plain = common::noise(24 << 20, 4);
    let sealed = d.path().join("s.zseal");
    zseal(base)
        .args(["encrypt", "-c", "none", "--chunk-size", "1M", "-q", "-o"])
        .arg(&sealed)
        .arg("--passphrase-file")
        .arg(pw())
        .write_stdin(plain)
        .assert()
        .success();
    let mut bytes = std::fs::read(&sealed).unwrap();
    let header_len = zseal::Locked::read(&bytes[..]).unwrap().header_len() as usize;
    let frame = (1 << 20) + 22;
    let at = header_len + 17 * frame + 600;
    bytes[at] ^= 1;
    std::fs::write(&sealed, &bytes).unwrap();
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

/// The environment `zseal()` sets, for a child started without assert_cmd.
fn zseal_env(base: &str) -> Vec<(String, String)> {
    let c = zseal(base);
    c.get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
        .collect()
}

fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    Command::cargo_bin("zseal")
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

/// `rekey` of an object in place uploads the new header and the first 5 MiB of payload and has
/// the store copy the rest (UploadPartCopy): the revoked key no longer opens it, the kept one
/// reads the same plaintext, and no upload is left. `--rotate` streams instead, and says so.
#[test]
fn rekey_in_place_copies_the_payload_server_side() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "rekey");
    let d = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keygen(d.path(), "alice.key");
    let (bob, bob_pub) = keygen(d.path(), "bob.key");
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
    // --rotate: every frame sealed again, streamed through the client.
    zseal(base)
        .args(["rekey", &url, "--rotate", "-r", &bob_pub, "-i"])
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
    zseal(base)
        .args([
            "encrypt",
            "--chunk-size",
            "1M",
            "-q",
            "-o",
            &format!("s3://{b}/p.zseal"),
            "--passphrase-file",
        ])
        .arg(pw())
        .write_stdin(plain.clone())
        .assert()
        .success();
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
    run(&["decrypt", "s3://no-such-bucket/x"]).stderr(contains("s3://no-such-bucket/x"));
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
