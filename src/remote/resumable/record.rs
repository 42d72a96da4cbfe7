//! What a resumable upload's journal holds (docs/OBJECTS.md §7), as JSON, and how it is kept
//! in the journal store (`crate::resume::journal`).

use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

use crate::resume::journal::{self, Kind};

/// Who a header is for, as a journal compares it (`SealJob::recipients_id`): `passphrase`
/// without recipients, else the BLAKE3 of the recipients' texts, sorted, one per line. The
/// command line and Python compute it alike, so that either resumes the other's upload.
pub fn recipients_id<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let mut texts: Vec<&str> = texts.into_iter().collect();
    if texts.is_empty() {
        return "passphrase".into();
    }
    texts.sort_unstable();
    blake3::hash(texts.join("\n").as_bytes())
        .to_hex()
        .to_string()
}

/// The journal's layout version; another one is refused.
pub(super) const VERSION: u32 = 1;

/// One pending upload. Its `key` is wiped when it is dropped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) version: u32,
    pub(super) url: String,
    pub(super) upload_id: String,
    /// `create` (the object must not exist at completion) or `overwrite`.
    pub(super) replace: String,
    pub(super) source: SourceId,
    /// A rotation's source object: the ETag of the version read, which every read and the
    /// completion are conditional on (`None` for a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) source_etag: Option<String>,
    /// A rotation's source version where the store names one (GCS: its generation), which the
    /// completion is conditional on there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) source_version: Option<String>,
    /// What decides the bytes ([`options_text`]; `rotate` for a rotation).
    pub(super) options: String,
    /// Who the header is for (the front end's fingerprint of its recipients).
    pub(super) recipients: String,
    /// The container's header, hex.
    pub(super) header: String,
    /// The payload key and the header's algorithms (`TaskKey::to_bytes`), hex.
    pub(super) key: String,
    pub(super) part_size: u64,
    /// The random value a GCS upload's object carries in its metadata (own.rs's
    /// `UPLOAD_MARKER`), by which a resumed completion whose answer was lost knows its object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) marker: Option<String>,
    /// The parts the store acknowledged, in order from part 1.
    pub(super) parts: Vec<PartRecord>,
    /// Every part this job sends is first written to the log beside the journal
    /// ([`Record::log_sent`]), synced, before its request starts. A journal without it (an
    /// older zseal's) cannot tell what its runs may have sent beyond its parts.
    #[serde(default)]
    pub(super) sent_log: bool,
    pub(super) created: u64,
    pub(super) updated: u64,
}

impl Drop for Record {
    fn drop(&mut self) {
        self.key.zeroize();
    }
}

/// The source file as it was when the upload began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SourceId {
    pub(super) path: String,
    pub(super) dev: u64,
    pub(super) inode: u64,
    pub(super) size: u64,
    pub(super) mtime_ns: i128,
}

/// One part the store acknowledged: whole frames, from `first_chunk`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PartRecord {
    pub(super) number: u32,
    pub(super) etag: String,
    /// Its bytes (ciphertext; part 1 includes the header).
    pub(super) len: u64,
    pub(super) first_chunk: u64,
    /// Each frame's body length, hex of little-endian u32s.
    pub(super) body_lens: String,
    /// BLAKE3 of the plaintext of its chunks, hex (an `encrypt`'s; empty for a rotation).
    pub(super) plain_blake3: String,
    /// BLAKE3 of the part's bytes as sent, hex (in the journal, a rotation's; in the log of
    /// parts sent, every part's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) sealed_blake3: String,
    /// The compression level of each of its frames, hex of signed bytes (the log of parts sent,
    /// with an adaptive level: a resume that seals these frames again uses the same levels).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) levels: String,
    /// A part of the container's end (in the log of parts sent), not of its frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) end: bool,
    /// A pieced upload's part (FORMAT.md §14.6): the whole pieces it holds, in order, each its
    /// id, its frame count (u32, little-endian) and its last frame's tag, hex of 36 bytes a
    /// piece. Empty in a version-1 upload's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) pieces: String,
}

/// One piece of a part, as the journal lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PieceRecord {
    pub(super) id: [u8; 16],
    pub(super) frames: u32,
    pub(super) last_tag: [u8; 16],
}

/// The bytes of a piece in [`PartRecord::pieces`].
pub(super) const PIECE_RECORD_LEN: usize = 36;

impl PieceRecord {
    pub(super) fn encode(&self) -> [u8; PIECE_RECORD_LEN] {
        let mut b = [0u8; PIECE_RECORD_LEN];
        b[..16].copy_from_slice(&self.id);
        b[16..20].copy_from_slice(&self.frames.to_le_bytes());
        b[20..].copy_from_slice(&self.last_tag);
        b
    }
}

