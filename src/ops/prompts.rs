//! The documented workflows as MCP prompts on `/v1/mcp` (clients show them as slash commands). Each prompt
//! is one row of [`PROMPTS`]: its name, title, description, arguments (each with what completes it) and the
//! text it renders, which names the operations to call and the resources to read. `prompts/list`, the
//! arguments' completions ([`super::completions`]) and the `prompts` help topic all read this table.

use super::resources::{self, Kind};
use crate::cx::Cx;
use crate::mcp::features::{expand, PromptCall, ReadFailure};
use crate::mcp::RpcError;
use serde_json::{json, Map, Value};

/// What `completion/complete` offers for an argument or template variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Free text: nothing to offer.
    Text,
    /// Agent `@handle`s (or ids when an agent has no handle).
    Agent,
    /// A comma-separated list of agents: the last item is completed.
    Agents,
    Task,
    Session,
    /// Paths in the task named by the `task_id` argument.
    File,
    Artifact,
    Workspace,
    /// `en` or `zh`.
    Lang,
    /// Help Center slugs in the language of the `lang` argument (English by default).
    HelpSlug,
}

pub struct Arg {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    pub fill: Fill,
}

pub struct Prompt {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub args: &'static [Arg],
    /// A resource embedded before the instructions: its kind and the argument naming it.
    pub embeds: Option<(Kind, &'static str)>,
    /// The instructions, from the arguments (required ones are present and non-empty).
    pub render: fn(&Args) -> String,
}

/// A prompt's arguments by name, as given.
pub struct Args<'a>(pub &'a Map<String, Value>);

impl Args<'_> {
    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).and_then(Value::as_str).map(str::trim).unwrap_or_default()
    }

    fn given(&self, name: &str) -> Option<&str> {
        Some(self.get(name)).filter(|v| !v.is_empty())
    }
}

const fn arg(name: &'static str, description: &'static str, required: bool, fill: Fill) -> Arg {
    Arg { name, description, required, fill }
}

/// Every prompt, in the order `prompts/list` shows them.
pub const PROMPTS: &[Prompt] = &[
    Prompt {
        name: "delegate_task",
        title: "Delegate a task to an agent",
        description: "Start a session with an agent on a task and follow it to the end: its replies, its \
                      questions, and the result and files it leaves.",
        args: &[
            arg("agent", "The agent: an @handle or agent id (list_agents).", true, Fill::Agent),
            arg("task", "What the agent should do, as you would write it to a colleague.", true, Fill::Text),
            arg("task_id", "Join an existing task's folder instead of starting a new task.", false, Fill::Task),
        ],
        embeds: None,
        render: delegate,
    },
    Prompt {
        name: "split_work",
        title: "Split work across agents",
        description: "Split a goal across several agents working in one task: a plan in the task folder, one \
                      session per part, each followed to its result.",
        args: &[
            arg("goal", "What the agents should achieve together.", true, Fill::Text),
            arg("agents", "The agents, comma-separated @handles or ids (list_agents).", true, Fill::Agents),
            arg("task_id", "Work in an existing task instead of starting a new one.", false, Fill::Task),
        ],
        embeds: None,
        render: split,
    },
    Prompt {
        name: "review_result",
        title: "Review a session's result",
        description: "Review what a session produced (its result is embedded), recommend a decision and record \
                      it once I agree.",
        args: &[arg("session_id", "The session to review (ses_…).", true, Fill::Session)],
        embeds: Some((Kind::Result, "session_id")),
        render: review,
    },
    Prompt {
        name: "whats_waiting",
        title: "What is waiting for me",
        description: "Go through everything waiting on me: open questions and approvals, tasks that need me, \
                      and results nobody has decided on.",
        args: &[arg("workspace", "A workspace slug; your default workspace when left out.", false, Fill::Workspace)],
        embeds: None,
        render: waiting,
    },
];

pub fn find(name: &str) -> Option<&'static Prompt> {
    PROMPTS.iter().find(|p| p.name == name)
}

/// The `prompts/list` entries.
pub fn list() -> Vec<Value> {
    PROMPTS
        .iter()
        .map(|p| {
            let arguments: Vec<Value> = p
                .args
                .iter()
                .map(|a| json!({"name": a.name, "description": a.description, "required": a.required}))
                .collect();
            json!({"name": p.name, "title": p.title, "description": p.description, "arguments": arguments})
        })
        .collect()
}

/// The prompts as the `prompts` help topic shows them: one line each, with their arguments.
pub fn help_text() -> String {
    let lines: Vec<String> = PROMPTS
        .iter()
        .map(|p| {
            let args: Vec<String> =
                p.args.iter().map(|a| if a.required { a.name.to_owned() } else { format!("[{}]", a.name) }).collect();
            format!("/{} {} — {}", p.name, args.join(" "), p.description)
        })
        .collect();
    lines.join("\n")
}

