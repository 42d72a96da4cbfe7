//! The one loop that unwraps a file key, for every format (FORMAT.md §1.1, §2.3, §10.2): each
//! identity is asked in turn for the header's stanzas (the same age stanzas whatever the format,
//! a plugin's and an AWS KMS key's too), a passphrase stanza must stand alone, and the key that
//! unwraps must verify the header's MAC. A format supplies its stanzas and its MAC through
//! [`KeyHeader`]; nothing else here knows a format.

use super::{passphrase, AgeStanza, FileKey, Identity};
use crate::error::{Error, Result};

/// What a format hands the unwrap loop: its header's stanzas and its header MAC.
pub trait KeyHeader {
    /// Every stanza of the header, in order, as keys read them.
    fn stanzas(&self) -> &[AgeStanza];

    /// The stanzas' names, for "no identity matched" (FORMAT.md's names for this format).
    fn kinds(&self) -> Vec<String>;

    /// Verifies the header's MAC under `key`; `by_passphrase` when a passphrase unwrapped it
    /// (the container then answers a mismatch as a wrong passphrase, §2.3).
    fn verify_mac(&self, key: &FileKey, by_passphrase: bool) -> Result<()>;
}

/// The file key of `header`, unwrapped by the first of `identities` that opens one of its
/// stanzas, once the header MAC verifies under it. A passphrase stanza beside others is
/// refused before any work; a passphrase file that nothing opens is a wrong passphrase, any
/// other file a [`Error::NoMatchingKey`] naming its stanzas.
pub fn unwrap_file_key(header: &dyn KeyHeader, identities: &[&dyn Identity]) -> Result<FileKey> {
    let stanzas = header.stanzas();
    let by_passphrase = stanzas.iter().find(|s| passphrase::is_passphrase(s));
    if let Some(p) = by_passphrase {
        if stanzas.len() != 1 {
            return Err(passphrase::not_alone(p));
        }
    }
    let mut key = None;
    for id in identities {
        if let Some(k) = id.unwrap_stanzas(stanzas)? {
            key = Some(k);
            break;
        }
    }
    let key = key.ok_or_else(|| match by_passphrase {
        Some(_) => Error::WrongPassphrase,
        None => Error::NoMatchingKey {
            stanzas: stanzas.len(),
            kinds: header.kinds().join(", "),
        },
    })?;
    header.verify_mac(&key, by_passphrase.is_some())?;
    Ok(key)
}

/// An identity whose stanzas carry one tag of their own (zseal's post-quantum and AWS KMS
/// identities): [`own_tag_identity!`] makes it an `age::Identity`, so the rule every such
/// identity follows is written once. A stanza of another tag is not its own; one of its tag that
/// is malformed is an invalid header; one sealed to another key of its kind is not its own.
pub(crate) trait OwnTag {
    /// The tag of its stanzas.
    const TAG: &'static str;

    /// A stanza of its tag: the file key, `Ok(None)` when the stanza is another key's, or why it
    /// cannot be opened (`InvalidHeader` when it is malformed).
    fn open_own(
        &self,
        stanza: &AgeStanza,
    ) -> std::result::Result<Option<age_core::format::FileKey>, age::DecryptError>;
}

