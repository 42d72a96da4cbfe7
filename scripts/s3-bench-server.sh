# Shared by the object-store benchmarks (scripts/bench-objects.sh, scripts/bench-dask.sh), sourced
# with $root (the checkout) and $runs (the default) set and the script's arguments: takes
# [--runs N] [FILE] (sets $runs, $corpus, $file; the corpus is made when missing), builds zseal (release), installs s3s-fs (cargo, into
# target/bench-tools) and awscli (pip, into target/bench-venv) when missing, starts s3s-fs on tmpfs
# at 127.0.0.1 with a bucket "bench", stops it on exit, and exports the AWS_* settings that point
# every client at it. Sets $zseal, $work (a private tmpfs directory), $aws (an array), $server;
# s3_bench_stop (the EXIT trap) stops the server and removes $work; rclone_crypt_config writes
# $RCLONE_CONFIG: remote `s3` (the server) and `crypt` (rclone's crypt over s3:bench/rclone).
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
corpus=${ZSEAL_CORPUS:-/tmp/zseal-corpus}
file=${1:-$corpus/text.tar}
[ -f "$file" ] || bash "$root/../shared/corpus/make_corpus.sh" "$corpus"
tools=$root/target/bench-tools
if [ ! -x "$tools/bin/s3s-fs" ]; then
  # 0.14.1: the newest release that builds with this machine's Rust (0.17 needs 1.96).
  CARGO_TARGET_DIR=$root/target/bench-tools/build cargo install --locked --root "$tools" \
    s3s-fs@0.14.1 --features binary
fi
venv=$root/target/bench-venv
[ -x "$venv/bin/aws" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q awscli; }
command -v rclone >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends rclone >/dev/null; }
cargo build --release --bin zseal -q
zseal=$root/target/release/zseal

# --- the server and the keys ---------------------------------------------------------------
work=$(mktemp -d /dev/shm/zseal-bench.XXXXXX)
data=$work/s3 && mkdir -p "$data/bench"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$tools/bin/s3s-fs" --host 127.0.0.1 --port "$port" --access-key bench --secret-key benchsecret "$data" \
  >"$work/server.log" 2>&1 &
server=$!
s3_bench_stop() {
  kill "$server" 2>/dev/null
  rm -rf "$work"
}
trap s3_bench_stop EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_EC2_METADATA_DISABLED=true
# Plain HTTP on loopback: no CA bundle is needed, and rclone's S3 client fails on a custom one.
unset AWS_CA_BUNDLE
aws=("$venv/bin/aws" --endpoint-url "$AWS_ENDPOINT_URL")
rclone_crypt_config() {
  export RCLONE_CONFIG=$work/rclone.conf
  cat >"$RCLONE_CONFIG" <<EOF
[s3]
type = s3
provider = Other
access_key_id = bench
secret_access_key = benchsecret
endpoint = $AWS_ENDPOINT_URL
region = us-east-1

[crypt]
type = crypt
remote = s3:bench/rclone
password = $(rclone obscure zseal-bench-password)
filename_encryption = off
directory_name_encryption = false
EOF
}
