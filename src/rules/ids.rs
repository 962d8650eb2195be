//! Identifiers and secrets. Ids carry a type prefix (`ws_`, `ag_`, …) so a wrong id fails loudly; keys are
//! 32 random bytes shown once and stored only as a SHA-256 hex digest.

use base64::Engine;
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use subtle::ConstantTimeEq;

/// Fills a buffer from the platform's CSPRNG (crypto.getRandomValues in the Worker).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the platform CSPRNG is available");
    buf
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new id: the prefix, then 128 random bits in lower-case Crockford base32 (26 characters).
pub fn new_id(prefix: &str) -> String {
    let bytes: [u8; 16] = random_bytes();
    let mut n = u128::from_be_bytes(bytes);
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for _ in 0..26 {
        out.push(ALPHABET[(n & 31) as usize] as char);
        n >>= 5;
    }
    out
}

/// True when `id` looks like one of ours with this prefix; lets handlers refuse garbage before a query.
pub fn is_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|body| body.len() == 26 && body.bytes().all(|b| ALPHABET.contains(&b)))
}

/// A secret token: the prefix, then 32 random bytes in base64url (43 characters).
pub fn new_secret(prefix: &str) -> String {
    let bytes: [u8; 32] = random_bytes();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Compares two secrets (or digests) without leaking where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// What lists show of a key: enough to recognise it, far too little to use it.
pub fn key_prefix(key: &str) -> String {
    key.chars().take(12).collect()
}

/// A kind of id: the prefix its values carry and the noun a refusal names it by.
pub trait Kind {
    const PREFIX: &'static str;
    const NOUN: &'static str;
}

/// The published rule of an id with this prefix: the `pattern` [`is_id`] keeps.
pub fn pattern(prefix: &str) -> String {
    format!("^{prefix}_[0-9a-hjkmnp-tv-z]{{26}}$")
}

/// "a session id like ses_…", "an agent id like ag_…".
fn described(noun: &str, prefix: &str) -> String {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {noun} id like {prefix}_…")
}

/// An id of kind `K` as a parameter: anything but `K`'s shape is refused when decoded ("must be a
/// session id like ses_…"), and the schema publishes the shape as `pattern`. A well-formed id that
/// names nothing of the caller's is still the handler's `not_found`.
#[derive(Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Id<K> {
    id: String,
    #[serde(skip)]
    kind: PhantomData<fn() -> K>,
}

impl<K: Kind> Id<K> {
    pub fn as_str(&self) -> &str {
        &self.id
    }
    pub fn into_string(self) -> String {
        self.id
    }
}

/// An id read back from storage or made here, held to its shape again.
impl<K: Kind> TryFrom<String> for Id<K> {
    type Error = String;
    fn try_from(id: String) -> Result<Self, String> {
        if is_id(&id, K::PREFIX) {
            Ok(Id { id, kind: PhantomData })
        } else {
            Err(format!("must be {} (got {})", described(K::NOUN, K::PREFIX), super::params::quoted(&id)))
        }
    }
}

impl<'de, K: Kind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Id::try_from(String::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<K: Kind> schemars::JsonSchema for Id<K> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("Id_{}", K::PREFIX).into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": pattern(K::PREFIX) })
    }
}

impl<K> std::ops::Deref for Id<K> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.id
    }
}

impl<K> AsRef<str> for Id<K> {
    fn as_ref(&self) -> &str {
        &self.id
    }
}

impl<K> From<Id<K>> for String {
    fn from(id: Id<K>) -> String {
        id.id
    }
}

impl<K> PartialEq<str> for Id<K> {
    fn eq(&self, other: &str) -> bool {
        self.id == other
    }
}

impl<K> PartialEq<String> for Id<K> {
    fn eq(&self, other: &String) -> bool {
        &self.id == other
    }
}

impl<K> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.id.fmt(f)
    }
}

impl<K> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.id.fmt(f)
    }
}

/// Declares the kinds of id parameters: a marker, its prefix and noun, and the `Id<…>` alias.
macro_rules! kinds {
    ($($alias:ident = $marker:ident($prefix:literal, $noun:literal);)+) => {
        $(
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $marker {}
            impl Kind for $marker {
                const PREFIX: &'static str = $prefix;
                const NOUN: &'static str = $noun;
            }
            #[doc = concat!("A ", $noun, " id (`", $prefix, "_…`) as a parameter.")]
            pub type $alias = Id<$marker>;
        )+
    };
}

