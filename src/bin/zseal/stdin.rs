//! `-` is standard input wherever a command reads a file it does not write: the data (no input
//! or `-`), `-R -`, `-i -`, `--passphrase-file -`, `--new-passphrase-file -`, `--signer -`,
//! `--allowed-signers -`, `--signature -`, `--sign -`, as `age` and `zstd` read it. Standard
//! input can be read once, so each command lets one of them claim it; a second is refused,
//! naming both, before it reads a byte (so `echo pw | zseal encrypt --passphrase-file - data`
//! never reads a file named `-`, and a passphrase never comes from the data's first line).

use std::io::Read;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{bail, Context};
use zeroize::Zeroizing;

/// What claimed standard input in this process, for the message when a second thing asks.
static CLAIMED: Mutex<Option<String>> = Mutex::new(None);

/// True for the path `-`.
pub fn is_dash(p: &Path) -> bool {
    p == Path::new("-")
}

/// Claims standard input for `what` (`"-i -"`, `"the data"`); fails when something else has.
pub fn claim(what: &str) -> anyhow::Result<()> {
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(by) = claimed.as_deref() {
        bail!(
            "{what} reads standard input, but {by} reads it already: standard input can be read \
             once, so give one of them as a file"
        );
    }
    *claimed = Some(what.to_string());
    Ok(())
}

/// All of standard input, for `what`, after claiming it, in a buffer wiped when dropped (keys and
/// passphrases come this way). At most `limit` bytes: more is refused, naming `what`.
pub fn read_all(what: &str, limit: usize) -> anyhow::Result<Zeroizing<Vec<u8>>> {
    claim(what)?;
    let mut buf = Zeroizing::new(Vec::with_capacity(limit.min(64 << 10)));
    std::io::stdin()
        .lock()
        .take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("{what}: cannot read standard input"))?;
    if buf.len() > limit {
        bail!(
            "{what}: standard input holds more than {} KiB: give a file",
            limit >> 10
        );
    }
    Ok(buf)
}

/// `read_all` as UTF-8 text.
pub fn read_text(what: &str, limit: usize) -> anyhow::Result<Zeroizing<String>> {
    let bytes = read_all(what, limit)?;
    match std::str::from_utf8(&bytes) {
        Ok(s) => Ok(Zeroizing::new(s.to_string())),
        Err(_) => bail!("{what}: standard input is not text"),
    }
}

/// The whole file at `path` (`-`: standard input, claimed for `what`) in a wiped buffer, and
/// its name for messages.
pub fn read_path(path: &Path, what: &str) -> anyhow::Result<(Zeroizing<Vec<u8>>, String)> {
    if is_dash(path) {
        return Ok((read_all(what, KEYS_MAX)?, "standard input".into()));
    }
    let name = path.display().to_string();
    let data = std::fs::read(path).with_context(|| format!("cannot read {name}"))?;
    Ok((Zeroizing::new(data), name))
}

/// The most a key, a list of keys or a signature read from standard input may hold.
pub const KEYS_MAX: usize = 1 << 20;
