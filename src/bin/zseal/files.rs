//! The command line's two ends: where data comes from and where it goes, with the rules every
//! output follows (no file overwritten without --force, no half-written file, no binary on a
//! terminal: only decrypted plaintext that looks like text, [`crate::tty`]; no data read from
//! a terminal), the registry of temporary outputs and uploads that an interrupt removes or
//! aborts, and the signal handling that does it.
//!
//! Errors name the user's path and state the operating system's reason once; the hidden
//! temporary file beside an output is never named.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, bail};
use zseal::io::{without_path, Destination, ReadMode, What};
use zseal::transfer::{Sink, Source};

use crate::tty::TextGate;

/// How a path is named in messages: `-` and no path are standard input or output.
pub fn display_name(p: Option<&Path>, stdio: &str) -> String {
    match p {
        Some(p) if p != Path::new("-") => p.display().to_string(),
        _ => stdio.into(),
    }
}

/// The URL `p` names, when it names one (`s3://…`, `gs://…`, `az://…`, `http(s)://…`).
pub fn url_of(p: &Path) -> Option<&str> {
    p.to_str().filter(|s| zseal::io::is_url(s))
}

/// Opens the object at `url` for reading.
#[cfg(feature = "remote")]
fn open_remote(url: &str, mode: ReadMode) -> anyhow::Result<Source> {
    let remote = zseal::remote::Remote::from_env(url)?;
    let reader = remote.reader(mode)?;
    let _ = FETCHED.set(reader.stats());
    Ok(Source::object(reader))
}

/// What the command's input object has fetched (one input per command).
#[cfg(feature = "remote")]
static FETCHED: std::sync::OnceLock<std::sync::Arc<zseal::remote::FetchStats>> =
    std::sync::OnceLock::new();

/// Body bytes fetched and GET requests sent for the input object, when the input is one.
pub fn fetched() -> Option<(u64, u64)> {
    #[cfg(feature = "remote")]
    return FETCHED.get().map(|f| (f.bytes(), f.requests()));
    #[cfg(not(feature = "remote"))]
    None
}

#[cfg(not(feature = "remote"))]
fn open_remote(url: &str, _: ReadMode) -> anyhow::Result<Source> {
    bail!("{url}: this zseal was built without object storage (cargo feature `remote`)")
}

/// Opens `path` (`None` or `-` for stdin) to be read straight through.
pub fn open_input(path: Option<&Path>) -> anyhow::Result<Source> {
    open_input_for(path, ReadMode::Sequential)
}

/// Opens `path` as the engine's source: `None` or `-` for stdin, a URL for an object read by
/// `mode`, else a file.
pub fn open_input_for(path: Option<&Path>, mode: ReadMode) -> anyhow::Result<Source> {
    if let Some(url) = path.and_then(url_of) {
        return open_remote(url, mode);
    }
    match path.filter(|p| *p != Path::new("-")) {
        None => {
            // What is typed would be read as the data, under a spinner, until Ctrl-D.
            if io::stdin().is_terminal() {
                bail!("stdin is a terminal: give a file, or pipe the data in");
            }
            crate::stdin::claim("the data (no input file, or -)")?;
            let stdin = Source::stdin();
            if stdin.is_stdin_stream() {
                widen_pipe();
            }
            Ok(stdin)
        }
        Some(p) => Ok(Source::open(p)?),
    }
}

/// Asks for a 1 MiB pipe buffer when standard input is a pipe (Linux; 64 KiB by default), so a
/// producer such as `tar c` or `cat` hands over chunks in 16 times fewer wake-ups. Best effort:
/// an unprivileged process may be refused above /proc/sys/fs/pipe-max-size, and nothing depends
/// on it.
fn widen_pipe() {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsFd;
        let stdin = io::stdin();
        let fd = stdin.as_fd();
        if let Ok(f) = fd.try_clone_to_owned().map(File::from) {
            if f.metadata().is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_fifo()
            }) {
                let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
            }
        }
    }
}

