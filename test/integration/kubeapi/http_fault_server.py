#!/usr/bin/env python3
"""A scripted HTTP/1.1 peer for the HTTP engine's retry tests.

A real kube-apiserver cannot be made to answer 429 or 503 on demand, so the
tests of the engine's retry schedule (and only those) talk to this instead.
It checks nothing about Kubernetes; the engine's behaviour against the real
API server is tested against the real API server.

    http_fault_server.py STEP [STEP ...]

Listens on 127.0.0.1, port chosen by the kernel, and prints the port on
stdout. Request n (from 1) gets STEP n; the last STEP repeats. A STEP is

    STATUS            e.g. 200, 503
    STATUS:SECONDS    the same with "Retry-After: SECONDS"
    hang              no answer for 60 s (for timeouts)
    hangwrites        no answer for 60 s to a write (not GET); 200 to a GET

Every answer's body is JSON: {"request": n, "status": STATUS}, so a test
can see how many requests the server received. Exits when stdin closes, so
it never outlives the test that started it.
"""

import http.server
import json
import os
import sys
import threading
import time


def parse(step):
    if step in ("hang", "hangwrites"):
        return (step, None)
    status, _, retry_after = step.partition(":")
    return (int(status), retry_after or None)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with self.server.lock:
            self.server.count += 1
            n = self.server.count
        steps = self.server.steps
        status, retry_after = steps[min(n, len(steps)) - 1]
        if status == "hangwrites":
            status = "hang" if self.command != "GET" else 200
        if status == "hang":
            time.sleep(60)
            return
        body = json.dumps({"request": n, "status": status}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


def main():
    steps = [parse(s) for s in sys.argv[1:]] or [(200, None)]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.steps = steps
    server.count = 0
    server.lock = threading.Lock()

    def exit_on_eof():
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=exit_on_eof, daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
