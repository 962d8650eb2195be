//! The `sky` binary: parses the command line ([`sky::args`]) and hands over to the library (see `lib.rs` for the map).
//! Exit codes: 0 done, 1 failed (the reason on stderr), 2 a usage mistake.

use sky::args::{parse, Args};
use sky::{auth, context::Context, relay, runner, setup, Error};
use std::io::Write;

const USAGE: &str = "sky — the agentsky command line

Usage:
  sky setup [--dry-run] [--server URL] [--key KEY]
      Sign in if needed, register agentsky with every Claude Code and Codex found here, and install
      the `agentsky` skill. Run again to update. --dry-run prints what would change and writes nothing.
  sky auth login [--server URL] [--key KEY] [--name NAME] [--no-browser]
      Sign in with a code approved in the browser (or store --key), keeping the key in your config folder.
  sky auth status [--server URL] [--key KEY]
  sky auth logout
      Revoke the key sign-in made and forget it.
  sky console [--server URL] [--key KEY] [--no-browser]
      Open the console (approvals, board, sessions) in your browser, already signed in with your key.
  sky approvals [--server URL] [--key KEY] [--workspace SLUG] [--once] [--watch]
      Answer the workspace's open requests here, in a plain terminal (works over SSH): approve once for
      some minutes, always, deny with a reason, or answer a plan, decision or question; then wait for
      new ones. --once answers what is open now and stops. --watch also shows a desktop notification for
      each new request (notify-send on Linux, osascript on macOS, a toast on Windows) and keeps the open
      count in the terminal's title.
  sky mcp [--server URL]
      The session server on stdio (for agents agentsky starts): relays to <server>/v1/session/mcp with
      AGENTSKY_SESSION_ID and AGENTSKY_SESSION_TOKEN from the environment.
  sky runner [--server URL] [--key KEY] [--name NAME] [--workspace SLUG] [--once] [--push-root DIR…] -- <command…>
  sky runner ... --command \"<shell line>\"
      Run the turns of the workspace's runner agents here: each turn runs the command in a fresh folder
      with the task's files, the session's token and tools in its environment (AGENTSKY_*), streams its
      output into the session and uploads the files it changed. Registers once (the runner token is kept
      in your config folder); the command is remembered, so later runs may leave it out.
      --push-root DIR (repeatable; or $AGENTSKY_PUSH_ROOTS, separated like PATH): the folders under which
      a task's local git remote (file:///abs or /abs) may be pushed to; without one, local pushes are refused.
  sky shim <vercel|gh|aws|gcloud|supabase|ssh> <args…>
      A provider CLI through the session's grant (in a runner's turn these shims come first on PATH):
      asks for the access the command needs, then runs the real CLI with the credential's variables.
      Exit 77 denied, 75 still pending, 69 refused, 70 agentsky unreachable, 127 CLI not installed.
  sky --version | --help

The server is --server, else $AGENTSKY_URL, else the one you signed in to, else http://127.0.0.1:8787.
The key is --key, else $AGENTSKY_API_KEY, else the one `sky auth login` stored.
";

