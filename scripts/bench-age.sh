#!/usr/bin/env bash
# age benchmarks (docs/CLI.md "age files", docs/PERFORMANCE.md §6): on 1 GiB of random bytes and the
# 1 GiB kernel-source tar of the standard corpus:
#   decrypt:  a file sealed by Go age (`age -r`): zseal decrypt vs age -d vs rage -d (to /dev/null)
#   range:    1 MiB from its middle: zseal decrypt --range MID..+1M vs age -d | tail -c +MID | head -c 1M
#   encrypt:  zseal encrypt --format age (zstd inside, and -c none) vs age -r vs zstd -T0 | age -r,
#             each writing a file on tmpfs (/dev/shm), and each to /dev/null
#   the file zseal wrote: zseal decrypt vs age -d | zstd -d (to /dev/null)
# Interleaved runs with scripts/race.py, medians and ratios to zseal.
#
# Usage: scripts/bench-age.sh [--runs N] [CORPUS_DIR]
# Needs: age (Debian), rage (built here with cargo into target/bench-tools, optimised), openssl,
# the corpus (../shared/corpus/make_corpus.sh; the 1 GiB random file is made here the same way).
set -euo pipefail
. "$(dirname "$0")/bench-args.sh" age "$@"

command -v age >/dev/null || { echo "bench-age: install age (apt-get install age)" >&2; exit 1; }
rage=$root/target/bench-tools/bin/rage
if [ ! -x "$rage" ]; then
  cargo install rage --version 0.12.1 --locked --quiet --root "$root/target/bench-tools" \
    --target-dir "$root/target/bench-tools/build"
fi
bench_build_zseal

GiB=1073741824
random=$corpus/random_1G.bin
if [ ! -f "$random" ] || [ "$(stat -c %s "$random")" != $GiB ]; then
  # The corpus's random.bin, extended to 1 GiB: the same AES-256-CTR keystream of a fixed passphrase.
  { openssl enc -aes-256-ctr -pass pass:zseal-corpus -nosalt -pbkdf2 < /dev/zero 2>/dev/null || true; } |
    head -c $GiB > "$random.tmp"
  mv "$random.tmp" "$random"
fi
[ -f "$corpus/text.tar" ] || { echo "bench-age: run ../shared/corpus/make_corpus.sh $corpus" >&2; exit 1; }

key=$work/key.txt
[ -f "$key" ] || age-keygen -o "$key" 2>/dev/null
recipient=$(age-keygen -y "$key")

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(lscpu | grep -o 'avx512[a-z]*' | head -1 || true)"
for name in random_1G.bin text.tar; do
  src=$corpus/$name
  f=$work/$name.age
  [ -f "$f" ] || age -r "$recipient" -o "$f" "$src"
  echo "## decrypt $name ($(stat -c %s "$f") bytes sealed by age $(age --version))"
  python3 "$root/scripts/race.py" --runs "$runs" \
    "zseal=$zseal decrypt -i $key $f -o /dev/null" \
    "age=age -d -i $key $f > /dev/null" \
    "rage=$rage -d -i $key $f > /dev/null"
  mid=$((GiB / 2 + 12345))
  echo "## 1 MiB range at byte $mid of $name"
  python3 "$root/scripts/race.py" --runs "$runs" \
    "zseal=$zseal decrypt -i $key $f --range $mid..+1M -o /dev/null" \
    "full=$zseal decrypt -i $key $f -o /dev/null" \
    "age|tail=age -d -i $key $f | tail -c +$((mid + 1)) | head -c 1048576 > /dev/null"
  echo "## encrypt $name to a file on tmpfs"
  python3 "$root/scripts/race.py" --runs "$runs" --setup "rm -f /dev/shm/bench-*.age" \
    "zseal=$zseal encrypt --format age -r $recipient $src -o /dev/shm/bench-z.age" \
    "zseal -c none=$zseal encrypt --format age -c none -r $recipient $src -o /dev/shm/bench-n.age" \
    "age=age -r $recipient -o /dev/shm/bench-a.age $src" \
    "zstd|age=zstd -3 -T0 -q -c $src | age -r $recipient -o /dev/shm/bench-b.age"
  echo "## encrypt $name to /dev/null"
  python3 "$root/scripts/race.py" --runs "$runs" \
    "zseal=$zseal encrypt --format age -r $recipient $src -o /dev/null" \
    "zseal -c none=$zseal encrypt --format age -c none -r $recipient $src -o /dev/null" \
    "age=age -r $recipient -o /dev/null $src" \
    "zstd|age=zstd -3 -T0 -q -c $src | age -r $recipient -o /dev/null"
  z=$work/$name.zseal.age
  [ -f "$z" ] || "$zseal" encrypt --format age -r "$recipient" "$src" -o "$z"
  echo "## decrypt the age file zseal wrote of $name ($(stat -c %s "$z") bytes)"
  python3 "$root/scripts/race.py" --runs "$runs" \
    "zseal=$zseal decrypt -i $key $z -o /dev/null" \
    "age|zstd=age -d -i $key $z | zstd -d -q > /dev/null"
done
rm -f /dev/shm/bench-*.age
