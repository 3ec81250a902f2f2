//! `oom-score-adj` and `oom-score-adj-values`: the process's
//! `/proc/self/oom_score_adj`, which tells the kernel's OOM killer whom to pick first,
//! set as Redis sets it. `yes` (or `relative`) adds the value of this process's class
//! to the score it started with, `absolute` uses the value as it is, `no` puts back the
//! score it started with if kvik changed it. A leaf: start-up and CONFIG SET call it.

use kvik_config::Config;
use parking_lot::Mutex;
use std::io;

const PATH: &str = "/proc/self/oom_score_adj";

/// The score the process had before kvik first changed it (`None`: unchanged).
static BASE: Mutex<Option<i32>> = Mutex::new(None);

/// Bring the process's score in line with `config`, for a server that is a master
/// (the first of `oom-score-adj-values`; replicas use the second once kvik has them).
/// The error is logged here, in Redis's words; the caller says what failed.
pub fn apply(config: &Config) -> io::Result<()> {
    let mut base = BASE.lock();
    let score = match config.oom_score_adj.as_str() {
        "no" => match base.take() {
            Some(original) => original,
            None => return Ok(()),
        },
        mode => {
            let original = match *base {
                Some(original) => original,
                None => read_score()?,
            };
            *base = Some(original);
            let value = config.oom_score_adj_values[0];
            let relative = if mode == "absolute" { 0 } else { original };
            (value + relative).clamp(-1000, 1000)
        }
    };
    std::fs::write(PATH, format!("{score}\n"))
        .inspect_err(|e| crate::log_warning!("Unable to write oom_score_adj: {e}"))
}

fn read_score() -> io::Result<i32> {
    let text = std::fs::read_to_string(PATH)
        .inspect_err(|e| crate::log_warning!("Unable to read oom_score_adj: {e}"))?;
    Ok(text.trim().parse().unwrap_or(0))
}
