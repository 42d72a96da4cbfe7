//! The crypt4gh writer (FORMAT.md §13.8): the header of one data-key packet per recipient, then
//! the input cut into jobs of [`JOB_SEGMENTS`] segments of 64 KiB, each job sealed on a worker
//! (every segment under the data key with a fresh random nonce, [`SegmentSealer`]) and released
//! in order. Segment `i` lands at `header_len + i·65,564`: into a regular file the workers write
//! the jobs by offset ([`ChunkWriter::write_frames_to`]) through the writers' one offset writer
//! (pipeline/offset.rs), as a container's frames are. No codec, no padding, no edit list.
//!
//! The format has no digest; the writer hashes the plaintext with BLAKE3 on the workers (each job
//! a subtree, merged in order) so that a signature beside the file (§13.9) is made over §12.1's
//! statement without reading anything back. `finish` must be called: dropped unfinished, the file
//! lacks its last segments, which a crypt4gh v1 reader cannot tell (§13.10).

use std::io::Write;
use std::sync::Arc;

use rand_core::{CryptoRng, RngCore};

use super::super::emit::{self, Sealing};
use super::super::intake::{read_chunk_at, Filled, Intake, Spare, ALIGN};
use super::super::options::EncryptOptions;
use super::super::sink::{ChunkSink, ChunkWriter, SinkState};
use super::super::window::Window;
use crate::crypto::c4gh::PublicKey;
use crate::crypto::sign::{self, SigningKey};
use crate::error::Result;
use crate::format::crypt4gh::{seal_header, DataKey, SegmentSealer};
use crate::format::crypt4gh::{SEALED_SEGMENT_LEN, SEGMENT_LEN};
use crate::hash::{ChunkHash, ChunkHasher, Digest, HashAlg};
use crate::stats::{timed, ChunkTimes, StreamStats};

/// Segments per job: 2 MiB of input, whose 2,098,048 sealed bytes are at least
/// [`WORKER_WRITE_MIN`](super::super::offset::WORKER_WRITE_MIN), so a worker writes each full job by offset (buffers of 2 MiB stay in
/// cache where 8 MiB ones do not, docs/PERFORMANCE.md §6).
pub(crate) const JOB_SEGMENTS: usize = 32;
/// Input bytes per job.
const JOB: usize = JOB_SEGMENTS * SEGMENT_LEN;
/// Stored bytes of a full job.
const JOB_SEALED: usize = JOB_SEGMENTS * SEALED_SEGMENT_LEN;

/// Writes a crypt4gh file of everything written to it into `W`: the engine's writer over a
/// crypt4gh file's sink. See the module documentation.
pub type Crypt4ghWriter<W> = ChunkWriter<Crypt4ghSink<W>>;

/// What the workers need: the data key's sealer, and whether to hash.
struct Work {
    sealer: SegmentSealer,
    hash: HashAlg,
}

/// One job's result, in stream order.
pub(crate) struct Done {
    /// The job's stored segments, `out[..]` (its length is theirs).
    out: Vec<u8>,
    input: Vec<u8>,
    plain: usize,
    hash: ChunkHash,
    times: ChunkTimes,
}

/// The sealing of a crypt4gh file into `W`, for the engine's writer.
pub struct Crypt4ghSink<W: Write> {
    /// The output, the intake, the times, the progress counter and the sticky failure.
    state: SinkState<W>,
    work: Arc<Work>,
    window: Window<Done>,
    /// Jobs handed out, and the plaintext bytes in them.
    jobs: u64,
    plaintext_len: u64,
    /// The BLAKE3 of the plaintext, merged job by job.
    digest: Digest,
    /// The keys that sign the statement at the end (§13.9), and the armored signatures made.
    sign: Vec<SigningKey>,
    signatures: Vec<String>,
    digest_hex: Option<String>,
}

impl<W: Write> ChunkWriter<Crypt4ghSink<W>> {
    /// Writes the header for `recipients` (X25519 public keys, at least one) to `inner` and
    /// returns the stream.
    pub fn new(inner: W, recipients: &[PublicKey], opts: &EncryptOptions) -> Result<Self> {
        Self::with_rng(inner, recipients, opts, &mut rand_core::OsRng)
    }

