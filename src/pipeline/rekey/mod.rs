//! Changing who can open a container without decrypting it (FORMAT.md §2.4): a new header that
//! wraps the same file key for a new set of recipients, in front of the unchanged payload; or,
//! with rotation, a new file key under which every frame is sealed again (not recompressed).

mod pieces;

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::decrypt::frames::{read_index, Frames};
use super::decrypt::opener::Opener;
use super::decrypt::seek::read_trailer;
use super::encrypt::{sealed_header, Sealer};
use super::Locked;
use crate::crypto::{FileKey, Identity, Keying, Recipient};
use crate::error::{Error, Result};
use crate::format::frame::{parse_footer, FINAL_PLAIN_LEN};
use crate::format::{FinalFrame, FrameKind, Header, FOOTER_LEN, FRAME_HEADER_LEN};

/// How to rekey. `RekeyOptions::default()` replaces the recipient set and keeps the file key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RekeyOptions {
    /// Keep the old stanzas as they are and add the new recipients after them.
    pub keep_old: bool,
    /// Draw a new file key and payload salt and seal every frame again under them, so that the
    /// old file key no longer opens the new file (I/O and AEAD work, no recompression).
    pub rotate: bool,
    /// Keep the old stanzas but these recipients' (SSH keys, which their stanzas name), and add
    /// the new recipients, if any, after them.
    pub remove: Vec<crate::crypto::StanzaRecipient>,
    /// Allow a new header that none of the identities that opened the file can open: without
    /// it such a rekey is refused, since the caller would lock themself out (a new passphrase
    /// is exempt: the caller just gave it).
    pub allow_lockout: bool,
}

impl RekeyOptions {
    /// Keeps the old stanzas and adds the new recipients after them (`--add`).
    pub fn keep_old(mut self, keep: bool) -> Self {
        self.keep_old = keep;
        self
    }

    /// Re-encrypts every frame under a new file key (`--rotate`).
    pub fn rotate(mut self, rotate: bool) -> Self {
        self.rotate = rotate;
        self
    }

    /// Takes out the stanzas of `recipients` and keeps the others (`--remove`).
    pub fn remove(mut self, recipients: Vec<crate::crypto::StanzaRecipient>) -> Self {
        self.remove = recipients;
        self
    }

    /// Allows a new header that the identities given cannot open (`--force`).
    pub fn allow_lockout(mut self, allow: bool) -> Self {
        self.allow_lockout = allow;
        self
    }
}

/// What a rekey did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RekeyReport {
    /// Length of the old header.
    pub old_header_len: u64,
    /// Length of the new header.
    pub new_header_len: u64,
    /// Bytes after the header, copied (or, rotated, sealed again).
    pub payload_len: u64,
    /// Number of stanzas in the new header.
    pub stanzas: usize,
}

impl<R: Read> Locked<R> {
    /// Unwraps the file key with `identities` and builds the header for `recipients` (after the
    /// old stanzas with [`RekeyOptions::keep_old`]; with a new file key and salt when rotating).
    /// Nothing is written yet: [`Rekeyed::write_to`] writes the container, after
    /// [`Rekeyed::checked`] over a seekable input; [`Rekeyed::into_header`] hands the header to
    /// a front end that moves the payload itself.
    pub fn rekey(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
    ) -> Result<Rekeyed<R>> {
        let keeps = opts.keep_old || !opts.remove.is_empty();
        if keeps && opts.rotate {
            return Err(Error::InvalidOption(
                "keeping the old stanzas and rotating the key do not mix: the old stanzas wrap \
                 the old file key; give the whole new recipient set instead"
                    .into(),
            ));
        }
        let file_key = self.file_key(identities)?;
        let (input, old, old_header_len) = self.into_parts();
        let kept = match keeps {
            true => kept_stanzas(&old.stanzas, &opts.remove)?,
            false => Vec::new(),
        };
        if kept
            .iter()
            .any(|s| s.kind == crate::crypto::passphrase::STANZA_TYPE)
        {
            return Err(Error::InvalidOption(
                "the file is protected by a passphrase, which must stay its only key: replace \
                 it instead of adding to it"
                    .into(),
            ));
        }
        let mut rng = rand_core::OsRng;
        let mut keys = Keying::new(recipients, &mut rng);
        let new_key = if opts.rotate {
            keys.file_key()
        } else {
            file_key.clone()
        };
        let mut header = Header {
            stanzas: kept,
            ..old.clone()
        };
        if opts.rotate {
            keys.fill(&mut header.payload_salt);
        }
        let added = keys.wrap_container(&new_key, &header.stanzas)?;
        header.stanzas.extend(added);
        if !opts.allow_lockout {
            check_still_opens(identities, &old.stanzas, &header.stanzas)?;
        }
        let bytes = sealed_header(&header, &new_key)?;
        Ok(Rekeyed {
            input,
            old,
            old_header_len,
            file_key,
            new_key,
            header,
            bytes,
            rotate: opts.rotate,
        })
    }
}

