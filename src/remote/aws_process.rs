//! A profile's `credential_process` (the AWS CLI's and SDKs' "sourcing credentials with an
//! external process"): a command that prints `{"Version": 1, "AccessKeyId": …,
//! "SecretAccessKey": …, "SessionToken": …, "Expiration": "RFC 3339"}`. It is run through
//! `sh -c` as the SDKs run it, when credentials are first needed and again five minutes before
//! the ones it gave expire (credentials without an expiry are kept).
//!
//! It runs on a blocking thread of the runtime, never on an I/O thread, and must finish within
//! the request timeout (`ZSEAL_TIMEOUT`, default 300 s): past it, it is killed (and reaped) and
//! the request fails with a message naming the profile, the command and the timeout (only the
//! shell is killed: a process the command started itself runs on, but nothing waits for it,
//! and it holds pipes of zseal's own, not zseal's stderr, so that a reader of that stderr is not
//! kept waiting either; what the process writes to stderr is copied to zseal's). Its
//! environment is zseal's without any `ZSEAL_*` variable (such as `ZSEAL_PASSPHRASE`): those
//! are zseal's, not the helper's. Concurrent requests wait for one run (an async lock) instead
//! of each starting the command.

use std::io::Read;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use object_store::aws::AwsCredential;
use object_store::CredentialProvider;

/// Credentials and when they expire (`None`: never).
type Expiring = (Arc<AwsCredential>, Option<DateTime<Utc>>);

/// Credentials of `credential_process`, refreshed before they expire.
#[derive(Debug)]
pub(super) struct ProcessCredentials {
    command: Command,
    cached: tokio::sync::Mutex<Runs>,
}

/// What the runs left: the credentials, and the last failure with when it ended, so that the
/// requests that waited for a failing run fail with it instead of each running the command
/// again (a hanging helper would otherwise cost its timeout once per request in flight).
#[derive(Default)]
struct Runs {
    credentials: Option<Expiring>,
    failed: Option<(Instant, String)>,
}

/// No credential in debug output.
impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("credentials", &self.credentials.as_ref().map(|(_, t)| t))
            .field("failed", &self.failed)
            .finish()
    }
}

/// The command of a profile, and how long one run may take.
#[derive(Clone, Debug)]
struct Command {
    profile: String,
    command: String,
    timeout: Duration,
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
    /// The `command` of the AWS profile `profile`, each run of which must finish within
    /// `timeout`.
    pub(super) fn new(profile: &str, command: &str, timeout: Duration) -> Self {
        ProcessCredentials {
            command: Command {
                profile: profile.to_string(),
                command: command.to_string(),
                timeout,
            },
            cached: tokio::sync::Mutex::new(Runs::default()),
        }
    }
}

impl Command {
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

    /// Starts the command through `sh -c`, its output piped, with zseal's environment but for
    /// the `ZSEAL_*` variables.
    fn start(&self) -> std::io::Result<Child> {
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars_os() {
            if name.as_encoded_bytes().starts_with(b"ZSEAL_") {
                command.env_remove(name);
            }
        }
        command.spawn()
    }

    /// Runs the command (blocking) and reads what it printed, by the deadline.
    fn run(&self) -> Result<(AwsCredential, Option<DateTime<Utc>>), object_store::Error> {
        let mut child = self
            .start()
            .map_err(|e| self.error(format!("could not be started: {e}")))?;
        let deadline = Instant::now() + self.timeout;
        relay_stderr(&mut child);
        let printed = read_stdout(&mut child);
        let status = wait_until(&mut child, deadline)
            .map_err(|e| self.error(format!("could not be waited for: {e}")))?;
        let Some(status) = status else {
            return Err(self.error(format!(
                "did not finish within {} s and was stopped: make it finish sooner (it must not \
                 wait for input), or allow it more seconds with ZSEAL_TIMEOUT",
                self.timeout.as_secs()
            )));
        };
        if !status.success() {
            return Err(self.error(format!("failed ({status})")));
        }
        // What it started may still hold its output open: that too must end by the deadline.
        let stdout = printed
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| {
                self.error(format!(
                    "exited, but its output was not closed within {} s (ZSEAL_TIMEOUT): \
                     something it started still holds it open",
                    self.timeout.as_secs()
                ))
            })?
            .map_err(|e| self.error(format!("could not be read: {e}")))?;
        parse(&stdout).map_err(|e| self.error(e))
    }
}

