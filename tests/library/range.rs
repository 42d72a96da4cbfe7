//! Random access: byte ranges at chunk boundaries through the seekable and the streaming paths,
//! `Seek`, a damaged index or trailer, and proof that a range reads only what it needs.

use crate::common;

use std::io::{Cursor, Read, Seek, SeekFrom};

use common::*;
use zseal::{DecryptOptions, Decryptor, EncryptOptions, Error, Passphrase};

const C: usize = 1024;

fn fixture() -> (Vec<u8>, Vec<u8>, Passphrase) {
    sample("range", 10 * C + 300, C, 5)
}

fn points(len: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        C - 1,
        C,
        C + 1,
        5 * C - 1,
        5 * C,
        5 * C + 1,
        len - 1,
        len,
    ];
    v.dedup();
    v
}

/// `plain` sealed under `pw` in chunks of `C` bytes.
fn seal_in_chunks(plain: &[u8], pw: &Passphrase) -> Vec<u8> {
    seal(
        plain,
        pw,
        &EncryptOptions::default().chunk_size(C).threads(2),
        8,
    )
}

fn dec<'a>(c: &'a [u8], pw: &Passphrase, threads: usize) -> Decryptor<Cursor<&'a [u8]>> {
    Decryptor::new(
        Cursor::new(c),
        &[pw],
        &DecryptOptions::default().threads(threads),
    )
    .unwrap()
}

#[test]
fn every_boundary_range_matches_the_plaintext_both_ways() {
    let (plain, sealed, pw) = fixture();
    let len = plain.len();
    for threads in [1, 2] {
        for &s in &points(len) {
            for e in points(len)
                .into_iter()
                .filter(|&e| e >= s)
                .map(Some)
                .chain([None])
            {
                let want = &plain[s..e.unwrap_or(len)];
                let mut out = Vec::new();
                let n = dec(&sealed, &pw, threads)
                    .copy_range_to(s as u64, e.map(|e| e as u64), &mut out)
                    .unwrap();
                assert!(
                    n as usize == want.len() && out == want,
                    "seek {s}..{e:?} j{threads}: got {} bytes, want {}, first diff at {:?}",
                    out.len(),
                    want.len(),
                    out.iter().zip(want).position(|(a, b)| a != b)
                );
                let mut out = Vec::new();
                let mut d = Decryptor::new(
                    &sealed[..],
                    &[&pw],
                    &DecryptOptions::default().threads(threads),
                )
                .unwrap();
                d.copy_range_streaming(s as u64, e.map(|e| e as u64), &mut out)
                    .unwrap_or_else(|err| panic!("stream {s}..{e:?}: {err}"));
                assert!(out == want, "stream {s}..{e:?} j{threads}");
            }
        }
    }
}

#[test]
fn ranges_past_the_end_name_the_real_length() {
    let (plain, sealed, pw) = fixture();
    let len = plain.len() as u64;
    let e = dec(&sealed, &pw, 2)
        .copy_range_to(len + 1, None, &mut Vec::new())
        .unwrap_err();
    assert!(
        matches!(e, Error::RangePastEnd { what: "starts", len: l, .. } if l == len),
        "{e}"
    );
    let mut out = Vec::new();
    let e = dec(&sealed, &pw, 2)
        .copy_range_to(10, Some(len + 5), &mut out)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the range ends at byte {}, past the end of the plaintext ({len} bytes)",
            len + 5
        )
    );
    assert!(out.is_empty(), "nothing is written before the check");
    for (s, e) in [(len + 1, None), (len + 100_000, None), (10, Some(len + 5))] {
        let mut d = Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default()).unwrap();
        let err = d.copy_range_streaming(s, e, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(err, Error::RangePastEnd { len: l, .. } if l == len),
            "{s}..{e:?}: {err}"
        );
    }
    // Past the end after the short last chunk: the skipped frames include the last data frame,
    // whose length only the final frame tells (FORMAT.md §6). With 1 KiB chunks, a file of
    // 3 chunks and 7 bytes and one of exactly 3 chunks; at the very end a range is empty.
    let opts = EncryptOptions::default().chunk_size(1024);
    let plain = data(3 * 1024 + 7);
    let c = seal(&plain, &pw, &opts, 2);
    let len = plain.len() as u64;
    for (file, len) in [
        (&c, len),
        (&seal(&plain[..3 * 1024], &pw, &opts, 3), 3 * 1024),
    ] {
        for start in [len + 1, 4 * 1024, 4 * 1024 + 500, 9 * 1024] {
            let e = Decryptor::new(&file[..], &[&pw], &DecryptOptions::default())
                .and_then(|mut d| d.copy_range_streaming(start, None, &mut Vec::new()))
                .unwrap_err();
            assert!(
                matches!(e, Error::RangePastEnd { at, len: l, .. } if at == start && l == len),
                "{len} from {start}: {e:?}"
            );
        }
        let mut d = Decryptor::new(&file[..], &[&pw], &DecryptOptions::default()).unwrap();
        assert_eq!(
            d.copy_range_streaming(len, None, &mut Vec::new()).unwrap(),
            0
        );
    }
}

