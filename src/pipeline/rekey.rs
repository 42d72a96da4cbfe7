//! Changing who can open a container without decrypting it (FORMAT.md §2.4): a new header that
//! wraps the same file key for a new set of recipients, in front of the unchanged payload; or,
//! with rotation, a new file key under which every frame is sealed again (not recompressed).

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use rand_core::{CryptoRng, RngCore};

use super::decrypt::frames::{read_index, Frames};
use super::decrypt::opener::Opener;
use super::decrypt::seek::read_trailer;
use super::encrypt::{sealed_header, wrap_for, Sealer};
use super::Locked;
use crate::crypto::check_recipients;
use crate::crypto::{FileKey, Identity, Recipient};
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
    /// Writes to `output` the container with a new header for `recipients` (after the old
    /// stanzas with [`RekeyOptions::keep_old`]), unwrapping the file key with `identities`. Without
    /// rotation every byte after the header is copied unchanged (`std::io::copy`, which moves
    /// file to file inside the kernel where it can); the caller makes the output atomic.
    pub fn rekey<W: Write>(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
        output: W,
    ) -> Result<RekeyReport> {
        self.rekey_with_rng(identities, recipients, opts, output, &mut rand_core::OsRng)
    }

    /// As [`Locked::rekey`], drawing keys and salts from `rng` (tests; production passes a
    /// CSPRNG).
    pub fn rekey_with_rng<W: Write>(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
        output: W,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<RekeyReport> {
        let p = self.prepare(identities, recipients, opts, rng)?;
        write_rekeyed(p, opts, output)
    }

    /// Unwraps the file key and builds the new header (with a new key and salt when rotating).
    fn prepare(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<Prepared<R>> {
        if opts.keep_old && opts.rotate {
            return Err(Error::InvalidOption(
                "keeping the old stanzas and rotating the key do not mix: the old stanzas wrap \
                 the old file key; give the whole new recipient set instead"
                    .into(),
            ));
        }
        let file_key = self.file_key(identities)?;
        let (input, old, old_header_len) = self.into_parts();
        let kept = if opts.keep_old {
            old.stanzas.clone()
        } else {
            Vec::new()
        };
        check_recipients(recipients, &kept)?;
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
        let new_key = if opts.rotate {
            FileKey::generate(rng)
        } else {
            file_key.clone()
        };
        let mut header = Header {
            stanzas: kept,
            ..old.clone()
        };
        if opts.rotate {
            rng.fill_bytes(&mut header.payload_salt);
        }
        header.stanzas.extend(wrap_for(recipients, &new_key, rng)?);
        let bytes = sealed_header(&header, &new_key)?;
        Ok(Prepared {
            input,
            old,
            old_header_len,
            file_key,
            new_key,
            header,
            bytes,
        })
    }
}

impl<R: Read + Seek> Locked<R> {
    /// As [`Locked::rekey`], having first checked the container's trailer under the file key
    /// (footer, final frame, index, and the frames it lists ending at the final frame): a copy
    /// that is cut short, extended or has a damaged trailer is refused instead of being given a
    /// new header. The data frames are not read (without rotation they are copied unchanged;
    /// rotation opens every one of them anyway).
    pub fn rekey_checked<W: Write>(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
        output: W,
    ) -> Result<RekeyReport> {
        let mut p = self.prepare(identities, recipients, opts, &mut rand_core::OsRng)?;
        if !opts.rotate {
            p.check_trailer()?;
        }
        write_rekeyed(p, opts, output)
    }

    /// The new header alone, for a front end that moves the payload itself (an object store's
    /// server-side copy of the bytes after the old header), after the trailer check of
    /// [`Locked::rekey_checked`]: the header's bytes, the old header's length, and the input
    /// positioned at the payload. Rotation changes the payload too, so it is refused here; use
    /// [`Locked::rekey`].
    pub fn rekey_header(
        self,
        identities: &[&dyn Identity],
        recipients: &[&dyn Recipient],
        opts: &RekeyOptions,
    ) -> Result<(Vec<u8>, RekeyReport, R)> {
        if opts.rotate {
            return Err(Error::InvalidOption(
                "rotating the file key seals every frame again: the payload cannot be copied \
                 unchanged"
                    .into(),
            ));
        }
        let mut p = self.prepare(identities, recipients, opts, &mut rand_core::OsRng)?;
        p.check_trailer()?;
        let report = RekeyReport {
            old_header_len: p.old_header_len,
            new_header_len: p.bytes.len() as u64,
            payload_len: 0,
            stanzas: p.header.stanzas.len(),
        };
        Ok((p.bytes, report, p.input))
    }
}

impl<R: Read + Seek> Prepared<R> {
    /// The trailer check of [`Locked::rekey_checked`]; leaves the input at the payload's start.
    fn check_trailer(&mut self) -> Result<()> {
        let opener = Opener::new(
            self.old.clone(),
            self.old.cipher,
            &self.file_key.payload_key(&self.old.payload_salt).0,
        );
        let mut frames = Frames::new(&mut self.input, self.old_header_len, &self.old);
        read_trailer(&mut frames, &opener)?;
        self.input.seek(SeekFrom::Start(self.old_header_len))?;
        Ok(())
    }
}

/// Writes the new header and the payload after it: copied unchanged, or sealed again when
/// rotating.
fn write_rekeyed<R: Read, W: Write>(
    mut p: Prepared<R>,
    opts: &RekeyOptions,
    mut output: W,
) -> Result<RekeyReport> {
    output.write_all(&p.bytes)?;
    let payload_len = if opts.rotate {
        let mut out = BufWriter::with_capacity(1 << 20, &mut output);
        let n = rotate(
            &mut p.input,
            &p.old,
            p.old_header_len,
            &p.file_key,
            &p.header,
            &p.new_key,
            &mut out,
        )?;
        out.flush()?;
        n
    } else {
        io::copy(&mut p.input, &mut output)?
    };
    output.flush()?;
    Ok(RekeyReport {
        old_header_len: p.old_header_len,
        new_header_len: p.bytes.len() as u64,
        payload_len,
        stanzas: p.header.stanzas.len(),
    })
}

/// A rekey's new header, and what writing the payload after it needs.
struct Prepared<R> {
    input: R,
    old: Header,
    old_header_len: u64,
    file_key: FileKey,
    new_key: FileKey,
    header: Header,
    bytes: Vec<u8>,
}

/// Opens every frame under the old payload key and seals it again, same index, kind and length,
/// under the new one; checks the final frame's counts, the index digest and the footer on the
/// way, so a damaged file fails instead of being sealed anew. Returns the payload bytes written.
fn rotate(
    input: &mut impl Read,
    old: &Header,
    old_header_len: u64,
    old_key: &FileKey,
    new: &Header,
    new_key: &FileKey,
    out: &mut impl Write,
) -> Result<u64> {
    let chunk = old.chunk_size();
    let opener = Opener::new(
        old.clone(),
        old.cipher,
        &old_key.payload_key(&old.payload_salt).0,
    );
    let sealer = Sealer::new(
        new.cipher,
        &new_key.payload_key(&new.payload_salt).0,
        new.codec,
        new.hash,
        new.chunk_log2,
    );
    let mut frames = Frames::new(input, old_header_len, old);
    // Room for any frame of the file: a padded chunk is up to C + 5 bytes before its tag, a
    // signature frame up to its bound (FORMAT.md §12.2).
    let sig = *crate::format::frame::body_len_bounds(FrameKind::Signature, chunk).end();
    let mut buf = vec![0u8; FRAME_HEADER_LEN + opener.buffer_len().max(sig)];
    let mut written = 0u64;
    let fin = loop {
        let index = frames.next;
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
