//! One object written by many processes (FORMAT.md §11.3): the part plan, a task's
//! [`PartWriter`] (its head kept, its body uploaded under the part numbers reserved for it, its
//! tail kept) and the coordinator's [`SharedUpload`], which uploads the seams between the
//! bodies and completes the upload, on its condition, from every part's number and ETag.
//!
//! A task holds at most its 5 MiB head, the part being filled and one part in flight; the
//! coordinator one seam piece.

use std::io::{self, Write};
use std::sync::Arc;

use object_store::multipart::{MultipartStore, PartId};
use object_store::PutPayload;
use serde::{Deserialize, Serialize};

use super::{block_on, spawn, Object, Remote};

mod seams;
pub use seams::SharedUpload;

const MIB: u64 = 1 << 20;
/// S3's smallest part but the last; a task's head.
pub const HEAD_LEN: u64 = 5 * MIB;
/// The smallest part size zseal plans.
const MIN_PART_SIZE: u64 = 8 * MIB;
/// S3's largest part.
const MAX_PART_SIZE: u64 = 5 << 30;
/// S3's (and GCS's) part numbers: 1 to 10,000.
const MAX_NUMBER: u64 = 10_000;
/// The most tasks one object can be sealed by: each needs at least three numbers.
pub const MAX_TASKS: usize = 3333;

/// How an object written by `tasks` tasks is cut into parts: every task's body parts are
/// `part_size` bytes and number at most `body_parts` (FORMAT.md §11.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartPlan {
    /// How many tasks (`T`).
    pub tasks: u32,
    /// Each body part's length (`S`).
    pub part_size: u64,
    /// The most body parts a task has (`B`).
    pub body_parts: u32,
}

impl PartPlan {
    /// The plan for tasks whose sealed output is at most `most` bytes each (the largest task's
    /// `W(L)`): `S = max(8 MiB, ⌈most / (⌊9,999 / T⌋ − 2)⌉)` rounded up to a MiB,
    /// `B = ⌈most / S⌉`. More than [`MAX_TASKS`] tasks, or a part over 5 GiB, is refused.
    pub fn new(tasks: usize, most: u64) -> io::Result<PartPlan> {
        if tasks == 0 || tasks > MAX_TASKS {
            return Err(invalid(format!(
                "{tasks} tasks: one object is sealed by 1 to {MAX_TASKS} tasks (S3's 10,000 \
                 parts give each task at least three part numbers); use fewer tasks"
            )));
        }
        let per_task = (MAX_NUMBER - 1) / tasks as u64 - 2;
        let part_size = most
            .div_ceil(per_task)
            .max(MIN_PART_SIZE)
            .next_multiple_of(MIB);
        if part_size > MAX_PART_SIZE {
            return Err(invalid(format!(
                "{tasks} tasks of up to {most} sealed bytes each need parts of {part_size} \
                 bytes, over S3's 5 GiB: the object is past what one upload can hold"
            )));
        }
        Ok(PartPlan {
            tasks: tasks as u32,
            part_size,
            body_parts: most.div_ceil(part_size) as u32,
        })
    }

    /// The plan for a container whose tasks seal the plaintext ranges `ranges` (as
    /// `SplitSeal::ranges` gives them) in chunks of `chunk_size`: `W(L) = ⌈L/C⌉·(C + 26)`.
    pub fn for_ranges(ranges: &[(u64, u64, u64)], chunk_size: usize) -> io::Result<PartPlan> {
        let c = chunk_size as u64;
        let most = ranges
            .iter()
            .map(|&(_, a, b)| (b - a).div_ceil(c) * (c + 26))
            .max()
            .unwrap_or(0);
        PartPlan::new(ranges.len(), most)
    }

