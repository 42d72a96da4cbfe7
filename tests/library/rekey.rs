//! `rekey`: a new header for a new set of keys in front of the unchanged payload, or, rotated,
//! every frame sealed again under a new file key. Library and command line, with age, SSH and
//! passphrase keys both ways.

use crate::common;

use std::path::{Path, PathBuf};

use predicates::prelude::PredicateBooleanExt;

use common::*;
use zseal::format::Header;
use zseal::{
    DecryptOptions, Decryptor, EncryptOptions, Encryptor, Error, Identity, Locked, Recipient,
    RekeyOptions,
};

fn seal_to(plain: &[u8], to: &[&dyn Recipient]) -> Vec<u8> {
    let opts = EncryptOptions::default().chunk_size(4096);
    let mut enc = Encryptor::new(Vec::new(), to, &opts).unwrap();
    enc.copy_from(&mut &plain[..]).unwrap();
    enc.finish().unwrap()
}

fn open_with(c: &[u8], id: &dyn Identity) -> zseal::Result<Vec<u8>> {
    let mut d = Decryptor::new(c, &[id], &DecryptOptions::default())?;
    let mut out = Vec::new();
    d.copy_to(&mut out)?;
    Ok(out)
}

fn rekey(
    c: &[u8],
    id: &dyn Identity,
    to: &[&dyn Recipient],
    opts: &RekeyOptions,
) -> zseal::Result<Vec<u8>> {
    let mut out = Vec::new();
    let report = Locked::read(c)?
        .rekey(&[id], to, opts)?
        .write_to(&mut out)?;
    // The report tells what was written, copied or rotated alike.
    let (h, hl) = header_of(&out);
    assert_eq!(report.old_header_len, Locked::read(c)?.header_len());
    assert_eq!(report.new_header_len, hl as u64);
    assert_eq!(report.payload_len, (out.len() - hl) as u64);
    assert_eq!(report.stanzas, h.stanzas.len());
    Ok(out)
}

fn header_of(c: &[u8]) -> (Header, usize) {
    let locked = Locked::read(c).unwrap();
    (locked.header().clone(), locked.header_len() as usize)
}

/// Replacing: the new key opens the file, the removed one is refused, and every byte after the
/// header is the old file's. Adding: the old stanzas stay byte for byte, before the new ones, and
/// every key opens the file. With age X25519, ssh-ed25519 and ssh-rsa keys, each way.
#[test]
fn replace_and_add_with_age_and_ssh_keys_keep_the_payload() {
    let plain = data(3 * 4096 + 11);
    let kinds = [
        ("age.key", "age.pub"),
        ("ed25519", "ed25519.pub"),
        ("rsa", "rsa.pub"),
    ];
    for (from_id, from_pub) in kinds {
        for (to_id, to_pub) in kinds.iter().filter(|(i, _)| *i != from_id) {
            let case = format!("{from_id} -> {to_id}");
            let (old_id, new_id) = (identity(from_id), identity(to_id));
            let new_r = recipient(to_pub);
            let c = seal_to(&plain, &[&recipient(from_pub)]);
            let (old_header, old_len) = header_of(&c);

            // Replacing leaves out the key that opened the file: refused unless allowed.
            let e = rekey(&c, &old_id, &[&new_r], &RekeyOptions::default()).unwrap_err();
            assert!(
                e.to_string()
                    .contains("leave out the key that opened the file"),
                "{case}: {e}"
            );
            let lose = RekeyOptions::default().allow_lockout(true);
            let replaced = rekey(&c, &old_id, &[&new_r], &lose).unwrap();
            let (h, len) = header_of(&replaced);
            assert_eq!(replaced[len..], c[old_len..], "{case}: payload changed");
            assert_eq!(h.payload_salt, old_header.payload_salt);
            assert_eq!(open_with(&replaced, &new_id).unwrap(), plain, "{case}");
            let e = open_with(&replaced, &old_id).unwrap_err();
            assert!(matches!(e, Error::NoMatchingKey { .. }), "{case}: {e}");

            let added = rekey(
                &c,
                &old_id,
                &[&new_r],
                &RekeyOptions::default().keep_old(true),
            )
            .unwrap();
            let (h, len) = header_of(&added);
            assert_eq!(added[len..], c[old_len..], "{case}: payload changed");
            assert_eq!(
                h.stanzas[..old_header.stanzas.len()],
                old_header.stanzas[..],
                "{case}: old stanzas not kept as they were"
            );
            assert_eq!(h.stanzas.len(), old_header.stanzas.len() + 1);
            assert_eq!(open_with(&added, &old_id).unwrap(), plain, "{case}");
            assert_eq!(open_with(&added, &new_id).unwrap(), plain, "{case}");
        }
    }
}

