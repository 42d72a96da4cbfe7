//! Never two plaintexts under one nonce (issue 55 §1, docs/OBJECTS.md §7): resumable uploads
//! killed (SIGKILL) at random moments and resumed, with an adaptive level, with the source
//! rewritten in place under its old mtime, and with parts refused, through a proxy that keeps
//! every UploadPart body it receives (refused ones too: they left zseal). Each body is then
//! opened frame by frame with its upload's key (the journal's, read after each run, or the
//! finished object's), and no (key, nonce) pair may ever have sealed two different plaintexts.
//! A pieced upload's body (FORMAT.md §14.6) is opened piece by piece: each marker names its
//! piece, whose key this file derives itself (HKDF-Expand of the payload key), and the end
//! marker the end frames' key; the ledger is kept by AEAD key, not by upload.
//!
//! `ZSEAL_NONCE_RUNS` sets the runs per mode: 2 in the suite, 20 or more by hand
//! (docs/TESTING.md); `ZSEAL_NONCE_SEED` the first seed (each run prints its own).

use super::*;
use std::collections::HashMap;

use rand_chacha::rand_core::{RngCore, SeedableRng};

const MIB: usize = 1 << 20;
/// Small chunks, so that a part holds many frames and a kill lands between many of them.
const CHUNK: usize = 64 << 10;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Killed at random moments, then resumed, until it completes.
    Kill,
    /// The same with `--adapt=1..9`: a resumed run seals new pieces at levels of its own.
    Adapt,
    /// Killed once, then the source rewritten in place (a few bytes changed, its mtime
    /// restored) and resumed.
    Changed,
    /// Parts after the second refused (403, what no client retries), then resumed; with
    /// `--adapt=1..9`: the refused parts (which left zseal but never reached the store) are
    /// sealed again as new pieces, and the resume continues the upload rather than starting
    /// anew.
    Refused,
}

/// Blocks of 4 KiB: 1.5 KiB of a short pattern, then 2.5 KiB of noise; each chunk compresses
/// to about two thirds, to other bytes at each level (a block that starts with noise would be
/// stored raw: zstd gives up on what begins incompressible).
fn source(len: usize, seed: u64) -> Vec<u8> {
    let noise = common::noise(len, seed);
    let mut out = Vec::with_capacity(len);
    for (i, block) in noise.chunks(4096).enumerate() {
        let cut = block.len().min(1536);
        out.extend((0..cut).map(|j| (j % 7) as u8 + (i % 3) as u8));
        out.extend_from_slice(&block[cut..]);
    }
    out
}

/// An upload's key: its cipher id, payload key and header length.
#[derive(Clone, Debug, PartialEq)]
struct UploadKey {
    cipher: u8,
    key: [u8; 32],
    header_len: usize,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// `%XX` in a query value, decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The keys of the pending uploads the journals in `state` hold, by upload id; and the levels
/// their logs of parts sent name.
fn journal_keys(state: &Path, keys: &mut HashMap<String, UploadKey>, levels: &mut Vec<u8>) {
    let Ok(dir) = std::fs::read_dir(state.join("zseal")) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("upload-") && name.ends_with(".log") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            for line in text.lines() {
                let v: serde_json::Value = match serde_json::from_str(line) {
                    Ok(v) => v,
                    Err(_) => continue,
                };
                for l in hex(v["levels"].as_str().unwrap_or("")) {
                    if !levels.contains(&l) {
                        levels.push(l);
                    }
                }
            }
        }
        if !(name.starts_with("upload-") && name.ends_with(".json")) {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
        // zsTASK magic (8 bytes), cipher, codec, level, hash, chunk_log2, padded, the key.
        let task = hex(v["key"].as_str().unwrap());
        let key = UploadKey {
            cipher: task[8],
            key: task[task.len() - 32..].try_into().unwrap(),
            header_len: v["header"].as_str().unwrap().len() / 2,
        };
        keys.insert(v["upload_id"].as_str().unwrap().to_string(), key);
    }
}

/// The fixtures' passphrase.
fn passphrase() -> zseal::Passphrase {
    let text = std::fs::read_to_string(pw()).unwrap();
    zseal::Passphrase::new(text.trim_end_matches('\n')).unwrap()
}

/// The finished object's key, unwrapped with the fixtures' passphrase.
fn object_key(container: &[u8]) -> UploadKey {
    let pass = passphrase();
    let locked = zseal::Locked::read(std::io::Cursor::new(container)).unwrap();
    let open = locked.open_key(&[&pass]).unwrap().to_bytes();
    UploadKey {
        cipher: container[9],
        key: open[open.len() - 32..].try_into().unwrap(),
        header_len: locked.header_len() as usize,
    }
}

