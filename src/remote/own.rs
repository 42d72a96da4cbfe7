//! Requests of zseal's own to object stores, for what `object_store` does not send: S3's
//! ranged server-side copy (UploadPartCopy) and every store's conditional completion of a
//! multipart upload (S3's CompleteMultipartUpload with `If-Match` / `If-None-Match`, GCS's XML API
//! completion with `x-goog-if-generation-match`, Azure's Put Block List with `If-Match` /
//! `If-None-Match`). Each is signed with the store's own credentials through object_store's
//! public signers, sent through its HTTP client, retried on what is transient, and its answer is
//! read whole (`judge`; which 409s are transient: `CONFLICTS`). A completion that
//! fails after an attempt whose outcome is unknown checks whether the object is its own
//! (`Own::holds`): the first attempt may have succeeded and lost its answer.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::azure::{AzureAuthorizer, MicrosoftAzure};
use object_store::client::{HttpClient, HttpConnector, HttpRequest, ReqwestConnector};
use object_store::gcp::GoogleCloudStorage;
use object_store::multipart::PartId;

use super::answer::{escape, judge, parse, Answer, ETagged, Request, Verdict};
use super::Own;

/// Whose credentials sign a request.
#[derive(Clone)]
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
#[derive(Clone)]
pub(crate) struct Bucket {
    signer: Signer,
    client: HttpClient,
    /// How long a failing request is retried.
    retry_timeout: Duration,
    /// The bucket's URL, ending in `/`.
    base: url::Url,
}

/// What [`Bucket::send`] got: the answer or the error, and whether an attempt failed
/// in a way that leaves open whether the store carried it out (no answer, an answer cut short,
/// a 5xx: whatever is retried).
pub(crate) struct Sent {
    pub(crate) result: io::Result<Answer>,
    pub(crate) uncertain: bool,
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

    /// GETs `url` (signed, retried as [`Bucket::send`] does) and reads its answer, the XML
    /// document `request` expects, whole into a `T`.
    pub(crate) async fn get<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        request: Request,
        url: url::Url,
    ) -> io::Result<T> {
        let sent = self.send(what, request, Method::GET, url, &[], Bytes::new());
        parse(&sent.await.result?.body)
    }

    /// Sends a signed request, retrying what is transient (5xx, 429, connection failures, and
    /// S3's answers of status 200 that carry an error) with backoff; an answer of another failing
    /// status is an error naming `what`. A successful answer must be the XML document
    /// `request` expects, parsed whole: S3 may answer a completion or a copy `200 OK`, keep the
    /// connection open with whitespace for minutes and only then send an `<Error>` document, so
    /// neither the status nor the first bytes say that it worked.
    ///
    /// What it got comes with whether an attempt may have been carried out although it failed
    /// ([`Sent`]); most callers take only its `result`.
    pub(crate) async fn send(
        &self,
        what: &str,
        request: Request,
        method: Method,
        url: url::Url,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Sent {
        use super::store::{retried, Attempt};
        let (method, url) = (&method, &url);
        let (result, failed) = retried(self.retry_timeout, move || {
            let body = body.clone();
            async move {
                match self.send_once(method, url, headers, body).await {
                    Ok(a) => match judge(&a, request) {
                        Verdict::Done => Attempt::Done(a),
                        Verdict::Failed { transient, error } => {
                            let error = io::Error::new(error.kind(), format!("{what}: {error}"));
                            match transient {
                                true => Attempt::Transient(error),
                                false => Attempt::Failed(error),
                            }
                        }
                    },
                    Err(e) => Attempt::Transient(e),
                }
            }
        })
        .await;
        // An attempt that failed transiently may have been carried out all the same.
        Sent {
            result,
            uncertain: failed > 0,
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
        execute(&self.client, request).await
    }
}

/// Sends a signed request once through object_store's HTTP client and reads the answer whole
/// (zseal's own store requests, and the KMS calls of `kms.rs`).
pub(crate) async fn execute(client: &HttpClient, request: HttpRequest) -> io::Result<Answer> {
    let response = client
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
        headers: parts.headers,
        body,
    })
}

