//! Access control as Redis 7.0 has it: the users ([`rules`]), the refusals log
//! ([`log`]), and the check a command line passes before it runs.
//!
//! It owns the users and answers "may this user run this line?"; it does not know
//! connections, the command table or the keyspace. The command table's facts come
//! down at start-up as a [`Catalog`]; the keys and channels of a line come from the
//! caller, only when a selector restricts them.
//!
//! Cheap by design: a connection holds a [`Session`] with its user and a cached
//! "unrestricted" flag, valid while the users' epoch is unchanged, so the default
//! user with every permission costs one relaxed load per command. A restricted user
//! costs a bitmap test by command id, then (only if its selector limits keys or
//! channels) a walk over the precompiled patterns.

pub mod catalog;
pub mod log;
pub mod rules;

pub use catalog::{Catalog, CommandFacts};
pub use log::{Context, Entry, Reason};
pub use rules::{hash_password, merge_selector_args, RuleError, Selector, User, READ, WRITE};

use kvik_config::Config;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The users, the log and the settings that shape them.
pub struct Acl {
    catalog: Catalog,
    users: RwLock<BTreeMap<String, Arc<User>>>,
    /// Bumped by every change of a user: sessions re-read theirs when it moves.
    epoch: AtomicU64,
    /// The default user has passwords or is off: new connections must AUTH.
    default_needs_auth: AtomicBool,
    /// The default user is `nopass` (protected mode looks at this).
    default_nopass: AtomicBool,
    log: Mutex<log::Log>,
    log_max_len: AtomicUsize,
    /// `acl-pubsub-default allchannels`.
    pubsub_all: AtomicBool,
}

/// A refusal: what was refused and the argument index of the key or channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denied {
    pub reason: Reason,
    pub arg: usize,
}

/// What the check needs to know about a command line beyond its command id: its
/// keys, each with the permission it needs ([`READ`] / [`WRITE`] bits), and its
/// channels, each with whether it is a pattern (PSUBSCRIBE). Asked only when a
/// selector limits keys or channels: each method offers them in order to
/// `allowed` and returns the argument index of the first one refused.
/// Generic rather than `dyn`: the check runs on every command of a restricted user,
/// and a command without channels should cost nothing for them.
pub trait LineFacts {
    fn first_refused_key(&self, allowed: impl FnMut(usize, u8) -> bool) -> Option<usize>;
    fn first_refused_channel(&self, allowed: impl FnMut(usize, bool) -> bool) -> Option<usize>;
}

impl Acl {
    pub fn new(catalog: Catalog, config: &Config) -> Acl {
        let acl = Acl {
            users: RwLock::new(BTreeMap::new()),
            epoch: AtomicU64::new(1),
            default_needs_auth: AtomicBool::new(false),
            default_nopass: AtomicBool::new(true),
            log: Mutex::new(log::Log::default()),
            log_max_len: AtomicUsize::new(config.acllog_max_len as usize),
            pubsub_all: AtomicBool::new(pubsub_default_all(config)),
            catalog,
        };
        acl.store(User::default_user(&acl.catalog));
        acl.set_requirepass(config.requirepass.as_deref());
        acl
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// `acllog-max-len` and `acl-pubsub-default` after CONFIG SET.
    pub fn configure(&self, config: &Config) {
        let max = config.acllog_max_len as usize;
        self.log_max_len.store(max, Ordering::Relaxed);
        self.log.lock().trim(max);
        self.pubsub_all
            .store(pubsub_default_all(config), Ordering::Relaxed);
    }

    pub fn pubsub_default_all(&self) -> bool {
        self.pubsub_all.load(Ordering::Relaxed)
    }

    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Must a connection that has not authenticated do so first?
    #[inline]
    pub fn default_needs_auth(&self) -> bool {
        self.default_needs_auth.load(Ordering::Relaxed)
    }

    pub fn default_is_nopass(&self) -> bool {
        self.default_nopass.load(Ordering::Relaxed)
    }

    pub fn user(&self, name: &str) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// A new connection's session: the default user.
    pub fn default_session(&self) -> Session {
        let epoch = self.epoch();
        let user = self.user("default");
        let unrestricted = user.as_ref().is_some_and(|u| u.unrestricted());
        Session {
            user,
            epoch,
            unrestricted,
        }
    }

    /// A session for `name` if `password` opens it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Session> {
        let name = std::str::from_utf8(name).ok()?;
        let epoch = self.epoch();
        let user = self.user(name).filter(|u| u.accepts(password))?;
        Some(Session {
            unrestricted: user.unrestricted(),
            user: Some(user),
            epoch,
        })
    }

