//! An MCP task's status: what the task record stores and both MCP wires show, in the protocol's words.

super::params::words! {
    /// `working` while its turn runs, `input_required` while the agent waits on a person, then
    /// `completed`, `failed` or `cancelled` for good.
    pub enum TaskStatus {
        Working = "working",
        InputRequired = "input_required",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task has ended: nothing moves it on any more.
    pub const fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}
