//! age files zseal writes (`--format age`, FORMAT.md §10.3): standard age v1 that Debian's `age`
//! and `rage` decrypt, whose plaintext `zstd -d` turns back into the input (with compression),
//! written alike on one thread and two, read back by zseal whole and by ranges through the seek
//! table, at the sizes around every 64 KiB STREAM chunk and every zstd frame. Missing tools
//! skip their tests, unless ZSEAL_REQUIRE_PEERS is set (CI), where they fail.

use crate::common;

use std::io::Read;
use std::process::Command;

use assert_cmd::Command as Cmd;
use predicates::str::contains;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zseal::{
    AgeWriter, Codec, DecryptOptions, EncryptOptions, Format, HashAlg, Identity, Recipient, Sealed,
    SeekBy,
};

const C: usize = 64 * 1024;

fn zseal() -> Cmd {
    Cmd::cargo_bin("zseal").unwrap()
}

/// Text and noise, so that some frames compress and some are stored raw.
fn mixed(n: usize, seed: u64) -> Vec<u8> {
    let text = common::data(n);
    let noise = common::noise(n, seed);
    (0..n)
        .map(|i| {
            if (i / 100_000) % 2 == 0 {
                text[i]
            } else {
                noise[i]
            }
        })
        .collect()
}

fn write_age(plain: &[u8], codec: Codec, chunk: usize, threads: usize, seed: u64) -> Vec<u8> {
    let r = common::recipient("age.pub");
    let opts = EncryptOptions::default()
        .codec(codec)
        .chunk_size(chunk)
        .threads(threads)
        .format(Format::Age);
    let mut w = AgeWriter::with_rng(
        Vec::new(),
        &[&r as &dyn Recipient],
        &opts,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    // In odd pieces, as a pipe gives them.
    for piece in plain.chunks(77_777) {
        std::io::Write::write_all(&mut w, piece).unwrap();
    }
    w.finish().unwrap()
}

fn read_age<'a>(file: &'a [u8], opts: &DecryptOptions) -> zseal::Reader<std::io::Cursor<&'a [u8]>> {
    let id = common::identity("age.key");
    Sealed::read(std::io::Cursor::new(file))
        .unwrap()
        .unlock(&[&id as &dyn Identity], opts)
        .unwrap()
}

/// The header length of an age file: through the MAC line.
fn header_len(file: &[u8]) -> usize {
    let at = file.windows(4).position(|w| w == b"--- ").unwrap();
    at + file[at..].iter().position(|&b| b == b'\n').unwrap() + 1
}

#[test]
fn age_files_round_trip_at_every_boundary_alike_on_one_and_two_threads() {
    let sizes = [
        0,
        1,
        C - 1,
        C,
        C + 1,
        (1 << 20) - 1,
        1 << 20,
        (1 << 20) + 1,
        (3 << 20) + 5,
    ];
    for codec in [Codec::Zstd(3), Codec::None] {
        for chunk in [C, 1 << 20] {
            for &n in &sizes {
                let plain = mixed(n, n as u64);
                let one = write_age(&plain, codec, chunk, 1, 7);
                let two = write_age(&plain, codec, chunk, 2, 7);
                let what = format!("{codec} chunk {chunk} size {n}");
                // The X25519 stanza draws its own ephemeral key; the payload is a function of
                // the file key and nonce (from the seeded generator) and of the input alone.
                assert_eq!(one[header_len(&one)..], two[header_len(&two)..], "{what}");
                let mut back = Vec::new();
                read_age(&two, &DecryptOptions::default())
                    .read_to_end(&mut back)
                    .unwrap();
                assert!(back == plain, "{what}: round trip");
                let mut raw = Vec::new();
                let opts = DecryptOptions::default().raw_age(true);
                read_age(&two, &opts).read_to_end(&mut raw).unwrap();
                match codec {
                    // The age plaintext is a zstd stream of the input.
                    Codec::Zstd(_) => {
                        assert_eq!(zstd::stream::decode_all(&raw[..]).unwrap(), plain, "{what}")
                    }
                    _ => assert!(raw == plain, "{what}: -c none is a plain age file"),
                }
            }
        }
    }
}

