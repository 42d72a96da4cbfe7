//! Large reads straight into the caller's memory. A read that covers whole chunks has the workers
//! decompress each of them where its bytes go, instead of into a buffer of the stream's that the
//! calling thread then copies out (that copy, on cores the workers keep busy, cost a read loop
//! about a tenth of the command line's speed: issue 12). The chunks at either end of the read,
//! which it covers only in part, are opened into the stream's buffers and copied as usual; the
//! last one stays current for the next read.
//!
//! The checks are the ordinary path's, in the same order: a chunk is authenticated before a byte
//! of it is written, and the checks across chunks (order, lengths against the index, the digest)
//! run on the calling thread in stream order once the workers are done. On a failure the read
//! returns the bytes of the chunks before the failing one, zeroes the rest of the caller's
//! buffer, and the next read fails, exactly as a read through the window would.
//!
//! No `unsafe`: the jobs borrow the caller's buffer inside a rayon scope, which does not return
//! before every job spawned in it has finished, even when the calling thread unwinds.

use std::io::Read;
use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};

use super::opener::{DataFrame, Landed, Opened, Opener};
use super::ContainerChunks;
use crate::error::{Error, Result};
use crate::hash::{ChunkHash, HashAlg};
use crate::pipeline::chunks::{Chunk, Cursor};
use crate::pipeline::window::{guarded, lost};
use crate::stats::ChunkTimes;

/// Where one chunk of a direct read goes.
enum Target<'a> {
    /// All of the chunk, into this part of the caller's buffer (room for a whole chunk).
    Whole(&'a mut [u8]),
    /// Bytes `skip..` of the chunk, as many as `dest` holds; the chunk itself is opened into
    /// `spare`, a buffer of the stream's.
    Part {
        skip: usize,
        dest: &'a mut [u8],
        spare: Vec<u8>,
    },
}

/// A chunk back from its job.
enum Outcome {
    Whole(Landed),
    /// The chunk opened whole in the stream's buffers, and how many of its bytes were copied.
    Part(Opened, usize),
}

/// What a job sends back: its place in the read, its outcome and the frame buffer to reuse.
type Done = (usize, Result<Outcome>, Vec<u8>);

/// One job: open `frame` into `target`. Returns the outcome and the frame buffer to reuse.
fn run(
    opener: &Opener,
    mut frame: DataFrame,
    target: Target<'_>,
    hash: HashAlg,
) -> (Result<Outcome>, Vec<u8>) {
    match target {
        Target::Whole(dest) => {
            let r = opener.open_chunk_into(&mut frame, hash, dest);
            (r.map(Outcome::Whole), frame.body)
        }
        Target::Part { skip, dest, spare } => {
            let r = opener.open_chunk(frame, hash, spare).map(|o| {
                let n = copy_part(o.bytes(), skip, dest);
                Outcome::Part(o, n)
            });
            (r, Vec::new())
        }
    }
}

/// Copies bytes `skip..` of a chunk to `dest`, as many as fit; returns how many.
fn copy_part(chunk: &[u8], skip: usize, dest: &mut [u8]) -> usize {
    let from = skip.min(chunk.len());
    let n = (chunk.len() - from).min(dest.len());
    dest[..n].copy_from_slice(&chunk[from..from + n]);
    n
}

/// A job handed to whoever runs it: the pool's scope, or the calling thread.
type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

impl<R: Read> ContainerChunks<R> {
    /// Serves `buf` by the direct path when it covers at least one whole chunk from a chunk
    /// boundary on and nothing is in flight or current; `Ok(None)` otherwise (the window serves
    /// it). See the module documentation. A failure is made sticky by the engine's reader.
    pub(super) fn read_whole_chunks(
        &mut self,
        cursor: &mut Cursor,
        buf: &mut [u8],
    ) -> Result<Option<usize>> {
        let c = self.opener.chunk_size();
        let pos = cursor.position;
        let skip = (pos % c as u64) as usize;
        let first_whole = if skip == 0 { 0 } else { c - skip };
        // A pieced file's frames are read through the window alone (FORMAT.md §14: the frame
        // after a chunk's may be a marker, which this path does not read).
        if self.pieces.is_some()
            || !cursor.available().is_empty()
            || !self.drive.window.is_empty()
            || self.frames.next != pos / c as u64
            || !self.frames.more()
            || buf.len() < first_whole + c
        {
            return Ok(None);
        }
        // The chunk the cursor held is behind the frames read from here on: forget it, or a
        // seek back into it would continue with the wrong frame.
        if let Some(old) = cursor.take() {
            self.drive.recycle(old.buf);
        }
        // On a failure `direct` zeroed what it had written.
        Ok(Some(self.direct(cursor, buf, skip)?).filter(|&n| n > 0))
    }

