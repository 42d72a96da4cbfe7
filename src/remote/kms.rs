//! AWS KMS keys as recipients and identities (FORMAT.md §1.1 "AWS KMS recipients", issue 46
//! §2): `-r arn:aws:kms:…` wraps the file key with KMS `Encrypt` into a `zseal-aws-kms` age
//! stanza, `-i arn:aws:kms:…` unwraps it with `Decrypt`. Both are an `age::Recipient` and an
//! `age::Identity`, as the post-quantum keys are, so both formats, rekey and every front end take
//! them unchanged.
//!
//! The requests are KMS's JSON protocol (`X-Amz-Target: TrentService.Encrypt`), signed with SigV4
//! by object_store's signer (the one zseal's own S3 requests use), with the credentials the S3
//! client would use (environment, profile, `credential_process`, instance role: the same chain,
//! `aws_profile::builder`), sent through object_store's HTTP client and retried by the one retry
//! policy (`store::Retries`) on what is transient (throttling, 5xx, no answer). The AWS SDK's KMS
//! client would add about 60 crates to the build for two calls (docs/PERFORMANCE.md).
//!
//! The region is the ARN's; the endpoint `AWS_ENDPOINT_URL_KMS`, else `AWS_ENDPOINT_URL`, else
//! `https://kms.REGION.amazonaws.com` (as the SDKs choose it).

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use age_core::format::{FileKey, Stanza};
use age_core::secrecy::ExposeSecret;
use base64::prelude::{Engine, BASE64_STANDARD, BASE64_STANDARD_NO_PAD};
use object_store::aws::{AmazonS3ConfigKey, AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{HttpClient, HttpConnector, HttpRequest, ReqwestConnector};
use rand_core::RngCore;

use crate::error::{Error, Result};
use crate::format::age::base64_arg;

/// The age stanza tag of a KMS-wrapped file key.
pub const TAG: &str = crate::crypto::recipients::KMS_TAG;
/// The encryption context's one key; its value is the stanza's file id.
const CONTEXT_KEY: &str = "zseal-file";
const FILE_ID_LEN: usize = 16;
const FILE_KEY_LEN: usize = 16;

pub use crate::crypto::kms::is_kms_arn;

/// A KMS key ARN (`arn:aws:kms:REGION:ACCOUNT:key/ID`) or alias ARN (`…:alias/NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arn {
    text: String,
    region: String,
    alias: bool,
}

impl Arn {
    /// Parses and checks an ARN; the error says what a KMS ARN looks like.
    pub fn parse(s: &str) -> Result<Arn> {
        let s = s.trim();
        let bad = |what: &str| {
            Error::InvalidOption(format!(
                "'{s}' is not a KMS key ARN ({what}): use arn:aws:kms:REGION:ACCOUNT:key/KEY-ID \
                 or arn:aws:kms:REGION:ACCOUNT:alias/NAME"
            ))
        };
        let parts: Vec<&str> = s.split(':').collect();
        let [arn, partition, kms, region, account, resource] = parts[..] else {
            return Err(bad("it has not six fields separated by ':'"));
        };
        if arn != "arn" || kms != "kms" || partition.is_empty() {
            return Err(bad("it does not start with arn:PARTITION:kms:"));
        }
        let region_ok = |r: &str| {
            !r.is_empty()
                && r.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        };
        if !region_ok(region) {
            return Err(bad("no region"));
        }
        if account.len() != 12 || !account.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad("the account is not 12 digits"));
        }
        let alias = match resource.split_once('/') {
            Some(("key", id)) if !id.is_empty() => false,
            Some(("alias", name)) if !name.is_empty() => true,
            _ => return Err(bad("the resource is neither key/ID nor alias/NAME")),
        };
        // An age stanza argument is printable ASCII without spaces (it also goes into JSON).
        if !s
            .bytes()
            .all(|c| c.is_ascii_graphic() && c != b'"' && c != b'\\')
        {
            return Err(bad("it holds a character an ARN does not"));
        }
        Ok(Arn {
            text: s.to_string(),
            region: region.to_string(),
            alias,
        })
    }

    /// The ARN as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// A KMS key to encrypt to.
