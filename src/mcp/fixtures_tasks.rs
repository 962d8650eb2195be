//! The conformance suite's fixture tools for the tasks extension (`tasks-*` scenarios, SEP-2663), served
//! beside [`Fixtures`] at `POST /v1/conformance/mcp` in a test configuration only:
//!
//! - `greet` — sync only: `Hello, {name}!`.
//! - `slow_compute {seconds, label}` — may run as a task: done `seconds` after it began (0: at once);
//!   cancelled if `tasks/cancel` comes first.
//! - `failing_job` — must run as a task (`required`): a tool error (`isError`) a second after it began.
//! - `protocol_error_job` — a task that ends `failed` with a JSON-RPC error a second after it began.
//! - `confirm_delete {filename}` — a task that waits on one elicitation (`input_required`), then ends.
//! - `multi_input` — a task that waits on two elicitations at once, answered one at a time if need be.
//! - `test_tool_with_task` — `required`: asks for `user_name` by MRTR first (no task yet), then answers a
//!   task whose result greets that name.
//!
//! A task is its state as JSON in a [`TaskStore`] (kept by the app in D1, so any request to any isolate
//! finds it); its status is read off that state and the clock, so nothing runs in the background.

use super::fixtures::{elicit, field, input_required, one, Fixtures};
use super::rpc::{self, RpcError};
use super::tasks::{self, TaskAnswer, TaskInfo, TaskMethod, TaskMode};
use super::{CallOutcome, Era, ToolCall, ToolHost, ToolReply};
use crate::rules::task_status::TaskStatus;
use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Where fixture tasks live between requests.
pub trait TaskStore {
    fn now_ms(&self) -> i64;
    /// A task's state, `None` when unknown or past its time.
    fn load<'a>(&'a self, task_id: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, String>>;
    /// Writes a task's state, kept until `expires_ms`.
    fn save<'a>(&'a self, task_id: &'a str, state: &'a str, expires_ms: i64) -> LocalBoxFuture<'a, Result<(), String>>;
}

/// The fixture tools with the tasks extension on top.
pub struct FixtureTasks<'a> {
    pub store: &'a dyn TaskStore,
}

/// How long a fixture task is kept, and how often clients are asked to poll.
const TTL_MS: i64 = 10 * 60_000;
const POLL_MS: i64 = 250;

/// (name, description, taskSupport or `None` for a sync-only tool).
const TOOLS: &[(&str, &str, Option<&str>)] = &[
    ("greet", "Greets `name` at once.", None),
    ("slow_compute", "Computes for `seconds` (0: at once), as a task when the client allows.", Some("optional")),
    ("failing_job", "Always ends in a tool error, a second after it began; only as a task.", Some("required")),
    ("protocol_error_job", "Always ends in a protocol error, a second after it began.", Some("optional")),
    ("confirm_delete", "Asks the user to confirm deleting `filename`, then says what it did.", Some("optional")),
    ("multi_input", "Asks two questions at once, then reports both answers.", Some("optional")),
    ("test_tool_with_task", "Asks for the user's name first, then greets them from a task.", Some("required")),
];

