#!/usr/bin/env bash
# Mutation testing of the checks (issue 16): every mutant cargo-mutants can make in the format,
# the pipeline, the crypto glue and the hashing must be caught by a test, or be listed with the
# reason it is equivalent. Not part of CI: about 1,170 mutants, each a rebuild and a test run.
#
#   scripts/mutants.sh                      # everything in scope (hours on 2 cores)
#   scripts/mutants.sh src/pipeline/decrypt/verify.rs …   # just these files
#
# Tests run in the dev profile (faster to rebuild; the suite keeps Argon2 at its minimum) and only
# the suites that exercise decoding and damage, which is where a surviving mutant matters; the
# report lands in mutants.out/ (missed.txt: the survivors).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
files=("$@")
[ ${#files[@]} -gt 0 ] || files=('src/format/**' 'src/pipeline/**' 'src/crypto/**' src/hash.rs)
args=()
for f in "${files[@]}"; do args+=(-f "$f"); done
cargo mutants "${args[@]}" --timeout 300 -- \
  --lib --test vectors --test tamper --test insertions --test range --test padding \
  --test roundtrip --test fast_paths --test rekey --test hostile --test aead_peer
echo "survivors: mutants.out/missed.txt"