kinds! {
    SessionId = Ses("ses", "session");
    // A task is named by its first session's id.
    TaskId = Task("ses", "task");
    AgentId = Ag("ag", "agent");
    KeyId = Key("key", "key");
    RunnerId = Run("run", "runner");
    RoutineId = Rt("rt", "routine");
    RequestId = Req("req", "request");
    GrantId = Gr("gr", "grant");
    AppGrantId = Oag("oag", "connected app");
    ConnectorId = Con("con", "connector");
    MemoryId = Mem("mem", "memory");
    TraceId = Trc("trc", "trace");
    WebhookId = Wh("wh", "webhook");
    DeliveryId = Whd("whd", "webhook delivery");
    ArtifactId = Art("art", "artifact");
    HandoffId = Ho("ho", "hand-off");
    InvitationId = Inv("inv", "invitation");
    AccountId = Acct("acct", "account");
    MessageId = Msg("msg", "message");
    PushSubscriptionId = Psub("psub", "push subscription");
}

/// The published rule of an agent handle, `@` then a slug (`rules::slug::validate`'s shape, less its
/// ban on a double dash, which a lookup answers as `not_found`).
const HANDLE_PATTERN: &str = "@[a-z][a-z0-9-]{0,38}[a-z0-9]";

fn is_handle(s: &str) -> bool {
    s.strip_prefix('@').is_some_and(|h| {
        (2..=40).contains(&h.len())
            && h.starts_with(|c: char| c.is_ascii_lowercase())
            && !h.ends_with('-')
            && h.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

/// An agent as a caller names it: its id (`ag_…`) or `@handle`. The schema publishes both shapes.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct AgentRef(String);

impl AgentRef {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for AgentRef {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if is_id(&s, "ag") || is_handle(&s) {
            Ok(AgentRef(s))
        } else {
            Err(format!("must be {} or an @handle (got {})", described("agent", "ag"), super::params::quoted(&s)))
        }
    }
}

impl<'de> Deserialize<'de> for AgentRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AgentRef::try_from(String::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl schemars::JsonSchema for AgentRef {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "AgentRef".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let id = pattern("ag");
        let either = format!("^(?:{}|{HANDLE_PATTERN})$", &id[1..id.len() - 1]);
        schemars::json_schema!({ "type": "string", "pattern": either })
    }
}

impl std::ops::Deref for AgentRef {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefix_and_128_bits() {
        let id = new_id("ws");
        assert!(is_id(&id, "ws"), "{id}");
        assert!(!is_id(&id, "ag"));
        assert_ne!(new_id("ws"), new_id("ws"));
        assert!(!is_id("ws_../../etc", "ws"));
    }

    #[test]
    fn typed_ids_refuse_another_shape_naming_the_kind() {
        let id = new_id("ses");
        assert_eq!(serde_json::from_value::<SessionId>(serde_json::json!(id)).unwrap().as_str(), id);
        let e = serde_json::from_value::<SessionId>(serde_json::json!("ses_nope")).unwrap_err().to_string();
        assert_eq!(e, "must be a session id like ses_… (got \"ses_nope\")");
        let e = serde_json::from_value::<AgentId>(serde_json::json!(new_id("ses"))).unwrap_err().to_string();
        assert!(e.starts_with("must be an agent id like ag_…"), "{e}");
        let long = serde_json::from_value::<TaskId>(serde_json::json!("x".repeat(500))).unwrap_err().to_string();
        assert!(long.len() < 160, "{long}");
        let schema = crate::rules::schema::input_schema::<KeyId>().to_value();
        assert_eq!(schema["pattern"], "^key_[0-9a-hjkmnp-tv-z]{26}$");
        // The pattern's class is the alphabet, letter for letter.
        let class: String =
            ('0'..='9').chain('a'..='h').chain(['j', 'k', 'm', 'n']).chain('p'..='t').chain('v'..='z').collect();
        assert_eq!(class.as_bytes(), ALPHABET);
    }

    #[test]
    fn an_agent_is_named_by_id_or_handle() {
        let ok = |s: &str| AgentRef::try_from(s.to_owned()).is_ok();
        assert!(ok(&new_id("ag")) && ok("@dev") && ok("@release-bot-2"));
        for bad in ["dev", "@", "@d", "@Dev", "@dev-", "@-dev", "ag_x", "@1dev"] {
            assert!(!ok(bad), "{bad}");
        }
        let e = AgentRef::try_from("Dev".to_owned()).unwrap_err();
        assert_eq!(e, "must be an agent id like ag_… or an @handle (got \"Dev\")");
        let schema = crate::rules::schema::input_schema::<AgentRef>().to_value();
        assert_eq!(schema["pattern"], "^(?:ag_[0-9a-hjkmnp-tv-z]{26}|@[a-z][a-z0-9-]{0,38}[a-z0-9])$");
    }

    #[test]
    fn secrets_are_long_and_hash_to_hex() {
        let key = new_secret("ast_");
        assert!(key.starts_with("ast_") && key.len() == 47);
        let h = hash_secret(&key);
        assert_eq!(h.len(), 64);
        assert!(constant_time_eq(&h, &hash_secret(&key)));
        assert!(!constant_time_eq(&h, &hash_secret("ast_other")));
        assert_eq!(key_prefix(&key).len(), 12);
    }
}
