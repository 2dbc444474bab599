//! [`Dice`]: the one source of randomness of a `SimFs`, a ChaCha8 stream seeded by the
//! caller. Never the OS, so a seed replays exactly.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::time::Duration;

/// Deterministic random draws.
#[derive(Clone, Debug)]
pub struct Dice {
    rng: ChaCha8Rng,
}

impl Dice {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`. Draws nothing when `p` is 0 or 1, so a disabled fault
    /// does not shift the stream of the others.
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.unit() < p
        }
    }

    /// Uniform in `0..n`; `n` must be positive. Multiply-shift: the bias is below 2^-64·n,
    /// irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no value to return");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in the inclusive range.
    pub fn range(&mut self, range: std::ops::RangeInclusive<u64>) -> u64 {
        let (lo, hi) = (*range.start(), *range.end());
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[min, max]`, nanosecond resolution.
    pub fn duration(&mut self, min: Duration, max: Duration) -> Duration {
        assert!(min <= max);
        let span = u64::try_from((max - min).as_nanos()).unwrap_or(u64::MAX);
        min + Duration::from_nanos(self.below(span.saturating_add(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_ranges_hold() {
        let mut a = Dice::new(7);
        let mut b = Dice::new(7);
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
        let mut c = Dice::new(8);
        let differs = (0..16).any(|_| a.next_u64() != c.next_u64());
        assert!(differs);
    }

    #[test]
    fn chance_extremes_draw_nothing() {
        let mut a = Dice::new(1);
        let mut b = Dice::new(1);
        assert!(!a.chance(0.0));
        assert!(a.chance(1.0));
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
