//! What a provider CLI's command line needs: nothing from the account, or access with these scopes
//! (the tables in [`super`]'s docs), and the host an ssh command connects to.

use super::WIDEST;

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
pub(super) fn positionals<'a>(args: &'a [String], valued: &str) -> Vec<&'a str> {
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
}
