//! PFSELFTEST: checks the machinery on this build: every register of the dense
//! layout stores and returns any value without disturbing its neighbours, a sparse
//! value (promoted to dense on the way) counts exactly as a dense one fed the same
//! elements, and the estimates stay within six standard errors.

use super::{add, cardinality, dense, new, to_dense, REGISTERS};

/// Elements added by the estimate check; checkpoints at each power of ten.
const ELEMENTS: u64 = 1_000_000;
const SPARSE_MAX_BYTES: u64 = 3000;

/// Run every check; the error is the text after `ERR ` in the reply.
pub fn run() -> Result<(), String> {
    registers_round_trip()?;
    estimates_hold()
}

/// xorshift64*: deterministic, good enough to scatter test values.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn registers_round_trip() -> Result<(), String> {
    let mut registers = vec![0u8; dense::BYTES];
    let mut expected = vec![0u8; REGISTERS];
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..10 {
        for (index, value) in expected.iter_mut().enumerate() {
            *value = (next_random(&mut state) & 63) as u8;
            dense::set(&mut registers, index, *value);
        }
        for (index, value) in expected.iter().enumerate() {
            if dense::get(&registers, index) != *value {
                return Err(format!("TESTFAILED Register error at {index}"));
            }
        }
    }
    Ok(())
}

fn estimates_hold() -> Result<(), String> {
    let mut sparse = new();
    let mut dense = new();
    to_dense(&mut dense).map_err(|_| "TESTFAILED cannot convert to dense".to_string())?;
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let salt = 0x5bd1_e995_u64;
    let mut checkpoint = 1;
    for j in 1..=ELEMENTS {
        let element = (j ^ salt).to_le_bytes();
        let corrupt = |_| "TESTFAILED corrupted HLL while adding".to_string();
        add(&mut sparse, &element, SPARSE_MAX_BYTES).map_err(corrupt)?;
        add(&mut dense, &element, SPARSE_MAX_BYTES).map_err(corrupt)?;
        if j != checkpoint {
            continue;
        }
        let count = cardinality(&dense).map_err(|_| "TESTFAILED corrupted dense HLL")?;
        if cardinality(&sparse) != Ok(count) {
            return Err(format!("TESTFAILED sparse and dense disagree at {j}"));
        }
        let max_error = if j == 10 {
            1
        } else {
            (relative_error * 6.0 * j as f64).ceil() as u64
        };
        if count.abs_diff(j) > max_error {
            return Err(format!(
                "TESTFAILED Too big error. card:{count} abserr:{}",
                count.abs_diff(j)
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn self_test_passes() {
        assert_eq!(super::run(), Ok(()));
    }
}
