//! Pieced files (FORMAT.md §14): pieces sealed apart under keys of their own, in any order, and
//! the end that lists the ones kept, read back whole, by range and from a pipe; every way to
//! reorder, drop, duplicate, splice or cut pieces is refused; and no two attempts at one piece
//! share a key.

use crate::common;

use std::io::{Read, Seek, SeekFrom, Write};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{
    seal_piece_with_rng, Codec, DecryptOptions, Decryptor, EncryptOptions, HashAlg, RangeResult,
    SplitSeal, TaskKey, Threads,
};

const C: usize = 4096;

/// A pieced file: `plain` cut at `cuts` (plaintext offsets), each piece sealed apart (in
/// reverse order, on 1 to 3 threads, through the bytes a task would send back), then joined in
/// order. Returns the file and each piece's stored bytes and result.
fn pieced(
    plain: &[u8],
    cuts: &[usize],
    opts: &EncryptOptions,
    seed: u64,
) -> (Vec<u8>, Vec<(Vec<u8>, RangeResult)>) {
    let to = common::recipient("age.pub");
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (coordinator, header) = SplitSeal::pieced_with_rng(&[&to], opts, &mut rng).unwrap();
    let key = TaskKey::from_bytes(&coordinator.task_key().to_bytes()).unwrap();
    assert!(key.is_pieced());
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(plain.len());
    bounds.dedup();
    let mut pieces: Vec<(Vec<u8>, RangeResult)> = Vec::new();
    for k in (0..bounds.len() - 1).rev() {
        let (start, end) = (bounds[k], bounds[k + 1]);
        if start == end {
            continue;
        }
        let mut w = seal_piece_with_rng(
            &key,
            (start / C) as u64,
            (end - start) as u64,
            Vec::new(),
            Threads::Count(1 + k % 3),
            &mut rng,
        )
        .unwrap();
        w.write_all(&plain[start..end]).unwrap();
        let (bytes, result) = w.finish_range().unwrap();
        assert_eq!(result.stored_len(), bytes.len() as u64);
        let back = RangeResult::from_bytes(&result.to_bytes()).unwrap();
        assert_eq!(back, result);
        pieces.insert(0, (bytes, result));
    }
    let file = join(&coordinator, header, &pieces, &mut rng, plain);
    (file, pieces)
}

fn join(
    coordinator: &SplitSeal,
    header: Vec<u8>,
    pieces: &[(Vec<u8>, RangeResult)],
    rng: &mut ChaCha20Rng,
    plain: &[u8],
) -> Vec<u8> {
    let mut out = header;
    for (bytes, _) in pieces {
        out.extend_from_slice(bytes);
    }
    let results: Vec<RangeResult> = pieces.iter().map(|(_, r)| r.clone()).collect();
    let (out, digest) = coordinator
        .write_trailer_with_rng(&results, out, rng)
        .unwrap();
    if let Some(d) = digest {
        assert_eq!(
            d,
            blake3::hash(plain).to_hex().to_string(),
            "b3sum's digest"
        );
    }
    out
}

/// The whole plaintext, read from a pipe (no seeking) or a file (seeking first, as a range
/// reader does), on `threads`.
fn open(file: &[u8], threads: usize, seekable: bool) -> zseal::Result<Vec<u8>> {
    let id = common::identity("age.key");
    let opts = DecryptOptions::default().threads(threads);
    let mut out = Vec::new();
    if seekable {
        let mut dec = Decryptor::new(std::io::Cursor::new(file), &[&id], &opts)?;
        // As a range reader: the trailer and the table first, then the frames.
        dec.copy_range_to(0, None, &mut out)?;
    } else {
        let mut dec = Decryptor::new(file, &[&id], &opts)?;
        dec.copy_to(&mut out)?;
    }
    Ok(out)
}

fn opens_everywhere(file: &[u8], plain: &[u8], what: &str) {
    for (threads, seekable) in [(1, false), (3, false), (1, true), (3, true)] {
        let got = open(file, threads, seekable)
            .unwrap_or_else(|e| panic!("{what}: threads {threads}, seekable {seekable}: {e}"));
        assert!(
            got == plain,
            "{what}: threads {threads}, seekable {seekable}"
        );
    }
}