    /// As [`Crypt4ghWriter::new`], drawing the data key and the header's writer keys and nonces
    /// from `rng` (the segments' nonces always come from the OS).
    pub fn with_rng(
        mut inner: W,
        recipients: &[PublicKey],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<Self> {
        opts.check_for(crate::Format::Crypt4gh)?;
        let data_key = DataKey::generate(rng);
        let header = seal_header(&data_key, recipients, None, rng)?.to_bytes()?;
        inner.write_all(&header)?;
        let work = Work {
            sealer: SegmentSealer::new(&data_key),
            hash: opts.hash,
        };
        // One buffer length for inputs and outputs: a job's stored bytes, and the slack.
        let intake = Intake::new(0, JOB, JOB_SEALED + ALIGN);
        Ok(ChunkWriter::from_sink(Crypt4ghSink {
            state: SinkState::new(inner, intake),
            work: Arc::new(work),
            window: Window::new(&opts.threads, JOB),
            jobs: 0,
            plaintext_len: 0,
            digest: Digest::new(opts.hash),
            sign: opts.sign.clone(),
            signatures: Vec::new(),
            digest_hex: None,
        }))
    }
}

impl Work {
    /// Hashes and seals `input` as job `index`'s segments into `out` (the pure per-chunk step,
    /// on a worker).
    fn seal(&self, index: u64, input: Filled, mut out: Vec<u8>) -> Result<Done> {
        let mut times = ChunkTimes::default();
        let plain = input.bytes();
        let mut hasher = ChunkHasher::new(self.hash, index, JOB);
        timed(&mut times.hash, || hasher.update(plain));
        out.clear();
        let mut rng = rand_core::OsRng;
        timed(&mut times.cipher, || {
            plain
                .chunks(SEGMENT_LEN)
                .try_for_each(|segment| self.sealer.seal_random(segment, &mut out, &mut rng))
        })?;
        Ok(Done {
            out,
            plain: input.len,
            input: input.buf,
            hash: hasher.finish(),
            times,
        })
    }
}

impl<W: Write> Crypt4ghSink<W> {
    /// Queues job `self.jobs` (of `len` input bytes) through the write driver; `job` runs it
    /// on a worker.
    fn push(
        &mut self,
        len: usize,
        job: impl FnOnce(&Work, u64) -> Result<Done> + Send + 'static,
    ) -> Result<()> {
        let (index, work) = (self.jobs, Arc::clone(&self.work));
        self.jobs += 1;
        self.plaintext_len += len as u64;
        emit::push(self, move || job(&work, index))
    }

    /// The digest's hex, and a signature over §12.1's statement by every signing key.
    fn sign_statement(&mut self) -> Result<()> {
        if self.digest.alg() != HashAlg::Blake3 {
            return Ok(());
        }
        let digest = std::mem::replace(&mut self.digest, Digest::new(HashAlg::None)).finish();
        self.digest_hex = Some(crate::hash::to_hex(HashAlg::Blake3, &digest));
        let statement = sign::statement_of(self.plaintext_len, &digest);
        let sha = sign::sha512_of(statement.as_bytes())?;
        for key in &self.sign {
            self.signatures.push(key.sign_sha512(&sha)?);
        }
        Ok(())
    }
}

impl<W: Write> Sealing for Crypt4ghSink<W> {
    type Done = Done;

    fn window(&mut self) -> &mut Window<Done> {
        &mut self.window
    }

    /// Counts one sealed job (the next in order), merges its hash, and writes it out.
    fn release(&mut self, d: Done) -> Result<()> {
        let s = &mut self.state;
        s.count(d.plain, &d.times);
        // BLAKE3 needs no bytes here, only the job's chaining value.
        self.digest.push(&[], &d.hash);
        s.intake.recycle_input(d.input);
        let len = d.out.len();
        s.hand_out(&mut self.window, d.out, 0..len, Spare::Output, || {
            " (crypt4gh segments)".into()
        })
    }
}

impl<W: Write> ChunkSink for Crypt4ghSink<W> {
    type Inner = W;

    fn state(&mut self) -> &mut SinkState<W> {
        &mut self.state
    }

    /// Hands the filled job to a worker.
    fn submit(&mut self) -> Result<()> {
        let input = self.state.intake.take();
        let out = self.state.intake.output_buffer();
        self.push(input.len, move |work, index| work.seal(index, input, out))
    }

