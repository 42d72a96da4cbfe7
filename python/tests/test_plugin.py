"""age plugins from Python (docs/PYTHON.md): recipients=["age1NAME1…"] and identity files with
AGE-PLUGIN-NAME-1… lines run age-plugin-NAME from PATH; the project's test plugin
(tools/age-plugin-zsealtest, beside the zseal command scripts/test-all builds) answers, asks and
misbehaves as its ZSEALTEST variable tells it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import zseal
from conftest import csv_text


@pytest.fixture()
def plugin(zseal_bin, tmp_path, monkeypatch) -> tuple[str, str]:
    """(identity file, recipient) of the test plugin, with the plugin on PATH."""
    tool = Path(zseal_bin).parent / "age-plugin-zsealtest"
    if not tool.exists():
        if os.environ.get("ZSEAL_REQUIRE_PEERS"):
            pytest.fail(f"{tool} is missing (scripts/test-all builds it)")
        pytest.skip(f"{tool} is missing: cargo build --profile ci -p age-plugin-zsealtest")
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ZSEALTEST", raising=False)
    text = subprocess.run([str(tool), "--generate"], capture_output=True, check=True, text=True).stdout
    recipient = next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("# recipient: "))
    identity = tmp_path / "plugin.key"
    identity.write_text(text)
    return str(identity), recipient


@pytest.mark.parametrize("fmt", ["zseal", "age"])
def test_a_plugin_recipient_and_identity_seal_and_open(tmp_path, plugin, fmt):
    identity, recipient = plugin
    data = csv_text(5000, seed=4)
    out = tmp_path / "p.bin"
    with zseal.open(out, "wb", recipients=[recipient], format=fmt) as f:
        f.write(data)
    with zseal.open(out, identity=identity) as f:
        assert f.read() == data
    # The identity file's text works as well as its path.
    with zseal.open(out, identity=Path(identity).read_text()) as f:
        assert f.read() == data


def test_a_plugin_pin_comes_from_key_passphrase_and_its_messages_reach_stderr(tmp_path, plugin, monkeypatch, capfd):
    identity, recipient = plugin
    out = tmp_path / "p.zseal"
    with zseal.open(out, "wb", recipients=recipient) as f:
        f.write(b"pin protected")
    monkeypatch.setenv("ZSEALTEST", "msg,pin")
    asked = []
    with zseal.open(out, identity=identity, key_passphrase=lambda d: asked.append(d) or "1234") as f:
        assert f.read() == b"pin protected"
    assert asked == ["zsealtest PIN"]
    assert "zsealtest: unwrapping the file key" in capfd.readouterr().err
    with pytest.raises(zseal.ZsealError, match="wrong PIN"):
        zseal.open(out, identity=identity, key_passphrase="0000")


def test_plugin_failures_name_the_plugin_and_write_nothing(tmp_path, plugin, monkeypatch):
    identity, recipient = plugin
    out = tmp_path / "p.zseal"
    for mode, says in [("crash-wrap", "unexpectedly died"), ("refuse-wrap", "refuses"), ("garbage-wrap", "protocol")]:
        monkeypatch.setenv("ZSEALTEST", mode)
        with pytest.raises(zseal.ZsealError, match=f"age-plugin-zsealtest could not encrypt.*{says}"):
            with zseal.open(out, "xb", recipients=[recipient]) as f:
                f.write(b"never")
        assert not out.exists(), mode
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("ZSEALTEST")
    with pytest.raises(zseal.ZsealError, match="age-plugin-zsealtest is not on PATH"):
        zseal.open(out, "wb", recipients=[recipient])
    assert not out.exists()


def test_a_plugin_question_without_a_terminal_fails_saying_so(tmp_path, plugin):
    """A new session has no controlling terminal: the confirmation goes unanswered."""
    identity, recipient = plugin
    out = tmp_path / "p.zseal"
    with zseal.open(out, "wb", recipients=[recipient]) as f:
        f.write(b"confirm first")
    code = "import sys, zseal\ntry:\n    zseal.open(sys.argv[1], identity=sys.argv[2]).read()\nexcept zseal.ZsealError as e:\n    print(e)\n"
    run = subprocess.run(
        [sys.executable, "-c", code, str(out), identity],
        env={**os.environ, "ZSEALTEST": "confirm"},
        capture_output=True,
        text=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    assert 'asked "Use the zsealtest key?"' in run.stdout, run.stdout + run.stderr
    assert "no terminal" in run.stdout
