#!/usr/bin/env bash
# Streams GIB gibibytes (default 20), generated on the fly and never stored, through
#   zseal encrypt | zseal decrypt
# and checks that what came out is what went in (BLAKE3 of both ends), recording the peak RSS of
# both zseal processes and the wall time. The stream interleaves the corpus text (compressible) with
# its random file (incompressible, stored raw) so both chunk kinds are exercised.
# Usage: scripts/scale.sh [GIB] [CORPUS_DIR]
set -euo pipefail
gib=${1:-20}
corpus=${2:-${ZSEAL_CORPUS:-/tmp/zseal-corpus}}
root=$(cd "$(dirname "$0")/.." && pwd)
need() { command -v "$1" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; }
need b3sum b3sum
[ -x /usr/bin/time ] || need /usr/bin/time time
bash "$root/../shared/corpus/make_corpus.sh" "$corpus" >/dev/null
(cd "$root" && cargo build --release -q)
z="$root/target/release/zseal"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "scale passphrase" > "$tmp/pw"
total=$((gib << 30))
# Endless interleave of text (1 GiB) and random (256 MiB), cut at exactly $total bytes.
# The endless loop dies of SIGPIPE when head has enough; only head's status counts.
gen() { (set +o pipefail; while :; do cat "$corpus/text.tar" "$corpus/random.bin"; done | head -c "$total"); }
start=$(date +%s.%N)
gen | tee >(b3sum --no-names > "$tmp/in.b3") \
  | /usr/bin/time -f %M -o "$tmp/enc.rss" "$z" encrypt --passphrase-file "$tmp/pw" \
  | /usr/bin/time -f %M -o "$tmp/dec.rss" "$z" decrypt --passphrase-file "$tmp/pw" \
  | b3sum --no-names > "$tmp/out.b3"
end=$(date +%s.%N)
sleep 1 # let the input-side b3sum finish writing
in=$(cat "$tmp/in.b3"); out=$(cat "$tmp/out.b3")
secs=$(python3 -c "print(f'{$end - $start:.1f}')")
echo "streamed:        $gib GiB ($total bytes) through encrypt | decrypt in $secs s ($(python3 -c "print(f'{$total / ($end - $start) / 1e6:.0f}')") MB/s end to end)"
echo "peak RSS:        encrypt $(( $(cat "$tmp/enc.rss") / 1024 )) MiB, decrypt $(( $(cat "$tmp/dec.rss") / 1024 )) MiB"
echo "BLAKE3 in:       $in"
echo "BLAKE3 out:      $out"
if [ "$in" = "$out" ]; then echo "result:          identical"; else echo "result:          DIFFERENT"; exit 1; fi
