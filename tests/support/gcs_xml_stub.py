#!/usr/bin/env python3
"""Minimal in-memory GCS *XML API* stand-in, stdlib only: just what object_store's GCS client
uses, for tests/remote.rs's gs:// writes. It exists because no emulator on PyPI accepts those
writes (fake-gcs-server lacks the XML upload API, issues 331 and 852; gcp-storage-emulator answers
HEAD with 501): reads are tested against fake-gcs-server, writes against this. It is a test
double of the protocol as object_store speaks it, not an emulator of GCS.

PUT object (x-goog-if-generation-match, x-goog-meta-*, kept as GCS keeps them), HEAD/GET with Range and If-Match/If-None-Match,
DELETE, XML multipart (POST ?uploads, PUT ?partNumber&uploadId, GET ?uploadId (ListParts, paged),
POST ?uploadId, DELETE ?uploadId),
and bucket creation through the JSON API (POST /storage/v1/b {"name": ...}) like fake-gcs-server.
Listing is the XML API's too, as object_store 0.14's GCS client asks for it (src/gcp/client.rs,
`list_request`): GET /BUCKET?list-type=2 with prefix, delimiter, start-after, continuation-token
and max-keys, answered with ListBucketResult (Contents: Key, Generation, LastModified, ETag as
HEAD gives it, Size; CommonPrefixes; NextContinuationToken), which the S3 gateway's gs:// backend
lists its buckets and objects with (tests/remote/gateway.rs). Pages hold at most PAGE entries
(GCS: 1000) so that a client's paging is exercised.
usage: gcs_xml_stub.py [PORT]
   (binds 127.0.0.1 only; GET / answers "OK" when ready)
"""
import base64
import email.utils
import hashlib
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

LOCK = threading.Lock()
BUCKETS = {}   # name -> {key: (data, generation, etag, mtime, {x-goog-meta-*: value})}
UPLOADS = {}   # upload_id -> {"bucket", "key", "parts": {n: (data, etag)}, "meta"}
LIST_PAGES = {}  # key -> ListParts pages served (the tests' view: /_stub/list-parts?key=K)
GEN = [int(time.time() * 1e6)]
PAGE = 2       # entries per listing page at most (objects and common prefixes together)


def next_gen():
    GEN[0] += 1
    return GEN[0]


def page_entries(objects, prefix, delim, start_after):
    """A listing's entries in order, (name, object) for a key and (prefix, None) for the keys
    a delimiter rolls up, as GCS's XML listing selects them."""
    out = []
    for key in sorted(objects):
        if not key.startswith(prefix) or (start_after and key <= start_after):
            continue
        at = key.find(delim, len(prefix)) if delim else -1
        if at < 0:
            out.append((key, objects[key]))
        elif not out or out[-1][0] != key[:at + len(delim)]:
            out.append((key[:at + len(delim)], None))
    return out


