//! S3 settings from where the AWS command line and SDKs keep them, so that a user who can run
//! `aws s3 ls` can run zseal on the same bucket with nothing new to set.
//!
//! Credentials, the first found wins, in the AWS CLI's order (but for web identity, see 3.):
//! 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (and
//!    the caller's own settings);
//! 2. the profile: `AWS_PROFILE`, else `AWS_DEFAULT_PROFILE` (when both are set `AWS_PROFILE`
//!    wins, as in the AWS CLI v2; boto3 and the CLI v1 prefer `AWS_DEFAULT_PROFILE`), else
//!    `default`. Its section of the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//!    `~/.aws/credentials`, `[NAME]`) and of the config file (`AWS_CONFIG_FILE`, else
//!    `~/.aws/config`, `[profile NAME]`, or `[default]` / `[profile default]`) are read as one,
//!    the credentials file's values first. Within it, as the SDKs look for them:
//!    - a source zseal does not implement is refused, with a message naming the profile, the
//!      setting, and how to export the credentials: web identity (`web_identity_token_file`,
//!      with or without `role_arn`), an assumed role (`role_arn`, `source_profile`,
//!      `credential_source`), IAM Identity Center (`sso_session`, `sso_start_url`,
//!      `sso_account_id`, `sso_role_name`) and `aws login` (`login_session`). These come before
//!      keys in the SDKs, so a profile that has both is refused too: zseal never signs with
//!      other credentials than the ones the SDKs would use;
//!    - the keys of the credentials file (`aws_access_key_id`, `aws_secret_access_key`,
//!      `aws_session_token`);
//!    - `credential_process` (`aws_process`: within `ZSEAL_TIMEOUT`, without `ZSEAL_*`);
//!    - the keys of the config file.
//!
//!    One key without the other is an error, in either file. A profile named by a variable but
//!    in neither file is an error; a missing `default` is not;
//! 3. what `object_store` reads from the environment besides: web identity
//!    (`AWS_WEB_IDENTITY_TOKEN_FILE`; the AWS CLI and most SDKs look for it before the profile,
//!    the Rust SDK after it, as here), container credentials, then the instance metadata service
//!    (EC2), unless `AWS_EC2_METADATA_DISABLED=true`, in which case no credentials at all is an
//!    error that says what to set (or `AWS_SKIP_SIGNATURE=true`).
//!
//! Region and endpoint: `AWS_REGION` / `AWS_DEFAULT_REGION` and `AWS_ENDPOINT_URL`, else the
//! profile's `region` and `endpoint_url` (config file). An `http://` endpoint (MinIO, moto, a
//! test server) is allowed without further setting, as the AWS command line allows it.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

/// One profile's settings, lower-case keys.
type Section = HashMap<String, String>;

/// Reads one variable of the environment (`std::env` in use, a map in the tests); an empty
/// value is `None`.
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

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
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let profile = Profile::read(&env, home)?;
    let has = |key: AmazonS3ConfigKey, b: &AmazonS3Builder| b.get_config_value(&key).is_some();
    let mut from_process = false;
    if !has(AmazonS3ConfigKey::AccessKeyId, &b) {
        match profile.credentials()? {
            Credentials::Keys { id, secret, token } => {
                b = b.with_access_key_id(id).with_secret_access_key(secret);
                if let Some(t) = token {
                    b = b.with_token(t);
                }
            }
            Credentials::Process(command) => {
                let provider = super::aws_process::ProcessCredentials::new(
                    &profile.name,
                    &command,
                    process_timeout,
                );
                b = b.with_credentials(std::sync::Arc::new(provider));
                from_process = true;
            }
            Credentials::None => {}
        }
    }
    if !has(AmazonS3ConfigKey::Region, &b) {
        if let Some(r) = profile.config.get("region") {
            b = b.with_region(r);
        }
    }
    if !has(AmazonS3ConfigKey::Endpoint, &b) {
        if let Some(e) = profile.config.get("endpoint_url") {
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
                 AWS_PROFILE with a profile in ~/.aws/credentials (profile '{}' has no \
                 keys), or AWS_SKIP_SIGNATURE=true for a public bucket",
                profile.name
            ),
        ));
    }
    Ok((b, client))
}

/// The profile in use, with its sections of the two files (empty when absent).
struct Profile {
    name: String,
    /// Its section of the shared credentials file.
    creds: Section,
    /// Its section of the config file.
    config: Section,
}

