//! Public-key recipients: round trips opened by each identity alone, every fixture key type
//! (age-keygen, zseal keygen, ssh-keygen ed25519/rsa/encrypted), stanzas made by the real age
//! tool, and what one recipient can and cannot do to the others (key commitment).

use crate::common;

use common::{identity, keys, recipient, Fixed};

use std::path::Path;

use base64::Engine;
use hmac::Mac;
use zseal::crypto::recipients::{self, AgeRecipient};
use zseal::format::Header;
use zseal::{
    DecryptOptions, Decryptor, EncryptOptions, Encryptor, Error, FileKey, Identity, Recipient,
};

fn seal_to(plain: &[u8], to: &[&dyn Recipient]) -> Vec<u8> {
    let opts = EncryptOptions::default().chunk_size(4096);
    let mut enc = Encryptor::new(Vec::new(), to, &opts).unwrap();
    enc.copy_from(&mut &plain[..]).unwrap();
    enc.finish().unwrap()
}

fn open_with(c: &[u8], ids: &[&dyn Identity]) -> zseal::Result<Vec<u8>> {
    let mut d = Decryptor::new(c, ids, &DecryptOptions::default())?;
    let mut out = Vec::new();
    d.copy_to(&mut out)?;
    Ok(out)
}

const ALL: [(&str, &str); 5] = [
    ("age.key", "age.pub"),
    ("zseal.key", "zseal.pub"),
    ("ed25519", "ed25519.pub"),
    ("rsa", "rsa.pub"),
    ("ed25519-encrypted", "ed25519-encrypted.pub"),
];

#[test]
fn every_recipient_opens_a_multi_recipient_file_alone() {
    let plain = common::data(3 * 4096 + 7);
    let rs: Vec<AgeRecipient> = ALL.iter().map(|(_, p)| recipient(p)).collect();
    let to: Vec<&dyn Recipient> = rs.iter().map(|r| r as &dyn Recipient).collect();
    let sealed = seal_to(&plain, &to);
    for (key, _) in ALL {
        assert_eq!(
            open_with(&sealed, &[&identity(key)]).unwrap(),
            plain,
            "{key}"
        );
    }
    let h = Decryptor::new(&sealed[..], &[&identity("rsa")], &DecryptOptions::default()).unwrap();
    let kinds: Vec<String> = h.header().stanzas.iter().map(|s| s.kind_name()).collect();
    assert_eq!(
        kinds,
        ["X25519", "X25519", "ssh-ed25519", "ssh-rsa", "ssh-ed25519"]
    );
}

#[test]
fn committed_recipients_fixture_opens_with_every_fixture_key() {
    let sealed =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/v1/recipients.zseal"))
            .unwrap();
    let sample =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.log")).unwrap();
    for (key, _) in ALL {
        assert!(
            open_with(&sealed, &[&identity(key)]).unwrap() == sample,
            "{key}"
        );
    }
}

#[test]
fn wrong_identity_says_none_matched_and_how_many_recipients_there_are() {
    let sealed = seal_to(
        b"secret",
        &[
            &recipient("age.pub"),
            &recipient("rsa.pub"),
            &recipient("zseal.pub"),
        ],
    );
    let (other, _) = recipients::generate();
    let other = recipients::read_identities(other.as_bytes(), "new", Fixed(None))
        .unwrap()
        .remove(0);
    let e = open_with(&sealed, &[&other]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("no identity matched any of the 3 recipient(s) of this file"),
        "{e}"
    );
    // The right one among several identities is found.
    assert_eq!(
        open_with(&sealed, &[&other, &identity("zseal.key")]).unwrap(),
        b"secret"
    );
}

#[test]
fn encrypted_ssh_key_without_its_passphrase_fails_clearly() {
    let sealed = seal_to(b"x", &[&recipient("ed25519-encrypted.pub")]);
    let data = std::fs::read(keys().join("ed25519-encrypted")).unwrap();
    let id = recipients::read_identities(&data, "ed25519-encrypted", Fixed(Some("wrong")))
        .unwrap()
        .remove(0);
    assert!(open_with(&sealed, &[&id]).is_err());
}

/// The age header of `hello.age`: its text up to and including "---", the X25519 stanza, the MAC.
/// How a container holds a passphrase (what keys are told when they wrap for one).
const ARGON: zseal::crypto::PassphraseKdf = zseal::crypto::PassphraseKdf::Argon2id;

