#!/usr/bin/env bash
# Mutation testing of the checks (issue 16): every mutant cargo-mutants can make in the format,
# the pipeline, the crypto glue and the hashing must be caught by a test, or be listed with the
# reason it is equivalent. Not part of CI: about 1,170 mutants, each a rebuild and a test run.
#
#   scripts/mutants.sh                      # everything in scope (hours on 2 cores)
#   scripts/mutants.sh src/pipeline/decrypt/verify.rs …   # just these files
#   scripts/mutants.sh 'src/format/**' --iterate            # resume, skipping what was caught
#
# Tests run in the `mutants` profile (Cargo.toml: the crate at opt-level 1, its dependencies at 2;
# a mutant rebuilds in seconds and the suites run in about two) and only the suites that exercise
# decoding, damage and keys, which is where a surviving mutant matters. The hostile suite's
# million-chunk memory test is skipped (8 s a mutant; it checks the allocation bound, which the
# format and pipeline mutants are also checked against by the smaller bounded-memory tests).
# The report lands in mutants.out/ (missed.txt: the survivors; docs/MUTANTS.md lists the ones known
# to be equivalent, with reasons). `--iterate` (pass it after the
# files) skips the mutants an earlier run caught, so a long run can be stopped and resumed;
# `--in-place` reuses this checkout's target/mutants instead of building a copy from scratch (7 min
# here), but then leave the tree alone until it ends. A mutant whose tests run past
# MUTANTS_TIMEOUT seconds (default 30; the suites take about 4) counts as caught (a hang).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
args=()
for a in "$@"; do
  case "$a" in
    -*) args+=("$a") ;;
    *) args+=(-f "$a") ;;
  esac
done
[ "${#args[@]}" -gt 0 ] && printf '%s\n' "${args[@]}" | grep -qx -- -f ||
  args+=(-f 'src/format/**' -f 'src/pipeline/**' -f 'src/crypto/**' -f src/hash.rs)
# The suites go to every cargo call (-C), so a mutant's build compiles only them (the library's
# test binary, whose modules are vectors, tamper, insertions, range, padding, roundtrip,
# fast_paths, rekey, aead_peer, recipients and more, and hostile.rs), not the CLI's.
suites=()
for t in library hostile; do
  suites+=(-C "--test=$t")
done
cargo mutants "${args[@]}" --profile mutants --timeout "${MUTANTS_TIMEOUT:-30}" -C --lib \
  "${suites[@]}" -- -- --skip a_million_tiny_chunks
echo "survivors: mutants.out/missed.txt"
