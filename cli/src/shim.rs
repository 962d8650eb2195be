//! Provider CLI shims: in a runner's turn the agent just runs `vercel`, `gh`, `aws`, `gcloud`, `supabase`
//! or `ssh`, and the session's grant is used.
//!
//! **How.** [`install`] puts one symlink per provider CLI, named like it and pointing at this `sky`, into
//! the turn's shim directory, which [`crate::turn`] puts first on the agent's `PATH`
//! (`AGENTSKY_SHIM_DIR`). Started under such a name (or as `sky shim <cli> <args…>`), `sky`:
//! 1. finds the real CLI on `PATH` outside the shim directory (none → a clear message, exit 127);
//! 2. classifies the command line with the provider's table below: commands that need no account
//!    (`--help`, `--version`, local-only ones) run at once, without credentials;
//! 3. picks the target from the session's `list_targets`: `AGENTSKY_TARGET` (a name or `provider:env`)
//!    when set; for `ssh`, else the ssh target named like the destination host (`ssh deploy@web-1 uptime`
//!    → the target `web-1`, if there is one); else the provider's one target for the command's env (from
//!    its flags: `vercel --prod` is `prod`, `gh` is always `scm`), else its only target; several → a
//!    message asking for `AGENTSKY_TARGET`, and nothing is run;
//! 4. finds a live grant of this session for that target covering the scopes: grants are remembered (ids
//!    only, no secrets) in the turn's `AGENTSKY_GRANTS_FILE` by the shims and by `sky mcp` (whatever the
//!    agent's own `request_access` got), and checked with `check_grant`; else opens a request with
//!    `request_access` (which counts against the session's access bucket and waits up to 5 minutes);
//! 5. in a runner's turn (`AGENTSKY_RUNNER_SOCKET` set), asks the runner to run the command under the
//!    grant ([`crate::granted`]): the runner fetches the credential, runs the real CLI from its own `PATH`
//!    with the credential in that child's environment only (stdin empty), streams its output back, and
//!    reports the exit status it saw to the audit log (`command_ok` / `command_failed`) — the only proof a
//!    `deploy` `remember_command` accepts, for exactly the command that ran. Elsewhere (a session token
//!    used outside a runner) it fetches the credential (`get_credential`, recorded in the audit log) and
//!    runs the real CLI with the credential's variables added to its environment (an `ssh-agent`
//!    credential: `SSH_AUTH_SOCK` set to its `socketPath`); nothing proves such a run. Nothing is written
//!    to disk or printed. Commands that need no grant are `exec`ed as they are.
//!
//! **Exit codes** when the real CLI is not run: 77 denied; 75 still pending (run the command again to
//! keep waiting on the same request); 69 refused otherwise (no such target, several candidates, not
//! connected, the access bucket is full, no credential); 70 agentsky could not be reached; 127 the real
//! CLI is not installed. Otherwise the real CLI's own status.
//!
//! **Scopes.** Each table is conservative: what it cannot classify asks for every scope (`read write
//! deploy delete`), the widest a command could need.
//!
//! | CLI | read | write | deploy | delete |
//! |---|---|---|---|---|
//! | `vercel` | `ls`, `list`, `inspect`, `logs`, `whoami`, `pull`, `dev`, `build`, `env ls/pull`, `domains/dns/certs/alias/project/teams ls` | `link`, `env add`, `domains/dns/certs add`, `project add`, `git` | bare `vercel`, `deploy`, `promote`, `rollback`, `redeploy`, `alias set` | `remove`/`rm`, `env rm`, `… rm` |
//! | `gh` | `list`, `view`, `status`, `diff`, `checks`, `download`, `watch`, `clone`, `checkout`, `browse`, `search`, `auth`, `api` (GET) | `create`, `edit`, `comment`, `close`, `reopen`, `merge`, `review`, `ready`, `fork`, `sync`, `set`, `upload`, `api` (POST/PUT/PATCH) … | `workflow run`, `run rerun` (also write) | `delete`, `archive`, `api -X DELETE` |
//! | `aws` | `describe-*`, `list-*`, `get-*`, `head-*`, `scan`, `query`, `wait`, `logs tail`, `s3 ls`, `s3 cp s3://… local` | `create-*`, `put-*`, `update-*`, `modify-*`, `set-*`, `start-*`, `run-*`, `invoke`, `tag-*`, `s3 cp/sync …→ s3://`, `s3 mb` … | `cloudformation deploy/create-stack/update-stack/execute-change-set`, `lambda update-function-code/publish-version/update-alias`, `ecs update-service`, `deploy create-deployment`, … | `delete-*`, `remove-*`, `terminate-*`, `deregister-*`, `revoke-*`, `s3 rm/rb`, `s3 mv` (source), `sync --delete` |
//! | `gcloud` | `list`, `describe`, `get-*`, `read`, `tail`, `get-credentials`, `auth`, `storage ls/cat`, `storage cp gs://… local` | `create`, `update`, `set-*`, `add-*`, `patch`, `import`, `start`, `stop`, `ssh`, `scp`, `enable`, `disable`, `storage cp … gs://` | `deploy`, `builds submit`, `update-traffic`, `run/app/functions … update` | `delete`, `destroy`, `storage rm`, `storage mv` (source) |
//! | `supabase` | `projects/orgs/migration/functions/secrets/branches/backups list`, `inspect`, `gen types`, `db diff/dump/lint`, `link`, `functions download` | `projects create`, `secrets set`, `branches create/update`, `migration repair`, `storage cp/mv` | `db push`, `functions deploy`, `migration up`, `config push` | `projects/functions/branches delete`, `secrets unset`, `storage rm`, `db reset --linked` |
//! | `ssh` | — | — | — | every connection asks for all four: a remote shell can do anything |
//!
//! Local, no credentials: `--help`, `--version`, `help`; `vercel login/logout/telemetry/init`;
//! `gh config/alias/completion`; `aws configure`; `gcloud config/components/init/info/version`;
//! `supabase init/start/stop/status/login/logout/completion/migration new/functions new/functions serve`,
//! and `supabase db reset` without `--linked`/`--db-url`; `ssh -V`.
//!
//! **ssh.** Every connection asks for all four scopes. SSH keys are never files: the server hands the
//! granted key to the runner of this turn, which loads it into the turn's own ssh-agent (see
//! [`crate::turn`]), and `get_credential` answers that agent's socket; the shim runs the real `ssh` with
//! `SSH_AUTH_SOCK` pointing at it. Without ssh targets in the project (git over ssh, say) the real ssh
//! runs untouched.