pub struct KmsRecipient {
    arn: Arn,
}

impl KmsRecipient {
    /// `arn:aws:kms:…` (a key or an alias).
    pub fn parse(s: &str) -> Result<KmsRecipient> {
        Ok(KmsRecipient {
            arn: Arn::parse(s)?,
        })
    }
}

/// A KMS key that opens files sealed to it (its key ARN, or an alias pointing at it).
pub struct KmsIdentity {
    arn: Arn,
}

impl KmsIdentity {
    /// `arn:aws:kms:…` (a key or an alias).
    pub fn parse(s: &str) -> Result<KmsIdentity> {
        Ok(KmsIdentity {
            arn: Arn::parse(s)?,
        })
    }

    /// The key ARN its stanzas name; `None` for an alias (KMS alone knows its key).
    pub fn key_arn(&self) -> Option<&str> {
        (!self.arn.alias).then_some(self.arn.text.as_str())
    }
}

fn context(file_id: &str) -> serde_json::Value {
    serde_json::json!({ CONTEXT_KEY: file_id })
}

impl age::Recipient for KmsRecipient {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
    ) -> std::result::Result<(Vec<Stanza>, HashSet<String>), age::EncryptError> {
        let failed = |e: Error| age::EncryptError::Io(io::Error::other(e.to_string()));
        let mut id = [0u8; FILE_ID_LEN];
        rand_core::OsRng.fill_bytes(&mut id);
        let file_id = BASE64_STANDARD_NO_PAD.encode(id);
        let plaintext = zeroize::Zeroizing::new(BASE64_STANDARD.encode(file_key.expose_secret()));
        let body = serde_json::json!({
            "KeyId": self.arn.text,
            "Plaintext": plaintext.as_str(),
            "EncryptionContext": context(&file_id),
        });
        let answer = call(&self.arn, "Encrypt", body).map_err(|e| failed(e.into()))?;
        let blob = field(&answer, "CiphertextBlob")
            .and_then(|b| BASE64_STANDARD.decode(b).ok())
            .filter(|b| !b.is_empty());
        let key = field(&answer, "KeyId").and_then(|k| Arn::parse(k).ok());
        let (Some(blob), Some(key)) = (blob, key) else {
            return Err(failed(Error::InvalidOption(format!(
                "KMS answered Encrypt with {} without a CiphertextBlob and a key ARN",
                self.arn.text
            ))));
        };
        let stanza = Stanza {
            tag: TAG.into(),
            args: vec![key.text, file_id],
            body: blob,
        };
        Ok((vec![stanza], HashSet::new()))
    }
}

/// A stanza's key ARN and file id, checked (FORMAT.md: two arguments, a KMS key ARN, the
/// canonical base64 of 16 bytes, a body).
fn read_stanza(stanza: &Stanza) -> Option<(Arn, &str)> {
    let [arn, id] = &stanza.args[..] else {
        return None;
    };
    let arn = Arn::parse(arn)
        .ok()
        .filter(|a| !a.alias && a.text == *arn)?;
    let canonical = base64_arg(id, FILE_ID_LEN).is_some();
    (canonical && !stanza.body.is_empty()).then_some((arn, id.as_str()))
}

impl crate::crypto::unwrap::OwnTag for KmsIdentity {
    const TAG: &'static str = TAG;

