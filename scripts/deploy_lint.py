#!/usr/bin/env python3
"""Lints wrangler.toml's production environment before a deploy (`make deploy-check` runs it, then
`wrangler deploy --dry-run --env production`). Offline: it reads the file, the migrations and the binding
names the Rust code looks up, and says what is wrong in words a person acts on.

Usage: deploy_lint.py [wrangler.toml]. Exit 1 on any error. DEPLOY_CHECK_PLACEHOLDERS=ok turns the two
"fill this in" errors (database_id, PUBLIC_BASE_URL) into warnings, for CI on the unfilled template."""

import datetime
import os
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
errors: list[str] = []
warnings: list[str] = []

# Every secret the Worker reads (src/edge/mod.rs `secret(...)`), whether it must be set, and what it does.
SECRETS = [
    ("ADMIN_TOKEN", True, "creates accounts while sign-up is closed; adds wallet credit"),
    ("SECRETS_KEY", True, "seals workspace secrets, connector credentials, webhook secrets, trace-export headers"),
    ("STRIPE_SECRET_KEY", False, "money in through Stripe (with STRIPE_WEBHOOK_SECRET)"),
    ("STRIPE_WEBHOOK_SECRET", False, "the signing secret of Stripe's webhook endpoint"),
]
# Vars production must set, and the values some of them must have.
REQUIRED_VARS = ["OPEN_SIGNUP", "RATE_LIMIT_PER_MIN", "TRUST_CF_CONNECTING_IP", "ALLOWED_ORIGINS",
                 "PUBLIC_BASE_URL", "ALLOW_LOOPBACK_HTTP"]
FIXED_VARS = {"ALLOW_LOOPBACK_HTTP": "0", "OPEN_SIGNUP": "0", "TRUST_CF_CONNECTING_IP": "1"}
# Test-only switches that must never reach production.
FORBIDDEN_VARS = ["CONFORMANCE_FIXTURES", "STRIPE_API_BASE", "WEBHOOK_RETRY_SCHEDULE", "AGENT_WAIT_MS"]
MIN_COMPAT = "2024-04-03"  # SQLite-backed Durable Objects


def err(msg: str) -> None:
    errors.append(msg)


def placeholder(msg: str) -> None:
    (warnings if os.environ.get("DEPLOY_CHECK_PLACEHOLDERS") == "ok" else errors).append(msg)


def code_bindings() -> dict[str, str]:
    """The binding names src/edge/mod.rs looks up (`pub const DB: &str = "DB";`)."""
    text = (ROOT / "src/edge/mod.rs").read_text()
    return dict(re.findall(r'pub const (\w+): &str = "([^"]+)";', text))


