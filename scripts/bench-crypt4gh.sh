#!/usr/bin/env bash
# Crypt4GH benchmarks (issue 44 §6, docs/PERFORMANCE.md "Crypt4GH"): on the 1 GiB text tar of the
# standard corpus (../shared/corpus/make_corpus.sh), one recipient, to /dev/null and into tmpfs:
#   encrypt:  zseal encrypt --format crypt4gh vs the GA4GH reference `crypt4gh encrypt` (PyPI
#             crypt4gh 1.8.6, libsodium, one core) vs zseal's own container with
#             `-c none --cipher chacha20-poly1305` (the same cipher, no codec: the engine's cost)
#   decrypt:  zseal decrypt of the file the reference wrote vs `crypt4gh decrypt` vs zseal decrypt
#             of the container
#   range:    1 MiB from the middle: zseal decrypt --range vs the reference's decrypt --range
# Interleaved runs with scripts/race.py, medians and ratios to the first command.
#
# Usage: scripts/bench-crypt4gh.sh [--runs N] [CORPUS_DIR]
# Needs: the reference in the test environment (scripts/test-all makes target/pyenv), a release
# build of zseal (built here).
set -euo pipefail
. "$(dirname "$0")/bench-args.sh" c4gh "$@"
ref=$root/target/pyenv/bin/crypt4gh
[ -x "$ref" ] || { echo "bench-crypt4gh: run scripts/test-all once (it installs crypt4gh into target/pyenv)" >&2; exit 1; }
src=$corpus/text.tar
[ -f "$src" ] || { echo "bench-crypt4gh: run ../shared/corpus/make_corpus.sh $corpus" >&2; exit 1; }
bench_build_zseal

[ -f "$work/me.sec" ] || "$root/target/pyenv/bin/crypt4gh-keygen" --sk "$work/me.sec" --pk "$work/me.pub" --nocrypt -f
sk=$work/me.sec
pk=$work/me.pub
ref_file=$work/text.tar.ref.c4gh
[ -f "$ref_file" ] || "$ref" encrypt --recipient_pk "$pk" < "$src" > "$ref_file"
container=$work/text.tar.zseal
age_key=$work/age.key
[ -f "$age_key" ] || "$zseal" keygen -o "$age_key" 2>/dev/null
age_pub=$("$zseal" keygen -y "$age_key")
[ -f "$container" ] || "$zseal" encrypt -c none --cipher chacha20-poly1305 -r "$age_pub" "$src" -o "$container"

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(lscpu | grep -o 'avx512[a-z]*' | head -1 || true)"
echo "## encrypt text.tar ($(stat -c %s "$src") bytes) to /dev/null"
python3 "$root/scripts/race.py" --runs "$runs" \
  "zseal c4gh=$zseal encrypt --format crypt4gh -R $pk $src -o /dev/null" \
  "reference=$ref encrypt --recipient_pk $pk < $src > /dev/null" \
  "zseal container=$zseal encrypt -c none --cipher chacha20-poly1305 -r $age_pub $src -o /dev/null"
echo "## encrypt text.tar into tmpfs"
python3 "$root/scripts/race.py" --runs "$runs" --setup "rm -f /dev/shm/bench-c4gh-*" \
  "zseal c4gh=$zseal encrypt --format crypt4gh -R $pk $src -o /dev/shm/bench-c4gh-z" \
  "reference=$ref encrypt --recipient_pk $pk < $src > /dev/shm/bench-c4gh-r" \
  "zseal container=$zseal encrypt -c none --cipher chacha20-poly1305 -r $age_pub $src -o /dev/shm/bench-c4gh-c"
echo "## decrypt the reference's file ($(stat -c %s "$ref_file") bytes) to /dev/null"
python3 "$root/scripts/race.py" --runs "$runs" \
  "zseal c4gh=$zseal decrypt -i $sk $ref_file -o /dev/null" \
  "reference=$ref decrypt --sk $sk < $ref_file > /dev/null" \
  "zseal container=$zseal decrypt -i $age_key $container -o /dev/null"
mid=$(( $(stat -c %s "$src") / 2 + 12345 ))
echo "## 1 MiB range at byte $mid"
python3 "$root/scripts/race.py" --runs "$runs" \
  "zseal c4gh=$zseal decrypt -i $sk $ref_file --range $mid..+1M -o /dev/null" \
  "reference=$ref decrypt --sk $sk --range $mid-$((mid + 1048576)) < $ref_file > /dev/null"
rm -f /dev/shm/bench-c4gh-*
