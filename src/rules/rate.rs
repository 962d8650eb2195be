//! Rate buckets as GCRA (the generic cell rate algorithm): one number per bucket, the theoretical arrival
//! time, gives a smooth limit of `limit` per `period` with bursts up to `limit`, and an exact retry-after.
//!
//! A bucket's object can hand out several tokens at once ([`Bucket::take`]): a Worker that leases a few
//! spends them without asking again ([`Leases`]). Leased tokens count as spent, so the limit still holds
//! across every Worker; a lease unused within [`LEASE_MS`] is dropped, never given back, so leasing can
//! only under-serve a key, by at most a lease per Worker a second.

use std::collections::HashMap;

/// How long leased tokens stay spendable.
pub const LEASE_MS: i64 = 1_000;

/// The outcome of one hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allowed {
        remaining: u32,
        /// Tokens taken (at least 1, at most what was asked).
        #[serde(default = "one")]
        granted: u32,
    },
    Limited {
        retry_after_ms: i64,
    },
}

fn one() -> u32 {
    1
}

/// How many tokens to lease at once for a limit per minute: one (no leasing) for small limits, which
/// must be exact call by call; up to 20 for large ones.
pub fn lease_size(limit: u32) -> u32 {
    (limit / 60).clamp(1, 20)
}

/// Tokens a Worker leased, by bucket.
#[derive(Debug, Default)]
pub struct Leases(HashMap<String, (u32, i64)>);

impl Leases {
    /// Spends one leased token of `bucket`, if one is left and still good.
    pub fn spend(&mut self, bucket: &str, now_ms: i64) -> bool {
        match self.0.get_mut(bucket) {
            Some((left, until)) if *left > 0 && now_ms < *until => {
                *left -= 1;
                true
            }
            Some(_) => {
                self.0.remove(bucket);
                false
            }
            None => false,
        }
    }

    /// Keeps `tokens` of `bucket` to spend until `now_ms + LEASE_MS`.
    pub fn keep(&mut self, bucket: &str, tokens: u32, now_ms: i64) {
        // Spent-out or stale leases of other buckets go too, so the map stays small.
        self.0.retain(|_, (left, until)| *left > 0 && now_ms < *until);
        if tokens > 0 {
            self.0.insert(bucket.to_owned(), (tokens, now_ms + LEASE_MS));
        }
    }
}

/// A bucket's state: the theoretical arrival time of the next request, unix ms (0 = fresh bucket).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub tat_ms: i64,
}

impl Bucket {
    /// Counts one request at `now_ms` against `limit` per `period_ms`; the state only moves when allowed.
    pub fn hit(&mut self, now_ms: i64, limit: u32, period_ms: i64) -> Decision {
        self.take(now_ms, limit, period_ms, 1)
    }

    /// Takes up to `want` tokens at once (at least one, or none and `Limited`).
    pub fn take(&mut self, now_ms: i64, limit: u32, period_ms: i64, want: u32) -> Decision {
        let limit = limit.max(1) as i64;
        let interval = (period_ms / limit).max(1);
        let tat = self.tat_ms.max(now_ms);
        let room = (now_ms + period_ms - tat) / interval;
        if room < 1 {
            return Decision::Limited { retry_after_ms: tat + interval - period_ms - now_ms };
        }
        let granted = room.min(want.max(1) as i64);
        self.tat_ms = tat + granted * interval;
        Decision::Allowed { remaining: (room - granted) as u32, granted: granted as u32 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_plus_one_request_in_a_minute_is_refused() {
        let mut b = Bucket::default();
        let t = 1_000_000;
        for i in 0..600 {
            assert!(matches!(b.hit(t, 600, 60_000), Decision::Allowed { .. }), "hit {i}");
        }
        match b.hit(t, 600, 60_000) {
            Decision::Limited { retry_after_ms } => assert_eq!(retry_after_ms, 100),
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn capacity_returns_as_time_passes() {
        let mut b = Bucket::default();
        for _ in 0..5 {
            b.hit(0, 5, 60_000);
        }
        assert!(matches!(b.hit(0, 5, 60_000), Decision::Limited { .. }));
        assert!(matches!(b.hit(12_000, 5, 60_000), Decision::Allowed { remaining: 0, .. }));
        assert_eq!(b.hit(60_000 + 12_000, 5, 60_000), Decision::Allowed { remaining: 4, granted: 1 });
    }

    #[test]
    fn taking_many_at_once_spends_them_all_and_never_more_than_the_limit() {
        let mut b = Bucket::default();
        assert_eq!(b.take(0, 600, 60_000, 20), Decision::Allowed { remaining: 580, granted: 20 });
        let mut granted = 20;
        while let Decision::Allowed { granted: g, .. } = b.take(0, 600, 60_000, 20) {
            granted += g;
        }
        assert_eq!(granted, 600, "leases count against the limit");
        assert_eq!(b.take(0, 600, 60_000, 20), Decision::Limited { retry_after_ms: 100 });
        assert_eq!(b.take(250, 600, 60_000, 20), Decision::Allowed { remaining: 0, granted: 2 }, "what there is");
    }

    #[test]
    fn leases_are_spent_locally_until_gone_or_stale() {
        assert_eq!((lease_size(5), lease_size(600), lease_size(100_000_000)), (1, 10, 20));
        let mut l = Leases::default();
        assert!(!l.spend("k", 0));
        l.keep("k", 2, 0);
        assert!(l.spend("k", 10) && l.spend("k", 20));
        assert!(!l.spend("k", 30), "spent out");
        l.keep("k", 5, 100);
        assert!(!l.spend("k", 100 + LEASE_MS), "stale");
        l.keep("a", 1, 0);
        l.keep("b", 1, 2 * LEASE_MS);
        assert_eq!(l.0.len(), 1, "stale leases of other buckets are dropped");
    }
}
