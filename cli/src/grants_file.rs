//! The grants a turn remembers (`AGENTSKY_GRANTS_FILE`): ids and scopes only, never a credential. `sky mcp`
//! (the relay) notes each grant a tool call returns; the provider CLI shims read them and note what they
//! learn. Below both, so neither names the other for it.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A grant remembered in `AGENTSKY_GRANTS_FILE`: ids and scopes only, never a credential.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KnownGrant {
    #[serde(rename = "grantId")]
    pub grant_id: String,
    /// The target's id, when known; else `target` as the agent named it in `request_access`.
    #[serde(default, rename = "targetId", skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default)]
    pub scope: Vec<String>,
}

/// The grants file's entries (missing or unreadable: none).
pub fn known_grants(file: &Path) -> Vec<KnownGrant> {
    std::fs::read_to_string(file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// Remembers a grant (replacing an entry with its id).
pub fn remember_grant(file: &Path, g: KnownGrant) {
    let mut all = known_grants(file);
    all.retain(|k| k.grant_id != g.grant_id);
    all.push(g);
    if let Ok(text) = serde_json::to_string_pretty(&all) {
        let _ = crate::files::write_atomic(file, &(text + "\n"), 0o600);
    }
}

/// For `sky mcp`: remembers the grant a `request_access` (with its `target`) or `check_grant` result
/// carries, in `AGENTSKY_GRANTS_FILE` when that is set.
pub fn note_tool_result(request: &Value, response: &Value) {
    let Some(file) = std::env::var_os("AGENTSKY_GRANTS_FILE").filter(|f| !f.is_empty()) else { return };
    let name = request["params"]["name"].as_str().unwrap_or_default();
    if !matches!(name, "request_access" | "check_grant") || response["result"]["isError"] == true {
        return;
    }
    let Some(text) = response["result"]["content"][0]["text"].as_str() else { return };
    let Ok(v) = serde_json::from_str::<Value>(text) else { return };
    let Some(grant_id) = v["grantId"].as_str() else { return };
    let file = PathBuf::from(file);
    let before = known_grants(&file).into_iter().find(|k| k.grant_id == grant_id);
    let target = request["params"]["arguments"]["target"].as_str().map(str::to_owned);
    let scope: Vec<String> = match v["scope"].as_array() {
        Some(s) => s.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
        None => request["params"]["arguments"]["scope"]
            .as_array()
            .map(|s| s.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .or_else(|| before.as_ref().map(|b| b.scope.clone()))
            .unwrap_or_default(),
    };
    remember_grant(
        &file,
        KnownGrant {
            grant_id: grant_id.to_owned(),
            target_id: before.as_ref().and_then(|b| b.target_id.clone()),
            target: target.or_else(|| before.and_then(|b| b.target)),
            scope,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_remembered_from_the_agents_own_tool_calls() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        let file = dir.join("grants.json");
        remember_grant(
            &file,
            KnownGrant {
                grant_id: "gr_1".into(),
                target_id: Some("con_web".into()),
                target: None,
                scope: vec!["read".into()],
            },
        );
        remember_grant(
            &file,
            KnownGrant {
                grant_id: "gr_1".into(),
                target_id: Some("con_web".into()),
                target: None,
                scope: vec!["read".into(), "deploy".into()],
            },
        );
        let all = known_grants(&file);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].scope, ["read", "deploy"]);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("env"), "ids only: {text}");
    }
}
