//! An archive's member index (FORMAT.md §15.2): what `zseal ls` prints and where `cat` finds a
//! member, as bytes ([`Index::encode`], [`Index::decode`], which checks every rule of §15.2)
//! and as made from a tar ([`super::scan`]).

use crate::error::{Error, Result};

/// The index's magic.
pub const MAGIC: &[u8; 8] = b"ZSEALIDX";
/// This layout's version.
pub const VERSION: u8 = 1;
/// The index header's length: magic, version, frames, index_len, members, tar_len.
pub const HEADER_LEN: usize = 8 + 1 + 4 + 8 + 8 + 8;
/// The largest index a reader takes (FORMAT.md §15.1).
pub const MAX_INDEX_LEN: u64 = 1 << 30;
/// A tar block.
const BLOCK: u64 = 512;

/// A member's type, as FORMAT.md §15.2 numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberType {
    /// A regular file (tar `0`, `\0`, `7`).
    File,
    /// A hard link to an earlier member (tar `1`).
    HardLink,
    /// A symbolic link (tar `2`).
    Symlink,
    /// A character device (tar `3`).
    CharDevice,
    /// A block device (tar `4`).
    BlockDevice,
    /// A directory (tar `5`).
    Directory,
    /// A FIFO (tar `6`).
    Fifo,
    /// Anything else a tar may hold (listed, not extracted).
    Other,
}

impl MemberType {
    /// Its name in `zseal ls --json` and Python's `members()`.
    pub fn name(self) -> &'static str {
        match self {
            MemberType::File => "file",
            MemberType::HardLink => "hardlink",
            MemberType::Symlink => "symlink",
            MemberType::CharDevice => "chardev",
            MemberType::BlockDevice => "blockdev",
            MemberType::Directory => "directory",
            MemberType::Fifo => "fifo",
            MemberType::Other => "other",
        }
    }

    fn byte(self) -> u8 {
        match self {
            MemberType::File => 0,
            MemberType::HardLink => 1,
            MemberType::Symlink => 2,
            MemberType::CharDevice => 3,
            MemberType::BlockDevice => 4,
            MemberType::Directory => 5,
            MemberType::Fifo => 6,
            MemberType::Other => 7,
        }
    }

    fn of(b: u8) -> Option<Self> {
        Some(match b {
            0 => MemberType::File,
            1 => MemberType::HardLink,
            2 => MemberType::Symlink,
            3 => MemberType::CharDevice,
            4 => MemberType::BlockDevice,
            5 => MemberType::Directory,
            6 => MemberType::Fifo,
            7 => MemberType::Other,
            _ => return None,
        })
    }
}

/// One member of the tar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its type.
    pub kind: MemberType,
    /// Plaintext offset of its first header block (a pax or GNU long-name block when it has one).
    pub header_offset: u64,
    /// Plaintext offset of its data.
    pub data_offset: u64,
    /// Its data's length (0 but for regular files).
    pub size: u64,
    /// Permission, set-id and sticky bits.
    pub mode: u32,
    /// Owner and group ids.
    pub uid: u32,
    /// The group id.
    pub gid: u32,
    /// Seconds since the epoch, and nanoseconds.
    pub mtime: (i64, u32),
    /// Its name, as `tar t` prints it unquoted (bytes: a tar name need not be UTF-8).
    pub path: Vec<u8>,
    /// A link's target; empty for others.
    pub link: Vec<u8>,
    /// Owner name.
    pub uname: Vec<u8>,
    /// Group name.
    pub gname: Vec<u8>,
}

/// The index of an archive: its members in tar order, and where the tar ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    /// The members.
    pub members: Vec<Member>,
    /// The end of the tar's last record, after its two zero blocks.
    pub tar_len: u64,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::Damaged(format!("the archive's member index: {what}"))
}