    /// The plan for an object of `len` bytes known in advance (a plaintext written by many
    /// tasks, FORMAT.md §11.4): parts of `S = max(8 MiB, ⌈len / 10,000⌉)` rounded up to a MiB
    /// and to a multiple of `align` (a chunk size, a power of two), numbered by their offset;
    /// and each of at most `tasks` tasks' byte range, a whole number of parts but the last.
    /// An empty object is one task with one empty part.
    pub fn aligned(len: u64, align: u64, tasks: usize) -> io::Result<(PartPlan, Vec<(u64, u64)>)> {
        let part_size = len
            .div_ceil(MAX_NUMBER)
            .max(MIN_PART_SIZE)
            .next_multiple_of(MIB)
            .next_multiple_of(align.max(1));
        if part_size > MAX_PART_SIZE {
            return Err(invalid(format!(
                "{len} bytes need parts of {part_size} bytes, over S3's 5 GiB"
            )));
        }
        let parts = len.div_ceil(part_size).max(1);
        let tasks = (tasks.max(1) as u64).min(parts);
        let ranges: Vec<(u64, u64)> = (0..tasks)
            .map(|k| (parts * k / tasks, parts * (k + 1) / tasks))
            .map(|(a, b)| ((a * part_size).min(len), (b * part_size).min(len)))
            .collect();
        let most = (0..tasks)
            .map(|k| parts * (k + 1) / tasks - parts * k / tasks)
            .max()
            .unwrap_or(1);
        Ok((
            PartPlan {
                tasks: tasks as u32,
                part_size,
                body_parts: most as u32,
            },
            ranges,
        ))
    }

    /// The first number of task `k`'s block (`n_k`): two seam numbers, then its body's.
    fn block(&self, k: usize) -> usize {
        k * (self.body_parts as usize + 2) + 1
    }
}

/// What a task needs to upload its body: the object, the upload's id, its number and the
/// plan. No secret (an upload id lets its holder add parts, as the credentials already do).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartTicket {
    /// The object's URL.
    pub url: String,
    /// The multipart upload's id.
    pub upload_id: String,
    /// The task's number, from 0.
    pub task: u32,
    /// The upload's part plan.
    pub plan: PartPlan,
    /// For an object whose parts are numbered by offset ([`PartPlan::aligned`]): the task's
    /// first part number; it then keeps no head and sends its last bytes as its last part.
    #[serde(default)]
    pub first_number: Option<u32>,
}

impl PartTicket {
    /// As bytes (JSON), for the task's arguments.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The ticket [`PartTicket::to_bytes`] gave.
    pub fn from_bytes(b: &[u8]) -> io::Result<PartTicket> {
        serde_json::from_slice(b)
            .map_err(|e| invalid(format!("not a part ticket from SharedUpload::ticket: {e}")))
    }
}

/// What a task returns: its head and tail (for the seams), and its body's parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskParts {
    /// The task's number.
    pub task: u32,
    /// Its output's first 5 MiB (all of it without a body).
    pub head: Vec<u8>,
    /// What followed its last body part.
    pub tail: Vec<u8>,
    /// Each body part's number and ETag (content id), in order.
    pub body: Vec<(u32, String)>,
}

const PARTS_MAGIC: &[u8; 8] = b"zsPARTS\x01";

impl TaskParts {
    /// The bytes sent: head and tail, plus every body part.
    pub fn len(&self, plan: &PartPlan) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.body.len() as u64 * plan.part_size
    }

    /// True when the task wrote nothing.
    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty() && self.body.is_empty()
    }

    /// As bytes, for a task in another process to return.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.head.len() + self.tail.len() + 64);
        b.extend_from_slice(PARTS_MAGIC);
        b.extend_from_slice(&self.task.to_le_bytes());
        for part in [&self.head, &self.tail] {
            b.extend_from_slice(&(part.len() as u64).to_le_bytes());
            b.extend_from_slice(part);
        }
        b.extend_from_slice(&(self.body.len() as u32).to_le_bytes());
        for (n, etag) in &self.body {
            b.extend_from_slice(&n.to_le_bytes());
            b.extend_from_slice(&(etag.len() as u32).to_le_bytes());
            b.extend_from_slice(etag.as_bytes());
        }
        b
    }

    /// The parts [`TaskParts::to_bytes`] gave.
    pub fn from_bytes(b: &[u8]) -> io::Result<TaskParts> {
        let bad = || invalid("not a task's parts from PartWriter::finish".into());
        let mut r = Bytes(b);
        if r.take(8).ok_or_else(bad)? != PARTS_MAGIC {
            return Err(bad());
        }
        let task = r.u32().ok_or_else(bad)?;
        let head_len = r.u64().ok_or_else(bad)?;
        let head = r.take(head_len).ok_or_else(bad)?.to_vec();
        let tail_len = r.u64().ok_or_else(bad)?;
        let tail = r.take(tail_len).ok_or_else(bad)?.to_vec();
        let n = r.u32().ok_or_else(bad)?;
        let mut body = Vec::new();
        for _ in 0..n {
            let number = r.u32().ok_or_else(bad)?;
            let len = r.u32().ok_or_else(bad)?;
            let etag =
                std::str::from_utf8(r.take(u64::from(len)).ok_or_else(bad)?).map_err(|_| bad())?;
            body.push((number, etag.to_string()));
        }
        if !r.0.is_empty() {
            return Err(bad());
        }
        Ok(TaskParts {
            task,
            head,
            tail,
            body,
        })
    }
}