use crate::relay::Relay;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The shimmed CLIs and the target provider each uses.
pub const SHIMS: &[(&str, &str)] = &[
    ("vercel", "vercel"),
    ("gh", "github"),
    ("aws", "aws"),
    ("gcloud", "gcp"),
    ("supabase", "supabase"),
    ("ssh", "ssh"),
];

/// Every scope, in the server's order: what an unclassifiable command asks for.
pub const WIDEST: &[&str] = &["read", "write", "deploy", "delete"];

pub const EXIT_DENIED: i32 = 77;
pub const EXIT_PENDING: i32 = 75;
pub const EXIT_REFUSED: i32 = 69;
pub const EXIT_UNREACHABLE: i32 = 70;
pub const EXIT_NOT_INSTALLED: i32 = 127;

/// Puts one shim per provider CLI into `dir`: a symlink to `sky` (Unix; elsewhere there are none yet).
pub fn install(sky: &Path, dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    for (cli, _) in SHIMS {
        let link = dir.join(cli);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(sky, &link)?;
    }
    #[cfg(not(unix))]
    let _ = (sky, dir);
    Ok(())
}

/// The CLI a shim was started as, from `argv[0]`'s file name.
pub fn provider_of_argv0(argv0: &str) -> Option<&'static str> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    let name = name.strip_suffix(".exe").unwrap_or(name);
    SHIMS.iter().find(|(cli, _)| *cli == name).map(|(cli, _)| *cli)
}

/// What a command line needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Nothing from the account: run the real CLI as it is.
    Local,
    /// These scopes (canonical order), on a target of this env when the command says which.
    Access { scopes: Vec<&'static str>, env: Option<&'static str> },
}

fn access(scopes: &[&'static str], env: Option<&'static str>) -> Need {
    let mut s: Vec<&'static str> = WIDEST.iter().copied().filter(|w| scopes.contains(w)).collect();
    s.dedup();
    Need::Access { scopes: s, env }
}

/// The positional words of a command line, skipping flags and the values of the `valued` flags
/// (space-separated).
fn positionals<'a>(args: &'a [String], valued: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.extend(it.map(String::as_str));
            break;
        }
        if let Some(flag) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            let _ = flag;
            if !a.contains('=') && one_of(valued, a) {
                it.next();
            }
            continue;
        }
        out.push(a.as_str());
    }
    out
}

/// Whether `w` is one of the space-separated `words`.
fn one_of(words: &str, w: &str) -> bool {
    words.split_whitespace().any(|x| x == w)
}

/// The value of a flag: `--flag v` or `--flag=v`.
fn flag_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            return None;
        }
        for n in names {
            if a == n {
                return it.next().map(String::as_str);
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
    }
    None
}

fn has_flag(args: &[String], names: &[&str]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| names.contains(&a.as_str()) || names.iter().any(|n| a.starts_with(&format!("{n}="))))
}

fn asks_for_help(args: &[String], first: Option<&str>) -> bool {
    first == Some("help") || has_flag(args, &["--help", "--version"])
}

/// Classifies a command line of `cli` (one table per provider; see the module's docs).
pub fn classify(cli: &str, args: &[String]) -> Need {
    match cli {
        "vercel" => vercel(args),
        "gh" => gh(args),
        "aws" => aws(args),
        "gcloud" => gcloud(args),
        "supabase" => supabase(args),
        "ssh" => {
            if args.iter().any(|a| a == "-V") {
                Need::Local
            } else {
                access(WIDEST, None)
            }
        }
        _ => access(WIDEST, None),
    }
}

