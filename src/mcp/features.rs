//! Resources, prompts and completions: what a server may offer besides tools, answered on both eras.
//!
//! A host that offers them returns a [`Features`] from [`ToolHost::features`]; its capabilities are then
//! declared (`resources`, `prompts`, `completions`) and `resources/list`, `resources/templates/list`,
//! `resources/read`, `prompts/list`, `prompts/get` and `completion/complete` are dispatched here. The two
//! eras differ only where the revisions do: the 2026-07-28 lists and reads carry cache hints (SEP-2549),
//! and a missing resource is −32602 with `data.uri` there (SEP-2164) but −32002 on the 2025 wire.
//!
//! Subscriptions: `resources/subscribe` (2025) keeps a per-session subscription list, which a stateless
//! endpoint has nowhere to keep, so the 2025 wire says `subscribe: false`. `subscriptions/listen`
//! (2026-07-28) carries its subscriptions in the request and its notifications on that request's own
//! response stream: served by [`super::listen`] for hosts that can watch ([`Features::watch`]).

use super::rpc::{self, RpcError};
use super::{mrtr_fields, Era, ToolHost, CACHE_SCOPE, LIST_TTL_MS};
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

/// 2025-06-18 … 2025-11-25: "Resource not found". 2026-07-28 uses −32602 instead (SEP-2164).
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
/// Most completion values one answer carries (the spec's cap).
pub const MAX_COMPLETIONS: usize = 100;

/// Why a `resources/read` found nothing to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadFailure {
    /// No such resource, or none the caller may see: the era's not-found error, naming the URI.
    NotFound,
    /// Any other protocol error (a rate limit, an internal failure), answered as is.
    Refused(RpcError),
}

impl From<RpcError> for ReadFailure {
    fn from(error: RpcError) -> Self {
        ReadFailure::Refused(error)
    }
}

/// One `prompts/get`, with the MRTR retry fields of the modern era.
#[derive(Debug, Clone)]
pub struct PromptCall<'a> {
    pub name: &'a str,
    /// `params.arguments`: strings by the spec; anything else is refused before the host sees it.
    pub arguments: Map<String, Value>,
    pub era: Era,
    pub input_responses: Option<&'a Map<String, Value>>,
    pub request_state: Option<&'a str>,
}

/// What `completion/complete` asks about.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionRef<'a> {
    /// `ref/prompt`: an argument of this prompt.
    Prompt(&'a str),
    /// `ref/resource`: a variable of this URI template (or resource URI).
    Resource(&'a str),
}

/// One `completion/complete`.
#[derive(Debug, Clone)]
pub struct Completion<'a> {
    pub reference: CompletionRef<'a>,
    /// The argument (or template variable) being completed.
    pub argument: &'a str,
    /// What has been typed so far.
    pub value: &'a str,
    /// Arguments already chosen (`context.arguments`), e.g. the task whose file paths to offer.
    pub context: Map<String, Value>,
}

/// What `completion/complete` found: the values, best first, and whether the source had more than it read
/// (then the answer says `hasMore` and leaves `total` out, since nobody counted them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completed {
    pub values: Vec<String>,
    pub has_more: bool,
}

/// Resources, prompts and completions of one server, bound to one request.
pub trait Features {
    /// `resources/list`: direct resources in a fixed order. Must be cheap: clients list on every connect.
    fn resources(&self) -> Vec<Value>;
    /// `resources/templates/list`.
    fn resource_templates(&self) -> Vec<Value>;
    /// `resources/read`: the `contents` array (never empty), or why not.
    fn read_resource<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<Vec<Value>, ReadFailure>>;
    /// `prompts/list`.
    fn prompts(&self) -> Vec<Value>;
    /// `prompts/get`: a `GetPromptResult` (or, in the modern era, an `InputRequiredResult`). An unknown
    /// prompt or a missing argument is −32602.
    fn get_prompt<'a>(&'a self, call: PromptCall<'a>) -> LocalBoxFuture<'a, Result<Value, RpcError>>;
    /// `completion/complete`: candidate values, best first. An unknown prompt or template is −32602.
    fn complete<'a>(&'a self, request: Completion<'a>) -> LocalBoxFuture<'a, Result<Completed, RpcError>>;

