//! Request latency kept as a fixed histogram per minute bucket, so a bucket is one upserted row (each
//! request adds 1 to one column) and percentiles over any window are read back from summed columns.

/// Upper bounds (ms) of the histogram's buckets; the last bucket has no bound (its values are read as the
/// window's maximum).
pub const BOUNDS_MS: [i64; 11] = [25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000];
/// Buckets: one per bound, then the open one.
pub const BUCKETS: usize = BOUNDS_MS.len() + 1;

/// The bucket a latency falls in.
pub fn bucket(ms: i64) -> usize {
    BOUNDS_MS.iter().position(|&b| ms <= b).unwrap_or(BOUNDS_MS.len())
}

/// The `q` quantile (0 < q ≤ 1) of a histogram, interpolated linearly inside its bucket; `max_ms` bounds
/// the open bucket (and every answer). `None` with no samples.
pub fn quantile(counts: &[i64; BUCKETS], q: f64, max_ms: i64) -> Option<i64> {
    let total: i64 = counts.iter().sum();
    if total <= 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0);
    let mut seen = 0i64;
    for (i, &n) in counts.iter().enumerate() {
        if n <= 0 {
            continue;
        }
        if (seen + n) as f64 >= rank {
            let low = if i == 0 { 0 } else { BOUNDS_MS[i - 1] };
            let high = BOUNDS_MS.get(i).copied().unwrap_or(max_ms).min(max_ms.max(low));
            let within = (rank - seen as f64) / n as f64;
            return Some(low + ((high - low) as f64 * within).round() as i64);
        }
        seen += n;
    }
    Some(max_ms)
}

/// Windows the metrics read back, with the width of each point of their series.
pub fn step_minutes(window_minutes: i64) -> i64 {
    match window_minutes {
        ..=60 => 1,
        61..=360 => 5,
        361..=1_440 => 15,
        1_441..=10_080 => 60,
        _ => 240,
    }
}

/// Finished calls of one workspace, agent and minute, summed: what one upsert of `metric_minute` adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTally {
    pub calls: i64,
    pub errors: i64,
    pub latency_sum_ms: i64,
    pub latency_max_ms: i64,
    pub histogram: [i64; BUCKETS],
}

impl CallTally {
    /// One call (a negative latency counts as 0).
    pub fn one(error: bool, latency_ms: i64) -> Self {
        let latency_ms = latency_ms.max(0);
        let mut histogram = [0; BUCKETS];
        histogram[bucket(latency_ms)] = 1;
        Self { calls: 1, errors: i64::from(error), latency_sum_ms: latency_ms, latency_max_ms: latency_ms, histogram }
    }

    /// Adds `other` in, as the upsert adds a row to the stored one.
    pub fn merge(&mut self, other: &CallTally) {
        self.calls += other.calls;
        self.errors += other.errors;
        self.latency_sum_ms += other.latency_sum_ms;
        self.latency_max_ms = self.latency_max_ms.max(other.latency_max_ms);
        for (mine, theirs) in self.histogram.iter_mut().zip(other.histogram) {
            *mine += theirs;
        }
    }
}

/// Which row a tally goes to: (workspace, agent, minute).
pub type CallKey = (String, String, i64);

/// Rows the buffer holds at most: a row is a few hundred bytes, and while D1 is away nothing drains the
/// buffer. Calls past it are dropped, and counted as dropped, rather than let an isolate run out of memory.
pub const MAX_PENDING_ROWS: usize = 5_000;

/// Finished calls not yet written, merged per row. One per isolate (the Worker's) or per test app: the
/// next request's first D1 round trip carries them, so counting a call costs no round trip of its own.
#[derive(Debug, Default)]
pub struct PendingCalls {
    tallies: std::cell::RefCell<std::collections::BTreeMap<CallKey, CallTally>>,
    /// Calls dropped since the isolate started, the buffer being full ([`MAX_PENDING_ROWS`]).
    dropped: std::cell::Cell<u64>,
    /// How many times a non-empty buffer was taken, so a delayed flush can tell whether another took it.
    takes: std::cell::Cell<u64>,
    /// When the flush waiting now (there is at most one) wakes; 0 when none waits.
    flush_wakes_ms: std::cell::Cell<i64>,
}

impl PendingCalls {
    /// Merges a tally into its row; a new row past [`MAX_PENDING_ROWS`] is dropped.
    pub fn add(&self, key: CallKey, tally: &CallTally) {
        let mut tallies = self.tallies.borrow_mut();
        if tallies.len() >= MAX_PENDING_ROWS && !tallies.contains_key(&key) {
            self.dropped.set(self.dropped.get() + tally.calls as u64);
            return;
        }
        tallies.entry(key).or_default().merge(tally);
    }

    /// Rows waiting, and calls dropped since the isolate started.
    pub fn usage(&self) -> (usize, u64) {
        (self.tallies.borrow().len(), self.dropped.get())
    }

