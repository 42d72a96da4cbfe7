//! A crypt4gh file's chunks as the engine's reader sees them (FORMAT.md §13.5): the segments'
//! stored plaintext, and, when the header holds an edit list, only the runs it keeps, at their
//! offsets in the output. Without an edit list the segments are released as they are (no copy);
//! with one, each run of segments back from the workers is mapped to the kept bytes it holds,
//! which are contiguous in the output. A seek or range maps output offsets to stored ones, so
//! that only the segments holding kept bytes of the range are read.

use std::io::{Read, Seek};
use std::ops::Range;
use std::time::Duration;

use super::super::chunks::{Chunk, Cursor};
use super::super::options::DecryptOptions;
use super::super::segments::Segments;
use super::super::source::{ChunkSource, Promises, SeekSource};
use super::signed::Signed;
use super::C4ghSegments;
use crate::crypto::c4gh::PublicKey;
use crate::crypto::sign::{Signature, Signers};
use crate::error::Result;
use crate::format::crypt4gh::EditList;
use crate::stats::StreamStats;

/// The authenticated chunks of a crypt4gh file read from `R`, through its edit list.
pub struct C4ghChunks<R: Read> {
    segments: Segments<R, C4ghSegments>,
    edit: Option<Edit>,
    writers: Vec<PublicKey>,
    signed: Signed,
}

/// An edit list at work.
struct Edit {
    list: EditList,
    /// The kept runs of the stored plaintext, each with the output offset it starts at. Until
    /// the stored length is known (a pipe's end, a seekable input's length), computed as if the
    /// data went on for ever; checked against the length then (§13.5's "past the end").
    runs: Vec<(Range<u64>, u64)>,
    /// The stored plaintext's own cursor: the segments' chunks arrive here first.
    stored: Cursor,
    /// A buffer for the next output chunk (the one the reader's cursor gave back).
    spare: Vec<u8>,
}

impl Edit {
    fn new(list: EditList, stored_len: u64) -> Result<Edit> {
        let mut at = 0;
        let runs = list
            .kept_runs(stored_len)?
            .into_iter()
            .map(|r| {
                let o = at;
                at += r.end - r.start;
                (r, o)
            })
            .collect();
        Ok(Edit {
            list,
            runs,
            stored: Cursor::new(),
            spare: Vec::new(),
        })
    }

    /// Checks the list against the stored length `n` and maps with the real runs from now on.
    fn fix_len(&mut self, n: u64) -> Result<u64> {
        let out = self.list.output_len(n)?;
        let fixed = Edit::new(self.list.clone(), n)?;
        self.runs = fixed.runs;
        Ok(out)
    }

    /// The kept bytes of `chunk` (stored plaintext), copied into one output chunk; `None` when
    /// it holds none.
    fn map(&mut self, chunk: &Chunk) -> Option<Chunk> {
        let (s, data) = (chunk.start, &chunk.buf[chunk.bytes.clone()]);
        let end = s + data.len() as u64;
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        let mut start = None;
        let first = self.runs.partition_point(|(r, _)| r.end <= s);
        for (r, o) in self.runs[first..].iter().take_while(|(r, _)| r.start < end) {
            let (lo, hi) = (r.start.max(s), r.end.min(end));
            start.get_or_insert(o + (lo - r.start));
            out.extend_from_slice(&data[(lo - s) as usize..(hi - s) as usize]);
        }
        match start {
            Some(start) => Some(Chunk {
                bytes: 0..out.len(),
                buf: out,
                start,
            }),
            None => {
                self.spare = out;
                None
            }
        }
    }

    /// The stored offset of output offset `pos` (the stored end past the last run).
    fn stored_at(&self, pos: u64, stored_len: u64) -> u64 {
        let i = self
            .runs
            .partition_point(|(r, o)| o + (r.end - r.start) <= pos);
        match self.runs.get(i) {
            Some((r, o)) => r.start + (pos - o),
            None => stored_len,
        }
    }
}

impl<R: Read> C4ghChunks<R> {
    pub(crate) fn new(
        segments: Segments<R, C4ghSegments>,
        edit: Option<EditList>,
        writers: Vec<PublicKey>,
        opts: &DecryptOptions,
    ) -> Result<Self> {
        Ok(C4ghChunks {
            segments,
            edit: edit.map(|l| Edit::new(l, u64::MAX)).transpose()?,
            writers,
            signed: Signed::new(&opts.signers),
        })
    }

    /// Hashes the plaintext as it is released, for [`Self::statement`] (call before reading;
    /// on when signers are required).
    pub fn hash_for_statement(&mut self) {
        self.signed.hash();
    }

    /// The detached signature (`FILE.c4gh.sig`, FORMAT.md §13.9) that the signers required by
    /// the options must have made over the statement: checked at the end of the read, which
    /// fails without it.
    pub fn require_signature(&mut self, signature: Signature) -> Result<()> {
        self.signed.set_signature(signature)
    }

    /// §12.1's statement of the plaintext (its length and BLAKE3, after the edit list), once the
    /// whole file was read from its first byte with hashing on.
    pub fn statement(&self) -> Option<String> {
        self.signed.statement().map(str::to_string)
    }

    /// The good signature by a required signer and who made it, once the read ended.
    pub fn good_signature(&self) -> Option<&Signature> {
        self.signed.by().map(|(s, _)| s)
    }

