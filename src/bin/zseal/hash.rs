//! `zseal hash`: BLAKE3 or XXH3 of files in parallel, one line each exactly as `b3sum` and
//! `xxhsum -H3` print them, and `--check` of such lines.
//!
//! Names with a backslash or a newline (for XXH3 also a carriage return) are escaped as both
//! tools do: the line starts with `\`, and in the name `\` becomes `\\`, a newline `\n`, a
//! carriage return `\r`. A check line that starts with `\` is unescaped the same way; any other
//! backslash sequence makes the line invalid, so a check fails rather than names the wrong file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rayon::prelude::*;
use zseal::HashAlg;

use crate::encrypt::parse_with;

#[derive(clap::Args)]
pub struct Args {
    /// Files to hash (none or `-`: stdin); with --check, files of check lines
    files: Vec<PathBuf>,
    /// blake3 (lines like b3sum) or xxh3 (lines like xxhsum -H3)
    #[arg(long, default_value = "blake3", value_parser = parse_with::<HashAlg>)]
    algo: HashAlg,
    /// Read check lines (from b3sum, xxhsum -H3 or zseal hash) and verify the files they name
    #[arg(short, long)]
    check: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let files = if a.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        a.files.clone()
    };
    if a.check {
        return check_sums(&files);
    }
    if a.algo == HashAlg::None {
        bail!("--algo none has nothing to print: use blake3 or xxh3");
    }
    // Files in parallel, lines in the order given.
    let results: Vec<_> = files.par_iter().map(|f| hash_path(a.algo, f)).collect();
    let mut failed = false;
    for (f, r) in files.iter().zip(results) {
        let name = if f == Path::new("-") && a.algo == HashAlg::Xxh3 {
            "stdin".into()
        } else {
            f.to_string_lossy().into_owned()
        };
        match r {
            Ok(hex) => println!("{}", check_line(a.algo, &hex, &name)),
            Err(e) => {
                eprintln!("zseal: error: {}: {e}", f.display());
                failed = true;
            }
        }
    }
    if failed {
        bail!("some files could not be hashed");
    }
    Ok(())
}

/// Hashes a file, stdin for `-`, or an object named by URL (read straight through by ranged
/// GETs, several in flight).
fn hash_path(alg: HashAlg, path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        crate::stdin::claim("the file -").map_err(std::io::Error::other)?;
        zseal::hash::hash_reader(alg, std::io::stdin().lock())
    } else if crate::files::url_of(path).is_some() {
        let input = crate::files::open_input(Some(path)).map_err(std::io::Error::other)?;
        zseal::hash::hash_reader(alg, input)
    } else {
        zseal::hash::hash_file(alg, path)
    }
}

fn check_sums(lists: &[PathBuf]) -> anyhow::Result<()> {
    let mut entries = Vec::new();
    for l in lists {
        let text = if l == Path::new("-") {
            crate::stdin::claim("the list -")?;
            std::io::read_to_string(std::io::stdin().lock())?
        } else {
            std::fs::read_to_string(l).with_context(|| format!("cannot read {}", l.display()))?
        };
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e = parse_check_line(line).with_context(|| {
                format!("{}:{}: not a b3sum or xxhsum -H3 line", l.display(), n + 1)
            })?;
            entries.push(e);
        }
    }
    let results: Vec<_> = entries
        .par_iter()
        .map(|(alg, _, name)| hash_path(*alg, Path::new(name)))
        .collect();
    let mut bad = 0;
    for ((alg, want, name), got) in entries.iter().zip(results) {
        let shown = escaped_name(*alg, name);
        match got {
            Ok(hex) if hex == *want => println!("{shown}: OK"),
            Ok(_) => {
                println!("{shown}: FAILED");
                bad += 1;
            }
            Err(e) => {
                println!("{shown}: FAILED to read ({e})");
                bad += 1;
            }
        }
    }
    if bad > 0 {
        bail!(
            "{bad} of {} computed checksums did NOT match",
            entries.len()
        );
    }
    Ok(())
}

/// The characters the standard tool escapes in names.
fn special(alg: HashAlg) -> &'static [char] {
    match alg {
        HashAlg::Xxh3 => &['\\', '\n', '\r'],
        _ => &['\\', '\n'],
    }
}

