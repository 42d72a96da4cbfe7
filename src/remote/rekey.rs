//! Rekeying an S3 object in place without moving its payload through the client
//! (docs/OBJECTS.md §3): a multipart upload whose first part is the new header and the first
//! 5 MiB of the payload (S3's smallest part) and whose other parts are server-side copies of
//! byte ranges of the old object (UploadPartCopy, each conditional on the old object's ETag).
//! The new object replaces the old one only when every part is in place; any failure aborts the
//! upload and leaves the old object as it was. [`replace_head`] does the same for any header
//! (a crypt4gh file's, FORMAT.md §13.9), with a first part of exactly 5 MiB.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom, Write};

use object_store::multipart::PartId;
use object_store::PutPayload;

use super::upload::Upload;
use super::{block_on, spawn, RemoteReader, RemoteWriter, Replace};
use crate::crypto::{Identity, Recipient};
use crate::pipeline::{Locked, RekeyOptions, RekeyReport};

/// S3's smallest part (all but the last).
const MIN_PART: u64 = 5 << 20;
/// Bytes per server-side copied part: large parts make few requests; S3 allows up to 5 GiB.
const COPY_PART: u64 = 512 << 20;

/// What an in-place rekey of an object moved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectRekey {
    /// The header and payload figures, as a local rekey reports them.
    pub report: RekeyReport,
    /// Bytes the client downloaded (the old header, and the payload bytes of the first part).
    pub downloaded: u64,
    /// Bytes the client uploaded (the new header and those payload bytes).
    pub uploaded: u64,
    /// Payload bytes the store copied on its side.
    pub copied: u64,
}

/// Rekeys the object `locked` was read from, in place, copying the payload server-side. Only
/// for an object whose store copies ranges ([`super::Remote::copies_server_side`]: S3) and
/// without rotation; the caller streams the container otherwise. The upload itself is
/// object_store's (`MultipartStore`); the copied parts and the conditional completion are the
/// requests it lacks (s3.rs).
pub fn rekey_in_place(
    locked: Locked<RemoteReader>,
    identities: &[&dyn Identity],
    recipients: &[&dyn Recipient],
    opts: &RekeyOptions,
) -> crate::Result<ObjectRekey> {
    if opts.rotate {
        // Refused before the key is unwrapped: rotation seals every frame again.
        return Err(crate::Error::InvalidOption(
            "rotating the file key seals every frame again: the payload cannot be copied \
             server-side; stream the container instead"
                .into(),
        ));
    }
    let (header, mut report, mut reader) =
        locked.rekey(identities, recipients, opts)?.into_header()?;
    let obj = reader.object().clone();
    if !matches!(obj.own, super::Own::S3(_)) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: server-side copy needs an s3:// object", obj.url),
        )
        .into());
    }
    let len = reader.len();
    report.payload_len = len - report.old_header_len;
    let first = report.payload_len.min(MIN_PART);
    // One read of the whole 5 MiB, so that the reader fetches it in one GET (read_to_end
    // would ask in growing pieces, each a GET of its own).
    let mut part1 = header;
    let at = part1.len();
    part1.resize(at + first as usize, 0);
    reader.read_exact(&mut part1[at..])?;
    let uploaded = part1.len() as u64;
    upload_with_copies(&reader, part1, report.old_header_len + first)?;
    Ok(ObjectRekey {
        copied: report.payload_len - first,
        report,
        downloaded: reader.stats().bytes(),
        uploaded,
    })
}

/// What an in-place rewrite of an object's header moved ([`replace_head`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeadRewrite {
    /// Bytes the client downloaded (after the old header: what it uploaded again).
    pub downloaded: u64,
    /// Bytes the client uploaded (the new header and the data bytes of the first part).
    pub uploaded: u64,
    /// Bytes the store copied on its side (0: the object streamed through the client).
    pub copied: u64,
}

