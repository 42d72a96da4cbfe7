//! What may reach a terminal: decrypted plaintext that looks like text is printed (as `age -d`,
//! `gzip -dc` and `zstd -dc` print it), binary is refused before a byte of it is written. The
//! decision is taken on the first bytes the decryptor writes, which are authenticated (it writes
//! nothing else), as git, grep and less decide: a NUL byte or invalid UTF-8 in the first
//! [`PEEK`] bytes means binary. What follows is not looked at.

use std::io::{self, Write};
use std::path::Path;

/// How much of the plaintext's start decides (git looks at 8000 bytes).
pub const PEEK: usize = 8 << 10;

/// True when `head`, the start of some data, looks binary: it holds a NUL byte or is not UTF-8.
/// A character cut at the end of `head` is not held against it.
pub fn looks_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        // `error_len() == None`: only an incomplete character at the end.
        Err(e) => e.error_len().is_some(),
    }
}

/// The name `zseal decrypt` suggests for `-o` when the plaintext of `input` is binary: the
/// input's name without `.zseal` or `.age` (`x.tar.zseal` → `x.tar`), as `zstd -d` names its
/// output; for a URL, its last segment, a local file. `None` for standard input or another name.
pub fn suggested_output(input: Option<&Path>) -> Option<String> {
    let p = input.filter(|p| *p != Path::new("-"))?.to_str()?;
    let p = match crate::files::url_of(Path::new(p)) {
        Some(url) => url.rsplit('/').next()?,
        None => p,
    };
    let stem = p
        .strip_suffix(".zseal")
        .or_else(|| p.strip_suffix(".age"))?;
    Path::new(stem).file_name()?;
    (!stem.ends_with('/')).then(|| stem.to_string())
}

/// The refusal, with the `-o` to use.
fn refusal(suggest: Option<&str>) -> String {
    let o = suggest.map_or("-o FILE".to_string(), |s| format!("-o {s}"));
    format!(
        "refusing to write binary data to the terminal (the plaintext holds NUL bytes or is not \
         UTF-8 text): use {o}, or redirect the output (> FILE, | program)"
    )
}

/// Holds back the first [`PEEK`] bytes written to a terminal, then writes them and everything
/// after when they look like text, or fails, having written nothing, when they look binary.
pub struct TextGate<W: Write> {
    inner: W,
    held: Vec<u8>,
    state: State,
    suggest: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Deciding,
    Text,
    Refused,
}

impl<W: Write> TextGate<W> {
    /// A gate in front of `inner`; `suggest` is the `-o` the refusal names.
    pub fn new(inner: W, suggest: Option<String>) -> Self {
        TextGate {
            inner,
            held: Vec::new(),
            state: State::Deciding,
            suggest,
        }
    }

    /// Decides on what is held: writes it when it looks like text, else refuses.
    fn decide(&mut self) -> io::Result<()> {
        if self.state == State::Deciding {
            if looks_binary(&self.held) {
                self.state = State::Refused;
                self.held.clear();
            } else {
                self.state = State::Text;
                let held = std::mem::take(&mut self.held);
                self.inner.write_all(&held)?;
            }
        }
        match self.state {
            State::Refused => Err(io::Error::other(refusal(self.suggest.as_deref()))),
            _ => Ok(()),
        }
    }

    /// The writer behind the gate, after what was held is decided on (the data ended within
    /// the first [`PEEK`] bytes) and flushed.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.inner)
    }

    /// The writer behind the gate (what the tests look at).
    #[cfg(test)]
    pub fn get_ref(&self) -> &W {
        &self.inner
    }
}

impl<W: Write> Write for TextGate<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.state != State::Deciding {
            self.decide()?;
            return self.inner.write(buf);
        }
        let n = buf.len().min(PEEK - self.held.len());
        self.held.extend_from_slice(&buf[..n]);
        if self.held.len() == PEEK {
            self.decide()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.decide()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_binary() {
        assert!(!looks_binary(b""));
        assert!(!looks_binary("plain text, ünïcödé ✓\n".as_bytes()));
        assert!(looks_binary(b"a\0b"));
        assert!(looks_binary(b"\xff\xfe latin-1 or UTF-16"));
        // A character cut by the end of the window is no sign of binary.
        assert!(!looks_binary(&"✓".as_bytes()[..2]));
    }

    #[test]
    fn the_gate_writes_text_and_refuses_binary_before_writing() {
        let text = "line\n".repeat(5000);
        let mut g = TextGate::new(Vec::new(), None);
        g.write_all(text.as_bytes()).unwrap();
        assert_eq!(g.into_inner().unwrap(), text.as_bytes());
        // Short text is held until the end.
        let mut g = TextGate::new(Vec::new(), None);
        g.write_all(b"hi\n").unwrap();
        assert!(g.get_ref().is_empty());
        assert_eq!(g.into_inner().unwrap(), b"hi\n");
        // Binary within the first PEEK bytes: nothing written, and the refusal names -o.
        let mut data = vec![b'a'; PEEK + 100];
        data[PEEK - 1] = 0;
        let mut g = TextGate::new(Vec::new(), Some("x.tar".into()));
        let e = g.write_all(&data).unwrap_err();
        assert!(e.to_string().contains("use -o x.tar"), "{e}");
        assert!(g.get_ref().is_empty());
        assert!(g.write(b"more").is_err(), "refused for good");
        let mut g = TextGate::new(Vec::new(), None);
        g.write_all(b"\0").unwrap();
        assert!(
            g.into_inner().is_err(),
            "short binary is refused at the end"
        );
    }

    #[test]
    fn suggestions() {
        let s = |p: &str| suggested_output(Some(Path::new(p)));
        assert_eq!(s("x.tar.zseal").as_deref(), Some("x.tar"));
        assert_eq!(s("dir/notes.txt.age").as_deref(), Some("dir/notes.txt"));
        assert_eq!(s("s3://bucket/a/b.csv.zseal").as_deref(), Some("b.csv"));
        assert_eq!(s("data.bin"), None);
        assert_eq!(s(".zseal"), None);
        assert_eq!(s("dir/.zseal"), None);
        assert_eq!(s("-"), None);
        assert_eq!(suggested_output(None), None);
    }
}