#[test]
fn seek_trait_reads_what_a_slice_holds() {
    let (plain, sealed, pw) = fixture();
    let mut d = dec(&sealed, &pw, 2);
    let mut buf = [0u8; 100];
    for (to, at) in [
        (SeekFrom::Start(5000), 5000usize),
        (SeekFrom::Current(-2000), 3100),
        (SeekFrom::End(-100), plain.len() - 100),
        (SeekFrom::Start(1020), 1020),
    ] {
        assert_eq!(d.seek(to).unwrap(), at as u64);
        d.read_exact(&mut buf).unwrap();
        assert_eq!(&buf[..], &plain[at..at + 100], "{to:?}");
    }
    d.seek(SeekFrom::End(0)).unwrap();
    assert_eq!(d.read(&mut buf).unwrap(), 0);
    assert!(d
        .seek(SeekFrom::Current(-(plain.len() as i64) - 1))
        .is_err());
}

#[test]
fn reading_everything_after_a_seek_to_zero_checks_the_digest() {
    let (plain, sealed, pw) = fixture();
    let mut d = dec(&sealed, &pw, 2);
    d.seek(SeekFrom::Start(777)).unwrap();
    d.seek(SeekFrom::Start(0)).unwrap();
    let mut out = Vec::new();
    d.copy_to(&mut out).unwrap();
    assert_eq!(out, plain);
    assert_eq!(
        d.digest_hex().unwrap(),
        blake3::hash(&plain).to_hex().to_string()
    );
    let mut d = dec(&sealed, &pw, 2);
    d.copy_range_to(1, None, &mut Vec::new()).unwrap();
    assert_eq!(
        d.digest_hex(),
        None,
        "a range does not claim the whole-file digest"
    );
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: u64,
}
impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}
impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(to)
    }
}

/// A decryptor over `sealed` that counts the container bytes it reads.
fn counting<'a>(
    sealed: &'a [u8],
    pw: &Passphrase,
    threads: usize,
) -> Decryptor<Counting<Cursor<&'a [u8]>>> {
    Decryptor::new(
        Counting {
            inner: Cursor::new(sealed),
            read: 0,
        },
        &[pw],
        &DecryptOptions::default().threads(threads),
    )
    .unwrap()
}

#[test]
fn a_range_reads_only_the_frames_it_needs() {
    let pw = pass("range");
    let plain = noise(64 * C, 3); // raw chunks: each frame is C + 21 bytes
    let sealed = seal_in_chunks(&plain, &pw);
    let mut d = counting(&sealed, &pw, 2);
    let header = d.header_len();
    let mut out = Vec::new();
    d.copy_range_to(30 * C as u64 + 10, Some(31 * C as u64 + 10), &mut out)
        .unwrap();
    assert_eq!(out, &plain[30 * C + 10..31 * C + 10]);
    let trailer = 101 + 64 * 4 + 16;
    let two_frames = 2 * (C as u64 + 21);
    let read = d.into_inner().read;
    assert!(
        read <= header + trailer + two_frames,
        "read {read} bytes for a 1 KiB range"
    );
}

