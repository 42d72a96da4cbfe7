//! Per-chunk compression (FORMAT.md §3.1): zstd, lz4 (block), gzip (raw DEFLATE) or none.
//!
//! Every call compresses one chunk on its own. Contexts are expensive to create, so each worker
//! thread keeps one per codec in a thread-local and reuses it for every chunk it handles.

use std::cell::RefCell;

use crate::error::{Error, Result};

/// Compression algorithm and level, chosen per file and recorded in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    /// Store every chunk raw.
    None,
    /// zstd at a level from -100 (fastest) to 22.
    Zstd(i32),
    /// LZ4 block format (lz4_flex).
    Lz4,
    /// DEFLATE at a level from 1 to 9 (the algorithm of gzip, without gzip's per-member header).
    Gzip(u32),
}

impl Default for Codec {
    fn default() -> Self {
        Codec::Zstd(3)
    }
}

const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = -100..=22;

impl Codec {
    /// Header identifier.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Zstd(_) => 1,
            Codec::Lz4 => 2,
            Codec::Gzip(_) => 3,
        }
    }

    /// Level byte of the header (informational).
    pub fn level_byte(self) -> i8 {
        match self {
            // Levels are range-checked on construction, so they fit.
            Codec::Zstd(l) => l.clamp(-128, 127) as i8,
            Codec::Gzip(l) => l.min(127) as i8,
            Codec::None | Codec::Lz4 => 0,
        }
    }

    /// Checks that the level is one the codec takes.
    pub(crate) fn check_level(self) -> Result<()> {
        let ok = match self {
            Codec::Zstd(l) => ZSTD_LEVELS.contains(&l) && l != 0,
            Codec::Gzip(l) => (1..=9).contains(&l),
            Codec::None | Codec::Lz4 => true,
        };
        match ok {
            true => Ok(()),
            false => Err(Error::InvalidOption(format!(
                "invalid level in {self}: zstd takes -100..=-1 or 1..=22, gzip 1..=9"
            ))),
        }
    }

    /// Rebuilds the codec from header fields. The level never matters for decompression, but it
    /// must be valid for the codec so that the header has one encoding (FORMAT.md §1).
    pub fn from_header(id: u8, level: i8) -> Result<Self> {
        let codec = match (id, level) {
            (0, 0) => Codec::None,
            (1, l) if l != 0 && ZSTD_LEVELS.contains(&i32::from(l)) => Codec::Zstd(i32::from(l)),
            (2, 0) => Codec::Lz4,
            (3, l @ 1..=9) => Codec::Gzip(l as u32),
            (0..=3, l) => {
                return Err(Error::InvalidHeader(format!(
                    "codec level {l} is not valid for codec id {id}"
                )))
            }
            _ => return Err(Error::InvalidHeader(format!("unknown codec id {id}"))),
        };
        Ok(codec)
    }

    /// The name as the command line spells it, e.g. `zstd:3`.
    pub fn name(self) -> String {
        match self {
            Codec::None => "none".into(),
            Codec::Zstd(l) => format!("zstd:{l}"),
            Codec::Lz4 => "lz4".into(),
            Codec::Gzip(l) => format!("gzip:{l}"),
        }
    }

    /// The output space [`Codec::compress`] needs for `chunk` input bytes: the chunk itself,
    /// except for lz4, whose encoder insists on room for its worst case.
    pub(crate) fn out_len(self, chunk: usize) -> usize {
        match self {
            Codec::Lz4 => lz4_flex::block::get_maximum_output_size(chunk),
            _ => chunk,
        }
    }

    /// Compresses `input` into `out` (at least [`Codec::out_len`] bytes). Returns `Ok(None)`
    /// when the result is not strictly smaller than `input`, or when [`looks_incompressible`]
    /// says so without compressing it: the chunk is then stored raw.
    pub(crate) fn compress(
        self,
        input: &[u8],
        out: &mut [u8],
        chunk_log2: u8,
    ) -> Result<Option<usize>> {
        if self != Codec::None && looks_incompressible(input) {
            return Ok(None);
        }
        let smaller = input.len().saturating_sub(1);
        let n = match self {
            Codec::None => None,
            Codec::Zstd(level) => zstd_compress(level, chunk_log2, input, &mut out[..smaller])?,
            Codec::Gzip(level) => deflate(level, input, &mut out[..smaller])?,
            Codec::Lz4 => lz4_flex::block::compress_into(input, out).ok(),
        };
        Ok(n.filter(|&n| n > 0 && n <= smaller))
    }

    /// Decompresses one chunk into `out` (whose length is the chunk size) and returns its length.
    /// The error string says what is wrong; the caller names the chunk.
    pub(crate) fn decompress(
        self,
        input: &[u8],
        out: &mut [u8],
    ) -> std::result::Result<usize, String> {
        match self {
            Codec::None => Err("a compressed chunk in a file whose codec is none".into()),
            Codec::Zstd(_) => zstd_decompress(input, out),
            Codec::Lz4 => lz4_flex::block::decompress_into(input, out).map_err(|e| e.to_string()),
            Codec::Gzip(_) => inflate(input, out),
        }
    }
}

