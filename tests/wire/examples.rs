//! The examples as programs, for the tests that run them.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::OnceLock;

/// Every example.
pub const EXAMPLES: [&str; 8] = [
    "hello",
    "echo",
    "ws_echo",
    "ws_client",
    "rate_limited",
    "chat",
    "fetch",
    "parse",
];

/// The examples' directory, after building them with this test's own profile (a no-op when
/// `cargo test` already built them), so that no stale binary is ever run.
pub fn examples_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // This test runs as <target>/<profile>/deps/<name>-<hash>.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
        let mut build = Command::new(env!("CARGO"));
        // Without what cargo set for this test alone: build scripts that watch these (ring's
        // does) would otherwise be rebuilt here, and again by the next `cargo test`.
        const SET_FOR_THIS_TEST: [&str; 5] = [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
        ];
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("CARGO_PKG_") || SET_FOR_THIS_TEST.contains(&name.as_ref()) {
                build.env_remove(name.as_ref());
            }
        }
        build.args(["build", "--quiet", "--manifest-path"]);
        build.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        for name in EXAMPLES {
            build.args(["--example", name]);
        }
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        // Built with this test's features, or the build would replace cargo's binaries.
        if cfg!(feature = "redis") {
            build.args(["--features", "redis"]);
        }
        if cfg!(feature = "tower") {
            build.args(["--features", "tower", "--example", "axum_on_web"]);
        }
        assert!(build.status().unwrap().success(), "building the examples");
        profile_dir.join("examples")
    })
}

/// Example `name` started with `--port 0` and `args`, once it says where it listens: a line
/// of its standard error that starts with `says` (`"chat: http://127.0.0.1:"`) and goes on
/// with the port. The process, the port, and its standard error (kept open, so that it can
/// write its last lines).
#[allow(dead_code)] // each test binary uses a different part of wire
pub fn serving(name: &str, args: &[&str], says: &str) -> (Child, u16, BufReader<ChildStderr>) {
    let mut child = Command::new(examples_dir().join(name))
        .args(["--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "{name} ended before it listened"
        );
        if let Some(port) = line
            .trim_end()
            .strip_prefix(says)
            .and_then(|rest| rest.trim_end_matches('/').parse().ok())
        {
            break port;
        }
    };
    (child, port, stderr)
}