/// The old stanzas that stay: all of them but those of the recipients in `remove`, each of
/// which must name at least one.
fn kept_stanzas(
    old: &[crate::crypto::Stanza],
    remove: &[crate::crypto::StanzaRecipient],
) -> Result<Vec<crate::crypto::Stanza>> {
    for r in remove {
        let named = old.iter().filter(|s| s.recipient_id().as_ref() == Some(r));
        if named.count() > 1 {
            // A key tag is 32 bits: another key can be made to share it, so a tag that names
            // two stanzas does not say which is this key's.
            return Err(Error::InvalidOption(format!(
                "more than one stanza carries the {} key tag {}: zseal cannot tell which is \
                 this key's; give the recipients to keep instead",
                r.kind, r.key_tag
            )));
        }
        if !old.iter().any(|s| s.recipient_id().as_ref() == Some(r)) {
            return Err(Error::InvalidOption(format!(
                "no stanza of the file is for the {} key with tag {} (its stanzas: {}): nothing \
                 to remove",
                r.kind,
                r.key_tag,
                describe_all(old)
            )));
        }
    }
    let kept: Vec<_> = (old.iter())
        .filter(|s| !remove.iter().any(|r| s.recipient_id().as_ref() == Some(r)))
        .cloned()
        .collect();
    Ok(kept)
}

/// Refuses a new header's stanzas (`new`) that none of `identities` opens, unless they are
/// a passphrase's (the caller just gave that passphrase): the caller would lose access to the
/// file. Names what opened it before (`old`).
fn check_still_opens(
    identities: &[&dyn Identity],
    old: &[crate::crypto::Stanza],
    new: &[crate::crypto::Stanza],
) -> Result<()> {
    if new
        .iter()
        .any(|s| s.kind == crate::crypto::passphrase::STANZA_TYPE)
    {
        return Ok(());
    }
    // An identity whose stanzas name it (an SSH key) is looked for by name: unwrapping again
    // would ask for an encrypted key's passphrase once more. The others unwrap, asking nothing.
    let opens = |stanzas: &[crate::crypto::Stanza]| {
        identities.iter().any(|id| match id.stanza_recipient() {
            Some(r) => stanzas
                .iter()
                .any(|s| s.recipient_id().as_ref() == Some(&r)),
            None => {
                let keyed: Vec<_> = stanzas.iter().map(crate::crypto::Stanza::to_age).collect();
                id.unwrap_stanzas(&keyed).ok().flatten().is_some()
            }
        })
    };
    if opens(new) {
        return Ok(());
    }
    if old
        .iter()
        .any(|s| s.kind == crate::crypto::passphrase::STANZA_TYPE)
    {
        return Err(Error::InvalidOption(
            "the file was opened with its passphrase, which the new recipients replace: zseal \
             cannot tell whether you hold a key for one of them. Pass --force if you do"
                .into(),
        ));
    }
    let opened: Vec<String> = (old.chunks(1).filter(|s| opens(s)))
        .map(|s| s[0].describe())
        .collect();
    Err(Error::InvalidOption(format!(
        "the new recipients leave out the key that opened the file ({}): after this rekey it \
         could not open the file any more. Add your own recipient (-r, or --add to keep the \
         current ones), or pass --force to give up your access",
        match opened.is_empty() {
            true => describe_all(old),
            false => opened.join(", "),
        }
    )))
}

/// The stanzas' descriptions, for messages.
fn describe_all(stanzas: &[crate::crypto::Stanza]) -> String {
    let all: Vec<String> = stanzas
        .iter()
        .map(crate::crypto::Stanza::describe)
        .collect();
    all.join(", ")
}

/// A container's new header, built by [`Locked::rekey`], and the input positioned after the old
/// header: what writing the rekeyed container needs.
#[must_use = "nothing is written until write_to or into_header"]
pub struct Rekeyed<R> {
    input: R,
    old: Header,
    old_header_len: u64,
    file_key: FileKey,
    new_key: FileKey,
    header: Header,
    /// The new header's bytes.
    bytes: Vec<u8>,
    rotate: bool,
}

impl<R: Read> Rekeyed<R> {
    /// Writes the new header, then the payload, to `output`: without rotation every byte after
    /// the old header copied unchanged (`std::io::copy`, which moves file to file inside the
    /// kernel where it can); rotating, every frame opened and sealed again under the new key, the
    /// final frame, index and footer checked on the way. The caller makes the output atomic.
    pub fn write_to<W: Write>(mut self, mut output: W) -> Result<RekeyReport> {
        output.write_all(&self.bytes)?;
        let payload_len = if self.rotate {
            let mut out = BufWriter::with_capacity(1 << 20, &mut output);
            let n = self.rotation().run(&mut self.input, 0, None, &mut out)?;
            out.flush()?;
            n
        } else {
            io::copy(&mut self.input, &mut output)?
        };
        output.flush()?;
        Ok(self.report(payload_len))
    }