impl Index {
    /// The index's bytes for `frames` index frames (FORMAT.md §15.2). Names longer than a
    /// record holds (paths and links over 65,535 bytes, owner names over 255) are refused.
    pub fn encode(&self, frames: u32) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.members.len() * 80);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&frames.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // index_len, set below
        out.extend_from_slice(&(self.members.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.tar_len.to_le_bytes());
        for m in &self.members {
            out.push(m.kind.byte());
            out.extend_from_slice(&m.header_offset.to_le_bytes());
            out.extend_from_slice(&m.data_offset.to_le_bytes());
            out.extend_from_slice(&m.size.to_le_bytes());
            out.extend_from_slice(&m.mode.to_le_bytes());
            out.extend_from_slice(&m.uid.to_le_bytes());
            out.extend_from_slice(&m.gid.to_le_bytes());
            out.extend_from_slice(&m.mtime.0.to_le_bytes());
            out.extend_from_slice(&m.mtime.1.to_le_bytes());
            for (field, bytes) in [("path", &m.path), ("link", &m.link)] {
                let n = u16::try_from(bytes.len()).map_err(|_| {
                    Error::Limit(format!("a member's {field} is longer than 65,535 bytes"))
                })?;
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            for (field, bytes) in [("owner", &m.uname), ("group", &m.gname)] {
                let n = u8::try_from(bytes.len()).map_err(|_| {
                    Error::Limit(format!("a member's {field} name is longer than 255 bytes"))
                })?;
                out.push(n);
                out.extend_from_slice(bytes);
            }
        }
        let len = out.len() as u64;
        out[13..21].copy_from_slice(&len.to_le_bytes());
        Ok(out)
    }

    /// The index in `bytes`, read from `frames` index frames of a file whose plaintext is
    /// `plaintext_len` bytes: refused, as damage, unless every rule of FORMAT.md §15.2 holds.
    pub fn decode(bytes: &[u8], frames: u32, plaintext_len: u64) -> Result<Index> {
        let mut r = Fields(bytes);
        if r.take(8)? != MAGIC {
            return Err(bad("no ZSEALIDX magic"));
        }
        let version = r.u8()?;
        if version != VERSION {
            return Err(bad(format!("version {version}, not {VERSION}")));
        }
        let declared_frames = r.u32()?;
        if declared_frames != frames {
            return Err(bad(format!(
                "it says {declared_frames} index frames, and the file holds {frames}"
            )));
        }
        let index_len = r.u64()?;
        if index_len != bytes.len() as u64 {
            return Err(bad(format!(
                "it says {index_len} bytes, and {} were read",
                bytes.len()
            )));
        }
        let count = r.u64()?;
        let tar_len = r.u64()?;
        if tar_len > plaintext_len || tar_len % BLOCK != 0 {
            return Err(bad(format!(
                "the tar's end {tar_len} is past the plaintext ({plaintext_len} bytes) or not \
                 a whole block"
            )));
        }
        // Each record is at least 56 bytes: no count can promise more than the bytes hold.
        if count > (bytes.len() / 56) as u64 {
            return Err(bad(format!("{count} members in {} bytes", bytes.len())));
        }
        let mut members = Vec::with_capacity(count as usize);
        let mut after = 0u64;
        for k in 0..count {
            let kind = r.u8()?;
            let kind =
                MemberType::of(kind).ok_or_else(|| bad(format!("member {k}: type {kind}")))?;
            let (header_offset, data_offset, size) = (r.u64()?, r.u64()?, r.u64()?);
            let (mode, uid, gid) = (r.u32()?, r.u32()?, r.u32()?);
            let mtime = (r.i64()?, r.u32()?);
            let path = r.take16()?.to_vec();
            let link = r.take16()?.to_vec();
            let uname = r.take8()?.to_vec();
            let gname = r.take8()?.to_vec();
            let ends = data_offset.checked_add(size);
            if header_offset < after
                || data_offset <= header_offset
                || header_offset % BLOCK != 0
                || data_offset % BLOCK != 0
                || ends.is_none_or(|e| e > tar_len)
                || mtime.1 >= 1_000_000_000
                || path.is_empty()
                || (kind != MemberType::File && size != 0)
            {
                return Err(bad(format!(
                    "member {k} ({}) is out of place or out of bounds",
                    String::from_utf8_lossy(&path)
                )));
            }
            after = data_offset + size.div_ceil(BLOCK) * BLOCK;
            members.push(Member {
                kind,
                header_offset,
                data_offset,
                size,
                mode,
                uid,
                gid,
                mtime,
                path,
                link,
                uname,
                gname,
            });
        }
        if !r.0.is_empty() {
            return Err(bad(format!("{} bytes after the last member", r.0.len())));
        }
        Ok(Index { members, tar_len })
    }
}

/// A cursor over the index's bytes; running out is damage.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad("it ends inside a field"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn take16(&mut self) -> Result<&'a [u8]> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"));
        self.take(n.into())
    }

    fn take8(&mut self) -> Result<&'a [u8]> {
        let n = self.u8()?;
        self.take(n.into())
    }
}
