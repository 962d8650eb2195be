//! The one language the Worker and a `Session` object speak: a [`SessionCall`] in, an [`Answer`] of that
//! call's own reply out ([`SessionRequest`]), shared by the stub and the object (and the host tests'
//! stand-in), so there are no URL strings to drift and no reply a call cannot have.

pub use crate::error::Code;
pub use crate::rules::placement::Placement;
pub use crate::store::sessions::SessionStatus;
use crate::store::Row;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the object keeps about its session, fixed at start except `model` and `thinking`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionConfig {
    pub session_id: String,
    pub workspace_id: String,
    pub task_id: String,
    pub agent_id: String,
    pub harness: String,
    pub model: String,
    pub thinking: String,
    pub instructions: String,
    #[serde(default)]
    pub mcp_servers: Vec<Value>,
    /// The workspace that owns the agent's definition: the only one the secrets it names (an MCP
    /// server's `bearer_secret`) are read from. Not the session's when a public agent was started by
    /// `@handle` from another workspace. Absent in sessions configured before it was recorded.
    #[serde(default)]
    pub agent_workspace_id: Option<String>,
    pub budget_cents: Option<i64>,
    pub started_by_key_id: Option<String>,
    /// Set when the agent is another workspace's paid public agent: paid once, when the session starts.
    #[serde(default)]
    pub run_price: Option<RunPrice>,
    /// Where the agent's turns run, as it was when the session started: `runner` for sessions configured
    /// before placements.
    #[serde(default = "on_a_runner")]
    pub placement: Placement,
    /// A hosted `runner` agent's shell line.
    #[serde(default)]
    pub command: Option<String>,
    /// The host names the agent added to its sandbox's egress allow list.
    #[serde(default)]
    pub egress: Vec<String>,
}

fn on_a_runner() -> Placement {
    Placement::Runner
}

/// A paid public agent's price per run and the workspace it is paid to (the agent's owner).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunPrice {
    pub cents: i64,
    pub payee_workspace_id: String,
}

/// Who a message is from: the operator (a person or program with a key), a visitor through the
/// session's share link, a peer session, a routine or the standing goal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    User,
    /// Whoever holds the session's interactive share link: not the owner, whoever it is.
    ShareLink,
    Peer {
        session_id: String,
    },
    Routine {
        routine_id: String,
    },
    /// The session's standing goal, continuing on its own.
    Goal,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NewMessage {
    pub message_id: String,
    pub text: String,
    pub from: Author,
}

/// A call to a session's object whose answer is `Reply`: each call is its own type ([`calls`]), so a
/// caller gets the reply its call has, and only that.
pub trait SessionRequest: Into<SessionCall> {
    type Reply: Serialize + DeserializeOwned;
}

/// What the object answers a call: the call's reply, or why it would not do it. On the wire it is serde's
/// `{"Ok": reply}` or `{"Err": refusal}`.
pub type Answer<R> = Result<R, Refusal>;

/// The calls, one type each, with the fields the object needs.
pub mod calls {
    use super::{ExternalEvent, NewMessage, SessionConfig, TurnEnd};
    use serde::{Deserialize, Serialize};

    /// Creates the session with its first message and starts its first turn.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Init {
        pub config: Box<SessionConfig>,
        pub message: NewMessage,
    }

    /// The next message, starting a turn.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Send {
        pub message: NewMessage,
    }

    /// A page of events after `after`, waiting up to `wait_ms` for one.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Read {
        pub after: i64,
        pub message_id: Option<String>,
        pub limit: u32,
        pub wait_ms: i64,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct Stop {}

    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Configure {
        pub model: Option<String>,
        pub thinking: Option<String>,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct Summary {}

    /// Ends the running turn as `cancelled`; the session stays and takes the next message. With
    /// `message_id`, only that message's turn, and a repeat (already cancelled) is answered the same.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct CancelTurn {
        #[serde(default)]
        pub message_id: Option<String>,
    }

    /// Forget everything: the workspace is being deleted.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct Purge {}

    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct SetGoal {
        pub goal: Box<crate::session::goal::Goal>,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct ClearGoal {}

    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct GetGoal {}

    /// Holds the call until `Signal { key }` (an answer landed) or `wait_ms` passes; whether it was
    /// signaled.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Wait {
        pub key: String,
        pub wait_ms: i64,
    }

    /// Wakes the calls waiting on `key`, and a turn whose harness waits on it.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Signal {
        pub key: String,
    }

    /// A message from a peer session, added to the log without starting a turn.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Note {
        pub message: NewMessage,
    }

    /// Events a runner reports for the running turn of `message_id`; each once, by its key.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct External {
        pub message_id: String,
        pub events: Vec<ExternalEvent>,
        pub end: Option<TurnEnd>,
        /// With `end`: the goal's command criteria as the runner ran them at the turn's end.
        #[serde(default)]
        pub checks: Vec<crate::session::goal::CommandCheck>,
        /// What coding agent CLIs reported the session used, in cents, when this post reported usage.
        #[serde(default)]
        pub reported_cents: Option<i64>,
    }
}

