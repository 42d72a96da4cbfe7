//! The one error type of the library. Every message says what is wrong and, where there is
//! something to do, what to do next.

use std::io;

/// Everything that can go wrong while writing or reading a zseal container.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error of the underlying reader or writer.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The input does not start with the zseal magic.
    #[error(
        "not a zseal file (the first bytes are not the zseal magic): was it encrypted with zseal?"
    )]
    NotZseal,
    /// A container of a format version this build does not read.
    #[error("unsupported zseal format version {0}: this zseal reads version 1; upgrade zseal")]
    UnsupportedVersion(u8),
    /// A header field outside what version 1 allows.
    #[error("invalid header: {0}")]
    InvalidHeader(String),
    /// A value beyond a limit of the format (docs/FORMAT.md §7).
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// The passphrase did not unwrap the file key.
    #[error("wrong passphrase (or the key stanza is damaged)")]
    WrongPassphrase,
    /// No key the caller holds opens any stanza of the file.
    #[error("no identity matched any of the {stanzas} recipient(s) of this file ({kinds}): pass the identity it was encrypted to with -i")]
    NoMatchingKey {
        /// How many stanzas the header holds.
        stanzas: usize,
        /// Their kinds, for the message.
        kinds: String,
    },
    /// The header MAC does not verify although a stanza unwrapped.
    #[error("header failed authentication: the file header is damaged or was modified")]
    HeaderAuth,
    /// A data frame failed AEAD authentication.
    #[error("chunk {0} failed authentication: the file is damaged or the key is wrong")]
    ChunkAuth(u64),
    /// The final frame failed authentication (or the stream was cut or extended around it).
    #[error("the final frame failed authentication: the file is damaged, truncated or extended")]
    FinalAuth,
    /// An authenticated chunk whose contents are inconsistent (a writer bug or a forged key).
    #[error("chunk {index} is invalid: {what}")]
    ChunkInvalid {
        /// The chunk number.
        index: u64,
        /// What is wrong with it.
        what: String,
    },
    /// The container ends before its structure does.
    #[error("the file is truncated: {0}; the copy is incomplete, fetch it again")]
    Truncated(String),
    /// The container is structurally damaged.
    #[error("the file is damaged: {0}")]
    Damaged(String),
    /// Bytes follow the footer.
    #[error("the file is damaged: unexpected data after the end of the container")]
    TrailingData,
    /// The whole-plaintext digest does not match.
    #[error("whole-file digest mismatch: the decrypted data does not match what was encrypted")]
    DigestMismatch,
    /// A requested range reaches past the end of the plaintext.
    #[error("the range {what} at byte {at}, past the end of the plaintext ({len} bytes)")]
    RangePastEnd {
        /// "starts" or "ends".
        what: &'static str,
        /// The offending offset.
        at: u64,
        /// The real plaintext length.
        len: u64,
    },
    /// An option given by the caller is not valid.
    #[error("{0}")]
    InvalidOption(String),
    /// A failure of the compression library.
    #[error("compression failed: {0}")]
    Codec(String),
    /// The operating system's random number generator failed.
    #[error("the system random number generator failed: {0}")]
    Random(String),
    /// A previous error left the stream unusable (streams are sticky: once failed, always failed).
    #[error("the stream already failed: {0}")]
    Poisoned(String),
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(io) => io,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

impl Error {
    /// Recovers a zseal error carried inside an `io::Error` (as the `Read`/`Write` adapters return
    /// them), or wraps the I/O error.
    pub fn from_io(e: io::Error) -> Self {
        if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            match e.into_inner().map(|b| b.downcast::<Error>()) {
                Some(Ok(inner)) => *inner,
                Some(Err(other)) => Error::Io(io::Error::other(other)),
                None => Error::Io(io::Error::other("unknown I/O error")),
            }
        } else {
            Error::Io(e)
        }
    }

    /// A short stable name of the error's kind, as test vectors and `--json` output spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io(_) => "io",
            Error::NotZseal => "not zseal",
            Error::UnsupportedVersion(_) => "unsupported version",
            Error::InvalidHeader(_) => "invalid header",
            Error::Limit(_) => "limit",
            Error::WrongPassphrase => "wrong passphrase",
            Error::NoMatchingKey { .. } => "no matching key",
            Error::HeaderAuth => "header auth",
            Error::ChunkAuth(_) => "chunk auth",
            Error::FinalAuth => "final auth",
            Error::ChunkInvalid { .. } => "chunk invalid",
            Error::Truncated(_) => "truncated",
            Error::Damaged(_) => "damaged",
            Error::TrailingData => "trailing data",
            Error::DigestMismatch => "digest mismatch",
            Error::RangePastEnd { .. } => "range past end",
            Error::InvalidOption(_) => "invalid option",
            Error::Codec(_) => "codec",
            Error::Random(_) => "random",
            Error::Poisoned(_) => "poisoned",
        }
    }

    /// A copy of this error for sticky stream state (I/O errors are not `Clone`).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io(e) => Error::Poisoned(e.to_string()),
            Error::NotZseal => Error::NotZseal,
            Error::UnsupportedVersion(v) => Error::UnsupportedVersion(*v),
            Error::InvalidHeader(s) => Error::InvalidHeader(s.clone()),
            Error::Limit(s) => Error::Limit(s.clone()),
            Error::WrongPassphrase => Error::WrongPassphrase,
            Error::NoMatchingKey { stanzas, kinds } => Error::NoMatchingKey {
                stanzas: *stanzas,
                kinds: kinds.clone(),
            },
            Error::HeaderAuth => Error::HeaderAuth,
            Error::ChunkAuth(i) => Error::ChunkAuth(*i),
            Error::FinalAuth => Error::FinalAuth,
            Error::ChunkInvalid { index, what } => Error::ChunkInvalid {
                index: *index,
                what: what.clone(),
            },
            Error::Truncated(s) => Error::Truncated(s.clone()),
            Error::Damaged(s) => Error::Damaged(s.clone()),
            Error::TrailingData => Error::TrailingData,
            Error::DigestMismatch => Error::DigestMismatch,
            Error::RangePastEnd { what, at, len } => Error::RangePastEnd {
                what,
                at: *at,
                len: *len,
            },
            Error::InvalidOption(s) => Error::InvalidOption(s.clone()),
            Error::Codec(s) => Error::Codec(s.clone()),
            Error::Random(s) => Error::Random(s.clone()),
            Error::Poisoned(s) => Error::Poisoned(s.clone()),
        }
    }
}
