//! Uploads that survive a broken connection or a killed process (docs/OBJECTS.md §7, issue 47
//! §2): a file sealed into an S3 object or an Azure blob as FORMAT.md §11 seals a container in
//! pieces (header, one range of chunks, trailer), cut into parts at frame boundaries
//! ([`cutter`]), with a journal ([`record`]) of every part the store acknowledged.
//! [`Remote::resume_upload`] checks the command, the source and the store's parts ([`listing`]:
//! S3's parts, Azure's uncommitted blocks) against the journal ([`check`]), then seals and
//! sends only the chunks after the parts kept, and completes. [`pending`] lists and ends the
//! uploads that journals describe.

mod check;
mod cutter;
mod listing;
mod pending;
mod record;
mod rotate;

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use object_store::multipart::PartId;

use self::check::Refusal;
use self::cutter::{Cutter, Plain};
use self::pending::pending_error;
pub use self::pending::{abort_pending, pending_upload, pending_uploads, Ended, PendingUpload};
pub use self::record::recipients_id;
use self::record::{from_hex, options_text, source_id, Origin, PartRecord, Record};
pub use self::rotate::RotateJob;
use super::upload::Upload;
use super::{writer::first_part_size, Object, Remote, Replace, Scheme};
use crate::crypto::Recipient;
use crate::hash::HashAlg;
use crate::pipeline::{
    seal_pieces_adapting, AdaptPlan, EncryptOptions, Format, RangeResult, SplitSeal, TaskKey,
};
use crate::resume::journal;

/// One file to seal into the object.
pub struct SealJob<'a> {
    /// The source: a regular file.
    pub source: &'a Path,
    /// Who can open it (not used by a resume: the header is the journal's).
    pub recipients: &'a [&'a dyn Recipient],
    /// The front end's fingerprint of the recipients (compared by a resume).
    pub recipients_id: &'a str,
    /// The options, which a resume must repeat.
    pub opts: &'a EncryptOptions,
    /// `--force`: an existing object may be replaced.
    pub overwrite: bool,
    /// Counts the plaintext bytes sealed (a progress display's).
    pub sealed: Option<Arc<AtomicU64>>,
}

/// What an upload did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadDone {
    /// Parts the store held from before (a resume).
    pub parts_kept: usize,
    /// Parts this run sent.
    pub parts_sent: usize,
    /// Plaintext bytes sealed by this run.
    pub sealed: u64,
    /// Bytes this run sent to the store.
    pub uploaded: u64,
    /// Chunks this run sealed.
    pub chunks: u64,
    /// The whole-plaintext digest, as `b3sum` prints it (`None` without one).
    pub digest_hex: Option<String>,
    /// Why a resume could not continue the pending upload and sealed the file anew, under a
    /// new key, in a new upload (the old one aborted): it could not prove that a part it
    /// would send again is byte for byte what an earlier run may have sent (docs/OBJECTS.md
    /// §7, "Never two plaintexts under one nonce").
    pub restarted: Option<String>,
}

impl UploadDone {
    /// A run that completed the upload from `parts` parts, `kept` of them from before, having
    /// sealed `sealed` plaintext bytes into `chunks` chunks and uploaded `uploaded` bytes.
    fn of(
        (kept, parts): (usize, usize),
        (sealed, uploaded, chunks): (u64, u64, u64),
        digest_hex: Option<String>,
    ) -> UploadDone {
        UploadDone {
            parts_kept: kept,
            parts_sent: parts - kept,
            sealed,
            uploaded,
            chunks,
            digest_hex,
            restarted: None,
        }
    }
}

impl Remote {
    /// Why an upload of a `size`-byte file sealed with `opts` into this object cannot be
    /// resumable (docs/OBJECTS.md §7), or `None` when it can.
    pub fn why_not_resumable(&self, opts: &EncryptOptions, size: u64) -> Option<String> {
        let why = match self.inner.scheme {
            Scheme::S3 | Scheme::Azure | Scheme::Gcs => None,
            Scheme::Http => Some("an http(s):// URL is read-only".to_string()),
        };
        why.or_else(|| match () {
            _ if opts.format != Format::Zseal => Some(format!(
                "--format {} is not resumable (only a zseal container is)",
                opts.format.name()
            )),
            _ if opts.hash == HashAlg::Xxh3 => Some(
                "--hash xxh3 is not resumable (its digest cannot be taken up mid-file): use \
                 blake3 or none"
                    .into(),
            ),
            _ if size <= self.part_size_for(size) as u64 => Some(format!(
                "the source fits in one part ({size} bytes): there is nothing to resume"
            )),
            _ => None,
        })
    }

