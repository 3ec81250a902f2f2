//! Users and their rules, as Redis 7.0's ACL SETUSER reads them and ACL LIST and
//! ACL GETUSER write them back: flags, SHA-256 password hashes, and selectors (the
//! root one and those in parentheses), each a command bitmap indexed by the command
//! table's id, key patterns with read/write flags, and channel patterns.
//!
//! Parsing never panics, whatever the bytes (a fuzz test holds it to that); a bad
//! rule is an [`RuleError`] with Redis's wording. Nothing here knows connections.

use super::catalog::Catalog;
use sha2::{Digest, Sha256};

/// Why a rule was refused, worded as Redis's `ACLSetUserStringError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    UnknownName,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    SubcommandFirstArg,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// Read and write permission on a key pattern (`%R~`, `%W~`, `%RW~` = `~`).
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
const READ_WRITE: u8 = READ | WRITE;

/// A key pattern and what it grants, compiled once: most patterns are a literal
/// or a prefix (`user:*`), matched without the glob engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub perms: u8,
    form: Form,
    /// The literal part's first (up to) eight bytes as a little-endian word, and
    /// the mask of the bytes it holds: a key of eight bytes or more checks them in
    /// one compare.
    head_word: u64,
    head_mask: u64,
}

/// How a pattern is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// No special character: the key itself.
    Literal,
    /// A non-empty literal then only stars: keys starting with the literal.
    Prefix(usize),
    Glob,
}

impl KeyPattern {
    fn new(pattern: &[u8], perms: u8) -> KeyPattern {
        let special = |b: &u8| matches!(b, b'*' | b'?' | b'[' | b'\\');
        let literal = pattern.iter().position(special).unwrap_or(pattern.len());
        let form = if literal == pattern.len() {
            Form::Literal
        } else if literal > 0 && pattern[literal..].iter().all(|&b| b == b'*') {
            Form::Prefix(literal)
        } else {
            Form::Glob
        };
        let head = &pattern[..literal.min(8)];
        let mut word = [0u8; 8];
        word[..head.len()].copy_from_slice(head);
        KeyPattern {
            pattern: pattern.to_vec(),
            perms,
            form,
            head_word: u64::from_le_bytes(word),
            head_mask: u64::MAX
                .checked_shr(64 - 8 * head.len() as u32)
                .unwrap_or(0),
        }
    }

    /// Does `key` match, with Redis's `stringmatchlen` semantics?
    #[inline(always)]
    pub fn matches(&self, key: &[u8]) -> bool {
        // The first byte turns most misses away before a byte-string compare.
        let head_differs = || key.first() != self.pattern.first();
        match self.form {
            Form::Literal => {
                key.len() == self.pattern.len() && !head_differs() && key == self.pattern
            }
            Form::Prefix(len) => {
                key.len() >= len && !head_differs() && key[..len] == self.pattern[..len]
            }
            Form::Glob => kvik_util::glob::glob_match(&self.pattern, key, false),
        }
    }

    /// [`KeyPattern::matches`] for a literal or prefix pattern whose first byte is
    /// the key's (what [`KeyIndex`] has checked already). The first eight bytes
    /// compare as one word; what is left, byte by byte while short (a `memcmp`
    /// call costs more than a few bytes).
    #[inline(always)]
    fn matches_same_head(&self, key: &[u8]) -> bool {
        let len = match self.form {
            Form::Literal if key.len() != self.pattern.len() => return false,
            Form::Literal => key.len(),
            Form::Prefix(len) if key.len() < len => return false,
            Form::Prefix(len) => len,
            Form::Glob => return self.matches(key),
        };
        let from = match key.first_chunk::<8>() {
            Some(word) if u64::from_le_bytes(*word) & self.head_mask != self.head_word => {
                return false
            }
            Some(_) => len.min(8),
            None => 1,
        };
        if len <= 16 {
            key[from..len]
                .iter()
                .zip(&self.pattern[from..len])
                .all(|(a, b)| a == b)
        } else {
            key[from..len] == self.pattern[from..len]
        }
    }
}

