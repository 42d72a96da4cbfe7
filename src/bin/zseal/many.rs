//! Several inputs in one command, as `zstd *.csv` and `gzip *.csv` take them: `zseal encrypt
//! a.csv b.csv` seals each to its own `a.csv.zseal`, `b.csv.zseal`, and `zseal decrypt
//! a.csv.zseal b.csv.zseal` writes `a.csv`, `b.csv`. Every output name is checked before anything
//! is written (none may exist without --force); then each file is done on its own, and a failure
//! leaves the others done and is named at the end (exit 1).

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::files::url_of;

/// The (input, output) pairs of a command with several `inputs`, each output named by
/// `output_of`, after the checks that must pass before any file is written: no `-o` (each
/// input has its own output), no `-` (standard input is one stream), and no output that exists
/// already unless `force`.
pub fn plan(
    inputs: &[PathBuf],
    output: Option<&Path>,
    force: bool,
    output_of: impl Fn(&Path) -> anyhow::Result<PathBuf>,
) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    if let Some(o) = output {
        bail!(
            "-o {} names one output, but {} inputs were given: drop -o (each input is written \
             beside it) or give one input",
            o.display(),
            inputs.len()
        );
    }
    if inputs.iter().any(|i| crate::stdin::is_dash(i)) {
        bail!("`-` (standard input) cannot be one of several inputs: give files, or one input");
    }
    // Every input is there before anything is written. A second of two that is missing is
    // most likely meant as the output (`cp`'s and gpg's `IN OUT`): said so.
    let missing: Vec<&PathBuf> = inputs.iter().filter(|i| !exists(i)).collect();
    match missing.as_slice() {
        [] => {}
        [last] if inputs.len() == 2 && *last == &inputs[1] => bail!(
            "{} does not exist: did you mean -o {}? (the arguments are inputs, each written \
             beside itself; nothing was written)",
            last.display(),
            last.display()
        ),
        _ => bail!(
            "{} do{} not exist (nothing was written)",
            missing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if missing.len() == 1 { "es" } else { "" }
        ),
    }
    let mut pairs = Vec::new();
    for i in inputs {
        pairs.push((i.clone(), output_of(i)?));
    }
    let existing: Vec<String> = pairs
        .iter()
        .filter(|(_, o)| url_of(o).is_none() && std::fs::symlink_metadata(o).is_ok())
        .map(|(_, o)| o.display().to_string())
        .collect();
    if !existing.is_empty() && !force {
        bail!(
            "{} already exist{}: use --force to overwrite, or move {} away (nothing was written)",
            existing.join(", "),
            if existing.len() == 1 { "s" } else { "" },
            if existing.len() == 1 { "it" } else { "them" },
        );
    }
    Ok(pairs)
}

/// True when the input `p` can be read: a local path that exists, or an object the store has
/// (one HEAD).
fn exists(p: &Path) -> bool {
    match url_of(p) {
        None => std::fs::metadata(p).is_ok(),
        #[cfg(feature = "remote")]
        Some(url) => zseal::remote::Remote::from_env(url)
            .and_then(|r| r.size())
            .map_or(true, |size| size.is_some()),
        #[cfg(not(feature = "remote"))]
        Some(_) => true,
    }
}

/// Runs `one` on every pair in turn; a failure is printed, naming its input, and the rest go on.
/// Fails at the end when any failed, naming them.
pub fn run_each(
    pairs: &[(PathBuf, PathBuf)],
    mut one: impl FnMut(&Path, &Path) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for (input, output) in pairs {
        if let Err(e) = one(input, output) {
            if crate::common::is_broken_pipe(&e) {
                return Err(e);
            }
            eprintln!("zseal: error: {}: {e:#}", input.display());
            failed.push(input.display().to_string());
        }
    }
    if !failed.is_empty() {
        let rest = match failed.len() == pairs.len() {
            true => "none was written",
            false => "the others were written",
        };
        bail!(
            "{} of {} inputs failed ({}); {rest}",
            failed.len(),
            pairs.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// The plaintext's name for an encrypted file: without its `.zseal`, `.age` or `.c4gh`.
pub fn decrypted_name(input: &Path) -> anyhow::Result<PathBuf> {
    let s = input.to_string_lossy();
    for suffix in [".zseal", ".age", ".c4gh"] {
        if let Some(stem) = s.strip_suffix(suffix).filter(|stem| !stem.ends_with('/')) {
            if !stem.is_empty() {
                return Ok(PathBuf::from(stem));
            }
        }
    }
    bail!(
        "{}: its name does not end in .zseal, .age or .c4gh, so the output's name is unknown: rename \
         it, or decrypt it alone with -o",
        input.display()
    )
}

/// The encrypted file's name for an input: `.zseal` (or, with `--format age`, `.age`) added.
pub fn encrypted_name(input: &Path, suffix: &str) -> PathBuf {
    let mut s = input.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names() {
        let d = |s: &str| decrypted_name(Path::new(s)).map(|p| p.display().to_string());
        assert_eq!(d("a.csv.zseal").unwrap(), "a.csv");
        assert_eq!(d("dir/b.age").unwrap(), "dir/b");
        assert_eq!(d("reads.bam.c4gh").unwrap(), "reads.bam");
        for bad in ["a.csv", ".zseal", "dir/.age", "a.zseal.bak"] {
            assert!(d(bad).is_err(), "{bad}");
        }
        assert_eq!(
            encrypted_name(Path::new("x/a.csv"), ".zseal"),
            Path::new("x/a.csv.zseal")
        );
    }
}
