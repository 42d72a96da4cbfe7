//! Asking the user for what a key needs (FORMAT.md §1.1): the passphrase of an encrypted SSH
//! key, and what an age plugin asks (a PIN, a confirmation, a value) or tells ("touch your
//! key"). Each front end answers its own way ([`KeyPassphrase`]): the command on the terminal,
//! the Python package through its callable or the terminal; [`NoPrompt`] answers nothing.

/// Asks the user for what a key needs: the passphrase of an encrypted SSH key, and what an age
/// plugin asks (a PIN, a confirmation, a value) or tells (touch the key).
pub trait KeyPassphrase: Clone + Send + Sync + 'static {
    /// Returns the passphrase for the key described (or the secret an age plugin asks for, a
    /// PIN), or `None` to give up.
    fn passphrase(&self, description: &str) -> Option<String>;

    /// `Some(advice)` when this front end has no way to ask: a passphrase-protected key is then
    /// refused when it is read, with the advice, instead of matching nothing later.
    fn refusal(&self) -> Option<String> {
        None
    }

    /// Shows an age plugin's message ("touch your YubiKey"). The default: standard error.
    fn message(&self, text: &str) {
        eprintln!("{text}");
    }

    /// Asks an age plugin's yes/no question (`yes`, `no` its answers' labels); `None` when it
    /// cannot ask. The default cannot.
    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        let _ = (message, yes, no);
        None
    }

    /// Asks for a value an age plugin needs that is not secret; `None` when it cannot ask. The
    /// default cannot.
    fn public_string(&self, description: &str) -> Option<String> {
        let _ = description;
        None
    }

    /// Why a question went unanswered, for the error of the plugin that asked it.
    fn why_unanswered(&self) -> String {
        "zseal cannot ask questions here (no terminal): use the plugin where it can ask, or \
         set it up to need no answer"
            .into()
    }
}

/// An encrypted SSH key's prompt as the `age` crate's callbacks (age plugins have theirs in
/// [`super::plugin`]).
#[derive(Clone)]
pub(crate) struct Callbacks<P>(pub(crate) P);

impl<P: KeyPassphrase> age::Callbacks for Callbacks<P> {
    fn display_message(&self, message: &str) {
        eprintln!("{message}");
    }
    fn confirm(&self, _: &str, _: &str, _: Option<&str>) -> Option<bool> {
        None
    }
    fn request_public_string(&self, _: &str) -> Option<String> {
        None
    }
    fn request_passphrase(&self, description: &str) -> Option<age::secrecy::SecretString> {
        self.0.passphrase(description).map(Into::into)
    }
}

/// The front end that cannot ask anything ([`super::recipients::AgeRecipient::parse`]): an age plugin's messages
/// go to standard error, its questions get no answer.
#[derive(Clone)]
pub struct NoPrompt;

impl KeyPassphrase for NoPrompt {
    fn passphrase(&self, _: &str) -> Option<String> {
        None
    }
}
