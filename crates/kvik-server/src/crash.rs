//! The crash report. When the process dies of a fatal signal (SIGSEGV, SIGBUS,
//! SIGFPE, SIGILL, SIGABRT), it first writes to the log the report Redis writes,
//! in Redis's shape, because operators and supervisors grep for its lines: the
//! `crashed by signal` line, the stack trace, then what the server knows of itself
//! (INFO and CLIENT LIST, from the routine start-up hands over, since this module
//! sits below everything that knows them). Then it dies of the same signal, so a
//! core is dumped where the system keeps them.
//!
//! The handler allocates and takes locks, which a signal handler should not do; Redis
//! does the same, judging a report that sometimes fails better than none.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What the report says of the server besides the crash itself.
type Details = Box<dyn Fn() -> String + Send + Sync>;

static DETAILS: OnceLock<Details> = OnceLock::new();

/// `crash-log-enabled`: whether a fatal signal writes the report first.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// `crash-log-enabled` (at start-up and on CONFIG SET): with it off, a fatal signal
/// kills the process as if no handler were installed.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

const FATAL_SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// Write the crash report on a fatal signal; `details` gives the server's part.
pub fn install(details: impl Fn() -> String + Send + Sync + 'static) {
    if DETAILS.set(Box::new(details)).is_err() {
        return;
    }
    for signal in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction is a valid start; the handler has the
        // SA_SIGINFO signature, and SA_RESETHAND puts the default action back, so
        // the signal raised again at its end kills the process.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                on_fatal_signal;
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESETHAND | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    if ENABLED.load(Ordering::Relaxed) {
        // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
        let (code, address) = unsafe { ((*info).si_code, (*info).si_addr()) };
        report(signal, code, address as usize);
    }
    // SAFETY: the default action is back (SA_RESETHAND): this ends the process.
    unsafe {
        libc::raise(signal);
    }
}

fn report(signal: libc::c_int, code: libc::c_int, address: usize) {
    crate::log_warning!("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===");
    crate::log_warning!(
        "kvik {} crashed by signal: {signal}, si_code: {code}",
        crate::version::VERSION
    );
    if matches!(signal, libc::SIGSEGV | libc::SIGBUS) {
        crate::log_warning!("Accessing address: {address:#x}");
    }
    let trace = std::backtrace::Backtrace::force_capture();
    crate::log_warning!("\n------ STACK TRACE ------\n\nBacktrace:\n{trace}");
    if let Some(details) = DETAILS.get() {
        crate::log_warning!("{}", details());
    }
    crate::log_warning!(
        "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n"
    );
}
