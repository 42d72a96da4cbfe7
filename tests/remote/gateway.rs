//! The S3 gateway (`zseal serve s3`, docs/GATEWAY.md) with an object store as its backend: behind
//! the fault-injecting proxy, the store's 503s are retried as for the command line (issue 45 §6);
//! on az:// (Azurite), a round trip.
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

/// Whether a log line (`zseal serve: METHOD PATH STATUS in=… out=… MS ms`) tells of a 5xx or
/// of a request that got no answer.
fn answered_5xx(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with("in="));
    let status = at.and_then(|i| words.get(i.checked_sub(1)?));
    status.is_some_and(|s| s.starts_with('5') || *s == "error")
}
