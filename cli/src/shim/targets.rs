//! The session's targets and which one a command means.

use serde_json::Value;

/// A target as `list_targets` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub env: String,
    pub lock_state: String,
}

impl Target {
    pub(super) fn from_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        Some(Self {
            id: s("id")?,
            name: s("name")?,
            provider: s("provider")?,
            env: s("env")?,
            lock_state: s("lockState")?,
        })
    }

    pub fn show(&self) -> String {
        format!("`{}` ({}:{})", self.name, self.provider, self.env)
    }
}

impl agentsky_wire::targets::Target for Target {
    fn name(&self) -> &str {
        &self.name
    }
    fn provider(&self) -> &str {
        &self.provider
    }
    fn env(&self) -> &str {
        &self.env
    }
}

/// The targets `asked` names, matched exactly as the server matches `request_access`'s `target`.
pub fn find_targets<'a>(targets: &'a [Target], asked: &str) -> Vec<&'a Target> {
    agentsky_wire::targets::find(targets, asked)
}

/// Picks the one target of `provider` the command is for, or says why not.
pub fn pick_target<'a>(
    targets: &'a [Target],
    provider: &str,
    env: Option<&str>,
    hint: Option<&str>,
) -> Result<&'a Target, String> {
    let mine: Vec<&Target> = targets.iter().filter(|t| t.provider == provider).collect();
    let list = |ts: &[&Target]| ts.iter().map(|t| t.show()).collect::<Vec<_>>().join(", ");
    if let Some(hint) = hint {
        let found: Vec<&Target> = find_targets(targets, hint).into_iter().filter(|t| t.provider == provider).collect();
        return match found.as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "AGENTSKY_TARGET={hint} names no {provider} target of this project (its {provider} targets: {})",
                if mine.is_empty() { "none".into() } else { list(&mine) }
            )),
            several => Err(format!("AGENTSKY_TARGET={hint} matches several targets: {}", list(several))),
        };
    }
    let fitting: Vec<&Target> = mine.iter().copied().filter(|t| env.is_none_or(|e| t.env == e)).collect();
    match fitting.as_slice() {
        [one] => Ok(one),
        [] if mine.is_empty() => Err(format!(
            "this project has no {provider} target; ask the operator to connect one in agentsky"
        )),
        [] => Err(format!(
            "this command is for the {} env, and this project's {provider} targets are {}; set AGENTSKY_TARGET to the one to use",
            env.unwrap_or("?"),
            list(&mine)
        )),
        several => Err(format!(
            "this project has several {provider} targets ({}); set AGENTSKY_TARGET=<name> for this command",
            list(several)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, provider: &str, env: &str) -> Target {
        Target {
            id: format!("con_{name}"),
            name: name.into(),
            provider: provider.into(),
            env: env.into(),
            lock_state: "locked".into(),
        }
    }

    #[test]
    fn targets_are_picked_by_hint_env_or_uniqueness() {
        let ts = [
            t("web", "vercel", "prod"),
            t("web-preview", "vercel", "preview"),
            t("repo", "github", "scm"),
            t("db", "supabase", "prod"),
        ];
        assert_eq!(pick_target(&ts, "vercel", Some("prod"), None).unwrap().name, "web");
        assert_eq!(pick_target(&ts, "vercel", Some("preview"), None).unwrap().name, "web-preview");
        assert!(pick_target(&ts, "vercel", None, None).unwrap_err().contains("set AGENTSKY_TARGET"));
        assert!(pick_target(&ts, "vercel", Some("staging"), None).unwrap_err().contains("set AGENTSKY_TARGET"));
        assert_eq!(pick_target(&ts, "github", Some("scm"), None).unwrap().name, "repo");
        assert_eq!(pick_target(&ts, "supabase", None, None).unwrap().name, "db");
        assert_eq!(pick_target(&ts, "vercel", None, Some("web-preview")).unwrap().name, "web-preview");
        assert_eq!(pick_target(&ts, "vercel", None, Some("vercel:prod")).unwrap().name, "web");
        assert!(pick_target(&ts, "vercel", None, Some("db")).unwrap_err().contains("names no vercel target"));
        assert!(pick_target(&ts, "aws", None, None).unwrap_err().contains("no aws target"));
        assert_eq!(find_targets(&ts, "SUPABASE-prod")[0].name, "db");
    }
}
