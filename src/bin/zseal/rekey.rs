//! `zseal rekey`: change who can open a container without decrypting it (FORMAT.md §2.4). In
//! place (a temporary file renamed over the original, never a half-written file) or to -o. A
//! crypt4gh file's rekey (FORMAT.md §13.9) is [`c4gh`]'s.

mod c4gh;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use zseal::{Locked, RekeyOptions, Rekeyed};

use crate::files::{url_of, Output};
use crate::keys::{self, Identities};

pub const EXAMPLES: &str = "\
Examples:
  zseal rekey big.zseal -i me.key --add -r age1new…        # add a recipient, payload untouched
  zseal rekey big.zseal -i me.key -R team-2027.txt         # replace the whole recipient set
  zseal rekey big.zseal -i me.key -R team.txt -o new.zseal # to a new file instead of in place
  zseal rekey big.zseal --passphrase-file old.pw --new-passphrase-file new.pw
  zseal rekey big.zseal -i me.key -R team.txt --rotate     # new file key: every frame re-sealed
  zseal rekey big.zseal -i me.key --add-signature stmt.sig # attach an ssh-keygen -Y sign signature
  zseal rekey big.zseal -i me.key --remove -r bob.pub      # take out one SSH recipient
  zseal rekey data.c4gh -i me.sec --add -R partner.pub     # crypt4gh: new header packets only

In place, new recipients that leave out the key that opened the file are refused without
--force: you would no longer be able to open it.

A removed recipient who kept a copy of the file, or its file key, can still read the payload:
rekey changes who can unwrap the key, not the key. --rotate draws a new key and seals every
frame again (no recompression) for when that matters.";

#[derive(clap::Args)]
pub struct Args {
    /// The container (or crypt4gh file) to rekey (changed in place unless -o is given)
    file: PathBuf,
    #[command(flatten)]
    ids: Identities,
    /// Read the file's current passphrase from the first line of FILE (`-`: standard input)
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Keep the current stanzas and add the new recipients after them
    #[arg(long, conflicts_with_all = ["rotate", "new_passphrase_file"])]
    add: bool,
    /// Keep the current stanzas but those of the -r/-R recipients. Only SSH keys can be removed
    /// this way (their stanzas carry a key tag); age X25519 stanzas name nobody, by design:
    /// give the recipients to keep instead
    #[arg(long, conflicts_with_all = ["add", "rotate", "new_passphrase_file"])]
    remove: bool,
    // The new recipients.
    #[command(flatten)]
    pub(crate) to: keys::To,
    /// Protect the file with the passphrase on the first line of FILE (`-`: standard input) instead of recipients
    #[arg(long, value_name = "FILE", conflicts_with_all = ["recipient", "recipients_file"])]
    new_passphrase_file: Option<PathBuf>,
    /// Also draw a new file key and seal every frame again under it (no recompression)
    #[arg(long)]
    rotate: bool,
    /// Continue a rotation of an s3:// object in place (--rotate, no -o) that a lost
    /// connection or a killed process left: the same command line plus --resume sends only the
    /// parts the store lacks (`zseal resume --list` shows what is pending)
    #[arg(long, requires = "rotate", conflicts_with = "output")]
    resume: bool,
    /// Attach this signature instead of changing the recipients: `ssh-keygen -Y sign -n zseal`
    /// over the statement `zseal verify --export-signature` writes (FORMAT.md §12.1). It must
    /// be over this file's plaintext; who made it is checked by `verify --signer`
    #[arg(long, value_name = "FILE", conflicts_with_all = ["add", "recipient", "recipients_file", "new_passphrase_file", "rotate"])]
    add_signature: Option<PathBuf>,
    /// Write the rekeyed container to OUTPUT (`-`: stdout) and leave FILE as it is
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Overwrite OUTPUT if it exists; in place, allow new recipients that leave out the key
    /// that opened the file (you would no longer be able to open it)
    #[arg(short, long)]
    force: bool,
    /// Print nothing on success
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.file == Path::new("-") {
        bail!("rekey needs the container as a file (it is read once and replaced or copied): give its path");
    }
    // Usage first, before the file is opened (what it needs is known from the arguments).
    if a.to.is_empty() && a.new_passphrase_file.is_none() && a.add_signature.is_none() {
        bail!("no new key given: pass -r RECIPIENT, -R FILE or --new-passphrase-file FILE");
    }
    // A pending rotation of this object is refused before any request (docs/OBJECTS.md §7).
    #[cfg(feature = "remote")]
    if let (Some(url), true, None, false) = (url_of(&a.file), a.rotate, &a.output, a.resume) {
        refuse_pending(url)?;
    }
    let mut source = Source::open(&a)?;
    // A crypt4gh file is told by its first bytes; its header is its own (FORMAT.md §13.9).
    if source.is_crypt4gh()? {
        return c4gh::run(&a, source);
    }
    if let Some(sig) = &a.add_signature {
        return add_signature(&a, sig);
    }
    let new_pw = match &a.new_passphrase_file {
        Some(f) => Some(keys::passphrase(Some(f), true)?),
        None => None,
    };
    let recipients = a.to.read()?;
    if recipients.is_empty() && new_pw.is_none() {
        bail!("no new key given: pass -r RECIPIENT, -R FILE or --new-passphrase-file FILE");
    }
    let targets = keys::Targets {
        recipients,
        passphrase: new_pw,
    };
    let opts = options(&a, &targets)?;
    let to = match a.remove {
        true => Vec::new(),
        false => targets.refs(),
    };
    match source {
        Source::File(f) => {
            let what = a.file.display().to_string();
            if a.resume {
                bail!("--resume continues a rotation of an object in place; {what} is a local file: run the command without --resume");
            }
            let locked = Locked::read(f).with_context(|| format!("reading {what}"))?;
            finish(&a, locked, &to, &opts, None)
        }
        #[cfg(feature = "remote")]
        Source::Object(remote, reader) => {
            let who = zseal::remote::recipients_id(targets.recipients.iter().map(|r| r.as_str()));
            rekey_object(&a, &remote, *reader, (&to, &who), &opts)
        }
    }
}

