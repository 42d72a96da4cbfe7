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

# The `sealed` target takes frame specs (see its header comment): a few of each kind per header,
# with real zstd, lz4-less raw and DEFLATE payloads made here, so runs start past decompression's
# first byte.
mkdir -p corpus/sealed
python3 - <<'PY'
import os, struct, zlib, subprocess
text = b"zseal sealed fuzz seed: the quick brown fox jumps over the lazy dog. " * 12
zst = subprocess.run(["zstd", "-q", "-c", "-3"], input=text, capture_output=True).stdout
defl = zlib.compressobj(6, zlib.DEFLATED, -15)
deflated = defl.compress(text) + defl.flush()
for pick in range(8):
    payload = {0: zst, 2: deflated}.get(pick // 2, text)
    kind = 0 if pick // 2 in (0, 2) else 1
    frames = bytes([kind]) + struct.pack("<H", len(payload)) + payload
    frames += bytes([1]) + struct.pack("<H", 200) + text[:200]
    for flags in (0, 15):
        open(f"corpus/sealed/seed-{pick}-{flags}", "wb").write(bytes([pick, flags]) + frames + b"\xff" + bytes(120))
PY