/// Temporary outputs not yet committed, so that an interrupt can remove them: a signal handler
/// cannot run destructors.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every temporary output that is still being written, and ends the uploads in
/// progress (a resumable one is kept, saying how to go on). For signal handlers, which then
/// exit: the process must not go on writing to them.
pub fn remove_partial_outputs() {
    let paths = std::mem::take(&mut *PARTIAL.lock().unwrap_or_else(|p| p.into_inner()));
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
    #[cfg(feature = "remote")]
    for url in zseal::remote::abort_all_uploads() {
        eprintln!(
            "zseal: upload kept: run the same command with --resume to send the rest, or end \
             it with `zseal resume --abort {url}`"
        );
    }
}

/// Ctrl-C (SIGINT), `kill` (SIGTERM) and a closed terminal (SIGHUP) all end the process the same
/// way: no half-written output survives, and the exit code is the shell's 128 + signal number.
/// The handler runs on a thread of its own (signal-hook's iterator), where removing files is safe.
#[cfg(unix)]
pub fn on_termination_signals(handler: impl Fn(i32) + Send + 'static) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                handler(signal);
            }
        });
    }
}

#[cfg(not(unix))]
pub fn on_termination_signals(handler: impl Fn(i32) + Send + 'static) {
    let _ = ctrlc::set_handler(move || handler(2));
}

/// Registers a temporary output for [`remove_partial_outputs`] while it lives.
pub struct PartialGuard(PathBuf);

impl PartialGuard {
    fn new(path: &Path) -> Self {
        PARTIAL
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_path_buf());
        PartialGuard(path.to_path_buf())
    }
}

impl Drop for PartialGuard {
    fn drop(&mut self) {
        PARTIAL
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|q| *q != self.0);
    }
}

/// Where data goes: the library's [`Sink`] (standard output, a file, FIFO, device or
/// descriptor by [`zseal::io::output`]'s rules: a new or replaced file is written beside its
/// destination, private (0600) while written, and renamed over it only by [`Output::commit`],
/// removed when dropped without one; or an object, which appears only on commit), or that sink
/// behind the gate that keeps binary off a terminal.
pub enum Output {
    /// The library's sink, and the registration that removes its temporary file on a signal.
    Sink {
        sink: Sink,
        _guard: Option<PartialGuard>,
    },
    /// Standard output or a file that is a terminal, for plaintext: written only if it looks
    /// like text ([`crate::tty`]).
    Terminal(Box<TextGate<Output>>),
}

/// What a command writes, which decides whether a terminal may receive it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    /// Containers, signatures, dictionaries: never to a terminal.
    Binary,
    /// Keys (text, written to files only).
    Private,
    /// Decrypted plaintext: to a terminal when it looks like text.
    Plaintext,
}

/// Starts writing the object at `url`: refused before anything is uploaded when it exists and
/// `force` is not given.
fn create_remote(url: &str, force: bool, size_hint: Option<u64>) -> anyhow::Result<Output> {
    match Sink::create_object(url, force, size_hint) {
        Ok(sink) => Ok(Output::from(sink)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            bail!("{url} already exists: use --force to replace it, or choose another -o")
        }
        Err(e) => Err(e.into()),
    }
}

impl From<Sink> for Output {
    /// A sink whose temporary file, if it writes one, an interrupt removes.
    fn from(sink: Sink) -> Output {
        let guard = sink.temporary_path().map(PartialGuard::new);
        Output::Sink {
            sink,
            _guard: guard,
        }
    }
}

impl Output {
    /// True when what is written reaches a reader at once (standard output, a FIFO, a device
    /// other than /dev/null): nothing can be held back until a check at the end has passed.
    pub fn streams(&self) -> bool {
        match self {
            Output::Sink { sink, .. } => sink.streams(),
            Output::Terminal(_) => true,
        }
    }