fn input_schema(name: &str) -> Value {
    match name {
        "greet" => json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        "slow_compute" => json!({"type": "object", "properties": {
            "seconds": {"type": "number", "minimum": 0, "maximum": 600}, "label": {"type": "string"}
        }}),
        "confirm_delete" => json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// A fixture task as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    tool: String,
    created_ms: i64,
    updated_ms: i64,
    /// When its work is done, once nothing is pending.
    due_ms: i64,
    label: String,
    /// Input requests still unanswered, by key.
    pending: Map<String, Value>,
    /// The answers given, by key.
    answers: Map<String, Value>,
    cancelled: bool,
}

impl Job {
    fn new(tool: &str, arguments: &Map<String, Value>, user_name: Option<String>, now: i64) -> Job {
        let text = |k: &str| arguments.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (due_ms, label, pending) = match tool {
            "slow_compute" => {
                let seconds = arguments.get("seconds").and_then(Value::as_f64).unwrap_or(0.0).clamp(0.0, 600.0);
                (now + (seconds * 1000.0) as i64, text("label"), Map::new())
            }
            "confirm_delete" => {
                let ask = elicit(&format!("Delete {}?", text("filename")), "confirm", "boolean");
                (now, text("filename"), one("confirm", ask))
            }
            "multi_input" => {
                let asks = Map::from_iter([
                    ("name".to_owned(), elicit("What is your name?", "name", "string")),
                    ("confirm".to_owned(), elicit("Shall I go on?", "confirm", "boolean")),
                ]);
                (now, String::new(), asks)
            }
            "test_tool_with_task" => (now + 500, user_name.unwrap_or_else(|| "whoever you are".into()), Map::new()),
            _ => (now + 1_000, String::new(), Map::new()),
        };
        Job {
            tool: tool.to_owned(),
            created_ms: now,
            updated_ms: now,
            due_ms,
            label,
            pending,
            answers: Map::new(),
            cancelled: false,
        }
    }

    /// The task as it stands at `now`.
    fn info(&self, task_id: &str, now: i64) -> TaskInfo {
        let done = self.pending.is_empty() && now >= self.due_ms;
        let mut task = TaskInfo {
            task_id: task_id.to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: self.created_ms,
            updated_ms: if done { self.updated_ms.max(self.due_ms) } else { self.updated_ms },
            ttl_ms: TTL_MS,
            poll_interval_ms: POLL_MS,
            result: None,
            error: None,
            input_requests: None,
        };
        if self.cancelled {
            task.status = TaskStatus::Cancelled;
        } else if !self.pending.is_empty() {
            task.status = TaskStatus::InputRequired;
            task.input_requests = Some(self.pending.clone());
        } else if done && self.tool == "protocol_error_job" {
            task.status = TaskStatus::Failed;
            task.error = Some(RpcError::new(rpc::INTERNAL_ERROR, "protocol_error_job failed, as it always does"));
        } else if done {
            task.status = TaskStatus::Completed;
            task.result = Some(self.result());
        }
        task
    }

    fn result(&self) -> Value {
        let answer = |key: &str, name: &str| self.answers.get(key).and_then(|a| field(a, name));
        match self.tool.as_str() {
            "slow_compute" => text(&format!("Computed {}.", if self.label.is_empty() { "it" } else { &self.label })),
            "failing_job" => {
                json!({"content": [{"type": "text", "text": "failing_job failed, as it always does"}], "isError": true})
            }
            "confirm_delete" => match answer("confirm", "confirm").as_deref() {
                Some("true") => text(&format!("Deleted {}.", self.label)),
                _ => text(&format!("Kept {}: not confirmed.", self.label)),
            },
            "multi_input" => text(&format!(
                "Name: {}; go on: {}.",
                answer("name", "name").unwrap_or_else(|| "(none)".into()),
                answer("confirm", "confirm").unwrap_or_else(|| "(no answer)".into())
            )),
            "test_tool_with_task" => text(&format!("Hello, {}!", self.label)),
            _ => text("Done."),
        }
    }
}

fn text(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}]})
}

fn unknown(task_id: &str) -> RpcError {
    RpcError::invalid_params(format!("Invalid params: task {task_id:?} not found"))
}

fn store_error(e: String) -> RpcError {
    RpcError::new(rpc::INTERNAL_ERROR, format!("the fixture task store failed: {e}"))
}

impl FixtureTasks<'_> {
    async fn load(&self, task_id: &str) -> Result<Job, RpcError> {
        let state = self.store.load(task_id).await.map_err(store_error)?.ok_or_else(|| unknown(task_id))?;
        serde_json::from_str(&state).map_err(|e| store_error(e.to_string()))
    }

    async fn save(&self, task_id: &str, job: &Job) -> Result<(), RpcError> {
        let state = serde_json::to_string(job).map_err(|e| store_error(e.to_string()))?;
        self.store.save(task_id, &state, job.created_ms + TTL_MS).await.map_err(store_error)
    }

    /// One task tool's call: a task when the client asked for or allows one, else what each tool does
    /// without one.
    async fn run(&self, call: ToolCall<'_>, support: &str) -> ToolReply {
        let now = self.store.now_ms();
        let mut user_name = None;
        if call.name == "test_tool_with_task" && call.era == Era::Modern && call.task != TaskMode::No {
            // MRTR first: no task until the name is known.
            match call.input_responses.and_then(|r| r.get("user_name")) {
                Some(answer) => user_name = Some(field(answer, "name").unwrap_or_else(|| "whoever you are".into())),
                None => {
                    let ask = one("user_name", elicit("What is your name?", "name", "string"));
                    return ToolReply::Done(input_required(ask, None));
                }
            }
        }
        match call.task {
            TaskMode::Allowed | TaskMode::Asked { .. } => {
                let task_id = crate::rules::ids::new_id("ftk");
                let job = Job::new(call.name, &call.arguments, user_name, now);
                // Durable before the answer: a `tasks/get` right after finds it.
                if let Err(e) = self.save(&task_id, &job).await {
                    return ToolReply::Refused(e);
                }
                ToolReply::Task(Box::new(job.info(&task_id, now)))
            }
            TaskMode::No if support == "required" => match call.era {
                Era::Modern => ToolReply::Refused(tasks::extension_required(&format!("tools/call {}", call.name))),
                Era::Legacy => ToolReply::Refused(RpcError::new(
                    rpc::METHOD_NOT_FOUND,
                    format!("{} runs only as a task: send params.task", call.name),
                )),
            },
            TaskMode::No => match call.name {
                // Without a task nothing waits: the work is done now.
                "slow_compute" => ToolReply::Done(Job::new(call.name, &call.arguments, None, now).result()),
                "protocol_error_job" => ToolReply::Refused(RpcError::new(
                    rpc::INTERNAL_ERROR,
                    "protocol_error_job failed, as it always does",
                )),
                other => ToolReply::Done(json!({"content": [{"type": "text",
                    "text": format!("{other} asks its questions from a task: declare the tasks extension")}], "isError": true})),
            },
        }
    }

    async fn answer(&self, era: Era, method: TaskMethod<'_>) -> Result<TaskAnswer, RpcError> {
        let now = self.store.now_ms();
        match method {
            TaskMethod::Get(id) | TaskMethod::Result(id) => Ok(TaskAnswer::One(self.load(id).await?.info(id, now))),
            TaskMethod::Cancel(id) => {
                let mut job = self.load(id).await?;
                let task = job.info(id, now);
                if task.is_terminal() {
                    return match era {
                        Era::Legacy => Err(RpcError::invalid_params(format!(
                            "Invalid params: task {id:?} has already ended ({}); it cannot be cancelled",
                            task.status
                        ))),
                        Era::Modern => Ok(TaskAnswer::One(task)),
                    };
                }
                job.cancelled = true;
                job.updated_ms = now;
                self.save(id, &job).await?;
                Ok(TaskAnswer::One(job.info(id, now)))
            }
            TaskMethod::Update(id, responses) => {
                let mut job = self.load(id).await?;
                // Keys that are not pending are ignored, as the extension asks.
                let answered: Vec<String> =
                    job.pending.keys().filter(|k| responses.contains_key(*k)).cloned().collect();
                if !answered.is_empty() && !job.cancelled {
                    for key in answered {
                        job.pending.remove(&key);
                        job.answers.insert(key.clone(), responses[&key].clone());
                    }
                    job.updated_ms = now;
                    job.due_ms = job.due_ms.max(now);
                    self.save(id, &job).await?;
                }
                Ok(TaskAnswer::Ack)
            }
            // Tasks are found by id only; there is no index of them to list.
            TaskMethod::List(_) => Ok(TaskAnswer::Many(vec![], None)),
        }
    }
}