/// A little-endian reader over a byte slice.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok().filter(|&n| n <= self.0.len())?;
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
}

type InFlight = (u32, tokio::task::JoinHandle<object_store::Result<PartId>>);

/// Part uploads to an upload another process started, one in flight while the next fills.
struct Parts {
    obj: Arc<Object>,
    store: Arc<dyn MultipartStore>,
    id: String,
    in_flight: Option<InFlight>,
    done: Vec<(u32, String)>,
}

impl Parts {
    fn new(obj: Arc<Object>, id: String) -> io::Result<Parts> {
        let store = obj.multipart.clone().ok_or_else(|| read_only(&obj.url))?;
        Ok(Parts {
            obj,
            store,
            id,
            in_flight: None,
            done: Vec::new(),
        })
    }

    /// Sends `data` as part `number` once the part before it is up.
    fn send(&mut self, number: u32, data: Vec<u8>) -> io::Result<()> {
        self.wait()?;
        let (store, path, id) = (self.store.clone(), self.obj.path.clone(), self.id.clone());
        let idx = number as usize - 1;
        let payload = PutPayload::from(data);
        let h = spawn(async move { store.put_part(&path, &id, idx, payload).await });
        self.in_flight = Some((number, h));
        Ok(())
    }

    fn wait(&mut self) -> io::Result<()> {
        let Some((number, h)) = self.in_flight.take() else {
            return Ok(());
        };
        match block_on(h) {
            Ok(Ok(part)) => {
                self.done.push((number, part.content_id));
                Ok(())
            }
            Ok(Err(e)) => Err(self.obj.error("upload a part of", e)),
            Err(e) => Err(io::Error::other(format!(
                "uploading {}: a transfer task failed: {e}",
                self.obj.url
            ))),
        }
    }
}

/// A task's sink: keeps the first 5 MiB, uploads each following `part_size` bytes as the next
/// of its body's numbers, and keeps the rest ([`PartWriter::finish`]).
pub struct PartWriter {
    ticket: PartTicket,
    parts: Parts,
    head: Vec<u8>,
    buf: Vec<u8>,
    sent: u32,
}

impl PartWriter {
    /// A writer for the task `ticket` names, to the object at its URL (credentials from the
    /// environment, as the command line's, and `settings` over them: see
    /// [`Remote::with_settings`]).
    pub fn new(ticket: &PartTicket, settings: &[(String, String)]) -> io::Result<PartWriter> {
        let opts = super::TransferOptions::from_env()?;
        let remote = Remote::with_settings(&ticket.url, opts, settings)?;
        let head = match ticket.first_number {
            Some(_) => Vec::new(),
            None => Vec::with_capacity(HEAD_LEN as usize),
        };
        Ok(PartWriter {
            ticket: ticket.clone(),
            parts: Parts::new(remote.inner, ticket.upload_id.clone())?,
            head,
            buf: Vec::new(),
            sent: 0,
        })
    }

    /// The number of the task's next part.
    fn next_number(&self) -> u32 {
        let first = self
            .ticket
            .first_number
            .unwrap_or_else(|| (self.ticket.plan.block(self.ticket.task as usize) + 2) as u32);
        first + self.sent
    }

    /// Waits for the last part and returns what the coordinator needs.
    pub fn finish(mut self) -> io::Result<TaskParts> {
        if self.ticket.first_number.is_some() && (!self.buf.is_empty() || self.sent == 0) {
            // Numbered by offset: the rest is the object's last part (or its only one).
            let number = self.next_number();
            self.sent += 1;
            let rest = std::mem::take(&mut self.buf);
            self.parts.send(number, rest)?;
        }
        self.parts.wait()?;
        Ok(TaskParts {
            task: self.ticket.task,
            head: self.head,
            tail: self.buf,
            body: self.parts.done,
        })
    }
}

