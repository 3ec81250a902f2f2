//! The manifest of a multi-part AOF, in Redis 7.0's format: one line per file,
//! `file <name> seq <n> type <b|h|i>`, the base first, then history files, then the
//! incremental files in the order they are replayed. Also the names Redis gives the
//! files (`appendonly.aof.1.base.rdb`, `appendonly.aof.1.incr.aof`, ...).
//!
//! Owns the text and the names; must not touch files (the callers read and write
//! them).

use std::fmt::Write as _;

/// What a file listed in the manifest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The base: an RDB file or AOF commands, the dataset at the last rewrite.
    Base,
    /// Commands written after the base, replayed in manifest order.
    Incr,
    /// Left over from before the last rewrite, waiting to be deleted.
    History,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::Incr => 'i',
            Kind::History => 'h',
        }
    }
}

/// One file listed in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub name: String,
    pub seq: u64,
    pub kind: Kind,
}

/// What the manifest lists, and the sequence numbers the next files take.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileEntry>,
    pub incrs: Vec<FileEntry>,
    pub history: Vec<FileEntry>,
    /// The highest base sequence number used.
    pub base_seq: u64,
    /// The highest incremental sequence number used.
    pub incr_seq: u64,
}

/// The longest manifest line Redis reads (`AOF_MANIFEST_MAX_LINE`).
const MAX_LINE: usize = 1024;

impl Manifest {
    /// Parse a manifest file's text, with Redis 7.0's error messages: the
    /// message, and the line it is about (which Redis logs before it).
    pub fn parse(text: &[u8]) -> Result<Manifest, (String, Option<String>)> {
        let mut manifest = Manifest::default();
        let mut lines = 0;
        let body = text.strip_suffix(b"\n").unwrap_or(text);
        for raw in body.split(|&b| b == b'\n').filter(|_| !text.is_empty()) {
            if raw.len() > MAX_LINE {
                return Err(("The AOF manifest file contains too long line".into(), None));
            }
            if raw.first() == Some(&b'#') {
                continue;
            }
            let line = String::from_utf8_lossy(raw);
            let at_line = |e: String| (e, Some(line.to_string()));
            lines += 1;
            let entry = parse_line(line.trim_matches([' ', '\t', '\r'])).map_err(at_line)?;
            manifest.add(entry).map_err(at_line)?;
        }
        if lines == 0 {
            return Err(("Found an empty AOF manifest".into(), None));
        }
        Ok(manifest)
    }

    fn add(&mut self, entry: FileEntry) -> Result<(), String> {
        match entry.kind {
            Kind::Base => {
                if self.base.is_some() {
                    return Err("Found duplicate base file information".into());
                }
                self.base_seq = entry.seq;
                self.base = Some(entry);
            }
            Kind::History => self.history.push(entry),
            Kind::Incr => {
                if entry.seq <= self.incr_seq {
                    return Err("Found a non-monotonic sequence number".into());
                }
                self.incr_seq = entry.seq;
                self.incrs.push(entry);
            }
        }
        Ok(())
    }

    /// The manifest's text, as Redis writes it: base, history, incremental files.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let files = self.base.iter().chain(&self.history).chain(&self.incrs);
        for f in files {
            let _ = writeln!(
                out,
                "file {} seq {} type {}",
                quote(&f.name),
                f.seq,
                f.kind.letter()
            );
        }
        out
    }

    /// Every file the manifest lists that loading replays: the base, then the
    /// incremental files.
    pub fn replayed(&self) -> impl Iterator<Item = &FileEntry> {
        self.base.iter().chain(&self.incrs)
    }

    /// A new incremental file, appended after the others.
    pub fn add_incr(&mut self, filename: &str) -> FileEntry {
        self.incr_seq += 1;
        let entry = FileEntry {
            name: incr_name(filename, self.incr_seq),
            seq: self.incr_seq,
            kind: Kind::Incr,
        };
        self.incrs.push(entry.clone());
        entry
    }

    /// The name the next base file takes.
    pub fn next_base(&self, filename: &str, rdb: bool) -> FileEntry {
        let seq = self.base_seq + 1;
        FileEntry {
            name: base_name(filename, seq, rdb),
            seq,
            kind: Kind::Base,
        }
    }

    /// A rewrite's base is in place: it replaces the old base, and the incremental
    /// files before `first_kept` (the one opened when the rewrite began) become
    /// history.
    pub fn install_base(&mut self, base: FileEntry, first_kept: u64) {
        self.base_seq = base.seq;
        if let Some(mut old) = self.base.replace(base) {
            old.kind = Kind::History;
            self.history.push(old);
        }
        let (old, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.incrs)
            .into_iter()
            .partition(|f| f.seq < first_kept);
        self.incrs = kept;
        self.history.extend(old.into_iter().map(|mut f| {
            f.kind = Kind::History;
            f
        }));
    }
}

