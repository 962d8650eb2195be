//! API keys this Worker resolved recently. A call whose key is here starts its work at once, with the key
//! check riding in the same D1 batch as the work's first statement; the check still decides every call
//! ([`crate::app`] answers only once it agrees, and writes wait for it), so a revoked key or a changed
//! membership is never served from here. What it saves is a round trip: a read costs one instead of two.

use crate::cx::Caller;
use std::cell::RefCell;
use std::collections::HashMap;

/// How long an entry is used from the lookup that made it; past it, a call waits for its lookup again.
const TTL_MS: i64 = 5 * 60_000;
/// Entries kept; past it the cache starts over.
const MAX_ENTRIES: usize = 1_000;

thread_local! {
    static KEYS: RefCell<HashMap<String, (Caller, i64)>> = RefCell::default();
}

/// The caller last resolved for a key's hash.
pub fn get(key_hash: &str, now_ms: i64) -> Option<Caller> {
    KEYS.with(|k| k.borrow().get(key_hash).filter(|(_, at)| now_ms - at < TTL_MS).map(|(c, _)| c.clone()))
}

/// Remembers what a lookup resolved (`None`: the key is unknown or revoked, so it is forgotten).
pub fn put(key_hash: &str, caller: Option<&Caller>, now_ms: i64) {
    KEYS.with(|k| {
        let mut k = k.borrow_mut();
        match caller {
            Some(c) => {
                if k.len() >= MAX_ENTRIES && !k.contains_key(key_hash) {
                    k.clear();
                }
                k.insert(key_hash.to_owned(), (c.clone(), now_ms));
            }
            None => {
                k.remove(key_hash);
            }
        }
    });
}
