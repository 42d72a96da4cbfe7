//! An archive's index made from its tar as the tar is read (FORMAT.md §15.4): each member's
//! record, with the offsets of its first header block and of its data, through the `tar`
//! crate's raw entries (pax and GNU long-name blocks come as entries of their own, so the
//! first block of a member's header set is known; their fields are applied here as tar does).

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;

use tar::EntryType;

use super::index::{Index, Member, MemberType};
use crate::error::{Error, Result};

/// A tar block.
const BLOCK: u64 = 512;

/// What the extension blocks before a member said, and where the first of them began.
#[derive(Default)]
struct Pending {
    first: Option<u64>,
    path: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    size: Option<u64>,
    mtime: Option<(i64, u32)>,
    uname: Option<Vec<u8>>,
    gname: Option<Vec<u8>>,
    uid: Option<u32>,
    gid: Option<u32>,
}

fn not_tar(e: impl std::fmt::Display) -> Error {
    Error::InvalidOption(format!("not a tar archive zseal can index: {e}"))
}

/// The index of the tar `r` holds, read to its end-of-archive blocks. A failure of `r` itself
/// (a chunk that fails authentication, a lost connection) is that failure, not "not a tar".
pub fn index_tar<R: Read>(r: R) -> Result<Index> {
    let failed = Rc::new(RefCell::new(None));
    let mut archive = tar::Archive::new(Watched {
        inner: r,
        failed: Rc::clone(&failed),
    });
    let scanned = scan(&mut archive);
    drop(archive);
    let first = failed.borrow_mut().take();
    match (scanned, first) {
        (Err(_), Some(e)) => Err(Error::from(e)),
        (result, _) => result,
    }
}

/// A reader that keeps its first error, which the tar crate would wrap in its own words.
struct Watched<R> {
    inner: R,
    failed: Rc<RefCell<Option<std::io::Error>>>,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            let told = std::io::Error::new(e.kind(), e.to_string());
            self.failed.borrow_mut().get_or_insert(e);
            told
        })
    }
}

fn scan<R: Read>(archive: &mut tar::Archive<R>) -> Result<Index> {
    let entries = archive.entries().map_err(not_tar)?.raw(true);
    let mut members = Vec::new();
    let mut pending = Pending::default();
    let mut end = 0u64;
    for entry in entries {
        let mut e = entry.map_err(not_tar)?;
        let at = e.raw_header_position();
        let kind = e.header().entry_type();
        match kind {
            EntryType::XHeader | EntryType::GNULongName | EntryType::GNULongLink => {
                pending.first.get_or_insert(at);
                let mut data = Vec::new();
                e.read_to_end(&mut data).map_err(not_tar)?;
                end = e.raw_file_position() + (data.len() as u64).div_ceil(BLOCK) * BLOCK;
                match kind {
                    EntryType::XHeader => apply_pax(&mut pending, &data)?,
                    EntryType::GNULongName => pending.path = Some(trim_nul(data)),
                    _ => pending.link = Some(trim_nul(data)),
                }
                continue;
            }
            // A global pax header describes no member of its own.
            EntryType::XGlobalHeader => {
                let size = e.header().entry_size().map_err(not_tar)?;
                end = e.raw_file_position() + size.div_ceil(BLOCK) * BLOCK;
                continue;
            }
            _ => {}
        }
        let p = std::mem::take(&mut pending);
        let h = e.header();
        let kind = match kind {
            EntryType::Regular | EntryType::Continuous => MemberType::File,
            EntryType::Link => MemberType::HardLink,
            EntryType::Symlink => MemberType::Symlink,
            EntryType::Char => MemberType::CharDevice,
            EntryType::Block => MemberType::BlockDevice,
            EntryType::Directory => MemberType::Directory,
            EntryType::Fifo => MemberType::Fifo,
            _ => MemberType::Other,
        };
        let stored = p.size.map_or_else(|| h.entry_size(), Ok).map_err(not_tar)?;
        let data_offset = e.raw_file_position();
        let path = match p.path {
            Some(p) => p,
            None => h.path_bytes().into_owned(),
        };
        let link = match p.link {
            Some(l) => l,
            None => h
                .link_name_bytes()
                .map(|l| l.into_owned())
                .unwrap_or_default(),
        };
        let mtime = match p.mtime {
            Some(t) => t,
            None => (h.mtime().map_err(not_tar)? as i64, 0),
        };
        members.push(Member {
            kind,
            header_offset: p.first.unwrap_or(at),
            data_offset,
            size: if kind == MemberType::File { stored } else { 0 },
            mode: h.mode().map_err(not_tar)?,
            uid: p
                .uid
                .map_or_else(|| h.uid().map(|u| u as u32), Ok)
                .map_err(not_tar)?,
            gid: p
                .gid
                .map_or_else(|| h.gid().map(|g| g as u32), Ok)
                .map_err(not_tar)?,
            mtime,
            path,
            link,
            uname: p
                .uname
                .or_else(|| h.username_bytes().map(<[u8]>::to_vec))
                .unwrap_or_default(),
            gname: p
                .gname
                .or_else(|| h.groupname_bytes().map(<[u8]>::to_vec))
                .unwrap_or_default(),
        });
        end = data_offset + stored.div_ceil(BLOCK) * BLOCK;
    }
    if pending.first.is_some() {
        return Err(not_tar(
            "it ends after an extended header, before its member",
        ));
    }
    // The two zero blocks that end a tar.
    Ok(Index {
        members,
        tar_len: end + 2 * BLOCK,
    })
}

