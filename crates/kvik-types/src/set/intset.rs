//! The intset encoding: a set of integers kept as one sorted array, every member
//! stored in the narrowest width (16, 32 or 64 bits) that fits them all, as Redis's
//! intset. Membership is a binary search; insertion and removal shift the tail, which
//! is cheap at the sizes this encoding is used for (`set-max-intset-entries`, 512 by
//! default). The array grows one element at a time, so it holds no spare room.
//!
//! Like Redis, a set never narrows again once a wide member has made it wider.

/// What the three widths have in common.
trait Lane: Copy + Ord + Into<i64> + TryFrom<i64> {}

impl<T: Copy + Ord + Into<i64> + TryFrom<i64>> Lane for T {}

/// Sorted distinct integers in the narrowest width seen so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntSet {
    W16(Vec<i16>),
    W32(Vec<i32>),
    W64(Vec<i64>),
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet::W16(Vec::new())
    }
}

/// Where `value` is or would go in `lanes`; `None` when it cannot be stored in this
/// width at all (so it is not a member).
fn search<T: Lane>(lanes: &[T], value: i64) -> Option<Result<usize, usize>> {
    T::try_from(value).ok().map(|v| lanes.binary_search(&v))
}

fn insert_into<T: Lane>(lanes: &mut Vec<T>, value: T) -> bool {
    match lanes.binary_search(&value) {
        Ok(_) => false,
        Err(at) => {
            lanes.reserve_exact(1);
            lanes.insert(at, value);
            true
        }
    }
}

fn remove_from<T: Lane>(lanes: &mut Vec<T>, value: i64) -> bool {
    match search(lanes, value) {
        Some(Ok(at)) => {
            lanes.remove(at);
            true
        }
        _ => false,
    }
}

/// The same values in a wider lane type (every value fits: the target is wider).
fn widen<T: Lane, U: Lane>(lanes: &[T]) -> Vec<U> {
    lanes
        .iter()
        .map(|&v| U::try_from(v.into()).unwrap_or_else(|_| unreachable!("widening fits")))
        .collect()
}

impl IntSet {
    /// An empty intset whose members take `width` bytes (2, 4 or 8) or more.
    pub fn with_width(width: usize) -> IntSet {
        match width {
            0..=2 => IntSet::W16(Vec::new()),
            3..=4 => IntSet::W32(Vec::new()),
            _ => IntSet::W64(Vec::new()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            IntSet::W16(l) => l.len(),
            IntSet::W32(l) => l.len(),
            IntSet::W64(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, value: i64) -> bool {
        let found = match self {
            IntSet::W16(l) => search(l, value),
            IntSet::W32(l) => search(l, value),
            IntSet::W64(l) => search(l, value),
        };
        matches!(found, Some(Ok(_)))
    }

    /// The member at `index` in ascending order.
    pub fn get(&self, index: usize) -> i64 {
        match self {
            IntSet::W16(l) => l[index].into(),
            IntSet::W32(l) => l[index].into(),
            IntSet::W64(l) => l[index],
        }
    }

    /// Add `value`; false if it was already a member.
    pub fn insert(&mut self, value: i64) -> bool {
        self.widen_for(value);
        match self {
            IntSet::W16(l) => insert_into(l, value as i16),
            IntSet::W32(l) => insert_into(l, value as i32),
            IntSet::W64(l) => insert_into(l, value),
        }
    }

    /// Remove `value`; false if it was not a member.
    pub fn remove(&mut self, value: i64) -> bool {
        match self {
            IntSet::W16(l) => remove_from(l, value),
            IntSet::W32(l) => remove_from(l, value),
            IntSet::W64(l) => remove_from(l, value),
        }
    }

    /// Remove and return the member at `index`.
    pub fn remove_at(&mut self, index: usize) -> i64 {
        match self {
            IntSet::W16(l) => l.remove(index).into(),
            IntSet::W32(l) => l.remove(index).into(),
            IntSet::W64(l) => l.remove(index),
        }
    }

    /// Bytes per member in the current width.
    pub fn width(&self) -> usize {
        match self {
            IntSet::W16(_) => 2,
            IntSet::W32(_) => 4,
            IntSet::W64(_) => 8,
        }
    }

    pub fn heap_size(&self) -> usize {
        let capacity = match self {
            IntSet::W16(l) => l.capacity(),
            IntSet::W32(l) => l.capacity(),
            IntSet::W64(l) => l.capacity(),
        };
        capacity * self.width()
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Make the array wide enough to hold `value`.
    fn widen_for(&mut self, value: i64) {
        let needed = if i16::try_from(value).is_ok() {
            2
        } else if i32::try_from(value).is_ok() {
            4
        } else {
            8
        };
        if needed <= self.width() {
            return;
        }
        *self = match (&*self, needed) {
            (IntSet::W16(l), 4) => IntSet::W32(widen(l)),
            (IntSet::W16(l), _) => IntSet::W64(widen(l)),
            (IntSet::W32(l), _) => IntSet::W64(widen(l)),
            (IntSet::W64(_), _) => unreachable!("nothing is wider than 64 bits"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_only_when_needed_and_stays_sorted() {
        let mut s = IntSet::default();
        assert!(s.insert(5));
        assert!(s.insert(-3));
        assert!(!s.insert(5));
        assert_eq!(s.width(), 2);
        assert!(s.insert(70_000));
        assert_eq!(s.width(), 4);
        assert!(s.insert(i64::MIN));
        assert_eq!(s.width(), 8);
        assert_eq!(s.iter().collect::<Vec<_>>(), [i64::MIN, -3, 5, 70_000]);
        assert!(s.remove(i64::MIN));
        assert_eq!(s.width(), 8, "never narrows");
        assert!(!s.contains(i64::MIN));
        assert!(s.contains(70_000));
    }

    #[test]
    fn values_wider_than_the_array_are_not_members() {
        let mut s = IntSet::default();
        s.insert(1);
        assert!(!s.contains(1 << 40));
        assert!(!s.remove(1 << 40));
        assert_eq!(s.remove_at(0), 1);
        assert!(s.is_empty());
    }

    #[test]
    fn holds_no_spare_room() {
        let mut s = IntSet::default();
        for v in 0..100 {
            s.insert(v);
        }
        assert_eq!(s.heap_size(), 200);
    }
}
