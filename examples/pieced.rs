//! Seals a file as a pieced container (FORMAT.md §14), in pieces of a given size, or as a
//! version-1 container, through the same split writer on every core: the two sides of the cost
//! measurement of pieces (docs/PERFORMANCE.md §18), and an example of the library's pieced
//! writer. (The piece size is ignored for version 1: one range.)
//!
//! ```sh
//! cargo run --release --example pieced -- pieced IN OUT 64M    # pieces of 64 MiB
//! cargo run --release --example pieced -- v1 IN OUT 64M        # version 1, one range
//! cargo run --release --example pieced -- pieced IN OUT 16M 64K   # chunks of 64 KiB
//! zseal decrypt -i fixtures/keys/age.key OUT -o copy           # either opens with zseal
//! ```
//!
//! The recipient is the fixture key's (fixtures/keys/age.pub).

use std::io::{BufReader, Write};

use zseal::{seal_pieces, seal_range, EncryptOptions, RangeResult, SplitSeal, Threads};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, input, output, piece, chunk) = match &args[..] {
        [m, i, o, p] => (m, i, o, p, None),
        [m, i, o, p, c] => (m, i, o, p, Some(c)),
        _ => {
            return Err(
                "usage: pieced (pieced|v1) IN OUT PIECE_SIZE [CHUNK_SIZE] (e.g. 64M 64K)".into(),
            )
        }
    };
    let size = |s: &str| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(match (s.strip_suffix('M'), s.strip_suffix('K')) {
            (Some(m), _) => m.parse::<u64>()? << 20,
            (_, Some(k)) => k.parse::<u64>()? << 10,
            _ => s.parse()?,
        })
    };
    let piece = size(piece)?;
    let pieced = match mode.as_str() {
        "pieced" => true,
        "v1" => false,
        _ => return Err(format!("unknown mode {mode}: pieced or v1").into()),
    };
    let to = zseal::AgeRecipient::parse(
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/keys/age.pub"
        ))?
        .trim(),
    )?;
    let mut opts = EncryptOptions::default();
    if let Some(c) = chunk {
        opts = opts.chunk_size(size(c)? as usize);
    }
    let (coordinator, header) = match pieced {
        true => SplitSeal::pieced(&[&to], &opts)?,
        false => SplitSeal::new(&[&to], &opts)?,
    };
    let c = coordinator.task_key().chunk_size() as u64;
    let piece = piece.div_ceil(c).max(1) * c;
    let len = std::fs::metadata(input)?.len();
    let mut from = BufReader::with_capacity(1 << 20, std::fs::File::open(input)?);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(output)?);
    out.write_all(&header)?;
    // One writer either way, so the workers stay busy to the end: the run of pieces, or one
    // version-1 range.
    let mut w = match pieced {
        true => seal_pieces(
            coordinator.task_key(),
            0,
            len,
            piece / c,
            &mut out,
            Threads::Auto,
        )?,
        false => seal_range(coordinator.task_key(), 0, &mut out, Threads::Auto)?,
    };
    w.copy_from(&mut from)?;
    let (_, results): (_, Vec<RangeResult>) = w.finish_pieces()?;
    let (mut out, digest) = coordinator.write_trailer(&results, out)?;
    out.flush()?;
    eprintln!(
        "{} pieces, digest {}",
        results.len(),
        digest.unwrap_or_default()
    );
    Ok(())
}
