//! Hostile inputs never exhaust memory or CPU: huge declared lengths, huge KDF parameters, huge
//! headers, millions of tiny chunks, a lying footer, deeply truncated streams. Memory is measured,
//! not assumed: this test binary counts every allocation.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use zseal::{Codec, DecryptOptions, Decryptor, EncryptOptions, Encryptor, Error, HashAlg};

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator with the same arguments; the counters are
// plain atomics and never influence what is allocated. (`unsafe` is required by the trait.)
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(l.size(), Ordering::SeqCst) + l.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::SeqCst);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            CURRENT.fetch_sub(l.size(), Ordering::SeqCst);
            let now = CURRENT.fetch_add(new, Ordering::SeqCst) + new;
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measurement at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `f` and returns its result and the most memory it had allocated at once beyond what was
/// allocated before it started.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

const MIB: usize = 1 << 20;
const HEADER_LEN: usize = 50 + 3 + 60 + 32;

fn small() -> (Vec<u8>, zseal::Passphrase) {
    let pw = common::pass("hostile");
    let c = common::seal(
        &common::data(5000),
        &pw,
        &EncryptOptions::default().chunk_size(1024),
        3,
    );
    (c, pw)
}

fn open(c: &[u8], pw: &zseal::Passphrase) -> zseal::Result<u64> {
    Decryptor::new(c, &[pw], &DecryptOptions::default().threads(2))?.copy_to(&mut std::io::sink())
}

#[test]
fn a_frame_declaring_4_gib_is_refused_without_allocating_it() {
    let _g = SERIAL.lock().unwrap();
    let (mut c, pw) = small();
    c[HEADER_LEN + 1..HEADER_LEN + 5].copy_from_slice(&u32::MAX.to_le_bytes());
    let (r, peak) = peak_of(|| open(&c, &pw));
    assert!(matches!(r, Err(Error::Damaged(_))), "{r:?}");
    assert!(peak < MIB, "allocated {peak} bytes");
}

#[test]
fn argon2_costs_over_the_cap_are_refused_before_any_work() {
    let _g = SERIAL.lock().unwrap();
    let (c, pw) = small();
    let m_at = 50 + 3 + 16;
    for (at, value) in [
        (m_at, 4u32 << 20),
        (m_at, u32::MAX),
        (m_at + 4, 1000),
        (m_at + 8, 1000),
    ] {
        let mut bad = c.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let (r, peak) = peak_of(|| open(&bad, &pw));
        assert!(matches!(r, Err(Error::Limit(_))), "{r:?}");
        assert!(peak < MIB, "Argon2 ran: {peak} bytes allocated");
    }
}

#[test]
fn an_oversized_header_is_refused_within_its_1_mib_bound() {
    let _g = SERIAL.lock().unwrap();
    let (c, _) = small();
    let mut h = c[..48].to_vec();
    h.extend_from_slice(&1024u16.to_le_bytes());
    for _ in 0..1024 {
        h.push(9);
        h.extend_from_slice(&8192u16.to_le_bytes());
        h.extend(std::iter::repeat_n(0u8, 8192));
    }
    let (r, peak) = peak_of(|| zseal::format::Header::read(&mut &h[..]).map(|_| ()));
    assert!(matches!(r, Err(Error::InvalidHeader(_))), "{r:?}");
    assert!(peak < 4 * MIB, "allocated {peak} bytes for a header");
}

#[test]
fn a_lying_footer_is_refused_before_reading_an_index_it_claims() {
    let _g = SERIAL.lock().unwrap();
    let (mut c, pw) = small();
    let n = c.len();
    c[n - 16..n - 8].copy_from_slice(&u64::from(u32::MAX).to_le_bytes());
    let (r, peak) = peak_of(|| {
        Decryptor::new(Cursor::new(&c[..]), &[&pw], &DecryptOptions::default())?.plaintext_len()
    });
    assert!(matches!(r, Err(Error::Damaged(_))), "{r:?}");
    assert!(peak < MIB, "allocated {peak} bytes");
}

