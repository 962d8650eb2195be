//! MCP tasks on the wire, in both eras: a `tools/call` answered with a task handle, and the methods that
//! follow it (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, `tasks/update`).
//!
//! - 2025-11-25 (experimental, in core): the client asks with `params.task` on `tools/call` for a tool whose
//!   `execution.taskSupport` allows it; the answer is `CreateTaskResult` (`{task: Task}`); `tasks/result`
//!   returns the tool's `CallToolResult`; `tasks/cancel` answers the task, now `cancelled`.
//! - 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the client declares the extension in its
//!   per-request capabilities and the server decides; the answer is a flat `Result & Task` with
//!   `resultType: "task"`; `tasks/get` inlines `result` or `error`; `tasks/cancel` is an empty ack.
//!
//! The transport stays stateless: the host keeps each task durably before it answers, so any later request
//! (to any isolate) can follow it. This module only shapes and reads the wire.

use super::rpc::RpcError;
use super::Era;
use crate::rules::task_status::TaskStatus;
use serde_json::{json, Map, Value};

/// The extension's identifier (2026-07-28).
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key tying a message to its task (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// What the client said about running one `tools/call` as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Run it and answer the result.
    No,
    /// 2025-11-25: `params.task` asked for a task, retained this long (the host may shorten it).
    Asked { ttl_ms: Option<u64> },
    /// 2026-07-28: the client declared the extension, so the host may answer a task when it decides to.
    Allowed,
}

/// A task's state as every method shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskInfo {
    pub task_id: String,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub ttl_ms: i64,
    pub poll_interval_ms: i64,
    /// The tool's `CallToolResult`, once `completed`.
    pub result: Option<Value>,
    /// The protocol error that ended it, once `failed`.
    pub error: Option<RpcError>,
    /// 2026-07-28: what the task waits on while `input_required` (MRTR `inputRequests`).
    pub input_requests: Option<Map<String, Value>>,
}

impl TaskInfo {
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }
}

