#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/TARGET/) from the tests.

Every Rust byte-string literal (b"...") in the codecs' tests and in the raw-socket tests is read
and sorted by shape: a request head goes to request_head (and to handshake when it asks for a
WebSocket), a reply to reply, the chunked decoder's test bodies to chunked, query strings and
cookies to query_cookie; the WebSocket decoder's test frames (`frame(0x81, b"hi")`) are encoded
masked (server role) and unmasked (client role) for ws_decoder. Targets whose first input bytes
pick split points get a few picks per seed. Files are named by their SHA-1, like libFuzzer's, so
re-running only adds what is new. Run from anywhere: `python3 fuzz/seeds.py`.
"""

import hashlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
# The split picks (first byte) of the targets that use one: no split, the middle, near the end.
PICKS = [0x00, 0x80, 0xF0]
# connection's: how many cuts, then where (none; the middle; a quarter and three quarters).
CUTS = [b"\x00", b"\x01\x80", b"\x02\x40\xc0"]
# request_head's two: where the first prefix ends, then how much each next one adds (1 byte, 17).
PREFIXES = [b"\x00\x00", b"\x80\x10"]
METHODS = re.compile(rb"^[A-Z]{3,7} [^ ]+ HTTP/1\.[01]\r\n")
MAX_SEED = 4096


def unescape(body: str) -> bytes:
    """The bytes of a Rust byte-string literal's body (between the quotes)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = body[i + 1]
        if n == "\n":  # a line continuation skips the newline and the next line's indentation
            i += 2
            while i < len(body) and body[i] in " \t\n":
                i += 1
            continue
        simple = {"n": b"\n", "r": b"\r", "t": b"\t", "0": b"\0", "\\": b"\\", '"': b'"', "'": b"'"}
        if n in simple:
            out += simple[n]
            i += 2
        elif n == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        else:
            raise ValueError(f"escape \\{n}")
    return bytes(out)


def byte_strings(path: pathlib.Path):
    text = path.read_text()
    for m in re.finditer(r'b"((?:[^"\\]|\\.|\\\n)*)"', text, re.S):
        try:
            yield unescape(m.group(1))
        except (ValueError, IndexError):
            continue


def ws_frame(opcode: int, payload: bytes, masked: bool) -> bytes:
    head = bytearray([opcode])
    bit = 0x80 if masked else 0
    if len(payload) < 126:
        head.append(bit | len(payload))
    elif len(payload) < 1 << 16:
        head.append(bit | 126)
        head += len(payload).to_bytes(2, "big")
    else:
        head.append(bit | 127)
        head += len(payload).to_bytes(8, "big")
    if not masked:
        return bytes(head) + payload
    key = b"\x37\xfa\x21\x3d"
    return bytes(head) + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def main():
    seeds = {t: set() for t in ["connection", "request_head", "handshake", "reply", "chunked", "ws_decoder", "query_cookie"]}
    sources = [ROOT / "src" / "http" / "head" / "tests.rs", ROOT / "src" / "http" / "reply.rs"]
    sources += [ROOT / "src" / "http" / "client.rs", ROOT / "src" / "ws" / "handshake.rs"]
    sources += sorted((ROOT / "tests").glob("*.rs"))
    for path in sources:
        for lit in byte_strings(path):
            if METHODS.match(lit):
                seeds["request_head"].update(p + lit for p in PREFIXES)
                seeds["connection"].update(c + lit for c in CUTS)
                seeds["connection"].update(c + lit + b"\r" for c in CUTS)
                if b"websocket" in lit.lower():
                    seeds["handshake"].add(lit)
            elif lit.startswith(b"HTTP/1."):
                seeds["reply"].add(lit)
    # Empty lines and lone CRs between requests (a CRLF split across reads).
    seeds["connection"].update([b"\x00\r", b"\x00\r\n\r", b"\x01\x80\r\n\r\n"])
    for lit in byte_strings(ROOT / "src" / "http" / "chunked.rs"):
        if re.match(rb"^[0-9a-fA-F]+[;\r ]", lit):
            seeds["chunked"].update(bytes([p]) + lit for p in PICKS)
    for name in ["query.rs", "cookie.rs"]:
        text = (ROOT / "src" / "http" / name).read_text()
        for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', text):
            s = m.group(1)
            if "=" in s or "%" in s or ";" in s:
                seeds["query_cookie"].add(s.encode())
    decoder = (ROOT / "src" / "ws" / "decoder.rs").read_text()
    frames = []
    for m in re.finditer(r'frame\(0x([0-9a-fA-F]{2}), b"((?:[^"\\]|\\.)*)"\)', decoder):
        frames.append((int(m.group(1), 16), unescape(m.group(2))))
    for m in re.finditer(r"frame\(0x([0-9a-fA-F]{2}), &\[0x03, 0xe8(?:, b'o', b'k')?\]\)", decoder):
        frames.append((int(m.group(1), 16), b"\x03\xe8ok"))
    # Each frame alone, and runs of consecutive test frames (fragmented messages, controls between).
    groups = [[f] for f in frames] + [frames[i : i + 4] for i in range(0, len(frames), 2)]
    for group in groups:
        for role, masked in [(0x80, True), (0x81, False)]:  # even pick: server role (masked input)
            seeds["ws_decoder"].add(bytes([role]) + b"".join(ws_frame(op, p, masked) for op, p in group))
    for target, found in seeds.items():
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        added = 0
        for seed in found:
            if len(seed) > MAX_SEED:
                continue
            path = directory / hashlib.sha1(seed).hexdigest()
            if not path.exists():
                path.write_bytes(seed)
                added += 1
        print(f"{target}: {len(found)} seeds from the tests, {added} new")


if __name__ == "__main__":
    main()
