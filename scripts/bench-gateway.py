#!/usr/bin/env python3
"""1 GiB PUT and GET with boto3 (its default transfer settings: 8 MiB parts, 10 threads) straight
to a moto server and through `zseal serve s3` (directory backend, and moto as the backend),
interleaved, RUNS rounds; prints each time and the medians (docs/PERFORMANCE.md §13).

    ZSEAL_BIN=target/ci/zseal python scripts/bench-gateway.py [SIZE_MIB] [RUNS]
Everything listens on 127.0.0.1; nothing else is contacted."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python" / "tests"))
import boto3  # noqa: E402
import test_gateway as tg  # noqa: E402
import zseal  # noqa: E402
from conftest import free_port  # noqa: E402


def moto() -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    p = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    import urllib.request
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1)
            return p, url
        except Exception:
            time.sleep(0.1)
    raise RuntimeError("moto did not start")


def timed(f) -> float:
    t0 = time.monotonic()
    f()
    return time.monotonic() - t0


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    zbin = os.environ.get("ZSEAL_BIN", "target/ci/zseal")
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    src = tmp / "src.bin"
    with open(src, "wb") as f:
        for _ in range(size):
            f.write(os.urandom(1 << 20))
    proc, url = moto()
    try:
        direct = boto3.client("s3", endpoint_url=url, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        direct.create_bucket(Bucket="bench")
        _, rec = zseal.keygen(str(tmp / "me.key"))
        (tmp / "vault").mkdir()
        # Each gateway keeps its credentials file and log in a directory of its own.
        (tmp / "g1").mkdir()
        (tmp / "g2").mkdir()
        gdir = tg.Gateway(zbin, tmp / "vault", rec, str(tmp / "me.key"), tmp / "g1")
        gs3 = tg.Gateway(zbin, f"s3://bench/gw-{uuid.uuid4().hex[:6]}", rec, str(tmp / "me.key"),
                         tmp / "g2", env=tg.moto_env(url))
        targets = {"moto": direct, "gateway(dir)": gdir.client(), "gateway(moto)": gs3.client()}
        for name, c in targets.items():
            if name != "moto":
                c.create_bucket(Bucket="bench")
        times: dict[str, list[float]] = {f"{n} {op}": [] for n in targets for op in ("PUT", "GET")}
        for r in range(runs):
            for name, c in targets.items():
                key = f"obj-{r}"
                times[f"{name} PUT"].append(timed(lambda: c.upload_file(str(src), "bench", key)))
                out = tmp / "back.bin"
                times[f"{name} GET"].append(timed(lambda: c.download_file("bench", key, str(out))))
                assert out.stat().st_size == src.stat().st_size
                out.unlink()
                c.delete_object(Bucket="bench", Key=key)
                print(name, r, times[f"{name} PUT"][-1], times[f"{name} GET"][-1], flush=True)
        for k, v in times.items():
            print(f"{k}: median {statistics.median(v):.2f} s of {['%.2f' % x for x in v]}")
        gdir.stop()
        gs3.stop()
    finally:
        proc.terminate()
        subprocess.run(["rm", "-rf", str(tmp)])


if __name__ == "__main__":
    main()