fn vercel(args: &[String]) -> Need {
    const VALUED: &str =
        "--scope -S --team -T --token -t --cwd --local-config -A --global-config -Q --target --env -e \
        --build-env -b --meta -m --regions --archive --environment";
    const COMMANDS: &str = "deploy ls list inspect logs whoami pull dev build env domains dns certs alias aliases \
        project projects teams team switch link git remove rm promote rollback redeploy login logout telemetry init \
        help integration bisect secrets blob target targets microfrontends mcp open list-deployments";
    let pos = positionals(args, VALUED);
    if asks_for_help(args, pos.first().copied()) {
        return Need::Local;
    }
    let env = if has_flag(args, &["--prod", "--production"]) {
        Some("prod")
    } else {
        match flag_value(args, &["--target", "--environment"]) {
            Some("production") | Some("prod") => Some("prod"),
            Some("preview") => Some("preview"),
            Some("staging") => Some("staging"),
            _ => None,
        }
    };
    // A bare `vercel` (or `vercel <path>`) deploys, to preview unless --prod.
    let cmd = pos.first().copied().filter(|c| one_of(COMMANDS, c)).unwrap_or("deploy");
    let sub = pos.get(1).copied().filter(|_| pos.first().copied() == Some(cmd));
    let deploy_env = env.or(Some("preview"));
    match (cmd, sub) {
        ("login" | "logout" | "telemetry" | "init" | "help" | "switch", _) => Need::Local,
        ("deploy" | "promote" | "rollback" | "redeploy", _) => access(&["deploy"], deploy_env),
        ("ls" | "list" | "list-deployments" | "inspect" | "logs" | "whoami" | "pull" | "dev" | "build" | "open", _) => {
            access(&["read"], env)
        }
        ("remove" | "rm", _) => access(&["delete"], env),
        ("link" | "git", _) => access(&["write"], env),
        ("alias" | "aliases", Some("set")) => access(&["deploy"], env.or(Some("prod"))),
        (
            "env" | "domains" | "dns" | "certs" | "alias" | "aliases" | "project" | "projects" | "teams" | "team"
            | "secrets" | "target" | "targets",
            sub,
        ) => match sub {
            None | Some("ls" | "list" | "pull" | "inspect" | "get") => access(&["read"], env),
            Some("rm" | "remove" | "delete") => access(&["delete"], env),
            Some("add" | "create" | "issue" | "move" | "transfer-in" | "set" | "buy" | "update" | "invite") => {
                access(&["write"], env)
            }
            Some(_) => access(WIDEST, env),
        },
        _ => access(WIDEST, env),
    }
}

fn gh(args: &[String]) -> Need {
    const VALUED: &str = "-R --repo --hostname";
    let pos = positionals(args, VALUED);
    if asks_for_help(args, pos.first().copied()) {
        return Need::Local;
    }
    let scm = Some("scm");
    let (group, verb) = (pos.first().copied().unwrap_or(""), pos.get(1).copied().unwrap_or(""));
    match group {
        "config" | "alias" | "completion" | "version" | "help" => return Need::Local,
        "auth" | "status" | "browse" | "search" => return access(&["read"], scm),
        "api" => {
            let method = flag_value(args, &["-X", "--method"]).map(str::to_ascii_uppercase);
            let fields = has_flag(args, &["-f", "-F", "--field", "--raw-field", "--input"]);
            return match method.as_deref() {
                Some("GET" | "HEAD") => access(&["read"], scm),
                Some("DELETE") => access(&["delete"], scm),
                Some(_) => access(&["write"], scm),
                None if fields => access(&["write"], scm),
                None => access(&["read"], scm),
            };
        }
        "" | "extension" | "extensions" | "ext" | "codespace" | "cs" => return access(WIDEST, scm),
        _ => {}
    }
    match (group, verb) {
        ("workflow", "run") | ("run", "rerun") => access(&["write", "deploy"], scm),
        (_, "list" | "ls" | "view" | "status" | "diff" | "checks" | "download" | "watch" | "clone" | "checkout")
        | ("repo", "set-default") => access(&["read"], scm),
        (_, "delete" | "archive" | "delete-asset") => access(&["delete"], scm),
        (
            _,
            "create" | "edit" | "comment" | "close" | "reopen" | "merge" | "ready" | "review" | "lock" | "unlock"
            | "pin" | "unpin" | "transfer" | "fork" | "sync" | "rename" | "set" | "upload" | "enable" | "disable"
            | "cancel" | "add" | "remove" | "develop" | "unarchive" | "import" | "clone-labels" | "update-branch"
            | "revert",
        ) => access(&["write"], scm),
        _ => access(WIDEST, scm),
    }
}

fn aws(args: &[String]) -> Need {
    const VALUED: &str = "--profile --region --output --endpoint-url --query --color --ca-bundle --cli-read-timeout \
        --cli-connect-timeout --cli-binary-format --cli-input-json --cli-input-yaml";
    let pos = positionals(args, VALUED);
    if asks_for_help(args, pos.first().copied()) || pos.contains(&"help") {
        return Need::Local;
    }
    let (service, op) = (pos.first().copied().unwrap_or(""), pos.get(1).copied().unwrap_or(""));
    if service == "configure" {
        return Need::Local;
    }
    if service == "s3" {
        let remote = |p: Option<&&str>| p.is_some_and(|p| p.starts_with("s3://"));
        let (src, dst) = (pos.get(2), pos.get(3));
        return match op {
            "ls" | "presign" => access(&["read"], None),
            "rm" | "rb" => access(&["delete"], None),
            "mb" | "website" => access(&["write"], None),
            "cp" | "mv" | "sync" => {
                let mut scopes = vec![];
                if remote(src) {
                    scopes.push("read");
                }
                if remote(dst) {
                    scopes.push("write");
                }
                if (op == "mv" && remote(src)) || (op == "sync" && has_flag(args, &["--delete"]) && remote(dst)) {
                    scopes.push("delete");
                }
                if scopes.is_empty() {
                    access(WIDEST, None)
                } else {
                    access(&scopes, None)
                }
            }
            _ => access(WIDEST, None),
        };
    }
    const DEPLOYS: &str = "cloudformation/deploy cloudformation/create-stack cloudformation/update-stack \
        cloudformation/execute-change-set lambda/update-function-code lambda/publish-version lambda/update-alias \
        ecs/update-service deploy/create-deployment elasticbeanstalk/update-environment \
        elasticbeanstalk/create-environment amplify/start-deployment amplify/start-job apprunner/start-deployment \
        apprunner/update-service cloudfront/update-distribution";
    if one_of(DEPLOYS, &format!("{service}/{op}")) {
        return access(&["deploy"], None);
    }
    let starts = |prefixes: &str| prefixes.split_whitespace().any(|p| op.starts_with(p));
    if starts("describe- list- get- head- lookup- search- batch-get- filter- validate- estimate-")
        || matches!(op, "scan" | "query" | "wait" | "tail" | "get-caller-identity")
    {
        access(&["read"], None)
    } else if starts("delete- remove- terminate- deregister- revoke- purge- batch-delete-") {
        access(&["delete"], None)
    } else if starts(
        "create- put- update- modify- set- attach- associate- start- stop- run- register- tag- untag- \
        send- enable- disable- reboot- restore- import- copy- upload- add- reset- replace- authorize- allocate- \
        assign- detach- disassociate- cancel- publish invoke batch-write-",
    ) {
        access(&["write"], None)
    } else {
        access(WIDEST, None)
    }
}

