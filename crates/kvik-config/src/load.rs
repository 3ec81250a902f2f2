//! Loading: the config file, optional standard input, then the command-line
//! directives, all read as one text in `redis.conf` syntax (command-line
//! directives come last, so they win). Errors carry Redis's fatal message.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::parse::{os_error_text, repr, split_args};
use crate::special::{parse_replicaof, parse_save};
use crate::table::{self, lookup, Config};

/// The outcome of [`load`].
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// Non-fatal problems (unknown directives, ...), one line each, for the log.
    pub warnings: Vec<String>,
    /// Absolute path of the config file, if one was given (CONFIG REWRITE writes it).
    pub config_file: Option<PathBuf>,
}

/// A configuration that cannot be used; the server prints it and exits 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A directive that could not be applied. `line` counts from 1 in the text
    /// being read (an included file counts its own lines), `text` is the line
    /// without surrounding blanks.
    Directive {
        line: usize,
        text: String,
        reason: String,
    },
    /// A file that could not be read.
    Open { path: String, reason: String },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Directive { line, text, reason } => write!(
                f,
                "\n*** FATAL CONFIG FILE ERROR (kvik {}, Redis {} compatible) ***\n\
                 Reading the configuration file, at line {line}\n>>> '{text}'\n{reason}",
                env!("CARGO_PKG_VERSION"),
                crate::REDIS_COMPAT_VERSION,
            ),
            ConfigError::Open { path, reason } => {
                write!(f, "Fatal error, can't open config file '{path}': {reason}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Loads the configuration the way redis-server starts: `config_file` (if
/// any), then standard input if `args` starts or ends with a lone `-`, then
/// the directives of `args` (`--port 6380 --save "" --replicaof host port`).
pub fn load(config_file: Option<&Path>, args: &[String]) -> Result<Loaded, ConfigError> {
    let last = args.len().saturating_sub(1);
    let from_stdin = args
        .iter()
        .enumerate()
        .any(|(i, a)| a == "-" && (i == 0 || i == last));
    let stdin = if from_stdin {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| ConfigError::Open {
                path: "-".into(),
                reason: os_error_text(&e),
            })?;
        Some(s)
    } else {
        None
    };
    load_with_stdin(config_file, args, stdin.as_deref())
}

/// [`load`] from the words after the program name, as redis-server reads
/// them: a first word that does not start with `-` is the config file.
pub fn load_from_argv(argv: &[String]) -> Result<Loaded, ConfigError> {
    match argv.first() {
        Some(first) if !first.starts_with('-') => load(Some(Path::new(first)), &argv[1..]),
        _ => load(None, argv),
    }
}

pub(crate) fn load_with_stdin(
    config_file: Option<&Path>,
    args: &[String],
    stdin: Option<&str>,
) -> Result<Loaded, ConfigError> {
    let mut text = String::new();
    let mut abs_file = None;
    if let Some(path) = config_file {
        text = read_file(path)?;
        abs_file = Some(absolute(path));
    }
    if let Some(s) = stdin {
        text.push_str(s);
    }
    text.push('\n');
    text.push_str(&command_line_directives(args));

    let mut loader = Loader {
        config: Config::default(),
        warnings: Vec::new(),
        save_seen: false,
        replicaof_seen: false,
        depth: 0,
    };
    loader.run(&text, None)?;
    let mut config = loader.config;
    if !config.multi_master && config.replicaof.len() > 1 {
        let last = config.replicaof.pop();
        config.replicaof = last.into_iter().collect();
    }
    config.normalize();
    Ok(Loaded {
        config,
        warnings: loader.warnings,
        config_file: abs_file,
    })
}

fn read_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read(path)
        .map(crate::parse::bytes_to_string)
        .map_err(|e| ConfigError::Open {
            path: path.display().to_string(),
            reason: os_error_text(&e),
        })
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Turns command-line words into configuration lines, as redis-server does:
/// `--name` starts a directive; the words after it are its arguments, quoted;
/// the word right after `--name` is always an argument even if it starts with
/// `--` (so `--requirepass --x` works); `--save` with nothing after it (or
/// followed by another `--option`) means `save ""`. A lone `-` (stdin) is
/// skipped.
pub(crate) fn command_line_directives(args: &[String]) -> String {
    let mut out = String::new();
    let mut have_value = true;
    let last = args.len().saturating_sub(1);
    for (j, a) in args.iter().enumerate() {
        if a == "-" && (j == 0 || j == last) {
            continue;
        }
        if have_value && a.starts_with("--") {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&a[2..]);
            out.push(' ');
            let words = split_args(a).map(|v| v.len()).unwrap_or(0);
            if words == 1 {
                have_value = false;
                let next_is_option = j < last && args[j + 1].starts_with("--");
                if a.eq_ignore_ascii_case("--save") && (next_is_option || j == last) {
                    out.push_str("\"\"");
                    have_value = true;
                } else if a.eq_ignore_ascii_case("--sentinel") && next_is_option {
                    have_value = true;
                }
            } else {
                have_value = true;
            }
        } else {
            out.push_str(&repr(a));
            out.push(' ');
            have_value = true;
        }
    }
    out
}

/// Directives Redis 7 still accepts and ignores (with their argument count).
const DEPRECATED: [(&str, usize); 3] = [
    ("list-max-ziplist-entries", 1),
    ("list-max-ziplist-value", 1),
    ("lua-replicate-commands", 1),
];

const MAX_INCLUDE_DEPTH: usize = 32;

