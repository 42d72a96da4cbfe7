//! Building each kind of store from the environment (credentials, endpoints, emulators), with
//! the retry and timeout settings every request uses, and the requests of zseal's own for it.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use object_store::multipart::MultipartStore;
use object_store::path::Path as ObjectPath;
use object_store::DynObjectStore;

use super::own::{Bucket, Signer};
use super::{aws_profile, invalid, root_cause, s3, Own, Scheme, TransferOptions};

/// The store for a URL, and the object's path within it.
pub(super) struct Built {
    pub(super) store: Arc<DynObjectStore>,
    pub(super) path: ObjectPath,
    pub(super) multipart: Option<Arc<dyn MultipartStore>>,
    pub(super) own: Own,
}

/// Builds the store for `url` from the environment, then `settings` (object_store's
/// configuration keys for the store, such as `aws_endpoint` or `google_service_account`, which
/// win over the environment), and the object's path within it.
pub(super) fn build_store(
    scheme: Scheme,
    parsed: &url::Url,
    url: &str,
    opts: &TransferOptions,
    settings: &[(String, String)],
) -> io::Result<Built> {
    // A key this store does not know is an error naming it, not silently ignored.
    fn keys<K: std::str::FromStr>(
        url: &str,
        settings: &[(String, String)],
    ) -> io::Result<Vec<(K, String)>> {
        settings
            .iter()
            .map(|(k, v)| {
                k.to_ascii_lowercase()
                    .parse::<K>()
                    .map(|key| (key, v.clone()))
                    .map_err(|_| invalid(format!("{url}: '{k}' is not a setting of this store")))
            })
            .collect()
    }
    let retry = || retry_config(opts);
    let client_options = || client_config(opts);
    let refused = |e: object_store::Error| {
        invalid(format!(
            "{url}: cannot set up the store: {}",
            root_cause(&e)
        ))
    };
    let key = || {
        ObjectPath::from_url_path(parsed.path())
            .map_err(|e| invalid(format!("{url}: invalid object key: {e}")))
    };
    let bucket = || {
        parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .ok_or_else(|| invalid(format!("{url} names no bucket: use s3://BUCKET/KEY")))
    };
    Ok(match scheme {
        Scheme::S3 => {
            use object_store::aws::AmazonS3ConfigKey as K;
            let name = bucket()?;
            let (b, client) = aws_profile::builder(
                client_options(),
                keys::<K>(url, settings)?,
                opts.request_timeout,
            )?;
            let b = b.with_bucket_name(&name).with_retry(retry());
            let region = b
                .get_config_value(&K::Region)
                .unwrap_or_else(|| "us-east-1".into());
            // Our own requests go where object_store's go (s3.rs).
            let (b, base) = s3::settle_addressing(b, &name);
            let s3 = Arc::new(b.build().map_err(refused)?);
            let own = s3::S3::new(
                s3.clone(),
                &client,
                &base,
                &name,
                region,
                opts.retry_timeout,
            )?;
            Built {
                store: s3.clone(),
                path: key()?,
                multipart: Some(s3),
                own: Own::S3(own),
            }
        }
        Scheme::Gcs => {
            let mut gcs = object_store::gcp::GoogleCloudStorageBuilder::from_env();
            for (k, v) in keys::<object_store::gcp::GoogleConfigKey>(url, settings)? {
                gcs = gcs.with_config(k, v);
            }
            let mut gcs = gcs
                .with_bucket_name(bucket()?)
                .with_retry(retry())
                .with_client_options(client_options());
            let name = bucket()?;
            let mut base = gcs
                .get_config_value(&object_store::gcp::GoogleConfigKey::BaseUrl)
                .unwrap_or_else(|| "https://storage.googleapis.com".into());
            let mut own_client = client_options();
            // The convention of Google's own client libraries for emulators (fake-gcs-server).
            if let Ok(host) = std::env::var("STORAGE_EMULATOR_HOST") {
                base = if host.contains("://") {
                    host
                } else {
                    format!("http://{host}")
                };
                own_client = own_client.with_allow_http(true);
                // object_store asks for a token before uploads even when skipping signatures,
                // which with no credentials means the cloud's metadata server: an emulator takes
                // none, so it gets an empty one and nothing looks for a metadata server.
                let token = object_store::gcp::GcpCredential {
                    bearer: String::new(),
                };
                gcs = gcs
                    .with_base_url(&base)
                    .with_client_options(client_options().with_allow_http(true))
                    .with_skip_signature(true)
                    .with_credentials(Arc::new(object_store::StaticCredentialProvider::new(token)));
            }
            let gcs = Arc::new(gcs.build().map_err(refused)?);
            let signer = Signer::Gcs(gcs.clone());
            let base = format!("{}/{name}", base.trim_end_matches('/'));
            let own = Bucket::new(signer, &own_client, &base, opts.retry_timeout)?;
            Built {
                store: gcs.clone(),
                path: key()?,
                multipart: Some(gcs),
                own: Own::Gcs(own),
            }
        }
        Scheme::Azure => {
            let mut az = object_store::azure::MicrosoftAzureBuilder::from_env();
            for (k, v) in keys::<object_store::azure::AzureConfigKey>(url, settings)? {
                az = az.with_config(k, v);
            }
            let az = az
                .with_url(url)
                .with_retry(retry())
                .with_client_options(client_options());
            // `az://container/key` and `abfs://container@account…/key` both carry the key as
            // the path.
            let (service, account, container, own_client) = azure_service(&az, parsed, url, opts)?;
            let az = Arc::new(az.build().map_err(refused)?);
            let signer = Signer::Azure {
                store: az.clone(),
                account,
            };
            let base = format!("{}/{container}", service.trim_end_matches('/'));
            let own = Bucket::new(signer, &own_client, &base, opts.retry_timeout)?;
            Built {
                store: az.clone(),
                path: key()?,
                multipart: Some(az),
                own: Own::Azure(own),
            }
        }
        Scheme::Http => {
            let origin = parsed.origin().ascii_serialization();
            let http = object_store::http::HttpBuilder::new()
                .with_url(origin)
                .with_retry(retry())
                .with_client_options(client_options().with_allow_http(true));
            Built {
                store: Arc::new(http.build().map_err(refused)?),
                path: key()?,
                multipart: None,
                own: Own::None,
            }
        }
    })
}

