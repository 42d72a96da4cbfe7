//! What the store holds of a pending upload, checked against its journal (docs/OBJECTS.md §7):
//! S3's and GCS's parts (ListParts, which GCS's XML API has as S3 has it), or Azure's uncommitted blocks (Get Block List), which have no
//! numbers and are matched to the journal's parts by block id ("On Azure").

use std::io;

use object_store::multipart::PartId;

use super::check::{self, Refusal};
use super::record::{by_number, PartRecord, Record};
use crate::remote::own::uncommitted_blocks;
use crate::remote::s3::{ListedPart, S3};
use crate::remote::{block_on, Object, Own};
use std::collections::HashMap;

/// The parts of `rec`'s upload that the store holds as the journal has them, with their
/// numbers, for the completion. A request that fails is an `Err` (the job stays pending); a
/// store that lost the upload or disagrees with the journal is a [`Refusal::Job`].
///
/// The journal is written at most once a second, and not after a part failed, so the store
/// may hold parts after the journal's: on S3 and GCS, each part of frames that the log of
/// parts `sent` names next, in order, and that the store lists with the logged size, is taken
/// into `rec` as kept (every send under one number is the same bytes, which the log ensures),
/// so that a resume sends only what the store lacks.
pub(super) fn kept_parts(
    obj: &std::sync::Arc<Object>,
    rec: &mut Record,
    sent: &[PartRecord],
) -> io::Result<Result<Vec<(usize, PartId)>, Refusal>> {
    let key = obj.path.as_ref();
    let listed = match &obj.own {
        Own::S3(S3 { bucket, .. }) | Own::Gcs(bucket) => {
            let listed = match block_on(bucket.list_parts(key, &rec.upload_id)) {
                Ok(l) => l,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(Err(gone(obj, &e))),
                Err(e) => return Err(e),
            };
            extend(rec, sent, &listed);
            listed
        }
        Own::Azure(container) => {
            let blocks = block_on(uncommitted_blocks(container, key))?;
            by_block_id(&rec.parts, &blocks)
        }
        Own::None => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: an http(s):// URL is read-only", obj.url),
            ))
        }
    };
    Ok(check::listed(&rec.parts, &listed))
}

/// Why an upload the store no longer has is gone: completed by a run stopped before it could
/// remove its journal (the object exists), or aborted or expired (it does not).
fn gone(obj: &std::sync::Arc<Object>, e: &io::Error) -> Refusal {
    let now = crate::remote::Remote { inner: obj.clone() }.size();
    match now {
        Ok(Some(size)) => Refusal::Completed(format!(
            "the store no longer has the upload, and {} exists ({size} bytes): most likely a \
             run completed this upload and was stopped before it could remove its journal \
             (`zseal verify {}` checks the object)",
            obj.url, obj.url
        )),
        _ => Refusal::Job(format!(
            "the store no longer has the upload (aborted, or removed by a lifecycle rule): {e}"
        )),
    }
}

/// Takes into `rec`'s parts those the log names next that the store holds (see
/// [`kept_parts`]): whole frames following on from the journal's last part.
fn extend(rec: &mut Record, sent: &[PartRecord], listed: &[ListedPart]) {
    let next = |rec: &Record| {
        let chunk = rec.parts.last().map_or(Some(0), |p| {
            p.lens().ok().map(|l| p.first_chunk + l.len() as u64)
        });
        (rec.parts.len() as u32 + 1, chunk)
    };
    let (sent, listed): (_, HashMap<u32, &ListedPart>) = (
        by_number(sent),
        listed.iter().map(|l| (l.number, l)).collect(),
    );
    loop {
        let (number, Some(chunk)) = next(rec) else {
            return;
        };
        let logged = sent
            .get(&number)
            .copied()
            .filter(|p| !p.end && p.first_chunk == chunk);
        let held = listed.get(&number).copied();
        match (logged, held) {
            (Some(p), Some(l)) if l.size == p.len && !p.plain_blake3.is_empty() => {
                let mut p = p.clone();
                p.etag = l.e_tag.trim_matches('"').to_string();
                p.levels.clear();
                rec.parts.push(p);
            }
            _ => return,
        }
    }
}

/// Azure's uncommitted blocks (id, size) as the parts they are: each journaled part whose block
/// id (its `etag`) is listed, under the part's number. Blocks the journal does not name (sent
/// after its last write, or another writer's) are left out: the completion does not name them.
pub(super) fn by_block_id(journal: &[PartRecord], blocks: &[(String, u64)]) -> Vec<ListedPart> {
    journal
        .iter()
        .filter_map(|p| {
            let (id, size) = blocks.iter().find(|(id, _)| *id == p.etag)?;
            Some(ListedPart {
                number: p.number,
                e_tag: id.clone(),
                size: *size,
            })
        })
        .collect()
}
