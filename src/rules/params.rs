//! Parameters parsed, not validated: typed texts whose length rule is both enforced and published, and
//! one decoder whose refusal names the field and the rule in plain words instead of serde's.

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// Declares a closed set of words as an enum: serde reads and writes the words, the schema publishes
/// them as `enum`, `as_str` gives the word back (for storage), and `WORDS` lists them.
macro_rules! words {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[schemars(inline)]
        $vis enum $name {
            $(#[serde(rename = $word)] $variant),+
        }

        // A set private to one module may not need every helper.
        #[allow(dead_code)]
        impl $name {
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The variant a word names (a stored one, say).
            pub fn from_word(word: &str) -> Option<Self> {
                [$($name::$variant),+].into_iter().find(|v| v.as_str() == word)
            }

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use words;

/// Decodes a call's arguments (`null` means none). A refusal reads "`criteria[0].text` must be …".
pub fn decode<T: DeserializeOwned>(args: Value) -> Result<T, String> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args };
    serde_path_to_error::deserialize(args).map_err(|e| explain(&path_of(e.path()), &e.inner().to_string()))
}

/// One text (from a URL, a form, a stored row) read as the parameter type it fills (an id, a path, a
/// bounded text) for a typed call, and refused as a call's arguments refuse that field.
pub fn param<T: DeserializeOwned>(field: &str, raw: &str) -> Result<T, crate::error::ApiError> {
    use serde::de::IntoDeserializer;
    T::deserialize(raw.into_deserializer())
        .map_err(|e: serde::de::value::Error| crate::error::ApiError::invalid(explain(field, &e.to_string())))
}

/// A path as a caller writes it: `a.b[0]`, and a key that is no plain name quoted (`files["../x"]`).
fn path_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&clipped(key, QUOTED_CHARS));
            }
            Segment::Map { key } => out.push_str(&format!("[{}]", quoted(key))),
            Segment::Enum { variant } => out.push_str(&format!(".{variant}")),
            Segment::Unknown => out.push_str(".?"),
        }
    }
    if out.is_empty() {
        ".".to_owned()
    } else {
        out
    }
}

/// Turns serde's message about the value at `path` into plain words. Our own types' messages (a rule
/// such as "must be 1–100 characters (got 101)") only get the field's name in front.
pub fn explain(path: &str, serde: &str) -> String {
    let field = |name: &str| -> String {
        match path {
            "." | "" => format!("`{name}`"),
            p => format!("`{p}.{name}`"),
        }
    };
    let here = if path == "." || path.is_empty() { "the arguments".to_owned() } else { format!("`{path}`") };
    if let Some(name) = between(serde, "missing field `", "`") {
        return format!("{} is required", field(name));
    }
    if let Some(rest) = serde.strip_prefix("unknown field `") {
        let (name, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let name = &*clipped(name, QUOTED_CHARS);
        // The path already ends with the unknown key.
        let at = if path.ends_with(name) { here } else { field(name) };
        return match expected.strip_prefix(", expected one of ").or(expected.strip_prefix(", expected ")) {
            Some(known) => format!("{at} is not a known field; the fields are {}", listed(known)),
            None => format!("{at} is not a known field; there are none here"),
        };
    }
    if let Some(rest) = serde.strip_prefix("unknown variant `") {
        let (got, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed =
            expected.strip_prefix(", expected one of ").or(expected.strip_prefix(", expected ")).unwrap_or("");
        return format!("{here} must be one of {} (got {})", listed(allowed), quoted(got));
    }
    if let Some(rest) = serde.strip_prefix("invalid type: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return format!("{here} must be {} (got {})", kind(expected), got_kind(got));
    }
    if let Some(rest) = serde.strip_prefix("invalid value: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let got = got.split_once(' ').map_or(got, |(_, v)| v).trim_matches('`');
        return format!("{here} must be {} (got {})", kind(expected), clipped(got, QUOTED_CHARS));
    }
    if let Some(rest) = serde.strip_prefix("invalid length ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return format!("{here} must hold {expected} (got {got})");
    }
    // A message an inner decoder already gave its field's name: that field is below this one.
    if let Some(inner) = serde.strip_prefix('`').filter(|_| here.starts_with('`')) {
        return format!("{}.{inner}", here.trim_end_matches('`'));
    }
    format!("{here} {serde}")
}

/// serde's "`a`, `b`, `c`" as "a, b, c".
fn listed(list: &str) -> String {
    list.replace('`', "").replace(" or ", ", ")
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(start)?;
    rest.split_once(end).map(|(x, _)| x)
}

/// What serde expected, in words a caller knows.
fn kind(expected: &str) -> Cow<'_, str> {
    let e = expected.trim();
    Cow::Borrowed(match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "true or false",
        "a string" | "a borrowed string" | "string" | "char" => "a text",
        "a sequence" => "a list",
        "a map" | "unit" => "an object",
        _ if e.starts_with("struct ") || e.starts_with("enum ") => "an object",
        _ if e.starts_with("a sequence") || e.starts_with("tuple") => "a list",
        _ => return Cow::Borrowed(e),
    })
}

