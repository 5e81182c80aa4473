//! SIGINT and SIGTERM as a graceful stop, so that applications need no `unsafe` of their own.
//!
//! The signal handler does the one async-signal-safe thing needed: it writes the signal's number
//! to a pipe as one byte. A watcher thread, started with the handlers, reads that pipe and runs
//! the stop callbacks registered by
//! [`Control::shutdown_on_signals`](super::Control::shutdown_on_signals).
//!
//! A signal that finds nothing left to stop — every registered server already stopping or
//! stopped: a second Ctrl-C during the drain, or any after the servers ended — gets the
//! signal's default action (the process ends at once, killed by that signal), as if the
//! library had never installed a handler.

use std::io::{self, Read};
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

/// Begins a stop; answers whether there was anything left to stop.
type Callback = Box<dyn Fn() -> bool + Send>;

/// The pipe's writing end, for the handler (-1 until installed).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// What to run when a stop signal arrives.
static CALLBACKS: Mutex<Vec<Callback>> = Mutex::new(Vec::new());
/// Whether the handlers and the watcher are installed (and the result of trying).
static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        // SIGINT and SIGTERM (2 and 15) fit in a byte.
        let byte = signal as u8;
        // SAFETY: finding errno and write(2) are async-signal-safe; `errno` points at this
        // thread's errno, valid for as long as the thread runs; the write reads one byte from
        // a live local, into a descriptor that is never closed and never blocks (O_NONBLOCK):
        // a full pipe (thousands of signals unread) or any error is ignored, as the bytes
        // already pending wake the watcher. errno is put back, since the interrupted code may
        // be about to read its own.
        unsafe {
            let errno = errno();
            let saved = *errno;
            libc::write(fd, (&byte as *const u8).cast(), 1);
            *errno = saved;
        }
    }
}

/// Where the calling thread's errno lives: the one thing std has no portable way to set, under
/// the name each C library gives it.
///
/// # Safety
/// Calls the C library's own function, which has no preconditions; the pointer is the calling
/// thread's and must not outlive it.
unsafe fn errno() -> *mut libc::c_int {
    #[cfg(any(target_os = "linux", target_os = "redox", target_os = "emscripten"))]
    // SAFETY: no preconditions (see above).
    unsafe {
        libc::__errno_location()
    }
    #[cfg(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "dragonfly"
    ))]
    // SAFETY: no preconditions (see above).
    unsafe {
        libc::__error()
    }
    #[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))]
    // SAFETY: no preconditions (see above).
    unsafe {
        libc::__errno()
    }
    #[cfg(any(target_os = "solaris", target_os = "illumos"))]
    // SAFETY: no preconditions (see above).
    unsafe {
        libc::___errno()
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "redox",
        target_os = "emscripten",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "dragonfly",
        target_os = "android",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "solaris",
        target_os = "illumos"
    )))]
    compile_error!("the stop on signals needs errno's location on this target: add it here")
}

/// Registers `callback` to run (on the watcher thread) at SIGINT or SIGTERM, installing the
/// handlers the first time. `callback` answers whether it began a stop.
pub(crate) fn on_stop_signal(callback: Callback) -> io::Result<()> {
    CALLBACKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(callback);
    match INSTALLED.get_or_init(install) {
        Ok(()) => Ok(()),
        Err(errno) => Err(io::Error::from_raw_os_error(*errno)),
    }
}

fn install() -> Result<(), i32> {
    let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    // Both ends close on exec; the writing end is kept for the process's life (the handler
    // may run at any time), so its descriptor is taken out of its owner.
    let (reader, writer) = io::pipe().map_err(errno)?;
    let write_fd = writer.into_raw_fd();
    // SAFETY: fcntl(2) on the descriptor the pipe just gave us; no pointers.
    if unsafe { libc::fcntl(write_fd, libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(errno(io::Error::last_os_error()));
    }
    WAKE_FD.store(write_fd, Ordering::Relaxed);
    std::thread::Builder::new()
        .name("web-signals".into())
        .spawn(move || watch(reader))
        .map_err(errno)?;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` is given a zeroed struct with a valid handler address and an
        // empty mask; `on_signal` only does async-signal-safe work (one write(2)).
        let failed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut()) != 0
        };
        if failed {
            return Err(errno(io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Waits for signal numbers on the pipe; runs every callback for each. When none had anything
/// left to stop, the signal gets its default action.
fn watch(mut reader: io::PipeReader) {
    let mut buf = [0u8; 64];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        {
            let signals = buf.get(..n).unwrap_or(&[]);
            for &signal in signals {
                let callbacks = CALLBACKS.lock().unwrap_or_else(|e| e.into_inner());
                // Every callback runs (no short-circuit): each server is told to stop.
                let began = callbacks.iter().fold(false, |began, stop| stop() | began);
                if !began {
                    default_action(libc::c_int::from(signal));
                }
            }
        }
    }
}

/// Puts back the default disposition of `signal` and raises it: for SIGINT and SIGTERM the
/// process ends, killed by that signal, as it would have without our handler.
fn default_action(signal: libc::c_int) {
    // SAFETY: signal(2) with SIG_DFL and a signal number our own handler received (SIGINT or
    // SIGTERM); raise(3) sends it to this thread, which does not block it.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