impl Write for PartWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.ticket.first_number.is_none() && (self.head.len() as u64) < HEAD_LEN {
            let n = data.len().min(HEAD_LEN as usize - self.head.len());
            self.head.extend_from_slice(&data[..n]);
            return Ok(n);
        }
        let plan = self.ticket.plan;
        let size = plan.part_size as usize;
        if self.buf.capacity() < size {
            self.buf.reserve_exact(size - self.buf.len());
        }
        let n = data.len().min(size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == size {
            if self.sent == plan.body_parts {
                return Err(invalid(format!(
                    "task {} wrote more than its {} parts of {} bytes: the plan does not fit its \
                     range",
                    self.ticket.task, plan.body_parts, plan.part_size
                )));
            }
            let number = self.next_number();
            self.sent += 1;
            let full = std::mem::replace(&mut self.buf, Vec::with_capacity(size));
            self.parts.send(number, full)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn read_only(url: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{url}: this store is read-only; write to s3://, gs:// or az:// instead"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_follows_the_formula_and_keeps_to_10000_numbers() {
        // 100 GB in 100 tasks of 8 MiB chunks (FORMAT.md §11.3).
        let c = 8u64 << 20;
        let most = 1_000_000_000u64.div_ceil(c) * (c + 26);
        let p = PartPlan::new(100, most).unwrap();
        assert_eq!((p.part_size, p.body_parts), (10 * MIB, 97));
        assert_eq!(p.block(100), 9901);
        for tasks in [1, 2, 7, 100, 1000, MAX_TASKS] {
            for most in [0, 1, 5 * MIB, 100 * MIB, 1 << 30] {
                let p = PartPlan::new(tasks, most).unwrap();
                assert!(p.part_size >= MIN_PART_SIZE && p.part_size.is_multiple_of(MIB));
                assert!(u64::from(p.body_parts) * p.part_size >= most);
                assert!(p.block(tasks) as u64 <= MAX_NUMBER, "{tasks} {most}");
            }
        }
        assert!(PartPlan::new(MAX_TASKS + 1, 1).is_err());
        assert!(PartPlan::new(0, 1).is_err());
        // 5 TiB in 100 tasks: parts of 541 MiB; 50 TiB is past one upload.
        let five = (5u64 << 40) / 100;
        let p = PartPlan::new(100, five.div_ceil(c) * (c + 26)).unwrap();
        assert_eq!(p.part_size, 541 * MIB);
        assert!(PartPlan::new(100, 50 << 40).is_err());
    }

    #[test]
    fn aligned_plans_number_parts_by_offset() {
        for (len, align, tasks) in [
            (0u64, 1u64 << 20, 4usize),
            (1, 1 << 20, 4),
            (100 << 20, 1 << 20, 3),
            (100 << 20, 64 << 20, 3),
            (1 << 40, 8 << 20, 100),
            (5 << 40, 8 << 20, 100),
        ] {
            let (p, ranges) = PartPlan::aligned(len, align, tasks).unwrap();
            assert!(p.part_size >= MIN_PART_SIZE && p.part_size % align == 0);
            assert!(len.div_ceil(p.part_size) <= MAX_NUMBER, "{len}");
            assert_eq!(ranges.len(), p.tasks as usize);
            assert_eq!((ranges[0].0, ranges.last().unwrap().1), (0, len));
            for w in ranges.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert_eq!(w[0].1 % p.part_size, 0, "a task ends on a part boundary");
            }
        }
        assert_eq!(
            PartPlan::aligned(1 << 40, 1 << 20, 1).unwrap().0.part_size,
            105 * MIB
        );
        assert!(PartPlan::aligned(60 << 40, 1 << 20, 1).is_err());
    }

    #[test]
    fn task_parts_travel_as_bytes() {
        let t = TaskParts {
            task: 7,
            head: vec![1; 100],
            tail: vec![2; 3],
            body: vec![(12, "\"abc\"".into()), (13, "d".into())],
        };
        assert_eq!(TaskParts::from_bytes(&t.to_bytes()).unwrap(), t);
        let b = t.to_bytes();
        for cut in [0, 7, 8, 20, b.len() - 1] {
            assert!(TaskParts::from_bytes(&b[..cut]).is_err(), "{cut}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(TaskParts::from_bytes(&longer).is_err());
        let ticket = PartTicket {
            url: "s3://b/k".into(),
            upload_id: "id".into(),
            task: 3,
            plan: PartPlan::new(4, 100 << 20).unwrap(),
            first_number: Some(9),
        };
        assert_eq!(PartTicket::from_bytes(&ticket.to_bytes()).unwrap(), ticket);
        assert!(PartTicket::from_bytes(b"{}").is_err());
    }
}