fn gcloud(args: &[String]) -> Need {
    const VALUED: &str = "--project --account --configuration --format --verbosity --region --zone \
        --impersonate-service-account --billing-project --flatten --filter --limit --sort-by --page-size --trace-token";
    let pos: Vec<&str> =
        positionals(args, VALUED).into_iter().skip_while(|w| matches!(*w, "alpha" | "beta" | "preview")).collect();
    if asks_for_help(args, pos.first().copied()) {
        return Need::Local;
    }
    let group = pos.first().copied().unwrap_or("");
    match group {
        "config" | "components" | "init" | "info" | "version" | "help" | "topic" | "cheat-sheet" | "feedback" => {
            return Need::Local
        }
        "auth" => return access(&["read"], None),
        "storage" => {
            let remote = |p: Option<&&str>| p.is_some_and(|p| p.starts_with("gs://"));
            let (src, dst) = (pos.get(2), pos.get(3));
            return match pos.get(1).copied().unwrap_or("") {
                "ls" | "cat" | "du" | "hash" | "sign-url" => access(&["read"], None),
                "rm" => access(&["delete"], None),
                "cp" | "mv" | "rsync" => {
                    let mut scopes = vec![];
                    if remote(src) {
                        scopes.push("read");
                    }
                    if remote(dst) {
                        scopes.push("write");
                    }
                    if pos.get(1) == Some(&"mv") && remote(src)
                        || (has_flag(args, &["--delete-unmatched-destination-objects"]) && remote(dst))
                    {
                        scopes.push("delete");
                    }
                    if scopes.is_empty() {
                        access(WIDEST, None)
                    } else {
                        access(&scopes, None)
                    }
                }
                _ => access(WIDEST, None),
            };
        }
        _ => {}
    }
    // The verb: the first known word after the group (`gcloud compute instances list` → `list`).
    for (i, w) in pos.iter().enumerate().skip(1) {
        let scopes: &[&str] = match *w {
            "deploy" | "update-traffic" | "set-traffic" | "migrate" => &["deploy"],
            "submit" if pos.get(i - 1) == Some(&"builds") => &["deploy"],
            "update" if matches!(group, "run" | "app" | "functions") => &["deploy"],
            "list" | "describe" | "read" | "tail" | "get-credentials" | "get" | "print-access-token" | "check"
            | "search" | "logs" => &["read"],
            w if w.starts_with("get-") || w.starts_with("list-") || w.starts_with("describe-") => &["read"],
            "delete" | "destroy" => &["delete"],
            w if w.starts_with("delete-") => &["delete"],
            "create"
            | "update"
            | "patch"
            | "import"
            | "start"
            | "stop"
            | "reset"
            | "resize"
            | "ssh"
            | "scp"
            | "execute"
            | "enable"
            | "disable"
            | "undelete"
            | "restore"
            | "attach"
            | "detach"
            | "move"
            | "copy"
            | "add-iam-policy-binding"
            | "remove-iam-policy-binding"
            | "set-iam-policy"
            | "submit"
            | "run"
            | "call"
            | "publish"
            | "connect"
            | "resume"
            | "suspend"
            | "cancel"
            | "rollback"
            | "approve" => &["write"],
            w if w.starts_with("set-")
                || w.starts_with("add-")
                || w.starts_with("remove-")
                || w.starts_with("update-") =>
            {
                &["write"]
            }
            _ => continue,
        };
        return access(scopes, None);
    }
    access(WIDEST, None)
}