/// What a random-access front end (the Python file object) does: seek, limit the read-ahead to
/// the request, read. Only the frames under the request are fetched, whatever the window size.
#[test]
fn a_limited_read_ahead_fetches_only_the_requested_frames() {
    let pw = pass("range");
    let plain = noise(64 * C, 4);
    let sealed = seal_in_chunks(&plain, &pw);
    let frame = C as u64 + 21;
    let trailer = 101 + 64 * 4 + 16;
    for (threads, limited) in [(1, true), (4, true), (4, false)] {
        let mut d = counting(&sealed, &pw, threads);
        let at = 20 * C as u64;
        d.seek(SeekFrom::Start(at)).unwrap();
        if limited {
            d.limit_read_ahead(Some(at + 2 * C as u64)).unwrap();
        }
        let mut out = vec![0u8; 2 * C];
        d.read_exact(&mut out).unwrap();
        assert_eq!(out, &plain[20 * C..22 * C]);
        let payload = d.into_inner().read - 16 - trailer;
        let header_frames = payload / frame; // the header is under one frame long
                                             // A read of whole chunks is served straight into the caller's buffer, which reads the
                                             // frames it covers and no more, limited or not.
        assert_eq!(header_frames, 2, "threads {threads}: read {payload} bytes");
        // A read of part of a chunk goes through the window, which reads ahead unless limited.
        let mut d = counting(&sealed, &pw, threads);
        d.seek(SeekFrom::Start(at + 10)).unwrap();
        if limited {
            d.limit_read_ahead(Some(at + 110)).unwrap();
        }
        let mut out = vec![0u8; 100];
        d.read_exact(&mut out).unwrap();
        assert_eq!(out, &plain[at as usize + 10..at as usize + 110]);
        let payload = d.into_inner().read - 16 - trailer;
        let header_frames = payload / frame;
        if limited || threads == 1 {
            assert_eq!(header_frames, 1, "threads {threads}: read {payload} bytes");
        } else {
            assert!(header_frames > 2, "the window reads ahead without a limit");
        }
    }
    // Raising the limit again continues where the stream stopped, to a verified end.
    let mut d = dec(&sealed, &pw, 2);
    d.seek(SeekFrom::Start(0)).unwrap();
    d.limit_read_ahead(Some(1)).unwrap();
    let mut first = [0u8; 1];
    d.read_exact(&mut first).unwrap();
    d.limit_read_ahead(None).unwrap();
    let mut rest = Vec::new();
    d.read_to_end(&mut rest).unwrap();
    assert_eq!([&first[..], &rest[..]].concat(), plain);
    assert!(
        d.verified().is_some(),
        "every chunk from the first was read"
    );
}

/// A seek inside the current chunk keeps the chunk and the frames read ahead; `BufRead` serves
/// lines from the chunk in place.
#[test]
fn seeks_inside_a_chunk_and_buffered_lines() {
    use std::io::BufRead;
    let pw = pass("range");
    let text: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let sealed = seal(
        &text,
        &pw,
        &EncryptOptions::default().chunk_size(C).threads(2),
        9,
    );
    let mut d = counting(&sealed, &pw, 1);
    let mut b = [0u8; 100];
    d.read_exact(&mut b).unwrap();
    let before = d.get_ref().read;
    for to in [10u64, 99, 0, 500, C as u64 - 1] {
        d.seek(SeekFrom::Start(to)).unwrap();
        let mut one = [0u8; 1];
        d.read_exact(&mut one).unwrap();
        assert_eq!(one[0], text[to as usize], "at {to}");
    }
    assert_eq!(
        d.get_ref().read,
        before,
        "no frame fetched for seeks inside the chunk"
    );
    d.seek(SeekFrom::Start(0)).unwrap();
    let lines: Vec<String> = d.lines().collect::<Result<_, _>>().unwrap();
    assert_eq!(lines.len(), 2000);
    assert_eq!(lines[1999], "line 1999");
}

#[test]
fn damage_outside_a_range_does_not_matter_inside_it_does() {
    let (plain, mut sealed, pw) = fixture();
    // Flip a byte in the last data chunk's body (just before the final frame, index and footer).
    let tail = 101 + 11 * 4 + 16;
    let at = sealed.len() - tail - 30;
    sealed[at] ^= 1;
    let mut out = Vec::new();
    dec(&sealed, &pw, 2)
        .copy_range_to(0, Some(2000), &mut out)
        .unwrap();
    assert_eq!(out, &plain[..2000]);
    let e = dec(&sealed, &pw, 2)
        .copy_range_to(plain.len() as u64 - 10, None, &mut Vec::new())
        .unwrap_err();
    assert!(matches!(e, Error::ChunkAuth(10)), "{e}");
}

#[test]
fn damaged_index_final_frame_or_footer_is_rejected() {
    let (_, sealed, pw) = fixture();
    let n = 11;
    let footer = sealed.len() - 16;
    let index = footer - 4 * n;
    let fin = index - 101;
    for (what, at) in [
        ("index entry", index + 5),
        ("final frame body", fin + 40),
        ("final frame kind", fin),
        ("footer count", footer),
        ("footer magic", footer + 12),
    ] {
        let mut c = sealed.clone();
        c[at] ^= 1;
        let e = dec(&c, &pw, 2)
            .copy_range_to(10, Some(20), &mut Vec::new())
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("damaged") || msg.contains("authentication") || msg.contains("truncated"),
            "{what}: {msg}"
        );
    }
    // Issue 48, point 6: a file cut short is "truncated" (fetch it again), as a whole read
    // says, not "damaged".
    let e = dec(&sealed[..sealed.len() - 1], &pw, 2)
        .plaintext_len()
        .unwrap_err();
    assert!(matches!(e, Error::Truncated(_)), "{e}");
    assert!(e.to_string().contains("fetch it again"), "{e}");
}