    /// Up to `most` pending rows, leaving the rest for the next taker: one request never carries an
    /// unbounded batch, even after D1 was away a while.
    pub fn take(&self, most: usize) -> Vec<(CallKey, CallTally)> {
        let mut tallies = self.tallies.borrow_mut();
        let taken: Vec<(CallKey, CallTally)> = std::iter::from_fn(|| tallies.pop_first()).take(most).collect();
        if !taken.is_empty() {
            self.takes.set(self.takes.get() + 1);
        }
        taken
    }

    /// Tallies that were taken but never written go back (merged with any added since).
    pub fn put_back(&self, taken: Vec<(CallKey, CallTally)>) {
        for (key, tally) in taken {
            self.add(key, &tally);
        }
    }

    pub fn takes(&self) -> u64 {
        self.takes.get()
    }

    pub fn is_empty(&self) -> bool {
        self.tallies.borrow().is_empty()
    }

    /// Whether a flush is waiting to wake at `now_ms` or later; one that is a second overdue was cut short
    /// (the platform ended the work it waited in) and no longer counts.
    pub fn flush_waiting(&self, now_ms: i64) -> bool {
        let wakes = self.flush_wakes_ms.get();
        wakes != 0 && now_ms <= wakes + 1_000
    }

    /// Records when the waiting flush wakes, or that none waits (`0`).
    pub fn set_flush_wakes(&self, at_ms: i64) {
        self.flush_wakes_ms.set(at_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_inclusive_of_their_bound() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(25), 0);
        assert_eq!(bucket(26), 1);
        assert_eq!(bucket(60_000), 10);
        assert_eq!(bucket(60_001), 11);
    }

    #[test]
    fn quantiles_interpolate_within_a_bucket_and_stop_at_the_maximum() {
        let mut h = [0i64; BUCKETS];
        assert_eq!(quantile(&h, 0.5, 0), None);
        // 100 requests between 100 and 250 ms.
        h[bucket(200)] = 100;
        assert_eq!(quantile(&h, 0.5, 240), Some(170));
        assert_eq!(quantile(&h, 1.0, 240), Some(240));
        // One slow outlier lands in the open bucket: p99 stays in the 100-250 bucket, the maximum is the outlier.
        h[bucket(90_000)] = 1;
        assert!(quantile(&h, 0.99, 90_000).unwrap() <= 250);
        assert_eq!(quantile(&h, 1.0, 90_000), Some(90_000));
    }

    #[test]
    fn wider_windows_have_wider_points() {
        assert_eq!(step_minutes(60), 1);
        assert_eq!(step_minutes(1_440), 15);
        assert_eq!(step_minutes(43_200), 240);
    }

    #[test]
    fn the_buffer_holds_at_most_its_rows_while_nothing_drains_it_and_counts_what_it_dropped() {
        let pending = PendingCalls::default();
        let key = |ws: usize| (format!("ws_{ws}"), "agt_1".to_owned(), 1);
        for ws in 0..MAX_PENDING_ROWS + 10 {
            pending.add(key(ws), &CallTally::one(false, 10));
        }
        assert_eq!(pending.usage(), (MAX_PENDING_ROWS, 10));
        // A row already there still counts its calls; the room a take frees is used again.
        pending.add(key(0), &CallTally::one(false, 10));
        assert_eq!(pending.usage(), (MAX_PENDING_ROWS, 10));
        let taken = pending.take(1);
        assert_eq!(taken[0].1.calls, 2);
        pending.add(key(MAX_PENDING_ROWS + 20), &CallTally::one(false, 10));
        assert_eq!(pending.usage(), (MAX_PENDING_ROWS, 10));
    }

    #[test]
    fn tallies_merge_as_the_upserts_add_up() {
        let pending = PendingCalls::default();
        let key = |m: i64| ("ws_a".to_owned(), String::new(), m);
        for (error, ms) in [(false, 10), (true, 300), (false, 70_000), (false, -5)] {
            pending.add(key(1), &CallTally::one(error, ms));
        }
        pending.add(key(2), &CallTally::one(false, 40));
        assert_eq!(pending.takes(), 0);
        let taken = pending.take(1);
        assert_eq!((taken.len(), pending.takes()), (1, 1), "at most what was asked");
        let taken = [taken, pending.take(10)].concat();
        assert_eq!((pending.takes(), pending.is_empty()), (2, true));
        let first = &taken[0].1;
        assert_eq!((first.calls, first.errors, first.latency_sum_ms, first.latency_max_ms), (4, 1, 70_310, 70_000));
        let mut h = [0; BUCKETS];
        (h[0], h[bucket(300)], h[BUCKETS - 1]) = (2, 1, 1);
        assert_eq!(first.histogram, h);
        assert_eq!(taken[1].1, CallTally::one(false, 40));
        // An empty take is no take; what was never written comes back merged with what came since.
        assert!(pending.take(10).is_empty());
        assert_eq!(pending.takes(), 2);
        pending.add(key(2), &CallTally::one(false, 40));
        pending.put_back(taken);
        let again = pending.take(10);
        assert_eq!((again.len(), again[1].1.calls, again[1].1.histogram[bucket(40)]), (2, 2, 2));
    }
}
