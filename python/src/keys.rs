//! Keys: identity files, passphrases (with the process's cache of unwrapped file keys), and the
//! unlocking of a source that asks for them.

use crate::*;

/// How an encrypted SSH key's passphrase is asked for: the caller's `key_passphrase` (a str, or
/// a callable given the key's description that returns a str or None), or, without one, not at
/// all (the key is refused with a message saying what to pass). An age plugin's secret question
/// (a PIN) goes the same way, and without `key_passphrase` to the terminal (/dev/tty) when
/// there is one; its yes/no and public questions go to the terminal, its messages to standard
/// error. Without a terminal they go unanswered and the plugin's error says so.
#[derive(Clone)]
pub(crate) enum KeyPrompt {
    None,
    Fixed(Arc<Zeroizing<String>>),
    Callback(Arc<Py<PyAny>>),
}

impl KeyPassphrase for KeyPrompt {
    fn passphrase(&self, description: &str) -> Option<String> {
        match self {
            // Only an age plugin asks here: an encrypted SSH key is refused without
            // key_passphrase (`refusal`).
            KeyPrompt::None => tty_secret(description),
            KeyPrompt::Fixed(p) => Some(p.to_string()),
            // The identity is read off the GIL: the callable runs with it taken again. An
            // exception or a non-str answer gives up, as an empty prompt would.
            KeyPrompt::Callback(f) => Python::attach(|py| {
                f.call1(py, (description,))
                    .and_then(|r| r.extract::<Option<String>>(py))
                    .ok()
                    .flatten()
            }),
        }
    }

    fn refusal(&self) -> Option<String> {
        matches!(self, KeyPrompt::None)
            .then(|| "pass key_passphrase= (its passphrase, or a callable that asks for it)".into())
    }

    fn message(&self, text: &str) {
        eprintln!("zseal: {text}");
    }

    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        let no = no.unwrap_or("no");
        let answer = tty_line(&format!("{message} [{yes}/{no}]: "))?;
        let answer = answer.trim();
        Some(
            answer.eq_ignore_ascii_case(yes)
                || answer.eq_ignore_ascii_case(&yes[..yes.len().min(1)]),
        )
    }

    fn public_string(&self, description: &str) -> Option<String> {
        tty_line(&format!("{description}: ")).map(|a| a.trim_end().to_string())
    }

    fn why_unanswered(&self) -> String {
        "there is no terminal to answer on (zseal asks on /dev/tty); for a secret, pass \
         key_passphrase= (a callable that answers it)"
            .into()
    }
}

/// The terminal, when the process has one.
fn tty() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()
}