/// The key of a piece (`label` "zseal v1 piece") or of the end frames ("zseal v1 end") of id
/// `id` under the upload's payload key (FORMAT.md §14.2, §14.3).
fn derived(k: &UploadKey, label: &[u8], id: &[u8]) -> UploadKey {
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::from_prk(&k.key)
        .unwrap()
        .expand_multi_info(&[label, id], &mut key)
        .unwrap();
    UploadKey { key, ..k.clone() }
}

/// Opens frame `i` (`last`: the final frame) of kind `kind`: its plaintext, or `None`.
fn open_frame(k: &UploadKey, (i, last): (u64, bool), head: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};
    let alg = match k.cipher {
        1 => &AES_256_GCM,
        _ => &CHACHA20_POLY1305,
    };
    let key = LessSafeKey::new(UnboundKey::new(alg, &k.key).unwrap());
    let mut nonce = [0u8; 12];
    nonce[3..11].copy_from_slice(&i.to_be_bytes());
    nonce[11] = u8::from(last);
    let mut buf = body.to_vec();
    let n = Nonce::assume_unique_for_key(nonce);
    let plain = key.open_in_place(n, Aad::from(head), &mut buf).ok()?;
    Some(plain.to_vec())
}

/// What every body showed, by upload key and nonce: the plaintext's BLAKE3 and where it was.
#[derive(Default)]
struct Ledger {
    seen: HashMap<([u8; 32], u64, bool), (blake3::Hash, String)>,
    frames: u64,
    /// Bodies that begin inside the container's end (cut there by size): no frame to open.
    unframed: u64,
}

impl Ledger {
    /// Records that nonce `(i, last)` under `k` sealed `plain` (at `place`); fails the test
    /// when it sealed another plaintext before.
    fn record(&mut self, k: &UploadKey, (i, last): (u64, bool), plain: &[u8], place: String) {
        let h = blake3::hash(plain);
        match self.seen.get(&(k.key, i, last)) {
            Some((before, where_)) => assert_eq!(
                *before, h,
                "nonce ({i}, last {last}) sealed two plaintexts: {where_} and {place}"
            ),
            None => {
                self.seen.insert((k.key, i, last), (h, place));
            }
        }
        self.frames += 1;
    }

    /// Opens every whole frame of `body` (part `number` of an upload under `k`), finding the
    /// first frame's number by trying each, and records each nonce's plaintext; a nonce seen
    /// before with another plaintext fails the test.
    fn take(&mut self, k: &UploadKey, (number, body): (u64, &[u8]), most: u64, what: &str) {
        // The header begins the first part sent, which is part 1, or a resumed run's first
        // part when it kept none (numbered past every number sent before).
        let mut at = match body.starts_with(b"\x89ZSEAL\r\n") {
            true => k.header_len,
            false => 0,
        };
        let frame = |at: usize| -> Option<(u8, &[u8], &[u8])> {
            let head = body.get(at..at + 5)?;
            let len = u32::from_le_bytes(head[1..5].try_into().unwrap()) as usize;
            Some((head[0], head, body.get(at + 5..at + 5 + len)?))
        };
        let Some((kind, head, first)) = frame(at) else {
            self.unframed += 1;
            return;
        };
        if kind == 6 {
            return self.take_pieces(k, (number, body, at), what);
        }
        let found = (0..=most).find_map(|i| {
            let last = kind == 2;
            open_frame(k, (i, last), head, first).map(|p| (i, p))
        });
        let Some((mut i, mut plain)) = found else {
            assert!(number > 1, "{what}: part 1's first frame does not open");
            self.unframed += 1;
            return;
        };
        loop {
            let last = kind_at(body, at) == 2;
            self.record(
                k,
                (i, last),
                &plain,
                format!("{what}, part {number}, frame {i}"),
            );
            if last {
                return;
            }
            at += 5 + first_len(body, at);
            i += 1;
            let Some((kind, head, next)) = frame(at) else {
                return;
            };
            match open_frame(k, (i, kind == 2), head, next) {
                Some(p) => plain = p,
                None => panic!("{what}: part {number}'s frame {i} does not open"),
            }
        }
    }
}

