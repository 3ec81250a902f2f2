//! The connections of one worker thread, by token.
//!
//! A connection is *checked out* while it runs commands: it leaves the table for that
//! time but keeps its slot, so that a long script it runs can serve the thread's other
//! connections meanwhile ([`super::busy`]) without anything reaching the one that runs
//! it, and without a connection accepted meanwhile taking its token.

use super::conn::Conn;
use slab::Slab;

/// Boxed, so that checking a connection out and in moves a pointer, not the state.
type Slot = Option<Box<Conn>>;

#[derive(Default)]
pub struct Conns {
    /// `None`: the connection of this slot is checked out.
    slots: Slab<Slot>,
}

impl Conns {
    pub fn get(&self, token: usize) -> Option<&Conn> {
        self.slots.get(token)?.as_deref()
    }

    pub fn get_mut(&mut self, token: usize) -> Option<&mut Conn> {
        self.slots.get_mut(token)?.as_deref_mut()
    }

    /// Is the connection at `token` running commands right now?
    pub fn is_checked_out(&self, token: usize) -> bool {
        self.slots.get(token).is_some_and(Option::is_none)
    }

    /// The connections present in the table (not the one checked out).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Conn)> {
        self.slots
            .iter()
            .filter_map(|(token, slot)| Some((token, slot.as_deref()?)))
    }

    /// The connections present in the table, to change them.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut Conn)> {
        self.slots
            .iter_mut()
            .filter_map(|(token, slot)| Some((token, slot.as_deref_mut()?)))
    }

    /// The token the next [`Conns::insert`] will give.
    pub fn vacant_key(&self) -> usize {
        self.slots.vacant_key()
    }

    pub fn insert(&mut self, conn: Conn) -> usize {
        self.slots.insert(Some(Box::new(conn)))
    }

    /// Take a connection out for good (closing it). A checked-out one stays.
    pub fn remove(&mut self, token: usize) -> Option<Box<Conn>> {
        self.get(token)?;
        self.slots.remove(token)
    }

    /// Take the connection at `token` out to run it; its slot stays reserved until
    /// [`Conns::check_in`].
    pub fn check_out(&mut self, token: usize) -> Option<Box<Conn>> {
        self.slots.get_mut(token)?.take()
    }

    pub fn check_in(&mut self, token: usize, conn: Box<Conn>) {
        self.slots[token] = Some(conn);
    }
}