/// The name as the command line spells it; [`std::str::FromStr`] reads it back.
impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Codec {
    type Err = Error;
    /// Parses `zstd[:LEVEL]`, `lz4`, `gzip[:LEVEL]` or `none`.
    fn from_str(s: &str) -> Result<Self> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (s, None),
        };
        let bad_level = |range: &str| {
            Error::InvalidOption(format!(
                "invalid level in '{s}': {name} takes a level in {range}"
            ))
        };
        let codec = match (name.to_ascii_lowercase().as_str(), level) {
            ("zstd", None) => Codec::Zstd(3),
            ("zstd", Some(l)) => {
                let l: i32 = l.parse().map_err(|_| bad_level("-100..=22"))?;
                if !ZSTD_LEVELS.contains(&l) || l == 0 {
                    return Err(bad_level("-100..=-1 or 1..=22"));
                }
                Codec::Zstd(l)
            }
            ("gzip", None) => Codec::Gzip(6),
            ("gzip", Some(l)) => match l.parse() {
                Ok(l @ 1..=9) => Codec::Gzip(l),
                _ => return Err(bad_level("1..=9")),
            },
            ("lz4", None) => Codec::Lz4,
            ("none", None) => Codec::None,
            ("lz4" | "none", Some(_)) => {
                return Err(Error::InvalidOption(format!(
                    "{name} takes no level: use '{name}'"
                )))
            }
            _ => {
                return Err(Error::InvalidOption(format!(
                    "unknown compression '{s}': use zstd[:LEVEL], lz4, gzip[:LEVEL] or none"
                )))
            }
        };
        Ok(codec)
    }
}

/// Inputs below this are always compressed: the probe would be a large share of the work.
const PROBE_MIN: usize = 64 << 10;
/// The probe reads `PROBE_SLICES` slices of `PROBE_SLICE` bytes spread evenly over the input.
const PROBE_SLICES: usize = 32;
const PROBE_SLICE: usize = 512;
/// Repeated 4-byte strings in the sample from which it counts as compressible (random bytes
/// give 0 to 2: 199 random 4 MiB chunks measured; text and JSON chunks thousands).
const PROBE_REPEATS: usize = 8;
/// Order-0 entropy (bits per byte) below which the sample counts as compressible (random bytes:
/// 7.985 at the lowest of the same 199 chunks; base64: 6.0; text and JSON at most 6.2).
const PROBE_ENTROPY: f64 = 7.9;

/// Whether a sample of `input` shows no redundancy at all, so that compressing it is pointless.
///
/// The sample is 32 slices of 512 bytes spread evenly over the input (16 KiB of a 4 MiB chunk);
/// it counts as compressible when 8 or more of its 4-byte strings repeat an earlier one (what a
/// match finder exploits) or when its byte entropy is below 7.9 bits (what Huffman coding
/// exploits, as in hex or base64). zstd itself is no good as the probe: its fast levels skip
/// ahead through random bytes and step over a small island of text (a 512-byte text slice among
/// random ones compressed to 16,394 of 16,384 bytes). Measured: on 256 MiB of random bytes all
/// 64 chunks of 4 MiB are found incompressible for about 2 ms of CPU, where compressing them took
/// 105 ms; every chunk of the Linux source and of the JSON corpus goes on to the codec (fewest
/// repeats 6,835, entropy at most 6.2). What it can miss is a chunk that is incompressible
/// wherever the slices fall and compressible only in between (text shorter than the 128 KiB
/// between slices, inside random bytes): that chunk is stored raw, larger than it could be by
/// what the text would have saved. Decided from the chunk alone, so output never depends on
/// thread timing.
pub(crate) fn looks_incompressible(input: &[u8]) -> bool {
    probe(input.len(), |at, slot| {
        slot.copy_from_slice(&input[at..at + slot.len()]);
        Ok(())
    })
    .unwrap_or(false)
}