impl Own {
    /// Completes upload `id` of `key` from `parts` (each with its part number, in increasing
    /// order: object_store's index plus one) on the condition `when`, as this store says it:
    /// S3's and GCS's XML API (CompleteMultipartUpload; `If-Match` / `If-None-Match: *`, or
    /// `x-goog-if-generation-match`), Azure's Put Block List (`If-Match` / `If-None-Match: *`).
    /// `marker` is the value of the metadata [`UPLOAD_MARKER`] the upload was created with
    /// (GCS).
    ///
    /// A completion sent again may fail only because an earlier attempt, whose answer was lost,
    /// succeeded: the retry then finds the object there (412, Azure's 409 BlobAlreadyExists),
    /// the upload gone (NoSuchUpload) or its blocks committed (InvalidBlockList). So a failure
    /// after an uncertain attempt is checked against what the store holds ([`Own::holds`]): if
    /// the object is this upload's, the completion succeeded.
    pub(crate) async fn complete(
        &self,
        key: &str,
        id: &str,
        parts: &[(usize, PartId)],
        when: &Condition,
        marker: Option<&str>,
    ) -> io::Result<()> {
        let sent = self.send_completion(key, id, parts, when).await;
        if sent.result.is_err() && sent.uncertain && self.holds(key, parts, marker).await {
            return Ok(()); // an earlier attempt did it; the later ones' failure says only that
        }
        sent.result.map(drop)
    }

    /// Sends the completion (retried as [`Bucket::send`] retries).
    async fn send_completion(
        &self,
        key: &str,
        id: &str,
        parts: &[(usize, PartId)],
        when: &Condition,
    ) -> Sent {
        const GENERATION: &str = "x-goog-if-generation-match";
        let (bucket, headers) = match self {
            Own::S3(s3) => (&s3.bucket, when.headers(("if-none-match", "*"), "if-match")),
            Own::Gcs(gcs) => (gcs, when.headers((GENERATION, "0"), GENERATION)),
            Own::Azure(az) => return complete_blocks(az, key, parts, when).await,
            Own::None => {
                return Sent {
                    result: Err(read_only()),
                    uncertain: false,
                }
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
        let mut sent = bucket
            .send(
                "completing the upload",
                Request::Complete,
                Method::POST,
                url,
                &headers,
                Bytes::from(xml),
            )
            .await;
        if let Ok(a) = &sent.result {
            if let Err(e) = parse::<ETagged>(&a.body) {
                sent.result = Err(e);
            }
        }
        sent
    }

    /// Whether the object `key` is the one completing `parts` made, by what each store keeps of
    /// it (docs/OBJECTS.md §3, "A lost answer"):
    /// - S3: its ETag, which for an object made by a multipart upload is the MD5 of its parts'
    ///   MD5s (their ETags) followed by `-` and their number; another upload can give the same
    ///   ETag only from parts of the same bytes.
    /// - GCS: its ETag is not derived from the parts, so the upload was created with the
    ///   metadata [`UPLOAD_MARKER`] set to a random value (`marker`), which the object carries.
    /// - Azure: its committed block list (Get Block List), which names object_store's random
    ///   128-bit block ids, in order.
    ///
    /// `false` when the check cannot tell (a failed request, a part ETag that is not an MD5).
    pub(crate) async fn holds(
        &self,
        key: &str,
        parts: &[(usize, PartId)],
        marker: Option<&str>,
    ) -> bool {
        match self {
            Own::S3(s3) => match multipart_etag(parts) {
                Some(want) => head(&s3.bucket, key, "etag")
                    .await
                    .is_some_and(|etag| etag.trim_matches('"').eq_ignore_ascii_case(&want)),
                None => false,
            },
            Own::Gcs(gcs) => match marker {
                Some(want) => head(gcs, key, &format!("x-goog-meta-{UPLOAD_MARKER}"))
                    .await
                    .is_some_and(|m| m == want),
                None => false,
            },
            Own::Azure(az) => committed_blocks(az, key)
                .await
                .is_some_and(|ids| ids.iter().eq(parts.iter().map(|(_, p)| &p.content_id))),
            Own::None => false,
        }
    }
}

/// The metadata key whose random value marks the object a GCS upload makes
/// (`x-goog-meta-zseal-upload`): [`Own::holds`] recognises its own completion by it.
pub(crate) const UPLOAD_MARKER: &str = "zseal-upload";

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "this store is read-only")
}

/// The ETag S3 gives the object a multipart upload of `parts` makes: the MD5 of the parts' MD5s
/// (their ETags, in order, as bytes), `-`, and their number; `None` when a part's ETag is not an
/// MD5 (SSE-KMS, SSE-C), and it cannot be known.
fn multipart_etag(parts: &[(usize, PartId)]) -> Option<String> {
    use md5::Digest;
    let mut md5s = Vec::with_capacity(parts.len() * 16);
    for (_, p) in parts {
        md5s.extend_from_slice(&hex16(p.content_id.trim_matches('"'))?);
    }
    let digest = md5::Md5::digest(&md5s);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("{hex}-{}", parts.len()))
}

