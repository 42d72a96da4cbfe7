//! [`Cutter`]: the sealed bytes of a resumable upload cut into parts (docs/OBJECTS.md §7) at
//! frame boundaries (a version-1 container's) or before a piece's marker (a pieced one's,
//! FORMAT.md §14.6), uploaded at most `parts_in_flight` at once, and each part the store
//! acknowledges recorded in the journal, in order.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::multipart::PartId;
use object_store::PutPayload;

use super::super::upload::Upload;
use super::super::{block_on, spawn, Object};
use super::record::{to_hex, PartRecord, PieceRecord, Record};
use crate::format::{FrameKind, FRAME_HEADER_LEN};

/// How often, at most, the journal is written while parts are acknowledged.
const JOURNAL_EVERY: Duration = Duration::from_secs(1);

/// A part on its way, and what the journal records of it once it is acknowledged (`None` for
/// the parts of the container's end, which a resume seals again).
struct Sending {
    number: u32,
    task: tokio::task::JoinHandle<object_store::Result<PartId>>,
    record: Option<PartRecord>,
}

/// Where the source's plaintext is, to hash what each part covers (an `encrypt`'s; a
/// rotation's parts are hashed as sent).
pub(super) struct Plain {
    pub(super) file: Arc<File>,
    pub(super) len: u64,
    pub(super) chunk_size: u64,
}

/// The sealed bytes on their way into parts.
pub(super) struct Cutter {
    obj: Arc<Object>,
    upload: Arc<Upload>,
    part_size: usize,
    buf: Vec<u8>,
    /// Cutting at frame ends (the frames of the range); `false` for the container's end.
    in_frames: bool,
    /// The container is pieced: parts are cut before a marker, and hold whole pieces.
    pieced: bool,
    /// The pieces of the part being filled (encoded [`PieceRecord`]s), and the piece whose
    /// frames are being read.
    part_pieces: Vec<u8>,
    piece: Option<PieceRecord>,
    /// The frame header being read, and once it is read the frame's kind, its body length and
    /// the bytes left of it.
    head: Vec<u8>,
    body_left: Option<(Option<FrameKind>, u32, usize)>,
    /// The first chunk of the part being filled, its frames' body lengths, the next chunk.
    part_first_chunk: u64,
    part_lens: Vec<u8>,
    next_chunk: u64,
    next_number: u32,
    in_flight: VecDeque<Sending>,
    /// Every part of the upload so far, acknowledged, with its number.
    done: Vec<(usize, PartId)>,
    /// A part of the end was acknowledged: the journal takes no part after it.
    journal_closed: bool,
    pub(super) record: Record,
    last_store: Instant,
    plain: Option<Plain>,
    sent: Option<Arc<AtomicU64>>,
    /// What the log says a run of this job may have sent under each part number (this run's
    /// parts are added as they are logged): a part sealed again must be byte for byte that.
    before: HashMap<u32, PartRecord>,
    /// Why this run stopped: a part would have gone out with other bytes under a number (so
    /// under nonces) a run before may have sent.
    pub(super) differs: Option<String>,
    /// Bytes handed to the store by this run, and chunks sealed.
    pub(super) uploaded: u64,
    pub(super) chunks: u64,
}

impl Cutter {
    /// A cutter whose first part is number `first_number` and starts with chunk `first_chunk`,
    /// after the parts `done` the store holds.
    pub(super) fn new(
        obj: Arc<Object>,
        upload: Arc<Upload>,
        record: Record,
        done: Vec<(usize, PartId)>,
        (first_number, first_chunk): (u32, u64),
        plain: Option<Plain>,
        sent: Option<Arc<AtomicU64>>,
    ) -> Cutter {
        let part_size = record.part_size as usize;
        Cutter {
            obj,
            upload,
            part_size,
            buf: Vec::with_capacity(part_size),
            in_frames: true,
            pieced: false,
            part_pieces: Vec::new(),
            piece: None,
            head: Vec::with_capacity(FRAME_HEADER_LEN),
            body_left: None,
            part_first_chunk: first_chunk,
            part_lens: Vec::new(),
            next_chunk: first_chunk,
            next_number: first_number,
            in_flight: VecDeque::new(),
            done,
            journal_closed: false,
            record,
            last_store: Instant::now(),
            plain,
            sent,
            before: HashMap::new(),
            differs: None,
            uploaded: 0,
            chunks: 0,
        }
    }