/// Writes `prompt` to the terminal and reads one line from it; `None` without a terminal.
fn tty_line(prompt: &str) -> Option<String> {
    use std::io::{BufRead, Write};
    let tty = tty()?;
    (&tty).write_all(prompt.as_bytes()).ok()?;
    let mut line = String::new();
    match std::io::BufReader::new(&tty).read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

/// A secret typed on the terminal without echo (Python's getpass, which reads /dev/tty);
/// `None` without a terminal (getpass would read standard input then).
fn tty_secret(description: &str) -> Option<String> {
    tty()?;
    Python::attach(|py| {
        let getpass = py.import("getpass").ok()?;
        getpass
            .call_method1("getpass", (format!("{description}: "),))
            .and_then(|r| r.extract::<String>())
            .ok()
    })
}

impl KeyPrompt {
    fn of(given: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(v) = given.filter(|v| !v.is_none()) else {
            return Ok(KeyPrompt::None);
        };
        if let Ok(s) = v.extract::<String>() {
            return Ok(KeyPrompt::Fixed(Arc::new(Zeroizing::new(s))));
        }
        if v.is_callable() {
            return Ok(KeyPrompt::Callback(Arc::new(v.clone().unbind())));
        }
        Err(PyValueError::new_err(
            "key_passphrase must be a str or a callable that takes the key's description and returns a str",
        ))
    }
}

/// `identity` entries: paths of identity files (age, OpenSSH), or `AGE-SECRET-KEY-1…` strings,
/// read by the library's one identity loader.
pub(crate) fn read_identities(
    entries: &[Zeroizing<String>],
    ask: KeyPrompt,
) -> zseal::Result<Vec<AgeIdentity>> {
    let sources: Vec<_> = entries
        .iter()
        .map(|e| recipients::IdentitySource::from_entry(e))
        .collect();
    recipients::load_identities(&sources, ask)
}

/// File keys already unwrapped by a passphrase in this process, so that the many opens of one
/// file by a Dask worker pay Argon2 (or an age file's scrypt) once. Keyed by a hash of the passphrase and the stanza (its
/// salt makes it unique per file); bounded.
pub(crate) static PASSPHRASE_KEYS: OnceLock<Mutex<HashMap<[u8; 32], FileKey>>> = OnceLock::new();
pub(crate) const PASSPHRASE_CACHE_MAX: usize = 256;

pub(crate) struct CachedPassphrase {
    pw: Passphrase,
    /// A key derived from the passphrase for the cache slots (the passphrase itself is kept
    /// only inside `pw`).
    slot_key: Zeroizing<[u8; 32]>,
    /// The key the passphrase unwrapped, held until the header MAC has verified under it
    /// ([`CachedPassphrase::remember`]): a stanza that unwraps but whose header then fails
    /// never enters the cache, so a header-tampered file costs Argon2 on every open, like a
    /// wrong passphrase (FORMAT.md §2.3: the two must look alike).
    unwrapped: Mutex<Option<([u8; 32], FileKey)>>,
}

impl CachedPassphrase {
    fn new(secret: &str, max_work_factor: Option<u8>) -> zseal::Result<Self> {
        let mut pw = Passphrase::new(secret.as_bytes())?;
        if let Some(n) = max_work_factor {
            pw = pw.with_max_age_work_factor(n)?;
        }
        Ok(CachedPassphrase {
            pw,
            slot_key: Zeroizing::new(blake3::derive_key(
                "zseal python passphrase cache v1",
                secret.as_bytes(),
            )),
            unwrapped: Mutex::new(None),
        })
    }

    /// Caches the key unwrapped last: call once the header it opened has authenticated.
    fn remember(&self) {
        let taken = self
            .unwrapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((slot, k)) = taken {
            let mut c = cache();
            if c.len() >= PASSPHRASE_CACHE_MAX {
                c.clear();
            }
            c.insert(slot, k);
        }
    }

    /// The slot of a header's stanzas (tag, arguments, body, each length-prefixed), the same
    /// for either format: keys see a container's stanzas as age stanzas too.
    fn slot(&self, stanzas: &[AgeStanza]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.slot_key);
        let mut field = |b: &[u8]| {
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        };
        for s in stanzas {
            field(s.tag.as_bytes());
            for a in &s.args {
                field(a.as_bytes());
            }
            field(&s.body);
        }
        *h.finalize().as_bytes()
    }

    /// `unwrap` through the cache: a slot already filled is a hit; a key unwrapped now waits
    /// in `unwrapped` for [`CachedPassphrase::remember`].
    fn cached(
        &self,
        slot: [u8; 32],
        unwrap: impl FnOnce() -> zseal::Result<Option<FileKey>>,
    ) -> zseal::Result<Option<FileKey>> {
        if let Some(k) = cache().get(&slot) {
            return Ok(Some(k.clone()));
        }
        let key = unwrap()?;
        if let Some(k) = &key {
            *self.unwrapped.lock().unwrap_or_else(|p| p.into_inner()) = Some((slot, k.clone()));
        }
        Ok(key)
    }
}

pub(crate) fn cache() -> MutexGuard<'static, HashMap<[u8; 32], FileKey>> {
    PASSPHRASE_KEYS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Either passphrase stanza, cached: an age file's scrypt work factor can make one attempt
