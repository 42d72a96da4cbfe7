//! The habits people bring from age, gpg, gzip and zstd (issue 59 §3): arguments zseal has
//! under another name are answered, before clap sees them, with what zseal calls them, instead
//! of clap's "unexpected argument" or a value misread (`-c FILE` taken as a compression).

use std::ffi::OsString;

use clap::CommandFactory;

/// The arguments with a leading `-d`/`--decrypt` or `-e`/`--encrypt` (age's, gpg's and zstd's
/// habit) turned into the subcommand; anything else as it is. Only the first argument is looked
/// at, so a `-d` among a subcommand's arguments keeps its meaning there.
pub fn with_aliases(mut args: Vec<OsString>) -> Vec<OsString> {
    let alias = match args.get(1).and_then(|a| a.to_str()) {
        Some("-d" | "--decrypt") => Some("decrypt"),
        Some("-e" | "--encrypt") => Some("encrypt"),
        _ => None,
    };
    if let Some(a) = alias {
        args[1] = a.into();
    }
    args
}

/// What zseal calls the habit among `args` (after [`with_aliases`]), for `encrypt` and
/// `decrypt`; `None` when there is none (clap then parses as usual).
pub fn misplaced(args: &[OsString]) -> Option<String> {
    let sub = args.get(1)?.to_str()?;
    if !matches!(sub, "encrypt" | "decrypt") {
        return None;
    }
    let command = crate::Cli::command();
    let command = command.find_subcommand(sub)?;
    let mut prev: Option<&str> = None;
    for arg in args.iter().skip(2) {
        let Some(a) = arg.to_str() else {
            prev = None;
            continue;
        };
        if a == "--" {
            return None;
        }
        // A value of the option before it: its own business (`--range -1M`), except `-c`.
        if let Some(p) = prev.filter(|p| takes_value(command, p)) {
            if matches!(p, "-c" | "--compress") && sub == "encrypt" {
                if let Some(m) = compress_habit(a) {
                    return Some(m);
                }
            }
            prev = None;
            continue;
        }
        if let Some(m) = habit(a, sub) {
            return Some(m);
        }
        prev = Some(a);
    }
    None
}

/// The message for one argument that is another tool's habit.
fn habit(a: &str, sub: &str) -> Option<String> {
    let passphrase = "a passphrase is zseal's default: with no -r/-R, zseal asks for one (twice \
                      when it encrypts); --passphrase-file FILE reads it from a file";
    let msg = match a {
        "-p" | "--passphrase" => format!("-p (age's passphrase flag): {passphrase}"),
        "--symmetric" => format!("--symmetric (gpg's): {passphrase}"),
        "-k" | "--keep" => {
            "-k/--keep (gzip's and zstd's): zseal never removes its input, so there is \
             nothing to keep; drop it"
                .to_string()
        }
        "--rm" => "--rm (zstd's): zseal never removes its input; remove it yourself once the \
                   output is checked (zseal verify)"
            .to_string(),
        _ if a.starts_with("-T") && a[2..].chars().all(|c| c.is_ascii_digit()) => {
            format!(
                "{a} (zstd's threads): zseal's is -j N (-j 0, the default: one thread per core)"
            )
        }
        _ if a.len() > 1
            && a.starts_with('-')
            && a[1..].chars().all(|c| c.is_ascii_digit())
            && sub == "encrypt" =>
        {
            format!("{a} (zstd's level): zseal's is -c zstd:{}", &a[1..])
        }
        _ => return None,
    };
    Some(msg)
}

/// `-c VALUE` that is no compression but a file that exists: gpg's `-c FILE` (a passphrase).
fn compress_habit(value: &str) -> Option<String> {
    if value.parse::<zseal::Codec>().is_ok() || !std::path::Path::new(value).exists() {
        return None;
    }
    Some(format!(
        "-c {value}: zseal's -c is the compression (-c zstd:19, lz4, gzip, none), and {value} is a \
         file. gpg's -c (a passphrase) is zseal's default: give no -r/-R, as in `zseal encrypt \
         {value}`"
    ))
}

/// True when the option `flag` (`-x` or `--long`, without `=VALUE`) of `command` takes a value.
fn takes_value(command: &clap::Command, flag: &str) -> bool {
    if flag.contains('=') {
        return false;
    }
    command.get_arguments().any(|arg| {
        let named = match flag.strip_prefix("--") {
            Some(long) => arg.get_long() == Some(long),
            None => flag.len() == 2 && arg.get_short() == flag.chars().nth(1),
        };
        named && arg.get_action().takes_values()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(args: &[&str]) -> Option<String> {
        let args: Vec<OsString> = std::iter::once("zseal")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        misplaced(&with_aliases(args))
    }

    #[test]
    fn habits_are_named_and_values_left_alone() {
        let m = |args: &[&str], want: &str| {
            let got = said(args).unwrap_or_default();
            assert!(got.contains(want), "{args:?}: {got}");
        };
        m(&["encrypt", "-p", "f"], "a passphrase is zseal's default");
        m(&["-e", "--symmetric", "f"], "--symmetric (gpg's)");
        m(&["encrypt", "-k", "f"], "never removes its input");
        m(&["-d", "--rm", "f"], "never removes its input");
        m(&["encrypt", "-T0", "f"], "zseal's is -j N");
        m(&["encrypt", "-19", "f"], "-c zstd:19");
        m(
            &["encrypt", "-c", "Cargo.toml"],
            "zseal's -c is the compression",
        );
        // Values of options, and what zseal has itself, are not habits.
        assert_eq!(said(&["encrypt", "-c", "zstd:19", "f"]), None);
        assert_eq!(said(&["decrypt", "--range", "-10", "f"]), None);
        assert_eq!(said(&["encrypt", "-j", "0", "f"]), None);
        assert_eq!(said(&["encrypt", "--", "-p"]), None);
        assert_eq!(said(&["verify", "-p"]), None);
    }
}