    fn open_own(&self, stanza: &Stanza) -> std::result::Result<Option<FileKey>, age::DecryptError> {
        let Some((key, file_id)) = read_stanza(stanza) else {
            return Err(age::DecryptError::InvalidHeader);
        };
        // A key ARN opens the stanzas that name it; an alias, those of its region (KMS says
        // whether it points at their key).
        let ours = match self.arn.alias {
            true => key.region == self.arn.region,
            false => key.text == self.arn.text,
        };
        if !ours {
            return Ok(None);
        }
        let body = serde_json::json!({
            "KeyId": self.arn.text,
            "CiphertextBlob": BASE64_STANDARD.encode(&stanza.body),
            "EncryptionContext": context(file_id),
        });
        let answer = match call(&self.arn, "Decrypt", body) {
            Ok(a) => a,
            // Sealed under another key than the alias's: not this identity's.
            Err(Called::Refused { code, .. })
                if code == "IncorrectKeyException" && self.arn.alias =>
            {
                return Ok(None)
            }
            Err(e) => {
                return Err(age::DecryptError::Io(io::Error::other(
                    Error::from(e).to_string(),
                )))
            }
        };
        let plaintext = field(&answer, "Plaintext")
            .and_then(|p| BASE64_STANDARD.decode(p).ok())
            .map(zeroize::Zeroizing::new);
        match plaintext
            .as_deref()
            .and_then(|p| <[u8; FILE_KEY_LEN]>::try_from(&p[..]).ok())
        {
            Some(k) => Ok(Some(FileKey::new(Box::new(k)))),
            None => Err(age::DecryptError::Io(io::Error::other(format!(
                "KMS answered Decrypt with {} without a 16-byte file key: the stanza was not \
                 written by zseal",
                self.arn.text
            )))),
        }
    }
}

crate::crypto::unwrap::own_tag_identity!(KmsIdentity);

fn field<'a>(answer: &'a serde_json::Value, name: &str) -> Option<&'a str> {
    answer.get(name).and_then(serde_json::Value::as_str)
}

/// How a KMS call failed.
#[derive(Debug)]
enum Called {
    /// KMS answered with an error (its `__type`, e.g. `DisabledException`).
    Refused {
        key: String,
        operation: &'static str,
        code: String,
        message: String,
    },
    /// No answer, or one that is not KMS's (after the retries).
    Failed(Error),
}

/// What failed, as the retry loop says it and the final error begins.
impl std::fmt::Display for Called {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Called::Failed(e) => e.fmt(f),
            Called::Refused {
                key,
                operation,
                code,
                message,
            } => write!(
                f,
                "AWS KMS {operation} with {key} failed: {code}: {message}"
            ),
        }
    }
}

impl From<Called> for Error {
    fn from(c: Called) -> Error {
        let said = c.to_string();
        match c {
            Called::Failed(e) => e,
            Called::Refused { code, .. } => {
                let advice = match code.as_str() {
                    "DisabledException" => "the key is disabled: enable it, or use another",
                    "NotFoundException" => "no such key or alias in this account and region",
                    "KMSInvalidStateException" => "the key is pending deletion or import",
                    "AccessDeniedException" => {
                        "these credentials may not use the key (another account's key needs a \
                         key policy or grant that allows it)"
                    }
                    "InvalidCiphertextException" => {
                        "the stanza is damaged, or was not made for this file (its encryption \
                         context differs)"
                    }
                    "IncorrectKeyException" => "the file was sealed to another KMS key",
                    _ => "see the message",
                };
                Error::InvalidOption(format!("{said} ({advice})"))
            }
        }
    }
}

/// Sends `TrentService.OPERATION` with `body` to the ARN's region, retrying what is transient.
/// Runs on a thread of its own: a caller may already be on the async runtime's threads.
fn call(
    arn: &Arn,
    operation: &'static str,
    body: serde_json::Value,
) -> std::result::Result<serde_json::Value, Called> {
    let arn = arn.clone();
    std::thread::scope(|s| {
        s.spawn(|| super::block_on(async { send(&arn, operation, &body).await }))
            .join()
            .unwrap_or_else(|_| {
                Err(Called::Failed(Error::Bug(
                    "the KMS request panicked".into(),
                )))
            })
    })
}