/// Where an Azure container's blobs are addressed, as object_store addresses them (its own URL
/// is private): the blob service's URL (with the account as the first path segment on the
/// emulator), the account, the container, and the client options for it.
type AzureService = (String, String, String, object_store::ClientOptions);

fn azure_service(
    b: &object_store::azure::MicrosoftAzureBuilder,
    parsed: &url::Url,
    url: &str,
    opts: &TransferOptions,
) -> io::Result<AzureService> {
    use object_store::azure::AzureConfigKey as K;
    let host = parsed.host_str().unwrap_or_default();
    // abfs://container@account.dfs.core.windows.net/key, az://container/key.
    let (container, account_from_url) = match parsed.username() {
        "" => (host.to_string(), None),
        user => (user.to_string(), host.split('.').next().map(str::to_string)),
    };
    let configured = |k: K| b.get_config_value(&k).filter(|v| !v.is_empty());
    let emulator = configured(K::UseEmulator).is_some_and(|v| v == "true");
    let client = client_config(opts);
    if emulator {
        let account = configured(K::AccountName).unwrap_or_else(|| "devstoreaccount1".into());
        let base = std::env::var("AZURITE_BLOB_STORAGE_URL")
            .unwrap_or_else(|_| "http://127.0.0.1:10000".into());
        let service = format!("{}/{account}", base.trim_end_matches('/'));
        return Ok((service, account, container, client.with_allow_http(true)));
    }
    let account = account_from_url
        .or_else(|| configured(K::AccountName))
        .ok_or_else(|| {
            invalid(format!(
                "{url}: no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME"
            ))
        })?;
    let service = configured(K::Endpoint)
        .unwrap_or_else(|| format!("https://{account}.blob.core.windows.net"));
    Ok((service, account, container, client))
}

/// The first pause before a retry; each later one doubles, up to [`MAX_BACKOFF`].
const INIT_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(15);
/// Retries of a failing request, within the retry timeout.
pub(crate) const MAX_RETRIES: u32 = 10;

/// Transient failures (5xx, throttling, timeouts, reset connections) are retried with
/// exponential backoff, within the retry timeout; then the error is reported.
fn retry_config(opts: &TransferOptions) -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: INIT_BACKOFF,
            max_backoff: MAX_BACKOFF,
            base: 2.0,
        },
        max_retries: MAX_RETRIES as usize,
        retry_timeout: opts.retry_timeout,
    }
}

/// The pause before retry number `attempt` (from 1): [`retry_config`]'s backoff.
fn backoff(attempt: u32) -> Duration {
    let doubled = INIT_BACKOFF.saturating_mul(1 << attempt.saturating_sub(1).min(16));
    doubled.min(MAX_BACKOFF)
}

