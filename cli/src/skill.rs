//! The `agentsky` skill that `sky setup` installs for Claude Code and Codex: `SKILL.md` teaches when to
//! hire an agent, how to brief and check it, and how to keep several agents' work in one task, using
//! the server's own tool names; `catalog.md` lists the agents this key can start, read from the live
//! catalog (`GET /v1/catalog`, the same data as the `search_catalog` tool), the workspace's own first.

use serde_json::Value;

/// The skill's folder name, and its `name:` (both clients match them).
pub const NAME: &str = "agentsky";

pub fn skill_md() -> String {
    r#"---
name: agentsky
description: Hire AI agents through the agentsky MCP server (tools search_catalog, start_session, read_session, collect_result, read_task_file, stop_session). Use when work splits into independent parts that can run in parallel, when a specialist agent in catalog.md fits the job better, or when the user asks to delegate, hire or run an agent.
---

# Hiring agents with agentsky

The `agentsky` MCP server runs AI agents for you. Each agent works in a **session**; sessions that work
on one job share a **task**, with one shared folder of files. You pay per session, so hire on purpose.

`catalog.md` beside this file lists the agents you can start (your workspace's own first), with what
each does and what it costs. It was made when `sky setup` last ran; `search_catalog` is always current.

## When to hire

Hire when at least one of these holds:
- The work splits into parts that do not depend on each other (research three vendors, review four
  modules): one agent per part, all running while you do something else.
- An agent in the catalog is made for the job (its description or categories match) and you are not.
- The user asks you to delegate, hire, or run an agent.

Do it yourself when the job is small, when you need its result before you can do anything else and it
would take you about as long, or when it needs this conversation's context that is hard to hand over.

## How to brief an agent

The agent sees only your message and the task's files, never this conversation. Write the brief as if
for a capable contractor on their first day:
1. **Goal** — what done looks like, in one or two sentences.
2. **Inputs** — the facts, links and constraints it needs; put long material in a task file
   (`write_task_file`) and name the path.
3. **Deliverable** — exactly what to write and where: "write `report.md` in the task folder with …".
4. **Limits** — what not to touch, how far to go, when to stop and ask.

## Running one agent

1. `search_catalog` with words for the work (`query: "review rust pull request"`); pick by description.
2. `start_session` with `agent_id` (its id or `@handle`), the brief as `message`, a fresh unique
   `idempotency_key`, and a `budget_cents` cap. Keep the returned `session_id`, `message_id` and `cursor`.
3. `read_session` with that `session_id`, `cursor`, `message_id` and `wait_seconds: 50`. Repeat with the
   returned cursor until `turn_finished` is true; call again at once when `has_more` is true. The first
   turn may take a minute while the agent boots.
4. `collect_result` for its last reply, the files it wrote and its `task_id`.
5. `send_message` (new `idempotency_key`) to ask for changes, then `read_session` again.
6. `stop_session` when you are done with it.

If a call times out or its answer is lost, repeat it with the same `idempotency_key` and inputs: the work
is never started twice. Use a new key only for new work.

## Checking the work

Never pass an agent's claim on as fact. After `collect_result`:
- Read the files it says it wrote with `read_task_file` (`list_task_files` shows them all).
- Check the deliverable against the brief point by point: present, complete, in the right place.
- Spot-check facts, numbers and code you can verify; run what can be run.
- If it falls short, say exactly what is missing with `send_message` rather than starting over.
Tell the user what you checked and what you could not.

## Several agents on one job: one task

1. Start the first agent as above, with its own `budget_cents`.
2. Read its `task_id` from `collect_result` (or `get_task`).
3. Start every other agent with that `task_id` (and no `workspace`) and its own `budget_cents`. They share
   the task folder: tell each which files are its own to write, so they do not overwrite each other.
4. Read each session to the end of its turn with `read_session`, then `collect_result` each and check the
   files with `read_task_file`. Combine the results yourself, or brief one agent to merge them.
5. `stop_session` every session you are done with.

One task keeps the job's files, costs and history together in agentsky.

## Costs and limits

- Always set `budget_cents` on `start_session`; the catalog shows each agent's price.
- `get_usage` shows what has been spent; `get_task` shows one task's cost.
- An error result carries a code: `insufficient_credits` (top up or pick a cheaper agent),
  `session_busy` (finish reading the running turn, then retry), `rate_limited` (wait as told).
- `help` explains any tool, with a skeleton call.
"#
    .to_owned()
}

/// `catalog.md` from the answer of `GET /v1/catalog`; `workspace` is the slug it was read in.
pub fn catalog_md(catalog: &Value, server: &str, workspace: Option<&str>) -> String {
    let agents = catalog["agents"].as_array().cloned().unwrap_or_default();
    let (own, public): (Vec<&Value>, Vec<&Value>) = agents.iter().partition(|a| a["source"] == "own");
    let mut out = String::from("# agentsky catalog\n\n");
    out.push_str(&format!(
        "The agents this key can start on {server}{}, as `sky setup` read them. Start one with \
`start_session` and its `@handle` (or id); `search_catalog` has the current list.\n",
        workspace.map(|w| format!(" in workspace `{w}`")).unwrap_or_default()
    ));
    if agents.is_empty() {
        out.push_str("\nNo agents yet. Create one in agentsky (`POST /v1/agents`), then run `sky setup` again.\n");
        return out;
    }
    for (title, list) in [("Your workspace's agents", own), ("Public agents", public)] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("\n## {title}\n"));
        for a in list {
            out.push_str(&entry(a));
        }
    }
    out
}

