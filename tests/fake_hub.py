#!/usr/bin/env python3
"""A fake Hugging Face hub on loopback, for the hub client's tests (standard library only).

It serves what dllm's client uses, in the hub's shapes (shared/docs/hub.md 1.2 to 1.4):

  GET  /api/models/{repo}/revision/{rev}            {"id", "sha"}
  GET  /api/models/{repo}/tree/{commit}?recursive=true
                                                    PAGE entries a page, Link: <...>; rel="next"
  HEAD /{repo}/resolve/{rev}/{path}                 LFS files: 302 to http://localhost:PORT/cdn/
  GET  /{repo}/resolve/{rev}/{path}                 (another host name than the hub's
                                                    127.0.0.1), X-Repo-Commit, X-Linked-Etag,
                                                    X-Linked-Size; other files served directly
  GET  /cdn/{sha256}?sig=...                        the content, with Range (206) support

test/huge lists 100 000 small files besides its GGUF file, 1 000 a page as the hub pages.
test/gated answers 401 without "Authorization: Bearer hf_test_token_123"; test/renamed
answers /resolve with a relative 307 to test/tiny-GGUF, as the hub does for renamed repos.

Faults are set per place ("api", "tree", "head", "cdn") and file-name substring through
  GET /_fault?where=cdn&kind=drop&times=1[&file=Q8_0]
with kind one of: drop (close mid-body), badsha (a flipped byte), badsize (100 more bytes),
ignore_range (200 to a ranged request), r416, trickle (slow but complete), stall (half the
body, then silence for 3 s), hang (the headers, then silence for 3 s), longlen (a
Content-Length 1000 bytes above the body sent), loop (a redirect to the same URL; at "head"
a relative one), badurl (at "head" a Location, at "tree" a Link rel=next, that is no URL:
an unclosed IPv6 bracket), onebody (at "tree", the whole listing in one answer), or an
HTTP status: 401, 403, 404 (with X-Error-Code from
&code=), 429 (Retry-After: 1), 500. times=-1 keeps the fault. GET /_log returns the requests
seen (method, path, host, authorization, range) as JSON; GET /_reset clears faults and log;
GET /_files?repo=R&rev=V gives the commit and each file's path, size, SHA-256 and etag.

--serve REPO:FILE=PATH (repeatable) adds a repo whose main revision holds FILE with the
bytes of the local file PATH, so programs can be tested on real models served by the hub.

Usage: fake_hub.py --port-file FILE [--idle SECONDS] [--serve REPO:FILE=PATH ...]. It binds
127.0.0.1 only, and exits by itself after --idle seconds without a request (default 60) or
20 minutes in all.
"""
import argparse
import hashlib
import http.server
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse

TOKEN = "hf_test_token_123"
PAGE = 3
LIFETIME = 1200


def blob(seed, size):
    """Deterministic content of a file."""
    return random.Random(seed).randbytes(size)


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(name):
    return hashlib.sha1(name.encode()).hexdigest()


class File:
    def __init__(self, path, data, lfs=True):
        self.path = path
        self.data = data
        self.lfs = lfs
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.oid = git_blob_sha1(data) if not lfs else hashlib.sha1(b"pointer " + data[:64]).hexdigest()


