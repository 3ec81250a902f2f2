//! Configuration: the table of every parameter kvik understands, parsing of
//! `redis.conf` / `keydb.conf` syntax and command-line directives, and the logic
//! behind CONFIG GET / SET / REWRITE.
//!
//! Owns: parameter names, aliases, types, defaults, validation and the text forms
//! Redis prints. Must not touch: sockets, the keyspace, or any server state; the
//! server reads the typed fields of [`Config`] and reacts to changes itself.
//!
//! - [`table`]: the parameter table ([`PARAMS`]) and the [`Config`] struct it generates.
//! - [`load()`]: config file + command line, with Redis's fatal error messages.
//! - [`Config::get`], [`Config::get_patterns`]: CONFIG GET.
//! - [`Config::set`]: CONFIG SET, atomic over all pairs.
//! - [`Config::rewrite`]: CONFIG REWRITE.

mod docs;
mod load;
pub mod parse;
mod rewrite;
mod special;
pub mod table;

pub use docs::reference_markdown;
pub use load::{load, load_from_argv, ConfigError, Loaded};
pub use special::{
    notify, shutdown, ClientBufferLimit, MaxmemoryClients, CLASS_NAMES, CLASS_NORMAL, CLASS_PUBSUB,
    CLASS_REPLICA,
};
pub use table::{lookup, Config, Kind, Param, PARAMS};

/// The Redis version whose configuration kvik follows.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

impl Default for Config {
    fn default() -> Self {
        let mut c = Config::blank();
        for p in PARAMS {
            if p.has(table::DYNAMIC_DEFAULT) {
                continue;
            }
            let args: Vec<String> = if p.has(table::MULTI_ARG) {
                p.default
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            } else {
                vec![p.default.to_string()]
            };
            if let Err(e) = (p.set)(&mut c, &args) {
                panic!("bad default for {}: {e}", p.name);
            }
        }
        c.dir = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "/".into());
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        c.server_threads = cpus.min(16);
        c
    }
}

/// Error text of CONFIG SET for a bad value (`ERR CONFIG SET failed ...`).
fn set_failed(name: &str, why: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
}

impl Config {
    /// CONFIG GET with a caller-supplied matcher: every parameter name and
    /// alias the matcher accepts, with its value as Redis prints it. Hidden
    /// parameters are left out (Redis lists them only for an exact name; see
    /// [`Config::get_patterns`]).
    pub fn get(&self, matches: impl Fn(&str) -> bool) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for p in PARAMS.iter().filter(|p| !p.has(table::HIDDEN)) {
            for name in std::iter::once(p.name).chain(p.alias) {
                if matches(name) {
                    out.push((name.to_string(), (p.get)(self)));
                }
            }
        }
        out
    }

    /// The whole of CONFIG GET `pattern [pattern ...]` as Redis 7.0 answers it:
    /// a pattern without glob characters is looked up as a name (an alias
    /// included, hidden ones included) and echoed as the caller spelled it;
    /// a glob pattern (case-insensitive) lists every non-hidden name and alias
    /// it matches; a name already listed is not repeated.
    pub fn get_patterns(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let seen = |out: &Vec<(String, String)>, n: &str| {
            out.iter().any(|(k, _)| k.eq_ignore_ascii_case(n))
        };
        for pat in patterns {
            let is_glob = pat.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
            if !is_glob {
                let name = String::from_utf8_lossy(pat).into_owned();
                if seen(&out, &name) {
                    continue;
                }
                if let Some((p, _)) = lookup(&name) {
                    let v = (p.get)(self);
                    out.push((name, v));
                }
                continue;
            }
            for (name, value) in self.get(|n| parse::glob_match_nocase(pat, n.as_bytes())) {
                if !seen(&out, &name) {
                    out.push((name, value));
                }
            }
        }
        out
    }

    /// The value of one parameter (by name or alias) as CONFIG GET prints it.
    pub fn get_one(&self, name: &str) -> Option<String> {
        lookup(name).map(|(p, _)| (p.get)(self))
    }

    /// CONFIG SET `name value [name value ...]`, all or nothing. Returns the
    /// canonical names whose value changed, for the server to apply side
    /// effects (rebinding, resizing, ...); if applying fails the server restores
    /// a clone taken before. `Err` is the error reply without the leading `-`.
    ///
    /// Protected parameters (`dir`, `dbfilename`) are refused unless
    /// `enable-protected-configs` is `yes`; use [`Config::set_ex`] to pass
    /// whether the client is local (for the `local` setting).
    pub fn set(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<Vec<&'static str>, String> {
        self.set_ex(pairs, false)
    }

    /// [`Config::set`], telling whether the client connected over loopback or
    /// a unix socket (which `enable-protected-configs local` allows).
    pub fn set_ex(
        &mut self,
        pairs: &[(&[u8], &[u8])],
        client_is_local: bool,
    ) -> Result<Vec<&'static str>, String> {
        let protected_ok = match self.enable_protected_configs.as_str() {
            "yes" => true,
            "local" => client_is_local,
            _ => false,
        };
        // First pass: names, flags, duplicates. The first problem wins.
        let mut chosen: Vec<(&'static Param, bool, String)> = Vec::with_capacity(pairs.len());
        for (name, _) in pairs {
            let typed = String::from_utf8_lossy(name).into_owned();
            let Some((p, via_alias)) = lookup(&typed) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{typed}'"
                ));
            };
            if p.has(table::IMMUTABLE) {
                return Err(set_failed(&typed, "can't set immutable config"));
            }
            if p.has(table::PROTECTED) && !protected_ok {
                return Err(set_failed(&typed, "can't set protected config"));
            }
            if chosen
                .iter()
                .any(|(q, a, _)| std::ptr::eq(*q, p) && *a == via_alias)
            {
                return Err(set_failed(&typed, "duplicate parameter"));
            }
            chosen.push((p, via_alias, typed));
        }
        // Second pass: parse and assign on a copy, so a failure changes nothing.
        let mut next = self.clone();
        for ((p, via_alias, _), (_, value)) in chosen.iter().zip(pairs) {
            let value = parse::bytes_to_string(value.to_vec());
            let args: Vec<String> = if p.has(table::MULTI_ARG) {
                if value.is_empty() {
                    Vec::new()
                } else {
                    value.split(' ').map(str::to_string).collect()
                }
            } else {
                vec![value]
            };
            if let Err(e) = p.assign(&mut next, &args) {
                let shown = if *via_alias {
                    p.alias.unwrap_or(p.name)
                } else {
                    p.name
                };
                return Err(set_failed(shown, &e));
            }
        }
        next.normalize();
        let mut changed = Vec::new();
        for (p, _, _) in &chosen {
            if (p.get)(&next) != (p.get)(self) && !changed.contains(&p.name) {
                changed.push(p.name);
            }
        }
        *self = next;
        Ok(changed)
    }

    /// Adjustments Redis makes to accepted values: `hz` is kept within
    /// 1..=500, `repl-backlog-size` is at least 16kb.
    pub(crate) fn normalize(&mut self) {
        self.hz = self.hz.clamp(1, 500);
        self.repl_backlog_size = self.repl_backlog_size.max(16 * 1024);
    }

    /// Whether a parameter is sensitive (its value must not be logged).
    pub fn is_sensitive(name: &str) -> bool {
        lookup(name).is_some_and(|(p, _)| p.has(table::SENSITIVE))
    }
}

#[cfg(test)]
mod tests;