async fn send(
    arn: &Arn,
    operation: &'static str,
    body: &serde_json::Value,
) -> std::result::Result<serde_json::Value, Called> {
    let client = Client::for_region(&arn.region).map_err(Called::Failed)?;
    let bytes = serde_json::to_vec(body).map_err(|e| Called::Failed(Error::Bug(e.to_string())))?;
    use super::store::{retried, Attempt};
    let client = &client;
    let (result, _) = retried(client.retry_timeout, move || {
        let bytes = bytes.clone();
        async move {
            match client.send_once(operation, bytes).await {
                Ok((status, answer)) if status.is_success() => {
                    match serde_json::from_slice(&answer) {
                        Ok(v) => Attempt::Done(v),
                        Err(e) => Attempt::Failed(Called::Failed(Error::InvalidOption(format!(
                            "AWS KMS {operation} with {}: the answer is not JSON: {e}",
                            arn.text
                        )))),
                    }
                }
                Ok((status, answer)) => {
                    let (code, message) = kms_error(&answer);
                    let transient = status.is_server_error() || TRANSIENT.contains(&code.as_str());
                    let refused = Called::Refused {
                        key: arn.text.clone(),
                        operation,
                        code,
                        message,
                    };
                    match transient {
                        true => Attempt::Transient(refused),
                        false => Attempt::Failed(refused),
                    }
                }
                Err(e) => Attempt::Transient(Called::Failed(Error::from(io::Error::new(
                    e.kind(),
                    format!("AWS KMS {operation} with {}: {e}", arn.text),
                )))),
            }
        }
    })
    .await;
    result
}

/// KMS's error codes that the SDKs retry.
const TRANSIENT: [&str; 4] = [
    "ThrottlingException",
    "KMSInternalException",
    "DependencyTimeoutException",
    "LimitExceededException",
];

/// The `__type` (without its namespace) and message of a KMS error answer.
fn kms_error(answer: &[u8]) -> (String, String) {
    let v: serde_json::Value = serde_json::from_slice(answer).unwrap_or_default();
    let code = field(&v, "__type").unwrap_or("an error without a type");
    let code = code.rsplit('#').next().unwrap_or(code).to_string();
    let message = field(&v, "message")
        .or_else(|| field(&v, "Message"))
        .unwrap_or("")
        .to_string();
    (code, message)
}

/// A region's KMS endpoint, credentials and HTTP client (one per region per process).
struct Client {
    region: String,
    endpoint: url::Url,
    credentials: AwsCredentialProvider,
    http: HttpClient,
    retry_timeout: Duration,
}

impl Client {
    fn for_region(region: &str) -> Result<Arc<Client>> {
        static CLIENTS: Mutex<Option<HashMap<String, Arc<Client>>>> = Mutex::new(None);
        let mut clients = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
        let map = clients.get_or_insert_with(HashMap::new);
        if let Some(c) = map.get(region) {
            return Ok(c.clone());
        }
        let c = Arc::new(Client::new(region)?);
        map.insert(region.to_string(), c.clone());
        Ok(c)
    }

    fn new(region: &str) -> Result<Client> {
        let opts = super::TransferOptions::from_env()?;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let endpoint = env("AWS_ENDPOINT_URL_KMS")
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://kms.{region}.amazonaws.com"));
        let endpoint = url::Url::parse(&endpoint).map_err(|e| {
            Error::InvalidOption(format!("the KMS endpoint {endpoint} is not a URL: {e}"))
        })?;
        // The credentials the S3 client would sign with: the same chain, the same refusals.
        let settings = vec![(AmazonS3ConfigKey::Region, region.to_string())];
        let (builder, client) = super::aws_profile::builder(
            super::store::client_config(&opts),
            settings,
            opts.request_timeout,
        )?;
        let s3 = builder
            .with_bucket_name("zseal-kms")
            .build()
            .map_err(|e| Error::InvalidOption(format!("cannot set up AWS credentials: {e}")))?;
        let client = client.with_allow_http(endpoint.scheme() == "http");
        let http = ReqwestConnector::default()
            .connect(&client)
            .map_err(|e| Error::InvalidOption(format!("cannot set up an HTTP client: {e}")))?;
        Ok(Client {
            region: region.to_string(),
            endpoint,
            credentials: s3.credentials().clone(),
            http,
            retry_timeout: opts.retry_timeout,
        })
    }

