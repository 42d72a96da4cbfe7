//! S3 settings from where the AWS command line and SDKs keep them, so that a user who can run
//! `aws s3 ls` can run zseal on the same bucket with nothing new to set.
//!
//! In order, first found wins, for each setting:
//! - the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//!   `AWS_REGION` / `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL` (and everything else `object_store`
//!   reads from `AWS_*`: web identity, container credentials, `AWS_SKIP_SIGNATURE`);
//! - the profile `AWS_PROFILE` (else `default`): keys from the shared credentials file
//!   (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then from the config file
//!   (`AWS_CONFIG_FILE`, else `~/.aws/config`, section `[profile NAME]` or `[default]`), with
//!   the config file's `region` and `endpoint_url`; or, when the profile has no keys, its
//!   `credential_process` (run through `sh -c` as the AWS SDKs run it, again before the
//!   credentials it gave expire, within `ZSEAL_TIMEOUT` and without zseal's `ZSEAL_*`
//!   variables: `aws_process`). A profile whose credentials come from what zseal cannot
//!   reach itself (`role_arn` with `source_profile` or `credential_source`, SSO,
//!   `web_identity_token_file`) is refused with a message naming the profile, the setting, and
//!   how to export its credentials: it never falls through to the machine's own role;
//! - the instance metadata service (EC2), unless `AWS_EC2_METADATA_DISABLED=true`, in which
//!   case no credentials at all is an error that says what to set.
//!
//! An `http://` endpoint (MinIO, moto, a test server) is allowed without further setting, as the
//! AWS command line allows it.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

/// One profile's settings, lower-case keys.
type Section = HashMap<String, String>;

/// The S3 builder with every setting the environment and the profile give, and its client
/// options: `client`, allowing plain HTTP for an `http://` endpoint. A `credential_process`
/// must finish within `process_timeout` (`ZSEAL_TIMEOUT`).
pub(super) fn builder(
    client: object_store::ClientOptions,
    settings: Vec<(AmazonS3ConfigKey, String)>,
    process_timeout: Duration,
) -> io::Result<(AmazonS3Builder, object_store::ClientOptions)> {
    // The caller's settings win over the environment, and the profile fills in what neither set.
    let mut b = AmazonS3Builder::from_env();
    for (k, v) in settings {
        b = b.with_config(k, v);
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let named = env("AWS_PROFILE");
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, default: &str| {
        env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
    };
    let creds = read_section(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), &profile)?;
    let config_name = if profile == "default" {
        "default".to_string()
    } else {
        format!("profile {profile}")
    };
    let config = read_section(file("AWS_CONFIG_FILE", "config"), &config_name)?;
    if let Some(p) = &named {
        if creds.is_none() && config.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "AWS_PROFILE={p}, but neither ~/.aws/credentials nor ~/.aws/config (or \
                     AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE) has that profile"
                ),
            ));
        }
    }
    let get = |k: &str| {
        creds
            .as_ref()
            .and_then(|s| s.get(k))
            .or_else(|| config.as_ref().and_then(|s| s.get(k)))
            .cloned()
    };
    let has = |key: AmazonS3ConfigKey, b: &AmazonS3Builder| b.get_config_value(&key).is_some();
    let mut from_process = false;
    if !has(AmazonS3ConfigKey::AccessKeyId, &b) {
        if let (Some(id), Some(secret)) = (get("aws_access_key_id"), get("aws_secret_access_key")) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(t) = get("aws_session_token") {
                b = b.with_token(t);
            }
        } else if let Some(command) = get("credential_process") {
            let provider =
                super::aws_process::ProcessCredentials::new(&profile, &command, process_timeout);
            b = b.with_credentials(std::sync::Arc::new(provider));
            from_process = true;
        } else if let Some(setting) = UNREACHABLE.iter().find(|k| get(k).is_some()) {
            return Err(unreachable_source(&profile, setting));
        }
    }
    if !has(AmazonS3ConfigKey::Region, &b) {
        if let Some(r) = config.as_ref().and_then(|s| s.get("region")) {
            b = b.with_region(r);
        }
    }
    if !has(AmazonS3ConfigKey::Endpoint, &b) {
        if let Some(e) = config.as_ref().and_then(|s| s.get("endpoint_url")) {
            b = b.with_endpoint(e);
        }
    }
    let plain = b
        .get_config_value(&AmazonS3ConfigKey::Endpoint)
        .is_some_and(|e| e.starts_with("http://"));
    let client = client.with_allow_http(plain);
    b = b.with_client_options(client.clone());
    let metadata_off = env("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v == "true");
    let signs = b
        .get_config_value(&AmazonS3ConfigKey::SkipSignature)
        .is_none_or(|v| v != "true");
    let other_source = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|k| env(k).is_some());
    if metadata_off
        && signs
        && !other_source
        && !from_process
        && !has(AmazonS3ConfigKey::AccessKeyId, &b)
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
                 AWS_PROFILE with a profile in ~/.aws/credentials (profile '{profile}' has no \
                 keys), or AWS_SKIP_SIGNATURE=true for a public bucket"
            ),
        ));
    }
    Ok((b, client))
}

