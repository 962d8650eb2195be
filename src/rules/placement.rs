//! Where an agent's turns run (`runner`: a person's `sky runner`; `hosted`: a sandbox agentsky starts for
//! the session), and what a hosted agent's sandbox runs and may reach: every rule of an agent's
//! `placement`, `command` and `egress` in one place.

use super::harness::Harness;
use super::params::words;
use super::targets::Provider;

words! {
    /// Where an agent's turns run.
    pub enum Placement {
        Runner = "runner",
        Hosted = "hosted",
    }
}

impl Placement {
    /// [`Placement::Runner`] for a stored word that names none (configs made before placements).
    pub fn of_word(word: &str) -> Placement {
        Placement::from_word(word).unwrap_or(Placement::Runner)
    }
}

/// What a hosted placement says where this deployment runs no sandboxes, at setup and at a turn.
pub fn unavailable(why: &str) -> String {
    format!("`placement: hosted` is not available: {why}")
}

/// How many host names an agent may add to its sandbox's egress allow list.
pub const MAX_EGRESS: usize = 20;

/// Where a sandbox's container reaches this deployment: an address no network has, which the sandbox's
/// object routes to the Worker itself (its `SELF` binding). The container's runner, and the agent CLIs'
/// session and help servers, are given this origin.
pub const SANDBOX_ORIGIN: &str = "http://10.172.0.1";

/// [`SANDBOX_ORIGIN`]'s host, which the sandbox's object intercepts.
pub fn sandbox_host() -> &'static str {
    SANDBOX_ORIGIN.trim_start_matches("http://")
}

/// How long a hosted sandbox may run one turn before it is stopped (seconds).
pub const MAX_RUN_S: i64 = 3_600;

/// An agent's placement, command and egress as a caller sets them, checked against its harness. Each
/// refusal names the field and the rule.
pub fn check(harness: Harness, placement: Placement, command: Option<&str>, egress: &[String]) -> Result<(), String> {
    if placement == Placement::Hosted && !harness.on_runner() {
        return Err(format!(
            "`placement: hosted` is for agents whose turns run on a runner (`runner`, `claude-code`, `codex`); \
             `{harness}` agents already run inside agentsky: leave `placement` out"
        ));
    }
    if let Some(command) = command {
        match (harness, placement) {
            (Harness::Runner, Placement::Hosted) => {}
            (Harness::Runner, Placement::Runner) => {
                return Err("`command` is only for a hosted `runner` agent (`placement: hosted`); the command of a \
                            person's runner is given to `sky runner`, not to the agent"
                    .into())
            }
            (Harness::ClaudeCode | Harness::Codex, _) => {
                return Err("`command` is only for `runner` agents: claude-code and codex agents need no command".into())
            }
            _ => return Err(format!("`command` is only for hosted `runner` agents, not `{harness}` ones")),
        }
        if command.contains(['\n', '\r']) {
            return Err("`command` must be one shell line: it holds a line break".into());
        }
    } else if harness == Harness::Runner && placement == Placement::Hosted {
        return Err("a hosted `runner` agent needs `command`: the shell line its sandbox runs in the turn's folder, \
                    with the message on stdin"
            .into());
    }
    if !egress.is_empty() && placement != Placement::Hosted {
        return Err("`egress` is only for hosted agents (`placement: hosted`): a person's runner reaches what its \
                    machine reaches"
            .into());
    }
    if egress.len() > MAX_EGRESS {
        return Err(format!("`egress` may name at most {MAX_EGRESS} host names; it names {}", egress.len()));
    }
    for (i, host) in egress.iter().enumerate() {
        host_name(host).map_err(|why| format!("`egress[{i}]` must be a host name like `registry.npmjs.org`: {why}"))?;
    }
    Ok(())
}

/// Why `s` is not a DNS host name as an egress allow list names one: lowercase labels of `a-z`, `0-9` and
/// `-` (not at a label's ends), two or more, no scheme, port, path or address.
pub fn host_name(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("it is empty".into());
    }
    if s.contains("://") {
        return Err("leave out the scheme (`https://`)".into());
    }
    if s.contains('/') {
        return Err("leave out the path".into());
    }
    if s.contains(':') {
        return Err("leave out the port".into());
    }
    if s.len() > 253 {
        return Err("it is longer than 253 characters".into());
    }
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("write it in lowercase".into());
    }
    let labels: Vec<&str> = s.split('.').collect();
    if labels.len() < 2 {
        return Err("it needs a domain (`example.com`, not `example`)".into());
    }
    for label in &labels {
        if label.is_empty() || label.len() > 63 {
            return Err("each dot-separated part must be 1 to 63 characters".into());
        }
        if !label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            return Err("only `a-z`, `0-9`, `-` and dots".into());
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a part may not begin or end with `-`".into());
        }
    }
    if labels.last().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err("name the host, not its address".into());
    }
    Ok(())
}