/// What a reader promises comes from its format's capabilities, not its name: an age file is
/// whole (its last chunk is flagged), found by arithmetic or by its seek table, and has no
/// digest; a container has an index, and a digest unless its hash is none.
#[test]
fn readers_say_what_a_read_to_the_end_proves() {
    let plain = mixed(C + 1, 3);
    let promised = |file: &[u8]| {
        let p = read_age(file, &DecryptOptions::default()).promises();
        (p.digest, p.whole, p.seek)
    };
    for (codec, seek) in [
        (Codec::None, SeekBy::Arithmetic),
        (Codec::Zstd(3), SeekBy::Table),
    ] {
        let file = write_age(&plain, codec, C, 1, 7);
        assert_eq!(promised(&file), (false, true, seek), "{codec}");
    }
    let r = common::recipient("age.pub");
    for (hash, digest) in [(HashAlg::Blake3, true), (HashAlg::None, false)] {
        let opts = EncryptOptions::default().hash(hash);
        let file = zseal::encrypt_to_vec(&plain, &[&r as &dyn Recipient], &opts).unwrap();
        assert_eq!(promised(&file), (digest, true, SeekBy::Index), "{hash}");
    }
}

/// Without compression a job seals 2 MiB of input unless a chunk size is given (docs/CLI.md): the
/// bytes are the same either way, only the number of jobs differs; with zstd the chunk size is
/// the frame size, 8 MiB by default as in a container.
#[test]
fn an_uncompressed_age_file_is_sealed_in_2_mib_jobs_by_default() {
    use std::io::Write;
    let r = common::recipient("age.pub");
    let plain = mixed((5 << 20) + 3, 5);
    let jobs = |opts: EncryptOptions| {
        let mut w = AgeWriter::with_rng(
            Vec::new(),
            &[&r as &dyn Recipient],
            &opts.threads(2).format(Format::Age),
            &mut ChaCha20Rng::seed_from_u64(5),
        )
        .unwrap();
        w.write_all(&plain).unwrap();
        let (out, stats) = w.finish_with_stats().unwrap();
        (out, stats.chunks)
    };
    let none = EncryptOptions::default().codec(Codec::None);
    let (default, n) = jobs(none.clone());
    assert_eq!(n, 3, "5 MiB + 3 in 2 MiB jobs");
    let (named, n) = jobs(none.chunk_size(8 << 20));
    assert_eq!(n, 1, "one 8 MiB job");
    // The stanza's ephemeral key is the recipient's own draw; the payload is the same.
    assert!(
        default[header_len(&default)..] == named[header_len(&named)..],
        "the job size changes no byte of the payload"
    );
    let (_, n) = jobs(EncryptOptions::default());
    assert_eq!(n, 1, "one 8 MiB zstd frame");
}