    /// Whether an upload into this object keeps a journal (`true`) or goes as every upload
    /// does (`false`), for a source that is a regular file of `size` bytes (`None`: not one,
    /// which the caller refuses with `resume`). `resume` continues the pending upload: refused
    /// when there is none, or when this upload could never be resumable; without it, a pending
    /// upload into the object is refused before anything is sent (docs/OBJECTS.md §7).
    pub fn journals_upload(
        &self,
        size: Option<u64>,
        opts: &EncryptOptions,
        resume: bool,
    ) -> io::Result<bool> {
        let url = &self.inner.url;
        let pending = pending_upload(url)?;
        if let (Some(p), false) = (&pending, resume) {
            return Err(invalid(format!(
                "{url} has a pending resumable upload ({} parts, {} bytes sent, from {}): add \
                 --resume to continue it (Python: resume=True), or end it with `zseal resume \
                 --abort {url}`",
                p.parts, p.bytes_sent, p.source
            )));
        }
        let Some(size) = size else {
            return Ok(false);
        };
        // What can never resume (a pipe, --format age, …) says so before "nothing to resume".
        match self.why_not_resumable(opts, size) {
            Some(why) if resume => Err(invalid(format!("--resume: {why}"))),
            Some(_) => Ok(false),
            None if resume && pending.is_none() => Err(invalid(format!(
                "there is no pending upload into {url} to resume (`zseal resume --list` shows \
                 those there are): run the command without --resume"
            ))),
            None => Ok(true),
        }
    }

    fn part_size_for(&self, size: u64) -> usize {
        first_part_size(self.inner.opts.part_size, Some(size))
    }

    /// Seals `job`'s file into this object as a resumable upload: a journal records each part
    /// the store acknowledges, and a failure leaves the upload pending for
    /// [`Remote::resume_upload`]. Refused when a pending upload into the object exists.
    pub fn seal_resumable(&self, job: &SealJob) -> io::Result<UploadDone> {
        let _job = journal::lock(journal::Kind::Upload, &self.inner.url)?;
        self.seal_resumable_held(job)
    }

    /// [`Remote::seal_resumable`], the job's lock held by the caller.
    fn seal_resumable_held(&self, job: &SealJob) -> io::Result<UploadDone> {
        let obj = &self.inner;
        if let Some(p) = pending_upload(&obj.url)? {
            return Err(pending_error(&p));
        }
        let (file, id) = open_source(job.source)?;
        if let Some(why) = self.why_not_resumable(job.opts, id.size) {
            return Err(invalid(why));
        }
        if !job.overwrite && self.size()?.is_some() {
            return Err(obj.exists());
        }
        let part_size = self.part_size_for(id.size) as u64;
        // Pieced (FORMAT.md §14.6): whatever a later run seals is a new piece under a key of
        // its own, so no position is ever sealed twice.
        let (split, header) = SplitSeal::sequential(job.recipients, job.opts, true)?;
        let upload = Upload::start(obj)?;
        let origin = Origin::File {
            id,
            options: options_text(job.opts),
            overwrite: job.overwrite,
        };
        let key = split.task_key().to_bytes();
        let rec = Record::new(
            (&obj.url, upload.id()),
            origin,
            job.recipients_id,
            (&header, &key),
            part_size,
        );
        let rec = begin_journal(&upload, rec)?;
        let start = Start {
            done: Vec::new(),
            kept: Vec::new(),
            lead: Some(header),
            sent: Vec::new(),
        };
        match send(obj, &upload, (split, rec), (file, start), job)? {
            Sent::Done(done) => Ok(done),
            // Nothing was sent before this run: its parts are numbered once each.
            Sent::Differs(why) => Err(io::Error::other(why)),
        }
    }

