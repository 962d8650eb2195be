//! The built-in tools a harness offers its model: the task's shared folder, and the workspace's company
//! skills. Each returns JSON text for the model, and says plainly when the model asked for something it
//! cannot have.

use crate::cx::{Assets, Blobs, Env, Outbound};
use crate::domain::help::{self, HelpGet, HelpSearch};
use crate::domain::taskfs::{self, DeletePath, FileText, Folder, ReadPath, Writer};
use crate::rules::schema::Published;
use crate::session::SessionConfig;
use crate::store::Sql;
use crate::turns::skills::{self, ReadSkill};
use futures::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// What a built-in tool runs against: the session's lane of the task folder.
struct Call<'a> {
    db: &'a dyn Sql,
    blobs: &'a dyn Blobs,
    /// The Help Center's articles.
    assets: &'a dyn Assets,
    folder: Folder<'a>,
    workspace_id: &'a str,
    session_id: &'a str,
    /// The deployment's public origin, which the Help Center's links name.
    base_url: &'a str,
    now_ms: i64,
}

/// One built-in tool, declared once in [`builtin_tools!`].
struct Builtin {
    name: &'static str,
    /// The `///` lines of the row: the description the model reads.
    docs: &'static [&'static str],
    /// Its parameters; `None` takes none.
    schema: Option<Published>,
    /// Whether it works in the task folder (and so needs the session's lane).
    folder: bool,
    run: BuiltinFn,
}

type BuiltinFn = for<'a> fn(&'a Call<'a>, Value) -> LocalBoxFuture<'a, Result<Value, String>>;

