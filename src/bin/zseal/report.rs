//! The report of `--stats` (text) and `--json` (one object) after a command: bytes, ratio,
//! wall and CPU time, and the engine's time per stage.

use std::time::Duration;

use serde::Serialize;
use zseal::stats::StreamStats;
use zseal::units::human_bytes;

/// Which way a stream ran; names the stages in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// `zseal encrypt`.
    Encrypt,
    /// `zseal decrypt`.
    Decrypt,
    /// `zseal verify`: a decryption whose plaintext is dropped.
    Verify,
}

impl Direction {
    fn stage_names(self) -> [&'static str; 6] {
        match self {
            Direction::Encrypt => ["read", "hash", "compress", "encrypt", "write", "wait"],
            _ => ["read", "hash", "decompress", "decrypt", "write", "wait"],
        }
    }

    fn past(self) -> &'static str {
        match self {
            Direction::Encrypt => "encrypted",
            Direction::Decrypt => "decrypted",
            Direction::Verify => "verified",
        }
    }
}

/// The report printed by `--stats` and `--json`: a whole command's figures.
#[derive(Clone, Debug)]
pub struct Report {
    /// What ran.
    pub direction: Direction,
    /// Bytes read (plaintext when encrypting, container otherwise).
    pub bytes_in: u64,
    /// Bytes written (container when encrypting, plaintext otherwise; for verify, the plaintext
    /// checked).
    pub bytes_out: u64,
    /// Wall time of the whole command, prompt excluded.
    pub wall: Duration,
    /// CPU time (user, system) over the same span, when known.
    pub cpu: Option<(Duration, Duration)>,
    /// The stream's own counters.
    pub stream: StreamStats,
    /// For an object read by URL: body bytes fetched and GET requests sent.
    pub fetched: Option<(u64, u64)>,
}

#[derive(Serialize)]
struct JsonReport {
    command: Direction,
    bytes_in: u64,
    bytes_out: u64,
    ratio: f64,
    wall_s: f64,
    #[serde(flatten)]
    cpu: JsonCpu,
    threads: usize,
    chunks: u64,
    stages_s: serde_json::Map<String, serde_json::Value>,
    #[serde(flatten)]
    fetched: JsonFetched,
}

/// The CPU time of the run (flattened: the JSON keys are `cpu_s`, `cpu_user_s`, `cpu_sys_s`).
#[derive(Serialize)]
struct JsonCpu {
    cpu_s: Option<f64>,
    cpu_user_s: Option<f64>,
    cpu_sys_s: Option<f64>,
}

/// What the input object's reader fetched, when the input was an object.
#[derive(Serialize)]
struct JsonFetched {
    #[serde(skip_serializing_if = "Option::is_none")]
    fetched_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fetch_requests: Option<u64>,
}

impl Report {
    /// Output bytes / input bytes (0 for empty input).
    pub fn ratio(&self) -> f64 {
        if self.bytes_in == 0 {
            0.0
        } else {
            self.bytes_out as f64 / self.bytes_in as f64
        }
    }