/// The one retry policy, object_store's ([`retry_config`]: its backoff, its number of retries,
/// the retry timeout), for what its own retries do not cover: zseal's own requests (own.rs)
/// and a ranged GET whose body was cut off (reader.rs). Ask [`Retries::after_failure`] after
/// each failed attempt.
/// The target of the events of zseal's own retried requests (object_store's are
/// `object_store::client::retry`).
pub const RETRY_TARGET: &str = "zseal::retry";

pub(crate) struct Retries {
    started: std::time::Instant,
    retried: u32,
    timeout: Duration,
}

/// What one attempt of a retried request came to ([`retried`]).
pub(crate) enum Attempt<T, E> {
    /// It worked.
    Done(T),
    /// It failed for a reason that may pass: try again, within the policy.
    Transient(E),
    /// It failed for good: report it.
    Failed(E),
}

/// Runs `attempt` until it is done, fails for good, or the policy's retries or time (`timeout`)
/// are spent, pausing between attempts as [`Retries`] says: the one retry loop of zseal's own
/// requests (own.rs), ranged GETs cut off (reader.rs) and KMS calls (kms.rs). Returns the
/// outcome and how many attempts failed transiently before it (an attempt that failed may
/// still have been carried out by the server).
pub(crate) async fn retried<T, E, F, Fut>(timeout: Duration, mut attempt: F) -> (Result<T, E>, u32)
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Attempt<T, E>>,
{
    let mut retries = Retries::new(timeout);
    let mut failed = 0;
    loop {
        let failure = match attempt().await {
            Attempt::Done(t) => return (Ok(t), failed),
            Attempt::Failed(e) => return (Err(e), failed),
            Attempt::Transient(e) => e,
        };
        failed += 1;
        let Some(pause) = retries.after_failure(&failure) else {
            return (Err(failure), failed);
        };
        tokio::time::sleep(pause).await;
    }
}

impl Retries {
    /// A request about to be sent for the first time, retried within `timeout`.
    pub(crate) fn new(timeout: Duration) -> Retries {
        Retries {
            started: std::time::Instant::now(),
            retried: 0,
            timeout,
        }
    }

    /// After a failed attempt (`failure`): the pause before the next one, or `None` when the
    /// retries or the time are spent and the failure is to be reported. A retry is an event
    /// (target [`RETRY_TARGET`]), as object_store's own retries are, for a front end to show.
    pub(crate) fn after_failure(&mut self, failure: &dyn std::fmt::Display) -> Option<Duration> {
        if self.retried >= MAX_RETRIES || self.started.elapsed() >= self.timeout {
            return None;
        }
        self.retried += 1;
        let pause = backoff(self.retried);
        tracing::info!(
            target: RETRY_TARGET,
            "{failure}: retrying in {:.1} s (retry {} of {MAX_RETRIES})",
            pause.as_secs_f32(),
            self.retried
        );
        Some(pause)
    }
}

/// A connection must open within 10 s (or the request timeout, when shorter), and a request be
/// answered within the request timeout; a stalled one is cut and retried.
pub(super) fn client_config(opts: &TransferOptions) -> object_store::ClientOptions {
    object_store::ClientOptions::new()
        .with_connect_timeout(opts.request_timeout.min(Duration::from_secs(10)))
        .with_timeout(opts.request_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// zseal's own requests wait as object_store's retries do: from 100 ms, doubling, at most
    /// 15 s.
    #[test]
    fn the_backoff_doubles_from_its_start_to_its_cap() {
        let ms = |a| backoff(a).as_millis();
        assert_eq!([ms(1), ms(2), ms(3), ms(8)], [100, 200, 400, 12_800]);
        assert_eq!([ms(9), ms(10), ms(40)], [15_000, 15_000, 15_000]);
        let o = retry_config(&TransferOptions::default());
        assert_eq!(o.backoff.init_backoff, backoff(1));
        assert_eq!(o.max_retries, MAX_RETRIES as usize);
    }

    /// A request is sent at most 1 + MAX_RETRIES times, pausing as the backoff says, and not
    /// after the retry timeout.
    #[test]
    fn retries_follow_object_stores_policy() {
        let mut r = Retries::new(Duration::from_secs(3600));
        let pauses: Vec<_> = std::iter::from_fn(|| r.after_failure(&"failed")).collect();
        assert_eq!(pauses.len(), MAX_RETRIES as usize);
        assert_eq!(pauses[0], backoff(1));
        assert_eq!(pauses[2], backoff(3));
        let mut spent = Retries::new(Duration::ZERO);
        assert_eq!(spent.after_failure(&"failed"), None);
    }
}
