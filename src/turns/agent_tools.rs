//! The built-in tools a harness offers its model: the task's shared folder. Each returns JSON text for
//! the model, and says plainly when the model asked for something it cannot have.

use crate::cx::{Blobs, Outbound};
use crate::domain::taskfs::{self, Folder, Writer};
use crate::session::SessionConfig;
use crate::store::Sql;
use serde_json::{json, Value};

/// The tools' specs in the OpenAI function-calling shape.
pub fn specs() -> Vec<Value> {
    let f = |name: &str, description: &str, params: Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": params}});
    vec![
        f(
            "list_task_files",
            "List the files in the task's shared folder (latest version of each).",
            json!({"type": "object", "properties": {}}),
        ),
        f(
            "read_task_file",
            "Read a text file from the task's shared folder.",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "relative path, e.g. notes/plan.md"}}, "required": ["path"]}),
        ),
        f(
            "write_task_file",
            "Write a whole text file (up to 256 KiB) into the task's shared folder; other sessions of the task see it.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
        ),
    ]
}

pub fn is_builtin(name: &str) -> bool {
    matches!(name, "list_task_files" | "read_task_file" | "write_task_file")
}

/// Runs one built-in tool; `Ok` is the model-facing result, `Err` an error the model should read.
pub async fn run(
    db: &dyn Sql,
    blobs: &dyn Blobs,
    config: &SessionConfig,
    name: &str,
    args: &Value,
    now_ms: i64,
) -> Result<Value, String> {
    let lane = taskfs::lane_of(db, &config.task_id, &config.session_id).await.map_err(|e| e.message)?;
    let folder = Folder { workspace_id: &config.workspace_id, task_id: &config.task_id, lane: &lane };
    let text = |k: &str| args[k].as_str().map(str::to_owned).ok_or_else(|| format!("`{k}` (a string) is required"));
    match name {
        "list_task_files" => {
            let files = taskfs::list(db, folder).await.map_err(|e| e.message)?;
            Ok(json!({ "files": files }))
        }
        "read_task_file" => {
            let (info, content) = taskfs::read(db, blobs, folder, &text("path")?, None).await.map_err(|e| e.message)?;
            Ok(json!({ "path": info.path, "version": info.version, "content": content }))
        }
        "write_task_file" => {
            let info = taskfs::write(
                db,
                blobs,
                folder,
                &text("path")?,
                &text("content")?,
                Writer::Session(&config.session_id),
                now_ms,
            )
            .await
            .map_err(|e| e.message)?;
            Ok(json!({ "path": info.path, "version": info.version, "size_bytes": info.size_bytes }))
        }
        other => Err(format!("no tool `{other}`")),
    }
}

/// A bearer header for an outbound request.
pub fn bearer(token: Option<&str>) -> Vec<(String, String)> {
    token.map(|t| vec![("authorization".to_owned(), format!("Bearer {t}"))]).unwrap_or_default()
}

/// A JSON POST.
pub fn post_json(url: &str, mut headers: Vec<(String, String)>, body: &Value) -> Outbound {
    headers.push(("content-type".into(), "application/json".into()));
    Outbound { url: url.to_owned(), headers, body: body.to_string().into_bytes() }
}
