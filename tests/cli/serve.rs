//! `zseal serve s3`: what it refuses before it listens (docs/GATEWAY.md, "Access"). The gateway
//! serving real clients is tested in python/tests/test_gateway.py (boto3, the aws CLI).

use assert_cmd::Command;
use predicates::str::contains;

use crate::common;

/// `zseal serve s3 ROOT --credentials CREDS ARGS…` in a fresh directory.
fn serve(args: &[&str]) -> (tempfile::TempDir, Command) {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("vault")).unwrap();
    std::fs::write(d.path().join("creds"), "AKID secret\n").unwrap();
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.args(["serve", "s3"])
        .arg(d.path().join("vault"))
        .arg("--credentials")
        .arg(d.path().join("creds"))
        .args(args)
        .timeout(std::time::Duration::from_secs(20));
    (d, c)
}

#[test]
fn plain_http_beyond_loopback_is_refused_without_insecure_http() {
    let r = common::recipient("age.pub");
    let (_d, mut c) = serve(&["--listen", "0.0.0.0:0", "-r", r.as_str()]);
    c.assert()
        .failure()
        .stderr(contains("not a loopback address"))
        .stderr(contains("--insecure-http"));
}

#[test]
fn a_gateway_without_recipients_or_credentials_does_not_start() {
    let (_d, mut c) = serve(&["--listen", "127.0.0.1:0"]);
    c.assert().failure().stderr(contains("give -r or -R"));
    let r = common::recipient("age.pub");
    let (d, mut c) = serve(&["--listen", "127.0.0.1:0", "-r", r.as_str()]);
    std::fs::write(d.path().join("creds"), "only-an-id\n").unwrap();
    c.assert()
        .failure()
        .stderr(contains("line 1: expected ACCESS_KEY_ID SECRET_ACCESS_KEY"));
}
