//! Asking the user for keys: passphrases (file, environment or terminal), identity files, and
//! recipients. The library decides which key a file needs ([`zseal::Locked::needs`]); this
//! module only asks for it.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use zeroize::Zeroizing;
use zseal::crypto::recipients::{self, IdentitySource, KeyPassphrase};
use zseal::Passphrase;
use zseal::{AgeIdentity, AgeRecipient, DecryptOptions, Identity, KeyNeeded, Reader, Sealed};

#[derive(Args)]
pub struct Identities {
    /// Identity file: age keys (AGE-SECRET-KEY-1…, an age plugin's AGE-PLUGIN-NAME-1…) or an
    /// OpenSSH private key (`-`: standard input); or an AWS KMS key or alias ARN
    /// (arn:aws:kms:…); repeatable
    #[arg(short, long = "identity", value_name = "FILE")]
    pub identity: Vec<PathBuf>,
    /// Refuse age files whose passphrase work factor (scrypt log2 N) is over N, before any
    /// work: age writes 18 (256 MiB); the default, age's own limit, is 22 (4 GiB and tens of
    /// seconds per attempt)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=22))]
    pub max_work_factor: Option<u8>,
}

/// The recipients a command seals to: `-r` and `-R`, as encrypt, rekey and serve take them.
#[derive(Args)]
pub struct To {
    /// Recipient: age1…, age1pq1… (post-quantum; long: -R suits it better), an age plugin's
    /// age1NAME1… (age-plugin-NAME on PATH), "ssh-ed25519 AAAA…", "ssh-rsa AAAA…" or an AWS
    /// KMS key or alias ARN (arn:aws:kms:…); repeatable
    #[arg(short, long = "recipient", value_name = "RECIPIENT")]
    pub recipient: Vec<String>,
    /// Every recipient in FILE (one per line, # comments; `-`: standard input); repeatable
    #[arg(short = 'R', long = "recipients-file", value_name = "FILE")]
    pub recipients_file: Vec<PathBuf>,
}

impl To {
    /// None given.
    pub fn is_empty(&self) -> bool {
        self.recipient.is_empty() && self.recipients_file.is_empty()
    }

    /// The recipients, parsed and read ([`recipients`]).
    pub fn read(&self) -> anyhow::Result<Vec<AgeRecipient>> {
        recipients(&self.recipient, &self.recipients_file)
    }
}

/// What it takes to open the container a command reads: its name for messages, the keys the
/// user gave, and the threads.
pub struct Unlock<'a> {
    pub what: &'a str,
    pub passphrase_file: Option<&'a Path>,
    pub ids: &'a Identities,
    pub threads: usize,
    /// An age file's plaintext as it is, not decompressed (`decrypt --raw`).
    pub raw_age: bool,
    /// Who must have signed (`--signer`, `--allowed-signers`; none: nothing is required).
    pub signers: zseal::crypto::sign::Signers,
    /// The signature of a file that keeps it beside it (a crypt4gh file, FORMAT.md §13.9):
    /// `--signature SIG`, or `FILE.sig` ([`signature_beside`]). A crypt4gh file is then hashed
    /// as it is read, for the statement, and checked against `signers` when they are required.
    pub signature: Option<PathBuf>,
    /// `decrypt --signature SIG`, which only a crypt4gh file takes: any other file is refused
    /// once its header is read, before a key is asked for.
    pub crypt4gh_signature: Option<&'a Path>,
}

impl<'a> Unlock<'a> {
    /// Keys only: no signer, no signature, an age file decompressed (`ls`, `cat`).
    pub fn plain(
        what: &'a str,
        passphrase_file: Option<&'a Path>,
        ids: &'a Identities,
        threads: usize,
    ) -> Self {
        Unlock {
            what,
            passphrase_file,
            ids,
            threads,
            raw_age: false,
            signers: Default::default(),
            signature: None,
            crypt4gh_signature: None,
        }
    }
}

/// Refuses `decrypt --signature SIG` for a file other than a crypt4gh file, saying where its
/// signatures are.
fn only_crypt4gh_signs_beside(format: zseal::Format, what: &str, sig: &Path) -> anyhow::Result<()> {
    match format {
        zseal::Format::Crypt4gh => Ok(()),
        zseal::Format::Age => bail!(
            "--signature {}: {what} is an age file, which has no statement to sign (check its \
             OUT.sig with ssh-keygen -Y verify); --signature is a crypt4gh file's",
            sig.display()
        ),
        _ => bail!(
            "--signature {}: {what} is a zseal container, which keeps its signatures inside it; \
             --signature is a crypt4gh file's (`zseal verify --signature SIG` checks a detached \
             signature of a container)",
            sig.display()
        ),
    }
}

