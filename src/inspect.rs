//! What can be told about a container without any key: the header's algorithms and stanzas, and
//! for a file, the footer's chunk count and so the plaintext size to within one chunk (the exact
//! size is inside the encrypted final frame), or, for a file cut short or with a damaged end,
//! what is wrong with its end (the header is still described). Age and crypt4gh files
//! (FORMAT.md §10, §13) are described by what their headers and lengths say.

use std::io::{Read, Seek, SeekFrom};

use crate::error::{Error, Result};
use crate::format::{crypt4gh, Header};
use crate::pipeline::{read_footer, read_pieced_end, AgeLocked, Locked, Sealed};

/// A container's public description.
#[derive(Clone, Debug)]
pub struct Info {
    /// The parsed (not authenticated) header.
    pub header: Header,
    /// Header length in bytes.
    pub header_len: u64,
    /// Container length, when the input is a file.
    pub container_len: Option<u64>,
    /// Number of chunks, from the footer, when the input is a file whose end is a footer (of a
    /// pieced file: its data chunks, from the piece table).
    pub chunks: Option<u64>,
    /// A pieced file's pieces and plaintext length, from its piece table (FORMAT.md §14.3: not
    /// authenticated until the final frame is opened).
    pub pieces: Option<(u64, u64)>,
    /// Why the end of a file is not a valid footer, when it is not: cut short
    /// ([`crate::ErrorKind::Truncated`]: the copy is incomplete), damaged or extended. The
    /// header fields still say what the file's header says; `chunks` is `None`.
    pub problem: Option<Error>,
}

/// What an age file says without a key (FORMAT.md §10).
#[derive(Clone, Debug)]
pub struct AgeInfo {
    /// The stanza tags (`X25519`, `scrypt`, …), in header order.
    pub kinds: Vec<String>,
    /// What each stanza tells of its recipient, as a container's `recipient_details`
    /// (`ssh-ed25519 (key tag …)`, `AWS KMS key ARN`, `TAG (age plugin stanza)`).
    pub details: Vec<String>,
    /// ASCII-armored.
    pub armored: bool,
    /// Header length in bytes (decoded).
    pub header_len: u64,
    /// The file's length (decoded), when the input is a file.
    pub file_len: Option<u64>,
    /// STREAM chunks and the plaintext length they make, from the file's length (exact, as
    /// every chunk but the last is full; not authenticated). The age plaintext: in a file zseal
    /// wrote with zstd, the compressed stream, whose decompressed length needs the key.
    pub chunks: Option<u64>,
    /// See `chunks`.
    pub plaintext_len: Option<u64>,
}

/// A file of any format zseal reads, described.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Described {
    /// A zseal container.
    Zseal(Info),
    /// An age file.
    Age(AgeInfo),
    /// A crypt4gh file (FORMAT.md §13).
    Crypt4gh(crypt4gh::describe::Info),
}

impl Described {
    /// One JSON object, with `"format"` first.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Described::Zseal(i) => i.to_json(),
            Described::Crypt4gh(c) => c.to_json(),
            Described::Age(a) => serde_json::json!({
                "format": "age",
                "version": 1,
                "armored": a.armored,
                "recipients": a.kinds.len(),
                "recipient_kinds": a.kinds,
                "recipient_details": a.details,
                "header_len": a.header_len,
                "container_len": a.file_len,
                "chunks": a.chunks,
                "chunk_size": crate::format::age::CHUNK,
                "plaintext_len": a.plaintext_len,
            }),
        }
    }
}

fn age_info<R: Read>(l: &AgeLocked<R>) -> AgeInfo {
    AgeInfo {
        kinds: l.kinds(),
        details: l.recipient_details(),
        armored: l.armored(),
        header_len: l.header_len(),
        file_len: None,
        chunks: None,
        plaintext_len: None,
    }
}

/// Describes a file of any format read from a pipe (header only).
pub fn describe_stream(r: impl Read) -> Result<Described> {
    Ok(match Sealed::read(r)? {
        Sealed::Zseal(l) => Described::Zseal(Info {
            header_len: l.header_len(),
            header: l.header().clone(),
            container_len: None,
            chunks: None,
            pieces: None,
            problem: None,
        }),
        Sealed::Age(l) => Described::Age(age_info(&l)),
        Sealed::Crypt4gh(l) => Described::Crypt4gh(crypt4gh::describe::Info::of(l.header())),
    })
}

