//! hashes commands.

use super::table::Command;

pub const COMMANDS: &[Command] = &[];
