//! KeyDB's scheduled script (`KEYDB.CRON`): a Lua script with its keys and
//! arguments, held as the value of a key so that it persists, replicates and goes
//! away with DEL like any other value.
//!
//! Owns the job's schedule arithmetic: when it runs next and where the schedule
//! stands after a run. Must not touch running scripts or the keyspace: the server's
//! scheduler decides when to look and what a run does.

/// One scheduled script. The schedule is KeyDB's: the job runs at `start_ms +
/// interval_ms`; after a run a repeating job moves `start_ms` on by whole intervals
/// until its next run lies in the future, and a single-shot job is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    pub script: Vec<u8>,
    /// Unix ms the interval counts from.
    pub start_ms: u64,
    /// Milliseconds between runs (positive).
    pub interval_ms: u64,
    pub keys: Vec<Vec<u8>>,
    pub args: Vec<Vec<u8>>,
    /// Runs once, then its key is deleted.
    pub single: bool,
}

impl CronJob {
    /// Unix ms of the next run.
    pub fn next_run_ms(&self) -> u64 {
        self.start_ms.saturating_add(self.interval_ms)
    }

    /// The start of the interval after a run at `now_ms`: one interval on, or, when
    /// runs were missed (the server was down, the job was loaded late), the first
    /// start whose run lies past `now_ms` (missed runs are not made up, as in KeyDB).
    pub fn start_after_run(&self, now_ms: u64) -> u64 {
        let interval = self.interval_ms.max(1);
        let next = self.start_ms.saturating_add(interval);
        if next.saturating_add(interval) > now_ms {
            return next;
        }
        let behind = now_ms - next;
        next.saturating_add(interval.saturating_mul(behind / interval))
    }

    /// The `KEYDB.CRON` arguments that set this job under `name` again, with its
    /// start spelled out (what the command propagates as and an AOF rewrite writes).
    pub fn command(&self, name: &[u8]) -> Vec<Vec<u8>> {
        let mode: &[u8] = if self.single { b"single" } else { b"repeat" };
        let mut argv = vec![
            b"KEYDB.CRON".to_vec(),
            name.to_vec(),
            mode.to_vec(),
            self.start_ms.to_string().into_bytes(),
            self.interval_ms.to_string().into_bytes(),
            self.script.clone(),
            self.keys.len().to_string().into_bytes(),
        ];
        argv.extend(self.keys.iter().cloned());
        argv.extend(self.args.iter().cloned());
        argv
    }

    /// Approximate heap bytes the job owns.
    pub fn heap_size(&self) -> usize {
        let strings = |v: &Vec<Vec<u8>>| v.iter().map(Vec::capacity).sum::<usize>();
        self.script.capacity()
            + strings(&self.keys)
            + strings(&self.args)
            + (self.keys.capacity() + self.args.capacity()) * std::mem::size_of::<Vec<u8>>()
            + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::CronJob;

    fn job(start_ms: u64, interval_ms: u64) -> CronJob {
        CronJob {
            script: b"return 1".to_vec(),
            start_ms,
            interval_ms,
            keys: Vec::new(),
            args: Vec::new(),
            single: false,
        }
    }

    #[test]
    fn a_run_on_time_moves_one_interval_on() {
        let j = job(1000, 100);
        assert_eq!(j.next_run_ms(), 1100);
        assert_eq!(j.start_after_run(1100), 1100);
        assert_eq!(j.start_after_run(1150), 1100);
    }

    #[test]
    fn missed_runs_are_skipped_to_the_first_future_one() {
        let j = job(0, 600);
        let start = j.start_after_run(10_000);
        let next = start + 600;
        assert!(next > 10_000 && next <= 10_600, "{next}");
        assert_eq!(start % 600, 0);
    }
}