/// Declares the built-in tools. Each row: docs, `name(Params) => run, folder: bool;` (whether it works
/// in the task folder); a tool without arguments is `name() => run` (whatever it is sent is ignored).
macro_rules! builtin_tools {
    ($($(#[doc = $doc:literal])* $name:ident($($params:ty)?) => $run:path, folder: $folder:literal;)*) => {
        const BUILTINS: &[Builtin] = &[$(Builtin {
            name: stringify!($name),
            docs: &[$($doc),*],
            schema: builtin_tools!(@schema $($params)?),
            folder: $folder,
            run: |c, args| Box::pin(async move { builtin_tools!(@run c, args, $run $(, $params)?) }),
        }),*];
    };
    (@schema) => { None };
    (@schema $params:ty) => { Some(Published::input::<$params>()) };
    (@run $c:ident, $args:ident, $run:path) => {{
        let _ = $args;
        $run($c).await
    }};
    (@run $c:ident, $args:ident, $run:path, $params:ty) => {
        $run($c, parse::<$params>($args)?).await
    };
}

builtin_tools! {
    /// List the files in the task's shared folder (latest version of each).
    list_task_files() => list, folder: true;
    /// Read a text file from the task's shared folder. With `at`: `base` reads the task's base, and
    /// `merge_base` the base as your lane last merged it (to reconcile a conflict `land` reported).
    read_task_file(ReadPath) => read, folder: true;
    /// Write a whole text file (up to 256 KiB) into the task's shared folder; other sessions of the task see it.
    write_task_file(FileText) => write, folder: true;
    /// Delete a file from the task's shared folder (in your lane until you land, when the task has lanes).
    /// To rename a file, write it under the new path, then delete the old one.
    delete_task_file(DeletePath) => delete, folder: true;
    /// Read one of the workspace's company skills: its SKILL.md instructions and the names of the files
    /// beside it; with `file`, one of those files.
    read_skill(ReadSkill) => read_skill, folder: false;
    /// Search the agentsky Help Center (English and Chinese) for how agentsky works: sessions, tasks and
    /// lanes, access and grants, runners, goals, routines. Answers the best articles; read one with help_get.
    help_search(HelpSearch) => help_search, folder: false;
    /// Read a Help Center article by its `slug` (from help_search), in Markdown.
    help_get(HelpGet) => help_get, folder: false;
}

async fn help_search(c: &Call<'_>, p: HelpSearch) -> Result<Value, String> {
    let library = help::library(c.assets).await.map_err(|e| e.message)?;
    serde_json::to_value(library.search_at(c.base_url, p)).map_err(|e| e.to_string())
}

async fn help_get(c: &Call<'_>, p: HelpGet) -> Result<Value, String> {
    let library = help::library(c.assets).await.map_err(|e| e.message)?;
    let article = library.get_at(c.base_url, p).map_err(|e| e.message)?;
    serde_json::to_value(article).map_err(|e| e.to_string())
}

async fn read_skill(c: &Call<'_>, p: ReadSkill) -> Result<Value, String> {
    skills::read(c.db, c.workspace_id, p).await
}

async fn list(c: &Call<'_>) -> Result<Value, String> {
    let files = taskfs::list(c.db, c.folder).await.map_err(|e| e.message)?;
    Ok(json!({ "files": files }))
}

async fn read(c: &Call<'_>, p: ReadPath) -> Result<Value, String> {
    let at = p.at.unwrap_or(taskfs::At::Lane);
    let (info, content) = taskfs::read_at(c.db, c.blobs, c.folder, &p.path, at).await.map_err(|e| e.message)?;
    Ok(json!({ "path": info.path, "version": info.version, "content": content }))
}

async fn write(c: &Call<'_>, p: FileText) -> Result<Value, String> {
    let info = taskfs::write(c.db, c.blobs, c.folder, &p.path, &p.content, Writer::Session(c.session_id), c.now_ms)
        .await
        .map_err(|e| e.message)?;
    Ok(json!({ "path": info.path, "version": info.version, "size_bytes": info.size_bytes }))
}

async fn delete(c: &Call<'_>, p: DeletePath) -> Result<Value, String> {
    let info = taskfs::delete(c.db, c.folder, &p.path, Writer::Session(c.session_id), c.now_ms)
        .await
        .map_err(|e| e.message)?;
    Ok(json!({ "path": info.path, "deleted": true, "version": info.version }))
}

impl Builtin {
    fn schema_key(&self) -> String {
        format!("builtin_tool:{}", self.name)
    }

    /// Its parameters' schema as the model reads it.
    fn parameters(&self) -> Value {
        match self.schema {
            Some(schema) => schema.for_model(&self.schema_key()),
            None => json!({"type": "object", "properties": {}}),
        }
    }
}

/// The built-in tools' schemas as published (`src/schemas.json`), derived from their types.
#[cfg(not(target_arch = "wasm32"))]
pub fn published_schemas() -> Vec<(String, Value)> {
    let with = BUILTINS.iter().filter_map(|t| Some((t.schema_key(), t.schema?.get(&t.schema_key()))));
    with.collect()
}

/// Decodes a call's arguments with the shared decoder: a refusal names the field and the rule, so the
/// model can fix its call.
fn parse<P: DeserializeOwned>(args: Value) -> Result<P, String> {
    crate::rules::params::decode(args)
}

fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|t| t.name == name)
}

/// The tools' specs in the OpenAI function-calling shape; `read_skill` only when the workspace has skills.
pub fn specs(company_skills: bool) -> Vec<Value> {
    BUILTINS
        .iter()
        .filter(|t| company_skills || t.name != skills::TOOL)
        .map(|t| {
            let description = t.docs.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
            json!({"type": "function", "function": {"name": t.name, "description": description, "parameters": t.parameters()}})
        })
        .collect()
}

pub fn is_builtin(name: &str) -> bool {
    find(name).is_some()
}

