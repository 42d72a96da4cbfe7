//! `zseal ls`: the members of an archive, a container whose plaintext is a tar (FORMAT.md §15),
//! one a line as `tar t` prints them in a UTF-8 locale, or `--json`. Until archives carry their
//! index in their end frames (§15.1), it reads the whole tar through the decryption, as `tar t`
//! reads an unencrypted one, and prints only once the container's end has authenticated.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::files::{display_name, open_input};
use crate::keys::{Identities, Unlock};

#[derive(clap::Args)]
pub struct Args {
    /// Archive to list; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// One JSON object a member (path, type, size, mode, mtime, link, owner, group), in an array
    #[arg(long, conflicts_with = "long")]
    json: bool,
    /// As `tar tv` prints them: mode, owner/group, size, date (local time), name, link
    #[arg(short, long)]
    long: bool,
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
    let input = open_input(a.input.as_deref())?;
    let what = display_name(a.input.as_deref(), "standard input");
    let keys = Unlock::plain(&what, a.passphrase_file.as_deref(), &a.ids, a.threads);
    let mut dec = keys.open(input)?;
    let index = zseal::archive::index_tar(&mut dec).with_context(|| format!("listing {what}"))?;
    // The rest (the tar's padding to its record size) is read too: nothing is printed before
    // the whole container authenticated, so a damaged one never shows a list.
    std::io::copy(&mut dec, &mut std::io::sink()).with_context(|| format!("listing {what}"))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.json {
        true => {
            let members: Vec<serde_json::Value> = index.members.iter().map(json_of).collect();
            serde_json::to_writer_pretty(&mut out, &members)?;
            writeln!(out)?;
        }
        false => {
            let mut long = Long { width: 19 };
            for m in &index.members {
                match a.long {
                    true => writeln!(out, "{}", long.line(m))?,
                    false => writeln!(out, "{}", tar_quoted(&m.path))?,
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Lines as `tar tv` prints them (GNU tar's `simple_print_header`): the owner/group and size
/// column right-aligned to a width that starts at 19 and only grows, as tar's does.
struct Long {
    width: usize,
}

impl Long {
    fn line(&mut self, m: &zseal::archive::Member) -> String {
        use zseal::archive::MemberType as T;
        let name = |n: &[u8], id: u32| match n.is_empty() {
            true => id.to_string(),
            false => String::from_utf8_lossy(n).into_owned(),
        };
        let (user, group) = (name(&m.uname, m.uid), name(&m.gname, m.gid));
        let size = m.size.to_string();
        let pad = user.len() + 1 + group.len() + 1 + size.len();
        self.width = self.width.max(pad);
        let date = chrono::DateTime::from_timestamp(m.mtime.0, 0)
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            })
            .unwrap_or_else(|| m.mtime.0.to_string());
        let mut line = format!(
            "{} {user}/{group} {size:>w$} {date:<16} {}",
            mode_string(m),
            tar_quoted(&m.path),
            w = self.width - pad + size.len(),
        );
        match m.kind {
            T::Symlink => line.push_str(&format!(" -> {}", tar_quoted(&m.link))),
            T::HardLink => line.push_str(&format!(" link to {}", tar_quoted(&m.link))),
            _ => {}
        }
        line
    }
}

/// The ten characters of `ls -l`'s mode column, as tar prints them (`h` for a hard link).
fn mode_string(m: &zseal::archive::Member) -> String {
    use zseal::archive::MemberType as T;
    let kind = match m.kind {
        T::File | T::Other => '-',
        T::HardLink => 'h',
        T::Symlink => 'l',
        T::CharDevice => 'c',
        T::BlockDevice => 'b',
        T::Directory => 'd',
        T::Fifo => 'p',
    };
    let bit = |mask: u32, c: char| if m.mode & mask != 0 { c } else { '-' };
    let exec = |x: u32, special: u32, on: char, off: char| match (
        m.mode & x != 0,
        m.mode & special != 0,
    ) {
        (true, true) => on,
        (false, true) => off,
        (true, false) => 'x',
        (false, false) => '-',
    };
    [
        kind,
        bit(0o400, 'r'),
        bit(0o200, 'w'),
        exec(0o100, 0o4000, 's', 'S'),
        bit(0o040, 'r'),
        bit(0o020, 'w'),
        exec(0o010, 0o2000, 's', 'S'),
        bit(0o004, 'r'),
        bit(0o002, 'w'),
        exec(0o001, 0o1000, 't', 'T'),
    ]
    .iter()
    .collect()
}

/// A member as `--json` prints it.
fn json_of(m: &zseal::archive::Member) -> serde_json::Value {
    let kind = m.kind.name();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut v = serde_json::json!({
        "path": text(&m.path),
        "type": kind,
        "size": m.size,
        "mode": format!("{:04o}", m.mode & 0o7777),
        "mtime": m.mtime.0,
        "mtime_nsec": m.mtime.1,
        "uid": m.uid,
        "gid": m.gid,
        "owner": text(&m.uname),
        "group": text(&m.gname),
    });
    if !m.link.is_empty() {
        v["link"] = serde_json::Value::String(text(&m.link));
    }
    v
}

/// A name as GNU tar's default quoting (`escape`) prints it in a UTF-8 locale: printable
/// characters as they are, a backslash doubled, C's escapes for the usual controls, and octal
/// (`\ooo`) for every other control or byte that is not UTF-8.
pub fn tar_quoted(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\x0c' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\x0b' => out.push_str("\\v"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tar_quoted;

    #[test]
    fn names_are_quoted_as_gnu_tar_quotes_them() {
        assert_eq!(tar_quoted(b"./a b/c.txt"), "./a b/c.txt");
        assert_eq!(tar_quoted("caf\u{e9}".as_bytes()), "caf\u{e9}");
        assert_eq!(tar_quoted(b"a\\b\tc\nd"), "a\\\\b\\tc\\nd");
        assert_eq!(tar_quoted(b"x\x01y\x7f"), "x\\001y\\177");
        assert_eq!(tar_quoted(b"bad\xffutf8"), "bad\\377utf8");
    }
}
