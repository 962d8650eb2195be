//! Keyed waits: calls waiting for one thing (an answer to a request, a runner's job result) by its key,
//! woken by a signal on that key. A signal that found nobody waiting is remembered for a minute, so a
//! call that starts waiting just after its answer landed returns at once instead of waiting it out.

use std::collections::HashMap;

/// How long an unclaimed signal is remembered.
pub const REMEMBER_MS: i64 = 60_000;

pub struct Keyed<W> {
    waiting: HashMap<String, Vec<W>>,
    /// Signals nobody waited for, with when they came.
    early: HashMap<String, i64>,
}

impl<W> Default for Keyed<W> {
    fn default() -> Self {
        Self { waiting: HashMap::new(), early: HashMap::new() }
    }
}

impl<W> Keyed<W> {
    /// Registers a waiter on `key`; gives it back when the key was signaled already (answer at once).
    pub fn wait(&mut self, key: &str, waiter: W, now_ms: i64) -> Option<W> {
        self.early.retain(|_, at| now_ms - *at < REMEMBER_MS);
        if self.early.remove(key).is_some() {
            return Some(waiter);
        }
        self.waiting.entry(key.to_owned()).or_default().push(waiter);
        None
    }

    /// The waiters to wake on `key`; with none, the signal is remembered.
    pub fn signal(&mut self, key: &str, now_ms: i64) -> Vec<W> {
        let woken = self.waiting.remove(key).unwrap_or_default();
        if woken.is_empty() {
            self.early.insert(key.to_owned(), now_ms);
        }
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_wakes_its_waiters_or_waits_a_minute_for_one() {
        let mut k = Keyed::default();
        assert_eq!(k.wait("a", 1, 0), None);
        assert_eq!(k.wait("a", 2, 0), None);
        assert_eq!(k.signal("a", 5), vec![1, 2]);
        assert_eq!(k.signal("b", 10), Vec::<i32>::new(), "nobody waits: remembered");
        assert_eq!(k.wait("b", 3, 20), Some(3), "an early signal answers the next wait at once");
        assert_eq!(k.wait("b", 4, 30), None, "once");
        k.signal("c", 0);
        assert_eq!(k.wait("c", 5, REMEMBER_MS), None, "forgotten after a minute");
    }
}