/// Where a profile's credentials come from, of what zseal implements.
#[derive(Debug, PartialEq)]
enum Credentials {
    Keys {
        id: String,
        secret: String,
        token: Option<String>,
    },
    /// The profile's `credential_process`.
    Process(String),
    /// The profile gives none: the environment's other sources are next.
    None,
}

impl Profile {
    /// The profile `AWS_PROFILE`, else `AWS_DEFAULT_PROFILE`, else `default`, from the files the
    /// environment names (else those under `home`). A profile named by a variable must be in
    /// one of the files.
    fn read(env: Env, home: Option<PathBuf>) -> io::Result<Profile> {
        let named = ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"]
            .into_iter()
            .find_map(|var| env(var).map(|name| (var, name)));
        let name = named.as_ref().map_or("default", |(_, n)| n.as_str());
        let file = |var: &str, default: &str| {
            env(var)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
        };
        let mut creds = read_ini(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"))?;
        let mut config = read_ini(file("AWS_CONFIG_FILE", "config"))?;
        let in_creds = creds.remove(name);
        let mut in_config = config.remove(&format!("profile {name}"));
        if name == "default" {
            // `[default]` is the usual spelling; the SDKs also read `[profile default]`.
            if let Some(d) = config.remove("default") {
                in_config.get_or_insert_with(Section::new).extend(d);
            }
        }
        if let Some((var, _)) = &named {
            if in_creds.is_none() && in_config.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{var}={name}, but neither ~/.aws/credentials nor ~/.aws/config (or \
                         AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE) has that profile"
                    ),
                ));
            }
        }
        Ok(Profile {
            name: name.to_string(),
            creds: in_creds.unwrap_or_default(),
            config: in_config.unwrap_or_default(),
        })
    }

    /// A setting of the profile, from the credentials file first, then the config file (the
    /// SDKs read the two as one profile).
    fn get(&self, key: &str) -> Option<&String> {
        self.creds.get(key).or_else(|| self.config.get(key))
    }

    /// The profile's credentials, in the SDKs' order (module docs): a source zseal does not
    /// implement is refused before any other is looked at.
    fn credentials(&self) -> io::Result<Credentials> {
        if let Some((setting, kind)) = UNIMPLEMENTED.iter().find(|(k, _)| self.get(k).is_some()) {
            return Err(unimplemented_source(&self.name, setting, kind));
        }
        if let Some(keys) = self.keys(&self.creds, "credentials")? {
            return Ok(keys);
        }
        if let Some(command) = self.get("credential_process") {
            return Ok(Credentials::Process(command.clone()));
        }
        Ok(self
            .keys(&self.config, "config")?
            .unwrap_or(Credentials::None))
    }

    /// The keys of the profile's section of one file (`which`), if it has them; one without
    /// the other is an error (the SDKs refuse an access key without its secret).
    fn keys(&self, section: &Section, which: &str) -> io::Result<Option<Credentials>> {
        let id = section.get("aws_access_key_id");
        let secret = section.get("aws_secret_access_key");
        match (id, secret) {
            (Some(id), Some(secret)) => Ok(Some(Credentials::Keys {
                id: id.clone(),
                secret: secret.clone(),
                token: section.get("aws_session_token").cloned(),
            })),
            (None, None) => Ok(None),
            (has, _) => {
                let (present, missing) = if has.is_some() {
                    ("aws_access_key_id", "aws_secret_access_key")
                } else {
                    ("aws_secret_access_key", "aws_access_key_id")
                };
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the AWS profile '{}' has {present} but no {missing} in the {which} \
                         file: add it, or remove both",
                        self.name
                    ),
                ))
            }
        }
    }
}

/// A profile's settings that name a source of credentials zseal does not implement (each needs
/// a call to AWS STS, SSO or the sign-in service: the SDKs' config loader, some 200 crates),
/// with what the refusal calls it; in the SDKs' order, the first found is the one named.
/// `web_identity_token_file` comes first: with a `role_arn` beside it, the SDKs assume that
/// role with the token, not with a source profile.
const UNIMPLEMENTED: [(&str, &str); 9] = [
    ("web_identity_token_file", "a web identity token"),
    ("role_arn", "an assumed role"),
    ("source_profile", "an assumed role"),
    ("credential_source", "an assumed role"),
    ("sso_session", "IAM Identity Center (SSO)"),
    ("sso_start_url", "IAM Identity Center (SSO)"),
    ("sso_account_id", "IAM Identity Center (SSO)"),
    ("sso_role_name", "IAM Identity Center (SSO)"),
    ("login_session", "an `aws login` session"),
];

