//! The record commands end to end: `keygen --record-key`, `dict train` (its dictionary read by
//! the real `zstd` too), and `bench --records`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use assert_cmd::Command;
use predicates::str::contains;
use zseal::records::{Dictionary, Opener, RecordKey, Sealer, SealerOptions};

use crate::common;

fn zseal() -> Command {
    let mut c = Command::cargo_bin("zseal").unwrap();
    c.env_remove("ZSEAL_PASSPHRASE");
    c
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                r#"{{"id":{i},"user":"u{}","mail":"u{}@example.org","plan":"{}","n":{}}}"#,
                i % 89,
                i % 89,
                ["free", "team", "pro"][i % 3],
                i * 7919 % 10007
            ) + "\n"
        })
        .collect()
}

#[test]
fn a_record_key_is_shared_like_a_file_and_opens_in_the_library() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("k.zseal");
    let recipient = std::fs::read_to_string(common::keys().join("zseal.pub")).unwrap();
    zseal()
        .args(["keygen", "--record-key", "-r", recipient.trim(), "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(contains("record key written"));
    let container = std::fs::read(&out).unwrap();
    let alice = common::identity("zseal.key");
    let key = RecordKey::from_container(&container[..], &[&alice]).unwrap();
    // Never overwritten.
    zseal()
        .args(["keygen", "--record-key", "-r", recipient.trim(), "-o"])
        .arg(&out)
        .assert()
        .failure()
        .stderr(contains("already exists"));
    // The plaintext is the text form: `zseal decrypt` shows it.
    let text = zseal()
        .args(["decrypt", "-i"])
        .arg(common::keys().join("zseal.key"))
        .arg(&out)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(text, key.to_text().as_bytes());
    // A passphrase works as well.
    let pw_out = d.path().join("p.zseal");
    zseal()
        .args(["keygen", "--record-key", "--passphrase-file"])
        .arg(fixtures().join("passphrase.txt"))
        .arg("-o")
        .arg(&pw_out)
        .assert()
        .success();
    zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(fixtures().join("passphrase.txt"))
        .arg(&pw_out)
        .assert()
        .success()
        .stdout(predicates::str::starts_with("zseal-record-key-v1 "));
    zseal()
        .args(["keygen", "-r", recipient.trim()])
        .assert()
        .failure()
        .stderr(contains("--record-key"));
}

#[test]
fn dict_train_writes_a_dictionary_zseal_and_zstd_both_use() {
    let d = tempfile::tempdir().unwrap();
    let samples = d.path().join("s.ndjson");
    std::fs::write(&samples, lines(5000)).unwrap();
    let dict = d.path().join("s.dict");
    zseal()
        .args(["dict", "train"])
        .arg(&samples)
        .arg("-o")
        .arg(&dict)
        .assert()
        .success()
        .stderr(contains("trained on 5000 samples"));
    let bytes = std::fs::read(&dict).unwrap();
    let dictionary = Arc::new(Dictionary::from_bytes(bytes).unwrap());
    let key = RecordKey::generate().unwrap();
    let opts = SealerOptions {
        dictionary: Some(dictionary.clone()),
        ..SealerOptions::default()
    };
    let record = lines(6001).lines().last().unwrap().as_bytes().to_vec();
    let sealed = Sealer::new(&key, opts).unwrap().seal(&record, b"").unwrap();
    assert!(
        sealed.len() < record.len(),
        "{} {}",
        sealed.len(),
        record.len()
    );
    let back = Opener::new(&key, &[dictionary])
        .unwrap()
        .open(&sealed, b"")
        .unwrap();
    assert_eq!(back, record);
    // The real zstd reads it as a dictionary.
    if std::process::Command::new("zstd")
        .arg("-V")
        .output()
        .is_ok()
    {
        let file = d.path().join("r.json");
        std::fs::write(&file, &record).unwrap();
        let st = std::process::Command::new("zstd")
            .args(["-q", "-f", "-D"])
            .arg(&dict)
            .arg(&file)
            .status()
            .unwrap();
        assert!(st.success());
    }
    // Refusals: an existing output, too few samples, a missing file.
    zseal()
        .args(["dict", "train"])
        .arg(&samples)
        .arg("-o")
        .arg(&dict)
        .assert()
        .failure()
        .stderr(contains("already exists"));
    let few = d.path().join("few");
    std::fs::write(&few, lines(3)).unwrap();
    zseal()
        .args(["dict", "train"])
        .arg(&few)
        .arg("-o")
        .arg(d.path().join("x.dict"))
        .assert()
        .failure()
        .stderr(contains("too few samples"));
    assert!(!d.path().join("x.dict").exists());
    zseal()
        .args(["dict", "train", "/nonexistent/samples", "-o"])
        .arg(d.path().join("y.dict"))
        .assert()
        .failure()
        .stderr(contains("/nonexistent/samples"));
}

#[test]
fn bench_records_reports_every_codec_and_cipher() {
    let d = tempfile::tempdir().unwrap();
    let samples = d.path().join("s.ndjson");
    std::fs::write(&samples, lines(2000)).unwrap();
    let out = zseal()
        .args(["bench", "--records", "--runs", "1", "--format", "json"])
        .arg(&samples)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 12);
    let names: Vec<&str> = rows.iter().map(|r| r["codec"].as_str().unwrap()).collect();
    assert!(names.contains(&"zstd+dict:3") && names.contains(&"none"));
    for r in rows {
        assert_eq!(r["records"], 1000);
        let ratio = r["ratio"].as_f64().unwrap();
        let (i, o) = (
            r["bytes_in"].as_f64().unwrap(),
            r["bytes_out"].as_f64().unwrap(),
        );
        assert!((ratio - o / i).abs() < 1e-9);
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("trained on the first 1000 records"));
    // With a dictionary that is not one.
    zseal()
        .args(["bench", "--records", "--dict"])
        .arg(&samples)
        .arg(&samples)
        .assert()
        .failure()
        .stderr(contains("not a zstd dictionary"));
}