    /// Who made the good signature, once the read ended.
    pub fn signer(&self) -> Option<&str> {
        self.signed.by().map(|(_, who)| who.as_str())
    }

    /// Checks `signature`, made apart over [`Self::statement`], against `signers`.
    pub fn check_detached(&self, signers: &Signers, signature: &Signature) -> Result<String> {
        self.signed.check_detached(signers, signature)
    }

    /// The distinct writer keys of the packets the reader's identities opened (more than one
    /// may mean an added packet, FORMAT.md §13.10).
    pub fn writer_keys(&self) -> &[PublicKey] {
        &self.writers
    }

    /// The edit list the header holds, if any.
    pub fn edit_list(&self) -> Option<&EditList> {
        self.edit.as_ref().map(|e| &e.list)
    }

    /// The next chunk, hashed for the statement; at the end, the statement and its signature.
    fn advance_signed(&mut self, cursor: &mut Cursor) -> Result<bool> {
        if self.advance_edited(cursor)? {
            self.signed.update(cursor.available());
            return Ok(true);
        }
        let len = self.verified_len(cursor);
        self.signed.end(len)?;
        Ok(false)
    }

    /// Through the edit list: the next stored chunk that holds kept bytes.
    fn advance_edited(&mut self, cursor: &mut Cursor) -> Result<bool> {
        let Some(e) = self.edit.as_mut() else {
            return self.segments.advance(cursor);
        };
        loop {
            if !self.segments.advance(&mut e.stored)? {
                // The end: the list is checked against what the data turned out to hold.
                if let Some(n) = self.segments.verified_len(&e.stored) {
                    e.fix_len(n)?;
                }
                return Ok(false);
            }
            let Some(chunk) = e.stored.take() else {
                continue;
            };
            let out = e.map(&chunk);
            // Back where the segment reader recycles it.
            e.stored.load(chunk);
            if let Some(out) = out {
                e.spare = cursor.load(out);
                return Ok(true);
            }
        }
    }
}

impl<R: Read> ChunkSource for C4ghChunks<R> {
    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        self.advance_signed(cursor)
    }

    /// Its segments, once its last one was read (by a read to the end or a seek).
    fn verified_chunks(&self) -> Option<u64> {
        self.segments.verified_chunks()
    }

    /// When signers were required: a range reads the whole file, in order.
    fn requires_signer(&self) -> bool {
        self.signed.is_required()
    }

    /// The warning [`Self::writer_keys`] calls for, if any.
    fn header_warning(&self) -> Option<String> {
        super::writer_keys_warning(&self.writers)
    }

    fn write_time(&mut self) -> &mut Duration {
        self.segments.write_time()
    }

    fn promises(&self) -> Promises {
        self.segments.promises()
    }

    fn stats(&self) -> StreamStats {
        self.segments.stats()
    }

    fn header_len(&self) -> u64 {
        self.segments.header_len()
    }

    /// After the edit list.
    fn verified_len(&self, cursor: &Cursor) -> Option<u64> {
        match &self.edit {
            None => self.segments.verified_len(cursor),
            Some(e) => {
                let n = self.segments.verified_len(&e.stored)?;
                e.list.output_len(n).ok()
            }
        }
    }
}

impl<R: Read + Seek> SeekSource for C4ghChunks<R> {
    /// The last segment and the edit list are checked before anything is released (FORMAT.md
    /// §13.11).
    fn use_index(&mut self, cursor: &mut Cursor) -> Result<()> {
        self.plaintext_len(cursor).map(|_| ())
    }

    /// Once the last segment fixed the shape, the workers read the segments by offset
    /// (`Segments::read_jobs_from`).
    fn read_bodies_from(
        &mut self,
        file: std::fs::File,
        count: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<()> {
        self.segments.read_jobs_from(file, count)
    }

    /// From the authenticated last segment, through the edit list (checked against it).
    fn plaintext_len(&mut self, cursor: &mut Cursor) -> Result<u64> {
        match self.edit.as_mut() {
            None => self.segments.plaintext_len(cursor),
            Some(e) => {
                let n = self.segments.plaintext_len(&mut e.stored)?;
                e.fix_len(n)
            }
        }
    }

    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        self.signed.forget();
        if self.edit.is_none() {
            return self.segments.reposition(cursor, pos);
        }
        self.plaintext_len(cursor)?;
        let e = self.edit.as_mut().expect("an edit list");
        let n = self.segments.plaintext_len(&mut e.stored)?;
        let at = e.stored_at(pos, n);
        self.segments.reposition(&mut e.stored, at)?;
        cursor.reset(pos);
        Ok(())
    }

    /// Reads no segment past the one holding the stored byte of output byte `end - 1`.
    fn limit_read_ahead(&mut self, cursor: &mut Cursor, end: Option<u64>) -> Result<()> {
        if self.edit.is_none() {
            return self.segments.limit_read_ahead(cursor, end);
        }
        self.plaintext_len(cursor)?;
        let e = self.edit.as_mut().expect("an edit list");
        let n = self.segments.plaintext_len(&mut e.stored)?;
        let stored_end = match end {
            None => None,
            Some(0) => Some(0),
            Some(end) => Some(e.stored_at(end - 1, n) + 1),
        };
        self.segments.limit_read_ahead(&mut e.stored, stored_end)
    }
}
