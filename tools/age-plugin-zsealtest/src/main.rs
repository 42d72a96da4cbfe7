//! `age-plugin-zsealtest`: an age plugin for zseal's tests (tests/age/plugin.rs, tests/cli,
//! python/tests), built with the `age-plugin` crate. NOT a key store: its recipient holds the
//! same 32-byte key as its identity, so anyone with the recipient opens the file.
//!
//! `age-plugin-zsealtest --generate` prints a new identity as plugins do (`# created`,
//! `# recipient: age1zsealtest1…`, `AGE-PLUGIN-ZSEALTEST-1…`). Its stanza is
//! `-> zsealtest KEYTAG` over the file key sealed with ChaCha20-Poly1305 under the key.
//!
//! What it does besides is told by the environment variable `ZSEALTEST`, a comma-separated list:
//! - `msg`: sends a message while wrapping and unwrapping;
//! - `pin`: asks for a secret while unwrapping and refuses any but `$ZSEALTEST_PIN` (`1234`);
//! - `confirm`: asks for a confirmation while unwrapping; "no" refuses;
//! - `public`: asks for a public string while unwrapping;
//! - `pq`: declares the label `postquantum` (age's post-quantum rule);
//! - `crash-wrap`, `crash-unwrap`: exits in the middle of the protocol;
//! - `refuse-wrap`, `refuse-unwrap`: answers with an error;
//! - `garbage-wrap`, `garbage-unwrap`: prints bytes on stdout that are no protocol.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};

use age_core::format::{FileKey, Stanza, FILE_KEY_BYTES};
use age_core::primitives::{aead_decrypt, aead_encrypt};
use age_core::secrecy::ExposeSecret;
use age_plugin::identity::{self, IdentityPluginV1};
use age_plugin::recipient::{self, RecipientPluginV1};
use age_plugin::{print_new_identity, run_state_machine, Callbacks, PluginHandler};

const NAME: &str = "zsealtest";
type Key = [u8; 32];

/// True when `ZSEALTEST` lists `flag`.
fn told(flag: &str) -> bool {
    std::env::var("ZSEALTEST").is_ok_and(|v| v.split(',').any(|f| f.trim() == flag))
}

/// Misbehaves as told for `phase` (`wrap` or `unwrap`): exits, or prints garbage on stdout.
fn misbehave(phase: &str) {
    if told(&format!("crash-{phase}")) {
        std::process::exit(3);
    }
    if told(&format!("garbage-{phase}")) {
        let mut out = io::stdout();
        let _ = out.write_all(b"\xff\xfegarbage, not a stanza\n-> \x00\n\n");
        let _ = out.flush();
        std::process::exit(0);
    }
}