/// The refusal of a profile whose credentials come from `setting`, a source of `kind`.
fn unimplemented_source(profile: &str, setting: &str, kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "the AWS profile '{profile}' gets its credentials from {kind} (`{setting}`), which \
             zseal cannot obtain itself, and it will not fall back to other credentials: export \
             the profile's credentials first, e.g. eval \"$(aws configure export-credentials \
             --profile {profile} --format env)\", or use a profile whose credential_process is \
             `aws configure export-credentials --profile {profile} --format process`"
        ),
    )
}

/// The sections of the INI file at `path`; none when the file is absent.
fn read_ini(path: Option<PathBuf>) -> io::Result<HashMap<String, Section>> {
    let Some(path) = path else {
        return Ok(HashMap::new());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse_ini(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(HashMap::new()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot read {}: {e}", path.display()),
        )),
    }
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

    /// The profile's credentials from these files and variables (`AWS_CONFIG_FILE` and
    /// `AWS_SHARED_CREDENTIALS_FILE` name the files; HOME is not read), and the profile's name.
    fn resolve(
        config: &str,
        creds: &str,
        vars: &[(&str, &str)],
    ) -> io::Result<(String, Credentials)> {
        let d = tempfile::tempdir()?;
        let (config_file, creds_file) = (d.path().join("config"), d.path().join("credentials"));
        std::fs::write(&config_file, config)?;
        std::fs::write(&creds_file, creds)?;
        let mut vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        vars.insert("AWS_CONFIG_FILE".into(), config_file.display().to_string());
        vars.insert(
            "AWS_SHARED_CREDENTIALS_FILE".into(),
            creds_file.display().to_string(),
        );
        let env = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
        let p = Profile::read(&env, None)?;
        Ok((p.name.clone(), p.credentials()?))
    }

    fn keys(id: &str) -> Credentials {
        Credentials::Keys {
            id: id.into(),
            secret: "s".into(),
            token: None,
        }
    }

    /// The refusal's text, which must name the profile, the setting and the export command.
    fn refused(r: io::Result<(String, Credentials)>, profile: &str, setting: &str) -> String {
        let e = r.expect_err("refused").to_string();
        for part in [
            format!("the AWS profile '{profile}'"),
            format!("(`{setting}`)"),
            format!("aws configure export-credentials --profile {profile} --format env"),
        ] {
            assert!(e.contains(&part), "{part:?} not in: {e}");
        }
        e
    }

    const DEFAULT_KEYS: &str =
        "[default]\naws_access_key_id = DEFAULT\naws_secret_access_key = s\n";

    #[test]
    fn aws_default_profile_names_the_profile_and_aws_profile_wins_over_it() {
        let creds = format!(
            "{DEFAULT_KEYS}[a]\naws_access_key_id = A\naws_secret_access_key = s\n\
             [b]\naws_access_key_id = B\naws_secret_access_key = s\n"
        );
        let r = resolve("", &creds, &[("AWS_DEFAULT_PROFILE", "b")]).unwrap();
        assert_eq!(r, ("b".into(), keys("B")));
        let both = [("AWS_PROFILE", "a"), ("AWS_DEFAULT_PROFILE", "b")];
        assert_eq!(resolve("", &creds, &both).unwrap(), ("a".into(), keys("A")));
        let empty = [("AWS_PROFILE", ""), ("AWS_DEFAULT_PROFILE", "b")];
        assert_eq!(resolve("", &creds, &empty).unwrap().0, "b");
        assert_eq!(
            resolve("", &creds, &[]).unwrap(),
            ("default".into(), keys("DEFAULT"))
        );
        let e = resolve("", &creds, &[("AWS_DEFAULT_PROFILE", "nobody")]).unwrap_err();
        assert!(e.to_string().contains("AWS_DEFAULT_PROFILE=nobody"), "{e}");
    }

    #[test]
    fn a_login_session_is_refused_not_left_to_the_instance_role() {
        let config = "[profile console]\nregion = eu-west-3\n\
                      login_session = arn:aws:iam::123456789012:user/me\n";
        let r = resolve(config, DEFAULT_KEYS, &[("AWS_PROFILE", "console")]);
        let e = refused(r, "console", "login_session");
        assert!(e.contains("an `aws login` session"), "{e}");
        // Through AWS_DEFAULT_PROFILE too (which once fell back to [default]'s keys).
        let r = resolve(config, DEFAULT_KEYS, &[("AWS_DEFAULT_PROFILE", "console")]);
        refused(r, "console", "login_session");
    }

    #[test]
    fn an_assumed_role_is_refused_even_beside_a_credential_process_or_keys() {
        let config = "[profile r]\nrole_arn = arn:aws:iam::123456789012:role/r\n\
                      source_profile = base\ncredential_process = /bin/creds\n\
                      [profile base]\ncredential_process = /bin/creds\n";
        let e = refused(
            resolve(config, "", &[("AWS_PROFILE", "r")]),
            "r",
            "role_arn",
        );
        assert!(e.contains("an assumed role"), "{e}");
        // The role in the credentials file, keys beside it, and the default profile.
        let creds = "[default]\nrole_arn = arn:aws:iam::123456789012:role/r\n\
                     credential_source = Ec2InstanceMetadata\n\
                     aws_access_key_id = A\naws_secret_access_key = s\n";
        refused(resolve("", creds, &[]), "default", "role_arn");
    }

    #[test]
    fn web_identity_sso_and_role_sources_are_refused_before_keys() {
        let with_keys = "aws_access_key_id = A\naws_secret_access_key = s\n";
        for (settings, named) in [
            (
                "web_identity_token_file = /t\nrole_arn = arn:aws:iam::1:role/r\n",
                "web_identity_token_file",
            ),
            ("source_profile = base\n", "source_profile"),
            (
                "sso_session = corp\nsso_account_id = 1\nsso_role_name = r\n",
                "sso_session",
            ),
            (
                "sso_start_url = https://x.awsapps.com/start\n",
                "sso_start_url",
            ),
            ("sso_account_id = 1\nsso_role_name = r\n", "sso_account_id"),
        ] {
            let config = format!("[profile p]\n{settings}{with_keys}");
            refused(resolve(&config, "", &[("AWS_PROFILE", "p")]), "p", named);
        }
    }

    #[test]
    fn keys_and_credential_process_come_in_the_aws_cli_order() {
        let process = "[profile p]\ncredential_process = /bin/creds --p\n";
        let run = Credentials::Process("/bin/creds --p".into());
        assert_eq!(
            resolve(process, "", &[("AWS_PROFILE", "p")]).unwrap().1,
            run
        );
        // The credentials file's keys come before the process, the config file's after it.
        let creds = "[p]\naws_access_key_id = FROMCREDS\naws_secret_access_key = s\n";
        assert_eq!(
            resolve(process, creds, &[("AWS_PROFILE", "p")]).unwrap().1,
            keys("FROMCREDS")
        );
        let config =
            format!("{process}aws_access_key_id = FROMCONFIG\naws_secret_access_key = s\n");
        assert_eq!(
            resolve(&config, "", &[("AWS_PROFILE", "p")]).unwrap().1,
            run
        );
        let config = "[profile p]\naws_access_key_id = FROMCONFIG\n\
                      aws_secret_access_key = s\naws_session_token = t\n";
        let (_, c) = resolve(config, "", &[("AWS_PROFILE", "p")]).unwrap();
        assert_eq!(
            c,
            Credentials::Keys {
                id: "FROMCONFIG".into(),
                secret: "s".into(),
                token: Some("t".into())
            }
        );
        // [profile default] is the default profile too; a profile with nothing is no source.
        let d = "[profile default]\ncredential_process = /bin/creds --p\n";
        assert_eq!(resolve(d, "", &[]).unwrap(), ("default".into(), run));
        assert_eq!(
            resolve(
                "[profile p]\nregion = eu-west-3\n",
                "",
                &[("AWS_PROFILE", "p")]
            )
            .unwrap()
            .1,
            Credentials::None
        );
    }

    #[test]
    fn one_key_without_the_other_is_an_error() {
        let creds = "[p]\naws_access_key_id = A\n";
        let e = resolve("", creds, &[("AWS_PROFILE", "p")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "'p' has aws_access_key_id but no aws_secret_access_key in the credentials file"
            ),
            "{e}"
        );
        let config = "[default]\naws_secret_access_key = s\n";
        let e = resolve(config, "", &[]).unwrap_err().to_string();
        assert!(
            e.contains("has aws_secret_access_key but no aws_access_key_id in the config file"),
            "{e}"
        );
    }
}