    /// Hands a worker a full job to read from `file` at `offset` itself.
    #[cfg(unix)]
    fn submit_at(&mut self, file: &Arc<std::fs::File>, offset: u64) -> Result<()> {
        let input = self.state.intake.input_buffer();
        let out = self.state.intake.output_buffer();
        let file = Arc::clone(file);
        self.push(JOB, move |work, index| {
            let mut read = std::time::Duration::ZERO;
            let input = read_chunk_at(&file, input, 0, offset, JOB, &mut read)?;
            let mut done = work.seal(index, input, out)?;
            done.times.read += read;
            Ok(done)
        })
    }

    fn threads(&self) -> usize {
        self.window.threads()
    }

    fn flush_sealed(&mut self) -> Result<()> {
        emit::flush(self)
    }

    /// The last job; every write done; the signatures made.
    fn end(&mut self) -> Result<()> {
        emit::finish_jobs(self)?;
        self.state.close()?;
        self.sign_statement()
    }

    fn stats(&self) -> StreamStats {
        self.state.stats(self.jobs, self.window.threads())
    }

    /// The plaintext's BLAKE3 (the format records none: it is what a signature beside the file
    /// is made over).
    fn digest_hex(&self) -> Option<String> {
        self.digest_hex.clone()
    }

    fn signatures(&self) -> Vec<String> {
        self.signatures.clone()
    }

