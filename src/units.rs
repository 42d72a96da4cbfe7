//! Sizes as people type them: `4M`, `64K`, `1G`, `512` (powers of 1024), and back.

use crate::error::{Error, Result};

/// Parses a byte count with an optional `K`, `M`, `G` or `T` suffix (powers of 1024; `KiB` and
/// `KB` are accepted as the same). Overflow is an error.
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits);
    let bad = || {
        Error::InvalidOption(format!(
            "invalid size '{s}': use a number with an optional K, M, G or T suffix, e.g. 4M"
        ))
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let shift = match suffix
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
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
        for bad in ["", "M", "4X", "-1", "1.5M", "99999999999999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3), "3 B");
    }
}
