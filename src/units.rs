//! Sizes as people type them: `4M`, `64K`, `1G`, `512` (powers of 1024).

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

/// Parses a byte range: `START..END` (END exclusive), `START..` (to the end) or
/// `START..START+LEN`; every number takes the suffixes of [`parse_size`]. Returns the start and
/// the end (`None`: to the end).
pub fn parse_range(s: &str) -> Result<(u64, Option<u64>)> {
    let bad = |why: &str| {
        Error::InvalidOption(format!(
            "invalid range '{s}': {why}; use START..END, START.. or START..START+LEN, e.g. 10G..10G+64M"
        ))
    };
    let (a, b) = s.split_once("..").ok_or_else(|| bad("no '..'"))?;
    let start = parse_size(a)?;
    if b.trim().is_empty() {
        return Ok((start, None));
    }
    let mut end = 0u64;
    for term in b.split('+') {
        end = end
            .checked_add(parse_size(term)?)
            .ok_or_else(|| bad("the end overflows"))?;
    }
    if end < start {
        return Err(bad("it ends before it starts"));
    }
    Ok((start, Some(end)))
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
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("10..20").unwrap(), (10, Some(20)));
        assert_eq!(parse_range("1K..").unwrap(), (1024, None));
        assert_eq!(
            parse_range("10G..10G+64M").unwrap(),
            (10 << 30, Some((10 << 30) + (64 << 20)))
        );
        assert_eq!(parse_range("5..5").unwrap(), (5, Some(5)));
        for bad in [
            "10",
            "20..10",
            "..5",
            "a..b",
            "1..2+",
            "1..99999999999T+99999999999T",
        ] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
        assert_eq!(human_bytes(3), "3 B");
    }
}