    /// ACL SETUSER: apply `rules` to a copy of the user (or a new one) and store it
    /// only if every rule applies. Err: the rule refused and why.
    pub fn set_user(&self, name: &str, rules: &[Vec<u8>]) -> Result<(), (Vec<u8>, RuleError)> {
        let all_channels = self.pubsub_default_all();
        let mut users = self.users.write();
        let mut user = match users.get(name) {
            Some(known) => User::clone(known),
            None => User::new(name, &self.catalog, all_channels),
        };
        for rule in rules {
            user.apply(&self.catalog, rule, all_channels)
                .map_err(|e| (rule.clone(), e))?;
        }
        self.store_locked(&mut users, user);
        Ok(())
    }

    /// ACL DELUSER: the names of the users removed (never `default`).
    pub fn delete(&self, names: &[&str]) -> Vec<String> {
        let mut users = self.users.write();
        let removed: Vec<String> = names
            .iter()
            .filter(|&&n| n != "default")
            .filter_map(|n| users.remove(*n).map(|u| u.name.clone()))
            .collect();
        drop(users);
        self.bump();
        removed
    }

    /// Replace every user (ACL LOAD, the config's `user` lines); with
    /// `keep_default`, a set without `default` keeps the current one.
    pub fn replace_all(&self, new_users: Vec<User>, keep_default: bool) {
        let mut users = self.users.write();
        let default = users.get("default").cloned().filter(|_| keep_default);
        users.clear();
        if let Some(d) = default {
            users.insert(d.name.clone(), d);
        }
        for user in new_users {
            users.insert(user.name.clone(), Arc::new(user));
        }
        self.after_change(&users);
    }

    /// `requirepass` as the default user's only password (empty or none: nopass).
    pub fn set_requirepass(&self, password: Option<&str>) {
        let mut rules = vec![b"resetpass".to_vec()];
        match password.filter(|p| !p.is_empty()) {
            Some(p) => rules.push([b">", p.as_bytes()].concat()),
            None => rules.push(b"nopass".to_vec()),
        }
        let applied = self.set_user("default", &rules);
        debug_assert!(applied.is_ok(), "password rules always apply");
    }

    /// Parse a user line (`name rule rule ...`) against an empty user, as the
    /// config's `user` directive and the ACL file have them; the config's
    /// `user default` starts from `reset`, as in Redis (the file's does not).
    pub fn parse_user(
        &self,
        words: &[&[u8]],
        reset_default: bool,
    ) -> Result<User, (Vec<u8>, RuleError)> {
        let all_channels = self.pubsub_default_all();
        let name = String::from_utf8_lossy(words[0]).into_owned();
        let mut user = User::new(&name, &self.catalog, all_channels);
        if reset_default && name == "default" {
            user.apply(&self.catalog, b"reset", all_channels)
                .map_err(|e| (b"reset".to_vec(), e))?;
        }
        let merged = merge_selector_args(&words[1..]).map_err(|arg| (arg, RuleError::Syntax))?;
        for rule in &merged {
            user.apply(&self.catalog, rule, all_channels)
                .map_err(|e| (rule.clone(), e))?;
        }
        Ok(user)
    }

    fn store(&self, user: User) {
        let mut users = self.users.write();
        self.store_locked(&mut users, user);
    }

    fn store_locked(&self, users: &mut BTreeMap<String, Arc<User>>, user: User) {
        users.insert(user.name.clone(), Arc::new(user));
        self.after_change(users);
    }

    fn after_change(&self, users: &BTreeMap<String, Arc<User>>) {
        if let Some(d) = users.get("default") {
            self.default_nopass.store(d.nopass, Ordering::Relaxed);
            self.default_needs_auth
                .store(!d.nopass || !d.enabled, Ordering::Relaxed);
        }
        self.bump();
    }

    fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// May `user` run command `id` with `args`? On refusal, the most telling one as
    /// Redis picks it: a command no selector allows, else the last key or channel.
    #[inline]
    pub fn check(
        &self,
        user: &User,
        id: usize,
        args: &[&[u8]],
        facts: &impl LineFacts,
    ) -> Result<(), Denied> {
        if user.selectors.is_empty() {
            return self.check_selector(&user.root, id, args, facts);
        }
        self.check_selectors(user, id, args, facts)
    }