/// Into a regular file the sealing jobs write their chunks by offset (`write_frames_to`): the
/// file holds exactly the bytes the in-order writer gives, at every boundary, with and without
/// compression, on 2 and 3 threads, after a prefix already in the file; the shared position is
/// left at the end, so what the caller writes next follows the age file. On one thread the
/// input is still read by offset (the job runs on the calling thread) and the output written in
/// order: the same bytes.
#[test]
fn sealing_jobs_write_their_chunks_into_a_file_by_offset() {
    use std::io::{Seek, Write};
    let r = common::recipient("age.pub");
    let d = tempfile::tempdir().unwrap();
    for codec in [Codec::None, Codec::Zstd(3)] {
        for chunk in [C, 1 << 20] {
            for n in [0, 1, C - 1, C, C + 1, (1 << 20) + 1, (5 << 20) + 3] {
                for threads in [1, 2, 3] {
                    let plain = mixed(n, n as u64 + 1);
                    let opts = EncryptOptions::default()
                        .codec(codec)
                        .chunk_size(chunk)
                        .threads(threads)
                        .format(Format::Age);
                    let want = write_age(&plain, codec, chunk, threads, 11);
                    let path = d.path().join("out.age");
                    let mut f = std::fs::File::create(&path).unwrap();
                    f.write_all(b"prefix").unwrap();
                    let shared = f.try_clone().unwrap();
                    let mut w = AgeWriter::with_rng(
                        f,
                        &[&r as &dyn Recipient],
                        &opts,
                        &mut ChaCha20Rng::seed_from_u64(11),
                    )
                    .unwrap();
                    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
                    w.write_frames_to(shared, Some(count.clone())).unwrap();
                    let src = d.path().join("in");
                    std::fs::write(&src, &plain).unwrap();
                    w.copy_from_file(&std::fs::File::open(&src).unwrap())
                        .unwrap();
                    let mut f = w.finish().unwrap();
                    let what = format!("{codec} chunk {chunk} size {n} threads {threads}");
                    let at = f.stream_position().unwrap();
                    f.write_all(b"after").unwrap();
                    drop(f);
                    let got = std::fs::read(&path).unwrap();
                    assert_eq!(at as usize, 6 + want.len(), "{what}: the position");
                    assert_eq!(&got[..6], b"prefix", "{what}");
                    assert_eq!(&got[got.len() - 5..], b"after", "{what}");
                    let body = &got[6..got.len() - 5];
                    assert_eq!(
                        body[header_len(body)..],
                        want[header_len(&want)..],
                        "{what}"
                    );
                    let written = count.load(std::sync::atomic::Ordering::SeqCst) as usize;
                    let by_offset = match threads {
                        1 => 0, // written in order through the file itself
                        _ => want.len() - header_len(&want) - 16,
                    };
                    assert_eq!(written, by_offset, "{what}: counted");
                }
            }
        }
    }
}