    /// Whether `subscriptions/listen` may subscribe to resources here (`resources.subscribe` on 2026-07-28).
    fn can_watch(&self) -> bool {
        false
    }
    /// Checks, before a listen is acknowledged, that the caller may read `uri`: `true` when it can change
    /// (it is honored), `false` when it never does (left out of the honored filter), or why it cannot be
    /// read (a missing one is the not-found error `resources/read` gives).
    fn watchable<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<bool, ReadFailure>> {
        let _ = uri;
        Box::pin(async { Ok(false) })
    }
    /// Holds a listen: calls `updated(uri)` as each watched resource changes, until the host's time for one
    /// listen is up or `updated` answers `false` (the client went away).
    fn watch<'a>(&'a self, uris: &'a [String], updated: &'a dyn Fn(&str) -> bool) -> LocalBoxFuture<'a, ()> {
        let _ = (uris, updated);
        Box::pin(async {})
    }
}

/// The capabilities a host with features declares beside `tools`.
pub fn capabilities(era: Era, host: &dyn ToolHost, into: &mut Map<String, Value>) {
    if let Some(features) = host.features() {
        // On 2026-07-28 `subscribe` gates `resourceSubscriptions` of `subscriptions/listen`; on the 2025 wire
        // it would promise `resources/subscribe`, which needs a session.
        let subscribe = era == Era::Modern && features.can_watch();
        into.insert("resources".into(), json!({"subscribe": subscribe, "listChanged": false}));
        into.insert("prompts".into(), json!({"listChanged": false}));
        into.insert("completions".into(), json!({}));
    }
}

/// Answers one of the feature methods, or `None` when `method` is not one (or the host offers none), so
/// the era answers "method not found" as for any other unknown method.
pub async fn answer(
    host: &dyn ToolHost,
    era: Era,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Result<Value, RpcError>> {
    let features = host.features()?;
    let hinted = |mut result: Value, ttl_ms: u64| {
        if era == Era::Modern {
            result["ttlMs"] = json!(ttl_ms);
            result["cacheScope"] = json!(CACHE_SCOPE);
        }
        result
    };
    // Every list is one page: a cursor can only be one we never issued.
    if method.ends_with("/list") {
        if let Some(cursor) = params.get("cursor").filter(|c| !c.is_null()) {
            return Some(Err(RpcError::invalid_params(format!(
                "Invalid params: params.cursor {cursor} was never issued; {method} answers in one page"
            ))));
        }
    }
    Some(match method {
        "resources/list" => Ok(hinted(json!({"resources": features.resources()}), LIST_TTL_MS)),
        "resources/templates/list" => {
            Ok(hinted(json!({"resourceTemplates": features.resource_templates()}), LIST_TTL_MS))
        }
        "prompts/list" => Ok(hinted(json!({"prompts": features.prompts()}), LIST_TTL_MS)),
        "resources/read" => read(features, era, params).await.map(|contents| hinted(json!({"contents": contents}), 0)),
        "prompts/get" => get_prompt(features, era, params).await,
        "completion/complete" => complete(features, params).await,
        _ => return None,
    })
}

/// The modern era's answer for a resource that is not there (or not the caller's): −32602 naming it.
pub fn not_found(era: Era, uri: &str) -> RpcError {
    let code = if era == Era::Modern { rpc::INVALID_PARAMS } else { RESOURCE_NOT_FOUND_LEGACY };
    RpcError::new(code, format!("Resource not found: {uri}")).with_data(json!({"uri": uri}))
}

async fn read(features: &dyn Features, era: Era, params: &Map<String, Value>) -> Result<Vec<Value>, RpcError> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: resources/read needs params.uri, a string"));
    };
    match features.read_resource(uri).await {
        Ok(contents) if !contents.is_empty() => Ok(contents),
        Ok(_) | Err(ReadFailure::NotFound) => Err(not_found(era, uri)),
        Err(ReadFailure::Refused(error)) => Err(error),
    }
}

