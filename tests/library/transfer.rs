//! The transfer layer (`zseal::transfer`): one choice of fast paths for every front end. Each
//! kind of source and sink gives the same plaintext back, whole and by range, in both formats;
//! a regular file is read (and written) by the workers; a stream never seeks.

use crate::common;

use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::noise;
use zseal::transfer::{seal, Progress, ReadPlan, Source};
use zseal::{ByteRange, Codec, DecryptOptions, EncryptOptions, Format, Reader, Sealed, Writer};

const C: usize = 1 << 20;

/// Random first half (long raw frames, read by the workers), text second half.
fn plain(n: usize) -> Vec<u8> {
    let mut v = noise(n / 2, 5);
    v.extend_from_slice(&common::data(n - n / 2));
    v
}

fn options(format: Format, threads: usize) -> EncryptOptions {
    EncryptOptions::default()
        .format(format)
        .codec(Codec::Zstd(1))
        .chunk_size(C)
        .threads(threads)
}

fn unlock(source: Source) -> (Reader<Source>, ReadPlan) {
    let plan = source.read_plan();
    let opts = DecryptOptions::default().threads(2);
    // An X25519 key: a passphrase's work factor would cost each of the many opens here.
    let id = common::identity("age.key");
    let reader = Sealed::read(source).unwrap().unlock(&[&id], &opts);
    (reader.unwrap(), plan)
}

/// Seals `data` from a regular file into a regular file through the layer; returns the file.
fn sealed_file(data: &[u8], format: Format, threads: usize) -> std::fs::File {
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(data).unwrap();
    input.rewind().unwrap();
    let out = tempfile::tempfile().unwrap();
    let shared = out.try_clone().unwrap();
    let progress = Progress::default();
    let mut source = Source::file(input, "input");
    let opts = options(format, threads);
    let mut enc = Writer::new(out, &[&common::recipient("age.pub")], &opts).unwrap();
    let n = seal(&mut enc, &mut source, Some(shared), Some(&progress)).unwrap();
    assert_eq!(n, data.len() as u64);
    let mut out = enc.finish().unwrap();
    // The workers sealed every byte of a regular file, and counted it.
    assert_eq!(progress.input.load(Ordering::Relaxed), data.len() as u64);
    // Position at the end, as a sequential write leaves it.
    let end = out.stream_position().unwrap();
    assert_eq!(end, out.metadata().unwrap().len());
    out.rewind().unwrap();
    out
}

#[test]
fn every_source_gives_the_plaintext_back_whole_and_by_range() {
    let data = plain(5 * C + 77);
    let n = data.len() as u64;
    for format in [Format::Zseal, Format::Age] {
        for threads in [1, 3] {
            let mut file = sealed_file(&data, format, threads);
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).unwrap();
            file.rewind().unwrap();
            let ranges = [
                None,
                Some(ByteRange::new(0, Some(1)).unwrap()),
                Some(ByteRange::new(C as u64 - 1, Some(3 * C as u64 + 3)).unwrap()),
                Some(ByteRange::new(n - 5, None).unwrap()),
                Some(ByteRange::new(n, None).unwrap()),
            ];
            for range in ranges {
                let want = match range {
                    None => &data[..],
                    Some(r) => &data[r.start as usize..r.end.map_or(data.len(), |e| e as usize)],
                };
                let what = format!("{format:?} threads={threads} range={range:?}");
                let sources = [
                    Source::file(file.try_clone().unwrap(), "file"),
                    Source::seekable(Cursor::new(bytes.clone()), "seekable"),
                    Source::stream(Cursor::new(bytes.clone()), "stream"),
                ];
                for source in sources {
                    let kind = source.name().to_string();
                    let (mut reader, plan) = unlock(source);
                    assert_eq!(plan.workers_read(), kind == "file", "{kind}");
                    assert_eq!(plan.is_seekable(), kind != "stream", "{kind}");
                    let mut out = Vec::new();
                    let got = plan.copy(&mut reader, range, &mut out);
                    let got = got.unwrap_or_else(|e| panic!("{what} {kind}: {e}"));
                    assert_eq!(got, want.len() as u64, "{what} {kind}");
                    assert!(out == want, "{what} {kind}: other bytes");
                    file.rewind().unwrap();
                }
            }
        }
    }
}

#[test]
fn a_regular_file_has_its_frame_bodies_read_by_the_workers() {
    let data = noise(6 * C, 9);
    let file = sealed_file(&data, Format::Zseal, 2);
    let len = file.metadata().unwrap().len();
    let count = Arc::new(AtomicU64::new(0));
    let source = Source::file(file, "file").counting(count.clone());
    let (mut reader, plan) = unlock(source);
    let mut out = Vec::new();
    plan.copy(&mut reader, None, &mut out).unwrap();
    assert!(out == data);
    // Every byte was read once: the headers through the source, the long bodies by the workers
    // (which count into the same counter).
    assert_eq!(count.load(Ordering::Relaxed), len);
    assert!(reader.is_verified());
    assert!(reader.digest_hex().is_some());
}

#[test]
fn a_stream_never_seeks_and_a_range_past_its_end_fails_after_reading_through() {
    let data = plain(3 * C);
    let mut file = sealed_file(&data, Format::Zseal, 2);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    let mut stream = Source::stream(Cursor::new(bytes.clone()), "pipe");
    assert!(!stream.is_seekable());
    let e = stream.seek(SeekFrom::Start(0)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    assert!(e.to_string().contains("cannot seek in pipe"), "{e}");
    let (mut reader, plan) = unlock(Source::stream(Cursor::new(bytes), "pipe"));
    let past = ByteRange::new(0, Some(data.len() as u64 + 1)).unwrap();
    let e = plan
        .copy(&mut reader, Some(past), std::io::sink())
        .unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
}

#[test]
fn a_stream_is_sealed_as_it_arrives_and_counted() {
    let data = plain(2 * C + 5);
    let progress = Progress::default();
    let mut source = Source::stream(Cursor::new(data.clone()), "pipe");
    let opts = options(Format::Zseal, 2);
    let mut enc = Writer::new(Vec::new(), &[&common::recipient("age.pub")], &opts).unwrap();
    seal(&mut enc, &mut source, None, Some(&progress)).unwrap();
    let sealed = enc.finish().unwrap();
    assert_eq!(progress.input.load(Ordering::Relaxed), data.len() as u64);
    let (mut reader, plan) = unlock(Source::stream(Cursor::new(sealed), "sealed"));
    let mut out = Vec::new();
    plan.copy(&mut reader, None, &mut out).unwrap();
    assert!(out == data);
}

#[test]
fn a_missing_file_is_named() {
    let e = Source::open(std::path::Path::new("/nonexistent/zseal-input")).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(
        e.to_string()
            .starts_with("cannot open /nonexistent/zseal-input: "),
        "{e}"
    );
}
