#!/usr/bin/env python3
"""Engine figures of issue 2, side by side in one run: zseal against zstd on the same file.

Usage: scripts/bench-engine.py [--runs N] [--corpus DIR] [--stream-gib N]

Builds the corpus (../shared/corpus/make_corpus.sh) if needed, builds zseal in release mode,
then runs each command N times, interleaved so that machine noise hits all alike, and reports
medians and ratios:
  - encrypt (zstd:3, aes-256-gcm, blake3) against `zstd -3 -T0`;
  - decrypt against `zstd -d` (single-threaded by design);
  - container size against `zstd -3` output;
  - peak RSS of `zseal encrypt | zseal decrypt` with N GiB streaming through pipes.
The one-time Argon2 derivation is timed on its own (encrypting an empty input) and subtracted
from zseal's times, as the issue asks. Prints a Markdown table (also written to
target/bench-engine.md)."""
import argparse, os, resource, shutil, statistics, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, **kw)

def timed(cmd):
    """Wall seconds and CPU seconds (user + system of everything the command ran)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    sh(cmd, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu

def rss_kib(cmd, out):
    """Runs cmd under GNU time; returns peak RSS in KiB."""
    sh(f"/usr/bin/time -f %M -o {out} {cmd}")
    return int(open(out).read().split()[-1])

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--corpus", default=os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus"))
    ap.add_argument("--stream-gib", type=int, default=4)
    a = ap.parse_args()
    for tool, pkg in [("zstd", "zstd"), ("/usr/bin/time", "time")]:
        if not shutil.which(tool):
            sh(f"apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {pkg} >/dev/null")
    make = os.path.join(root, "..", "shared", "corpus", "make_corpus.sh")
    sh(f"bash {make} {a.corpus} >/dev/null")
    sh("cargo build --release -q", cwd=root)
    z = os.path.join(root, "target", "release", "zseal")
    f = os.path.join(a.corpus, "text.tar")
    size = os.path.getsize(f)
    tmp = tempfile.mkdtemp(prefix="zseal-bench-")
    pw = os.path.join(tmp, "pw")
    open(pw, "w").write("bench passphrase\n")
    zst, zs = os.path.join(tmp, "text.tar.zst"), os.path.join(tmp, "text.tar.zseal")
    empty = os.path.join(tmp, "empty.zseal")
    sh(f"zstd -3 -T0 -q -f {f} -o {zst}")
    sh(f"{z} encrypt {f} -o {zs} --passphrase-file {pw}")
    sh(f"{z} encrypt -o {empty} --passphrase-file {pw} < /dev/null")
    sh(f"cat {f} > /dev/null")  # warm the page cache
    cmds = {
        "kdf_enc": f"{z} encrypt --passphrase-file {pw} < /dev/null",
        "kdf_dec": f"{z} decrypt {empty} --passphrase-file {pw}",
        "zseal_enc": f"{z} encrypt {f} --passphrase-file {pw}",
        "zstd_enc": f"zstd -3 -T0 -q -c {f}",
        "zseal_dec": f"{z} decrypt {zs} --passphrase-file {pw}",
        "zstd_dec": f"zstd -d -q -c {zst}",
    }
    t = {k: [] for k in cmds}
    for _ in range(a.runs):
        for k, c in cmds.items():
            t[k].append(timed(c))
    # Medians of wall time, best (least disturbed) wall time, and medians of CPU time.
    m = {k: statistics.median(w for w, _ in v) for k, v in t.items()}
    best = {k: min(w for w, _ in v) for k, v in t.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in t.items()}
    enc = m["zseal_enc"] - m["kdf_enc"]
    dec = m["zseal_dec"] - m["kdf_dec"]
    enc_best = best["zseal_enc"] - best["kdf_enc"]
    dec_best = best["zseal_dec"] - best["kdf_dec"]
    mbs = lambda s: size / s / 1e6
    zs_size, zst_size = os.path.getsize(zs), os.path.getsize(zst)
    n = a.stream_gib
    cat = " ".join([f] * (n * (1 << 30) // size + 1))
    stream = f"sh -c 'cat {cat} | head -c {n << 30}'"
    er, dr = os.path.join(tmp, "enc.rss"), os.path.join(tmp, "dec.rss")
    sh(f"{stream} | /usr/bin/time -f %M -o {er} {z} encrypt --passphrase-file {pw} "
       f"| /usr/bin/time -f %M -o {dr} {z} decrypt --passphrase-file {pw} > /dev/null")
    rss_enc, rss_dec = (int(open(p).read().split()[-1]) for p in (er, dr))
    cpu_model = subprocess.run("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2", shell=True,
                         capture_output=True, text=True).stdout.strip()
    zver = subprocess.run("zstd -V", shell=True, capture_output=True, text=True).stdout.strip()
    cpu_dec = cpu["zseal_dec"] - cpu["kdf_dec"]
    cpu_enc = cpu["zseal_enc"] - cpu["kdf_enc"]
    rows = [
        ("encrypt throughput (zstd:3, aes-256-gcm, blake3), median", f"{mbs(enc):.0f} MB/s",
         f"`zstd -3 -T0`: {mbs(m['zstd_enc']):.0f} MB/s", f"{m['zstd_enc'] / enc:.2f}x", ">= 0.9x"),
        ("encrypt throughput, best run", f"{mbs(enc_best):.0f} MB/s",
         f"{mbs(best['zstd_enc']):.0f} MB/s", f"{best['zstd_enc'] / enc_best:.2f}x", ">= 0.9x"),
        ("decrypt throughput, median", f"{mbs(dec):.0f} MB/s",
         f"`zstd -d`: {mbs(m['zstd_dec']):.0f} MB/s", f"{m['zstd_dec'] / dec:.2f}x", ">= 1.5x"),
        ("decrypt throughput, best run", f"{mbs(dec_best):.0f} MB/s",
         f"{mbs(best['zstd_dec']):.0f} MB/s", f"{best['zstd_dec'] / dec_best:.2f}x", ">= 1.5x"),
        ("CPU seconds per GiB, encrypt / decrypt", f"{cpu_enc * (1 << 30) / size:.2f} / {cpu_dec * (1 << 30) / size:.2f}",
         f"{cpu['zstd_enc'] * (1 << 30) / size:.2f} / {cpu['zstd_dec'] * (1 << 30) / size:.2f}", "", "(noise-free cost)"),
        ("container size", f"{zs_size:,} B", f"`zstd -3`: {zst_size:,} B",
         f"{zs_size / zst_size:.4f}x", "<= 1.03x"),
        (f"peak RSS, {n} GiB through an encrypt→decrypt pipe", f"{rss_enc / 1024:.1f} / {rss_dec / 1024:.1f} MiB",
         "", "", "<= 64 MiB"),
        ("Argon2id derivation (once per file)", f"{m['kdf_enc'] * 1000:.0f} ms enc, {m['kdf_dec'] * 1000:.0f} ms dec",
         "", "", "excluded above"),
    ]
    out = [f"Machine: {os.cpu_count()} cores, {cpu_model}; {zver}",
           f"Corpus: text.tar ({size:,} B, first GiB of linux-source-6.1) from shared/corpus/make_corpus.sh",
           f"Command: scripts/bench-engine.py --runs {a.runs} (interleaved runs; Argon2 subtracted)", "",
           "| figure | zseal | peer | ratio | bar |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(out)
    print(text)
    os.makedirs(os.path.join(root, "target"), exist_ok=True)
    open(os.path.join(root, "target", "bench-engine.md"), "w").write(text + "\n")
    shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