/// The first required argument that is missing or empty.
pub fn missing<'p>(prompt: &'p Prompt, args: &Args) -> Option<&'p str> {
    prompt.args.iter().find(|a| a.required && args.get(a.name).is_empty()).map(|a| a.name)
}

/// The URI of a resource of `kind` named by one value (a session's result or transcript), percent-encoded.
pub fn uri(kind: Kind, value: &str) -> String {
    expand(resources::template(kind).uri, |_| value.to_owned())
}

/// `prompts/get`: the prompt's messages, its embedded resource (read as the caller) before its text. An
/// unknown prompt, a missing argument or an embedded resource the caller cannot read is −32602.
pub async fn get(cx: &Cx<'_>, call: PromptCall<'_>) -> Result<Value, RpcError> {
    let Some(prompt) = find(call.name) else {
        let names: Vec<&str> = PROMPTS.iter().map(|p| p.name).collect();
        let message = format!(
            "Invalid params: no prompt named {}; prompts: {}",
            crate::rules::params::quoted(call.name),
            names.join(", ")
        );
        return Err(RpcError::invalid_params(message));
    };
    let args = Args(&call.arguments);
    if let Some(name) = missing(prompt, &args) {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: prompt {:?} needs argument {name:?}",
            prompt.name
        )));
    }
    let mut messages = Vec::new();
    if let Some((kind, arg)) = prompt.embeds {
        let uri = uri(kind, args.get(arg));
        match resources::read(cx, &uri).await {
            Ok(contents) => messages.extend(
                contents.into_iter().map(|r| json!({"role": "user", "content": {"type": "resource", "resource": r}})),
            ),
            Err(ReadFailure::NotFound) => {
                let message = format!(
                    "Invalid params: {arg} {} names nothing you can read",
                    crate::rules::params::quoted(args.get(arg))
                );
                return Err(RpcError::invalid_params(message));
            }
            Err(ReadFailure::Refused(e)) => return Err(e),
        }
    }
    messages.push(json!({"role": "user", "content": {"type": "text", "text": (prompt.render)(&args)}}));
    Ok(json!({"description": prompt.description, "messages": messages}))
}

fn delegate(a: &Args) -> String {
    let join = a.given("task_id").map(|t| format!(", task_id `{t}`")).unwrap_or_default();
    format!(
        "Delegate this task to the agentsky agent `{agent}` and follow it to the end.\n\n\
         Task:\n{task}\n\n\
         1. Call `start_session` with agent_id `{agent}`, the task above as message and a new unique \
         idempotency_key{join}. Keep the `session.session_id`, `session.task_id`, `message_id` and `cursor` it returns.\n\
         2. Call `read_session` with that session_id, cursor and message_id and wait_seconds 50. Repeat with the \
         returned cursor until `turn_finished` is true (at once, without waiting, while `has_more` is true). Tell me \
         in a line what the agent is doing as it goes.\n\
         3. If it stops to ask (an open request in `list_requests` for this task), put the question to me and give \
         my answer with `answer_request`.\n\
         4. When the turn has finished, read the resource agentsky://sessions/<session_id>/result (or call \
         `collect_result`) and the files it wrote, agentsky://tasks/<task_id>/files/<path> (or `read_task_file`). \
         The whole conversation is agentsky://sessions/<session_id>/transcript.\n\
         5. Give me the agent's final reply and the files, then ask whether to continue (`send_message` with a new \
         idempotency_key) or stop (`stop_session`).",
        agent = a.get("agent"),
        task = a.get("task"),
    )
}

fn split(a: &Args) -> String {
    let agents: Vec<&str> = a.get("agents").split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let first = match a.given("task_id") {
        Some(t) => format!("Every session joins task `{t}`: pass task_id `{t}` to each `start_session`."),
        None => "Start the first agent's session with `start_session` (no task_id); its `session.task_id` is the \
                 task: pass it as task_id to every other `start_session`, so all share its files (each in its own lane until it lands)."
            .to_owned(),
    };
    format!(
        "Split this goal across the agentsky agents {list} in one task.\n\nGoal:\n{goal}\n\n\
         1. Divide the goal into one part per agent, with what each hands to the others. Show me the split before \
         starting.\n\
         2. {first} Give each its part as the message, with a new unique idempotency_key each.\n\
         3. Write the plan to the task folder with `write_task_file` (path PLAN.md): who does what, and where each \
         puts its output. Every session reads the task's files.\n\
         4. Follow each session with `read_session` (its message_id, wait_seconds 50) until `turn_finished`. \
         `get_task` shows every lane, its status, open requests and the cost so far; put any request to me and \
         answer it with `answer_request`.\n\
         5. When all have finished, read each result (agentsky://sessions/<session_id>/result) and its files, landed \
         or not (agentsky://sessions/<session_id>/files/<path>, or `list_task_files` with its session_id), and \
         combine them into one answer for me. \
         Offer to publish the final file with `publish_artifact`.",
        list = agents.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
        goal = a.get("goal"),
    )
}