/// cost 4 GiB (and its time), which every open of the file (a Dask task each) would pay again.
impl Identity for CachedPassphrase {
    fn unwrap_stanzas(&self, stanzas: &[AgeStanza]) -> zseal::Result<Option<FileKey>> {
        // A factor over the limit is refused before the cache is looked at: the caller's
        // limit may be lower than when the key was cached.
        self.pw.check_age_work_factor(stanzas)?;
        self.cached(self.slot(stanzas), || self.pw.unwrap_stanzas(stanzas))
    }
}

/// How many file keys the passphrase cache holds (for the tests: a header that fails must not
/// add one).
#[pyfunction]
pub(crate) fn _passphrase_cache_len() -> usize {
    cache().len()
}

/// The keys a caller passed to a decrypting call.
pub(crate) struct Keys {
    /// Paths, or key text (wiped when dropped).
    identity: Vec<Zeroizing<String>>,
    /// How an encrypted SSH key's passphrase is asked for.
    ask: KeyPrompt,
    passphrase: Option<Zeroizing<String>>,
    /// The largest scrypt work factor of an age file a passphrase is tried on.
    max_work_factor: Option<u8>,
    /// Who must have signed (`signers=`, `allowed_signers=`; none: nothing is required).
    pub(crate) signers: zseal::crypto::sign::Signers,
    /// A crypt4gh file's detached signature (`signature=`: a path or an object's URL); by
    /// default `FILE.sig` beside the file.
    pub(crate) signature: Option<String>,
}

/// Where the file `file` was opened from, when it names a place (a path or an object's URL):
/// what a signature can be beside.
pub(crate) fn origin_of(file: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if let Some(url) = as_url(file)? {
        return Ok(Some(url));
    }
    Ok(as_path(file)?.map(|p| p.display().to_string()))
}

/// A crypt4gh file read under `signers=` (FORMAT.md §13.9): its detached signature, given as
/// `signature=` or found beside the file (`origin`.sig, as the command line's `--signer` finds
/// it), is read now, so that a missing one fails before any work, and checked at the end of
/// the read. `signature=` with no signer, or for a file that holds its own signatures, is
/// refused.
pub(crate) fn check_beside<R: Read>(
    py: Python<'_>,
    reader: &mut zseal::Reader<R>,
    keys: &Keys,
    origin: Option<&str>,
    name: &str,
) -> PyResult<()> {
    let required = keys.signers.is_required();
    let Some(c) = reader.as_crypt4gh_mut() else {
        return match &keys.signature {
            Some(_) => Err(to_py(
                py,
                name,
                option_error(
                    "signature= is a crypt4gh file's signature beside it; this file holds its own \
                 signatures: leave signature= out",
                ),
            )),
            None => Ok(()),
        };
    };
    if !required {
        return match &keys.signature {
            Some(_) => Err(to_py(py, name, option_error(
                "signature= is checked against signers= or allowed_signers=: give the signer too",
            ))),
            None => Ok(()),
        };
    }
    let path =
        keys.signature
            .clone()
            .or_else(|| origin.map(zseal::transfer::signature_beside))
            .ok_or_else(|| {
                to_py(py, name, option_error(
                "a crypt4gh file keeps its signature beside it, and a file object has nothing \
                 beside it: pass signature= (the path of its .sig file)",
            ))
            })?;
    let sig = py
        .detach(|| zseal::transfer::read_signature(&path))
        .map_err(|e| to_py(py, name, e))?;
    c.require_signature(sig).map_err(|e| to_py(py, name, e))
}

/// Reads the header and unlocks it with the key it needs; a key the caller did not pass is a
/// `MissingKeyError` naming what to pass.
pub(crate) fn unlock<R: Read + Send>(
    py: Python<'_>,
    src: R,
    name: &str,
    keys: &Keys,
    opts: &DecryptOptions,
) -> PyResult<zseal::Reader<R>> {
    let locked = py
        .detach(|| Sealed::read(src))
        .map_err(|e| to_py(py, name, e))?;
    let needs = locked.needs();
    with_keys(py, needs, name, keys, |ids| locked.unlock(ids, opts))
}