fn parse_age_header(file: &[u8]) -> (Vec<u8>, age_core::format::Stanza, Vec<u8>) {
    let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
    let text = String::from_utf8_lossy(file);
    let end = text.find("\n---").unwrap() + 4;
    let mac_line = text[end..].split('\n').next().unwrap().trim();
    let lines: Vec<&str> = text[..end].lines().collect();
    assert_eq!(lines[0], "age-encryption.org/v1");
    let args: Vec<String> = lines[1]
        .strip_prefix("-> ")
        .unwrap()
        .split(' ')
        .map(String::from)
        .collect();
    let body = b64.decode(lines[2]).unwrap();
    let stanza = age_core::format::Stanza {
        tag: args[0].clone(),
        args: args[1..].to_vec(),
        body,
    };
    (file[..end].to_vec(), stanza, b64.decode(mac_line).unwrap())
}

#[test]
fn a_stanza_made_by_the_real_age_tool_unwraps_to_the_right_file_key() {
    let file = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/age/hello.age"))
        .unwrap();
    let (header, stanza, mac) = parse_age_header(&file);
    assert_eq!(stanza.tag, "X25519");
    // The age stanza, carried in a zseal stanza, through zseal's identity path.
    let zs = recipients::encode(&stanza).unwrap();
    let fk = identity("age.key")
        .unwrap_stanzas(&[zs.to_age()])
        .unwrap()
        .expect("the fixture key opens it");
    // Proof that the key is right: age's own header MAC (c2sp.org/age) verifies under it.
    let mut mac_key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(b""), fk.expose())
        .expand(b"header", &mut mac_key)
        .unwrap();
    let mut h = hmac::Hmac::<sha2::Sha256>::new_from_slice(&mac_key).unwrap();
    h.update(&header);
    h.verify_slice(&mac)
        .expect("age's header MAC verifies with the unwrapped file key");
}

/// Re-encodes the header of `c` after `edit`, keeping the old MAC or computing one with `mac_with`.
fn rebuild(c: &[u8], edit: impl FnOnce(&mut Header), mac_with: Option<&FileKey>) -> Vec<u8> {
    let (mut h, raw, old_mac) = Header::read(&mut &c[..]).unwrap();
    let rest = &c[raw.len() + 32..];
    edit(&mut h);
    let mut out = h.encode_unauthenticated().unwrap();
    let mac = match mac_with {
        None => old_mac.to_vec(),
        Some(k) => {
            let mut mk = [0u8; 32];
            hkdf::Hkdf::<sha2::Sha256>::new(Some(b""), k.expose())
                .expand(b"zseal v1 header", &mut mk)
                .unwrap();
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&mk).unwrap();
            m.update(&out);
            m.finalize().into_bytes().to_vec()
        }
    };
    out.extend_from_slice(&mac);
    out.extend_from_slice(rest);
    out
}

#[test]
fn a_changed_or_added_stanza_is_rejected() {
    let plain = common::data(5000);
    let sealed = seal_to(&plain, &[&recipient("age.pub"), &recipient("zseal.pub")]);
    let changed = rebuild(
        &sealed,
        |h| *h.stanzas[0].body.last_mut().unwrap() ^= 1,
        None,
    );
    let e = open_with(&changed, &[&identity("zseal.key")]).unwrap_err();
    assert!(
        matches!(e, Error::HeaderAuth),
        "changed stanza, other recipient: {e}"
    );
    assert!(open_with(&changed, &[&identity("age.key")]).is_err());
    let extra: Vec<zseal::crypto::Stanza> = recipient("rsa.pub")
        .wrap_file_key(&FileKey::from_bytes([1; 16]), ARGON, &mut rand_core::OsRng)
        .unwrap()
        .iter()
        .map(|s| zseal::crypto::Stanza::from_age(s).unwrap())
        .collect();
    let added = rebuild(&sealed, |h| h.stanzas.extend(extra), None);
    for key in ["age.key", "zseal.key"] {
        let e = open_with(&added, &[&identity(key)]).unwrap_err();
        assert!(matches!(e, Error::HeaderAuth), "added stanza, {key}: {e}");
    }
}

#[test]
fn one_recipient_cannot_make_another_see_different_plaintext() {
    let plain = common::data(5000);
    let sealed = seal_to(&plain, &[&recipient("age.pub"), &recipient("zseal.pub")]);
    // The attacker holds age.key, learns the file key, and gives zseal.key's holder another key.
    let (h, _, _) = Header::read(&mut &sealed[..]).unwrap();
    let k = identity("age.key")
        .unwrap_stanzas(&h.stanzas.iter().map(|s| s.to_age()).collect::<Vec<_>>())
        .unwrap()
        .unwrap();
    let k2 = FileKey::from_bytes([7; 16]);
    assert_ne!(k.expose(), k2.expose());
    let forged = zseal::crypto::Stanza::from_age(
        &recipient("zseal.pub")
            .wrap_file_key(&k2, ARGON, &mut rand_core::OsRng)
            .unwrap()
            .remove(0),
    )
    .unwrap();
    // (a) keeping the MAC: the victim's header fails.
    let a = rebuild(&sealed, |h| h.stanzas[1] = forged.clone(), None);
    assert!(matches!(
        open_with(&a, &[&identity("zseal.key")]).unwrap_err(),
        Error::HeaderAuth
    ));
    // (b) re-MACing with the new key: the header passes for the victim, but the payload was sealed
    // under the real key, so chunk 0 fails; and the attacker's own view now fails the MAC.
    let b = rebuild(&sealed, |h| h.stanzas[1] = forged.clone(), Some(&k2));
    assert!(matches!(
        open_with(&b, &[&identity("zseal.key")]).unwrap_err(),
        Error::ChunkAuth(0)
    ));
    assert!(matches!(
        open_with(&b, &[&identity("age.key")]).unwrap_err(),
        Error::HeaderAuth
    ));
    // Untouched, both see the same plaintext.
    assert_eq!(
        open_with(&sealed, &[&identity("zseal.key")]).unwrap(),
        plain
    );
    assert_eq!(open_with(&sealed, &[&identity("age.key")]).unwrap(), plain);
}