def make_repos(served=()):
    """The repos, and the files of --serve as (repo, path, data) added to theirs."""
    q4 = blob("tiny.Q4_K_M", 256 * 1024)
    tiny = [
        File("README.md", b"# tiny\nA test repo.\n" * 10, lfs=False),
        File("mmproj-tiny-Q4_K_M.gguf", blob("mmproj", 10000)),
        File("sub/../../../escape.Q2_K.gguf", blob("escape", 1000)),
        File("/abs.Q3_K_S.gguf", blob("abs", 1000)),
        File("ctl\x1b]0;owned\x07\n\r.IQ4_XS.gguf", blob("ctl", 1000)),
        File("tiny-F16.gguf", blob("tiny-F16", 300 * 1024)),
        File("tiny.Q4_K_M.gguf", q4),
        File("tiny.Q8_0.gguf", blob("tiny.Q8_0", 128 * 1024)),
        File("deep/dir/tiny.Q5_K_S.gguf", blob("deep", 20000)),
        File("plain.IQ1_S.gguf", blob("plain", 5000), lfs=False),
    ]
    tiny_v1 = [f for f in tiny if f.path != "README.md"]
    tiny_v1.append(File("README.md", b"# tiny v1\n", lfs=False))
    split = [File("big-Q4_K_M-%05d-of-00003.gguf" % k, blob("split%d" % k, 50000)) for k in (1, 2, 3)]
    repos = {
        "test/tiny-GGUF": {"main": tiny, "v1": tiny_v1},
        "test/split-GGUF": {"main": split},
        "test/q8-only": {"main": [File("m-F16.gguf", blob("mf16", 4000)), File("m-Q8_0.gguf", blob("mq8", 3000))]},
        "test/f16-only": {"main": [File("b-F16.gguf", blob("bf16", 3000)), File("a-BF16.gguf", blob("abf16", 3000))]},
        "test/gated": {"main": [File("g.Q4_K_M.gguf", blob("gated", 30000))]},
        "test/huge": {"main": [File("huge.Q4_K_M.gguf", blob("huge", 2000))]},
    }
    for repo, path, data in served:
        repos.setdefault(repo, {"main": []})["main"].append(File(path, data))
    commits = {}
    refs = {}
    for repo, revs in repos.items():
        for rev, files in revs.items():
            c = commit_of(repo + "@" + rev)
            commits[(repo, c)] = sorted(files, key=lambda f: f.path)
            refs[(repo, rev)] = c
            refs[(repo, c)] = c
    refs[("test/renamed", "main")] = refs[("test/tiny-GGUF", "main")]
    refs[("test/renamed", refs[("test/tiny-GGUF", "main")])] = refs[("test/tiny-GGUF", "main")]
    by_sha = {}
    for files in commits.values():
        for f in files:
            by_sha[f.sha256] = f
    return commits, refs, by_sha


COMMITS, REFS, BY_SHA = make_repos()

HUGE_FILES = 100000
HUGE_PAGE = 1000
HUGE = []


