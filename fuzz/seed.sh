#!/usr/bin/env bash
# Seeds each fuzz target's corpus with the containers of fixtures/vectors (header lines stripped).
set -euo pipefail
cd "$(dirname "$0")"
for t in decrypt header header_roundtrip; do mkdir -p "corpus/$t"; done
python3 - <<'PY'
import os
src = '../fixtures/vectors'
for n in os.listdir(src):
    b = open(os.path.join(src, n), 'rb').read()
    c = b[b.index(b'\n\n') + 2:]
    for t in ['decrypt', 'header', 'header_roundtrip']:
        open(f'corpus/{t}/{n}', 'wb').write(c)
PY