def contents_xml(key, obj):
    """One <Contents> of a listing: what GCS's XML listing gives of an object."""
    data, gen, etag, mtime, _ = obj
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mtime)) + ".%03dZ" % (mtime % 1 * 1000)
    return (f"<Contents><Key>{escape(key)}</Key><Generation>{gen}</Generation>"
            f"<MetaGeneration>1</MetaGeneration><LastModified>{stamp}</LastModified>"
            f"<ETag>{escape(etag)}</ETag><Size>{len(data)}</Size></Contents>")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))

    def reply(self, code, body=b"", headers=None, ctype="application/xml"):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body or code not in (204, 304):
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # reader stopped early (read-ahead GET cancelled)

    def err(self, code, what):
        self.reply(code, f"<Error><Code>{what}</Code><Message>{what}</Message></Error>".encode())

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def parse(self):
        u = urlsplit(self.path)
        q = parse_qs(u.query, keep_blank_values=True)
        parts = u.path.lstrip("/").split("/", 1)
        bucket = unquote(parts[0]) if parts[0] else None
        key = unquote(parts[1]) if len(parts) > 1 and parts[1] else None
        return u.path, q, bucket, key

    def meta_headers(self, obj):
        data, gen, etag, mtime, meta = obj
        return {"ETag": etag, "x-goog-generation": str(gen), "x-goog-metageneration": "1",
                "Last-Modified": email.utils.formatdate(mtime, usegmt=True),
                "Accept-Ranges": "bytes", **meta}

    def user_meta(self):
        """The request's custom metadata (x-goog-meta-*), which the object keeps."""
        return {k.lower(): v for k, v in self.headers.items()
                if k.lower().startswith("x-goog-meta-")}

    # ---- reads
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path, q, bucket, key = self.parse()
        if path == "/":
            return self.reply(200, b"OK", ctype="text/plain")
        if path == "/_stub/uploads":  # the tests' view: multipart uploads in progress
            # ?key=K counts those of one object only: tests share the server and run at once.
            only = q.get("key", [None])[0]
            with LOCK:
                n = sum(1 for u in UPLOADS.values() if only is None or u["key"] == only)
                return self.reply(200, str(n).encode(), ctype="text/plain")
        if path == "/_stub/list-parts":
            with LOCK:
                n = LIST_PAGES.get(q.get("key", [""])[0], 0)
                return self.reply(200, str(n).encode(), ctype="text/plain")
        if path.startswith("/storage/v1/b"):
            return self.reply(200, json.dumps({"kind": "storage#buckets", "items": [
                {"name": b} for b in BUCKETS]}).encode(), ctype="application/json")
        with LOCK:
            if bucket not in BUCKETS:
                return self.err(404, "NoSuchBucket")
            if key is None and self.command == "GET":
                return self.list_objects(bucket, q)
            if key is not None and "uploadId" in q and self.command == "GET":
                return self.list_parts(bucket, key, q)
            obj = BUCKETS[bucket].get(key)
        if obj is None:
            return self.err(404, "NoSuchKey")
        data, gen, etag, mtime, _ = obj
        im, inm = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        if im and im not in ("*", etag):
            return self.err(412, "PreconditionFailed")
        if inm and inm in ("*", etag):
            return self.reply(304, b"", self.meta_headers(obj))
        h = self.meta_headers(obj)
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if not m:
                return self.err(416, "InvalidRange")
            a, b = m.groups()
            n = len(data)
            if a == "":
                start, end = max(0, n - int(b)), n - 1
            else:
                start, end = int(a), (min(int(b), n - 1) if b else n - 1)
            if start >= n or start > end:
                h["Content-Range"] = f"bytes */{n}"
                return self.reply(416, b"", h)
            h["Content-Range"] = f"bytes {start}-{end}/{n}"
            return self.reply(206, data[start:end + 1], h, "application/octet-stream")
        return self.reply(200, data, h, "application/octet-stream")

    def list_parts(self, bucket, key, q):
        """ListParts (GET ?uploadId=ID, with max-parts and part-number-marker), as GCS's XML API
        documents it: ListPartsResult, S3's document. At most PAGE parts a page, so that a
        client's paging is exercised; an unknown upload is 404 NoSuchUpload."""
        up = UPLOADS.get(q["uploadId"][0])
        if up is None or up["bucket"] != bucket or up["key"] != key:
            return self.err(404, "NoSuchUpload")
        most = min(int(q.get("max-parts", ["1000"])[0]), PAGE)
        marker = int(q.get("part-number-marker", ["0"])[0] or 0)
        nums = sorted(n for n in up["parts"] if n > marker)
        page, more = nums[:most], len(nums) > most
        LIST_PAGES[key] = LIST_PAGES.get(key, 0) + 1
        xml = ["<?xml version='1.0' encoding='UTF-8'?><ListPartsResult>",
               f"<Bucket>{escape(bucket)}</Bucket><Key>{escape(key)}</Key>",
               f"<UploadId>{escape(q['uploadId'][0])}</UploadId>",
               f"<PartNumberMarker>{marker}</PartNumberMarker><MaxParts>{most}</MaxParts>",
               f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
        if more:
            xml.append(f"<NextPartNumberMarker>{page[-1]}</NextPartNumberMarker>")
        for n in page:
            data, etag = up["parts"][n]
            xml.append(f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag>"
                       f"<Size>{len(data)}</Size></Part>")
        xml.append("</ListPartsResult>")
        return self.reply(200, "".join(xml).encode())

    def list_objects(self, bucket, q):
        """GET /BUCKET?list-type=2: one page of the bucket's keys (held LOCK)."""
        arg = lambda name: q.get(name, [""])[0]
        if arg("list-type") != "2":
            return self.err(400, "InvalidArgument")
        prefix, delim = arg("prefix"), arg("delimiter")
        entries = page_entries(BUCKETS[bucket], prefix, delim, arg("start-after"))
        token = arg("continuation-token")
        if token:
            try:
                after = base64.urlsafe_b64decode(token.encode()).decode()
            except ValueError:  # not one of ours (binascii.Error, UnicodeDecodeError)
                return self.err(400, "InvalidArgument")
            entries = [e for e in entries if e[0] > after]
        size = min(PAGE, int(arg("max-keys"))) if arg("max-keys") else PAGE
        page, more = entries[:size], len(entries) > size
        xml = ["<?xml version='1.0' encoding='UTF-8'?>",
               '<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01">',
               f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>",
               f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{size}</MaxKeys>",
               f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
        if delim:
            xml.append(f"<Delimiter>{escape(delim)}</Delimiter>")
        for name, obj in page:
            xml.append(contents_xml(name, obj) if obj else
                       f"<CommonPrefixes><Prefix>{escape(name)}</Prefix></CommonPrefixes>")
        if more:
            nxt = base64.urlsafe_b64encode(page[-1][0].encode()).decode()
            xml.append(f"<NextContinuationToken>{nxt}</NextContinuationToken>")
        xml.append("</ListBucketResult>")
        return self.reply(200, "".join(xml).encode())

    # ---- writes
    def do_PUT(self):
        path, q, bucket, key = self.parse()
        data = self.body()
        with LOCK:
            if bucket not in BUCKETS or key is None:
                return self.err(404, "NoSuchBucket")
            if "uploadId" in q:
                up = UPLOADS.get(q["uploadId"][0])
                if up is None:
                    return self.err(404, "NoSuchUpload")
                etag = '"%s"' % hashlib.md5(data).hexdigest()
                up["parts"][int(q["partNumber"][0])] = (data, etag)
                return self.reply(200, b"", {"ETag": etag})
            match = self.headers.get("x-goog-if-generation-match")
            cur = BUCKETS[bucket].get(key)
            if match is not None and str(cur[1] if cur else 0) != match:
                return self.err(412, "PreconditionFailed")
            obj = self.store(bucket, key, data, self.user_meta())
        self.reply(200, b"", self.meta_headers(obj))

    def store(self, bucket, key, data, meta):
        gen = next_gen()
        obj = (data, gen, '"%s"' % hashlib.md5(data).hexdigest(), time.time(), meta)
        BUCKETS[bucket][key] = obj
        return obj

    def do_POST(self):
        path, q, bucket, key = self.parse()
        data = self.body()
        if path.rstrip("/") == "/storage/v1/b":   # JSON API bucket creation
            name = json.loads(data or b"{}").get("name")
            with LOCK:
                if name in BUCKETS:
                    return self.reply(409, b'{"error":{"code":409,"message":"conflict"}}',
                                      ctype="application/json")
                BUCKETS[name] = {}
            return self.reply(200, json.dumps({"kind": "storage#bucket", "name": name}).encode(),
                              ctype="application/json")
        with LOCK:
            if bucket not in BUCKETS or key is None:
                return self.err(404, "NoSuchBucket")
            if "uploads" in q:
                uid = uuid.uuid4().hex
                UPLOADS[uid] = {"bucket": bucket, "key": key, "parts": {},
                                "meta": self.user_meta()}
                return self.reply(200, (
                    "<?xml version='1.0' encoding='UTF-8'?><InitiateMultipartUploadResult>"
                    f"<Bucket>{bucket}</Bucket><Key>{key}</Key><UploadId>{uid}</UploadId>"
                    "</InitiateMultipartUploadResult>").encode())
            if "uploadId" in q:
                uid = q["uploadId"][0]
                up = UPLOADS.get(uid)
                if up is None:
                    return self.err(404, "NoSuchUpload")
                # Each part named with the ETag its upload was answered with (quoted or not,
                # as the client kept it), as GCS checks them.
                named = []
                for part in re.findall(r"<Part>(.*?)</Part>", data.decode(), re.S):
                    n = re.search(r"<PartNumber>\s*(\d+)\s*</PartNumber>", part)
                    t = re.search(r"<ETag>([^<]*)</ETag>", part)
                    if not (n and t):
                        return self.err(400, "MalformedXML")
                    named.append((n.group(1), t.group(1).strip()))
                strip = lambda t: t.replace("&quot;", '"').strip('"')
                if any(int(n) not in up["parts"] or strip(up["parts"][int(n)][1]) != strip(t)
                       for n, t in named):
                    return self.err(400, "InvalidPart")
                blob = b"".join(up["parts"][int(n)][0] for n, _ in named)
                match = self.headers.get("x-goog-if-generation-match")
                cur = BUCKETS[bucket].get(key)
                if match is not None and str(cur[1] if cur else 0) != match:
                    return self.err(412, "PreconditionFailed")
                obj = self.store(bucket, key, blob, up["meta"])
                del UPLOADS[uid]
                return self.reply(200, (
                    "<?xml version='1.0' encoding='UTF-8'?><CompleteMultipartUploadResult>"
                    f"<Bucket>{bucket}</Bucket><Key>{key}</Key><ETag>{obj[2]}</ETag>"
                    "</CompleteMultipartUploadResult>").encode(), {"x-goog-generation": str(obj[1])})
        self.err(400, "InvalidRequest")

    def do_DELETE(self):
        path, q, bucket, key = self.parse()
        with LOCK:
            if "uploadId" in q:
                UPLOADS.pop(q["uploadId"][0], None)
                return self.reply(204)
            if bucket in BUCKETS and BUCKETS[bucket].pop(key, None) is not None:
                return self.reply(204)
        self.err(404, "NoSuchKey")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4443
    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    srv.daemon_threads = True
    print(f"gcs_xml_stub listening on http://127.0.0.1:{port}", flush=True)
    srv.serve_forever()
