//! The crash report. When the process dies of a fatal signal (SIGSEGV, SIGBUS,
//! SIGFPE, SIGILL, SIGABRT), it first writes to the log the report Redis writes,
//! in Redis's shape, because operators and supervisors grep for its lines: the
//! `crashed by signal` line, the stack trace, then what the server knows of itself
//! (INFO and CLIENT LIST, from the routine start-up hands over, since this module
//! sits below everything that knows them). Then it dies of the same signal, so a
//! core is dumped where the system keeps them.
//!
//! A panic is a bug too. Where the code can recover from one (a command's handler, a
//! scripting library call: [`recover`] runs those), the panic's message and place go
//! to the log and the caller turns it into an error reply. Anywhere else (an event
//! loop, the saver, a thread of the server's own) a thread would die while holding
//! clients or work, and the server would limp on half dead; so the process writes
//! the report, headed the way Redis heads an assertion (`Guru Meditation`), and
//! aborts. DEBUG PANIC comes here on purpose ([`panic_now`]).
//!
//! The handler allocates and takes locks, which a signal handler should not do; Redis
//! does the same, judging a report that sometimes fails better than none.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe, PanicHookInfo};
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

thread_local! {
    /// How many [`recover`] calls this thread is inside.
    static RECOVERABLE: Cell<u32> = const { Cell::new(0) };
}

/// Write the crash report on a fatal signal or an unrecoverable panic; `details`
/// gives the server's part.
pub fn install(details: impl Fn() -> String + Send + Sync + 'static) {
    if DETAILS.set(Box::new(details)).is_err() {
        return;
    }
    std::panic::set_hook(Box::new(on_panic));
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

/// Run `work`, turning a panic in it into `None` (its message already logged) instead
/// of the crash report: for code whose caller can answer a bug with an error reply.
pub fn recover<R>(work: impl FnOnce() -> R) -> Option<R> {
    RECOVERABLE.with(|depth| depth.set(depth.get() + 1));
    let outcome = catch_unwind(AssertUnwindSafe(work));
    RECOVERABLE.with(|depth| depth.set(depth.get() - 1));
    outcome.ok()
}

/// Stop the process now with the crash report for `message`, as Redis's
/// `serverPanic` does (DEBUG PANIC).
pub fn panic_now(message: &str) -> ! {
    guru_meditation(message);
    abort_quietly()
}

/// Stop the process now with Redis's report of a failed assertion (`=== ASSERTION
/// FAILED ===`, where, what was not true, then the bug report), as DEBUG ASSERT
/// shows it.
pub fn assertion_failed(place: &str, condition: &str) -> ! {
    crate::log_warning!("=== ASSERTION FAILED ===");
    crate::log_warning!("==> {place} '{condition}' is not true");
    report_body("");
    abort_quietly()
}

/// Stop the process now as an allocation of `bytes` that failed does, with
/// Redis's lines (DEBUG OOM).
pub fn out_of_memory(bytes: usize) -> ! {
    crate::log_warning!("Out Of Memory allocating {bytes} bytes!");
    panic_now(&format!(
        "Redis aborting for OUT OF MEMORY. Allocating {bytes} bytes!"
    ))
}

fn on_panic(info: &PanicHookInfo<'_>) {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let place = info
        .location()
        .map_or_else(String::new, |l| format!(" #{}:{}", l.file(), l.line()));
    if RECOVERABLE.with(Cell::get) > 0 {
        crate::log_warning!("Internal error (recovered): {message}{place}");
        return;
    }
    guru_meditation(&format!("{message}{place}"));
    abort_quietly()
}

/// The report of a software failure: Redis's `serverPanic` header, then the rest.
fn guru_meditation(message: &str) {
    crate::log_warning!("------------------------------------------------");
    crate::log_warning!("!!! Software Failure. Press left mouse button to continue");
    crate::log_warning!("Guru Meditation: {message}");
    report_body("");
}

/// Die of SIGABRT without the signal handler writing a second report.
fn abort_quietly() -> ! {
    // SAFETY: putting back the default action of a signal is always sound.
    unsafe {
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
    }
    std::process::abort()
}

fn report(signal: libc::c_int, code: libc::c_int, address: usize) {
    let mut cause = format!(
        "kvik {} crashed by signal: {signal}, si_code: {code}",
        crate::version::VERSION
    );
    if matches!(signal, libc::SIGSEGV | libc::SIGBUS) {
        cause.push_str(&format!("\nAccessing address: {address:#x}"));
    }
    report_body(&cause);
}

/// The report from its START line: `cause` (if any), the stack, the server's part.
fn report_body(cause: &str) {
    crate::log_warning!("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===");
    if !cause.is_empty() {
        crate::log_warning!("{cause}");
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
