//! `zseal keygen`: a new X25519 identity (as `age-keygen`), or the recipients of an identity
//! file (`-y`, as `age-keygen -y`).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use zeroize::Zeroizing;
use zseal::crypto::recipients;

#[derive(clap::Args)]
pub struct Args {
    /// Write the identity to FILE (created with mode 0600; never overwritten) instead of stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the recipients of the identities in FILE instead (like age-keygen -y)
    #[arg(short = 'y', value_name = "FILE", conflicts_with = "output")]
    convert: Option<PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if let Some(f) = a.convert {
        let data = Zeroizing::new(
            std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?,
        );
        for r in recipients::recipients_of(&data, &f.display().to_string())? {
            println!("{r}");
        }
        return Ok(());
    }
    let (secret, public) = recipients::generate();
    let text = Zeroizing::new(format!(
        "# created by zseal keygen\n# public key: {public}\n{}\n",
        *secret
    ));
    match a.output {
        Some(path) => {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&path).with_context(|| {
                format!(
                    "cannot create {} (an existing key file is never overwritten)",
                    path.display()
                )
            })?;
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.sync_all()?;
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
