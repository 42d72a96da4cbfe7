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
use std::collections::HashMap;

/// The parts of `rec`'s upload that the store holds as the journal has them, with their
/// numbers, for the completion. A request that fails is an `Err` (the job stays pending); a
/// store that lost the upload or disagrees with the journal is a [`Refusal::Job`].
///
/// The journal is written at most once a second, and not after a part failed, so the store
/// may hold parts after the journal's: on S3 and GCS, each part of frames that the log of
/// parts `sent` names next, in order, and that the store lists with the logged size, is taken
/// into `rec` as kept, so that a resume sends only what the store lacks. A version-1 upload's
/// sends under one number are the same bytes, which the log ensures. A pieced upload's hold
/// other pieces each, so its part is taken only when the log names one send under its number:
/// after two, the store's part could be either, and it is sent again, as new pieces.
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
/// [`kept_parts`]): whole frames following on from the journal's last part, each under a
/// number above the one before (a resumed run numbers its parts past every number sent
/// before, so the next chunks may be under any higher number; the lowest that fits is taken).
fn extend(rec: &mut Record, sent: &[PartRecord], listed: &[ListedPart]) {
    let listed: HashMap<u32, &ListedPart> = listed.iter().map(|l| (l.number, l)).collect();
    let mut sends: HashMap<u32, usize> = HashMap::new();
    for p in sent {
        *sends.entry(p.number).or_default() += 1;
    }
    loop {
        let (last, chunk) = match rec.parts.last() {
            None => (0, Some(0)),
            Some(p) => (
                p.number,
                p.lens().ok().map(|l| p.first_chunk + l.len() as u64),
            ),
        };
        let Some(chunk) = chunk else {
            return;
        };
        let next = sent
            .iter()
            .filter(|p| p.number > last && !p.end && p.first_chunk == chunk)
            .filter(|p| !p.plain_blake3.is_empty())
            // A pieced part's number sent once (S3 names a part by its number alone).
            .filter(|p| p.pieces.is_empty() || sends.get(&p.number) == Some(&1))
            .filter_map(|p| Some((p, *listed.get(&p.number)?)))
            .filter(|(p, l)| l.size == p.len)
            .min_by_key(|(p, _)| p.number);
        let Some((p, l)) = next else {
            return;
        };
        let mut p = p.clone();
        p.etag = l.e_tag.trim_matches('"').to_string();
        p.levels.clear();
        rec.parts.push(p);
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

#[cfg(test)]
mod tests {
    use super::super::record::{Origin, PieceRecord, SourceId};
    use super::*;

    /// A part of frames from `first_chunk` with `frames` frames of 16 bytes, `len` bytes, as the
    /// log has it; `pieced`: holding one piece.
    fn sent(number: u32, (first_chunk, frames, len): (u64, u32, u64), pieced: bool) -> PartRecord {
        let piece = PieceRecord {
            id: [number as u8; 16],
            frames,
            last_tag: [7; 16],
        };
        PartRecord {
            number,
            len,
            first_chunk,
            body_lens: super::super::record::to_hex(&16u32.to_le_bytes().repeat(frames as usize)),
            plain_blake3: "ab".into(),
            pieces: match pieced {
                true => super::super::record::to_hex(&piece.encode()),
                false => String::new(),
            },
            ..PartRecord::default()
        }
    }

    fn record() -> Record {
        let id = SourceId {
            path: "/src".into(),
            dev: 1,
            inode: 2,
            size: 100,
            mtime_ns: 3,
        };
        let origin = Origin::File {
            id,
            options: String::new(),
            overwrite: false,
        };
        Record::new(("s3://b/k", "u"), origin, "r", (b"h", b"k"), 10)
    }

    fn listed(number: u32, size: u64) -> ListedPart {
        ListedPart {
            number,
            e_tag: format!("\"e{number}\""),
            size,
        }
    }

    /// Parts past the journal are taken from the log when the store lists them with the logged
    /// size, in order; a pieced part only when one send under its number was logged (two runs
    /// that sent it hold other pieces each, and the store's could be either), a version-1 part
    /// whatever the sends (each was the same bytes).
    #[test]
    fn parts_past_the_journal_are_kept_only_when_the_log_names_them_alone() {
        let store = [listed(1, 30), listed(2, 40), listed(3, 50)];
        for pieced in [true, false] {
            let log = [
                sent(1, (0, 2, 30), pieced),
                sent(2, (2, 2, 40), pieced),
                sent(3, (4, 1, 50), pieced),
            ];
            let mut rec = record();
            extend(&mut rec, &log, &store);
            let kept: Vec<(u32, &str)> = rec
                .parts
                .iter()
                .map(|p| (p.number, p.etag.as_str()))
                .collect();
            assert_eq!(kept, [(1, "e1"), (2, "e2"), (3, "e3")], "pieced {pieced}");

            // Part 2 sent twice (a resumed run sent it again, then was cut too).
            let mut twice = log.to_vec();
            twice.push(sent(2, (2, 2, 40), pieced));
            let mut rec = record();
            extend(&mut rec, &twice, &store);
            let kept: Vec<u32> = rec.parts.iter().map(|p| p.number).collect();
            match pieced {
                true => assert_eq!(kept, [1], "the store's part 2 could be either send"),
                false => assert_eq!(kept, [1, 2, 3], "the same bytes either way"),
            }

            // A resumed run's part 7 from chunk 2 (numbered past what was sent), beside the
            // first run's part 2 from the same chunk: the lower number is taken, and the chunks
            // after part 7 are only looked for above 7.
            let mut later = log.to_vec();
            later.push(sent(7, (2, 2, 40), pieced));
            let mut rec = record();
            extend(
                &mut rec,
                &later,
                &[listed(1, 30), listed(7, 40), listed(3, 50)],
            );
            let kept: Vec<u32> = rec.parts.iter().map(|p| p.number).collect();
            assert_eq!(kept, [1, 7], "part 3 is below 7: sent again, after 7");

            // Another size at the store, or a part that does not follow: the log stops there.
            let mut rec = record();
            extend(
                &mut rec,
                &log,
                &[listed(1, 30), listed(2, 41), listed(3, 50)],
            );
            assert_eq!(rec.parts.len(), 1);
            let mut gap = log.to_vec();
            gap[1].first_chunk = 3;
            let mut rec = record();
            extend(&mut rec, &gap, &store);
            assert_eq!(rec.parts.len(), 1);
        }
    }
}