/// Runs `f` (without the GIL) with the identities `keys` gives for a file that `needs` them:
/// the passphrase (remembered once `f` succeeds: it verified the header MAC) or the identity
/// files; a key the caller did not pass is a `MissingKeyError` naming what the file wants.
pub(crate) fn with_keys<T: Send>(
    py: Python<'_>,
    needs: KeyNeeded,
    name: &str,
    keys: &Keys,
    f: impl FnOnce(&[&dyn Identity]) -> zseal::Result<T> + Send,
) -> PyResult<T> {
    match needs {
        KeyNeeded::Passphrase => {
            let Some(pw) = &keys.passphrase else {
                return Err(missing_key(
                    py,
                    name,
                    "the file is protected by a passphrase, not encrypted to a key: pass passphrase=".into(),
                ));
            };
            let id = CachedPassphrase::new(pw, keys.max_work_factor)
                .map_err(|e| to_py(py, name, e))?;
            py.detach(|| {
                let done = f(&[&id])?;
                // f returns only once the header MAC verified under the key.
                id.remember();
                Ok(done)
            })
            .map_err(|e| to_py(py, name, e))
        }
        KeyNeeded::Identity { kinds } => {
            if keys.identity.is_empty() {
                return Err(missing_key(
                    py,
                    name,
                    format!(
                        "the file is encrypted to {} recipient(s) ({}): pass identity= (an identity file)",
                        kinds.len(),
                        kinds.join(", ")
                    ),
                ));
            }
            py.detach(|| {
                // Read here: an SSH identity is not Send, so it lives and dies on this thread.
                let ids = read_identities(&keys.identity, keys.ask.clone())?;
                let refs: Vec<&dyn Identity> = ids.iter().map(|i| i as &dyn Identity).collect();
                f(&refs)
            })
            .map_err(|e| to_py(py, name, e))
        }
        KeyNeeded::Unsupported { kinds } => Err(raise(
            py,
            "NotZsealError",
            "unsupported",
            name,
            &format!(
                "no key stanza this zseal understands ({}): the file is damaged, or was written by a newer zseal",
                kinds.join(", ")
            ),
        )),
        other => Err(raise(
            py,
            "ZsealError",
            "unsupported",
            name,
            &format!("the file needs a key this zseal cannot use ({other:?})"),
        )),
    }
}

/// A decryptor over whatever `open_source` opened.
pub(crate) type SourceDecryptor = zseal::Reader<Source>;

/// The unlocked decryptor of `file` (a path or a file object), its name, and how the transfer
/// layer reads it (whether it seeks, whether the workers read it by offset).
pub(crate) fn open_decryptor(
    file: &Bound<'_, PyAny>,
    keys: &Keys,
    threads: Option<usize>,
) -> PyResult<(SourceDecryptor, String, ReadPlan)> {
    let (src, name) = open_source(file)?;
    let plan = src.read_plan();
    let opts = DecryptOptions::default()
        .threads(threads_of(threads))
        .signers(keys.signers.clone());
    let mut dec = unlock(file.py(), src, &name, keys, &opts)?;
    check_beside(
        file.py(),
        &mut dec,
        keys,
        origin_of(file)?.as_deref(),
        &name,
    )?;
    Ok((dec, name, plan))
}