/// Issue 48, point 6: a seekable range read the end of the file first and called a copy cut
/// short "damaged: the footer's end magic is wrong", where a whole read said "truncated". Cut at
/// every offset, a range at the start, one in the middle, `plaintext_len` and a whole read all
/// fail as `Truncated`, with nothing of the range released.
#[test]
fn a_cut_file_is_truncated_for_every_range_at_every_cut() {
    let (_, sealed, pw) = fixture();
    let opts = DecryptOptions::default().threads(2);
    for n in 0..sealed.len() {
        let cut = &sealed[..n];
        let open = || Decryptor::new(Cursor::new(cut), &[&pw], &opts);
        let d = match open() {
            Err(e) => {
                assert!(matches!(e, Error::Truncated(_)), "cut at {n}: {e}");
                continue;
            }
            Ok(d) => d,
        };
        let mut out = Vec::new();
        let e = open()
            .unwrap()
            .copy_range_to(0, Some(10), &mut out)
            .unwrap_err();
        assert!(matches!(e, Error::Truncated(_)), "cut at {n}, start: {e}");
        let e = open()
            .unwrap()
            .copy_range_to(3 * C as u64 + 7, Some(5 * C as u64), &mut out)
            .unwrap_err();
        assert!(matches!(e, Error::Truncated(_)), "cut at {n}, middle: {e}");
        assert!(out.is_empty(), "cut at {n}: {} bytes released", out.len());
        let e = open().unwrap().plaintext_len().unwrap_err();
        assert!(matches!(e, Error::Truncated(_)), "cut at {n}, length: {e}");
        let e = { d }.copy_to(&mut std::io::sink()).unwrap_err();
        assert!(matches!(e, Error::Truncated(_)), "cut at {n}, whole: {e}");
    }
}

/// A range streamed from a pipe that reaches the last chunk must check the trailer as a full read
/// does: a damaged footer, index or final frame, or bytes after the footer, fail it. A range that
/// ends earlier reads nothing after its last chunk and is unaffected.
#[test]
fn a_piped_range_that_reaches_the_end_checks_the_trailer() {
    let (plain, sealed, pw) = fixture();
    let len = plain.len() as u64;
    let n = 11;
    let footer = sealed.len() - 16;
    let index = footer - 4 * n;
    let fin = index - 101;
    let mut damaged: Vec<(&str, Vec<u8>)> = [
        ("footer chunk count", footer),
        ("footer magic", footer + 12),
        ("index entry", index + 5),
        ("final frame body", fin + 40),
    ]
    .into_iter()
    .map(|(what, at)| {
        let mut c = sealed.clone();
        c[at] ^= 1;
        (what, c)
    })
    .collect();
    let mut trailing = sealed.clone();
    trailing.push(0);
    damaged.push(("a byte after the footer", trailing));
    damaged.push(("no trailer at all", sealed[..fin].to_vec()));
    for (what, c) in &damaged {
        for (s, e) in [(len - 10, Some(len)), (5000, Some(len - 1)), (3, None)] {
            for threads in [1, 2] {
                let mut d =
                    Decryptor::new(&c[..], &[&pw], &DecryptOptions::default().threads(threads))
                        .unwrap();
                let r = d.copy_range_streaming(s, e, &mut Vec::new());
                assert!(r.is_err(), "{what}, range {s}..{e:?}: accepted");
            }
        }
        // Ending before the last chunk: nothing of the trailer is read, so nothing to reject.
        let mut out = Vec::new();
        let mut d = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default()).unwrap();
        d.copy_range_streaming(100, Some(3000), &mut out).unwrap();
        assert_eq!(out, &plain[100..3000], "{what}");
    }
    // Intact, the same ranges pass.
    let mut out = Vec::new();
    let mut d = Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default()).unwrap();
    d.copy_range_streaming(len - 10, Some(len), &mut out)
        .unwrap();
    assert_eq!(out, &plain[plain.len() - 10..]);
}

