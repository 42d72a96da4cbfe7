//! The coordinator's side of an object written by many tasks (FORMAT.md §11.3): the upload,
//! the tickets, the seams between the tasks' bodies, and the completion by part number.

use std::io::{self, Write};
use std::sync::Arc;

use object_store::multipart::PartId;

use super::{
    invalid, read_only, PartPlan, PartTicket, Parts, TaskParts, HEAD_LEN, MAX_NUMBER,
    MAX_PART_SIZE, MIB,
};
use crate::remote::upload::Upload;
use crate::remote::{Object, Remote, Replace, Scheme};

/// The coordinator's side of an object written by many tasks: the upload (aborted when
/// dropped unless completed), the tickets, the seams and the completion.
pub struct SharedUpload {
    obj: Arc<Object>,
    upload: Arc<Upload>,
    replace: Replace,
    plan: PartPlan,
}

impl std::fmt::Debug for SharedUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedUpload")
            .field("url", &self.obj.url)
            .field("plan", &self.plan)
            .finish()
    }
}

impl Remote {
    /// Starts one multipart upload of this object for tasks in other processes
    /// ([`PartWriter`](super::PartWriter)). Without `overwrite` an existing object is refused now and again at
    /// completion (a conditional completion on S3 and GCS, as [`Remote::writer`]).
    pub fn shared_upload(&self, overwrite: bool, plan: PartPlan) -> io::Result<SharedUpload> {
        let o = &self.inner;
        if o.scheme == Scheme::Http {
            return Err(read_only(&o.url));
        }
        if !overwrite && self.size()?.is_some() {
            return Err(o.exists());
        }
        Ok(SharedUpload {
            obj: o.clone(),
            upload: Upload::start(o)?,
            replace: if overwrite {
                Replace::Anything
            } else {
                Replace::Nothing
            },
            plan,
        })
    }
}

impl SharedUpload {
    /// The part plan.
    pub fn plan(&self) -> PartPlan {
        self.plan
    }

    /// The ticket of task `task` (from 0).
    pub fn ticket(&self, task: u32) -> PartTicket {
        PartTicket {
            url: self.obj.url.clone(),
            upload_id: self.upload.id().to_string(),
            task,
            plan: self.plan,
            first_number: None,
        }
    }

    /// The ticket of the task that writes bytes `start..` of an object planned by
    /// [`PartPlan::aligned`]: its parts are numbered by their offset.
    pub fn aligned_ticket(&self, task: u32, start: u64) -> PartTicket {
        PartTicket {
            first_number: Some((start / self.plan.part_size) as u32 + 1),
            ..self.ticket(task)
        }
    }

    /// Completes an object planned by [`PartPlan::aligned`] from its tasks' parts; returns its
    /// number of parts. Any failure aborts the upload.
    pub fn complete_aligned(self, tasks: &[TaskParts]) -> io::Result<usize> {
        let mut numbered: Vec<(usize, PartId)> = tasks
            .iter()
            .flat_map(|t| &t.body)
            .map(|(n, content_id)| {
                let content_id = content_id.clone();
                (*n as usize, PartId { content_id })
            })
            .collect();
        numbered.sort_by_key(|p| p.0);
        let follows = numbered.iter().enumerate().all(|(i, p)| p.0 == i + 1);
        let r = if follows && !numbered.is_empty() {
            self.upload.complete_numbered(&numbered, &self.replace)
        } else {
            Err(invalid(format!(
                "the tasks' parts of {} do not number 1, 2, 3, …: a task is missing",
                self.obj.url
            )))
        };
        if r.is_err() {
            self.abort();
        }
        r.map(|()| numbered.len())
    }

    /// Aborts the upload: no object appears, and the store drops the parts. Called again, it
    /// aborts again (for parts that were in flight the first time).
    pub fn abort(&self) {
        if self.upload.ended() {
            self.upload.abort_again();
        } else {
            self.upload.abort();
        }
    }

    /// Uploads the seams (`header` before the first, the tasks' heads and tails between the
    /// bodies, and what `trailer` writes after the last, at most `trailer_bound` bytes) and
    /// completes the object from every part in number order. Returns the object's length and
    /// its number of parts. Any failure aborts the upload.
    pub fn complete<F>(
        self,
        header: &[u8],
        tasks: &[TaskParts],
        trailer_bound: u64,
        trailer: F,
    ) -> io::Result<(u64, usize)>
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()>,
    {
        let seams = |trailer: F| self.seams_and_complete(header, tasks, trailer_bound, trailer);
        let r = seams(trailer);
        if r.is_err() {
            self.abort();
        }
        r
    }

