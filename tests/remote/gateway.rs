//! The S3 gateway (`zseal serve s3`, docs/GATEWAY.md) with an object store as its backend: behind
//! the fault-injecting proxy, the store's 503s are retried as for the command line (issue 45 §6);
//! on az:// (Azurite) and on gs:// (tests/support/gcs_xml_stub.py), a round trip.
//! zseal itself is the gateway's S3 client, so the object written through the gateway is a
//! container holding a container.

use super::*;
use std::io::{BufRead, BufReader};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

const ACCESS: &str = "gatewaykey";
const SECRET: &str = "gateway-secret-0123456789";

/// A running `zseal serve s3`: its URL and its log lines so far; killed when dropped.
struct Gateway {
    child: std::process::Child,
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `zseal serve s3 ROOT` on a free port, with a new key (`DIR/gateway.key`), its S3
/// requests sent to `store`, and `env` besides.
fn start_gateway(store: &str, root: &str, dir: &Path, env: &[(&str, &str)]) -> Gateway {
    let key = dir.join("gateway.key");
    zseal(store)
        .args(["keygen", "-o"])
        .arg(&key)
        .assert()
        .success();
    let text = std::fs::read_to_string(&key).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();
    let creds = dir.join("creds");
    std::fs::write(&creds, format!("{ACCESS} {SECRET}\n")).unwrap();
    let mut child = Std::new(assert_cmd::cargo::cargo_bin("zseal"))
        .args(["serve", "s3", root, "--listen", "127.0.0.1:0", "-j", "2"])
        .args(["-r", &recipient, "-i"])
        .arg(&key)
        .arg("--credentials")
        .arg(&creds)
        .envs(zseal_env(store))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the gateway ended before listening")
            .unwrap();
        if let Some(url) = line.split("listening on ").nth(1) {
            break url.trim().to_string();
        }
    };
    // Its log is read all along, so that it never waits on a full pipe.
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    Gateway { child, url, log }
}

/// Every other request from the gateway to the store is answered 503 SlowDown: a multipart PUT
/// (three 5 MiB parts) and a ranged GET through the gateway still succeed, no request of the
/// client is answered with a 5xx, and the store keeps no upload.
#[test]
fn the_gateway_retries_its_stores_503s() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "gateway-503");
    // Gateway bucket `vault` is the prefix `gw/vault/`; its marker makes it exist.
    let (status, _) = raw(
        base,
        "PUT",
        &format!("/{b}/gw/vault/.zseal-gateway/bucket"),
        b"",
    )
    .unwrap();
    assert_eq!(status, 200);
    let faults = proxy::Faults {
        unavailable_every: 2,
        ..proxy::Faults::default()
    };
    let p = proxy::start(base, faults);
    let dir = tempfile::tempdir().unwrap();
    let gw = start_gateway(&p.url, &format!("s3://{b}/gw"), dir.path(), &[]);
    let plain = common::noise(12 << 20, 45);
    put_through(&gw, &plain);
    let out = through(&gw)
        .args(["decrypt", "s3://vault/o.zseal", "--range", "5M..7M"])
        .arg("--passphrase-file")
        .arg(pw())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain[5 << 20..7 << 20]);
    let served = p.seen.faults_served.load(Ordering::Relaxed);
    assert!(served >= 3, "only {served} 503s were served");
    assert!(p.seen.upload_parts.load(Ordering::Relaxed) >= 3);
    let log = gw.log.lock().unwrap().clone();
    let failed: Vec<&String> = log.iter().filter(|l| answered_5xx(l)).collect();
    assert!(failed.is_empty(), "answered 5xx: {failed:?}");
    assert_eq!(uploads_in_progress(base, &b), 0);
}

/// `zseal` as the gateway's S3 client.
fn through(gw: &Gateway) -> Command {
    let mut c = zseal(&gw.url);
    c.env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET);
    c
}

