//! The bench's outputs: a table, CSV, JSON, Markdown, the recommended setting, and an SVG chart
//! of throughput against ratio.

use std::fmt::Write as _;

use zseal::bench::Row;
use zseal::units::human_bytes;

/// How `zseal bench` prints its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON array of row objects.
    Json,
    /// A Markdown table.
    Markdown,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "markdown" | "md" => Ok(Format::Markdown),
            _ => Err(format!(
                "unknown format {s:?}: use table, csv, json or markdown"
            )),
        }
    }
}

const COLUMNS: [&str; 14] = [
    "group",
    "order",
    "direction",
    "codec",
    "level",
    "cipher",
    "hash",
    "chunk",
    "threads",
    "MB/s in",
    "MB/s out",
    "ratio",
    "CPU s",
    "note",
];

fn cells(r: &Row) -> [String; 14] {
    [
        r.group.to_string(),
        r.order.to_string(),
        r.direction.to_string(),
        r.codec.clone(),
        r.level.map_or(String::new(), |l| l.to_string()),
        r.cipher.to_string(),
        r.hash.to_string(),
        human_bytes(r.chunk as u64).replace(' ', ""),
        r.threads.to_string(),
        format!("{:.1}", r.measured.mb_s_in),
        format!("{:.1}", r.measured.mb_s_out),
        format!("{:.4}", r.measured.ratio),
        format!("{:.3}", r.measured.cpu_s),
        r.note.clone(),
    ]
}

/// The rows in `format`.
pub fn render(rows: &[Row], format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(rows).expect("rows serialize") + "\n",
        Format::Csv => csv(&COLUMNS, rows.iter().map(cells)),
        Format::Markdown => markdown(&COLUMNS, rows.iter().map(cells)),
        Format::Table => table(rows),
    }
}

/// A header line and one line per row, cells quoted where CSV needs it.
fn csv<R: AsRef<[String]>>(columns: &[&str], rows: impl Iterator<Item = R>) -> String {
    let mut s = columns.join(",") + "\n";
    for r in rows {
        let line: Vec<String> = r.as_ref().iter().map(|c| csv_cell(c)).collect();
        s += &(line.join(",") + "\n");
    }
    s
}

/// A Markdown table.
fn markdown<R: AsRef<[String]>>(columns: &[&str], rows: impl Iterator<Item = R>) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for r in rows {
        s += &format!("| {} |\n", r.as_ref().join(" | "));
    }
    s
}

fn csv_cell(c: &str) -> String {
    if c.contains([',', '"', '\n']) {
        format!("\"{}\"", c.replace('"', "\"\""))
    } else {
        c.to_string()
    }
}

