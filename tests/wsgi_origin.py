#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real WSGI origin (Python's wsgiref), for what origins that read '_' as
'-' do: wsgiref, like Puma, Rails's default server and every CGI-style
gateway, files the fields X-API-Key and X_API_Key both under
HTTP_X_API_KEY, so a client can name a field Corral keys or drops in a
spelling Corral does not know.

    python3 tests/wsgi_origin.py --port 0

Every path answers 200 "key=<X-API-Key> tenant=<X-Tenant-ID>
auth=<Authorization> n=<count>" as the application sees them, with
Cache-Control: public, max-age=60. GET /__count?path=P answers P's count.
Prints "origin listening on HOST:PORT" once bound.
"""

import argparse
import sys
import threading
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

COUNT_PATH = "/__count"


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def make_app():
    counts, lock = {}, threading.Lock()

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if path == COUNT_PATH:
            asked = parse_qs(environ.get("QUERY_STRING", "")).get("path", [""])[0]
            with lock:
                body = str(counts.get(asked, 0)).encode()
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [body]
        with lock:
            counts[path] = counts.get(path, 0) + 1
            n = counts[path]
        body = (f"key={environ.get('HTTP_X_API_KEY', '')} "
                f"tenant={environ.get('HTTP_X_TENANT_ID', '')} "
                f"auth={environ.get('HTTP_AUTHORIZATION', '')} n={n}").encode()
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Cache-Control", "public, max-age=60"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return app


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    server = make_server(args.host, args.port, make_app(), server_class=ThreadingWSGIServer,
                         handler_class=QuietHandler)
    print(f"origin listening on {args.host}:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