fn main() {
    let raw: Vec<String> = std::env::args().collect();
    // Invoked through a provider CLI's name (a shim in a runner turn's PATH): be that CLI.
    if let Some(provider) = raw.first().and_then(|a0| sky::shim::provider_of_argv0(a0)) {
        std::process::exit(sky::shim::main(provider, &raw[1..]));
    }
    // `sky shim <cli> <args…>`: the same, by name.
    if raw.get(1).map(String::as_str) == Some("shim") {
        match raw.get(2).and_then(|cli| sky::shim::provider_of_argv0(cli)) {
            Some(cli) => std::process::exit(sky::shim::main(cli, &raw[3..])),
            None => usage_error("sky shim needs one of: vercel, gh, aws, gcloud, supabase, ssh"),
        }
    }
    // The runner's supervisor of an agent's command (internal).
    if raw.get(1).map(String::as_str) == Some("__supervise") {
        std::process::exit(sky::turn::supervise(&raw[2..]));
    }
    let args = match parse(raw.into_iter().skip(1)) {
        Ok(a) => a,
        Err(why) => usage_error(&why),
    };
    let words: Vec<&str> = args.words.iter().map(String::as_str).collect();
    if matches!(words.as_slice(), [] | ["help"]) {
        print!("{USAGE}");
        return;
    }
    if words == ["version"] {
        println!("sky {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let ctx = match Context::from_env() {
        Ok(c) => c,
        Err(e) => fail(&e),
    };
    let auth_opts = auth::Options {
        server: args.server.clone(),
        key: args.key.clone(),
        device_name: args.name.clone(),
        open_browser: !args.no_browser,
    };
    // Progress and results go to stderr: stdout stays free for `sky mcp`'s JSON-RPC.
    let mut err = std::io::stderr();
    let result = match words.as_slice() {
        ["setup"] => setup::run(&ctx, &setup::Options { auth: auth_opts, dry_run: args.dry_run }, &mut err),
        ["auth", "login"] => auth::login(&ctx, &auth_opts, &mut err).map(drop),
        ["auth", "status"] => auth::status(&ctx, &auth_opts, &mut err),
        ["auth", "logout"] => auth::logout(&ctx, &mut err),
        ["console"] => auth::console(&ctx, &auth_opts, &mut err),
        ["approvals"] => {
            let opts = sky::approvals::Options {
                auth: auth_opts,
                workspace: args.workspace.clone(),
                once: args.once,
                watch: args.watch,
            };
            sky::approvals::run(&ctx, &opts, &mut std::io::stdin().lock(), &mut std::io::stdout())
        }
        ["mcp"] => run_mcp(&ctx, &auth_opts),
        ["runner"] => run_runner(&ctx, &args, auth_opts),
        _ => usage_error(&format!("unknown command `{}`", words.join(" "))),
    };
    if let Err(e) = result {
        fail(&e);
    }
}

fn run_runner(ctx: &Context, args: &Args, auth: auth::Options) -> sky::Result<()> {
    if args.hosted {
        return runner::run_hosted(ctx, &mut std::io::stderr());
    }
    let command = match (&args.rest, &args.command) {
        (Some(_), Some(_)) => usage_error("give the command either after `--` or with --command, not both"),
        (Some(argv), None) if argv.is_empty() => usage_error("no command after `--`"),
        (Some(argv), None) => Some(argv.clone()),
        (None, Some(line)) => Some(sky::command_line::shell_command(line)),
        (None, None) => None,
    };
    let mut push_roots = args.push_roots.clone();
    push_roots.extend(std::env::var_os(sky::turn::PUSH_ROOTS_VAR).iter().flat_map(std::env::split_paths));
    if push_roots.iter().any(|r| !r.is_absolute()) {
        usage_error("--push-root (and $AGENTSKY_PUSH_ROOTS) take absolute folders");
    }
    let opts = runner::Options {
        auth,
        name: args.name.clone(),
        workspace: args.workspace.clone(),
        command,
        once: args.once,
        push_roots,
    };
    runner::run(ctx, &opts, &mut std::io::stderr())
}

fn run_mcp(ctx: &Context, opts: &auth::Options) -> sky::Result<()> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (Some(session_id), Some(token)) = (var("AGENTSKY_SESSION_ID"), var("AGENTSKY_SESSION_TOKEN")) else {
        return Err(Error::new(
            "sky mcp needs AGENTSKY_SESSION_ID and AGENTSKY_SESSION_TOKEN in its environment (agentsky sets them for the agents it starts)",
        ));
    };
    let stored = sky::config::load(ctx).unwrap_or_default();
    // In a runner's turn, the session's own server (AGENTSKY_SERVER) comes before the signed-in one.
    let session_server = var("AGENTSKY_SERVER").filter(|_| opts.server.is_none());
    let server = session_server.unwrap_or_else(|| auth::server(ctx, opts, &stored));
    let mut relay = relay::Relay::new(&server, &session_id, &token);
    relay.permission_tool = var("AGENTSKY_PERMISSION_TOOL").is_some();
    relay::serve(&relay, std::io::stdin().lock(), std::io::stdout());
    Ok(())
}

fn usage_error(why: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "sky: {why}\n\n{USAGE}");
    std::process::exit(2)
}

fn fail(e: &Error) -> ! {
    let _ = writeln!(std::io::stderr(), "sky: error: {e}");
    std::process::exit(1)
}
