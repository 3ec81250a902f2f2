//! The partial quicksort Redis uses when a sorted search returns fewer members
//! than it found (COUNT): only the parts of the array that overlap the wanted
//! ranks get sorted. It is not stable, so members at equal distances come out in
//! the order this exact algorithm leaves them (Bentley and McIlroy's three-way
//! partitioning with median-of-three pivots, insertion sort below seven
//! elements); it is reproduced here step for step for that reason.

use std::cmp::Ordering;

/// Sort `v` far enough that ranks `first..=last` hold what a full sort by `cmp`
/// would put there, in order.
pub fn partial_sort<T>(v: &mut [T], first: usize, last: usize, cmp: impl Fn(&T, &T) -> Ordering) {
    sort_segment(v, 0, v.len(), (first, last), &cmp);
}

/// Does the segment `start..end` hold any of the ranks `wanted` (inclusive)?
fn overlaps(start: usize, end: usize, wanted: (usize, usize)) -> bool {
    let (lo, hi) = wanted;
    !((lo < start && hi < start) || (lo >= end && hi >= end))
}

/// The index of the median of three elements.
fn median_of_three<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
) -> usize {
    let less = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let greater = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if less(a, b) {
        if less(b, c) {
            b
        } else if less(a, c) {
            c
        } else {
            a
        }
    } else if greater(b, c) {
        b
    } else if less(a, c) {
        a
    } else {
        c
    }
}

/// Swap the `count` elements from `a` with the `count` elements from `b`.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, count: usize) {
    for i in 0..count {
        v.swap(a + i, b + i);
    }
}

/// Sort the `n` elements from `start` as far as `wanted` needs.
fn sort_segment<T>(
    v: &mut [T],
    mut start: usize,
    mut n: usize,
    wanted: (usize, usize),
    cmp: &impl Fn(&T, &T) -> Ordering,
) {
    loop {
        if n < 7 {
            insertion_sort(v, start, n, cmp);
            return;
        }
        let pivot = choose_pivot(v, start, n, cmp);
        v.swap(start, pivot);
        // [start+1, pa): equal to the pivot; [pa, pb): less; (pc, pd]: greater;
        // (pd, end): equal. Equal runs are moved to the middle afterwards.
        let (mut pa, mut pb) = (start + 1, start + 1);
        let (mut pc, mut pd) = (start + n - 1, start + n - 1);
        loop {
            while pb <= pc {
                match cmp(&v[pb], &v[start]) {
                    Ordering::Greater => break,
                    Ordering::Equal => {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    Ordering::Less => {}
                }
                pb += 1;
            }
            while pb <= pc {
                match cmp(&v[pc], &v[start]) {
                    Ordering::Less => break,
                    Ordering::Equal => {
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    Ordering::Greater => {}
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let end = start + n;
        let run = (pa - start).min(pb - pa);
        swap_runs(v, start, pb - run, run);
        let run = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - run, run);
        let smaller = pb - pa;
        if smaller > 1 && overlaps(start, start + smaller, wanted) {
            sort_segment(v, start, smaller, wanted, cmp);
        }
        let larger = pd - pc;
        if larger <= 1 {
            return;
        }
        start = end - larger;
        n = larger;
        if !overlaps(start, start + n, wanted) {
            return;
        }
    }
}

/// The middle element; above seven elements the median of the first, middle and
/// last; above forty the median of three such medians.
fn choose_pivot<T>(v: &[T], start: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let mut middle = start + n / 2;
    if n > 7 {
        let mut low = start;
        let mut high = start + n - 1;
        if n > 40 {
            let d = n / 8;
            low = median_of_three(v, low, low + d, low + 2 * d, cmp);
            middle = median_of_three(v, middle - d, middle, middle + d, cmp);
            high = median_of_three(v, high - 2 * d, high - d, high, cmp);
        }
        middle = median_of_three(v, low, middle, high, cmp);
    }
    middle
}

fn insertion_sort<T>(v: &mut [T], start: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
    for m in start + 1..start + n {
        let mut l = m;
        while l > start && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
            v.swap(l, l - 1);
            l -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::partial_sort;

    #[test]
    fn the_wanted_ranks_come_out_sorted() {
        let mut seed = 7u64;
        for len in [0usize, 1, 5, 7, 8, 30, 41, 200] {
            for first_n in [1usize, 3, 10] {
                let mut v: Vec<u32> = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (seed >> 33) as u32 % 50
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort();
                let last = first_n.min(len).saturating_sub(1);
                partial_sort(&mut v, 0, last, |a, b| a.cmp(b));
                let n = first_n.min(len);
                assert_eq!(v[..n], sorted[..n], "len {len}, first {first_n}");
            }
        }
    }
}