/// Declares [`SessionCall`] (the wire form of every call: its name in `call`, its fields beside it) and
/// which reply each call has.
macro_rules! session_calls {
    ($($call:ident => $reply:ty,)*) => {
        #[derive(Debug, Clone, Serialize, Deserialize)]
        #[serde(tag = "call", rename_all = "snake_case")]
        pub enum SessionCall {
            $($call(calls::$call),)*
        }

        $(
            impl From<calls::$call> for SessionCall {
                fn from(c: calls::$call) -> Self {
                    SessionCall::$call(c)
                }
            }

            impl SessionRequest for calls::$call {
                type Reply = $reply;
            }
        )*
    };
}

session_calls! {
    Init => Accepted,
    Send => Accepted,
    Read => Page,
    Stop => Summary,
    Configure => SessionConfig,
    Summary => Summary,
    CancelTurn => TurnCancelled,
    Purge => (),
    SetGoal => Option<super::goal::Goal>,
    ClearGoal => Option<super::goal::Goal>,
    GetGoal => Option<super::goal::Goal>,
    Wait => bool,
    Signal => (),
    Note => (),
    External => Summary,
}

/// A message taken into the log, and its position there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Accepted {
    pub message_id: String,
    pub seq: i64,
}

/// A turn cancelled: whose, and whether an earlier cancel had done it already (`replayed`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TurnCancelled {
    pub message_id: String,
    pub replayed: bool,
    /// The session's status after it: `idle`.
    pub status: SessionStatus,
}

/// One event reported from outside the object (a runner), with the key that makes its delivery
/// exactly-once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExternalEvent {
    pub key: String,
    pub kind: EventKind,
    pub body: Value,
}

/// A call the session would not do, with the API's code (`session_busy`, `not_found`, …).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

impl Refusal {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    #[default]
    Idle,
    Running,
    Terminated,
}

impl TurnState {
    pub const fn as_str(self) -> &'static str {
        match self {
            TurnState::Idle => "idle",
            TurnState::Running => "running",
            TurnState::Terminated => "terminated",
        }
    }
}

/// A session with a configuration is as its turn is.
impl From<TurnState> for SessionStatus {
    fn from(state: TurnState) -> Self {
        match state {
            TurnState::Idle => SessionStatus::Idle,
            TurnState::Running => SessionStatus::Running,
            TurnState::Terminated => SessionStatus::Terminated,
        }
    }
}

/// The turn as persisted: what runs, how far it got, what it has spent.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    pub state: TurnState,
    pub message_id: Option<String>,
    /// Steps completed in this turn.
    pub step: u32,
    /// When the next step is due (the object's alarm), while running.
    pub next_at_ms: Option<i64>,
    pub started_ms: i64,
    /// What the session has spent, in cents, over all turns.
    pub spent_cents: i64,
    /// What coding agent CLIs reported the session's turns cost, in cents: not charged, but the budget
    /// counts it.
    #[serde(default)]
    pub reported_cents: i64,
    /// The harness's own progress within the turn (e.g. tool calls still to answer).
    #[serde(default)]
    pub harness: Value,
    /// The turn has ended and the standing goal is due to be checked.
    #[serde(default)]
    pub goal_check: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    UserMessage,
    AgentMessage,
    ToolCall,
    ToolResult,
    Status,
    Error,
    TurnEnd,
    GoalCheck,
}

impl EventKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::UserMessage => "user_message",
            EventKind::AgentMessage => "agent_message",
            EventKind::ToolCall => "tool_call",
            EventKind::ToolResult => "tool_result",
            EventKind::Status => "status",
            EventKind::Error => "error",
            EventKind::TurnEnd => "turn_end",
            EventKind::GoalCheck => "goal_check",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    Completed,
    Stopped,
    Failed,
    BudgetReached,
    /// The wallet could not hold what the next model call may cost.
    InsufficientCredits,
    /// Someone cancelled the turn (`cancel_turn`, `tasks/cancel`); the session went back to idle.
    Cancelled,
}