    fn report(&self, payload_len: u64) -> RekeyReport {
        RekeyReport {
            old_header_len: self.old_header_len,
            new_header_len: self.bytes.len() as u64,
            payload_len,
            stanzas: self.header.stanzas.len(),
        }
    }
}

impl<R: Read + Seek> Rekeyed<R> {
    /// Checks the container's trailer under the file key (footer, final frame, index, and the
    /// frames it lists ending at the final frame), so that a copy cut short, extended or with a
    /// damaged trailer is refused instead of being given a new header; leaves the input at the
    /// payload's start. The data frames are not read: without rotation they are copied
    /// unchanged, and rotation opens and checks every one of them anyway (so it checks nothing
    /// here).
    pub fn checked(mut self) -> Result<Self> {
        if self.rotate {
            return Ok(self);
        }
        let payload_key = self.file_key.payload_key(&self.old.payload_salt);
        let opener = Opener::new(self.old.clone(), self.old.cipher, &payload_key.0);
        let mut frames = Frames::new(&mut self.input, self.old_header_len, &self.old);
        match self.old.pieced {
            true => {
                let mut pieces = super::decrypt::pieces::Pieces::new(&self.old, &payload_key.0);
                super::decrypt::pieces::read_pieced_trailer(&mut frames, &opener, &mut pieces)?;
            }
            false => {
                read_trailer(&mut frames, &opener)?;
            }
        }
        self.input.seek(SeekFrom::Start(self.old_header_len))?;
        Ok(self)
    }

    /// The new header alone, for a front end that moves the payload itself (an object store's
    /// server-side copy of the bytes after the old header), after the check of
    /// [`Rekeyed::checked`]: the header's bytes, the report (payload length 0: the caller knows
    /// it), and the input positioned at the payload. Rotation changes the payload too, so it is
    /// refused here; use [`Rekeyed::write_to`].
    pub fn into_header(self) -> Result<(Vec<u8>, RekeyReport, R)> {
        if self.rotate {
            return Err(Error::InvalidOption(
                "rotating the file key seals every frame again: the payload cannot be copied \
                 unchanged"
                    .into(),
            ));
        }
        let p = self.checked()?;
        let report = p.report(0);
        Ok((p.bytes, report, p.input))
    }
}

/// A rotation that can stop after any frame and go on from there (a resumable upload of it,
/// docs/OBJECTS.md §7): the old header and the two payload keys. Frame `i` of the new container
/// is frame `i` of the old one opened and sealed again, same index, kind and length, so it
/// starts at the same offset after the header.
pub struct Rotation {
    old: Header,
    old_header_len: u64,
    opener: Opener,
    sealer: Sealer,
    new_payload_key: zeroize::Zeroizing<[u8; 32]>,
    /// A pieced file's rotation (FORMAT.md §14.4), which keeps its place between runs.
    pieced: Option<pieces::PiecedRotation>,
}

impl std::fmt::Debug for Rotation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rotation")
            .field("old_header_len", &self.old_header_len)
            .finish_non_exhaustive()
    }
}

impl Rotation {
    fn new(old: &Header, old_header_len: u64, old_key: &[u8; 32], new_key: &[u8; 32]) -> Self {
        // A rotated header differs from the old one only in its stanzas and salt: the
        // algorithms and the chunk size are the old ones.
        Rotation {
            old: old.clone(),
            old_header_len,
            opener: Opener::new(old.clone(), old.cipher, old_key),
            sealer: Sealer::new(old.cipher, new_key, old.codec, old.hash, old.chunk_log2),
            new_payload_key: zeroize::Zeroizing::new(*new_key),
            pieced: old
                .pieced
                .then(|| pieces::PiecedRotation::new(old, old_key, new_key)),
        }
    }

    /// The new payload key (what a journal keeps to go on; it opens this file's frames only).
    pub fn new_payload_key(&self) -> &[u8; 32] {
        &self.new_payload_key
    }

    /// Re-seals the frames from number `first` (where `input` is positioned) into `out`: up to
    /// frame `stop` (not included) when given, else through the final frame, the index and
    /// the footer, all checked on the way. Returns the bytes written. A pieced file's rotation
    /// goes on where its last run stopped (`first` is that frame), over the same input.
    pub fn run<R: Read, W: Write>(
        &self,
        input: &mut R,
        first: u64,
        stop: Option<u64>,
        out: &mut W,
    ) -> Result<u64> {
        let mut frames = Frames::new(input, self.old_header_len, &self.old);
        frames.next = first;
        if let Some(p) = &self.pieced {
            return p.run(&mut frames, stop, out);
        }
        rotate(
            &mut frames,
            (&self.opener, &self.sealer),
            self.old.chunk_size(),
            stop,
            out,
        )
    }
}

