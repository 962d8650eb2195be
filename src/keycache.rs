//! API keys this Worker resolved recently. A call whose key is here starts its work at once, with the key
//! check riding in the same D1 batch as the work's first statement; the check still decides every call
//! ([`crate::app`] answers only once it agrees, and writes wait for it), so a revoked key or a changed
//! membership is never served from here. What it saves is a round trip: a read costs one instead of two.
//! The one answer given on this cache alone is what every key is shown alike (the MCP tool list,
//! `initialize`: `crate::mcp::server_wide`), which holds nothing of any tenant's, and only for
//! [`SERVER_WIDE_MS`] after a lookup; a revocation made in this isolate forgets every key at once.

use crate::identity::Caller;
use std::cell::RefCell;
use std::collections::HashMap;

/// How long an entry is used from the lookup that made it; past it, a call waits for its lookup again.
const TTL_MS: i64 = 5 * 60_000;
/// How long after its lookup a key is shown what every key is shown alike with no lookup of its own: how
/// late, at most, another isolate's revocation reaches the tool list.
pub const SERVER_WIDE_MS: i64 = 10_000;
/// Entries kept; past it the cache starts over.
const MAX_ENTRIES: usize = 1_000;

thread_local! {
    static KEYS: RefCell<HashMap<String, (Caller, i64)>> = RefCell::default();
}

/// The caller last resolved for a key's hash.
pub fn get(key_hash: &str, now_ms: i64) -> Option<Caller> {
    looked_up_within(key_hash, now_ms, TTL_MS)
}

/// The caller of a key looked up in the last [`SERVER_WIDE_MS`].
pub fn recent(key_hash: &str, now_ms: i64) -> Option<Caller> {
    looked_up_within(key_hash, now_ms, SERVER_WIDE_MS)
}

fn looked_up_within(key_hash: &str, now_ms: i64, ms: i64) -> Option<Caller> {
    KEYS.with(|k| k.borrow().get(key_hash).filter(|(_, at)| now_ms - at < ms).map(|(c, _)| c.clone()))
}

/// Forgets every key. Called wherever a key or token is revoked (keys, OAuth tokens and grants, connected
/// apps): the revoked one may be here, and finding which entry held it is not worth it.
pub fn forget_all() {
    KEYS.with(|k| k.borrow_mut().clear());
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
