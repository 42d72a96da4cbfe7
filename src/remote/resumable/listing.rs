//! What the store holds of a pending upload, checked against its journal (docs/OBJECTS.md §7):
//! S3's and GCS's parts (ListParts, which GCS's XML API has as S3 has it), or Azure's uncommitted blocks (Get Block List), which have no
//! numbers and are matched to the journal's parts by block id ("On Azure").

use std::io;

use object_store::multipart::PartId;

use super::check::{self, Refusal};
use super::record::{PartRecord, Record};
use crate::remote::own::uncommitted_blocks;
use crate::remote::s3::{ListedPart, S3};
use crate::remote::{block_on, Object, Own};

/// The parts of `rec`'s upload that the store holds as the journal has them, with their
/// numbers, for the completion. A request that fails is an `Err` (the job stays pending); a
/// store that lost the upload or disagrees with the journal is a [`Refusal::Job`].
pub(super) fn kept_parts(
    obj: &Object,
    rec: &Record,
) -> io::Result<Result<Vec<(usize, PartId)>, Refusal>> {
    let key = obj.path.as_ref();
    let listed = match &obj.own {
        Own::S3(S3 { bucket, .. }) | Own::Gcs(bucket) => {
            match block_on(bucket.list_parts(key, &rec.upload_id)) {
                Ok(l) => l,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    return Ok(Err(Refusal::Job(format!(
                        "the store no longer has the upload (aborted, or removed by a lifecycle \
                     rule): {e}"
                    ))))
                }
                Err(e) => return Err(e),
            }
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
