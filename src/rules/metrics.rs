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
}
