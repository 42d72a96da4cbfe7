//! A request body fed into the engine: the bytes a client sends (s3s has already removed the
//! aws-chunked framing and checked each chunk's signature) are written to the sealing writer as
//! they arrive, and checked against the `Content-MD5` and `x-amz-checksum-*` the client gave,
//! in a header or in the aws-chunked trailer. A mismatch fails the request: nothing is published.

use std::io::Write;

use futures_util::StreamExt;
use md5::Digest as _;
use s3s::checksum::ChecksumHasher;
use s3s::dto::{Checksum, ChecksumAlgorithm, StreamingBlob};
use s3s::{s3_error, S3Result, TrailingHeaders};

use super::store::internal;

/// What the client said its body's digests are.
#[derive(Default)]
pub struct Expected {
    /// The `x-amz-checksum-*` headers (the trailer, when there is one, replaces them).
    pub checksum: Checksum,
    /// `x-amz-sdk-checksum-algorithm`: the algorithm of a checksum that comes in the trailer.
    pub algorithm: Option<ChecksumAlgorithm>,
    /// `Content-MD5`, base64.
    pub content_md5: Option<String>,
}

/// A PutObject's or UploadPart's `input` (two types with the same fields): its body, or
/// IncompleteBody, and the [`Expected`] of its headers.
macro_rules! body_of {
    ($input:ident) => {{
        let body = $input
            .body
            .ok_or_else(|| s3s::s3_error!(IncompleteBody, "the request has no body"))?;
        let expected = $crate::gateway::body::Expected {
            checksum: s3s::dto::Checksum {
                checksum_crc32: $input.checksum_crc32,
                checksum_crc32c: $input.checksum_crc32c,
                checksum_sha1: $input.checksum_sha1,
                checksum_sha256: $input.checksum_sha256,
                checksum_crc64nvme: $input.checksum_crc64nvme,
                ..Default::default()
            },
            algorithm: $input.checksum_algorithm,
            content_md5: $input.content_md5,
        };
        (body, expected)
    }};
}
pub(crate) use body_of;

/// A PutObject's or UploadPart's output (`$output`, two types with the same fields): the ETag,
/// and the checksums computed over the body (`Fed::checksum`), echoed back.
macro_rules! answer {
    ($output:ident, $etag:expr, $checksum:expr) => {{
        let c: s3s::dto::Checksum = $checksum;
        s3s::dto::$output {
            e_tag: Some($etag),
            checksum_crc32: c.checksum_crc32,
            checksum_crc32c: c.checksum_crc32c,
            checksum_sha1: c.checksum_sha1,
            checksum_sha256: c.checksum_sha256,
            checksum_crc64nvme: c.checksum_crc64nvme,
            ..Default::default()
        }
    }};
}
pub(crate) use answer;

/// What a body was: its length and the checksums the client asked for, to echo back.
pub struct Fed {
    /// Plaintext bytes received.
    pub len: u64,
    /// The checksums computed over them (the ones the client named).
    pub checksum: Checksum,
}

impl Expected {
    /// A hasher for each checksum the client named.
    fn hasher(&self) -> S3Result<ChecksumHasher> {
        let mut h = ChecksumHasher::default();
        let c = &self.checksum;
        let alg = self.algorithm.as_ref().map(|a| a.as_str());
        if c.checksum_crc32.is_some() || alg == Some(ChecksumAlgorithm::CRC32) {
            h.crc32 = Some(Default::default());
        }
        if c.checksum_crc32c.is_some() || alg == Some(ChecksumAlgorithm::CRC32C) {
            h.crc32c = Some(Default::default());
        }
        if c.checksum_sha1.is_some() || alg == Some(ChecksumAlgorithm::SHA1) {
            h.sha1 = Some(Default::default());
        }
        if c.checksum_sha256.is_some() || alg == Some(ChecksumAlgorithm::SHA256) {
            h.sha256 = Some(Default::default());
        }
        if c.checksum_crc64nvme.is_some() || alg == Some(ChecksumAlgorithm::CRC64NVME) {
            h.crc64nvme = Some(Default::default());
        }
        match alg {
            None
            | Some(
                ChecksumAlgorithm::CRC32
                | ChecksumAlgorithm::CRC32C
                | ChecksumAlgorithm::SHA1
                | ChecksumAlgorithm::SHA256
                | ChecksumAlgorithm::CRC64NVME,
            ) => Ok(h),
            Some(other) => Err(s3_error!(
                NotImplemented,
                "checksum algorithm {other:?} is not supported: use CRC32, CRC32C, SHA1, SHA256 or CRC64NVME"
            )),
        }
    }
}

