"""A test CA and a leaf certificate for localhost and 127.0.0.1 (ECDSA P-256), made with the
openssl command line into a directory, for the TLS interop scripts."""

import base64
import hashlib
import os
import subprocess


def run(*args, **kw):
    subprocess.run(args, check=True, capture_output=True, timeout=60, **kw)


def make(work):
    """Writes ca.pem, cert.pem (leaf then CA) and key.pem into `work`; returns their paths and
    the base64 SHA-256 of the leaf's public key (what Chromium's SPKI list takes)."""
    ca_key, ca = os.path.join(work, "ca-key.pem"), os.path.join(work, "ca.pem")
    key, csr = os.path.join(work, "key.pem"), os.path.join(work, "leaf.csr")
    leaf, chain = os.path.join(work, "leaf.pem"), os.path.join(work, "cert.pem")
    ext = os.path.join(work, "leaf.ext")
    run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ca_key)
    run("openssl", "req", "-x509", "-new", "-key", ca_key, "-days", "2", "-subj", "/CN=web interop CA",
        "-out", ca)
    run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key + ".sec1")
    run("openssl", "pkcs8", "-topk8", "-nocrypt", "-in", key + ".sec1", "-out", key)
    run("openssl", "req", "-new", "-key", key, "-subj", "/CN=localhost", "-out", csr)
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-days", "2", "-extfile", ext, "-out", leaf)
    with open(chain, "w") as out:
        out.write(open(leaf).read() + open(ca).read())
    der = subprocess.run(
        ["openssl", "x509", "-in", leaf, "-pubkey", "-noout"], check=True, capture_output=True
    ).stdout
    spki = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "der"], input=der, check=True, capture_output=True
    ).stdout
    return ca, chain, key, base64.b64encode(hashlib.sha256(spki).digest()).decode()
