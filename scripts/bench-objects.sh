#!/usr/bin/env bash
# Object storage benchmarks (issue 25; figures in docs/OBJECTS.md and docs/PERFORMANCE.md):
# zseal against the ways people move encrypted data through S3 today, over the same bucket of a
# local S3 server fast enough not to be the bottleneck (s3s-fs, from crates.io, on tmpfs):
#
#   up:     zseal encrypt F -o s3://…        vs  zseal encrypt F | aws s3 cp - s3://…
#                                            vs  rclone copyto F crypt:… (a crypt remote over S3)
#   down:   zseal decrypt s3://… > /dev/null vs  aws s3 cp s3://… - | zseal decrypt > /dev/null
#                                            vs  rclone cat crypt:… > /dev/null
#   range:  1 MiB from the middle: zseal decrypt --range, bytes fetched (--json) and time,
#           vs downloading the object to take the same range from it
#   rekey:  zseal rekey s3://… in place (server-side copy) vs download, rekey, upload
#
# Usage: scripts/bench-objects.sh [--runs N] [FILE]    (default: the corpus's 1 GiB text.tar)
# Installs what it needs when missing: s3s-fs (cargo install into target/bench-tools), awscli
# (pip, into target/bench-venv), rclone (Debian), the corpus (shared/corpus/make_corpus.sh).
# Every server it starts listens on 127.0.0.1 and is stopped when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=5

# --- tools, server, corpus -------------------------------------------------------------------
# shellcheck source=scripts/s3-bench-server.sh
. "$root/scripts/s3-bench-server.sh" "$@"
"$zseal" keygen -o "$work/me.key" 2>/dev/null
"$zseal" keygen -o "$work/other.key" 2>/dev/null
me=$(sed -n 's/^# public key: //p' "$work/me.key")
other=$(sed -n 's/^# public key: //p' "$work/other.key")
rclone_crypt_config

size=$(stat -c %s "$file")
echo "# $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) cores; $(basename "$file") ($size bytes)"
echo "# server: s3s-fs 0.14.1 on tmpfs at 127.0.0.1; zseal $(git rev-parse --short HEAD); $(rclone version | head -1); $("${aws[@]}" --version 2>&1 | cut -d' ' -f1)"
race() { python3 scripts/race.py --runs "$runs" "$@"; }

echo "## up: $(basename "$file") into the bucket"
race \
  "zseal -o s3://=$zseal encrypt $file -r $me -q --force -o s3://bench/z.zseal" \
  "zseal | aws s3 cp -=$zseal encrypt $file -r $me -q | ${aws[*]} s3 cp --quiet - s3://bench/a.zseal" \
  "rclone crypt=rclone copyto --timeout 15s $file crypt:r.bin"

echo "## down: the same objects to /dev/null"
race \
  "zseal s3://=$zseal decrypt s3://bench/z.zseal -i $work/me.key > /dev/null" \
  "aws s3 cp - | zseal=${aws[*]} s3 cp --quiet s3://bench/a.zseal - | $zseal decrypt -i $work/me.key > /dev/null" \
  "rclone cat crypt=rclone cat --timeout 15s crypt:r.bin > /dev/null"

echo "## range: 1 MiB from the middle"
mid=$((size / 2))
"$zseal" decrypt s3://bench/z.zseal -i "$work/me.key" --range "$mid..$mid+1M" --json 2>&1 >/dev/null | head -1
race \
  "zseal --range=$zseal decrypt s3://bench/z.zseal -i $work/me.key --range $mid..$mid+1M > /dev/null" \
  "download, then range=${aws[*]} s3 cp --quiet s3://bench/a.zseal $work/dl.zseal && $zseal decrypt $work/dl.zseal -i $work/me.key --range $mid..$mid+1M > /dev/null; rm -f $work/dl.zseal"

echo "## rekey: replace the recipient set (the same one each time, so every run does the same work)"
# Of the object above, and of a 1 GiB object (1 GiB of incompressible bytes: the corpus's
# random.bin four times, further apart than any chunk, so it stays 1 GiB sealed).
random=$corpus/random.bin
[ -f "$random" ] || bash ../shared/corpus/make_corpus.sh "$corpus"
cat "$random" "$random" "$random" "$random" | "$zseal" encrypt -r "$me" -q -o s3://bench/g.zseal
"${aws[@]}" s3 cp --quiet s3://bench/g.zseal s3://bench/g2.zseal
for obj in z g; do
  "$zseal" rekey s3://bench/$obj.zseal -i "$work/me.key" -r "$me" -r "$other"
done
race \
  "zseal rekey s3:// in place=$zseal rekey s3://bench/z.zseal -i $work/me.key -r $me -r $other -q" \
  "download, rekey, upload=${aws[*]} s3 cp --quiet s3://bench/a.zseal $work/dl.zseal && $zseal rekey $work/dl.zseal -i $work/me.key -r $me -r $other -q && ${aws[*]} s3 cp --quiet $work/dl.zseal s3://bench/a.zseal; rm -f $work/dl.zseal"
echo "## rekey of the 1 GiB object"
race \
  "zseal rekey s3:// in place=$zseal rekey s3://bench/g.zseal -i $work/me.key -r $me -r $other -q" \
  "download, rekey, upload=${aws[*]} s3 cp --quiet s3://bench/g2.zseal $work/dl.zseal && $zseal rekey $work/dl.zseal -i $work/me.key -r $me -r $other -q && ${aws[*]} s3 cp --quiet $work/dl.zseal s3://bench/g2.zseal; rm -f $work/dl.zseal"