fn fails_everywhere(file: &[u8], what: &str) {
    for (threads, seekable) in [(1, false), (3, false), (1, true), (3, true)] {
        if open(file, threads, seekable).is_ok() {
            panic!("{what}: opened (threads {threads}, seekable {seekable})");
        }
    }
}

/// Pieces of one chunk, several chunks, a short last one; an empty plaintext (no piece); the
/// codecs and hashes; padding: every one opens whole from a pipe and from a file, and its digest
/// is b3sum's.
#[test]
fn pieces_sealed_apart_open_as_one_file() {
    let text = common::data(11 * C + 5);
    let cases: &[(&str, usize, &[usize])] = &[
        ("one piece", 3 * C + 1, &[]),
        ("one chunk per piece", 4 * C, &[C, 2 * C, 3 * C]),
        ("uneven pieces, short last", 11 * C + 5, &[C, 5 * C, 6 * C]),
        ("a short last piece of one byte", 2 * C + 1, &[2 * C]),
        ("whole chunks only", 6 * C, &[2 * C]),
        ("empty", 0, &[]),
    ];
    for (codec, hash, pad) in [
        (Codec::Zstd(3), HashAlg::Blake3, false),
        (Codec::None, HashAlg::None, false),
        (Codec::Lz4, HashAlg::Blake3, true),
    ] {
        let opts = EncryptOptions::default()
            .codec(codec)
            .hash(hash)
            .chunk_size(C)
            .pad(pad);
        for (what, len, cuts) in cases {
            let plain = &text[..*len];
            let (file, pieces) = pieced(plain, cuts, &opts, 7);
            let what = format!("{what} ({codec:?}, {hash:?}, padded {pad})");
            assert_eq!(pieces.len(), cuts.len() + usize::from(*len > 0), "{what}");
            opens_everywhere(&file, plain, &what);
        }
    }
}

/// Ranges of a pieced file read only what they need and give the bytes at their place: across a
/// piece's start, inside a piece, to the end.
#[test]
fn ranges_cross_pieces() {
    let plain = common::noise(9 * C + 100, 5);
    let opts = EncryptOptions::default().chunk_size(C);
    let (file, _) = pieced(&plain, &[2 * C, 3 * C, 7 * C], &opts, 9);
    let id = common::identity("age.key");
    let mut dec = Decryptor::new(
        std::io::Cursor::new(&file),
        &[&id],
        &DecryptOptions::default().threads(2),
    )
    .unwrap();
    for (start, len) in [
        (0, 10),
        (2 * C - 3, 7),
        (3 * C, C),
        (5 * C + 17, 3 * C),
        (9 * C, 100),
        (C, 8 * C + 100),
        (7 * C - 1, 2),
    ] {
        dec.seek(SeekFrom::Start(start as u64)).unwrap();
        let mut got = vec![0u8; len];
        dec.read_exact(&mut got).unwrap();
        assert!(got == plain[start..start + len], "range {start}+{len}");
    }
    // From a pipe, a range reads through the pieces before it.
    let mut dec = Decryptor::new(&file[..], &[&id], &DecryptOptions::default()).unwrap();
    let mut got = Vec::new();
    dec.copy_range_streaming(3 * C as u64 - 5, Some(6 * C as u64), &mut got)
        .unwrap();
    assert!(got == plain[3 * C - 5..6 * C]);
}

/// Two attempts at one piece (a retried part, a resumed run) seal the same bytes under two
/// ids, hence two keys: no (key, nonce) pair ever seals two plaintexts, whatever is sent again.
#[test]
fn every_attempt_is_a_piece_of_its_own() {
    let plain = common::data(3 * C);
    let opts = EncryptOptions::default().chunk_size(C).codec(Codec::None);
    let (_, a) = pieced(&plain, &[], &opts, 1);
    let (_, b) = pieced(&plain, &[], &opts, 2);
    let ((a, ra), (b, rb)) = (&a[0], &b[0]);
    assert_ne!(ra.piece.unwrap().id, rb.piece.unwrap().id);
    // Raw frames of equal plaintext: equal ciphertext would mean one keystream.
    assert_ne!(a[21 + 5..21 + 5 + 64], b[21 + 5..21 + 5 + 64]);
}