    fn direct(&mut self, cursor: &mut Cursor, buf: &mut [u8], skip: usize) -> Result<usize> {
        let opener = Arc::clone(&self.opener);
        let hash = self.verifier.chunk_hash();
        let limit = self.drive.window.limit();
        let (results, stopped) = match self.drive.window.pool()? {
            Some(pool) => pool.in_place_scope_fifo(|s| {
                self.feed(&mut *buf, skip, &opener, hash, limit, &mut |job| {
                    s.spawn_fifo(move |_| job())
                })
            }),
            None => self.feed(&mut *buf, skip, &opener, hash, limit, &mut |job| job()),
        };
        // In stream order, as the window would release them.
        let c = opener.chunk_size();
        let first = cursor.position / c as u64;
        let mut n = 0;
        let mut failure = stopped;
        let mut kept = None;
        for (k, r) in results.into_iter().enumerate() {
            let index = first + k as u64;
            let at = if k == 0 { 0 } else { k * c - skip };
            let checked = r.and_then(|outcome| match outcome {
                Outcome::Whole(l) => {
                    self.accept(index, &buf[at..at + l.len], &l.hash, &l.times)?;
                    Ok(l.len)
                }
                Outcome::Part(o, copied) => {
                    self.accept(index, o.bytes(), &o.hash, &o.times)?;
                    let (chunk, spare) = self.chunk_of(o);
                    self.drive.recycle(spare);
                    if let Some(old) = kept.replace(chunk) {
                        self.drive.recycle(old.buf);
                    }
                    Ok(copied)
                }
            });
            match checked {
                Ok(len) => n = at + len,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(k) = kept {
            self.drive.load(cursor, k);
        }
        cursor.advance(n);
        if let Some(e) = failure {
            buf[n..].fill(0);
            if n == 0 {
                return Err(e);
            }
            // The bytes before the failure are returned; the failure comes with the next read.
            self.frames.ended = true;
            self.drive.window.push_done(Err(e));
        }
        Ok(n)
    }

    /// Reads the data frames `buf` covers (at most `limit` open at a time) and hands each to
    /// `spawn` as a job; waits for them all. Returns each job's outcome in stream order, and
    /// the failure that stopped the reading early, if one did.
    fn feed<'a>(
        &mut self,
        buf: &'a mut [u8],
        skip: usize,
        opener: &'a Opener,
        hash: HashAlg,
        limit: usize,
        spawn: &mut dyn FnMut(Job<'a>),
    ) -> (Vec<Result<Outcome>>, Option<Error>) {
        let c = opener.chunk_size();
        let (tx, rx): (Sender<Done>, Receiver<Done>) = unbounded();
        let mut results: Vec<Option<Result<Outcome>>> = Vec::new();
        let mut in_flight = 0;
        // Waits for the next job to answer; its frame buffer goes back to the spares.
        let collect = |this: &mut Self, results: &mut [Option<Result<Outcome>>]| {
            if let Ok((k, r, body)) = rx.recv() {
                results[k] = Some(r);
                this.drive.recycle(body);
            }
        };
        let mut rest = buf;
        let mut head = skip;
        let mut stopped = None;
        while !rest.is_empty() && self.frames.more() {
            let take = (c - head).min(rest.len());
            if let Some(k) = self.take_kept() {
                // Not decrypted again: copied from the chunk kept, its frame read past.
                let (dest, tail) = std::mem::take(&mut rest).split_at_mut(take);
                rest = tail;
                results.push(Some(self.skip_to_kept(k, head, dest)));
                head = 0;
                continue;
            }
            match self.frames.peek_kind() {
                Ok(kind) if !kind.is_data() => break,
                Ok(_) => {}
                Err(e) => {
                    stopped = Some(e);
                    break;
                }
            }
            while in_flight >= limit {
                collect(self, &mut results);
                in_flight -= 1;
            }
            let frame = match self.read_data_frame() {
                Ok(f) => f,
                Err(e) => {
                    stopped = Some(e);
                    break;
                }
            };
            let (dest, tail) = std::mem::take(&mut rest).split_at_mut(take);
            rest = tail;
            let target = if head == 0 && take == c {
                Target::Whole(dest)
            } else {
                Target::Part {
                    skip: head,
                    dest,
                    spare: self.chunk_spare(),
                }
            };
            head = 0;
            let k = results.len();
            results.push(None);
            self.drive.opened += 1;
            let tx = tx.clone();
            spawn(Box::new(move || {
                let (r, body) = guarded(|| Ok(run(opener, frame, target, hash)))
                    .unwrap_or_else(|e| (Err(e), Vec::new()));
                // The receiver lives until every job has answered.
                let _ = tx.send((k, r, body));
            }));
            in_flight += 1;
        }
        while in_flight > 0 {
            collect(self, &mut results);
            in_flight -= 1;
        }
        let results = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(lost())))
            .collect();
        (results, stopped)
    }

    /// The chunk kept from before the last seek, when it is the next to read and no digest is
    /// being computed (a kept chunk carries no hash). fsspec's `read_block` seeks to a block's
    /// end to find a delimiter before it reads the block: the chunk found there is kept by the
    /// seek back, and is the last one the block's read needs.
    fn take_kept(&mut self) -> Option<Chunk> {
        let c = self.opener.chunk_size() as u64;
        let next = self.frames.next;
        if self.verifier.has_digest() || self.kept.as_ref()?.start != next * c {
            return None;
        }
        self.kept.take()
    }

    /// Reads past the frame of kept chunk `k` (checked against the index as any frame is) and
    /// copies bytes `skip..` of it to `dest`.
    fn skip_to_kept(&mut self, k: Chunk, skip: usize, dest: &mut [u8]) -> Result<Outcome> {
        let index = self.frames.next;
        let (kind, body_len) = self.frames.read_header()?;
        if !kind.is_data() {
            return Err(Error::Bug(format!(
                "chunk {index} was kept, but frame {index} holds none"
            )));
        }
        self.frames.skip_body(body_len)?;
        self.verifier.frame_read(body_len);
        let n = copy_part(&k.buf[k.bytes.clone()], skip, dest);
        let opened = Opened {
            index,
            plain: k.buf,
            content: k.bytes,
            spare: Vec::new(),
            hash: ChunkHash::default(),
            times: ChunkTimes::default(),
            piece_end: None,
        };
        Ok(Outcome::Part(opened, n))
    }
}
