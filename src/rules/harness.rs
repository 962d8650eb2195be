//! What runs an agent's turns: the harness words, and which of them a `sky runner` runs.

use super::params::words;

words! {
    /// What runs an agent's turns.
    pub enum Harness {
        Echo = "echo",
        Openai = "openai",
        Runner = "runner",
        ClaudeCode = "claude-code",
        Codex = "codex",
    }
}

words! {
    /// Which tool uses of a coding agent CLI ask a person first (in Approvals), each CLI's way:
    /// `outside_folder`, edits in the turn's folder go ahead, shell commands and anything else ask (Codex:
    /// its `workspace-write` sandbox keeps commands to the folder instead of asking); `every_change`, every
    /// edit and command asks (Codex: its `read-only` sandbox); `none`, nothing asks (Codex unsandboxed;
    /// admins only).
    pub enum ToolApproval {
        OutsideFolder = "outside_folder",
        EveryChange = "every_change",
        None = "none",
    }
}

impl ToolApproval {
    /// What the policy means for an agent of `harness`, in the person's words (the agent's page).
    pub fn says(self, harness: Harness) -> &'static str {
        match (harness, self) {
            (Harness::ClaudeCode, ToolApproval::OutsideFolder) => {
                "Edits in the turn's folder go ahead; shell commands, web fetches and edits elsewhere ask you in Approvals."
            }
            (Harness::ClaudeCode, ToolApproval::EveryChange) => "Every edit and every shell command asks you in Approvals.",
            (Harness::ClaudeCode, ToolApproval::None) => "Nothing asks: Claude Code uses every tool without approval.",
            (Harness::Codex, ToolApproval::OutsideFolder) => {
                "Codex runs in its workspace-write sandbox: commands change files only in the turn's folder and reach no network. Codex cannot ask from a runner, so nothing else is allowed."
            }
            (Harness::Codex, ToolApproval::EveryChange) => {
                "Codex runs in its read-only sandbox: it reads and runs commands but changes nothing."
            }
            (Harness::Codex, ToolApproval::None) => "Codex runs without its sandbox: nothing asks.",
            _ => "Only Claude Code and Codex agents use it.",
        }
    }
}

impl Harness {
    /// Its turns are claimed by a person's `sky runner`: a command of theirs (`runner`), or a coding agent
    /// CLI the runner launches itself (`claude-code`, `codex`).
    pub fn on_runner(self) -> bool {
        matches!(self, Harness::Runner | Harness::ClaudeCode | Harness::Codex)
    }

    /// [`Self::on_runner`] for a stored harness word.
    pub fn word_on_runner(word: &str) -> bool {
        Harness::from_word(word).is_some_and(Harness::on_runner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coding_agent_clis_run_on_runners_and_the_hosted_harnesses_do_not() {
        for w in ["runner", "claude-code", "codex"] {
            assert!(Harness::word_on_runner(w), "{w}");
        }
        for w in ["echo", "openai", "claude_code", ""] {
            assert!(!Harness::word_on_runner(w), "{w}");
        }
    }
}