/// A piece cut into the file by any means other than its writer's trailer is refused: pieces
/// reordered, one dropped, one twice, another attempt at a piece spliced in, a piece that is
/// not whole chunks before the last, the file cut, the end marker's id changed.
#[test]
fn pieces_out_of_place_are_refused() {
    let plain = common::data(8 * C + 9);
    let opts = EncryptOptions::default().chunk_size(C);
    let to = common::recipient("age.pub");
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (coordinator, header) = SplitSeal::pieced_with_rng(&[&to], &opts, &mut rng).unwrap();
    let key = coordinator.task_key().clone();
    let seal = |start: usize, end: usize, rng: &mut ChaCha20Rng| {
        let mut w = seal_piece_with_rng(
            &key,
            (start / C) as u64,
            (end - start) as u64,
            Vec::new(),
            Threads::Count(2),
            rng,
        )
        .unwrap();
        w.write_all(&plain[start..end]).unwrap();
        w.finish_range().unwrap()
    };
    let pieces = vec![
        seal(0, 2 * C, &mut rng),
        seal(2 * C, 5 * C, &mut rng),
        seal(5 * C, 8 * C + 9, &mut rng),
    ];
    let file = join(&coordinator, header.clone(), &pieces, &mut rng, &plain);
    opens_everywhere(&file, &plain, "as written");
    let body = |order: &[&(Vec<u8>, RangeResult)]| -> Vec<u8> {
        let mut f = header.clone();
        for (b, _) in order {
            f.extend_from_slice(b);
        }
        f
    };
    let trailer = &file[body(&pieces.iter().collect::<Vec<_>>()).len()..];
    let with_trailer = |order: &[&(Vec<u8>, RangeResult)]| [body(order), trailer.to_vec()].concat();
    let (p0, p1, p2) = (&pieces[0], &pieces[1], &pieces[2]);
    // The same length, other order: every chunk authenticates, the table does not agree.
    let again = seal(2 * C, 5 * C, &mut rng);
    for (what, damaged) in [
        ("pieces swapped", with_trailer(&[p1, p0, p2])),
        ("a piece dropped", with_trailer(&[p0, p2])),
        ("a piece twice", with_trailer(&[p0, p1, p1, p2])),
        (
            "another attempt spliced in",
            with_trailer(&[p0, &again, p2]),
        ),
        ("cut before the end", file[..file.len() - 1].to_vec()),
        ("cut inside a piece", file[..header.len() + 100].to_vec()),
    ] {
        fails_everywhere(&damaged, what);
    }
    // Every byte of the markers, the end marker, the table and the footer matters.
    let markers = [
        header.len() + 5,
        header.len() + p0.0.len() + 5,
        body(&[p0, p1, p2]).len() + 5,
    ];
    let table_at = file.len() - 36 - 3 * 44;
    for at in markers
        .into_iter()
        .chain([table_at, table_at + 20, table_at + 30, file.len() - 30])
    {
        let mut damaged = file.clone();
        damaged[at] ^= 1;
        fails_everywhere(&damaged, &format!("byte {at} flipped"));
    }
    // The trailer refuses a piece shorter than whole chunks before the last; so does the
    // reader of a file that lists one (written here by hand from two valid trailers' parts).
    let short = seal(0, C + 1, &mut rng);
    let results = [short.1.clone(), p2.1.clone()];
    let e = coordinator.trailer(&results).unwrap_err();
    assert!(e.to_string().contains("whole number of chunks"), "{e}");
}