#[test]
fn a_million_tiny_chunks_stream_in_constant_memory() {
    let _g = SERIAL.lock().unwrap();
    // 1 GiB of zeros in 1 KiB chunks: each compresses to a handful of bytes, so the container is
    // mostly per-chunk overhead, the shape a hostile file would use to make a reader keep state.
    let n = 1 << 20;
    let pw = common::pass("hostile");
    let opts = EncryptOptions::default()
        .codec(Codec::Lz4)
        .hash(HashAlg::Blake3)
        .chunk_size(1024)
        .threads(2);
    let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(n / 1024) {
        std::io::Write::write_all(&mut enc, &zeros).unwrap();
    }
    let c = enc.finish().unwrap();
    assert!(c.len() > n * 25, "{} bytes for {n} chunks", c.len());
    // Streaming: per-chunk state must not grow with the chunk count.
    let (r, peak) = peak_of(|| open(&c, &pw));
    assert_eq!(r.unwrap(), (n * 1024) as u64);
    assert!(
        peak < MIB,
        "streaming decrypt of {n} chunks allocated {peak} bytes at once"
    );
    // Seeking: the index of offsets is 8 bytes a chunk, bounded by the file's own size.
    let (r, peak) = peak_of(|| {
        let mut d = Decryptor::new(
            Cursor::new(&c[..]),
            &[&pw],
            &DecryptOptions::default().threads(2),
        )?;
        d.copy_range_to(512 << 20, Some((512 << 20) + 10), &mut std::io::sink())
    });
    assert_eq!(r.unwrap(), 10);
    assert!(peak < 8 * n + 2 * MIB, "range read allocated {peak} bytes");
}

/// Hands out one byte per read, and only the first `limit` bytes.
struct Dribble<'a>(&'a [u8]);
impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn deeply_truncated_streams_end_in_an_error_not_a_hang() {
    let _g = SERIAL.lock().unwrap();
    let (c, pw) = small();
    for cut in [
        HEADER_LEN,
        HEADER_LEN + 3,
        c.len() / 2,
        c.len() - 17,
        c.len() - 1,
    ] {
        let r = Decryptor::new(
            Dribble(&c[..cut]),
            &[&pw],
            &DecryptOptions::default().threads(2),
        )
        .and_then(|mut d| d.copy_to(&mut std::io::sink()));
        assert!(matches!(r, Err(Error::Truncated(_))), "cut at {cut}: {r:?}");
    }
}

/// The memory of a stream is its chunks in flight (`threads + 2` of them, each with an input and
/// an output buffer of about a chunk) plus a codec context per worker, whatever the input size:
/// 64 MiB through 1 MiB chunks on 2 threads, each way, stays under 8 buffers and 2 contexts of
/// 3 MiB (measured here: 10.0 to 11.1 MiB encrypting, 9.0 MiB decrypting).
#[test]
fn a_stream_holds_its_chunks_in_flight_and_no_more() {
    let _g = SERIAL.lock().unwrap();
    let pw = common::pass("hostile");
    let c = MIB;
    let (text, noise) = (common::data(4 * c), common::noise(4 * c, 5));
    let bound = (2 + 2) * 2 * (c + c / 64) + 2 * 3 * MIB;
    for codec in [Codec::Zstd(3), Codec::Lz4] {
        let opts = EncryptOptions::default()
            .codec(codec)
            .chunk_size(c)
            .threads(2);
        // Both frame kinds: compressed text and random chunks stored raw.
        let seal = |w: &mut dyn std::io::Write| {
            let mut enc = Encryptor::new(w, &[&pw], &opts).unwrap();
            for i in 0..16 {
                let piece = if i % 3 == 1 { &noise } else { &text };
                std::io::Write::write_all(&mut enc, piece).unwrap();
            }
            enc.finish().unwrap();
        };
        let ((), enc_peak) = peak_of(|| seal(&mut std::io::sink()));
        let mut whole = Vec::new();
        seal(&mut whole);
        let (r, dec_peak) = peak_of(|| {
            Decryptor::new(&whole[..], &[&pw], &DecryptOptions::default().threads(2))?
                .copy_to(&mut std::io::sink())
        });
        assert_eq!(r.unwrap(), 64 * c as u64);
        assert!(
            enc_peak < bound,
            "{codec}: encrypting held {enc_peak} bytes"
        );
        assert!(
            dec_peak < bound,
            "{codec}: decrypting held {dec_peak} bytes"
        );
    }
}
