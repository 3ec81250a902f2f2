//! The bytes the allocator really reserves for a request, for the memory figures
//! that count allocations one by one (a hash's pairs, MEMORY USAGE's entries).

/// jemalloc's size class for `n` bytes: steps of 8 and 16 bytes up to 128, then
/// four classes per doubling. A short pair of 22 bytes takes 32, which is most of a
/// small field's cost.
pub fn size_class(n: usize) -> usize {
    match n {
        0..=16 => n.next_multiple_of(8),
        17..=128 => n.next_multiple_of(16),
        _ => n.next_multiple_of(n.next_power_of_two() / 8),
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_follow_jemalloc() {
        let classes = [(1, 8), (9, 16), (22, 32), (33, 48), (128, 128), (129, 160)];
        for (n, class) in classes
            .into_iter()
            .chain([(200, 224), (300, 320), (4097, 5120)])
        {
            assert_eq!(size_class(n), class, "{n}");
        }
    }
}
