//! How an agent's words name a target (a workspace's connector). The server matches `request_access`'s
//! `target` with it, and the runner's shims match `AGENTSKY_TARGET` the same way.

pub const PROVIDERS: &[&str] = &["vercel", "aws", "gcp", "supabase", "github", "ssh"];
pub const ENVS: &[&str] = &["prod", "staging", "preview", "scm"];
pub const SCOPES: &[&str] = &["read", "write", "deploy", "delete"];

/// What matching needs to know of a target, however each side holds it.
pub trait Target {
    fn name(&self) -> &str;
    fn provider(&self) -> &str;
    fn env(&self) -> &str;
}

fn split_env(s: &str) -> Option<(&str, &str)> {
    s.rsplit_once(':')
        .or_else(|| s.rsplit_once('-'))
        .or_else(|| s.rsplit_once(' '))
        .filter(|(_, env)| ENVS.contains(env))
}

/// The targets `asked` names, case-insensitively, by the first of these that matches any: the target's
/// name; `provider:env` or `provider-env`; name plus env; a bare provider. Several means ambiguous.
pub fn find<'a, T: Target>(targets: &'a [T], asked: &str) -> Vec<&'a T> {
    let asked = asked.trim().to_lowercase();
    let by_name: Vec<_> = targets.iter().filter(|t| t.name().to_lowercase() == asked).collect();
    if !by_name.is_empty() {
        return by_name;
    }
    if let Some((head, env)) = split_env(&asked) {
        let by_provider: Vec<_> = targets.iter().filter(|t| t.provider() == head && t.env() == env).collect();
        if !by_provider.is_empty() {
            return by_provider;
        }
        let by_name_env: Vec<_> =
            targets.iter().filter(|t| t.name().to_lowercase() == head && t.env() == env).collect();
        if !by_name_env.is_empty() {
            return by_name_env;
        }
    }
    targets.iter().filter(|t| t.provider() == asked).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct T(&'static str, &'static str, &'static str);
    impl Target for T {
        fn name(&self) -> &str {
            self.0
        }
        fn provider(&self) -> &str {
            self.1
        }
        fn env(&self) -> &str {
            self.2
        }
    }

    #[test]
    fn targets_match_in_the_contracts_order() {
        let all = [
            T("db", "supabase", "prod"),
            T("db", "supabase", "staging"),
            T("site", "vercel", "preview"),
            T("web", "vercel", "prod"),
        ];
        let name = |m: Vec<&T>| match m.as_slice() {
            [one] => format!("{}/{}", one.0, one.2),
            [] => "none".into(),
            several => format!("ambiguous {}", several.len()),
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