    fn stages(&self) -> [(&'static str, Duration); 6] {
        let s = &self.stream.stages;
        let n = self.direction.stage_names();
        [
            (n[0], s.read),
            (n[1], s.hash),
            (n[2], s.codec),
            (n[3], s.cipher),
            (n[4], s.write),
            (n[5], s.wait),
        ]
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        let mut stages = serde_json::Map::new();
        for (name, d) in self.stages() {
            stages.insert(name.into(), round(d.as_secs_f64()).into());
        }
        let cpu = self.cpu.map(|(u, s)| (u.as_secs_f64(), s.as_secs_f64()));
        let j = JsonReport {
            command: self.direction,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            ratio: round(self.ratio()),
            wall_s: round(self.wall.as_secs_f64()),
            cpu: JsonCpu {
                cpu_s: cpu.map(|(u, s)| round(u + s)),
                cpu_user_s: cpu.map(|(u, _)| round(u)),
                cpu_sys_s: cpu.map(|(_, s)| round(s)),
            },
            threads: self.stream.threads,
            chunks: self.stream.chunks,
            stages_s: stages,
            fetched: JsonFetched {
                fetched_bytes: self.fetched.map(|f| f.0),
                fetch_requests: self.fetched.map(|f| f.1),
            },
        };
        serde_json::to_string(&j).expect("a report serializes")
    }

    /// Human-readable lines.
    pub fn to_text(&self) -> String {
        let wall = self.wall.as_secs_f64();
        let rate = |b: u64| {
            if wall > 0.0 {
                format!("{}/s", human_bytes((b as f64 / wall) as u64))
            } else {
                "-".into()
            }
        };
        let mut t = format!(
            "zseal: {} {} -> {} (ratio {:.4}) in {:.3} s: {} in, {} out\n",
            self.direction.past(),
            human_bytes(self.bytes_in),
            human_bytes(self.bytes_out),
            self.ratio(),
            wall,
            rate(self.bytes_in),
            rate(self.bytes_out),
        );
        match self.cpu {
            Some((u, s)) => {
                t += &format!(
                    "  cpu:     {:.3} s (user {:.3}, system {:.3}) = {:.2} cores busy\n",
                    (u + s).as_secs_f64(),
                    u.as_secs_f64(),
                    s.as_secs_f64(),
                    if wall > 0.0 {
                        (u + s).as_secs_f64() / wall
                    } else {
                        0.0
                    }
                )
            }
            None => t += "  cpu:     unknown on this platform\n",
        }
        t += &format!(
            "  threads: {}, chunks: {}\n  stages (s; hash/{}/{}, and reads and writes the workers do, are summed over them; the rest is the main thread's):\n",
            self.stream.threads,
            self.stream.chunks,
            self.direction.stage_names()[2],
            self.direction.stage_names()[3],
        );
        for (name, d) in self.stages() {
            t += &format!("    {name:<11}{:>9.3}\n", d.as_secs_f64());
        }
        if let Some((bytes, requests)) = self.fetched {
            t += &format!("  fetched: {bytes} bytes in {requests} GET requests\n");
        }
        t
    }
}

/// Microsecond precision is plenty and keeps the JSON short.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use zseal::stats::Stages;

    fn report() -> Report {
        Report {
            fetched: None,
            direction: Direction::Encrypt,
            bytes_in: 1000,
            bytes_out: 250,
            wall: Duration::from_millis(1500),
            cpu: Some((Duration::from_millis(2000), Duration::from_millis(500))),
            stream: StreamStats {
                chunks: 3,
                frames_opened: 3,
                threads: 2,
                stages: Stages {
                    read: Duration::from_millis(100),
                    hash: Duration::from_millis(200),
                    codec: Duration::from_millis(1200),
                    cipher: Duration::from_millis(300),
                    write: Duration::from_millis(50),
                    wait: Duration::from_millis(900),
                },
            },
        }
    }

    #[test]
    fn json_has_every_figure() {
        let v: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(v["command"], "encrypt");
        assert_eq!(v["bytes_in"], 1000);
        assert_eq!(v["bytes_out"], 250);
        assert_eq!(v["ratio"], 0.25);
        assert_eq!(v["wall_s"], 1.5);
        assert_eq!(v["cpu_s"], 2.5);
        assert_eq!(v["threads"], 2);
        assert_eq!(v["chunks"], 3);
        assert_eq!(v["stages_s"]["compress"], 1.2);
        assert_eq!(v["stages_s"]["encrypt"], 0.3);
        assert_eq!(v["stages_s"]["wait"], 0.9);
    }

    #[test]
    fn decrypt_names_its_stages() {
        let mut r = report();
        r.direction = Direction::Decrypt;
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["stages_s"]["decompress"], 1.2);
        assert_eq!(v["stages_s"]["decrypt"], 0.3);
        let text = r.to_text();
        assert!(text.contains("decrypted"), "{text}");
        assert!(text.contains("decompress"), "{text}");
        assert!(text.contains("1.67 cores busy"), "{text}");
    }
}