fn supabase(args: &[String]) -> Need {
    const VALUED: &str =
        "--project-ref --workdir --db-url -p --password --output -o --profile --env-file --network-id \
        --dns-resolver --schema -s";
    let pos = positionals(args, VALUED);
    if asks_for_help(args, pos.first().copied()) {
        return Need::Local;
    }
    let remote_db = has_flag(args, &["--linked", "--db-url"]);
    let (cmd, sub) = (pos.first().copied().unwrap_or(""), pos.get(1).copied().unwrap_or(""));
    match (cmd, sub) {
        ("init" | "start" | "stop" | "status" | "login" | "logout" | "completion" | "bootstrap" | "services", _)
        | ("migration" | "migrations", "new")
        | ("functions", "new" | "serve")
        | ("db", "start")
        | ("gen", "keys")
        | ("test", _) => Need::Local,
        ("db", "reset") if !remote_db => Need::Local,
        ("db", "reset") => access(&["delete"], None),
        ("db", "push") | ("functions", "deploy") | ("migration" | "migrations", "up") | ("config", "push") => {
            access(&["deploy"], None)
        }
        ("db", "diff" | "dump" | "lint" | "pull") | ("inspect", _) | ("gen", _) | ("link" | "unlink", _) => {
            access(&["read"], None)
        }
        ("storage", "ls") => access(&["read"], None),
        ("storage", "rm") => access(&["delete"], None),
        ("storage", "cp" | "mv") => access(&["read", "write"], None),
        ("secrets", "unset") => access(&["delete"], None),
        (_, "list" | "ls" | "get" | "show" | "download" | "api-keys" | "fetch") => access(&["read"], None),
        (_, "delete" | "remove") => access(&["delete"], None),
        (
            _,
            "create" | "set" | "update" | "repair" | "activate" | "reverify" | "add" | "pause" | "unpause" | "squash",
        ) => access(&["write"], None),
        _ => access(WIDEST, None),
    }
}

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
    fn from_json(v: &Value) -> Option<Self> {
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

/// The real `cli`: the first executable of that name on `path` outside `skip` that is not this `sky`.
pub fn find_real(cli: &str, path: Option<&OsString>, skip: &[PathBuf], me: Option<&Path>) -> Option<PathBuf> {
    // The folder relative `PATH` entries are read against.
    let cwd = std::env::current_dir().unwrap_or_default();
    let me = me.and_then(|m| std::fs::canonicalize(m).ok());
    let skip: Vec<PathBuf> = skip.iter().filter_map(|d| std::fs::canonicalize(d).ok()).collect();
    let outside_skip =
        |c: &PathBuf| c.parent().and_then(|d| std::fs::canonicalize(d).ok()).is_none_or(|d| !skip.contains(&d));
    which::which_in_all(cli, Some(path?), cwd)
        .ok()?
        .filter(outside_skip)
        .find(|candidate| me.is_none() || std::fs::canonicalize(candidate).ok() != me)
}

/// Runs `real` with `args` and extra `env`: replaces this process on Unix; returns the exit code.
fn run_real(real: &Path, args: &[String], env: &[(String, String)]) -> i32 {
    let mut cmd = std::process::Command::new(real);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    #[cfg(unix)]
    {
        let e = std::os::unix::process::CommandExt::exec(&mut cmd);
        eprintln!("sky shim: cannot run {}: {e}", real.display());
        EXIT_NOT_INSTALLED
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("sky shim: cannot run {}: {e}", real.display());
            EXIT_NOT_INSTALLED
        }
    }
}

/// Runs the real CLI with a grant's credential outside a runner's turn and waits for it: its exit status,
/// 128 + the signal for one that ended it, as shells do. Nothing is reported (nothing observed it).
fn run_granted(real: &Path, args: &[String], env: &[(String, String)]) -> i32 {
    let status = std::process::Command::new(real).args(args).envs(env.iter().map(|(k, v)| (k, v))).status();
    match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            #[cfg(unix)]
            if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&s) {
                return 128 + sig;
            }
            1
        }),
        Err(e) => {
            say(&format!("cannot run {}: {e}", real.display()));
            EXIT_NOT_INSTALLED
        }
    }
}

fn say(line: &str) {
    eprintln!("sky shim: {line}");
}