impl Ledger {
    /// A pieced upload's body from `at` (a marker): each piece's frames opened under its own
    /// key, nonces counting within the piece, its last frame (followed by a marker, the end
    /// marker or the body's end) with `last` set; after the end marker, the end frames and
    /// the final frame under the end key.
    fn take_pieces(
        &mut self,
        k: &UploadKey,
        (number, body, mut at): (u64, &[u8], usize),
        what: &str,
    ) {
        let (mut key, mut j, mut end) = (None::<UploadKey>, 0u64, false);
        while at + 5 <= body.len() {
            let (kind, len) = (kind_at(body, at), first_len(body, at));
            let Some(frame) = body.get(at + 5..at + 5 + len) else {
                return; // cut by size, inside the container's end
            };
            let head = &body[at..at + 5];
            at += 5 + len;
            if kind == 6 || kind == 7 {
                assert!(!end, "{what}: part {number}: a marker after the end marker");
                let label: &[u8] = if kind == 6 {
                    b"zseal v1 piece"
                } else {
                    b"zseal v1 end"
                };
                key = Some(derived(k, label, frame));
                (j, end) = (0, kind == 7);
                continue;
            }
            let key = key.as_ref().expect("a frame after a marker");
            let last = match end {
                true => kind == 2,
                false => at + 5 > body.len() || !matches!(body[at], 0 | 1 | 3),
            };
            let plain = open_frame(key, (j, last), head, frame)
                .unwrap_or_else(|| panic!("{what}: part {number}: a frame does not open"));
            let place = format!("{what}, part {number}, frame {j} of its piece");
            self.record(key, (j, last), &plain, place);
            j += 1;
            if end && kind == 2 {
                return;
            }
        }
    }
}

fn kind_at(body: &[u8], at: usize) -> u8 {
    body[at]
}

fn first_len(body: &[u8], at: usize) -> usize {
    u32::from_le_bytes(body[at + 1..at + 5].try_into().unwrap()) as usize
}