/// `age::Identity` for a type that is [`OwnTag`].
macro_rules! own_tag_identity {
    ($t:ty) => {
        impl age::Identity for $t {
            fn unwrap_stanza(
                &self,
                stanza: &age_core::format::Stanza,
            ) -> Option<std::result::Result<age_core::format::FileKey, age::DecryptError>> {
                use $crate::crypto::unwrap::OwnTag;
                (stanza.tag == <$t as OwnTag>::TAG)
                    .then(|| self.open_own(stanza).transpose())
                    .flatten()
            }
        }
    };
}
pub(crate) use own_tag_identity;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::passphrase::{Passphrase, CHEAP};
    use crate::crypto::{PassphraseKdf, Recipient};

    /// A header of `stanzas` whose MAC is `mac_ok`.
    struct Fake {
        stanzas: Vec<AgeStanza>,
        mac_ok: bool,
    }

    impl KeyHeader for Fake {
        fn stanzas(&self) -> &[AgeStanza] {
            &self.stanzas
        }
        fn kinds(&self) -> Vec<String> {
            self.stanzas.iter().map(|s| s.tag.clone()).collect()
        }
        fn verify_mac(&self, _: &FileKey, by_passphrase: bool) -> Result<()> {
            match (self.mac_ok, by_passphrase) {
                (true, _) => Ok(()),
                (false, true) => Err(Error::WrongPassphrase),
                (false, false) => Err(Error::HeaderAuth),
            }
        }
    }

    fn copies(s: &[AgeStanza]) -> Vec<AgeStanza> {
        s.iter().map(crate::crypto::copy_stanza).collect()
    }

    fn wrapped(pw: &Passphrase, kdf: PassphraseKdf) -> Vec<AgeStanza> {
        let key = FileKey::from_bytes([3; 16]);
        pw.wrap_file_key(&key, kdf, &mut rand_core::OsRng).unwrap()
    }

    /// The rules every format shares, in both passphrase forms: alone, or refused before any
    /// work; no identity given: wrong passphrase; the MAC asked with `by_passphrase`.
    #[test]
    fn one_loop_keeps_the_passphrase_rules_for_both_forms() {
        let pw = Passphrase::with_params("one loop", CHEAP)
            .unwrap()
            .with_age_work_factor(2)
            .unwrap();
        for kdf in [PassphraseKdf::Argon2id, PassphraseKdf::Scrypt] {
            let stanzas = wrapped(&pw, kdf);
            let ok = Fake {
                stanzas: copies(&stanzas),
                mac_ok: true,
            };
            let key = unwrap_file_key(&ok, &[&pw]).unwrap();
            assert_eq!(key.expose(), &[3; 16], "{kdf:?}");
            let e = unwrap_file_key(&ok, &[]).err().unwrap();
            assert!(matches!(e, Error::WrongPassphrase), "{kdf:?}: {e}");
            let bad_mac = Fake {
                stanzas: copies(&stanzas),
                mac_ok: false,
            };
            let e = unwrap_file_key(&bad_mac, &[&pw]).err().unwrap();
            assert!(matches!(e, Error::WrongPassphrase), "{kdf:?}: {e}");
            let mut two = copies(&stanzas);
            two.push(AgeStanza {
                tag: "X25519".into(),
                args: vec!["x".into()],
                body: vec![0; 32],
            });
            let e = unwrap_file_key(
                &Fake {
                    stanzas: two,
                    mac_ok: true,
                },
                &[&pw],
            )
            .err()
            .unwrap();
            assert!(e.to_string().contains("only stanza"), "{kdf:?}: {e}");
        }
    }

    /// A file for nobody given names its stanzas; a MAC that fails is the header's fault.
    #[test]
    fn no_match_names_the_stanzas_and_a_bad_mac_is_the_headers() {
        let (secret, public) = crate::crypto::recipients::generate();
        let r = crate::AgeRecipient::parse(&public).unwrap();
        let key = FileKey::from_bytes([4; 16]);
        let stanzas = r
            .wrap_file_key(&key, PassphraseKdf::Argon2id, &mut rand_core::OsRng)
            .unwrap();
        let pw = Passphrase::with_params("not it", CHEAP).unwrap();
        let h = Fake {
            stanzas: copies(&stanzas),
            mac_ok: true,
        };
        let e = unwrap_file_key(&h, &[&pw]).err().unwrap();
        assert!(
            matches!(&e, Error::NoMatchingKey { stanzas: 1, kinds } if kinds == "X25519"),
            "{e}"
        );
        let ids = crate::crypto::recipients::read_identities(
            secret.as_bytes(),
            "test",
            crate::crypto::recipients::NoPrompt,
        )
        .unwrap();
        let h = Fake {
            stanzas,
            mac_ok: false,
        };
        let e = unwrap_file_key(&h, &[&pw, &ids[0]]).err().unwrap();
        assert!(matches!(e, Error::HeaderAuth), "{e}");
    }
}
