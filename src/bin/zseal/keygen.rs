//! `zseal keygen`: a new X25519 identity (as `age-keygen`; `--pq` a post-quantum one, as
//! `age-keygen -pq`), the recipients of an identity
//! file (`-y`, as `age-keygen -y`), or a record key (`--record-key`) sealed in a container for
//! recipients or a passphrase (FORMAT.md §9.5).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use zeroize::Zeroizing;
use zseal::crypto::{c4gh, recipients};

#[derive(clap::Args)]
pub struct Args {
    /// Write the identity to FILE (created with mode 0600; never overwritten) instead of stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the recipients of the identities in FILE instead (like age-keygen -y; of an OpenSSH
    /// private key, its public key)
    #[arg(short = 'y', value_name = "FILE", conflicts_with = "output")]
    convert: Option<PathBuf>,
    /// Make a record key (for `zseal::records`, Python's RecordSealer) instead, sealed in a
    /// zseal container for -r/-R recipients or a passphrase, so it is shared like any file
    #[arg(long, conflicts_with = "convert")]
    record_key: bool,
    /// With --record-key: seal the key to RECIPIENT (age1…, ssh-ed25519 …); repeatable
    #[arg(
        short,
        long = "recipient",
        value_name = "RECIPIENT",
        requires = "record_key"
    )]
    recipient: Vec<String>,
    /// With --record-key: seal the key to every recipient in FILE; repeatable
    #[arg(
        short = 'R',
        long = "recipients-file",
        value_name = "FILE",
        requires = "record_key"
    )]
    recipients_file: Vec<PathBuf>,
    /// With --record-key: protect the key with the passphrase on the first line of FILE
    /// (without -r/-R and this, the passphrase is asked for)
    #[arg(long, value_name = "FILE", requires = "record_key")]
    passphrase_file: Option<PathBuf>,
    /// A post-quantum identity (AGE-SECRET-KEY-PQ-1…, recipient age1pq1…: ML-KEM-768 + X25519,
    /// as age 1.3 makes with -pq); a file sealed to one is not sealed to classic keys too
    #[arg(long, conflicts_with_all = ["convert", "record_key"])]
    pq: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.record_key {
        return record_key(&a);
    }
    if let Some(f) = a.convert {
        let (data, name) = crate::stdin::read_path(&f, "-y -")?;
        // A crypt4gh private key (crypt4gh-keygen's): its public key file, as crypt4gh-keygen
        // writes it beside.
        let text = String::from_utf8_lossy(&data);
        if text.contains("-----BEGIN CRYPT4GH ") && !text.contains(c4gh::file::PUBLIC_BEGIN) {
            let key = c4gh::file::parse_private_key(&text, &name, &crate::keys::TerminalPrompt)?;
            print!("{}", c4gh::file::public_key_file(&key.public()));
            return Ok(());
        }
        for r in recipients::recipients_of(&data, &name)? {
            println!("{r}");
        }
        return Ok(());
    }
    let (secret, public) = match a.pq {
        true => recipients::generate_pq(),
        false => recipients::generate(),
    };
    let text = Zeroizing::new(format!(
        "# created by zseal keygen\n# public key: {public}\n{}\n",
        *secret
    ));
    match a.output {
        Some(path) => {
            let mut f = crate::files::Output::create_private(Some(&path))?;
            std::io::Write::write_all(&mut f, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            f.commit(true)?;
            eprintln!("Public key: {public}");
        }
        None => {
            print!("{}", *text);
            if !std::io::stdout().is_terminal() {
                eprintln!("Public key: {public}");
            }
        }
    }
    Ok(())
}

/// `--record-key`: a fresh record key, sealed like `zseal encrypt` seals a file.
fn record_key(a: &Args) -> anyhow::Result<()> {
    let recipients = crate::keys::recipients(&a.recipient, &a.recipients_file)?;
    let mut output = crate::files::Output::create_private(a.output.as_deref())?;
    let targets = crate::keys::Targets::for_new_file(recipients, a.passphrase_file.as_deref())?;
    let key = zseal::records::RecordKey::generate()?;
    let container = key.to_container(&targets.refs())?;
    std::io::Write::write_all(&mut output, &container)?;
    output.commit(true)?;
    if let Some(p) = &a.output {
        eprintln!(
            "zseal: record key written to {} (open it with the key it was sealed for)",
            p.display()
        );
    }
    Ok(())
}
