//! Desktop notifications and the terminal's title, for `sky approvals --watch`. Each system's own tool
//! shows the notification, so sky links no GUI library: `notify-send` (libnotify, over D-Bus) on Linux and
//! the BSDs, `osascript` on macOS, PowerShell's toast API on Windows. The words go as arguments (or, on
//! Windows, environment variables), never spliced into a script, so a request's text cannot run anything.

use std::process::{Command, Stdio};

/// One notification: a title line and a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub title: String,
    pub body: String,
}

/// The command that shows `note` on this system.
pub fn command(note: &Note) -> Command {
    let mut c;
    if cfg!(target_os = "macos") {
        c = Command::new("osascript");
        c.args(["-e", "on run argv", "-e", "display notification (item 2 of argv) with title (item 1 of argv)"]);
        c.args(["-e", "end run", &note.title, &note.body]);
    } else if cfg!(windows) {
        c = Command::new("powershell");
        c.args(["-NoProfile", "-NonInteractive", "-Command", WINDOWS_TOAST]);
        c.env("SKY_NOTE_TITLE", &note.title).env("SKY_NOTE_BODY", &note.body);
    } else {
        c = Command::new("notify-send");
        c.args(["--app-name=agentsky", "--icon=dialog-question", "--", &note.title, &note.body]);
    }
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// Windows' own toast API through PowerShell; the words come from the environment.
const WINDOWS_TOAST: &str = "[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] > $null; \
$x = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent([Windows.UI.Notifications.ToastTemplateType]::ToastText02); \
$t = $x.GetElementsByTagName('text'); \
$t.Item(0).AppendChild($x.CreateTextNode($env:SKY_NOTE_TITLE)) > $null; \
$t.Item(1).AppendChild($x.CreateTextNode($env:SKY_NOTE_BODY)) > $null; \
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('agentsky').Show([Windows.UI.Notifications.ToastNotification]::new($x))";

/// Shows `note`; the error names the tool that could not show it.
pub fn show(note: &Note) -> Result<(), String> {
    let mut c = command(note);
    let tool = c.get_program().to_string_lossy().into_owned();
    match c.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("`{tool}` exited with {s}")),
        Err(e) => Err(format!("`{tool}` could not run ({e}); install it (on Debian: apt install libnotify-bin)")),
    }
}

/// The escape sequence that sets a terminal's window (and tab) title (OSC 0), with control characters
/// taken out of `title` so it cannot end the sequence early.
pub fn terminal_title(title: &str) -> String {
    let clean: String = title.chars().filter(|c| !c.is_control()).collect();
    format!("\x1b]0;{clean}\x07")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_arguments_never_script() {
        let note = Note { title: "agentsky: Dev asks".into(), body: "\"; rm -rf / #".into() };
        let c = command(&note);
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        if cfg!(target_os = "macos") {
            assert_eq!(args.last().unwrap(), "\"; rm -rf / #");
        } else if !cfg!(windows) {
            assert_eq!(c.get_program(), "notify-send");
            assert_eq!(&args[args.len() - 2..], ["agentsky: Dev asks", "\"; rm -rf / #"]);
            assert_eq!(args[args.len() - 3], "--", "a body starting with - is not an option");
        }
    }

    #[test]
    fn a_title_cannot_end_its_escape_sequence() {
        assert_eq!(terminal_title("agentsky · 2 open"), "\x1b]0;agentsky · 2 open\x07");
        assert_eq!(terminal_title("x\x07\x1b]0;evil"), "\x1b]0;x]0;evil\x07");
    }
}
