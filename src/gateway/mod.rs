//! `zseal serve s3`: an S3 endpoint that stores every object as a zseal container sealed to the
//! gateway's recipients, and opens them again for GET when it holds an identity
//! (docs/GATEWAY.md). S3's protocol — SigV4, aws-chunked bodies, checksums, XML — is the `s3s`
//! crate's; hyper serves it. This module holds the configuration and the server loop; the
//! operations are in `service.rs` and `multipart.rs`, the files in `store.rs`.

mod access;
mod backend;
mod body;
mod copy;
mod list;
mod multipart;
pub mod names;
mod objects;
mod read;
mod service;
mod store;
mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use zeroize::Zeroizing;

use crate::crypto::recipients::AgeRecipient;
use crate::error::{Error, Result};
use crate::EncryptOptions;

pub use service::WRITE_ONLY;

/// Everything `zseal serve s3` is started with.
pub struct Config {
    /// The directory whose subdirectories are the buckets, or an `s3://`, `gs://` or `az://`
    /// URL whose prefixes are.
    pub root: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Serve plain HTTP on an address other than loopback (`--insecure-http`).
    pub insecure_http: bool,
    /// Serve HTTPS with this certificate chain and private key, PEM (`--tls-cert`, `--tls-key`).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Every object is sealed to these.
    pub recipients: Vec<AgeRecipient>,
    /// The identity files' contents (`-i`); none: write-only.
    pub identities: Vec<Zeroizing<Vec<u8>>>,
    /// The access key pairs a request may be signed with, each with the buckets it may use.
    pub credentials: Vec<Credential>,
    /// How objects are sealed (codec, chunk size, threads).
    pub encrypt: EncryptOptions,
    /// The engine's windows held at once (`--max-requests`): a PUT, a part or a GET holds one,
    /// a completion or a copy two.
    pub max_requests: usize,
    /// No line per request.
    pub quiet: bool,
}

pub use access::{Mode, Scope};

/// One line of the credentials file: an access key pair and the buckets it may use.
#[derive(Clone, Debug)]
pub struct Credential {
    /// The access key id.
    pub id: String,
    /// Its secret.
    pub secret: Zeroizing<String>,
    /// The buckets it may use, and how (every bucket when the line names none).
    pub scope: Scope,
}

/// Reads a credentials file's text: one `ACCESS_KEY_ID SECRET_ACCESS_KEY [BUCKET[:ro|:wo]]…`
/// line a key, `#` comments and blank lines skipped. `origin` names the file in messages (never
/// a secret).
pub fn parse_credentials(text: &str, origin: &str) -> Result<Vec<Credential>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [id, secret, buckets @ ..] => {
                let scope = Scope::parse(buckets).map_err(|e| {
                    Error::InvalidOption(format!(
                        "{origin} line {}: {e} (after the key pair, each field is a bucket the key \
                         may use: BUCKET, BUCKET:ro, BUCKET:wo, or * for every other bucket)",
                        i + 1
                    ))
                })?;
                out.push(Credential {
                    id: id.to_string(),
                    secret: Zeroizing::new(secret.to_string()),
                    scope,
                });
            }
            _ => {
                return Err(Error::InvalidOption(format!(
                    "{origin} line {}: expected ACCESS_KEY_ID SECRET_ACCESS_KEY (two fields separated by spaces, then the buckets it may use, if any), found {} field(s)",
                    i + 1,
                    fields.len()
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidOption(format!(
            "{origin} holds no ACCESS_KEY_ID SECRET_ACCESS_KEY line: every request must be signed with one"
        )));
    }
    Ok(out)
}

/// Refuses to serve plain HTTP beyond loopback unless asked to (`--insecure-http`): an address
/// other than loopback needs TLS or that flag.
pub fn check_listen(addr: SocketAddr, insecure_http: bool, tls: bool) -> Result<()> {
    if addr.ip().is_loopback() || insecure_http || tls {
        return Ok(());
    }
    Err(Error::InvalidOption(format!(
        "--listen {addr} is not a loopback address: credentials and data would cross the network in clear. \
         Give --tls-cert and --tls-key (PEM), listen on 127.0.0.1 behind a TLS-terminating reverse proxy, \
         or pass --insecure-http if the network is protected otherwise"
    )))
}

/// Checks the configuration, binds, calls `ready` with the bound address, and serves until
/// SIGINT or SIGTERM.
pub fn serve(config: Config, ready: impl FnOnce(SocketAddr)) -> Result<()> {
    check_listen(config.listen, config.insecure_http, config.tls.is_some())?;
    let acceptor = match &config.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    if config.recipients.is_empty() {
        return Err(Error::InvalidOption(
            "the gateway seals every object to its recipients: give -r or -R".into(),
        ));
    }
    config.encrypt.check()?;
    service::parse_identities(&config.identities)?;
    let backend = open_backend(&config)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(config, backend, acceptor, ready))
}