    /// One signed request: its status and body.
    async fn send_once(
        &self,
        operation: &str,
        body: Vec<u8>,
    ) -> io::Result<(http::StatusCode, bytes::Bytes)> {
        let mut request: HttpRequest = http::Request::builder()
            .method(http::Method::POST)
            .uri(self.endpoint.as_str())
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", format!("TrentService.{operation}"))
            .body(body.into())
            .map_err(|e| io::Error::other(format!("cannot build a request: {e}")))?;
        let credential = self
            .credentials
            .get_credential()
            .await
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        AwsAuthorizer::new(&credential, "kms", &self.region)
            .try_authorize(&mut request, None)
            .map_err(|e| io::Error::other(format!("cannot sign a request: {e}")))?;
        let answer = super::own::execute(&self.http, request).await?;
        Ok((answer.status, answer.body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kms_arns_are_recognised_and_checked() {
        let key = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";
        let alias = "arn:aws:kms:eu-west-1:111122223333:alias/exports";
        assert!(is_kms_arn(key) && is_kms_arn(alias));
        assert!(!is_kms_arn("age1xyz") && !is_kms_arn("arn:aws:s3:::bucket"));
        let k = Arn::parse(key).expect("key ARN");
        assert_eq!((k.region.as_str(), k.alias), ("eu-west-1", false));
        assert!(Arn::parse(alias).expect("alias ARN").alias);
        for bad in [
            "arn:aws:kms:eu-west-1:111122223333:key/",
            "arn:aws:kms:eu-west-1:1111:key/x",
            "arn:aws:kms::111122223333:key/x",
            "arn:aws:kms:eu-west-1:111122223333:grant/x",
            "arn:aws:kms:eu-west-1:111122223333:key/a b",
            "arn:aws:kms:eu-west-1:111122223333",
        ] {
            let e = Arn::parse(bad).expect_err(bad).to_string();
            assert!(e.contains("is not a KMS key ARN"), "{e}");
        }
    }

    #[test]
    fn a_stanza_must_name_a_key_arn_and_a_canonical_file_id() {
        let key = "arn:aws:kms:eu-west-1:111122223333:key/k1";
        let id = BASE64_STANDARD_NO_PAD.encode([7u8; FILE_ID_LEN]);
        let stanza = |args: Vec<&str>, body: &[u8]| Stanza {
            tag: TAG.into(),
            args: args.into_iter().map(String::from).collect(),
            body: body.to_vec(),
        };
        assert!(read_stanza(&stanza(vec![key, &id], b"blob")).is_some());
        let alias = "arn:aws:kms:eu-west-1:111122223333:alias/a";
        let long_id = BASE64_STANDARD_NO_PAD.encode([7u8; 17]);
        for (args, body) in [
            (vec![key, &id], &b""[..]),
            (vec![key], b"blob"),
            (vec![key, &id, "x"], b"blob"),
            (vec![alias, &id], b"blob"),
            (vec![key, &long_id], b"blob"),
            (vec![key, "AAAAAAAAAAAAAAAAAAAAAB"], b"blob"),
        ] {
            assert!(
                read_stanza(&stanza(args.clone(), body)).is_none(),
                "{args:?}"
            );
        }
    }

    #[test]
    fn kms_errors_give_their_type_without_namespace() {
        let (code, message) =
            kms_error(br#"{"__type":"com.amazonaws.kms#DisabledException","message":"off"}"#);
        assert_eq!(
            (code.as_str(), message.as_str()),
            ("DisabledException", "off")
        );
        let (code, _) = kms_error(b"<html>");
        assert_eq!(code, "an error without a type");
    }
}
