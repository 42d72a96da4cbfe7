//! age plugins (FORMAT.md §1.1, "Plugin recipients"): recipients `age1NAME1…` and identities
//! `AGE-PLUGIN-NAME-1…`, served by a program `age-plugin-NAME` found on `PATH` (a YubiKey, a
//! TPM, a Secure Enclave, any plugin). The protocol (c2sp.org/age-plugin) is the `age` crate's
//! own; this module finds the plugin before anything is written, hands its messages and
//! questions to the front end's [`KeyPassphrase`], and turns its failures into one message
//! naming the plugin and, when it asked something nobody could answer, why.
//!
//! A plugin's stanza is an age stanza like any other: it travels in a type-02/03 stanza of a
//! container or in an age header unchanged.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use age::secrecy::SecretString;

use super::prompt::KeyPassphrase;
use super::recipients::short;
use crate::error::{Error, Result};

/// The label a recipient declares to be post-quantum (age's rule: a file's recipients all
/// declare the same labels).
pub const POST_QUANTUM: &str = super::pq::LABEL;

/// The program that serves the plugin `name`.
pub fn binary_name(name: &str) -> String {
    format!("age-plugin-{name}")
}

/// [`KeyPassphrase`] without its `Clone` (which a trait object cannot have).
trait Ask: Send + Sync {
    fn message(&self, text: &str);
    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool>;
    fn public_string(&self, description: &str) -> Option<String>;
    fn passphrase(&self, description: &str) -> Option<String>;
    fn why_unanswered(&self) -> String;
}

impl<P: KeyPassphrase> Ask for P {
    fn message(&self, text: &str) {
        KeyPassphrase::message(self, text)
    }
    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        KeyPassphrase::confirm(self, message, yes, no)
    }
    fn public_string(&self, description: &str) -> Option<String> {
        KeyPassphrase::public_string(self, description)
    }
    fn passphrase(&self, description: &str) -> Option<String> {
        KeyPassphrase::passphrase(self, description)
    }
    fn why_unanswered(&self) -> String {
        KeyPassphrase::why_unanswered(self)
    }
}

/// The front end's prompt as the `age` crate's callbacks, remembering what went unanswered.
#[derive(Clone)]
pub(crate) struct Prompt {
    ask: Arc<dyn Ask>,
    /// The requests nobody could answer (no terminal, say), for the error that follows.
    unanswered: Arc<Mutex<Vec<String>>>,
}

impl Prompt {
    pub(crate) fn new(ask: impl KeyPassphrase) -> Self {
        Prompt {
            ask: Arc::new(ask),
            unanswered: Arc::default(),
        }
    }

    fn note<T>(&self, what: &str, answer: Option<T>) -> Option<T> {
        if answer.is_none() {
            let mut list = self.unanswered.lock().unwrap_or_else(|e| e.into_inner());
            list.push(what.trim().to_string());
        }
        answer
    }

    /// Why the plugin's requests went unanswered, if one did; the list is emptied.
    fn take_unanswered(&self) -> Option<String> {
        let mut list = self.unanswered.lock().unwrap_or_else(|e| e.into_inner());
        if list.is_empty() {
            return None;
        }
        let asked = list
            .drain(..)
            .map(|q| format!("\"{q}\""))
            .collect::<Vec<_>>();
        Some(format!(
            "it asked {} and got no answer: {}",
            asked.join(", "),
            self.ask.why_unanswered()
        ))
    }
}

impl age::Callbacks for Prompt {
    fn display_message(&self, message: &str) {
        self.ask.message(message);
    }

    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        self.note(message, self.ask.confirm(message, yes, no))
    }

    fn request_public_string(&self, description: &str) -> Option<String> {
        self.note(description, self.ask.public_string(description))
    }

    fn request_passphrase(&self, description: &str) -> Option<SecretString> {
        let answer = self.ask.passphrase(description).map(SecretString::from);
        self.note(description, answer)
    }
}