/// The writer refuses what would break a piece: a piece of no bytes, more or fewer bytes than
/// declared, a version-1 range under a pieced key and a piece under a version-1 key, and a hash
/// that cannot be merged.
#[test]
fn a_piece_is_written_whole_or_not_at_all() {
    let to = common::recipient("age.pub");
    let opts = EncryptOptions::default().chunk_size(C);
    let (pieced, _) = SplitSeal::pieced(&[&to], &opts).unwrap();
    let key = pieced.task_key();
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    assert!(seal_piece_with_rng(key, 0, 0, Vec::new(), Threads::Count(1), &mut rng).is_err());
    for given in [C - 1, C + 1] {
        let mut w =
            seal_piece_with_rng(key, 0, C as u64, Vec::new(), Threads::Count(1), &mut rng).unwrap();
        w.write_all(&vec![7u8; given]).unwrap();
        let e = w.finish_range().expect_err("refused");
        assert!(e.to_string().contains("declared to hold"), "{given}: {e}");
    }
    assert!(zseal::seal_range(key, 0, Vec::new(), Threads::Count(1)).is_err());
    let (plain, _) = SplitSeal::new(&[&to], &opts).unwrap();
    assert!(seal_piece_with_rng(
        plain.task_key(),
        0,
        1,
        Vec::new(),
        Threads::Count(1),
        &mut rng
    )
    .is_err());
    let xxh3 = opts.clone().hash(HashAlg::Xxh3);
    assert!(SplitSeal::pieced(&[&to], &xxh3).is_err());
}

/// A pieced file keeps its pieces through a rekey of its header (its trailer checked under the
/// file key first, so a damaged one is refused and nothing written), is described by `inspect`
/// from its table.
#[test]
fn rekey_and_inspect_know_a_pieced_file() {
    use zseal::{Locked, RekeyOptions};
    let plain = common::data(5 * C + 3);
    let opts = EncryptOptions::default().chunk_size(C);
    let (file, _) = pieced(&plain, &[2 * C], &opts, 21);
    let id = common::identity("age.key");
    let to = common::recipient("zseal.pub");
    let add = RekeyOptions::default().keep_old(true);
    let rekey = |f: &[u8], opts: &RekeyOptions| -> zseal::Result<Vec<u8>> {
        let mut out = Vec::new();
        Locked::read(std::io::Cursor::new(f))?
            .rekey(&[&id], &[&to], opts)?
            .checked()?
            .write_to(&mut out)?;
        Ok(out)
    };
    let added = rekey(&file, &add).unwrap();
    let header_len = Locked::read(&file[..]).unwrap().header_len() as usize;
    let new_len = Locked::read(&added[..]).unwrap().header_len() as usize;
    assert_eq!(
        added[new_len..],
        file[header_len..],
        "the pieces are copied"
    );
    let other = common::identity("zseal.key");
    let opts2 = DecryptOptions::default();
    let mut out = Vec::new();
    Decryptor::new(&added[..], &[&other], &opts2)
        .unwrap()
        .copy_to(&mut out)
        .unwrap();
    assert!(out == plain);
    let mut cut = file.clone();
    cut.truncate(file.len() - 1);
    assert!(rekey(&cut, &add).is_err(), "a cut trailer is refused");
    let info = zseal::inspect::inspect_file(std::io::Cursor::new(&file)).unwrap();
    assert_eq!(info.pieces, Some((2, plain.len() as u64)));
    assert_eq!(info.chunks, Some(6));
    assert_eq!(
        info.plaintext_bounds(),
        Some((plain.len() as u64, plain.len() as u64))
    );
    assert!(info.problem.is_none());
}

