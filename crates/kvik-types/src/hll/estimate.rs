//! From registers to a cardinality: the estimator of Otmar Ertl's "New cardinality
//! estimation algorithms for HyperLogLog sketches" (arXiv:1702.01284), which Redis 7.0
//! uses. It reads only the histogram of register values, so it costs the same for any
//! encoding once the histogram is built. Every operation is done in the same order
//! as Redis so that both servers print the same number.

use super::{Q, REGISTERS};

/// How many registers hold each value. Registers can hold up to 63 (six bits), though
/// only 0..=Q+1 carry information; the rest are ignored, as Redis ignores them.
pub type Histogram = [u32; 64];

/// Counts register values eight at a time into separate histograms, then adds them
/// up. Neighbouring registers often hold the same value, and bumping one counter
/// back to back makes each increment wait for the one before.
pub struct Tally {
    lanes: [Histogram; 8],
}

impl Tally {
    pub fn new() -> Tally {
        Tally {
            lanes: [[0; 64]; 8],
        }
    }

    /// Count eight register values (each below 64).
    pub fn add(&mut self, values: [u8; 8]) {
        for (lane, value) in self.lanes.iter_mut().zip(values) {
            lane[usize::from(value & 63)] += 1;
        }
    }

    pub fn histogram(&self) -> Histogram {
        let mut total: Histogram = [0; 64];
        for lane in &self.lanes {
            for (sum, count) in total.iter_mut().zip(lane) {
                *sum += count;
            }
        }
        total
    }
}

/// 1 / (2 ln 2): the bias correction for an unbounded number of registers.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The cardinality estimate for a register histogram.
pub fn cardinality(histogram: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histogram[Q + 1])) / m);
    for count in histogram[1..=Q].iter().rev() {
        z += f64::from(*count);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    // All registers zero makes z infinite and the estimate 0.
    (ALPHA_INF * m * m / z).round() as u64
}

/// The correction for registers still at zero (the paper's sigma function).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if z == previous {
            return z;
        }
    }
}

/// The correction for registers at the largest possible value (the paper's tau).
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        let gap = 1.0 - x;
        z -= gap * gap * y;
        if z == previous {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_registers_count_zero() {
        let mut h: Histogram = [0; 64];
        h[0] = REGISTERS as u32;
        assert_eq!(cardinality(&h), 0);
    }

    #[test]
    fn one_register_set_counts_one() {
        let mut h: Histogram = [0; 64];
        h[0] = REGISTERS as u32 - 1;
        h[1] = 1;
        assert_eq!(cardinality(&h), 1);
    }
}