/// The child's whole output, read on a thread of its own (so that a child writing more than a
/// pipe holds is not stuck) and received when its output closes.
fn read_stdout(child: &mut Child) -> std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = match stdout {
            Some(mut s) => s.read_to_end(&mut out).map(|_| out),
            None => Err(std::io::Error::other("its output was not captured")),
        };
        // The receiver is gone when the run already failed: nothing is waiting for this.
        let _ = tx.send(read);
    });
    rx
}

/// Copies what the child writes to stderr to zseal's, on a thread of its own that nothing waits
/// for: a process the command started and that outlives it holds this pipe, not zseal's stderr,
/// so that whatever reads zseal's stderr (a pipe, a log) is not kept waiting after zseal ends.
fn relay_stderr(child: &mut Child) {
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            // Nowhere to report a failure to write to stderr.
            let _ = std::io::copy(&mut stderr, &mut std::io::stderr());
        });
    }
}

/// The child's exit status, or `None` when it did not exit by `deadline`: then it is killed
/// and reaped (no zombie is left).
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            // An error here means it exited meanwhile; wait() reaps it either way.
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
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
        // An async lock, held across the run: concurrent requests wait for one run instead of
        // starting many, and no thread is held while they wait.
        let asked = Instant::now();
        let mut runs = self.cached.lock().await;
        if let Some(c) = runs.credentials.as_ref().filter(|c| fresh(c)) {
            return Ok(c.0.clone());
        }
        if let Some((_, why)) = runs.failed.as_ref().filter(|(at, _)| *at >= asked) {
            return Err(object_store::Error::Unauthenticated {
                path: String::new(),
                source: why.clone().into(),
            });
        }
        let command = self.command.clone();
        let ran = tokio::task::spawn_blocking(move || command.run())
            .await
            .map_err(|e| self.command.error(format!("could not be run: {e}")))
            .and_then(|r| r);
        match ran {
            Ok((credential, expires)) => {
                let credential = Arc::new(credential);
                runs.credentials = Some((credential.clone(), expires));
                Ok(credential)
            }
            Err(e) => {
                runs.failed = Some((Instant::now(), e.to_string()));
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process past its timeout fails the run at the deadline, naming the profile, the command
    /// and the variable, whether the shell runs the command itself (`exec`) or as its child
    /// (which outlives the killed shell with the output pipe open).
    #[test]
    fn a_process_past_its_timeout_is_stopped_at_the_deadline() {
        for command in ["exec sleep 8", "sleep 8"] {
            let c = Command {
                profile: "p".into(),
                command: command.into(),
                timeout: Duration::from_secs(1),
            };
            let started = Instant::now();
            let Err(e) = c.run() else {
                panic!("{command} gave credentials");
            };
            let e = e.to_string();
            let took = started.elapsed();
            assert!(took < Duration::from_secs(5), "{command}: {took:?}");
            let named = format!(
                "the credential_process of the AWS profile 'p' ({command}) did not finish \
                 within 1 s"
            );
            assert!(e.contains(&named) && e.contains("ZSEAL_TIMEOUT"), "{e}");
        }
    }

    /// Requests that waited for a run that failed fail with it: a hanging helper costs its
    /// timeout once, not once per request in flight.
    #[test]
    fn requests_waiting_on_a_failed_run_do_not_run_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs");
        let provider = ProcessCredentials {
            command: Command {
                profile: "p".into(),
                command: format!("echo run >> {}; exec sleep 8", log.display()),
                timeout: Duration::from_secs(1),
            },
            cached: tokio::sync::Mutex::new(Runs::default()),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let provider = Arc::new(provider);
        let started = Instant::now();
        let asks: Vec<_> = (0..4)
            .map(|_| {
                let p = provider.clone();
                rt.spawn(async move { p.get_credential().await.map(|_| ()) })
            })
            .collect();
        let results: Vec<_> = asks.into_iter().map(|h| rt.block_on(h).unwrap()).collect();
        assert!(results.iter().all(|r| r.is_err()));
        let runs = std::fs::read_to_string(&log).unwrap();
        assert_eq!(runs.lines().count(), 1, "{runs}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

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