    /// Continues the pending upload into this object (docs/OBJECTS.md §7): the command, the
    /// source and the store's parts are checked against the journal, and only the chunks after
    /// the parts kept are sealed and sent.
    pub fn resume_upload(&self, job: &SealJob) -> io::Result<UploadDone> {
        let obj = &self.inner;
        let _job = journal::lock(journal::Kind::Upload, &obj.url)?;
        let Some(mut rec) = Record::load(&obj.url)? else {
            return Err(invalid(format!(
                "there is no pending upload into {} to resume (`zseal resume --list` shows \
                 those there are): run the command without --resume",
                obj.url
            )));
        };
        let (file, now) = open_source(job.source)?;
        if job.overwrite {
            // --force now: the completion may replace an object, as the first run's could not.
            rec.replace = "overwrite".into();
        }
        // What ends the job names the upload as the journal did (its parts may grow below).
        let ended = rec.clone();
        let refused = |r: Refusal| match r {
            Refusal::Command(m) => invalid(m),
            Refusal::Job(m) => end_job(obj, &ended, &m),
            Refusal::Completed(m) => completed_job(&ended, &m),
        };
        check::command(&rec, &options_text(job.opts), job.recipients_id, &now.path)
            .map_err(refused)?;
        check::source(&rec.source, &now).map_err(refused)?;
        let Some(sent) = rec.load_sent()? else {
            if let Ok(up) = Upload::adopt(obj, rec.upload_id.clone(), rec.marker.clone()) {
                up.abort();
            }
            return self.restart(
                job,
                &rec,
                "its journal does not record every part its runs may have sent (it was written \
                 by an older zseal, or its log of parts sent is damaged)",
            );
        };
        let header = from_hex(&rec.header).ok_or_else(|| end_job(obj, &rec, "damaged header"))?;
        let key = from_hex(&rec.key)
            .and_then(|k| TaskKey::from_bytes(&zeroize::Zeroizing::new(k)).ok())
            .ok_or_else(|| end_job(obj, &rec, "the journal's key cannot be read"))?;
        check::header(&header, &key, job.opts).map_err(refused)?;
        if !key.is_pieced() {
            // Its runs seal each chunk at its position under one key: nothing but the
            // byte-for-byte rule kept a resumed run from sealing a position twice, and pieces
            // make that rule unnecessary. Ended and sealed anew, pieced.
            if let Ok(up) = Upload::adopt(obj, rec.upload_id.clone(), rec.marker.clone()) {
                up.abort();
            }
            return self.restart(
                job,
                &rec,
                "it was begun by a zseal before pieces (docs/FORMAT.md §14), whose resumed runs \
                 seal each chunk again at its place under the same key",
            );
        }
        let done = listing::kept_parts(obj, &mut rec, &sent)?.map_err(refused)?;
        let chunk_size = job.opts.chunk_size as u64;
        let kept = check::reread(
            &file,
            &rec.parts,
            (now.size, chunk_size),
            (job.opts.hash, key.is_pieced()),
        )
        .map_err(refused)?;
        let split = SplitSeal::resumed(key, header.len() as u64).signed_by(job.opts.sign.clone());
        let upload = Upload::adopt(obj, rec.upload_id.clone(), rec.marker.clone())?;
        upload.journaled(&obj.url);
        let start = Start {
            done,
            lead: kept.is_empty().then_some(header),
            kept,
            sent,
        };
        match send(obj, &upload, (split, rec.clone()), (file, start), job)? {
            Sent::Done(done) => Ok(done),
            Sent::Differs(why) => self.restart(job, &rec, &why),
        }
    }

    /// After the pending upload `rec` describes was ended by the caller (it cannot be continued
    /// without sealing a part again with other bytes under nonces an earlier run may have used:
    /// `why`), removes its journal and seals the file anew: a new upload under a new file key, so that no nonce of the old key
    /// is used again. Without the recipients (a resume that was given none) the job is only
    /// ended, saying so.
    fn restart(&self, job: &SealJob, rec: &Record, why: &str) -> io::Result<UploadDone> {
        let obj = &self.inner;
        if job.recipients.is_empty() {
            return Err(end_job(
                obj,
                rec,
                &format!(
                    "{why}; sealing it anew under a new key needs the recipients or the \
                     passphrase"
                ),
            ));
        }
        let _ = Record::remove(&rec.url);
        let mut done = self.seal_resumable_held(job)?;
        done.restarted = Some(why.to_string());
        Ok(done)
    }
}

/// How a run ended, short of an error that leaves the job pending.
enum Sent {
    Done(UploadDone),
    /// A part would have gone out with other bytes than an earlier run may have sent under
    /// its number: nothing of it was sent, and the job cannot go on under this key.
    Differs(String),
}