    /// The parts the log says earlier runs may have sent (a resume).
    pub(super) fn with_log(mut self, before: Vec<PartRecord>) -> Self {
        for p in before {
            self.before.entry(p.number).or_insert(p);
        }
        self
    }

    /// The container is pieced (FORMAT.md §14.6): parts end before a piece's marker, once they
    /// hold `part_size` bytes.
    pub(super) fn pieced(mut self) -> Self {
        self.pieced = true;
        self
    }

    /// Bytes that precede the frames (the header), in the first part.
    pub(super) fn write_lead(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Sends what is left as the last part, waits for every part, and returns them all.
    pub(super) fn finish(&mut self) -> io::Result<(Vec<(usize, PartId)>, Record)> {
        if !self.buf.is_empty() {
            self.send(false)?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        let done = std::mem::take(&mut self.done);
        Ok((done, self.record.clone()))
    }

    /// Waits for the parts in flight (an ending job), keeping what the store acknowledged in the
    /// journal, and writes it.
    pub(super) fn settle(&mut self) -> Record {
        while !self.in_flight.is_empty() {
            let _ = self.wait_oldest();
        }
        // An upload a signal aborted has had its journal removed: it is not written again.
        let (upload, record) = (&self.upload, &mut self.record);
        let _ = upload.write_journal(|| record.store());
        self.record.clone()
    }

    /// A frame's header `h`, of a frame of `kind`, was read: a pieced container's part is cut
    /// before a piece's marker or the end marker once it holds `part_size` bytes, and the end
    /// marker (a version-1 container's final frame) begins the container's end.
    fn frame_begins(&mut self, kind: Option<FrameKind>, h: &[u8]) -> io::Result<()> {
        match kind {
            Some(FrameKind::Marker | FrameKind::EndMarker) if self.pieced => {
                if let Some(p) = self.piece.take() {
                    self.part_pieces.extend_from_slice(&p.encode());
                }
                if self.buf.len() >= self.part_size && !self.part_pieces.is_empty() {
                    self.send(true)?;
                }
                self.in_frames = kind == Some(FrameKind::Marker);
            }
            // The container's end (a rotation writes it in the same stream).
            Some(FrameKind::Final) => self.in_frames = false,
            _ => {}
        }
        self.buf.extend_from_slice(h);
        Ok(())
    }

    fn frame_ended(&mut self, kind: Option<FrameKind>, body_len: u32) -> io::Result<()> {
        // A frame's last 16 bytes: a marker's id, a data frame's tag.
        let at = self.buf.len().saturating_sub(16);
        let tail: [u8; 16] = self.buf[at..].try_into().unwrap_or_default();
        if self.pieced && kind == Some(FrameKind::Marker) {
            self.piece = Some(PieceRecord {
                id: tail,
                frames: 0,
                last_tag: [0; 16],
            });
            return Ok(());
        }
        if let Some(p) = &mut self.piece {
            p.frames += 1;
            p.last_tag = tail;
        }
        self.part_lens.extend_from_slice(&body_len.to_le_bytes());
        self.next_chunk += 1;
        self.chunks += 1;
        if !self.pieced && self.buf.len() >= self.part_size {
            self.send(true)?;
        }
        Ok(())
    }

    /// Sends the filled part; `frames`: it ends at a frame boundary and the journal records it.
    fn send(&mut self, frames: bool) -> io::Result<()> {
        if self.upload.ended() {
            return Err(super::super::upload::aborted(&self.obj.url));
        }
        let record = if frames {
            Some(self.part_record()?)
        } else {
            None
        };
        let logged = self.logged(record.as_ref());
        // A pieced part sent again under its number holds new pieces, under keys of their
        // own: other bytes, and never a nonce used before (FORMAT.md §14.6).
        let again = match self.before.get(&logged.number) {
            _ if self.pieced => false,
            Some(b) if b.len == logged.len && b.sealed_blake3 == logged.sealed_blake3 => true,
            Some(b) => {
                let why = format!(
                    "part {} would go out with other bytes ({} bytes, BLAKE3 {}) than an \
                     earlier run may have sent under its number ({} bytes, BLAKE3 {}), so under \
                     the same nonces",
                    logged.number,
                    logged.len,
                    short(&logged.sealed_blake3),
                    b.len,
                    short(&b.sealed_blake3)
                );
                self.differs = Some(why.clone());
                return Err(io::Error::other(why));
            }
            None => false,
        };
        // Room first, then the part: never more than `parts_in_flight` on their way, so that
        // with 1 the parts reach the store one after the other, in order.
        while self.in_flight.len() >= self.obj.opts.parts_in_flight {
            self.wait_oldest()?;
        }
        // Written ahead, and durable, before a byte of the part leaves: whatever happens next
        // (a kill, a lost connection, an answer that never comes), a resume knows it may be
        // at the store or on the wire.
        if !again {
            self.record.log_sent(&logged)?;
            self.before.insert(logged.number, logged);
        }
        let number = self.next_number;
        self.next_number += 1;
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(self.part_size));
        self.uploaded += data.len() as u64;
        let task = spawn(
            self.upload
                .put_part(number as usize - 1, PutPayload::from(data)),
        );
        self.in_flight.push_back(Sending {
            number,
            task,
            record,
        });
        self.part_first_chunk = self.next_chunk;
        self.part_lens.clear();
        self.part_pieces.clear();
        Ok(())
    }

    /// The journal's entry for the part being sent (its ETag once acknowledged): with the
    /// BLAKE3 of its chunks' plaintext (an `encrypt`'s) and of its bytes.
    fn part_record(&self) -> io::Result<PartRecord> {
        let plain_blake3 = match &self.plain {
            Some(p) => {
                let c = p.chunk_size;
                let start = self.part_first_chunk * c;
                let end = (self.next_chunk * c).min(p.len);
                plain_blake3(&p.file, start..end)?
            }
            None => String::new(),
        };
        Ok(PartRecord {
            number: self.next_number,
            etag: String::new(),
            len: self.buf.len() as u64,
            first_chunk: self.part_first_chunk,
            body_lens: to_hex(&self.part_lens),
            plain_blake3,
            sealed_blake3: self.sealed_hash(),
            levels: String::new(),
            end: false,
            pieces: to_hex(&self.part_pieces),
        })
    }

    /// BLAKE3 of the part being sent, hex: what the byte-for-byte rule of a rotation (and of a
    /// version-1 journal) compares a part sent again with. A pieced part is never compared (a
    /// part sent again holds new pieces), so its bytes are not hashed a second time.
    fn sealed_hash(&self) -> String {
        match self.pieced {
            true => String::new(),
            false => blake3::hash(&self.buf).to_hex().to_string(),
        }
    }

    /// The log's entry for the part being sent: the journal's `record` of a part of frames; a
    /// part of the container's end by its bytes alone (the first such part also holds the last
    /// frames, whose chunks are recorded).
    fn logged(&self, record: Option<&PartRecord>) -> PartRecord {
        match record {
            Some(r) => r.clone(),
            None => PartRecord {
                number: self.next_number,
                len: self.buf.len() as u64,
                first_chunk: self.part_first_chunk,
                body_lens: to_hex(&self.part_lens),
                sealed_blake3: self.sealed_hash(),
                end: true,
                pieces: to_hex(&self.part_pieces),
                ..PartRecord::default()
            },
        }
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(s) = self.in_flight.pop_front() else {
            return Ok(());
        };
        // What follows a failed part is not a prefix: the journal stops before it.
        let part = match block_on(s.task) {
            Ok(Ok(part)) => part,
            Ok(Err(e)) => {
                self.journal_closed = true;
                return Err(self.obj.error("upload a part of", e));
            }
            Err(e) => {
                self.journal_closed = true;
                return Err(io::Error::other(format!(
                    "uploading {}: a transfer task failed: {e}",
                    self.obj.url
                )));
            }
        };
        match s.record {
            Some(mut r) if !self.journal_closed => {
                r.etag = part.content_id.trim_matches('"').to_string();
                if let Some(sent) = &self.sent {
                    sent.fetch_add(r.len, Ordering::Relaxed);
                }
                self.record.parts.push(r);
                if self.last_store.elapsed() >= JOURNAL_EVERY {
                    let (upload, record) = (&self.upload, &mut self.record);
                    upload.write_journal(|| record.store())?;
                    self.last_store = Instant::now();
                }
            }
            _ => self.journal_closed = true,
        }
        self.done.push((s.number as usize, part));
        Ok(())
    }
}

impl Write for Cutter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            if !self.in_frames {
                self.buf.extend_from_slice(rest);
                if self.buf.len() >= self.part_size {
                    self.send(false)?;
                }
                return Ok(data.len());
            }
            match self.body_left {
                None => {
                    let n = (FRAME_HEADER_LEN - self.head.len()).min(rest.len());
                    self.head.extend_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    if let Ok(h) = <[u8; FRAME_HEADER_LEN]>::try_from(self.head.as_slice()) {
                        let (kind, len) = crate::format::frame::parse_frame_header(&h);
                        self.head.clear();
                        self.frame_begins(kind, &h)?;
                        if !self.in_frames {
                            // The rest is the container's end, cut by size above.
                        } else if len == 0 {
                            self.frame_ended(kind, 0)?;
                        } else {
                            self.body_left = Some((kind, len, len as usize));
                        }
                    }
                }
                Some((kind, len, left)) => {
                    let n = left.min(rest.len());
                    self.buf.extend_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    if n == left {
                        self.body_left = None;
                        self.frame_ended(kind, len)?;
                    } else {
                        self.body_left = Some((kind, len, left - n));
                    }
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The number of a run's first part, after the kept parts (the first number after them is
/// `after_kept`) and what the log says was `sent`. Past every number a run of the job may have sent (the
/// log's): a part sent again under a number an earlier run used holds other pieces, and a
/// request of that run still on its way (through a proxy that holds whole requests, or one the
/// store had not answered when the connection died) could land after this run's and replace it,
/// so that the completion would name an ETag the store no longer has. S3 and GCS take any
/// ascending numbers up to 10,000; where skipping would not leave room for the rest of the file
/// (a file planned near the limit, resumed many times), numbering goes on after the kept parts.
pub(super) fn first_number(
    after_kept: u32,
    sent: &[PartRecord],
    (len, sealed): (u64, u64),
    part_size: u64,
) -> u32 {
    let fresh = (sent.iter().map(|p| p.number + 1))
        .max()
        .unwrap_or(0)
        .max(after_kept);
    // Parts hold at least `part_size` bytes but the last: a bound, with room for padding.
    let left = (len.saturating_sub(sealed) * 13 / 10).div_ceil(part_size.max(1)) + 2;
    match u64::from(fresh) + left <= MAX_PART_NUMBER {
        true => fresh,
        false => after_kept,
    }
}

/// S3's and GCS's largest part number.
const MAX_PART_NUMBER: u64 = 10_000;

/// The first 16 hex digits of a BLAKE3, for a message.
fn short(hex: &str) -> &str {
    hex.get(..16).unwrap_or(hex)
}

/// BLAKE3 of the bytes `range` of `file`, hex (read by offset, 1 MiB at a time).
pub(super) fn plain_blake3(file: &File, range: std::ops::Range<u64>) -> io::Result<String> {
    let mut h = blake3::Hasher::new();
    each_piece(file, range, |piece| {
        h.update(piece);
        Ok(())
    })?;
    Ok(h.finalize().to_hex().to_string())
}

/// Calls `f` on the bytes `range` of `file` in order, 1 MiB at a time.
pub(super) fn each_piece(
    file: &File,
    range: std::ops::Range<u64>,
    mut f: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = range.start;
    while at < range.end {
        let want = ((range.end - at) as usize).min(buf.len());
        let n = read_at(file, &mut buf[..want], at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the source file became shorter while it was read",
            ));
        }
        f(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `first_number` after the parts `kept` (their numbers), with `sent` logged.
    fn first(kept: &[u32], sent: &[u32], plan: (u64, u64), part_size: u64) -> u32 {
        let sent: Vec<PartRecord> = (sent.iter())
            .map(|&number| PartRecord {
                number,
                ..PartRecord::default()
            })
            .collect();
        first_number(kept.last().map_or(0, |n| *n) + 1, &sent, plan, part_size)
    }

    /// A resumed run numbers its parts past every number a run may have sent, so that a late
    /// request of an earlier run never replaces one of its parts; near S3's 10,000 it goes on
    /// after the kept parts instead.
    #[test]
    fn a_resumed_run_numbers_its_parts_past_every_number_sent() {
        const M: u64 = 1 << 20;
        assert_eq!(first(&[], &[], (100 * M, 0), 5 * M), 1);
        assert_eq!(first(&[1, 2], &[1, 2, 3, 4], (100 * M, 10 * M), 5 * M), 5);
        assert_eq!(first(&[1, 2, 7], &[1, 2, 3, 7], (100 * M, 0), 5 * M), 8);
        // 9,990 numbers used and 20 parts left: no room past them.
        let sent: Vec<u32> = (1..=9990).collect();
        assert_eq!(first(&[1, 2], &sent, (100 * M, 0), 5 * M), 3);
    }
}