    fn seams_and_complete(
        &self,
        header: &[u8],
        tasks: &[TaskParts],
        trailer_bound: u64,
        trailer: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<(u64, usize)> {
        let plan = self.plan;
        if tasks.len() != plan.tasks as usize
            || tasks.iter().enumerate().any(|(k, t)| t.task as usize != k)
        {
            return Err(invalid(format!(
                "{} task results for an upload planned for {} tasks, or out of order",
                tasks.len(),
                plan.tasks
            )));
        }
        let parts = Parts::new(self.obj.clone(), self.upload.id().to_string())?;
        let mut seam = Seam::new(parts, plan.part_size, plan.block(0), header);
        let mut total = header.len() as u64;
        for (k, t) in tasks.iter().enumerate() {
            total += t.len(&plan);
            if t.body.is_empty() {
                seam.write_all(&t.head)?;
                seam.write_all(&t.tail)?;
                continue;
            }
            // The seam before task k's body ends at its second seam number.
            seam.write_all(&t.head)?;
            let mut parts = seam.close(plan.block(k) + 1)?;
            parts.done.extend(t.body.iter().cloned());
            seam = Seam::new(parts, plan.part_size, plan.block(k + 1), &t.tail);
        }
        // The last seam: its pieces sized so that the numbers left hold it.
        let count = (MAX_NUMBER as usize + 1 - seam.next) as u64;
        let bound = seam.gathered + trailer_bound;
        seam.piece = plan
            .part_size
            .max(bound.div_ceil(count).next_multiple_of(MIB));
        if seam.piece > MAX_PART_SIZE {
            return Err(invalid(format!(
                "the end of {} needs parts of {} bytes, over S3's 5 GiB",
                self.obj.url, seam.piece
            )));
        }
        let before = seam.gathered;
        trailer(&mut seam)?;
        total += seam.gathered - before;
        let mut parts = seam.close(MAX_NUMBER as usize)?;
        parts.done.sort_by_key(|p| p.0);
        let numbered: Vec<(usize, PartId)> = parts
            .done
            .into_iter()
            .map(|(n, content_id)| (n as usize, PartId { content_id }))
            .collect();
        self.upload.complete_numbered(&numbered, &self.replace)?;
        Ok((total, numbered.len()))
    }
}

/// One seam being uploaded: pieces of `piece` bytes once `piece + 5 MiB` have gathered, under
/// the numbers from `next`.
struct Seam {
    parts: Parts,
    piece: u64,
    next: usize,
    buf: Vec<u8>,
    gathered: u64,
}

impl Seam {
    fn new(parts: Parts, piece: u64, next: usize, start: &[u8]) -> Seam {
        Seam {
            parts,
            piece,
            next,
            buf: start.to_vec(),
            gathered: start.len() as u64,
        }
    }

    fn overran(&self, last: usize) -> io::Error {
        invalid(format!(
            "a seam of {} outran its part numbers (to {last}): the part plan is wrong",
            self.parts.obj.url
        ))
    }

    /// Sends a piece of `piece` bytes while `piece + 5 MiB` have gathered, so that what stays
    /// is at least 5 MiB or the seam's end; numbers past `last` are an error.
    fn send_full_pieces(&mut self, last: usize) -> io::Result<()> {
        while self.buf.len() as u64 >= self.piece + HEAD_LEN {
            if self.next > last {
                return Err(self.overran(last));
            }
            let rest = self.buf.split_off(self.piece as usize);
            let full = std::mem::replace(&mut self.buf, rest);
            self.parts.send(self.next as u32, full)?;
            self.next += 1;
        }
        Ok(())
    }

    /// Sends what is left as the seam's last piece (numbered at most `last`).
    fn close(mut self, last: usize) -> io::Result<Parts> {
        self.send_full_pieces(last)?;
        if !self.buf.is_empty() {
            if self.next > last {
                return Err(self.overran(last));
            }
            let rest = std::mem::take(&mut self.buf);
            self.parts.send(self.next as u32, rest)?;
            self.next += 1;
        }
        if self.next > last + 1 {
            return Err(self.overran(last));
        }
        self.parts.wait()?;
        Ok(self.parts)
    }
}

impl Write for Seam {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        self.gathered += data.len() as u64;
        // The seam's own last number is checked at close; none goes past 10,000.
        self.send_full_pieces(MAX_NUMBER as usize)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
