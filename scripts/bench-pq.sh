#!/usr/bin/env bash
# Key wrapping and unwrapping, X25519 against the post-quantum hybrid (ML-KEM-768 + X25519,
# FORMAT.md §1.1): 1 byte sealed to 100 recipients of each kind, then opened with the identity of
# the last stanza (every stanza before it tried and refused), and the containers' sizes. Needs
# `cargo build --release`. docs/PERFORMANCE.md §11.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
Z=${Z:-$root/target/release/zseal}
d=$(mktemp -d)
cd "$d"
head -c 1 /dev/zero > one
for kind in x pq; do
  : > "$kind.list"
  for i in $(seq 1 100); do
    if [ $kind = pq ]; then $Z keygen --pq -o $kind$i.key 2>/dev/null; else $Z keygen -o $kind$i.key 2>/dev/null; fi
    $Z keygen -y $kind$i.key >> $kind.list
  done
  $Z encrypt -q -R $kind.list one -o $kind.zseal
done
ls -l x.zseal pq.zseal
python3 "$root/scripts/race.py" --runs 11 \
  "seal to 100 X25519=$Z encrypt -q -R x.list one -o o.zseal -f" \
  "seal to 100 PQ=$Z encrypt -q -R pq.list one -o o.zseal -f" \
  "open as the 100th X25519=$Z decrypt -q -i x100.key x.zseal -o /dev/null" \
  "open as the 100th PQ=$Z decrypt -q -i pq100.key pq.zseal -o /dev/null" \
  "seal to 1 X25519=$Z encrypt -q -r \$(head -1 x.list) one -o o.zseal -f" \
  "seal to 1 PQ=$Z encrypt -q -R <(head -1 pq.list) one -o o.zseal -f"