/// A sealing job that cannot write its reserved place (here the handle given is read-only) fails
/// the stream, naming the STREAM chunks, never a success and never a panic; and a stream dropped
/// with sealing jobs in flight, the first one held back never started among them, returns: the
/// places reserved for them are given up, not waited on forever.
#[test]
fn a_sealing_job_that_cannot_write_fails_the_stream_and_a_dropped_one_returns() {
    use std::io::Write;
    let r = common::recipient("age.pub");
    let d = tempfile::tempdir().unwrap();
    let plain = mixed(7 << 20, 5);
    for codec in [Codec::None, Codec::Zstd(3)] {
        let opts = EncryptOptions::default()
            .codec(codec)
            .threads(2)
            .format(Format::Age);
        let path = d.path().join("out.age");
        let out = std::fs::File::create(&path).unwrap();
        let read_only = std::fs::File::open(&path).unwrap();
        let mut w = AgeWriter::new(out, &[&r as &dyn Recipient], &opts).unwrap();
        w.write_frames_to(read_only, None).unwrap();
        let e = w
            .write_all(&plain)
            .map_err(zseal::Error::from)
            .and_then(|()| w.finish().map(|_| ()))
            .expect_err("a write into a read-only handle cannot succeed")
            .to_string();
        assert!(
            e.contains("STREAM chunks from") && e.contains("Bad file descriptor"),
            "{codec}: {e}"
        );
        // Dropped unfinished, with jobs in flight: it returns (on a thread, so that a hang
        // fails the test instead of the suite).
        let (tx, rx) = std::sync::mpsc::channel();
        let (opts2, path2) = (opts.clone(), path.clone());
        std::thread::spawn(move || {
            let r2 = common::recipient("age.pub");
            let out = std::fs::File::create(&path2).unwrap();
            let shared = out.try_clone().unwrap();
            let mut w = AgeWriter::new(out, &[&r2 as &dyn Recipient], &opts2).unwrap();
            w.write_frames_to(shared, None).unwrap();
            w.write_all(&mixed(7 << 20, 6)).unwrap();
            drop(w);
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{codec}: a dropped age writer hangs"));
    }
}

/// `flush` of an age writer that writes by offset, with one sealing job queued (the window
/// holds a first job back until its result is asked for): the job is run and its write
/// waited for, instead of waiting forever on a write nothing will make; the file then ends
/// as a whole one does.
#[test]
fn flush_with_one_job_queued_returns_and_the_file_is_whole() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("out.age");
    let plain = mixed(3 << 20, 8);
    let (tx, rx) = std::sync::mpsc::channel();
    let (p2, plain2) = (path.clone(), plain.clone());
    std::thread::spawn(move || {
        let r2 = common::recipient("age.pub");
        let opts = EncryptOptions::default()
            .codec(Codec::None)
            .threads(2)
            .format(Format::Age);
        let out = std::fs::File::create(&p2).unwrap();
        let shared = out.try_clone().unwrap();
        let mut w = AgeWriter::new(out, &[&r2 as &dyn Recipient], &opts).unwrap();
        w.write_frames_to(shared, None).unwrap();
        w.write_all(&plain2).unwrap();
        w.flush().unwrap();
        w.finish().unwrap();
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("flush with one job queued hangs");
    let file = std::fs::read(&path).unwrap();
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut read_age(&file, &DecryptOptions::default()), &mut back)
        .unwrap();
    assert!(back == plain);
}

#[test]
fn ranges_of_a_compressed_age_file_come_from_its_seek_table() {
    let plain = mixed((5 << 20) + 333, 3);
    let file = write_age(&plain, Codec::Zstd(3), 1 << 20, 2, 1);
    let n = plain.len() as u64;
    let mut r = read_age(&file, &DecryptOptions::default());
    let zseal::pipeline::AnyChunks::AgeZstd(_) = &*r else {
        panic!("a compressed age file zseal wrote is read through its seek table")
    };
    assert_eq!(r.plaintext_len().unwrap(), n);
    for (a, b) in [
        (0, 1),
        (C as u64 - 1, C as u64 + 1),
        ((1 << 20) - 3, (1 << 20) + 3),
        (n / 2, n / 2 + 100_000),
        (n - 5, n),
        (n, n),
        (0, n),
    ] {
        let mut out = Vec::new();
        r.copy_range_to(a, Some(b), &mut out).unwrap();
        assert!(out == plain[a as usize..b as usize], "{a}..{b}");
    }
    let e = r
        .copy_range_to(n - 1, Some(n + 1), &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    // Seeks back and forth through the Read + Seek interface.
    use std::io::{Seek, SeekFrom};
    for at in [3 << 20, 17, n - 1, 1 << 20] {
        r.seek(SeekFrom::Start(at)).unwrap();
        let mut b = [0u8; 1];
        r.read_exact(&mut b).unwrap();
        assert_eq!(b[0], plain[at as usize], "at {at}");
    }
}

/// What the other party runs: `age -d` (Go) and `rage -d` decrypt what zseal wrote, and
/// `zstd -d` gives the input back from the plaintext of a compressed one.
#[test]
fn age_and_rage_decrypt_zseal_files_and_zstd_decompresses_them() {
    let tools: Vec<_> = ["age", "rage"]
        .iter()
        .filter_map(|t| common::peer_tool(t))
        .collect();
    if tools.is_empty() || common::peer_tool("zstd").is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let key = common::keys().join("age.key");
    for &n in &[0, 1, C - 1, C, C + 1, 5 * 1024 * 1024 + 7] {
        let plain = mixed(n, n as u64 + 1);
        let p = d.path().join("p");
        std::fs::write(&p, &plain).unwrap();
        for codec in ["zstd", "none"] {
            let f = d.path().join(format!("{n}.{codec}.age"));
            zseal()
                .args([
                    "encrypt",
                    "--format",
                    "age",
                    "-c",
                    codec,
                    "--chunk-size",
                    "1M",
                    "-r",
                ])
                .arg(public.trim())
                .arg(&p)
                .arg("-o")
                .arg(&f)
                .assert()
                .success();
            for t in &tools {
                let out = Command::new(t)
                    .arg("-d")
                    .arg("-i")
                    .arg(&key)
                    .arg(&f)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{} -d {n} {codec}", t.display());
                let back = match codec {
                    "zstd" => {
                        let mut z = Command::new("zstd")
                            .args(["-d", "-q", "-c"])
                            .stdin(std::process::Stdio::piped())
                            .stdout(std::process::Stdio::piped())
                            .spawn()
                            .unwrap();
                        let mut stdin = z.stdin.take().unwrap();
                        let bytes = out.stdout.clone();
                        let feeder = std::thread::spawn(move || {
                            std::io::Write::write_all(&mut stdin, &bytes).unwrap()
                        });
                        let o = z.wait_with_output().unwrap();
                        feeder.join().unwrap();
                        assert!(o.status.success(), "zstd -d {n}");
                        o.stdout
                    }
                    _ => out.stdout,
                };
                assert!(back == plain, "{} then zstd: {n} {codec}", t.display());
            }
        }
    }
}

/// Options an age file cannot hold are refused by name (the library's one check, in its words,
/// before a key is asked for), and no output file appears.
#[test]
fn container_options_are_refused_for_age_files() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p");
    std::fs::write(&p, b"data").unwrap();
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    for (args, says) in [
        (
            &["--cipher", "aes-256-gcm"][..],
            "--format age: a cipher (an age file",
        ),
        (
            &["--hash", "blake3"][..],
            "--format age: a hash (an age file",
        ),
        (
            &["--pad"][..],
            "--format age: padding is an option of zseal containers",
        ),
        (
            &["--adapt"][..],
            "--format age: an adaptive level is an option",
        ),
        (
            &["-c", "lz4"][..],
            "an age file holds zstd (a seekable zstd stream inside) or nothing: lz4",
        ),
        (
            &["-c", "none", "--chunk-size", "4K"][..],
            "multiple of age's 64 KiB STREAM chunk: 4096 is not",
        ),
    ] {
        let out = d.path().join("o.age");
        zseal()
            .args(["encrypt", "--format", "age", "-r"])
            .arg(public.trim())
            .args(args)
            .arg(&p)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(1)
            .stderr(contains(says));
        assert!(!out.exists(), "{args:?}");
    }
}

/// The library refuses what an age file cannot hold even when it is the default by value: a
/// cipher or a hash chosen by name (front ends need no check of their own).
#[test]
fn a_named_cipher_or_hash_is_refused_for_age_by_the_library() {
    let r = common::recipient("age.pub");
    let age = EncryptOptions::default().format(Format::Age);
    for (opts, what) in [
        (
            age.clone().cipher(zseal::Cipher::default()),
            "a cipher (an age file is sealed with ChaCha20-Poly1305) is an option of zseal containers",
        ),
        (
            age.clone().hash(zseal::HashAlg::default()),
            "a hash (an age file records no whole-file digest) is an option of zseal containers",
        ),
    ] {
        let e = AgeWriter::new(Vec::new(), &[&r as &dyn Recipient], &opts)
            .err()
            .unwrap_or_else(|| panic!("{what} was accepted"));
        assert!(e.to_string().contains(what), "{e}");
        // The writer's refusal is the options' one check, which a front end runs first.
        assert_eq!(opts.check().unwrap_err().to_string(), e.to_string());
    }
    assert!(AgeWriter::new(Vec::new(), &[&r as &dyn Recipient], &age).is_ok());
}

/// Damage anywhere in a compressed age file zseal wrote is refused, whole or by range, and no
/// output file appears: in a frame's chunk, and in the final chunk that holds the seek table.
#[test]
fn damaged_compressed_age_files_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let plain = mixed(3 << 20, 5);
    let good = write_age(&plain, Codec::Zstd(3), 1 << 20, 2, 9);
    let key = common::keys().join("age.key");
    let h = header_len(&good) + 16;
    for (what, at) in [
        ("a frame", h + 100_000),
        ("the seek table", good.len() - 20),
    ] {
        let mut bad = good.clone();
        bad[at] ^= 1;
        let f = d.path().join("bad.age");
        std::fs::write(&f, &bad).unwrap();
        let out = d.path().join("out");
        for range in [None, Some("10..20")] {
            let mut c = zseal();
            c.args(["decrypt", "-i"])
                .arg(&key)
                .arg(&f)
                .arg("-o")
                .arg(&out);
            if let Some(r) = range {
                c.args(["--range", r]);
            }
            c.assert().code(1).stderr(contains("failed authentication"));
            assert!(!out.exists(), "{what} {range:?}");
        }
    }
}

/// A passphrase: zseal writes age's scrypt stanza (alone), which Go age opens after asking for
/// the passphrase on its terminal, and zseal opens with the passphrase file.
#[cfg(unix)]
#[test]
fn a_passphrase_age_file_opens_with_age_on_its_terminal() {
    let Some(age) = common::peer_tool("age") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let plain = mixed(300_000, 4);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    let pw = d.path().join("pw");
    std::fs::write(&pw, "correct horse battery\n").unwrap();
    let f = d.path().join("s.age");
    zseal()
        .args(["encrypt", "--format", "age", "--passphrase-file"])
        .arg(&pw)
        .arg(&p)
        .arg("-o")
        .arg(&f)
        .assert()
        .success();
    zseal()
        .arg("inspect")
        .arg(&f)
        .assert()
        .success()
        .stdout(contains("recipients:  1 (scrypt)"));
    let out = d.path().join("out.zst");
    let mut c = Command::new(age);
    c.arg("-d").arg("-o").arg(&out).arg(&f);
    let mut s = rexpect::session::spawn_command(c, Some(60_000)).unwrap();
    s.exp_string("passphrase")
        .expect("age asks for the passphrase");
    s.send_line("correct horse battery").unwrap();
    s.exp_eof().expect("age ends");
    let zst = std::fs::read(&out).unwrap();
    assert!(zstd::stream::decode_all(&zst[..]).unwrap() == plain);
    let back = zseal()
        .args(["decrypt", "--passphrase-file"])
        .arg(&pw)
        .arg(&f)
        .output()
        .unwrap();
    assert!(back.status.success() && back.stdout == plain);
}

/// An age file whose plaintext is `plain` exactly (`-c none`): what a key holder can craft.
fn crafted(plain: &[u8]) -> Vec<u8> {
    write_age(plain, Codec::None, C, 1, 3)
}

/// Crafted seek tables (a key holder's doing) are refused by name before any memory is set
/// aside for what they claim: a frame of 4 GiB, a frame holding nothing, a frame that is not
/// what its entry says, more frames than the limit; and a stream whose table failed stays failed.
#[test]
fn crafted_seek_tables_are_refused_before_they_cost_memory() {
    use std::io::{Seek, SeekFrom};
    use zseal::format::age::{seek_table, SEEKABLE_MARKER};
    let frame = zstd::bulk::compress(b"hello world", 3).unwrap();
    let cs = frame.len() as u32;
    let with_table = |entries: &[(u32, u32)], frames: &[&[u8]]| {
        let mut p = SEEKABLE_MARKER.to_vec();
        for f in frames {
            p.extend_from_slice(f);
        }
        p.extend(seek_table(entries));
        crafted(&p)
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a 4 GiB frame",
            with_table(&[(24, 0), (cs, u32::MAX)], &[&frame]),
            "not a frame zseal writes",
        ),
        (
            "an empty frame",
            with_table(&[(24, 0), (cs, 0)], &[&frame]),
            "not a frame zseal writes",
        ),
        (
            "a wrong size",
            with_table(&[(24, 0), (cs, 5)], &[&frame]),
            "its seek table entry 5",
        ),
        (
            "frames that do not tile",
            with_table(&[(24, 0), (cs + 1, 11)], &[&frame]),
            "places its frames",
        ),
        (
            "two frames in one entry",
            with_table(&[(24, 0), (2 * cs, 22)], &[&frame, &frame]),
            "is not one frame",
        ),
    ];
    for (what, file, says) in cases {
        let mut r = read_age(&file, &DecryptOptions::default());
        let e = r.copy_range_to(0, Some(3), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains(says), "{what}: {e}");
    }
    // Over the limit of frames: the footer alone is read.
    let mut p = SEEKABLE_MARKER.to_vec();
    p.extend_from_slice(&[0x5E, 0x2A, 0x4D, 0x18, 9, 0, 0, 0]);
    p.extend_from_slice(&((1u32 << 24) + 1).to_le_bytes());
    p.push(0);
    p.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    let file = crafted(&p);
    let mut r = read_age(&file, &DecryptOptions::default());
    let e = r.seek(SeekFrom::End(0)).unwrap_err();
    assert!(e.to_string().contains("at most 16777216"), "{e}");
    // The stream decoder does not go on from where the failed table left the age reader.
    assert!(
        r.read(&mut [0u8; 10]).is_err(),
        "a failed table fails the stream"
    );
}

