//! Resumable uploads from the command line (docs/OBJECTS.md §7): which `encrypt` into an object
//! keeps a journal ([`route`]), running one ([`seal`]), and `zseal resume --list / --abort URL`.

// Without object storage only `route`'s refusals and `run`'s message remain.
#![cfg_attr(
    not(feature = "remote"),
    allow(unused_imports, unused_variables, dead_code)
)]

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use zseal::EncryptOptions;

use crate::common::Common;
use crate::files::{display_name, url_of};
use crate::keys;
use crate::progress::{Counters, Progress};
use crate::report::Direction;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").args(["list", "abort"])))]
pub struct Args {
    /// Show the pending uploads (URL, source, parts and bytes sent, age of the journal) and
    /// downloads (URL, destination, bytes kept); the default
    #[arg(long)]
    list: bool,
    /// End the pending upload into URL: abort the multipart upload at the store and remove
    /// its journal
    #[arg(long, value_name = "URL")]
    abort: Option<String>,
}

/// How an `encrypt` into an object goes.
enum Route {
    /// As every upload: no journal.
    Plain,
    /// With a journal: a new upload, or (`resume`) the pending one continued.
    #[cfg(feature = "remote")]
    Journaled {
        remote: zseal::remote::Remote,
        path: PathBuf,
        resume: bool,
    },
}

/// Encrypts `input` into `url` here when the upload keeps a journal or `resume` continues one
/// (true), after the refusals of [`route`]; false when it goes as every upload.
pub fn encrypt_into(
    url: &str,
    (input, opts, resume): (Option<&Path>, &EncryptOptions, bool),
    c: &Common,
    recipients: impl Fn() -> anyhow::Result<Vec<zseal::AgeRecipient>>,
) -> anyhow::Result<bool> {
    match route(url, input, opts, resume)? {
        Route::Plain => Ok(false),
        #[cfg(feature = "remote")]
        Route::Journaled {
            remote,
            path,
            resume,
        } => {
            seal((&remote, &path, resume), opts, c, recipients()?)?;
            Ok(true)
        }
    }
}

/// Settles how the encryption of `input` into `url` goes: `--resume` needs a regular file and
/// a pending upload; without it a pending upload is refused, and a file whose upload can be
/// resumed gets a journal.
fn route(
    url: &str,
    input: Option<&Path>,
    opts: &EncryptOptions,
    resume: bool,
) -> anyhow::Result<Route> {
    let file = input.filter(|p| *p != Path::new("-") && url_of(p).is_none());
    let meta = file
        .and_then(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file());
    if resume && meta.is_none() {
        bail!(
            "--resume needs a regular file as the input: {} cannot be read again (a pipe, a \
             device or standard input); give the file itself",
            display_name(input, "standard input")
        );
    }
    journaled(url, file, meta.map(|m| m.len()), opts, resume)
}

#[cfg(feature = "remote")]
fn journaled(
    url: &str,
    file: Option<&Path>,
    size: Option<u64>,
    opts: &EncryptOptions,
    resume: bool,
) -> anyhow::Result<Route> {
    let remote = zseal::remote::Remote::from_env(url)?;
    match (remote.journals_upload(size, opts, resume)?, file) {
        (true, Some(path)) => Ok(Route::Journaled {
            remote,
            path: path.to_path_buf(),
            resume,
        }),
        _ => Ok(Route::Plain),
    }
}

#[cfg(not(feature = "remote"))]
fn journaled(
    _: &str,
    _: Option<&Path>,
    _: Option<u64>,
    _: &EncryptOptions,
    _: bool,
) -> anyhow::Result<Route> {
    Ok(Route::Plain)
}