/// One set of permissions: a command line is allowed when one selector of the user
/// allows the command, all its keys and all its channels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// One bit per command id.
    allowed: Vec<u64>,
    /// Every bit set and none cleared since (`+@all`): the fast path.
    pub all_commands: bool,
    /// `+@all` was the last word on all commands: commands added later are allowed
    /// too (Redis's reserved bit), so the description starts with `+@all`.
    future_commands: bool,
    /// `+select|0`: first arguments allowed for a command otherwise refused.
    first_args: Vec<(usize, Vec<Vec<u8>>)>,
    pub all_keys: bool,
    /// In the order given (the description keeps it).
    pub keys: Vec<KeyPattern>,
    /// The same patterns arranged for the check.
    key_index: KeyIndex,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
}

/// Key patterns arranged so that a key is compared only with the literal and
/// prefix patterns that start with its first byte (and with every glob): with ten
/// prefixes, a key meets one or two of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeyIndex {
    /// Literal and prefix patterns with a first byte, sorted by it.
    by_head: Vec<KeyPattern>,
    /// Where the patterns of each first byte start in `by_head` (257 entries, or
    /// none when `by_head` is empty).
    starts: Vec<u32>,
    /// The others, tried for every key.
    globs: Vec<KeyPattern>,
}

impl KeyIndex {
    fn new(keys: &[KeyPattern]) -> KeyIndex {
        let (mut by_head, globs): (Vec<KeyPattern>, Vec<KeyPattern>) = keys
            .iter()
            .cloned()
            .partition(|k| k.form != Form::Glob && !k.pattern.is_empty());
        by_head.sort_by_key(|k| k.pattern[0]);
        let mut starts = Vec::new();
        if !by_head.is_empty() {
            starts = (0..=256usize)
                .map(|head| by_head.partition_point(|k| usize::from(k.pattern[0]) < head) as u32)
                .collect();
        }
        KeyIndex {
            by_head,
            starts,
            globs,
        }
    }

    #[inline(always)]
    fn allows(&self, key: &[u8], need: u8) -> bool {
        if let (Some(&head), false) = (key.first(), self.starts.is_empty()) {
            let head = usize::from(head);
            let (from, to) = (self.starts[head] as usize, self.starts[head + 1] as usize);
            // A plain loop: `any` with a closure stayed a call per key here.
            for k in &self.by_head[from..to] {
                if k.perms & need == need && k.matches_same_head(key) {
                    return true;
                }
            }
        }
        self.globs
            .iter()
            .any(|k| k.perms & need == need && k.matches(key))
    }
}

impl Selector {
    /// An empty selector; `all_channels` from `acl-pubsub-default`.
    pub fn new(catalog: &Catalog, all_channels: bool) -> Selector {
        Selector {
            allowed: vec![0; catalog.len().div_ceil(64)],
            all_commands: false,
            future_commands: false,
            first_args: Vec::new(),
            all_keys: false,
            keys: Vec::new(),
            key_index: KeyIndex::default(),
            all_channels,
            channels: Vec::new(),
        }
    }

    #[inline]
    pub fn allows_command(&self, id: usize) -> bool {
        self.allowed[id / 64] & (1 << (id % 64)) != 0
    }

    /// May a command use `key` as `need` ([`READ`] / [`WRITE`] bits) says?
    #[inline(always)]
    pub fn allows_key(&self, key: &[u8], need: u8) -> bool {
        self.all_keys || self.key_index.allows(key, need)
    }

    /// The first arguments allowed for a command whose bit is clear.
    pub fn first_args(&self, id: usize) -> &[Vec<u8>] {
        self.first_args
            .iter()
            .find(|(cmd, _)| *cmd == id)
            .map_or(&[], |(_, args)| args.as_slice())
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        let (word, bit) = (id / 64, 1u64 << (id % 64));
        if allow {
            self.allowed[word] |= bit;
        } else {
            self.allowed[word] &= !bit;
            self.all_commands = false;
        }
    }

    /// `+cmd` / `-cmd`: the command and all its subcommands.
    fn change_command(&mut self, catalog: &Catalog, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.retain(|(cmd, _)| *cmd != id);
        for &sub in &catalog.get(id).subcommands {
            self.set_bit(sub, allow);
        }
    }

