//! Loading the AOF: the manifest's base (an RDB file, or AOF commands, possibly
//! behind an RDB preamble) and its incremental files, in order; an old single-file
//! `appendonly.aof` of Redis 6 is first moved into the directory as the base, as
//! Redis 7.0 upgrades it.
//!
//! A torn tail of the last file (a crash mid-write) is cut back to the last whole
//! command with `aof-load-truncated yes`, with Redis's warnings; anything else that
//! is not a command stops the load with Redis's messages. A MULTI block is handed
//! over only once its EXEC is read, so half a transaction is never applied.
//!
//! Owns reading the files; the caller ([`Replay`]) loads RDB data and runs the
//! commands, since this layer may not run commands.

use super::manifest::{FileEntry, Kind, Manifest};
use super::Aof;
use crate::{log_notice, log_warning};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::time::Instant;

/// What loading does with what the files hold.
pub trait Replay {
    /// Load RDB data from `reader` (a base file, or an AOF's preamble), reading no
    /// further than its end.
    fn rdb(&mut self, reader: &mut dyn Read) -> Result<(), String>;
    /// Run one command. A transaction comes whole: MULTI, its commands, EXEC.
    /// An error names an unknown command; other failures are the command's own.
    fn command(&mut self, argv: &[Vec<u8>]) -> Result<(), Unknown>;
    /// The files to replay hold `total_bytes` in all (for the progress shown while
    /// loading); said once, before anything is read.
    fn measured(&mut self, total_bytes: u64);
    /// Commands taking `bytes` more of a file were read (an RDB part counts its
    /// own bytes).
    fn advanced(&mut self, bytes: u64);
}

/// A command the server does not know.
#[derive(Debug)]
pub struct Unknown;

/// How a load ended without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    /// No AOF at all.
    NotExist,
    /// Files without any data.
    Empty,
    Ok,
    /// The last file's torn tail was cut off.
    Truncated,
}

/// The load failed (logged with Redis's messages): the server must not start.
#[derive(Debug)]
pub struct Failed;

/// How one file ended.
enum FileEnd {
    Empty,
    Ok,
    /// Ends mid-command: whole commands end at this offset.
    Torn {
        valid_up_to: u64,
        in_multi: bool,
    },
}

/// Load the AOF of `aof` (upgrading a Redis 6 file first), as Redis 7.0 does at
/// start-up. Returns the manifest to write on with.
pub fn load(
    aof: &Aof,
    truncated_ok: bool,
    replay: &mut dyn Replay,
) -> Result<(Loaded, Manifest), Failed> {
    let manifest = match aof.read_manifest() {
        Ok(m) => m,
        Err(e) => {
            log_warning!("{e}");
            return Err(Failed);
        }
    };
    let manifest = match manifest {
        Some(m) if m.base.is_some() || !m.incrs.is_empty() => m,
        _ => match upgrade_single_file(aof) {
            Ok(Some(m)) => m,
            Ok(None) => return Ok((Loaded::NotExist, manifest.unwrap_or_default())),
            Err(e) => {
                log_warning!("Error moving the old AOF file into the AOF directory: {e}");
                return Err(Failed);
            }
        },
    };
    let started = Instant::now();
    let loaded = load_files(aof, &manifest, truncated_ok, replay)?;
    if loaded != Loaded::Empty {
        log_notice!(
            "DB loaded from append only file: {:.3} seconds",
            started.elapsed().as_secs_f64()
        );
    }
    Ok((loaded, manifest))
}

