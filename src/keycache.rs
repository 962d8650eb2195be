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
/// Bytes kept, as [`weight`] counts them; past it the cache starts over too. A caller holds every
/// workspace it is a member of, and nothing bounds how many that is, so the count alone bounds nothing.
const MAX_BYTES: usize = 2 * 1024 * 1024;
/// A caller heavier than this is not kept (its calls look their key up first): a few such would empty
/// the cache for everyone else.
const MAX_ENTRY_BYTES: usize = MAX_BYTES / 16;

#[derive(Default)]
struct Keys {
    by_hash: HashMap<String, (Caller, i64)>,
    /// The sum of the entries' [`weight`]s.
    bytes: usize,
}

thread_local! {
    static KEYS: RefCell<Keys> = RefCell::default();
}

/// About what an entry takes in memory: its strings' bytes and each one's allocation and header.
fn weight(key_hash: &str, c: &Caller) -> usize {
    const PER_STRING: usize = 16;
    let text = |s: &str| s.len() + PER_STRING;
    let memberships: usize =
        c.memberships.iter().map(|m| text(&m.workspace_id) + text(&m.slug) + text(&m.name) + 8).sum();
    let optional = |s: &Option<String>| s.as_deref().map_or(0, text);
    text(key_hash)
        + text(&c.account_id)
        + text(&c.key_id)
        + optional(&c.locked_workspace_id)
        + optional(&c.app)
        + memberships
        + 64
}

/// Entries and their bytes ([`weight`]), for the deployment's health check.
pub fn usage() -> (usize, usize) {
    KEYS.with(|k| {
        let k = k.borrow();
        (k.by_hash.len(), k.bytes)
    })
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
    KEYS.with(|k| k.borrow().by_hash.get(key_hash).filter(|(_, at)| now_ms - at < ms).map(|(c, _)| c.clone()))
}

/// Forgets every key. Called wherever a key or token is revoked (keys, OAuth tokens and grants, connected
/// apps): the revoked one may be here, and finding which entry held it is not worth it.
pub fn forget_all() {
    KEYS.with(|k| *k.borrow_mut() = Keys::default());
}

/// Remembers what a lookup resolved (`None`: the key is unknown or revoked, so it is forgotten).
pub fn put(key_hash: &str, caller: Option<&Caller>, now_ms: i64) {
    KEYS.with(|k| {
        let mut k = k.borrow_mut();
        if let Some((old, _)) = k.by_hash.remove(key_hash) {
            k.bytes -= weight(key_hash, &old);
        }
        let Some(c) = caller else { return };
        let w = weight(key_hash, c);
        if w > MAX_ENTRY_BYTES {
            return;
        }
        if k.by_hash.len() >= MAX_ENTRIES || k.bytes + w > MAX_BYTES {
            *k = Keys::default();
        }
        k.by_hash.insert(key_hash.to_owned(), (c.clone(), now_ms));
        k.bytes += w;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Membership, Role};

    fn caller(workspaces: usize, name_len: usize) -> Caller {
        let memberships = (0..workspaces)
            .map(|i| Membership {
                workspace_id: format!("ws_{i:024}"),
                slug: format!("slug-{i}"),
                name: "n".repeat(name_len),
                role: Role::Member,
                is_personal: i == 0,
            })
            .collect();
        Caller {
            account_id: "acc_1".into(),
            key_id: "key_1".into(),
            can_write: true,
            locked_workspace_id: None,
            memberships,
            app: None,
        }
    }

    #[test]
    fn the_cache_keeps_at_most_a_thousand_keys_and_unknown_keys_add_none() {
        let c = caller(1, 10);
        for i in 0..MAX_ENTRIES * 3 {
            put(&format!("hash-{i}"), Some(&c), 0);
            put(&format!("unknown-{i}"), None, 0);
            assert!(usage().0 <= MAX_ENTRIES);
        }
        assert!(get(&format!("hash-{}", MAX_ENTRIES * 3 - 1), 0).is_some(), "the latest is kept");
        assert!(get("unknown-0", 0).is_none());
    }

    #[test]
    fn the_cache_keeps_at_most_its_bytes_however_many_workspaces_its_callers_are_in() {
        // About 50 KB each, under the one-entry bound: 1,000 of them would be 50 MB.
        let heavy = caller(200, 200);
        assert!(weight("h", &heavy) < MAX_ENTRY_BYTES && weight("h", &heavy) > 40_000);
        for i in 0..MAX_ENTRIES {
            put(&format!("hash-{i}"), Some(&heavy), 0);
            let (entries, bytes) = usage();
            assert!(bytes <= MAX_BYTES, "{entries} entries, {bytes} bytes");
        }
        assert!(get(&format!("hash-{}", MAX_ENTRIES - 1), 0).is_some(), "the latest is kept");
        // A caller heavier than an entry may be is looked up every time, and the rest stay.
        let before = usage();
        put("huge", Some(&caller(5_000, 100)), 0);
        assert_eq!((get("huge", 0), usage()), (None, before));
    }

    #[test]
    fn the_cache_counts_a_replaced_or_forgotten_entry_out_of_its_bytes() {
        put("a", Some(&caller(3, 10)), 0);
        put("a", Some(&caller(1, 10)), 1);
        assert_eq!(usage(), (1, weight("a", &caller(1, 10))));
        put("a", None, 2);
        assert_eq!(usage(), (0, 0));
        put("b", Some(&caller(1, 10)), 0);
        forget_all();
        assert_eq!(usage(), (0, 0));
    }
}
