//! A rotating rekey of an S3 object or an Azure blob in place as a resumable upload
//! (docs/OBJECTS.md §7, "Resuming a rotating rekey"): the old object's frames opened and sealed
//! again under a new payload key ([`Rotation`]), cut into parts at frame boundaries by the same
//! [`Cutter`] as an `encrypt`, each acknowledged part journaled with the BLAKE3 of its bytes. A
//! resume reads the same version of the object (its ETag), makes the kept parts again to check
//! them, and sends the rest.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use super::check::{self, Refusal};
use super::cutter::Cutter;
use super::listing;
use super::record::{from_hex, Origin, PartRecord, Record, ROTATE};
use super::{
    begin_journal, completed_job, end_job, invalid, kept_error, pending_error, pending_upload,
};
use super::{Object, Remote, Shared, Upload, UploadDone};
use crate::crypto::{Identity, Recipient};
use crate::pipeline::{Locked, RekeyOptions, Rotation};
use crate::remote::Own;
use crate::remote::RemoteReader;
use crate::resume::journal;

/// One rotation of an object in place.
pub struct RotateJob<'a> {
    /// What opens the object now.
    pub identities: &'a [&'a dyn Identity],
    /// Who opens it after (not used by a resume: the header is the journal's).
    pub recipients: &'a [&'a dyn Recipient],
    /// The front end's fingerprint of the recipients (compared by a resume).
    pub recipients_id: &'a str,
    /// The rekey's options (`rotate` set).
    pub opts: &'a RekeyOptions,
}

impl Remote {
    /// Why a rotating rekey of this object in place cannot be a resumable upload, or `None`.
    pub fn why_rotation_not_resumable(&self) -> Option<String> {
        match self.inner.own {
            Own::S3(_) | Own::Gcs(_) | Own::Azure(_) => None,
            Own::None => Some(format!("{} is read-only", self.inner.url)),
        }
    }

    /// Rotates the object's file key in place as a resumable upload: a journal records each
    /// part the store acknowledges, and a failure leaves the upload pending for
    /// [`Remote::resume_rotation`]. Refused when an upload into the object is pending.
    /// `locked` is this object read ([`Remote::reader`]).
    pub fn rotate_resumable(
        &self,
        locked: Locked<RemoteReader>,
        job: &RotateJob,
    ) -> io::Result<UploadDone> {
        let obj = &self.inner;
        let _job = journal::lock(journal::Kind::Upload, &obj.url)?;
        if let Some(p) = pending_upload(&obj.url)? {
            return Err(pending_error(&p));
        }
        let version = locked.input().version();
        obj.rewritable(&version)?;
        let size = locked.input().len();
        let rekeyed = locked.rekey(job.identities, job.recipients, job.opts)?;
        let (header, rotation, mut reader) = rekeyed.into_rotation()?;
        let upload = Upload::start(obj)?;
        let origin = Origin::Rotated {
            size,
            e_tag: version.e_tag.clone(),
            version: version.version.clone(),
        };
        let rec = Record::new(
            (&obj.url, upload.id()),
            origin,
            job.recipients_id,
            (&header, rotation.new_payload_key()),
            self.part_size_for(size) as u64,
        );
        let rec = begin_journal(&upload, rec)?;
        let from = From {
            done: Vec::new(),
            frame: 0,
            lead: Some(header),
            sent: Vec::new(),
        };
        send(obj, &upload, rec, (&rotation, &mut reader), from)
    }