/// `INPUT.sig`, where `encrypt --format crypt4gh --sign` puts a crypt4gh file's signature:
/// beside a file, or beside an object in its bucket; `None` for standard input.
pub fn signature_beside(input: Option<&Path>) -> Option<PathBuf> {
    let input = input.filter(|p| !crate::stdin::is_dash(p))?;
    if let Some(url) = crate::files::url_of(input) {
        return Some(PathBuf::from(zseal::transfer::signature_beside(url)));
    }
    let mut s = input.as_os_str().to_owned();
    s.push(".sig");
    Some(PathBuf::from(s))
}

impl Unlock<'_> {
    /// Reads the header (so that a file that is neither zseal nor age fails before any prompt),
    /// then unlocks it with the key the library says it needs: the identities given, or a
    /// passphrase.
    pub fn open<R: std::io::Read>(&self, input: R) -> anyhow::Result<Reader<R>> {
        let what = self.what;
        let locked = Sealed::read(input).with_context(|| format!("reading {what}"))?;
        if let Some(sig) = self.crypt4gh_signature {
            only_crypt4gh_signs_beside(locked.format(), what, sig)?;
        }
        let keys = keys_for(locked.needs(), what, self.passphrase_file, self.ids)?;
        let opts = DecryptOptions::default()
            .threads(self.threads)
            .raw_age(self.raw_age)
            .signers(self.signers.clone());
        let mut reader = locked
            .unlock(&keys.refs(), &opts)
            .with_context(|| format!("opening {what}"))?;
        if let Some(w) = reader.header_warning() {
            eprintln!("zseal: warning: {what}: {w}");
        }
        if let Some(c) = reader.as_crypt4gh_mut() {
            self.signature_beside(c)?;
        }
        Ok(reader)
    }

    /// A crypt4gh file: hashed for its statement when a signature is to be checked, and the
    /// signature read now (so that a missing one fails before the work) when signers are
    /// required.
    fn signature_beside<R: std::io::Read>(
        &self,
        c: &mut zseal::pipeline::C4ghChunks<R>,
    ) -> anyhow::Result<()> {
        let Some(path) = &self.signature else {
            if self.signers.is_required() {
                bail!("{}: a crypt4gh file keeps its signature beside it (FILE.c4gh.sig): give it with --signature SIG", self.what);
            }
            return Ok(());
        };
        c.hash_for_statement();
        if self.signers.is_required() {
            let sig = crate::sign::read_signature(path).with_context(|| {
                format!("{}: its signature (encrypt --format crypt4gh --sign writes FILE.c4gh.sig beside it; give one kept elsewhere with --signature SIG)", self.what)
            })?;
            c.require_signature(sig)?;
        }
        Ok(())
    }
}

/// The keys a user gave for a file: a passphrase, or identities.
pub enum Keys {
    Passphrase(Passphrase),
    Identities(Vec<AgeIdentity>),
}

impl Keys {
    pub fn refs(&self) -> Vec<&dyn Identity> {
        match self {
            Keys::Passphrase(p) => vec![p as &dyn Identity],
            Keys::Identities(ids) => ids.iter().map(|i| i as &dyn Identity).collect(),
        }
    }
}

