//! Requests of zseal's own to object stores, for what `object_store` does not send: S3's
//! ranged server-side copy (UploadPartCopy) and every store's conditional completion of a
//! multipart upload (S3's CompleteMultipartUpload with `If-Match` / `If-None-Match`, GCS's XML API
//! completion with `x-goog-if-generation-match`, Azure's Put Block List with `If-Match` /
//! `If-None-Match`). Each is signed with the store's own credentials through object_store's
//! public signers, sent through its HTTP client, retried on what is transient, and its answer is
//! read whole (`judge`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::azure::{AzureAuthorizer, MicrosoftAzure};
use object_store::client::{HttpClient, HttpConnector, HttpRequest, ReqwestConnector};
use object_store::gcp::GoogleCloudStorage;
use object_store::multipart::PartId;

use super::Own;

/// Whose credentials sign a request.
pub(crate) enum Signer {
    /// SigV4 for the bucket's region.
    S3 {
        store: Arc<AmazonS3>,
        region: String,
    },
    /// A bearer token (none for an emulator).
    Gcs(Arc<GoogleCloudStorage>),
    /// Azure's SharedKey, bearer token or SAS, for the account.
    Azure {
        store: Arc<MicrosoftAzure>,
        account: String,
    },
}

impl Signer {
    async fn sign(&self, request: &mut HttpRequest) -> io::Result<()> {
        let denied =
            |e: object_store::Error| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string());
        let unsigned =
            |e: object_store::Error| io::Error::other(format!("cannot sign a request: {e}"));
        match self {
            Signer::S3 { store, region } => {
                let c = store.credentials().get_credential().await.map_err(denied)?;
                AwsAuthorizer::new(&c, "s3", region)
                    .try_authorize(request, None)
                    .map_err(unsigned)
            }
            Signer::Gcs(store) => {
                let c = store.credentials().get_credential().await.map_err(denied)?;
                if !c.bearer.is_empty() {
                    let value = http::HeaderValue::from_str(&format!("Bearer {}", c.bearer))
                        .map_err(|e| io::Error::other(format!("cannot sign a request: {e}")))?;
                    request
                        .headers_mut()
                        .insert(http::header::AUTHORIZATION, value);
                }
                Ok(())
            }
            Signer::Azure { store, account } => {
                let c = store.credentials().get_credential().await.map_err(denied)?;
                AzureAuthorizer::new(&c, account)
                    .try_authorize(request)
                    .map_err(unsigned)
            }
        }
    }
}

/// A bucket (S3, GCS) or container (Azure) as the target of requests of our own: signed with
/// the store's credentials, sent under its URL.
pub(crate) struct Bucket {
    signer: Signer,
    client: HttpClient,
    /// How long a failing request is retried.
    retry_timeout: Duration,
    /// The bucket's URL, ending in `/`.
    base: url::Url,
}

/// What the store answered.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

impl Bucket {
    /// The bucket at `base` (its URL; a `/` is added at the end when missing).
    pub(crate) fn new(
        signer: Signer,
        client_options: &object_store::ClientOptions,
        base: &str,
        retry_timeout: Duration,
    ) -> io::Result<Bucket> {
        let text = format!("{}/", base.trim_end_matches('/'));
        let base = url::Url::parse(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the store's endpoint {text} is not a valid URL: {e}"),
            )
        })?;
        let client = ReqwestConnector::default()
            .connect(client_options)
            .map_err(|e| io::Error::other(format!("cannot set up an HTTP client: {e}")))?;
        Ok(Bucket {
            signer,
            client,
            retry_timeout,
            base,
        })
    }

    /// The URL of `key` in the bucket, each segment percent-encoded (as SigV4 expects), with
    /// `query`.
    pub(crate) fn url(&self, key: &str, query: &[(&str, &str)]) -> url::Url {
        let mut u = self.base.clone();
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
    pub(crate) async fn send(
        &self,
        what: &str,
        method: Method,
        url: url::Url,
        headers: &[(&str, String)],
        body: Bytes,
        expect: Option<&str>,
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
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(url.as_str());
        for (k, v) in headers {
            builder = builder.header(*k, v);
        }
        let mut request: HttpRequest = builder
            .body(body.into())
            .map_err(|e| io::Error::other(format!("cannot build a request: {e}")))?;
        self.signer.sign(&mut request).await?;
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
}

impl Own {
    /// Completes upload `id` of `key` from `parts` (each with its part number, in increasing
    /// order: object_store's index plus one) on the condition `when`, as this store says it: S3's and GCS's XML API
    /// (CompleteMultipartUpload; `If-Match` / `If-None-Match: *`, or
    /// `x-goog-if-generation-match`), Azure's Put Block List (`If-Match` / `If-None-Match: *`).
    pub(crate) async fn complete(
        &self,
        key: &str,
        id: &str,
        parts: &[(usize, PartId)],
        when: &Condition,
    ) -> io::Result<()> {
        const GENERATION: &str = "x-goog-if-generation-match";
        let (bucket, headers) = match self {
            Own::S3(s3) => (&s3.bucket, when.headers(("if-none-match", "*"), "if-match")),
            Own::Gcs(gcs) => (gcs, when.headers((GENERATION, "0"), GENERATION)),
            Own::Azure(az) => return complete_blocks(az, key, parts, when).await,
            Own::None => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this store is read-only",
                ))
            }
        };
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (number, p) in parts {
            xml += &format!(
                "<Part><PartNumber>{number}</PartNumber><ETag>{}</ETag></Part>",
                escape(&p.content_id)
            );
        }
        xml += "</CompleteMultipartUpload>";
        let url = bucket.url(key, &[("uploadId", id)]);
        let a = bucket
            .send(
                "completing the upload",
                Method::POST,
                url,
                &headers,
                Bytes::from(xml),
                Some("CompleteMultipartUploadResult"),
            )
            .await?;
        parse::<ETagged>(&a.body).map(drop)
    }
}

