//! The whole-plaintext digest (FORMAT.md §3.2).
//!
//! BLAKE3 is computed on the worker threads: each chunk is a complete BLAKE3 subtree (chunks are a
//! power of two of at least 1 KiB and start at multiples of their size), so a worker computes the
//! chunk's chaining value and the ordered stage merges the values exactly as BLAKE3's own hasher
//! does. The result is bit-for-bit what `b3sum` prints. XXH3 has no such tree, but at over
//! 40 GB/s it is cheap enough to run in order on the calling thread.

use blake3::hazmat::{
    merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode,
};
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result};

/// Whole-plaintext hash, chosen per file and recorded in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HashAlg {
    /// No digest (chunks are still authenticated; only the end-to-end check is skipped).
    None,
    /// BLAKE3-256, as `b3sum` prints it.
    #[default]
    Blake3,
    /// XXH3-64, as `xxhsum -H3` prints it (not cryptographic; the AEAD already authenticates).
    Xxh3,
}

impl HashAlg {
    /// Header identifier.
    pub fn id(self) -> u8 {
        match self {
            HashAlg::None => 0,
            HashAlg::Blake3 => 1,
            HashAlg::Xxh3 => 2,
        }
    }

    /// Parses a header identifier.
    pub fn from_id(id: u8) -> Result<Self> {
        match id {
            0 => Ok(HashAlg::None),
            1 => Ok(HashAlg::Blake3),
            2 => Ok(HashAlg::Xxh3),
            _ => Err(Error::InvalidHeader(format!("unknown hash id {id}"))),
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HashAlg::None => "none",
            HashAlg::Blake3 => "blake3",
            HashAlg::Xxh3 => "xxh3",
        }
    }

    /// Digest length in bytes.
    pub fn len(self) -> usize {
        match self {
            HashAlg::None => 0,
            HashAlg::Blake3 => 32,
            HashAlg::Xxh3 => 8,
        }
    }

    /// True for [`HashAlg::None`].
    pub fn is_empty(self) -> bool {
        self == HashAlg::None
    }

    /// True when the digest is a tree over the chunks: each chunk's value is computed on the
    /// workers ([`ChunkHash`]) and merged in order, so pieces sealed or opened apart can have
    /// their values merged into the whole file's digest (FORMAT.md §11.1). BLAKE3 is.
    pub fn merges_chunks(self) -> bool {
        matches!(self, HashAlg::Blake3)
    }

    /// True when the digest reads each chunk's plaintext on the ordered side, in order (it has
    /// no tree to compute on the workers): a chunk's plaintext must still be intact when its
    /// sealed frame comes back, so a raw frame is not sealed over it. XXH3 does.
    pub fn reads_in_order(self) -> bool {
        matches!(self, HashAlg::Xxh3)
    }
}

/// The name as the command line spells it; [`std::str::FromStr`] reads it back.
impl std::fmt::Display for HashAlg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for HashAlg {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "blake3" | "b3" => Ok(HashAlg::Blake3),
            "xxh3" | "xxh3-64" => Ok(HashAlg::Xxh3),
            "none" => Ok(HashAlg::None),
            _ => Err(Error::InvalidOption(format!(
                "unknown hash '{s}': use blake3, xxh3 or none"
            ))),
        }
    }
}

/// What a worker computes for one chunk: its BLAKE3 chaining value, and for chunk 0 also the root
/// hash, which is the answer when the file has a single chunk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChunkHash {
    cv: Option<ChainingValue>,
    root_if_alone: Option<[u8; 32]>,
}

impl ChunkHash {
    /// A chunk's hash as a task returned it (FORMAT.md §11.1).
    pub(crate) fn from_parts(cv: [u8; 32], root_if_alone: Option<[u8; 32]>) -> Self {
        ChunkHash {
            cv: Some(cv),
            root_if_alone,
        }
    }

    /// The BLAKE3 chaining value (none without a BLAKE3 digest).
    pub(crate) fn cv(&self) -> Option<[u8; 32]> {
        self.cv
    }

    /// Chunk 0's root hash.
    pub(crate) fn root_if_alone(&self) -> Option<[u8; 32]> {
        self.root_if_alone
    }

    /// Hashes chunk `index` of `chunk_size` bytes (the worker side).
    pub(crate) fn compute(alg: HashAlg, index: u64, chunk_size: usize, data: &[u8]) -> Self {
        let mut h = ChunkHasher::new(alg, index, chunk_size);
        h.update(data);
        h.finish()
    }
}

