//! `zseal serve s3 ROOT`: the encrypting S3 gateway (docs/GATEWAY.md). This module only reads
//! the arguments and the key and credential files; the gateway is the library's
//! `zseal::gateway`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use zeroize::Zeroizing;
use zseal::{Codec, EncryptOptions};

use crate::keys;

#[derive(clap::Subcommand)]
pub enum Command {
    /// An S3 endpoint that stores every object as a container sealed to -r/-R, and reads them
    /// back with -i (without -i: write-only)
    #[command(after_help = EXAMPLES)]
    S3(S3Args),
}

pub const EXAMPLES: &str = "\
Examples:
  zseal serve s3 ./vault -R team.txt -i gateway.key --credentials creds
  aws --endpoint-url http://127.0.0.1:9000 s3 cp backup.tar s3://backups/backup.tar
  zseal decrypt -i me.key ./vault/backups/backup.tar | tar t
  zseal serve s3 ./vault -r age1… --credentials creds     # write-only: no GET

See docs/GATEWAY.md: what is stored, what the host can see, client settings.";

#[derive(clap::Args)]
pub struct S3Args {
    /// The directory whose subdirectories are the buckets (ROOT/BUCKET/KEY), or an s3://, gs://
    /// or az:// URL whose prefixes are (s3://bucket/prefix: BUCKET/KEY below prefix/)
    #[arg(value_name = "ROOT")]
    root: PathBuf,
    /// Address and port to listen on; beyond loopback only with --tls-cert/--tls-key or
    /// --insecure-http
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Serve plain HTTP on a non-loopback address (the network must be protected otherwise)
    #[arg(long)]
    insecure_http: bool,
    /// Serve HTTPS with this certificate (and its chain), PEM
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM, unencrypted
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    // Every object is sealed to these.
    #[command(flatten)]
    to: keys::To,
    /// Identity file to open objects with for GET (unencrypted age or OpenSSH keys); without
    /// it the gateway is write-only; repeatable
    #[arg(short, long = "identity", value_name = "FILE")]
    identity: Vec<PathBuf>,
    /// ACCESS_KEY_ID SECRET_ACCESS_KEY pairs, one a line: every request must be signed with one;
    /// after a pair, the buckets its key may use (BUCKET, BUCKET:ro, BUCKET:wo, * for the rest;
    /// none: every bucket)
    #[arg(long, value_name = "FILE")]
    credentials: PathBuf,
    /// Compression: zstd[:LEVEL], lz4, gzip[:LEVEL] or none
    #[arg(short, long, value_name = "ALGO", default_value = "zstd:3",
          value_parser = crate::encrypt::parse_with::<Codec>)]
    compress: Codec,
    /// Worker threads shared by all requests (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// Uploads and downloads that run at once (a completion or a copy counts twice); more
    /// wait. Each holds a window of chunk buffers (the bound: docs/GATEWAY.md, "Memory")
    #[arg(long, value_name = "N", default_value_t = 4)]
    max_requests: usize,
    /// No line per request on standard error
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(c: Command) -> anyhow::Result<()> {
    match c {
        Command::S3(a) => s3(a),
    }
}

fn s3(a: S3Args) -> anyhow::Result<()> {
    // Freed chunk buffers go back to the kernel: the memory bound of docs/GATEWAY.md holds.
    zseal::alloc::return_large_blocks();
    let recipients = a.to.read()?;
    let mut identities = Vec::new();
    for p in &a.identity {
        let data = std::fs::read(p).with_context(|| format!("reading -i {}", p.display()))?;
        identities.push(Zeroizing::new(data));
    }
    let text = std::fs::read_to_string(&a.credentials)
        .with_context(|| format!("reading --credentials {}", a.credentials.display()))?;
    let credentials =
        zseal::gateway::parse_credentials(&text, &a.credentials.display().to_string())?;
    let write_only = identities.is_empty();
    let scheme = match a.tls_cert.is_some() {
        true => "https",
        false => "http",
    };
    let config = zseal::gateway::Config {
        root: a.root,
        listen: a.listen,
        insecure_http: a.insecure_http,
        tls: a.tls_cert.zip(a.tls_key),
        recipients,
        identities,
        credentials,
        encrypt: EncryptOptions::default()
            .codec(a.compress)
            .threads(a.threads),
        max_requests: a.max_requests,
        quiet: a.quiet,
    };
    // Printed even with --quiet: the bound port (with --listen 127.0.0.1:0) is in it.
    zseal::gateway::serve(config, |addr| {
        let mode = match write_only {
            true => " (write-only: no -i)",
            false => "",
        };
        eprintln!("zseal serve: listening on {scheme}://{addr}{mode}");
    })?;
    Ok(())
}
