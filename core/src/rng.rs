//! The one source of randomness: a PRNG seeded by the caller.
//!
//! Transports seed it from the OS and the simulator from the test seed, so a
//! run is reproducible from its seed.

use alloc::string::String;
use core::time::Duration;

/// A seeded PRNG (wyrand from `fastrand`).
#[derive(Debug, Clone)]
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A generator that yields the same sequence for the same seed.
    pub fn with_seed(seed: u64) -> Self {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// The seed of child `index` of a machine seeded with `seed` (SplitMix64
    /// over the pair): children of one parent get unrelated streams (recipe
    /// members never share protection UUIDs, which the orphan lookup relies
    /// on) and the same pair always the same seed. The one way child seeds
    /// are made.
    pub fn fork(seed: u64, index: u64) -> u64 {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index.wrapping_add(1)));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A random `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// A uniformly random duration in `[0, max]`.
    pub fn duration_up_to(&mut self, max: Duration) -> Duration {
        let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(self.0.u64(0..=nanos))
    }

    /// Shuffles `items` in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        self.0.shuffle(items);
    }

    /// A random version-4 UUID in canonical lowercase form, as Curator's
    /// protected-mode prefix uses (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
    pub fn uuid_v4(&mut self) -> String {
        let mut out = String::with_capacity(UUID_LEN);
        self.push_uuid_v4(&mut out);
        out
    }

    /// Appends a random version-4 UUID ([`Rng::uuid_v4`]) to `out`.
    pub fn push_uuid_v4(&mut self, out: &mut String) {
        let mut bytes = [0u8; 16];
        self.0.fill(&mut bytes);
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let mut text = [0u8; UUID_LEN];
        let mut at = 0;
        for (i, b) in bytes.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                if let Some(slot) = text.get_mut(at) {
                    *slot = b'-';
                }
                at += 1;
            }
            for nibble in [b >> 4, b & 0xf] {
                if let (Some(slot), Some(digit)) = (text.get_mut(at), HEX.get(usize::from(nibble))) {
                    *slot = *digit;
                }
                at += 1;
            }
        }
        // Hex digits and dashes only: always UTF-8.
        out.push_str(core::str::from_utf8(&text).unwrap_or_default());
    }
}

/// Characters in a canonical UUID.
const UUID_LEN: usize = 36;
const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::with_seed(7);
        let mut b = Rng::with_seed(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::with_seed(7).next_u64(), Rng::with_seed(8).next_u64());
    }

    #[test]
    fn uuid_is_canonical_v4() {
        let mut rng = Rng::with_seed(1);
        for _ in 0..200 {
            let u = rng.uuid_v4();
            assert_eq!(u.len(), 36);
            let b = u.as_bytes();
            for (i, c) in b.iter().enumerate() {
                if matches!(i, 8 | 13 | 18 | 23) {
                    assert_eq!(*c, b'-');
                } else {
                    assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase(), "{u}");
                }
            }
            assert_eq!(b[14], b'4');
            assert!(matches!(b[19], b'8' | b'9' | b'a' | b'b'), "{u}");
        }
    }

    #[test]
    fn duration_up_to_stays_in_range() {
        let mut rng = Rng::with_seed(3);
        let max = Duration::from_millis(250);
        for _ in 0..1000 {
            assert!(rng.duration_up_to(max) <= max);
        }
        assert_eq!(rng.duration_up_to(Duration::ZERO), Duration::ZERO);
    }
}