    /// Prepares `path` (`None` or `-` for stdout) for writing, checking first that it would not
    /// overwrite anything without `force` (`/dev/null` and descriptors such as `/dev/stdout`
    /// need none), would not be the input itself, and would not put binary on a terminal.
    pub fn create(path: Option<&Path>, force: bool, input: Option<&Path>) -> anyhow::Result<Self> {
        Self::create_as(path, force, input, Content::Binary)
    }

    /// [`Output::create`] for the plaintext of `input`: a terminal receives it when its first
    /// bytes look like text, and is refused it, before a byte is written, when they look
    /// binary, the refusal suggesting `-o` with the input's name without `.zseal`/`.age`.
    pub fn create_plaintext(
        path: Option<&Path>,
        force: bool,
        input: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let out = Self::create_as(path, force, input, Content::Plaintext)?;
        let terminal = match &out {
            Output::Sink { sink, .. } if sink.is_stdout() => io::stdout().is_terminal(),
            Output::Sink { sink, .. } => sink.as_file().is_some_and(|f| f.is_terminal()),
            Output::Terminal(_) => false,
        };
        if !terminal {
            return Ok(out);
        }
        let suggest = crate::tty::suggested_output(input);
        Ok(Output::Terminal(Box::new(TextGate::new(out, suggest))))
    }

    /// [`Output::create`] for a key file: never over an existing file, and mode 0600.
    pub fn create_private(path: Option<&Path>) -> anyhow::Result<Self> {
        Self::create_as(path, false, None, Content::Private)
    }

