#!/usr/bin/env python3
"""Fails when a package that Cargo.lock resolves (dependencies, dev-dependencies and build
dependencies of every workspace member, optional features included) declares a `rust-version`
newer than the workspace's own: the declared minimum must be true for what a fresh clone builds
and tests with. Our own code's use of newer standard-library items is caught by clippy's
`incompatible_msrv` lint, which reads the same `rust-version`."""
import json
import subprocess
import sys


def version(v):
    return tuple(int(x) for x in v.split(".")[:3]) + (0,) * (3 - len(v.split(".")))


meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)
members = set(meta["workspace_members"])
ours = {p["name"]: p.get("rust_version") for p in meta["packages"] if p["id"] in members}
if not all(ours.values()):
    sys.exit(f"rust-version-check: every workspace member must declare rust-version: {ours}")
floor = min(version(v) for v in ours.values())
newer = [
    f"{p['name']} {p['version']} needs Rust {p['rust_version']}"
    for p in meta["packages"]
    if p["id"] not in members and p.get("rust_version") and version(p["rust_version"]) > floor
]
if newer:
    sys.exit(
        "rust-version-check: the workspace declares rust-version "
        + ".".join(map(str, floor))
        + " but resolves:\n  "
        + "\n  ".join(newer)
    )
print(f"rust-version-check: every resolved package builds with Rust {'.'.join(map(str, floor))}")