/// The task methods a host answers. Each names the task; another caller's task is not found.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskMethod<'a> {
    Get(&'a str),
    /// 2025-11-25 `tasks/result`: the host may wait a while for the task to end.
    Result(&'a str),
    Cancel(&'a str),
    /// `params.cursor` of `tasks/list`.
    List(Option<&'a str>),
    /// 2026-07-28 `tasks/update`: answers to the task's outstanding input requests.
    Update(&'a str, &'a Map<String, Value>),
}

/// What a host answered.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskAnswer {
    One(TaskInfo),
    Many(Vec<TaskInfo>, Option<String>),
    /// `tasks/update` accepted.
    Ack,
}

/// Reads what a `tools/call` says about tasks: `params.task` (legacy) or the declared extension (modern).
pub fn mode(
    era: Era,
    params: &Map<String, Value>,
    client_capabilities: &Map<String, Value>,
) -> Result<TaskMode, RpcError> {
    match era {
        Era::Legacy => match params.get("task") {
            None | Some(Value::Null) => Ok(TaskMode::No),
            Some(Value::Object(task)) => match task.get("ttl") {
                None | Some(Value::Null) => Ok(TaskMode::Asked { ttl_ms: None }),
                Some(ttl) => match ttl.as_u64() {
                    Some(ttl) => Ok(TaskMode::Asked { ttl_ms: Some(ttl) }),
                    None => {
                        Err(RpcError::invalid_params("Invalid params: task.ttl must be a whole number of milliseconds"))
                    }
                },
            },
            Some(_) => Err(RpcError::invalid_params("Invalid params: task must be an object ({ttl?})")),
        },
        Era::Modern => Ok(if declared(client_capabilities) { TaskMode::Allowed } else { TaskMode::No }),
    }
}

/// Whether a modern request's client capabilities declare the tasks extension.
pub fn declared(client_capabilities: &Map<String, Value>) -> bool {
    client_capabilities.get("extensions").and_then(Value::as_object).is_some_and(|e| e.contains_key(EXTENSION))
}

/// −32021 for a request that needs the tasks extension from a client that did not declare it, naming it
/// the way `initialize` capabilities are shaped.
pub fn extension_required(what: &str) -> RpcError {
    RpcError::new(
        super::rpc::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: {what} needs the {EXTENSION} extension; declare it in _meta"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
}

/// The answer to a `tools/call` the host turned into a task.
pub fn created(era: Era, task: &TaskInfo) -> Value {
    match era {
        Era::Legacy => json!({"task": legacy_task(task)}),
        Era::Modern => {
            let mut v = modern_task(task, false);
            v["resultType"] = json!("task");
            v
        }
    }
}

/// Which task method this is, read from the request; `None` when `method` is not one of the era's.
pub fn method<'p>(era: Era, method: &str, params: &'p Map<String, Value>) -> Option<Result<TaskMethod<'p>, RpcError>> {
    let id = || match params.get("taskId").and_then(Value::as_str) {
        Some(id) => Ok(id),
        None => Err(RpcError::invalid_params("Invalid params: params.taskId must be the task's id, a string")),
    };
    let call = match (era, method) {
        (_, "tasks/get") => id().map(TaskMethod::Get),
        (_, "tasks/cancel") => id().map(TaskMethod::Cancel),
        (Era::Legacy, "tasks/result") => id().map(TaskMethod::Result),
        (Era::Legacy, "tasks/list") => match params.get("cursor") {
            None | Some(Value::Null) => Ok(TaskMethod::List(None)),
            Some(Value::String(c)) => Ok(TaskMethod::List(Some(c))),
            Some(_) => Err(RpcError::invalid_params("Invalid params: cursor must be a string")),
        },
        (Era::Modern, "tasks/update") => id().and_then(|id| match params.get("inputResponses") {
            Some(Value::Object(responses)) => Ok(TaskMethod::Update(id, responses)),
            _ => Err(RpcError::invalid_params("Invalid params: tasks/update needs inputResponses, an object")),
        }),
        _ => return None,
    };
    Some(call)
}

/// Shapes a host's answer for the method and era that asked.
pub fn answer(era: Era, method: &TaskMethod<'_>, answer: TaskAnswer) -> Result<Value, RpcError> {
    match (era, method, answer) {
        (Era::Legacy, TaskMethod::Result(_), TaskAnswer::One(task)) => legacy_payload(&task),
        (Era::Legacy, _, TaskAnswer::One(task)) => Ok(legacy_task(&task)),
        (Era::Legacy, _, TaskAnswer::Many(tasks, next)) => {
            let mut v = json!({"tasks": tasks.iter().map(legacy_task).collect::<Vec<_>>()});
            if let Some(next) = next {
                v["nextCursor"] = json!(next);
            }
            Ok(v)
        }
        // The extension's cancel and update are empty acknowledgements; the status shows on the next get.
        (Era::Modern, TaskMethod::Cancel(_) | TaskMethod::Update(..), _) | (_, _, TaskAnswer::Ack) => Ok(json!({})),
        (Era::Modern, _, TaskAnswer::One(task)) => Ok(modern_task(&task, true)),
        (Era::Modern, _, TaskAnswer::Many(..)) => Err(RpcError::new(super::rpc::METHOD_NOT_FOUND, "Method not found")),
    }
}

/// The 2025-11-25 `Task`: `ttl` and `pollInterval`, ISO 8601 times.
fn legacy_task(task: &TaskInfo) -> Value {
    let mut v = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": iso(task.created_ms),
        "lastUpdatedAt": iso(task.updated_ms),
        "ttl": task.ttl_ms,
        "pollInterval": task.poll_interval_ms,
    });
    if let Some(message) = &task.status_message {
        v["statusMessage"] = json!(message);
    }
    v
}

/// `tasks/result` (2025-11-25): the tool's own result tied to its task, or the error that ended it.
fn legacy_payload(task: &TaskInfo) -> Result<Value, RpcError> {
    let related = json!({RELATED_TASK: {"taskId": task.task_id}});
    match (&task.result, &task.error) {
        (Some(result), _) => {
            let mut result = result.clone();
            if let Some(object) = result.as_object_mut() {
                let meta = object.entry("_meta").or_insert_with(|| json!({}));
                if let (Some(meta), Some(related)) = (meta.as_object_mut(), related.as_object()) {
                    meta.extend(related.clone());
                }
            }
            Ok(result)
        }
        (None, Some(error)) => Err(error.clone().with_data(related)),
        (None, None) if task.status == TaskStatus::Cancelled => {
            Err(RpcError::invalid_params(format!("Task {} was cancelled; it has no result", task.task_id)))
        }
        (None, None) => Err(RpcError::invalid_params(format!(
            "Task {} is still {}; poll tasks/get until it ends",
            task.task_id, task.status
        ))),
    }
}

/// The 2026-07-28 `Task`: `ttlMs` and `pollIntervalMs`; with `detailed`, the `DetailedTask` of `tasks/get`
/// (the result, error or input requests its status carries).
fn modern_task(task: &TaskInfo, detailed: bool) -> Value {
    let mut v = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": iso(task.created_ms),
        "lastUpdatedAt": iso(task.updated_ms),
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
    });
    if let Some(message) = &task.status_message {
        v["statusMessage"] = json!(message);
    }
    if detailed {
        match task.status {
            TaskStatus::Completed => v["result"] = task.result.clone().unwrap_or_else(|| json!({"content": []})),
            TaskStatus::Failed => {
                let error = task.error.clone().unwrap_or_else(|| RpcError::new(super::rpc::INTERNAL_ERROR, "failed"));
                v["error"] = error.to_json();
            }
            TaskStatus::InputRequired => v["inputRequests"] = json!(task.input_requests.clone().unwrap_or_default()),
            _ => {}
        }
    }
    v
}