/// A rotation of a pieced file (FORMAT.md §14.4) under a new file key: it opens everywhere,
/// with the same markers, frame lengths, index and footer, and no frame body as before; made in
/// two runs that stop anywhere (a resumed upload's) it is the same bytes; and damage anywhere
/// (a byte changed, pieces swapped) makes it fail, never a rotated file.
#[test]
fn a_pieced_file_rotates_in_place() {
    use zseal::{Locked, RekeyOptions};
    let id = common::identity("age.key");
    let to = common::recipient("age.pub");
    let rotate = RekeyOptions::default().rotate(true);
    let rotated = |f: &[u8]| -> zseal::Result<Vec<u8>> {
        let mut out = Vec::new();
        Locked::read(std::io::Cursor::new(f))?
            .rekey(&[&id], &[&to], &rotate)?
            .write_to(&mut out)?;
        Ok(out)
    };
    let text = common::data(9 * C + 7);
    let cases: &[(&str, EncryptOptions, &[usize])] = &[
        (
            "three pieces",
            EncryptOptions::default().chunk_size(C),
            &[2 * C, 3 * C],
        ),
        (
            "padded, chacha",
            EncryptOptions::default()
                .chunk_size(C)
                .pad(true)
                .cipher(zseal::Cipher::ChaCha20Poly1305),
            &[4 * C],
        ),
        ("one piece", EncryptOptions::default().chunk_size(C), &[]),
    ];
    for (what, opts, cuts) in cases {
        let (file, pieces) = pieced(&text, cuts, opts, 31);
        let new = rotated(&file).unwrap_or_else(|e| panic!("{what}: {e}"));
        opens_everywhere(&new, &text, what);
        let (old_at, new_at) = (
            Locked::read(&file[..]).unwrap().header_len() as usize,
            Locked::read(&new[..]).unwrap().header_len() as usize,
        );
        assert_eq!(file.len() - old_at, new.len() - new_at, "{what}");
        // Each piece's marker where it was, each frame body new.
        let mut at = 0;
        for (bytes, r) in &pieces {
            let m = zseal::format::piece::MARKER_LEN;
            assert_eq!(
                new[new_at + at..new_at + at + m],
                file[old_at + at..old_at + at + m],
                "{what}"
            );
            assert_ne!(
                new[new_at + at + m..new_at + at + bytes.len()],
                file[old_at + at + m..old_at + at + bytes.len()],
                "{what}"
            );
            assert_eq!(r.stored_len(), bytes.len() as u64);
            at += bytes.len();
        }
        let footer = zseal::format::piece::PIECED_FOOTER_LEN;
        assert_eq!(
            new[new.len() - footer..],
            file[file.len() - footer..],
            "{what}"
        );

        // Two runs, stopped at every frame in turn, make what one run of the same rotation
        // makes.
        let (header, rotation, mut input) = Locked::read(std::io::Cursor::new(&file))
            .unwrap()
            .rekey(&[&id], &[&to], &rotate)
            .unwrap()
            .into_rotation()
            .unwrap();
        let mut whole = header.clone();
        rotation.run(&mut input, 0, None, &mut whole).unwrap();
        let tail: &[u8; zseal::format::piece::PIECED_FOOTER_LEN] =
            file[file.len() - footer..].try_into().unwrap();
        let frames = zseal::format::piece::PiecedFooter::decode(tail)
            .unwrap()
            .chunk_count;
        for stop in 1..=frames {
            let (resumed, mut input) = Locked::read(std::io::Cursor::new(&file))
                .unwrap()
                .resume_rotation(&[&id], rotation.new_payload_key())
                .unwrap();
            let mut two = header.clone();
            resumed.run(&mut input, 0, Some(stop), &mut two).unwrap();
            assert!(two.len() < whole.len(), "{what}: stopped at frame {stop}");
            resumed.run(&mut input, stop, None, &mut two).unwrap();
            assert!(two == whole, "{what}: stopped at frame {stop}");
        }
    }

    // Damage: every byte in turn (sampled), and two pieces swapped.
    let opts = EncryptOptions::default().chunk_size(C);
    let (file, pieces) = pieced(&text, &[2 * C, 5 * C], &opts, 32);
    for at in (0..file.len()).step_by(7) {
        let mut bad = file.clone();
        bad[at] ^= 0x20;
        assert!(rotated(&bad).is_err(), "byte {at} changed, rotated");
    }
    let header_len = Locked::read(&file[..]).unwrap().header_len() as usize;
    let (a, b) = (pieces[0].0.len(), pieces[1].0.len());
    let mut swapped = file[..header_len].to_vec();
    swapped.extend_from_slice(&file[header_len + a..header_len + a + b]);
    swapped.extend_from_slice(&file[header_len..header_len + a]);
    swapped.extend_from_slice(&file[header_len + a + b..]);
    let e = rotated(&swapped).expect_err("swapped pieces rotated");
    assert!(e.to_string().contains("piece"), "{e}");
}