/// `appendonly.aof.<seq>.base.rdb` (or `.base.aof`).
pub fn base_name(filename: &str, seq: u64, rdb: bool) -> String {
    let ext = if rdb { "rdb" } else { "aof" };
    format!("{filename}.{seq}.base.{ext}")
}

/// `appendonly.aof.<seq>.incr.aof`.
pub fn incr_name(filename: &str, seq: u64) -> String {
    format!("{filename}.{seq}.incr.aof")
}

/// `appendonly.aof.manifest`.
pub fn manifest_name(filename: &str) -> String {
    format!("{filename}.manifest")
}

/// The name the manifest is written under before it is renamed in place.
pub fn temp_manifest_name(filename: &str) -> String {
    format!("temp-{}", manifest_name(filename))
}

/// A name with spaces or unusual bytes is written in double quotes, as Redis's
/// `sdscatrepr` writes it; plain names go as they are.
fn quote(name: &str) -> String {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' && b != b'\'');
    if plain {
        return name.to_string();
    }
    let mut out = String::from("\"");
    for b in name.bytes() {
        match b {
            b'\\' | b'"' => {
                out.push('\\');
                out.push(b as char);
            }
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b if b.is_ascii_graphic() || b == b' ' => out.push(b as char),
            b => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

/// One `file <name> seq <n> type <t>` line (the pairs in any order).
fn parse_line(line: &str) -> Result<FileEntry, String> {
    const INVALID: &str = "Invalid AOF manifest file format";
    if line.is_empty() {
        return Err(INVALID.into());
    }
    let words = split_words(line).ok_or(INVALID)?;
    if words.len() % 2 != 0 || words.len() < 6 {
        return Err(INVALID.into());
    }
    let (mut name, mut seq, mut kind) = (None, None, None);
    for pair in words.chunks_exact(2) {
        match pair[0].as_str() {
            "file" => name = Some(pair[1].clone()),
            "seq" => seq = pair[1].parse::<u64>().ok(),
            "type" => {
                kind = Some(match pair[1].as_str() {
                    "b" => Kind::Base,
                    "i" => Kind::Incr,
                    "h" => Kind::History,
                    _ => return Err("Unknown AOF file type".into()),
                })
            }
            _ => {}
        }
    }
    match (name, seq, kind) {
        (Some(name), Some(seq), Some(kind)) if !name.is_empty() => {
            if name.contains('/') {
                return Err("File can't be a path, just a filename".into());
            }
            Ok(FileEntry { name, seq, kind })
        }
        _ => Err(INVALID.into()),
    }
}

/// Split a line into words, honouring double quotes with backslash escapes and
/// single quotes, as Redis's `sdssplitargs`; `None` for unbalanced quotes.
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Some(words);
        };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next()? {
                    c if c == first => break,
                    '\\' if first == '"' => word.push(unescape(chars.next()?)),
                    c => word.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return None;
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        words.push(word);
    }
}

fn unescape(c: char) -> char {
    match c {
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_as_redis_writes_it() {
        let mut m = Manifest::default();
        let base = m.next_base("appendonly.aof", true);
        m.install_base(base, 1);
        m.add_incr("appendonly.aof");
        assert_eq!(
            m.render(),
            "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
        );
        assert_eq!(Manifest::parse(m.render().as_bytes()).unwrap(), m);
    }

    #[test]
    fn a_rewrite_turns_the_old_files_into_history() {
        let mut m = Manifest::default();
        let base = m.next_base("a", true);
        m.install_base(base, 1);
        m.add_incr("a");
        let kept = m.add_incr("a").seq;
        let base = m.next_base("a", true);
        m.install_base(base, kept);
        assert_eq!(
            m.render(),
            "file a.2.base.rdb seq 2 type b\nfile a.1.base.rdb seq 1 type h\nfile a.1.incr.aof seq 1 type h\nfile a.2.incr.aof seq 2 type i\n"
        );
    }

    #[test]
    fn bad_manifests_get_redis_errors() {
        let err = |t: &str| Manifest::parse(t.as_bytes()).unwrap_err().0;
        assert_eq!(err(""), "Found an empty AOF manifest");
        assert_eq!(err("file a seq 1\n"), "Invalid AOF manifest file format");
        assert_eq!(
            err("file a seq x type b\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            err("file a seq 1 type b\nfile b seq 2 type b\n"),
            "Found duplicate base file information"
        );
        assert_eq!(
            err("file a seq 2 type i\nfile b seq 1 type i\n"),
            "Found a non-monotonic sequence number"
        );
        assert_eq!(err("file a seq 1 type x\n"), "Unknown AOF file type");
        assert_eq!(err("\n"), "Invalid AOF manifest file format");
        assert_eq!(
            Manifest::parse(b"file a seq 1\n").unwrap_err().1.as_deref(),
            Some("file a seq 1")
        );
        let quoted = Manifest::parse(b"file \"a b\" seq 1 type b\n").unwrap();
        assert_eq!(quoted.base.unwrap().name, "a b");
    }
}
