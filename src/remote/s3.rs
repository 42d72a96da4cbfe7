//! The two S3 calls `object_store` does not make, as requests of our own: a part of a multipart
//! upload that is a server-side copy of a byte range of another object (UploadPartCopy), and a
//! completion conditional on the object's version. With object_store's own `MultipartStore`
//! (create, put a part, abort) they are what `rekey` needs to change a header without moving
//! the payload through the client (docs/OBJECTS.md §4).
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
use http::{Method, StatusCode};
use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::client::{HttpClient, HttpConnector, HttpRequest, ReqwestConnector};
use object_store::multipart::PartId;

/// An S3 bucket as the target of requests of our own.
pub(crate) struct S3 {
    /// The store: the multipart upload itself (create, put, abort) is its `MultipartStore`.
    pub(crate) store: Arc<AmazonS3>,
    client: HttpClient,
    /// The bucket's URL, ending in `/` (path style `endpoint/bucket/`, or the AWS virtual host).
    bucket_url: url::Url,
    bucket: String,
    region: String,
    /// How long a failing request is retried.
    retry_timeout: Duration,
}

/// What the store answered.
struct Answer {
    status: StatusCode,
    body: Bytes,
}

impl S3 {
    pub(crate) fn new(
        store: Arc<AmazonS3>,
        client_options: &object_store::ClientOptions,
        endpoint: Option<String>,
        bucket: &str,
        region: String,
        virtual_hosted: bool,
    ) -> io::Result<S3> {
        let base = match (endpoint, virtual_hosted) {
            (Some(e), true) => format!("{}/", e.trim_end_matches('/')),
            (Some(e), false) => format!("{}/{bucket}/", e.trim_end_matches('/')),
            (None, _) => format!("https://{bucket}.s3.{region}.amazonaws.com/"),
        };
        let bucket_url = url::Url::parse(&base).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the S3 endpoint {base} is not a valid URL: {e}"),
            )
        })?;
        let client = ReqwestConnector::default()
            .connect(client_options)
            .map_err(|e| io::Error::other(format!("cannot set up an HTTP client: {e}")))?;
        Ok(S3 {
            store,
            client,
            bucket_url,
            bucket: bucket.to_string(),
            region,
            retry_timeout: Duration::from_secs(180),
        })
    }

    /// Retries failing requests for `t` (then reports the error).
    pub(crate) fn retrying_for(mut self, t: Duration) -> Self {
        self.retry_timeout = t;
        self
    }

    /// The URL of `key` (each segment percent-encoded as SigV4 expects) with `query`.
    fn url(&self, key: &str, query: &[(&str, &str)]) -> url::Url {
        let mut u = self.bucket_url.clone();
        if !key.is_empty() {
            if let Ok(mut segs) = u.path_segments_mut() {
                segs.pop_if_empty();
                for s in key.split('/') {
                    segs.push(s);
                }
            }
        }
        if !query.is_empty() {
            let mut q = u.query_pairs_mut();
            for (k, v) in query {
                q.append_pair(k, v);
            }
        }
        u
    }

    /// Sends a signed request, retrying what is transient (5xx, 429, connection failures, and
    /// S3's 200 answers that carry an error) with backoff; an answer of another failing status
    /// is an error naming `what`.
    async fn send(
        &self,
        what: &str,
        method: Method,
        url: url::Url,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> io::Result<Answer> {
        let started = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let failure = match self.send_once(&method, &url, headers, body.clone()).await {
                Ok(a) if a.status.is_success() && !has_error(&a.body) => return Ok(a),
                Ok(a) => {
                    let code = tag_values(&a.body, "Code").into_iter().next();
                    let message = tag_values(&a.body, "Message").into_iter().next();
                    let transient = a.status.is_server_error()
                        || a.status == StatusCode::TOO_MANY_REQUESTS
                        || matches!(code.as_deref(), Some("InternalError" | "SlowDown"));
                    let text = format!(
                        "{what}: the store answered {}{}{}",
                        a.status,
                        code.map(|c| format!(" {c}")).unwrap_or_default(),
                        message.map(|m| format!(": {m}")).unwrap_or_default()
                    );
                    let kind = match a.status {
                        StatusCode::NOT_FOUND => io::ErrorKind::NotFound,
                        StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => {
                            io::ErrorKind::PermissionDenied
                        }
                        StatusCode::PRECONDITION_FAILED | StatusCode::CONFLICT => {
                            io::ErrorKind::AlreadyExists
                        }
                        _ => io::ErrorKind::Other,
                    };
                    if !transient {
                        return Err(io::Error::new(kind, text));
                    }
                    io::Error::new(kind, text)
                }
                Err(e) => e,
            };
            if attempt >= 10 || started.elapsed() >= self.retry_timeout {
                return Err(failure);
            }
            tokio::time::sleep(Duration::from_millis(100 << attempt.min(7))).await;
        }
    }

    async fn send_once(
        &self,
        method: &Method,
        url: &url::Url,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> io::Result<Answer> {
        let credential = self
            .store
            .credentials()
            .get_credential()
            .await
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(url.as_str());
        for (k, v) in headers {
            builder = builder.header(*k, v);
        }
        let mut request: HttpRequest = builder
            .body(body.into())
            .map_err(|e| io::Error::other(format!("cannot build a request: {e}")))?;
        AwsAuthorizer::new(&credential, "s3", &self.region)
            .try_authorize(&mut request, None)
            .map_err(|e| io::Error::other(format!("cannot sign a request: {e}")))?;
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = body
            .bytes()
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Answer {
            status: parts.status,
            body,
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
        let url = self.url(key, &[("partNumber", &n.to_string()), ("uploadId", id)]);
        // The copy source is "/bucket/key", each segment percent-encoded.
        let mut src = url::Url::parse("http://source/").expect("a fixed URL parses");
        if let Ok(mut segs) = src.path_segments_mut() {
            segs.pop_if_empty().push(&self.bucket);
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
            .send(
                "copying a part server-side",
                Method::PUT,
                url,
                &headers,
                Bytes::new(),
            )
            .await?;
        tag_values(&a.body, "ETag")
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::other("the store copied a part without an ETag"))
    }

    /// Completes the upload from `parts`, numbered from 1 in order (as object_store numbers
    /// them). `if_match` makes it conditional on the object still being that version (S3's
    /// conditional writes; object_store completes unconditionally).
    pub(crate) async fn complete(
        &self,
        key: &str,
        id: &str,
        parts: &[PartId],
        if_match: Option<&str>,
    ) -> io::Result<()> {
        let url = self.url(key, &[("uploadId", id)]);
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, p) in parts.iter().enumerate() {
            xml += &format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                i + 1,
                escape(&p.content_id)
            );
        }
        xml += "</CompleteMultipartUpload>";
        let headers: Vec<(&str, String)> = if_match
            .map(|t| vec![("if-match", t.to_string())])
            .unwrap_or_default();
        self.send(
            "completing the upload",
            Method::POST,
            url,
            &headers,
            Bytes::from(xml),
        )
        .await
        .map(drop)
    }
}

