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
    /// S3's answers of status 200 that carry an error) with backoff; an answer of another failing
    /// status is an error naming `what`. A successful answer must be the XML document whose root
    /// element is `expect`, parsed whole: S3 may answer a completion or a copy `200 OK`, keep the
    /// connection open with whitespace for minutes and only then send an `<Error>` document, so
    /// neither the status nor the first bytes say that it worked.
    async fn send(
        &self,
        what: &str,
        method: Method,
        url: url::Url,
        headers: &[(&str, String)],
        body: Bytes,
        expect: &str,
    ) -> io::Result<Answer> {
        let started = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let failure = match self.send_once(&method, &url, headers, body.clone()).await {
                Ok(a) => match judge(&a, expect) {
                    Verdict::Done => return Ok(a),
                    Verdict::Failed { transient, error } => {
                        let error = io::Error::new(error.kind(), format!("{what}: {error}"));
                        if !transient {
                            return Err(error);
                        }
                        error
                    }
                },
                Err(e) => e,
            };
            if attempt >= RETRIES || started.elapsed() >= self.retry_timeout {
                return Err(failure);
            }
            tokio::time::sleep(super::backoff(attempt)).await;
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
                "CopyPartResult",
            )
            .await?;
        let copied: ETagged = parse(&a.body)?;
        Ok(copied.e_tag)
    }

    /// Completes the upload from `parts`, numbered from 1 in order (as object_store numbers
    /// them), on the condition `when` (S3's conditional writes: object_store completes
    /// unconditionally). Returns the new object's ETag.
    pub(crate) async fn complete(
        &self,
        key: &str,
        id: &str,
        parts: &[PartId],
        when: &Condition,
    ) -> io::Result<String> {
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
        let headers: Vec<(&str, String)> = match when {
            Condition::None => vec![],
            Condition::Absent => vec![("if-none-match", "*".into())],
            Condition::Matches(tag) => vec![("if-match", tag.clone())],
        };
        let a = self
            .send(
                "completing the upload",
                Method::POST,
                url,
                &headers,
                Bytes::from(xml),
                "CompleteMultipartUploadResult",
            )
            .await?;
        let done: ETagged = parse(&a.body)?;
        Ok(done.e_tag)
    }
}

/// What a write requires of the object it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Condition {
    /// Nothing (`--force`).
    None,
    /// That there is no object yet (`If-None-Match: *`).
    Absent,
    /// That the object is still the version with this ETag (`If-Match`).
    Matches(String),
}

/// Requests a failing call is sent at most (object_store's own retry policy allows 10 retries).
const RETRIES: u32 = 11;

/// What an answer means.
enum Verdict {
    Done,
    Failed { transient: bool, error: io::Error },
}

/// Judges an answer that should be the document `expect`: a failing status, an `<Error>`
/// document (whatever the status), or a success without the expected document all fail; what
/// S3 documents as worth retrying (5xx, 429, InternalError, SlowDown, a 200 whose body is not
/// the result) is transient.
fn judge(a: &Answer, expect: &str) -> Verdict {
    let root = root_element(&a.body);
    let is_error = matches!(&root, Ok(Some(r)) if r == "Error");
    if a.status.is_success() && !is_error {
        return match root {
            Ok(Some(r)) if r == expect => Verdict::Done,
            Ok(found) => Verdict::Failed {
                transient: true,
                error: io::Error::other(format!(
                    "the store answered {} without a {expect} document ({})",
                    a.status,
                    found.map_or("an empty body".into(), |r| format!(
                        "its root element is <{r}>"
                    ))
                )),
            },
            Err(e) => Verdict::Failed {
                transient: true,
                error: io::Error::other(format!(
                    "the store answered {} with a body that is not XML: {e}",
                    a.status
                )),
            },
        };
    }
    let doc: ErrorDoc = if is_error {
        parse(&a.body).unwrap_or_default()
    } else {
        ErrorDoc::default()
    };
    // 409 ConditionalRequestConflict: a conditional write raced another; S3 says to retry.
    let transient = a.status.is_server_error()
        || a.status == StatusCode::TOO_MANY_REQUESTS
        || a.status == StatusCode::CONFLICT
        || matches!(
            doc.code.as_deref(),
            Some("InternalError" | "SlowDown" | "ServiceUnavailable" | "RequestTimeout")
        );
    let kind = match (a.status, doc.code.as_deref()) {
        // The upload is gone: aborted (by a signal, or a lifecycle rule).
        (_, Some("NoSuchUpload")) => io::ErrorKind::Interrupted,
        (StatusCode::NOT_FOUND, _) | (_, Some("NoSuchKey")) => io::ErrorKind::NotFound,
        (StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED, _) | (_, Some("AccessDenied")) => {
            io::ErrorKind::PermissionDenied
        }
        (StatusCode::PRECONDITION_FAILED, _) | (_, Some("PreconditionFailed")) => {
            io::ErrorKind::AlreadyExists
        }
        _ => io::ErrorKind::Other,
    };
    let text = format!(
        "the store answered {}{}{}",
        a.status,
        doc.code.map(|c| format!(" {c}")).unwrap_or_default(),
        doc.message.map(|m| format!(": {m}")).unwrap_or_default()
    );
    Verdict::Failed {
        transient,
        error: io::Error::new(kind, text),
    }
}

