//! `zseal cat ARCHIVE MEMBER`: one member of an archive (a container whose plaintext is a tar,
//! FORMAT.md §15) written out, as `tar xO` writes it. Until archives carry their index (§15.1)
//! it reads the tar through the decryption up to the member, writes the member's bytes, and
//! reads on to the container's end, which must authenticate before the output is kept.

use std::path::PathBuf;

use anyhow::Context;

use crate::files::{display_name, open_input, Output};
use crate::keys::{Identities, Unlock};

#[derive(clap::Args)]
pub struct Args {
    /// The archive (`-`: stdin)
    input: PathBuf,
    /// The member, as `zseal ls` lists it (the leading `./` may be left out)
    member: String,
    /// Write here instead of stdout (replaced only with --force)
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output file
    #[arg(short, long)]
    force: bool,
    /// Read the passphrase from the first line of FILE (`-`: standard input)
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    ids: Identities,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let input = open_input(Some(&a.input))?;
    let what = display_name(Some(&a.input), "standard input");
    let keys = Unlock::plain(&what, a.passphrase_file.as_deref(), &a.ids, a.threads);
    let mut dec = keys.open(input)?;
    let mut out = Output::create_plaintext(a.output.as_deref(), a.force, Some(&a.input))?;
    zseal::archive::copy_member(&mut dec, &a.member, &mut out)
        .with_context(|| format!("reading {} from {what}", a.member))?;
    out.commit(true)?;
    Ok(())
}