/// A plugin recipient, `age1NAME1…`: its plugin is found on `PATH` when it is parsed, started
/// for each file it wraps a key for. The labels its last wrap declared decide whether it is
/// post-quantum (age's rule).
pub(crate) struct PluginRecipient {
    inner: age::plugin::RecipientPluginV1<Prompt>,
    prompt: Prompt,
    name: String,
    text: String,
    labels: Mutex<Option<HashSet<String>>>,
}

impl PluginRecipient {
    /// Parses `age1NAME1…` and finds `age-plugin-NAME` (or says it is missing).
    pub(crate) fn parse(s: &str, ask: impl KeyPassphrase) -> Result<Self> {
        let r: age::plugin::Recipient = s.parse().map_err(|e| {
            Error::InvalidOption(format!("invalid age plugin recipient '{}': {e}", short(s)))
        })?;
        let name = r.plugin().to_string();
        let prompt = Prompt::new(ask);
        let inner = age::plugin::RecipientPluginV1::new(&name, &[r], &[], prompt.clone())
            .map_err(|e| encrypt_error(&name, s, e, &prompt))?;
        Ok(PluginRecipient {
            inner,
            prompt,
            name,
            text: s.to_string(),
            labels: Mutex::new(None),
        })
    }

    /// True when its last wrap declared the `postquantum` label.
    pub(crate) fn post_quantum(&self) -> bool {
        let labels = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        labels.as_ref().is_some_and(|l| l.contains(POST_QUANTUM))
    }

    /// The labels its last wrap declared, sorted (none before a wrap).
    pub(crate) fn labels(&self) -> Vec<String> {
        let labels = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<String> = labels.iter().flatten().cloned().collect();
        out.sort();
        out
    }
}

impl age::Recipient for PluginRecipient {
    fn wrap_file_key(
        &self,
        file_key: &age_core::format::FileKey,
    ) -> std::result::Result<(Vec<age_core::format::Stanza>, HashSet<String>), age::EncryptError>
    {
        let (stanzas, labels) = self.inner.wrap_file_key(file_key)?;
        *self.labels.lock().unwrap_or_else(|e| e.into_inner()) = Some(labels.clone());
        Ok((stanzas, labels))
    }
}

impl PluginRecipient {
    /// The error of a failed wrap, naming the plugin (for [`super::recipients::AgeRecipient`]).
    pub(crate) fn wrap_error(&self, e: age::EncryptError) -> Error {
        encrypt_error(&self.name, &self.text, e, &self.prompt)
    }
}

/// One message for an error of a plugin's recipient side.
fn encrypt_error(name: &str, recipient: &str, e: age::EncryptError, prompt: &Prompt) -> Error {
    match e {
        age::EncryptError::MissingPlugin { binary_name } => missing(&binary_name),
        age::EncryptError::Io(e) => failed(
            name,
            &format!("encrypt to {}", short(recipient)),
            &io(e),
            prompt,
        ),
        e => failed(
            name,
            &format!("encrypt to {}", short(recipient)),
            &e,
            prompt,
        ),
    }
}

/// A plugin that is not on `PATH`.
fn missing(binary: &str) -> Error {
    Error::InvalidOption(format!(
        "the age plugin {binary} is not on PATH: install it (or add its directory to PATH)"
    ))
}

/// What an I/O error of the protocol means: a plugin whose standard output was not the
/// protocol (garbage), or another failure (its own message: a plugin that died).
fn io(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::InvalidData => format!(
            "it broke the age-plugin protocol (its standard output held something else: {e})"
        ),
        _ => e.to_string(),
    }
}

/// A plugin that failed: what it said (age's message), and what it asked that went unanswered.
fn failed(name: &str, what: &str, e: &dyn std::fmt::Display, prompt: &Prompt) -> Error {
    // age's messages end with a newline and may span lines (a dead plugin's advice).
    // and isolate the names they quote with Unicode marks (U+2068, U+2069), dropped here.
    let said: String = e.to_string().trim().replace('\n', " ");
    let said: String = said
        .chars()
        .filter(|c| !matches!(c, '\u{2068}' | '\u{2069}'))
        .collect();
    let mut message = format!("{} could not {what}: {said}", binary_name(name));
    if let Some(why) = prompt.take_unanswered() {
        message.push_str(&format!("; {why}"));
    }
    Error::InvalidOption(message)
}