/// Runs the shim of `cli` with `args`; returns the exit code when it does not become the real CLI.
pub fn main(cli: &str, args: &[String]) -> i32 {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let me = std::env::current_exe().ok();
    let mut skip: Vec<PathBuf> = var("AGENTSKY_SHIM_DIR").map(PathBuf::from).into_iter().collect();
    if let Some(dir) = std::env::args_os().next().map(PathBuf::from).and_then(|a| a.parent().map(Path::to_owned)) {
        if !dir.as_os_str().is_empty() {
            skip.push(dir);
        }
    }
    let path = std::env::var_os("PATH");
    let Some(real) = find_real(cli, path.as_ref(), &skip, me.as_deref()) else {
        say(&format!(
            "the real `{cli}` is not installed here (not found on PATH outside agentsky's shim directory); install it and run the command again"
        ));
        return EXIT_NOT_INSTALLED;
    };
    let provider = SHIMS.iter().find(|(c, _)| *c == cli).map(|(_, p)| *p).unwrap_or(cli);
    let (scopes, env) = match classify(cli, args) {
        Need::Local => return run_real(&real, args, &[]),
        Need::Access { scopes, env } => (scopes, env),
    };
    let (Some(session_id), Some(token)) = (var("AGENTSKY_SESSION_ID"), var("AGENTSKY_SESSION_TOKEN")) else {
        // Not in an agentsky session: the shim has nothing to add.
        return run_real(&real, args, &[]);
    };
    let server = var("AGENTSKY_SERVER").unwrap_or_else(|| crate::DEFAULT_SERVER.to_owned());
    let tools = Tools::new(&server, &session_id, &token);
    let grants_file = var("AGENTSKY_GRANTS_FILE").map(PathBuf::from);
    let valued = if cli == "ssh" { "-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -P -p -Q -R -S -W -w" } else { "" };
    let words: Vec<&str> = positionals(args, valued).into_iter().take(2).collect();
    let shown = format!("{cli}{}{}", if words.is_empty() { "" } else { " " }, words.join(" "));
    // The whole command goes with a request, so the person deciding sees what will run (the server masks
    // anything secret-looking in it).
    let whole: String = std::iter::once(cli)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(2000)
        .collect();
    let targets = match list_targets(&tools) {
        Ok(t) => t,
        Err((code, why)) => {
            say(&format!("{why}; `{cli}` was not run"));
            return code;
        }
    };
    // ssh also serves git and anything else; only the project's ssh targets are agentsky's business.
    if cli == "ssh" && !targets.iter().any(|t| t.provider == "ssh") {
        return run_real(&real, args, &[]);
    }
    let hint = var("AGENTSKY_TARGET");
    let host_target = if cli == "ssh" && hint.is_none() {
        ssh_destination_host(args)
            .and_then(|host| targets.iter().find(|t| t.provider == "ssh" && t.name.eq_ignore_ascii_case(host)))
    } else {
        None
    };
    let picked = match host_target {
        Some(t) => Ok(t),
        None => pick_target(&targets, provider, env, hint.as_deref()),
    };
    let obtained = picked
        .map_err(|why| (EXIT_REFUSED, why))
        .and_then(|target| obtain(&tools, &targets, target, &scopes, grants_file.as_deref(), &shown, &whole));
    #[cfg(unix)]
    if let (Ok(grant_id), Some(socket), Some(secret)) =
        (&obtained, var(crate::granted::SOCKET_ENV), var(crate::granted::SECRET_ENV))
    {
        return through_runner(Path::new(&socket), secret, cli, args, grant_id.clone());
    }
    match obtained.and_then(|grant_id| credential(&tools, &grant_id)) {
        Ok(env) => run_granted(&real, args, &env),
        Err((code, why)) => {
            say(&format!("{why}; `{cli}` was not run"));
            code
        }
    }
}

fn failure(f: ToolFailure, what: &str) -> (i32, String) {
    match f {
        ToolFailure::Refused(m) => (EXIT_REFUSED, format!("agentsky refused {what}: {m}")),
        ToolFailure::Unreachable(m) => (EXIT_UNREACHABLE, format!("{what} failed: {m}")),
    }
}

/// The project's targets (`list_targets`).
fn list_targets(tools: &Tools) -> Result<Vec<Target>, (i32, String)> {
    let listed = tools.call("list_targets", json!({})).map_err(|f| failure(f, "list_targets"))?;
    Ok(listed.as_array().map(|a| a.iter().filter_map(Target::from_json).collect()).unwrap_or_default())
}

/// ssh's options that take a value (`ssh -p 22`, `-p22`), from its manual.
const SSH_VALUED: &str = "BbcDEeFIiJLlmOoPpQRSWw";

/// The host an ssh command line connects to: its first operand, without `user@`, `ssh://` or `:port`.
pub fn ssh_destination_host(args: &[String]) -> Option<&str> {
    let mut it = args.iter();
    let destination = loop {
        let a = it.next()?;
        if a == "--" {
            break it.next()?;
        }
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else { break a };
        // Bundled flags (`-vp 22`): the first valued one takes the rest of the word, or the next word.
        if let Some(i) = flags.find(|c| SSH_VALUED.contains(c)) {
            if i + 1 == flags.len() {
                it.next();
            }
        }
    };
    let (uri, rest) = match destination.strip_prefix("ssh://") {
        Some(r) => (true, r),
        None => (false, destination.as_str()),
    };
    let rest = if uri { rest.split('/').next().unwrap_or(rest) } else { rest };
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(h) => h.split(']').next().unwrap_or(h),
        None if uri => host.split(':').next().unwrap_or(host),
        None => host,
    };
    Some(host).filter(|h| !h.is_empty())
}