fn review(a: &Args) -> String {
    let session = a.get("session_id");
    format!(
        "Review the result of agentsky session `{session}` (embedded above).\n\n\
         1. Read its conversation, {transcript}, and the files it wrote (each listed in the result; read them as \
         agentsky://tasks/<task_id>/files/<path> or with `read_task_file`).\n\
         2. Call `read_session_record` for `{session}`: if someone has decided already, tell me what and when.\n\
         3. Judge the result against what was asked: what is done, what is wrong or missing. Recommend one \
         decision: adopted, revise, rerun or discard, with your reasons.\n\
         4. Once I agree, record it with `manage`, operation `record_session`, arguments: session_id \
         `{session}`, name = the decision, a short note, and a new idempotency_key. If I choose revise, send the agent my notes with `send_message`; to have \
         another agent continue, use `hand_off_session`.",
        transcript = uri(Kind::Transcript, session),
    )
}

fn waiting(a: &Args) -> String {
    let scope = a.given("workspace").map(|w| format!(" in workspace `{w}` (pass workspace `{w}` to each call)"));
    format!(
        "Go through everything waiting for me in agentsky{}.\n\n\
         1. `list_requests`: every open question, decision, plan and access request. For each, tell me which \
         agent and task asks, and what; ask me for my answer, then give it with `answer_request` (its task_id and \
         request_id).\n\
         2. `list_tasks`: the tasks whose `waiting_on` is `you`. For each, say why (an open request, or its \
         sessions went idle with a reply I have not acted on) and what I could do next.\n\
         3. Finished work nobody decided on: for each idle session of those tasks, `read_session_record`; where it \
         is empty, offer to review it (the `review_result` prompt, or its result at \
         agentsky://sessions/<session_id>/result).\n\
         4. End with a short list of what is still open and who it waits on.",
        scope.unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn prompts_render_their_arguments_and_name_the_tools_they_use() {
        let a = args(json!({"agent": "@writer", "task": "Draft the launch note", "task_id": "ses_1"}));
        let text = (find("delegate_task").unwrap().render)(&Args(&a));
        for needle in ["@writer", "Draft the launch note", "task_id `ses_1`", "start_session", "read_session"] {
            assert!(text.contains(needle), "{needle}");
        }
        let a = args(json!({"goal": "Ship", "agents": "@a, @b"}));
        let text = (find("split_work").unwrap().render)(&Args(&a));
        assert!(text.contains("`@a`, `@b`") && text.contains("write_task_file"));
        let a = args(json!({"session_id": "ses_9"}));
        let text = (find("review_result").unwrap().render)(&Args(&a));
        assert!(text.contains("agentsky://sessions/ses_9/transcript") && text.contains("record_session"));
        // A value is percent-encoded into the URI, never spliced in as typed.
        assert_eq!(uri(Kind::Result, "ses_1/../x y"), "agentsky://sessions/ses_1%2F..%2Fx%20y/result");
    }

    #[test]
    fn a_missing_required_argument_is_named() {
        let a = args(json!({"agent": "@writer", "task": "  "}));
        assert_eq!(missing(find("delegate_task").unwrap(), &Args(&a)), Some("task"));
        assert_eq!(missing(find("whats_waiting").unwrap(), &Args(&Map::new())), None);
    }

    #[test]
    fn every_prompt_named_tool_is_an_operation() {
        for p in PROMPTS {
            let mut a = Map::new();
            for arg in p.args {
                a.insert(arg.name.into(), json!("x"));
            }
            let text = (p.render)(&Args(&a));
            for name in
                text.split('`').skip(1).step_by(2).filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            {
                if name.contains('_')
                    && ![
                        "session_id",
                        "task_id",
                        "request_id",
                        "waiting_on",
                        "has_more",
                        "turn_finished",
                        "message_id",
                        "idempotency_key",
                        "agent_id",
                    ]
                    .contains(&name)
                {
                    // A grouped operation is named with the tool that runs it.
                    let reached = |op: &crate::ops::Op| match op.tool {
                        crate::ops::Tool::Own => true,
                        crate::ops::Tool::Grouped => text.contains("`manage`"),
                        crate::ops::Tool::RestOnly => false,
                    };
                    let known = crate::ops::find(name).is_some_and(reached) || find(name).is_some();
                    assert!(known, "{}: {name}", p.name);
                }
            }
        }
    }
}