/// The name of an XML document's root element, read to its end; `None` for a body without one
/// (empty, or whitespace only); an error for a body that is not one well-formed document (text
/// outside the root, a second root, a document cut short).
fn root_element(body: &[u8]) -> Result<Option<String>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut buf = Vec::new();
    let (mut root, mut depth, mut closed) = (None, 0usize, false);
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| e.to_string())?;
        match event {
            Event::Start(_) | Event::Empty(_) if closed => {
                return Err("a second element after the root".into())
            }
            Event::Start(ref e) | Event::Empty(ref e) if depth == 0 => {
                root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                if matches!(event, Event::Empty(_)) {
                    closed = true;
                } else {
                    depth = 1;
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => {
                depth -= 1;
                closed = depth == 0;
            }
            Event::Text(t) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                return Err("text outside the root element".into())
            }
            Event::Eof if depth > 0 => return Err("the document is cut short".into()),
            Event::Eof => return Ok(root),
            _ => {}
        }
        buf.clear();
    }
}

/// The whole document, deserialized (an error names what is missing or malformed).
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> io::Result<T> {
    quick_xml::de::from_reader(body).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the store's answer cannot be read: {e}"),
        )
    })
}

/// A result that carries the new ETag (CopyPartResult, CompleteMultipartUploadResult).
#[derive(serde::Deserialize)]
struct ETagged {
    #[serde(rename = "ETag")]
    e_tag: String,
}

/// S3's error document.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ErrorDoc {
    code: Option<String>,
    message: Option<String>,
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

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_string()),
        }
    }

    fn verdict(status: u16, body: &str, expect: &str) -> Result<(), (bool, io::ErrorKind, String)> {
        match judge(&answer(status, body), expect) {
            Verdict::Done => Ok(()),
            Verdict::Failed { transient, error } => {
                Err((transient, error.kind(), error.to_string()))
            }
        }
    }

    /// A completion or a copy succeeds only with its result document, read whole: an error
    /// document after any amount of whitespace (S3's keep-alive), a missing or other document
    /// fail, and which failures are retried.
    #[test]
    fn answers_are_judged_by_their_whole_document() {
        const DONE: &str = "CompleteMultipartUploadResult";
        let ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult \
                  xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>l</Location>\
                  <Bucket>b</Bucket><Key>k</Key><ETag>&quot;3858f6-9&quot;</ETag>\
                  </CompleteMultipartUploadResult>";
        assert_eq!(verdict(200, ok, DONE), Ok(()));
        let done: ETagged = parse(ok.as_bytes()).unwrap();
        assert_eq!(done.e_tag, "\"3858f6-9\"");
        for pad in [0, 250, 255, 256, 300, 70_000] {
            let late = format!(
                "{}<?xml version=\"1.0\"?><Error><Code>InternalError</Code>\
                 <Message>We encountered an internal error.</Message></Error>",
                " \n".repeat(pad / 2)
            );
            let (transient, _, text) = verdict(200, &late, DONE).unwrap_err();
            assert!(transient, "{pad}");
            assert!(
                text.contains("200 OK InternalError: We encountered"),
                "{text}"
            );
            let denied = late.replace("InternalError", "AccessDenied");
            let (transient, kind, _) = verdict(200, &denied, DONE).unwrap_err();
            assert!(
                !transient && kind == io::ErrorKind::PermissionDenied,
                "{pad}"
            );
        }
        for (body, why) in [
            ("", "an empty body"),
            ("   \n  ", "an empty body"),
            (
                "<CopyPartResult><ETag>x</ETag></CopyPartResult>",
                "<CopyPartResult>",
            ),
            ("<CompleteMultipartUploadResult><ETag>", "not XML"),
            (
                "<CompleteMultipartUploadResult><ETag>x</ETag></CompleteMultipartUploadResult>\
                 <Error><Code>InternalError</Code></Error>",
                "not XML",
            ),
            ("garbage", "not XML"),
        ] {
            let (transient, _, text) = verdict(200, body, DONE).unwrap_err();
            assert!(transient, "{body}");
            assert!(text.contains(why), "{body}: {text}");
        }
        let (_, kind, text) = verdict(
            412,
            "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions \
             you specified did not hold</Message></Error>",
            DONE,
        )
        .unwrap_err();
        assert_eq!(kind, io::ErrorKind::AlreadyExists);
        assert!(
            text.contains("412 Precondition Failed PreconditionFailed"),
            "{text}"
        );
        let (transient, kind, _) =
            verdict(404, "<Error><Code>NoSuchUpload</Code></Error>", DONE).unwrap_err();
        assert!(!transient && kind == io::ErrorKind::Interrupted);
        let (transient, kind, _) =
            verdict(404, "<Error><Code>NoSuchKey</Code></Error>", DONE).unwrap_err();
        assert!(!transient && kind == io::ErrorKind::NotFound);
        assert!(
            verdict(
                409,
                "<Error><Code>ConditionalRequestConflict</Code></Error>",
                DONE
            )
            .unwrap_err()
            .0
        );
        assert!(verdict(503, "", DONE).unwrap_err().0);
        let copy = "<CopyPartResult><LastModified>2026-01-01T00:00:00Z</LastModified>\
                    <ETag>&quot;9b2cf&quot;</ETag></CopyPartResult>";
        assert_eq!(verdict(200, copy, "CopyPartResult"), Ok(()));
        let copied: ETagged = parse(copy.as_bytes()).unwrap();
        assert_eq!(copied.e_tag, "\"9b2cf\"");
        assert!(parse::<ETagged>(b"<CopyPartResult></CopyPartResult>").is_err());
        assert_eq!(escape("\"x\"&"), "&quot;x&quot;&amp;");
    }
}