    /// Continues the pending rotation of this object (docs/OBJECTS.md §7): the same version of
    /// the object, the same recipients, the store's parts as journaled, and each kept part
    /// made again identical; then only the frames after them are sealed and sent. `locked` is
    /// this object read ([`Remote::reader`]).
    pub fn resume_rotation(
        &self,
        locked: Locked<RemoteReader>,
        job: &RotateJob,
    ) -> io::Result<UploadDone> {
        let obj = &self.inner;
        let _job = journal::lock(journal::Kind::Upload, &obj.url)?;
        let Some(mut rec) = Record::load(&obj.url)? else {
            return Err(invalid(format!(
                "there is no pending rotation of {} to resume (`zseal resume --list` shows \
                 the pending uploads): run the command without --resume",
                obj.url
            )));
        };
        if rec.options != ROTATE {
            return Err(invalid(format!(
                "the pending upload into {} is an encrypt of {}, not a rotation: resume it \
                 with that encrypt command and --resume, or end it with `zseal resume --abort \
                 {}`",
                obj.url, rec.source.path, obj.url
            )));
        }
        // What ends the job names the upload as the journal did (its parts may grow below).
        let ended = rec.clone();
        let refused = |r: Refusal| match r {
            Refusal::Command(m) => invalid(m),
            Refusal::Job(m) => end_job(obj, &ended, &m),
            Refusal::Completed(m) => completed_job(&ended, &m),
        };
        check::command(&rec, ROTATE, job.recipients_id, &obj.url).map_err(refused)?;
        let version = locked.input().version();
        if version.e_tag != rec.source_etag
            || rec.source_version.is_some() && version.version != rec.source_version
        {
            // The ETag, and the version (GCS: the generation) where the store names one: the
            // same bytes written again have the same ETag but another version.
            let named = |e_tag: Option<&str>, v: Option<&str>| match v {
                Some(v) => format!("{}, version {v}", e_tag.unwrap_or("none")),
                None => e_tag.unwrap_or("none").to_string(),
            };
            return Err(refused(Refusal::Job(format!(
                "{} was replaced since the rotation began (ETag {}, now {}): there is nothing \
                 left to rotate",
                obj.url,
                named(rec.source_etag.as_deref(), rec.source_version.as_deref()),
                named(version.e_tag.as_deref(), version.version.as_deref())
            ))));
        }
        // A rotation's frames are a function of the object's version (checked above), the
        // journal's key and their numbers: sealed again, they are the same bytes, which the
        // log of parts sent (when the journal has one) checks part by part as they go.
        let Some(sent) = rec.load_sent()? else {
            return Err(refused(Refusal::Job(
                "its journal does not record every part its runs may have sent (it was written \
                 by an older zseal, or its log of parts sent is missing or damaged)"
                    .into(),
            )));
        };
        let done = match listing::kept_parts(obj, &mut rec, &[])? {
            Ok(done) => done,
            Err(r) => return Err(refused(r)),
        };
        let damaged =
            |what: &str| refused(Refusal::Job(format!("the journal's {what} is damaged")));
        let header = from_hex(&rec.header).ok_or_else(|| damaged("header"))?;
        let key: zeroize::Zeroizing<[u8; 32]> = from_hex(&rec.key)
            .and_then(|k| <[u8; 32]>::try_from(k.as_slice()).ok())
            .map(zeroize::Zeroizing::new)
            .ok_or_else(|| damaged("key"))?;
        let (rotation, mut reader) = locked.resume_rotation(job.identities, &key)?;
        let frame = remade(&rotation, &mut reader, &rec, &header).map_err(refused)?;
        let upload = Upload::adopt(obj, rec.upload_id.clone(), rec.marker.clone())?;
        upload.journaled(&obj.url);
        let from = From {
            lead: done.is_empty().then_some(header),
            done,
            frame,
            sent,
        };
        send(obj, &upload, rec.clone(), (&rotation, &mut reader), from)
    }
}

/// Where a run begins: the parts the store holds, the first frame after them, and the header
/// when part 1 is to be sent.
struct From {
    done: Vec<(usize, object_store::multipart::PartId)>,
    frame: u64,
    lead: Option<Vec<u8>>,
    /// What the log says earlier runs may have sent.
    sent: Vec<PartRecord>,
}

/// Makes the kept parts again (the new header, then the source's frames up to the first one
/// not kept, re-sealed) and checks each against the BLAKE3 the journal holds of what was sent;
/// returns the first frame after them, where `reader` is left.
fn remade(
    rotation: &Rotation,
    reader: &mut RemoteReader,
    rec: &Record,
    header: &[u8],
) -> Result<u64, Refusal> {
    let mut frames = 0u64;
    for p in &rec.parts {
        let lens = p
            .lens()
            .map_err(|e| Refusal::Job(format!("the journal: {e}")))?;
        if p.first_chunk != frames || p.sealed_blake3.is_empty() {
            return Err(Refusal::Job(format!(
                "the journal's part {} does not follow the one before: the journal is damaged",
                p.number
            )));
        }
        frames += lens.len() as u64;
    }
    if frames == 0 {
        return Ok(0);
    }
    let mut check = Remade::new(&rec.parts);
    check.write_all(header).map_err(|e| check.refusal(e))?;
    let run = rotation.run(reader, 0, Some(frames), &mut check);
    run.map_err(|e| check.refusal(e.into()))?;
    check.finish()?;
    Ok(frames)
}