/// The key tag a stanza names its key by: the first 4 bytes of the key, hex.
fn tag_of(key: &Key) -> String {
    key[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds to `keys` the key a recipient or an identity (`what`) carries; `Err(message)` when it is
/// not a zsealtest one (another plugin's `name`, or not a 32-byte key).
fn add_key(keys: &mut Vec<Key>, what: &str, name: &str, bytes: &[u8]) -> Result<(), String> {
    match bytes.try_into() {
        Ok(k) if name == NAME => {
            keys.push(k);
            Ok(())
        }
        _ => Err(format!("not a zsealtest {what}")),
    }
}

struct Handler;

impl PluginHandler for Handler {
    type RecipientV1 = Wrap;
    type IdentityV1 = Unwrap;

    fn recipient_v1(self) -> io::Result<Wrap> {
        Ok(Wrap(Vec::new()))
    }

    fn identity_v1(self) -> io::Result<Unwrap> {
        Ok(Unwrap(Vec::new()))
    }
}

struct Wrap(Vec<Key>);

impl RecipientPluginV1 for Wrap {
    fn add_recipient(
        &mut self,
        index: usize,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), recipient::Error> {
        add_key(&mut self.0, "recipient", name, bytes)
            .map_err(|message| recipient::Error::Recipient { index, message })
    }

    fn add_identity(
        &mut self,
        index: usize,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), recipient::Error> {
        add_key(&mut self.0, "identity", name, bytes)
            .map_err(|message| recipient::Error::Identity { index, message })
    }

    fn labels(&mut self) -> HashSet<String> {
        match told("pq") {
            true => HashSet::from(["postquantum".to_string()]),
            false => HashSet::new(),
        }
    }

    fn wrap_file_keys(
        &mut self,
        file_keys: Vec<FileKey>,
        mut callbacks: impl Callbacks<recipient::Error>,
    ) -> io::Result<Result<Vec<Vec<Stanza>>, Vec<recipient::Error>>> {
        misbehave("wrap");
        if told("env") {
            // The names of the variables this plugin was given, one a line, into
            // $ZSEALTEST_ENV_FILE (zseal must give it none of its own, issue 58 §5).
            let names: Vec<String> = std::env::vars_os()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect();
            if let Some(f) = std::env::var_os("ZSEALTEST_ENV_FILE") {
                std::fs::write(f, names.join("\n"))?;
            }
        }
        if told("msg") {
            callbacks.message("zsealtest: wrapping the file key")?.ok();
        }
        if told("refuse-wrap") {
            let message = "zsealtest refuses to wrap (told to by ZSEALTEST)".into();
            return Ok(Err(vec![recipient::Error::Recipient { index: 0, message }]));
        }
        let stanzas = file_keys
            .iter()
            .map(|fk| {
                let stanza = |k: &Key| Stanza {
                    tag: NAME.into(),
                    args: vec![tag_of(k)],
                    body: aead_encrypt(k, fk.expose_secret()),
                };
                self.0.iter().map(stanza).collect()
            })
            .collect();
        Ok(Ok(stanzas))
    }
}

struct Unwrap(Vec<Key>);

impl Unwrap {
    /// Asks what it was told to ask; `Err(message)` refuses.
    fn interact(
        &self,
        callbacks: &mut impl Callbacks<identity::Error>,
    ) -> io::Result<Result<(), String>> {
        if told("msg") {
            callbacks
                .message("zsealtest: unwrapping the file key")?
                .ok();
        }
        if told("public") {
            if let Err(e) = callbacks.request_public("zsealtest slot name")? {
                return Ok(Err(format!("no slot name given: {e}")));
            }
        }
        if told("pin") {
            let want = std::env::var("ZSEALTEST_PIN").unwrap_or_else(|_| "1234".into());
            match callbacks.request_secret("zsealtest PIN")? {
                Ok(pin) if pin.expose_secret() == want => {}
                Ok(_) => return Ok(Err("wrong PIN".into())),
                Err(e) => return Ok(Err(format!("no PIN given: {e}"))),
            }
        }
        if told("confirm") {
            match callbacks.confirm("Use the zsealtest key?", "Yes", Some("No"))? {
                Ok(true) => {}
                Ok(false) => return Ok(Err("the user declined".into())),
                Err(e) => return Ok(Err(format!("not confirmed: {e}"))),
            }
        }
        Ok(Ok(()))
    }
}

impl IdentityPluginV1 for Unwrap {
    fn add_identity(
        &mut self,
        index: usize,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), identity::Error> {
        add_key(&mut self.0, "identity", name, bytes)
            .map_err(|message| identity::Error::Identity { index, message })
    }

    fn unwrap_file_keys(
        &mut self,
        files: Vec<Vec<Stanza>>,
        mut callbacks: impl Callbacks<identity::Error>,
    ) -> io::Result<HashMap<usize, Result<FileKey, Vec<identity::Error>>>> {
        let mut out = HashMap::new();
        for (i, stanzas) in files.iter().enumerate() {
            let ours: Vec<_> = stanzas.iter().filter(|s| s.tag == NAME).collect();
            let found = ours.iter().find_map(|s| {
                let k = self.0.iter().find(|k| s.args.first() == Some(&tag_of(k)))?;
                let key = aead_decrypt(k, FILE_KEY_BYTES, &s.body).ok()?;
                Some(FileKey::init_with_mut(|fk| fk.copy_from_slice(&key)))
            });
            let Some(file_key) = found else { continue };
            misbehave("unwrap");
            let refused = match told("refuse-unwrap") {
                true => Err("zsealtest refuses to unwrap (told to by ZSEALTEST)".to_string()),
                false => self.interact(&mut callbacks)?,
            };
            let result = refused
                .map(|()| file_key)
                .map_err(|message| vec![identity::Error::Identity { index: 0, message }]);
            out.insert(i, result);
        }
        Ok(out)
    }
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(a) if a.starts_with("--age-plugin=") => {
            run_state_machine(&a["--age-plugin=".len()..], Handler)
        }
        Some("--generate") => {
            let mut key = [0u8; 32];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
            print_new_identity(NAME, &key, &key);
            Ok(())
        }
        _ => {
            eprintln!("usage: age-plugin-zsealtest --generate (a test plugin for zseal's tests)");
            std::process::exit(2)
        }
    }
}
