//! `rename-command`: the names clients call commands by, when the config renamed
//! or removed some. Names only: the command door maps a name through here before
//! looking it up in the table, so a renamed command answers to its new name alone
//! and a removed one (renamed to "") to none.

use std::collections::{HashMap, HashSet};

/// What a name a client sent stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named<'r> {
    /// Not renamed: look the name up as it is.
    AsIs,
    /// A new name: the command it is the new name of.
    Renamed(&'r str),
    /// An original name renamed away or removed: no command.
    Hidden,
}

/// The renames of the config, by lowercase name.
#[derive(Debug, Default)]
pub struct Renames {
    /// New name -> original name.
    to_original: HashMap<Vec<u8>, String>,
    /// Original names that no longer answer.
    hidden: HashSet<Vec<u8>>,
}

impl Renames {
    /// From the `rename-command` directives, in order: (original, new; "" removes).
    pub fn new(directives: &[(String, String)]) -> Renames {
        let mut renames = Renames::default();
        for (original, new) in directives {
            let original = original.to_ascii_lowercase();
            renames.hidden.insert(original.as_bytes().to_vec());
            if !new.is_empty() {
                let new = new.to_ascii_lowercase().into_bytes();
                renames.hidden.remove(&new);
                renames.to_original.insert(new, original);
            }
        }
        renames
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty()
    }

    /// What `name` (as sent, any case) stands for.
    pub fn resolve(&self, name: &[u8]) -> Named<'_> {
        let lower = name.to_ascii_lowercase();
        if let Some(original) = self.to_original.get(&lower) {
            return Named::Renamed(original);
        }
        if self.hidden.contains(&lower) {
            return Named::Hidden;
        }
        Named::AsIs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_and_removed_names() {
        let r = Renames::new(&[
            ("CONFIG".into(), "cfg".into()),
            ("flushall".into(), String::new()),
        ]);
        assert_eq!(r.resolve(b"CFG"), Named::Renamed("config"));
        assert_eq!(r.resolve(b"config"), Named::Hidden);
        assert_eq!(r.resolve(b"FlushAll"), Named::Hidden);
        assert_eq!(r.resolve(b"get"), Named::AsIs);
        assert!(Renames::new(&[]).is_empty());
    }
}
