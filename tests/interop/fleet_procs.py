"""The processes of a fleet on 127.0.0.1, for the fleet's interop test and benchmark (imported,
not run): a Redis server, `examples/chat` instances using it, and nginx in front of them
(round-robin, WebSocket upgrades proxied, one hop of X-Forwarded-For).

Everything gets free ports of 127.0.0.1 and a temporary directory of its own; every process is
started here and stopped here by its PID (`Procs.close`, also on any failure). Every wait is
bounded. A missing program is a failure (`Missing`), never a skip.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


class Missing(Exception):
    """A program the fleet needs is not installed."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need(program):
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/bin:/sbin")
    if not path:
        raise Missing(f"{program} is not installed (Debian: apt-get install -y {program})")
    return path


def redis_command(port, *args, timeout=1.0):
    """Sends one command to Redis on `port` (RESP); its reply's first line, or None if Redis
    does not answer."""
    out = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() if isinstance(x, str) else x for x in args)
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(out)
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = s.recv(4096)
                if not chunk:
                    return None
                reply += chunk
            return reply.split(b"\r\n", 1)[0].decode(errors="replace")
    except OSError:
        return None


# Straight to 127.0.0.1, whatever proxy the environment names.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_json(url, timeout=5):
    with OPENER.open(url, timeout=timeout) as r:
        return json.loads(r.read())


class Procs:
    """The fleet's processes; `close()` stops every one still running, by PID."""

    def __init__(self, chat_bin, tag="fleet"):
        self.chat_bin = chat_bin
        self.tag = tag
        self.tmp = tempfile.mkdtemp(prefix=f"{tag}-")
        os.chmod(self.tmp, 0o755)  # nginx workers may run as another user than the master
        self.redis = None
        self.redis_port = None
        self.chats = []  # (process, port)
        self.nginx = None
        self.nginx_port = None
        self.redis_server = need("redis-server")
        self.nginx_bin = need("nginx")

    def log(self, name):
        return open(os.path.join(self.tmp, name), "ab")

    # Redis -----------------------------------------------------------------------------
    def start_redis(self, port=None):
        """Starts redis-server (on `port`, else a free one); waits for PING. It saves its data
        in the temporary directory when stopped and reads it back when started again there."""
        for _ in range(3):
            self.redis_port = port or free_port()
            self.redis = subprocess.Popen(
                [self.redis_server, "--port", str(self.redis_port), "--bind", "127.0.0.1",
                 "--save", "3600 1", "--appendonly", "no", "--dir", self.tmp,
                 "--protected-mode", "no", "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=self.log("redis.log"), stderr=subprocess.STDOUT)
            end = time.time() + 10
            while time.time() < end and self.redis.poll() is None:
                if redis_command(self.redis_port, "PING") == "+PONG":
                    return self.redis_port
                time.sleep(0.05)
            self.stop_redis()
            if port:
                break
        raise RuntimeError(f"redis-server did not start; see {self.tmp}/redis.log")

    def stop_redis(self):
        stop(self.redis)
        self.redis = None

    # chat instances ----------------------------------------------------------------------
    def start_chat(self, workers=2, redis=True, port=None):
        """Starts a chat instance (on `port`, else a free one); its port."""
        wanted = port
        for _ in range(3):
            port = wanted or free_port()
            args = [self.chat_bin, "--port", str(port), "--workers", str(workers),
                    "--proxies", "1"]  # nginx, on this host
            if redis:
                args += ["--redis", f"redis://127.0.0.1:{self.redis_port}/"]
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                    stdout=self.log(f"chat-{port}.log"), stderr=subprocess.STDOUT)
            if wait_http(f"http://127.0.0.1:{port}/api/stats", proc):
                self.chats.append((proc, port))
                return port
            stop(proc)
        raise RuntimeError(f"the chat did not start; see the logs in {self.tmp}")

    def kill_chat(self, port):
        """SIGKILL to the chat instance on `port` (no goodbye to anyone); waits for its end."""
        for proc, p in self.chats:
            if p == port and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        self.chats = [(proc, p) for proc, p in self.chats if p != port]

    # nginx ---------------------------------------------------------------------------------
    def start_nginx(self):
        """nginx in front of every chat started so far: round-robin, WebSocket upgrades
        proxied, the client's address appended to X-Forwarded-For (one hop)."""
        user = "user root root;" if os.geteuid() == 0 else ""
        servers = "\n".join(f"        server 127.0.0.1:{p};" for _, p in self.chats)
        for _ in range(3):
            self.nginx_port = free_port()
            conf = os.path.join(self.tmp, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(user=user, tmp=self.tmp, servers=servers,
                                          port=self.nginx_port))
            self.nginx = subprocess.Popen(
                [self.nginx_bin, "-p", self.tmp, "-e", os.path.join(self.tmp, "error.log"),
                 "-c", conf],
                stdin=subprocess.DEVNULL, stdout=self.log("nginx.out"), stderr=subprocess.STDOUT)
            if wait_http(f"http://127.0.0.1:{self.nginx_port}/api/stats", self.nginx):
                return self.nginx_port
            stop(self.nginx)
        raise RuntimeError(f"nginx did not start; see {self.tmp}/error.log")

    def close(self):
        stop(self.nginx)
        for proc, _ in self.chats:
            stop(proc)
        stop(self.redis)
        shutil.rmtree(self.tmp, ignore_errors=True)


# The nginx configuration a fleet needs in front of it: what the README shows, plus a private
# prefix for every file nginx writes.
NGINX_CONF = """
{user}
daemon off;
master_process on;
worker_processes 1;
pid {tmp}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      close;
    }}
    upstream chat {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://chat;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


def wait_http(url, proc, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with OPENER.open(url, timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def stop(proc):
    """SIGTERM, up to 10 s, then SIGKILL: a process this module started, by its PID."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