/// What the caller sent, by kind.
fn got_kind(got: &str) -> &'static str {
    match got.split(' ').next().unwrap_or("") {
        "string" => "a text",
        "integer" | "floating" => "a number",
        "boolean" => "a boolean",
        "sequence" => "a list",
        "map" => "an object",
        "null" | "unit" => "null",
        _ => "something else",
    }
}

/// The most characters of a refused value an error quotes back.
pub const QUOTED_CHARS: usize = 80;

/// `text` cut to at most `max` characters (never inside one), with `…` when it was cut.
pub fn clipped(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

/// What a refusal quotes of a value it refuses: enough to recognise, never a flood (a message travels
/// on into logs, tool results and the console's flash cookie). `"abc"`, or `"abc…"…` when cut.
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!("{:?}…", &value[..at]),
        None => format!("{value:?}"),
    }
}

/// Why a text breaks the length rule (characters, not bytes) or carries control characters (a newline,
/// tab or carriage return is allowed); `None` when it keeps it.
pub fn text_problem(value: &str, min: usize, max: usize) -> Option<String> {
    let n = value.chars().count();
    if n < min || n > max {
        let range = if min == 0 { format!("at most {max}") } else { format!("{min}–{max}") };
        return Some(format!("must be {range} characters (got {n})"));
    }
    if value.chars().any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r') {
        return Some("must not contain control characters".to_owned());
    }
    None
}

/// A text of `MIN..=MAX` characters without control characters: refused when decoded, and published
/// as `minLength`/`maxLength`.
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Text<const MIN: usize, const MAX: usize>(String);

impl<const MIN: usize, const MAX: usize> Text<MIN, MAX> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

/// A text read back from storage, held to the rule again; the error is the rule it breaks.
impl<const MIN: usize, const MAX: usize> TryFrom<String> for Text<MIN, MAX> {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match text_problem(&s, MIN, MAX) {
            Some(problem) => Err(problem),
            None => Ok(Text(s)),
        }
    }
}

impl<const MIN: usize, const MAX: usize> std::ops::Deref for Text<MIN, MAX> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize> AsRef<str> for Text<MIN, MAX> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize> From<Text<MIN, MAX>> for String {
    fn from(t: Text<MIN, MAX>) -> String {
        t.0
    }
}

impl<const MIN: usize, const MAX: usize> fmt::Debug for Text<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<const MIN: usize, const MAX: usize> fmt::Display for Text<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<const MIN: usize, const MAX: usize> PartialEq<str> for Text<MIN, MAX> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl<'de, const MIN: usize, const MAX: usize> Deserialize<'de> for Text<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match text_problem(&s, MIN, MAX) {
            Some(problem) => Err(D::Error::custom(problem)),
            None => Ok(Text(s)),
        }
    }
}

impl<const MIN: usize, const MAX: usize> schemars::JsonSchema for Text<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("Text_{MIN}_{MAX}").into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut s = schemars::json_schema!({ "type": "string", "maxLength": MAX });
        if MIN > 0 {
            s.insert("minLength".into(), MIN.into());
        }
        s
    }
}

/// A caller's idempotency key: 1–255 characters, no control characters.
pub type IdempotencyKey = Text<1, 255>;

/// A whole number in `MIN..=MAX`: refused when decoded ("must be between 1 and 100 (got 0)"), and
/// published as `minimum`/`maximum`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Int<const MIN: i64, const MAX: i64>(i64);

