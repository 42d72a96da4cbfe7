//! [`RemoteReader`]: an object as an `io::Read + io::Seek` source, by ranged GETs.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use object_store::{GetOptions, GetRange, ObjectStoreExt};

pub use crate::io::ReadMode;

use super::{block_on, spawn, Object, Scheme};

/// The smallest GET of a random read: a frame header or a footer costs one request that also
/// brings the start of what follows it.
pub const MIN_FETCH: u64 = 16 << 10;

/// What a reader has fetched: GET requests sent and body bytes received.
#[derive(Debug, Default)]
pub struct FetchStats {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl FetchStats {
    /// GET requests sent (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes received.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

type Pending = tokio::task::JoinHandle<io::Result<Bytes>>;

/// An object read by ranged GETs (see [`ReadMode`]), all of one version of it: every GET carries
/// the ETag the opening HEAD returned (`If-Match`), so an object replaced while it is read fails
/// with a clear error instead of mixing two versions. Memory: at most `parts_in_flight + 2` parts
/// (or the largest single read, when that is larger).
pub struct RemoteReader {
    obj: Arc<Object>,
    len: u64,
    etag: Option<String>,
    /// The version the opening HEAD saw (for a rewrite conditional on it).
    version: super::ObjectVersion,
    mode: ReadMode,
    pos: u64,
    /// Fetched bytes at and after `pos`: their offset and the bytes.
    cur: Option<(u64, Bytes)>,
    /// GETs in flight for the bytes after `cur`, contiguous and in order (the next one starts
    /// where the last ends).
    ahead: VecDeque<(Range<u64>, Pending)>,
    /// A sequential reader's read of the object's last part out of turn (a seek table or an
    /// index read before the start, as an age file with zstd inside is opened), kept aside so
    /// that `cur` and `ahead`, fetched from the start, are not dropped and fetched again.
    aside: Option<(u64, Bytes)>,
    /// Bytes read in the current sequential run (a random reader's read-ahead allowance).
    run: u64,
    /// Bytes the caller said it will read in order ([`RemoteReader::plan_span`]): within them
    /// the reader fetches as a sequential one does, never past their end.
    span: Option<Range<u64>>,
    stats: Arc<FetchStats>,
}

impl RemoteReader {
    pub(super) fn open(obj: Arc<Object>, mode: ReadMode) -> io::Result<Self> {
        let meta = block_on(obj.store.head(&obj.path)).map_err(|e| obj.error("read", e))?;
        // A weak ETag cannot be matched strongly; such a store gets no version check.
        let etag = meta
            .e_tag
            .filter(|t| !t.starts_with("W/") && obj.scheme != Scheme::Http);
        let version = super::ObjectVersion {
            e_tag: etag.clone(),
            version: meta.version,
        };
        Ok(RemoteReader {
            obj,
            len: meta.size,
            etag,
            version,
            mode,
            pos: 0,
            cur: None,
            ahead: VecDeque::new(),
            aside: None,
            run: 0,
            span: None,
            stats: Arc::new(FetchStats::default()),
        })
    }

    /// The object's size.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty object.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The URL read.
    pub fn url(&self) -> &str {
        &self.obj.url
    }

    /// The ETag every GET is conditional on (none for a store without strong ETags).
    pub fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    /// Whether this reader reads the version a HEAD described (its `etag`, weak or strong, and
    /// `len`): by the strong ETag every GET is conditional on, or by the length alone on a store
    /// without strong ETags (a weak one is never kept, so it is not compared).
    pub fn is_version(&self, etag: Option<&str>, len: u64) -> bool {
        match (self.etag(), etag.filter(|t| !t.starts_with("W/"))) {
            (Some(mine), Some(theirs)) => mine == theirs && self.len == len,
            _ => self.len == len,
        }
    }

    /// The version of the object being read, for [`super::Remote::rewriter`].
    pub fn version(&self) -> super::ObjectVersion {
        self.version.clone()
    }

    pub(crate) fn object(&self) -> &Arc<Object> {
        &self.obj
    }

    /// What this reader has fetched so far (shared: it can be read while the reader works).
    pub fn stats(&self) -> Arc<FetchStats> {
        self.stats.clone()
    }