/// The backend `config.root` names: an object store's URL, or a directory (where what an
/// earlier run left unfinished is removed first).
fn open_backend(config: &Config) -> Result<backend::Backend> {
    if let Some(url) = config.root.to_str().filter(|r| crate::remote::is_url(r)) {
        let store = objects::StoreBackend::new(url)?;
        return Ok(backend::Backend::Store(Arc::new(store)));
    }
    if !config.root.is_dir() {
        return Err(Error::InvalidOption(format!(
            "{} is not a directory: create it first (its subdirectories are the buckets), or give an s3://, gs:// or az:// URL",
            config.root.display()
        )));
    }
    let removed = store::clean_leftovers(&config.root)?;
    if removed > 0 && !config.quiet {
        eprintln!("zseal serve: removed {removed} unfinished upload(s) left by an earlier run");
    }
    Ok(backend::Backend::Dir(config.root.clone()))
}

async fn run(
    config: Config,
    backend: backend::Backend,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let quiet = config.quiet;
    let service = build_service(config, backend);
    ready(listener.local_addr()?);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop_signal());
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(e) => {
                    eprintln!("zseal serve: accepting a connection: {e}");
                    continue;
                }
            },
            () = stop.as_mut() => break,
        };
        let svc = service.clone();
        let watcher = graceful.watcher();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let logged = hyper::service::service_fn(move |req| logged(svc.clone(), req, quiet));
            let http = ConnBuilder::new(TokioExecutor::new());
            let Some(acceptor) = acceptor else {
                let conn = http.serve_connection(TokioIo::new(socket), logged);
                let _ = watcher.watch(conn.into_owned()).await;
                return;
            };
            match acceptor.accept(socket).await {
                Ok(tls) => {
                    let conn = http.serve_connection(TokioIo::new(tls), logged);
                    let _ = watcher.watch(conn.into_owned()).await;
                }
                Err(e) if !quiet => eprintln!("zseal serve: a TLS handshake failed: {e}"),
                Err(_) => {}
            }
        });
    }
    // Requests in flight get 30 s to end; an upload cut then leaves no object.
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(std::time::Duration::from_secs(30)) => {}
    }
    Ok(())
}

fn build_service(config: Config, backend: backend::Backend) -> s3s::service::S3Service {
    let slots = u32::try_from(config.max_requests.max(1)).unwrap_or(u32::MAX);
    let gateway = service::Gateway {
        backend,
        recipients: Arc::new(config.recipients),
        identities: match config.identities.is_empty() {
            true => None,
            false => Some(Arc::new(config.identities)),
        },
        encrypt: Arc::new(config.encrypt),
        slots: Arc::new(tokio::sync::Semaphore::new(slots as usize)),
        max_slots: slots,
        uploads: Mutex::new(HashMap::new()),
        scopes: Default::default(),
    };
    let mut auth = SimpleAuth::new();
    let mut scopes = HashMap::new();
    for c in config.credentials {
        auth.register(c.id.clone(), c.secret.as_str().into());
        scopes.insert(c.id, c.scope);
    }
    let scopes = access::Scopes(Arc::new(scopes));
    let gateway = service::Gateway {
        scopes: scopes.clone(),
        ..gateway
    };
    let mut builder = S3ServiceBuilder::new(gateway);
    builder.set_auth(auth);
    builder.set_access(scopes);
    builder.build()
}