/// A profile's settings that name a source of credentials zseal does not reach itself: each
/// needs a call to AWS STS or SSO (the SDKs' config loader, some 200 crates).
const UNREACHABLE: [&str; 6] = [
    "role_arn",
    "source_profile",
    "credential_source",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
];

/// The refusal of a profile whose credentials come from `setting`.
fn unreachable_source(profile: &str, setting: &str) -> io::Error {
    let kind = match setting {
        "sso_session" | "sso_start_url" => "IAM Identity Center (SSO)",
        "web_identity_token_file" => "a web identity token",
        _ => "an assumed role",
    };
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "the AWS profile '{profile}' gets its credentials from {kind} (`{setting}`), which \
             zseal cannot obtain itself, and it will not fall back to other credentials: export \
             the profile's credentials first, e.g. eval \"$(aws configure export-credentials \
             --profile {profile} --format env)\", or give the profile a credential_process"
        ),
    )
}

/// The section `name` of the INI file at `path`; `None` when the file or the section is absent.
fn read_section(path: Option<PathBuf>, name: &str) -> io::Result<Option<Section>> {
    let Some(path) = path else { return Ok(None) };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", path.display()),
            ))
        }
    };
    Ok(parse_ini(&text).remove(name))
}

/// The AWS files' INI dialect: `[section]`, `key = value`, `#` and `;` comments; indented lines
/// continue a nested block (`s3 =` followed by indented settings), which zseal skips.
fn parse_ini(text: &str) -> HashMap<String, Section> {
    let mut out: HashMap<String, Section> = HashMap::new();
    let mut current: Option<String> = None;
    for raw in text.lines() {
        let nested = raw.starts_with([' ', '\t']);
        let line = raw.trim();
        if line.is_empty() || line.starts_with(['#', ';']) || nested {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(sec), Some((k, v))) = (&current, line.split_once('=')) {
            let v = v.trim();
            if !v.is_empty() {
                out.entry(sec.clone())
                    .or_default()
                    .insert(k.trim().to_ascii_lowercase(), v.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aws_files_dialect() {
        let ini = "\
# comment
[default]
aws_access_key_id = AKIDEFAULT
aws_secret_access_key=secret1

[profile  team]
region = eu-west-3
s3 =
  max_concurrent_requests = 20
endpoint_url = http://127.0.0.1:9000
; another comment
[empty]
";
        let m = parse_ini(ini);
        assert_eq!(m["default"]["aws_access_key_id"], "AKIDEFAULT");
        assert_eq!(m["default"]["aws_secret_access_key"], "secret1");
        assert_eq!(m["profile team"]["region"], "eu-west-3");
        assert_eq!(m["profile team"]["endpoint_url"], "http://127.0.0.1:9000");
        assert!(!m["profile team"].contains_key("max_concurrent_requests"));
        assert!(
            !m["profile team"].contains_key("s3"),
            "an empty value opens a nested block"
        );
        assert!(m["empty"].is_empty());
    }
}
