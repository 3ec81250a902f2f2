//! AOF rewrite from the forkless snapshot: a new incremental file starts at the
//! snapshot's point in time (new writes go there while the base is written), the
//! snapshot is written as the new base (`temp-rewriteaof-bg-<pid>.aof`, fsynced,
//! renamed), then the manifest switches to the new base atomically and the files of
//! before become history and are deleted.
//!
//! Owns the steps on the AOF's side; when a rewrite runs and what the snapshot is
//! are decided above (`server::saving`). Must not touch the keyspace.

use super::manifest::FileEntry;
use super::{Aof, State};
use crate::persistence::rdb::file;
use crate::persistence::rdb::io::WriteSink;
use crate::snapshot::{AtPoint, Form, RdbFile};
use crate::{log_notice, log_warning};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why a rewrite did not start.
#[derive(Debug, PartialEq, Eq)]
pub enum StartError {
    InProgress,
    /// The new incremental file or the manifest could not be written (logged).
    Failed,
}

/// A rewrite begun: where the new writes go and what the base replaces.
/// How a base file is written: an RDB (with `rdbchecksum`'s footer) or commands
/// (`aof-use-rdb-preamble no`), fsynced every 4 MB with
/// `aof-rewrite-incremental-fsync`.
#[derive(Debug, Clone, Copy)]
pub struct BaseChecks {
    pub form: Form,
    pub checksum: bool,
    pub incremental_fsync: bool,
}

impl BaseChecks {
    pub fn of(config: &kvik_config::Config, form: Form) -> Self {
        BaseChecks {
            form,
            checksum: config.rdbchecksum,
            incremental_fsync: config.aof_rewrite_incremental_fsync,
        }
    }
}

pub struct Rewrite {
    /// The incremental file opened for it (none while the AOF is off): it and
    /// those after it stay after the switch.
    incr: Option<FileEntry>,
    pub cancel: Arc<AtomicBool>,
}

/// A rewrite's snapshot, for the thread that writes it.
pub struct Job {
    pub rewrite: Rewrite,
    pub snapshot: Arc<crate::snapshot::Snapshot>,
    pub point: AtPoint,
}

impl Aof {
    /// Start a rewrite: with the AOF on (or being turned on), a new incremental file
    /// is created and listed in the manifest, for the writes after the snapshot's
    /// point ([`Aof::rewrite_point`]).
    pub fn begin_rewrite(&self) -> Result<Rewrite, StartError> {
        let cancel = Arc::new(AtomicBool::new(false));
        {
            let mut stats = self.rewrite.lock();
            if stats.running_since.is_some() {
                return Err(StartError::InProgress);
            }
            stats.running_since = Some(Instant::now());
            stats.cancel = Some(cancel.clone());
        }
        let incr = match self.state() {
            State::Off => None,
            _ => match self.new_incr("background rewrite") {
                Ok(entry) => Some(entry),
                Err(e) => {
                    log_warning!("Can't open the append-only file: {e}");
                    self.rewrite_ended(false);
                    return Err(StartError::Failed);
                }
            },
        };
        Ok(Rewrite { incr, cancel })
    }

    /// Create the next incremental file and list it in the manifest.
    fn new_incr(&self, why: &str) -> std::io::Result<FileEntry> {
        std::fs::create_dir_all(&self.dir)?;
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        let entry = next.add_incr(&self.filename);
        File::create(self.path_of(&entry.name))?;
        self.persist_manifest(&next)?;
        *manifest = next;
        log_notice!("Creating AOF incr file {} on {why}", entry.name);
        Ok(entry)
    }

    /// The snapshot's point in time (called while every shard is held): the writes
    /// from here on go to the rewrite's incremental file.
    pub fn rewrite_point(&self, rewrite: &Rewrite) {
        if let Some(incr) = &rewrite.incr {
            self.switch_file(Some(self.path_of(&incr.name)));
        }
    }

