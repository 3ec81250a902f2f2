//! What the process asks of the system and of its allocator, as redis-server asks
//! it: transparent huge pages off (`disable-thp`), jemalloc's background purging
//! thread (`jemalloc-bg-thread`), the title `ps` shows (`set-proc-title`,
//! `proc-title-template`), and which CPUs its threads run on (`server_cpulist`,
//! `bio_cpulist`, `bgsave_cpulist`). A leaf: it reads settings, knows nothing of the
//! server, and touches only process-wide state.

use kvik_config::Config;

/// Apply the start-up settings (before any worker thread exists, so that every
/// mapping the threads make follows them).
pub fn apply_at_startup(config: &Config) {
    if config.disable_thp {
        disable_transparent_huge_pages();
    }
    set_jemalloc_background_thread(config.jemalloc_bg_thread);
    let _ = BIO_CPULIST.set(config.bio_cpulist.clone());
}

/// `bio_cpulist`, for the background threads started later (the lazyfree thread).
static BIO_CPULIST: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Run the calling thread on the CPUs of `cpulist` (Redis's syntax: `0-7:2,10`, a
/// range with an optional step, comma-separated); an empty list leaves it alone.
/// A list that cannot be parsed or applied is logged and ignored, as Redis does.
pub fn run_on_cpus(cpulist: &str) {
    if cpulist.is_empty() {
        return;
    }
    let Some(cpus) = parse_cpulist(cpulist) else {
        crate::log_warning!("Invalid CPU list '{cpulist}': thread affinity left unchanged");
        return;
    };
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within it (checked below) and
    // sched_setaffinity only reads it.
    let applied = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus.into_iter().filter(|&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if applied != 0 {
        crate::log_warning!(
            "Setting CPU affinity to {cpulist} failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Run the calling background thread on `bio_cpulist`'s CPUs.
pub fn run_on_bio_cpus() {
    if let Some(cpulist) = BIO_CPULIST.get() {
        run_on_cpus(cpulist);
    }
}

/// The CPUs of a Redis CPU list: `a`, `a-b` or `a-b:step`, comma-separated.
fn parse_cpulist(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((range, step)) => (range, step.parse::<usize>().ok().filter(|&s| s > 0)?),
            None => (part, 1),
        };
        let (first, last) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let cpu = range.parse::<usize>().ok()?;
                (cpu, cpu)
            }
        };
        if first > last {
            return None;
        }
        cpus.extend((first..=last).step_by(step));
    }
    Some(cpus)
}

/// `disable-thp yes`: no transparent huge pages for this process, whatever the
/// system's setting, because a huge page makes a small write fault in 2 MB (Redis
/// turns them off for the copy-on-write of its fork; the latency argument holds
/// for kvik too). Failing leaves the system's setting, as in Redis.
fn disable_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only this
    // process's flag.
    let done = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if done != 0 {
        crate::log_verbose!(
            "Failed to disable transparent huge pages: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// `jemalloc-bg-thread`: whether jemalloc purges freed memory on a thread of its
/// own (at start-up and on CONFIG SET, as in Redis).
pub fn set_jemalloc_background_thread(enabled: bool) {
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(enabled) {
        crate::log_warning!("Failed to set jemalloc background_thread to {enabled}: {e}");
    }
}

/// The memory `ps` reads the process's command line from: argv's strings and, right
/// after them, the environment's (moved elsewhere first), as setproctitle() uses it.
struct TitleArea {
    start: *mut libc::c_char,
    len: usize,
    /// The program name as run (`{title}`).
    program: String,
}

// SAFETY: the area is only written under the mutex below.
unsafe impl Send for TitleArea {}

static TITLE_AREA: parking_lot::Mutex<Option<TitleArea>> = parking_lot::Mutex::new(None);

/// Take over argv's memory for the process title (`set-proc-title`), moving the
/// environment's strings to the heap so that the space after argv is free too.
/// `argv` is the process's own, as the C runtime passed it to main.
///
/// # Safety
/// `argv` must be the process's argument vector of `argc` strings, and no other
/// thread may be running (the environment is rewritten).
pub unsafe fn claim_title_area(argc: usize, argv: *const *mut libc::c_char) {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    if argc == 0 || argv.is_null() || (*argv).is_null() {
        return;
    }
    let start = *argv;
    let program = std::ffi::CStr::from_ptr(start)
        .to_string_lossy()
        .into_owned();
    // The strings lie one after the other: the area ends where they stop doing so.
    let mut end = start;
    for i in 0..argc {
        let arg = *argv.add(i);
        if arg != end {
            break;
        }
        end = arg.add(libc::strlen(arg) + 1);
    }
    let env = environ;
    if !env.is_null() {
        let mut i = 0;
        while !(*env.add(i)).is_null() {
            let var = *env.add(i);
            if var == end {
                end = var.add(libc::strlen(var) + 1);
            }
            // The environment keeps working from a copy that lives as long as the
            // process.
            *env.add(i) = libc::strdup(var);
            i += 1;
        }
    }
    *TITLE_AREA.lock() = Some(TitleArea {
        start,
        len: end.offset_from(start) as usize,
        program,
    });
}

/// Set the process title from `proc-title-template` (at start-up and on CONFIG SET),
/// as `ps` and `top` show it; nothing when `set-proc-title` is off or the area was
/// not claimed.
pub fn set_title(config: &Config, config_file: Option<&std::path::Path>) {
    if !config.set_proc_title {
        return;
    }
    let mut area = TITLE_AREA.lock();
    let Some(area) = area.as_mut() else {
        return;
    };
    let title = expand_title(
        &config.proc_title_template,
        &area.program,
        config,
        config_file,
    );
    let bytes = title.as_bytes();
    // Room for the terminating NUL; the rest of the area is cleared so that no old
    // argument shows after the title.
    let n = bytes.len().min(area.len.saturating_sub(1));
    // SAFETY: `start..start + len` is the argv/environment memory claimed above,
    // which nothing else uses any more.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), area.start.cast::<u8>(), n);
        std::ptr::write_bytes(area.start.add(n), 0, area.len - n);
    }
}

/// Redis's template expansion: `{title}`, `{listen-addr}`, `{server-mode}`,
/// `{port}`, `{tls-port}`, `{unixsocket}`, `{config-file}`, then trimmed of spaces.
fn expand_title(
    template: &str,
    program: &str,
    config: &Config,
    config_file: Option<&std::path::Path>,
) -> String {
    let listen = if config.port != 0 || config.tls_port != 0 {
        let port = if config.port != 0 {
            config.port
        } else {
            config.tls_port
        };
        let host = config.bind.first().map_or("*", String::as_str);
        format!("{host}:{port}")
    } else {
        format!("unixsocket:{}", config.unixsocket)
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            break;
        };
        match &after[..close] {
            "title" => out.push_str(program),
            "listen-addr" => out.push_str(&listen),
            "server-mode" => {}
            "port" => out.push_str(&config.port.to_string()),
            "tls-port" => out.push_str(&config.tls_port.to_string()),
            "unixsocket" => out.push_str(&config.unixsocket),
            "config-file" => out.push_str(
                &config_file
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
            // The template was checked when set: no other variable gets here.
            _ => {}
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out.trim_matches(' ').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_redis_reads_them() {
        assert_eq!(parse_cpulist("0-7:2"), Some(vec![0, 2, 4, 6]));
        assert_eq!(parse_cpulist("1,3"), Some(vec![1, 3]));
        assert_eq!(parse_cpulist("1,10-11"), Some(vec![1, 10, 11]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("x"), None);
        assert_eq!(parse_cpulist("0-3:0"), None);
    }

    #[test]
    fn titles_expand_as_redis_expands_them() {
        let mut c = Config {
            port: 6379,
            bind: vec!["*".into(), "-::*".into()],
            ..Default::default()
        };
        let t = "{title} {listen-addr} {server-mode}";
        assert_eq!(
            expand_title(t, "/usr/bin/kvik-server", &c, None),
            "/usr/bin/kvik-server *:6379"
        );
        c.bind = vec!["127.0.0.1".into()];
        assert_eq!(expand_title(t, "kvik", &c, None), "kvik 127.0.0.1:6379");
        c.port = 0;
        c.unixsocket = "/run/k.sock".into();
        assert_eq!(
            expand_title(t, "kvik", &c, None),
            "kvik unixsocket:/run/k.sock"
        );
        let file = std::path::Path::new("/etc/redis/redis.conf");
        assert_eq!(
            expand_title("{config-file} [{port}]", "kvik", &c, Some(file)),
            "/etc/redis/redis.conf [0]"
        );
    }
}