/// Asks for the key the library says a file needs: the identities given, or a passphrase.
pub fn keys_for(
    needs: KeyNeeded,
    what: &str,
    passphrase_file: Option<&Path>,
    ids: &Identities,
) -> anyhow::Result<Keys> {
    match needs {
        KeyNeeded::Passphrase => {
            if !ids.identity.is_empty() {
                bail!("{what} is protected by a passphrase, not encrypted to a key: drop -i and give --passphrase-file (or type it)");
            }
            let mut pw = passphrase(passphrase_file, false)?;
            if let Some(n) = ids.max_work_factor {
                pw = pw.with_max_age_work_factor(n)?;
            }
            Ok(Keys::Passphrase(pw))
        }
        KeyNeeded::Identity { kinds } => {
            if ids.identity.is_empty() && passphrase_file.is_some() {
                bail!(
                    "{what} is encrypted to {} recipient(s) ({}), not to a passphrase: drop --passphrase-file and pass an identity file with -i",
                    kinds.len(),
                    kinds.join(", ")
                );
            }
            // The reference crypt4gh tool's secret key, from its own variable, when no -i is
            // given for a crypt4gh file (as `crypt4gh decrypt` takes it without --sk).
            let crypt4gh = kinds.iter().any(|k| k.starts_with("crypt4gh"));
            let c4gh_key = std::env::var_os("C4GH_SECRET_KEY")
                .filter(|k| crypt4gh && !k.is_empty() && ids.identity.is_empty())
                .map(PathBuf::from);
            if let Some(key) = c4gh_key {
                return Ok(Keys::Identities(read_identity_files(&[key])?));
            }
            if ids.identity.is_empty() {
                let kms = kinds.iter().find_map(|k| k.strip_prefix("AWS KMS key "));
                let hint = match (crypt4gh, kms) {
                    (true, _) => " (or set C4GH_SECRET_KEY to your crypt4gh secret key file, as for crypt4gh decrypt)".to_string(),
                    (_, Some(arn)) => format!(", or the AWS KMS key itself: -i {arn}"),
                    _ => String::new(),
                };
                bail!(
                    "{what} is encrypted to {} recipient(s) ({}): pass an identity file with -i{hint}",
                    kinds.len(),
                    kinds.join(", ")
                );
            }
            Ok(Keys::Identities(read_identity_files(&ids.identity)?))
        }
        KeyNeeded::Unsupported { kinds } => bail!(
            "{what} has no key stanza this zseal understands ({}): it needs a newer zseal, or the file is damaged",
            kinds.join(", ")
        ),
        other => bail!("{what} needs a key this zseal cannot ask for ({other:?})"),
    }
}

/// Asks on the terminal (/dev/tty, as age and ssh do: standard input may be the data) for the
/// passphrase of an encrypted SSH key and what an age plugin asks; a plugin's messages go to
/// standard error.
#[derive(Clone)]
pub(crate) struct TerminalPrompt;

impl KeyPassphrase for TerminalPrompt {
    /// A crypt4gh key file's passphrase comes from `ZSEAL_PASSPHRASE` or, as the reference
    /// tool takes it, `C4GH_PASSPHRASE` when one is set, else from the terminal.
    fn passphrase(&self, description: &str) -> Option<String> {
        let crypt4gh = description.starts_with(zseal::crypto::c4gh::file::KEY_PROMPT);
        let from_env = ["ZSEAL_PASSPHRASE", "C4GH_PASSPHRASE"]
            .iter()
            .find_map(|v| std::env::var(v).ok());
        if let Some(p) = from_env.filter(|_| crypt4gh) {
            return Some(p);
        }
        rpassword::prompt_password(format!("{description}: ")).ok()
    }

    fn message(&self, text: &str) {
        eprintln!("zseal: {text}");
    }

    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        let no = no.unwrap_or("no");
        let answer = ask_line(&format!("{message} [{yes}/{no}]: "))?;
        let answer = answer.trim();
        let is = |label: &str| {
            answer.eq_ignore_ascii_case(label)
                || answer.eq_ignore_ascii_case(&label[..label.len().min(1)])
        };
        // An answer that is neither asks again, as age does.
        match (is(yes), is(no)) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => self.confirm(message, yes, Some(no)),
        }
    }

    fn public_string(&self, description: &str) -> Option<String> {
        ask_line(&format!("{description}: ")).map(|a| a.trim_end().to_string())
    }

    fn why_unanswered(&self) -> String {
        "there is no terminal to answer on (zseal asks on /dev/tty): run zseal from a terminal \
         (a crypt4gh key's passphrase may also come from C4GH_PASSPHRASE or ZSEAL_PASSPHRASE)"
            .into()
    }
}