    /// Write the new base through `fill` (the RDB up to its footer) into a temp
    /// file, fsync it (every 4 MB too with `aof-rewrite-incremental-fsync`) and
    /// give it its name. The manifest does not list it yet.
    pub fn write_base(
        &self,
        checks: BaseChecks,
        fill: impl FnOnce(&mut WriteSink<RdbFile>) -> bool,
    ) -> std::io::Result<Option<FileEntry>> {
        std::fs::create_dir_all(&self.dir)?;
        let temp_name = format!("temp-rewriteaof-bg-{}.aof", std::process::id());
        let temp = self.path_of(&temp_name);
        let file = RdbFile::new(File::create(&temp)?, checks.incremental_fsync);
        let mut sink = WriteSink::new(file);
        if !fill(&mut sink) {
            let _ = std::fs::remove_file(&temp);
            return Ok(None);
        }
        let rdb = checks.form == Form::Rdb;
        let written = if rdb {
            file::finish(sink, checks.checksum)
        } else {
            sink.finish()
        };
        let written = written.and_then(|f| f.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        log_notice!("Successfully created the temporary AOF base file {temp_name}");
        let base = self.manifest.lock().next_base(&self.filename, rdb);
        std::fs::rename(&temp, self.path_of(&base.name))?;
        log_notice!(
            "Successfully renamed the temporary AOF base file {temp_name} into {}",
            base.name
        );
        Ok(Some(base))
    }

    /// A rewrite's base is written (or not: `base` is `None` when it failed or was
    /// cancelled): switch the manifest to it, delete the history files, and turn
    /// the AOF on if it was waiting for this rewrite.
    pub fn finish_rewrite(&self, rewrite: Rewrite, base: std::io::Result<Option<FileEntry>>) {
        let base = match base {
            Ok(Some(base)) => base,
            Ok(None) => {
                log_warning!("Background AOF rewrite terminated by signal 10");
                self.rewrite_ended(true);
                return;
            }
            Err(e) => {
                log_warning!(
                    "Background AOF rewrite terminated with error: {}",
                    super::describe_io_error(&e)
                );
                self.rewrite_ended(false);
                return;
            }
        };
        let first_kept = rewrite.incr.as_ref().map_or(u64::MAX, |f| f.seq);
        let switched = {
            let mut manifest = self.manifest.lock();
            let mut next = manifest.clone();
            next.install_base(base, first_kept);
            let persisted = self.persist_manifest(&next);
            if persisted.is_ok() {
                *manifest = next;
            }
            persisted
        };
        if let Err(e) = switched {
            log_warning!("Can't persist the AOF manifest: {e}");
            self.rewrite_ended(false);
            return;
        }
        log_notice!("Background AOF rewrite terminated with success");
        if !self.settings.lock().keep_history {
            self.delete_history();
        }
        if self.state() == State::WaitRewrite {
            self.set_state(State::On);
            log_notice!("Background AOF rewrite finished successfully");
        } else {
            log_notice!("Background AOF rewrite finished successfully");
        }
        self.refresh_sizes();
        self.rewrite_ended(true);
    }

    /// Delete the history files and list them no more.
    fn delete_history(&self) {
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        for f in std::mem::take(&mut next.history) {
            log_notice!("Removing the history file {} in the background", f.name);
            let _ = std::fs::remove_file(self.path_of(&f.name));
        }
        if self.persist_manifest(&next).is_ok() {
            *manifest = next;
        }
    }

    /// A rewrite whose snapshot could not begin: nothing was switched (its new
    /// incremental file stays empty in the manifest until the next rewrite).
    pub fn abandon_rewrite(&self, rewrite: Rewrite) {
        drop(rewrite);
        let mut stats = self.rewrite.lock();
        stats.running_since = None;
        stats.cancel = None;
    }

    fn rewrite_ended(&self, ok: bool) {
        let mut stats = self.rewrite.lock();
        let took = stats
            .running_since
            .take()
            .map_or(0, |s| s.elapsed().as_secs() as i64);
        stats.cancel = None;
        stats.last_secs = Some(took);
        stats.last_ok = ok;
        if ok {
            stats.count += 1;
            stats.consecutive_failures = 0;
        } else {
            stats.consecutive_failures += 1;
            // Turning the AOF on waits for a rewrite that succeeds: try again.
            if self.state() == State::WaitRewrite {
                self.schedule_rewrite();
            }
        }
    }

    /// Stop the running rewrite (AOF turned off, SHUTDOWN, FLUSHALL).
    pub fn cancel_rewrite(&self) {
        if let Some(cancel) = self.rewrite.lock().cancel.as_ref() {
            log_notice!("Killing running AOF rewrite child");
            cancel.store(true, Ordering::Relaxed);
        }
    }

    /// The first base at server start (no AOF yet, or turned on with an empty
    /// directory): written in the foreground. `fill` writes the dataset.
    pub fn create_base_on_start(
        &self,
        checks: BaseChecks,
        fill: impl FnOnce(&mut WriteSink<RdbFile>) -> bool,
    ) -> std::io::Result<()> {
        let base = self
            .write_base(checks, fill)?
            .ok_or_else(|| std::io::Error::other("cancelled"))?;
        log_notice!("Creating AOF base file {} on server start", base.name);
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.install_base(base, u64::MAX);
        self.persist_manifest(&next)?;
        *manifest = next;
        drop(manifest);
        self.delete_history();
        self.refresh_sizes();
        Ok(())
    }

    /// Turn the AOF on at run time (`CONFIG SET appendonly yes`): effects are
    /// taken from the snapshot's point on, and it is on once the rewrite's base is
    /// in place.
    pub fn prepare_turn_on(&self) -> Result<(), String> {
        if self.state() != State::Off {
            return Ok(());
        }
        if let Some(manifest) = self.read_manifest()? {
            *self.manifest.lock() = manifest;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.set_state(State::WaitRewrite);
        Ok(())
    }

    /// The path of a file the manifest lists.
    pub fn file_path(&self, name: &str) -> PathBuf {
        self.path_of(name)
    }
}
