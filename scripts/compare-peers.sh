#!/usr/bin/env bash
# Times zseal against what a user would pick instead, in one run on the same file:
#   zstd -T0 | age,  age,  gpg --symmetric,  zstd -T0,  pigz,  b3sum
# and the way back (decrypt / decompress), each as a ratio to zseal's time.
#
#   scripts/compare-peers.sh FILE [RUNS]      (RUNS timed runs per command, median kept; default 3)
#
# Installs missing peers from Debian packages (zstd age gnupg pigz b3sum), builds zseal in
# release mode, and prints a Markdown table (also written to target/compare-peers.md).
# Outputs go to a temporary directory beside nothing else: every tool writes a real file, so
# all pay the same I/O. age and zseal encrypt to the same X25519 recipient; gpg uses a
# passphrase (AES-256, its default compression) as `gpg --symmetric` users do. zseal runs twice:
# writing to stdout like the peers, and with -o, where it fsyncs the file before renaming it
# into place (so a crash never leaves a torn output) -- a cost the peers do not pay.
set -euo pipefail

FILE=${1:?usage: scripts/compare-peers.sh FILE [RUNS]}
RUNS=${2:-3}
[ -f "$FILE" ] || { echo "compare-peers: $FILE is not a file" >&2; exit 1; }
cd "$(dirname "$0")/.."

need=()
for pair in zstd:zstd age:age gpg:gnupg pigz:pigz b3sum:b3sum; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "compare-peers: installing ${need[*]}" >&2
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release -q
ZSEAL=$PWD/target/release/zseal

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
age-keygen -o "$WORK/key" 2>/dev/null
RECIPIENT=$(age-keygen -y "$WORK/key")
echo "compare-peers passphrase" > "$WORK/pw"
export GNUPGHOME=$WORK/gnupg; mkdir -m 700 "$GNUPGHOME"

FILE=$FILE RUNS=$RUNS WORK=$WORK ZSEAL=$ZSEAL RECIPIENT=$RECIPIENT python3 - <<'EOF'
import os, statistics, subprocess, time, platform

F, W, Z, R = os.environ["FILE"], os.environ["WORK"], os.environ["ZSEAL"], os.environ["RECIPIENT"]
runs = int(os.environ["RUNS"])
size = os.path.getsize(F)
gpg = f"gpg --batch --yes --quiet --pinentry-mode loopback --passphrase-file {W}/pw"

# (label, what, command, output file, reference label)
encrypt = [
    ("zseal encrypt -r > out", "hash+compress+encrypt", f"{Z} encrypt -r {R} {F} > {W}/z.zseal", "z.zseal"),
    ("zseal encrypt -r -o out", "same, + fsync and rename", f"{Z} encrypt -r {R} -f -o {W}/z2.zseal {F}", "z2.zseal"),
    ("zstd -T0 -3 | age -r", "compress+encrypt", f"zstd -q -T0 -3 -c {F} | age -r {R} > {W}/a.zst.age", "a.zst.age"),
    ("age -r", "encrypt", f"age -r {R} -o {W}/a.age {F}", "a.age"),
    ("gpg --symmetric", "compress+encrypt", f"{gpg} --symmetric --cipher-algo AES256 -o {W}/g.gpg {F}", "g.gpg"),
    ("zstd -T0 -3", "compress", f"zstd -q -f -T0 -3 -o {W}/z.zst {F}", "z.zst"),
    ("pigz -6", "compress", f"pigz -6 -c {F} > {W}/p.gz", "p.gz"),
    ("b3sum", "hash", f"b3sum {F} > {W}/b3", None),
    ("zseal hash", "hash", f"{Z} hash {F} > {W}/zh", None),
]
decrypt = [
    ("zseal decrypt -i > out", "verify+decrypt+decompress", f"{Z} decrypt -i {W}/key {W}/z.zseal > {W}/out"),
    ("zseal decrypt -i -o out", "same, + fsync and rename", f"{Z} decrypt -i {W}/key -f -o {W}/out {W}/z.zseal"),
    ("age -d | zstd -d", "decrypt+decompress", f"age -d -i {W}/key {W}/a.zst.age | zstd -q -d -c > {W}/out"),
    ("age -d", "decrypt", f"age -d -i {W}/key -o {W}/out {W}/a.age"),
    ("gpg -d", "decrypt+decompress", f"{gpg} -d -o {W}/out {W}/g.gpg"),
    ("zstd -d", "decompress", f"zstd -q -f -d -o {W}/out {W}/z.zst"),
    ("pigz -d", "decompress", f"pigz -d -c {W}/p.gz > {W}/out"),
]

def timed(cmd):
    walls, cpus = [], []
    for _ in range(runs):
        r0 = os.times()
        t = time.perf_counter()
        subprocess.run(cmd, shell=True, check=True)
        walls.append(time.perf_counter() - t)
        r1 = os.times()
        cpus.append((r1.children_user - r0.children_user) + (r1.children_system - r0.children_system))
    i = sorted(range(runs), key=lambda k: walls[k])[runs // 2]
    return walls[i], cpus[i]

def version(tool):
    for args in ([tool, "--version"], [tool, "-V"]):
        try:
            out = subprocess.run(args, capture_output=True, text=True, timeout=10)
            line = (out.stdout or out.stderr).strip().splitlines()
            if line:
                return line[0]
        except Exception:
            pass
    return "?"

model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [
    f"File: {F}, {size} bytes ({size / 2**20:.1f} MiB); machine: {model}, {os.cpu_count()} cores; "
    f"median of {runs} runs; MB = 10^6 bytes; time ratio = tool / zseal (above 1: zseal is faster).",
    "Peers: " + "; ".join(version(t) for t in ["zstd", "age", "gpg", "pigz", "b3sum"]),
    "",
    "| direction | command | does | wall s | MB/s | CPU s | output / input | time ratio to zseal |",
    "|---|---|---|---:|---:|---:|---:|---:|",
]
ref = None
for label, does, cmd, out in encrypt:
    wall, cpu = timed(cmd)
    if ref is None:
        ref = wall
    ratio = f"{os.path.getsize(os.path.join(W, out)) / size:.4f}" if out else "-"
    lines.append(f"| encrypt | `{label}` | {does} | {wall:.3f} | {size / wall / 1e6:.0f} | {cpu:.2f} | {ratio} | {wall / ref:.2f} |")
ref = None
for label, does, cmd in decrypt:
    wall, cpu = timed(cmd)
    if ref is None:
        ref = wall
    if os.path.getsize(os.path.join(W, "out")) != size:
        raise SystemExit(f"compare-peers: {label} did not give back {size} bytes")
    lines.append(f"| decrypt | `{label}` | {does} | {wall:.3f} | {size / wall / 1e6:.0f} | {cpu:.2f} | - | {wall / ref:.2f} |")
text = "\n".join(lines) + "\n"
print(text)
os.makedirs("target", exist_ok=True)
open("target/compare-peers.md", "w").write(text)
EOF