/// [`looks_incompressible`] of `len` bytes that `read(offset, slot)` fills slot by slot: the
/// sample alone is read (an age writer probes a file's chunk without reading the chunk).
pub(crate) fn probe(
    len: usize,
    mut read: impl FnMut(usize, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<bool> {
    if len < PROBE_MIN {
        return Ok(false);
    }
    let stride = len / PROBE_SLICES;
    // On the stack: the probe runs once per chunk on the hot path and needs no allocation.
    let mut sample = [0u8; PROBE_SLICES * PROBE_SLICE];
    for (k, slot) in sample.chunks_exact_mut(PROBE_SLICE).enumerate() {
        read(k * stride, slot)?;
    }
    // Repeats: one remembered position (plus one, 0 = empty) per hash of a 4-byte string.
    let mut table = [0u16; 1 << 12];
    let mut repeats = 0;
    for (i, w) in sample.windows(4).enumerate() {
        let h =
            (u32::from_le_bytes([w[0], w[1], w[2], w[3]]).wrapping_mul(0x9E37_79B1) >> 20) as usize;
        let p = table[h] as usize;
        if p != 0 && sample[p - 1..p + 3] == *w {
            repeats += 1;
            if repeats >= PROBE_REPEATS {
                return Ok(false);
            }
        }
        table[h] = (i + 1) as u16;
    }
    let mut counts = [0u32; 256];
    for &b in &sample {
        counts[b as usize] += 1;
    }
    let n = sample.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| f64::from(c) * (n / f64::from(c)).log2())
        .sum();
    Ok(bits / n >= PROBE_ENTROPY)
}

thread_local! {
    static ZSTD_C: RefCell<Option<((i32, u8), zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static ZSTD_D: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    static DEFLATE: RefCell<Option<(u32, flate2::Compress)>> = const { RefCell::new(None) };
    static INFLATE: RefCell<Option<flate2::Decompress>> = const { RefCell::new(None) };
}

/// Level-3 zstd uses a 2 MiB window; with larger chunks the window is widened to the whole chunk,
/// which recovers most of the ratio lost to independent chunks (README, "chunk size").
fn zstd_window_log(level: i32, chunk_log2: u8) -> Option<u32> {
    (chunk_log2 > 21 && level < 20).then_some(u32::from(chunk_log2))
}

/// Level 3 on chunks of 8 MiB and more looks for matches of 6 bytes or longer instead of 5: on
/// the JSON corpus 0.7 % smaller and 1 % faster, on the Linux source 0.9 % larger and 5 % faster
/// (FORMAT.md §8 has the table that chose the default).
fn zstd_min_match(level: i32, chunk_log2: u8) -> Option<u32> {
    (level == 3 && chunk_log2 >= 23).then_some(6)
}

fn zstd_compress(
    level: i32,
    chunk_log2: u8,
    input: &[u8],
    out: &mut [u8],
) -> Result<Option<usize>> {
    let codec_err = |e: std::io::Error| Error::Codec(format!("zstd: {e}"));
    ZSTD_C.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().map(|(k, _)| *k) != Some((level, chunk_log2)) {
            let mut c = zstd::bulk::Compressor::new(level).map_err(codec_err)?;
            if let Some(w) = zstd_window_log(level, chunk_log2) {
                c.set_parameter(zstd::stream::raw::CParameter::WindowLog(w))
                    .map_err(codec_err)?;
            }
            if let Some(m) = zstd_min_match(level, chunk_log2) {
                c.set_parameter(zstd::stream::raw::CParameter::MinMatch(m))
                    .map_err(codec_err)?;
            }
            c.include_checksum(false).map_err(codec_err)?;
            *slot = Some(((level, chunk_log2), c));
        }
        let (_, c) = slot.as_mut().expect("just set");
        // An error here is zstd's "destination too small": the chunk does not shrink.
        Ok(c.compress_to_buffer(input, out).ok())
    })
}

/// The first bytes of a zstd frame (RFC 8878 §3.1.1); skippable frames have other magics.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// One zstd frame, exactly, whose window is at most the chunk (`out.len()`, a power of two):
/// FORMAT.md §3.1. zstd itself would also take skippable frames, several frames in a row, and
/// a window up to the decoder's limit.
pub(crate) fn zstd_decompress(input: &[u8], out: &mut [u8]) -> std::result::Result<usize, String> {
    if !input.starts_with(&ZSTD_MAGIC) {
        return Err("is not a zstd frame (a skippable frame or another format)".into());
    }
    match zstd::zstd_safe::find_frame_compressed_size(input) {
        Ok(n) if n == input.len() => {}
        Ok(_) => return Err("holds more than one zstd frame, or bytes after it".into()),
        Err(code) => return Err(zstd::zstd_safe::get_error_name(code).to_string()),
    }
    // zstd's one-shot decoder does not apply a window limit (only its streaming decoder does),
    // so the frame header's window descriptor is checked here.
    if let Some(window) = zstd_window(input).filter(|&w| w > out.len() as u64) {
        return Err(format!(
            "is a zstd frame with a {window}-byte window, larger than the {}-byte chunk",
            out.len()
        ));
    }
    ZSTD_D.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        let d = slot.as_mut().expect("just set");
        d.decompress_to_buffer(input, out)
            .map_err(|e| e.to_string())
    })
}