/// S3's POST Object: a `multipart/form-data` POST (a browser's form upload), which the gateway
/// does not serve.
fn is_post_object<B>(req: &http::Request<B>) -> bool {
    req.method() == http::Method::POST
        && req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("multipart/form-data")
            })
}

/// A `501 NotImplemented` answer in S3's form, closing the connection (the request's body, if
/// any, is left unread).
fn not_served(message: &str) -> s3s::HttpResponse {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NotImplemented</Code>\
         <Message>{message}</Message></Error>"
    );
    let mut r = http::Response::new(s3s::Body::from(xml));
    *r.status_mut() = http::StatusCode::NOT_IMPLEMENTED;
    let h = r.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    h.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    r
}

/// One request through s3s, and its log line: method, path (bucket and key), status, bytes
/// received and sent (as declared: the plaintext length of an aws-chunked body, the response's
/// Content-Length), milliseconds.
async fn logged(
    svc: s3s::service::S3Service,
    req: http::Request<hyper::body::Incoming>,
    quiet: bool,
) -> std::result::Result<s3s::HttpResponse, s3s::HttpError> {
    let t0 = Instant::now();
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let received = length(req.headers(), "x-amz-decoded-content-length")
        .or_else(|| length(req.headers(), "content-length"))
        .unwrap_or(0);
    let with_body = received > 0 || req.headers().contains_key(http::header::TRANSFER_ENCODING);
    let mut answer = match is_post_object(&req) {
        // Refused before a byte of its body is read: s3s reads a form upload whole into
        // memory (up to 5 GiB) before any signature or access check (the fifth review).
        true => Ok(not_served(
            "POST Object (an upload by HTML form) is not served by this gateway: use PUT",
        )),
        false => svc.call(req.map(s3s::Body::from)).await,
    };
    // A refusal answered before the body was read (a bad key, a bad signature) leaves the rest
    // of that body on the connection: the connection is closed after the answer rather than
    // trusted for the client's next request (CI once saw a boto3 request after a refused PUT
    // fail its signature check on a reused connection; the cause is not proven).
    if let Ok(r) = &mut answer {
        if with_body && (r.status().is_client_error() || r.status().is_server_error()) {
            let close = http::HeaderValue::from_static("close");
            r.headers_mut().insert(http::header::CONNECTION, close);
        }
    }
    if !quiet {
        let (status, sent) = match &answer {
            Ok(r) => (
                r.status().as_u16().to_string(),
                length(r.headers(), "content-length").unwrap_or(0),
            ),
            Err(_) => ("error".to_string(), 0),
        };
        let ms = t0.elapsed().as_millis();
        eprintln!("zseal serve: {method} {path} {status} in={received} out={sent} {ms} ms");
    }
    answer
}

/// A length header's value.
fn length(headers: &http::HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.parse().ok()
}

/// Resolves on SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_pairs_a_line() {
        let c = parse_credentials(
            "# team\nAKID1 s3cr3t\n\n  AKID2\tother  backups:wo *:ro\n",
            "creds",
        )
        .unwrap();
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["AKID1", "AKID2"]);
        assert_eq!(c[1].secret.as_str(), "other");
        assert_eq!(c[0].scope, Scope(None));
        assert!(c[1].scope.may("backups", true) && !c[1].scope.may("backups", false));
        let e = parse_credentials("AKID1\n", "creds")
            .unwrap_err()
            .to_string();
        assert!(e.contains("creds line 1") && e.contains("1 field"), "{e}");
        let e = parse_credentials("AKID1 a b:rx\n", "creds")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("creds line 1") && e.contains(":ro, :wo or :rw"),
            "{e}"
        );
        assert!(parse_credentials("# nothing\n", "creds").is_err());
    }

    #[test]
    fn plain_http_beyond_loopback_needs_insecure_http() {
        let lo: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let lo6: SocketAddr = "[::1]:9000".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert!(check_listen(lo, false, false).is_ok());
        assert!(check_listen(lo6, false, false).is_ok());
        let e = check_listen(any, false, false).unwrap_err().to_string();
        assert!(
            e.contains("--insecure-http") && e.contains("--tls-cert"),
            "{e}"
        );
        assert!(check_listen(any, true, false).is_ok());
        assert!(check_listen(any, false, true).is_ok());
    }
}