/// A run of pieces sealed by one writer ([`zseal::seal_pieces`], the workers busy across the
/// seams) is, byte for byte, the pieces sealed one writer each with the same ids; it opens
/// everywhere; and its pieces end only where the plan says.
#[test]
fn a_run_of_pieces_is_the_pieces_sealed_one_by_one() {
    let plain = common::noise(7 * C + 11, 8);
    let opts = EncryptOptions::default()
        .chunk_size(C)
        .codec(Codec::Zstd(1));
    let to = common::recipient("age.pub");
    for per in [1u64, 2, 3, 8] {
        let run = |one_writer: bool| {
            let mut rng = ChaCha20Rng::seed_from_u64(per);
            let (coordinator, header) =
                SplitSeal::pieced_with_rng(&[&to], &opts, &mut rng).unwrap();
            let key = coordinator.task_key();
            let mut file = header.clone();
            let results = if one_writer {
                let mut w = zseal::seal_pieces_with_rng(
                    key,
                    0,
                    plain.len() as u64,
                    per,
                    Vec::new(),
                    Threads::Count(2),
                    &mut rng,
                )
                .unwrap();
                w.write_all(&plain).unwrap();
                let (bytes, results) = w.finish_pieces().unwrap();
                file.extend_from_slice(&bytes);
                results
            } else {
                let p = per as usize * C;
                let mut results = Vec::new();
                for start in (0..plain.len()).step_by(p) {
                    let end = (start + p).min(plain.len());
                    let mut w = seal_piece_with_rng(
                        key,
                        (start / C) as u64,
                        (end - start) as u64,
                        Vec::new(),
                        Threads::Count(1),
                        &mut rng,
                    )
                    .unwrap();
                    w.write_all(&plain[start..end]).unwrap();
                    let (bytes, r) = w.finish_range().unwrap();
                    file.extend_from_slice(&bytes);
                    results.push(r);
                }
                results
            };
            let (file, _) = coordinator
                .write_trailer_with_rng(&results, file, &mut rng)
                .unwrap();
            (file, results)
        };
        let (a, ra) = run(true);
        let (b, rb) = run(false);
        assert_eq!(ra.len(), 8usize.div_ceil(per as usize), "pieces of {per}");
        assert_eq!(ra, rb, "pieces of {per}");
        // After the header (whose X25519 stanza takes a fresh ephemeral key each time).
        let h = zseal::Locked::read(&a[..]).unwrap().header_len() as usize;
        assert!(a[h..] == b[h..], "pieces of {per}: the bytes differ");
        opens_everywhere(&a, &plain, &format!("pieces of {per}"));
    }
    // A run of several pieces has no single result.
    let (coordinator, _) = SplitSeal::pieced(&[&to], &opts).unwrap();
    let mut w = zseal::seal_pieces(
        coordinator.task_key(),
        0,
        2 * C as u64,
        1,
        Vec::new(),
        Threads::Count(1),
    )
    .unwrap();
    w.write_all(&plain[..2 * C]).unwrap();
    let e = w.finish_range().expect_err("two pieces");
    assert!(e.to_string().contains("finish_pieces"), "{e}");
}

