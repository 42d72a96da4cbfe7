//! The Azure request `object_store` does not make: Put Block List (the completion of a block
//! upload) on a condition (`If-Match` with the ETag that was read, or `If-None-Match: *` for "no
//! blob yet"), so that an upload never replaces a blob it was not meant to.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::Method;
use object_store::azure::MicrosoftAzure;
use object_store::multipart::PartId;

use super::own::{object_url, Condition, Requests, Signer};

/// An Azure container as the target of requests of our own.
pub(crate) struct Azure {
    requests: Requests,
    /// The container's URL, ending in `/`.
    container_url: url::Url,
}

impl Azure {
    /// `service` is the account's blob endpoint (with the account as the first path segment for
    /// the emulator).
    pub(crate) fn new(
        store: Arc<MicrosoftAzure>,
        client_options: &object_store::ClientOptions,
        service: &str,
        account: &str,
        container: &str,
        retry_timeout: Duration,
    ) -> io::Result<Azure> {
        let text = format!("{}/{container}/", service.trim_end_matches('/'));
        let container_url = url::Url::parse(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the Azure endpoint {text} is not a valid URL: {e}"),
            )
        })?;
        let signer = Signer::Azure {
            store,
            account: account.to_string(),
        };
        Ok(Azure {
            requests: Requests::new(signer, client_options, retry_timeout)?,
            container_url,
        })
    }

    /// Commits the blocks `parts` (in order) as the blob `key` on the condition `when`.
    pub(crate) async fn complete(
        &self,
        key: &str,
        parts: &[PartId],
        when: &Condition,
    ) -> io::Result<()> {
        let url = object_url(&self.container_url, key, &[("comp", "blocklist")]);
        // The block ids object_store gave the blocks (their part ids), as it lists them.
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<BlockList>\n");
        for p in parts {
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
        self.requests
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
}
