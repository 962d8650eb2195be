//! Targets (the workspace's connectors) as agents name them.

use crate::store::connectors::ConnectorRow;

pub const PROVIDERS: &[&str] = &["vercel", "aws", "gcp", "supabase", "github", "ssh"];
pub const ENVS: &[&str] = &["prod", "staging", "preview", "scm"];
pub const SCOPES: &[&str] = &["read", "write", "deploy", "delete"];

/// How a target name matched, or why none did.
#[derive(Debug)]
pub enum Match<'a> {
    One(&'a ConnectorRow),
    Ambiguous(Vec<&'a ConnectorRow>),
    None,
}

fn split_env(s: &str) -> Option<(&str, &str)> {
    s.rsplit_once(':')
        .or_else(|| s.rsplit_once('-'))
        .or_else(|| s.rsplit_once(' '))
        .filter(|(_, env)| ENVS.contains(env))
}

/// Finds the target an agent names, case-insensitively, in the contract's order: the target's name;
/// `provider:env` or `provider-env`; name plus env; a bare provider.
pub fn find<'a>(targets: &'a [ConnectorRow], asked: &str) -> Match<'a> {
    let asked = asked.trim().to_lowercase();
    let pick = |found: Vec<&'a ConnectorRow>| match found.len() {
        0 => Match::None,
        1 => Match::One(found[0]),
        _ => Match::Ambiguous(found),
    };
    let by_name: Vec<_> = targets.iter().filter(|t| t.name.to_lowercase() == asked).collect();
    if !by_name.is_empty() {
        return pick(by_name);
    }
    if let Some((head, env)) = split_env(&asked) {
        let by_provider: Vec<_> = targets.iter().filter(|t| t.provider == head && t.env == env).collect();
        if !by_provider.is_empty() {
            return pick(by_provider);
        }
        let by_name_env: Vec<_> = targets.iter().filter(|t| t.name.to_lowercase() == head && t.env == env).collect();
        if !by_name_env.is_empty() {
            return pick(by_name_env);
        }
    }
    pick(targets.iter().filter(|t| t.provider == asked).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, provider: &str, env: &str) -> ConnectorRow {
        ConnectorRow {
            connector_id: format!("con_{name}"),
            workspace_id: "w".into(),
            name: name.into(),
            provider: provider.into(),
            env: env.into(),
            connected: true,
            credentials_expire_ms: None,
            deploy_command: None,
            created_ms: 0,
        }
    }

    #[test]
    fn targets_match_in_the_contracts_order() {
        let all = vec![
            t("db", "supabase", "prod"),
            t("db", "supabase", "staging"),
            t("site", "vercel", "preview"),
            t("web", "vercel", "prod"),
        ];
        let name = |m: Match| match m {
            Match::One(c) => format!("{}/{}", c.name, c.env),
            Match::Ambiguous(v) => format!("ambiguous {}", v.len()),
            Match::None => "none".into(),
        };
        assert_eq!(name(find(&all, "SITE")), "site/preview");
        assert_eq!(name(find(&all, "supabase-prod")), "db/prod");
        assert_eq!(name(find(&all, "vercel:preview")), "site/preview");
        assert_eq!(name(find(&all, "db staging")), "db/staging");
        assert_eq!(name(find(&all, "db")), "ambiguous 2");
        assert_eq!(name(find(&all, "vercel")), "ambiguous 2");
        assert_eq!(name(find(&all, "supabase:prod")), "db/prod");
        assert_eq!(name(find(&all, "aws")), "none");
    }
}