async fn get_prompt(features: &dyn Features, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: prompts/get needs params.name, the prompt's name"));
    };
    let arguments = string_map(params.get("arguments"), "params.arguments")?;
    let (input_responses, request_state) = match era {
        Era::Legacy => (None, None),
        Era::Modern => mrtr_fields(params)?,
    };
    features.get_prompt(PromptCall { name, arguments, era, input_responses, request_state }).await
}

async fn complete(features: &dyn Features, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let reference = params.get("ref").and_then(Value::as_object);
    let text = |key: &str| reference.and_then(|r| r.get(key)).and_then(Value::as_str);
    let reference = match text("type") {
        Some("ref/prompt") => CompletionRef::Prompt(text("name").ok_or_else(|| {
            RpcError::invalid_params("Invalid params: a ref/prompt reference needs ref.name, the prompt's name")
        })?),
        Some("ref/resource") => CompletionRef::Resource(text("uri").ok_or_else(|| {
            RpcError::invalid_params("Invalid params: a ref/resource reference needs ref.uri, the URI template")
        })?),
        _ => {
            return Err(RpcError::invalid_params(
                "Invalid params: params.ref.type must be \"ref/prompt\" or \"ref/resource\"",
            ))
        }
    };
    let argument = params.get("argument").and_then(Value::as_object);
    let (Some(name), Some(value)) = (
        argument.and_then(|a| a.get("name")).and_then(Value::as_str),
        argument.and_then(|a| a.get("value")).and_then(Value::as_str),
    ) else {
        return Err(RpcError::invalid_params("Invalid params: params.argument needs name and value, both strings"));
    };
    let context = params.get("context").and_then(|c| c.get("arguments"));
    let context = string_map(context, "params.context.arguments")?;
    let found = features.complete(Completion { reference, argument: name, value, context }).await?;
    let total = found.values.len();
    let values: Vec<String> = found.values.into_iter().take(MAX_COMPLETIONS).collect();
    Ok(if found.has_more {
        json!({"completion": {"values": values, "hasMore": true}})
    } else {
        json!({"completion": {"values": values, "total": total, "hasMore": total > MAX_COMPLETIONS}})
    })
}

/// An object of strings (prompt arguments and completion context are strings by the spec), `{}` when
/// absent or null.
fn string_map(value: Option<&Value>, field: &str) -> Result<Map<String, Value>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => match map.iter().find(|(_, v)| !v.is_string()) {
            Some((key, _)) => Err(RpcError::invalid_params(format!("Invalid params: {field}.{key} must be a string"))),
            None => Ok(map.clone()),
        },
        Some(_) => Err(RpcError::invalid_params(format!("Invalid params: {field} must be an object of strings"))),
    }
}

/// The variables of `uri` under `template`, when it matches. `{name}` is one segment (no `/`); `{+name}`
/// (RFC 6570 reserved expansion) may hold slashes, which is how a file path reads in a URI. Values are
/// percent-decoded. The scheme compares case-insensitively (RFC 3986 §3.1).
pub fn match_template(template: &str, uri: &str) -> Option<Map<String, Value>> {
    let (scheme, rest) = uri.split_once("://")?;
    let (template_scheme, pattern) = template.split_once("://")?;
    if !scheme.eq_ignore_ascii_case(template_scheme) {
        return None;
    }
    let mut vars = Map::new();
    let mut rest = rest;
    let mut pattern = pattern;
    while let Some(open) = pattern.find('{') {
        let (literal, after) = pattern.split_at(open);
        rest = rest.strip_prefix(literal)?;
        let close = after.find('}')?;
        let (name, reserved) = match after[1..close].strip_prefix('+') {
            Some(name) => (name, true),
            None => (&after[1..close], false),
        };
        pattern = &after[close + 1..];
        let end = if pattern.is_empty() {
            rest.len()
        } else {
            let next_literal = &pattern[..pattern.find('{').unwrap_or(pattern.len())];
            rest.find(next_literal)?
        };
        let raw = &rest[..end];
        if raw.is_empty() || (!reserved && raw.contains('/')) {
            return None;
        }
        vars.insert(name.to_owned(), json!(percent_decode(raw)?));
        rest = &rest[end..];
    }
    (rest == pattern).then_some(vars)
}