/// Hashes what it is given, cut at the journal's part lengths, and compares each part's hash.
struct Remade<'a> {
    parts: &'a [PartRecord],
    at: usize,
    left: u64,
    hash: blake3::Hasher,
    bad: Option<String>,
}

impl<'a> Remade<'a> {
    fn new(parts: &'a [PartRecord]) -> Self {
        Remade {
            parts,
            at: 0,
            left: parts.first().map_or(0, |p| p.len),
            hash: blake3::Hasher::new(),
            bad: None,
        }
    }

    /// What went wrong: a part that differs, or else the error.
    fn refusal(&self, e: io::Error) -> Refusal {
        Refusal::Job(match &self.bad {
            Some(m) => m.clone(),
            None => format!("re-reading the kept parts from the object: {e}"),
        })
    }

    fn finish(self) -> Result<(), Refusal> {
        match (self.at == self.parts.len(), self.bad) {
            (_, Some(m)) => Err(Refusal::Job(m)),
            (true, None) => Ok(()),
            (false, None) => Err(Refusal::Job(format!(
                "the kept frames make {} part(s), not the journal's {}: the journal is damaged",
                self.at,
                self.parts.len()
            ))),
        }
    }
}

impl Write for Remade<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            let Some(p) = self.parts.get(self.at) else {
                self.bad = Some(format!(
                    "the kept frames are longer than the journal's {} part(s): the journal is \
                     damaged",
                    self.parts.len()
                ));
                return Err(io::Error::other("too long"));
            };
            let n = (self.left.min(rest.len() as u64)) as usize;
            self.hash.update(&rest[..n]);
            rest = &rest[n..];
            self.left -= n as u64;
            if self.left > 0 {
                continue;
            }
            let got = std::mem::take(&mut self.hash).finalize().to_hex();
            if !got.as_str().eq_ignore_ascii_case(&p.sealed_blake3) {
                self.bad = Some(format!(
                    "part {} made again from the object is not what was sent (its BLAKE3 \
                     differs)",
                    p.number
                ));
                return Err(io::Error::other("differs"));
            }
            self.at += 1;
            self.left = self.parts.get(self.at).map_or(0, |p| p.len);
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Rotates the frames from `from.frame` on into parts after `from.done`, then the container's
/// end, and completes on the ETag read. A failure to reach the store leaves the job pending; a
/// source that cannot be rotated (damaged) ends it.
fn send(
    obj: &Arc<Object>,
    upload: &Arc<Upload>,
    rec: Record,
    (rotation, reader): (&Rotation, &mut RemoteReader),
    from: From,
) -> io::Result<UploadDone> {
    let parts_kept = from.done.len();
    let number = parts_kept as u32 + 1;
    let mut cutter = Cutter::new(
        obj.clone(),
        upload.clone(),
        rec,
        from.done,
        (number, from.frame),
        None,
        None,
    )
    .with_log(from.sent);
    if let Some(lead) = &from.lead {
        cutter.write_lead(lead);
    }
    let shared = Shared(Arc::new(Mutex::new(cutter)));
    let ran = rotation.run(reader, from.frame, None, &mut shared.clone());
    let finished = match ran {
        Ok(n) => {
            let mut cutter = shared.lock();
            cutter
                .finish()
                .map(|(parts, rec)| (parts, rec, (n, cutter.uploaded, cutter.chunks)))
        }
        Err(crate::Error::Io(e)) => Err(io::Error::new(e.kind(), e.to_string())),
        Err(e) => {
            let rec = shared.lock().settle();
            upload.abort();
            return Err(end_job(
                obj,
                &rec,
                &format!("the object cannot be rotated: {e}"),
            ));
        }
    };
    let (parts, rec, (n, uploaded, chunks)) = match finished {
        Ok(f) => f,
        Err(e) => {
            let rec = shared.lock().settle();
            if let Some(why) = shared.lock().differs.take() {
                upload.abort();
                return Err(end_job(obj, &rec, &why));
            }
            upload.keep();
            return Err(kept_error(e, &rec));
        }
    };
    super::complete(obj, upload, &rec, &parts)?;
    Ok(UploadDone::of(
        (parts_kept, parts.len()),
        (n, uploaded, chunks),
        None,
    ))
}
