//! The trajectory hash: FNV-1a over every robot's pose at every step, in robot order. Two runs
//! with the same hash followed the same trajectory bit for bit.

use bevy::prelude::*;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of a byte string (stable across Rust versions, unlike `DefaultHasher`).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(bytes);
    h.0
}

/// An incremental FNV-1a hasher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(FNV_OFFSET)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    pub fn write_u64(&mut self, x: u64) {
        self.write(&x.to_le_bytes());
    }

    pub fn write_f32(&mut self, x: f32) {
        self.write(&x.to_bits().to_le_bytes());
    }
}

/// The running trajectory hash of an environment's scene (kept in a
/// [`crate::sim::PerEnv`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrajectoryHash(pub Fnv);

impl TrajectoryHash {
    /// Sixteen lowercase hex digits, as printed by `crsim run`.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn hex_has_sixteen_digits() {
        assert_eq!(TrajectoryHash(Fnv(0xab)).hex(), "00000000000000ab");
    }
}