#[test]
fn passphrase_to_recipient_and_back() {
    let plain = data(5000);
    let old_pw = pass("old passphrase");
    let new_pw = pass("new passphrase");
    let c = seal(
        &plain,
        &old_pw,
        &EncryptOptions::default().chunk_size(1024),
        3,
    );
    let age = identity("age.key");
    let to_age = rekey(
        &c,
        &old_pw,
        &[&recipient("age.pub")],
        &RekeyOptions::default().allow_lockout(true),
    )
    .unwrap();
    assert_eq!(open_with(&to_age, &age).unwrap(), plain);
    assert!(matches!(
        open_with(&to_age, &old_pw).unwrap_err(),
        Error::NoMatchingKey { .. }
    ));
    let back = rekey(&to_age, &age, &[&new_pw], &RekeyOptions::default()).unwrap();
    assert_eq!(open_with(&back, &new_pw).unwrap(), plain);
    assert!(matches!(
        open_with(&back, &old_pw).unwrap_err(),
        Error::WrongPassphrase
    ));
    // A passphrase stays alone: not added to recipients, and nothing added to it.
    for (c, id, to) in [
        (&to_age, &age as &dyn Identity, &new_pw as &dyn Recipient),
        (
            &c,
            &old_pw as &dyn Identity,
            &recipient("age.pub") as &dyn Recipient,
        ),
    ] {
        let e = rekey(c, id, &[to], &RekeyOptions::default().keep_old(true)).unwrap_err();
        assert!(e.to_string().contains("passphrase"), "{e}");
    }
    // The wrong key changes nothing: no output at all.
    let mut out = Vec::new();
    let e = Locked::read(&c[..])
        .unwrap()
        .rekey(
            &[&new_pw],
            &[&recipient("age.pub")],
            &RekeyOptions::default(),
        )
        .and_then(|r| r.write_to(&mut out))
        .unwrap_err();
    assert!(matches!(e, Error::WrongPassphrase), "{e}");
    assert!(out.is_empty());
}

/// Rotation: a new file key and payload salt, every frame sealed again with the same lengths; the
/// old header in front of the new payload no longer authenticates; a damaged input fails.
#[test]
fn rotation_seals_every_frame_under_a_new_key() {
    let plain = data(7 * 1024 + 5);
    let pw = pass("rotate");
    let c = seal(&plain, &pw, &EncryptOptions::default().chunk_size(1024), 4);
    let r = rekey(&c, &pw, &[&pw], &RekeyOptions::default().rotate(true)).unwrap();
    assert_eq!(r.len(), c.len());
    assert_eq!(open_with(&r, &pw).unwrap(), plain);
    let (old_h, hl) = header_of(&c);
    let (new_h, _) = header_of(&r);
    assert_ne!(old_h.payload_salt, new_h.payload_salt);
    let frames_old = frames(&c, hl);
    let frames_new = frames(&r, hl);
    assert_eq!(
        frames_old.iter().map(|f| f.1).collect::<Vec<_>>(),
        frames_new.iter().map(|f| f.1).collect::<Vec<_>>(),
        "frame lengths"
    );
    for (a, b) in frames_old.iter().zip(&frames_new) {
        assert_ne!(
            c[a.0 + 5..a.0 + a.1],
            r[b.0 + 5..b.0 + b.1],
            "a frame kept its bytes"
        );
    }
    // The index and footer are unchanged.
    let trailer = 4 * 8 + 16;
    assert_eq!(c[c.len() - trailer..], r[r.len() - trailer..]);
    // The old header (old file key) in front of the new payload: chunk 0 fails.
    let mut spliced = c[..hl].to_vec();
    spliced.extend_from_slice(&r[hl..]);
    assert!(matches!(
        open_with(&spliced, &pw).unwrap_err(),
        Error::ChunkAuth(0)
    ));
    // Damage anywhere after the header stops the rotation with the library's error.
    for at in [frames_old[2].0 + 9, c.len() - 20, c.len() - 3] {
        let mut d = c.clone();
        d[at] ^= 1;
        assert!(
            rekey(&d, &pw, &[&pw], &RekeyOptions::default().rotate(true)).is_err(),
            "byte {at}"
        );
    }
    let e = rekey(
        &c,
        &pw,
        &[&pw],
        &RekeyOptions::default().rotate(true).keep_old(true),
    )
    .unwrap_err();
    assert!(e.to_string().contains("old stanzas"), "{e}");
}