/// `decrypt --raw` gives a compressed age file's plaintext as `age -d` does (the seekable zstd
/// stream); without it, the input.
#[test]
fn raw_gives_the_age_plaintext_as_age_does() {
    let d = tempfile::tempdir().unwrap();
    let plain = mixed(700_000, 6);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let f = d.path().join("r.age");
    zseal()
        .args(["encrypt", "--format", "age", "--chunk-size", "256K", "-r"])
        .arg(public.trim())
        .arg(&p)
        .arg("-o")
        .arg(&f)
        .assert()
        .success();
    let key = common::keys().join("age.key");
    let decrypt = |raw: bool| {
        let mut c = zseal();
        c.args(["decrypt", "-i"]).arg(&key).arg(&f);
        if raw {
            c.arg("--raw");
        }
        c.output().unwrap().stdout
    };
    let raw = decrypt(true);
    assert!(raw.starts_with(&zseal::format::age::SEEKABLE_MARKER));
    assert!(zstd::stream::decode_all(&raw[..]).unwrap() == plain);
    assert!(decrypt(false) == plain);
    if let Some(age) = common::peer_tool("age") {
        let out = Command::new(age)
            .arg("-d")
            .arg("-i")
            .arg(&key)
            .arg(&f)
            .output()
            .unwrap();
        assert!(out.stdout == raw, "age -d gives what --raw gives");
    }
}