/// Milliseconds since the epoch as ISO 8601 in UTC, to the millisecond.
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: &str) -> TaskInfo {
        let status = TaskStatus::from_word(status).expect("a task status");
        TaskInfo {
            task_id: "mtk_1".into(),
            status,
            status_message: None,
            created_ms: 1_764_662_400_000,
            updated_ms: 1_764_662_401_000,
            ttl_ms: 3_600_000,
            poll_interval_ms: 2000,
            result: (status == TaskStatus::Completed).then(|| json!({"content": [], "isError": false})),
            error: None,
            input_requests: None,
        }
    }

    #[test]
    fn the_legacy_era_asks_with_params_task_and_checks_its_ttl() {
        let none = Map::new();
        let asked = json!({"task": {"ttl": 60000}});
        assert_eq!(mode(Era::Legacy, asked.as_object().unwrap(), &none), Ok(TaskMode::Asked { ttl_ms: Some(60000) }));
        assert_eq!(mode(Era::Legacy, &none, &none), Ok(TaskMode::No));
        let bad = json!({"task": {"ttl": "soon"}});
        assert!(mode(Era::Legacy, bad.as_object().unwrap(), &none).unwrap_err().message.contains("task.ttl"));
    }

    #[test]
    fn the_modern_era_allows_a_task_only_when_the_extension_is_declared() {
        let declared = json!({"extensions": {EXTENSION: {}}});
        assert_eq!(mode(Era::Modern, &Map::new(), declared.as_object().unwrap()), Ok(TaskMode::Allowed));
        assert_eq!(mode(Era::Modern, &Map::new(), &Map::new()), Ok(TaskMode::No));
    }

    #[test]
    fn a_created_task_is_wrapped_in_the_legacy_era_and_flat_with_result_type_task_in_the_modern_one() {
        let legacy = created(Era::Legacy, &task("working"));
        assert_eq!(legacy["task"]["taskId"], json!("mtk_1"));
        assert_eq!(legacy["task"]["ttl"], json!(3_600_000));
        assert_eq!(legacy["task"]["createdAt"], json!("2025-12-02T08:00:00.000Z"));
        let modern = created(Era::Modern, &task("working"));
        assert_eq!(modern["resultType"], json!("task"));
        assert_eq!(modern["pollIntervalMs"], json!(2000));
        assert!(modern.get("task").is_none() && modern.get("result").is_none());
    }

    #[test]
    fn a_completed_task_inlines_its_result_in_the_modern_era_and_pays_it_out_by_tasks_result_in_the_legacy_one() {
        let get = TaskMethod::Get("mtk_1");
        let modern = answer(Era::Modern, &get, TaskAnswer::One(task("completed"))).unwrap();
        assert_eq!(modern["result"]["isError"], json!(false));
        let legacy = answer(Era::Legacy, &get, TaskAnswer::One(task("completed"))).unwrap();
        assert!(legacy.get("result").is_none());
        let payload = answer(Era::Legacy, &TaskMethod::Result("mtk_1"), TaskAnswer::One(task("completed"))).unwrap();
        assert_eq!(payload["_meta"][RELATED_TASK]["taskId"], json!("mtk_1"));
        let early = answer(Era::Legacy, &TaskMethod::Result("mtk_1"), TaskAnswer::One(task("working")));
        assert!(early.unwrap_err().message.contains("still working"));
    }

    #[test]
    fn modern_cancel_is_an_empty_ack() {
        let cancel = TaskMethod::Cancel("mtk_1");
        assert_eq!(answer(Era::Modern, &cancel, TaskAnswer::One(task("cancelled"))).unwrap(), json!({}));
        assert_eq!(
            answer(Era::Legacy, &cancel, TaskAnswer::One(task("cancelled"))).unwrap()["status"],
            json!("cancelled")
        );
    }

    #[test]
    fn task_methods_need_a_task_id_and_belong_to_their_era() {
        let empty = Map::new();
        assert!(method(Era::Legacy, "tasks/get", &empty).unwrap().is_err());
        assert!(method(Era::Modern, "tasks/result", &empty).is_none());
        assert!(method(Era::Modern, "tasks/list", &empty).is_none());
        assert!(method(Era::Legacy, "tasks/update", &empty).is_none());
        assert_eq!(method(Era::Legacy, "tasks/list", &empty), Some(Ok(TaskMethod::List(None))));
    }
}
