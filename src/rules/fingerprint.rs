//! Fingerprints of a call's arguments for idempotency: SHA-256 of canonical JSON (object keys sorted at
//! every depth), so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call.
//! Hand-written (a few lines): a stored fingerprint must never change with a crate's output rules.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Writes `v` as JSON with sorted keys and no whitespace.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The fingerprint of a call: its arguments without the idempotency key itself.
pub fn of_arguments(args: &Value) -> String {
    let mut args = args.clone();
    if let Some(map) = args.as_object_mut() {
        map.remove("idempotency_key");
    }
    hex::encode(Sha256::digest(canonical(&args).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_fingerprint() {
        let a = json!({"message": "hi", "agent_id": "ag_1", "nested": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        let b = json!({"nested": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "agent_id": "ag_1", "message": "hi"});
        assert_eq!(of_arguments(&a), of_arguments(&b));
    }

    #[test]
    fn changed_inputs_change_it_and_the_key_does_not() {
        let a = json!({"message": "hi", "idempotency_key": "k1"});
        assert_eq!(of_arguments(&a), of_arguments(&json!({"message": "hi", "idempotency_key": "k2"})));
        assert_ne!(of_arguments(&a), of_arguments(&json!({"message": "hi!", "idempotency_key": "k1"})));
        assert_ne!(of_arguments(&json!({"n": 1})), of_arguments(&json!({"n": "1"})));
    }
}
