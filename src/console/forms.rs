//! HTML forms to operation arguments. A form's fields are strings; the operation's published parameter
//! schema says what each one is (an integer, a boolean, a list), so one conversion serves every action
//! and the operation itself still checks every rule.

use crate::http::HttpRequest;
use serde_json::{Map, Value};

/// `a=1&b=x+y` as a browser encodes forms and query strings.
pub fn pairs(encoded: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(encoded.as_bytes()).into_owned().collect()
}

/// One value for a query string.
pub fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

pub fn path_and_query(req: &HttpRequest) -> String {
    if req.query.is_empty() {
        req.path.clone()
    } else {
        format!("{}?{}", req.path, req.query)
    }
}

/// Fields that steer the console, never sent to an operation.
const CONSOLE_FIELDS: &[&str] = &["csrf", "back"];

fn types_of(schema: &Value, name: &str) -> Vec<String> {
    let prop = &schema["properties"][name];
    let t = match prop.get("type") {
        Some(t) => t.clone(),
        // `Option<Enum>` and friends: the first branch that says.
        None => {
            prop["anyOf"].as_array().and_then(|a| a.iter().find_map(|b| b.get("type").cloned())).unwrap_or(Value::Null)
        }
    };
    match t {
        Value::String(s) => vec![s],
        Value::Array(a) => a.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => vec![],
    }
}

/// The arguments of an operation from a form: empty fields are left out; integers, booleans and lists
/// are read as the schema declares them (a list from one value per line or repeated fields, a list of
/// objects from JSON). A value that is not what the schema says stays a string, so the operation refuses
/// it with its own clear error.
pub fn arguments(params_schema: &Value, form: &[(String, String)]) -> Value {
    let mut out = Map::new();
    for (name, raw) in form {
        if CONSOLE_FIELDS.contains(&name.as_str()) {
            continue;
        }
        let types = types_of(params_schema, name);
        let has = |t: &str| types.iter().any(|x| x == t);
        let prop = &params_schema["properties"][name];
        let is_ref = |v: &Value| v.get("$ref").is_some();
        let object = has("object") || is_ref(prop) || prop["anyOf"].as_array().is_some_and(|a| a.iter().any(is_ref));
        let text = raw.replace("\r\n", "\n");
        if text.trim().is_empty() && !has("array") {
            continue;
        }
        let value = if object {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        } else if has("integer") {
            text.trim().parse::<i64>().map(Value::from).unwrap_or(Value::String(text))
        } else if has("boolean") {
            match text.trim() {
                "on" | "true" | "1" | "yes" => Value::Bool(true),
                "false" | "0" | "no" | "off" => Value::Bool(false),
                _ => Value::String(text),
            }
        } else if has("array") {
            let items = &params_schema["properties"][name]["items"];
            let of_objects = items.get("$ref").is_some() || items["type"] == "object";
            if of_objects {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            } else {
                let mut list = match out.remove(name) {
                    Some(Value::Array(a)) => a,
                    _ => vec![],
                };
                list.extend(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| Value::String(l.to_owned())));
                Value::Array(list)
            }
        } else {
            Value::String(text)
        };
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_become_arguments_of_the_types_the_schema_declares() {
        let schema = json!({"properties": {
            "n": {"type": ["integer", "null"]}, "on": {"type": ["boolean", "null"]}, "name": {"type": "string"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "servers": {"type": ["array", "null"], "items": {"$ref": "#/$defs/S"}},
            "credentials": {"anyOf": [{"$ref": "#/$defs/C"}, {"type": "null"}]},
        }});
        let form: Vec<(String, String)> = [
            ("csrf", "x"),
            ("n", " 42 "),
            ("on", "on"),
            ("name", "Ada & co"),
            ("tags", "a\r\nb\n\n"),
            ("tags", "c"),
            ("servers", r#"[{"name":"m","url":"https://m.example"}]"#),
            ("empty", ""),
            ("credentials", r#"{"env": {"T": "x"}}"#),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(
            arguments(&schema, &form),
            json!({"n": 42, "on": true, "name": "Ada & co", "tags": ["a", "b", "c"],
                   "servers": [{"name": "m", "url": "https://m.example"}], "credentials": {"env": {"T": "x"}}})
        );
        let odd = vec![("n".to_owned(), "ten".to_owned())];
        assert_eq!(arguments(&schema, &odd), json!({"n": "ten"}), "left for the operation to refuse clearly");
    }

    #[test]
    fn plus_is_a_space_in_forms() {
        assert_eq!(
            pairs("message=hello+world&x=%2B1"),
            vec![("message".into(), "hello world".into()), ("x".into(), "+1".into())]
        );
    }
}