    fn into_state(self) -> SinkState<W> {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::c4gh::SecretKey;
    use crate::format::crypt4gh::{Header, Layout, SegmentOpener};
    use std::io::{Read, Seek, SeekFrom};

    /// Opens a crypt4gh file with `key` through the format layer alone: its plaintext.
    fn open(file: &[u8], key: &SecretKey) -> Vec<u8> {
        let mut r = file;
        let header = Header::read(&mut r).unwrap();
        let opened = header.open(std::slice::from_ref(key)).unwrap();
        let layout = Layout::new(header.len(), file.len() as u64).unwrap();
        let opener = SegmentOpener::new(&opened.data_keys).unwrap();
        let mut out = Vec::new();
        for i in 0..layout.segments() {
            let range = layout.segment_range(i);
            let sealed = &file[range.start as usize..range.end as usize];
            let mut plain = vec![0u8; SEGMENT_LEN];
            let n = opener.open(i, sealed, &mut plain).unwrap();
            out.extend_from_slice(&plain[..n]);
        }
        out
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    const SIZES: [usize; 7] = [0, 1, 65_535, 65_536, 65_537, 16 * 65_536 + 1, 2 * JOB + 3];

    /// Every boundary size comes back whole, from one thread and from two, written through
    /// `Write`, for two recipients each with its own key.
    #[test]
    fn boundary_sizes_round_trip_serial_and_parallel() {
        let keys = [
            SecretKey::from_bytes([1; 32]),
            SecretKey::from_bytes([2; 32]),
        ];
        let to: Vec<PublicKey> = keys.iter().map(SecretKey::public).collect();
        for n in SIZES {
            let plain = text(n);
            for threads in [1, 2] {
                let opts = EncryptOptions::default().threads(threads);
                let mut w = Crypt4ghWriter::new(Vec::new(), &to, &opts).unwrap();
                w.write_all(&plain).unwrap();
                let file = w.finish().unwrap();
                let header_len = file.len() as u64 - layout_len(n as u64);
                // Two data-key packets (§13.2–13.3: 68 + 40 bytes each), no edit list.
                assert_eq!(header_len, 16 + 2 * (68 + 40), "{n} {threads}");
                for k in &keys {
                    assert!(open(&file, k) == plain, "{n} bytes, {threads} threads");
                }
            }
        }
    }

    fn layout_len(plain: u64) -> u64 {
        crate::format::crypt4gh::layout::sealed_data_len(plain)
    }

    /// A regular file in and a regular file out: the workers read the input and write the
    /// jobs by offset; the file is the same plaintext, and its position ends at its end.
    #[test]
    fn files_read_and_written_by_offset_round_trip() {
        let key = SecretKey::from_bytes([5; 32]);
        let dir = tempfile::tempdir().unwrap();
        for n in [65_537, 3 * JOB + 65_536, 16 * 65_536 + 1] {
            let plain = text(n);
            let input_path = dir.path().join("in");
            std::fs::write(&input_path, &plain).unwrap();
            let input = std::fs::File::open(&input_path).unwrap();
            let out = std::fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.path().join("out"))
                .unwrap();
            let opts = EncryptOptions::default().threads(2);
            let mut w = Crypt4ghWriter::new(&out, &[key.public()], &opts).unwrap();
            w.write_frames_to(out.try_clone().unwrap(), None).unwrap();
            assert!(w.sink.state.offsets.is_some(), "written by offset");
            assert_eq!(w.copy_from_file(&input).unwrap(), n as u64);
            let (mut f, stats) = w.finish_with_stats().unwrap();
            assert_eq!(stats.chunks, n.div_ceil(JOB) as u64);
            let end = f.stream_position().unwrap();
            let mut file = Vec::new();
            f.seek(SeekFrom::Start(0)).unwrap();
            f.read_to_end(&mut file).unwrap();
            assert_eq!(end, file.len() as u64, "the position is at the end");
            assert!(open(&file, &key) == plain, "{n}");
        }
    }

    /// The digest is the plaintext's BLAKE3, and each signing key signs §12.1's statement of it.
    #[test]
    fn the_digest_is_the_plaintexts_blake3_and_the_statement_is_signed() {
        let plain = text(3 * JOB + 5);
        let key = SecretKey::from_bytes([3; 32]);
        let ssh = ssh_key::PrivateKey::random(&mut rand_core::OsRng, ssh_key::Algorithm::Ed25519)
            .unwrap();
        let pem = ssh.to_openssh(ssh_key::LineEnding::LF).unwrap();
        let signer = SigningKey::parse(&pem, "test key", &crate::crypto::prompt::NoPrompt).unwrap();
        let opts = EncryptOptions::default().threads(2).sign(signer.clone());
        let mut w = Crypt4ghWriter::new(Vec::new(), &[key.public()], &opts).unwrap();
        w.write_all(&plain).unwrap();
        w.flush().unwrap();
        let hex = blake3::hash(&plain).to_hex().to_string();
        let (_, _, sigs) = w.finish_with_signatures().unwrap();
        assert_eq!(sigs.len(), 1);
        let statement = crate::crypto::sign::statement(plain.len() as u64, &hex);
        let mut signers = crate::crypto::sign::Signers::default();
        signers.add_key_text(&signer.public_key(), "k").unwrap();
        signers.check(statement.as_bytes(), &sigs[0]).unwrap();
        let other = crate::crypto::sign::statement(plain.len() as u64 + 1, &hex);
        assert!(signers.check(other.as_bytes(), &sigs[0]).is_err());
    }

    /// What a crypt4gh file cannot hold is refused by name before anything is written.
    #[test]
    fn options_a_crypt4gh_file_cannot_hold_are_refused() {
        let to = [SecretKey::from_bytes([1; 32]).public()];
        let d = EncryptOptions::default;
        let cases = [
            (d().codec(crate::Codec::Zstd(3)), "compression"),
            (d().cipher(crate::Cipher::Aes256Gcm), "ChaCha20-Poly1305"),
            (d().hash(HashAlg::Xxh3), "xxh3"),
            (d().chunk_size(1 << 20), "64 KiB"),
            (d().pad(true), "padding"),
        ];
        for (opts, says) in cases {
            let mut out = Vec::new();
            let e = Crypt4ghWriter::new(&mut out, &to, &opts).err().unwrap();
            assert!(e.to_string().contains(says), "{e}");
            assert!(out.is_empty());
        }
        // The defaults (zstd named by no one), `none` and ChaCha20-Poly1305 named are fine.
        let fine = d()
            .codec(crate::Codec::None)
            .cipher(crate::Cipher::ChaCha20Poly1305);
        assert!(Crypt4ghWriter::new(Vec::new(), &to, &fine).is_ok());
        assert!(Crypt4ghWriter::new(Vec::new(), &to, &d()).is_ok());
        assert!(
            Crypt4ghWriter::new(Vec::new(), &[], &d()).is_err(),
            "no recipient"
        );
    }
}
