//! The one error type of the library. Every message says what is wrong and, where there is
//! something to do, what to do next; none names a command-line flag (front ends add their own
//! advice). [`Error::kind`] gives the [`ErrorKind`] a program matches on.

use std::io;
use std::sync::Arc;

/// Everything that can go wrong while writing or reading a zseal container.
///
/// `Clone`, so that a failed stream can answer every later call with the same error (streams are
/// sticky: once failed, always failed).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error of the underlying reader or writer. Its message is the operating system's
    /// own, shown once (it is not also reported as a source).
    #[error("{0}")]
    Io(Arc<io::Error>),
    /// The input does not start with the zseal magic.
    #[error(
        "not a zseal, age or crypt4gh file (the first bytes are none of their magics): was it encrypted with zseal, age or crypt4gh?"
    )]
    NotZseal,
    /// The input is a compressed file, not an encrypted one (its first bytes are a
    /// compressor's magic).
    #[error("not an encrypted file: this is {what} data (its first bytes are {what}'s magic): decompress it with `{tool}`")]
    Compressed {
        /// The compressor's name.
        what: &'static str,
        /// The command that decompresses it.
        tool: &'static str,
    },
    /// The ASCII armor of an age file is malformed (FORMAT.md §10.1).
    #[error("the age file's ASCII armor is invalid: {0}; was it changed in transit (wrapping, line ends, added text)?")]
    Armor(String),
    /// A container of a format version this build does not read.
    #[error("unsupported zseal format version {0}: this zseal reads version 1; upgrade zseal")]
    UnsupportedVersion(u8),
    /// A header field outside what version 1 allows.
    #[error("invalid header: {0}")]
    InvalidHeader(String),
    /// A value beyond a limit of the format (docs/FORMAT.md §7).
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// The passphrase did not unwrap the file key, or it did and the header MAC then failed: a
    /// passphrase file gives one answer for both (FORMAT.md §2.3), so that a crafted stanza that
    /// opens under several passphrases cannot tell which one the user typed.
    #[error("wrong passphrase (or the file's header or key stanza was damaged)")]
    WrongPassphrase,
    /// No key the caller holds opens any stanza of the file.
    #[error("no identity matched any of the {stanzas} recipient(s) of this file ({kinds}): use the identity the file was encrypted to")]
    NoMatchingKey {
        /// How many stanzas the header holds.
        stanzas: usize,
        /// Their kinds, for the message.
        kinds: String,
    },
    /// The header MAC does not verify although a stanza unwrapped.
    #[error("header failed authentication: the file header is damaged or was modified")]
    HeaderAuth,
    /// A data frame failed AEAD authentication. Its key is the one that verified the header
    /// MAC (a wrong key fails there, before any chunk), so the chunk itself is at fault.
    #[error("chunk {0} failed authentication: it is damaged or was tampered with (the key is right: the header verified with it); fetch the file again or restore it from a copy")]
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
    /// A signer was required (FORMAT.md §12.4) and no signature of the file is a good one by
    /// any of them: the reasons, one per signature found.
    #[error("signature check failed: {0}")]
    Signature(String),
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
    /// The bytes are not a sealed record of a version this build reads (FORMAT.md §9).
    #[error("not a zseal record ({0}): was it sealed with zseal's records, by a newer version?")]
    NotRecord(String),
    /// A sealed record failed authentication.
    #[error(
        "record failed authentication: the record key, the context (the name it was stored \
         under) or the dictionary is not the one it was sealed with, or the record is damaged"
    )]
    RecordAuth,
    /// An authenticated record whose contents are inconsistent (a writer bug or a forged key).
    #[error("the record is invalid: {0}")]
    RecordInvalid(String),
    /// The record was compressed with a dictionary the opener was not given.
    #[error("the record was compressed with zstd dictionary id {id}, and {}: pass that dictionary", have_text(.have))]
    DictionaryMissing {
        /// The id the record names.
        id: u32,
        /// The ids the opener has.
        have: Vec<u32>,
    },
    /// A broken internal invariant (for example a worker thread that panicked): a bug in zseal.
    #[error("internal error, a bug in zseal (please report it): {0}")]
    Bug(String),
}

