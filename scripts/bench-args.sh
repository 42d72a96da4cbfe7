# Sourced by the benchmark scripts (bench-age.sh, bench-crypt4gh.sh) for what they all start
# with: `. "$(dirname "$0")/bench-args.sh" NAME "$@"` sets
#   root    the repository (the script's parent folder),
#   runs    --runs N (default 5),
#   corpus  CORPUS_DIR, or $ZSEAL_CORPUS, or /tmp/zseal-corpus,
#   work    $ZSEAL_BENCH_DIR, or /tmp/zseal-bench-NAME (created),
# and defines bench_build_zseal, which makes a release build of the command and sets zseal to it.
# `set -euo pipefail` is the caller's.
bench_name=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
corpus=${1:-${ZSEAL_CORPUS:-/tmp/zseal-corpus}}
work=${ZSEAL_BENCH_DIR:-/tmp/zseal-bench-$bench_name}
mkdir -p "$work"
bench_build_zseal() {
  (cd "$root" && cargo build --release --quiet --bin zseal)
  zseal=$root/target/release/zseal
}