/// `plain` sealed by zseal (passphrase, stored raw) into object `o.zseal` of gateway bucket
/// `vault`: a multipart PUT of 5 MiB parts once over 5 MiB.
fn put_through(gw: &Gateway, plain: &[u8]) {
    through(gw)
        .args(["encrypt", "-c", "none", "-q", "-o", "s3://vault/o.zseal"])
        .arg("--passphrase-file")
        .arg(pw())
        .write_stdin(plain.to_vec())
        .assert()
        .success();
}

/// A gateway on az:// (Azurite): a multipart PUT through it, a GET back, and the stored object
/// opened by `zseal decrypt` straight from the container with the gateway's key.
#[test]
fn the_gateway_on_azure_through_azurite() {
    let Some(base) = azurite() else { return };
    azure_container(base, "gateway");
    let env = [
        ("AZURE_STORAGE_USE_EMULATOR", "true"),
        ("AZURITE_BLOB_STORAGE_URL", base),
    ];
    // Gateway bucket `vault` is the prefix `gw/vault/`: any object below it makes it exist.
    let marker = "az://gateway/gw/vault/.zseal-gateway/bucket";
    in_store(base, &env, &["encrypt", "-q", "-o", marker])
        .write_stdin("")
        .assert()
        .success();
    let dir = tempfile::tempdir().unwrap();
    let gw = start_gateway(base, "az://gateway/gw", dir.path(), &env);
    let plain = common::noise((12 << 20) + 7, 46);
    put_through(&gw, &plain);
    let out = through(&gw)
        .args(["decrypt", "s3://vault/o.zseal", "--passphrase-file"])
        .arg(pw())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout == plain);
    // At rest: a container sealed to the gateway's key, holding the client's container.
    let stored = zseal(base)
        .envs(env)
        .args(["decrypt", "az://gateway/gw/vault/o.zseal", "-i"])
        .arg(dir.path().join("gateway.key"))
        .output()
        .unwrap();
    assert!(stored.status.success(), "{stored:?}");
    zseal(base)
        .args(["decrypt", "--passphrase-file"])
        .arg(pw())
        .write_stdin(stored.stdout)
        .assert()
        .success()
        .stdout(predicate::eq(plain));
    let log = gw.log.lock().unwrap().clone();
    let failed: Vec<&String> = log.iter().filter(|l| answered_5xx(l)).collect();
    assert!(failed.is_empty(), "answered 5xx: {failed:?}");
}

/// The aws CLI (python/requirements-test.txt: awscli) run by target/pyenv's Python, or `None`
/// (skip) when it is not installed, unless ZSEAL_REQUIRE_PEERS is set (CI), where that fails.
fn aws_cli() -> Option<(PathBuf, PathBuf)> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin");
    let (python, aws) = (bin.join("python"), bin.join("aws"));
    if python.exists() && aws.exists() {
        return Some((python, aws));
    }
    assert!(
        std::env::var_os("ZSEAL_REQUIRE_PEERS").is_none(),
        "the aws CLI is missing (ZSEAL_REQUIRE_PEERS is set): run scripts/test-all"
    );
    eprintln!("skipped: no aws CLI in target/pyenv (scripts/test-all installs it)");
    None
}