/// True when an answer body is an S3 `<Error>` document (which S3 may send with status 200).
fn has_error(body: &[u8]) -> bool {
    let head = &body[..body.len().min(256)];
    String::from_utf8_lossy(head).contains("<Error>")
}

/// The text of every `<tag>…</tag>` element in a flat XML answer, unescaped.
fn tag_values(body: &[u8], tag: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = &text[..];
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(unescape(&rest[..j]));
        rest = &rest[j + close.len()..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", "\"")
        .replace("&amp;", "&")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_xml_answers() {
        let xml = b"<?xml version=\"1.0\"?><ListMultipartUploadsResult><Upload><Key>a&amp;b</Key>\
            <UploadId>u1</UploadId></Upload><Upload><Key>c</Key><UploadId>u2</UploadId></Upload>\
            </ListMultipartUploadsResult>";
        assert_eq!(tag_values(xml, "Key"), ["a&b", "c"]);
        assert_eq!(tag_values(xml, "UploadId"), ["u1", "u2"]);
        assert!(tag_values(xml, "ETag").is_empty());
        let copy = b"<CopyPartResult><ETag>&quot;9b2cf&quot;</ETag></CopyPartResult>";
        assert_eq!(tag_values(copy, "ETag"), ["\"9b2cf\""]);
        assert!(has_error(
            b"<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code></Error>"
        ));
        assert!(!has_error(copy));
        assert_eq!(escape("\"x\"&"), "&quot;x&quot;&amp;");
    }
}