def huge_entries():
    """test/huge's other files: 100 folders of 1 000 small files each (made on first use)."""
    if not HUGE:
        for d in range(HUGE_FILES // 1000):
            HUGE.append({"type": "directory", "oid": "%040x" % (HUGE_FILES + d), "size": 0, "path": "d%02d" % d})
            HUGE.extend({"type": "file", "oid": "%040x" % i, "size": 10, "path": "d%02d/f%05d.txt" % (d, i)}
                        for i in range(d * 1000, d * 1000 + 1000))
    return HUGE


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.faults = []
        self.log = []
        self.last = time.time()

    def take_fault(self, where, path):
        """The fault for a request at where on path, if any (its count goes down)."""
        with self.lock:
            for f in self.faults:
                if f["where"] == where and f["file"] in path and f["times"] != 0:
                    if f["times"] > 0:
                        f["times"] -= 1
                    return f
        return None


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hub/1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        with STATE.lock:
            STATE.last = time.time()
            STATE.log.append({
                "method": self.command,
                "path": self.path,
                "host": self.headers.get("Host", ""),
                "authorization": self.headers.get("Authorization"),
                "range": self.headers.get("Range"),
            })

    def send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def error(self, status, code=None, head=False):
        headers = {"Content-Type": "application/json"}
        if code:
            headers["X-Error-Code"] = code
        if status == 429:
            headers["Retry-After"] = "1"
        body = json.dumps({"error": code or ("HTTP %d" % status)}).encode()
        self.send(status, body, headers, head)

    def status_fault(self, fault, head=False):
        """Answers an HTTP-status fault; False when the fault is of another kind."""
        if fault and fault["kind"].isdigit():
            self.error(int(fault["kind"]), fault.get("code") or None, head)
            return True
        return False

    def authorized(self, repo):
        return repo != "test/gated" or self.headers.get("Authorization") == "Bearer " + TOKEN

    def lookup_commit(self, repo, rev, head):
        """The commit rev names in repo, or None after answering 404 or 401 as the hub does."""
        if not any(r == repo for r, _ in REFS):
            self.error(404, "RepoNotFound", head)
            return None
        if not self.authorized(repo):
            self.error(401, None, head)
            return None
        commit = REFS.get((repo, rev))
        if commit is None:
            self.error(404, "RevisionNotFound", head)
        return commit

    def do_HEAD(self):
        self.record()
        self.route(head=True)

    def do_GET(self):
        self.record()
        self.route(head=False)

    def route(self, head):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query)
        if path.startswith("/_"):
            return self.control(path, query)
        if path.startswith("/api/models/"):
            return self.api(path[len("/api/models/"):], query, head)
        if path.startswith("/cdn/"):
            return self.cdn(path[len("/cdn/"):], head)
        parts = path.lstrip("/").split("/", 4)
        if len(parts) == 5 and parts[2] == "resolve":
            return self.resolve("/".join(parts[:2]), parts[3], parts[4], head)
        self.error(404)

    def control(self, path, query):
        if path == "/_fault":
            f = {k: v[0] for k, v in query.items()}
            f.setdefault("file", "")
            f["times"] = int(f.get("times", "1"))
            with STATE.lock:
                STATE.faults.append(f)
            return self.send(200, b"{}")
        if path == "/_log":
            with STATE.lock:
                body = json.dumps(STATE.log).encode()
            return self.send(200, body, {"Content-Type": "application/json"})
        if path == "/_files":
            repo = query.get("repo", [""])[0]
            commit = REFS.get((repo, query.get("rev", ["main"])[0]))
            files = COMMITS.get((repo, commit), [])
            body = {"commit": commit, "files": [
                {"path": f.path, "size": len(f.data), "sha256": f.sha256, "etag": f.sha256 if f.lfs else f.oid}
                for f in files]}
            return self.send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
        if path == "/_reset":
            with STATE.lock:
                STATE.faults.clear()
                STATE.log.clear()
            return self.send(200, b"{}")
        self.error(404)

    def api(self, rest, query, head):
        # {org}/{name}/revision/{rev} or {org}/{name}/tree/{commit}
        parts = rest.split("/", 3)
        if len(parts) < 4:
            return self.error(404)
        repo, kind, rev = parts[0] + "/" + parts[1], parts[2], parts[3]
        fault = STATE.take_fault("api" if kind == "revision" else "tree", repo)
        if self.status_fault(fault, head):
            return
        commit = self.lookup_commit(repo, rev, head)
        if commit is None:
            return
        canon = "test/tiny-GGUF" if repo == "test/renamed" else repo
        files = COMMITS[(canon, commit)]
        if kind == "revision":
            body = {"id": repo, "sha": commit, "siblings": [{"rfilename": f.path} for f in files]}
            return self.send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)
        if kind != "tree":
            return self.error(404)
        entries = []
        dirs = set()
        for f in files:
            d = os.path.dirname(f.path)
            while d and d not in dirs and not d.startswith("/"):
                dirs.add(d)
                entries.append({"type": "directory", "oid": commit_of(d), "size": 0, "path": d})
                d = os.path.dirname(d)
            e = {"type": "file", "oid": f.oid, "size": len(f.data), "path": f.path}
            if f.lfs:
                e["lfs"] = {"oid": f.sha256, "size": len(f.data), "pointerSize": 134}
            entries.append(e)
        size = PAGE
        if canon == "test/huge":
            entries = entries + huge_entries()
            size = HUGE_PAGE
        if fault and fault["kind"] == "onebody":
            size = len(entries)
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start:start + size]
        headers = {"Content-Type": "application/json"}
        if fault and fault["kind"] == "badurl":
            headers["Link"] = '<http://[::1/next>; rel="next"'
        elif start + size < len(entries):
            host = self.headers.get("Host", "127.0.0.1")
            headers["Link"] = '<http://%s/api/models/%s/tree/%s?recursive=true&cursor=%d>; rel="next"' % (
                host, repo, commit, start + size)
        self.send(200, json.dumps(page).encode(), headers, head)

    def resolve(self, repo, rev, path, head):
        fault = STATE.take_fault("head" if head else "get", path)
        if self.status_fault(fault, head):
            return
        if fault and fault["kind"] == "loop":
            return self.send(302, b"", {"Location": self.path.split("?")[0]}, head)
        if fault and fault["kind"] == "badurl":
            return self.send(302, b"", {"Location": "http://[::1/x"}, head)
        if repo == "test/renamed":
            loc = "/test/tiny-GGUF/resolve/%s/%s" % (rev, urllib.parse.quote(path))
            return self.send(307, b"", {"Location": loc}, head)
        commit = self.lookup_commit(repo, rev, head)
        if commit is None:
            return
        f = next((f for f in COMMITS[(repo, commit)] if f.path == path), None)
        if f is None:
            return self.error(404, "EntryNotFound", head)
        headers = {"X-Repo-Commit": commit, "ETag": '"%s"' % f.oid}
        if not f.lfs:
            return self.send(200, f.data, headers, head)
        port = self.server.server_address[1]
        headers["X-Linked-Etag"] = '"%s"' % f.sha256
        headers["X-Linked-Size"] = str(len(f.data))
        headers["Location"] = "http://localhost:%d/cdn/%s?sig=s3cr3t" % (port, f.sha256)
        self.send(302, b"", headers, head)

    def cdn(self, sha, head):
        f = BY_SHA.get(sha)
        if f is None:
            return self.error(404)
        fault = STATE.take_fault("cdn", f.path)
        if self.status_fault(fault, head):
            return
        kind = fault["kind"] if fault else ""
        if kind == "loop":
            port = self.server.server_address[1]
            return self.send(302, b"", {"Location": "http://localhost:%d%s" % (port, self.path)}, head)
        data = f.data
        if kind == "badsha":
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        elif kind == "badsize":
            data = data + b"x" * 100
        rng = self.headers.get("Range")
        start = 0
        if rng and kind == "r416":
            return self.send(416, b"", {"Content-Range": "bytes */%d" % len(data)}, head)
        if rng and kind != "ignore_range" and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.send(416, b"", {"Content-Range": "bytes */%d" % len(data)}, head)
            status = 206
            headers = {"Content-Range": "bytes %d-%d/%d" % (start, len(data) - 1, len(data))}
        else:
            status, headers = 200, {}
        body = data[start:]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) + (1000 if kind == "longlen" else 0)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if head:
            return
        if kind == "hang":
            self.wfile.flush()
            time.sleep(3)
            self.close_connection = True
            return
        if kind == "longlen":
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind in ("drop", "stall"):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if kind == "stall":
                time.sleep(3)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "trickle":
            for i in range(0, len(body), 2048):
                self.wfile.write(body[i:i + 2048])
                self.wfile.flush()
                time.sleep(0.01)
            return
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """Clients that hang up (the tests drop and cancel on purpose) are not errors."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--idle", type=float, default=60)
    ap.add_argument("--serve", action="append", default=[], metavar="REPO:FILE=PATH")
    args = ap.parse_args()
    served = []
    for spec in args.serve:
        name, _, local = spec.partition("=")
        repo, _, path = name.partition(":")
        if not local or not path:
            ap.error("--serve takes REPO:FILE=PATH, not %r" % spec)
        with open(local, "rb") as f:
            served.append((repo, path, f.read()))
    global COMMITS, REFS, BY_SHA
    COMMITS, REFS, BY_SHA = make_repos(served)
    server = Server(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    started = time.time()

    def watchdog():
        while True:
            time.sleep(0.5)
            now = time.time()
            if now - STATE.last > args.idle or now - started > LIFETIME:
                os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