impl PartRecord {
    /// The frames' body lengths.
    pub(super) fn lens(&self) -> io::Result<Vec<u32>> {
        let bytes = from_hex(&self.body_lens).filter(|b| b.len().is_multiple_of(4));
        let bytes = bytes.ok_or_else(|| damaged(&format!("part {}'s frames", self.number)))?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The pieces it holds (none in a version-1 upload's part). Their frames must be the
    /// part's, every one at least one.
    pub(super) fn piece_list(&self) -> io::Result<Vec<PieceRecord>> {
        let bytes = from_hex(&self.pieces).filter(|b| b.len().is_multiple_of(PIECE_RECORD_LEN));
        let bytes = bytes.ok_or_else(|| damaged(&format!("part {}'s pieces", self.number)))?;
        let list: Vec<PieceRecord> = bytes
            .chunks_exact(PIECE_RECORD_LEN)
            .map(|c| PieceRecord {
                id: c[..16].try_into().expect("16 bytes"),
                frames: u32::from_le_bytes([c[16], c[17], c[18], c[19]]),
                last_tag: c[20..].try_into().expect("16 bytes"),
            })
            .collect();
        let frames: u64 = list.iter().map(|p| u64::from(p.frames)).sum();
        if !list.is_empty()
            && (list.iter().any(|p| p.frames == 0) || frames != self.lens()?.len() as u64)
        {
            return Err(damaged(&format!("part {}'s pieces", self.number)));
        }
        Ok(list)
    }
}

/// What a job reads, which decides how its journal names the source and how the completion
/// may replace the object.
pub(super) enum Origin {
    /// A file sealed by an `encrypt` with these options ([`options_text`]); `overwrite` is
    /// `--force`.
    File {
        id: SourceId,
        options: String,
        overwrite: bool,
    },
    /// The object itself, rotated in place (its size, and the ETag and version (GCS: the
    /// generation) of the version read, which the completion must still find).
    Rotated {
        size: u64,
        e_tag: Option<String>,
        version: Option<String>,
    },
}

/// What a rotation journal's `options` say (an `encrypt`'s say what sealed the file).
pub(super) const ROTATE: &str = "rotate";

impl Record {
    /// The journal of a new job into `url` (multipart upload `upload_id`; empty on Azure) that
    /// reads `origin`, for `recipients` (the front end's fingerprint), with the container's
    /// `header` and the `key` its frames are sealed under, in parts of `part_size` bytes; no
    /// part sent yet.
    pub(super) fn new(
        (url, upload_id): (&str, &str),
        origin: Origin,
        recipients: &str,
        (header, key): (&[u8], &[u8]),
        part_size: u64,
    ) -> Record {
        let mut source_version = None;
        let (source, source_etag, options, replace) = match origin {
            Origin::File {
                id,
                options,
                overwrite,
            } => {
                let replace = if overwrite { "overwrite" } else { "create" };
                (id, None, options, replace)
            }
            Origin::Rotated {
                size,
                e_tag,
                version,
            } => {
                source_version = version;
                let object = SourceId {
                    path: url.to_string(),
                    dev: 0,
                    inode: 0,
                    size,
                    mtime_ns: 0,
                };
                (object, e_tag, ROTATE.to_string(), "version")
            }
        };
        Record {
            version: VERSION,
            url: url.to_string(),
            upload_id: upload_id.to_string(),
            replace: replace.to_string(),
            source,
            source_etag,
            source_version,
            options,
            recipients: recipients.to_string(),
            header: to_hex(header),
            key: to_hex(key),
            part_size,
            marker: None,
            parts: Vec::new(),
            sent_log: true,
            created: now(),
            updated: 0,
        }
    }

    /// Writes the journal whole (atomically, 0600).
    pub(super) fn store(&mut self) -> io::Result<()> {
        self.updated = now();
        let bytes = Zeroizing::new(serde_json::to_vec_pretty(&*self).map_err(io::Error::other)?);
        journal::store(Kind::Upload, &self.url, &bytes)?;
        Ok(())
    }

    /// The journal of the upload into `url`, if there is one.
    pub(super) fn load(url: &str) -> io::Result<Option<Record>> {
        match journal::load(Kind::Upload, url)? {
            None => Ok(None),
            Some(bytes) => Record::parse(&Zeroizing::new(bytes), url).map(Some),
        }
    }

    pub(super) fn parse(bytes: &[u8], name: &str) -> io::Result<Record> {
        let r: Record = serde_json::from_slice(bytes)
            .map_err(|e| damaged(&format!("the journal of {name} ({e})")))?;
        if r.version != VERSION {
            return Err(damaged(&format!(
                "the journal of {name} (layout {}, this zseal reads {VERSION})",
                r.version
            )));
        }
        Ok(r)
    }

    /// Makes the (empty) log of parts sent, before the journal is first written.
    pub(super) fn begin_log(&self) -> io::Result<()> {
        // An empty line, which the log's reader leaves out: the file exists, durably.
        journal::append(Kind::Upload, &self.url, "")?;
        Ok(())
    }

    /// Writes `part` to the log of parts sent, durably, before its request starts.
    pub(super) fn log_sent(&self, part: &PartRecord) -> io::Result<()> {
        let line = serde_json::to_string(part).map_err(io::Error::other)?;
        journal::append(Kind::Upload, &self.url, &line)?;
        Ok(())
    }

    /// Every part the log says this job's runs may have sent, in the order they were logged
    /// (`None`: the journal keeps no log, or the log cannot be read, so nothing is known).
    pub(super) fn load_sent(&self) -> io::Result<Option<Vec<PartRecord>>> {
        if !self.sent_log {
            return Ok(None);
        }
        // The log is made before the journal is first written, so a journal without its log
        // (removed by hand, or left by a kill during a removal) knows nothing of what was sent.
        let Some(lines) = journal::load_log(Kind::Upload, &self.url)? else {
            return Ok(None);
        };
        let parsed: Result<Vec<PartRecord>, _> =
            lines.iter().map(|l| serde_json::from_str(l)).collect();
        Ok(parsed.ok())
    }

    /// Removes the journal (the job ended).
    pub(super) fn remove(url: &str) -> io::Result<()> {
        journal::remove(Kind::Upload, url)?;
        Ok(())
    }

    /// The ciphertext bytes the store acknowledged.
    pub(super) fn bytes_sent(&self) -> u64 {
        self.parts.iter().map(|p| p.len).sum()
    }
}

/// The source's identity now.
pub(super) fn source_id(path: &Path, meta: &std::fs::Metadata) -> SourceId {
    #[cfg(unix)]
    let (dev, inode) = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let (dev, inode) = (0, 0);
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    SourceId {
        path: path.display().to_string(),
        dev,
        inode,
        size: meta.len(),
        mtime_ns,
    }
}

/// What decides a container's bytes besides its key: cipher, codec and level, hash, chunk
/// size, padding.
pub(super) fn options_text(opts: &crate::EncryptOptions) -> String {
    let text = format!(
        "cipher {}, compression {}, hash {}, chunk size {}, padding {}",
        opts.cipher,
        opts.codec,
        opts.hash,
        opts.chunk_size,
        if opts.pad { "on" } else { "off" }
    );
    // Said only when set, so that the journals of fixed levels and unsigned files read as
    // they always did. A signed header is journaled: a resume must sign with the same keys.
    let text = match opts.adapt {
        Some((min, max)) => format!("{text}, adaptive level {min}..{max}"),
        None => text,
    };
    match opts.sign.is_empty() {
        true => text,
        false => {
            let keys: Vec<String> = opts.sign.iter().map(|k| k.fingerprint()).collect();
            format!("{text}, signed by {}", keys.join(" "))
        }
    }
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(super) fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn damaged(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{what} cannot be read: end the job with `zseal resume --abort URL` and run the \
             command again"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_frame_lengths_round_trip_and_bad_ones_are_named() {
        assert_eq!(from_hex(&to_hex(&[0, 1, 0xfe])), Some(vec![0, 1, 0xfe]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        let mut p = PartRecord {
            number: 3,
            etag: "e".into(),
            len: 9,
            first_chunk: 0,
            body_lens: to_hex(&[7, 0, 0, 0, 1, 1, 0, 0]),
            plain_blake3: String::new(),
            sealed_blake3: String::new(),
            levels: String::new(),
            end: false,
            pieces: String::new(),
        };
        assert_eq!(p.lens().unwrap(), vec![7, 257]);
        assert_eq!(p.piece_list().unwrap(), vec![], "a version-1 part");
        // Pieces whose frames are the part's two, and ones that are not.
        let piece = |frames: u32| PieceRecord {
            id: [frames as u8; 16],
            frames,
            last_tag: [9; 16],
        };
        let list = [piece(1), piece(1)];
        p.pieces = to_hex(&list.iter().flat_map(|x| x.encode()).collect::<Vec<u8>>());
        assert_eq!(p.piece_list().unwrap(), list);
        for bad in [
            vec![piece(2), piece(1)],
            vec![piece(2), piece(0)],
            vec![piece(1)],
        ] {
            p.pieces = to_hex(&bad.iter().flat_map(|x| x.encode()).collect::<Vec<u8>>());
            let e = p.piece_list().unwrap_err().to_string();
            assert!(e.contains("part 3's pieces"), "{e}");
        }
        p.pieces = "00".into();
        assert!(p.piece_list().is_err());
        p.body_lens = "070000".into();
        let e = p.lens().unwrap_err().to_string();
        assert!(
            e.contains("part 3's frames") && e.contains("resume --abort"),
            "{e}"
        );
    }
}