/// The opening keys of a call's keyword arguments (`zseal.OpenOptions`: `identity`,
/// `passphrase`, `max_work_factor`, `key_passphrase`), read once for every function that opens;
/// any other name is a TypeError, as Python reports one.
pub(crate) fn keys_from_kwargs(what: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Keys> {
    let (mut identity, mut passphrase, mut max_work_factor, mut key_passphrase) =
        (None, None, None, None);
    let mut signers = zseal::crypto::sign::Signers::default();
    let mut signature = None;
    for (k, v) in kwargs.into_iter().flatten() {
        let name: String = k.extract()?;
        match name.as_str() {
            "identity" => identity = Some(v),
            "passphrase" => passphrase = v.extract()?,
            "max_work_factor" => max_work_factor = v.extract()?,
            "key_passphrase" => key_passphrase = Some(v),
            "signers" => add_signers(&mut signers, &v)?,
            "signature" if !v.is_none() => {
                let s = as_url(&v)?.or(as_path(&v)?.map(|p| p.display().to_string()));
                signature = Some(s.ok_or_else(|| {
                    PyValueError::new_err("signature must be the path or URL of a .sig file")
                })?);
            }
            "signature" => {}
            "allowed_signers" if !v.is_none() => {
                let path = as_path(&v)?.ok_or_else(|| {
                    PyValueError::new_err(
                        "allowed_signers must be the path of an allowed_signers file",
                    )
                })?;
                signers
                    .add_allowed_signers(&path)
                    .map_err(|e| to_py(v.py(), "allowed_signers", e))?;
            }
            "allowed_signers" => {}
            _ => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "{what}() got an unexpected keyword argument '{name}'"
                )))
            }
        }
    }
    // Both given, one would be ignored: a file opens with one of them (issue 59 §6).
    if let (Some(i), Some(_)) = (identity.as_ref().filter(|i| !i.is_none()), &passphrase) {
        return Err(to_py(
            i.py(),
            what,
            zseal::Error::InvalidOption(
                "identity= and passphrase= were both given: a file opens with one of them, so \
                 pass the one it was encrypted to (identity= for recipients, passphrase= for a \
                 passphrase)"
                    .into(),
            ),
        ));
    }
    let mut keys = keys_of(
        identity.as_ref(),
        passphrase,
        max_work_factor,
        key_passphrase.as_ref(),
    )?;
    keys.signers = signers;
    keys.signature = signature;
    Ok(keys)
}

/// `signers=`: one public key or a list of them, each an OpenSSH public key (`"ssh-ed25519
/// AAAA…"`) or the path of a file holding one.
fn add_signers(signers: &mut zseal::crypto::sign::Signers, v: &Bound<'_, PyAny>) -> PyResult<()> {
    let what = "signers must be public keys, paths, or a list of them";
    if v.is_none() {
        return Ok(());
    }
    let keys = one_or_many(v, what)?;
    if keys.is_empty() {
        return Err(to_py(
            v.py(),
            "signers",
            crate::errors::option_error(
                "signers=[] names no key, so no signature could satisfy it: give the signers' \
                 public keys, or leave signers out to require none",
            ),
        ));
    }
    signers.require();
    for s in keys {
        signers
            .add_key(&s)
            .map_err(|e| to_py(v.py(), "signers", e))?;
    }
    Ok(())
}

/// A keyword argument that is one path (or str) or a list of them; None is none.
pub(crate) fn one_or_many(v: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Vec<String>> {
    if v.is_none() {
        return Ok(Vec::new());
    }
    if let Some(p) = as_path(v)? {
        return Ok(vec![p.display().to_string()]);
    }
    v.try_iter()?
        .map(|item| {
            as_path(&item?)?
                .map(|p| p.display().to_string())
                .ok_or_else(|| PyValueError::new_err(what))
        })
        .collect()
}

pub(crate) fn keys_of(
    identity: Option<&Bound<'_, PyAny>>,
    passphrase: Option<String>,
    max_work_factor: Option<u8>,
    key_passphrase: Option<&Bound<'_, PyAny>>,
) -> PyResult<Keys> {
    let ask = KeyPrompt::of(key_passphrase)?;
    let mut entries = Vec::new();
    if let Some(v) = identity {
        for e in one_or_many(v, "identity must be a path or a list of paths")? {
            crate::writer::refuse_dash(v.py(), std::path::Path::new(&e), "identity")?;
            entries.push(Zeroizing::new(e));
        }
    }
    let identity = entries;
    Ok(Keys {
        identity,
        ask,
        passphrase: passphrase.map(Zeroizing::new),
        max_work_factor,
        signers: Default::default(),
        signature: None,
    })
}