/// The file or object to rekey, opened. A local file stays a File so that the payload copy can
/// stay inside the kernel; an object is read straight through when it will be streamed (-o,
/// --rotate, a store without ranged copies) and by ranges when the store copies the rest.
pub(crate) enum Source {
    File(std::fs::File),
    #[cfg(feature = "remote")]
    Object(zseal::remote::Remote, Box<zseal::remote::RemoteReader>),
}

impl Source {
    fn open(a: &Args) -> anyhow::Result<Source> {
        if let Some(url) = url_of(&a.file) {
            return Source::open_object(a, url);
        }
        let what = a.file.display();
        let f = std::fs::File::open(&a.file).map_err(|e| anyhow!("cannot open {what}: {e}"))?;
        Ok(Source::File(f))
    }

    #[cfg(feature = "remote")]
    fn open_object(a: &Args, url: &str) -> anyhow::Result<Source> {
        use zseal::remote::{ReadMode, Remote};
        let remote = Remote::from_env(url)?;
        let mode = match streams(a, &remote) {
            true => ReadMode::Sequential,
            false => ReadMode::Random,
        };
        let reader = remote.reader(mode)?;
        Ok(Source::Object(remote, Box::new(reader)))
    }

    #[cfg(not(feature = "remote"))]
    fn open_object(_: &Args, url: &str) -> anyhow::Result<Source> {
        bail!("{url}: this zseal was built without object storage (cargo feature `remote`)")
    }

    /// True when the input starts with crypt4gh's magic; the input is left at its start (an
    /// object's first bytes stay fetched: no request more).
    fn is_crypt4gh(&mut self) -> anyhow::Result<bool> {
        match self {
            Source::File(f) => starts_crypt4gh(f),
            #[cfg(feature = "remote")]
            Source::Object(_, r) => starts_crypt4gh(r),
        }
    }
}

fn starts_crypt4gh(r: &mut (impl std::io::Read + std::io::Seek)) -> anyhow::Result<bool> {
    let mut first = [0u8; 8];
    let mut n = 0;
    while n < first.len() {
        match r.read(&mut first[n..])? {
            0 => break,
            k => n += k,
        }
    }
    r.seek(std::io::SeekFrom::Start(0))?;
    Ok(zseal::format::crypt4gh::is_crypt4gh(&first[..n]))
}