/// Describes a file of any format (header, and the footer or the length).
pub fn describe_file(mut f: impl Read + Seek) -> Result<Described> {
    f.seek(SeekFrom::Start(0))?;
    match Sealed::read(&mut f)? {
        Sealed::Zseal(_) => {
            f.seek(SeekFrom::Start(0))?;
            inspect_file(f).map(Described::Zseal)
        }
        Sealed::Age(mut l) => {
            let mut info = age_info(&l);
            let (len, shape) = l.shape()?;
            info.file_len = Some(len);
            info.chunks = Some(shape.0);
            info.plaintext_len = Some(shape.1);
            Ok(Described::Age(info))
        }
        Sealed::Crypt4gh(_) => crypt4gh::describe::describe_file(f).map(Described::Crypt4gh),
    }
}

/// Describes a container read from a pipe (header only).
pub fn inspect_stream(r: impl Read) -> Result<Info> {
    let locked = Locked::read(r)?;
    Ok(Info {
        header_len: locked.header_len(),
        header: locked.header().clone(),
        container_len: None,
        chunks: None,
        pieces: None,
        problem: None,
    })
}

/// Describes a container file (header and footer). A file whose header is whole but whose end
/// is not a valid footer (cut short, damaged, extended) is described all the same, with
/// [`Info::problem`] saying what is wrong; a header cut short or damaged is an error.
pub fn inspect_file(mut f: impl Read + Seek) -> Result<Info> {
    let mut info = inspect_stream(&mut f)?;
    let len = f.seek(SeekFrom::End(0))?;
    info.container_len = Some(len);
    let end = match info.header.pieced {
        true => read_pieced_end(&mut f, info.header_len, len, &info.header).map(|(end, _)| {
            let t = &end.table;
            info.pieces = Some((t.len() as u64, t.plaintext_len()));
            t.data_frames()
        }),
        false => read_footer(&mut f, info.header_len, len),
    };
    match end {
        Ok(n) => info.chunks = Some(n),
        Err(e) if e.kind().is_integrity() => info.problem = Some(e),
        Err(e) => return Err(e),
    }
    Ok(info)
}

impl Info {
    /// Lowest and highest plaintext size the chunk count allows (in a padded file the count
    /// includes the padding frames, so any size up to the highest; in a signed file one frame
    /// at least is a signature, FORMAT.md §12.2).
    pub fn plaintext_bounds(&self) -> Option<(u64, u64)> {
        let c = self.header.chunk_size() as u64;
        if let Some((_, len)) = self.pieces {
            return Some((len, len));
        }
        self.chunks.map(|n| {
            if self.header.padded || self.header.signed {
                let signatures = u64::from(self.header.signed);
                (0, n.saturating_sub(signatures) * c)
            } else if n == 0 {
                (0, 0)
            } else {
                ((n - 1) * c + 1, n * c)
            }
        })
    }

    /// The description as one JSON object: what `zseal inspect --json` prints and the dict the
    /// Python package's `inspect` returns, from this one list of fields.
    pub fn to_json(&self) -> serde_json::Value {
        let h = &self.header;
        let (lo, hi) = self.plaintext_bounds().unzip();
        serde_json::json!({
            "format": "zseal",
            "version": crate::format::VERSION,
            "cipher": h.cipher.name(),
            "compression": h.codec.name(),
            "digest": h.hash.name(),
            "chunk_size": h.chunk_size(),
            "padded": h.padded,
            "signed": h.signed,
            "pieced": h.pieced,
            "pieces": self.pieces.map(|(k, _)| k),
            "recipients": h.stanzas.len(),
            "recipient_kinds": self.recipient_kinds(),
            "recipient_details": self.recipient_details(),
            "header_len": self.header_len,
            "container_len": self.container_len,
            "chunks": self.chunks,
            "plaintext_min": lo,
            "plaintext_max": hi,
            "problem": self.problem.as_ref().map(Error::to_string),
            "problem_kind": self.problem.as_ref().map(|e| e.kind().name()),
        })
    }

    /// The kinds of the header's key stanzas (`passphrase`, `X25519`, …), in header order.
    pub fn recipient_kinds(&self) -> Vec<String> {
        crate::crypto::kind_names(&self.header.stanzas)
    }

    /// What each key stanza tells about its recipient, in header order: an SSH key's tag
    /// (`ssh-ed25519 (key tag AbCdEf)`, which `rekey --remove` matches), `X25519 (anonymous)`,
    /// `passphrase`.
    pub fn recipient_details(&self) -> Vec<String> {
        self.header
            .stanzas
            .iter()
            .map(crate::crypto::Stanza::describe)
            .collect()
    }
}