#[test]
fn cli_piped_range_to_the_end_rejects_a_damaged_footer() {
    let (plain, mut sealed, _) = fixture();
    let footer = sealed.len() - 16;
    sealed[footer] ^= 1;
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "range\n").unwrap();
    let range = format!("{}..{}", plain.len() - 100, plain.len());
    let out = assert_cmd::Command::cargo_bin("zseal")
        .unwrap()
        .args(["decrypt", "--range", &range, "--passphrase-file"])
        .arg(&pw)
        .write_stdin(sealed)
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("footer"), "{err}");
}

/// Past 2^15 frames the seekable reader keeps one offset per block of frames and reads a block of
/// the index back for a seek inside it: every seek must still land on the right byte.
#[test]
fn seeks_into_a_file_of_many_frames_land_on_the_right_byte() {
    let pw = pass("many");
    let plain = data((2 << 15) * C + 3 * C + 17); // 65,540 frames: blocks of 2 frames
    let opts = EncryptOptions::default()
        .chunk_size(C)
        .codec(zseal::Codec::None)
        .threads(2);
    let sealed = seal(&plain, &pw, &opts, 9);
    let mut d = dec(&sealed, &pw, 2);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x % plain.len() as u64) as usize;
        let mut buf = [0u8; 40];
        d.seek(SeekFrom::Start(at as u64)).unwrap();
        let got = d.read(&mut buf).unwrap();
        assert!(got > 0);
        assert_eq!(&buf[..got], &plain[at..at + got], "at {at}");
    }
}

/// fsspec's read_block seeks to a block's start, reads a little, seeks to the block's end, reads
/// a little, and seeks back to the start: the chunk left by a seek is kept, so coming back to it
/// reads no container byte and decrypts nothing; everything read is still the plaintext.
#[test]
fn coming_back_to_the_chunk_just_left_reads_nothing_again() {
    let (plain, sealed, pw) = fixture();
    for threads in [1, 2] {
        let mut d = counting(&sealed, &pw, threads);
        let got = |d: &mut Decryptor<_>, at: u64, n: usize| {
            d.seek(SeekFrom::Start(at)).unwrap();
            let mut buf = vec![0u8; n];
            d.read_exact(&mut buf).unwrap();
            assert_eq!(buf, &plain[at as usize..at as usize + n], "at {at}");
        };
        got(&mut d, 2100, 100);
        got(&mut d, 7000, 100);
        let before = d.get_ref().read;
        got(&mut d, 2050, 50);
        assert_eq!(d.get_ref().read, before, "chunk 2 was read again");
        // On from there, across the chunk left meanwhile, to the end.
        let mut rest = Vec::new();
        d.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &plain[2100..]);
        // Chunk 0 is not taken from the kept chunk: a read from byte 0 checks the digest.
        got(&mut d, 10, 10);
        got(&mut d, 5000, 10);
        d.seek(SeekFrom::Start(0)).unwrap();
        let mut all = Vec::new();
        d.read_to_end(&mut all).unwrap();
        assert_eq!(all, plain);
        assert!(d.verified().is_some());
    }
}

/// Reads that cover whole chunks are decrypted straight into the caller's buffer, the chunks at
/// either end through the stream's own buffers. Whatever the alignment, the buffer size and the
/// thread count, what comes back is the plaintext, and a read from the first byte to the end
/// verifies the whole-plaintext digest.
#[test]
fn reads_of_every_alignment_and_size_match_the_plaintext() {
    let pw = pass("range");
    // Compressed and raw chunks (both ways a chunk is stored), and a short last chunk.
    let mut plain = data(20 * C);
    plain.extend(noise(12 * C + 300, 9));
    let sealed = seal_in_chunks(&plain, &pw);
    let len = plain.len();
    for threads in [1, 2, 4] {
        for size in [C, 2 * C, 2 * C + 1, 3 * C - 7, 7 * C, len, len + 5] {
            let mut seekable = dec(&sealed, &pw, threads);
            seekable.seek(SeekFrom::Start(0)).unwrap();
            let mut stream = Decryptor::new(
                &sealed[..],
                &[&pw],
                &DecryptOptions::default().threads(threads),
            )
            .unwrap();
            let streamed = read_all(&mut stream, size);
            assert!(streamed == plain, "stream j{threads} reads of {size}");
            assert!(stream.verified().is_some(), "j{threads} {size}: digest");
            let read = read_all(&mut seekable, size);
            assert!(read == plain, "seekable j{threads} reads of {size}");
            assert!(seekable.verified().is_some(), "j{threads} {size}: digest");
        }
        let mut d = dec(&sealed, &pw, threads);
        let fixed = [
            (0, 3 * C),
            (1, 2 * C),
            (C - 1, C + 1),
            (C, C),
            (5 * C + 3, 10 * C),
            (19 * C + 10, 5 * C),
            (len - 2 * C - 1, 2 * C + 1),
            (7 * C, len - 7 * C),
        ];
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let random = (0..200).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let s = (x % len as u64) as usize;
            (s, ((x >> 32) as usize % (6 * C)).min(len - s))
        });
        for (s, n) in fixed.into_iter().chain(random) {
            d.seek(SeekFrom::Start(s as u64)).unwrap();
            let mut out = vec![0u8; n];
            d.read_exact(&mut out).unwrap();
            assert!(out == plain[s..s + n], "j{threads}: {n} bytes at {s}");
        }
    }
}

