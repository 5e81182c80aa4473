//! The examples as programs, for the tests that run them.

use std::path::PathBuf;
use std::process::Command;
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
        assert!(build.status().unwrap().success(), "building the examples");
        profile_dir.join("examples")
    })
}