impl<R: Read> Rekeyed<R> {
    /// A rotating rekey as a [`Rotation`] the caller drives: the new header's bytes, the
    /// rotation, and the input at the payload. Refused without rotation.
    pub fn into_rotation(self) -> Result<(Vec<u8>, Rotation, R)> {
        if !self.rotate {
            return Err(Error::InvalidOption(
                "a rekey without --rotate has nothing to re-seal".into(),
            ));
        }
        let r = self.rotation();
        Ok((self.bytes, r, self.input))
    }

    /// The re-sealing of this rekey's frames: opened under the old payload key, sealed under
    /// the new one.
    fn rotation(&self) -> Rotation {
        Rotation::new(
            &self.old,
            self.old_header_len,
            &self.file_key.payload_key(&self.old.payload_salt).0,
            &self.new_key.payload_key(&self.header.payload_salt).0,
        )
    }
}

impl<R: Read> Locked<R> {
    /// A rotation begun before, resumed: the old file key unwrapped with `identities` (the
    /// header MAC checked), the frames sealed under `new_payload_key`, the one
    /// [`Rotation::new_payload_key`] gave. The input is left after the header.
    pub fn resume_rotation(
        self,
        identities: &[&dyn Identity],
        new_payload_key: &[u8; 32],
    ) -> Result<(Rotation, R)> {
        let file_key = self.file_key(identities)?;
        let (input, old, old_header_len) = self.into_parts();
        let old_key = file_key.payload_key(&old.payload_salt);
        let r = Rotation::new(&old, old_header_len, &old_key.0, new_payload_key);
        Ok((r, input))
    }
}

/// Opens every frame from `frames.next` under the old payload key and seals it again, same
/// index, kind and length, under the new one; up to frame `stop` when given, else through the
/// final frame, whose counts, the index digest and the footer are checked on the way, so a
/// damaged file fails instead of being sealed anew. Returns the payload bytes written.
fn rotate<R: Read>(
    frames: &mut Frames<R>,
    (opener, sealer): (&Opener, &Sealer),
    chunk: usize,
    stop: Option<u64>,
    out: &mut impl Write,
) -> Result<u64> {
    // Room for any frame of the file: a padded chunk is up to C + 5 bytes before its tag, a
    // signature frame up to its bound (FORMAT.md §12.2).
    let sig = *crate::format::frame::body_len_bounds(FrameKind::Signature, chunk).end();
    let mut buf = vec![0u8; FRAME_HEADER_LEN + opener.buffer_len().max(sig)];
    let mut written = 0u64;
    let fin = loop {
        let index = frames.next;
        if stop == Some(index) {
            return Ok(written);
        }
        let (kind, body_len) = frames.read_header()?;
        let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
        frames.read_body(body)?;
        let last = kind == FrameKind::Final;
        let len = opener.open_body(index, last, kind, body)?;
        let fin = if last {
            Some(FinalFrame::decode(
                &buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + len],
            )?)
        } else {
            None
        };
        let total = sealer.seal_into(&mut buf, index, last, kind, len);
        out.write_all(&buf[..total])?;
        written += total as u64;
        if let Some(fin) = fin {
            debug_assert_eq!(len, FINAL_PLAIN_LEN);
            break fin;
        }
    };
    let n = frames.next - 1;
    if fin.chunk_count != n {
        return Err(Error::Damaged(format!(
            "the final frame records {} chunks, but {n} were read",
            fin.chunk_count
        )));
    }
    let mut io_err = None;
    read_index(&mut frames.inner, n, &fin.index_digest, |entry| {
        if let Err(e) = out.write_all(&entry.to_le_bytes()) {
            io_err.get_or_insert(e);
        }
        Ok(())
    })?;
    if let Some(e) = io_err {
        return Err(e.into());
    }
    let mut footer = [0u8; FOOTER_LEN];
    if crate::io::read_full(&mut frames.inner, &mut footer)? != FOOTER_LEN {
        return Err(Error::Truncated("in the footer".into()));
    }
    if parse_footer(&footer)? != n {
        return Err(Error::Damaged("the footer's chunk count is wrong".into()));
    }
    if crate::io::read_full(&mut frames.inner, &mut [0u8; 1])? != 0 {
        return Err(Error::TrailingData);
    }
    out.write_all(&footer)?;
    Ok(written + 4 * n + FOOTER_LEN as u64)
}