/// The name as the standard tool shows it: escaped, behind a `\`, when it holds a special
/// character; as it is otherwise.
fn escaped_name(alg: HashAlg, name: &str) -> String {
    if !name.contains(special(alg)) {
        return name.to_string();
    }
    let mut out = String::from("\\");
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' if alg == HashAlg::Xxh3 => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// One line as the standard tool prints it: `HEX  NAME` (b3sum) or `XXH3 (NAME) = HEX`
/// (xxhsum -H3), escaped as the module documentation says.
pub fn check_line(alg: HashAlg, hex: &str, name: &str) -> String {
    let shown = escaped_name(alg, name);
    let (prefix, name) = match shown.strip_prefix('\\') {
        Some(rest) => ("\\", rest),
        None => ("", shown.as_str()),
    };
    match alg {
        HashAlg::Xxh3 => format!("{prefix}XXH3 ({name}) = {hex}"),
        _ => format!("{prefix}{hex}  {name}"),
    }
}

/// Undoes [`escaped_name`]'s escapes; `None` for any other backslash sequence.
fn unescape(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '\\' => out.push('\\'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            _ => return None,
        }
    }
    Some(out)
}

/// Parses a line written by `b3sum`, `xxhsum -H3` (either style) or [`check_line`]: the
/// algorithm, the expected hex digest and the file name.
pub fn parse_check_line(line: &str) -> Option<(HashAlg, String, String)> {
    let (escaped, line) = match line.strip_prefix('\\') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (alg, hex, name) = if let Some(rest) = line.strip_prefix("XXH3 (") {
        let (name, hex) = rest.rsplit_once(") = ")?;
        (HashAlg::Xxh3, hex, name)
    } else {
        let (hex, name) = line.split_once("  ")?;
        let alg = match hex.len() {
            64 => HashAlg::Blake3,
            16 => HashAlg::Xxh3,
            _ => return None,
        };
        (alg, hex, name)
    };
    if hex.len() != alg.len() * 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let name = if escaped {
        unescape(name)?
    } else {
        name.to_string()
    };
    Some((alg, hex.to_ascii_lowercase(), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_b3sum_and_xxhsum_write() {
        let b3 = format!("{}  dir/a file.txt", "ab".repeat(32));
        assert_eq!(
            parse_check_line(&b3),
            Some((HashAlg::Blake3, "ab".repeat(32), "dir/a file.txt".into()))
        );
        let x = "XXH3 (a) b) = 6AFF47E1F4B465AF";
        assert_eq!(
            parse_check_line(x),
            Some((HashAlg::Xxh3, "6aff47e1f4b465af".into(), "a) b".into()))
        );
        assert_eq!(
            parse_check_line("6aff47e1f4b465af  f"),
            Some((HashAlg::Xxh3, "6aff47e1f4b465af".into(), "f".into()))
        );
        for bad in [
            "",
            "abc  f",
            "XXH3 (f) = 12",
            &format!("{}  f", "zz".repeat(32)),
            &format!("\\{}  a\\qb", "ab".repeat(32)),
            &format!("\\{}  trailing\\", "ab".repeat(32)),
        ] {
            assert_eq!(parse_check_line(bad), None, "{bad}");
        }
        assert_eq!(check_line(HashAlg::Xxh3, "00", "n"), "XXH3 (n) = 00");
        assert_eq!(check_line(HashAlg::Blake3, "00", "n"), "00  n");
    }

    #[test]
    fn names_with_backslash_newline_and_cr_are_escaped_as_the_tools_do() {
        let hex = "ab".repeat(32);
        assert_eq!(
            check_line(HashAlg::Blake3, &hex, "we\\ird"),
            format!("\\{hex}  we\\\\ird")
        );
        assert_eq!(
            check_line(HashAlg::Blake3, &hex, "new\nline"),
            format!("\\{hex}  new\\nline")
        );
        // b3sum leaves a carriage return alone; xxhsum escapes it.
        assert_eq!(
            check_line(HashAlg::Blake3, &hex, "c\rr"),
            format!("{hex}  c\rr")
        );
        assert_eq!(
            check_line(HashAlg::Xxh3, "0011223344556677", "c\rr\\"),
            "\\XXH3 (c\\rr\\\\) = 0011223344556677"
        );
        for (alg, hex) in [
            (HashAlg::Blake3, hex.as_str()),
            (HashAlg::Xxh3, "0011223344556677"),
        ] {
            for name in ["we\\ird", "new\nline", "a\\nb", "\\", "plain", "x\r\\n\n"] {
                let line = check_line(alg, hex, name);
                let back = parse_check_line(&line).unwrap();
                assert_eq!((back.0, back.2.as_str()), (alg, name), "{line:?}");
            }
        }
    }
}