    /// Says that bytes `start..end` will be read in order (a task's range of a container):
    /// within them, parts of `part_size` are fetched with `parts_in_flight` ahead, as in
    /// sequential mode, and nothing past `end` is fetched for them. Reads elsewhere keep the
    /// reader's mode.
    pub fn plan_span(&mut self, start: u64, end: u64) {
        self.span = Some(start..end.min(self.len));
    }

    /// The span the position is in, if any.
    fn in_span(&self) -> Option<Range<u64>> {
        self.span.clone().filter(|r| r.contains(&self.pos))
    }

    /// Starts a GET of `range` on the runtime.
    fn start(&self, range: Range<u64>) -> Pending {
        let obj = self.obj.clone();
        let etag = self.etag.clone();
        let stats = self.stats.clone();
        spawn(fetch(obj, range, etag, stats))
    }

    fn wait(&self, p: Pending) -> io::Result<Bytes> {
        match block_on(p) {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(format!(
                "reading {}: a transfer task failed: {e}",
                self.obj.url
            ))),
        }
    }

    /// A sequential reader's read in the object's last part, after a first read, that neither
    /// continues it nor lands in the part it will read next (`fill` would drop every part in
    /// flight for it, though a later one may hold the position: the object's end is in flight
    /// whenever the object is shorter than the read-ahead): read aside
    /// ([`RemoteReader::aside`]).
    fn out_of_turn(&self) -> bool {
        let part = self.obj.opts.part_size as u64;
        let next = self
            .ahead
            .front()
            .is_some_and(|(r, _)| r.start <= self.pos && self.pos < r.end);
        let continues = self
            .cur
            .as_ref()
            .is_none_or(|(s, b)| s + b.len() as u64 == self.pos);
        self.mode == ReadMode::Sequential
            && self.in_span().is_none()
            && self.pos >= self.len.saturating_sub(part)
            && !next
            && !continues
    }

    fn drop_ahead(&mut self) {
        for (_, p) in self.ahead.drain(..) {
            p.abort();
        }
    }

    /// Makes `cur` hold `pos`, from what is in flight or by a new GET.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        let sequential = self
            .cur
            .as_ref()
            .is_some_and(|(s, b)| s + b.len() as u64 == self.pos);
        // What is in flight serves the read when it starts here.
        if let Some((r, _)) = self.ahead.front() {
            if r.start <= self.pos && self.pos < r.end {
                let (r, p) = self.ahead.pop_front().expect("front exists");
                let bytes = self.wait(p)?;
                self.cur = Some((r.start, bytes));
                return Ok(());
            }
            self.drop_ahead();
        }
        if !sequential {
            self.run = 0;
        }
        let part = self.obj.opts.part_size as u64;
        // Within a planned span, a part as a sequential reader fetches, up to the span's end.
        let span = self.in_span();
        let end_of = |limit: u64| limit.min(self.pos + part.max(want as u64));
        let (start, end) = match (self.mode, span) {
            (ReadMode::Sequential, None) => (self.pos, end_of(self.len)),
            (_, Some(span)) => (self.pos, end_of(span.end)),
            (ReadMode::Random, None) if self.len - self.pos <= MIN_FETCH => {
                (self.len.saturating_sub(MIN_FETCH).min(self.pos), self.len)
            }
            (ReadMode::Random, None) => {
                let size = (want as u64).max(MIN_FETCH);
                (self.pos, self.len.min(self.pos + size))
            }
        };
        let p = self.start(start..end);
        let bytes = self.wait(p)?;
        self.cur = Some((start, bytes));
        Ok(())
    }

    /// Sends read-ahead GETs up to the mode's allowance.
    fn top_up(&mut self) {
        let part = self.obj.opts.part_size as u64;
        let most = self.obj.opts.parts_in_flight as u64 * part;
        let span = self.in_span();
        let allowance = match (self.mode, &span) {
            (_, Some(_)) | (ReadMode::Sequential, None) => most,
            (ReadMode::Random, None) => (self.run / 10).min(most),
        };
        // Within a span, nothing past its end.
        let limit = span.map_or(self.len, |r| r.end);
        let cur_end = self
            .cur
            .as_ref()
            .map_or(self.pos, |(s, b)| s + b.len() as u64);
        let mut next = self.ahead.back().map_or(cur_end, |(r, _)| r.end);
        while next - cur_end < allowance
            && self.ahead.len() < self.obj.opts.parts_in_flight
            && next < limit
        {
            let size = part.min(allowance - (next - cur_end));
            if size < MIN_FETCH && self.mode == ReadMode::Random {
                break;
            }
            let r = next..limit.min(next + size);
            next = r.end;
            let p = self.start(r.clone());
            self.ahead.push_back((r, p));
        }
    }
}