/// Replay the files `manifest` lists, in order.
pub fn load_files(
    aof: &Aof,
    manifest: &Manifest,
    truncated_ok: bool,
    replay: &mut dyn Replay,
) -> Result<Loaded, Failed> {
    let files: Vec<&FileEntry> = manifest.replayed().collect();
    // Every file is measured first, as Redis does: a missing one stops the load.
    let mut total_bytes = 0;
    for f in &files {
        match std::fs::metadata(aof.file_path(&f.name)) {
            Ok(m) => total_bytes += m.len(),
            Err(e) => {
                log_warning!(
                    "Unable to obtain the AOF file {} length. stat: {}",
                    f.name,
                    super::describe_io_error(&e)
                );
                return Err(Failed);
            }
        }
    }
    replay.measured(total_bytes);
    let mut result = Loaded::Empty;
    for (i, f) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let started = Instant::now();
        let path = aof.file_path(&f.name);
        let end = load_one(&path, &f.name, f.kind == Kind::Base, replay)?;
        let end = match end {
            FileEnd::Torn {
                valid_up_to,
                in_multi,
            } => {
                if in_multi {
                    log_warning!(
                        "Revert incomplete MULTI/EXEC transaction in AOF file {}",
                        f.name
                    );
                }
                cut_torn_tail(&path, &f.name, valid_up_to, truncated_ok)?;
                if !last {
                    log_warning!("Fatal error: the truncated file is not the last file");
                    return Err(Failed);
                }
                Loaded::Truncated
            }
            FileEnd::Empty => Loaded::Empty,
            FileEnd::Ok => Loaded::Ok,
        };
        if end != Loaded::Empty {
            let what = if f.kind == Kind::Base { "base" } else { "incr" };
            log_notice!(
                "DB loaded from {what} file {}: {:.3} seconds",
                f.name,
                started.elapsed().as_secs_f64()
            );
        }
        result = match (result, end) {
            (_, Loaded::Truncated) => Loaded::Truncated,
            (r, Loaded::Empty) => r,
            _ => Loaded::Ok,
        };
    }
    Ok(result)
}

/// `aof-load-truncated yes`: cut the file back to its last whole command, with
/// Redis's warnings; `no`: refuse, with Redis's advice.
fn cut_torn_tail(path: &Path, name: &str, valid_up_to: u64, allowed: bool) -> Result<(), Failed> {
    if allowed {
        log_warning!("!!! Warning: short read while loading the AOF file {name}!!!");
        log_warning!("!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
        let cut = File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(valid_up_to).and_then(|()| f.sync_all()));
        match cut {
            Ok(()) => {
                log_warning!("AOF {name} loaded anyway because aof-load-truncated is enabled");
                return Ok(());
            }
            Err(e) => log_warning!(
                "Error truncating the AOF file {name}: {}",
                super::describe_io_error(&e)
            ),
        }
    }
    log_warning!(
        "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
    );
    Err(Failed)
}

/// Load one file: an RDB (whole, or as a preamble) and then commands.
fn load_one(
    path: &Path,
    name: &str,
    is_base: bool,
    replay: &mut dyn Replay,
) -> Result<FileEnd, Failed> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            log_warning!(
                "The append log file {name} doesn't exist: {}",
                super::describe_io_error(&e)
            );
            return Err(Failed);
        }
        Err(e) => {
            log_warning!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                super::describe_io_error(&e)
            );
            return Err(Failed);
        }
    };
    if file.metadata().map_or(0, |m| m.len()) == 0 {
        return Ok(FileEnd::Empty);
    }
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut pos = 0u64;
    let starts_rdb = reader.fill_buf().is_ok_and(|b| b.starts_with(b"REDIS"));
    if starts_rdb {
        if is_base {
            log_notice!("Reading RDB base file on AOF loading...");
        } else {
            log_notice!("Reading RDB preamble from AOF file...");
        }
        let mut counting = Counting {
            inner: &mut reader,
            count: 0,
        };
        if let Err(e) = replay.rdb(&mut counting) {
            log_warning!("{e}");
            if is_base {
                log_warning!("Error reading the RDB base file {name}, AOF loading aborted");
            } else {
                log_warning!(
                    "Error reading the RDB preamble of the AOF file {name}, AOF loading aborted"
                );
            }
            return Err(Failed);
        }
        pos = counting.count;
        if reader.fill_buf().is_ok_and(|b| !b.is_empty()) {
            log_notice!("Reading the remaining AOF tail...");
        }
    }
    replay_commands(&mut reader, pos, name, replay)
}