fn table(rows: &[Row]) -> String {
    let all: Vec<[String; 14]> = rows.iter().map(cells).collect();
    let mut width = COLUMNS.map(str::len);
    for c in &all {
        for (w, cell) in width.iter_mut().zip(c.iter()).take(13) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |c: &[String]| {
        let mut s = String::new();
        for (i, cell) in c.iter().enumerate() {
            if i == 13 {
                s += cell;
            } else if i >= 8 {
                let _ = write!(s, "{cell:>w$}  ", w = width[i]);
            } else {
                let _ = write!(s, "{cell:<w$}  ", w = width[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut s = line(&COLUMNS.map(String::from));
    let mut group = "";
    for (r, c) in rows.iter().zip(&all) {
        if r.group != group && !group.is_empty() {
            s += "\n";
        }
        group = r.group;
        s += &line(c);
    }
    s
}

/// The setting the bench recommends for the data it ran on, and why.
#[derive(Clone, Debug)]
pub struct Recommendation {
    /// The `--compress` value to pass, e.g. `zstd:3`.
    pub compress: String,
    /// Index of the recommended row in the rows given to [`recommend`].
    pub row: usize,
    /// One sentence per reason.
    pub why: Vec<String>,
}

fn codec_arg(r: &Row) -> String {
    match r.level {
        Some(l) => format!("{}:{l}", r.codec),
        None => r.codec.clone(),
    }
}

/// Picks the compression for this data from the `codec` rows (encrypt direction): the smallest
/// output among the settings at least a third as fast as the fastest one that compresses; `none`
/// when no setting saves 3%. Also says what the order rows showed.
pub fn recommend(rows: &[Row]) -> Option<Recommendation> {
    let codec: Vec<(usize, &Row)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.group == "codec" && r.direction == "encrypt")
        .collect();
    let compressing: Vec<&(usize, &Row)> =
        codec.iter().filter(|(_, r)| r.codec != "none").collect();
    let fastest = compressing
        .iter()
        .max_by(|a, b| a.1.measured.mb_s_in.total_cmp(&b.1.measured.mb_s_in))?;
    let best_ratio = compressing
        .iter()
        .map(|(_, r)| r.measured.ratio)
        .fold(f64::INFINITY, f64::min);
    let mut why = Vec::new();
    let (row, pick) = if best_ratio > 0.97 {
        let none = codec
            .iter()
            .find(|(_, r)| r.codec == "none")
            .unwrap_or(fastest);
        why.push(format!(
            "no compression saves even 3% on this data (best ratio {best_ratio:.3}): --compress none skips the work and runs at {:.0} MB/s",
            none.1.measured.mb_s_in
        ));
        *none
    } else {
        let floor = fastest.1.measured.mb_s_in / 3.0;
        let pick = compressing
            .iter()
            .filter(|(_, r)| r.measured.mb_s_in >= floor)
            .min_by(|a, b| {
                a.1.measured
                    .ratio
                    .total_cmp(&b.1.measured.ratio)
                    .then(b.1.measured.mb_s_in.total_cmp(&a.1.measured.mb_s_in))
            })
            .unwrap_or(fastest);
        why.push(format!(
            "{} gives the smallest output (ratio {:.3}) of the settings at least a third as fast as the fastest ({} at {:.0} MB/s); it encrypts at {:.0} MB/s",
            codec_arg(pick.1),
            pick.1.measured.ratio,
            codec_arg(fastest.1),
            fastest.1.measured.mb_s_in,
            pick.1.measured.mb_s_in
        ));
        if let Some(smaller) = compressing
            .iter()
            .filter(|(_, r)| r.measured.ratio < pick.1.measured.ratio)
            .min_by(|a, b| a.1.measured.ratio.total_cmp(&b.1.measured.ratio))
        {
            why.push(format!(
                "{} is smaller still (ratio {:.3}) but runs at only {:.0} MB/s: worth it for archives written once",
                codec_arg(smaller.1),
                smaller.1.measured.ratio,
                smaller.1.measured.mb_s_in
            ));
        }
        **pick
    };
    let order = |name: &str| {
        rows.iter()
            .find(|r| r.group == "order" && r.order == name && r.direction == "encrypt")
    };
    if let (Some(ce), Some(ec)) = (
        order("compress-then-encrypt"),
        order("encrypt-then-compress"),
    ) {
        why.push(format!(
            "compress before encrypting: ratio {:.3} against {:.3} the other way round (ciphertext does not compress)",
            ce.measured.ratio, ec.measured.ratio
        ));
    }
    Some(Recommendation {
        compress: codec_arg(pick),
        row,
        why,
    })
}

const GROUP_COLORS: [(&str, &str); 6] = [
    ("order", "#d62728"),
    ("codec", "#1f77b4"),
    ("cipher", "#2ca02c"),
    ("hash", "#9467bd"),
    ("chunk", "#ff7f0e"),
    ("threads", "#8c564b"),
];

fn point_label(r: &Row) -> String {
    match r.group {
        "order" => r.order.to_string(),
        "codec" => codec_arg(r),
        "cipher" => r.cipher.to_string(),
        "hash" => r.hash.to_string(),
        "chunk" => human_bytes(r.chunk as u64).replace(' ', ""),
        "threads" => format!("{} threads", r.threads),
        _ => String::new(),
    }
}

/// An SVG chart: encryption throughput (log scale) against ratio, one point per encrypt row,
/// coloured by question, the recommended setting ringed and explained under the chart.
pub fn svg_plot(rows: &[Row], rec: Option<&Recommendation>, title: &str) -> String {
    let (w, h) = (960.0, 660.0);
    let (left, right, top, bottom) = (80.0, 160.0, 64.0, 200.0);
    let pts: Vec<(usize, &Row)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.direction == "encrypt" && r.group != "records" && r.measured.mb_s_in > 0.0
        })
        .collect();
    let max_ratio = pts
        .iter()
        .map(|(_, r)| r.measured.ratio)
        .fold(1.05, f64::max);
    let (lo, hi) = pts
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), (_, r)| {
            (lo.min(r.measured.mb_s_in), hi.max(r.measured.mb_s_in))
        });
    let (ylo, yhi) = ((lo.max(0.1) / 1.5).log10(), (hi.max(1.0) * 1.5).log10());
    let x = |ratio: f64| left + ratio / max_ratio * (w - left - right);
    let y = |mbs: f64| top + (yhi - mbs.max(0.1).log10()) / (yhi - ylo) * (h - top - bottom);
    let (head, sub) = title.split_once(';').unwrap_or((title, ""));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"26\" font-size=\"16\">{}</text>\n<text x=\"{left}\" y=\"46\" fill=\"#555\">{}</text>\n",
        xml(head),
        xml(sub.trim())
    );
    // Axes, grid and ticks.
    let (x0, x1, y0, y1) = (left, w - right, top, h - bottom);
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{y1}\" x2=\"{x1}\" y2=\"{y1}\" stroke=\"black\"/><line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{y1}\" stroke=\"black\"/>"
    );
    let mut t = 0.0;
    while t <= max_ratio + 1e-9 {
        let _ = writeln!(
            s,
            "<line x1=\"{0:.1}\" y1=\"{y0}\" x2=\"{0:.1}\" y2=\"{y1}\" stroke=\"#eee\"/><text x=\"{0:.1}\" y=\"{1}\" text-anchor=\"middle\">{t:.1}</text>",
            x(t),
            y1 + 18.0
        );
        t += 0.1;
    }
    let mut decade = 10f64.powf(ylo.floor());
    while decade.log10() <= yhi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v.log10() >= ylo && v.log10() <= yhi {
                let _ = writeln!(
                    s,
                    "<line x1=\"{x0}\" y1=\"{0:.1}\" x2=\"{x1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\">{v}</text>",
                    y(v),
                    x0 - 6.0,
                    y(v) + 4.0
                );
            }
        }
        decade *= 10.0;
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ratio = output / input (smaller is better) →</text>",
        (x0 + x1) / 2.0,
        y1 + 38.0
    );
    let _ = writeln!(
        s,
        "<text transform=\"translate(22 {}) rotate(-90)\" text-anchor=\"middle\">encrypt throughput, MB/s in (log scale) →</text>",
        (y0 + y1) / 2.0
    );
    // Points; a label that would overlap one already placed moves, or is left to the tooltip.
    let mut placed: Vec<(f64, f64, f64)> = Vec::new();
    for (i, r) in &pts {
        let color = GROUP_COLORS
            .iter()
            .find(|(g, _)| *g == r.group)
            .map_or("#555", |(_, c)| c);
        let (px, py) = (x(r.measured.ratio), y(r.measured.mb_s_in));
        let label = point_label(r);
        let lw = 7.0 * label.len() as f64;
        let free = |ly: f64| {
            placed
                .iter()
                .all(|&(x0, x1, y0)| (ly - y0).abs() >= 13.0 || px + 7.0 > x1 || px + 7.0 + lw < x0)
        };
        let spot = [-6.0, 10.0, -19.0, 23.0, -32.0, 36.0]
            .iter()
            .map(|d| py + d)
            .find(|&ly| free(ly));
        let _ = write!(
            s,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"{color}\"><title>{}</title></circle>",
            xml(&format!(
                "{} {label}: {:.0} MB/s, ratio {:.3}",
                r.group, r.measured.mb_s_in, r.measured.ratio
            ))
        );
        if let Some(ly) = spot {
            placed.push((px + 7.0, px + 7.0 + lw, ly));
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{ly:.1}\" fill=\"{color}\">{}</text>",
                px + 9.0,
                xml(&label)
            );
        }
        s.push('\n');
        if rec.is_some_and(|rec| rec.row == *i) {
            let _ = writeln!(
                s,
                "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"13\" fill=\"none\" stroke=\"black\" stroke-width=\"2.5\"/>"
            );
        }
    }
    // Legend, one row under the axis title.
    for (k, (g, c)) in GROUP_COLORS.iter().enumerate() {
        let lx = left + 90.0 * k as f64;
        let ly = y1 + 60.0;
        let _ = writeln!(
            s,
            "<circle cx=\"{lx}\" cy=\"{}\" r=\"5\" fill=\"{c}\"/><text x=\"{}\" y=\"{}\">{g}</text>",
            ly,
            lx + 10.0,
            ly + 4.0
        );
    }
    // The recommendation and why.
    if let Some(rec) = rec {
        let _ = writeln!(
            s,
            "<text x=\"{left}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">Recommended (ringed): zseal encrypt --compress {}</text>",
            y1 + 92.0,
            xml(&rec.compress)
        );
        for (k, line) in rec.why.iter().enumerate() {
            let _ = writeln!(
                s,
                "<text x=\"{left}\" y=\"{}\">• {}</text>",
                y1 + 114.0 + 18.0 * k as f64,
                xml(line)
            );
        }
    }
    s + "</svg>\n"
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const RECORD_COLUMNS: [&str; 9] = [
    "codec",
    "cipher",
    "records",
    "in B/rec",
    "out B/rec",
    "out/in",
    "grew",
    "seal ns",
    "open ns",
];

