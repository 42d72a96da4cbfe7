//! `zseal bench --records`: the user's own records (one per line) sealed and opened one by one
//! with [`crate::records`], per codec and cipher, with and without a zstd dictionary.
//!
//! Without a dictionary from the caller, one is trained on the first half of the records (at most
//! 200,000) and every row is measured on the others, so no row is measured on what it trained on
//! (measured on the records it trained on, a dictionary looks 10 % better than it is).

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::records::{Dictionary, Opener, RecordCipher, RecordKey, Sealer, SealerOptions};

/// At most this many records are measured.
pub const MAX_MEASURED: usize = 100_000;
/// The dictionary size trained when the caller gives none.
pub const TRAINED_DICT_SIZE: usize = 64 * 1024;

/// One measured codec and cipher.
#[derive(Clone, Debug, Serialize)]
pub struct RecordRow {
    /// `none`, `lz4`, `zstd:3`, or `zstd+dict:3`.
    pub codec: String,
    /// The record cipher.
    pub cipher: &'static str,
    /// Records measured.
    pub records: usize,
    /// Their bytes.
    pub bytes_in: u64,
    /// Sealed bytes, every overhead included (header, nonce, tag, dictionary id).
    pub bytes_out: u64,
    /// `bytes_out / bytes_in`.
    pub ratio: f64,
    /// Mean sealed bytes per record.
    pub bytes_per_record: f64,
    /// Median (over runs) nanoseconds to seal one record.
    pub seal_ns: f64,
    /// Median nanoseconds to open one record.
    pub open_ns: f64,
    /// Share of records the codec alone made larger (or no smaller), so they were stored raw.
    pub grew: f64,
}

/// The dictionary the rows were measured with, and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct DictionaryUsed {
    /// Its id.
    pub id: u32,
    /// Its size in bytes.
    pub bytes: usize,
    /// `given` or `trained on N records`.
    pub origin: String,
}

/// Splits `data` into records at `\n` (empty lines skipped).
pub fn split_records(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n')
        .filter(|r| !r.is_empty())
        .collect()
}

