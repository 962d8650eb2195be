//! Rate limits as an exact sliding-window log: a call passes when fewer than [`capacity`] calls passed in
//! the `period` before it. That is the limit's own wording ("600 a minute" means in any minute), so both
//! promises hold by construction, checked by the simulations below:
//! - in any window of `period`, at most `capacity(limit)` calls pass: the limit plus 1 % (rounded down),
//!   which absorbs the jitter between a client pacing itself and the limiter seeing its calls;
//! - a client whose calls reach the limiter at or under the limit is never refused, however many it has
//!   in flight, since every refusal means `capacity` calls already passed in the window.
//!
//! GCRA with a burst equal to the limit let nearly twice the limit through in a minute, and tokens leased
//! to Workers lapsed unused and refused paced clients; neither survives here. Each hit is one trip to the
//! bucket's object, which keeps the log; reads run beside that trip (see `ops::invoke`).
//! Hand-written: limiter crates keep their state in process memory, and a Worker's isolates share none.

use std::collections::VecDeque;

/// The outcome of one hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Passed; `remaining` more may pass in the window now.
    Allowed { remaining: u32 },
    /// Refused; the earliest moment another call passes is `retry_after_ms` from now.
    Limited { retry_after_ms: i64 },
}

/// How many calls pass in one window: the limit and 1 % more, rounded down (none extra below 100).
pub fn capacity(limit: u32) -> usize {
    let limit = limit.max(1) as usize;
    limit + limit / 100
}

/// A bucket's log: the times of the calls that passed within the last window, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    passed: VecDeque<i64>,
}

impl Window {
    /// A log read back from storage (any order).
    pub fn from_times(mut times: Vec<i64>) -> Self {
        times.sort_unstable();
        Self { passed: times.into() }
    }

    /// Counts one call at `now_ms` against `limit` per `period_ms`. The log only grows when the call
    /// passes; `forgotten` tells how many old entries fell out of the window (to delete them from storage).
    pub fn hit(&mut self, now_ms: i64, limit: u32, period_ms: i64) -> Hit {
        let before = self.passed.len();
        while self.passed.front().is_some_and(|&t| t <= now_ms - period_ms) {
            self.passed.pop_front();
        }
        let forgotten = before - self.passed.len();
        let cap = capacity(limit);
        let decision = if self.passed.len() < cap {
            // Times never go backwards in the log, so the oldest is always at the front.
            let at = self.passed.back().map_or(now_ms, |&last| last.max(now_ms));
            self.passed.push_back(at);
            Decision::Allowed { remaining: (cap - self.passed.len()) as u32 }
        } else {
            // The call `cap` places from the end must leave the window before another fits.
            let blocking = self.passed[self.passed.len() - cap];
            Decision::Limited { retry_after_ms: (blocking + period_ms - now_ms).max(1) }
        };
        Hit { decision, forgotten }
    }

    /// The times in the log, oldest first.
    pub fn times(&self) -> impl Iterator<Item = i64> + '_ {
        self.passed.iter().copied()
    }
}

/// What [`Window::hit`] decided, and how many old entries it dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub decision: Decision,
    pub forgotten: usize,
}

