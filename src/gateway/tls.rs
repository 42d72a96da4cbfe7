//! TLS for the gateway (`--tls-cert`, `--tls-key`; docs/GATEWAY.md, "Access"): rustls, with the
//! certificate chain and private key read from PEM files, offering HTTP/2 and HTTP/1.1 by ALPN.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

/// An acceptor for the certificate chain in `cert` and the private key in `key` (PEM). A file
/// that cannot be read, holds no certificate or no key, or a key that does not match the
/// certificate, is an error naming the file and what to do.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    let chain = read_chain(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        Error::InvalidOption(format!(
            "--tls-key {}: no PEM private key could be read ({e}): give the key of the certificate, \
             in PEM (-----BEGIN PRIVATE KEY-----, RSA or EC), unencrypted",
            key.display()
        ))
    })?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            Error::InvalidOption(format!(
                "--tls-cert {} with --tls-key: {e} (is the key the certificate's?)",
                cert.display()
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificates of a PEM file, the server's first.
fn read_chain(cert: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let what = |e: String| {
        Error::InvalidOption(format!(
            "--tls-cert {}: {e}: give the server's certificate (and its chain) in PEM \
             (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| what(e.to_string()))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| what(e.to_string()))?;
    if chain.is_empty() {
        return Err(what("the file holds no certificate".into()));
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_a_certificate_or_key_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = acceptor(&empty, &empty).err().unwrap().to_string();
        assert!(
            e.contains("--tls-cert") && e.contains("no certificate"),
            "{e}"
        );
        let missing = dir.path().join("missing.pem");
        let e = acceptor(&missing, &empty).err().unwrap().to_string();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
