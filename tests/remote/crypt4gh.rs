//! `zseal rekey` of a crypt4gh object in place (docs/FORMAT.md §13.9 "Objects"): on S3 part 1 is
//! the new header and `5 MiB − its length` of data, uploaded; the store copies the rest
//! (UploadPartCopy). Counted by the proxy: about 5 MiB each way, whatever the object's size.

use super::*;
use std::sync::atomic::Ordering;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::crypto::c4gh::file::{private_key_file, public_key_file, Protection};
use zseal::crypto::c4gh::SecretKey;
use zseal::format::crypt4gh::{seal_header, DataKey, Header, SegmentOpener, SegmentSealer};

const MIB: u64 = 1 << 20;

/// A crypt4gh file of `plain` for `to`, as the writer of FORMAT.md §13.8 makes it.
fn c4gh_file(plain: &[u8], to: &SecretKey, rng: &mut ChaCha20Rng) -> Vec<u8> {
    let dk = DataKey::generate(rng);
    let header = seal_header(&dk, &[to.public()], None, rng).unwrap();
    let mut out = header.to_bytes().unwrap();
    let sealer = SegmentSealer::new(&dk);
    for seg in plain.chunks(65_536) {
        sealer.seal_random(seg, &mut out, rng).unwrap();
    }
    out
}

/// The plaintext of crypt4gh `file` opened with `key`.
fn c4gh_open(file: &[u8], key: &SecretKey) -> zseal::Result<Vec<u8>> {
    let header = Header::parse(file)?;
    let opened = header.open(std::slice::from_ref(key))?;
    let opener = SegmentOpener::new(&opened.data_keys)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65_536];
    for (i, seg) in file[header.len() as usize..].chunks(65_564).enumerate() {
        let n = opener.open(i as u64, seg, &mut buf)?;
        out.extend_from_slice(&buf[..n]);
    }
    Ok(out)
}