/// Measures every codec and cipher on `records`, `runs` times each (median reported).
pub fn run(
    records: &[&[u8]],
    dictionary: Option<Arc<Dictionary>>,
    runs: usize,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<(Vec<RecordRow>, DictionaryUsed)> {
    if records.len() < 100 {
        return Err(Error::InvalidOption(format!(
            "only {} records: give a file with at least 100 records, one per line",
            records.len()
        )));
    }
    let (dict, measured, origin) = match dictionary {
        Some(d) => (d, records, "given".to_string()),
        None => {
            let n = (records.len() / 2).min(200_000);
            let d = Dictionary::train(&records[..n], TRAINED_DICT_SIZE)?;
            (
                Arc::new(d),
                &records[n..],
                format!("trained on the first {n} records"),
            )
        }
    };
    let measured = &measured[..measured.len().min(MAX_MEASURED)];
    let used = DictionaryUsed {
        id: dict.id(),
        bytes: dict.as_bytes().len(),
        origin,
    };
    let key = RecordKey::generate()?;
    let cases: Vec<(Codec, bool)> = vec![
        (Codec::None, false),
        (Codec::Lz4, false),
        (Codec::Zstd(1), false),
        (Codec::Zstd(3), false),
        (Codec::Zstd(3), true),
        (Codec::Zstd(19), true),
    ];
    let ciphers = [RecordCipher::Aes256GcmSiv, RecordCipher::XChaCha20Poly1305];
    let total = cases.len() * ciphers.len();
    let mut rows = Vec::new();
    for cipher in ciphers {
        for &(codec, with_dict) in &cases {
            let name = match (codec, with_dict) {
                (Codec::Zstd(l), true) => format!("zstd+dict:{l}"),
                (Codec::Zstd(l), false) => format!("zstd:{l}"),
                (c, _) => c.name(),
            };
            progress(rows.len(), total, &format!("{name} {cipher}"));
            let dicts = if with_dict {
                vec![dict.clone()]
            } else {
                vec![]
            };
            let opts = SealerOptions {
                codec,
                cipher,
                dictionary: with_dict.then(|| dict.clone()),
            };
            let mut sealer = Sealer::new(&key, opts)?;
            let mut opener = Opener::new(&key, &dicts)?;
            let mut grew = 0usize;
            if codec != Codec::None {
                for r in measured {
                    if sealer.compressed_len(r)? >= r.len() {
                        grew += 1;
                    }
                }
            }
            let mut seal_times = Vec::new();
            let mut open_times = Vec::new();
            let mut sealed: Vec<Vec<u8>> = measured.iter().map(|_| Vec::new()).collect();
            let mut plain = Vec::new();
            for _ in 0..runs.max(1) {
                let t = Instant::now();
                for (r, out) in measured.iter().zip(sealed.iter_mut()) {
                    sealer.seal_into(r, b"", out)?;
                }
                seal_times.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                for s in &sealed {
                    opener.open_into(s, b"", &mut plain)?;
                }
                open_times.push(t.elapsed().as_secs_f64());
            }
            // Every record opened to what was sealed (checked outside the timed loops).
            for (r, s) in measured.iter().zip(&sealed) {
                if opener.open(s, b"")? != *r {
                    return Err(Error::Bug("a record did not open to itself".into()));
                }
            }
            let n = measured.len() as f64;
            let bytes_in: u64 = measured.iter().map(|r| r.len() as u64).sum();
            let bytes_out: u64 = sealed.iter().map(|s| s.len() as u64).sum();
            rows.push(RecordRow {
                codec: name,
                cipher: cipher.name(),
                records: measured.len(),
                bytes_in,
                bytes_out,
                ratio: bytes_out as f64 / bytes_in.max(1) as f64,
                bytes_per_record: bytes_out as f64 / n,
                seal_ns: median(&mut seal_times) * 1e9 / n,
                open_ns: median(&mut open_times) * 1e9 / n,
                grew: grew as f64 / n,
            });
        }
    }
    progress(total, total, "");
    Ok((rows, used))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_every_overhead_and_name_the_dictionary() {
        let lines: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!(
                    r#"{{"id":{i},"name":"user{}","email":"user{}@example.com","active":true,"plan":"team","created":"2026-11-{:02}T10:00:00Z","score":{}}}"#,
                    i % 97,
                    i % 97,
                    1 + i % 28,
                    i * 37 % 1000
                ).into_bytes())
            .collect();
        let refs: Vec<&[u8]> = lines.iter().map(|l| &l[..]).collect();
        let (rows, used) = run(&refs, None, 1, |_, _, _| {}).unwrap();
        assert_eq!(rows.len(), 12);
        assert!(used.origin.contains("1500"), "{}", used.origin);
        let none = &rows[0];
        assert_eq!(none.codec, "none");
        assert_eq!(none.records, 1500);
        assert_eq!(
            none.bytes_out,
            none.bytes_in + 30 * 1500,
            "30 bytes per stored record"
        );
        assert_eq!(none.grew, 0.0);
        let plain = rows.iter().find(|r| r.codec == "zstd:3").unwrap();
        let dict = rows.iter().find(|r| r.codec == "zstd+dict:3").unwrap();
        assert!(
            dict.bytes_out * 3 < plain.bytes_out * 2,
            "{plain:?} {dict:?}"
        );
        assert!(dict.ratio < 0.6 && dict.grew < 0.01, "{dict:?}");
        let x = rows
            .iter()
            .find(|r| r.cipher == "xchacha20-poly1305" && r.codec == "none");
        assert_eq!(x.unwrap().bytes_out, none.bytes_in + 42 * 1500);
        assert!(run(&refs[..50], None, 1, |_, _, _| {}).is_err());
    }
}
