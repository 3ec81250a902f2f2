//! What the ACL engine knows about commands: their ids, full names, categories and
//! subcommands, copied once at start-up from the command table (which lives above
//! this module and hands the facts down). It owns no command behaviour.

use std::collections::HashMap;

/// One command or subcommand, as the rules see it.
#[derive(Debug, Clone)]
pub struct CommandFacts {
    /// The full name: `get`, or `config|get` for a subcommand.
    pub name: &'static str,
    /// The category bits of the command table.
    pub categories: u32,
    /// The container's id, for a subcommand.
    pub parent: Option<usize>,
    /// The ids of its subcommands, for a container.
    pub subcommands: Vec<usize>,
    /// Runs before authentication (AUTH, HELLO): never refused by a rule.
    pub no_auth: bool,
}

/// Every command by id (the command table's ids), and the category names.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    commands: Vec<CommandFacts>,
    by_name: HashMap<&'static str, usize>,
    /// (bit, name without `@`), in ACL CAT's order.
    categories: Vec<(u32, &'static str)>,
}

impl Catalog {
    /// `commands` indexed by id; `categories` as (bit, name), with or without `@`.
    pub fn new(commands: Vec<CommandFacts>, categories: &[(u32, &'static str)]) -> Catalog {
        let by_name = commands
            .iter()
            .enumerate()
            .map(|(id, c)| (c.name, id))
            .collect();
        let categories = categories
            .iter()
            .map(|&(bit, name)| (bit, name.trim_start_matches('@')))
            .collect();
        Catalog {
            commands,
            by_name,
            categories,
        }
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    pub fn get(&self, id: usize) -> &CommandFacts {
        &self.commands[id]
    }

    /// A command or `container|sub` by name, in any case.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name.to_ascii_lowercase().as_str())
            .copied()
    }

    /// The bit of a category name (without `@`), in any case.
    pub fn category(&self, name: &str) -> Option<u32> {
        self.categories
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|&(bit, _)| bit)
    }

    pub fn categories(&self) -> &[(u32, &'static str)] {
        &self.categories
    }

    /// Top-level commands, in table order.
    pub fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.commands.len()).filter(|&id| self.commands[id].parent.is_none())
    }
}
