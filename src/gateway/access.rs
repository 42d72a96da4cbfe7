//! Which buckets each access key may use, and how (docs/GATEWAY.md, "Access"): a credentials
//! line may name buckets after its key pair (`BUCKET`, `BUCKET:ro`, `BUCKET:wo`, `*` for every
//! other bucket); a line that names none may use every bucket, as before. The check runs on
//! every request, after s3s has checked its signature ([`Scopes`] is the service's `S3Access`),
//! and a copy's source bucket is checked for reading too. `ListBuckets` shows a key only the
//! buckets it may use ([`Scopes::lists`]).

use std::collections::HashMap;
use std::sync::Arc;

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::Credentials;
use s3s::dto::{CopyObjectInput, CopySource, UploadPartCopyInput};
use s3s::path::S3Path;
use s3s::{s3_error, S3Request, S3Result};

/// What a key may do in a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Read and write (a bucket named alone, or `:rw`).
    ReadWrite,
    /// List, head and get (`:ro`).
    Read,
    /// Create, upload, complete, abort, copy into and delete (`:wo`): a backup client's key.
    Write,
}

/// The buckets one key may use: every one (`None`), or those named, `*` standing for every
/// bucket not named.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope(pub Option<Vec<(String, Mode)>>);

impl Scope {
    /// Reads the fields after a line's key pair: `BUCKET[:ro|:wo|:rw]` each.
    pub fn parse(fields: &[&str]) -> Result<Scope, String> {
        if fields.is_empty() {
            return Ok(Scope(None));
        }
        let mut named = Vec::with_capacity(fields.len());
        for f in fields {
            let (bucket, mode) = match f.rsplit_once(':') {
                Some((b, "ro")) => (b, Mode::Read),
                Some((b, "wo")) => (b, Mode::Write),
                Some((b, "rw")) => (b, Mode::ReadWrite),
                Some((_, m)) => {
                    return Err(format!(
                        "'{f}': a bucket's access is :ro, :wo or :rw, not :{m}"
                    ))
                }
                None => (*f, Mode::ReadWrite),
            };
            if bucket.is_empty() {
                return Err(format!("'{f}' names no bucket"));
            }
            named.push((bucket.to_string(), mode));
        }
        Ok(Scope(Some(named)))
    }

    fn mode(&self, bucket: &str) -> Option<Mode> {
        let Some(named) = &self.0 else {
            return Some(Mode::ReadWrite);
        };
        let found = |b: &str| named.iter().find(|(n, _)| n == b).map(|(_, m)| *m);
        found(bucket).or_else(|| found("*"))
    }

    /// May this key read (`write` false) or write `bucket`?
    pub fn may(&self, bucket: &str, write: bool) -> bool {
        match self.mode(bucket) {
            Some(Mode::ReadWrite) => true,
            Some(Mode::Read) => !write,
            Some(Mode::Write) => write,
            None => false,
        }
    }
}

/// Every key's scope, by access key id.
#[derive(Clone, Debug, Default)]
pub struct Scopes(pub Arc<HashMap<String, Scope>>);

impl Scopes {
    /// Whether the request signed with `creds` may see `bucket` in a listing of buckets.
    pub fn lists(&self, creds: Option<&Credentials>, bucket: &str) -> bool {
        creds
            .and_then(|c| self.0.get(&c.access_key))
            .is_some_and(|s| s.mode(bucket).is_some())
    }

    fn check_bucket(&self, creds: Option<&Credentials>, bucket: &str, write: bool) -> S3Result<()> {
        let Some(creds) = creds else {
            return Err(s3_error!(AccessDenied, "Signature is required"));
        };
        let Some(scope) = self.0.get(&creds.access_key) else {
            return Err(s3_error!(
                AccessDenied,
                "This access key is not the gateway's"
            ));
        };
        if scope.may(bucket, write) {
            return Ok(());
        }
        let what = if write { "write" } else { "read" };
        Err(s3_error!(
            AccessDenied,
            "Access key {} may not {what} bucket {bucket} (its line in the gateway's credentials \
             file names the buckets it may use)",
            creds.access_key
        ))
    }

    /// A copy's source: read access to its bucket.
    fn check_source(&self, creds: Option<&Credentials>, source: &CopySource) -> S3Result<()> {
        match source {
            CopySource::Bucket { bucket, .. } => self.check_bucket(creds, bucket, false),
            _ => Err(s3_error!(
                NotImplemented,
                "A copy source is a bucket and a key here"
            )),
        }
    }
}

/// Operations that change a bucket or its objects; every other one reads.
fn writes(op: &str) -> bool {
    matches!(
        op,
        "PutObject"
            | "UploadPart"
            | "UploadPartCopy"
            | "CreateMultipartUpload"
            | "CompleteMultipartUpload"
            | "AbortMultipartUpload"
            | "CopyObject"
            | "CreateBucket"
    ) || op.starts_with("Put")
        || op.starts_with("Delete")
}

#[async_trait::async_trait]
impl S3Access for Scopes {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let write = writes(cx.s3_op().name());
        match cx.s3_path() {
            // ListBuckets: every key may list, and sees only its buckets.
            S3Path::Root => match cx.credentials() {
                Some(_) => Ok(()),
                None => Err(s3_error!(AccessDenied, "Signature is required")),
            },
            S3Path::Bucket { bucket } | S3Path::Object { bucket, .. } => {
                self.check_bucket(cx.credentials(), bucket, write)
            }
        }
    }

    async fn copy_object(&self, req: &mut S3Request<CopyObjectInput>) -> S3Result<()> {
        self.check_source(req.credentials.as_ref(), &req.input.copy_source)
    }

    async fn upload_part_copy(&self, req: &mut S3Request<UploadPartCopyInput>) -> S3Result<()> {
        self.check_source(req.credentials.as_ref(), &req.input.copy_source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_its_buckets_and_how() {
        assert_eq!(Scope::parse(&[]).unwrap(), Scope(None));
        let s = Scope::parse(&["backups:wo", "shared:ro", "mine", "*:ro"]).unwrap();
        assert!(s.may("backups", true) && !s.may("backups", false));
        assert!(s.may("shared", false) && !s.may("shared", true));
        assert!(s.may("mine", true) && s.may("mine", false));
        assert!(
            s.may("other", false) && !s.may("other", true),
            "* is read-only"
        );
        let only = Scope::parse(&["mine"]).unwrap();
        assert!(!only.may("theirs", false) && !only.may("theirs", true));
        assert!(Scope::parse(&["b:rx"])
            .unwrap_err()
            .contains(":ro, :wo or :rw"));
        assert!(Scope::parse(&[":ro"]).is_err());
        assert!(
            writes("DeleteObjects") && writes("PutObject") && writes("CompleteMultipartUpload")
        );
        assert!(!writes("GetObject") && !writes("ListObjectsV2") && !writes("HeadBucket"));
    }
}
