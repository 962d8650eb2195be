//! The REST face: routes matched against the operation table, arguments gathered from the path, the
//! query string (typed by the parameter schema) and the JSON body, answered with the same bodies and
//! codes as the tools, with proper HTTP statuses.

use crate::cx::Cx;
use crate::error::{error_response, ApiError};
use crate::http::{form_pairs, path_segment, HttpRequest, HttpResponse};
use crate::ops::{self, Op, OPS};
use serde_json::{Map, Value};

/// How a request's path relates to the table.
pub enum Route {
    Found(&'static Op, Map<String, Value>),
    /// The path exists, but not with this method: these methods serve it.
    WrongMethod(Vec<&'static str>),
    NotFound,
}

/// Matches a path template (`/v1/agents/{agent_id}`) against a path, collecting the named segments.
pub fn match_path(template: &str, path: &str) -> Option<Map<String, Value>> {
    let mut params = Map::new();
    let mut t = template.trim_end_matches('/').split('/');
    let mut p = path.trim_end_matches('/').split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(ts), Some(ps)) => {
                if let Some(name) = ts.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    if ps.is_empty() {
                        return None;
                    }
                    params.insert(name.to_owned(), Value::String(path_segment(ps)));
                } else if ts != ps {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

pub fn route(method: &str, path: &str) -> Route {
    let mut allowed = Vec::new();
    for op in OPS {
        if let Some(params) = match_path(op.path, path) {
            if op.method == method {
                return Route::Found(op, params);
            }
            allowed.push(op.method);
        }
    }
    if allowed.is_empty() {
        Route::NotFound
    } else {
        Route::WrongMethod(allowed)
    }
}

/// Gathers an operation's arguments: body (an object), then query parameters, then path parameters.
pub fn arguments(op: &Op, req: &HttpRequest, path_params: Map<String, Value>) -> Result<Value, ApiError> {
    let mut args = if req.body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(&req.body) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(ApiError::invalid("the request body must be a JSON object")),
            Err(e) => return Err(ApiError::invalid(format!("the request body is not valid JSON: {e}"))),
        }
    };
    if !req.query.is_empty() {
        let schema = op.params_schema();
        for (k, v) in form_pairs(&req.query) {
            let value = typed(&schema["properties"][&k]["type"], &k, v)?;
            args.insert(k, value);
        }
    }
    args.extend(path_params);
    Ok(Value::Object(args))
}

/// A query string value read as the type its parameter declares.
fn typed(ty: &Value, name: &str, raw: String) -> Result<Value, ApiError> {
    let types: Vec<&str> = match ty {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let bad = || ApiError::invalid(format!("query parameter `{name}` must be {}", types.join(" or ")));
    if types.contains(&"integer") {
        return raw.parse::<i64>().map(Value::from).map_err(|_| bad());
    }
    if types.contains(&"number") {
        return raw.parse::<f64>().map(Value::from).map_err(|_| bad());
    }
    if types.contains(&"boolean") {
        return raw.parse::<bool>().map(Value::from).map_err(|_| bad());
    }
    Ok(Value::String(raw))
}

/// Runs a matched operation and answers as REST does.
pub async fn serve(cx: &Cx<'_>, op: &Op, args: Result<Value, ApiError>) -> HttpResponse {
    let result = match args {
        Ok(args) => ops::invoke(cx, op, args).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(value) => HttpResponse::json(op.http_status(), &value),
        Err(e) => error_response(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_collect_their_named_segments() {
        let p = match_path("/v1/agents/{agent_id}", "/v1/agents/ag_1").unwrap();
        assert_eq!(p["agent_id"], "ag_1");
        assert!(match_path("/v1/agents/{agent_id}", "/v1/agents").is_none());
        assert!(match_path("/v1/agents/{agent_id}", "/v1/agents/a/b").is_none());
        assert!(match_path("/v1/agents", "/v1/agents/").is_some());
        // A path segment's `+` is a plus; only query strings and forms mean a space by it.
        let p = match_path("/v1/files/{path}", "/v1/files/a+b%20c%2Fd").unwrap();
        assert_eq!(p["path"], "a+b c/d");
        assert_eq!(crate::http::form_value("q=a+b%2B&x", "q").as_deref(), Some("a b+"));
    }

    #[test]
    fn a_known_path_with_another_method_is_told_apart_from_an_unknown_one() {
        assert!(
            matches!(route("PUT", "/v1/agents"), Route::WrongMethod(m) if m.contains(&"GET") && m.contains(&"POST"))
        );
        assert!(matches!(route("GET", "/v1/nothing"), Route::NotFound));
        assert!(matches!(route("GET", "/v1/agents"), Route::Found(op, _) if op.name == "list_agents"));
    }
}