fn entry(a: &Value) -> String {
    let s = |k: &str| a[k].as_str().unwrap_or_default().to_owned();
    let id = a["handle"].as_str().map(str::to_owned).unwrap_or_else(|| s("agent_id"));
    let mut out = format!("\n### {} — `{id}`\n\n", one_line(&s("name")));
    let description = s("description");
    if !description.is_empty() {
        out.push_str(&format!("{}\n\n", one_line(&description)));
    }
    let categories: Vec<&str> =
        a["categories"].as_array().map(|c| c.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if !categories.is_empty() {
        out.push_str(&format!("- Categories: {}\n", categories.join(", ")));
    }
    out.push_str(&format!("- Runs on: {} · {}\n", s("harness"), s("model")));
    let per_run = a["pricing"]["per_run_cents"].as_i64().unwrap_or(0);
    let usage = match a["pricing"]["usage"].as_str().unwrap_or_default() {
        "" | "free" => None,
        "per token" => Some("model use billed per token"),
        "runner" => Some("runs on your own machine (`sky runner`)"),
        other => Some(other),
    };
    let price = match (per_run, usage) {
        (0, None) => "free".to_owned(),
        (0, Some(u)) => u.to_owned(),
        (n, None) => format!("{n} ¢ per session"),
        (n, Some(u)) => format!("{n} ¢ per session, {u}"),
    };
    out.push_str(&format!("- Price: {price}\n"));
    let needs: Vec<&str> =
        a["requirements"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if !needs.is_empty() {
        out.push_str(&format!("- Needs: {}\n", needs.join("; ")));
    }
    let hosts: Vec<&str> =
        a["remote_mcp_hosts"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if !hosts.is_empty() {
        out.push_str(&format!("- Calls MCP servers at: {}\n", one_line(&hosts.join(", "))));
    }
    out
}

/// Descriptions are the agent owner's text: kept to one line so they cannot forge headings.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_catalog_lists_own_agents_first_with_handles_prices_and_needs() {
        let catalog = json!({"agents": [
            {"handle": "@reviewer", "agent_id": "ag_1", "name": "Reviewer", "description": "Reviews\n# code",
             "categories": ["code"], "source": "public", "harness": "openai", "model": "gpt-x",
             "pricing": {"per_run_cents": 25, "usage": "per token"}, "requirements": ["wallet credit"],
             "remote_mcp_hosts": ["tools.example.com", "api.example.org"]},
            {"handle": null, "agent_id": "ag_2", "name": "Mine", "description": "", "categories": [],
             "source": "own", "harness": "echo", "model": "echo", "pricing": {"per_run_cents": 0, "usage": "free"},
             "requirements": []}
        ]});
        let md = catalog_md(&catalog, "http://127.0.0.1:8787", Some("ada"));
        let own = md.find("## Your workspace's agents").unwrap();
        let public = md.find("## Public agents").unwrap();
        assert!(own < public, "{md}");
        assert!(md.contains("### Mine — `ag_2`"), "{md}");
        assert!(md.contains("### Reviewer — `@reviewer`\n\nReviews # code\n"), "{md}");
        assert!(md.contains("- Price: 25 ¢ per session, model use billed per token"), "{md}");
        assert!(md.contains("- Price: free\n"), "{md}");
        assert!(md.contains("- Needs: wallet credit"), "{md}");
        assert!(md.contains("- Calls MCP servers at: tools.example.com, api.example.org\n"), "{md}");
        assert_eq!(md.matches("Calls MCP servers").count(), 1, "only agents that declare some: {md}");
        assert!(md.contains("in workspace `ada`"));
    }

    #[test]
    fn the_skill_names_the_tools_it_teaches() {
        let md = skill_md();
        assert!(md.starts_with("---\nname: agentsky\ndescription: "));
        for tool in [
            "search_catalog",
            "start_session",
            "task_id",
            "budget_cents",
            "read_session",
            "wait_seconds",
            "collect_result",
            "read_task_file",
            "stop_session",
        ] {
            assert!(md.contains(tool), "{tool}");
        }
    }
}
