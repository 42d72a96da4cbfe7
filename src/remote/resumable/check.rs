//! What a resume checks before it sends anything (docs/OBJECTS.md §7): the command against the
//! journal, the source against its identity and the plaintext hashes of the parts kept, the
//! store's parts against the journal's.

use std::fs::File;
use std::io;

use object_store::multipart::PartId;

use super::cutter::each_piece;
use super::record::{PartRecord, PieceRecord, Record, SourceId};
use crate::format::Header;
use crate::hash::{ChunkHash, HashAlg};
use crate::pipeline::{EncryptOptions, PieceRef, RangeResult, TaskKey};
use crate::remote::s3::ListedPart;

/// Why a resume cannot go on.
pub(super) enum Refusal {
    /// The command differs from the journal: the job stays pending.
    Command(String),
    /// The job cannot be continued: it is ended (the upload aborted, the journal removed).
    Job(String),
    /// The upload is gone and the object exists: most likely completed by a run stopped
    /// before it removed the journal, which is removed now.
    Completed(String),
}

/// The command's options and recipients, and its source's path, against the journal's.
pub(super) fn command(
    r: &Record,
    options: &str,
    recipients: &str,
    path: &str,
) -> Result<(), Refusal> {
    let differs = |what: &str, journal: &str, now: &str| {
        Refusal::Command(format!(
            "the pending upload of {} was started with {what} {journal}, this command has \
             {now}: run the same command as the first time with --resume, or end the pending \
             upload with `zseal resume --abort {}`",
            r.url, r.url
        ))
    };
    if r.options != options {
        return Err(differs("the options", &r.options, options));
    }
    if r.recipients != recipients {
        let who = |s: &str| match s {
            "passphrase" => "a passphrase".to_string(),
            _ => "other recipients".to_string(),
        };
        let (then, now) = (who(&r.recipients), who(recipients));
        let (then, now) = if then == now {
            ("one set of recipients".into(), "another".into())
        } else {
            (then, now)
        };
        return Err(differs("", &then, &now));
    }
    if r.source.path != path {
        return Err(differs("the source", &r.source.path, path));
    }
    Ok(())
}

/// The journal's header and key against what the command asks (the options text already
/// matched, so a difference means the journal was edited or damaged): the header's algorithms,
/// chunk size, padding and signing are the options', and the key is for that header.
pub(super) fn header(header: &[u8], key: &TaskKey, opts: &EncryptOptions) -> Result<(), Refusal> {
    let bad = |what: &str| {
        Refusal::Job(format!(
            "the journal's {what} is not what this command asks (the journal was edited or is \
             damaged)"
        ))
    };
    let (h, _, _) = Header::read(&mut &header[..]).map_err(|_| bad("header"))?;
    let asked = (
        opts.cipher,
        opts.header_codec(),
        opts.hash,
        opts.chunk_size,
        opts.pad,
        !opts.sign.is_empty(),
    );
    let has = (
        h.cipher,
        h.codec,
        h.hash,
        h.chunk_size(),
        h.padded,
        h.signed,
    );
    if asked != has {
        return Err(bad("header"));
    }
    if !key.fits(&h) {
        return Err(bad("key"));
    }
    Ok(())
}

/// The source's identity now against the journal's: what changed, named.
pub(super) fn source(then: &SourceId, now: &SourceId) -> Result<(), Refusal> {
    let mut changed = Vec::new();
    if then.size != now.size {
        changed.push(format!("its size ({} bytes, now {})", then.size, now.size));
    }
    if then.mtime_ns != now.mtime_ns {
        changed.push("its modification time (mtime)".to_string());
    }
    if (then.dev, then.inode) != (now.dev, now.inode) {
        changed.push("its device and inode (another file now has its name)".to_string());
    }
    if changed.is_empty() {
        return Ok(());
    }
    Err(Refusal::Job(format!(
        "{} changed since the upload began: {}",
        now.path,
        changed.join(", ")
    )))
}

/// The store's parts against the journal's: each journaled part must be there with its ETag
/// and size. Returns the kept parts with their numbers, for the completion.
pub(super) fn listed(
    journal: &[PartRecord],
    store: &[ListedPart],
) -> Result<Vec<(usize, PartId)>, Refusal> {
    let mut kept = Vec::with_capacity(journal.len());
    for (k, p) in journal.iter().enumerate() {
        if p.number as usize != k + 1 {
            return Err(Refusal::Job(format!(
                "the journal's part {} is numbered {}: the journal is damaged",
                k + 1,
                p.number
            )));
        }
        let found = store.iter().find(|s| s.number == p.number);
        match found {
            Some(s) if s.e_tag.eq_ignore_ascii_case(&p.etag) && s.size == p.len => {
                kept.push((
                    p.number as usize,
                    PartId {
                        content_id: s.e_tag.clone(),
                    },
                ));
            }
            Some(s) => {
                return Err(Refusal::Job(format!(
                    "the store's part {} (ETag {}, {} bytes) is not the one sent (ETag {}, {} \
                     bytes)",
                    p.number, s.e_tag, s.size, p.etag, p.len
                )))
            }
            None => {
                return Err(Refusal::Job(format!(
                    "the store no longer holds part {} of the upload",
                    p.number
                )))
            }
        }
    }
    Ok(kept)
}

