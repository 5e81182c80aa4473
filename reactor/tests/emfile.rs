//! Running out of descriptors: accept pauses on EMFILE and retries on a timer, the server keeps
//! serving, does not spin, and accepts again once descriptors free up.
//!
//! This binary holds this one test only: it lowers `RLIMIT_NOFILE` for its own process.

mod common;

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use common::{Client, cpu_time, start, wait_until};
use reactor::Config;

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count())
}

fn set_nofile(soft: u64) -> u64 {
    // SAFETY: `lim` is a plain C struct written by getrlimit; all-zero bytes are valid.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit writes into `lim`, which lives across the call.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let old = lim.rlim_cur as u64;
    lim.rlim_cur = soft as libc::rlim_t;
    // SAFETY: setrlimit reads `lim`, which lives across the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    old
}

#[test]
fn accept_pauses_on_emfile_without_spinning_and_accepts_again_later() {
    let handle = start(
        Config::default()
            .workers(1)
            .accept_retry(Duration::from_millis(100)),
        Duration::from_secs(30),
    );
    let addr = handle.local_addr();
    let mut steady = Client::connect(addr);
    assert_eq!(steady.roundtrip("before").as_deref(), Some("before"));

    let old = set_nofile(open_descriptors() as u64 + 16);
    let mut fillers = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                break;
            }
        }
    }
    // One descriptor for the client's socket; none left for the server's accept.
    fillers.pop();
    let mut waiting = Client::connect(addr);
    waiting.send(b"waiting\n");
    assert!(
        wait_until(Duration::from_secs(3), || handle
            .stats()
            .total
            .accept_errors
            > 0),
        "accept hit EMFILE"
    );

    let cpu = cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu_time() - cpu;
    assert!(
        spent < Duration::from_millis(100),
        "no spinning: {spent:?} of CPU in 1 s"
    );
    let errors = handle.stats().total.accept_errors;
    assert!(errors <= 30, "retries are paced: {errors} failed accepts");
    let out = handle.stats().total.out_of_descriptors;
    assert!(
        out > 0 && out <= errors,
        "counted as running out of descriptors: {out} of {errors}"
    );

    // Existing connections are still served.
    assert_eq!(steady.roundtrip("during").as_deref(), Some("during"));

    // Free descriptors: the next retry accepts the waiting connection.
    fillers.truncate(fillers.len().saturating_sub(8));
    assert_eq!(waiting.line().as_deref(), Some("waiting"));
    assert_eq!(waiting.roundtrip("after").as_deref(), Some("after"));
    drop(fillers);
    set_nofile(old);
    steady.reader.get_mut().flush().expect("flush");
    handle.shutdown().expect("shutdown");
}
