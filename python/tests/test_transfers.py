"""Resumable transfers from Python (docs/PYTHON.md "Transfers that survive a cut"): zseal.upload,
zseal.download, zseal.pending and zseal.abort share the command line's journals, so either front
end continues what the other began. Cuts are made for real: the command line is SIGKILLed while
a throttled relay between it and moto slows the transfer, once its journal records progress."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import zseal

MiB = 1 << 20


class Relay:
    """A TCP relay to `target` that passes at most about `rate` bytes a second each way."""

    def __init__(self, target: tuple[str, int], rate: int) -> None:
        self.target, self.rate = target, rate
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(64 << 10):
                dst.sendall(data)
                time.sleep(len(data) / self.rate)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def scene(tmp_path: Path, s3, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch):
    """The environment both front ends share: moto's credentials, a state directory of the
    test's own, 5 MiB parts; a relay to moto at 8 MiB/s; a 40 MiB source."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ZSEAL_PART_SIZE": "5M",
        "ZSEAL_PARTS_IN_FLIGHT": "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    host, port = s3_endpoint.split("//")[1].split(":")
    relay = Relay((host, int(port)), 8 * MiB)
    plain = random.Random(11).randbytes(40 * MiB)
    src = tmp_path / "src.bin"
    src.write_bytes(plain)
    yield env, f"http://127.0.0.1:{relay.port}", src, plain
    relay.close()


def journals(state: Path, kind: str) -> list[dict]:
    d = state / "zseal"
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        if p.name.startswith(f"{kind}-") and p.suffix == ".json":
            try:
                out.append(json.loads(p.read_text()))
            except ValueError:
                pass  # being replaced
    return out


def killed_when(cmd: list[str], env: dict, ready) -> None:
    """Runs `cmd`, SIGKILLs it once `ready()` is true (failing if it ended before)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, f"it ended before the cut: {proc.stderr.read().decode()}"
        assert time.monotonic() < deadline, "no progress in 60 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_an_upload_cut_by_the_command_line_is_resumed_from_python(scene, keys, zseal_bin):
    env, slow, src, plain = scene
    identity, recipient = keys
    state = Path(env["XDG_STATE_HOME"])
    url = "s3://zseal-test/transfers-up.zseal"
    cmd = [zseal_bin, "encrypt", "-r", recipient, "-o", url, str(src)]
    killed_when(cmd, dict(os.environ, AWS_ENDPOINT_URL=slow),
                lambda: any(len(j["parts"]) >= 2 for j in journals(state, "upload")))

    listed = [p for p in zseal.pending() if p["kind"] == "upload"]
    assert [p["url"] for p in listed] == [url]
    assert listed[0]["parts"] >= 2 and listed[0]["source_size"] == len(plain)

    # Without resume=True a pending upload is refused before anything is sent; with other
    # recipients, a resume is refused and the job stays pending.
    with pytest.raises(zseal.ZsealError, match="pending resumable upload"):
        zseal.upload(src, url, recipients=[recipient])
    with pytest.raises(zseal.ZsealError, match="recipients|passphrase"):
        zseal.upload(src, url, resume=True, passphrase="other")
    assert [p["url"] for p in zseal.pending()] == [url]

    done = zseal.upload(src, url, resume=True, recipients=[recipient])
    assert done["journaled"] and done["restarted"] is None
    assert done["parts_kept"] >= 2 and done["parts_sent"] >= 1, done
    assert done["sealed"] < len(plain), "the kept parts are not sealed again"
    assert zseal.pending() == []

    out = src.parent / "back.bin"
    digest = zseal.download(url, out, identity=identity)
    assert out.read_bytes() == plain
    assert digest == done["digest"]


def test_a_download_cut_by_the_command_line_is_resumed_from_python(scene, keys, zseal_bin):
    env, slow, src, plain = scene
    identity, recipient = keys
    state = Path(env["XDG_STATE_HOME"])
    url = "s3://zseal-test/transfers-down.zseal"
    sent = zseal.upload(src, url, recipients=[recipient])
    assert sent["journaled"] and sent["parts_kept"] == 0

    dst = src.parent / "out.bin"
    cmd = [zseal_bin, "decrypt", "-i", identity, "-o", str(dst), url]
    killed_when(cmd, dict(os.environ, AWS_ENDPOINT_URL=slow),
                lambda: any(j.get("done", 0) > 0 for j in journals(state, "download")))
    listed = [p for p in zseal.pending() if p["kind"] == "download"]
    assert len(listed) == 1 and listed[0]["url"] == url
    assert 0 < listed[0]["bytes_kept"] < len(plain)
    assert not dst.exists()

    with pytest.raises(zseal.ZsealError, match="--resume"):
        zseal.download(url, dst, identity=identity)
    digest = zseal.download(url, dst, identity=identity, resume=True)
    assert dst.read_bytes() == plain
    assert digest == sent["digest"]
    assert zseal.pending() == []
    assert not (src.parent / "out.bin.zseal-partial").exists()


def test_transfers_refuse_what_they_cannot_do(scene, keys, tmp_path, zseal_bin):
    env, _, src, plain = scene
    identity, recipient = keys
    with pytest.raises(ValueError, match="decrypt_file"):
        zseal.download(str(src), tmp_path / "x", identity=identity)
    with pytest.raises(zseal.ZsealError, match="nothing to resume|no pending upload"):
        zseal.upload(src, "s3://zseal-test/never.zseal", resume=True, recipients=[recipient])
    with pytest.raises(zseal.ZsealError, match="no pending upload"):
        zseal.abort("s3://zseal-test/never.zseal")
    # A file of one part is not resumable: it goes up as every upload does.
    small = tmp_path / "small.bin"
    small.write_bytes(plain[:1000])
    done = zseal.upload(small, "s3://zseal-test/small.zseal", recipients=[recipient])
    assert done["journaled"] is False
    with pytest.raises(zseal.ZsealError, match="one part"):
        zseal.upload(small, "s3://zseal-test/small2.zseal", resume=True, recipients=[recipient])
    # An upload begun and then ended with abort() leaves nothing pending.
    url = "s3://zseal-test/aborted.zseal"
    state = Path(env["XDG_STATE_HOME"])
    killed_when([zseal_bin, "encrypt", "-r", recipient, "-o", url, str(src)],
                dict(os.environ, AWS_ENDPOINT_URL=scene[1]),
                lambda: any(len(j["parts"]) >= 1 for j in journals(state, "upload")))
    zseal.abort(url)
    assert zseal.pending() == []