/// The reference tool's `crypt4gh decrypt --sk KEY` of `file`, when it is installed.
fn reference_decrypt(file: &Path, key: &Path) -> Option<Vec<u8>> {
    let bin = crate::common::crypt4gh_reference()?.join("crypt4gh");
    let out = Std::new(bin)
        .args(["decrypt", "--sk"])
        .arg(key)
        .stdin(Stdio::from(std::fs::File::open(file).unwrap()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(out.stdout)
}

/// A 20 MiB crypt4gh object rekeyed in place from `a` to `b` through the counting proxy: about
/// 5 MiB goes up (part 1: the 124-byte header and 5,242,756 bytes of data) and down (those bytes
/// and the old header), the store copies the rest, the data after the header is byte for byte
/// the old, `b` decrypts it (with the reference too, when installed), `a` no longer does, and no
/// upload is left. An object under 5 MiB is one PUT, no multipart upload.
#[test]
fn crypt4gh_rekey_in_place_moves_only_the_first_part() {
    let Some(base) = moto() else { return };
    let bkt = bucket(base, "c4gh-rekey");
    let d = tempfile::tempdir().unwrap();
    let rng = &mut ChaCha20Rng::seed_from_u64(44);
    let (a, b) = (SecretKey::generate(rng), SecretKey::generate(rng));
    let (a_sec, b_sec, b_pub) = (
        d.path().join("a.sec"),
        d.path().join("b.sec"),
        d.path().join("b.pub"),
    );
    std::fs::write(
        &a_sec,
        private_key_file(&a, Protection::None, None, rng)
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    std::fs::write(
        &b_sec,
        private_key_file(&b, Protection::None, None, rng)
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    std::fs::write(&b_pub, public_key_file(&b.public())).unwrap();
    let rekey = |url: &str, proxy: &str| {
        zseal(base)
            .env("AWS_ENDPOINT_URL", proxy)
            .args(["rekey", url, "--force", "-R"])
            .arg(&b_pub)
            .arg("-i")
            .arg(&a_sec)
            .output()
            .unwrap()
    };

    let plain = common::noise(20 << 20, 44);
    let before = c4gh_file(&plain, &a, rng);
    let (status, _) = raw(base, "PUT", &format!("/{bkt}/big.c4gh"), &before).unwrap();
    assert_eq!(status, 200);
    let url = format!("s3://{bkt}/big.c4gh");
    let p = proxy::start(base, proxy::Faults::default());
    let out = rekey(&url, &p.url);
    assert!(out.status.success(), "{out:?}");
    let msg = String::from_utf8_lossy(&out.stderr);
    let copied = before.len() as u64 - 124 - (5 * MIB - 124);
    assert!(
        msg.contains(&format!("{copied} of them copied by the store")),
        "{msg}"
    );
    let up = p.seen.request_bytes.load(Ordering::SeqCst);
    let down = p.seen.body_bytes.load(Ordering::SeqCst);
    assert!(
        (5 * MIB..5 * MIB + 64 * 1024).contains(&up),
        "uploaded {up}"
    );
    assert!(
        (5 * MIB - 124..5 * MIB + 64 * 1024).contains(&down),
        "downloaded {down}"
    );
    let after = object(base, &bkt, "big.c4gh").unwrap();
    assert_eq!(Header::parse(&after).unwrap().len(), 124);
    assert!(after[124..] == before[124..], "the data is the old bytes");
    assert!(c4gh_open(&after, &b).unwrap() == plain);
    let e = c4gh_open(&after, &a).unwrap_err();
    assert_eq!(e.kind(), zseal::ErrorKind::NoMatchingKey);
    let local = d.path().join("after.c4gh");
    std::fs::write(&local, &after).unwrap();
    if let Some(got) = reference_decrypt(&local, &b_sec) {
        assert!(got == plain, "the reference decrypts the rekeyed object");
    }
    assert_eq!(uploads_in_progress(base, &bkt), 0);

    // Under 5 MiB of data: one conditional PUT, streamed.
    let small = common::noise(100_000, 45);
    let (status, _) = raw(
        base,
        "PUT",
        &format!("/{bkt}/small.c4gh"),
        &c4gh_file(&small, &a, rng),
    )
    .unwrap();
    assert_eq!(status, 200);
    let p = proxy::start(base, proxy::Faults::default());
    let out = rekey(&format!("s3://{bkt}/small.c4gh"), &p.url);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("streamed through this machine"));
    assert_eq!(p.seen.upload_parts.load(Ordering::SeqCst), 0);
    assert_eq!(p.seen.completions.load(Ordering::SeqCst), 0);
    let after = object(base, &bkt, "small.c4gh").unwrap();
    assert!(c4gh_open(&after, &b).unwrap() == small);
}

/// On Azure (no ranged server-side copy) a crypt4gh rekey streams: from a local file to an
/// object with -o, in place (saying so), and from the object to a local file with -o; the data
/// after the header stays the old bytes through all three, and opens for the last recipient.
#[test]
fn crypt4gh_rekey_on_azure_streams() {
    let Some(base) = azurite() else { return };
    azure_container(base, "c4gh");
    let env = [
        ("AZURE_STORAGE_USE_EMULATOR", "true"),
        ("AZURITE_BLOB_STORAGE_URL", base),
    ];
    let d = tempfile::tempdir().unwrap();
    let rng = &mut ChaCha20Rng::seed_from_u64(46);
    let (a, b) = (SecretKey::generate(rng), SecretKey::generate(rng));
    let file = |name: &str, text: &str| {
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let a_sec = file(
        "a.sec",
        &private_key_file(&a, Protection::None, None, rng).unwrap(),
    );
    let b_sec = file(
        "b.sec",
        &private_key_file(&b, Protection::None, None, rng).unwrap(),
    );
    let a_pub = file("a.pub", &public_key_file(&a.public()));
    let b_pub = file("b.pub", &public_key_file(&b.public()));
    let plain = common::noise(6 << 20, 46);
    let first = c4gh_file(&plain, &a, rng);
    let local = d.path().join("first.c4gh");
    std::fs::write(&local, &first).unwrap();
    let url = "az://c4gh/x.c4gh";
    let rekey = |input: &str, key: &Path, to: &Path| {
        let mut c = zseal(base);
        c.envs(env)
            .args(["rekey", input, "--force", "-i"])
            .arg(key)
            .arg("-R")
            .arg(to);
        c
    };
    rekey(local.to_str().unwrap(), &a_sec, &b_pub)
        .args(["-q", "-o", url])
        .assert()
        .success();
    rekey(url, &b_sec, &a_pub)
        .assert()
        .success()
        .stderr(contains("streamed through this machine"));
    let last = d.path().join("last.c4gh");
    rekey(url, &a_sec, &a_pub)
        .arg("-o")
        .arg(&last)
        .assert()
        .success();
    let last = std::fs::read(&last).unwrap();
    assert!(last[124..] == first[124..], "the data is the old bytes");
    assert!(c4gh_open(&last, &a).unwrap() == plain);
    assert!(c4gh_open(&last, &b).is_err());
}

/// A signed crypt4gh file in an object (issue 44): `decrypt`/`verify --signer KEY s3://b/x.c4gh`
/// find `s3://b/x.c4gh.sig` beside it, as beside a local file; `--signature` takes an object's
/// URL; with no signature beside the object, the error names where it was looked for, and a
/// signature of another file fails.
#[test]
fn a_crypt4gh_objects_signature_is_found_beside_it() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "c4gh-signed");
    let d = tempfile::tempdir().unwrap();
    let keys = common::keys();
    let (signer, signer_pub, id) = (
        keys.join("ed25519"),
        keys.join("ed25519.pub"),
        keys.join("age.key"),
    );
    let recipient = std::fs::read_to_string(keys.join("age.pub")).unwrap();
    let mut sealed = Vec::new();
    for (name, seed) in [("x", 1), ("y", 2)] {
        let src = d.path().join(name);
        std::fs::write(&src, common::noise(200_000, seed)).unwrap();
        let out = d.path().join(format!("{name}.c4gh"));
        let enc = zseal(base)
            .args(["encrypt", "--format", "crypt4gh", "-q", "--sign"])
            .arg(&signer)
            .args(["-r", recipient.trim()])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(enc.status.success(), "{enc:?}");
        sealed.push((
            std::fs::read(&out).unwrap(),
            std::fs::read(d.path().join(format!("{name}.c4gh.sig"))).unwrap(),
        ));
    }
    let put = |key: &str, body: &[u8]| {
        let (status, _) = raw(base, "PUT", &format!("/{b}/{key}"), body).unwrap();
        assert_eq!(status, 200, "{key}");
    };
    put("x.c4gh", &sealed[0].0);
    put("x.c4gh.sig", &sealed[0].1);
    put("y.c4gh", &sealed[1].0);
    put("other.sig", &sealed[1].1);
    let run = |args: &[&str]| {
        zseal(base)
            .args(args)
            .arg("--signer")
            .arg(&signer_pub)
            .arg("-i")
            .arg(&id)
            .output()
            .unwrap()
    };
    let x = format!("s3://{b}/x.c4gh");
    let y = format!("s3://{b}/y.c4gh");
    let out = run(&["decrypt", &x]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(said.contains("good signature"), "{said}");
    assert_eq!(out.stdout, common::noise(200_000, 1));
    let out = run(&["verify", &x]);
    assert!(out.status.success(), "{out:?}");
    // y.c4gh has no signature beside it: the error names where it looked.
    let out = run(&["verify", &y]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains(&format!("{y}.sig")),
        "{said}"
    );
    // Given as an object's URL: y's own signature opens it; x's does not.
    let other = format!("s3://{b}/other.sig");
    let out = run(&["verify", &y, "--signature", &other]);
    assert!(out.status.success(), "{out:?}");
    let xs = format!("s3://{b}/x.c4gh.sig");
    let out = run(&["verify", &y, "--signature", &xs]);
    assert!(!out.status.success(), "{out:?}");
}