/// [`ChunkHash::compute`] over a chunk that arrives in pieces (so each piece is hashed while it
/// is still in the cache it was just read into).
pub(crate) struct ChunkHasher {
    blake3: Option<blake3::Hasher>,
    index: u64,
}

impl ChunkHasher {
    pub(crate) fn new(alg: HashAlg, index: u64, chunk_size: usize) -> Self {
        let blake3 = alg.merges_chunks().then(|| {
            let mut h = blake3::Hasher::new();
            h.set_input_offset(index * chunk_size as u64);
            h
        });
        ChunkHasher { blake3, index }
    }

    pub(crate) fn update(&mut self, piece: &[u8]) {
        if let Some(h) = self.blake3.as_mut() {
            h.update(piece);
        }
    }

    pub(crate) fn finish(self) -> ChunkHash {
        match self.blake3 {
            None => ChunkHash::default(),
            Some(h) => ChunkHash {
                cv: Some(h.finalize_non_root()),
                root_if_alone: (self.index == 0).then(|| *h.finalize().as_bytes()),
            },
        }
    }
}

/// Builds the whole-plaintext digest from chunks delivered in order (the ordered side).
#[derive(Clone)]
pub(crate) struct Digest {
    alg: HashAlg,
    stack: Vec<ChainingValue>,
    chunks: u64,
    single_root: Option<[u8; 32]>,
    xxh3: Option<Box<Xxh3>>,
}

impl Digest {
    pub(crate) fn new(alg: HashAlg) -> Self {
        Digest {
            alg,
            stack: Vec::new(),
            chunks: 0,
            single_root: None,
            xxh3: alg.reads_in_order().then(|| Box::new(Xxh3::new())),
        }
    }

    /// The algorithm this digest is built with.
    pub(crate) fn alg(&self) -> HashAlg {
        self.alg
    }

    /// Adds the next chunk in plaintext order, with what the worker computed for it.
    pub(crate) fn push(&mut self, data: &[u8], hash: &ChunkHash) {
        if let Some(x) = self.xxh3.as_mut() {
            x.update(data);
        }
        if let Some(cv) = hash.cv {
            if self.chunks == 0 {
                self.single_root = hash.root_if_alone;
            }
            // BLAKE3's lazy merge: keep one CV per set bit of the count of finished subtrees, so
            // the right edge stays open until we know which node is the root.
            while self.stack.len() as u32 > self.chunks.count_ones() {
                self.merge_top();
            }
            self.stack.push(cv);
            self.chunks += 1;
        }
    }

    fn merge_top(&mut self) {
        let right = self.stack.pop().expect("merge needs two CVs");
        let left = self.stack.pop().expect("merge needs two CVs");
        self.stack
            .push(merge_subtrees_non_root(&left, &right, Mode::Hash));
    }

    /// The digest as stored in the final frame: left-aligned, zero-padded to 32 bytes.
    pub(crate) fn finish(mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        match self.alg {
            HashAlg::None => {}
            HashAlg::Xxh3 => {
                let x = self.xxh3.take().expect("xxh3 state exists for xxh3");
                out[..8].copy_from_slice(&x.digest().to_be_bytes());
            }
            HashAlg::Blake3 => out = self.blake3_root(),
        }
        out
    }

    fn blake3_root(&mut self) -> [u8; 32] {
        match self.chunks {
            0 => *blake3::hash(b"").as_bytes(),
            1 => self.single_root.expect("chunk 0 carries its root hash"),
            _ => {
                while self.stack.len() > 2 {
                    self.merge_top();
                }
                let right = self.stack.pop().expect("two CVs remain");
                let left = self.stack.pop().expect("two CVs remain");
                *merge_subtrees_root(&left, &right, Mode::Hash).as_bytes()
            }
        }
    }
}