/// A URI from `template` and values for its variables, percent-encoded: `{name}` keeps only unreserved
/// characters, `{+name}` also keeps `/`. The inverse of [`match_template`].
pub fn expand(template: &str, value: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut pattern = template;
    while let Some(open) = pattern.find('{') {
        out.push_str(&pattern[..open]);
        let Some(close) = pattern[open..].find('}').map(|c| open + c) else { break };
        let spec = &pattern[open + 1..close];
        let (name, keep_slash) = spec.strip_prefix('+').map_or((spec, false), |n| (n, true));
        for b in value(name).bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        pattern = &pattern[close + 1..];
    }
    out.push_str(pattern);
    out
}

/// `%XX` decoding; `None` for a malformed escape (two hex digits, nothing else) or bytes that are not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Keeps the candidates that start with what was typed (case-insensitively), in their given order.
pub fn filter_prefix<I: IntoIterator<Item = String>>(candidates: I, typed: &str) -> Vec<String> {
    let typed = typed.to_lowercase();
    candidates.into_iter().filter(|c| c.to_lowercase().starts_with(&typed)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn templates_match_one_segment_and_a_trailing_path() {
        let vars =
            match_template("agentsky://tasks/{task_id}/files/{+path}", "agentsky://tasks/tsk_1/files/a/b%20c.md");
        assert_eq!(Value::Object(vars.unwrap()), json!({"task_id": "tsk_1", "path": "a/b c.md"}));
        let vars = match_template("agentsky://tasks/{task_id}/files/{+path}", "AgentSky://tasks/t/files/x");
        assert_eq!(vars.unwrap()["path"], json!("x"), "the scheme is case-insensitive");
        assert_eq!(match_template("agentsky://tasks/{task_id}/files/{path}", "agentsky://tasks/t/files/a/b"), None);
        let vars = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(vars["id"], json!("123"));
        assert_eq!(match_template("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(match_template("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(match_template("agentsky://help/{lang}/{slug}", "agentsky://help/en"), None);
        assert_eq!(match_template("agentsky://help/{lang}/{slug}", "agentsky://help/en/x%zz"), None);
        assert_eq!(match_template("agentsky://help/{lang}/{slug}", "agentsky://help/en/x%+1"), None);
        assert_eq!(match_template("agentsky://help/{lang}/{slug}", "agentsky://help/en/x%2"), None);
    }

    #[test]
    fn expand_percent_encodes_and_round_trips() {
        let template = "agentsky://tasks/{task_id}/files/{+path}";
        let values = |name: &str| if name == "task_id" { "t/1".to_owned() } else { "a b/ü?#.md".to_owned() };
        let uri = expand(template, values);
        assert_eq!(uri, "agentsky://tasks/t%2F1/files/a%20b/%C3%BC%3F%23.md");
        let vars = match_template(template, &uri).unwrap();
        assert_eq!(Value::Object(vars), json!({"task_id": "t/1", "path": "a b/ü?#.md"}));
    }

    #[test]
    fn completions_keep_prefix_matches_in_order() {
        let got = filter_prefix(["Paris".to_owned(), "london".into(), "park".into()], "PA");
        assert_eq!(got, vec!["Paris".to_owned(), "park".into()]);
    }

    #[test]
    fn a_host_without_features_declares_none_and_answers_no_feature_method() {
        let mut caps = Map::new();
        capabilities(Era::Legacy, &TinyHost, &mut caps);
        assert!(caps.is_empty());
        assert!(block_on(answer(&TinyHost, Era::Legacy, "prompts/list", &Map::new())).is_none());
    }
}
