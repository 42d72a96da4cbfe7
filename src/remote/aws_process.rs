//! A profile's `credential_process` (the AWS CLI's and SDKs' "sourcing credentials with an
//! external process"): a command that prints `{"Version": 1, "AccessKeyId": …,
//! "SecretAccessKey": …, "SessionToken": …, "Expiration": "RFC 3339"}`. It is run through
//! `sh -c` as the SDKs run it, when credentials are first needed and again five minutes before
//! the ones it gave expire (credentials without an expiry are kept).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use object_store::aws::AwsCredential;
use object_store::CredentialProvider;

/// Credentials and when they expire (`None`: never).
type Expiring = (Arc<AwsCredential>, Option<DateTime<Utc>>);

/// Credentials of `credential_process`, refreshed before they expire.
#[derive(Debug)]
pub(super) struct ProcessCredentials {
    profile: String,
    command: String,
    cached: Mutex<Option<Expiring>>,
}

/// What the process prints (the fields the AWS documentation specifies).
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Printed {
    version: u32,
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    expiration: Option<String>,
}

impl ProcessCredentials {
    pub(super) fn new(profile: &str, command: &str) -> Self {
        ProcessCredentials {
            profile: profile.to_string(),
            command: command.to_string(),
            cached: Mutex::new(None),
        }
    }

    fn error(&self, what: String) -> object_store::Error {
        object_store::Error::Unauthenticated {
            path: String::new(),
            source: format!(
                "the credential_process of the AWS profile '{}' ({}) {what}",
                self.profile, self.command
            )
            .into(),
        }
    }

    /// Runs the command and reads what it printed.
    fn run(&self) -> Result<(AwsCredential, Option<DateTime<Utc>>), object_store::Error> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| self.error(format!("could not be started: {e}")))?;
        if !out.status.success() {
            return Err(self.error(format!("failed ({})", out.status)));
        }
        parse(&out.stdout).map_err(|e| self.error(e))
    }
}

/// The credentials and their expiry from the process's output.
fn parse(stdout: &[u8]) -> Result<(AwsCredential, Option<DateTime<Utc>>), String> {
    let p: Printed = serde_json::from_slice(stdout)
        .map_err(|e| format!("printed something other than its JSON credentials: {e}"))?;
    if p.version != 1 {
        return Err(format!("printed Version {}, not 1", p.version));
    }
    let expires = p
        .expiration
        .map(|t| {
            DateTime::parse_from_rfc3339(&t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| format!("printed an Expiration that is not RFC 3339 ({t}): {e}"))
        })
        .transpose()?;
    let credential = AwsCredential {
        key_id: p.access_key_id,
        secret_key: p.secret_access_key,
        token: p.session_token,
    };
    Ok((credential, expires))
}

#[async_trait]
impl CredentialProvider for ProcessCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let fresh = |(_, expires): &Expiring| {
            expires.is_none_or(|t| t - Utc::now() > chrono::Duration::minutes(5))
        };
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cached.as_ref().filter(|c| fresh(c)) {
            return Ok(c.0.clone());
        }
        // Held across the run: concurrent requests wait for one run instead of starting many.
        // The command is short (it prints a few lines); it runs on this I/O thread.
        let (credential, expires) = self.run()?;
        let credential = Arc::new(credential);
        *cached = Some((credential.clone(), expires));
        Ok(credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_output_is_read_as_the_aws_documentation_specifies() {
        let (c, t) = parse(
            br#"{"Version": 1, "AccessKeyId": "AKIA1", "SecretAccessKey": "s",
                 "SessionToken": "tok", "Expiration": "2026-11-26T15:00:00+00:00"}"#,
        )
        .unwrap();
        assert_eq!((c.key_id.as_str(), c.secret_key.as_str()), ("AKIA1", "s"));
        assert_eq!(c.token.as_deref(), Some("tok"));
        assert_eq!(t.unwrap().to_rfc3339(), "2026-11-26T15:00:00+00:00");
        let (c, t) =
            parse(br#"{"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "s"}"#).unwrap();
        assert!(c.token.is_none() && t.is_none());
        for (bad, why) in [
            (&br#"{"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "s"}"#[..], "Version 2"),
            (br#"{"Version": 1, "AccessKeyId": "A"}"#, "JSON credentials"),
            (b"AKIA1 secret", "JSON credentials"),
            (
                br#"{"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "s", "Expiration": "soon"}"#,
                "not RFC 3339",
            ),
        ] {
            let e = parse(bad).err().unwrap();
            assert!(e.contains(why), "{e}");
        }
    }
}