/// Writes `prompt` to the terminal and reads one line from it; `None` without a terminal (or
/// at its end of input).
fn ask_line(prompt: &str) -> Option<String> {
    use std::io::{BufRead, Write};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    (&tty).write_all(prompt.as_bytes()).ok()?;
    let mut line = String::new();
    match std::io::BufReader::new(&tty).read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

/// The identities of `-i` (files; `-i -` reads them from standard input).
fn read_identity_files(paths: &[PathBuf]) -> anyhow::Result<Vec<AgeIdentity>> {
    let mut sources = Vec::new();
    for p in paths {
        sources.push(match crate::stdin::is_dash(p) {
            true => IdentitySource::Text(crate::stdin::read_text("-i -", crate::stdin::KEYS_MAX)?),
            false => IdentitySource::File(p.clone()),
        });
    }
    Ok(recipients::load_identities(&sources, TerminalPrompt)?)
}

/// What a container is sealed for: recipients, and a passphrase.
pub struct Targets {
    pub recipients: Vec<AgeRecipient>,
    pub passphrase: Option<Passphrase>,
}

impl Targets {
    /// The targets of a new container (encrypt, keygen --record-key): the recipients, and a
    /// passphrase when none was given or a passphrase file was (asked twice on a terminal). A
    /// passphrase file given with recipients is passed on as well: the library refuses the mix.
    pub fn for_new_file(
        recipients: Vec<AgeRecipient>,
        passphrase_file: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let passphrase = match (passphrase_file, recipients.is_empty()) {
            (None, false) => None,
            (file, _) => Some(passphrase(file, true)?),
        };
        Ok(Targets {
            recipients,
            passphrase,
        })
    }

    pub fn refs(&self) -> Vec<&dyn zseal::Recipient> {
        let mut to: Vec<&dyn zseal::Recipient> = self
            .recipients
            .iter()
            .map(|r| r as &dyn zseal::Recipient)
            .collect();
        to.extend(self.passphrase.as_ref().map(|p| p as &dyn zseal::Recipient));
        to
    }
}

/// The recipients of -r and -R (`-R -` reads stdin, unless something else does: the data, say).
pub fn recipients(given: &[String], files: &[PathBuf]) -> anyhow::Result<Vec<AgeRecipient>> {
    let mut out = Vec::new();
    for r in given {
        out.push(AgeRecipient::parse_with(r, TerminalPrompt)?);
    }
    for f in files {
        if crate::stdin::is_dash(f) {
            let text = crate::stdin::read_text("-R -", crate::stdin::KEYS_MAX)?;
            out.extend(recipients::read_recipients_with(
                text.as_bytes(),
                "standard input",
                TerminalPrompt,
            )?);
        } else {
            out.extend(recipients::read_recipients_file_with(f, TerminalPrompt)?);
        }
    }
    Ok(out)
}

/// The recipients of the identity files of `encrypt -i` (as `age -e -i`): each age identity's
/// recipient (X25519, post-quantum), an OpenSSH private key's public key.
pub fn recipients_of_identities(paths: &[PathBuf]) -> anyhow::Result<Vec<AgeRecipient>> {
    let mut out = Vec::new();
    for p in paths {
        let (data, name) = crate::stdin::read_path(p, "-i -")?;
        for r in recipients::recipients_of(&data, &name)? {
            out.push(AgeRecipient::parse(&r)?);
        }
    }
    Ok(out)
}

/// The passphrase from `--passphrase-file`, `ZSEAL_PASSPHRASE`, or the terminal (asked twice
/// when encrypting); a short one gets a warning when encrypting.
pub fn passphrase(file: Option<&Path>, confirm: bool) -> anyhow::Result<Passphrase> {
    let (pw, len) = read_passphrase(file, confirm)?;
    if confirm && len < 12 {
        eprintln!(
            "zseal: warning: the passphrase has only {len} characters; anyone holding the file can try \
             guesses offline: prefer 5 or more random words, or a public key (zseal keygen)"
        );
    }
    Ok(pw)
}

/// The longest first line a passphrase file may have.
const PASSPHRASE_LINE_MAX: usize = 64 << 10;

/// The first line of the passphrase file `f` (without its newline), read into one wiped buffer
/// that never grows: `std::fs::read` of a FIFO (`--passphrase-file <(pass show x)`), whose size
/// is unknown, reallocates as it reads and leaves unwiped copies behind.
fn first_line(f: &Path) -> anyhow::Result<Zeroizing<Vec<u8>>> {
    use std::io::Read;
    let name = f.display();
    let mut file: Box<dyn Read> = match crate::stdin::is_dash(f) {
        true => {
            crate::stdin::claim("a passphrase file given as -")?;
            Box::new(std::io::stdin().lock())
        }
        false => Box::new(
            std::fs::File::open(f)
                .with_context(|| format!("cannot read passphrase file {name}"))?,
        ),
    };
    let mut buf = Zeroizing::new(vec![0u8; PASSPHRASE_LINE_MAX]);
    let mut len = 0;
    let end = loop {
        if let Some(i) = buf[..len].iter().position(|&b| b == b'\n') {
            break i;
        }
        if len == buf.len() {
            bail!(
                "the first line of passphrase file {name} is longer than {} KiB: put the \
                 passphrase alone on its first line",
                PASSPHRASE_LINE_MAX >> 10
            );
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break len,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => bail!("cannot read passphrase file {name}: {e}"),
        }
    };
    // Truncating keeps the allocation: nothing is copied.
    buf.truncate(end);
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(buf)
}

/// The passphrase and its length in characters.
fn read_passphrase(file: Option<&Path>, confirm: bool) -> anyhow::Result<(Passphrase, usize)> {
    // Counted in place: `String::from_utf8_lossy` would copy a passphrase that is not UTF-8
    // into a buffer nobody wipes.
    let chars = |b: &[u8]| {
        b.utf8_chunks()
            .map(|c| c.valid().chars().count() + usize::from(!c.invalid().is_empty()))
            .sum::<usize>()
    };
    if let Some(f) = file {
        let text = first_line(f)?;
        let line = &text[..];
        if line.is_empty() {
            bail!(
                "passphrase file {} is empty: put the passphrase on its first line",
                f.display()
            );
        }
        return Ok((Passphrase::new(line.to_vec())?, chars(line)));
    }
    // The copy std::env makes is moved into the wiped passphrase; the process environment itself
    // keeps the variable (as it does for any program given a secret that way).
    if let Ok(p) = std::env::var("ZSEAL_PASSPHRASE") {
        let n = p.chars().count();
        return Ok((Passphrase::new(p.into_bytes())?, n));
    }
    // Several inputs (`decrypt a.zseal b.zseal`) ask once: the passphrase typed for the first
    // opens the others (kept, wiped, until the process ends).
    let mut typed = TYPED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = typed.as_ref().filter(|_| !confirm) {
        return Ok((Passphrase::new(t.as_bytes().to_vec())?, t.chars().count()));
    }
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    if tty.is_err() && !std::io::stdin().is_terminal() {
        bail!("no terminal to ask for the passphrase: pass --passphrase-file FILE (or set ZSEAL_PASSPHRASE)");
    }
    let first = Zeroizing::new(
        rpassword::prompt_password("Passphrase: ")
            .context("cannot read the passphrase from the terminal")?,
    );
    if first.is_empty() {
        bail!("the passphrase is empty");
    }
    if confirm {
        let second = Zeroizing::new(
            rpassword::prompt_password("Confirm passphrase: ")
                .context("cannot read the passphrase from the terminal")?,
        );
        if *first != *second {
            bail!("the passphrases do not match; nothing was written");
        }
    }
    if !confirm {
        *typed = Some(first.clone());
    }
    Ok((
        Passphrase::new(first.as_bytes().to_vec())?,
        first.chars().count(),
    ))
}

/// The passphrase typed on the terminal to decrypt, for the next input of the same command.
static TYPED: std::sync::Mutex<Option<Zeroizing<String>>> = std::sync::Mutex::new(None);

#[cfg(test)]
mod tests {
    //! Secrets must be wiped before their memory is freed. A global allocator for this test binary
    //! looks for a marker in every block freed: a passphrase copy freed unwiped is found.
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Split in two so that the marker exists whole only at run time, in the passphrase.
    const MARKER_A: &[u8] = b"zseal-secret-";
    const MARKER_B: &[u8] = b"marker-7f3a91";
    static FOUND: AtomicUsize = AtomicUsize::new(0);

    struct Snoop;

    // SAFETY: every call is forwarded unchanged to the system allocator; `dealloc` only reads the
    // block it is handed, which is valid for `layout.size()` bytes until it is freed just after.
    unsafe impl GlobalAlloc for Snoop {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as the trait requires of our caller.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` is a live block of `layout.size()` bytes (the trait's contract).
            let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            let n = MARKER_A.len() + MARKER_B.len();
            if block
                .windows(n)
                .any(|w| w[..MARKER_A.len()] == *MARKER_A && w[MARKER_A.len()..] == *MARKER_B)
            {
                FOUND.fetch_add(1, Ordering::SeqCst);
            }
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static SNOOP: Snoop = Snoop;

    #[test]
    fn a_passphrase_read_from_a_file_leaves_no_unwiped_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        {
            let mut content = zeroize::Zeroizing::new(Vec::with_capacity(64));
            content.extend_from_slice(MARKER_A);
            content.extend_from_slice(MARKER_B);
            content.extend_from_slice(b"\xff\xfe not UTF-8\n");
            std::fs::write(&path, &*content).unwrap();
        }
        let before = FOUND.load(Ordering::SeqCst);
        let (pw, chars) = super::read_passphrase(Some(&path), false).unwrap();
        assert_eq!(chars, MARKER_A.len() + MARKER_B.len() + 2 + 10); // two U+FFFD, as lossy UTF-8
        drop(pw);
        assert_eq!(
            FOUND.load(Ordering::SeqCst),
            before,
            "a copy of the passphrase was freed without being wiped"
        );
    }
}
