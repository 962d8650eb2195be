//! The command line, parsed (with `lexopt`): the command's words, its options, and what follows `--`.
//! Options may come anywhere among the words; `--opt value` and `--opt=value` are the same.

use lexopt::prelude::*;

/// What the command line asked for.
#[derive(Debug, Default, PartialEq)]
pub struct Args {
    /// The command's words: `["auth", "login"]` (`help` for -h/--help, `version` for -V/--version).
    pub words: Vec<String>,
    pub dry_run: bool,
    pub no_browser: bool,
    pub server: Option<String>,
    pub key: Option<String>,
    pub name: Option<String>,
    pub workspace: Option<String>,
    pub command: Option<String>,
    pub once: bool,
    /// `sky runner --hosted`: the runner of a hosted sandbox, set up by its environment.
    pub hosted: bool,
    /// `sky approvals --watch`: desktop notifications and the count in the terminal's title.
    pub watch: bool,
    /// `--push-root DIR` (repeatable): where a runner may push to local repositories.
    pub push_roots: Vec<std::path::PathBuf>,
    /// Everything after `--`.
    pub rest: Option<Vec<String>>,
}

/// Parses the arguments after the program's name; the error says the usage mistake.
pub fn parse(raw: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut a = Args::default();
    let mut p = lexopt::Parser::from_args(raw);
    loop {
        // `--` ends the options, and what follows it is the runner's command, taken as it is.
        if let Some(mut rest) = p.try_raw_args() {
            if rest.peek().is_some_and(|arg| arg == "--") {
                rest.next();
                a.rest = Some(rest.map(|arg| arg.to_string_lossy().into_owned()).collect());
                break;
            }
        }
        let Some(arg) = p.next().map_err(plain)? else { break };
        match arg {
            Long("dry-run") => a.dry_run = true,
            Long("no-browser") => a.no_browser = true,
            Long("once") => a.once = true,
            Long("hosted") => a.hosted = true,
            Long("watch") => a.watch = true,
            Long("server") => a.server = Some(p.value().and_then(|v| v.string()).map_err(plain)?),
            Long("key") => a.key = Some(p.value().and_then(|v| v.string()).map_err(plain)?),
            Long("name") => a.name = Some(p.value().and_then(|v| v.string()).map_err(plain)?),
            Long("workspace") => a.workspace = Some(p.value().and_then(|v| v.string()).map_err(plain)?),
            Long("push-root") => a.push_roots.push(p.value().map_err(plain)?.into()),
            Long("command") => a.command = Some(p.value().and_then(|v| v.string()).map_err(plain)?),
            Short('h') | Long("help") => a.words = vec!["help".into()],
            Short('V') | Long("version") => a.words = vec!["version".into()],
            Value(word) => a.words.push(word.string().map_err(plain)?),
            _ => return Err(plain(arg.unexpected())),
        }
    }
    Ok(a)
}

/// A parse error in sky's words.
fn plain(e: lexopt::Error) -> String {
    match e {
        lexopt::Error::MissingValue { option: Some(o) } => format!("{o} needs a value"),
        lexopt::Error::UnexpectedOption(o) => format!("unknown option {o}"),
        lexopt::Error::UnexpectedValue { option, .. } => format!("{option} takes no value"),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Result<Args, String> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn options_come_anywhere_with_their_value_after_a_space_or_an_equals_sign() {
        let a = parsed("auth --server=https://x.dev login --key sk_1 --no-browser").unwrap();
        assert_eq!(a.words, ["auth", "login"]);
        assert_eq!((a.server.as_deref(), a.key.as_deref(), a.no_browser), (Some("https://x.dev"), Some("sk_1"), true));
        // A value may itself start with a dash.
        assert_eq!(parsed("runner --command -x").unwrap().command.as_deref(), Some("-x"));
    }

    #[test]
    fn what_follows_the_double_dash_is_the_command_as_given() {
        let a = parsed("runner --once -- claude --print -- --key").unwrap();
        assert_eq!(a.words, ["runner"]);
        assert!(a.once && a.key.is_none());
        assert_eq!(a.rest.unwrap(), ["claude", "--print", "--", "--key"]);
        assert_eq!(parsed("runner --").unwrap().rest, Some(vec![]));
        assert_eq!(parsed("runner").unwrap().rest, None);
        let roots = parsed("runner --push-root /srv/a --push-root=/srv/b").unwrap().push_roots;
        assert_eq!(roots, [std::path::PathBuf::from("/srv/a"), "/srv/b".into()]);
    }

    #[test]
    fn help_and_version_replace_the_words() {
        assert_eq!(parsed("setup -h").unwrap().words, ["help"]);
        assert_eq!(parsed("--version").unwrap().words, ["version"]);
        assert_eq!(parsed("-V").unwrap().words, ["version"]);
    }

    #[test]
    fn usage_mistakes_are_named() {
        assert_eq!(parsed("setup --server").unwrap_err(), "--server needs a value");
        assert_eq!(parsed("setup --force").unwrap_err(), "unknown option --force");
        assert_eq!(parsed("setup -x").unwrap_err(), "unknown option -x");
        assert_eq!(parsed("setup --once=yes").unwrap_err(), "--once takes no value");
    }
}