    /// [`Acl::check`] for a user with selectors besides the root one.
    fn check_selectors(
        &self,
        user: &User,
        id: usize,
        args: &[&[u8]],
        facts: &impl LineFacts,
    ) -> Result<(), Denied> {
        let mut worst = Denied {
            reason: Reason::Command,
            arg: 0,
        };
        for selector in user.all_selectors() {
            let Err(denied) = self.check_selector(selector, id, args, facts) else {
                return Ok(());
            };
            let rank = |r: Reason| match r {
                Reason::Command => 1,
                Reason::Key => 2,
                Reason::Auth => 3,
                Reason::Channel => 4,
            };
            let (new, old) = (rank(denied.reason), rank(worst.reason));
            if new > old || (new == old && denied.arg > worst.arg) {
                worst = denied;
            }
        }
        Err(worst)
    }

    #[inline(always)]
    fn check_selector(
        &self,
        selector: &Selector,
        id: usize,
        args: &[&[u8]],
        line: &impl LineFacts,
    ) -> Result<(), Denied> {
        let facts = self.catalog.get(id);
        if !selector.all_commands && !facts.no_auth && !selector.allows_command(id) {
            let at = if facts.parent.is_some() { 2 } else { 1 };
            let first_arg_allowed = args.get(at).is_some_and(|arg| {
                selector
                    .first_args(id)
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(arg))
            });
            if !first_arg_allowed {
                return Err(Denied {
                    reason: Reason::Command,
                    arg: 0,
                });
            }
        }
        if !selector.all_keys {
            let refused = line.first_refused_key(|at, need| selector.allows_key(args[at], need));
            if let Some(arg) = refused {
                return Err(Denied {
                    reason: Reason::Key,
                    arg,
                });
            }
        }
        if !selector.all_channels {
            let refused = line.first_refused_channel(|at, is_pattern| {
                channel_allowed(selector, args[at], is_pattern)
            });
            if let Some(arg) = refused {
                return Err(Denied {
                    reason: Reason::Channel,
                    arg,
                });
            }
        }
        Ok(())
    }

    /// Record a refusal in ACL LOG.
    pub fn log(&self, entry: Entry) {
        let max = self.log_max_len.load(Ordering::Relaxed);
        self.log.lock().add(entry, max);
    }

    pub fn log_entries(&self, count: usize) -> Vec<Entry> {
        self.log.lock().newest(count).cloned().collect()
    }

    pub fn log_reset(&self) {
        self.log.lock().reset();
    }
}

/// Channels: a plain channel is matched against the patterns; a pattern
/// (PSUBSCRIBE) must be one of them literally.
pub(crate) fn channel_allowed(selector: &Selector, channel: &[u8], is_pattern: bool) -> bool {
    selector.channels.iter().any(|p| {
        if is_pattern {
            p == channel
        } else {
            kvik_util::glob::glob_match(p, channel, false)
        }
    })
}

fn pubsub_default_all(config: &Config) -> bool {
    config
        .acl_pubsub_default
        .eq_ignore_ascii_case("allchannels")
}

/// A connection's user, with whether it may run anything, valid while the users'
/// epoch is the one seen.
#[derive(Debug, Clone)]
pub struct Session {
    /// `None` for the server's own clients (the master link, loading): they run
    /// anything, as Redis's clients without a user.
    user: Option<Arc<User>>,
    epoch: u64,
    unrestricted: bool,
}

impl Session {
    /// The server's own clients: no user, no limits.
    pub fn internal() -> Session {
        Session {
            user: None,
            epoch: 0,
            unrestricted: true,
        }
    }

    /// The user now in effect, re-read if any user changed since.
    #[inline]
    pub fn current(&mut self, acl: &Acl) -> Option<&Arc<User>> {
        if self.epoch != acl.epoch.load(Ordering::Relaxed) {
            self.refresh(acl);
        }
        self.user.as_ref()
    }

    /// The hot path: true when the user may run anything (one relaxed load while
    /// no user changes).
    #[inline]
    pub fn is_unrestricted(&mut self, acl: &Acl) -> bool {
        if self.epoch == acl.epoch.load(Ordering::Relaxed) {
            return self.unrestricted;
        }
        self.refresh(acl)
    }

    /// Re-read the user after a change; a deleted user's connection (about to be
    /// closed) keeps no permission.
    #[cold]
    fn refresh(&mut self, acl: &Acl) -> bool {
        let epoch = acl.epoch();
        if self.epoch == epoch {
            return self.unrestricted;
        }
        self.epoch = epoch;
        if let Some(user) = &self.user {
            let fresh = acl
                .user(&user.name)
                .unwrap_or_else(|| Arc::new(User::new(&user.name, &acl.catalog, false)));
            self.user = Some(fresh);
        }
        self.unrestricted = self.user.as_ref().is_none_or(|u| u.unrestricted());
        self.unrestricted
    }

    /// The user's name (`default` for the server's own clients).
    pub fn user_name(&self) -> &str {
        self.user.as_ref().map_or("default", |u| u.name.as_str())
    }
}