/// Azure's completion: commits the blocks `parts` (in order; a block's id names its number) as
/// the blob `key`.
async fn complete_blocks(
    container: &Bucket,
    key: &str,
    parts: &[(usize, PartId)],
    when: &Condition,
) -> io::Result<()> {
    use base64::Engine;
    // The block ids object_store gave the blocks (their part ids), as it lists them.
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<BlockList>\n");
    for (_, p) in parts {
        xml += &format!(
            "\t<Uncommitted>{}</Uncommitted>\n",
            b64.encode(&p.content_id)
        );
    }
    xml += "</BlockList>";
    let mut headers: Vec<(&str, String)> = vec![
        ("content-type", "application/xml".into()),
        ("content-length", xml.len().to_string()),
    ];
    headers.extend(when.headers(("if-none-match", "*"), "if-match"));
    let url = container.url(key, &[("comp", "blocklist")]);
    container
        .send(
            "committing the blocks",
            Method::PUT,
            url,
            &headers,
            Bytes::from(xml),
            None,
        )
        .await
        .map(drop)
}

/// What a write requires of the object it replaces; each store says it in its own header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Condition {
    /// Nothing (`--force`).
    None,
    /// That there is no object yet.
    Absent,
    /// That the object is still this version (an ETag; a generation on GCS).
    Matches(String),
}

impl Condition {
    /// The condition as a store says it: `absent`, the header and value for "no object yet";
    /// `matches`, the header that carries the version.
    pub(crate) fn headers(
        &self,
        absent: (&'static str, &'static str),
        matches: &'static str,
    ) -> Vec<(&'static str, String)> {
        match self {
            Condition::None => vec![],
            Condition::Absent => vec![(absent.0, absent.1.to_string())],
            Condition::Matches(version) => vec![(matches, version.clone())],
        }
    }
}

/// Requests a failing call is sent at most: the first and object_store's retries.
const RETRIES: u32 = super::store::MAX_RETRIES + 1;

/// What an answer means.
enum Verdict {
    Done,
    Failed { transient: bool, error: io::Error },
}

/// Judges an answer that should be the document `expect`: a failing status, an `<Error>`
/// document (whatever the status), or a success without the expected document all fail; what
/// S3 documents as worth retrying (5xx, 429, InternalError, SlowDown, a 200 whose body is not
/// the result) is transient.
fn judge(a: &Answer, expect: Option<&str>) -> Verdict {
    let root = root_element(&a.body);
    let is_error = matches!(&root, Ok(Some(r)) if r == "Error");
    if a.status.is_success() && !is_error {
        let Some(expect) = expect else {
            return Verdict::Done; // an answer whose body does not matter (Azure's 201)
        };
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
        (StatusCode::PRECONDITION_FAILED, _)
        | (_, Some("PreconditionFailed" | "ConditionNotMet")) => io::ErrorKind::AlreadyExists,
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
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> io::Result<T> {
    quick_xml::de::from_reader(body).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the store's answer cannot be read: {e}"),
        )
    })
}

/// A result that carries the new ETag (CopyPartResult, CompleteMultipartUploadResult).
#[derive(serde::Deserialize)]
pub(crate) struct ETagged {
    #[serde(rename = "ETag")]
    pub(crate) e_tag: String,
}

/// S3's error document.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ErrorDoc {
    code: Option<String>,
    message: Option<String>,
}

pub(crate) fn escape(s: &str) -> String {
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
        match judge(
            &answer(status, body),
            Some(expect).filter(|e| !e.is_empty()),
        ) {
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
        // Azure's Put Block List answers 201 with no body; its failed condition is 412.
        assert_eq!(verdict(201, "", ""), Ok(()));
        let (_, kind, _) = verdict(
            412,
            "<?xml version=\"1.0\"?><Error><Code>ConditionNotMet</Code></Error>",
            "",
        )
        .unwrap_err();
        assert_eq!(kind, io::ErrorKind::AlreadyExists);
    }
}
