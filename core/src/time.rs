//! Time as the caller gives it: core never reads a clock.

use core::fmt;
use core::ops::{Add, Sub};
use core::time::Duration;

/// A monotonic instant: nanoseconds since an origin chosen by the caller.
///
/// The driver maps `std::time::Instant` onto it through an origin captured at
/// start-up; the simulator advances it by hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at the far end of the range.
    pub fn saturating_add(self, d: Duration) -> Instant {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(nanos))
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        let nanos = u64::try_from(d.as_nanos()).ok()?;
        self.0.checked_add(nanos).map(Instant)
    }

    /// `self - d`, or `None` before the origin.
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        let nanos = u64::try_from(d.as_nanos()).ok()?;
        self.0.checked_sub(nanos).map(Instant)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// Saturating: an instant past the end of the range is "never" in practice.
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturating at zero, so time going backwards never panics.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 / 1_000_000;
        let frac = (self.0 % 1_000_000) / 1_000;
        write!(f, "{ms}.{frac:03}ms")
    }
}
