#!/usr/bin/env bash
# The S3 gateway's benchmark (issue 45 §9; figures in docs/PERFORMANCE.md §13): a PUT and a GET
# of FILE with the aws CLI (its defaults: multipart in 8 MiB parts, 10 requests at once), to a
# file on tmpfs and back, interleaved rounds (scripts/race.py), medians:
#
#   plain:    straight to s3s-fs (a plain S3 server on tmpfs, no encryption): the baseline
#   gw dir:   through `zseal serve s3` with a directory backend on tmpfs
#   gw s3:    through `zseal serve s3` whose backend is s3://bench/gw on that same s3s-fs
#   rclone:   rclone's crypt remote over that s3s-fs (symmetric, no compression), as a peer
#
# Usage: scripts/bench-gateway.sh [--runs N] [FILE]     (default FILE: 1 GiB of random bytes)
# Installs what it needs when missing (scripts/s3-bench-server.sh): s3s-fs, awscli, rclone.
# Every server listens on 127.0.0.1 and is stopped when the script ends. Also prints each
# gateway's CPU seconds (user+system, from /proc) over all its rounds. ZSEAL_BENCH_GATEWAY_ARGS
# adds arguments to both gateways (e.g. `--max-requests 10`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=5
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
made=
if [ $# -eq 0 ]; then
  made=$(mktemp /dev/shm/zseal-bench-gateway.XXXXXX)
  head -c $((1 << 30)) /dev/urandom >"$made"
  set -- "$made"
fi
# shellcheck source=scripts/s3-bench-server.sh
. "$root/scripts/s3-bench-server.sh" --runs "$runs" "$@"
gateways=()
stop_all() {
  for p in "${gateways[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "$made" ] || rm -f "$made"
  s3_bench_stop
}
trap stop_all EXIT

"$zseal" keygen -o "$work/me.key" 2>/dev/null
me=$(sed -n 's/^# public key: //p' "$work/me.key")
echo "gwkey gwsecret-0123456789" >"$work/creds"
mkdir -p "$work/vault"
# start_gateway NAME ROOT: starts `zseal serve s3 ROOT` on a free port; sets $port_NAME.
start_gateway() {
  local log=$work/$1.log
  : >"$log"
  "$zseal" serve s3 "$2" --listen 127.0.0.1:0 -r "$me" -i "$work/me.key" \
    --credentials "$work/creds" -q ${ZSEAL_BENCH_GATEWAY_ARGS:-} 2>"$log" &
  gateways+=($!)
  eval "pid_$1=$!"
  for _ in $(seq 100); do
    grep -q "listening on" "$log" && break
    sleep 0.1
  done
  eval "port_$1=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")"
}
start_gateway dir "$work/vault"
start_gateway s3 s3://bench/gw
gw() { echo "env AWS_ACCESS_KEY_ID=gwkey AWS_SECRET_ACCESS_KEY=gwsecret-0123456789 ${aws[0]} --endpoint-url http://127.0.0.1:$1"; }
plain="${aws[*]}"
dir=$(gw "$port_dir")
s3=$(gw "$port_s3")
$dir s3 mb s3://bench >/dev/null
# s3s-fs lists a missing prefix as present: the bucket may exist already.
$s3 s3 mb s3://bench >/dev/null 2>&1 || true
rclone_crypt_config

size=$(stat -c %s "$file")
echo "# $(basename "$file") ($size bytes); s3s-fs 0.14.1 on tmpfs; zseal $(git rev-parse --short HEAD) (release);" \
  "$("${aws[@]}" --version 2>&1 | cut -d' ' -f1); $(rclone version | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
c0_dir=$(cpu "$pid_dir")
c0_s3=$(cpu "$pid_s3")
back=$work/back.bin
echo "## PUT $(basename "$file")"
python3 scripts/race.py --runs "$runs" \
  "plain=$plain s3 cp --quiet $file s3://bench/plain.bin" \
  "gw dir=$dir s3 cp --quiet $file s3://bench/obj.bin" \
  "gw s3=$s3 s3 cp --quiet $file s3://bench/obj.bin" \
  "rclone crypt=rclone copyto $file crypt:obj.bin"
echo "## GET it back into tmpfs"
python3 scripts/race.py --runs "$runs" --setup "rm -f $back" \
  "plain=$plain s3 cp --quiet s3://bench/plain.bin $back" \
  "gw dir=$dir s3 cp --quiet s3://bench/obj.bin $back" \
  "gw s3=$s3 s3 cp --quiet s3://bench/obj.bin $back" \
  "rclone crypt=rclone copyto crypt:obj.bin $back"
echo "# gateway CPU over all rounds: dir $(awk "BEGIN {print $(cpu "$pid_dir") - $c0_dir}") s," \
  "s3 $(awk "BEGIN {print $(cpu "$pid_s3") - $c0_s3}") s"
# What came back is what went up, through each path.
for get in "$plain s3 cp --quiet s3://bench/plain.bin" "$dir s3 cp --quiet s3://bench/obj.bin" \
  "$s3 s3 cp --quiet s3://bench/obj.bin" "rclone copyto crypt:obj.bin"; do
  rm -f "$back"
  $get "$back"
  cmp "$file" "$back" || { echo "$get: differs from $file" >&2; exit 1; }
done
