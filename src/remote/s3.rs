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
use object_store::aws::{AmazonS3, AmazonS3Builder};

use super::answer::{parse, ETagged, Request};
use super::own::{Bucket, Signer};

/// An S3 bucket as the target of requests of our own.
#[derive(Clone)]
pub(crate) struct S3 {
    pub(crate) bucket: Bucket,
    /// The bucket's name, for the copy source.
    name: String,
}

/// How object_store 0.14 reads a boolean setting (`AWS_VIRTUAL_HOSTED_STYLE_REQUEST=1` is as
/// true as `true`); `None` for what it would refuse.
fn truthy(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" | "y" => Some(true),
        "0" | "false" | "off" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// Settles how `bucket` is addressed, for object_store and for our own requests alike, and
/// returns the builder and the bucket's URL (without a trailing `/`), as object_store 0.14
/// builds it (its `bucket_endpoint`, which it keeps private):
///
/// | endpoint (`AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`) | virtual-hosted | bucket URL |
/// |---|---|---|
/// | set | on | the endpoint as it is (it names the bucket) |
/// | set | off (default) | `{endpoint}/{bucket}` (MinIO, moto) |
/// | none | on | `https://{bucket}.s3.{region}.amazonaws.com` |
/// | none | off (default) | `https://s3.{region}.amazonaws.com/{bucket}` |
///
/// One exception, as the AWS SDKs make it: a bucket name with a dot is addressed path-style on
/// AWS even when virtual-hosted style is asked for, for object_store too (the setting is
/// turned off in the builder): AWS's certificate, `*.s3.{region}.amazonaws.com`, covers one
/// label only, so `my.bucket.s3…` fails TLS verification.
pub(crate) fn settle_addressing(mut b: AmazonS3Builder, bucket: &str) -> (AmazonS3Builder, String) {
    use object_store::aws::AmazonS3ConfigKey as K;
    let endpoint = b
        .get_config_value(&K::S3Endpoint)
        .or_else(|| b.get_config_value(&K::Endpoint));
    let region = b
        .get_config_value(&K::Region)
        .unwrap_or_else(|| "us-east-1".into());
    let mut virtual_hosted = b
        .get_config_value(&K::VirtualHostedStyleRequest)
        .and_then(|v| truthy(&v))
        .unwrap_or(false);
    if virtual_hosted && endpoint.is_none() && bucket.contains('.') {
        b = b.with_virtual_hosted_style_request(false);
        virtual_hosted = false;
    }
    let base = match (endpoint, virtual_hosted) {
        (Some(e), true) => e,
        (Some(e), false) => format!("{}/{bucket}", e.trim_end_matches('/')),
        (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
    };
    (b, base)
}

impl S3 {
    /// The bucket `bucket` at `base` (its URL from [`settle_addressing`]), signed for `region`.
    pub(crate) fn new(
        store: Arc<AmazonS3>,
        client_options: &object_store::ClientOptions,
        base: &str,
        bucket: &str,
        region: String,
        retry_timeout: Duration,
    ) -> io::Result<S3> {
        let signer = Signer::S3 { store, region };
        Ok(S3 {
            bucket: Bucket::new(signer, client_options, base, retry_timeout)?,
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
                Request::CopyPart,
                Method::PUT,
                url,
                &headers,
                Bytes::new(),
            )
            .await
            .result?;
        let copied: ETagged = parse(&a.body)?;
        Ok(copied.e_tag)
    }
}

/// One part of a multipart upload as the store lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListedPart {
    pub(crate) number: u32,
    /// The part's ETag, without quotes.
    pub(crate) e_tag: String,
    pub(crate) size: u64,
}

/// A page of S3's ListParts answer (the fields zseal reads).
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListPartsPage {
    #[serde(default, rename = "Part")]
    parts: Vec<PartDoc>,
    #[serde(default)]
    is_truncated: Option<String>,
    #[serde(default)]
    next_part_number_marker: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PartDoc {
    part_number: u32,
    #[serde(rename = "ETag")]
    e_tag: String,
    size: u64,
}

impl Bucket {
    /// Every part the store holds for upload `id` of `key` (S3's ListParts, which GCS's XML API
    /// has too, page after page), in part-number order. An upload that is gone fails with
    /// `Interrupted` (NoSuchUpload).
    pub(crate) async fn list_parts(&self, key: &str, id: &str) -> io::Result<Vec<ListedPart>> {
        let mut found = Vec::new();
        let mut marker = String::new();
        // 10,000 parts at 1,000 a page: a store that keeps saying "truncated" is cut off.
        for _ in 0..20 {
            let mut query = vec![("uploadId", id), ("max-parts", "1000")];
            if !marker.is_empty() {
                query.push(("part-number-marker", &marker));
            }
            let url = self.url(key, &query);
            // S3's document is ListPartsResult, moto's ListPartsResponse: the root is not
            // checked (an <Error> still is), the parts are read whole.
            let listing = Request::Check(None);
            let page: ListPartsPage = self.get("listing the upload's parts", listing, url).await?;
            let next = page.next_part_number_marker.clone().unwrap_or_default();
            found.extend(page.parts.into_iter().map(|p| ListedPart {
                number: p.part_number,
                e_tag: p.e_tag.trim_matches('"').to_string(),
                size: p.size,
            }));
            let truncated = page.is_truncated.as_deref() == Some("true");
            if !truncated || next.is_empty() || next == marker {
                found.sort_by_key(|p| p.number);
                return Ok(found);
            }
            marker = next;
        }
        Err(io::Error::other(
            "listing the upload's parts: the store listed more than 20 pages of parts",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::signer::Signer as _;

    /// The URL of `key` in our own requests, and the one object_store signs for the same
    /// settings (the path of its requests; the query is the signature), from a builder with
    /// `settings` and static keys: nothing is sent.
    fn urls(bucket: &str, settings: &[(&str, &str)]) -> (String, String) {
        let mut b = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_access_key_id("AKID")
            .with_secret_access_key("secret");
        for (k, v) in settings {
            b = b.with_config(k.parse().unwrap(), *v);
        }
        let (b, base) = settle_addressing(b, bucket);
        let store = Arc::new(b.build().unwrap());
        let key = "dir/x.zseal";
        let theirs = super::super::block_on(store.signed_url(
            Method::PUT,
            &object_store::path::Path::from(key),
            Duration::from_secs(60),
        ))
        .unwrap();
        let options = object_store::ClientOptions::new().with_allow_http(true);
        let ours = S3::new(store, &options, &base, bucket, "r".into(), Duration::ZERO).unwrap();
        let theirs = format!("{}{}", theirs.origin().ascii_serialization(), theirs.path());
        (ours.bucket.url(key, &[]).to_string(), theirs)
    }

    /// Our requests address what object_store's address: path style by default on AWS (as
    /// object_store 0.14 does), the bucket as a host name when virtual-hosted style is asked
    /// for (however object_store spells "true"), the endpoint's own path style (MinIO, moto),
    /// the endpoint as it is when it names the bucket; and a bucket name with a dot is
    /// addressed path-style on AWS even when virtual-hosted style is asked for (AWS's
    /// certificate covers one label), by both.
    #[test]
    fn our_requests_go_where_object_stores_go() {
        let region = ("aws_region", "eu-west-1");
        let virtual_hosted = ("aws_virtual_hosted_style_request", "true");
        for (bucket, settings, want) in [
            (
                "plain",
                vec![region],
                "https://s3.eu-west-1.amazonaws.com/plain/dir/x.zseal",
            ),
            (
                "plain",
                vec![],
                "https://s3.us-east-1.amazonaws.com/plain/dir/x.zseal",
            ),
            (
                "my.dotted.bucket",
                vec![region],
                "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/dir/x.zseal",
            ),
            (
                "plain",
                vec![region, virtual_hosted],
                "https://plain.s3.eu-west-1.amazonaws.com/dir/x.zseal",
            ),
            (
                "plain",
                vec![region, ("aws_virtual_hosted_style_request", "1")],
                "https://plain.s3.eu-west-1.amazonaws.com/dir/x.zseal",
            ),
            (
                "my.dotted.bucket",
                vec![region, virtual_hosted],
                "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/dir/x.zseal",
            ),
            (
                "my.dotted.bucket",
                vec![region, ("aws_endpoint", "http://127.0.0.1:9000/")],
                "http://127.0.0.1:9000/my.dotted.bucket/dir/x.zseal",
            ),
            (
                "plain",
                vec![
                    ("aws_endpoint", "http://127.0.0.1:9000"),
                    ("aws_endpoint_url_s3", "http://127.0.0.1:9001"),
                ],
                "http://127.0.0.1:9001/plain/dir/x.zseal",
            ),
            (
                "plain",
                vec![
                    virtual_hosted,
                    ("aws_endpoint", "https://plain.minio.example"),
                ],
                "https://plain.minio.example/dir/x.zseal",
            ),
        ] {
            let (ours, theirs) = urls(bucket, &settings);
            assert_eq!(ours, want, "{bucket} {settings:?}");
            assert_eq!(theirs, want, "object_store: {bucket} {settings:?}");
        }
    }
}