/// Why a directive failed: a reason for the current line, or an error that
/// happened inside an included file (reported as it is).
enum Fail {
    Reason(String),
    Nested(ConfigError),
}

impl From<String> for Fail {
    fn from(s: String) -> Self {
        Fail::Reason(s)
    }
}

impl From<&str> for Fail {
    fn from(s: &str) -> Self {
        Fail::Reason(s.to_string())
    }
}

struct Loader {
    config: Config,
    warnings: Vec<String>,
    /// The first `save` line replaces the default save points, later ones add.
    save_seen: bool,
    /// Likewise for `replicaof` (several masters with multi-master).
    replicaof_seen: bool,
    depth: usize,
}

impl Loader {
    fn run(&mut self, text: &str, source: Option<&str>) -> Result<(), ConfigError> {
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |reason: &str| ConfigError::Directive {
                line: i + 1,
                text: line.to_string(),
                reason: reason.to_string(),
            };
            let Some(mut argv) = split_args(line) else {
                return Err(fail("Unbalanced quotes in configuration line"));
            };
            if argv.is_empty() {
                continue;
            }
            let name = argv[0].to_ascii_lowercase();
            argv[0] = name.clone();
            match self.directive(&name, &argv, i + 1, line, source) {
                Ok(()) => {}
                Err(Fail::Reason(r)) => return Err(fail(&r)),
                Err(Fail::Nested(e)) => return Err(e),
            }
        }
        Ok(())
    }

    fn directive(
        &mut self,
        name: &str,
        argv: &[String],
        lineno: usize,
        line: &str,
        source: Option<&str>,
    ) -> Result<(), Fail> {
        if let Some((p, _)) = lookup(name) {
            let multi = p.has(table::MULTI_ARG);
            if !multi && argv.len() != 2 {
                return Err("wrong number of arguments".into());
            }
            let args: Vec<String> = if multi && argv.len() == 2 && !argv[1].is_empty() {
                split_args(&argv[1]).unwrap_or_default()
            } else {
                argv[1..].to_vec()
            };
            match p.name {
                "save" => {
                    let points = parse_save(&args)?;
                    if !self.save_seen || points.is_empty() {
                        self.config.save.clear();
                    }
                    self.save_seen = true;
                    self.config.save.extend(points);
                }
                "replicaof" => {
                    let master = parse_replicaof(&args)?;
                    if !self.replicaof_seen || master.is_none() {
                        self.config.replicaof.clear();
                    }
                    self.replicaof_seen = true;
                    if let Some(m) = master {
                        if !self.config.replicaof.contains(&m) {
                            self.config.replicaof.push(m);
                        }
                    }
                }
                _ => p.assign(&mut self.config, &args)?,
            }
            if p.has(table::NO_EFFECT) {
                let warning = p.no_effect_warning();
                if !self.warnings.contains(&warning) {
                    self.warnings.push(warning);
                }
            }
            return Ok(());
        }
        let argc = argv.len();
        match name {
            "include" if argc == 2 => self.include(&argv[1]),
            "rename-command" if argc == 3 => {
                self.config
                    .rename_commands
                    .push((argv[1].clone(), argv[2].clone()));
                Ok(())
            }
            "user" if argc >= 2 => {
                self.config.users.push(argv[1..].to_vec());
                Ok(())
            }
            "loadmodule" if argc >= 2 => {
                self.config.loadmodules.push(argv[1..].to_vec());
                Ok(())
            }
            "include" | "rename-command" | "user" | "loadmodule" => {
                Err("Bad directive or wrong number of arguments".into())
            }
            "sentinel" => Err("sentinel directive while not in sentinel mode".into()),
            _ if DEPRECATED.iter().any(|(n, c)| *n == name && *c + 1 == argc) => Ok(()),
            _ => {
                let place = match source {
                    Some(f) => format!("line {lineno} of {f}"),
                    None => format!("line {lineno}"),
                };
                let what = if name.contains('.') {
                    "module configuration (modules are not supported)"
                } else {
                    "unknown directive"
                };
                self.warnings.push(format!(
                    "Ignoring {what} '{}' at {place}: '{line}'",
                    argv[0]
                ));
                Ok(())
            }
        }
    }

    fn include(&mut self, pattern: &str) -> Result<(), Fail> {
        if self.depth >= MAX_INCLUDE_DEPTH {
            return Err("Too many nested include directives".into());
        }
        for path in expand_include(pattern) {
            let text = read_file(&path).map_err(Fail::Nested)?;
            self.depth += 1;
            let source = path.display().to_string();
            let r = self.run(&text, Some(&source));
            self.depth -= 1;
            // An error inside an included file is reported with that file's
            // own line number and text.
            r.map_err(Fail::Nested)?;
        }
        Ok(())
    }
}

/// An include path, or a glob pattern in its last component (`*`, `?`,
/// `[...]`) expanded to the matching files in sorted order; a pattern that
/// matches nothing includes nothing.
fn expand_include(pattern: &str) -> Vec<PathBuf> {
    let path = Path::new(pattern);
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !file.contains(['*', '?', '[']) {
        return vec![path.to_path_buf()];
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut found: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (!n.starts_with('.') || file.starts_with('.'))
                    && crate::parse::glob_match(file.as_bytes(), n.as_bytes())
            })
            .map(|e| {
                if path.parent().is_some_and(|p| !p.as_os_str().is_empty()) {
                    dir.join(e.file_name())
                } else {
                    PathBuf::from(e.file_name())
                }
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    found.sort();
    found
}