impl Read for RemoteReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.pos >= self.len {
            return Ok(0);
        }
        if !holds(&self.cur, self.pos) {
            if !holds(&self.aside, self.pos) && self.out_of_turn() {
                // From the position (or the last MIN_FETCH bytes) to the end.
                let start = self.pos.min(self.len.saturating_sub(MIN_FETCH));
                // One aside at a time (the memory bound counts one part for it).
                self.aside = None;
                let p = self.start(start..self.len);
                self.aside = Some((start, self.wait(p)?));
            }
            if let Some(n) = copy_out(&self.aside, self.pos, buf) {
                self.pos += n as u64;
                return Ok(n);
            }
            self.fill(buf.len())?;
        }
        // Read-ahead is sent when a read continues the run, on what the run had read before:
        // after a range's last read nothing more is fetched that nobody reads.
        self.top_up();
        let n = copy_out(&self.cur, self.pos, buf).expect("filled");
        self.pos += n as u64;
        self.run += n as u64;
        Ok(n)
    }
}

/// Whether the fetched bytes `held` (their offset and the bytes) hold position `pos`.
fn holds(held: &Option<(u64, Bytes)>, pos: u64) -> bool {
    held.as_ref()
        .is_some_and(|(s, b)| *s <= pos && pos < s + b.len() as u64)
}

/// Copies into `buf` what `held` has from `pos` on; `None` when it does not hold `pos`.
fn copy_out(held: &Option<(u64, Bytes)>, pos: u64, buf: &mut [u8]) -> Option<usize> {
    let (s, b) = held.as_ref().filter(|_| holds(held, pos))?;
    let at = (pos - s) as usize;
    let n = buf.len().min(b.len() - at);
    buf[..n].copy_from_slice(&b[at..at + n]);
    Some(n)
}

impl Seek for RemoteReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )
        })?;
        Ok(self.pos)
    }
}

impl Drop for RemoteReader {
    fn drop(&mut self) {
        self.drop_ahead();
    }
}

/// One ranged GET of a version of the object, its body read whole. Failures the store's own
/// retries do not cover (a body cut off mid-transfer, a short body) are retried here, by the
/// same policy ([`super::store::Retries`]).
async fn fetch(
    obj: Arc<Object>,
    range: Range<u64>,
    etag: Option<String>,
    stats: Arc<FetchStats>,
) -> io::Result<Bytes> {
    use super::store::{retried, Attempt};
    let want = range.end - range.start;
    let (obj, range, etag, stats) = (&obj, &range, &etag, &stats);
    let (result, _) = retried(obj.opts.retry_timeout, move || async move {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: etag.clone(),
            ..GetOptions::default()
        };
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let got = match obj.store.get_opts(&obj.path, opts).await {
            Ok(r) => r.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(b) if b.len() as u64 == want => {
                stats.bytes.fetch_add(want, Ordering::Relaxed);
                Attempt::Done(b)
            }
            Ok(b) => {
                stats.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
                Attempt::Transient(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "reading {}: the store sent {} bytes for a range of {want}",
                        obj.url,
                        b.len()
                    ),
                ))
            }
            Err(e) => {
                let permanent = matches!(
                    e,
                    object_store::Error::NotFound { .. }
                        | object_store::Error::Precondition { .. }
                        | object_store::Error::PermissionDenied { .. }
                        | object_store::Error::Unauthenticated { .. }
                        | object_store::Error::NotSupported { .. }
                );
                let e = obj.error("read", e);
                match permanent {
                    true => Attempt::Failed(e),
                    false => Attempt::Transient(e),
                }
            }
        }
    })
    .await;
    result
}
