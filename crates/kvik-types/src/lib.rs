//! kvik-types: values, what a key maps to, one enum over the data types and their
//! encodings.
//!
//! Owns the in-memory representation of each type and the encoding names OBJECT
//! ENCODING reports. Must not touch locking, expiry or replication: the keyspace
//! decides where values live, commands decide what to do with them.
//!
//! Layer rule: imports `kvik-util` and nothing else of kvik's own (not the RDB codec,
//! not the keyspace, not the server); `kvik-rdb` and `kvik-server` sit above it.

mod bytes;
pub mod cron;
mod encoding;
pub mod hash;
pub mod hll;
pub mod list;
pub mod member_expiry;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

pub use bytes::SmallBytes;
pub use encoding::EncodingLimits;

/// The value held by a key. 24 bytes: small strings live inline, everything larger
/// behind one pointer, so an entry stays small.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string: integer, inline, embedded or raw (see [`string`]).
    Str(string::StrValue),
    List(Box<list::List>),
    Hash(Box<hash::Hash>),
    Set(Box<set::Set>),
    ZSet(Box<zset::ZSet>),
    Stream(Box<stream::Stream>),
    /// KeyDB's scheduled script (KEYDB.CRON).
    Cron(Box<cron::CronJob>),
}

/// The type names TYPE reports.
impl Value {
    /// Offer the value's own allocations to `relocator` (active defragmentation): a
    /// string's bytes; for a collection, the box that holds it (its nodes and tables
    /// stay where they are).
    pub fn relocate(&mut self, relocator: &mut dyn kvik_util::relocate::Relocator) {
        use kvik_util::relocate::relocate_box;
        match self {
            Value::Str(s) => s.relocate(relocator),
            Value::List(l) => relocate_box(l, relocator),
            Value::Hash(h) => relocate_box(h, relocator),
            Value::Set(s) => relocate_box(s, relocator),
            Value::ZSet(z) => relocate_box(z, relocator),
            Value::Stream(s) => relocate_box(s, relocator),
            Value::Cron(j) => relocate_box(j, relocator),
        };
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
            Value::Cron(_) => "cron",
        }
    }

    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
            Value::List(l) => l.encoding_name(),
            Value::Hash(h) => h.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
            Value::Stream(_) => "stream",
            Value::Cron(_) => "cron",
        }
    }

    pub fn as_str(&self) -> Option<&string::StrValue> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_str_mut(&mut self) -> Option<&mut string::StrValue> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The reference count Redis reports for this value (OBJECT REFCOUNT, DEBUG
    /// OBJECT): integers 0..10000 are shared objects that read as never freed
    /// (`i32::MAX`), unless `shared_integers` is off; every other value has its own.
    pub fn refcount(&self, shared_integers: bool) -> i64 {
        match self {
            Value::Str(string::StrValue::Int(n)) if shared_integers && (0..10_000).contains(n) => {
                i32::MAX.into()
            }
            _ => 1,
        }
    }

    /// The value as a collection whose members can expire (set, hash, sorted set).
    pub fn members(&self) -> Option<&dyn member_expiry::MemberExpiry> {
        match self {
            Value::Hash(h) => Some(&**h),
            Value::Set(s) => Some(&**s),
            Value::ZSet(z) => Some(&**z),
            _ => None,
        }
    }

    pub fn members_mut(&mut self) -> Option<&mut dyn member_expiry::MemberExpiry> {
        match self {
            Value::Hash(h) => Some(&mut **h),
            Value::Set(s) => Some(&mut **s),
            Value::ZSet(z) => Some(&mut **z),
            _ => None,
        }
    }

    /// The earliest member deadline, for values that have one.
    #[inline]
    pub fn next_member_deadline(&self) -> Option<u64> {
        self.members()?.next_deadline()
    }

    /// Approximate heap bytes owned by this value, for freeing decisions and MEMORY.
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(l) => l.heap_size(),
            Value::Hash(h) => h.heap_size(),
            Value::Set(s) => s.heap_size(),
            Value::ZSet(z) => z.heap_size(),
            Value::Stream(s) => s.heap_size(),
            Value::Cron(j) => j.heap_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn value_is_small() {
        assert!(std::mem::size_of::<super::Value>() <= 24);
    }
}
