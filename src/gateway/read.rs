//! GET: a container opened with the gateway's identities and streamed out chunk by chunk (each
//! authenticated before any of its bytes leaves), a `Range` read through the index (only the
//! frames that hold it). A failure in the first piece is an error status (500); one later ends
//! the body with an error, which closes the connection before Content-Length bytes were sent:
//! the client sees a truncated response.

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use s3s::dto::{Range, StreamingBlob};
use s3s::{s3_error, S3Result};
use tokio::sync::{mpsc, oneshot};
use zeroize::Zeroizing;

use super::backend::Source;
use super::service::{identity_refs, parse_identities};
use super::store::internal;
use crate::{DecryptOptions, Reader, Sealed};

/// What a GET sends: the body, its length, and its Content-Range when a range was asked.
pub struct Opened {
    pub body: StreamingBlob,
    pub len: u64,
    pub content_range: Option<String>,
}

/// Bytes handed to the connection at a time.
const PIECE: usize = 256 << 10;

/// Opens the container `source` with the identity files' keys.
pub fn open(
    source: Box<dyn Source>,
    ids: &[Zeroizing<Vec<u8>>],
) -> S3Result<Reader<Box<dyn Source>>> {
    let ids = parse_identities(ids).map_err(|e| internal("reading the identities", e))?;
    let locked = Sealed::read(source).map_err(|e| internal("reading the object's header", e))?;
    locked
        .unlock(&identity_refs(&ids), &DecryptOptions::default())
        .map_err(|e| internal("opening the object (is -i one of its recipients?)", e))
}

/// The authenticated plaintext length of the container `source` (its final frame).
pub fn plaintext_len(source: Box<dyn Source>, ids: &[Zeroizing<Vec<u8>>]) -> S3Result<u64> {
    open(source, ids)?
        .plaintext_len()
        .map_err(|e| internal("reading the object's length", e))
}

/// Opens the object (`source` gives its container) and starts streaming it (or `range` of it)
/// on a blocking thread, which holds `permit` until it ends.
pub async fn stream(
    source: impl FnOnce() -> S3Result<Box<dyn Source>> + Send + 'static,
    ids: Arc<Vec<Zeroizing<Vec<u8>>>>,
    range: Option<Range>,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> S3Result<Opened> {
    let (head_tx, head_rx) = oneshot::channel();
    let (tx, rx) = mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let started = source().and_then(|s| start(s, &ids, range));
        let (mut reader, span) = match started {
            Ok(s) => s,
            Err(e) => {
                let _ = head_tx.send(Err(e));
                return;
            }
        };
        let _ = head_tx.send(Ok(span.clone()));
        let mut out = Pieces {
            tx,
            buf: Vec::with_capacity(PIECE),
        };
        let copied = match span.range {
            Some((start, end)) => reader.copy_range_to(start, Some(end), &mut out),
            None => reader.copy_to(&mut out),
        };
        let ended = copied.map_err(io::Error::from).and_then(|_| out.flush());
        if let Err(e) = ended {
            // The body ends with an error: hyper closes the connection short of its length.
            eprintln!("zseal serve: reading an object failed mid-way: {e}");
            let _ = out.tx.blocking_send(Err(e));
        }
    });
    let span = head_rx
        .await
        .map_err(|e| internal("a worker stopped", e))??;
    // The first piece is awaited before the answer, so that an object whose first chunk fails
    // gets an error status instead of a connection closed before or after its headers (which
    // one would depend on whether hyper had flushed them: a race).
    let mut rx = rx;
    let first = match span.len {
        0 => None,
        _ => rx.recv().await,
    };
    if let Some(Err(e)) = first {
        return Err(internal(
            "the stored object failed authentication (nothing of it was sent)",
            e,
        ));
    }
    Ok(Opened {
        body: StreamingBlob::wrap(Body { first, rx }),
        len: span.len,
        content_range: span.content_range,
    })
}

/// What a GET covers: the plaintext range (`None`: all of it), its length and Content-Range.
#[derive(Clone)]
struct Span {
    range: Option<(u64, u64)>,
    len: u64,
    content_range: Option<String>,
}

/// Opens the container and resolves the range against its authenticated length.
fn start(
    source: Box<dyn Source>,
    ids: &[Zeroizing<Vec<u8>>],
    range: Option<Range>,
) -> S3Result<(Reader<Box<dyn Source>>, Span)> {
    let mut reader = open(source, ids)?;
    let total = reader
        .plaintext_len()
        .map_err(|e| internal("reading the object's length", e))?;
    let span = match range {
        None => Span {
            range: None,
            len: total,
            content_range: None,
        },
        Some(r) => {
            let outside = || {
                s3_error!(
                    InvalidRange,
                    "the range is outside the object ({total} bytes)"
                )
            };
            let r = r.check(total).map_err(|_| outside())?;
            // A range that selects no byte (any range of an empty object, `bytes=-1` among
            // them) is not satisfiable, as S3 answers it: there is no Content-Range to give.
            if r.end <= r.start {
                return Err(outside());
            }
            Span {
                range: Some((r.start, r.end)),
                len: r.end - r.start,
                content_range: Some(format!("bytes {}-{}/{total}", r.start, r.end - 1)),
            }
        }
    };
    Ok((reader, span))
}

/// A `Write` that hands its bytes to the connection in pieces of [`PIECE`] bytes.
struct Pieces {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl Pieces {
    fn send(&mut self) -> io::Result<()> {
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.tx
            .blocking_send(Ok(Bytes::from(piece)))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for Pieces {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(PIECE - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == PIECE {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.buf.is_empty() {
            true => Ok(()),
            false => self.send(),
        }
    }
}

/// The receiving end as the body's stream, after the piece already taken from it.
struct Body {
    first: Option<io::Result<Bytes>>,
    rx: mpsc::Receiver<io::Result<Bytes>>,
}

impl futures_util::Stream for Body {
    type Item = io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.first.take() {
            Some(piece) => Poll::Ready(Some(piece)),
            None => self.rx.poll_recv(cx),
        }
    }
}