impl<const MIN: i64, const MAX: i64> Int<MIN, MAX> {
    pub const fn get(self) -> i64 {
        self.0
    }

    /// A number the source itself names (a page size, say): in a `const` block, out of range fails to
    /// compile.
    pub const fn new(n: i64) -> Self {
        assert!(MIN <= n && n <= MAX, "out of the parameter's range");
        Int(n)
    }
}

impl<const MIN: i64, const MAX: i64> fmt::Debug for Int<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Int::try_from(i64::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<const MIN: i64, const MAX: i64> schemars::JsonSchema for Int<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("Int_{MIN}_{MAX}").into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "integer", "format": "int64", "minimum": MIN, "maximum": MAX })
    }
}

/// The range rule, for a number read back from storage (and for [`Int`]'s decoding).
impl<const MIN: i64, const MAX: i64> TryFrom<i64> for Int<MIN, MAX> {
    type Error = String;
    fn try_from(n: i64) -> Result<Self, String> {
        if (MIN..=MAX).contains(&n) {
            Ok(Int(n))
        } else {
            Err(format!("must be between {MIN} and {MAX} (got {n})"))
        }
    }
}

/// A list of at most `MAX` items: refused when decoded, and published as `maxItems`.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Capped<T, const MAX: usize>(Vec<T>);

impl<T, const MAX: usize> Default for Capped<T, MAX> {
    fn default() -> Self {
        Capped(Vec::new())
    }
}

impl<T, const MAX: usize> Capped<T, MAX> {
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

/// The count rule, for a list read back from storage (and for [`Capped`]'s decoding).
impl<T, const MAX: usize> TryFrom<Vec<T>> for Capped<T, MAX> {
    type Error = String;
    fn try_from(v: Vec<T>) -> Result<Self, String> {
        if v.len() <= MAX {
            Ok(Capped(v))
        } else {
            Err(format!("may hold at most {MAX} items (got {})", v.len()))
        }
    }
}

impl<T, const MAX: usize> std::ops::Deref for Capped<T, MAX> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: fmt::Debug, const MAX: usize> fmt::Debug for Capped<T, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Capped<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Capped::try_from(Vec::<T>::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<T: schemars::JsonSchema, const MAX: usize> schemars::JsonSchema for Capped<T, MAX> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("Capped_{}_{MAX}", T::schema_name()).into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut s = Vec::<T>::json_schema(g);
        s.insert("maxItems".into(), MAX.into());
        s
    }
}

/// A map of at most `MAX` entries, each key keeping `K`'s rule and each value `V`'s: refused when
/// decoded, and published as `maxProperties`, `propertyNames` and `additionalProperties`.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct CappedMap<K: Ord, V, const MAX: usize>(BTreeMap<K, V>);

impl<K: Ord, V, const MAX: usize> CappedMap<K, V, MAX> {
    pub fn into_map(self) -> BTreeMap<K, V> {
        self.0
    }
}

impl<K: Ord, V, const MAX: usize> Default for CappedMap<K, V, MAX> {
    fn default() -> Self {
        CappedMap(BTreeMap::new())
    }
}

impl<K: Ord, V, const MAX: usize> std::ops::Deref for CappedMap<K, V, MAX> {
    type Target = BTreeMap<K, V>;
    fn deref(&self) -> &BTreeMap<K, V> {
        &self.0
    }
}

impl<K: Ord + fmt::Debug, V: fmt::Debug, const MAX: usize> fmt::Debug for CappedMap<K, V, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de, K: Ord + Deserialize<'de>, V: Deserialize<'de>, const MAX: usize> Deserialize<'de> for CappedMap<K, V, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<K, V>::deserialize(d)?;
        if map.len() > MAX {
            return Err(D::Error::custom(format!("may hold at most {MAX} entries (got {})", map.len())));
        }
        Ok(CappedMap(map))
    }
}

impl<K: Ord + schemars::JsonSchema, V: schemars::JsonSchema, const MAX: usize> schemars::JsonSchema
    for CappedMap<K, V, MAX>
{
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("CappedMap_{}_{}_{MAX}", K::schema_name(), V::schema_name()).into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let (names, values) = (g.subschema_for::<K>(), g.subschema_for::<V>());
        schemars::json_schema!({
            "type": "object",
            "maxProperties": MAX,
            "propertyNames": names,
            "additionalProperties": values,
        })
    }
}