fn have_text(have: &[u32]) -> String {
    match have {
        [] => "no dictionary was given".into(),
        _ => format!(
            "the dictionaries given have id {}",
            have.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// What kind of failure an [`Error`] is: the value a program (or a binding such as the Python
/// package) matches on. [`ErrorKind::name`] is stable and is what test vectors and `--json` print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Io`].
    Io,
    /// [`Error::NotZseal`].
    NotZseal,
    /// [`Error::Armor`].
    Armor,
    /// [`Error::UnsupportedVersion`].
    UnsupportedVersion,
    /// [`Error::InvalidHeader`].
    InvalidHeader,
    /// [`Error::Limit`].
    Limit,
    /// [`Error::WrongPassphrase`].
    WrongPassphrase,
    /// [`Error::NoMatchingKey`].
    NoMatchingKey,
    /// [`Error::HeaderAuth`].
    HeaderAuth,
    /// [`Error::ChunkAuth`].
    ChunkAuth,
    /// [`Error::FinalAuth`].
    FinalAuth,
    /// [`Error::ChunkInvalid`].
    ChunkInvalid,
    /// [`Error::Truncated`].
    Truncated,
    /// [`Error::Damaged`].
    Damaged,
    /// [`Error::TrailingData`].
    TrailingData,
    /// [`Error::DigestMismatch`].
    DigestMismatch,
    /// [`Error::Signature`].
    Signature,
    /// [`Error::RangePastEnd`].
    RangePastEnd,
    /// [`Error::InvalidOption`].
    InvalidOption,
    /// [`Error::Codec`].
    Codec,
    /// [`Error::Random`].
    Random,
    /// [`Error::NotRecord`].
    NotRecord,
    /// [`Error::RecordAuth`].
    RecordAuth,
    /// [`Error::RecordInvalid`].
    RecordInvalid,
    /// [`Error::DictionaryMissing`].
    DictionaryMissing,
    /// [`Error::Bug`].
    Bug,
}

impl ErrorKind {
    /// A short stable name, e.g. `chunk auth`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::NotZseal => "not zseal",
            ErrorKind::Armor => "armor",
            ErrorKind::UnsupportedVersion => "unsupported version",
            ErrorKind::InvalidHeader => "invalid header",
            ErrorKind::Limit => "limit",
            ErrorKind::WrongPassphrase => "wrong passphrase",
            ErrorKind::NoMatchingKey => "no matching key",
            ErrorKind::HeaderAuth => "header auth",
            ErrorKind::ChunkAuth => "chunk auth",
            ErrorKind::FinalAuth => "final auth",
            ErrorKind::ChunkInvalid => "chunk invalid",
            ErrorKind::Truncated => "truncated",
            ErrorKind::Damaged => "damaged",
            ErrorKind::TrailingData => "trailing data",
            ErrorKind::DigestMismatch => "digest mismatch",
            ErrorKind::Signature => "signature",
            ErrorKind::RangePastEnd => "range past end",
            ErrorKind::InvalidOption => "invalid option",
            ErrorKind::Codec => "codec",
            ErrorKind::Random => "random",
            ErrorKind::NotRecord => "not record",
            ErrorKind::RecordAuth => "record auth",
            ErrorKind::RecordInvalid => "record invalid",
            ErrorKind::DictionaryMissing => "dictionary missing",
            ErrorKind::Bug => "bug",
        }
    }

    /// True for the kinds that say the container's bytes are not what was written (damage,
    /// truncation, forgery): what a caller reports as "the file is bad" rather than "the key or
    /// the options are wrong".
    pub fn is_integrity(self) -> bool {
        matches!(
            self,
            ErrorKind::HeaderAuth
                | ErrorKind::Armor
                | ErrorKind::ChunkAuth
                | ErrorKind::FinalAuth
                | ErrorKind::ChunkInvalid
                | ErrorKind::Truncated
                | ErrorKind::Damaged
                | ErrorKind::TrailingData
                | ErrorKind::DigestMismatch
                | ErrorKind::Signature
                | ErrorKind::RecordAuth
                | ErrorKind::RecordInvalid
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Error {
    /// The error for an input whose first bytes, `head`, are no format zseal reads: a
    /// compressed file is named as such (a `.zst` or `.gz` given to decrypt), anything else is
    /// [`Error::NotZseal`].
    pub fn not_encrypted(head: &[u8]) -> Error {
        const COMPRESSED: [(&[u8], &str, &str); 4] = [
            (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d"),
            (b"\x1f\x8b", "gzip", "gzip -d"),
            (b"\xfd7zXZ\x00", "xz", "xz -d"),
            (b"BZh", "bzip2", "bzip2 -d"),
        ];
        COMPRESSED
            .iter()
            .find(|(magic, _, _)| head.starts_with(magic))
            .map_or(Error::NotZseal, |&(_, what, tool)| Error::Compressed {
                what,
                tool,
            })
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io(_) => ErrorKind::Io,
            Error::NotZseal | Error::Compressed { .. } => ErrorKind::NotZseal,
            Error::Armor(_) => ErrorKind::Armor,
            Error::UnsupportedVersion(_) => ErrorKind::UnsupportedVersion,
            Error::InvalidHeader(_) => ErrorKind::InvalidHeader,
            Error::Limit(_) => ErrorKind::Limit,
            Error::WrongPassphrase => ErrorKind::WrongPassphrase,
            Error::NoMatchingKey { .. } => ErrorKind::NoMatchingKey,
            Error::HeaderAuth => ErrorKind::HeaderAuth,
            Error::ChunkAuth(_) => ErrorKind::ChunkAuth,
            Error::FinalAuth => ErrorKind::FinalAuth,
            Error::ChunkInvalid { .. } => ErrorKind::ChunkInvalid,
            Error::Truncated(_) => ErrorKind::Truncated,
            Error::Damaged(_) => ErrorKind::Damaged,
            Error::TrailingData => ErrorKind::TrailingData,
            Error::DigestMismatch => ErrorKind::DigestMismatch,
            Error::Signature(_) => ErrorKind::Signature,
            Error::RangePastEnd { .. } => ErrorKind::RangePastEnd,
            Error::InvalidOption(_) => ErrorKind::InvalidOption,
            Error::Codec(_) => ErrorKind::Codec,
            Error::Random(_) => ErrorKind::Random,
            Error::NotRecord(_) => ErrorKind::NotRecord,
            Error::RecordAuth => ErrorKind::RecordAuth,
            Error::RecordInvalid(_) => ErrorKind::RecordInvalid,
            Error::DictionaryMissing { .. } => ErrorKind::DictionaryMissing,
            Error::Bug(_) => ErrorKind::Bug,
        }
    }
}

/// An I/O error; one that carries a zseal error (as the `Read`/`Write` adapters return them)
/// gives that error back.
impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            if let Some(Ok(inner)) = e.into_inner().map(|b| b.downcast::<Error>()) {
                return *inner;
            }
            return Error::Bug("an I/O error lost the zseal error it carried".into());
        }
        if let Some(a) = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<age::armor::ArmoredReadError>())
        {
            return Error::Armor(a.to_string());
        }
        Error::Io(Arc::new(e))
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(io) => Arc::try_unwrap(io)
                .unwrap_or_else(|shared| io::Error::new(shared.kind(), shared.to_string())),
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zseal_error_survives_the_trip_through_io_error() {
        let back = Error::from(io::Error::from(Error::ChunkAuth(7)));
        assert!(matches!(back, Error::ChunkAuth(7)), "{back}");
        let plain = Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(plain.kind(), ErrorKind::Io);
        let again = io::Error::from(plain.clone());
        assert_eq!(again.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn an_io_error_is_shown_once() {
        use std::error::Error as _;
        let e = Error::from(io::Error::new(io::ErrorKind::NotFound, "gone"));
        assert_eq!(e.to_string(), "gone");
        assert!(e.source().is_none(), "a source would print the cause twice");
    }
}