    fn create_as(
        path: Option<&Path>,
        force: bool,
        input: Option<&Path>,
        content: Content,
    ) -> anyhow::Result<Self> {
        let private = content == Content::Private;
        let to_terminal = content == Content::Plaintext;
        let Some(dest) = path.filter(|p| *p != Path::new("-")) else {
            if io::stdout().is_terminal() && !to_terminal {
                bail!("refusing to write binary data to the terminal: use -o FILE or redirect the output (> FILE, | program)");
            }
            return Ok(Output::from(Sink::stdout()));
        };
        if let Some(url) = url_of(dest) {
            if private {
                bail!("{url}: keys are written to local files only");
            }
            if input.and_then(url_of) == Some(url) {
                bail!("{url} is both the input and the output: write to another object");
            }
            return create_remote(url, force, input_size(input));
        }
        let name = dest.display();
        let resolved = Destination::resolve(dest)
            .map_err(|e| anyhow!("cannot write {name}: {}", without_path(&e)))?;
        let replaces_file = matches!(resolved.what(), What::File { .. });
        if replaces_file
            && input.is_some_and(|i| i != Path::new("-") && same_file(i, resolved.real_path()))
        {
            bail!("{name} is both the input and the output: write to another file");
        }
        // The library refuses what is there unless overwriting was asked for; the message says
        // how to ask.
        let sink = Sink::create_file(&resolved, force, private).map_err(|e| {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return anyhow!("cannot write {name}: {}", without_path(&e));
            }
            if private {
                return anyhow!(
                    "{name} already exists: a key file is never overwritten, choose another -o"
                );
            }
            let what = match resolved.what() {
                What::File { .. } => String::new(),
                _ => format!(
                    " ({}, which would be written into, not replaced)",
                    resolved.describe()
                ),
            };
            anyhow!(
                "{name} already exists{what}: use --force to overwrite it, or choose another -o"
            )
        })?;
        if sink.as_file().is_some_and(|f| f.is_terminal()) && !to_terminal {
            bail!("refusing to write binary data to the terminal {name}: use -o FILE or redirect the output (> FILE, | program)");
        }
        Ok(Output::from(sink))
    }

    /// The same output with the library's sink changed by `f` (counting, armor); the gate
    /// that keeps binary off a terminal takes no change.
    fn map_sink(self, f: impl FnOnce(Sink) -> io::Result<Sink>) -> anyhow::Result<Output> {
        match self {
            Output::Sink { sink, _guard } => Ok(Output::Sink {
                sink: f(sink)?,
                _guard,
            }),
            Output::Terminal(_) => bail!("a terminal receives plaintext as it is"),
        }
    }

    /// Counts into `count` the bytes that reach the output (armored bytes behind armor).
    pub fn counting(
        self,
        count: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> anyhow::Result<Output> {
        self.map_sink(|s| Ok(s.counting(count)))
    }

    /// The output behind age's ASCII armor (`encrypt --format age -a`): written by the calling
    /// thread ([`Output::shared_handle`] is then `None`), ended by [`Output::finish`].
    pub fn armored(self) -> anyhow::Result<Output> {
        self.map_sink(Sink::armored)
    }

    /// Hashes (SHA-512) the bytes that reach the output, in order, for a signature over the
    /// file as stored (before [`Output::armored`]: the armored bytes).
    pub fn hashing(self) -> anyhow::Result<Output> {
        self.map_sink(|s| Ok(s.hashing()))
    }

    /// The SHA-512 [`Output::hashing`] took of what was written.
    pub fn sha512(&self) -> Option<[u8; 64]> {
        match self {
            Output::Sink { sink, .. } => sink.sha512(),
            Output::Terminal(_) => None,
        }
    }

    /// Writes the armor's end, if any, so that the output is whole (and its hash, when taken,
    /// is the whole file's) before the commit.
    pub fn finish(self) -> anyhow::Result<Output> {
        let name = self.name();
        self.map_sink(Sink::finish)
            .map_err(|e| anyhow!("cannot write {name}: {e}"))
    }

    /// The name messages use for the output.
    fn name(&self) -> String {
        match self {
            Output::Sink { sink, .. } => sink.name().to_string(),
            Output::Terminal(_) => "the terminal".into(),
        }
    }

    /// Flushes and, for a file, syncs it (when `sync`) and renames it into place; completes
    /// an upload.
    pub fn commit(self, sync: bool) -> anyhow::Result<()> {
        match self {
            Output::Sink { sink, _guard } => {
                let name = sink.name().to_string();
                let object = sink.is_object();
                sink.commit(sync).map_err(|e| match e.kind() {
                    io::ErrorKind::AlreadyExists if object => anyhow!(
                        "{name} appeared while it was being written: use --force to replace it, or choose another -o (the upload was aborted)"
                    ),
                    _ if object => e.into(),
                    _ => anyhow!("cannot write {name}: {}", without_path(&e)),
                })
            }
            Output::Terminal(gate) => gate.into_inner().map_err(|e| anyhow!("{e}"))?.commit(sync),
        }
    }

    /// Another handle to the open file being written, sharing its position, for writes by
    /// offset (`Encryptor::write_frames_to`, which uses it only for a regular file): the file
    /// of `-o`, or what standard output is. `None` for an object.
    pub fn shared_handle(&self) -> Option<File> {
        match self {
            Output::Sink { sink, .. } => sink.shared_handle(),
            Output::Terminal(_) => None,
        }
    }

    /// The file being written, when the output is one (so that a copy into it can stay inside
    /// the kernel: `std::io::copy` uses `copy_file_range` from file to file).
    pub fn as_file(&self) -> Option<&File> {
        match self {
            Output::Sink { sink, .. } => sink.as_file(),
            Output::Terminal(_) => None,
        }
    }
}

impl Write for Output {
    /// The sink names its own errors; the gate's refusal names no output.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Sink { sink, .. } => sink.write(buf),
            Output::Terminal(gate) => gate.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Sink { sink, .. } => sink.flush(),
            Output::Terminal(gate) => gate.flush(),
        }
    }
}
/// The size of a local input file, for sizing an upload's parts.
fn input_size(input: Option<&Path>) -> Option<u64> {
    let p = input.filter(|p| *p != Path::new("-") && url_of(p).is_none())?;
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