/// Writes `body` to `out` as it arrives (called on a blocking thread; `rt` runs the stream),
/// then checks its digests. Returns its length and checksums.
pub fn feed(
    rt: &tokio::runtime::Handle,
    mut body: StreamingBlob,
    mut expected: Expected,
    trailers: Option<TrailingHeaders>,
    out: &mut dyn Write,
) -> S3Result<Fed> {
    let mut hasher = expected.hasher()?;
    let mut md5 = expected.content_md5.as_ref().map(|_| md5::Md5::new());
    let mut len = 0u64;
    while let Some(chunk) = rt.block_on(body.next()) {
        let chunk =
            chunk.map_err(|e| s3_error!(IncompleteBody, "the request body ended early: {e}"))?;
        hasher.update(&chunk);
        if let Some(m) = md5.as_mut() {
            m.update(&chunk);
        }
        len += chunk.len() as u64;
        out.write_all(&chunk).map_err(|e| internal("sealing", e))?;
    }
    if let Some(t) = trailers.and_then(|t| t.take()) {
        from_trailer(&t, &mut expected.checksum)?;
    }
    let checksum = hasher.finalize();
    check_md5(expected.content_md5.as_deref(), md5)?;
    check_same(&expected.checksum, &checksum)?;
    Ok(Fed { len, checksum })
}

/// The `x-amz-checksum-*` of an aws-chunked trailer (s3s verified its signature).
fn from_trailer(t: &http::HeaderMap, c: &mut Checksum) -> S3Result<()> {
    let fields: [(&str, &mut Option<String>); 5] = [
        ("x-amz-checksum-crc32", &mut c.checksum_crc32),
        ("x-amz-checksum-crc32c", &mut c.checksum_crc32c),
        ("x-amz-checksum-sha1", &mut c.checksum_sha1),
        ("x-amz-checksum-sha256", &mut c.checksum_sha256),
        ("x-amz-checksum-crc64nvme", &mut c.checksum_crc64nvme),
    ];
    for (name, slot) in fields {
        if let Some(v) = t.get(name) {
            let v = v
                .to_str()
                .map_err(|_| s3_error!(InvalidArgument, "the trailer's {name} is not text"))?;
            *slot = Some(v.to_owned());
        }
    }
    Ok(())
}

fn check_md5(given: Option<&str>, md5: Option<md5::Md5>) -> S3Result<()> {
    use base64::Engine as _;
    let (Some(given), Some(md5)) = (given, md5) else {
        return Ok(());
    };
    let ours = base64::engine::general_purpose::STANDARD.encode(md5.finalize());
    if ours != given {
        return Err(s3_error!(
            BadDigest,
            "the body's MD5 is {ours}, Content-MD5 says {given}: the body was damaged on the way, nothing was stored"
        ));
    }
    Ok(())
}

/// Each checksum the client gave equals the one computed.
fn check_same(given: &Checksum, ours: &Checksum) -> S3Result<()> {
    let pairs = [
        ("CRC32", &given.checksum_crc32, &ours.checksum_crc32),
        ("CRC32C", &given.checksum_crc32c, &ours.checksum_crc32c),
        ("SHA1", &given.checksum_sha1, &ours.checksum_sha1),
        ("SHA256", &given.checksum_sha256, &ours.checksum_sha256),
        (
            "CRC64NVME",
            &given.checksum_crc64nvme,
            &ours.checksum_crc64nvme,
        ),
    ];
    for (name, given, ours) in pairs {
        if let Some(g) = given {
            if Some(g) != ours.as_ref() {
                return Err(s3_error!(
                    BadDigest,
                    "the body's {name} is {}, the request says {g}: the body was damaged on the way, nothing was stored",
                    ours.as_deref().unwrap_or("not computed")
                ));
            }
        }
    }
    Ok(())
}