/// Finds or asks for a grant on `target` covering `scopes`: the live grant's id.
fn obtain(
    tools: &Tools,
    targets: &[Target],
    target: &Target,
    scopes: &[&str],
    grants_file: Option<&Path>,
    shown: &str,
    whole: &str,
) -> Result<String, (i32, String)> {
    match target.lock_state.as_str() {
        "unconnected" => {
            return Err((
                EXIT_REFUSED,
                format!("{} is not connected yet; ask the operator to connect it in agentsky", target.show()),
            ))
        }
        "expired" => {
            return Err((
                EXIT_REFUSED,
                format!("the credentials of {} have expired; ask the operator to reconnect it", target.show()),
            ))
        }
        _ => {}
    }
    let scope_list = scopes.join(" ");
    let covers = |granted: &[String]| scopes.iter().all(|s| granted.iter().any(|g| g == s));
    // A grant this session already has (or a request still open), newest first.
    let known: Vec<KnownGrant> = grants_file.map(known_grants).unwrap_or_default();
    let mine = known.iter().rev().filter(|k| {
        let same_target = match (&k.target_id, &k.target) {
            (Some(id), _) => id == &target.id,
            (None, Some(named)) => find_targets(targets, named).iter().any(|t| t.id == target.id),
            _ => false,
        };
        same_target && covers(&k.scope)
    });
    let mut grant = None;
    for k in mine {
        match tools.call("check_grant", json!({ "grantId": k.grant_id })) {
            Ok(g) if g["status"] == "active" || g["status"] == "pending" => {
                grant = Some(g);
                break;
            }
            Ok(_) | Err(ToolFailure::Refused(_)) => continue,
            Err(f) => return Err(failure(f, "check_grant")),
        }
    }
    let g = match grant {
        Some(g) => g,
        None => {
            say(&format!(
                "asking for {scope_list} on {} for `{shown}`; waiting for the operator's answer (up to 5 minutes)…",
                target.show()
            ));
            let reason = format!("Run `{shown}` (through agentsky's {} shim).", shown.split(' ').next().unwrap_or(""));
            tools
                .call(
                    "request_access",
                    json!({ "target": target.name, "scope": scopes, "reason": reason, "command": whole }),
                )
                .map_err(|f| failure(f, "the access request"))?
        }
    };
    let grant_id = g["grantId"].as_str().unwrap_or_default().to_owned();
    if let Some(file) = grants_file {
        remember_grant(
            file,
            KnownGrant {
                grant_id: grant_id.clone(),
                target_id: Some(target.id.clone()),
                target: Some(target.name.clone()),
                scope: scopes.iter().map(|s| s.to_string()).collect(),
            },
        );
    }
    match g["status"].as_str() {
        Some("active") => {}
        Some("denied") => {
            return Err((EXIT_DENIED, format!("access to {} for {scope_list} was denied (grant {grant_id})", target.show())))
        }
        _ => {
            return Err((
                EXIT_PENDING,
                format!(
                    "the request for {scope_list} on {} is not answered yet (grant {grant_id}); run the command again to keep waiting for it",
                    target.show()
                ),
            ))
        }
    }
    say(&format!("using grant {grant_id} ({scope_list} on {}) for `{shown}`", target.show()));
    Ok(grant_id)
}

/// A grant's credential as the variables it adds (`get_credential`, recorded in the audit log).
fn credential(tools: &Tools, grant_id: &str) -> Result<Vec<(String, String)>, (i32, String)> {
    let cred =
        tools.call("get_credential", json!({ "grantId": grant_id })).map_err(|f| failure(f, "get_credential"))?;
    credential_env(&cred).ok_or_else(|| {
        (EXIT_REFUSED, format!("the credential of grant {grant_id} is neither environment variables nor an ssh-agent"))
    })
}

/// Has the runner of this turn run the command under `grant_id` ([`crate::granted`]); its exit status.
#[cfg(unix)]
fn through_runner(socket: &Path, secret: String, cli: &str, args: &[String], grant_id: String) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_default();
    let request = crate::granted::Request { secret, cli: cli.to_owned(), args: args.to_vec(), grant_id, cwd };
    crate::granted::run(socket, &request).unwrap_or_else(|why| {
        say(&format!("{why}; the command's end is unknown"));
        EXIT_UNREACHABLE
    })
}