/// Reads the kept `parts`' plaintext again from `file` (`len` bytes, chunks of `chunk_size`),
/// checks each part's BLAKE3 against the journal's, and returns what the trailer needs of
/// them: one range (a version-1 upload's), or one range a piece (a pieced upload's, whose
/// every part lists its pieces); none without parts.
pub(super) fn reread(
    file: &File,
    parts: &[PartRecord],
    (len, chunk_size): (u64, u64),
    (hash, pieced): (HashAlg, bool),
) -> Result<Vec<RangeResult>, Refusal> {
    let io = |e: io::Error| Refusal::Job(format!("reading the source again: {e}"));
    let mut kept = RangeResult {
        first_chunk: 0,
        plaintext_len: 0,
        body_lens: Vec::new(),
        chaining_values: Vec::new(),
        root_if_alone: None,
        piece: None,
    };
    let mut pieces = Vec::new();
    for p in parts {
        let lens = p.lens().map_err(io)?;
        let first = kept.body_lens.len() as u64;
        if p.first_chunk != first {
            return Err(Refusal::Job(format!(
                "the journal's part {} starts at chunk {}, not {first}: the journal is damaged",
                p.number, p.first_chunk
            )));
        }
        let listed = p.piece_list().map_err(io)?;
        if listed.is_empty() == pieced {
            return Err(Refusal::Job(format!(
                "the journal's part {} {} pieces, and its header says the file {} pieced: the \
                 journal is damaged",
                p.number,
                if pieced { "lists no" } else { "lists" },
                if pieced { "is" } else { "is not" }
            )));
        }
        pieces.extend(listed);
        let end = ((first + lens.len() as u64) * chunk_size).min(len);
        let start = (first * chunk_size).min(end);
        let digest = hash_chunks(
            file,
            (first, lens.len() as u64),
            (len, chunk_size),
            hash,
            &mut kept,
        )
        .map_err(io)?;
        if digest != p.plain_blake3 {
            return Err(Refusal::Job(format!(
                "bytes {start}..{end} of the source (sent in part {}) are not what was sent: \
                 their BLAKE3 differs",
                p.number
            )));
        }
        kept.plaintext_len += end - start;
        kept.body_lens.extend(lens);
    }
    Ok(match (parts.is_empty(), pieced) {
        (true, _) => Vec::new(),
        (false, false) => vec![kept],
        (false, true) => per_piece(&kept, &pieces, (len, chunk_size)),
    })
}

/// The kept chunks' range cut into the pieces that hold them (each piece's frame count checked
/// against its part's frames when the journal was read).
fn per_piece(kept: &RangeResult, pieces: &[PieceRecord], (len, c): (u64, u64)) -> Vec<RangeResult> {
    let mut at = 0usize;
    pieces
        .iter()
        .map(|p| {
            let n = p.frames as usize;
            let first = at as u64;
            let cvs = kept.chaining_values.get(at..at + n).unwrap_or_default();
            let r = RangeResult {
                first_chunk: first,
                plaintext_len: ((first + n as u64) * c).min(len) - (first * c).min(len),
                body_lens: kept.body_lens[at..at + n].to_vec(),
                chaining_values: cvs.to_vec(),
                root_if_alone: if at == 0 { kept.root_if_alone } else { None },
                piece: Some(PieceRef {
                    id: p.id,
                    last_tag: p.last_tag,
                }),
            };
            at += n;
            r
        })
        .collect()
}