/// Replaces the first `old_head_len` bytes of the object `reader` reads with `head`, every byte
/// after them kept as it is (a crypt4gh rekey, docs/FORMAT.md §13.9). On S3, when at least
/// [`MIN_PART`] − `head.len()` bytes follow the old header, part 1 is `head` and that many of
/// them, uploaded from here, and the store copies the rest (UploadPartCopy): about 5 MiB moves
/// through the client whatever the object's size. Otherwise the object streams through (a
/// smaller object is one PUT; GCS and Azure have no ranged copy). Either way the new object
/// replaces only the version read, and a failure leaves the old one as it was.
pub fn replace_head(
    mut reader: RemoteReader,
    head: Vec<u8>,
    old_head_len: u64,
) -> crate::Result<HeadRewrite> {
    let len = reader.len();
    let rest = len.checked_sub(old_head_len).ok_or_else(|| {
        crate::Error::Truncated(format!(
            "{} is {len} bytes, shorter than its {old_head_len}-byte header",
            reader.url()
        ))
    })?;
    let first = MIN_PART.saturating_sub(head.len() as u64);
    let server_side = matches!(reader.object().own, super::Own::S3(_));
    reader.seek(SeekFrom::Start(old_head_len))?;
    if !server_side || rest < first {
        return stream_head(reader, head, old_head_len);
    }
    // One read of exactly what part 1 needs: nothing after it is fetched.
    reader.plan_span(old_head_len, old_head_len + first);
    let mut part1 = head;
    let at = part1.len();
    part1.resize(at + first as usize, 0);
    reader.read_exact(&mut part1[at..])?;
    let uploaded = part1.len() as u64;
    upload_with_copies(&reader, part1, old_head_len + first)?;
    Ok(HeadRewrite {
        downloaded: reader.stats().bytes(),
        uploaded,
        copied: rest - first,
    })
}

/// [`replace_head`] through the client: `head`, then the bytes after the old header as they
/// are read, written over the version read.
fn stream_head(
    mut reader: RemoteReader,
    head: Vec<u8>,
    old_head_len: u64,
) -> crate::Result<HeadRewrite> {
    let (obj, version, len) = (reader.object().clone(), reader.version(), reader.len());
    obj.rewritable(&version)?;
    let size = head.len() as u64 + len - old_head_len;
    let mut w = RemoteWriter::new(obj, Replace::Version(version), Some(size));
    reader.plan_span(old_head_len, len);
    w.write_all(&head)?;
    io::copy(&mut reader, &mut w)?;
    w.commit()?;
    Ok(HeadRewrite {
        downloaded: reader.stats().bytes(),
        uploaded: size,
        copied: 0,
    })
}

/// Completes an in-place rewrite of the object `reader` reads: a multipart upload whose first
/// part is `part1` (uploaded from here; at least [`MIN_PART`] unless it is the whole object)
/// and whose other parts the store copies from the old object's bytes `copy_from..` in ranges of
/// [`COPY_PART`] (UploadPartCopy), each copy and the completion conditional on the version read.
/// Any failure aborts the upload and leaves the old object as it was.
fn upload_with_copies(reader: &RemoteReader, part1: Vec<u8>, copy_from: u64) -> io::Result<()> {
    let obj = reader.object().clone();
    let len = reader.len();
    if !matches!(obj.own, super::Own::S3(_)) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: server-side copy needs an s3:// object", obj.url),
        ));
    }
    // The copies and the completion are conditional on the version read.
    let version = reader.version();
    obj.rewritable(&version)?;
    let etag = version.e_tag.clone().unwrap_or_default();
    // Registered: a signal aborts it, whatever step it is at.
    let upload = Upload::start(&obj)?;
    let result = (|| -> io::Result<()> {
        let part = block_on(upload.put_part(0, PutPayload::from(part1)))
            .map_err(|e| obj.error("upload a part of", e))?;
        let mut parts = vec![part];
        // The copies, `parts_in_flight` at a time, in order; part numbers count from 1.
        let mut in_flight = VecDeque::new();
        let mut at = copy_from;
        while at < len || !in_flight.is_empty() {
            if at < len && in_flight.len() < obj.opts.parts_in_flight {
                let end = len.min(at + COPY_PART);
                let n = (parts.len() + in_flight.len() + 1) as u32;
                let (o, id, etag) = (obj.clone(), upload.id().to_string(), etag.clone());
                in_flight.push_back(spawn(async move {
                    let super::Own::S3(s3) = &o.own else {
                        unreachable!("checked above")
                    };
                    let key = o.path.as_ref();
                    s3.upload_part_copy(key, &id, n, key, Some(&etag), at..end)
                        .await
                }));
                at = end;
                continue;
            }
            let task = in_flight.pop_front().expect("not empty");
            let content_id = block_on(task).map_err(|e| io::Error::other(e.to_string()))??;
            parts.push(PartId { content_id });
        }
        upload.complete(&parts, &Replace::Version(version))?;
        Ok(())
    })();
    if let Err(e) = result {
        upload.abort();
        return Err(io::Error::new(
            e.kind(),
            format!("rekeying {} in place: {e}", obj.url),
        ));
    }
    Ok(())
}