/// Runs one built-in tool; `Ok` is the model-facing result, `Err` an error the model should read.
pub async fn run(env: &Env, config: &SessionConfig, name: &str, args: &Value, now_ms: i64) -> Result<Value, String> {
    let db: &dyn Sql = &env.db;
    let tool = find(name).ok_or_else(|| format!("no tool `{name}`"))?;
    // Only the folder's tools need the session's lane, a D1 read; a skill is the workspace's.
    let lane = match tool.folder {
        true => taskfs::lane_of(db, &config.task_id, &config.session_id).await.map_err(|e| e.message)?,
        false => String::new(),
    };
    let folder = Folder { workspace_id: &config.workspace_id, task_id: &config.task_id, lane: &lane };
    let call = Call {
        db,
        blobs: env.blobs.as_ref(),
        assets: env.assets.as_ref(),
        folder,
        workspace_id: &config.workspace_id,
        session_id: &config.session_id,
        base_url: &env.config.public_base_url,
        now_ms,
    };
    (tool.run)(&call, args.clone()).await
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

#[cfg(test)]
mod tests {
    use super::*;

    fn schema<T: schemars::JsonSchema>() -> Value {
        Published::input::<T>().for_model("")
    }

    fn spec(name: &str) -> Value {
        specs(true).into_iter().find(|s| s["function"]["name"] == name).expect(name)["function"].clone()
    }

    #[test]
    fn specs_are_the_params_schemas_with_the_model_facing_names_and_descriptions() {
        let names = |skills| -> Vec<String> {
            specs(skills).iter().map(|s| s["function"]["name"].as_str().unwrap().to_owned()).collect()
        };
        let files = ["list_task_files", "read_task_file", "write_task_file", "delete_task_file"];
        assert_eq!(names(false), [&files[..], &["help_search", "help_get"]].concat());
        assert_eq!(names(true), [&files[..], &["read_skill", "help_search", "help_get"]].concat());
        let names = names(true);
        assert!(names.iter().all(|n| is_builtin(n)) && !is_builtin("land"));
        assert_eq!(spec("list_task_files")["parameters"], json!({"type": "object", "properties": {}}));
        assert!(spec("read_task_file")["description"]
            .as_str()
            .unwrap()
            .starts_with("Read a text file from the task's shared folder."));
        assert_eq!(
            spec("write_task_file")["description"],
            "Write a whole text file (up to 256 KiB) into the task's shared folder; other sessions of the task see it."
        );
        for (name, derived) in [
            ("read_task_file", schema::<ReadPath>()),
            ("write_task_file", schema::<FileText>()),
            ("delete_task_file", schema::<DeletePath>()),
        ] {
            let params = spec(name)["parameters"].clone();
            assert_eq!(params, derived, "{name}");
            assert!(params.get("$schema").is_none());
            assert_eq!(params["properties"]["path"]["type"], "string");
        }
        assert_eq!(spec("read_task_file")["parameters"]["required"], json!(["path"]));
        assert_eq!(spec("write_task_file")["parameters"]["required"], json!(["path", "content"]));
        assert_eq!(spec("write_task_file")["parameters"]["properties"]["content"]["type"], "string");
        assert_eq!(spec("delete_task_file")["parameters"]["required"], json!(["path"]));
        assert!(spec("delete_task_file")["description"].as_str().unwrap().contains("rename"));
        assert_eq!(spec("read_skill")["parameters"], schema::<ReadSkill>());
        assert_eq!(spec("read_skill")["parameters"]["required"], json!(["name"]));
    }

    #[test]
    fn a_bad_argument_is_answered_with_the_fields_name() {
        let missing = parse::<FileText>(json!({"path": "a.md"})).unwrap_err();
        assert_eq!(missing, "`content` is required");
        let mistyped = parse::<FileText>(json!({"path": 3, "content": "x"})).unwrap_err();
        assert_eq!(mistyped, "`path` must be a text (got a number)");
        assert_eq!(parse::<ReadPath>(Value::Null).unwrap_err(), "`path` is required");
        let escape = parse::<ReadPath>(json!({"path": "../etc/passwd"})).unwrap_err();
        assert!(escape.starts_with("`path` must not contain `..`"), "{escape}");
        let extra = parse::<ReadPath>(json!({"path": "a.md", "version": 2})).unwrap_err();
        assert!(extra.starts_with("`version` is not a known field"), "{extra}");
        let at = parse::<ReadPath>(json!({"path": "a", "at": "head"})).unwrap_err();
        assert!(at.starts_with("`at` must be one of") && at.contains("merge_base"), "{at}");
        let extra = parse::<DeletePath>(json!({"path": "a.md", "content": "x"})).unwrap_err();
        assert!(extra.starts_with("`content` is not a known field"), "{extra}");
        let ok = parse::<FileText>(json!({"path": "./notes//a.md", "content": "x"})).unwrap();
        assert_eq!((ok.path.as_str(), ok.content.as_str()), ("notes/a.md", "x"));
    }

    #[test]
    fn only_the_folder_tools_need_the_lane() {
        let folder: Vec<&str> = BUILTINS.iter().filter(|t| t.folder).map(|t| t.name).collect();
        assert_eq!(folder, ["list_task_files", "read_task_file", "write_task_file", "delete_task_file"]);
    }
}