/// The variables a credential adds: an `env` credential's own, or an `ssh-agent`'s socket as
/// `SSH_AUTH_SOCK` (the key stays in the runner's agent).
fn credential_env(cred: &Value) -> Option<Vec<(String, String)>> {
    match cred["kind"].as_str()? {
        "env" => Some(
            cred["env"]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                .unwrap_or_default(),
        ),
        "ssh-agent" => {
            let socket = cred["socketPath"].as_str().or_else(|| cred["env"]["SSH_AUTH_SOCK"].as_str())?;
            Some(vec![("SSH_AUTH_SOCK".to_owned(), socket.to_owned())])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(cli: &str, line: &str) -> Need {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        classify(cli, &args)
    }

    fn scopes(cli: &str, line: &str) -> String {
        match need(cli, line) {
            Need::Local => "local".into(),
            Need::Access { scopes, env } => {
                format!("{}{}", scopes.join(" "), env.map(|e| format!(" @{e}")).unwrap_or_default())
            }
        }
    }

    #[test]
    fn vercel_commands() {
        for (line, want) in [
            ("", "deploy @preview"),
            ("--prod", "deploy @prod"),
            ("deploy --prod", "deploy @prod"),
            ("deploy --target=staging", "deploy @staging"),
            ("./site --yes", "deploy @preview"),
            ("promote dpl_1 --scope team", "deploy @preview"),
            ("ls", "read"),
            ("logs https://x.vercel.app", "read"),
            ("env ls production", "read"),
            ("env pull --environment=production", "read @prod"),
            ("env add FOO production", "write"),
            ("env rm FOO --yes", "delete"),
            ("rm my-app", "delete"),
            ("domains add example.com", "write"),
            ("alias set dpl.vercel.app example.com", "deploy @prod"),
            ("whoami", "read"),
            ("login", "local"),
            ("--version", "local"),
            ("deploy --help", "local"),
            ("env frobnicate", "read write deploy delete"),
            ("--token t_secret ls", "read"),
        ] {
            assert_eq!(scopes("vercel", line), want, "vercel {line}");
        }
    }

    #[test]
    fn gh_commands() {
        for (line, want) in [
            ("pr list", "read @scm"),
            ("-R acme/web pr view 12", "read @scm"),
            ("pr create --title x --body y", "write @scm"),
            ("pr merge 12 --squash", "write @scm"),
            ("repo delete acme/web --yes", "delete @scm"),
            ("release delete v1", "delete @scm"),
            ("workflow run deploy.yml", "write deploy @scm"),
            ("api repos/acme/web", "read @scm"),
            ("api repos/acme/web/issues -f title=x", "write @scm"),
            ("api -X DELETE repos/acme/web/hooks/1", "delete @scm"),
            ("api --method=PATCH repos/acme/web", "write @scm"),
            ("auth status", "read @scm"),
            ("config set editor vim", "local"),
            ("extension exec foo", "read write deploy delete @scm"),
            ("", "read write deploy delete @scm"),
            ("pr frob", "read write deploy delete @scm"),
        ] {
            assert_eq!(scopes("gh", line), want, "gh {line}");
        }
    }

    #[test]
    fn aws_commands() {
        for (line, want) in [
            ("sts get-caller-identity", "read"),
            ("--profile prod ec2 describe-instances", "read"),
            ("s3 ls s3://bucket", "read"),
            ("s3 cp s3://bucket/a.txt ./a.txt", "read"),
            ("s3 cp ./a.txt s3://bucket/a.txt", "write"),
            ("s3 sync ./dist s3://site --delete", "write delete"),
            ("s3 mv s3://a/x s3://b/x", "read write delete"),
            ("s3 rm s3://bucket/a.txt", "delete"),
            ("cloudformation deploy --template-file t.yml --stack-name s", "deploy"),
            ("lambda update-function-code --function-name f --zip-file fileb://f.zip", "deploy"),
            ("ec2 terminate-instances --instance-ids i-1", "delete"),
            ("dynamodb put-item --table-name t --item {}", "write"),
            ("dynamodb scan --table-name t", "read"),
            ("configure list", "local"),
            ("ec2 describe-instances help", "local"),
            ("ec2 frobnicate", "read write deploy delete"),
            ("s3 cp a b", "read write deploy delete"),
        ] {
            assert_eq!(scopes("aws", line), want, "aws {line}");
        }
    }

    #[test]
    fn gcloud_commands() {
        for (line, want) in [
            ("compute instances list --project p", "read"),
            ("beta run services describe api --region eu", "read"),
            ("run deploy api --image gcr.io/p/api", "deploy"),
            ("app deploy app.yaml", "deploy"),
            ("builds submit --tag gcr.io/p/x", "deploy"),
            ("run services update api --memory 1Gi", "deploy"),
            ("compute instances delete vm-1", "delete"),
            ("compute instances create vm-1", "write"),
            ("compute ssh vm-1", "write"),
            ("projects add-iam-policy-binding p --member x --role y", "write"),
            ("storage cp ./a gs://b/a", "write"),
            ("storage cp gs://b/a ./a", "read"),
            ("storage rm gs://b/a", "delete"),
            ("config set project p", "local"),
            ("auth print-access-token", "read"),
            ("compute frobnicate", "read write deploy delete"),
        ] {
            assert_eq!(scopes("gcloud", line), want, "gcloud {line}");
        }
    }

    #[test]
    fn supabase_and_ssh_commands() {
        for (line, want) in [
            ("projects list", "read"),
            ("db push --linked", "deploy"),
            ("functions deploy hello --project-ref abc", "deploy"),
            ("db diff --linked", "read"),
            ("db reset", "local"),
            ("db reset --linked", "delete"),
            ("secrets set FOO=bar", "write"),
            ("secrets unset FOO", "delete"),
            ("projects delete abc", "delete"),
            ("start", "local"),
            ("migration new add_users", "local"),
            ("gen types typescript --linked", "read"),
            ("frobnicate", "read write deploy delete"),
        ] {
            assert_eq!(scopes("supabase", line), want, "supabase {line}");
        }
        assert_eq!(scopes("ssh", "deploy@host uptime"), "read write deploy delete");
        assert_eq!(scopes("ssh", "-V"), "local");
    }

    #[test]
    fn the_ssh_destination_host_is_found_past_options_and_user() {
        let host = |line: &str| {
            let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            ssh_destination_host(&args).map(str::to_owned)
        };
        for (line, want) in [
            ("-p 22 -i x user@host cmd", Some("host")),
            ("host", Some("host")),
            ("-o Foo=bar host", Some("host")),
            ("-l user host", Some("host")),
            ("-vp22 -A deploy@web-1 uptime", Some("web-1")),
            ("-vp 22 web-1", Some("web-1")),
            ("ssh://deploy@web-1:2222/x", Some("web-1")),
            ("deploy@[::1]", Some("::1")),
            ("-- host ls", Some("host")),
            ("-i key", None),
            ("", None),
        ] {
            assert_eq!(host(line).as_deref(), want, "ssh {line}");
        }
    }

    #[test]
    fn an_ssh_agent_credential_becomes_ssh_auth_sock() {
        let env = credential_env(&json!({"kind": "ssh-agent", "env": {"SSH_AUTH_SOCK": "/t/a.sock"},
            "socketPath": "/t/a.sock", "expiresAt": null, "scoped": true}));
        assert_eq!(env, Some(vec![("SSH_AUTH_SOCK".to_owned(), "/t/a.sock".to_owned())]));
        assert_eq!(credential_env(&json!({"kind": "env", "env": {"A": "1"}})), Some(vec![("A".into(), "1".into())]));
        assert_eq!(credential_env(&json!({"kind": "file"})), None);
    }

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

    #[test]
    fn shims_are_known_by_their_names() {
        assert_eq!(provider_of_argv0("/tmp/turn/meta/bin/gh"), Some("gh"));
        assert_eq!(provider_of_argv0("vercel.exe"), Some("vercel"));
        assert_eq!(provider_of_argv0("/usr/local/bin/sky"), None);
    }

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
