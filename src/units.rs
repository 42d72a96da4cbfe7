//! Sizes as people type them: `4M`, `64K`, `1G`, `512` (powers of 1024), and back.
//!
//! Every suffix is binary, as zstd reads them (`-B1MB`, `--memory=1MiB`) and rclone's `K`, `M`,
//! `G`: `1M`, `1MiB` and `1MB` are all 1,048,576 bytes, never 1,000,000. A size written for
//! zstd means the same here; an SI megabyte is written out (`1000000`).

use crate::error::{Error, Result};

/// Parses a byte count with an optional `K`, `M`, `G` or `T` suffix, any case, optionally
/// followed by `iB` or `B` (`B` alone: bytes): all powers of 1024, so `KB` = `KiB` = `K` = 1024
/// as in zstd. Overflow is an error.
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits);
    let bad = || {
        Error::InvalidOption(format!(
            "invalid size '{s}': use a whole number with an optional K, M, G or T suffix (powers \
             of 1024: 1M = 1MiB = 1MB = 1048576 bytes), e.g. 4M"
        ))
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let upper = suffix.to_ascii_uppercase();
    let unit = match upper.strip_suffix("IB") {
        Some(u) if !u.is_empty() => u,
        _ => upper.strip_suffix('B').unwrap_or(&upper),
    };
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// Formats a byte count with a binary unit, e.g. `4.0 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4m").unwrap(), 4 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("2MB").unwrap(), 2 << 20);
        // 1MB is 1 MiB, as zstd reads it, never 1,000,000.
        for one_mib in [
            "1M", "1m", "1MiB", "1mib", "1MB", "1mb", "1048576", "1048576B",
        ] {
            assert_eq!(parse_size(one_mib).unwrap(), 1 << 20, "{one_mib}");
        }
        assert_eq!(parse_size("3KiB").unwrap(), 3072);
        assert_eq!(parse_size("2T").unwrap(), 2 << 40);
        for bad in [
            "",
            "M",
            "4X",
            "-1",
            "1.5M",
            "1 M",
            "1MiBB",
            "1Mi",
            "1MBB",
            "1iB",
            "1BB",
            "99999999999999999999T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3), "3 B");
    }
}
