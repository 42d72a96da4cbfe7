//! The GCS request `object_store` does not make: the XML API's completion of a multipart upload
//! on a condition (`x-goog-if-generation-match`: the generation that was read, or 0 for "no
//! object yet"), so that an upload never replaces an object it was not meant to.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use object_store::gcp::GoogleCloudStorage;
use object_store::multipart::PartId;

use super::own::{object_url, Condition, Requests, Signer};

/// A GCS bucket as the target of requests of our own.
pub(crate) struct Gcs {
    requests: Requests,
    /// `BASE/BUCKET/`, the XML API's URL of the bucket.
    bucket_url: url::Url,
}

impl Gcs {
    pub(crate) fn new(
        store: Arc<GoogleCloudStorage>,
        client_options: &object_store::ClientOptions,
        base: &str,
        bucket: &str,
        retry_timeout: Duration,
    ) -> io::Result<Gcs> {
        let text = format!("{}/{bucket}/", base.trim_end_matches('/'));
        let bucket_url = url::Url::parse(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the GCS endpoint {text} is not a valid URL: {e}"),
            )
        })?;
        Ok(Gcs {
            requests: Requests::new(Signer::Gcs(store), client_options, retry_timeout)?,
            bucket_url,
        })
    }

    /// Completes upload `id` of `key` from `parts` (numbered from 1, in order) on the condition
    /// `when` (its version is a generation).
    pub(crate) async fn complete(
        &self,
        key: &str,
        id: &str,
        parts: &[PartId],
        when: &Condition,
    ) -> io::Result<()> {
        let url = object_url(&self.bucket_url, key, &[("uploadId", id)]);
        let generation = "x-goog-if-generation-match";
        let headers = when.headers((generation, "0"), generation);
        self.requests
            .complete_multipart(url, parts, &headers)
            .await
            .map(drop)
    }
}
