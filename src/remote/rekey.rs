//! Rekeying an S3 object in place without moving its payload through the client
//! (docs/OBJECTS.md §3): a multipart upload whose first part is the new header and the first
//! 5 MiB of the payload (S3's smallest part) and whose other parts are server-side copies of
//! byte ranges of the old object (UploadPartCopy, each conditional on the old object's ETag).
//! The new object replaces the old one only when every part is in place; any failure aborts the
//! upload and leaves the old object as it was.

use std::collections::VecDeque;
use std::io::{self, Read};

use object_store::multipart::PartId;
use object_store::PutPayload;

use super::upload::Upload;
use super::{block_on, spawn, RemoteReader, Replace};
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
        let mut at = report.old_header_len + first;
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
        return Err(io::Error::new(e.kind(), format!("rekeying {} in place: {e}", obj.url)).into());
    }
    Ok(ObjectRekey {
        copied: report.payload_len - first,
        report,
        downloaded: reader.stats().bytes(),
        uploaded,
    })
}