/// One event of the log. `body` holds the kind's fields (`text`, `name`, `reason`, …).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub message_id: String,
    pub at_ms: i64,
    pub body: Value,
}

impl Event {
    pub fn from_row(row: Row) -> Result<Self, String> {
        let int = |k: &str| row.get(k).and_then(Value::as_i64).ok_or_else(|| format!("event row lacks {k}"));
        let text = |k: &str| {
            row.get(k).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("event row lacks {k}"))
        };
        Ok(Event {
            seq: int("seq")?,
            at_ms: int("at_ms")?,
            kind: text("kind")?,
            message_id: text("message_id")?,
            body: serde_json::from_str(&text("body")?).map_err(|e| e.to_string())?,
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Page {
    pub events: Vec<Event>,
    /// The sequence number the next read continues after.
    pub last_seq: i64,
    pub has_more: bool,
    pub turn_finished: bool,
    pub status: SessionStatus,
}

impl Page {
    /// Whether a waiting read answers with this page now. A read of one message's turn is answered when
    /// something came or that turn is over (nothing more can land for it). A read of the whole session
    /// waits for the next event whatever the turn's state: an idle session still receives messages (a
    /// routine's, a peer's, a share link's), and only a stopped one never will.
    pub fn answers_wait(&self, scoped_to_message: bool) -> bool {
        !self.events.is_empty() || (scoped_to_message && self.turn_finished) || self.status == SessionStatus::Terminated
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub status: SessionStatus,
    pub spent_cents: i64,
    pub last_reply: Option<String>,
    pub turn: Turn,
}

/// What one step was charged: already settled in the ledger and the wallet before the step is persisted
/// ([`super::wallet`]), so the session's spend counts it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Charge {
    pub model: String,
    pub cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

/// What one harness step produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOutcome {
    pub events: Vec<(EventKind, Value)>,
    /// Set when the turn is over.
    pub end: Option<TurnEnd>,
    /// When the next step is due, relative to now (0 = at once).
    pub next_in_ms: Option<i64>,
    pub charge: Option<Charge>,
    /// The harness's progress to persist for its next step.
    pub harness_state: Value,
}

/// What a call changed, for the object's shell to act on: wake readers, set the alarm, update the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub accepted: Option<(String, i64)>,
    pub turn: Turn,
    pub wake: bool,
    pub alarm_at_ms: Option<i64>,
    /// Status or spend changed: write them to the D1 index.
    pub index_changed: bool,
}

/// What the D1 index must say of a session, kept in the object until it does: written in the same
/// atomic write as the turn state that changed it, so whatever crashes, the object still knows what to
/// copy (see [`crate::turns::driver::publish`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexMark {
    pub status: SessionStatus,
    pub spent_cents: i64,
    pub message_id: Option<String>,
}

impl Transition {
    pub fn quiet(turn: Turn) -> Self {
        Self { accepted: None, turn, wake: false, alarm_at_ms: None, index_changed: false }
    }

    pub fn accepted(message_id: &str, seq: i64, turn: Turn) -> Self {
        Self { accepted: Some((message_id.to_owned(), seq)), wake: true, index_changed: true, ..Self::quiet(turn) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_session_read_waits_for_the_next_event_even_when_idle() {
        let page = |events: usize, finished: bool, status: SessionStatus| Page {
            events: (0..events)
                .map(|i| Event {
                    seq: i as i64,
                    kind: "status".into(),
                    message_id: "m".into(),
                    at_ms: 0,
                    body: Value::Null,
                })
                .collect(),
            last_seq: 0,
            has_more: false,
            turn_finished: finished,
            status,
        };
        assert!(!page(0, true, SessionStatus::Idle).answers_wait(false), "an idle session may still receive a message");
        assert!(
            page(0, true, SessionStatus::Idle).answers_wait(true),
            "a finished message's turn has nothing more to wait for"
        );
        assert!(!page(0, false, SessionStatus::Running).answers_wait(true));
        assert!(page(1, false, SessionStatus::Running).answers_wait(false));
        assert!(
            page(0, true, SessionStatus::Terminated).answers_wait(false),
            "a stopped session never receives anything"
        );
    }
}