/// 32 hex digits as 16 bytes.
fn hex16(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 16];
    for (i, pair) in b.chunks(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// The header `name` of the object `key`, by a HEAD; `None` when there is no object or the
/// request fails.
async fn head(bucket: &Bucket, key: &str, name: &str) -> Option<String> {
    let a = bucket
        .send(
            "checking the object",
            Request::Check(None),
            Method::HEAD,
            bucket.url(key, &[]),
            &[],
            Bytes::new(),
        )
        .await
        .result
        .ok()?;
    a.headers.get(name)?.to_str().ok().map(str::to_string)
}

/// The ids of the blob's committed blocks, in order, as object_store names them (base64
/// decoded); `None` when the request fails.
async fn committed_blocks(container: &Bucket, key: &str) -> Option<Vec<String>> {
    let list = block_list(container, key, "committed").await.ok()?;
    let named = list.committed_blocks.unwrap_or_default().named();
    named.into_iter().map(|(id, _)| id).collect()
}

/// The blob's uncommitted blocks (Put Block's that no Put Block List has committed yet), each
/// with its id as object_store names it (base64 decoded) and its size: what a resumed upload
/// into Azure finds of the blocks it sent (docs/OBJECTS.md §7, "On Azure"). A blob that has no
/// block at all (404) has none; a block whose name object_store could not have given is left
/// out (it is not one of zseal's).
pub(crate) async fn uncommitted_blocks(
    container: &Bucket,
    key: &str,
) -> io::Result<Vec<(String, u64)>> {
    match block_list(container, key, "uncommitted").await {
        Ok(list) => Ok(list
            .uncommitted_blocks
            .unwrap_or_default()
            .named()
            .into_iter()
            .filter_map(|(id, size)| Some((id?, size)))
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Get Block List of the blob `key`, of the blocks `kind` (`committed` or `uncommitted`).
async fn block_list(container: &Bucket, key: &str, kind: &str) -> io::Result<BlockList> {
    let url = container.url(key, &[("comp", "blocklist"), ("blocklisttype", kind)]);
    let what = format!("reading the {kind} blocks");
    container
        .get(&what, Request::Check(Some("BlockList")), url)
        .await
}

/// Azure's answer to Get Block List (the kind of blocks asked for is filled).
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct BlockList {
    committed_blocks: Option<Blocks>,
    uncommitted_blocks: Option<Blocks>,
}

#[derive(serde::Deserialize, Default)]
struct Blocks {
    #[serde(rename = "Block", default)]
    block: Vec<Block>,
}

impl Blocks {
    /// Each block's id as object_store names it (its name, base64 decoded; `None` for a name
    /// that is not base64 of text, which object_store never sends) and its size.
    fn named(self) -> Vec<(Option<String>, u64)> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let text = |name: &str| String::from_utf8(b64.decode(name).ok()?).ok();
        self.block
            .into_iter()
            .map(|b| (text(&b.name), b.size))
            .collect()
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Block {
    name: String,
    #[serde(default)]
    size: u64,
}

/// Azure's completion: commits the blocks `parts` (in order; a block's id names its number) as
/// the blob `key`.
async fn complete_blocks(
    container: &Bucket,
    key: &str,
    parts: &[(usize, PartId)],
    when: &Condition,
) -> Sent {
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
            Request::CommitBlocks,
            Method::PUT,
            url,
            &headers,
            Bytes::from(xml),
        )
        .await
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

#[cfg(test)]
mod tests {
    use super::*;

    fn part(etag: &str) -> (usize, PartId) {
        let content_id = etag.to_string();
        (1, PartId { content_id })
    }

    /// S3's ETag of a multipart object: the MD5 of the parts' MD5s, `-`, their number (the
    /// values computed apart, with Python's hashlib); none when a part's ETag is not an MD5.
    #[test]
    fn the_multipart_etag_is_the_md5_of_the_parts_md5s() {
        // md5("a") and md5("b") (upper-case hex as some stores write it); the MD5 of their
        // 32 bytes is the value below.
        let parts = [
            part("\"0cc175b9c0f1b6a831c399e269772661\""),
            part("\"92EB5FFEE6AE2FEC3AD71C777531578F\""),
        ];
        assert_eq!(
            multipart_etag(&parts).as_deref(),
            Some("96e024ba2074fe77e8e965ba43a704be-2")
        );
        assert_eq!(
            multipart_etag(&parts[..1]).as_deref(),
            Some("b6ff9a06b7e20bcb2858c5b8ff744aea-1")
        );
        assert_eq!(multipart_etag(&[part("\"not-an-md5\"")]), None);
        assert_eq!(
            multipart_etag(&[part("0cc175b9c0f1b6a831c399e26977266")]),
            None
        );
    }
}
