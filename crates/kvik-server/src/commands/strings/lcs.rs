//! LCS: the longest common subsequence of the strings at two keys, by the classic
//! dynamic programming table, with Redis's three ways to answer: the subsequence
//! itself, its length (LEN), or the matching ranges (IDX, optionally filtered by
//! MINMATCHLEN and annotated WITHMATCHLEN).
//!
//! The ranges come from walking the table back from the end of both strings, so they
//! are listed last first; where the walk could go either way it gives up a byte of
//! the second string, which decides which of several equally long answers is given.
//! A missing key counts as an empty string.

use super::read_string;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};

const NOT_STRINGS: &str = "ERR The specified keys must contain string values";

#[derive(Debug, Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: usize,
}

/// One common run of bytes: `a[a_start..=a_end]` equals `b[b_start..=b_end]`.
#[derive(Debug, PartialEq, Eq)]
struct Match {
    a_start: usize,
    a_end: usize,
    b_start: usize,
    b_end: usize,
}

impl Match {
    fn len(&self) -> usize {
        self.a_end - self.a_start + 1
    }
}

pub fn lcs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Both keys are looked up before the options are read: a key of the wrong type is
    // reported ahead of a syntax error.
    let a = read_string(ctx.keys, args[1]).map(|s| s.map(|s| s.to_vec()));
    let b = read_string(ctx.keys, args[2]).map(|s| s.map(|s| s.to_vec()));
    let (Ok(a), Ok(b)) = (a, b) else {
        return Err(NOT_STRINGS.into());
    };
    let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
    let o = parse_options(&args[3..])?;
    if o.idx && o.len {
        return Err("ERR If you want both the length and indexes, please just use IDX.".into());
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err("ERR String too long for LCS".into());
    }
    let table = Table::build(&a, &b).ok_or(CmdError::from(
        "ERR Insufficient memory, failed allocating transient memory for LCS",
    ))?;
    if o.len {
        ctx.out.int(table.lcs_len() as i64);
        return Ok(());
    }
    let (common, matches) = table.walk_back(&a, &b);
    if !o.idx {
        ctx.out.bulk(&common);
        return Ok(());
    }
    let shown: Vec<&Match> = matches
        .iter()
        .filter(|m| m.len() >= o.min_match_len)
        .collect();
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(shown.len());
    for m in shown {
        ctx.out.array(2 + o.with_match_len as usize);
        for (start, end) in [(m.a_start, m.a_end), (m.b_start, m.b_end)] {
            ctx.out.array(2);
            ctx.out.int(start as i64);
            ctx.out.int(end as i64);
        }
        if o.with_match_len {
            ctx.out.int(m.len() as i64);
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.int(common.len() as i64);
    Ok(())
}

fn parse_options(args: &[&[u8]]) -> Result<LcsOptions, CmdError> {
    let mut o = LcsOptions::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        if args::is(arg, "IDX") {
            o.idx = true;
        } else if args::is(arg, "LEN") {
            o.len = true;
        } else if args::is(arg, "WITHMATCHLEN") {
            o.with_match_len = true;
        } else if args::is(arg, "MINMATCHLEN") && i + 1 < args.len() {
            // A negative minimum means no minimum.
            o.min_match_len = args::int(args[i + 1])?.max(0) as usize;
            i += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    Ok(o)
}

/// `cells[i * (b_len + 1) + j]` is the LCS length of `a[..i]` and `b[..j]`.
struct Table {
    cells: Vec<u32>,
    width: usize,
}

impl Table {
    /// The table for `a` and `b`, or `None` if its memory cannot be had.
    fn build(a: &[u8], b: &[u8]) -> Option<Table> {
        let width = b.len() + 1;
        let size = (a.len() + 1).checked_mul(width)?;
        let mut cells = Vec::new();
        cells.try_reserve_exact(size).ok()?;
        cells.resize(size, 0u32);
        for (i, &x) in a.iter().enumerate() {
            let (done, row) = cells.split_at_mut((i + 1) * width);
            let above = &done[i * width..];
            for (j, &y) in b.iter().enumerate() {
                row[j + 1] = if x == y {
                    above[j] + 1
                } else {
                    above[j + 1].max(row[j])
                };
            }
        }
        Some(Table { cells, width })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    fn lcs_len(&self) -> u32 {
        self.cells[self.cells.len() - 1]
    }

    /// The common subsequence and its runs, last run first.
    fn walk_back(&self, a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<Match>) {
        let mut common = vec![0u8; self.lcs_len() as usize];
        let mut left = common.len();
        let mut matches = Vec::new();
        let mut run: Option<Match> = None;
        let (mut i, mut j) = (a.len(), b.len());
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                left -= 1;
                common[left] = a[i - 1];
                i -= 1;
                j -= 1;
                // Matches met one after the other are contiguous in both strings:
                // the run grows backwards.
                match &mut run {
                    Some(m) => {
                        m.a_start = i;
                        m.b_start = j;
                    }
                    None => {
                        run = Some(Match {
                            a_start: i,
                            a_end: i,
                            b_start: j,
                            b_end: j,
                        })
                    }
                }
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                matches.extend(run.take());
            }
        }
        matches.extend(run);
        (common, matches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_subsequence_and_its_runs() {
        let (a, b) = (b"ohmytext", b"mynewtext");
        let table = Table::build(a, b).unwrap();
        assert_eq!(table.lcs_len(), 6);
        let (common, matches) = table.walk_back(a, b);
        assert_eq!(common, b"mytext");
        let runs: Vec<_> = matches
            .iter()
            .map(|m| (m.a_start, m.a_end, m.b_start, m.b_end))
            .collect();
        assert_eq!(runs, [(4, 7, 5, 8), (2, 3, 0, 1)]);
    }

    #[test]
    fn empty_inputs_have_an_empty_subsequence() {
        let table = Table::build(b"", b"abc").unwrap();
        assert_eq!(table.walk_back(b"", b"abc"), (Vec::new(), Vec::new()));
    }
}