/// A GNU long name's data: the name, NUL-terminated.
fn trim_nul(mut b: Vec<u8>) -> Vec<u8> {
    while b.last() == Some(&0) {
        b.pop();
    }
    b
}

/// The fields of a pax extended header (`LEN KEY=VALUE\n` records) that a member record keeps.
fn apply_pax(p: &mut Pending, data: &[u8]) -> Result<()> {
    for ext in tar::PaxExtensions::new(data) {
        let ext = ext.map_err(not_tar)?;
        let (key, value) = (ext.key_bytes(), ext.value_bytes());
        let text = || std::str::from_utf8(value).map_err(not_tar);
        match key {
            b"path" => p.path = Some(value.to_vec()),
            b"linkpath" => p.link = Some(value.to_vec()),
            b"uname" => p.uname = Some(value.to_vec()),
            b"gname" => p.gname = Some(value.to_vec()),
            b"size" => p.size = Some(text()?.parse().map_err(not_tar)?),
            b"uid" => p.uid = Some(text()?.parse().map_err(not_tar)?),
            b"gid" => p.gid = Some(text()?.parse().map_err(not_tar)?),
            b"mtime" => p.mtime = Some(pax_time(text()?)?),
            _ => {}
        }
    }
    Ok(())
}

/// A pax time, `SECONDS[.FRACTION]`, as seconds and nanoseconds.
fn pax_time(s: &str) -> Result<(i64, u32)> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: i64 = secs.parse().map_err(not_tar)?;
    let digits: String = frac.chars().take(9).collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(not_tar(format!("pax mtime {s}")));
    }
    let nanos = match digits.is_empty() {
        true => 0,
        false => format!("{digits:0<9}").parse().map_err(not_tar)?,
    };
    Ok((secs, nanos))
}

/// Writes the bytes of the regular member `name` (as `tar t` lists it, with or without its
/// leading `./`) of the tar `r` into `w`, as `tar xO` does, then reads `r` to its end (so that
/// a container's end is authenticated before the caller commits what was written). A name the
/// tar does not hold, a directory and a member with no bytes of its own are refused by name.
pub fn copy_member<R: Read>(r: R, name: &str, w: &mut dyn std::io::Write) -> Result<u64> {
    let failed = Rc::new(RefCell::new(None));
    let mut archive = tar::Archive::new(Watched {
        inner: r,
        failed: Rc::clone(&failed),
    });
    let copied = copy_in(&mut archive, name, w);
    // The rest, padding and later members, read to the end of the input.
    let drained = copied.and_then(|n| {
        std::io::copy(&mut archive.into_inner(), &mut std::io::sink()).map_err(Error::from)?;
        Ok(n)
    });
    let first = failed.borrow_mut().take();
    match (drained, first) {
        (Err(_), Some(e)) => Err(Error::from(e)),
        (result, _) => result,
    }
}

fn bare(name: &[u8]) -> &[u8] {
    let mut n = name;
    while let Some(rest) = n.strip_prefix(b"./") {
        n = rest;
    }
    n
}

fn copy_in<R: Read>(
    archive: &mut tar::Archive<R>,
    name: &str,
    w: &mut dyn std::io::Write,
) -> Result<u64> {
    let want = bare(name.as_bytes());
    for entry in archive.entries().map_err(not_tar)? {
        let mut e = entry.map_err(not_tar)?;
        let path = e.path_bytes().into_owned();
        let matches = bare(&path) == want || bare(&path) == [want, b"/"].concat().as_slice();
        if !matches {
            continue;
        }
        return match e.header().entry_type() {
            EntryType::Regular | EntryType::Continuous => {
                // A write error is the output's, not the tar's.
                Ok(std::io::copy(&mut e, w)?)
            }
            EntryType::Directory => Err(Error::InvalidOption(format!(
                "{name} is a directory of the archive, not a file: `zseal ls` lists its members"
            ))),
            t => Err(Error::InvalidOption(format!(
                "{name} is a {t:?} member of the archive, which has no bytes of its own"
            ))),
        };
    }
    Err(Error::InvalidOption(format!(
        "the archive holds no member {name} (`zseal ls` lists them)"
    )))
}