/// Where a run begins: the parts the store holds (a resume), the ranges they hold (one, or a
/// pieced file's pieces), and what precedes the frames (the header, when part 1 is to be sent).
struct Start {
    done: Vec<(usize, PartId)>,
    kept: Vec<RangeResult>,
    lead: Option<Vec<u8>>,
    /// What the log says earlier runs may have sent.
    sent: Vec<PartRecord>,
}

/// The cutter shared between the engine, which writes into it, and the run, which settles it
/// whatever became of the engine.
#[derive(Clone)]
struct Shared(Arc<Mutex<Cutter>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cutter> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Write for Shared {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.lock().write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Seals the chunks after `start`'s into parts, then the trailer, and completes. A failure
/// before the completion leaves the upload pending with its journal written.
fn send(
    obj: &Arc<Object>,
    upload: &Arc<Upload>,
    (split, rec): (SplitSeal, Record),
    (file, start): (File, Start),
    job: &SealJob,
) -> io::Result<Sent> {
    let chunk_size = job.opts.chunk_size as u64;
    let len = rec.source.size;
    let first_chunk: u64 = start.kept.iter().map(|k| k.body_lens.len() as u64).sum();
    let part_size = rec.part_size;
    let after_kept = start.done.last().map_or(0, |(n, _)| *n as u32) + 1;
    let first_number = cutter::first_number(
        after_kept,
        &start.sent,
        (len, first_chunk * chunk_size),
        part_size,
    );
    let parts_kept = start.done.len();
    let plan = AdaptPlan {
        bounds: job.opts.adapt,
    };
    let file = Arc::new(file);
    let plain = Plain {
        file: file.clone(),
        len,
        chunk_size,
    };
    let mut cutter = Cutter::new(
        obj.clone(),
        upload.clone(),
        rec,
        start.done,
        (first_number, first_chunk),
        Some(plain),
        None,
    )
    .with_log(start.sent)
    .pieced();
    if let Some(lead) = &start.lead {
        cutter.write_lead(lead);
    }
    let shared = Shared(Arc::new(Mutex::new(cutter)));
    let sealed = seal(
        &split,
        &shared,
        (&file, len, first_chunk, start.kept),
        (job, plan, part_size),
    );
    let finished = sealed.and_then(|(digest, n)| {
        let mut cutter = shared.lock();
        let (parts, rec) = cutter.finish()?;
        Ok((parts, rec, digest, (n, cutter.uploaded, cutter.chunks)))
    });
    let (parts, rec, digest, (n, uploaded, chunks)) = match finished {
        Ok(f) => f,
        Err(e) => {
            let rec = shared.lock().settle();
            if let Some(why) = shared.lock().differs.take() {
                // Ended here, with its journal and log: the new job a restart begins is not
                // this upload's to remove when it is dropped.
                upload.abort();
                return Ok(Sent::Differs(why));
            }
            upload.keep();
            return Err(kept_error(e, &rec));
        }
    };
    let now = open_source(Path::new(&rec.source.path)).map(|(_, id)| id);
    if let Err(Refusal::Job(m) | Refusal::Command(m)) = now
        .map_err(|e| Refusal::Job(e.to_string()))
        .and_then(|now| check::source(&rec.source, &now))
    {
        upload.abort();
        return Err(end_job(obj, &rec, &m));
    }
    complete(obj, upload, &rec, &parts)?;
    Ok(Sent::Done(UploadDone::of(
        (parts_kept, parts.len()),
        (n, uploaded, chunks),
        digest,
    )))
}

/// Seals the file from chunk `first` into `shared` as a run of pieces of about a quarter of a
/// part each (FORMAT.md §14.6), then the container's end after the `kept` pieces; the digest
/// and the plaintext bytes sealed.
fn seal(
    split: &SplitSeal,
    shared: &Shared,
    (file, len, first, kept): (&File, u64, u64, Vec<RangeResult>),
    (job, plan, part_size): (&SealJob, AdaptPlan, u64),
) -> io::Result<(Option<String>, u64)> {
    let c = job.opts.chunk_size as u64;
    let key = split.task_key();
    let threads = job.opts.threads.clone();
    let rest = (first * c).min(len)..len;
    let mut n = 0u64;
    let mut results = kept;
    // Every chunk may already be in the parts kept: then only the end is left.
    if !rest.is_empty() {
        let per = (part_size / (4 * c)).max(1);
        let run = (first, rest.end - rest.start, per);
        let mut w = seal_pieces_adapting(key, run, shared.clone(), threads, plan)?;
        cutter::each_piece(file, rest, |piece| {
            w.write_all(piece)?;
            n += piece.len() as u64;
            if let Some(s) = &job.sealed {
                s.fetch_add(piece.len() as u64, Ordering::Relaxed);
            }
            Ok(())
        })?;
        let (_, pieces) = w.finish_pieces()?;
        results.extend(pieces);
    }
    let (_, digest) = split.write_trailer(&results, shared.clone())?;
    Ok((digest, n))
}

/// Completes the upload on its condition; the journal is removed when it completes, and when
/// the completion is refused (the object exists, or another write raced it): the upload is
/// then aborted. Another failure leaves the job pending.
fn complete(
    obj: &Arc<Object>,
    upload: &Arc<Upload>,
    rec: &Record,
    parts: &[(usize, PartId)],
) -> io::Result<()> {
    let replace = match rec.replace.as_str() {
        "overwrite" => Replace::Anything,
        // A rotation in place replaces exactly the version it read.
        "version" => Replace::Version(super::ObjectVersion {
            e_tag: rec.source_etag.clone(),
            version: rec.source_version.clone(),
        }),
        _ => Replace::Nothing,
    };
    // S3-compatible stores that ignore the completion's condition (docs/OBJECTS.md §3).
    if replace == Replace::Nothing {
        if let Ok(Some(_)) = (Remote { inner: obj.clone() }).size() {
            upload.abort();
            let _ = Record::remove(&obj.url);
            return Err(obj.exists());
        }
    }
    match upload.complete_numbered(parts, &replace) {
        Ok(()) => {
            let _ = Record::remove(&obj.url);
            Ok(())
        }
        // The object exists, another write raced this one, or (a rotation in place) another
        // writer replaced the version read: the job is over.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::AlreadyExists | io::ErrorKind::ResourceBusy
            ) || super::is_changed(&e) =>
        {
            upload.abort();
            let _ = Record::remove(&obj.url);
            Err(e)
        }
        Err(e) => {
            upload.keep();
            Err(kept_error(e, rec))
        }
    }
}

/// Ties the new journal `rec` to `upload` and writes it, before any part is sent.
fn begin_journal(upload: &Upload, mut rec: Record) -> io::Result<Record> {
    rec.marker = upload.marker().map(str::to_string);
    rec.begin_log()?;
    upload.journaled(&rec.url);
    upload.write_journal(|| rec.store())?;
    Ok(rec)
}

/// Opens the source: a regular file, with its identity (its absolute path).
fn open_source(path: &Path) -> io::Result<(File, record::SourceId)> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| crate::io::named(&e, "open", &name))?;
    let meta = file
        .metadata()
        .map_err(|e| crate::io::named(&e, "read", &name))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "{name} is not a regular file: a resumable upload reads its source again, which a \
             pipe or a device cannot give"
        )));
    }
    let abs = std::fs::canonicalize(path).map_err(|e| crate::io::named(&e, "read", &name))?;
    Ok((file, source_id(&abs, &meta)))
}