fn read_all(r: &mut impl Read, size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; size];
    loop {
        match r.read(&mut buf).unwrap() {
            0 => return out,
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// A chunk that fails inside a read of many chunks: the read returns the chunks before it (the
/// rest of the caller's buffer zeroed, nothing of the failing chunk or after it), and the next
/// read fails naming it, on every thread count, as a read chunk by chunk does.
#[test]
fn a_damaged_chunk_inside_a_large_read_returns_what_precedes_it_then_fails() {
    let (plain, mut sealed, pw) = fixture();
    let header = dec(&sealed, &pw, 1).header_len() as usize;
    let (at, flen) = common::frames(&sealed, header)[4];
    sealed[at + flen / 2] ^= 1;
    for threads in [1, 2, 4] {
        for (start, size) in [(0, 8 * C), (C / 2, 8 * C), (3 * C, 2 * C), (4 * C, 3 * C)] {
            let mut d = dec(&sealed, &pw, threads);
            d.seek(SeekFrom::Start(start as u64)).unwrap();
            let mut buf = vec![0xa5u8; size];
            let before = 4 * C - start;
            let failed = match d.read(&mut buf) {
                Ok(n) => {
                    assert_eq!(n, before, "j{threads} at {start}");
                    assert!(buf[..n] == plain[start..4 * C], "j{threads} at {start}");
                    assert!(buf[n..].iter().all(|&b| b == 0), "j{threads}: not zeroed");
                    d.read(&mut buf).unwrap_err()
                }
                Err(e) => {
                    assert_eq!(before, 0, "j{threads} at {start}: {e}");
                    // The chunks after the failing one were opened too: none of them is left.
                    assert!(buf.iter().all(|&b| b == 0), "j{threads}: not zeroed");
                    e
                }
            };
            let e = Error::from(failed);
            assert!(
                matches!(e, Error::ChunkAuth(4)),
                "j{threads} at {start}: {e}"
            );
            let again = Error::from(d.read(&mut buf).unwrap_err());
            assert!(matches!(again, Error::ChunkAuth(4)), "sticky: {again}");
        }
    }
}

/// After a read straight into the caller's buffer, the chunk that was current before it is not
/// current any more: a seek back into it decrypts it again, rather than continuing from it into
/// the frames the large read already went past.
#[test]
fn a_seek_back_after_a_large_read_lands_on_the_right_bytes() {
    let (plain, sealed, pw) = fixture();
    for threads in [1, 2] {
        let mut d = dec(&sealed, &pw, threads);
        let mut small = [0u8; 10];
        d.read_exact(&mut small).unwrap();
        // To the end of chunk 5: no chunk is left over to become current.
        let mut big = vec![0u8; 6 * C - 10];
        d.read_exact(&mut big).unwrap();
        assert!(big == plain[10..6 * C]);
        d.seek(SeekFrom::Start(5)).unwrap();
        let mut out = vec![0u8; 3 * C];
        d.read_exact(&mut out).unwrap();
        assert!(out == plain[5..3 * C + 5], "j{threads}");
    }
}

/// The chunk a large read ends inside stays current: the next read continues from it without
/// fetching or decrypting a frame.
#[test]
fn the_chunk_a_large_read_ends_in_serves_the_next_read() {
    let pw = pass("range");
    let plain = noise(16 * C, 6);
    let sealed = seal_in_chunks(&plain, &pw);
    for threads in [1, 2] {
        let mut d = counting(&sealed, &pw, threads);
        d.seek(SeekFrom::Start(10)).unwrap();
        let mut out = vec![0u8; 3 * C];
        d.read_exact(&mut out).unwrap();
        assert!(out == plain[10..3 * C + 10]);
        let read = d.get_ref().read;
        let mut more = vec![0u8; C - 20];
        d.read_exact(&mut more).unwrap();
        assert!(more == plain[3 * C + 10..4 * C - 10]);
        assert_eq!(d.get_ref().read, read, "j{threads}: fetched again");
    }
}

/// fsspec's `read_block(f, offset, length, b"\n")`, which Dask runs once per partition: seek to
/// the block's start and read a little (to a delimiter), seek to its end and read a little,
/// seek back to the start and read the block. Every chunk the block touches is decrypted once:
/// the one at the end, looked at before the read, is kept by the seek back and not decrypted a
/// second time by the read that ends in it. (A block that starts in chunk 0 computes the digest
/// from there, and a kept chunk has no hash: it decrypts its last chunk twice.)
#[test]
fn a_block_read_the_way_fsspec_does_decrypts_each_chunk_once() {
    let pw = pass("range");
    let plain = data(40 * C);
    let sealed = seal_in_chunks(&plain, &pw);
    for threads in [1, 2] {
        for (start, end) in [
            (3 * C + 100, 9 * C + 50),
            (C, 5 * C + 1),
            (C + 10, 3 * C + 10),
        ] {
            let mut d = dec(&sealed, &pw, threads);
            d.seek(SeekFrom::Start(start as u64)).unwrap();
            d.limit_read_ahead(Some(start as u64 + 64)).unwrap();
            let mut peek = [0u8; 64];
            d.read_exact(&mut peek).unwrap();
            d.seek(SeekFrom::Start(end as u64)).unwrap();
            d.limit_read_ahead(Some(end as u64 + 64)).unwrap();
            d.read_exact(&mut peek).unwrap();
            d.seek(SeekFrom::Start(start as u64)).unwrap();
            d.limit_read_ahead(Some(end as u64)).unwrap();
            let mut block = vec![0u8; end - start];
            d.read_exact(&mut block).unwrap();
            assert!(block == plain[start..end], "j{threads} {start}..{end}");
            let touched = (end as u64).div_ceil(C as u64) - start as u64 / C as u64;
            assert_eq!(
                d.stats().frames_opened,
                touched,
                "j{threads} {start}..{end}: chunks decrypted"
            );
        }
    }
}

/// A read that covers exactly the chunks it needs, from a chunk boundary or from inside one, is
/// served without any read-ahead: the frames fetched are those chunks and no more, even with the
/// window unlimited. At the end of the file a large buffer returns what is left.
#[test]
fn a_read_of_exactly_its_chunks_fetches_nothing_more() {
    let pw = pass("range");
    let plain = noise(16 * C + 300, 7);
    let sealed = seal_in_chunks(&plain, &pw);
    let frame = C as u64 + 21;
    let trailer = 101 + 17 * 4 + 16;
    for (at, n, frames) in [(4 * C, C, 1), (4 * C + 10, 2 * C - 10, 2)] {
        let mut d = counting(&sealed, &pw, 2);
        d.seek(SeekFrom::Start(at as u64)).unwrap();
        let mut out = vec![0u8; n];
        d.read_exact(&mut out).unwrap();
        assert!(out == plain[at..at + n], "{at}+{n}");
        let payload = d.into_inner().read - 16 - trailer;
        assert_eq!(payload / frame, frames, "{at}+{n}: read {payload} bytes");
    }
    // Two chunks in part and none whole: the window serves it, and reads ahead for what follows.
    let mut d = counting(&sealed, &pw, 2);
    d.seek(SeekFrom::Start(4 * C as u64 + 10)).unwrap();
    let mut out = vec![0u8; C + 500];
    d.read_exact(&mut out).unwrap();
    assert!(out == plain[4 * C + 10..5 * C + 510]);
    let payload = d.into_inner().read - 16 - trailer;
    assert!(payload / frame > 2, "read {payload} bytes: no read-ahead");
    for threads in [1, 2] {
        let mut d = dec(&sealed, &pw, threads);
        d.seek(SeekFrom::Start(16 * C as u64 + 10)).unwrap();
        let mut buf = vec![0u8; 3 * C];
        assert_eq!(d.read(&mut buf).unwrap(), 290, "j{threads}");
        assert!(buf[..290] == plain[16 * C + 10..]);
        assert_eq!(d.read(&mut buf).unwrap(), 0);
    }
}

/// The seekable reader finds the trailer from the file's length: an empty file is exactly its
/// header, final frame and footer, and is read; a byte less is cut before the final frame; a
/// footer that counts more index entries than the file has room for is refused as such.
#[test]
fn the_trailer_is_placed_by_the_file_length() {
    let pw = pass("pw");
    let opts = EncryptOptions::default().chunk_size(1024);
    let range = |c: &[u8], start, end| {
        let mut out = Vec::new();
        Decryptor::new(
            Cursor::new(c),
            &[&pw],
            &DecryptOptions::default().threads(2),
        )
        .and_then(|mut d| d.copy_range_to(start, end, &mut out))
        .map(|n| (n, out))
    };
    let empty = seal(b"", &pw, &opts, 1);
    assert_eq!(range(&empty, 0, None).unwrap(), (0, Vec::new()));
    assert_eq!(range(&empty, 0, Some(0)).unwrap(), (0, Vec::new()));
    let e = range(&empty[..empty.len() - 1], 0, None).unwrap_err();
    assert!(
        matches!(&e, Error::Truncated(m) if m.contains("before the final frame")),
        "{e:?}"
    );
    let plain = data(3 * 1024 + 7);
    let c = seal(&plain, &pw, &opts, 2);
    assert_eq!(range(&c, 1000, Some(2100)).unwrap().1, plain[1000..2100]);
    // A piped range skips the chunks before it unopened: one chunk in, one opened.
    let mut d = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default()).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        d.copy_range_streaming(2100, Some(2200), &mut out).unwrap(),
        100
    );
    assert_eq!(out, plain[2100..2200]);
    assert_eq!(d.stats().frames_opened, 1);
    let header_len = zseal::Locked::read(&c[..]).unwrap().header_len() as usize;
    // A streamed range needs a fresh decryptor: not one that has read (on one thread its
    // window is empty again), nor one that has failed before its first frame.
    let mut used = Decryptor::new(&c[..], &[&pw], &DecryptOptions::default().threads(1)).unwrap();
    used.read_exact(&mut [0u8; 10]).unwrap();
    let mut cut = Decryptor::new(&c[..header_len + 3], &[&pw], &DecryptOptions::default()).unwrap();
    assert!(cut.read(&mut [0u8; 10]).is_err());
    for mut d in [used, cut] {
        let e = d
            .copy_range_streaming(0, None, &mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("fresh decryptor"), "{e}");
    }
    // Room for index entries: the file less its header, final frame (101 bytes) and footer
    // (16). One entry more than that, or far more, is a lie.
    let room = (c.len() - header_len - 101 - 16) as u64 / 4;
    for claim in [room + 1, 1 << 30] {
        let mut lying = c.clone();
        let at = lying.len() - 16;
        lying[at..at + 8].copy_from_slice(&claim.to_le_bytes());
        let e = range(&lying, 1000, Some(2100)).unwrap_err();
        assert!(
            matches!(&e, Error::Damaged(m) if m.contains("more than the file holds")),
            "{claim}: {e:?}"
        );
    }
}