/// A whole read of a file that can seek reads the piece table first (`use_index`, as `zseal
/// decrypt` does): a spliced piece is refused before any byte of it is released, not at the
/// end. A read that began in order and loads the table midway checks the pieces it read
/// against the table's first ones.
#[test]
fn a_reader_that_can_seek_releases_no_piece_the_table_does_not_list() {
    let plain = common::data(6 * C);
    let opts = EncryptOptions::default().chunk_size(C).codec(Codec::None);
    let (file, pieces) = pieced(&plain, &[2 * C, 4 * C], &opts, 31);
    let header_len = zseal::Locked::read(&file[..]).unwrap().header_len() as usize;
    // Pieces 0 and 1 swapped: the same lengths (raw chunks), so only the ids tell.
    let mut swapped = file[..header_len].to_vec();
    swapped.extend_from_slice(&pieces[1].0);
    swapped.extend_from_slice(&pieces[0].0);
    swapped.extend_from_slice(&file[header_len + pieces[0].0.len() + pieces[1].0.len()..]);
    assert_eq!(swapped.len(), file.len());
    let id = common::identity("age.key");
    let mut dec = Decryptor::new(
        std::io::Cursor::new(&swapped),
        &[&id],
        &DecryptOptions::default(),
    )
    .unwrap();
    dec.use_index().unwrap();
    let mut out = Vec::new();
    let e = dec.copy_to(&mut out).unwrap_err();
    assert!(out.is_empty(), "{} bytes released", out.len());
    assert!(e.to_string().contains("another piece"), "{e}");
    // In order first, then the table: the pieces read are checked when it comes.
    let mut dec = Decryptor::new(
        std::io::Cursor::new(&swapped),
        &[&id],
        &DecryptOptions::default().threads(1),
    )
    .unwrap();
    let mut first = vec![0u8; 3 * C];
    dec.read_exact(&mut first).unwrap();
    let e = dec.limit_read_ahead(None).unwrap_err();
    assert!(e.to_string().contains("lists first"), "{e}");
    // And the file as written passes both ways.
    let mut dec = Decryptor::new(
        std::io::Cursor::new(&file),
        &[&id],
        &DecryptOptions::default(),
    )
    .unwrap();
    dec.use_index().unwrap();
    let mut out = Vec::new();
    dec.copy_to(&mut out).unwrap();
    assert!(out == plain);
}

/// What the header says of a pieced file is checked before any key is asked: an XXH3 digest
/// cannot be merged from pieces, and hash 03 (a gateway's pieces) is named as not read yet;
/// the trailer refuses a piece of no bytes.
#[test]
fn a_pieced_header_and_trailer_refuse_what_pieces_cannot_hold() {
    let plain = common::data(3 * C);
    let opts = EncryptOptions::default().chunk_size(C);
    let (file, pieces) = pieced(&plain, &[], &opts, 41);
    for (hash, want) in [(2u8, "XXH3"), (3, "hash 03")] {
        let mut f = file.clone();
        f[12] = hash;
        let e = zseal::Locked::read(&f[..]).err().expect("refused");
        assert!(e.to_string().contains(want), "{hash}: {e}");
    }
    let to = common::recipient("age.pub");
    let (coordinator, _) = SplitSeal::pieced(&[&to], &opts).unwrap();
    let mut empty = pieces[0].1.clone();
    empty.body_lens.clear();
    empty.chaining_values.clear();
    empty.plaintext_len = 0;
    let e = coordinator.trailer(&[empty]).unwrap_err();
    assert!(e.to_string().contains("no bytes"), "{e}");
}

/// Random damage to a pieced file (bytes flipped anywhere, cut, a run of bytes repeated or
/// dropped) never yields other bytes on any path: each read fails or gives the plaintext, and
/// never panics. Every byte of a pieced file is authenticated or checked against what is.
#[test]
fn random_damage_never_gives_other_bytes() {
    use rand_chacha::rand_core::RngCore;
    let plain = common::data(5 * C + 77);
    let opts = EncryptOptions::default()
        .chunk_size(C)
        .codec(Codec::Lz4)
        .pad(true);
    let (file, _) = pieced(&plain, &[C, 3 * C], &opts, 51);
    let mut rng = ChaCha20Rng::seed_from_u64(52);
    let mut below = |n: usize| (rng.next_u64() % n as u64) as usize;
    for round in 0..300 {
        let mut f = file.clone();
        match round % 4 {
            0 | 1 => {
                for _ in 0..=round % 3 {
                    let at = below(f.len());
                    f[at] ^= 1 << below(8);
                }
            }
            2 => f.truncate(below(f.len())),
            _ => {
                let at = below(f.len());
                let len = 1 + below(64.min(f.len() - at));
                match below(2) {
                    0 => {
                        let run = f[at..at + len].to_vec();
                        f.splice(at..at, run);
                    }
                    _ => {
                        f.drain(at..at + len);
                    }
                }
            }
        }
        if f == file {
            continue;
        }
        for (threads, seekable) in [(1, false), (2, true)] {
            if let Ok(got) = open(&f, threads, seekable) {
                assert!(
                    got == plain,
                    "round {round}: other bytes (seekable {seekable})"
                );
            }
        }
    }
}
