#!/usr/bin/env bash
# nginx answering `Hello, World!` over HTTP/2 by prior knowledge (h2c) on 127.0.0.1:--port —
# or by ALPN over TLS with `--tls-cert FILE --tls-key FILE` — in one process (no master: its CPU time is the server's whole), for `web-bench compare --only
# h2`. Takes `--port P --workers W` (one process whatever W). nginx replaces this script (its
# PID is the one started, its CPU time the one read); its files live in
# /tmp/web-bench-nginx-h2-PORT, made again at each start.
set -eu
port=8080
cert= key=
while [ $# -gt 0 ]; do
    case $1 in
    --port) port=$2; shift 2 ;;
    --workers) shift 2 ;;
    --tls-cert) cert=$2; shift 2 ;;
    --tls-key) key=$2; shift 2 ;;
    *) echo "nginx_h2.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
dir=/tmp/web-bench-nginx-h2-$port
rm -rf "$dir"
mkdir -p "$dir"
listen="listen 127.0.0.1:$port http2;"
if [ -n "$cert" ]; then
    listen="listen 127.0.0.1:$port ssl http2; ssl_certificate $cert; ssl_certificate_key $key;"
fi
cat >"$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; error_log $dir/error.log; pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off; client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir;
    uwsgi_temp_path $dir; scgi_temp_path $dir;
    server {
        $listen
        http2_max_concurrent_streams 250;
        keepalive_requests 1000000000;
        location / { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
exec nginx -c "$dir/nginx.conf"