impl ToolHost for FixtureTasks<'_> {
    fn tools(&self) -> Vec<Value> {
        let mut tools = Fixtures.tools();
        tools.extend(TOOLS.iter().map(|(name, description, support)| {
            let mut tool = json!({"name": name, "description": description, "inputSchema": input_schema(name)});
            if let Some(support) = support {
                tool["execution"] = json!({"taskSupport": support});
            }
            tool
        }));
        tools
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Fixtures.call(name, arguments)
    }

    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move {
            match TOOLS.iter().find(|(name, ..)| *name == call.name) {
                Some((_, _, Some(support))) => self.run(call, support).await,
                Some(_) => {
                    let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or("you");
                    ToolReply::Done(text(&format!("Hello, {name}!")))
                }
                None => Fixtures.call_with(call).await,
            }
        })
    }

    fn features(&self) -> Option<&dyn super::features::Features> {
        Some(&Fixtures)
    }

    fn task_support(&self) -> bool {
        true
    }

    fn task<'a>(&'a self, era: Era, method: TaskMethod<'a>) -> LocalBoxFuture<'a, Result<TaskAnswer, RpcError>> {
        Box::pin(self.answer(era, method))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_works_until_due_then_completes_and_a_cancel_wins_while_it_works() {
        let args = json!({"seconds": 2, "label": "x"});
        let mut job = Job::new("slow_compute", args.as_object().unwrap(), None, 1_000);
        assert_eq!(job.info("ftk_1", 2_000).status, TaskStatus::Working);
        let done = job.info("ftk_1", 3_000);
        assert_eq!((done.status.as_str(), done.updated_ms), ("completed", 3_000));
        assert_eq!(done.result.unwrap()["content"][0]["text"], "Computed x.");
        job.cancelled = true;
        assert_eq!(job.info("ftk_1", 2_000).status, TaskStatus::Cancelled);
    }

    #[test]
    fn an_input_job_waits_on_every_pending_request() {
        let mut job = Job::new("multi_input", &Map::new(), None, 0);
        let waiting = job.info("ftk_2", 10);
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        assert_eq!(waiting.input_requests.unwrap().len(), 2);
        job.answers.insert("name".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
        job.pending.remove("name");
        assert_eq!(job.info("ftk_2", 10).input_requests.unwrap().keys().collect::<Vec<_>>(), ["confirm"]);
        job.pending.clear();
        assert_eq!(job.info("ftk_2", 10).result.unwrap()["content"][0]["text"], "Name: Ada; go on: (no answer).");
        let failing = Job::new("protocol_error_job", &Map::new(), None, 0).info("ftk_3", 1_000);
        assert_eq!((failing.status.as_str(), failing.error.unwrap().code), ("failed", rpc::INTERNAL_ERROR));
    }
}