/// The rekey options the flags ask for; with `--remove`, the stanzas that name each recipient
/// given (an SSH key's type and tag), refused for a recipient whose stanzas name nobody.
fn options(a: &Args, targets: &keys::Targets) -> anyhow::Result<RekeyOptions> {
    let mut remove = Vec::new();
    if a.remove {
        for r in targets.refs() {
            match zseal::crypto::StanzaRecipient::of(r)? {
                Some(id) => remove.push(id),
                None => bail!(
                    "--remove: an age X25519 (or post-quantum) recipient cannot be removed by \
                     name: its stanza is anonymous by design and does not say whose it is. \
                     Give the recipients to keep instead (-r/-R without --remove)"
                ),
            }
        }
    }
    Ok(RekeyOptions::default()
        .keep_old(a.add)
        .rotate(a.rotate)
        .remove(remove)
        // With -o the original stays as it was, and the caller keeps it.
        .allow_lockout(a.force || a.output.is_some()))
}

/// Whether the object's rekey streams the whole container through this machine (`-o`,
/// `--rotate`, a store that does not copy ranges itself) rather than copying the payload at
/// the store.
#[cfg(feature = "remote")]
fn streams(a: &Args, remote: &zseal::remote::Remote) -> bool {
    a.output.is_some() || a.rotate || !remote.copies_server_side()
}

/// An object rekeyed: in place on a store that copies ranges itself (S3), the new header and
/// the first 5 MiB of payload are uploaded and the rest copied by the store (UploadPartCopy);
/// otherwise (`-o`, `--rotate`, GCS, Azure) the container streams through, read straight on.
#[cfg(feature = "remote")]
fn rekey_object(
    a: &Args,
    remote: &zseal::remote::Remote,
    reader: zseal::remote::RemoteReader,
    (to, who): (&[&dyn zseal::Recipient], &str),
    opts: &RekeyOptions,
) -> anyhow::Result<()> {
    let url = remote.url();
    if a.rotate && a.output.is_none() {
        match remote.why_rotation_not_resumable() {
            None => return rotate_journaled(a, (remote, reader), (to, who), opts),
            Some(why) if a.resume => bail!("--resume: {why}"),
            Some(_) => {}
        }
    }
    if streams(a, remote) {
        if a.output.is_none() && !a.quiet {
            eprintln!("zseal: {url}: this store has no ranged server-side copy (or --rotate re-seals every frame): the payload is streamed through this machine");
        }
        // In place, the new object replaces exactly the version read: a concurrent writer's
        // object is never overwritten (the rewrite fails instead).
        let rewrite = match &a.output {
            None => Some(Output::from(zseal::transfer::Sink::object(
                remote.rewriter(reader.version(), None)?,
            ))),
            Some(_) => None,
        };
        let locked = Locked::read(reader).with_context(|| format!("reading {url}"))?;
        return finish(a, locked, to, opts, rewrite);
    }
    let locked = Locked::read(reader).with_context(|| format!("reading {url}"))?;
    let keys = keys::keys_for(locked.needs(), url, a.passphrase_file.as_deref(), &a.ids)?;
    let done = zseal::remote::rekey_in_place(locked, &keys.refs(), to, opts)
        .with_context(|| format!("rekeying {url}"))?;
    if !a.quiet {
        let r = &done.report;
        eprintln!(
            "zseal: {url} now has {} key stanza(s); header {} -> {} bytes; {} payload bytes unchanged, {} of them copied by the store ({} bytes downloaded, {} uploaded)",
            r.stanzas, r.old_header_len, r.new_header_len, r.payload_len, done.copied, done.downloaded, done.uploaded
        );
    }
    Ok(())
}

/// Refuses to start over an object whose rotation is pending: it is resumed or aborted.
#[cfg(feature = "remote")]
fn refuse_pending(url: &str) -> anyhow::Result<()> {
    if let Some(p) = zseal::remote::pending_upload(url)? {
        bail!(
            "{url} has a pending resumable upload ({} parts, {} bytes sent): add --resume to \
             continue it, or end it with `zseal resume --abort {url}`",
            p.parts,
            p.bytes_sent
        );
    }
    Ok(())
}