/// One sequence of runs into a fresh object, in `mode`, from `seed`: the recorded bodies, the
/// keys learnt from the journals, and the final object's.
fn one_sequence(base: &str, b: &str, mode: Mode, seed: u64) {
    let what = format!("{mode:?} seed {seed}");
    eprintln!("nonces: {what}");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let src = d.path().join("src.bin");
    let mut plain = source(24 * MIB, seed);
    let original = plain.clone();
    std::fs::write(&src, &plain).unwrap();
    let url = format!("s3://{b}/{mode:?}-{seed}");
    let faults = proxy::Faults {
        record_parts: true,
        part_delay: Duration::from_millis(300),
        ..proxy::Faults::default()
    };
    let p = proxy::start(base, faults);
    let refusing = proxy::start(
        base,
        proxy::Faults {
            drop_parts_after: 2,
            refuse_dropped: true,
            ..faults
        },
    );
    let mut keys = HashMap::new();
    let mut levels = Vec::new();
    let command = |endpoint: &str, resume: bool| {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("zseal"));
        c.args(["encrypt", "-c", "zstd:3", "--chunk-size", "64K"])
            .args(["--passphrase-file"])
            .arg(pw())
            .args(["-o", &url])
            .envs(zseal_env(base))
            .env("AWS_ENDPOINT_URL", endpoint)
            .env("XDG_STATE_HOME", &state)
            .env("ZSEAL_RETRY_TIMEOUT", "3")
            .env("ZSEAL_PARTS_IN_FLIGHT", "2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if matches!(mode, Mode::Adapt | Mode::Refused) {
            c.arg("--adapt=1..9");
        }
        if resume {
            c.arg("--resume");
        }
        c.arg(&src);
        c
    };
    let pending = |state: &Path| resuming::journaled_parts(state).is_some();
    let mut runs = 0;
    let runs = loop {
        runs += 1;
        assert!(runs < 12, "{what}: no completion after 11 runs");
        let resume = pending(&state);
        if mode == Mode::Refused && runs == 1 {
            let out = command(&refusing.url, false).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{what}: the refusals fail it");
            journal_keys(&state, &mut keys, &mut levels);
            continue;
        }
        let kills = match mode {
            Mode::Kill | Mode::Adapt => 3,
            Mode::Changed => 1,
            Mode::Refused => 0,
        };
        if runs <= kills {
            let mut child = command(&p.url, resume).spawn().unwrap();
            let wait = 50 + rng.next_u64() % 1000;
            std::thread::sleep(Duration::from_millis(wait));
            let _ = child.kill();
            let status = child.wait().unwrap();
            journal_keys(&state, &mut keys, &mut levels);
            if status.success() {
                break runs;
            }
            if object(base, b, &format!("{mode:?}-{seed}")).is_some() && !pending(&state) {
                break runs;
            }
            if mode == Mode::Changed && pending(&state) {
                // A few bytes anywhere, under the same size and mtime.
                let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
                for _ in 0..4 {
                    let at = (rng.next_u64() % plain.len() as u64) as usize;
                    plain[at] ^= 0x5a;
                }
                std::fs::write(&src, &plain).unwrap();
                let f = std::fs::File::options().write(true).open(&src).unwrap();
                f.set_modified(mtime).unwrap();
            }
            continue;
        }
        let out = command(&p.url, resume).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        journal_keys(&state, &mut keys, &mut levels);
        if out.status.success() {
            if mode == Mode::Refused {
                // The refused parts were made again byte for byte: the upload went on.
                assert!(!err.contains("sealed anew"), "{what}: {err}");
                if runs == 2 {
                    assert!(err.contains("2 parts were at the store"), "{what}: {err}");
                }
            }
            break runs;
        }
        // A kill during the completion: the store may have completed it.
        if object(base, b, &format!("{mode:?}-{seed}")).is_some() && !pending(&state) {
            break runs;
        }
        // A failure that keeps the job (moto, loaded, sometimes answers a part 500 past the
        // short retry timeout): resumed by the next run, as a user would.
        if pending(&state) && err.contains("The upload is kept") {
            continue;
        }
        // A changed source whose change lies in a kept part ends the job (and a completion a
        // kill interrupted may leave the upload gone): run it again anew.
        assert!(
            err.contains("run the command again without --resume"),
            "{what}: {err}"
        );
    };
    assert!(
        !pending(&state),
        "{what}: a journal is left after completion"
    );
    let stored = object(base, b, &format!("{mode:?}-{seed}")).unwrap();
    let finished = object_key(&stored);
    // The source as it ended; or, when a run completed the upload before the source changed
    // (killed after its completion, before it could remove its journal), as it began: one whole
    // version, never a mix.
    let opened = zseal::decrypt_to_vec(&stored, &[&passphrase()]).unwrap();
    assert!(
        opened == plain || (mode == Mode::Changed && opened == original),
        "{what}: the object is not the source"
    );

    let mut ledger = Ledger::default();
    let most = (plain.len() / CHUNK) as u64 + 2;
    let mut unknown = Vec::new();
    // A body the store received twice, byte for byte, is one sealing sent again (an HTTP
    // retry of the same request): opened once.
    let (mut bodies_seen, mut resent) = (std::collections::HashSet::new(), 0);
    for proxy in [&p, &refusing] {
        let bodies = proxy.seen.part_bodies.lock().unwrap();
        for (id, number, body) in bodies.iter() {
            if !bodies_seen.insert(blake3::hash(body)) {
                resent += 1;
                continue;
            }
            let id = unescape(id);
            let key = match keys.get(&id) {
                Some(k) => k.clone(),
                None => {
                    if !unknown.contains(&id) {
                        unknown.push(id.clone());
                    }
                    finished.clone()
                }
            };
            ledger.take(&key, (*number, body), most, &what);
        }
    }
    assert!(
        unknown.len() <= 1,
        "{what}: bodies of uploads whose key no journal or object gave: {unknown:?}"
    );
    assert!(ledger.frames as usize >= plain.len() / CHUNK, "{what}");
    // Every body opened: at these sizes the container's end is never cut from its last frames,
    // and a body of an upload whose key is not the one tried would not open either.
    assert_eq!(ledger.unframed, 0, "{what}: bodies that no key opened");
    // Pieced (FORMAT.md §14.6): every act of sealing is under a key no other act used, so no
    // nonce was used twice at all, not even for the same plaintext, in bodies that are not
    // the same bytes sent again.
    assert_eq!(
        ledger.seen.len() as u64,
        ledger.frames,
        "{what}: a nonce used twice"
    );
    // The levels depend on the machine's timing (the slow link raises them), so they are
    // shown, not asserted.
    eprintln!(
        "nonces: {what}: {runs} runs, {} frames opened, {} distinct nonces, {} bodies inside \
         the end, {resent} bodies received twice, adaptive levels logged {levels:?}",
        ledger.frames,
        ledger.seen.len(),
        ledger.unframed
    );
}

#[test]
fn no_nonce_ever_seals_two_plaintexts() {
    let Some(base) = moto() else { return };
    let b = bucket(base, "nonces");
    let runs: u64 = std::env::var("ZSEAL_NONCE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let first: u64 = std::env::var("ZSEAL_NONCE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for mode in [Mode::Kill, Mode::Adapt, Mode::Changed, Mode::Refused] {
        for seed in first..first + runs {
            one_sequence(base, &b, mode, seed);
        }
    }
}