#[test]
fn passphrase_and_recipients_do_not_mix() {
    let pw = common::pass("pw");
    let r = recipient("age.pub");
    let e = Encryptor::new(Vec::new(), &[&pw, &r], &EncryptOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot be combined"), "{e}");
}

#[test]
fn recipients_files_skip_comments_and_report_bad_lines() {
    let all = std::fs::read(keys().join("all.txt")).unwrap();
    assert_eq!(
        recipients::read_recipients(&all[..], "all.txt")
            .unwrap()
            .len(),
        5
    );
    let e = recipients::read_recipients(&b"# c\n\nage1notakey\n"[..], "bad.txt")
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("bad.txt:3:"), "{e}");
    assert!(recipients::read_recipients(&b"# only a comment\n"[..], "empty.txt").is_err());
    // authorized_keys lines with options.
    let ed = std::fs::read_to_string(keys().join("ed25519.pub")).unwrap();
    let line = format!("from=\"10.0.0.1\",no-pty,command=\"echo a b\" {ed}");
    let rs = recipients::read_recipients(line.as_bytes(), "authorized_keys").unwrap();
    let sealed = seal_to(b"via authorized_keys", &[&rs[0]]);
    assert_eq!(
        open_with(&sealed, &[&identity("ed25519")]).unwrap(),
        b"via authorized_keys"
    );
    // A key whose comment names a key type is taken from its start, not from the comment.
    let line = format!("{} was ssh-ed25519 before", ed.trim());
    let rs = recipients::read_recipients(line.as_bytes(), "authorized_keys").unwrap();
    assert_eq!(rs[0].as_str(), line);
    let line = format!("{} ssh-rsa too", recipient("age.pub").as_str());
    assert!(
        recipients::read_recipients(line.as_bytes(), "r").is_err(),
        "age keys take no comment"
    );
}

/// A recipient keeps the text it was given (trimmed), which rekey and inspect print; a bad one is
/// named in the error, cut to 40 characters when longer.
#[test]
fn recipients_keep_their_text_and_bad_ones_are_named_briefly() {
    let ed = std::fs::read_to_string(keys().join("ed25519.pub")).unwrap();
    let r = recipients::AgeRecipient::parse(&format!("  {ed}\n")).unwrap();
    assert_eq!(r.as_str(), ed.trim());
    let short = "nonsense-key";
    let e = recipients::AgeRecipient::parse(short)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("'nonsense-key'"), "{e}");
    let forty = "k".repeat(40);
    let e = recipients::AgeRecipient::parse(&forty)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&format!("'{forty}'")), "{e}");
    let long = format!("{forty}tail");
    let e = recipients::AgeRecipient::parse(&long)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!("'{forty}…'")) && !e.contains("tail"),
        "{e}"
    );
}

/// `keygen -y`: the recipient of every identity line of an identity file (comments and blank
/// lines skipped), as `age-keygen -y` prints them; a file without one, or with a line that is
/// not a key, is refused.
#[test]
fn recipients_of_an_identity_file_are_those_age_prints() {
    let key = std::fs::read_to_string(keys().join("age.key")).unwrap();
    let public = recipient("age.pub").as_str().to_string();
    let file = format!("# a comment\n\n{key}\n");
    let got = recipients::recipients_of(file.as_bytes(), "age.key").unwrap();
    assert_eq!(got, vec![public.clone()]);
    let (secret, second) = recipients::generate();
    let two = format!("{key}\n# and another\n{}\n", &*secret);
    let got = recipients::recipients_of(two.as_bytes(), "two").unwrap();
    assert_eq!(got, vec![public, second]);
    assert!(recipients::recipients_of(b"# nothing\n\n", "empty").is_err());
    assert!(recipients::recipients_of(b"AGE-SECRET-KEY-1NOPE\n", "bad").is_err());
}