/// A rotation of an S3 object or an Azure blob in place, as a resumable upload (docs/OBJECTS.md
/// §7): a new one, or with `--resume` the pending one continued. A pending one without
/// `--resume` is refused before anything is read.
#[cfg(feature = "remote")]
fn rotate_journaled(
    a: &Args,
    (remote, reader): (&zseal::remote::Remote, zseal::remote::RemoteReader),
    (to, who): (&[&dyn zseal::Recipient], &str),
    opts: &RekeyOptions,
) -> anyhow::Result<()> {
    let url = a.file.display().to_string();
    // A pending rotation without --resume was refused in `run`, before any request.
    if a.resume && zseal::remote::pending_upload(&url)?.is_none() {
        bail!(
            "there is no pending rotation of {url} to resume (`zseal resume --list` shows the \
             pending uploads): run the command without --resume"
        );
    }
    if !a.quiet {
        eprintln!("zseal: {url}: --rotate re-seals every frame: the payload is streamed through this machine (resumable: a cut run continues with --resume)");
    }
    // The reader `Source::open_object` opened, straight through: a rotation streams.
    let locked = Locked::read(reader).with_context(|| format!("reading {url}"))?;
    let keys = keys::keys_for(locked.needs(), &url, a.passphrase_file.as_deref(), &a.ids)?;
    let identities = keys.refs();
    let job = zseal::remote::RotateJob {
        identities: &identities,
        recipients: to,
        recipients_id: who,
        opts,
    };
    let done = match a.resume {
        true => remote.resume_rotation(locked, &job),
        false => remote.rotate_resumable(locked, &job),
    }
    .with_context(|| format!("rotating the key of {url}"))?;
    if !a.quiet {
        eprintln!(
            "zseal: {url} re-sealed under a new file key: {} part(s) sent, {} kept from before; {} bytes uploaded",
            done.parts_sent, done.parts_kept, done.uploaded
        );
    }
    Ok(())
}

/// Unwraps the file key of `locked` and writes the rekeyed container (into `prepared`, when the
/// caller made the output itself).
fn finish<R: std::io::Read + std::io::Seek>(
    a: &Args,
    locked: Locked<R>,
    to: &[&dyn zseal::Recipient],
    opts: &RekeyOptions,
    prepared: Option<Output>,
) -> anyhow::Result<()> {
    let what = a.file.display().to_string();
    let keys = keys::keys_for(locked.needs(), &what, a.passphrase_file.as_deref(), &a.ids)?;
    let mut output = match prepared {
        Some(o) => o,
        None => new_output(a)?,
    };
    let report = locked
        .rekey(&keys.refs(), to, opts)
        .and_then(Rekeyed::checked)
        .and_then(|r| match output.as_file() {
            Some(f) => r.write_to(f),
            None => r.write_to(&mut output),
        })
        .with_context(|| format!("rekeying {what}"))?;
    // Always synced: in place, the rename replaces the only copy of the data.
    output.commit(true)?;
    if !a.quiet {
        let verb = if a.rotate {
            "re-sealed under a new file key"
        } else {
            "copied unchanged"
        };
        eprintln!(
            "zseal: {} now has {} key stanza(s); header {} -> {} bytes; {} payload bytes {verb}",
            shown(a),
            report.stanzas,
            report.old_header_len,
            report.new_header_len,
            report.payload_len,
        );
    }
    Ok(())
}

/// `--add-signature FILE`: the container with one more signature frame, in place or to -o.
fn add_signature(a: &Args, sig: &Path) -> anyhow::Result<()> {
    let what = a.file.display().to_string();
    if url_of(&a.file).is_some() {
        bail!("--add-signature: {what}: attach to a local file (then upload it)");
    }
    let signature = crate::sign::read_signature(sig)?;
    let f = std::fs::File::open(&a.file).map_err(|e| anyhow!("cannot open {what}: {e}"))?;
    let locked = Locked::read(f).with_context(|| format!("reading {what}"))?;
    let keys = keys::keys_for(locked.needs(), &what, a.passphrase_file.as_deref(), &a.ids)?;
    let mut output = new_output(a)?;
    locked
        .add_signature(&keys.refs(), &signature, &mut output)
        .with_context(|| format!("attaching {} to {what}", sig.display()))?;
    output.commit(true)?;
    if !a.quiet {
        eprintln!(
            "zseal: {}: signature by {} attached",
            shown(a),
            signature.fingerprint()
        );
    }
    Ok(())
}

/// The file the new container went to, for the closing message.
fn shown(a: &Args) -> String {
    a.output.as_deref().unwrap_or(&a.file).display().to_string()
}

/// Where the new container goes: `-o`, or in place (no -o), written beside the old one and
/// renamed over it, synced first and with the old file's mode, like any forced output: an
/// interruption leaves the original whole.
fn new_output(a: &Args) -> anyhow::Result<Output> {
    match &a.output {
        Some(out) => Output::create(Some(out), a.force, Some(&a.file)),
        None => Output::create(Some(&a.file), true, None),
    }
}
