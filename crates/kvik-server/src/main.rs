//! `kvik-server [config-file] [--directive value ...]`: start the server the way
//! redis-server starts — load the configuration, set up logging, daemonize if asked,
//! write the pid file, bind, serve until SHUTDOWN or SIGTERM/SIGINT.

use kvik_server::server::Server;
use kvik_server::startup;
use kvik_server::version::{REDIS_VERSION, VERSION};
use kvik_server::{log_notice, log_warning, logging, supervise};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Where a daemonized server writes its pid when no `pidfile` is configured.
const DEFAULT_DAEMON_PIDFILE: &str = "/var/run/redis.pid";

/// The C runtime's argc and argv: the memory the process title is written over
/// (`set-proc-title`). std keeps argv to itself, so they are taken the way glibc
/// offers them to every `.init_array` function.
static ARGC: AtomicUsize = AtomicUsize::new(0);
static ARGV: AtomicPtr<*mut libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

#[used]
#[link_section = ".init_array"]
static CAPTURE_ARGV: extern "C" fn(libc::c_int, *mut *mut libc::c_char, *mut *mut libc::c_char) =
    capture_argv;

extern "C" fn capture_argv(
    argc: libc::c_int,
    argv: *mut *mut libc::c_char,
    _envp: *mut *mut libc::c_char,
) {
    ARGC.store(usize::try_from(argc).unwrap_or(0), Ordering::Relaxed);
    ARGV.store(argv, Ordering::Relaxed);
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // SAFETY: argc/argv are the C runtime's own, and no other thread exists yet.
    unsafe {
        kvik_server::process::claim_title_area(
            ARGC.load(Ordering::Relaxed),
            ARGV.load(Ordering::Relaxed),
        );
    }
    if matches!(argv.first().map(String::as_str), Some("-v" | "--version")) {
        println!(
            "kvik-server v={VERSION} (Redis {} compatible)",
            REDIS_VERSION
        );
        return;
    }
    // KeyDB's build query: scripts (KeyDB's own test suite among them) ask whether
    // the binary has a flash tier and read the exit status. kvik keeps everything in
    // memory, so the answer is no, and no server starts.
    if argv.first().map(String::as_str) == Some("--is-flash-enabled") {
        std::process::exit(1);
    }
    let loaded = match kvik_config::load_from_argv(&argv) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut config = loaded.config;
    let syslog = config
        .syslog_enabled
        .then(|| (config.syslog_ident.clone(), config.syslog_facility.clone()));
    if let Err(e) = logging::init(
        &config.loglevel,
        &config.logfile,
        syslog.as_ref().map(|(i, f)| (i.as_str(), f.as_str())),
    ) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    // A supervised server stays in the foreground, whatever `daemonize` says: the
    // supervisor tracks the process it started.
    let supervised = supervise::establish(&config.supervised);
    if config.daemonize && !supervised {
        daemonize();
        if config.pidfile.is_empty() {
            config.pidfile = DEFAULT_DAEMON_PIDFILE.into();
        }
    }
    let pid = std::process::id();
    log_notice!("oO0OoO0OoO0Oo kvik is starting oO0OoO0OoO0Oo");
    log_notice!(
        "kvik version={VERSION}, redis_version={}, bits={}, pid={pid}, just started",
        REDIS_VERSION,
        usize::BITS
    );
    match &loaded.config_file {
        Some(_) => log_notice!("Configuration loaded"),
        None => log_warning!(
            "Warning: no config file specified, using the default config. In order to specify a config file use kvik-server /path/to/redis.conf"
        ),
    }
    for w in &loaded.warnings {
        log_warning!("{w}");
    }
    if let Err(e) = std::env::set_current_dir(&config.dir) {
        log_warning!("Can't chdir to '{}': {e}", config.dir);
        std::process::exit(1);
    }
    let pidfile = config.pidfile.clone();
    if !pidfile.is_empty() {
        if let Err(e) = std::fs::write(&pidfile, format!("{pid}\n")) {
            log_warning!("Failed to write PID file: {e}");
        }
    }
    let (port, threads, show_logo) = (config.port, config.server_threads, config.always_show_logo);
    let unixsocket = config.unixsocket.clone();
    if let Some(warning) = kvik_server::listen::backlog_warning(&config) {
        log_warning!("{warning}");
    }
    kvik_server::process::apply_at_startup(&config);
    kvik_server::crash::set_enabled(config.crash_log_enabled);
    block_shutdown_signals();
    kvik_server::process::set_title(&config, loaded.config_file.as_deref());
    let server = startup::new_server(config, loaded.config_file);
    if let Err(e) = startup::load_users(&server) {
        log_warning!("{e}");
        std::process::exit(1);
    }
    log_notice!("Server initialized");
    let load = |server: &Arc<Server>| {
        // Signals are heard while the dataset loads: a shutdown stops the load.
        watch_shutdown_signals(server.clone());
        let loaded = load_dataset(server);
        if server.shutdown_requested.load(Ordering::Acquire) {
            farewell(&unixsocket, &pidfile);
            std::process::exit(0);
        }
        if !loaded {
            std::process::exit(1);
        }
    };
    let running = match startup::start(server, load) {
        Ok(r) => r,
        Err(e) => {
            log_warning!("{e}");
            std::process::exit(1);
        }
    };
    let crashed = running.server.clone();
    kvik_server::crash::install(move || kvik_server::commands::info::crash_details(&crashed));
    logging::log_startup_banner(show_logo, VERSION, "standalone", port, pid, threads);
    if port != 0 {
        log_notice!("Ready to accept connections");
    }
    if !unixsocket.is_empty() {
        log_notice!("The server is now ready to accept connections at {unixsocket}");
    }
    supervise::ready();
    let server = running.server.clone();
    running.join();
    kvik_server::server::saving::remove_temp_files(&server);
    farewell(&unixsocket, &pidfile);
}

