//! Rate buckets as GCRA (the generic cell rate algorithm): one number per bucket, the theoretical arrival
//! time, gives a smooth limit of `limit` per `period` with bursts up to `limit`, and an exact retry-after.

/// The outcome of one hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allowed { remaining: u32 },
    Limited { retry_after_ms: i64 },
}

/// A bucket's state: the theoretical arrival time of the next request, unix ms (0 = fresh bucket).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub tat_ms: i64,
}

impl Bucket {
    /// Counts one request at `now_ms` against `limit` per `period_ms`; the state only moves when allowed.
    pub fn hit(&mut self, now_ms: i64, limit: u32, period_ms: i64) -> Decision {
        let limit = limit.max(1) as i64;
        let interval = (period_ms / limit).max(1);
        let tat = self.tat_ms.max(now_ms);
        let new_tat = tat + interval;
        let allow_at = new_tat - period_ms;
        if allow_at > now_ms {
            return Decision::Limited { retry_after_ms: allow_at - now_ms };
        }
        self.tat_ms = new_tat;
        let remaining = (now_ms + period_ms - new_tat) / interval;
        Decision::Allowed { remaining: remaining.max(0) as u32 }
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
        assert!(matches!(b.hit(12_000, 5, 60_000), Decision::Allowed { remaining: 0 }));
        assert_eq!(b.hit(60_000 + 12_000, 5, 60_000), Decision::Allowed { remaining: 4 });
    }
}
