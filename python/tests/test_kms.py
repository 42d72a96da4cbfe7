"""AWS KMS recipients and identities (issue 46 §2, FORMAT.md §1.1 "AWS KMS recipients") against
moto's server (the one the S3 tests use: it answers KMS's JSON protocol on the same port), through
the command and the Python package: key and alias ARNs, both formats (stock age skips the stanza),
encryption context mismatch, disabled and missing keys, throttling retried, an s3:// object sealed
to KMS and rekeyed in place."""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
import urllib.request
from pathlib import Path

import pytest

import zseal
from conftest import ROOT, peer
from test_plugin import plugin  # noqa: F401 (the test plugin's fixture)

REGION = "eu-west-1"


@pytest.fixture(scope="module")
def kms(s3_endpoint: str):
    boto3 = pytest.importorskip("boto3")
    client = boto3.client(
        "kms",
        endpoint_url=s3_endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    key = client.create_key(Description="zseal test")["KeyMetadata"]
    alias = f"arn:aws:kms:{REGION}:{key['AWSAccountId']}:alias/zseal-exports"
    client.create_alias(AliasName="alias/zseal-exports", TargetKeyId=key["KeyId"])
    return client, key["Arn"], alias


def env_for(endpoint: str) -> dict:
    return dict(
        os.environ,
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_EC2_METADATA_DISABLED="true",
        ZSEAL_RETRY_TIMEOUT="5",
    )


def run(zseal_bin: str, endpoint: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([zseal_bin, *args], capture_output=True, env=env_for(endpoint))
    if ok:
        assert p.returncode == 0, p.stderr.decode()
    else:
        assert p.returncode != 0, "expected a failure"
    return p


def test_a_file_sealed_to_an_alias_opens_with_the_key_the_alias_and_a_classic_key(
    tmp_path, kms, keys, s3_endpoint, zseal_bin
):
    _, key_arn, alias_arn = kms
    identity, recipient = keys
    plain = os.urandom(300_000) + b"text" * 50_000
    (tmp_path / "p").write_bytes(plain)
    c = str(tmp_path / "c.zseal")
    run(zseal_bin, s3_endpoint, "encrypt", str(tmp_path / "p"), "-r", alias_arn, "-r", recipient, "-o", c)
    for i, who in enumerate([key_arn, alias_arn, identity]):
        out = tmp_path / f"back{i}"
        run(zseal_bin, s3_endpoint, "decrypt", c, "-i", who, "-o", str(out))
        assert out.read_bytes() == plain, who
    # inspect names the key the alias pointed at, without any call to KMS.
    info = run(zseal_bin, "http://127.0.0.1:9", "inspect", c).stdout.decode()
    assert f"AWS KMS key {key_arn}" in info, info
    # Without -i, decrypt names the key to give (issue 59 §6), without any call to KMS.
    err = run(zseal_bin, "http://127.0.0.1:9", "decrypt", c, ok=False).stderr.decode()
    assert f"or the AWS KMS key itself: -i {key_arn}" in err, err


def test_an_age_file_with_a_kms_stanza_opens_in_stock_age_and_in_zseal(
    tmp_path, kms, keys, s3_endpoint, zseal_bin
):
    _, key_arn, _ = kms
    identity, recipient = keys
    plain = b"genome " * 40_000
    (tmp_path / "p").write_bytes(plain)
    c = str(tmp_path / "c.age")
    run(zseal_bin, s3_endpoint, "encrypt", "--format", "age", "-c", "none", str(tmp_path / "p"),
        "-r", key_arn, "-r", recipient, "-o", c)
    run(zseal_bin, s3_endpoint, "decrypt", c, "-i", key_arn, "-o", str(tmp_path / "z"))
    assert (tmp_path / "z").read_bytes() == plain
    age = peer("age")
    if age:
        out = subprocess.run([age, "-d", "-i", identity, c], capture_output=True, check=True).stdout
        assert out == plain


def test_a_stanza_moved_to_another_file_id_is_refused_naming_the_context(
    tmp_path, kms, s3_endpoint, zseal_bin
):
    _, key_arn, _ = kms
    (tmp_path / "p").write_bytes(b"x" * 1000)
    c = tmp_path / "c.age"
    run(zseal_bin, s3_endpoint, "encrypt", "--format", "age", str(tmp_path / "p"), "-r", key_arn, "-o", str(c))
    text = c.read_bytes()
    start = text.index(b"-> zseal-aws-kms ")
    line_end = text.index(b"\n", start)
    args = text[start:line_end].split(b" ")
    other_id = b"AAAAAAAAAAAAAAAAAAAAAA"  # the canonical base64 of 16 zero bytes
    assert args[3] != other_id
    forged = text[:start] + b" ".join(args[:3] + [other_id]) + text[line_end:]
    (tmp_path / "forged.age").write_bytes(forged)
    out = tmp_path / "out"
    p = run(zseal_bin, s3_endpoint, "decrypt", str(tmp_path / "forged.age"), "-i", key_arn, "-o", str(out), ok=False)
    err = p.stderr.decode()
    assert "InvalidCiphertextException" in err and "encryption context" in err, err
    assert not out.exists()


class KmsProxy(http.server.BaseHTTPRequestHandler):
    """In front of moto: answers the first requests from `answers` ((status, __type) each; the
    last one for every request when `sticky`), as KMS answers them, and forwards the rest. moto
    neither refuses a disabled key nor throttles, so those answers are KMS's documented ones,
    given here."""

    upstream = ""
    answers: list = []
    sticky = False
    seen = 0

    def do_POST(self):  # noqa: N802 (http.server's name)
        cls = type(self)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        cls.seen += 1
        if cls.answers:
            status, kind = cls.answers[0] if cls.sticky else cls.answers.pop(0)
            answer = f'{{"__type":"{kind}","message":"answered by the test proxy"}}'.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        req = urllib.request.Request(self.upstream + self.path, data=body, method="POST")
        for k, v in self.headers.items():
            if k.lower() not in ("host", "content-length"):
                req.add_header(k, v)
        with urllib.request.urlopen(req) as r:
            answer, status = r.read(), r.status
        self.send_response(status)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def kms_proxy(s3_endpoint):
    KmsProxy.upstream, KmsProxy.answers, KmsProxy.sticky, KmsProxy.seen = s3_endpoint, [], False, 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), KmsProxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_disabled_and_missing_keys_fail_naming_the_key_and_write_nothing(
    tmp_path, kms, s3_endpoint, zseal_bin, kms_proxy
):
    _, key_arn, _ = kms
    (tmp_path / "p").write_bytes(b"y" * 1000)
    sealed = tmp_path / "before.zseal"
    run(zseal_bin, s3_endpoint, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", str(sealed))
    KmsProxy.answers, KmsProxy.sticky = [(400, "DisabledException")], True
    out = tmp_path / "c.zseal"
    p = run(zseal_bin, kms_proxy, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", str(out), ok=False)
    err = p.stderr.decode()
    assert "DisabledException" in err and key_arn in err and "enable it" in err, err
    assert not out.exists()
    assert KmsProxy.seen == 1, "a refusal is not retried"
    p = run(zseal_bin, kms_proxy, "decrypt", str(sealed), "-i", key_arn, "-o", str(tmp_path / "o"), ok=False)
    assert "DisabledException" in p.stderr.decode(), p.stderr.decode()
    assert not (tmp_path / "o").exists()
    # Another account's key without a grant: KMS answers AccessDeniedException.
    KmsProxy.answers = [(400, "AccessDeniedException")]
    p = run(zseal_bin, kms_proxy, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", str(out), ok=False)
    err = p.stderr.decode()
    assert "AccessDeniedException" in err and "another account" in err and key_arn in err, err
    assert not out.exists()
    # A key that does not exist: moto's own answer.
    missing = key_arn.rsplit("/", 1)[0] + "/00000000-0000-0000-0000-000000000000"
    p = run(zseal_bin, s3_endpoint, "encrypt", str(tmp_path / "p"), "-r", missing, "-o", str(out), ok=False)
    err = p.stderr.decode()
    assert "NotFoundException" in err and missing in err, err
    assert not out.exists()


def test_throttling_and_server_errors_are_retried(tmp_path, kms, s3_endpoint, zseal_bin, kms_proxy):
    _, key_arn, _ = kms
    KmsProxy.answers = [(400, "ThrottlingException"), (500, "KMSInternalException")]
    (tmp_path / "p").write_bytes(b"z" * 5000)
    c = str(tmp_path / "c.zseal")
    run(zseal_bin, kms_proxy, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", c)
    assert KmsProxy.seen == 3, KmsProxy.seen
    run(zseal_bin, s3_endpoint, "decrypt", c, "-i", key_arn, "-o", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == b"z" * 5000


def test_an_object_sealed_to_kms_is_rekeyed_in_place(tmp_path, kms, keys, s3, s3_endpoint, zseal_bin):
    _, key_arn, _ = kms
    identity, recipient = keys
    plain = os.urandom(100_000)
    (tmp_path / "p").write_bytes(plain)
    url = "s3://zseal-test/kms/object.zseal"
    run(zseal_bin, s3_endpoint, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", url, "-f")
    # Add a classic recipient, header only, with the KMS key opening the header.
    run(zseal_bin, s3_endpoint, "rekey", url, "-i", key_arn, "--add", "-r", recipient)
    run(zseal_bin, s3_endpoint, "decrypt", url, "-i", identity, "-o", str(tmp_path / "a"))
    assert (tmp_path / "a").read_bytes() == plain
    # Then take the KMS key out: it opens the object no more.
    run(zseal_bin, s3_endpoint, "rekey", url, "-i", identity, "--remove", "-r", key_arn)
    p = run(zseal_bin, s3_endpoint, "decrypt", url, "-i", key_arn, "-o", str(tmp_path / "b"), ok=False)
    assert "no identity matched" in p.stderr.decode(), p.stderr.decode()
    run(zseal_bin, s3_endpoint, "decrypt", url, "-i", identity, "-o", str(tmp_path / "c"))
    assert (tmp_path / "c").read_bytes() == plain


def test_the_python_package_seals_to_and_opens_with_kms_arns(tmp_path, kms, s3_endpoint, monkeypatch):
    _, key_arn, alias_arn = kms
    for k, v in env_for(s3_endpoint).items():
        monkeypatch.setenv(k, v)
    plain = b"records\n" * 10_000
    (tmp_path / "p").write_bytes(plain)
    zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[alias_arn])
    zseal.decrypt_file(tmp_path / "c", tmp_path / "back", identity=key_arn)
    assert Path(tmp_path / "back").read_bytes() == plain
    with pytest.raises(zseal.ZsealError):
        zseal.encrypt_file(tmp_path / "p", tmp_path / "d", recipients=["arn:aws:kms:eu-west-1:1:key/x"])
    assert not (tmp_path / "d").exists()


def test_one_kms_call_seals_a_file_and_one_opens_it_whatever_its_size(
    tmp_path, kms, zseal_bin, kms_proxy
):
    _, key_arn, _ = kms
    plain = os.urandom(3 << 20)
    (tmp_path / "p").write_bytes(plain)
    c = str(tmp_path / "c.zseal")
    run(zseal_bin, kms_proxy, "encrypt", str(tmp_path / "p"), "-r", key_arn, "--chunk-size", "64K", "-o", c)
    assert KmsProxy.seen == 1, KmsProxy.seen
    run(zseal_bin, kms_proxy, "decrypt", c, "-i", key_arn, "-o", str(tmp_path / "back"))
    assert KmsProxy.seen == 2, KmsProxy.seen
    assert (tmp_path / "back").read_bytes() == plain


@pytest.mark.parametrize("fmt", ["zseal", "age"])
def test_x25519_ssh_plugin_and_kms_recipients_in_one_file_each_open_it(
    tmp_path, kms, keys, plugin, s3_endpoint, zseal_bin, fmt
):
    """Issue 46 §3: four kinds of recipient in one file; any one identity opens it, and inspect
    names each kind without a key."""
    _, key_arn, _ = kms
    identity, recipient = keys
    plugin_identity, plugin_recipient = plugin
    ssh_key = str(ROOT / "fixtures" / "keys" / "ed25519")
    ssh_pub = (ROOT / "fixtures" / "keys" / "ed25519.pub").read_text().strip()
    plain = b"mixed recipients\n" * 20_000
    (tmp_path / "p").write_bytes(plain)
    c = str(tmp_path / f"c.{fmt}")
    run(zseal_bin, s3_endpoint, "encrypt", "--format", fmt, str(tmp_path / "p"), "-r", recipient,
        "-r", ssh_pub, "-r", plugin_recipient, "-r", key_arn, "-o", c)
    for i, who in enumerate([identity, ssh_key, plugin_identity, key_arn]):
        out = tmp_path / f"back{i}"
        run(zseal_bin, s3_endpoint, "decrypt", c, "-i", who, "-o", str(out))
        assert out.read_bytes() == plain, who
    info = run(zseal_bin, "http://127.0.0.1:9", "inspect", c).stdout.decode()
    for kind in ["X25519", "ssh-ed25519", "age plugin stanza", f"AWS KMS key {key_arn}"]:
        assert kind in info, (kind, info)


def test_aws_endpoint_url_kms_wins_over_aws_endpoint_url(tmp_path, kms, s3_endpoint, zseal_bin):
    _, key_arn, _ = kms
    (tmp_path / "p").write_bytes(b"endpoint")
    env = dict(env_for("http://127.0.0.1:9"), AWS_ENDPOINT_URL_KMS=s3_endpoint, ZSEAL_RETRY_TIMEOUT="0")
    c = str(tmp_path / "c.zseal")
    p = subprocess.run([zseal_bin, "encrypt", str(tmp_path / "p"), "-r", key_arn, "-o", c], capture_output=True, env=env)
    assert p.returncode == 0, p.stderr.decode()
    # Without it, KMS calls go to AWS_ENDPOINT_URL (nothing listens there): a clear failure.
    del env["AWS_ENDPOINT_URL_KMS"]
    p = subprocess.run([zseal_bin, "decrypt", c, "-i", key_arn, "-o", str(tmp_path / "o")], capture_output=True, env=env)
    assert p.returncode != 0 and key_arn in p.stderr.decode(), p.stderr.decode()
    assert not (tmp_path / "o").exists()