/// Regression (fuzz target `sealed`, artifacts crash-85e58ad2… and crash-e8e137b8…): a padded
/// file's frames go up to C + 21 bytes, but rotation re-sealed them in a buffer of C + 21 minus
/// the 5-byte padded-chunk header and panicked on the first full raw chunk. Random bytes make
/// every chunk raw, so every padded data frame has the largest size.
#[test]
fn rotating_a_padded_file_with_full_raw_chunks() {
    let plain = noise(3 * 1024 + 77, 8);
    let pw = pass("rotate");
    let opts = EncryptOptions::default().chunk_size(1024).pad(true);
    let c = seal(&plain, &pw, &opts, 6);
    let (_, hl) = header_of(&c);
    assert!(
        frames(&c, hl).iter().any(|f| f.1 == 5 + 1024 + 5 + 16),
        "a full padded frame"
    );
    let r = rekey(&c, &pw, &[&pw], &RekeyOptions::default().rotate(true)).unwrap();
    assert_eq!(r.len(), c.len());
    assert_eq!(open_with(&r, &pw).unwrap(), plain);
}

fn zseal() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("zseal").unwrap()
}

fn partials(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".zseal-partial"))
        .collect()
}

/// In place: the file is replaced whole, keeps its mode, and a failure (wrong key, damage found
/// by --rotate half-way) leaves the original byte for byte, with no temporary file behind.
#[test]
fn cli_rekey_in_place_is_atomic_and_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, data(300_000)).unwrap();
    let c = d.path().join("c.zseal");
    let key = |n: &str| keys().join(n);
    let age_pub = std::fs::read_to_string(key("age.pub")).unwrap();
    zseal()
        .args(["encrypt", "--chunk-size", "64K", "-r", age_pub.trim(), "-o"])
        .arg(&c)
        .arg(&plain)
        .assert()
        .success();
    std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::read(&c).unwrap();

    // Wrong identity: refused, nothing changed.
    zseal()
        .args(["rekey", "-i"])
        .arg(key("zseal.key"))
        .arg("-R")
        .arg(key("all.txt"))
        .arg(&c)
        .assert()
        .failure()
        .stderr(predicates::str::contains("no identity matched"));
    assert_eq!(std::fs::read(&c).unwrap(), before);
    assert!(partials(d.path()).is_empty());

    // Damage in the last chunk: --rotate fails after sealing most frames; the original stays.
    let mut damaged = before.clone();
    let at = damaged.len() - 16 - 4 * 5 - 101 - 40;
    damaged[at] ^= 1;
    std::fs::write(&c, &damaged).unwrap();
    zseal()
        .args(["rekey", "--rotate", "-i"])
        .arg(key("age.key"))
        .arg("-R")
        .arg(key("all.txt"))
        .arg(&c)
        .assert()
        .failure()
        .stderr(predicates::str::contains("chunk 4 failed authentication"));
    assert_eq!(std::fs::read(&c).unwrap(), damaged);
    assert!(partials(d.path()).is_empty());
    std::fs::write(&c, &before).unwrap();

    // To every fixture key (age, zseal, ssh-ed25519, ssh-rsa, encrypted ssh), in place.
    zseal()
        .args(["rekey", "-q", "-i"])
        .arg(key("age.key"))
        .arg("-R")
        .arg(key("all.txt"))
        .arg(&c)
        .assert()
        .success()
        .stderr("");
    assert_eq!(
        std::fs::metadata(&c).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let after = std::fs::read(&c).unwrap();
    let old_len = header_of(&before).1;
    let new_len = header_of(&after).1;
    assert_eq!(
        after[new_len..],
        before[old_len..],
        "payload copied unchanged"
    );
    let out = zseal()
        .args(["decrypt", "-i"])
        .arg(key("ed25519"))
        .arg(&c)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&plain).unwrap());

    // -o: the original stays; an existing output needs --force.
    let new = d.path().join("new.zseal");
    let pw = d.path().join("pw");
    std::fs::write(&pw, "a new passphrase for the file\n").unwrap();
    let rekey_to_pw = || {
        let mut cmd = zseal();
        cmd.args(["rekey", "-i"])
            .arg(key("rsa"))
            .arg("--new-passphrase-file")
            .arg(&pw)
            .arg(&c)
            .arg("-o")
            .arg(&new);
        cmd
    };
    rekey_to_pw().assert().success();
    assert_eq!(std::fs::read(&c).unwrap(), after);
    rekey_to_pw()
        .assert()
        .failure()
        .stderr(predicates::str::contains("--force"));
    let out = zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&pw)
        .arg(&new)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&plain).unwrap());
}

