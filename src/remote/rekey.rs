//! Rekeying an S3 object in place without moving its payload through the client
//! (docs/OBJECTS.md §3): a multipart upload whose first part is the new header and the first
//! 5 MiB of the payload (S3's smallest part) and whose other parts are server-side copies of
//! byte ranges of the old object (UploadPartCopy, each conditional on the old object's ETag).
//! The new object replaces the old one only when every part is in place; any failure aborts the
//! upload and leaves the old object as it was.

use std::collections::VecDeque;
use std::io::{self, Read};

use bytes::Bytes;

use super::{block_on, spawn, RemoteReader, Scheme};
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
/// for S3 (`s3://`) and without rotation; the caller falls back to streaming otherwise
/// ([`server_side_copy_possible`]).
pub fn rekey_in_place(
    locked: Locked<RemoteReader>,
    identities: &[&dyn Identity],
    recipients: &[&dyn Recipient],
    opts: &RekeyOptions,
) -> crate::Result<ObjectRekey> {
    let (header, mut report, mut reader) = locked.rekey_header(identities, recipients, opts)?;
    let obj = reader.object().clone();
    let Some(s3) = obj.s3.as_ref() else {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: server-side copy needs an s3:// object", obj.url),
        )
        .into());
    };
    let len = reader.len();
    let payload = len - report.old_header_len;
    report.payload_len = payload;
    let first = payload.min(MIN_PART);
    let mut part1 = Vec::with_capacity(header.len() + first as usize);
    part1.extend_from_slice(&header);
    part1.resize(header.len() + first as usize, 0);
    reader.read_exact(&mut part1[header.len()..])?;
    let uploaded = part1.len() as u64;
    let etag = reader.etag().map(str::to_string);
    let key = obj.path.as_ref().to_string();
    let id = block_on(s3.create_upload(&key)).map_err(|e| named(&obj.url, e))?;
    let result = (|| -> io::Result<()> {
        let mut parts = vec![(
            1u32,
            block_on(s3.upload_part(&key, &id, 1, Bytes::from(part1)))?,
        )];
        // The copies, `parts_in_flight` at a time, in order.
        let mut in_flight = VecDeque::new();
        let mut at = report.old_header_len + first;
        let mut n = 2u32;
        while at < len || !in_flight.is_empty() {
            if at < len && in_flight.len() < obj.opts.parts_in_flight {
                let end = len.min(at + COPY_PART);
                let (o, key, id, etag) = (obj.clone(), key.clone(), id.clone(), etag.clone());
                let task = spawn(async move {
                    let s3 = o.s3.as_ref().expect("checked above");
                    s3.upload_part_copy(&key, &id, n, &key, etag.as_deref(), at..end)
                        .await
                });
                in_flight.push_back((n, task));
                at = end;
                n += 1;
                continue;
            }
            let (part, task) = in_flight.pop_front().expect("not empty");
            let tag = block_on(task).map_err(|e| io::Error::other(e.to_string()))??;
            parts.push((part, tag));
        }
        block_on(s3.complete(&key, &id, &parts, etag.as_deref()))
    })();
    if let Err(e) = result {
        let _ = block_on(s3.abort(&key, &id));
        return Err(named(&obj.url, e).into());
    }
    let copied = payload - first;
    report.new_header_len = header.len() as u64;
    Ok(ObjectRekey {
        report,
        downloaded: reader.stats().bytes(),
        uploaded,
        copied,
    })
}

/// True when `reader`'s object can be rekeyed by [`rekey_in_place`] with `opts`.
pub fn server_side_copy_possible(reader: &RemoteReader, opts: &RekeyOptions) -> bool {
    !opts.rotate && reader.object().scheme == Scheme::S3 && reader.object().s3.is_some()
}

fn named(url: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("rekeying {url} in place: {e}"))
}