/// Replay the commands from `pos` to the end of the file.
fn replay_commands(
    reader: &mut impl BufRead,
    mut pos: u64,
    name: &str,
    replay: &mut dyn Replay,
) -> Result<FileEnd, Failed> {
    let mut valid_up_to = pos;
    // A transaction read so far, and where it began.
    let mut multi: Option<(u64, Vec<Vec<Vec<u8>>>)> = None;
    let mut any = pos > 0;
    loop {
        let before = pos;
        let parsed = read_command(reader, &mut pos);
        replay.advanced(pos - before);
        let argv = match parsed {
            Parsed::Command(argv) => argv,
            Parsed::End => break,
            Parsed::Torn => {
                return Ok(FileEnd::Torn {
                    valid_up_to: multi.as_ref().map_or(valid_up_to, |m| m.0),
                    in_multi: multi.is_some(),
                })
            }
            Parsed::Bad => {
                log_warning!(
                    "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
                );
                return Err(Failed);
            }
        };
        any = true;
        let word = &argv[0];
        if word.eq_ignore_ascii_case(b"MULTI") && multi.is_none() {
            multi = Some((valid_up_to, vec![argv]));
        } else if let Some((_, block)) = multi.as_mut() {
            let ends = word.eq_ignore_ascii_case(b"EXEC");
            block.push(argv);
            if ends {
                let (_, block) = multi.take().unwrap_or_default();
                for argv in &block {
                    run(replay, argv, name)?;
                }
            }
        } else {
            run(replay, &argv, name)?;
        }
        if multi.is_none() {
            valid_up_to = pos;
        }
    }
    if let Some((start, _)) = multi {
        return Ok(FileEnd::Torn {
            valid_up_to: start,
            in_multi: true,
        });
    }
    Ok(if any { FileEnd::Ok } else { FileEnd::Empty })
}

fn run(replay: &mut dyn Replay, argv: &[Vec<u8>], name: &str) -> Result<(), Failed> {
    replay.command(argv).map_err(|Unknown| {
        log_warning!(
            "Unknown command '{}' reading the append only file {name}",
            String::from_utf8_lossy(&argv[0])
        );
        Failed
    })
}

/// One command read from an AOF.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Command(Vec<Vec<u8>>),
    /// The file ends where a command may start.
    End,
    /// The file ends inside a command.
    Torn,
    /// Not a command.
    Bad,
}

/// The longest header line (`*<argc>` or `$<len>`) read before giving up on it.
const MAX_HEADER: u64 = 128;

/// Read one command (skipping `#` annotations), advancing `pos` past it.
pub fn read_command(reader: &mut impl BufRead, pos: &mut u64) -> Parsed {
    let line = loop {
        match read_line(reader, pos) {
            Line::Whole(line) if line.first() == Some(&b'#') => continue,
            Line::Whole(line) => break line,
            Line::End => return Parsed::End,
            Line::Partial => return Parsed::Torn,
        }
    };
    let argc = match header(&line, b'*') {
        Some(n) if n >= 1 => n,
        _ => return Parsed::Bad,
    };
    let mut argv = Vec::with_capacity(argc.min(1024) as usize);
    for _ in 0..argc {
        let line = match read_line(reader, pos) {
            Line::Whole(line) => line,
            Line::End | Line::Partial => return Parsed::Torn,
        };
        let Some(len) = header(&line, b'$') else {
            return Parsed::Bad;
        };
        let mut arg = Vec::new();
        // Read through `take`, so that a corrupt length meets the end of the file
        // before it costs memory.
        let want = len + 2;
        match reader.by_ref().take(want).read_to_end(&mut arg) {
            Ok(n) if n as u64 == want => {}
            Ok(_) => return Parsed::Torn,
            Err(_) => return Parsed::Bad,
        }
        *pos += want;
        if !arg.ends_with(b"\r\n") {
            return Parsed::Bad;
        }
        arg.truncate(len as usize);
        argv.push(arg);
    }
    Parsed::Command(argv)
}

enum Line {
    Whole(Vec<u8>),
    End,
    Partial,
}

/// One line ending in `\n`, at most [`MAX_HEADER`] bytes.
fn read_line(reader: &mut impl BufRead, pos: &mut u64) -> Line {
    let mut line = Vec::new();
    match reader
        .by_ref()
        .take(MAX_HEADER)
        .read_until(b'\n', &mut line)
    {
        Ok(0) => Line::End,
        Ok(n) => {
            *pos += n as u64;
            if line.ends_with(b"\n") {
                Line::Whole(line)
            } else if n as u64 == MAX_HEADER {
                // Too long for a header: not a torn command but garbage.
                Line::Whole(line)
            } else {
                Line::Partial
            }
        }
        Err(_) => Line::Partial,
    }
}

/// The number of a `*<n>\r\n` or `$<n>\r\n` line.
fn header(line: &[u8], prefix: u8) -> Option<u64> {
    let body = line.strip_prefix(&[prefix])?.strip_suffix(b"\r\n")?;
    let text = std::str::from_utf8(body).ok()?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|&n| n <= i64::MAX as u64 / 2)
}

