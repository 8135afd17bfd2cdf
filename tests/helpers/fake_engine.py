#!/usr/bin/env python3
"""An inference server's HTTP face for the tests: /health and a vLLM-shaped (or SGLang- or
MindIE-shaped) /metrics whose counters the test drives through a control file, read on every
request (JSON, all keys optional):
  {"running": 3, "waiting": 12,      request gauges
   "mode": "advance" | "freeze",     advance: tokens grow by "step" per /metrics request
   "step": 10,
   "epoch": 0,                       a new value zeroes the counters, as a restart does
   "metrics": "ok" | "garbage" | "500" | "hang",
   "health": 200,
   "engines": 1,                     vLLM V1 engine-index label per engine
   "frozen_engines": [1],            these engines never advance
   "kind": "vllm"}                   or "sglang", "mindie": whose metric names
usage: fake_engine.py PORT CONTROL [READY_FILE [ARGS...]]
(ARGS are ignored: a test adds a server's command line, e.g. `--port N`, for doctor to read.)
"""
import http.server
import json
import os
import sys
import time

port, control = int(sys.argv[1]), sys.argv[2]
ready = sys.argv[3] if len(sys.argv) > 3 else None
state = {"tokens": {}, "epoch": None}

NAMES = {
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting",
             "vllm:generation_tokens_total", "vllm:prompt_tokens_total"),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs",
               "sglang:generation_tokens_total", "sglang:prompt_tokens_total"),
    "mindie": ("num_requests_running", "num_requests_waiting",
               "generation_tokens_total", "prompt_tokens_total"),
}


def read_control():
    try:
        with open(control) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def page(c):
    if c.get("epoch", 0) != state["epoch"]:
        state["epoch"] = c.get("epoch", 0)
        state["tokens"] = {}
    kind = c.get("kind", "vllm")
    run, wait, gen, prompt = NAMES[kind]
    out = []
    for e in range(c.get("engines", 1)):
        tokens = state["tokens"].get(e, 0.0)
        if c.get("mode", "advance") == "advance" and e not in c.get("frozen_engines", []):
            tokens += c.get("step", 10)
        state["tokens"][e] = tokens
        labels = 'model_name="m1"' + (',engine="%d"' % e if kind == "vllm" else "")
        out.append("# HELP %s Number of requests currently running.\n# TYPE %s gauge" % (run, run))
        out.append("%s{%s} %g" % (run, labels, c.get("running", 0)))
        out.append("%s{%s} %g" % (wait, labels, c.get("waiting", 0)))
        out.append("# TYPE %s counter" % gen[:-len("_total")])
        out.append("%s{%s} %g" % (gen, labels, tokens))
        out.append("%s{%s} %g" % (prompt, labels, tokens / 2))
    return "\n".join(out) + "\n"


class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        c = read_control()
        if self.path == "/health":
            return self.answer(c.get("health", 200), "")
        if self.path != "/metrics":
            return self.answer(404, "not found\n")
        m = c.get("metrics", "ok")
        if m == "500":
            return self.answer(500, "internal error\n")
        if m == "hang":
            time.sleep(30)
            return self.answer(200, "")
        if m == "garbage":
            return self.answer(200, "<html><body>Welcome</body></html>\n")
        return self.answer(200, page(c))

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer.daemon_threads = True
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
if ready:
    with open(ready, "a") as f:
        f.write("%d\n" % os.getpid())
srv.serve_forever()