/// Ends a job that cannot go on: aborts its upload and removes its journal.
fn end_job(obj: &Arc<Object>, rec: &Record, why: &str) -> io::Error {
    if let Ok(up) = Upload::adopt(obj, rec.upload_id.clone(), rec.marker.clone()) {
        up.abort();
    }
    let _ = Record::remove(&rec.url);
    io::Error::other(format!(
        "cannot resume the upload into {}: {}. The pending upload was aborted and its \
         journal removed: run the command again without --resume",
        rec.url,
        why.trim_end_matches('.')
    ))
}

/// Ends a job whose upload the store completed (a run stopped before it could say so): its
/// journal is removed, and nothing is aborted.
fn completed_job(rec: &Record, why: &str) -> io::Error {
    let _ = Record::remove(&rec.url);
    io::Error::other(format!(
        "nothing to resume into {}: {why}; the journal was removed",
        rec.url
    ))
}

/// A failure that leaves the job pending, saying how to go on.
fn kept_error(e: io::Error, rec: &Record) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "{}. The upload is kept ({} parts, {} bytes at the store): run the same command \
             with --resume to send the rest, or end it with `zseal resume --abort {}`",
            e.to_string().trim_end_matches('.'),
            rec.parts.len(),
            rec.bytes_sent(),
            rec.url
        ),
    )
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}
