//! Keyed waits: calls waiting for one thing (an answer to a request, a runner's job result) by its key,
//! woken by a signal on that key. A signal that found nobody waiting is remembered for a minute, so a
//! call that starts waiting just after its answer landed returns at once instead of waiting it out.
//! A session's object may live for days: a waiter that gave up is forgotten ([`Keyed::forget`]) and the
//! remembered signals are bounded, so nothing here grows with the calls it has seen.

use std::collections::HashMap;

/// How long an unclaimed signal is remembered.
pub const REMEMBER_MS: i64 = 60_000;
/// Unclaimed signals remembered at once; past it the oldest is forgotten (its waiter, if one comes,
/// waits its time out and reads the answer then).
pub const MAX_EARLY: usize = 1_000;

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
            self.early.retain(|_, at| now_ms - *at < REMEMBER_MS);
            if self.early.len() >= MAX_EARLY {
                if let Some(oldest) = self.early.iter().min_by_key(|(_, at)| **at).map(|(k, _)| k.clone()) {
                    self.early.remove(&oldest);
                }
            }
            self.early.insert(key.to_owned(), now_ms);
        }
        woken
    }

    /// Forgets the waiters `gone` says gave up (their call timed out or went away), and keys left with none.
    pub fn forget(&mut self, gone: impl Fn(&W) -> bool) {
        self.waiting.retain(|_, waiters| {
            waiters.retain(|w| !gone(w));
            !waiters.is_empty()
        });
    }

    /// Keys waited on and signals remembered.
    pub fn sizes(&self) -> (usize, usize) {
        (self.waiting.len(), self.early.len())
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

    #[test]
    fn waiters_that_gave_up_are_forgotten_with_their_keys() {
        let mut k = Keyed::default();
        // The health check waits on one key every few seconds, and nothing ever signals it.
        let mut calls = Vec::new();
        for i in 0..100 {
            let (tx, rx) = futures::channel::oneshot::channel::<()>();
            assert!(k.wait(if i % 2 == 0 { "health" } else { "req_1" }, tx, i).is_none());
            calls.push(rx);
        }
        assert_eq!(k.sizes(), (2, 0));
        calls.truncate(1); // every call but the first timed out
        k.forget(futures::channel::oneshot::Sender::is_canceled);
        assert_eq!(k.sizes(), (1, 0));
        assert_eq!(k.signal("health", 200).len(), 1, "the call still waiting is woken");
        k.forget(futures::channel::oneshot::Sender::is_canceled);
        assert_eq!(k.sizes(), (0, 0));
    }

    #[test]
    fn signals_nobody_waits_for_are_remembered_a_minute_and_at_most_a_thousand() {
        let mut k = Keyed::<()>::default();
        for i in 0..MAX_EARLY as i64 * 3 {
            k.signal(&format!("req_{i}"), i);
        }
        assert_eq!(k.sizes(), (0, MAX_EARLY));
        assert!(k.wait("req_0", (), 10_000).is_none(), "the oldest went first");
        assert!(k.wait(&format!("req_{}", MAX_EARLY * 3 - 1), (), 10_000).is_some(), "the latest is kept");
        k.signal("late", 10_000 + REMEMBER_MS);
        assert_eq!(k.sizes(), (1, 1), "a signal past a minute old is forgotten when another comes");
    }
}
