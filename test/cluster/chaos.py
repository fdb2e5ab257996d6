"""The chaos proxy (test/cluster/chaosproxy) from Python: start it in front
of a cluster's API server, set its fault rules, read its log.

    p = Proxy.start(cluster_env, dir)       # cluster_env: ctl env as a dict
    p.rules([{"id": "x", "method": "POST", "path": "/binding$", "action": {"status": 503}}])
    p.log(since=0)   # list of dicts, one per request
    p.stop()

p.kubeconfig is the admin user's kubeconfig pointing at the proxy.
"""

import json
import os
import signal
import subprocess
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def build():
    """The chaosproxy binary's path (build-chaosproxy builds it if missing)."""
    return subprocess.run([os.path.join(HERE, "build-chaosproxy")], check=True, capture_output=True,
                          text=True).stdout.strip()


class Proxy:
    def __init__(self, proc, dir, env, logfile):
        self.proc = proc
        self.dir = dir
        self.url = env["PROXY_URL"]
        self.control = env["CONTROL_URL"]
        self.kubeconfig = env["KUBECONFIG"]
        self.ca = os.path.join(dir, "ca.crt")
        self.logfile = logfile

    @classmethod
    def start(cls, cluster_env, dir, http1=False, seed=0, listen="127.0.0.1:0", timeout=30):
        """Start a proxy in front of cluster_env["SERVER"]; its files go to dir."""
        os.makedirs(dir, exist_ok=True)
        envfile = os.path.join(dir, "proxy.env")
        if os.path.exists(envfile):
            os.unlink(envfile)
        ca = os.path.join(os.path.dirname(cluster_env["KUBECONFIG"]), "pki", "ca.crt")
        argv = [build(), "-upstream", cluster_env["SERVER"], "-upstream-ca", ca,
                "-in-kubeconfig", cluster_env["KUBECONFIG"], "-dir", dir, "-listen", listen,
                "-seed", str(seed)]
        if http1:
            argv.append("-http1")
        logfile = os.path.join(dir, "chaosproxy.log")
        with open(logfile, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while not os.path.exists(envfile):
            if proc.poll() is not None:
                raise RuntimeError(f"chaosproxy exited {proc.returncode}: {open(logfile).read()[-2000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("chaosproxy did not start")
            time.sleep(0.05)
        env = {}
        with open(envfile) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = v
        return cls(proc, dir, env, logfile)

    def _call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode()

    def rules(self, rules=None):
        """Replace every rule with `rules` (a list of dicts); without an
        argument, the rules in place with their firings."""
        if rules is None:
            return json.loads(self._call("GET", "/rules"))["rules"]
        return json.loads(self._call("PUT", "/rules", {"rules": rules}))["rules"]

    def clear(self):
        return self.rules([])

    def log(self, since=0):
        text = self._call("GET", f"/log?since={int(since)}", timeout=120)
        return [json.loads(line) for line in text.splitlines() if line]

    def stats(self):
        return json.loads(self._call("GET", "/stats"))

    def http1(self, on):
        return json.loads(self._call("POST", "/http1", {"on": bool(on)}))

    def reset_connections(self):
        return json.loads(self._call("POST", "/reset-connections", {}))["closed"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
