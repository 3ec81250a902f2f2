//! LOLWUT [VERSION v] [columns [rows]]: a piece of computer art and the version.
//!
//! kvik draws one piece whatever the version asked: a maze of random diagonals, the
//! figure the Commodore 64's one-line `10 PRINT` program made famous. What a client
//! can rely on is what every Redis version gives: a text whose last line ends with
//! `Redis ver. ` and the version kvik reports in INFO (kvik answers for that Redis).

use super::table::{acl, flags, Command};
use super::{args, CmdResult, Ctx};
use rand::Rng;

pub const COMMANDS: &[Command] = &[Command::new("lolwut", -1, lolwut)
    .flags(flags::READONLY | flags::FAST)
    .acl(acl::READ | acl::FAST)
    .doc(
        "server",
        "5.0.0",
        "O(1)",
        "Draws a piece of computer art and shows the version.",
    )];

const DEFAULT_COLUMNS: i64 = 64;
const DEFAULT_ROWS: i64 = 16;
/// Bounds on each dimension, so nobody asks for a gigabyte of maze.
const MAX_SIDE: i64 = 1000;

fn lolwut(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut rest = &args[1..];
    if rest.len() >= 2 && args::is(rest[0], "VERSION") {
        args::int(rest[1])?;
        rest = &rest[2..];
    }
    let columns = dimension(rest.first(), DEFAULT_COLUMNS)?;
    let rows = dimension(rest.get(1), DEFAULT_ROWS)?;
    let mut text = maze(columns, rows, &mut rand::thread_rng());
    text.push_str("\nA 10 PRINT maze, drawn by kvik. Redis ver. ");
    text.push_str(crate::version::REDIS_VERSION);
    text.push('\n');
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// A size argument, or the default; clamped to `1..=MAX_SIDE` as Redis clamps its
/// LOLWUT sizes.
fn dimension(arg: Option<&&[u8]>, default: i64) -> Result<usize, super::CmdError> {
    let n = match arg {
        Some(arg) => args::int(arg)?,
        None => default,
    };
    Ok(n.clamp(1, MAX_SIDE) as usize)
}

/// `rows` lines of `columns` diagonals, each leaning either way at random.
fn maze(columns: usize, rows: usize, rng: &mut impl Rng) -> String {
    let mut text = String::with_capacity(rows * (columns * 3 + 1));
    for _ in 0..rows {
        text.extend((0..columns).map(|_| if rng.gen() { '╱' } else { '╲' }));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn maze_has_the_asked_shape() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let text = maze(5, 3, &mut rng);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.chars().count() == 5));
        assert!(text.chars().all(|c| matches!(c, '╱' | '╲' | '\n')));
    }
}