/// `-a`: an ASCII-armored age file (c2sp.org/age, "-----BEGIN AGE ENCRYPTED FILE-----", lines of
/// 64 columns), from a file (whose workers would otherwise write by offset) and from a pipe, with
/// and without compression: `age -d` decrypts it, zseal decrypts it, and zseal decrypts what
/// `age -a` writes.
#[test]
fn armored_age_files_go_both_ways_with_age() {
    let Some(age) = common::peer_tool("age") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let plain = mixed(3 * 1024 * 1024 + 5, 9);
    let p = d.path().join("p");
    std::fs::write(&p, &plain).unwrap();
    let key = common::keys().join("age.key");
    let public = std::fs::read_to_string(common::keys().join("age.pub")).unwrap();
    let opened_by_zseal = |f: &std::path::Path| {
        let back = zseal()
            .args(["decrypt", "-i"])
            .arg(&key)
            .arg(f)
            .output()
            .unwrap();
        assert!(
            back.status.success(),
            "{}",
            String::from_utf8_lossy(&back.stderr)
        );
        back.stdout
    };
    for (codec, piped) in [
        ("none", false),
        ("none", true),
        ("zstd", false),
        ("zstd", true),
    ] {
        let what = format!("-c {codec}, piped {piped}");
        let f = d.path().join(format!("{codec}{piped}.age"));
        let mut c = zseal();
        c.args([
            "encrypt", "--format", "age", "-a", "-c", codec, "-j", "2", "-r",
        ])
        .arg(public.trim())
        .arg("-o")
        .arg(&f);
        match piped {
            true => c.pipe_stdin(&p).unwrap(),
            false => c.arg(&p),
        };
        c.assert().success();
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "-----BEGIN AGE ENCRYPTED FILE-----", "{what}");
        assert_eq!(lines[lines.len() - 1], "-----END AGE ENCRYPTED FILE-----");
        assert!(
            lines[1..lines.len() - 2].iter().all(|l| l.len() == 64),
            "{what}"
        );
        let out = Command::new(&age)
            .arg("-d")
            .arg("-i")
            .arg(&key)
            .arg(&f)
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: age -d failed");
        let opened = match codec {
            "zstd" => zstd::stream::decode_all(&out.stdout[..]).unwrap(),
            _ => out.stdout,
        };
        assert!(opened == plain, "{what}: age -d gives other bytes");
        assert!(opened_by_zseal(&f) == plain, "{what}");
    }
    let f = d.path().join("by-age.age");
    let s = Command::new(&age)
        .args(["-a", "-r", public.trim(), "-o"])
        .arg(&f)
        .arg(&p)
        .status()
        .unwrap();
    assert!(s.success());
    assert!(opened_by_zseal(&f) == plain);
}