/// Reads `count` chunks from `first` once: returns the BLAKE3 of their plaintext (hex), and
/// with a BLAKE3 digest adds their chaining values to `kept` (chunk 0's root hash too).
fn hash_chunks(
    file: &File,
    (first, count): (u64, u64),
    (len, chunk_size): (u64, u64),
    hash: HashAlg,
    kept: &mut RangeResult,
) -> io::Result<String> {
    let mut whole = blake3::Hasher::new();
    for i in first..first + count {
        let start = (i * chunk_size).min(len);
        let end = ((i + 1) * chunk_size).min(len);
        let mut h = crate::hash::ChunkHasher::new(hash, i, chunk_size as usize);
        each_piece(file, start..end, |piece| {
            whole.update(piece);
            h.update(piece);
            Ok(())
        })?;
        let c: ChunkHash = h.finish();
        if let Some(cv) = c.cv() {
            kept.chaining_values.push(cv);
        }
        if i == 0 {
            kept.root_if_alone = c.root_if_alone();
        }
    }
    Ok(whole.finalize().to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(number: u32, etag: &str, len: u64) -> PartRecord {
        PartRecord {
            number,
            etag: etag.into(),
            len,
            first_chunk: 0,
            body_lens: String::new(),
            plain_blake3: String::new(),
            sealed_blake3: String::new(),
            levels: String::new(),
            end: false,
            pieces: String::new(),
        }
    }

    fn listed_part(number: u32, e_tag: &str, size: u64) -> ListedPart {
        ListedPart {
            number,
            e_tag: e_tag.into(),
            size,
        }
    }

    fn refusal(r: Result<Vec<(usize, PartId)>, Refusal>) -> String {
        match r {
            Err(Refusal::Job(m)) => m,
            Err(Refusal::Command(m)) => panic!("a command refusal: {m}"),
            Err(Refusal::Completed(m)) => panic!("a completed job: {m}"),
            Ok(_) => panic!("accepted"),
        }
    }

    /// The journal's parts must all be listed with their ETags and sizes; parts the store holds
    /// past them (sent after the last journal write) are left to be sent again.
    #[test]
    fn the_stores_parts_are_checked_against_the_journals() {
        let journal = [part(1, "a", 10), part(2, "b", 20)];
        let store = [
            listed_part(1, "A", 10),
            listed_part(2, "b", 20),
            listed_part(3, "c", 5),
        ];
        let kept = listed(&journal, &store).ok().expect("kept");
        assert_eq!(kept.len(), 2);
        assert_eq!((kept[1].0, kept[1].1.content_id.as_str()), (2, "b"));
        let m = refusal(listed(&journal, &store[..1]));
        assert!(m.contains("no longer holds part 2"), "{m}");
        let m = refusal(listed(
            &journal,
            &[store[0].clone(), listed_part(2, "x", 20)],
        ));
        assert!(
            m.contains("part 2 (ETag x, 20 bytes) is not the one sent"),
            "{m}"
        );
        let m = refusal(listed(
            &journal,
            &[store[0].clone(), listed_part(2, "b", 21)],
        ));
        assert!(m.contains("is not the one sent"), "{m}");
    }

    /// Azure's blocks are matched to the journal's parts by id whatever their order at the
    /// store (listing.rs); blocks the journal does not name are left out, and a journaled block
    /// the store lacks or holds at another size is refused as S3's parts are.
    #[test]
    fn azure_blocks_are_matched_to_the_journals_parts_by_id() {
        use super::super::listing::by_block_id;
        let journal = [part(1, "aa", 10), part(2, "bb", 20)];
        let blocks = [("zz".to_string(), 5), ("bb".into(), 20), ("aa".into(), 10)];
        let got = by_block_id(&journal, &blocks);
        assert_eq!(got, [listed_part(1, "aa", 10), listed_part(2, "bb", 20)]);
        let kept = listed(&journal, &got).ok().expect("kept");
        assert_eq!((kept[1].0, kept[1].1.content_id.as_str()), (2, "bb"));
        let m = refusal(listed(&journal, &by_block_id(&journal, &blocks[..2])));
        assert!(m.contains("no longer holds part 1"), "{m}");
        let resized = [("aa".to_string(), 10), ("bb".into(), 19)];
        let m = refusal(listed(&journal, &by_block_id(&journal, &resized)));
        assert!(
            m.contains("part 2 (ETag bb, 19 bytes) is not the one sent"),
            "{m}"
        );
    }

    /// A changed source is named by what changed.
    #[test]
    fn a_changed_source_is_named_by_what_changed() {
        let then = SourceId {
            path: "/d/f".into(),
            dev: 1,
            inode: 2,
            size: 3,
            mtime_ns: 4,
        };
        assert!(source(&then, &then.clone()).is_ok());
        let now = SourceId {
            size: 5,
            mtime_ns: 6,
            ..then.clone()
        };
        let Err(Refusal::Job(m)) = source(&then, &now) else {
            panic!("accepted")
        };
        assert!(
            m.contains("its size (3 bytes, now 5), its modification time"),
            "{m}"
        );
        let now = SourceId {
            inode: 9,
            ..then.clone()
        };
        let Err(Refusal::Job(m)) = source(&then, &now) else {
            panic!("accepted")
        };
        assert!(m.contains("device and inode"), "{m}");
    }
}
