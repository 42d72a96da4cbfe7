//! The two S3 calls `object_store` does not make, as requests of our own (own.rs): a part of a
//! multipart upload that is a server-side copy of a byte range of another object
//! (UploadPartCopy), and a completion conditional on the object's version. With object_store's
//! own `MultipartStore` (create, put a part, abort) they are what `rekey` needs to change a
//! header without moving the payload through the client (docs/OBJECTS.md §4), and the
//! completion is what makes every S3 upload conditional.
//!
//! Why not the AWS SDK: `aws-sdk-s3` and its runtime add some 200 crates and about a minute of
//! release build on two cores for two calls; `object_store` already holds the hard parts (the
//! credential chain, SigV4 through its public `AwsAuthorizer`, an HTTP client with the same
//! timeouts and TLS), so each call here is a URL, a few headers and a flat XML answer.

use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use object_store::aws::AmazonS3;

use super::own::{parse, Bucket, ETagged, Signer};

/// An S3 bucket as the target of requests of our own.
pub(crate) struct S3 {
    pub(crate) bucket: Bucket,
    /// The bucket's name, for the copy source.
    name: String,
}

impl S3 {
    pub(crate) fn new(
        store: Arc<AmazonS3>,
        client_options: &object_store::ClientOptions,
        endpoint: Option<String>,
        bucket: &str,
        region: String,
        virtual_hosted: bool,
        retry_timeout: Duration,
    ) -> io::Result<S3> {
        let base = match (endpoint, virtual_hosted) {
            (Some(e), true) => e,
            (Some(e), false) => format!("{}/{bucket}", e.trim_end_matches('/')),
            (None, _) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        };
        let signer = Signer::S3 { store, region };
        Ok(S3 {
            bucket: Bucket::new(signer, client_options, &base, retry_timeout)?,
            name: bucket.to_string(),
        })
    }

    /// Makes part `n` a server-side copy of bytes `range` of `src_key` in the same bucket, as
    /// long as that object still has the ETag `src_etag`; the part's ETag.
    pub(crate) async fn upload_part_copy(
        &self,
        key: &str,
        id: &str,
        n: u32,
        src_key: &str,
        src_etag: Option<&str>,
        range: Range<u64>,
    ) -> io::Result<String> {
        let url = self
            .bucket
            .url(key, &[("partNumber", &n.to_string()), ("uploadId", id)]);
        // The copy source is "/bucket/key", each segment percent-encoded.
        let mut src = url::Url::parse("http://source/").expect("a fixed URL parses");
        if let Ok(mut segs) = src.path_segments_mut() {
            segs.pop_if_empty().push(&self.name);
            for s in src_key.split('/') {
                segs.push(s);
            }
        }
        let source = src.path().to_string();
        let mut headers = vec![
            ("x-amz-copy-source", source),
            (
                "x-amz-copy-source-range",
                format!("bytes={}-{}", range.start, range.end - 1),
            ),
        ];
        if let Some(tag) = src_etag {
            headers.push(("x-amz-copy-source-if-match", tag.to_string()));
        }
        let a = self
            .bucket
            .send(
                "copying a part server-side",
                Method::PUT,
                url,
                &headers,
                Bytes::new(),
                Some("CopyPartResult"),
            )
            .await?;
        let copied: ETagged = parse(&a.body)?;
        Ok(copied.e_tag)
    }
}
