#!/usr/bin/env bash
# Issue 35's benchmark (figures in docs/PERFORMANCE.md, "Many machines, one object"): one file
# sealed into, verified in and decrypted out of a local S3 server, by
#
#   the command, one process:   zseal encrypt F -o s3://…, zseal verify s3://…,
#                               zseal decrypt s3://… -o s3://…
#   zseal.dask, 1 worker:       python -m zseal.dask … --scheduler (one worker process, every
#                               core to its task's engine)
#   zseal.dask, 2 workers:      the same with two worker processes (a core each)
#
# The server is moto's (from target/pyenv), not the s3s-fs of scripts/bench-objects.sh: s3s-fs
# 0.14 refuses a completion whose part numbers leave gaps ("invalid part order"), which S3 allows
# and a distributed seal needs (FORMAT.md §11.3). moto is slower; the first row (the command into
# s3s-fs) shows what moto costs the single process.
#
# The clusters are started before the race (`dask scheduler`, `dask worker`) and stay up, as a
# user's cluster would; each dask run still pays for Python's start and the client's connection.
# On one machine the workers share its cores: what two workers show here is the cost of
# splitting (seams, the coordinator's work, extra requests), not the gain of a second machine.
#
# Usage: scripts/bench-dask.sh [--runs N] [FILE]    (default: the corpus's 1 GiB text.tar)
# Needs target/pyenv (scripts/test-all makes it); builds the Python extension there in release.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=3
# shellcheck source=scripts/s3-bench-server.sh
. "$root/scripts/s3-bench-server.sh" "$@"
py=$root/target/pyenv/bin/python
s3s_endpoint=$AWS_ENDPOINT_URL
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/target/pyenv/bin/moto_server" -H 127.0.0.1 -p "$mport" >"$work/moto.log" 2>&1 &
moto=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$mport") 2>/dev/null && break
  sleep 0.1
done
export AWS_ENDPOINT_URL=http://127.0.0.1:$mport
"${aws[0]}" --endpoint-url "$AWS_ENDPOINT_URL" s3 mb s3://bench >/dev/null
(cd python && VIRTUAL_ENV=$root/target/pyenv PATH=$root/target/pyenv/bin:$PATH maturin develop --release --quiet)
"$zseal" keygen -o "$work/me.key" 2>/dev/null
me=$(sed -n 's/^# public key: //p' "$work/me.key")
cores=$(nproc)

# --- two clusters: 1 worker process with every core, and 2 with half each ------------------
pids=()
cluster() { # cluster NAME WORKERS THREADS
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$root/target/pyenv/bin/dask" scheduler --host 127.0.0.1 --port "$port" --no-dashboard \
    >"$work/$1.scheduler.log" 2>&1 &
  pids+=($!)
  "$root/target/pyenv/bin/dask" worker "tcp://127.0.0.1:$port" --nworkers "$2" --nthreads "$3" \
    --no-dashboard >"$work/$1.workers.log" 2>&1 &
  pids+=($!)
  "$py" -c "from distributed import Client; Client('tcp://127.0.0.1:$port', timeout=60).wait_for_workers($2, timeout=60)"
  addr="tcp://127.0.0.1:$port"
}
stop_all() {
  kill "${pids[@]}" "$moto" 2>/dev/null || true
  wait 2>/dev/null || true
  s3_bench_stop
}
trap stop_all EXIT
cluster one 1 1
one=$addr
cluster two 2 1
two=$addr

size=$(stat -c %s "$file")
echo "# $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $cores cores; $(basename "$file") ($size bytes)"
echo "# server: moto $("$py" -c 'import moto; print(moto.__version__)') at 127.0.0.1 (and s3s-fs 0.14.1 on tmpfs for the first row); zseal $(git rev-parse --short HEAD); dask $("$py" -c 'import distributed; print(distributed.__version__)')"
race() { python3 scripts/race.py --runs "$runs" "$@"; }
dask=("$py" -m zseal.dask)

echo "## encrypt: $(basename "$file") into the bucket"
race \
  "zseal encrypt -o s3:// (s3s-fs)=AWS_ENDPOINT_URL=$s3s_endpoint $zseal encrypt $file -r $me -q --force -o s3://bench/z.zseal" \
  "zseal encrypt -o s3://=$zseal encrypt $file -r $me -q --force -o s3://bench/z.zseal" \
  "zseal.dask, 1 worker=${dask[*]} encrypt $file s3://bench/d1.zseal -r $me -f --scheduler $one --threads $cores" \
  "zseal.dask, 2 workers=${dask[*]} encrypt $file s3://bench/d2.zseal -r $me -f --scheduler $two --threads $((cores / 2))"

echo "## verify: the object, whole"
race \
  "zseal verify s3://=$zseal verify s3://bench/z.zseal -i $work/me.key" \
  "zseal.dask, 1 worker=${dask[*]} verify s3://bench/z.zseal -i $work/me.key --scheduler $one --threads $cores" \
  "zseal.dask, 2 workers=${dask[*]} verify s3://bench/z.zseal -i $work/me.key --scheduler $two --threads $((cores / 2))"

echo "## decrypt: the object into another object"
race \
  "zseal decrypt -o s3://=$zseal decrypt s3://bench/z.zseal -i $work/me.key -q --force -o s3://bench/z.out" \
  "zseal.dask, 1 worker=${dask[*]} decrypt s3://bench/z.zseal s3://bench/d1.out -i $work/me.key -f --scheduler $one --threads $cores" \
  "zseal.dask, 2 workers=${dask[*]} decrypt s3://bench/z.zseal s3://bench/d2.out -i $work/me.key -f --scheduler $two --threads $((cores / 2))"
cmp <("${aws[0]}" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --quiet s3://bench/d2.out -) "$file" &&
  echo "# d2.out equals the input"