/// What a server leaves behind goes (its unix socket, its pid file), and the log
/// says goodbye as redis-server's does.
fn farewell(unixsocket: &str, pidfile: &str) {
    kvik_server::listen::remove_unix(unixsocket);
    if !pidfile.is_empty() {
        log_notice!("Removing the pid file.");
        let _ = std::fs::remove_file(pidfile);
    }
    log_warning!("kvik is now ready to exit, bye bye...");
}

/// Load the AOF (`appendonly yes`) or the RDB file, as Redis chooses; false when
/// it cannot be loaded (logged, with a redis-check-rdb style report of a corrupt
/// RDB file on standard output, as redis-server prints it).
fn load_dataset(server: &Server) -> bool {
    if server.config.read().appendonly {
        return startup::load_aof(server);
    }
    let Err(e) = kvik_server::server::saving::load_at_startup(server) else {
        return true;
    };
    log_warning!("{e}");
    if let Some(reason) = e.corruption() {
        log_warning!("Internal error in RDB reading offset 0, function at kvik-rdb -> {reason}");
        print!("{}", kvik_server::server::saving::check_report(server));
    }
    false
}

/// Detach from the terminal: fork (the parent exits), start a new session, and point
/// the standard streams at /dev/null, as redis-server does.
fn daemonize() {
    // SAFETY: called before any thread is started, so fork() copies a single-threaded
    // process; the calls only use their own arguments.
    unsafe {
        match libc::fork() {
            -1 => {
                eprintln!("fork failed: {}", std::io::Error::last_os_error());
                std::process::exit(1);
            }
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null != -1 {
            libc::dup2(null, libc::STDIN_FILENO);
            libc::dup2(null, libc::STDOUT_FILENO);
            libc::dup2(null, libc::STDERR_FILENO);
            if null > libc::STDERR_FILENO {
                libc::close(null);
            }
        }
    }
}

fn shutdown_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Block SIGTERM and SIGINT in this thread before the workers start, so every thread
/// inherits the mask and only the watcher thread receives them.
fn block_shutdown_signals() {
    let set = shutdown_signals();
    // SAFETY: the set is valid; changing this thread's mask has no other effect.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A thread that waits for SIGTERM/SIGINT and shuts the server down gracefully, with
/// the SHUTDOWN flags `shutdown-on-sigterm` / `shutdown-on-sigint` give (lagging
/// replicas are waited for, see `server::shutdown`), on a thread of its own so that
/// signals are still heard meanwhile. When the final save fails (and `force` is not
/// among them), or SHUTDOWN ABORT cancels it, the server goes on serving and the next
/// signal tries again; a second SIGINT before then exits at once, as redis-server
/// does for an impatient Ctrl+C.
fn watch_shutdown_signals(server: Arc<Server>) {
    std::thread::Builder::new()
        .name("kvik-signals".into())
        .spawn(move || {
            let set = shutdown_signals();
            loop {
                let mut signal = 0;
                // SAFETY: the set is valid and the signals are blocked in every thread.
                if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                    return;
                }
                let pending = server.shutdown.note_signal();
                if pending && signal == libc::SIGINT {
                    insist(&server);
                }
                let name = if signal == libc::SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                log_warning!("Received {name} scheduling shutdown...");
                // A shutdown already under way (a signal's, or SHUTDOWN's waiting for
                // replicas) goes on as it is.
                if pending {
                    continue;
                }
                let server = server.clone();
                std::thread::Builder::new()
                    .name("kvik-shutdown".into())
                    .spawn(move || shut_down_on(&server, signal))
                    .expect("spawn the shutdown thread");
            }
        })
        .expect("spawn the signal thread");
}

/// A second SIGINT while a shutdown is under way: exit now, without the save, and
/// without the temp files of the saves and rewrites in progress.
fn insist(server: &Server) -> ! {
    log_warning!("You insist... exiting now.");
    kvik_server::server::saving::remove_temp_files(server);
    std::process::exit(1);
}

/// Start the shutdown a signal asks for, with the flags configured for it.
fn shut_down_on(server: &Server, signal: libc::c_int) {
    let flags = {
        let config = server.config.read();
        if signal == libc::SIGINT {
            config.shutdown_on_sigint
        } else {
            config.shutdown_on_sigterm
        }
    };
    kvik_server::server::shutdown::prepare_on_signal(server, flags);
}