/// npm's registry: where the coding agent CLIs (and a `runner` agent's tools) come from.
const NPM: &str = "registry.npmjs.org";
/// Debian's package mirror: what a `runner` agent's command may install with `apt-get`.
const DEBIAN: &[&str] = &["deb.debian.org", "security.debian.org"];

/// The hosts a hosted agent's sandbox may reach before its own `egress`: the package registries its
/// harness needs, the model API of a coding agent CLI, and the APIs of the targets' providers
/// ([`Provider::api_hosts`]). Sorted, without repeats.
pub fn default_egress(harness: Harness, granted_providers: &[Provider]) -> Vec<String> {
    let mut hosts: Vec<&str> = match harness {
        Harness::ClaudeCode => vec![NPM, "api.anthropic.com"],
        Harness::Codex => vec![NPM, "api.openai.com"],
        Harness::Runner => [DEBIAN, &[NPM]].concat(),
        Harness::Echo | Harness::Openai => vec![],
    };
    for p in granted_providers {
        hosts.extend(p.api_hosts());
    }
    let mut hosts: Vec<String> = hosts.into_iter().map(str::to_owned).collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The default egress with the agent's own hosts added (sorted, without repeats).
pub fn egress(harness: Harness, granted_providers: &[Provider], agent_set: &[String]) -> Vec<String> {
    let mut hosts = default_egress(harness, granted_providers);
    hosts.extend(agent_set.iter().cloned());
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Whether a sandbox whose egress list is `hosts` may reach `host` (a request's host name, without its
/// port): only the names on the list, exactly, in any letter case.
pub fn allows(hosts: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.');
    !host.is_empty() && hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
}

/// Where a hosted sandbox's coding agent CLI finds its model: this deployment's model relay
/// ([`crate::runner::model_relay`]), `<SANDBOX_ORIGIN>/v1/runner/model/<api>`.
pub const MODEL_RELAY: &str = "/v1/runner/model/";

/// A coding agent CLI's model API as a hosted sandbox reaches it: the CLI is pointed at the relay with its
/// sandbox's runner token as its key, and the relay sends each request on to the workspace's endpoint
/// with the workspace's key, which never enters the sandbox.
#[derive(Debug, PartialEq)]
pub struct ModelApi {
    /// The relay's path segment.
    pub name: &'static str,
    /// The workspace secrets naming the endpoint (optional: `default_base`) and its key.
    pub base_secret: &'static str,
    pub key_secret: &'static str,
    pub default_base: &'static str,
    /// The CLI's variables for its endpoint and its key.
    pub cli_base_var: &'static str,
    pub cli_key_var: &'static str,
    /// What the CLI's base ends with that the endpoint's base already includes (OpenAI's `/v1`).
    pub base_path: &'static str,
    /// The header the key goes in, as a bearer token or as it is.
    pub key_header: &'static str,
    pub bearer: bool,
}

/// Claude Code's: the Messages API (the runner token as `ANTHROPIC_AUTH_TOKEN`, sent as a bearer token).
pub const ANTHROPIC: ModelApi = ModelApi {
    name: "anthropic",
    base_secret: "ANTHROPIC_BASE_URL",
    key_secret: "ANTHROPIC_API_KEY",
    default_base: "https://api.anthropic.com",
    cli_base_var: "ANTHROPIC_BASE_URL",
    cli_key_var: "ANTHROPIC_AUTH_TOKEN",
    base_path: "",
    key_header: "x-api-key",
    bearer: false,
};

/// Codex's: the Responses API (its provider's base and key from `OPENAI_BASE_URL` and `OPENAI_API_KEY`).
pub const OPENAI: ModelApi = ModelApi {
    name: "openai",
    base_secret: "OPENAI_BASE_URL",
    key_secret: "OPENAI_API_KEY",
    default_base: "https://api.openai.com/v1",
    cli_base_var: "OPENAI_BASE_URL",
    cli_key_var: "OPENAI_API_KEY",
    base_path: "/v1",
    key_header: "authorization",
    bearer: true,
};

impl ModelApi {
    /// The model API of a harness's CLI.
    pub fn of(harness: Harness) -> Option<&'static ModelApi> {
        match harness {
            Harness::ClaudeCode => Some(&ANTHROPIC),
            Harness::Codex => Some(&OPENAI),
            _ => None,
        }
    }

    pub fn named(name: &str) -> Option<&'static ModelApi> {
        [&ANTHROPIC, &OPENAI].into_iter().find(|a| a.name == name)
    }

    /// The CLI's environment in a sandbox: the relay as its endpoint, the runner token as its key.
    pub fn cli_env(&self, runner_token: &str) -> Vec<(String, String)> {
        let base = format!("{SANDBOX_ORIGIN}{MODEL_RELAY}{}{}", self.name, self.base_path);
        vec![(self.cli_base_var.to_owned(), base), (self.cli_key_var.to_owned(), runner_token.to_owned())]
    }

    /// Where a relayed request goes: the endpoint's base (the workspace's, or the provider's) and what the
    /// CLI added to its own base (`rest`, with its query).
    pub fn upstream(&self, base: Option<&str>, rest: &str) -> String {
        let base = base.unwrap_or(self.default_base).trim_end_matches('/');
        format!("{base}{}", rest.strip_prefix(self.base_path).unwrap_or(rest))
    }

    /// The header that carries the workspace's key.
    pub fn key(&self, key: &str) -> (String, String) {
        let value = if self.bearer { format!("Bearer {key}") } else { key.to_owned() };
        (self.key_header.to_owned(), value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn hosted_is_only_for_harnesses_that_run_on_a_runner() {
        for h in [Harness::Echo, Harness::Openai] {
            let e = check(h, Placement::Hosted, None, &[]).unwrap_err();
            assert!(e.contains("`placement: hosted`") && e.contains("already run inside agentsky"), "{e}");
        }
        assert!(check(Harness::ClaudeCode, Placement::Hosted, None, &[]).is_ok());
        assert!(check(Harness::Codex, Placement::Hosted, None, &[]).is_ok());
        assert!(check(Harness::Runner, Placement::Hosted, Some("make test"), &[]).is_ok());
        for h in [Harness::Echo, Harness::Openai, Harness::Runner, Harness::ClaudeCode, Harness::Codex] {
            assert!(check(h, Placement::Runner, None, &[]).is_ok(), "{h}");
        }
    }

    #[test]
    fn a_command_is_for_hosted_runner_agents_only_and_they_need_one() {
        let e = check(Harness::Runner, Placement::Hosted, None, &[]).unwrap_err();
        assert!(e.starts_with("a hosted `runner` agent needs `command`"), "{e}");
        let e = check(Harness::ClaudeCode, Placement::Hosted, Some("x"), &[]).unwrap_err();
        assert!(e.contains("claude-code and codex agents need no command"), "{e}");
        let e = check(Harness::Codex, Placement::Runner, Some("x"), &[]).unwrap_err();
        assert!(e.contains("need no command"), "{e}");
        let e = check(Harness::Runner, Placement::Runner, Some("x"), &[]).unwrap_err();
        assert!(e.contains("given to `sky runner`"), "{e}");
        let e = check(Harness::Echo, Placement::Runner, Some("x"), &[]).unwrap_err();
        assert!(e.contains("`command` is only for hosted `runner` agents"), "{e}");
        let e = check(Harness::Runner, Placement::Hosted, Some("a\nb"), &[]).unwrap_err();
        assert!(e.contains("one shell line"), "{e}");
    }

    #[test]
    fn a_sandboxed_cli_calls_its_model_through_the_relay_with_the_workspaces_key() {
        assert_eq!(ModelApi::of(Harness::ClaudeCode), Some(&ANTHROPIC));
        assert_eq!(ModelApi::of(Harness::Runner), None);
        assert_eq!(
            OPENAI.cli_env("srt_x"),
            vec![
                ("OPENAI_BASE_URL".to_owned(), "http://10.172.0.1/v1/runner/model/openai/v1".to_owned()),
                ("OPENAI_API_KEY".to_owned(), "srt_x".to_owned())
            ]
        );
        assert_eq!(ANTHROPIC.cli_env("srt_x")[0].1, "http://10.172.0.1/v1/runner/model/anthropic");
        assert_eq!(
            ANTHROPIC.upstream(None, "/v1/messages?beta=true"),
            "https://api.anthropic.com/v1/messages?beta=true"
        );
        assert_eq!(ANTHROPIC.upstream(Some("http://127.0.0.1:9/"), "/v1/messages"), "http://127.0.0.1:9/v1/messages");
        assert_eq!(OPENAI.upstream(None, "/v1/responses"), "https://api.openai.com/v1/responses");
        assert_eq!(
            OPENAI.upstream(Some("https://llm.example.com/openai/v1"), "/v1/responses"),
            "https://llm.example.com/openai/v1/responses"
        );
        assert_eq!(ANTHROPIC.key("k"), ("x-api-key".to_owned(), "k".to_owned()));
        assert_eq!(OPENAI.key("k"), ("authorization".to_owned(), "Bearer k".to_owned()));
        assert_eq!(ModelApi::named("openai"), Some(&OPENAI));
        assert_eq!(ModelApi::named("other"), None);
    }

    #[test]
    fn a_sandbox_reaches_only_the_hosts_on_its_list_exactly() {
        let list = hosts(&["pypi.org", "registry.npmjs.org"]);
        assert!(allows(&list, "pypi.org") && allows(&list, "PyPI.org") && allows(&list, "pypi.org."));
        for host in ["files.pypi.org", "pypi.org.evil.com", "evilpypi.org", "", "example.com", "10.172.0.1"] {
            assert!(!allows(&list, host), "{host}");
        }
        assert!(!allows(&[], "pypi.org"));
    }

    #[test]
    fn egress_names_host_names_of_hosted_agents() {
        let ok = hosts(&["registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "a-b.example.co.uk"]);
        assert!(check(Harness::Codex, Placement::Hosted, None, &ok).is_ok());
        let e = check(Harness::Codex, Placement::Runner, None, &ok).unwrap_err();
        assert!(e.contains("`egress` is only for hosted agents"), "{e}");
        let too_many: Vec<String> = (0..21).map(|i| format!("h{i}.example.com")).collect();
        let e = check(Harness::Codex, Placement::Hosted, None, &too_many).unwrap_err();
        assert!(e.contains("at most 20"), "{e}");
        for (bad, why) in [
            ("https://pypi.org", "scheme"),
            ("pypi.org/simple", "path"),
            ("pypi.org:443", "port"),
            ("PyPI.org", "lowercase"),
            ("localhost", "domain"),
            ("a..b", "1 to 63"),
            ("-a.example.com", "begin or end"),
            ("a_b.example.com", "only `a-z`"),
            ("10.0.0.1", "address"),
            ("", "empty"),
        ] {
            let e = check(Harness::Codex, Placement::Hosted, None, &hosts(&["ok.example.com", bad])).unwrap_err();
            assert!(e.starts_with("`egress[1]` must be a host name") && e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_default_egress_is_the_clis_registries_and_the_targets_apis() {
        assert_eq!(default_egress(Harness::ClaudeCode, &[]), hosts(&["api.anthropic.com", NPM]));
        assert_eq!(default_egress(Harness::Codex, &[]), hosts(&["api.openai.com", NPM]));
        assert_eq!(default_egress(Harness::Runner, &[]), hosts(&["deb.debian.org", NPM, "security.debian.org"]));
        assert!(default_egress(Harness::Echo, &[]).is_empty());
        let with = default_egress(Harness::Codex, &[Provider::Github, Provider::Vercel, Provider::Github]);
        assert_eq!(
            with,
            hosts(&["api.github.com", "api.openai.com", "api.vercel.com", "github.com", NPM, "vercel.com"])
        );
        let every: Vec<Provider> = Provider::WORDS.iter().filter_map(|w| Provider::from_word(w)).collect();
        for h in default_egress(Harness::Runner, &every) {
            host_name(&h).unwrap_or_else(|e| panic!("{h}: {e}"));
        }
        let all = egress(Harness::Codex, &[], &hosts(&["pypi.org", NPM]));
        assert_eq!(all, hosts(&["api.openai.com", "pypi.org", NPM]));
    }

    #[test]
    fn old_configs_are_placed_on_a_runner() {
        assert_eq!(Placement::of_word(""), Placement::Runner);
        assert_eq!(Placement::of_word("hosted"), Placement::Hosted);
    }
}