    /// `+@cat` / `-@cat`: every command in it (a container in it brings all its
    /// subcommands, as in Redis).
    fn change_category(&mut self, catalog: &Catalog, bit: u32, allow: bool) {
        for id in catalog.top_level() {
            if catalog.get(id).categories & bit != 0 {
                self.change_command(catalog, id, allow);
            }
            for &sub in &catalog.get(id).subcommands {
                if catalog.get(sub).categories & bit != 0 {
                    self.change_command(catalog, sub, allow);
                }
            }
        }
    }

    fn set_all_commands(&mut self, allow: bool) {
        let fill = if allow { u64::MAX } else { 0 };
        self.allowed.iter_mut().for_each(|w| *w = fill);
        self.all_commands = allow;
        self.future_commands = allow;
        self.first_args.clear();
    }

    /// Apply one selector rule (Redis's `ACLSetSelector`).
    pub fn apply(&mut self, catalog: &Catalog, op: &[u8]) -> Result<(), RuleError> {
        let applied = self.apply_rule(catalog, op);
        self.key_index = KeyIndex::new(&self.keys);
        applied
    }

    fn apply_rule(&mut self, catalog: &Catalog, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.set_all_commands(true),
            b"nocommands" | b"-@all" => self.set_all_commands(false),
            _ => match op.first() {
                Some(b'~' | b'%') => self.add_key_pattern(op)?,
                Some(b'&') => self.add_channel(&op[1..])?,
                Some(&sign @ (b'+' | b'-')) if op.get(1) == Some(&b'@') => {
                    let name = std::str::from_utf8(&op[2..]).map_err(|_| RuleError::UnknownName)?;
                    let bit = catalog.category(name).ok_or(RuleError::UnknownName)?;
                    self.change_category(catalog, bit, sign == b'+');
                }
                Some(b'+') => self.allow_command(catalog, &op[1..])?,
                Some(b'-') => {
                    let id = lookup(catalog, &op[1..]).ok_or(RuleError::UnknownName)?;
                    self.change_command(catalog, id, false);
                }
                _ => return Err(RuleError::Syntax),
            },
        }
        Ok(())
    }

    /// `+cmd`, `+container|sub` or `+cmd|first-arg`.
    fn allow_command(&mut self, catalog: &Catalog, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let id = lookup(catalog, name).ok_or(RuleError::UnknownName)?;
            self.change_command(catalog, id, true);
            return Ok(());
        };
        let (head, sub) = (&name[..bar], &name[bar + 1..]);
        let id = lookup(catalog, head).ok_or(RuleError::UnknownName)?;
        if catalog.get(id).parent.is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !catalog.get(id).subcommands.is_empty() {
            let sub_id = lookup(catalog, name).ok_or(RuleError::UnknownName)?;
            self.change_command(catalog, sub_id, true);
            return Ok(());
        }
        match self.first_args.iter_mut().find(|(cmd, _)| *cmd == id) {
            Some((_, args)) => {
                if !args.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                    args.push(sub.to_vec());
                }
            }
            None => self.first_args.push((id, vec![sub.to_vec()])),
        }
        Ok(())
    }

    /// `~pattern` or `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (perms, pattern) = if op[0] == b'%' {
            let mut perms = 0;
            let mut at = 1;
            loop {
                match op.get(at).map(u8::to_ascii_uppercase) {
                    Some(b'R') if perms & READ == 0 => perms |= READ,
                    Some(b'W') if perms & WRITE == 0 => perms |= WRITE,
                    Some(b'~') => {
                        at += 1;
                        break;
                    }
                    None => break,
                    Some(_) => return Err(RuleError::Syntax),
                }
                at += 1;
            }
            if perms == 0 {
                return Err(RuleError::Syntax);
            }
            (perms, &op[at.min(op.len())..])
        } else {
            (READ_WRITE, &op[1..])
        };
        if pattern == b"*" && perms == READ_WRITE {
            self.all_keys = true;
            self.keys.clear();
        } else if let Some(known) = self.keys.iter_mut().find(|k| k.pattern == pattern) {
            known.perms |= perms;
        } else {
            self.keys.push(KeyPattern::new(pattern, perms));
        }
        Ok(())
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_channels {
            return Err(RuleError::ChannelAfterAll);
        }
        if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        Ok(())
    }

    /// The key patterns as ACL GETUSER shows them: `~*`, or `~a* %R~b*`.
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let words: Vec<String> = self.keys.iter().map(describe_key).collect();
        words.join(" ")
    }

    /// The channel patterns as ACL GETUSER shows them: `&*`, or `&a &b`.
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let words: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        words.join(" ")
    }

    /// The whole selector as ACL LIST writes it: keys, channels, commands.
    pub fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        if self.all_keys {
            out.push_str("~* ");
        } else {
            for key in &self.keys {
                out.push_str(&describe_key(key));
                out.push(' ');
            }
        }
        if self.all_channels {
            out.push_str("&* ");
        } else {
            out.push_str("resetchannels ");
            for c in &self.channels {
                out.push('&');
                out.push_str(&String::from_utf8_lossy(c));
                out.push(' ');
            }
        }
        out.push_str(&self.describe_commands(catalog));
        out
    }

    /// The command rules, rebuilt from the bitmap as Redis 7.0 does: `+@all` or
    /// `-@all`, then, greedily, the category that fits best (more commands in
    /// common than different, the fewest differences), then the single commands
    /// that still differ and the first arguments.
    pub fn describe_commands(&self, catalog: &Catalog) -> String {
        let additive = !self.future_commands;
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(catalog, false);
        fake.set_all_commands(!additive);
        let mut temp = self.clone();
        let mut applied = 0u32;
        while let Some((bit, name)) = temp.best_category(catalog, additive, applied) {
            fake.change_category(catalog, bit, additive);
            temp.change_category(catalog, bit, !additive);
            rules.push(if additive { '+' } else { '-' });
            rules.push('@');
            rules.push_str(name);
            rules.push(' ');
            applied |= bit;
        }
        for id in catalog.top_level() {
            self.describe_single(catalog, &mut fake, &mut rules, id);
            for &sub in &catalog.get(id).subcommands {
                self.describe_single(catalog, &mut fake, &mut rules, sub);
            }
        }
        rules.pop();
        rules
    }

    fn describe_single(
        &self,
        catalog: &Catalog,
        fake: &mut Selector,
        rules: &mut String,
        id: usize,
    ) {
        let mine = self.allows_command(id);
        if mine != fake.allows_command(id) {
            rules.push(if mine { '+' } else { '-' });
            rules.push_str(catalog.get(id).name);
            rules.push(' ');
            fake.change_command(catalog, id, mine);
        }
        if !mine {
            for arg in self.first_args(id) {
                rules.push('+');
                rules.push_str(catalog.get(id).name);
                rules.push('|');
                rules.push_str(&String::from_utf8_lossy(arg));
                rules.push(' ');
            }
        }
    }

    /// The category not yet `applied` that best describes what is left to say.
    fn best_category(
        &self,
        catalog: &Catalog,
        additive: bool,
        applied: u32,
    ) -> Option<(u32, &'static str)> {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for &(bit, name) in catalog.categories() {
            if applied & bit != 0 {
                continue;
            }
            let (on, off) = self.count_category(catalog, bit);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some((bit, name));
                min_diff = diff;
                max_same = same;
            }
        }
        best
    }

    fn count_category(&self, catalog: &Catalog, bit: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for id in 0..catalog.len() {
            if catalog.get(id).categories & bit != 0 {
                if self.allows_command(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }
}

fn describe_key(key: &KeyPattern) -> String {
    let prefix = match key.perms {
        READ => "%R~",
        WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&key.pattern))
}

fn lookup(catalog: &Catalog, name: &[u8]) -> Option<usize> {
    catalog.lookup(std::str::from_utf8(name).ok()?)
}

/// A user: flags, password hashes and selectors (the root one first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload`, when set.
    pub sanitize: Option<bool>,
    /// Lowercase hex SHA-256 hashes, in the order added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

impl User {
    /// A new user as ACL SETUSER creates it: off, no password, no permissions,
    /// channels as `acl-pubsub-default` says.
    pub fn new(name: &str, catalog: &Catalog, all_channels: bool) -> User {
        User {
            name: name.to_string(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::new(catalog, all_channels),
            selectors: Vec::new(),
        }
    }

    /// The `default` user as a server starts: on, nopass, everything.
    pub fn default_user(catalog: &Catalog) -> User {
        let mut user = User::new("default", catalog, true);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            let applied = user.apply(catalog, rule.as_bytes(), true);
            debug_assert!(applied.is_ok(), "the default user's rules are valid");
        }
        user
    }

    /// Apply one rule (Redis's `ACLSetUser`); `all_channels` is `acl-pubsub-default`
    /// for `reset` and new selectors.
    pub fn apply(
        &mut self,
        catalog: &Catalog,
        op: &[u8],
        all_channels: bool,
    ) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                let fresh = User::new(&self.name, catalog, all_channels);
                *self = User {
                    sanitize: Some(true),
                    ..fresh
                };
            }
            _ => match op.first() {
                Some(b'>') => self.add_hash(hash_password(&op[1..])),
                Some(b'#') => self.add_hash(checked_hash(&op[1..])?),
                Some(b'<') => self.remove_hash(&hash_password(&op[1..]))?,
                Some(b'!') => self.remove_hash(&checked_hash(&op[1..])?)?,
                Some(b'(') if op.last() == Some(&b')') && op.len() >= 2 => {
                    let mut selector = Selector::new(catalog, all_channels);
                    for word in op[1..op.len() - 1]
                        .split(|&b| b == b' ')
                        .filter(|w| !w.is_empty())
                    {
                        selector.apply(catalog, word)?;
                    }
                    self.selectors.push(selector);
                }
                _ => self.root.apply(catalog, op)?,
            },
        }
        Ok(())
    }

    fn add_hash(&mut self, hash: String) {
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
        self.nopass = false;
    }

    fn remove_hash(&mut self, hash: &str) -> Result<(), RuleError> {
        let at = self.passwords.iter().position(|p| p == hash);
        let at = at.ok_or(RuleError::NoSuchPassword)?;
        self.passwords.remove(at);
        self.nopass = false;
        Ok(())
    }

    /// Does `password` open this user (enabled, and nopass or a matching hash)?
    pub fn accepts(&self, password: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash_password(password)))
    }

    /// Every selector, the root one first.
    pub fn all_selectors(&self) -> impl Iterator<Item = &Selector> {
        std::iter::once(&self.root).chain(&self.selectors)
    }

    /// Allowed every command, key and channel by its root selector: the hot path
    /// skips checking such a user.
    pub fn unrestricted(&self) -> bool {
        self.root.all_commands && self.root.all_keys && self.root.all_channels
    }

    /// May read any key (SORT's BY and GET patterns need it): a selector with
    /// `allkeys` or a read pattern matching `*`.
    pub fn can_read_any_key(&self) -> bool {
        self.all_selectors().any(|s| {
            s.all_keys
                || s.keys
                    .iter()
                    .any(|k| k.perms & READ != 0 && k.matches(b"*"))
        })
    }

    /// May a client of this user stay subscribed to `channel` (a pattern, for
    /// PSUBSCRIBE, must be one of a selector's patterns literally)?
    pub fn allows_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_selectors()
            .any(|s| s.all_channels || super::channel_allowed(s, channel, is_pattern))
    }

    /// The flags as ACL GETUSER lists them.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    /// The rules after `user <name>` in ACL LIST and the ACL file.
    pub fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        for flag in self.flags() {
            out.push_str(flag);
            out.push(' ');
        }
        for hash in &self.passwords {
            out.push('#');
            out.push_str(hash);
            out.push(' ');
        }
        out.push_str(&self.root.describe(catalog));
        for selector in &self.selectors {
            out.push_str(" (");
            out.push_str(&selector.describe(catalog));
            out.push(')');
        }
        out
    }
}