/// Usage errors name what is missing.
#[test]
fn cli_rekey_needs_a_new_key_and_a_file() {
    zseal()
        .args(["rekey", "-i", "x", "some.zseal"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("no new key given"));
    zseal()
        .args(["rekey", "-r", "age1x", "-"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("as a file"));
}

/// The man page and the help state what rekey cannot do and what the sizes leak.
#[test]
fn the_man_page_states_the_limits() {
    let man = zseal().arg("man").assert().success();
    let man = String::from_utf8_lossy(&man.get_output().stdout).to_string();
    for needle in ["CRIME", "equal\\-length", "removed recipient", "rekey"] {
        assert!(man.contains(needle), "man page lacks {needle}");
    }
    let help = zseal().args(["rekey", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&help.get_output().stdout).to_string();
    assert!(help.contains("can still read the payload"), "{help}");
}

/// A copy cut short, extended, or with a damaged trailer is refused by `Rekeyed::checked` (what the
/// command line uses) before anything is written, and by `zseal rekey`, which leaves the file as
/// it was; the intact container rekeys. (`rekey` over a stream cannot look at the end first.)
#[test]
fn a_damaged_container_is_not_rekeyed() {
    let (alice, bob) = (identity("age.key"), identity("ed25519"));
    let plain = data(50_000);
    let c = seal_to(&plain, &[&recipient("age.pub")]);
    let checked = |c: &[u8]| {
        let mut out = Vec::new();
        Locked::read(std::io::Cursor::new(c))?
            .rekey(
                &[&alice],
                &[&recipient("ed25519.pub")],
                &RekeyOptions::default().allow_lockout(true),
            )?
            .checked()?
            .write_to(&mut out)
            .map(|_| out)
    };
    let good = checked(&c).unwrap();
    assert_eq!(open_with(&good, &bob).unwrap(), plain);
    let mut cut = c.clone();
    cut.truncate(c.len() - 1);
    let mut extended = c.clone();
    extended.extend_from_slice(b"junk");
    let mut index_flipped = c.clone();
    let at = c.len() - 12 - 2; // inside the index, before the footer
    index_flipped[at] ^= 1;
    for (what, bad) in [
        ("cut", cut),
        ("extended", extended),
        ("index", index_flipped),
    ] {
        let e = checked(&bad).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Truncated(_) | Error::Damaged(_) | Error::FinalAuth | Error::TrailingData
            ),
            "{what}: {e:?}"
        );
        // The command line: refused, the file untouched.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c.zseal");
        std::fs::write(&f, &bad).unwrap();
        let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
        zseal()
            .arg("rekey")
            .arg(&f)
            .arg("-i")
            .arg(keys.join("age.key"))
            .arg("-R")
            .arg(keys.join("ed25519.pub"))
            .assert()
            .code(1);
        assert_eq!(
            std::fs::read(&f).unwrap(),
            bad,
            "{what}: the file is unchanged"
        );
    }
}

/// Issue 48, point 3: a rekey whose new recipients leave out the key that opened the file is
/// refused (naming that key's stanza), unless allowed; keeping it among the new ones, or a new
/// passphrase, is not a lock-out. An SSH recipient's stanzas can be removed by its key alone,
/// the others kept; a key the file has no stanza for is named.
#[test]
fn a_rekey_that_would_lock_the_caller_out_is_refused_and_ssh_keys_can_be_removed() {
    let plain = data(2 * 4096 + 3);
    let (age, ed, rsa) = (
        recipient("age.pub"),
        recipient("ed25519.pub"),
        recipient("rsa.pub"),
    );
    let c = seal_to(&plain, &[&age, &ed, &rsa]);
    let by_ed = identity("ed25519");
    let e = rekey(&c, &by_ed, &[&age], &RekeyOptions::default()).unwrap_err();
    let tag = zseal::crypto::StanzaRecipient::of(&ed).unwrap().unwrap();
    assert_eq!(tag.kind, "ssh-ed25519");
    assert!(
        e.to_string()
            .contains(&format!("(ssh-ed25519 (key tag {}))", tag.key_tag)),
        "{e}"
    );
    // Kept among the new ones: fine.
    let kept = rekey(&c, &by_ed, &[&age, &ed], &RekeyOptions::default()).unwrap();
    assert_eq!(open_with(&kept, &by_ed).unwrap(), plain);
    // Removing rsa by its key keeps the age and ed25519 stanzas byte for byte.
    let rsa_id = zseal::crypto::StanzaRecipient::of(&rsa).unwrap().unwrap();
    let removed = rekey(
        &c,
        &by_ed,
        &[],
        &RekeyOptions::default().remove(vec![rsa_id.clone()]),
    )
    .unwrap();
    let (old, _) = header_of(&c);
    let (new, _) = header_of(&removed);
    assert_eq!(new.stanzas, old.stanzas[..2]);
    assert_eq!(open_with(&removed, &identity("age.key")).unwrap(), plain);
    let e = open_with(&removed, &identity("rsa")).unwrap_err();
    assert!(matches!(e, Error::NoMatchingKey { .. }), "{e}");
    // Removing it again: it has no stanza any more.
    let e = rekey(
        &removed,
        &by_ed,
        &[],
        &RekeyOptions::default().remove(vec![rsa_id]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("nothing to remove"), "{e}");
    // Removing one's own key is a lock-out too.
    let e = rekey(&c, &by_ed, &[], &RekeyOptions::default().remove(vec![tag])).unwrap_err();
    assert!(e.to_string().contains("leave out the key"), "{e}");
    // X25519 and post-quantum recipients name nobody in their stanzas.
    assert_eq!(zseal::crypto::StanzaRecipient::of(&age).unwrap(), None);
    // A new passphrase is no lock-out: the caller just gave it.
    let pw = pass("a new passphrase");
    let to_pw = rekey(&c, &by_ed, &[&pw], &RekeyOptions::default()).unwrap();
    assert_eq!(open_with(&to_pw, &pw).unwrap(), plain);
}

/// Issue 48, point 3, from the command line: `rekey -i me.key -r friend` no longer locks me out
/// without --force; `--remove -r KEY` takes one SSH recipient out and keeps the others; an
/// X25519 recipient cannot be removed by name, and the message says why; `inspect` lists what
/// each stanza tells.
#[test]
fn cli_rekey_refuses_a_lock_out_and_removes_an_ssh_recipient() {
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, data(100_000)).unwrap();
    let c = d.path().join("c.zseal");
    let key = |n: &str| keys().join(n).to_str().unwrap().to_string();
    let text = |n: &str| {
        std::fs::read_to_string(keys().join(n))
            .unwrap()
            .trim()
            .to_string()
    };
    zseal()
        .args([
            "encrypt",
            "-q",
            "-r",
            &text("age.pub"),
            "-r",
            &text("ed25519.pub"),
        ])
        .arg(&plain)
        .arg("-o")
        .arg(&c)
        .assert()
        .success();
    let before = std::fs::read(&c).unwrap();
    let inspect = |c: &Path| {
        let o = zseal().arg("inspect").arg(c).assert().success();
        String::from_utf8(o.get_output().stdout.clone()).unwrap()
    };
    let shown = inspect(&c);
    assert!(
        shown.contains("    1. X25519 (anonymous)\n    2. ssh-ed25519 (key tag "),
        "{shown}"
    );
    zseal()
        .args(["rekey", "-i", &key("age.key"), "-r", &text("rsa.pub")])
        .arg(&c)
        .assert()
        .code(1)
        .stderr(
            predicates::str::contains(
                "leave out the key that opened the file (X25519 (anonymous))",
            )
            .and(predicates::str::contains("--force")),
        );
    assert_eq!(std::fs::read(&c).unwrap(), before);
    zseal()
        .args([
            "rekey",
            "-q",
            "-i",
            &key("age.key"),
            "--remove",
            "-r",
            &text("age.pub"),
        ])
        .arg(&c)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("anonymous by design"));
    zseal()
        .args([
            "rekey",
            "-q",
            "-i",
            &key("age.key"),
            "--remove",
            "-r",
            &text("ed25519.pub"),
        ])
        .arg(&c)
        .assert()
        .success();
    assert!(inspect(&c).contains("recipients:  1 (X25519)\n    1. X25519 (anonymous)\n"));
    zseal()
        .args(["decrypt", "-i", &key("ed25519")])
        .arg(&c)
        .assert()
        .code(1);
    zseal()
        .args([
            "rekey",
            "-q",
            "-f",
            "-i",
            &key("age.key"),
            "-r",
            &text("rsa.pub"),
        ])
        .arg(&c)
        .assert()
        .success();
    let out = zseal()
        .args(["decrypt", "-i", &key("rsa")])
        .arg(&c)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&plain).unwrap());
}