/// A download resumed after a kept part (docs/OBJECTS.md, "Resuming a download") writes the rest
/// and checks the kept part and the rest against the whole-plaintext digest, BLAKE3 and XXH3
/// alike: a kept part with one byte flipped fails it, at any resume point including the end; a
/// point inside a chunk is refused before anything is written.
#[test]
fn a_resumed_copy_checks_the_kept_part_with_the_rest() {
    let (plain, _, pw) = fixture();
    let len = plain.len();
    for hash in [zseal::HashAlg::Blake3, zseal::HashAlg::Xxh3] {
        let opts = EncryptOptions::default()
            .chunk_size(C)
            .threads(2)
            .hash(hash);
        let sealed = seal(&plain, &pw, &opts, 8);
        let reader = || {
            zseal::Sealed::read(Cursor::new(&sealed[..]))
                .unwrap()
                .unlock(&[&pw], &DecryptOptions::default().threads(2))
                .unwrap()
        };
        for from in [0, C, 5 * C, 10 * C] {
            let mut r = reader();
            assert_eq!(r.resume_unit(), C as u64);
            let mut out = Vec::new();
            let n = r.copy_resumed_to(from as u64, &plain[..from], &mut out);
            assert_eq!(n.unwrap(), (len - from) as u64, "{hash} from {from}");
            assert!(out == plain[from..], "{hash} from {from}");
            assert!(r.chunk_count().is_some(), "verified to the end");
            if from > 0 {
                let mut kept = plain[..from].to_vec();
                kept[from / 2] ^= 1;
                let err = reader()
                    .copy_resumed_to(from as u64, &kept[..], &mut Vec::new())
                    .unwrap_err();
                assert!(matches!(err, Error::DigestMismatch), "{hash} {from}: {err}");
            }
        }
        let err = reader()
            .copy_resumed_to(C as u64 + 1, &plain[..C + 1], &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("whole chunk"), "{err}");
    }
}