/// The lowercase hex SHA-256 of a password.
pub fn hash_password(password: &[u8]) -> String {
    hex::encode(Sha256::digest(password))
}

fn checked_hash(hash: &[u8]) -> Result<String, RuleError> {
    let valid = hash.len() == 64 && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(hash).into_owned())
}

/// Join the arguments of ACL SETUSER so that a selector split over several, `(+get`
/// `~a*)`, is one rule again. Err names the argument an unclosed `(` starts at.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut merged = Vec::new();
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for &arg in args {
        match open.as_mut() {
            Some((acc, _)) => {
                acc.push(b' ');
                acc.extend_from_slice(arg);
            }
            None if arg.first() == Some(&b'(') && arg.last() != Some(&b')') => {
                open = Some((arg.to_vec(), arg));
                continue;
            }
            None => {
                merged.push(arg.to_vec());
                continue;
            }
        }
        if arg.last() == Some(&b')') {
            if let Some((acc, _)) = open.take() {
                merged.push(acc);
            }
        }
    }
    match open {
        Some((_, start)) => Err(start.to_vec()),
        None => Ok(merged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::catalog::CommandFacts;
    use proptest::prelude::*;

    const READ_CAT: u32 = 1;
    const WRITE_CAT: u32 = 2;

    fn catalog() -> Catalog {
        let cmd = |name, categories, parent, subcommands: Vec<usize>| CommandFacts {
            name,
            categories,
            parent,
            subcommands,
            no_auth: false,
        };
        Catalog::new(
            vec![
                cmd("get", READ_CAT, None, vec![]),
                cmd("set", WRITE_CAT, None, vec![]),
                cmd("config", 0, None, vec![3, 4]),
                cmd("config|get", READ_CAT, Some(2), vec![]),
                cmd("config|set", WRITE_CAT, Some(2), vec![]),
                cmd("select", 0, None, vec![]),
            ],
            &[(READ_CAT, "@read"), (WRITE_CAT, "@write")],
        )
    }

    fn user_from(rules: &[&str]) -> Result<User, RuleError> {
        let catalog = catalog();
        let mut user = User::new("u", &catalog, false);
        for rule in rules {
            user.apply(&catalog, rule.as_bytes(), false)?;
        }
        Ok(user)
    }

    #[test]
    fn rules_read_back_as_redis_writes_them() {
        let catalog = catalog();
        let user = user_from(&[
            "on",
            ">p",
            "~a*",
            "%R~b*",
            "%W~c*",
            "&x",
            "+@read",
            "-config|get",
            "+select|0",
        ])
        .unwrap();
        assert_eq!(
            user.describe(&catalog),
            format!(
                "on #{} ~a* %R~b* %W~c* resetchannels &x -@all +get +select|0",
                hash_password(b"p")
            )
        );
        // A category is named only when it covers more than it misses.
        let user = user_from(&["+@all", "-set"]).unwrap();
        assert_eq!(user.root.describe_commands(&catalog), "+@all -set");
        let user = user_from(&["+@all", "-@write"]).unwrap();
        assert_eq!(user.root.describe_commands(&catalog), "+@all -@write");
        assert_eq!(user_from(&["%RW~*"]).unwrap().root.describe_keys(), "~*");
        assert_eq!(
            user_from(&["+config|get|x"]),
            Err(RuleError::SubcommandFirstArg)
        );
        assert_eq!(user_from(&["+get|"]), Err(RuleError::Syntax));
        assert_eq!(user_from(&["allkeys", "~a"]), Err(RuleError::KeyAfterAll));
        assert_eq!(user_from(&["<nope"]), Err(RuleError::NoSuchPassword));
        assert_eq!(user_from(&["#ABC"]), Err(RuleError::BadHash));
    }

    #[test]
    fn selectors_merge_across_arguments() {
        let args: Vec<&[u8]> = vec![b"on", b"(+get", b"~a*)", b"(+set)"];
        assert_eq!(
            merge_selector_args(&args).unwrap(),
            vec![b"on".to_vec(), b"(+get ~a*)".to_vec(), b"(+set)".to_vec()]
        );
        let open: Vec<&[u8]> = vec![b"(+get", b"~a*"];
        assert_eq!(merge_selector_args(&open), Err(b"(+get".to_vec()));
    }

    #[test]
    fn compiled_patterns_match_as_the_glob_engine() {
        let keys: [&[u8]; 7] = [b"", b"a", b"ab", b"abc", b"b", b"a*", b"*"];
        for pattern in ["", "a", "ab", "a*", "a**", "*", "a?", "[a]*", "a\\*", "*b"] {
            let compiled = KeyPattern::new(pattern.as_bytes(), READ);
            for key in keys {
                assert_eq!(
                    compiled.matches(key),
                    kvik_util::glob::glob_match(pattern.as_bytes(), key, false),
                    "{pattern:?} against {key:?}"
                );
            }
        }
    }

    #[test]
    fn the_key_index_allows_what_the_patterns_allow() {
        let user = user_from(&[
            "~k*",
            "%R~ka*",
            "~other*",
            "~exact",
            "~",
            "~?x*",
            "%W~w[a-c]",
        ])
        .unwrap();
        let keys: [&[u8]; 9] = [
            b"k", b"ka1", b"other", b"exact", b"exactly", b"", b"zx1", b"wb", b"x",
        ];
        for key in keys {
            for need in [READ, WRITE, READ | WRITE] {
                let plain = user
                    .root
                    .keys
                    .iter()
                    .any(|k| k.perms & need == need && k.matches(key));
                assert_eq!(user.root.allows_key(key, need), plain, "{key:?} {need}");
            }
        }
    }

    proptest! {
        /// Whatever the bytes, a rule applies or is refused: never a panic, and a
        /// user's description reads back as the same user.
        #[test]
        fn rule_parser_never_panics(rules in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..12), 0..8)
        ) {
            let catalog = catalog();
            let mut user = User::new("u", &catalog, false);
            for rule in &rules {
                let _ = user.apply(&catalog, rule, false);
            }
            let refs: Vec<&[u8]> = rules.iter().map(Vec::as_slice).collect();
            let _ = merge_selector_args(&refs);
            let _ = user.describe(&catalog);
        }

        #[test]
        fn compiled_patterns_agree_with_glob(pattern in "[ab*?\\\\]{0,5}", key in "[ab*]{0,4}") {
            let compiled = KeyPattern::new(pattern.as_bytes(), READ);
            prop_assert_eq!(
                compiled.matches(key.as_bytes()),
                kvik_util::glob::glob_match(pattern.as_bytes(), key.as_bytes(), false)
            );
        }

        /// Literal and prefix patterns of every length around the index's one-word
        /// compare (eight bytes), against keys as long.
        #[test]
        fn the_key_index_agrees_with_glob(
            patterns in proptest::collection::vec("[ab]{1,11}[*]?", 1..4),
            key in "[ab]{0,14}",
        ) {
            let rules: Vec<String> = patterns.iter().map(|p| format!("~{p}")).collect();
            let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
            let user = user_from(&rules).unwrap();
            let globbed = patterns
                .iter()
                .any(|p| kvik_util::glob::glob_match(p.as_bytes(), key.as_bytes(), false));
            prop_assert_eq!(user.root.allows_key(key.as_bytes(), READ | WRITE), globbed);
        }

        #[test]
        fn rules_from_the_grammar_never_panic(rules in proptest::collection::vec(
            prop_oneof![
                Just("on".to_string()), Just("off".to_string()), Just("nopass".to_string()),
                Just("reset".to_string()), Just("resetpass".to_string()), Just("allkeys".to_string()),
                Just("resetkeys".to_string()), Just("allchannels".to_string()),
                Just("resetchannels".to_string()), Just("clearselectors".to_string()),
                Just("allcommands".to_string()), Just("nocommands".to_string()),
                "[~%&<>#!+(-][RW~@a-z|*()]{0,8}",
                "\\(([+-]@?[a-z|]{1,6} ?){0,3}\\)",
            ],
            0..10)
        ) {
            let catalog = catalog();
            let mut user = User::new("u", &catalog, false);
            for rule in &rules {
                let _ = user.apply(&catalog, rule.as_bytes(), false);
            }
            // The description is made of valid rules that rebuild the same
            // permissions (passwords are written as hashes).
            let described = user.describe(&catalog);
            let words: Vec<&[u8]> = described.split(' ').map(str::as_bytes).collect();
            let merged = merge_selector_args(&words).unwrap();
            let mut again = User::new("u", &catalog, false);
            for rule in &merged {
                prop_assert!(again.apply(&catalog, rule, false).is_ok(), "{:?} in {}", String::from_utf8_lossy(rule), described);
            }
            prop_assert_eq!(again.describe(&catalog), described);
        }
    }
}