/// Counts the bytes read through it.
struct Counting<'r, R> {
    inner: &'r mut R,
    count: u64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Redis 6's single `appendonly.aof` in `dir`, with no AOF directory yet: move it
/// into the directory as the base, listed in a new manifest, as Redis 7.0 does.
fn upgrade_single_file(aof: &Aof) -> io::Result<Option<Manifest>> {
    let old = Path::new(aof.filename());
    if !old.is_file() {
        return Ok(None);
    }
    std::fs::create_dir_all(aof.dir())?;
    let manifest = Manifest {
        base: Some(FileEntry {
            name: aof.filename().to_string(),
            seq: 1,
            kind: Kind::Base,
        }),
        base_seq: 1,
        ..Manifest::default()
    };
    aof.persist_manifest(&manifest)?;
    std::fs::rename(old, aof.file_path(aof.filename()))?;
    log_notice!(
        "Successfully migrated an old-style AOF file ({}) into the AOF directory ({}).",
        aof.filename(),
        aof.dir().display()
    );
    Ok(Some(manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> (Vec<Parsed>, u64) {
        let mut reader = bytes;
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            let p = read_command(&mut reader, &mut pos);
            let stop = !matches!(p, Parsed::Command(_));
            out.push(p);
            if stop {
                return (out, pos);
            }
        }
    }

    #[test]
    fn reads_commands_and_skips_annotations() {
        let (parsed, pos) = parse_all(b"#TS:1\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n");
        assert_eq!(
            parsed,
            [
                Parsed::Command(vec![b"SELECT".to_vec(), b"0".to_vec()]),
                Parsed::End
            ]
        );
        assert_eq!(pos, 30);
    }

    #[test]
    fn a_torn_tail_is_not_garbage() {
        let whole = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        for cut in 1..whole.len() {
            let (parsed, _) = parse_all(&whole[..cut]);
            assert_eq!(parsed, [Parsed::Torn], "cut at {cut}");
        }
        assert_eq!(parse_all(b"SET k v\r\n").0, [Parsed::Bad]);
        assert_eq!(parse_all(b"*1\r\n$3\r\nabcd\r\n").0, [Parsed::Bad]);
        assert_eq!(parse_all(b"*0\r\n").0, [Parsed::Bad]);
    }

    struct Collect(Vec<Vec<Vec<u8>>>);

    impl Replay for Collect {
        fn rdb(&mut self, _: &mut dyn Read) -> Result<(), String> {
            Ok(())
        }

        fn command(&mut self, argv: &[Vec<u8>]) -> Result<(), Unknown> {
            self.0.push(argv.to_vec());
            Ok(())
        }

        fn measured(&mut self, _: u64) {}

        fn advanced(&mut self, _: u64) {}
    }

    #[test]
    fn an_unfinished_transaction_is_never_replayed() {
        let mut text = Vec::new();
        crate::effects::encode_command(&[b"SET", b"a", b"1"], &mut text);
        let before_multi = text.len() as u64;
        crate::effects::encode_command(&[b"MULTI"], &mut text);
        crate::effects::encode_command(&[b"SET", b"b", b"2"], &mut text);
        let mut replay = Collect(Vec::new());
        let end = replay_commands(&mut &text[..], 0, "f", &mut replay).unwrap();
        assert!(matches!(
            end,
            FileEnd::Torn { valid_up_to, in_multi: true } if valid_up_to == before_multi
        ));
        assert_eq!(replay.0.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn the_reader_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let mut replay = Collect(Vec::new());
            let _ = replay_commands(&mut &bytes[..], 0, "f", &mut replay);
        }

        #[test]
        fn every_prefix_of_valid_commands_loads_or_is_torn(cut in 0usize..200) {
            let mut text = Vec::new();
            crate::effects::encode_command(&[b"SET", b"key", b"value"], &mut text);
            crate::effects::encode_command(&[b"MULTI"], &mut text);
            crate::effects::encode_command(&[b"INCR", b"n"], &mut text);
            crate::effects::encode_command(&[b"EXEC"], &mut text);
            crate::effects::encode_command(&[b"DEL", b"key"], &mut text);
            let cut = cut.min(text.len());
            let mut replay = Collect(Vec::new());
            let end = replay_commands(&mut &text[..cut], 0, "f", &mut replay);
            proptest::prop_assert!(end.is_ok());
        }
    }
}
