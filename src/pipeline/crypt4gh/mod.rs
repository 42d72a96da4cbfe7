//! The crypt4gh side of the engine (FORMAT.md §13), reading and writing ([`write`]: the
//! writer, a `ChunkSink` sealing segments on the workers). A crypt4gh file's data is fixed-size
//! segments, so it is read by the engine's segment reader ([`Segments`]); what crypt4gh supplies
//! is [`C4ghSegments`] (the sizes, the pure "open segment `i`" step of
//! [`SegmentOpener`], no last-segment mark) and, when the header holds an edit list, the
//! mapping of the stored plaintext to what is released ([`edited`]). The header is read and
//! opened by the format layer (`crate::format::crypt4gh`) with the X25519 keys of the identities
//! given ([`crate::Identity::x25519_keys`]).

mod edited;
mod signed;
mod write;

use std::io::Read;

use super::chunks::ChunkReader;
use super::options::{DecryptOptions, KeyNeeded};
use super::segments::{SegmentFormat, Segments};
use crate::crypto::c4gh::PublicKey;
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::format::crypt4gh::header::X25519_CHACHA20_IETF_POLY1305;
use crate::format::crypt4gh::{
    Header, Layout, SegmentOpener, SEALED_SEGMENT_LEN, SEGMENT_LEN, SEGMENT_OVERHEAD,
};

pub use edited::C4ghChunks;
pub use write::{Crypt4ghSink, Crypt4ghWriter};

/// Crypt4gh's data segments as a [`SegmentFormat`]: 64 KiB segments, each sealed alone under
/// one of the reader's data keys with a random nonce and no mark of the last one (so a cut at a
/// segment boundary goes unseen, FORMAT.md §13.10).
pub struct C4ghSegments {
    opener: SegmentOpener,
}

impl SegmentFormat for C4ghSegments {
    const NAME: &'static str = "crypt4gh";
    const SEGMENT: &'static str = "segment";
    const PLAIN: usize = SEGMENT_LEN;
    const OVERHEAD: usize = SEGMENT_OVERHEAD;
    const MARKS_LAST: bool = false;

    fn open(&self, i: u64, sealed: &[u8], out: &mut [u8]) -> Result<(usize, bool)> {
        Ok((self.opener.open(i, sealed, out)?, false))
    }

    fn shape(len: u64) -> Result<(u64, u64)> {
        let l = Layout::new(0, len)?;
        Ok((l.segments(), l.stored_len()))
    }
}

const _: () = assert!(SEALED_SEGMENT_LEN == SEGMENT_LEN + SEGMENT_OVERHEAD);

/// Decrypts a crypt4gh file read from `R`: the engine's reader over its segments, through its
/// edit list.
pub type C4ghReader<R> = ChunkReader<C4ghChunks<R>>;

/// A crypt4gh file whose header has been read, not yet opened.
pub struct C4ghLocked<R: Read> {
    input: R,
    header: Header,
}

impl<R: Read> C4ghLocked<R> {
    /// Reads the header of a crypt4gh file whose first bytes, `head`, were already read from
    /// `inner` (positioned just after them).
    pub(crate) fn read_after(head: &[u8], mut inner: R) -> Result<Self> {
        let header = Header::read(&mut head.chain(&mut inner))?;
        Ok(C4ghLocked {
            input: inner,
            header,
        })
    }

    /// The header, as read (not authenticated: packets are, one by one, when opened).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Length of the header in bytes: where segment 0 starts.
    pub fn header_len(&self) -> u64 {
        self.header.len()
    }

    /// An identity: one `X25519` per packet of method 0 (another reader's or this one's).
    pub fn needs(&self) -> KeyNeeded {
        let kinds = self
            .header
            .packets
            .iter()
            .filter(|p| p.method == X25519_CHACHA20_IETF_POLY1305)
            .map(|_| "crypt4gh X25519".to_string())
            .collect();
        KeyNeeded::Identity { kinds }
    }

    /// Opens the header packets with the X25519 keys of `identities` and returns the decrypting
    /// stream. No segment is read yet.
    pub fn unlock(
        self,
        identities: &[&dyn Identity],
        opts: &DecryptOptions,
    ) -> Result<C4ghReader<R>> {
        let opened = self.header.open(&keys_of(identities, &self.header)?)?;
        let format = C4ghSegments {
            opener: SegmentOpener::new(&opened.data_keys)?,
        };
        let at = (self.header.len(), self.header.len());
        let segments = Segments::new(self.input, format, at, &opts.threads);
        let chunks = C4ghChunks::new(segments, opened.edit_list, opened.writer_keys, opts)?;
        Ok(ChunkReader::from_source(chunks))
    }
}

/// The X25519 keys of `identities`. An identity that cannot give one (an SSH RSA key, a wrong
/// passphrase) is passed over while another key opens a packet; when none does, its error is
/// the answer.
fn keys_of(
    identities: &[&dyn Identity],
    header: &Header,
) -> Result<Vec<crate::crypto::c4gh::SecretKey>> {
    let mut keys = Vec::new();
    let mut first_error = None;
    for id in identities {
        match id.x25519_keys() {
            Ok(k) => keys.extend(k),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if header.open(&keys).is_err() => Err(e),
        _ if identities.is_empty() => Err(Error::InvalidOption(
            "a crypt4gh file needs an identity: a crypt4gh private key, an OpenSSH ed25519 key \
             or an age X25519 identity"
                .into(),
        )),
        _ => Ok(keys),
    }
}

/// The warning when the packets one reader opens carry different writer keys (FORMAT.md
/// §13.10): every writer known to zseal uses one writer key per recipient, so a packet added by
/// someone who knew only the reader's public key shows up this way.
pub(crate) fn writer_keys_warning(writers: &[PublicKey]) -> Option<String> {
    (writers.len() > 1).then(|| {
        format!(
            "the crypt4gh header packets this identity opens come from {} different writer \
             keys: a packet may have been added by someone who knew only your public key (an \
             added data key or edit list, FORMAT.md §13.10); only a signature proves the file",
            writers.len()
        )
    })
}