/// A name of an environment variable as the providers' CLIs read them: 1–100 of `A`–`Z`, `0`–`9` and
/// `_`. Published as `pattern`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct EnvName(String);

impl EnvName {
    const PATTERN: &'static str = "^[A-Z0-9_]{1,100}$";
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let ok = (1..=100).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(EnvName(s))
        } else {
            Err(D::Error::custom(format!("must be named with 1–100 of A–Z, 0–9 and _ (got {})", quoted(&s))))
        }
    }
}

impl schemars::JsonSchema for EnvName {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "EnvName".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": Self::PATTERN })
    }
}

impl fmt::Debug for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A plausible email address, 3–254 characters: one `@`, something on both sides, a dot in the
/// domain, no spaces (those around it are trimmed). Published as `format: email` with its length.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Email {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        // Spaces around a pasted address are not part of it.
        let value = match value.trim() {
            t if t.len() == value.len() => value,
            t => t.to_owned(),
        };
        if let Some(problem) = text_problem(&value, 3, 254) {
            return Err(problem);
        }
        let ok = value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        }) && !value.contains(char::is_whitespace);
        if ok {
            Ok(Email(value))
        } else {
            Err(format!("must be an email address (got {})", quoted(&value)))
        }
    }
}

impl<'de> Deserialize<'de> for Email {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Email::try_from(String::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl schemars::JsonSchema for Email {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Email".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "email", "minLength": 3, "maxLength": 254 })
    }
}

impl std::ops::Deref for Email {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_value_is_quoted_short_and_cut_on_a_character() {
        assert_eq!(quoted("ten"), "\"ten\"");
        let long = "é".repeat(70_000);
        let q = quoted(&long);
        assert_eq!(q, format!("{:?}…", "é".repeat(QUOTED_CHARS)));
        assert_eq!(clipped("abcdef", 3), "abc…");
        assert_eq!(clipped("abc", 3), "abc");
        for (args, field) in [
            (json!({"name": "a", "thinking": "x".repeat(70_000)}), "`thinking`"),
            (json!({"name": "a", "limit": "y".repeat(70_000)}), "`limit`"),
            (json!({"name": "a", "z".repeat(70_000): 1}), "is not a known field"),
        ] {
            let e = decode::<P>(args).unwrap_err();
            assert!(e.len() < 400 && e.contains(field), "{} chars: {}", e.len(), clipped(&e, 300));
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct P {
        name: Text<1, 5>,
        budget_usd: Option<f64>,
        limit: Option<u32>,
        page: Option<Int<1, 9>>,
        #[serde(default)]
        tags: Capped<Text<1, 3>, 2>,
        thinking: Option<Thinking>,
    }

    words! {
        enum Thinking { Off = "off", Low = "low" }
    }

    fn refusal(args: Value) -> String {
        decode::<P>(args).unwrap_err()
    }

    #[test]
    fn refusals_name_the_field_and_the_rule() {
        assert_eq!(refusal(json!({})), "`name` is required");
        assert_eq!(refusal(json!({"name": "abcdef"})), "`name` must be 1–5 characters (got 6)");
        assert_eq!(refusal(json!({"name": "a\u{0}"})), "`name` must not contain control characters");
        assert_eq!(refusal(json!({"name": "a", "tags": ["abcd"]})), "`tags[0]` must be 1–3 characters (got 4)");
        assert_eq!(
            refusal(json!({"name": "a", "thinking": "ten"})),
            "`thinking` must be one of off, low (got \"ten\")"
        );
        assert_eq!(refusal(json!({"name": "a", "budget_usd": "5"})), "`budget_usd` must be a number (got a text)");
        assert_eq!(refusal(json!({"name": 5})), "`name` must be a text (got a number)");
        assert_eq!(refusal(json!({"name": "a", "limit": -1})), "`limit` must be a whole number, 0 or more (got -1)");
        assert_eq!(refusal(json!({"name": "a", "page": 10})), "`page` must be between 1 and 9 (got 10)");
        assert_eq!(refusal(json!({"name": "a", "tags": ["a", "b", "c"]})), "`tags` may hold at most 2 items (got 3)");
        let unknown = refusal(json!({"name": "a", "extra": 1}));
        assert!(unknown.starts_with("`extra` is not a known field; the fields are name, budget_usd"), "{unknown}");
        assert_eq!(refusal(json!("x")), "the arguments must be an object (got a text)");
        assert!(decode::<P>(Value::Null).is_err());
    }

    #[test]
    fn lengths_count_characters_and_are_published() {
        assert!(decode::<Text<1, 3>>(json!("ééé")).is_ok());
        assert!(decode::<Text<0, 3>>(json!("")).is_ok());
        assert!(decode::<Text<1, 3>>(json!("")).is_err());
        assert!(decode::<Text<0, 9>>(json!("a\nb\tc")).is_ok());
        let schema = crate::rules::schema::input_schema::<Text<2, 9>>().to_value();
        assert_eq!(schema["minLength"], 2);
        assert_eq!(schema["maxLength"], 9);
    }

    #[test]
    fn ranges_are_enforced_and_published() {
        assert_eq!(decode::<Int<1, 100>>(json!(100)).unwrap().get(), 100);
        assert_eq!(decode::<Int<1, 100>>(json!(0)).unwrap_err(), "the arguments must be between 1 and 100 (got 0)");
        assert!(decode::<Int<1, 100>>(json!(101)).is_err());
        assert!(decode::<Int<1, 100>>(json!(1.5)).is_err());
        let schema = crate::rules::schema::input_schema::<Int<0, 50>>().to_value();
        assert_eq!((schema["minimum"].clone(), schema["maximum"].clone()), (json!(0), json!(50)));
        let schema = crate::rules::schema::input_schema::<Capped<Text<1, 3>, 2>>().to_value();
        assert_eq!((schema["maxItems"].clone(), schema["items"]["maxLength"].clone()), (json!(2), json!(3)));
    }

    #[test]
    fn maps_emails_and_env_names_keep_and_publish_their_rules() {
        type Env = CappedMap<EnvName, Text<0, 5>, 2>;
        assert!(decode::<Env>(json!({"A_1": "x"})).is_ok());
        assert_eq!(
            decode::<Env>(json!({"A": "", "B": "", "C": ""})).unwrap_err(),
            "the arguments may hold at most 2 entries (got 3)"
        );
        assert!(decode::<Env>(json!({"a": "x"})).unwrap_err().starts_with("`a` must be named with 1–100 of A–Z"));
        let nested = decode::<std::collections::BTreeMap<String, Env>>(json!({"env": {"A-B": "x"}})).unwrap_err();
        assert!(nested.starts_with("`env[\"A-B\"]` must be named with"), "{nested}");
        assert!(decode::<Env>(json!({"A": "toolong"})).unwrap_err().contains("at most 5 characters (got 7)"));
        let schema = crate::rules::schema::input_schema::<Env>().to_value();
        assert_eq!(schema["maxProperties"], 2);
        assert_eq!(schema["propertyNames"]["pattern"], "^[A-Z0-9_]{1,100}$");
        assert_eq!(schema["additionalProperties"]["maxLength"], 5);
        assert_eq!(decode::<Email>(json!("ada@example.com")).unwrap().as_str(), "ada@example.com");
        for bad in ["ada", "@example.com", "ada@", "ada@example", "a da@example.com", "a@b@c.com", "a@"] {
            assert!(decode::<Email>(json!(bad)).is_err(), "{bad}");
        }
        assert_eq!(crate::rules::schema::input_schema::<Email>().to_value()["format"], "email");
    }

    #[test]
    fn words_are_published_and_kept() {
        let schema = crate::rules::schema::input_schema::<Option<Thinking>>().to_value();
        assert_eq!(schema["enum"], json!(["off", "low", null]), "{schema}");
        assert_eq!(Thinking::WORDS, ["off", "low"]);
        assert_eq!(Thinking::Low.as_str(), "low");
        assert_eq!(Thinking::from_word("low"), Some(Thinking::Low));
        assert_eq!(serde_json::to_value(Thinking::Off).unwrap(), "off");
    }
}