/// `aws --endpoint-url GATEWAY ARGS…` with the gateway's credentials and no configuration files
/// (`dir/none`): its standard output; the command must succeed.
fn aws(cli: &(PathBuf, PathBuf), gw: &Gateway, dir: &Path, args: &[&str]) -> String {
    let none = dir.join("none");
    let out = Std::new(&cli.0)
        .arg(&cli.1)
        .args(["--endpoint-url", &gw.url])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", &none)
        .env("AWS_SHARED_CREDENTIALS_FILE", &none)
        .output()
        .unwrap();
    assert!(out.status.success(), "aws {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A gateway on gs:// (the stand-in for GCS's XML API, whose listing pages hold two entries),
/// with the aws CLI as its client: a bucket made and listed, a multipart PUT (9 MiB, two parts)
/// and a small one, listings that show the plaintext sizes, a GET and a ranged GET back, a
/// DELETE that leaves nothing in the store; the stored object opened by `zseal decrypt gs://…`
/// with the gateway's key; no request answered with a 5xx.
#[test]
fn the_gateway_on_gcs_through_the_stand_in() {
    let Some(base) = gcs_stub() else { return };
    let Some(cli) = aws_cli() else { return };
    gcs_bucket(base, "gcsgw");
    let env = [("STORAGE_EMULATOR_HOST", base.trim_start_matches("http://"))];
    let dir = tempfile::tempdir().unwrap();
    let gw = start_gateway(base, "gs://gcsgw/gw", dir.path(), &env);
    let aws = |args: &[&str]| aws(&cli, &gw, dir.path(), args);
    aws(&["s3", "mb", "s3://vault"]);
    // Every bucket has a CreationDate, which `s3 ls` needs (the store backends gave none).
    assert!(aws(&["s3", "ls"]).contains(" vault\n"));
    let plain = common::noise((9 << 20) + 5, 47);
    put_list_and_get(&aws, dir.path(), &plain);
    // At rest: a container sealed to the gateway's key.
    let stored = zseal(base)
        .envs(env)
        .args(["decrypt", "gs://gcsgw/gw/vault/2026/backup.tar", "-i"])
        .arg(dir.path().join("gateway.key"))
        .output()
        .unwrap();
    assert!(stored.status.success(), "{stored:?}");
    assert!(stored.stdout == plain);
    aws(&["s3", "rm", "s3://vault/small.txt"]);
    assert!(!aws(&["s3", "ls", "--recursive", "s3://vault/"]).contains("small.txt"));
    for gone in ["small.txt", ".zseal-gateway/meta/small.txt"] {
        let (status, _) = raw(base, "GET", &format!("/gcsgw/gw/vault/{gone}"), b"").unwrap();
        assert_eq!(status, 404, "{gone} is still in the store");
    }
    let (_, pending) = raw(
        base,
        "GET",
        "/_stub/uploads?key=gw/vault/2026/backup.tar",
        b"",
    )
    .unwrap();
    assert_eq!(pending, b"0", "no upload in progress");
    let log = gw.log.lock().unwrap().clone();
    let failed: Vec<&String> = log.iter().filter(|l| answered_5xx(l)).collect();
    assert!(failed.is_empty(), "answered 5xx: {failed:?}");
}

/// Through `aws`: `plain` copied up as `vault/2026/backup.tar` (multipart) beside an 11-byte
/// `small.txt`, both listed with their plaintext sizes, then read back whole and as a range.
fn put_list_and_get(aws: &dyn Fn(&[&str]) -> String, dir: &Path, plain: &[u8]) {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    std::fs::write(path("backup.tar"), plain).unwrap();
    std::fs::write(path("small.txt"), b"small file\n").unwrap();
    aws(&[
        "s3",
        "cp",
        &path("backup.tar"),
        "s3://vault/2026/backup.tar",
    ]);
    aws(&["s3", "cp", &path("small.txt"), "s3://vault/small.txt"]);
    // Five store objects below gw/vault/ (two containers, their metadata, the marker): the
    // store's listing comes in three pages.
    let listing = aws(&["s3", "ls", "--recursive", "s3://vault/"]);
    let big = format!(" {} 2026/backup.tar", plain.len());
    assert!(listing.contains(&big), "{listing}");
    assert!(listing.contains(" 11 small.txt"), "{listing}");
    aws(&["s3", "cp", "s3://vault/2026/backup.tar", &path("back")]);
    assert!(std::fs::read(path("back")).unwrap() == plain);
    let (from, to) = (5_000_000, 5_000_099);
    let range = format!("bytes={from}-{to}");
    let get = [
        "s3api",
        "get-object",
        "--bucket",
        "vault",
        "--key",
        "2026/backup.tar",
    ];
    aws(&[&get[..], &["--range", &range, &path("part")]].concat());
    assert!(std::fs::read(path("part")).unwrap() == plain[from..=to]);
}

/// Whether a log line (`zseal serve: METHOD PATH STATUS in=… out=… MS ms`) tells of a 5xx or
/// of a request that got no answer.
fn answered_5xx(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with("in="));
    let status = at.and_then(|i| words.get(i.checked_sub(1)?));
    status.is_some_and(|s| s.starts_with('5') || *s == "error")
}