def durable_classes() -> set[str]:
    """Durable Object classes the Worker exports (`#[durable_object] pub struct X`)."""
    found = set()
    for path in (ROOT / "src").rglob("*.rs"):
        found |= set(re.findall(r"#\[durable_object\]\s*pub struct (\w+)", path.read_text()))
    return found


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "wrangler.toml"
    try:
        top = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        print(f"deploy-check: cannot read {path}: {e}", file=sys.stderr)
        return 1
    prod = top.get("env", {}).get("production")
    if not isinstance(prod, dict):
        err("there is no [env.production] section")
        prod = {}

    # Compatibility date: inherited by the environment unless it sets its own.
    date = prod.get("compatibility_date", top.get("compatibility_date"))
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        err("compatibility_date must be set as YYYY-MM-DD")
    else:
        if date < MIN_COMPAT:
            err(f"compatibility_date {date} is before {MIN_COMPAT}, which SQLite-backed Durable Objects need")
        if date > datetime.date.today().isoformat():
            err(f"compatibility_date {date} is in the future")
    if top.get("main") != "build/worker/shim.mjs":
        err("main must be build/worker/shim.mjs (what scripts/build.sh writes)")

    # Workers Logs.
    obs = prod.get("observability", {})
    if obs.get("enabled") is not True:
        err("[env.production.observability] enabled = true is missing: without it the request log lines are not kept")
    rate = obs.get("head_sampling_rate", 1)
    if not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        err("[env.production.observability] head_sampling_rate must be in (0, 1]")

    # Vars.
    vars_ = prod.get("vars", {})
    for name in REQUIRED_VARS:
        if name not in vars_:
            err(f"[env.production.vars] {name} is missing (vars are not inherited into an environment)")
    for name, want in FIXED_VARS.items():
        if name in vars_ and str(vars_[name]) != want:
            err(f'[env.production.vars] {name} must be "{want}" in production, not "{vars_[name]}"')
    for name in FORBIDDEN_VARS:
        if name in vars_:
            err(f"[env.production.vars] {name} is a test-only switch; remove it from production")
    base = str(vars_.get("PUBLIC_BASE_URL", ""))
    if not base:
        placeholder("PUBLIC_BASE_URL is empty: set it to the https origin the Worker serves (links, OAuth, webhooks need it)")
    elif not re.fullmatch(r"https://[A-Za-z0-9.-]+(:\d+)?/?", base):
        err(f"PUBLIC_BASE_URL must be an https origin without a path, like https://agentsky.example.com (got {base})")
    elif "example." in base:
        placeholder(f"PUBLIC_BASE_URL is still the example ({base})")
    for name, _, _ in SECRETS:
        if name in vars_:
            err(f"{name} is a secret: set it with `wrangler secret put {name} --env production`, never in [vars]")

    names = code_bindings()
    # D1.
    dbs = prod.get("d1_databases", [])
    db = next((d for d in dbs if d.get("binding") == names.get("DB")), None)
    if not db:
        err(f'no D1 binding "{names.get("DB")}" in [[env.production.d1_databases]]')
    else:
        if db.get("migrations_dir") != "migrations":
            err('the D1 binding must have migrations_dir = "migrations"')
        if not re.fullmatch(r"[0-9a-f-]{36}", str(db.get("database_id", ""))):
            placeholder("database_id is not a D1 id: run `npx wrangler d1 create agentsky` and paste its id")
    migrations = sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    numbers = [m.split("_", 1)[0] for m in migrations]
    if len(set(numbers)) != len(numbers):
        err(f"two migrations share a number: {sorted(n for n in numbers if numbers.count(n) > 1)}")
    if not all(re.fullmatch(r"\d{4}", n) for n in numbers):
        err("every migration's name must start with a four-digit number (0001_…): D1 applies them in name order")

    # R2.
    if not any(b.get("binding") == names.get("FILES") and b.get("bucket_name") for b in prod.get("r2_buckets", [])):
        err(f'no R2 binding "{names.get("FILES")}" with a bucket_name in [[env.production.r2_buckets]]')

    # Durable Objects: every binding the code uses, to a class the Worker exports, each class created by a
    # migration, with the same migration tags as the local configuration.
    classes = durable_classes()
    do = {b.get("name"): b.get("class_name") for b in prod.get("durable_objects", {}).get("bindings", [])}
    for const in ("SESSIONS", "LIMITER", "FEEDS"):
        name = names.get(const)
        if name not in do:
            err(f'no Durable Object binding "{name}" in [[env.production.durable_objects.bindings]]')
        elif do[name] not in classes:
            err(f'binding "{name}" names class {do[name]}, which the Worker does not export ({sorted(classes)})')
    created = [c for m in prod.get("migrations", []) for c in m.get("new_sqlite_classes", [])]
    for c in set(do.values()):
        if c not in created:
            err(f"class {c} is never created by an [[env.production.migrations]] (new_sqlite_classes)")
    if [m.get("tag") for m in prod.get("migrations", [])] != [m.get("tag") for m in top.get("migrations", [])]:
        err("[[env.production.migrations]] tags differ from the top-level [[migrations]]: keep them in step")

    # Queue, its consumer and the dead-letter queue's.
    queues = prod.get("queues", {})
    producer = next((q for q in queues.get("producers", []) if q.get("binding") == names.get("FIRES_QUEUE")), None)
    if not producer:
        err(f'no queue producer "{names.get("FIRES_QUEUE")}" in [[env.production.queues.producers]]')
    else:
        consumers = {c.get("queue"): c for c in queues.get("consumers", [])}
        main_q = consumers.get(producer.get("queue"))
        if not main_q:
            err(f'the Worker does not consume its own queue "{producer.get("queue")}"')
        else:
            dlq = main_q.get("dead_letter_queue")
            if not dlq:
                err(f'the consumer of "{producer.get("queue")}" has no dead_letter_queue: failed fires would vanish')
            elif not dlq.endswith("-dlq"):
                err(f'dead_letter_queue "{dlq}" must end in -dlq (the queue handler tells the two apart by it)')
            elif dlq not in consumers:
                err(f'the dead-letter queue "{dlq}" has no consumer: failures would never be recorded')
            if not 1 <= int(main_q.get("max_retries", 3)) <= 100:
                err("max_retries must be between 1 and 100")

    # Cron: the routines' minute tick.
    crons = prod.get("triggers", {}).get("crons", [])
    if "* * * * *" not in crons:
        err('[env.production.triggers] crons must include "* * * * *" (routines, webhook retries, request expiry, metrics)')

    for w in warnings:
        print(f"deploy-check: warning: {w}", file=sys.stderr)
    for e in errors:
        print(f"deploy-check: error: {e}", file=sys.stderr)
    print("deploy-check: secrets the Worker reads (set each once; wrangler asks for the value):", file=sys.stderr)
    for name, required, what in SECRETS:
        print(f"  npx wrangler secret put {name} --env production   # {'required' if required else 'optional'}: {what}",
              file=sys.stderr)
    if errors:
        print(f"deploy-check: {len(errors)} problem(s) in {path}", file=sys.stderr)
        return 1
    print(f"deploy-check: {path} is ready for production", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