/// An OpenSSH private key's recipient is its public key, as its `.pub` file starts (an
/// encrypted key's too, with no passphrase: `encrypt -i`); a public key is refused as one.
#[test]
fn recipients_of_an_ssh_private_key_are_its_public_key() {
    for (private, public) in [
        ("ed25519", "ed25519.pub"),
        ("ed25519-encrypted", "ed25519-encrypted.pub"),
        ("rsa", "rsa.pub"),
    ] {
        let data = std::fs::read(keys().join(private)).unwrap();
        let got = recipients::recipients_of(&data, private).unwrap();
        let line = std::fs::read_to_string(keys().join(public)).unwrap();
        let mut words = line.split_whitespace();
        let want = format!("{} {}", words.next().unwrap(), words.next().unwrap());
        assert_eq!(got, vec![want], "{private}");
    }
    let public = std::fs::read(keys().join("age.pub")).unwrap();
    let e = recipients::recipients_of(&public, "age.pub").unwrap_err();
    assert!(e.to_string().contains("this is a public key"), "{e}");
}

/// A front end that cannot ask (the Python package without `key_passphrase=`).
#[derive(Clone)]
struct CannotAsk;

impl recipients::KeyPassphrase for CannotAsk {
    fn passphrase(&self, _: &str) -> Option<String> {
        None
    }
    fn refusal(&self) -> Option<String> {
        Some("give its passphrase".into())
    }
}

#[test]
fn the_one_identity_loader_reads_files_and_text_and_asks_through_the_callback() {
    use recipients::{load_identities, IdentitySource};
    let key = std::fs::read_to_string(keys().join("age.key")).unwrap();
    let line = key
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY-1"))
        .unwrap();
    let sources = [
        IdentitySource::from_entry(line),
        IdentitySource::from_entry(keys().join("age.key").to_str().unwrap()),
        IdentitySource::File(keys().join("ed25519-encrypted")),
    ];
    assert!(matches!(sources[0], IdentitySource::Text(_)));
    assert!(matches!(sources[1], IdentitySource::File(_)));
    let ids = load_identities(&sources, Fixed(Some("zseal fixture"))).unwrap();
    assert_eq!(ids.len(), 3);
    // The encrypted key opens a file sealed to it, through the callback's passphrase.
    let to = recipient("ed25519-encrypted.pub");
    let sealed = zseal::encrypt_to_vec(b"for ssh", &[&to], &EncryptOptions::default()).unwrap();
    let got = zseal::decrypt_to_vec(&sealed, &[&ids[2]]).unwrap();
    assert_eq!(got, b"for ssh");
    // A front end that cannot ask is refused when the key is read, with its advice.
    let e = load_identities(&sources[2..], CannotAsk)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("protected by a passphrase: give its passphrase"),
        "{e}"
    );
    // A wrong passphrase is the key's fault, not the file's.
    let wrong = load_identities(&sources[2..], Fixed(Some("not it"))).unwrap();
    let e = zseal::decrypt_to_vec(&sealed, &[&wrong[0]]);
    let e = e.unwrap_err().to_string();
    assert!(e.contains("its passphrase was wrong"), "{e}");
    // A missing file names itself once.
    let missing = [IdentitySource::File("/nonexistent/id.key".into())];
    let e = load_identities(&missing, CannotAsk)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.starts_with("cannot read identity file /nonexistent/id.key: No such file"),
        "{e}"
    );
}

/// FORMAT.md §1.1: a passphrase stanza is the only stanza of its file, whichever key opens it.
/// A header holding one beside an X25519 stanza (MAC and all right: made by a holder of the
/// file key) is refused; before the one unwrap loop, only a passphrase checked the rule, and the
/// X25519 identity opened the file.
#[test]
fn a_passphrase_beside_another_stanza_is_refused_for_every_identity() {
    let plain = common::data(3000);
    let sealed = seal_to(&plain, &[&recipient("age.pub")]);
    let (h, _, _) = Header::read(&mut &sealed[..]).unwrap();
    let keyed: Vec<_> = h.stanzas.iter().map(|s| s.to_age()).collect();
    let key = identity("age.key").unwrap_stanzas(&keyed).unwrap().unwrap();
    let pw = zseal::Passphrase::with_params("beside", common::CHEAP).unwrap();
    let wrapped = pw
        .wrap_file_key(&key, ARGON, &mut rand_core::OsRng)
        .unwrap();
    let stanza = zseal::crypto::Stanza::from_age(&wrapped[0]).unwrap();
    let both = rebuild(&sealed, |h| h.stanzas.insert(0, stanza), Some(&key));
    for id in [&identity("age.key") as &dyn Identity, &pw] {
        let e = open_with(&both, &[id]).unwrap_err();
        assert!(e.to_string().contains("must be the only stanza"), "{e}");
    }
}
