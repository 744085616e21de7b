//! Seeded random streams. One scene seed feeds every random source; each subsystem (and each
//! robot within it) gets its own stream, so adding a draw in one place never shifts another's.

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

/// The seed of an environment's scene (after any `--seed` override), kept in a
/// [`crate::sim::PerEnv`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimSeed(pub u64);

/// A random stream: a fixed, documented algorithm (xoshiro256++), so runs reproduce across
/// machines and releases of `rand`.
pub type SimRng = Xoshiro256PlusPlus;

/// SplitMix64 finaliser: spreads nearby inputs over the whole 64-bit range.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of stream `index` of `subsystem` under scene seed `seed`.
pub fn stream_seed(seed: u64, subsystem: &str, index: u64) -> u64 {
    let name = crate::sim::hash::fnv1a(subsystem.as_bytes());
    mix64(mix64(seed ^ name).wrapping_add(index))
}

/// A fresh random stream for `subsystem`, number `index`.
pub fn stream(seed: u64, subsystem: &str, index: u64) -> SimRng {
    SimRng::seed_from_u64(stream_seed(seed, subsystem, index))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| stream(7, "wander", 0).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(stream(7, "wander", 0).next_u64(), stream(7, "wander", 1).next_u64());
        assert_ne!(stream(7, "wander", 0).next_u64(), stream(7, "comms", 0).next_u64());
        assert_ne!(stream(7, "wander", 0).next_u64(), stream(8, "wander", 0).next_u64());
    }
}
