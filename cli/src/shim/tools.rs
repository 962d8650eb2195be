//! The session server's tools, called from a shim.

use crate::relay::Relay;
use serde_json::{json, Value};

/// The session server's tools, called the way `sky mcp` relays them.
pub struct Tools {
    relay: Relay,
}

/// A tool's failure: the server's message (ending with its code), or the session server unreachable.
#[derive(Debug)]
pub enum ToolFailure {
    Refused(String),
    Unreachable(String),
}

impl Tools {
    pub fn new(server: &str, session_id: &str, token: &str) -> Self {
        Self { relay: Relay::new(server, session_id, token) }
    }

    /// Calls a tool; its JSON result.
    pub fn call(&self, name: &str, arguments: Value) -> Result<Value, ToolFailure> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        let lines = self.relay.forward_quiet(&request.to_string());
        let reply: Value = lines.first().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
        if let Some(message) = reply["error"]["message"].as_str() {
            return Err(if reply["error"]["code"] == -32603 {
                ToolFailure::Unreachable(message.to_owned())
            } else {
                ToolFailure::Refused(message.to_owned())
            });
        }
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        if reply["result"]["isError"] == true {
            return Err(ToolFailure::Refused(text.to_owned()));
        }
        serde_json::from_str(text).map_err(|_| ToolFailure::Unreachable(format!("{name} answered {text:?}")))
    }
}