/// The window size a zstd frame header declares (RFC 8878 §3.1.1.1.2), or `None` for a
/// single-segment frame, whose window is its content size (bounded by the output buffer).
fn zstd_window(frame: &[u8]) -> Option<u64> {
    let descriptor = *frame.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    if single_segment {
        return None;
    }
    let w = *frame.get(5)?;
    let log = 10 + u32::from(w >> 3);
    let base = 1u64 << log;
    Some(base + (base / 8) * u64::from(w & 7))
}

fn deflate(level: u32, input: &[u8], out: &mut [u8]) -> Result<Option<usize>> {
    DEFLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        match slot.as_mut() {
            Some((l, c)) if *l == level => c.reset(),
            _ => {
                *slot = Some((
                    level,
                    flate2::Compress::new(flate2::Compression::new(level), false),
                ))
            }
        }
        let (_, c) = slot.as_mut().expect("just set");
        match c.compress(input, out, flate2::FlushCompress::Finish) {
            Ok(flate2::Status::StreamEnd) => Ok(Some(c.total_out() as usize)),
            // Ran out of room before the end: not smaller than the input.
            Ok(_) => Ok(None),
            Err(e) => Err(Error::Codec(format!("deflate: {e}"))),
        }
    })
}

fn inflate(input: &[u8], out: &mut [u8]) -> std::result::Result<usize, String> {
    INFLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        match slot.as_mut() {
            Some(d) => d.reset(false),
            None => *slot = Some(flate2::Decompress::new(false)),
        }
        let d = slot.as_mut().expect("just set");
        match d.decompress(input, out, flate2::FlushDecompress::Finish) {
            Ok(flate2::Status::StreamEnd) if d.total_in() as usize == input.len() => {
                Ok(d.total_out() as usize)
            }
            Ok(flate2::Status::StreamEnd) => Err("data after the end of the DEFLATE stream".into()),
            Ok(_) => Err("DEFLATE stream larger than the chunk or cut short".into()),
            Err(e) => Err(format!("DEFLATE: {e}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"zseal compresses text "[i % 22] ^ (i / 997) as u8)
            .collect()
    }

    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as u8
            })
            .collect()
    }

    #[test]
    fn the_probe_finds_random_bytes_incompressible_and_any_redundancy_compressible() {
        let c = 4 << 20;
        for seed in 1..20 {
            assert!(looks_incompressible(&random(c, seed)), "seed {seed}");
        }
        let r = random(c, 99);
        let alphabet = |a: &[u8]| {
            r.iter()
                .map(|b| a[*b as usize % a.len()])
                .collect::<Vec<_>>()
        };
        // Huffman coding saves on these, and zstd does shrink them: hex 0.52, base64 0.75.
        assert!(!looks_incompressible(&alphabet(b"0123456789abcdef")));
        let b64 = alphabet(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
        assert!(!looks_incompressible(&b64));
        assert!(!looks_incompressible(&sample(c)));
        // 4 KiB of text over one slice of random bytes: the chunk is compressed.
        let mut island = r.clone();
        island[5 * (c / 32)..5 * (c / 32) + 4096].copy_from_slice(&sample(4096));
        assert!(!looks_incompressible(&island));
        // Too small to be worth probing: always compressed.
        assert!(!looks_incompressible(&r[..PROBE_MIN - 1]));
        assert!(looks_incompressible(&r[..PROBE_MIN]));
    }

    /// A chunk the probe finds incompressible is stored raw without compressing; otherwise the
    /// codec decides, and a chunk is compressed exactly when that makes it smaller.
    #[test]
    fn compress_skips_probed_chunks_and_keeps_the_smaller_rule() {
        let r = random(1 << 20, 3);
        let mut out = vec![0u8; Codec::Lz4.out_len(r.len())];
        for codec in [Codec::Zstd(3), Codec::Lz4, Codec::Gzip(6)] {
            assert_eq!(codec.compress(&r, &mut out, 20).unwrap(), None);
            // Below the probe's minimum the codec runs and still stores random bytes raw.
            assert_eq!(codec.compress(&r[..4096], &mut out, 12).unwrap(), None);
            let t = sample(1 << 20);
            let n = codec.compress(&t, &mut out, 20).unwrap().unwrap();
            assert!(n < t.len() / 4, "{codec:?} {n}");
        }
    }

    /// FORMAT.md §3.1: a compressed zstd chunk is one zstd frame whose window is at most the
    /// chunk; zstd itself would accept the three frames below.
    #[test]
    fn zstd_chunks_are_one_frame_with_a_window_within_the_chunk() {
        use std::io::Write;
        let text = sample(600);
        let frame = |t: &[u8]| zstd::bulk::compress(t, 3).unwrap();
        let mut out = vec![0u8; 1 << 10];
        let zstd = Codec::Zstd(3);
        assert_eq!(zstd.decompress(&frame(&text), &mut out), Ok(600));
        // A 1 MiB window declared for 600 bytes, read as a 1 KiB chunk.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        enc.window_log(20).unwrap();
        enc.include_contentsize(false).unwrap();
        enc.write_all(&text[..300]).unwrap();
        enc.flush().unwrap(); // not all input at once: zstd cannot shrink the window to it
        enc.write_all(&text[300..]).unwrap();
        let wide = enc.finish().unwrap();
        let mut big = vec![0u8; 1 << 20];
        assert_eq!(
            zstd.decompress(&wide, &mut big),
            Ok(600),
            "valid in a 1 MiB chunk"
        );
        let e = zstd.decompress(&wide, &mut out).unwrap_err();
        assert!(e.contains("window"), "{e}");
        // Two frames in a row.
        let mut two = frame(&text[..300]);
        two.extend(frame(&text[300..]));
        let e = zstd.decompress(&two, &mut out).unwrap_err();
        assert!(e.contains("more than one"), "{e}");
        // A skippable frame (magic 0x184D2A50, 4 bytes of content) before a frame.
        let mut skip = vec![0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        skip.extend(frame(&text));
        let e = zstd.decompress(&skip, &mut out).unwrap_err();
        assert!(e.contains("skippable"), "{e}");
    }

    #[test]
    fn every_codec_round_trips_and_refuses_growth() {
        for codec in ["zstd:3", "zstd:-5", "zstd:19", "lz4", "gzip:1", "gzip:9"] {
            let codec: Codec = codec.parse().unwrap();
            let input = sample(100_000);
            let mut out = vec![0u8; codec.out_len(input.len())];
            let n = codec
                .compress(&input, &mut out, 17)
                .unwrap()
                .expect("text shrinks");
            assert!(n < input.len());
            let mut back = vec![0u8; 1 << 17];
            let m = codec.decompress(&out[..n], &mut back).unwrap();
            assert_eq!(&back[..m], &input[..], "{codec:?}");
            // Too small an output buffer must fail, not overflow.
            assert!(
                codec.decompress(&out[..n], &mut back[..1000]).is_err(),
                "{codec:?}"
            );
            // Incompressible input is reported as not smaller.
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            let noise: Vec<u8> = (0..4096)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 32) as u8
                })
                .collect();
            let mut out = vec![0u8; codec.out_len(noise.len())];
            assert_eq!(
                codec.compress(&noise, &mut out, 12).unwrap(),
                None,
                "{codec:?}"
            );
        }
    }

    #[test]
    fn parse_levels_and_names() {
        assert_eq!("zstd".parse::<Codec>().unwrap(), Codec::Zstd(3));
        assert_eq!("zstd:-5".parse::<Codec>().unwrap(), Codec::Zstd(-5));
        assert_eq!("gzip:9".parse::<Codec>().unwrap(), Codec::Gzip(9));
        for bad in ["zstd:23", "zstd:0", "gzip:10", "lz4:1", "brotli", "zstd:x"] {
            assert!(bad.parse::<Codec>().is_err(), "{bad}");
        }
        for c in [Codec::Zstd(-5), Codec::Lz4, Codec::Gzip(6), Codec::None] {
            assert_eq!(Codec::from_header(c.id(), c.level_byte()).unwrap(), c);
        }
        // Regression (fuzz/header_roundtrip, crash-83dcc274): lz4 with level byte 3 parsed, then
        // encoded back as 0, so the header had two encodings. Non-canonical levels are invalid.
        for (id, level) in [
            (2u8, 3i8),
            (0, 1),
            (3, 0),
            (3, 10),
            (3, -1),
            (1, 0),
            (1, 23),
            (1, -101),
        ] {
            assert!(
                Codec::from_header(id, level).is_err(),
                "id {id} level {level}"
            );
        }
    }
}