/// The lock-out check asks an encrypted SSH key for nothing more: it looks for the key's own
/// tag among the new stanzas (an unwrap would ask for the passphrase again, once a stanza).
/// A file opened by its passphrase and given to recipients says zseal cannot tell.
#[test]
fn the_lock_out_check_asks_no_passphrase_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    #[derive(Clone)]
    struct Counting(Arc<AtomicUsize>);
    impl zseal::crypto::recipients::KeyPassphrase for Counting {
        fn passphrase(&self, _: &str) -> Option<String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Some("zseal fixture".into())
        }
    }
    let asked = Arc::new(AtomicUsize::new(0));
    let key_file = std::fs::read(keys().join("ed25519-encrypted")).unwrap();
    let id = zseal::crypto::recipients::read_identities(&key_file, "enc", Counting(asked.clone()))
        .unwrap()
        .remove(0);
    let plain = data(9000);
    let (mine, age) = (recipient("ed25519-encrypted.pub"), recipient("age.pub"));
    let c = seal_to(&plain, &[&mine]);
    let kept = rekey(&c, &id, &[&age, &mine], &RekeyOptions::default()).unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once, to open the file"
    );
    let e = rekey(&kept, &id, &[&age], &RekeyOptions::default()).unwrap_err();
    assert!(e.to_string().contains("(ssh-ed25519 (key tag "), "{e}");
    let pw = pass("old passphrase");
    let by_pw = seal(&plain, &pw, &EncryptOptions::default().chunk_size(1024), 5);
    let e = rekey(&by_pw, &pw, &[&age], &RekeyOptions::default()).unwrap_err();
    assert!(e.to_string().contains("opened with its passphrase"), "{e}");
}