/// A plugin identity, `AGE-PLUGIN-NAME-1…`, with its plugin found on `PATH`.
pub(crate) struct PluginIdentity {
    inner: age::plugin::IdentityPluginV1<Prompt>,
    prompt: Prompt,
    name: String,
    /// The plugin stanzas of the last header it opened and the key: a later look at stanzas
    /// that still hold them all (`rekey --add` checking that the new header still opens) is
    /// answered without running the plugin again, which would ask for the PIN or touch again.
    opened: Mutex<Option<(Vec<age_core::format::Stanza>, super::FileKey)>>,
}

/// The stanzas of `stanzas` that only a plugin opens (FORMAT.md §1.1).
fn plugin_stanzas(stanzas: &[age_core::format::Stanza]) -> Vec<age_core::format::Stanza> {
    (stanzas.iter())
        .filter(|s| !super::recipients::NATIVE_TAGS.contains(&s.tag.as_str()))
        .map(super::copy_stanza)
        .collect()
}

impl PluginIdentity {
    /// Parses one `AGE-PLUGIN-NAME-1…` line and finds `age-plugin-NAME`.
    pub(crate) fn parse(line: &str, ask: impl KeyPassphrase) -> Result<Self> {
        let id: age::plugin::Identity = line.parse().map_err(|e| {
            Error::InvalidOption(format!("not an age plugin identity (AGE-PLUGIN-…): {e}"))
        })?;
        let name = id.plugin().to_string();
        let prompt = Prompt::new(ask);
        let inner = age::plugin::IdentityPluginV1::new(&name, &[id], prompt.clone()).map_err(
            |e| match e {
                age::DecryptError::MissingPlugin { binary_name } => missing(&binary_name),
                e => failed(&name, "start", &e, &prompt),
            },
        )?;
        Ok(PluginIdentity {
            inner,
            prompt,
            name,
            opened: Mutex::new(None),
        })
    }

    /// The plugin's file key for `stanzas`: `Ok(None)` when none is its, an error naming the
    /// plugin when it failed (died, refused, spoke no protocol, asked what nobody answered).
    pub(crate) fn unwrap(
        &self,
        stanzas: &[age_core::format::Stanza],
    ) -> Result<Option<super::FileKey>> {
        let ours = plugin_stanzas(stanzas);
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, key)) = opened.as_ref() {
            if !seen.is_empty() && seen.iter().all(|s| ours.contains(s)) {
                return Ok(Some(key.clone()));
            }
        }
        let key = self.run(stanzas)?;
        if let Some(k) = &key {
            *opened = Some((ours, k.clone()));
        }
        Ok(key)
    }

    /// Runs the plugin over `stanzas`.
    fn run(&self, stanzas: &[age_core::format::Stanza]) -> Result<Option<super::FileKey>> {
        use age::secrecy::ExposeSecret as _;
        use age::Identity as _;
        match self.inner.unwrap_stanzas(stanzas) {
            // A plugin that neither unwrapped nor said why, after a question nobody answered.
            None => match self.prompt.take_unanswered() {
                Some(why) => Err(Error::InvalidOption(format!(
                    "{} could not unwrap the file key: {why}",
                    binary_name(&self.name)
                ))),
                None => Ok(None),
            },
            Some(Ok(k)) => Ok(Some(super::FileKey::from_bytes(*k.expose_secret()))),
            Some(Err(age::DecryptError::Io(e))) => Err(failed(
                &self.name,
                "unwrap the file key",
                &io(e),
                &self.prompt,
            )),
            Some(Err(e)) => Err(failed(&self.name, "unwrap the file key", &e, &self.prompt)),
        }
    }
}