/// Runs a journaled upload (a new one, or with `resume` the pending one) of `path`.
#[cfg(feature = "remote")]
fn seal(
    (remote, path, resume): (&zseal::remote::Remote, &Path, bool),
    opts: &EncryptOptions,
    c: &Common,
    recipients: Vec<zseal::AgeRecipient>,
) -> anyhow::Result<()> {
    let what = path.display().to_string();
    let id = zseal::remote::recipients_id(recipients.iter().map(|r| r.as_str()));
    // A resume takes the header from the journal: no passphrase is asked for. It is given the
    // keys when that asks nothing (recipients, a passphrase file or ZSEAL_PASSPHRASE), for the
    // case where it must seal the file anew under a new key (UploadDone::restarted).
    let asks_nothing = !recipients.is_empty()
        || c.passphrase_file.is_some()
        || std::env::var_os("ZSEAL_PASSPHRASE").is_some();
    let targets = match resume && !asks_nothing {
        true => None,
        false => Some(keys::Targets::for_new_file(
            recipients,
            c.passphrase_file.as_deref(),
        )?),
    };
    let refs = targets.as_ref().map(|t| t.refs()).unwrap_or_default();
    let counters = Counters::default();
    let size = std::fs::metadata(path).ok().map(|m| m.len());
    let progress = Progress::start(c.report.mode(), &counters, size, "encrypting");
    let clock = crate::common::Clock::start();
    let job = zseal::remote::SealJob {
        source: path,
        recipients: &refs,
        recipients_id: &id,
        opts,
        overwrite: c.force,
        sealed: Some(counters.input.clone()),
    };
    let done = match resume {
        true => remote.resume_upload(&job),
        false => remote.seal_resumable(&job),
    }
    .with_context(|| format!("encrypting {what}"))?;
    progress.finish();
    if let Some(why) = &done.restarted {
        // Said even with -q: the object is not the upload the user thought they resumed.
        eprintln!(
            "zseal: the pending upload into {} could not be continued safely: {why}. It was \
             aborted, and the file sealed anew under a new key in a new upload",
            remote.url()
        );
    } else if resume && !c.report.quiet {
        eprintln!(
            "zseal: resumed {}: {} parts were at the store, {} sent",
            remote.url(),
            done.parts_kept,
            done.parts_sent
        );
    }
    let stats = zseal::stats::StreamStats {
        chunks: done.chunks,
        frames_opened: done.chunks,
        threads: match c.threads {
            0 => zseal::pipeline::available_threads(),
            n => n,
        },
        ..Default::default()
    };
    clock.report(
        &c.report,
        Direction::Encrypt,
        (done.sealed, done.uploaded),
        stats,
    );
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<()> {
    #[cfg(not(feature = "remote"))]
    {
        let _ = a;
        bail!("this zseal was built without object storage (cargo feature `remote`)")
    }
    #[cfg(feature = "remote")]
    match &a.abort {
        Some(url) => {
            let ended = zseal::remote::abort_pending(url)?;
            let p = &ended.pending;
            let parts = match ended.dropped {
                true => "the store dropped its parts",
                false => {
                    "Azure has no abort: the blocks sent stay uncommitted until Azure drops them \
                     (after a week) or a new upload commits the blob, with its own blocks only"
                }
            };
            eprintln!(
                "zseal: ended the upload into {url} ({} parts, {} bytes had been sent): {parts}; \
                 the journal is removed",
                p.parts, p.bytes_sent
            );
            Ok(())
        }
        None => list(),
    }
}

/// `zseal resume` (or `--list`): one pending upload a line, then one pending download a line,
/// tab-separated; nothing pending is said on stderr.
#[cfg(feature = "remote")]
fn list() -> anyhow::Result<()> {
    use std::io::Write;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = std::io::stdout().lock();
    let uploads = zseal::remote::pending_uploads()?;
    let downloads = zseal::resume::download::pending_downloads()?;
    if uploads.is_empty() && downloads.is_empty() {
        eprintln!("zseal: nothing is pending: no upload or download was left to resume");
    }
    for p in uploads {
        writeln!(
            out,
            "{}\t{}\t{} parts, {} bytes sent of a {}-byte source\tjournal written {} ago",
            p.url,
            p.source,
            p.parts,
            p.bytes_sent,
            p.source_size,
            ago(now.saturating_sub(p.updated))
        )?;
    }
    for d in downloads {
        writeln!(
            out,
            "{}\t-> {}\tdownload: {} bytes kept of a {}-byte object\tjournal written {} ago",
            d.url,
            d.destination.display(),
            d.done,
            d.object_len,
            ago(now.saturating_sub(d.updated))
        )?;
    }
    Ok(())
}

/// A duration in its largest whole unit: 45 s, 12 min, 3 h, 2 d.
fn ago(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}