/// A wait as people read it, exact to the millisecond: `0.017 s`, `1.5 s`, `12 s`.
pub fn seconds(ms: i64) -> String {
    let ms = ms.max(0);
    let fraction = format!("{:03}", ms % 1000);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{} s", ms / 1000)
    } else {
        format!("{}.{fraction} s", ms / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;

    /// A small deterministic generator (xorshift64*), so the simulations need no crate and replay exactly.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: i64) -> i64 {
            (self.next() % n.max(1) as u64) as i64
        }
    }

    /// The most passes in any window `[t, t + period)`.
    fn busiest_window(passes: &[i64], period: i64) -> usize {
        let mut sorted = passes.to_vec();
        sorted.sort_unstable();
        let mut most = 0;
        let mut start = 0;
        for end in 0..sorted.len() {
            while sorted[end] - sorted[start] >= period {
                start += 1;
            }
            most = most.max(end - start + 1);
        }
        most
    }

    fn run(arrivals: &[i64], limit: u32) -> (Vec<i64>, Vec<(i64, i64)>) {
        let mut w = Window::default();
        let (mut passed, mut refused) = (vec![], vec![]);
        for &t in arrivals {
            match w.hit(t, limit, MINUTE).decision {
                Decision::Allowed { .. } => passed.push(t),
                Decision::Limited { retry_after_ms } => refused.push((t, retry_after_ms)),
            }
        }
        (passed, refused)
    }

    #[test]
    fn the_issue_flood_of_thirty_a_second_passes_at_most_the_limit_and_one_percent_in_any_minute() {
        // 30 calls a second for two minutes against 600 a minute: GCRA with a burst of 600 let 1,161
        // through in one minute.
        let arrivals: Vec<i64> = (0..3_600).map(|i| i * 1000 / 30).collect();
        let (passed, _) = run(&arrivals, 600);
        assert_eq!(busiest_window(&passed, MINUTE), 606);
    }

    #[test]
    fn no_arrival_pattern_passes_more_than_the_capacity_in_any_window() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..200 {
            let limit = [1, 5, 20, 30, 99, 100, 120, 600, 1_000][round % 9];
            let mut t = 0;
            let arrivals: Vec<i64> = (0..(limit as usize * 4).max(50))
                .map(|_| {
                    // Bursts (many at one millisecond), steady streams and long gaps, mixed.
                    t += match rng.below(10) {
                        0..=3 => 0,
                        4..=7 => rng.below(2 * MINUTE / limit as i64),
                        8 => rng.below(MINUTE),
                        _ => MINUTE - rng.below(50),
                    };
                    t
                })
                .collect();
            let (passed, refused) = run(&arrivals, limit);
            let most = busiest_window(&passed, MINUTE);
            assert!(most <= capacity(limit), "round {round}: {most} passed in a minute at limit {limit}");
            assert!(capacity(limit) as f64 <= limit as f64 * 1.01, "within 1 %");
            // Every retry-after is exact: waiting that long, the next call passes; a millisecond less, not.
            for (at, retry) in refused.into_iter().take(5) {
                let mut w = Window::from_times(passed.iter().copied().filter(|&p| p <= at).collect());
                assert!(matches!(w.clone().hit(at + retry - 1, limit, MINUTE).decision, Decision::Limited { .. }));
                assert!(matches!(w.hit(at + retry, limit, MINUTE).decision, Decision::Allowed { .. }));
            }
        }
    }

    /// The arrivals at the limiter of a client that starts its calls at least one interval apart (at
    /// `pace` times the limit), keeps at most `in_flight` calls going (each taking `hold_ms`), and reaches
    /// the limiter after a network delay of up to `jitter_ms`.
    fn paced(limit: u32, pace: f64, in_flight: usize, hold_ms: i64, jitter_ms: i64, rng: &mut Rng) -> Vec<i64> {
        let interval = MINUTE as f64 / (limit as f64 * pace);
        let mut starts: Vec<i64> = Vec::new();
        let mut arrivals = Vec::new();
        let mut at = 0.0f64;
        for i in 0..(limit as usize * 3).max(40) {
            if i > 0 {
                at += interval;
            }
            if i >= in_flight {
                at = at.max((starts[i - in_flight] + hold_ms) as f64);
            }
            let start = at.ceil() as i64;
            starts.push(start);
            arrivals.push(start + rng.below(jitter_ms));
        }
        arrivals.sort_unstable();
        arrivals
    }

    #[test]
    fn a_client_paced_at_or_under_the_limit_is_never_refused_at_any_concurrency() {
        let mut rng = Rng(42);
        for limit in [5u32, 60, 100, 600, 6_000] {
            for in_flight in [1, 8, 20, 32] {
                for hold_ms in [5, 3_000] {
                    // At exactly the limit the 1 % absorbs up to 600 ms of jitter (from 100 a minute up);
                    // a little under it, any limit does.
                    let paces: &[f64] = if limit >= 100 { &[1.0, 0.97] } else { &[0.97] };
                    for &pace in paces {
                        let arrivals = paced(limit, pace, in_flight, hold_ms, 500, &mut rng);
                        let (_, refused) = run(&arrivals, limit);
                        assert!(
                            refused.is_empty(),
                            "limit {limit}, {in_flight} in flight, {hold_ms} ms each, pace {pace}: {} refused, first {:?}",
                            refused.len(),
                            refused.first()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_log_read_back_from_storage_decides_the_same() {
        let mut w = Window::default();
        for t in [0, 10, 10, 20] {
            w.hit(t, 3, MINUTE);
        }
        let mut stored = Window::from_times(vec![10, 0, 10]);
        assert_eq!(stored, w);
        assert_eq!(stored.hit(30, 3, MINUTE).decision, Decision::Limited { retry_after_ms: MINUTE - 30 });
        let later = stored.hit(MINUTE + 5, 3, MINUTE);
        assert_eq!((later.decision, later.forgotten), (Decision::Allowed { remaining: 0 }, 1));
    }

    #[test]
    fn waits_read_exactly_as_many_milliseconds_as_retry_after_ms_says() {
        assert_eq!(seconds(17), "0.017 s");
        assert_eq!(seconds(1_500), "1.5 s");
        assert_eq!(seconds(12_000), "12 s");
        assert_eq!(seconds(59_990), "59.99 s");
        assert_eq!(seconds(-3), "0 s");
    }
}