/// Formats a stored digest the way the standard tool prints it (hex, `alg.len()` bytes).
pub fn to_hex(alg: HashAlg, digest: &[u8; 32]) -> String {
    digest[..alg.len()]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Feeds everything `r` yields to `f`, a MiB at a time (what a streaming hash reads through).
pub(crate) fn read_blocks(
    mut r: impl std::io::Read,
    mut f: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => f(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Hashes everything `r` yields and returns the hex digest as `b3sum` or `xxhsum -H3` prints it.
pub fn hash_reader(alg: HashAlg, mut r: impl std::io::Read) -> std::io::Result<String> {
    match alg {
        HashAlg::Blake3 => {
            let mut h = blake3::Hasher::new();
            h.update_reader(r)?;
            Ok(h.finalize().to_hex().to_string())
        }
        HashAlg::Xxh3 => {
            let mut h = Xxh3::new();
            read_blocks(&mut r, |b| h.update(b))?;
            Ok(format!("{:016x}", h.digest()))
        }
        HashAlg::None => Err(no_digest()),
    }
}

/// Hashes a file as [`hash_reader`] does; BLAKE3 maps it into memory and uses every core (as
/// `b3sum` does).
pub fn hash_file(alg: HashAlg, path: &std::path::Path) -> std::io::Result<String> {
    match alg {
        HashAlg::Blake3 => {
            let mut h = blake3::Hasher::new();
            h.update_mmap_rayon(path)?;
            Ok(h.finalize().to_hex().to_string())
        }
        HashAlg::Xxh3 => hash_reader(alg, std::fs::File::open(path)?),
        HashAlg::None => Err(no_digest()),
    }
}

fn no_digest() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "hash algorithm none has no digest: use blake3 or xxh3",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one byte at a time, failing once at the start with `first_error`.
    struct Flaky<'a> {
        data: &'a [u8],
        first_error: Option<std::io::ErrorKind>,
    }

    impl std::io::Read for Flaky<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if let Some(kind) = self.first_error.take() {
                return Err(kind.into());
            }
            let n = buf.len().min(self.data.len()).min(1);
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// `zseal hash` and `hash_file`: the digests b3sum and xxhsum -H3 print; an interrupted read
    /// is retried, any other error is returned.
    #[test]
    fn hash_reader_and_hash_file_give_the_standard_digests() {
        let input = data(70_000);
        let b3 = blake3::hash(&input).to_hex().to_string();
        let x3 = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&input));
        for (alg, want) in [(HashAlg::Blake3, &b3), (HashAlg::Xxh3, &x3)] {
            assert_eq!(&hash_reader(alg, &input[..]).unwrap(), want);
            let interrupted = Flaky {
                data: &input[..300],
                first_error: Some(std::io::ErrorKind::Interrupted),
            };
            assert_eq!(
                hash_reader(alg, interrupted).unwrap(),
                hash_reader(alg, &input[..300]).unwrap()
            );
            let failing = Flaky {
                data: &input[..300],
                first_error: Some(std::io::ErrorKind::Other),
            };
            assert!(hash_reader(alg, failing).is_err());
            let mut f = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut f, &input).unwrap();
            assert_eq!(&hash_file(alg, f.path()).unwrap(), want);
        }
        assert!(hash_reader(HashAlg::None, &input[..]).is_err());
    }

    /// The names the command line, the header dump and the Python package use, both ways.
    #[test]
    fn names_parse_back_and_aliases_are_accepted() {
        for (alg, name, len) in [
            (HashAlg::Blake3, "blake3", 32),
            (HashAlg::Xxh3, "xxh3", 8),
            (HashAlg::None, "none", 0),
        ] {
            assert_eq!(alg.name(), name);
            assert_eq!(alg.to_string(), name);
            assert_eq!(name.parse::<HashAlg>().unwrap(), alg);
            assert_eq!(name.to_uppercase().parse::<HashAlg>().unwrap(), alg);
            assert_eq!(alg.len(), len);
            assert_eq!(alg.is_empty(), len == 0);
        }
        assert_eq!("b3".parse::<HashAlg>().unwrap(), HashAlg::Blake3);
        assert_eq!("xxh3-64".parse::<HashAlg>().unwrap(), HashAlg::Xxh3);
        let e = "sha1".parse::<HashAlg>().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidOption);
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    fn chunked(alg: HashAlg, input: &[u8], chunk: usize) -> [u8; 32] {
        let mut d = Digest::new(alg);
        for (i, c) in input.chunks(chunk).enumerate() {
            d.push(c, &ChunkHash::compute(alg, i as u64, chunk, c));
        }
        d.finish()
    }

    #[test]
    fn blake3_from_chunks_equals_plain_blake3_at_boundaries() {
        for chunk in [1024usize, 4096] {
            for n in [
                0,
                1,
                chunk - 1,
                chunk,
                chunk + 1,
                2 * chunk,
                3 * chunk + 7,
                8 * chunk,
                13 * chunk - 1,
            ] {
                let input = data(n);
                assert_eq!(
                    chunked(HashAlg::Blake3, &input, chunk),
                    *blake3::hash(&input).as_bytes(),
                    "n={n} chunk={chunk}"
                );
            }
        }
    }

    #[test]
    fn xxh3_from_chunks_equals_one_shot() {
        let input = data(10_000);
        let d = chunked(HashAlg::Xxh3, &input, 1024);
        assert_eq!(d[..8], xxhash_rust::xxh3::xxh3_64(&input).to_be_bytes());
        assert_eq!(d[8..], [0u8; 24]);
    }
}