/// The rows of `bench --records` in `format`; numbers right-aligned in the table.
pub fn render_records(rows: &[zseal::bench::records::RecordRow], format: Format) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.codec.clone(),
                r.cipher.to_string(),
                r.records.to_string(),
                format!("{:.1}", r.bytes_in as f64 / r.records as f64),
                format!("{:.1}", r.bytes_per_record),
                format!("{:.3}", r.ratio),
                format!("{:.1}%", r.grew * 100.0),
                format!("{:.0}", r.seal_ns),
                format!("{:.0}", r.open_ns),
            ]
        })
        .collect();
    match format {
        Format::Json => serde_json::to_string_pretty(rows).expect("rows serialize") + "\n",
        Format::Csv => csv(&RECORD_COLUMNS, cells.iter()),
        Format::Markdown => markdown(&RECORD_COLUMNS, cells.iter()),
        Format::Table => {
            let mut width = RECORD_COLUMNS.map(str::len);
            for c in &cells {
                for (w, cell) in width.iter_mut().zip(c) {
                    *w = (*w).max(cell.len());
                }
            }
            let header: Vec<String> = RECORD_COLUMNS.iter().map(|c| c.to_string()).collect();
            std::iter::once(&header)
                .chain(&cells)
                .map(|c| {
                    let mut s = String::new();
                    for (i, cell) in c.iter().enumerate() {
                        let _ = match i {
                            0 | 1 => write!(s, "{cell:<w$}  ", w = width[i]),
                            _ => write!(s, "{cell:>w$}  ", w = width[i]),
                        };
                    }
                    s.trim_end().to_string() + "\n"
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zseal::bench::{builtin_sample, Engine, Measured, Plan};

    #[test]
    fn a_measured_matrix_recommends_compressing_first() {
        let data = builtin_sample(256 << 10);
        let plan = Plan {
            full: false,
            max_threads: 2,
            runs: 1,
        };
        let mut rows = Vec::new();
        for mut case in plan.cases() {
            if !matches!(case.engine, Engine::Records(_)) {
                case.chunk = case.chunk.min(64 << 10);
            }
            rows.push(case.measure(&data, 1).unwrap()[0].clone());
        }
        let rec = recommend(&rows).unwrap();
        assert!(rec.compress != "none", "{rec:?}");
        assert!(rec
            .why
            .iter()
            .any(|w| w.contains("compress before encrypting")));
    }

    fn row(codec: &str, level: Option<i32>, ratio: f64, mbs: f64) -> Row {
        Row {
            group: "codec",
            order: "compress-then-encrypt",
            direction: "encrypt",
            codec: codec.into(),
            level,
            cipher: "aes-256-gcm",
            hash: "blake3",
            chunk: 4 << 20,
            threads: 2,
            measured: Measured {
                bytes_in: 1000,
                bytes_out: (1000.0 * ratio) as u64,
                ratio,
                mb_s_in: mbs,
                mb_s_out: mbs * ratio,
                wall_s: 1.0,
                cpu_s: 2.0,
            },
            note: String::new(),
        }
    }

    #[test]
    fn recommendation_trades_ratio_against_speed() {
        let rows = vec![
            row("zstd", Some(1), 0.30, 600.0),
            row("zstd", Some(3), 0.27, 400.0),
            row("zstd", Some(19), 0.20, 10.0),
            row("lz4", None, 0.45, 900.0),
            row("none", None, 1.0, 2000.0),
        ];
        let rec = recommend(&rows).unwrap();
        assert_eq!(rec.compress, "zstd:3");
        assert_eq!(rec.row, 1);
        assert!(rec.why[1].contains("zstd:19"), "{:?}", rec.why);
        // Incompressible data: nothing saves 3%, so none.
        let rows = vec![
            row("zstd", Some(3), 0.99, 400.0),
            row("lz4", None, 1.0, 900.0),
            row("none", None, 1.0, 2000.0),
        ];
        let rec = recommend(&rows).unwrap();
        assert_eq!(rec.compress, "none");
        assert_eq!(rec.row, 2);
    }

    #[test]
    fn formats_carry_every_row() {
        let rows = vec![
            row("zstd", Some(3), 0.25, 400.0),
            row("lz4", None, 0.4, 900.0),
        ];
        let json: serde_json::Value = serde_json::from_str(&render(&rows, Format::Json)).unwrap();
        let arr = json.as_array().unwrap();
        assert_eq!(arr.len(), 2);
        assert_eq!(arr[0]["order"], "compress-then-encrypt");
        assert_eq!(arr[0]["ratio"], 0.25);
        assert_eq!(arr[0]["level"], 3);
        assert_eq!(arr[1]["level"], serde_json::Value::Null);
        let csv = render(&rows, Format::Csv);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.starts_with("group,order,direction,codec,level"));
        let md = render(&rows, Format::Markdown);
        assert_eq!(md.lines().count(), 4);
        assert!(md.lines().all(|l| l.starts_with('|')));
        let table = render(&rows, Format::Table);
        assert!(table.contains("MB/s in") && table.contains("0.2500"));
        let rec = recommend(&rows);
        let svg = svg_plot(&rows, rec.as_ref(), "t; machine");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("Recommended (ringed): zseal encrypt --compress zstd:3"));
        assert!(svg.contains("stroke-width=\"2.5\""), "the ring");
    }
}
